//! MAGIC's software TLB: virtual-to-physical translations kept in MAGIC
//! memory (reached through its data cache), set associative, with LRU or FIFO
//! replacement. A miss interrupts the processor; translation changes remove
//! the entry before they take effect.

use crate::error::check;
use crate::Error;
use magic::{OutOfRange, PAddr};
use os_shim::{Pid, VPage};
use serde::{Deserialize, Serialize};

/// Which entry of a full set makes room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Replacement {
    /// The least recently used.
    Lru,
    /// The oldest inserted.
    Fifo,
}

/// The software TLB's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbParams {
    /// Entries in all.
    pub entries: usize,
    /// Entries per set.
    pub ways: usize,
    /// Which entry of a full set makes room.
    pub replacement: Replacement,
}

impl Default for TlbParams {
    fn default() -> Self {
        TlbParams {
            entries: 64,
            ways: 4,
            replacement: Replacement::Lru,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    pid: Pid,
    page: VPage,
    frame: PAddr,
    /// Last use, for LRU.
    used: u64,
    /// Insertion, for FIFO.
    born: u64,
}

/// MAGIC's software TLB.
#[derive(Clone)]
pub struct Tlb {
    p: TlbParams,
    sets: Vec<Vec<Entry>>,
    clock: u64,
    /// Lookups that found their translation.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
}

/// The most entries the software TLB may have.
pub const MAX_TLB_ENTRIES: usize = 1 << 16;

/// MAGIC-memory address of the TLB (for data-cache costs).
pub const TLB_BASE: u64 = 0x4000_0000;

/// A TLB of the default shape.
impl Default for Tlb {
    fn default() -> Tlb {
        let p = TlbParams::default();
        Tlb {
            p,
            sets: vec![Vec::with_capacity(p.ways); p.entries / p.ways],
            clock: 0,
            hits: 0,
            misses: 0,
        }
    }
}

impl Tlb {
    /// An empty TLB of this shape, or why it cannot have it.
    pub fn new(p: TlbParams) -> Result<Tlb, Error> {
        Tlb::check(p)?;
        Ok(Tlb {
            p,
            sets: vec![Vec::with_capacity(p.ways); p.entries / p.ways],
            clock: 0,
            hits: 0,
            misses: 0,
        })
    }

    /// A TLB can have this shape: 1 to [`MAX_TLB_ENTRIES`] entries, and
    /// ways that divide them.
    pub fn check(p: TlbParams) -> Result<(), Error> {
        check("entries", p.entries, 1, MAX_TLB_ENTRIES)?;
        if p.ways == 0 || !p.entries.is_multiple_of(p.ways) {
            return Err(OutOfRange::new(
                "ways",
                format!("a divisor of entries ({})", p.entries),
                p.ways,
            )
            .into());
        }
        Ok(())
    }

    fn set_of(&self, pid: Pid, page: VPage) -> usize {
        ((page.0 ^ (pid.0 as u64).wrapping_mul(0x9E37)) % self.sets.len() as u64) as usize
    }

    /// MAGIC-memory address of the set a lookup reads.
    pub fn set_addr(&self, pid: Pid, page: VPage) -> u64 {
        TLB_BASE + (self.set_of(pid, page) * self.p.ways * 16) as u64
    }

    /// The entries, canonically (for the exhaustive checker): each set's
    /// entries in order, with their ages as ranks, not clock values.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        for set in &self.sets {
            let rank = |x: u64, f: fn(&Entry) -> u64| set.iter().filter(|e| f(e) < x).count();
            for e in set {
                let _ = write!(
                    out,
                    "{:?}/{:?}/{}/{}/{};",
                    e.pid,
                    e.page,
                    e.frame.0,
                    rank(e.used, |e| e.used),
                    rank(e.born, |e| e.born)
                );
            }
            out.push(b'|');
        }
    }

    /// `pid`'s translation of `page`, if the TLB holds it.
    pub fn lookup(&mut self, pid: Pid, page: VPage) -> Option<PAddr> {
        self.clock += 1;
        let (s, now) = (self.set_of(pid, page), self.clock);
        match self.sets[s]
            .iter_mut()
            .find(|e| e.pid == pid && e.page == page)
        {
            Some(e) => {
                e.used = now;
                self.hits += 1;
                Some(e.frame)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Hold `pid`'s translation of `page`, making room in its set if full.
    pub fn insert(&mut self, pid: Pid, page: VPage, frame: PAddr) {
        self.clock += 1;
        let (s, ways, now, policy) = (
            self.set_of(pid, page),
            self.p.ways,
            self.clock,
            self.p.replacement,
        );
        let set = &mut self.sets[s];
        set.retain(|e| !(e.pid == pid && e.page == page));
        if set.len() == ways {
            let age = |e: &Entry| match policy {
                Replacement::Lru => e.used,
                Replacement::Fifo => e.born,
            };
            let victim = (0..set.len())
                .min_by_key(|&i| age(&set[i]))
                .expect("full set");
            set.swap_remove(victim);
        }
        set.push(Entry {
            pid,
            page,
            frame,
            used: now,
            born: now,
        });
    }

    /// Drop a translation (a change is about to take effect).
    pub fn invalidate(&mut self, pid: Pid, page: VPage) -> bool {
        let s = self.set_of(pid, page);
        let before = self.sets[s].len();
        self.sets[s].retain(|e| !(e.pid == pid && e.page == page));
        before != self.sets[s].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magic::{NodeId, Region};

    fn tlb(replacement: Replacement) -> Tlb {
        Tlb::new(TlbParams {
            entries: 2,
            ways: 2,
            replacement,
        })
        .unwrap()
    }

    #[test]
    fn miss_then_hit_then_invalidated_then_replacement() {
        let f = |k: u64| PAddr::new(Region::Normal, NodeId(0), k * 4096);
        let mut t = tlb(Replacement::Lru);
        assert_eq!(t.lookup(Pid(1), VPage(5)), None);
        t.insert(Pid(1), VPage(5), f(9));
        assert_eq!(t.lookup(Pid(1), VPage(5)), Some(f(9)));
        assert_eq!((t.hits, t.misses), (1, 1));
        assert!(t.invalidate(Pid(1), VPage(5)));
        assert_eq!(t.lookup(Pid(1), VPage(5)), None);
        // One set of two ways: LRU keeps the page just used...
        t.insert(Pid(1), VPage(1), f(1));
        t.insert(Pid(1), VPage(2), f(2));
        t.lookup(Pid(1), VPage(1));
        t.insert(Pid(1), VPage(3), f(3));
        assert_eq!(t.lookup(Pid(1), VPage(2)), None);
        assert_eq!(t.lookup(Pid(1), VPage(1)), Some(f(1)));
        // ... FIFO drops the oldest all the same.
        let mut t = tlb(Replacement::Fifo);
        t.insert(Pid(1), VPage(1), f(1));
        t.insert(Pid(1), VPage(2), f(2));
        t.lookup(Pid(1), VPage(1));
        t.insert(Pid(1), VPage(3), f(3));
        assert_eq!(t.lookup(Pid(1), VPage(1)), None);
        assert_eq!(t.lookup(Pid(1), VPage(2)), Some(f(2)));
        let bad = TlbParams {
            entries: 6,
            ways: 4,
            replacement: Replacement::Lru,
        };
        assert!(Tlb::new(bad).is_err());
    }
}
