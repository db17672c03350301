//! The operating system each node runs, as far as MAGIC sees it: processes and
//! their PIDs, page tables with access rights, the shadow double mapping that
//! hands MAGIC authentic physical addresses, virtual-PID groups, and the
//! translation changes (unmap, remap, page move) that MAGIC must hear of before
//! they take effect.
//!
//! This crate is bookkeeping and policy only: what a translation is, who may
//! use what, what an OS step costs. When the OS talks to MAGIC (the running
//! PID at a context switch, a translation-change notice, the answer to
//! MAGIC's "translate (virtual page, PID)" interrupt) the messaging layer
//! carries the message; the costs are the latency of that OS work.
//!
//! Where to start: [`Os`], one node's operating system: [`Os::spawn`] a
//! process, [`Os::map`] its pages, then [`Os::translate`] and the shadows
//! ([`Os::shadow`], [`Os::shadow_write`]) give the physical addresses a
//! process hands MAGIC; [`Os::set_group`] names its peers by virtual PID;
//! [`Change`] and [`Os::apply`] move or drop a translation. [`OsCosts`] is
//! what each OS step costs.
//!
//! A process maps a page, gets the read and write shadows of an address in
//! it, then the OS moves the page:
//!
//! ```
//! use magic::{NodeId, PAddr, Region};
//! use os_shim::{Change, Os, OsCosts, OsError, Pid, Rights, VPage, PAGE_BYTES, WRITE_SHADOW};
//!
//! let mut os = Os::new(NodeId(0), OsCosts::default());
//! os.spawn(Pid(7));
//! let frame = PAddr::new(Region::Normal, NodeId(0), 10 * PAGE_BYTES);
//! os.map(Pid(7), VPage(3), frame, Rights::RO).unwrap();
//!
//! // Byte 40 of virtual page 3 is byte 40 of the frame.
//! let vaddr = 3 * PAGE_BYTES + 40;
//! let (p, rights) = os.translate(Pid(7), vaddr).unwrap();
//! assert_eq!((p, rights), (PAddr(frame.0 + 40), Rights::RO));
//!
//! // The read shadow is the same location in the message region; a
//! // read-only page has no write shadow.
//! let shadow = os.shadow(Pid(7), vaddr).unwrap();
//! assert_eq!(shadow.region(), Region::Message);
//! assert_eq!(shadow.with_region(Region::Normal), p);
//! assert_eq!(os.shadow_write(Pid(7), vaddr), Err(OsError::NoRight(Pid(7), VPage(3))));
//! assert_eq!(shadow.0 & WRITE_SHADOW, 0);
//!
//! // Moving the page returns the frame it left; the rights stay.
//! let to = PAddr::new(Region::Normal, NodeId(0), 11 * PAGE_BYTES);
//! assert_eq!(os.apply(Pid(7), Change::Move(VPage(3), to)), Ok(Some(frame)));
//! assert_eq!(os.lookup(Pid(7), VPage(3)).unwrap().frame, to);
//! ```

#![warn(missing_docs)]

use magic::costs::Source;
use magic::{Cycles, NodeId, PAddr, Region};
use serde::Serialize;
use std::collections::BTreeMap;

/// Bytes in a page.
pub const PAGE_BYTES: u64 = 4096;

/// The address bit that tells a write shadow from a read shadow.
pub const WRITE_SHADOW: u64 = 1 << 38;

/// A process id, unique on its node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Pid(pub u16);

/// A virtual page number (virtual address / 4096).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct VPage(pub u64);

impl VPage {
    /// The page holding virtual address `vaddr`.
    pub fn of(vaddr: u64) -> VPage {
        VPage(vaddr / PAGE_BYTES)
    }
}

/// A PID travels in a message as one payload word.
impl magic::message::Word for Pid {
    fn to_word(self) -> u64 {
        self.0 as u64
    }
    fn from_word(w: u64) -> Option<Pid> {
        u16::try_from(w).ok().map(Pid)
    }
}

/// A virtual page travels in a message as one payload word.
impl magic::message::Word for VPage {
    fn to_word(self) -> u64 {
        self.0
    }
    fn from_word(w: u64) -> Option<VPage> {
        Some(VPage(w))
    }
}

