//! MAGIC's data buffers: a fixed pool of cache-line-sized registers.
//!
//! Allocation can fail, and the handler sees it. A buffer handed to the outbox
//! returns to the pool when its packet has left the node; that return is
//! recorded with its time and applied lazily, so no event is spent on it.

use crate::ids::{BufId, LINE_BYTES};
use crate::pack::{put, put_line, Reader};
use crate::time::Cycles;
use std::collections::VecDeque;

#[derive(Clone)]
pub(crate) struct Buffer {
    pub bytes: [u8; LINE_BYTES],
    /// When the first doubleword of the current contents is in.
    pub first_ready: Cycles,
    /// When the whole line is in.
    pub ready: Cycles,
    state: BufState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BufState {
    Free,
    InUse,
    /// Released, back in the pool at a known time; no longer usable.
    Returning,
}

/// A node's pool of data buffers: which are free, in use or on their way
/// back, and when each one's contents are in.
#[derive(Clone)]
pub struct BufferPool {
    /// The buffers made so far: one is made when the pool first needs it,
    /// so a node that never takes one holds none (a machine of thousands of
    /// nodes, most of them idle, stays small).
    bufs: Vec<Buffer>,
    /// How many buffers the pool has.
    size: usize,
    /// Buffers made and free, the last freed on top; when it is empty the
    /// next one made (the lowest id never used) is taken, so buffers go out
    /// lowest id first as if all had been made at once.
    free: Vec<u16>,
    /// Buffers to return at a known time, in time order.
    returning: VecDeque<(Cycles, u16)>,
    pub(crate) allocs: u64,
    pub(crate) failures: u64,
}

impl BufferPool {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.bufs.len() as u64);
        for b in &self.bufs {
            put_line(out, &b.bytes);
            put(out, b.first_ready.0);
            put(out, b.ready.0);
            put(out, b.state as u64);
        }
        put(out, self.size as u64);
        put(out, self.free.len() as u64);
        for &i in &self.free {
            put(out, i.into());
        }
        put(out, self.returning.len() as u64);
        for &(t, i) in &self.returning {
            put(out, t.0);
            put(out, i.into());
        }
        put(out, self.allocs);
        put(out, self.failures);
    }

    /// Make this the pool [`BufferPool::pack`] packed, reusing its storage.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        self.bufs.clear();
        for _ in 0..r.count() {
            let mut bytes = [0; LINE_BYTES];
            r.line(&mut bytes);
            let (first_ready, ready) = (r.cycles(), r.cycles());
            let state = match r.u8() {
                0 => BufState::Free,
                1 => BufState::InUse,
                2 => BufState::Returning,
                _ => {
                    r.mark_short();
                    BufState::Free
                }
            };
            self.bufs.push(Buffer {
                bytes,
                first_ready,
                ready,
                state,
            });
        }
        self.size = r.u64() as usize;
        self.free.clear();
        for _ in 0..r.count() {
            self.free.push(r.u16());
        }
        self.returning.clear();
        for _ in 0..r.count() {
            let t = r.cycles();
            self.returning.push_back((t, r.u16()));
        }
        self.allocs = r.u64();
        self.failures = r.u64();
    }
}

impl BufferPool {
    /// A pool of `n` free buffers (`MagicParams::data_buffers`, 16 by
    /// default; at most `MagicParams::MAX_DATA_BUFFERS`, to which a larger
    /// `n` is cut).
    pub fn new(n: usize) -> BufferPool {
        let n = n.min(crate::params::MagicParams::MAX_DATA_BUFFERS);
        BufferPool {
            bufs: Vec::new(),
            size: n,
            free: Vec::new(),
            returning: VecDeque::new(),
            allocs: 0,
            failures: 0,
        }
    }

    fn reclaim(&mut self, at: Cycles) {
        while let Some(&(t, b)) = self.returning.front() {
            if t > at {
                break;
            }
            self.returning.pop_front();
            self.bufs[b as usize].state = BufState::Free;
            self.free.push(b);
        }
    }

