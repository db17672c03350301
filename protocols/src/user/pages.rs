//! The invalidation technique's table of in-use physical pages.
//!
//! An operation record that holds a physical page links one *use* of it into
//! a hash table keyed by page; each bucket is an intrusive doubly linked list,
//! so the operation unlinks its use in O(1) when it completes. A
//! translation-change notice walks the page's list and marks every use stale;
//! a handler checks its use on every access (one branch).

use hashbrown::HashMap;
use intrusive_collections::{intrusive_adapter, LinkedList, LinkedListLink};
use magic::PAddr;
use std::cell::Cell;
use std::rc::Rc;

/// One operation's use of one physical page.
pub struct PageUse {
    link: LinkedListLink,
    /// The page (normal-space, page aligned).
    pub page: PAddr,
    /// Which record.
    pub record: u16,
    /// Which of the record's pages.
    pub slot: u8,
    stale: Cell<bool>,
}

impl std::fmt::Debug for PageUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "use of {} (record {}, slot {})",
            self.page, self.record, self.slot
        )?;
        if !self.valid() {
            write!(f, ", stale")?;
        }
        Ok(())
    }
}

impl PageUse {
    /// The check a handler makes before each use.
    pub fn valid(&self) -> bool {
        !self.stale.get()
    }
}

intrusive_adapter!(UseAdapter = Rc<PageUse>: PageUse { link: LinkedListLink });

/// A handle to a linked use, kept in the operation record.
pub type UseRef = Rc<PageUse>;

/// The in-use page table: every linked use of each physical page, so a
/// translation change can mark them all stale.
#[derive(Default)]
pub struct PageTable {
    buckets: HashMap<u64, LinkedList<UseAdapter>>,
    /// Uses linked so far.
    pub links: u64,
    /// Uses marked stale so far.
    pub marked_stale: u64,
}

fn page_key(p: PAddr) -> u64 {
    p.0 / os_shim::PAGE_BYTES
}

impl PageTable {
    /// Link a use of `page` by record `record`, slot `slot`.
    pub fn link(&mut self, page: PAddr, record: u16, slot: u8) -> UseRef {
        let u = Rc::new(PageUse {
            link: LinkedListLink::new(),
            page,
            record,
            slot,
            stale: Cell::new(false),
        });
        self.buckets
            .entry(page_key(page))
            .or_insert_with(|| LinkedList::new(UseAdapter::new()))
            .push_back(u.clone());
        self.links += 1;
        u
    }

    /// Unlink a use (the operation finished with the page).
    pub fn unlink(&mut self, u: &UseRef) {
        let key = page_key(u.page);
        let Some(list) = self.buckets.get_mut(&key) else {
            return;
        };
        if !u.link.is_linked() {
            return;
        }
        // SAFETY: a use is only ever linked into the bucket of its own page,
        // and it is linked (checked above), so it is an element of `list`.
        let mut c = unsafe { list.cursor_mut_from_ptr(Rc::as_ptr(u)) };
        c.remove();
        if list.is_empty() {
            self.buckets.remove(&key);
        }
    }

    /// Mark every use of `page` stale; returns how many there were (each one
    /// a list element the PP walked).
    pub fn invalidate(&mut self, page: PAddr) -> u32 {
        let Some(list) = self.buckets.get(&page_key(page)) else {
            return 0;
        };
        let mut n = 0;
        for u in list.iter() {
            u.stale.set(true);
            n += 1;
        }
        self.marked_stale += n as u64;
        n
    }

    /// The linked uses, canonically (for the exhaustive checker): by page,
    /// in list order, with their stale marks.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let mut keys: Vec<&u64> = self.buckets.keys().collect();
        keys.sort_unstable();
        for k in keys {
            let _ = write!(out, "{k}:");
            for u in self.buckets[k].iter() {
                let _ = write!(out, "{}/{}/{}/{};", u.page.0, u.record, u.slot, u.valid());
            }
        }
    }

    /// Uses currently linked (all pages).
    pub fn in_use(&self) -> usize {
        self.buckets.values().map(|l| l.iter().count()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magic::{NodeId, Region};

    fn page(k: u64) -> PAddr {
        PAddr::new(Region::Normal, NodeId(0), k * 4096)
    }

    #[test]
    fn uses_link_unlink_and_go_stale_per_page() {
        let mut t = PageTable::default();
        let a = t.link(page(1), 0, 0);
        let b = t.link(page(1), 1, 3);
        let c = t.link(page(2), 1, 4);
        assert_eq!(t.in_use(), 3);
        assert_eq!(t.invalidate(page(1)), 2);
        assert!(!a.valid() && !b.valid() && c.valid());
        t.unlink(&a);
        t.unlink(&a); // twice is harmless
        assert_eq!(t.in_use(), 2);
        assert_eq!(t.invalidate(page(1)), 1);
        t.unlink(&b);
        t.unlink(&c);
        assert_eq!(t.in_use(), 0);
        assert_eq!(t.invalidate(page(2)), 0);
    }
}
