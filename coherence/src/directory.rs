//! Directory entries and the home's rules, as pure functions.
//!
//! An entry has the fields of the reference model of FLASH's protocol (the
//! Murphi model of "A Simple Method for Parameterized Verification of Cache
//! Coherence Protocols", FMCAD 2004; docs/coherence.md restates its rules):
//!
//! - `pending`: a transaction is under way (a forward to the owner, or
//!   invalidation acknowledgements being collected); new requests are NAKed;
//! - `local`: the home's own processor holds a copy;
//! - `dirty`: the copy is dirty in a cache (the home's processor when
//!   `local`, else the node in `head`);
//! - `head` (HeadVld/HeadPtr): the first remote sharer, or the owner;
//! - `shr_vld`/`shr` (ShrVld/ShrSet): the other remote sharers;
//! - `inv` (InvSet): while acknowledgements are collected, the nodes still to
//!   acknowledge; otherwise the model keeps it equal to the sharer list.
//!
//! The home's processor is never in `head`, `shr` or `inv`: `local` stands
//! for it. Nothing here knows time, queues or costs: the handlers in
//! `protocol` load an entry (charged), ask these functions what to do, and
//! perform it.

use magic::pack::{put, put_opt, Reader};
use magic::NodeId;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

/// How the sharer list is kept in MAGIC memory. It decides what walking and
/// updating the list costs, what a replacement hint does, and whether the
/// list can run out of room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirFormat {
    /// The reference model's entry: a head pointer and a set of the other
    /// sharers (a bit per node), read in one load. A hint clears the
    /// sharer's bit but leaves the head pointer.
    #[default]
    #[serde(rename = "bitvector")]
    BitVector,
    /// FLASH's dynamic pointer allocation: a head pointer in the entry and
    /// the other sharers in a list of links taken from a store shared by
    /// every line of the node, with a free list. A hint unlinks the sharer
    /// (the head too); a full store is made room in by invalidating the
    /// sharers of the line that has held its list longest.
    DynamicPointer,
}

/// Names of a setting's values, as a scenario file and the command line
/// spell them.
macro_rules! named {
    ($t:ty, $what:literal, $($v:path => $n:literal),+) => {
        impl $t {
            /// Every value's name, in the order of the type's values.
            pub const NAMES: &'static [&'static str] = &[$($n),+];

            /// The value's name in a scenario file and on the command line.
            pub fn name(self) -> &'static str {
                match self { $($v => $n),+ }
            }
        }

        impl std::str::FromStr for $t {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($n => Ok($v),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " '{}' (one of: {})"),
                        s,
                        [$($n),+].join(", ")
                    )),
                }
            }
        }
    };
}
pub(crate) use named;

named!(DirFormat, "directory format",
    DirFormat::BitVector => "bitvector",
    DirFormat::DynamicPointer => "dynamic-pointer");

/// A set of nodes in the order they were added (the dynamic pointer list's
/// order, newest first, where the format keeps one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sharers(SmallVec<[NodeId; 4]>);

impl Sharers {
    /// Packed for a search's frontier, in order.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.0.len() as u64);
        for n in &self.0 {
            put(out, n.0.into());
        }
    }

    /// Make this the set [`Sharers::pack`] packed.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        self.0.clear();
        for _ in 0..r.count() {
            self.0.push(NodeId(r.u32()));
        }
    }
}

impl DirEntry {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        let flags = self.pending as u64
            | (self.local as u64) << 1
            | (self.dirty as u64) << 2
            | (self.shr_vld as u64) << 3;
        put(out, flags);
        put_opt(out, self.head.map(|n| n.0.into()));
        self.shr.pack(out);
        self.inv.pack(out);
    }

    /// What [`DirEntry::pack`] packed.
    pub(crate) fn unpack(r: &mut Reader<'_>) -> DirEntry {
        let flags = r.u8();
        if flags >= 16 {
            r.mark_short();
        }
        let head = r.opt().map(|n| NodeId(n as u32));
        let mut set = || {
            let mut s = Sharers::default();
            s.unpack(r);
            s
        };
        let (shr, inv) = (set(), set());
        DirEntry {
            pending: flags & 1 != 0,
            local: flags & 2 != 0,
            dirty: flags & 4 != 0,
            head,
            shr_vld: flags & 8 != 0,
            shr,
            inv,
        }
    }
}