/// What a process may do with a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rights {
    /// The process may read the page.
    pub read: bool,
    /// The process may write the page.
    pub write: bool,
}

impl Rights {
    /// Read and write.
    pub const RW: Rights = Rights {
        read: true,
        write: true,
    };
    /// Read only.
    pub const RO: Rights = Rights {
        read: true,
        write: false,
    };
}

/// A virtual page's translation: a physical page (normal space, page aligned,
/// on any node) and the rights the process has on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Mapping {
    /// The physical page: normal space, page aligned, on any node.
    pub frame: PAddr,
    /// What the process may do with it.
    pub rights: Rights,
}

/// A translation change, announced to MAGIC before it takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Change {
    /// The page is no longer mapped.
    Unmap(VPage),
    /// The page now maps another frame (its old contents are not copied).
    Remap(VPage, PAddr),
    /// The page's contents move to another frame, which it then maps.
    Move(VPage, PAddr),
}

impl Change {
    /// The virtual page the change is about.
    pub fn page(self) -> VPage {
        match self {
            Change::Unmap(v) | Change::Remap(v, _) | Change::Move(v, _) => v,
        }
    }
}

magic::cost_sheet! {
    /// What OS steps cost on the compute processor, in cycles of 10 ns
    /// (documented guesses: the paper gives none; they are parameters).
    /// They are the latency of the OS's work (an interrupt's answer, a
    /// change taking effect, a context switch). A scenario's `[costs.os]`
    /// table sets any of them; each is from 0 to
    /// [`MAX_COST`](magic::costs::MAX_COST) cycles.
    pub struct OsCosts in "costs.os" {
        /// A context switch, from the decision to the new process running.
        context_switch: Cycles = Cycles(500), Source::Choice(
            "a documented guess (the paper gives none): 5 us.");
        /// Taking MAGIC's interrupt and answering with a translation.
        interrupt: Cycles = Cycles(300), Source::Choice(
            "a documented guess (the paper gives none): 3 us.");
        /// Editing the page table for a translation change (data copy apart).
        change: Cycles = Cycles(200), Source::Choice(
            "a documented guess (the paper gives none): 2 us.");
        /// Copying one cache line of a moved page.
        copy_line: Cycles = Cycles(20), Source::Choice(
            "a documented guess (the paper gives none): 0.2 us a line.");
    }
}

/// A process: its page table and its group (virtual PID -> (node, PID)).
#[derive(Clone, Debug, Default)]
pub struct Process {
    /// The process's id on its node.
    pub pid: Pid,
    pages: BTreeMap<VPage, Mapping>,
    group: Vec<(NodeId, Pid)>,
}

/// Why the OS refused something.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OsError {
    /// No process has this PID on the node.
    #[error("no process {}", .0.0)]
    NoProcess(Pid),
    /// The process does not map this virtual page.
    #[error("page {:#x} is not mapped for process {}", .1.0, .0.0)]
    NotMapped(Pid, VPage),
    /// The process lacks the right (read or write) this use of the page needs.
    #[error("process {} lacks the right for page {:#x}", .0.0, .1.0)]
    NoRight(Pid, VPage),
    /// A frame that is not a page-aligned address in normal space below
    /// the shadow bit ([`WRITE_SHADOW`]: a frame above it would have a
    /// shadow that is another frame's write shadow).
    #[error("{0} is not a page-aligned normal-space frame below 2^38")]
    BadFrame(PAddr),
}

/// A page-aligned address of normal space whose shadows name it alone:
/// below [`WRITE_SHADOW`], the bit a write shadow sets.
fn is_frame(f: PAddr) -> bool {
    f.region() == Region::Normal
        && f.offset().is_multiple_of(PAGE_BYTES)
        && f.offset() < WRITE_SHADOW
}

/// One node's operating system.
#[derive(Clone, Debug)]
pub struct Os {
    /// The node this OS runs on.
    pub node: NodeId,
    /// What its steps cost on the compute processor.
    pub costs: OsCosts,
    procs: BTreeMap<Pid, Process>,
    /// The process on the compute processor (MAGIC is told at each switch).
    pub running: Option<Pid>,
}

