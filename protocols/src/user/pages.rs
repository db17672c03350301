//! The invalidation technique's table of in-use physical pages.
//!
//! An operation record that holds a physical page links one *use* of it into
//! a hash table keyed by page; each bucket is a doubly linked list (its
//! elements in one vector, linked by index, so the table is plain data a
//! search can copy), so the operation unlinks its use in O(1) when it
//! completes. A
//! translation-change notice walks the page's list and marks every use stale;
//! a handler checks its use on every access (one branch).

use hashbrown::HashMap;
use magic::PAddr;

/// No use: the end of a page's list.
const NIL: u32 = u32::MAX;

/// One operation's use of one physical page: an element of its page's
/// list, linked by index, so a table (and the node state holding it) is
/// plain data an exhaustive search can copy and send between threads.
#[derive(Clone, Debug)]
struct PageUse {
    /// The page (normal-space, page aligned).
    page: PAddr,
    /// Which record.
    record: u16,
    /// Which of the record's pages.
    slot: u8,
    stale: bool,
    /// Linked (a freed element waits in `free` for its next use).
    linked: bool,
    /// Bumped each time the element is freed, so a handle to an earlier
    /// use of it no longer matches.
    generation: u32,
    prev: u32,
    next: u32,
}

/// A handle to a linked use, kept in the operation record; the table
/// answers for it ([`PageTable::valid`], [`PageTable::unlink`]). Its
/// `Debug` names the use by what it is (page, record, slot), never by
/// where the table keeps it, so a state's canonical text does not depend
/// on the order uses were linked and freed in.
#[derive(Clone, PartialEq, Eq)]
pub struct UseRef {
    index: u32,
    generation: u32,
    page: PAddr,
    record: u16,
    slot: u8,
}

impl UseRef {
    /// The page the use was linked for.
    pub fn page(&self) -> PAddr {
        self.page
    }

    /// The record, and which of its pages, the use was linked for.
    pub fn record_slot(&self) -> (u16, u8) {
        (self.record, self.slot)
    }
}

impl std::fmt::Debug for UseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "use of {} (record {}, slot {})",
            self.page, self.record, self.slot
        )
    }
}

/// A page's list: its first and last use.
#[derive(Clone, Copy, Debug)]
struct Ends {
    head: u32,
    tail: u32,
}

/// The in-use page table: every linked use of each physical page, so a
/// translation change can mark them all stale.
#[derive(Clone, Debug, Default)]
pub struct PageTable {
    buckets: HashMap<u64, Ends>,
    uses: Vec<PageUse>,
    /// Elements free for the next link, the last freed on top.
    free: Vec<u32>,
    /// Uses linked so far.
    pub links: u64,
    /// Uses marked stale so far.
    pub marked_stale: u64,
}

fn page_key(p: PAddr) -> u64 {
    p.0 / os_shim::PAGE_BYTES
}

impl PageTable {
    /// Link a use of `page` by record `record`, slot `slot`, last in the
    /// page's list.
    pub fn link(&mut self, page: PAddr, record: u16, slot: u8) -> UseRef {
        let ends = self.buckets.entry(page_key(page)).or_insert(Ends {
            head: NIL,
            tail: NIL,
        });
        let u = PageUse {
            page,
            record,
            slot,
            stale: false,
            linked: true,
            generation: 0,
            prev: ends.tail,
            next: NIL,
        };
        let index = match self.free.pop() {
            Some(i) => {
                let generation = self.uses[i as usize].generation;
                self.uses[i as usize] = PageUse { generation, ..u };
                i
            }
            None => {
                self.uses.push(u);
                (self.uses.len() - 1) as u32
            }
        };
        match ends.tail {
            NIL => ends.head = index,
            t => self.uses[t as usize].next = index,
        }
        ends.tail = index;
        self.links += 1;
        UseRef {
            index,
            generation: self.uses[index as usize].generation,
            page,
            record,
            slot,
        }
    }

    /// The element `u` names, while it is linked.
    fn linked(&self, u: &UseRef) -> Option<&PageUse> {
        self.uses
            .get(u.index as usize)
            .filter(|x| x.linked && x.generation == u.generation)
    }