impl Sharers {
    /// Just `n`.
    pub fn one(n: NodeId) -> Sharers {
        let mut s = Sharers::default();
        s.add(n);
        s
    }

    /// `n` is in the set.
    pub fn contains(&self, n: NodeId) -> bool {
        self.0.contains(&n)
    }

    /// Add `n` at the end (once).
    pub fn add(&mut self, n: NodeId) {
        if !self.contains(n) {
            self.0.push(n);
        }
    }

    /// Add `n` at the front (once): a link prepended to a list.
    pub fn push_front(&mut self, n: NodeId) {
        if !self.contains(n) {
            self.0.insert(0, n);
        }
    }

    /// Take `n` out; its position (0 is the first) if it was there.
    pub fn remove(&mut self, n: NodeId) -> Option<usize> {
        let at = self.0.iter().position(|x| *x == n)?;
        self.0.remove(at);
        Some(at)
    }

    /// Take the first node out.
    pub fn pop_front(&mut self) -> Option<NodeId> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No node.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Empty the set.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The nodes, in order.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.0.iter().copied()
    }

    /// Everyone but `n`.
    pub fn without(&self, n: NodeId) -> Targets {
        self.iter().filter(|&x| x != n).collect()
    }
}

impl FromIterator<NodeId> for Sharers {
    fn from_iter<I: IntoIterator<Item = NodeId>>(it: I) -> Sharers {
        let mut s = Sharers::default();
        it.into_iter().for_each(|n| s.add(n));
        s
    }
}

/// Nodes to invalidate.
pub type Targets = SmallVec<[NodeId; 4]>;

/// Where the up-to-date copy of a line is: a summary of an entry's fields
/// for code that does not care how the entry keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum DirState {
    /// No cache is listed.
    #[default]
    Uncached,
    /// Memory is current; these nodes (the home among them when its
    /// processor holds a copy) may hold clean copies.
    Shared(Sharers),
    /// Dirty in this node's cache; memory is stale.
    Exclusive(NodeId),
}

/// A line's directory entry at its home: the reference model's fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// A transaction is under way: requests are NAKed.
    pub pending: bool,
    /// The home's processor holds a copy.
    pub local: bool,
    /// A cache holds the line dirty (the home's when `local`, else `head`).
    pub dirty: bool,
    /// The head pointer (HeadVld/HeadPtr): the first remote sharer, or the
    /// remote owner.
    pub head: Option<NodeId>,
    /// The sharer list beyond the head is valid (ShrVld).
    pub shr_vld: bool,
    /// The other remote sharers (ShrSet).
    pub shr: Sharers,
    /// Nodes whose invalidation acknowledgement is awaited (InvSet); when
    /// nothing is collected, the model keeps it equal to the sharers.
    pub inv: Sharers,
}

impl DirEntry {
    /// The entry of a line no cache holds.
    pub fn uncached() -> DirEntry {
        DirEntry::default()
    }

    /// Dirty in the home's own processor's cache.
    pub fn local_owner() -> DirEntry {
        DirEntry {
            local: true,
            dirty: true,
            ..DirEntry::default()
        }
    }

    /// Dirty in remote node `n`'s cache.
    pub fn remote_owner(n: NodeId) -> DirEntry {
        DirEntry {
            dirty: true,
            head: Some(n),
            ..DirEntry::default()
        }
    }

    /// Clean copies at `remote` (the first is the head) and at the home's
    /// processor when `local`.
    pub fn shared(local: bool, remote: &[NodeId]) -> DirEntry {
        let mut e = DirEntry {
            local,
            head: remote.first().copied(),
            ..DirEntry::default()
        };
        if remote.len() > 1 {
            e.shr_vld = true;
            e.shr = remote[1..].iter().copied().collect();
            e.inv = remote[1..].iter().copied().collect();
        }
        e
    }

    /// Acknowledgements are being collected.
    pub fn collecting(&self) -> bool {
        self.pending && !self.inv.is_empty()
    }

    /// The remote nodes listed as sharers: the head and, when valid, the
    /// rest of the list.
    pub fn remote_sharers(&self) -> Targets {
        let mut t: Targets = self.head.into_iter().collect();
        if self.shr_vld {
            t.extend(self.shr.iter().filter(|n| Some(*n) != self.head));
        }
        t
    }

