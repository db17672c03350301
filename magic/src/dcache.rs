//! MAGIC's data cache in front of its reserved memory (directory, operation
//! records, software TLB, queues): direct mapped, tags only. The data itself
//! lives in the protocol's typed state; this unit decides what an access costs.

use crate::ids::LINE_BYTES;

/// MAGIC's data cache: direct mapped, tags only, with hit and miss counts.
pub struct DCache {
    /// The tags, made on the first access (a node whose handlers never
    /// touch MAGIC's memory holds none).
    tags: Vec<u64>,
    /// Lines in the cache (a power of two).
    lines: usize,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

/// A data cache's tags, the ones in use only (see [`DCache::sparse`]).
pub(crate) type SparseTags = Option<Vec<(u32, u64)>>;

impl DCache {
    /// The same cache with its tags left out (see [`DCache::sparse`]).
    pub(crate) fn without_tags(&self) -> DCache {
        DCache {
            tags: Vec::new(),
            ..*self
        }
    }

    /// The tags in use, by index (`None`: none made yet): the cache's
    /// contents in a few bytes rather than one word a line.
    pub(crate) fn sparse(&self) -> SparseTags {
        if self.tags.is_empty() {
            return None;
        }
        let used = self.tags.iter().enumerate();
        let used = used.filter(|(_, t)| **t != u64::MAX);
        Some(used.map(|(i, t)| (i as u32, *t)).collect())
    }

    /// Make the tags those `s` holds (as [`DCache::sparse`] gave them).
    pub(crate) fn set_sparse(&mut self, s: &SparseTags) {
        self.tags.clear();
        if let Some(s) = s {
            self.tags.resize(self.lines, u64::MAX);
            for &(i, t) in s {
                self.tags[i as usize] = t;
            }
        }
    }
}

impl Clone for DCache {
    fn clone(&self) -> Self {
        DCache {
            tags: self.tags.clone(),
            ..*self
        }
    }

    fn clone_from(&mut self, src: &Self) {
        self.tags.clone_from(&src.tags);
        self.lines = src.lines;
        self.hits = src.hits;
        self.misses = src.misses;
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
}
