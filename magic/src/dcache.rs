//! MAGIC's data cache in front of its reserved memory (directory, operation
//! records, software TLB, queues): direct mapped, tags only. The data itself
//! lives in the protocol's typed state; this unit decides what an access costs.

use crate::ids::LINE_BYTES;

/// MAGIC's data cache: direct mapped, tags only, with hit and miss counts.
pub struct DCache {
    tags: Vec<u64>,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

impl DCache {
    /// An empty cache of `lines` lines of 128 bytes; `lines` must be a power of
    /// two (as `MagicParams::validate` requires).
    pub fn new(lines: usize) -> DCache {
        DCache {
            tags: vec![u64::MAX; lines],
            hits: 0,
            misses: 0,
        }
    }

    /// Touch the line holding byte address `addr`; true on a hit.
    pub fn access(&mut self, addr: u64) -> bool {
        let line = addr / LINE_BYTES as u64;
        let slot = (line as usize) & (self.tags.len() - 1);
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
}