    /// Where the up-to-date copy is, with `home` standing for the home's
    /// processor.
    pub fn state(&self, home: NodeId) -> DirState {
        if self.dirty {
            return match (self.local, self.head) {
                (false, Some(o)) => DirState::Exclusive(o),
                _ => DirState::Exclusive(home),
            };
        }
        let mut s = Sharers::default();
        if self.local {
            s.add(home);
        }
        self.remote_sharers().into_iter().for_each(|n| s.add(n));
        if s.is_empty() {
            DirState::Uncached
        } else {
            DirState::Shared(s)
        }
    }

    /// Take remote node `n` out of the sharers wherever it is listed (the
    /// next sharer becomes the head when it was the head): a copy dropped
    /// outside the protocol's own messages (a messaging handler's plan).
    pub fn drop_sharer(&mut self, n: NodeId) {
        if self.head == Some(n) {
            self.head = self.shr.pop_front();
        }
        self.shr.remove(n);
        self.inv.remove(n);
        if let Some(h) = self.head {
            self.shr.remove(h);
            self.inv.remove(h);
        }
        if self.shr.is_empty() {
            self.shr_vld = false;
        }
    }

    /// Forget every remote sharer (ShrVld off, ShrSet and InvSet empty).
    fn clear_sharers(&mut self) {
        self.shr_vld = false;
        self.shr.clear();
        self.inv.clear();
    }
}

/// The entry in words: its set flags, the head pointer and the sets, e.g.
/// `pending dirty head n2` or `local head n1 shr {n3, n2} inv {n3, n2}`.
impl std::fmt::Display for DirEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &Sharers| {
            let v: Vec<String> = s.iter().map(|n| format!("n{}", n.0)).collect();
            format!("{{{}}}", v.join(", "))
        };
        let mut parts: Vec<String> = [
            (self.pending, "pending"),
            (self.local, "local"),
            (self.dirty, "dirty"),
        ]
        .iter()
        .filter(|x| x.0)
        .map(|x| x.1.to_string())
        .collect();
        if let Some(h) = self.head {
            parts.push(format!("head n{}", h.0));
        }
        if self.shr_vld {
            parts.push(format!("shr {}", set(&self.shr)));
        }
        if !self.inv.is_empty() {
            parts.push(format!("inv {}", set(&self.inv)));
        }
        if parts.is_empty() {
            parts.push("uncached".into());
        }
        write!(f, "{}", parts.join(" "))
    }
}

/// What a requester asks its home for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Req {
    /// A read miss: a clean copy.
    Read,
    /// A write miss: an exclusive copy with data.
    Write,
    /// A write to a clean copy: exclusivity; data only if the copy was lost.
    Upgrade,
}

impl Req {
    /// The request asks for an exclusive copy.
    pub fn exclusive(self) -> bool {
        !matches!(self, Req::Read)
    }
}

/// Who collects invalidation acknowledgements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acks {
    /// The home, with the entry pending and new requests NAKed meanwhile;
    /// the writer gets its exclusive reply at once (the reference model).
    #[default]
    Home,
    /// The writer: the home is done at once, the reply carries the count of
    /// invalidations and the writer waits for every acknowledgement before
    /// it uses the line.
    Requester,
}

named!(Acks, "acknowledgement collector",
    Acks::Home => "home",
    Acks::Requester => "requester");

/// What the home's processor is doing with the line, as the home's rules
/// need it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HomeProc {
    /// Its cache holds the line dirty and is not in the middle of a fill or
    /// a writeback (the model's `CacheState = E` at the home).
    pub exclusive: bool,
}

/// Where an answer's data comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The home's memory.
    Memory,
    /// The home's processor's dirty copy (an intervention; a read leaves it
    /// clean and memory takes the line).
    Local,
    /// No data: an upgrade whose clean copy is intact.
    None,
}

/// What the home does for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refuse: the requester asks again.
    Nak,
    /// Forward to the owner; the entry is pending until it answers.
    Forward {
        /// The node whose cache holds the line dirty.
        owner: NodeId,
    },
    /// Answer the requester now.
    Answer {
        /// The requester gets the line exclusive.
        exclusive: bool,
        /// Where the data comes from.
        data: Source,
        /// Remote sharers to invalidate.
        invalidate: Targets,
        /// The home's processor's copy goes too.
        invalidate_local: bool,
    },
}