impl Os {
    /// An OS for `node` with no processes and none running.
    pub fn new(node: NodeId, costs: OsCosts) -> Os {
        Os {
            node,
            costs,
            procs: BTreeMap::new(),
            running: None,
        }
    }

    /// Create a process (idempotent).
    pub fn spawn(&mut self, pid: Pid) {
        self.procs.entry(pid).or_insert_with(|| Process {
            pid,
            ..Process::default()
        });
    }

    /// Whether process `pid` exists.
    pub fn exists(&self, pid: Pid) -> bool {
        self.procs.contains_key(&pid)
    }

    fn proc_mut(&mut self, pid: Pid) -> Result<&mut Process, OsError> {
        self.procs.get_mut(&pid).ok_or(OsError::NoProcess(pid))
    }

    /// Map virtual page `v` of `pid` to `frame`.
    pub fn map(&mut self, pid: Pid, v: VPage, frame: PAddr, rights: Rights) -> Result<(), OsError> {
        if !is_frame(frame) {
            return Err(OsError::BadFrame(frame));
        }
        self.proc_mut(pid)?
            .pages
            .insert(v, Mapping { frame, rights });
        Ok(())
    }

    /// The translation of a virtual page.
    pub fn lookup(&self, pid: Pid, v: VPage) -> Result<Mapping, OsError> {
        let p = self.procs.get(&pid).ok_or(OsError::NoProcess(pid))?;
        p.pages.get(&v).copied().ok_or(OsError::NotMapped(pid, v))
    }

    /// The physical address of a virtual address.
    pub fn translate(&self, pid: Pid, vaddr: u64) -> Result<(PAddr, Rights), OsError> {
        let m = self.lookup(pid, VPage::of(vaddr))?;
        Ok((PAddr(m.frame.0 + vaddr % PAGE_BYTES), m.rights))
    }

    /// The shadow address of a virtual address: the same physical location in
    /// the message region. The OS maps a process's shadow page only where the
    /// normal page is mapped and readable, so a reference to it is an
    /// authentic physical address MAGIC can trust as a source.
    pub fn shadow(&self, pid: Pid, vaddr: u64) -> Result<PAddr, OsError> {
        let (p, r) = self.translate(pid, vaddr)?;
        if !r.read {
            return Err(OsError::NoRight(pid, VPage::of(vaddr)));
        }
        Ok(p.with_region(Region::Message))
    }

    /// The write shadow: mapped only where the page is writable, so a
    /// reference to it authenticates a destination. It differs from the read
    /// shadow in one address bit ([`WRITE_SHADOW`]).
    pub fn shadow_write(&self, pid: Pid, vaddr: u64) -> Result<PAddr, OsError> {
        let (p, r) = self.translate(pid, vaddr)?;
        if !r.write {
            return Err(OsError::NoRight(pid, VPage::of(vaddr)));
        }
        Ok(PAddr(p.with_region(Region::Message).0 | WRITE_SHADOW))
    }

    /// Whether `pid` maps `frame` (a page), writably if `write`.
    pub fn maps(&self, pid: Pid, frame: PAddr, write: bool) -> bool {
        self.procs.get(&pid).is_some_and(|p| {
            p.pages
                .values()
                .any(|m| m.frame == frame && (m.rights.write || !write))
        })
    }

    /// Set a process's group: virtual PID `i` is `group[i]`.
    pub fn set_group(&mut self, pid: Pid, group: Vec<(NodeId, Pid)>) -> Result<(), OsError> {
        self.proc_mut(pid)?.group = group;
        Ok(())
    }

    /// The (node, PID) a virtual PID names for `pid`, if it is in its group.
    pub fn vpid(&self, pid: Pid, v: u16) -> Option<(NodeId, Pid)> {
        self.procs.get(&pid)?.group.get(v as usize).copied()
    }