    /// The check a handler makes before each use: false once a translation
    /// change marked it stale. A use no longer linked cannot be marked, and
    /// answers true.
    pub fn valid(&self, u: &UseRef) -> bool {
        self.linked(u).is_none_or(|x| !x.stale)
    }

    /// Unlink a use (the operation finished with the page); a use already
    /// unlinked is left as it is.
    pub fn unlink(&mut self, u: &UseRef) {
        let Some(&PageUse {
            page, prev, next, ..
        }) = self.linked(u)
        else {
            return;
        };
        // The list the element is in, as the table keeps it.
        let key = page_key(page);
        let Some(ends) = self.buckets.get_mut(&key) else {
            return;
        };
        match prev {
            NIL => ends.head = next,
            p => self.uses[p as usize].next = next,
        }
        match next {
            NIL => ends.tail = prev,
            n => self.uses[n as usize].prev = prev,
        }
        if ends.head == NIL {
            self.buckets.remove(&key);
        }
        let x = &mut self.uses[u.index as usize];
        x.linked = false;
        x.generation = x.generation.wrapping_add(1);
        self.free.push(u.index);
    }

    /// The uses of the page whose list starts at `head`, in list order.
    fn list(&self, head: u32) -> impl Iterator<Item = &PageUse> + '_ {
        let mut at = head;
        std::iter::from_fn(move || {
            let u = self.uses.get(at as usize)?;
            at = u.next;
            Some(u)
        })
    }

    /// Mark every use of `page` stale; returns how many there were (each one
    /// a list element the PP walked).
    pub fn invalidate(&mut self, page: PAddr) -> u32 {
        let Some(ends) = self.buckets.get(&page_key(page)) else {
            return 0;
        };
        let mut n = 0;
        let mut at = ends.head;
        while let Some(u) = self.uses.get_mut(at as usize) {
            u.stale = true;
            at = u.next;
            n += 1;
        }
        self.marked_stale += n as u64;
        n
    }

    /// The linked uses, canonically (for the exhaustive checker): by page,
    /// in list order, with their stale marks.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let mut keys: Vec<(&u64, &Ends)> = self.buckets.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| **k);
        for (k, ends) in keys {
            let _ = write!(out, "{k}:");
            for u in self.list(ends.head) {
                let _ = write!(out, "{}/{}/{}/{};", u.page.0, u.record, u.slot, !u.stale);
            }
        }
    }

    /// Uses currently linked (all pages).
    pub fn in_use(&self) -> usize {
        self.buckets
            .values()
            .map(|e| self.list(e.head).count())
            .sum()
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
        assert!(!t.valid(&a) && !t.valid(&b) && t.valid(&c));
        t.unlink(&a);
        t.unlink(&a); // twice is harmless
        assert_eq!(t.in_use(), 2);
        assert_eq!(t.invalidate(page(1)), 1);
        t.unlink(&b);
        t.unlink(&c);
        assert_eq!(t.in_use(), 0);
        assert_eq!(t.invalidate(page(2)), 0);
    }

    /// A handle outlives its use harmlessly: once unlinked, the element it
    /// named may hold another use, which the old handle neither unlinks nor
    /// answers for; and a copied table is a table of its own.
    #[test]
    fn a_freed_use_is_not_the_next_one_in_its_place() {
        let mut t = PageTable::default();
        let old = t.link(page(1), 2, 1);
        t.unlink(&old);
        let new = t.link(page(1), 2, 1);
        // The same element, page, record and slot: the generation tells.
        assert_ne!(old, new);
        t.unlink(&old);
        assert_eq!(t.in_use(), 1);
        let copy = t.clone();
        assert_eq!(t.invalidate(page(1)), 1);
        assert!(!t.valid(&new) && t.valid(&old));
        assert!(copy.valid(&new));
        let mut text = Vec::new();
        t.encode(&mut text);
        assert_eq!(String::from_utf8(text).unwrap(), "1:4096/2/1/false;");
        assert_eq!(
            format!("{new:?}"),
            format!("use of {} (record 2, slot 1)", page(1))
        );
    }
}