/// The home's rule for request `req` from `src` (the home itself for its
/// own processor's miss): the model's `PI_Local_*` and `NI_Local_*` rules,
/// with upgrades as a write whose data may stay behind.
pub fn on_request(
    e: &DirEntry,
    home: NodeId,
    src: NodeId,
    req: Req,
    hp: HomeProc,
    acks: Acks,
) -> (DirEntry, Outcome) {
    let mut n = e.clone();
    // Busy; the home's own dirty copy in flux; or the owner asking again
    // before its writeback has arrived.
    let nak = e.pending
        || (e.dirty && e.local && (!hp.exclusive || src == home))
        || (e.dirty && !e.local && e.head == Some(src));
    if nak {
        return (n, Outcome::Nak);
    }
    if e.dirty && !e.local {
        // PI_Local_Get_Get, PI_Local_GetX_GetX, NI_Local_Get_Get,
        // NI_Local_GetX_GetX.
        n.pending = true;
        let owner = e.head.unwrap_or(home);
        return (n, Outcome::Forward { owner });
    }
    let local_req = src == home;
    if !req.exclusive() {
        let data = if e.dirty {
            // NI_Local_Get_Put, the home's processor owning the line.
            n.dirty = false;
            n.head = Some(src);
            Source::Local
        } else {
            if local_req {
                // PI_Local_Get_Put.
                n.local = true;
            } else if e.head.is_some() {
                // NI_Local_Get_Put, a further sharer.
                n.inv = e.shr.clone();
                n.inv.add(src);
                n.shr_vld = true;
                n.shr.push_front(src);
            } else {
                // NI_Local_Get_Put, the first sharer.
                n.head = Some(src);
            }
            Source::Memory
        };
        let out = Outcome::Answer {
            exclusive: false,
            data,
            invalidate: Targets::new(),
            invalidate_local: false,
        };
        return (n, out);
    }
    if local_req {
        // PI_Local_GetX_PutX: the home's processor writes; remote sharers go.
        let invalidate: Targets = e.remote_sharers();
        n.local = true;
        n.dirty = true;
        n.head = None;
        n.clear_sharers();
        if !invalidate.is_empty() && acks == Acks::Home {
            n.pending = true;
            n.inv = invalidate.iter().copied().collect();
        }
        let data = if e.local && req == Req::Upgrade {
            Source::None
        } else {
            Source::Memory
        };
        let out = Outcome::Answer {
            exclusive: true,
            data,
            invalidate,
            invalidate_local: false,
        };
        return (n, out);
    }
    // NI_Local_GetX_PutX.
    let (data, invalidate, invalidate_local) = if e.dirty {
        (Source::Local, Targets::new(), false)
    } else {
        let holds = e.head == Some(src) || (e.shr_vld && e.shr.contains(src));
        let data = if req == Req::Upgrade && holds {
            Source::None
        } else {
            Source::Memory
        };
        let others: Targets = e
            .remote_sharers()
            .into_iter()
            .filter(|&x| x != src)
            .collect();
        (data, others, e.local)
    };
    n.local = false;
    n.dirty = true;
    n.head = Some(src);
    n.clear_sharers();
    if !invalidate.is_empty() && acks == Acks::Home {
        n.pending = true;
        n.inv = invalidate.iter().copied().collect();
    }
    let out = Outcome::Answer {
        exclusive: true,
        data,
        invalidate,
        invalidate_local,
    };
    (n, out)
}

/// NI_InvAck: `src` has dropped its copy. True when it was awaited.
pub fn on_inv_ack(e: &mut DirEntry, src: NodeId) -> bool {
    if !e.pending || e.inv.remove(src).is_none() {
        return false;
    }
    if e.inv.is_empty() {
        e.pending = false;
        if e.local && !e.dirty {
            e.local = false;
        }
    }
    true
}

/// NI_Wb: a remote owner's writeback; memory takes the line.
pub fn on_writeback(e: &mut DirEntry) {
    e.dirty = false;
    e.head = None;
}

