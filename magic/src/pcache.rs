//! The compute processor's cache as MAGIC sees it: a state and real bytes per
//! line, and the timing of an intervention (MAGIC asking the cache for a line).
//!
//! An intervention learns the line's state after `pc_state` (23) cycles; a dirty
//! line's first word follows at `pc_first_word` (28) and the whole line at
//! `pc_line` (43). Interventions are not pipelined: the next one starts only
//! when the previous one's data transfer has finished. One that waits for
//! another handler's intervention or reply to finish counts the wait (the
//! ledger's `waiting`), as memory's transfers do.

use crate::ids::{PAddr, Region, LINE_BYTES};
use crate::memory::ANYONE;
use crate::pack::{put, put_line, Reader};
use crate::params::MagicParams;
use crate::time::Cycles;
use hashbrown::HashMap;
use serde::Serialize;

/// State of a line in the compute processor's cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum LineState {
    /// Not in the cache.
    #[default]
    Uncached,
    /// Clean (shared): memory holds the same bytes.
    Clean,
    /// Dirty (exclusive): the only up-to-date copy is in the cache.
    Dirty,
}

/// The outcome of an intervention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intervention {
    /// The state the line was in.
    pub state: LineState,
    /// When MAGIC knows that state.
    pub state_at: Cycles,
    /// When the whole intervention is over (data included for a dirty line).
    pub done: Cycles,
    /// When the first data word arrives, if the line was dirty.
    pub first_word_at: Option<Cycles>,
}

#[derive(Clone, Copy)]
struct CachedLine {
    state: LineState,
    bytes: [u8; LINE_BYTES],
}

/// The compute processor's cache of one node, as MAGIC sees it: each line's
/// state and bytes, and the timeline of its interventions.
#[derive(Clone)]
pub struct ProcCache {
    lines: HashMap<u64, CachedLine>,
    free_at: Cycles,
    pub(crate) busy: Cycles,
    pub(crate) ops: u64,
    /// Who booked the interface last (a handler's number, or
    /// [`ANYONE`]).
    held_by: u32,
    /// Cycles interventions and replies waited for the interface while
    /// another handler's held it.
    pub(crate) waited: Cycles,
}

impl Default for ProcCache {
    fn default() -> ProcCache {
        ProcCache {
            lines: HashMap::default(),
            free_at: Cycles(0),
            held_by: ANYONE,
            busy: Cycles(0),
            ops: 0,
            waited: Cycles(0),
        }
    }
}

/// Cache lines are keyed by their normal-space line address.
fn key(a: PAddr) -> u64 {
    a.with_region(Region::Normal).0 / LINE_BYTES as u64
}

impl ProcCache {
    /// Lines held clean and lines held dirty.
    pub(crate) fn held(&self) -> (u32, u32) {
        self.lines.values().fold((0, 0), |(c, d), l| match l.state {
            LineState::Uncached => (c, d),
            LineState::Clean => (c + 1, d),
            LineState::Dirty => (c, d + 1),
        })
    }

    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        crate::pack::put_map(out, &self.lines, |out, l| {
            put(out, l.state as u64);
            put_line(out, &l.bytes);
        });
        put(out, self.free_at.0);
        put(out, self.busy.0);
        put(out, self.ops);
        put(out, self.held_by.wrapping_add(1).into());
        put(out, self.waited.0);
    }

    /// Make this the cache [`ProcCache::pack`] packed.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        let new = || CachedLine {
            state: LineState::Uncached,
            bytes: [0; LINE_BYTES],
        };
        crate::pack::read_map(r, &mut self.lines, new, |r, l| {
            l.state = match r.u8() {
                0 => LineState::Uncached,
                1 => LineState::Clean,
                2 => LineState::Dirty,
                _ => {
                    r.mark_short();
                    LineState::Uncached
                }
            };
            r.line(&mut l.bytes);
        });
        self.free_at = r.cycles();
        self.busy = r.cycles();
        self.ops = r.u64();
        self.held_by = r.u32().wrapping_sub(1);
        self.waited = r.cycles();
    }
}

impl ProcCache {
    pub(crate) fn reset_counters(&mut self) {
        (self.busy, self.ops, self.waited) = (Cycles(0), 0, Cycles(0));
    }

    /// The state of the line holding `a` (any region: the normal-space line).
    pub fn state(&self, a: PAddr) -> LineState {
        self.lines
            .get(&key(a))
            .map_or(LineState::Uncached, |l| l.state)
    }

    /// The cached bytes, if the line is cached.
    pub fn bytes(&self, a: PAddr) -> Option<&[u8; LINE_BYTES]> {
        self.lines.get(&key(a)).map(|l| &l.bytes)
    }

