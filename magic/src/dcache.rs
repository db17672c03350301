//! MAGIC's data cache in front of its reserved memory (directory, operation
//! records, software TLB, queues): direct mapped, tags only. The data itself
//! lives in the protocol's typed state; this unit decides what an access costs.

use crate::ids::LINE_BYTES;

/// MAGIC's data cache: direct mapped, tags only, with hit and miss counts.
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

/// A data cache's tags, the ones in use only (see [`DCache::sparse_into`]).
pub(crate) type SparseTags = Vec<(u32, u64)>;

impl DCache {
    /// Copy `src` but its tags into this cache, whose tags stay as they are
    /// (see [`DCache::sparse_into`]).
    pub(crate) fn counts_from(&mut self, src: &DCache) {
        self.lines = src.lines;
        self.hits = src.hits;
        self.misses = src.misses;
    }

    /// The same cache with its tags left out (see [`DCache::sparse_into`]).
    pub(crate) fn without_tags(&self) -> DCache {
        DCache {
            tags: Vec::new(),
            used: Vec::new(),
            ..*self
        }
    }

    /// The tags in use, by slot, into `out`: the cache's contents in a few
    /// bytes rather than one word a line, read without scanning the lines.
    pub(crate) fn sparse_into(&self, out: &mut SparseTags) {
        out.clear();
        out.extend(self.used.iter().map(|&i| (i, self.tags[i as usize])));
    }

    /// Make the tags those `s` holds (as [`DCache::sparse_into`] gave
    /// them), touching only the slots either holds.
    pub(crate) fn set_sparse(&mut self, s: &SparseTags) {
        for &i in &self.used {
            self.tags[i as usize] = u64::MAX;
        }
        self.used.clear();
        if s.is_empty() {
            return;
        }
        if self.tags.len() != self.lines {
            self.tags.clear();
            self.tags.resize(self.lines, u64::MAX);
        }
        for &(i, t) in s {
            self.tags[i as usize] = t;
            self.used.push(i);
        }
    }
}

impl Clone for DCache {
    fn clone(&self) -> Self {
        DCache {
            tags: self.tags.clone(),
            used: self.used.clone(),
            ..*self
        }
    }

    fn clone_from(&mut self, src: &Self) {
        self.tags.clone_from(&src.tags);
        self.used.clone_from(&src.used);
        self.counts_from(src);
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
        let mut s = SparseTags::new();
        c.sparse_into(&mut s);
        assert_eq!(s, vec![(0, 0), (3, 11)]);
        let mut d = DCache::new(8);
        d.access(5 * 128);
        d.set_sparse(&s);
        assert!(d.access(0) && d.access(11 * 128) && !d.access(5 * 128));
        d.set_sparse(&SparseTags::new());
        assert!(!d.access(0));
    }
}