/// NI_ShWb: the owner kept a clean copy and answered reader `src`; memory
/// takes the line and `src` joins the sharers.
pub fn on_sharing_writeback(e: &mut DirEntry, src: NodeId) {
    e.pending = false;
    e.dirty = false;
    e.shr_vld = true;
    let mut inv = e.shr.clone();
    inv.add(src);
    e.inv = inv;
    e.shr.push_front(src);
}

/// NI_FAck: the owner handed the line to writer `src`.
pub fn on_forward_ack(e: &mut DirEntry, src: NodeId) {
    e.pending = false;
    if e.dirty {
        e.head = Some(src);
    }
}

/// NI_Nak_Clear: the owner refused a forward; the entry is free again.
pub fn on_nak_clear(e: &mut DirEntry) {
    e.pending = false;
}

/// NI_Local_Put: the home's own read, answered by the remote owner.
pub fn on_local_put(e: &mut DirEntry) {
    e.pending = false;
    e.dirty = false;
    e.local = true;
}

/// NI_Local_PutXAcksDone: the home's own write, answered by the remote owner.
pub fn on_local_putx(e: &mut DirEntry) {
    e.pending = false;
    e.local = true;
    e.head = None;
}

/// PI_Local_PutX: the home's processor writes its dirty line back.
pub fn on_local_writeback(e: &mut DirEntry) {
    if !e.pending {
        e.local = false;
    }
    e.dirty = false;
}

/// PI_Local_Replace: the home's processor dropped its clean copy.
pub fn on_local_replace(e: &mut DirEntry) {
    e.local = false;
}

/// A replacement hint from `src` (NI_Replace). With the bit vector the
/// sharer leaves the list beyond the head, and nothing changes while that
/// list is not valid; with dynamic pointers the sharer is unlinked wherever
/// it is, the next sharer becoming the head when it was the head. Returns
/// the unlinked node's position in the list walked (0 for the head), if any.
pub fn on_replace(e: &mut DirEntry, src: NodeId, format: DirFormat) -> Option<usize> {
    match format {
        DirFormat::BitVector => {
            if !e.shr_vld {
                return None;
            }
            e.inv.remove(src);
            e.shr.remove(src).map(|at| at + 1)
        }
        DirFormat::DynamicPointer => {
            if e.dirty || e.collecting() {
                return None;
            }
            if e.head == Some(src) {
                e.head = e.shr.pop_front();
                if let Some(h) = e.head {
                    e.inv.remove(h);
                }
                e.inv.remove(src);
                if e.shr.is_empty() {
                    e.shr_vld = false;
                }
                return Some(0);
            }
            let at = e.shr.remove(src)?;
            e.inv.remove(src);
            if e.shr.is_empty() {
                e.shr_vld = false;
            }
            Some(at + 1)
        }
    }
}