    /// Every cached line with its state and bytes, in address order, into
    /// `out` (the explorer's canonical encoding: no timing, no counters).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        self.encode_words(&|w| w, out);
    }

    /// As `encode`, each 8-byte word of each line's bytes given as `word`
    /// gives it (a renaming of the nodes a value names).
    pub(crate) fn encode_words(&self, word: &impl Fn(u64) -> u64, out: &mut Vec<u8>) {
        let mut keys: Vec<u64> = self.lines.keys().copied().collect();
        keys.sort_unstable();
        out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
        for k in keys {
            let l = &self.lines[&k];
            out.extend_from_slice(&k.to_le_bytes());
            out.push(l.state as u8);
            crate::memory::encode_line(&l.bytes, word, out);
        }
    }

    /// Put a line in a state with the given bytes (used by the processor model
    /// and by experiments preparing a starting point). `Uncached` drops it.
    pub fn set(&mut self, a: PAddr, state: LineState, bytes: [u8; LINE_BYTES]) {
        if state == LineState::Uncached {
            self.lines.remove(&key(a));
        } else {
            self.lines.insert(key(a), CachedLine { state, bytes });
        }
    }

    /// When `by`'s transfer asked for at `at` can start: once the
    /// interface is free, the wait counted when another handler held it.
    fn take(&mut self, at: Cycles, by: u32) -> Cycles {
        let start = at.max(self.free_at);
        if by != self.held_by || by == ANYONE {
            self.waited += start - at;
        }
        self.held_by = by;
        start
    }

    /// When the interface is done with every transfer booked so far.
    pub(crate) fn booked_until(&self) -> Cycles {
        self.free_at
    }

    /// MAGIC hands the processor a reply at `at` (a line of data or a word):
    /// it waits for the interface, which then carries it; returns when its
    /// first word reaches the processor and when the interface is free again.
    pub fn reply(&mut self, at: Cycles, p: &MagicParams, line: bool) -> (Cycles, Cycles) {
        self.reply_by(at, p, line, ANYONE)
    }

    /// [`ProcCache::reply`] for handler `by`.
    pub(crate) fn reply_by(
        &mut self,
        at: Cycles,
        p: &MagicParams,
        line: bool,
        by: u32,
    ) -> (Cycles, Cycles) {
        let start = self.take(at, by);
        let held = Cycles(if line { crate::ids::LINE_DWORDS } else { 1 });
        self.free_at = start + held;
        self.busy += held;
        self.ops += 1;
        (start + p.pi_out, self.free_at)
    }

    /// Intervene at `at` for the line of `a`, leaving it in `next` (or in its
    /// present state if that is less). Returns the timing and, for a dirty line,
    /// its bytes.
    pub fn intervene(
        &mut self,
        at: Cycles,
        p: &MagicParams,
        a: PAddr,
        next: LineState,
    ) -> (Intervention, Option<[u8; LINE_BYTES]>) {
        self.intervene_by(at, p, a, next, ANYONE)
    }

    /// [`ProcCache::intervene`] for handler `by`.
    pub(crate) fn intervene_by(
        &mut self,
        at: Cycles,
        p: &MagicParams,
        a: PAddr,
        next: LineState,
        by: u32,
    ) -> (Intervention, Option<[u8; LINE_BYTES]>) {
        let start = self.take(at, by);
        let state = self.state(a);
        let (done, first, data) = match state {
            LineState::Dirty => (
                start + p.pc_line,
                Some(start + p.pc_first_word),
                self.bytes(a).copied(),
            ),
            _ => (start + p.pc_state, None, None),
        };
        match (state, next) {
            (LineState::Uncached, _) => {}
            (_, LineState::Uncached) => {
                self.lines.remove(&key(a));
            }
            (LineState::Dirty, LineState::Clean) => {
                if let Some(l) = self.lines.get_mut(&key(a)) {
                    l.state = LineState::Clean;
                }
            }
            _ => {}
        }
        self.free_at = done;
        self.busy += done - start;
        self.ops += 1;
        let iv = Intervention {
            state,
            state_at: start + p.pc_state,
            done,
            first_word_at: first,
        };
        (iv, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NodeId;

    #[test]
    fn a_dirty_line_comes_back_at_43_and_interventions_do_not_overlap() {
        let p = MagicParams::default();
        let mut c = ProcCache::default();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x80);
        let b = PAddr::new(Region::Normal, NodeId(0), 0x100);
        c.set(a, LineState::Dirty, [7; 128]);
        c.set(b, LineState::Clean, [1; 128]);
        let (iv, data) = c.intervene(Cycles(0), &p, a, LineState::Clean);
        assert_eq!(iv.state, LineState::Dirty);
        assert_eq!(iv.state_at, Cycles(23));
        assert_eq!(iv.first_word_at, Some(Cycles(28)));
        assert_eq!(iv.done, Cycles(43));
        assert_eq!(data, Some([7; 128]));
        assert_eq!(c.state(a), LineState::Clean);
        // Issued at 10, it waits for the previous transfer to end at 43.
        let (iv2, data2) = c.intervene(Cycles(10), &p, b, LineState::Uncached);
        assert_eq!(
            (iv2.state, iv2.state_at, iv2.done),
            (LineState::Clean, Cycles(66), Cycles(66))
        );
        assert_eq!(data2, None);
        assert_eq!(c.state(b), LineState::Uncached);
        assert_eq!(c.waited, Cycles(33), "the second waited from 10 to 43");
    }

    #[test]
    fn a_wait_counts_behind_another_handlers_intervention_only() {
        let p = MagicParams::default();
        let mut c = ProcCache::default();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x80);
        // Handler 1's two interventions back to back: its own pace.
        c.intervene_by(Cycles(0), &p, a, LineState::Uncached, 1);
        c.intervene_by(Cycles(10), &p, a, LineState::Uncached, 1);
        assert_eq!((c.booked_until(), c.waited), (Cycles(46), Cycles(0)));
        // Handler 2's reply waits for it from 40 to 46.
        let (_, free) = c.reply_by(Cycles(40), &p, true, 2);
        assert_eq!((free, c.waited), (Cycles(62), Cycles(6)));
    }
}