    /// A free buffer at `at`, or `None` when all are in use.
    pub fn alloc(&mut self, at: Cycles) -> Option<BufId> {
        self.reclaim(at);
        let made = self.bufs.len();
        let next = self.free.pop().or_else(|| {
            (made < self.size).then(|| {
                self.bufs.push(Buffer {
                    bytes: [0; LINE_BYTES],
                    first_ready: Cycles(0),
                    ready: Cycles(0),
                    state: BufState::Free,
                });
                made as u16
            })
        });
        match next {
            Some(b) => {
                self.allocs += 1;
                let buf = &mut self.bufs[b as usize];
                buf.state = BufState::InUse;
                buf.first_ready = at;
                buf.ready = at;
                Some(BufId(b))
            }
            None => {
                self.failures += 1;
                None
            }
        }
    }

    /// Return `b` to the pool at `at` (now, or when its packet has left).
    /// Returns false (and changes nothing) if `b` is not allocated.
    pub fn release(&mut self, b: BufId, at: Cycles) -> bool {
        let Some(buf) = self.bufs.get_mut(b.0 as usize) else {
            return false;
        };
        if buf.state != BufState::InUse {
            return false;
        }
        buf.state = BufState::Returning;
        // Keep `returning` sorted; releases come nearly in order.
        let pos = self
            .returning
            .iter()
            .rposition(|&(t, _)| t <= at)
            .map_or(0, |p| p + 1);
        self.returning.insert(pos, (at, b.0));
        true
    }

    pub(crate) fn get(&self, b: BufId) -> Option<&Buffer> {
        self.bufs
            .get(b.0 as usize)
            .filter(|x| x.state == BufState::InUse)
    }

    pub(crate) fn get_mut(&mut self, b: BufId) -> Option<&mut Buffer> {
        self.bufs
            .get_mut(b.0 as usize)
            .filter(|x| x.state == BufState::InUse)
    }

    /// Buffers allocated and not yet returned at `at`.
    pub fn in_use(&self, at: Cycles) -> usize {
        let returned = self.returning.iter().filter(|&&(t, _)| t <= at).count();
        self.bufs.len() - self.free.len() - returned
    }

    /// Buffers allocated and neither freed nor on their way back.
    pub fn held(&self) -> usize {
        self.bufs
            .iter()
            .filter(|b| b.state == BufState::InUse)
            .count()
    }

    /// The next time a buffer comes back, if one is on its way.
    pub fn next_return(&self) -> Option<Cycles> {
        self.returning.front().map(|&(t, _)| t)
    }

    /// The last time a buffer booked to come back does (the returns are
    /// kept in time order; one at or before the present is back for the
    /// next allocation to take).
    pub(crate) fn last_return(&self) -> Option<Cycles> {
        self.returning.back().map(|&(t, _)| t)
    }

    /// Buffers in the pool, whatever their state.
    pub fn capacity(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_fails_when_the_pool_is_empty_and_succeeds_after_a_return() {
        let mut p = BufferPool::new(2);
        let a = p.alloc(Cycles(0)).unwrap();
        let b = p.alloc(Cycles(0)).unwrap();
        assert_ne!(a, b);
        assert_eq!(p.alloc(Cycles(1)), None);
        assert_eq!(p.failures, 1);
        // Returned when its packet leaves at 50: still busy at 49.
        assert!(p.release(a, Cycles(50)));
        assert!(!p.release(a, Cycles(50)), "double release is refused");
        assert!(p.get(a).is_none(), "a released buffer cannot be used");
        assert_eq!(p.alloc(Cycles(49)), None);
        assert_eq!(p.in_use(Cycles(49)), 2);
        assert_eq!(p.alloc(Cycles(50)), Some(a));
        assert!(!p.release(BufId(9), Cycles(0)), "no such buffer");
    }
}