/// Reclamation (dynamic pointers): every copy of the line is invalidated,
/// with the acknowledgements collected here, so that its links go back to
/// the free list. Returns the remote nodes to invalidate and whether the
/// home's processor's copy goes too.
pub fn reclaim(e: &mut DirEntry) -> (Targets, bool) {
    let targets = e.remote_sharers();
    let local = e.local;
    e.local = false;
    e.head = None;
    e.clear_sharers();
    if !targets.is_empty() {
        e.pending = true;
        e.inv = targets.iter().copied().collect();
    }
    (targets, local)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: NodeId = NodeId(0);
    const A: NodeId = NodeId(1);
    const B: NodeId = NodeId(2);
    const C: NodeId = NodeId(3);
    const HP: HomeProc = HomeProc { exclusive: false };

    fn req(e: &DirEntry, src: NodeId, r: Req) -> (DirEntry, Outcome) {
        on_request(e, H, src, r, HP, Acks::Home)
    }

    #[test]
    fn readers_fill_the_head_then_the_list() {
        let (e, o) = req(&DirEntry::uncached(), A, Req::Read);
        assert_eq!(e, DirEntry::shared(false, &[A]));
        assert!(matches!(
            o,
            Outcome::Answer {
                data: Source::Memory,
                ..
            }
        ));
        let (e, _) = req(&e, B, Req::Read);
        let (e, _) = req(&e, C, Req::Read);
        assert_eq!(e.head, Some(A));
        assert!(e.shr_vld);
        assert_eq!(e.shr.iter().collect::<Vec<_>>(), [C, B]);
        assert_eq!(
            e.state(H),
            DirState::Shared([A, C, B].into_iter().collect())
        );
        assert_eq!(e.to_string(), "head n1 shr {n3, n2} inv {n2, n3}");
        assert_eq!(DirEntry::uncached().to_string(), "uncached");
    }

    #[test]
    fn a_write_to_a_shared_line_collects_acknowledgements_at_the_home() {
        let e = DirEntry::shared(true, &[A, B, C]);
        let (e, o) = req(&e, B, Req::Write);
        assert_eq!(
            o,
            Outcome::Answer {
                exclusive: true,
                data: Source::Memory,
                invalidate: [A, C].into_iter().collect(),
                invalidate_local: true,
            }
        );
        assert!(e.pending && e.dirty && !e.local && e.head == Some(B));
        assert_eq!(req(&e, C, Req::Read).1, Outcome::Nak);
        let mut e = e;
        assert!(on_inv_ack(&mut e, A));
        assert!(e.pending);
        assert!(!on_inv_ack(&mut e, A));
        assert!(on_inv_ack(&mut e, C));
        assert_eq!(e, DirEntry::remote_owner(B));
    }

    #[test]
    fn with_the_requester_collecting_the_home_is_free_at_once() {
        let e = DirEntry::shared(false, &[A, B]);
        let (e, o) = on_request(&e, H, C, Req::Write, HP, Acks::Requester);
        assert_eq!(e, DirEntry::remote_owner(C));
        assert!(matches!(o, Outcome::Answer { ref invalidate, .. } if invalidate.len() == 2));
    }

    #[test]
    fn a_dirty_line_is_forwarded_and_the_owner_asking_again_is_refused() {
        let e = DirEntry::remote_owner(B);
        let (p, o) = req(&e, A, Req::Read);
        assert_eq!(o, Outcome::Forward { owner: B });
        assert!(p.pending);
        assert_eq!(req(&e, B, Req::Read).1, Outcome::Nak);
        let mut s = p.clone();
        on_sharing_writeback(&mut s, A);
        assert!(!s.pending && !s.dirty && s.head == Some(B) && s.shr.contains(A));
        let mut f = p;
        on_forward_ack(&mut f, A);
        assert_eq!(f, DirEntry::remote_owner(A));
    }

    #[test]
    fn the_homes_own_copy_is_taken_or_shared() {
        let busy = req(&DirEntry::local_owner(), A, Req::Read).1;
        assert_eq!(busy, Outcome::Nak);
        let hp = HomeProc { exclusive: true };
        let (e, o) = on_request(&DirEntry::local_owner(), H, A, Req::Read, hp, Acks::Home);
        assert!(matches!(
            o,
            Outcome::Answer {
                data: Source::Local,
                ..
            }
        ));
        assert_eq!(e, DirEntry::shared(true, &[A]));
        let (e, _) = on_request(&DirEntry::local_owner(), H, A, Req::Write, hp, Acks::Home);
        assert_eq!(e, DirEntry::remote_owner(A));
    }

    #[test]
    fn hints_differ_by_format() {
        let e = DirEntry::shared(false, &[A, B, C]);
        let mut bv = e.clone();
        assert_eq!(on_replace(&mut bv, A, DirFormat::BitVector), None);
        assert_eq!(on_replace(&mut bv, B, DirFormat::BitVector), Some(1));
        assert_eq!(bv.head, Some(A));
        let mut dp = e;
        assert_eq!(on_replace(&mut dp, A, DirFormat::DynamicPointer), Some(0));
        assert_eq!(dp.head, Some(B));
        assert_eq!(on_replace(&mut dp, B, DirFormat::DynamicPointer), Some(0));
        assert_eq!(on_replace(&mut dp, C, DirFormat::DynamicPointer), Some(0));
        assert_eq!(dp, DirEntry::uncached());
    }

    #[test]
    fn reclamation_invalidates_every_copy_with_the_home_collecting() {
        let mut e = DirEntry::shared(true, &[A, B]);
        let (t, local) = reclaim(&mut e);
        assert_eq!((t.as_slice(), local), (&[A, B][..], true));
        assert!(e.collecting() && !e.local && e.head.is_none());
    }
}