    /// Whether `(node, pid)` is in `pid`'s group (may talk to it).
    pub fn in_group(&self, pid: Pid, peer: (NodeId, Pid)) -> bool {
        self.procs
            .get(&pid)
            .is_some_and(|p| p.group.contains(&peer))
    }

    /// Apply a translation change (after MAGIC has been told). Returns the
    /// frame the page left, if it had one.
    pub fn apply(&mut self, pid: Pid, c: Change) -> Result<Option<PAddr>, OsError> {
        let p = self.proc_mut(pid)?;
        let old = p.pages.get(&c.page()).copied();
        match c {
            Change::Unmap(v) => {
                p.pages.remove(&v);
            }
            Change::Remap(v, f) | Change::Move(v, f) => {
                if !is_frame(f) {
                    return Err(OsError::BadFrame(f));
                }
                let rights = old.map_or(Rights::RW, |m| m.rights);
                p.pages.insert(v, Mapping { frame: f, rights });
            }
        }
        Ok(old.map(|m| m.frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: u32, k: u64) -> PAddr {
        PAddr::new(Region::Normal, NodeId(n), k * PAGE_BYTES)
    }

    /// A frame at or above the shadow bit would share its shadow with
    /// another frame's write shadow (a read-only page written through
    /// it): refused, by a mapping and by a move alike.
    #[test]
    fn a_frame_at_the_shadow_bit_is_refused() {
        let mut os = Os::new(NodeId(0), OsCosts::default());
        os.spawn(Pid(1));
        let high = PAddr::new(Region::Normal, NodeId(0), WRITE_SHADOW);
        assert_eq!(
            os.map(Pid(1), VPage(5), high, Rights::RO),
            Err(OsError::BadFrame(high))
        );
        let top = PAddr::new(Region::Normal, NodeId(0), WRITE_SHADOW - PAGE_BYTES);
        os.map(Pid(1), VPage(5), top, Rights::RO).unwrap();
        assert_eq!(
            os.apply(Pid(1), Change::Move(VPage(5), high)),
            Err(OsError::BadFrame(high))
        );
    }

    #[test]
    fn translation_shadow_and_changes() {
        let mut os = Os::new(NodeId(0), OsCosts::default());
        os.spawn(Pid(7));
        os.map(Pid(7), VPage(3), frame(0, 10), Rights::RW).unwrap();
        let (p, r) = os.translate(Pid(7), 3 * PAGE_BYTES + 40).unwrap();
        assert_eq!((p, r), (PAddr(frame(0, 10).0 + 40), Rights::RW));
        let s = os.shadow(Pid(7), 3 * PAGE_BYTES + 40).unwrap();
        assert_eq!(
            (s.region(), s.with_region(Region::Normal)),
            (Region::Message, p)
        );
        assert_eq!(
            os.apply(Pid(7), Change::Move(VPage(3), frame(0, 11)))
                .unwrap(),
            Some(frame(0, 10))
        );
        assert_eq!(os.lookup(Pid(7), VPage(3)).unwrap().frame, frame(0, 11));
        os.apply(Pid(7), Change::Unmap(VPage(3))).unwrap();
        assert_eq!(
            os.shadow(Pid(7), 3 * PAGE_BYTES),
            Err(OsError::NotMapped(Pid(7), VPage(3)))
        );
        assert!(os
            .map(Pid(7), VPage(4), PAddr(frame(0, 1).0 + 8), Rights::RO)
            .is_err());
        assert!(os.map(Pid(9), VPage(4), frame(0, 1), Rights::RO).is_err());
    }

    #[test]
    fn groups_name_peers_by_virtual_pid() {
        let mut os = Os::new(NodeId(0), OsCosts::default());
        os.spawn(Pid(1));
        os.set_group(Pid(1), vec![(NodeId(0), Pid(1)), (NodeId(2), Pid(5))])
            .unwrap();
        assert_eq!(os.vpid(Pid(1), 1), Some((NodeId(2), Pid(5))));
        assert_eq!(os.vpid(Pid(1), 2), None);
        assert!(os.in_group(Pid(1), (NodeId(2), Pid(5))));
        assert!(!os.in_group(Pid(1), (NodeId(3), Pid(5))));
    }
}
