//! MAGIC's data cache in front of its reserved memory (directory, operation
//! records, software TLB, queues): direct mapped, tags only. The data itself
//! lives in the protocol's typed state; this unit decides what an access costs.

use crate::ids::LINE_BYTES;
use crate::pack::{put, Reader};

/// MAGIC's data cache: direct mapped, tags only, with hit and miss counts.
#[derive(Clone)]
pub struct DCache {
    /// The tags, made on the first access (a node whose handlers never
    /// touch MAGIC's memory holds none).
    tags: Vec<u64>,
    /// The slots that hold a tag, in the order they were first filled: a
    /// search's copy of the cache is these, not the whole array.
    used: Vec<u32>,
    /// Lines in the cache (a power of two).
    lines: usize,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

impl DCache {
    /// Packed for a search's frontier: its size, its counts and the tags
    /// in use, by slot (a few bytes rather than one word a line, read
    /// without scanning the lines).
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.lines as u64);
        put(out, self.hits);
        put(out, self.misses);
        put(out, self.used.len() as u64);
        for &i in &self.used {
            put(out, i.into());
            put(out, self.tags[i as usize]);
        }
    }

    /// Make this the cache [`DCache::pack`] packed, touching only the
    /// slots either holds; a slot out of range marks `r` short.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        self.lines = r.u64() as usize;
        self.hits = r.u64();
        self.misses = r.u64();
        for &i in &self.used {
            self.tags[i as usize] = u64::MAX;
        }
        self.used.clear();
        let n = r.count();
        if n == 0 {
            return;
        }
        if self.tags.len() != self.lines {
            self.tags.clear();
            self.tags.resize(self.lines, u64::MAX);
        }
        for _ in 0..n {
            let (i, t) = (r.u32(), r.u64());
            match self.tags.get_mut(i as usize) {
                Some(slot) => {
                    *slot = t;
                    self.used.push(i);
                }
                None => r.mark_short(),
            }
        }
    }
}

impl DCache {
    /// An empty cache of `lines` lines of 128 bytes; `lines` is a power of
    /// two up to `MagicParams::MAX_DCACHE_LINES` (as `MagicParams::validate`
    /// requires; another count is rounded up to one, 0 to 1, and a larger one
    /// cut to that maximum).
    pub fn new(lines: usize) -> DCache {
        let max = crate::params::MagicParams::MAX_DCACHE_LINES;
        let lines = lines.clamp(1, max).next_power_of_two();
        DCache {
            tags: Vec::new(),
            used: Vec::new(),
            lines,
            hits: 0,
            misses: 0,
        }
    }

    /// Touch the line holding byte address `addr`; true on a hit.
    pub fn access(&mut self, addr: u64) -> bool {
        let line = addr / LINE_BYTES as u64;
        if self.tags.is_empty() {
            self.tags = vec![u64::MAX; self.lines];
        }
        let slot = (line as usize) & (self.lines - 1);
        if self.tags[slot] == line {
            self.hits += 1;
            true
        } else {
            if self.tags[slot] == u64::MAX {
                self.used.push(slot as u32);
            }
            self.tags[slot] = line;
            self.misses += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_mapped_conflicts_evict() {
        let mut c = DCache::new(4);
        assert!(!c.access(0));
        assert!(c.access(8));
        assert!(!c.access(4 * 128)); // same slot, other line
        assert!(!c.access(0));
        assert_eq!((c.hits, c.misses), (1, 3));
    }

    #[test]
    fn any_size_asked_for_makes_a_cache() {
        for lines in [0, 3, usize::MAX] {
            let mut c = DCache::new(lines);
            assert!(!c.access(u64::MAX));
            assert!(c.access(u64::MAX));
        }
    }

    #[test]
    fn the_tags_in_use_restore_the_cache() {
        let mut c = DCache::new(8);
        for a in [0, 3 * 128, 11 * 128] {
            c.access(a);
        }
        let mut s = Vec::new();
        c.pack(&mut s);
        // Size, counts, then the two slots in use with their tags.
        assert_eq!(s, vec![8, 0, 3, 2, 0, 0, 3, 11]);
        let mut d = DCache::new(8);
        d.access(5 * 128);
        let mut r = Reader::new(&s);
        d.unpack(&mut r);
        assert!(r.done());
        assert_eq!((d.hits, d.misses), (0, 3));
        assert!(d.access(0) && d.access(11 * 128) && !d.access(5 * 128));
        let mut empty = Vec::new();
        DCache::new(8).pack(&mut empty);
        d.unpack(&mut Reader::new(&empty));
        assert!(!d.access(0));
    }
}
