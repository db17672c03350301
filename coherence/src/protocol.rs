//! The directory protocol as MAGIC handlers, and [`Coherence`], the protocol
//! unit that installs them.
//!
//! The handlers follow the rules of the reference model of FLASH's protocol
//! (docs/coherence.md maps each rule to its handler and test). A processor
//! miss enters its node's processor interface; the handler there either acts
//! as the home (a local line) or sends the request to the home. The home
//! reads the directory entry, asks [`crate::directory`] what to do, and does
//! it: answer from memory (speculatively read at dispatch), intervene in its
//! own processor's cache, invalidate sharers (the home collects their
//! acknowledgements with the entry pending, and NAKs meanwhile; the writer is
//! answered at once), forward to a remote owner (three hops; an owner that no
//! longer holds the line NAKs the requester and clears the home's pending
//! mark), or NAK a busy entry. Clean evictions send replacement hints. No node
//! sends a network message to itself. Requests and replies travel on separate
//! lanes; the messages are [`CohMsg`]'s.
//!
//! Three other choices the protocol can make are options ([`CohParams`]):
//! acknowledgements collected by the writer ([`Acks::Requester`]), forwards
//! deferred at an owner whose own reply has not arrived ([`Forwards::Defer`]),
//! and silent clean evictions (`hints: false`).
//!
//! Every step a handler takes is charged through the context with the
//! instruction counts of [`CoherenceCosts`]; directory entries, pointer links
//! and outstanding-miss records live in MAGIC memory and are reached through
//! its data cache.
//!
//! The protocol runs alone ([`machine`], or [`Coherence`] beside other
//! protocols), or carried by a protocol over its own node state: a state
//! that is [`Coherent`] gets the handlers with [`install_on`].

use crate::directory::{self, Acks, DirEntry, DirFormat, HomeProc, Outcome, Req, Source};
use crate::msg::{coh_msg, CohKind, CohMsg};
use crate::processor::{Fill, Proc};
use hashbrown::HashMap;
use magic::costs::Source as Provenance;
use magic::pack::{by_key, put, put_msg, put_opt, Reader};
use magic::{
    BufId, BuildError, Cx, Dispatch, Install, LineState, Magic, MagicParams, Msg, NodeId,
    NodeState, OutOfRange, PAddr, ProcStep, Processor, Protocol, Region, LINE_BYTES,
};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::collections::VecDeque;

/// Where a line's home is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// The node bits of the physical address (page placement by the OS).
    #[default]
    NodeBits,
    /// Consecutive lines on consecutive nodes.
    Interleaved,
}

/// What an owner does with a forward that arrives before it has used its
/// own reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Forwards {
    /// NAK the requester and clear the home's pending mark, as for a line
    /// the owner no longer holds (the reference model).
    #[default]
    Nak,
    /// When the reply is in (the owner waits for its acknowledgements, or
    /// the fill is crossing to the processor), keep the forward until the
    /// processor has used the fill, then serve it. A forward that arrives
    /// before the reply is NAKed as in the model: it cannot be told from a
    /// forward for a line written back since.
    Defer,
}

directory::named!(Forwards, "forward handling",
    Forwards::Nak => "nak",
    Forwards::Defer => "defer");

magic::cost_sheet! {
    /// Instructions each protocol step issues on the PP (dual issue: a cycle
    /// per two), with the data-cache loads and stores the handlers charge
    /// beside them. One set for every handler. The paper gives no handler
    /// counts for the base protocol: these are the model's, and the remote
    /// read-miss latencies (111 and 191 cycles published; 107 and 187 with
    /// these, 95 and 161 with none) check their size.
    pub struct CoherenceCosts in "costs.coherence" {
        /// Read the header, branch on the case.
        decode: u32 = 4, Provenance::Choice(
            "a jump-table handler knows its case; the header's fields are two bit-field extracts.");
        /// Extract and test the directory entry's state (plus its load).
        dir_check: u32 = 4, Provenance::Choice(
            "extract the state and sharer fields, compare, branch."),
            from 1: "the entry's load is one of its instructions";
        /// Compose and write back the new entry (plus its store).
        dir_update: u32 = 3, Provenance::Choice(
            "insert two fields, store; the paper's transfer handler updates an entry in 2 (Table 2)."),
            from 1: "the entry's store is one of its instructions";
        /// Form a header and hand it to the outbox or the processor interface.
        send: u32 = 4, Provenance::Choice(
            "type, destination, address and count into the header registers.");
        /// Per invalidation sent (plus a link load in the dynamic pointer format).
        per_target: u32 = 3, Provenance::Choice(
            "next sharer (a find-first-set or the next link), form and send an invalidation.");
        /// Issue an intervention, memory read or memory write.
        issue: u32 = 2, Provenance::Choice(
            "one command to the unit, one for its buffer.");
        /// Update the outstanding-miss record (plus its load and store).
        record: u32 = 3, Provenance::Choice(
            "load, modify a count or state, store."),
            from 2: "the record's load and store are among its instructions";
        /// Follow one link of the pointer store looking for a sharer (plus its load).
        link_walk: u32 = 2, Provenance::Choice(
            "compare the link's node, branch, take its next field."),
            from 1: "the link's load is one of its instructions";
        /// Take a link from the free list and prepend it to a line's list (plus its store).
        link_alloc: u32 = 3, Provenance::Choice(
            "pop the free-list head, write node and next into the link, point the entry at it."),
            from 1: "the link's store is one of its instructions";
        /// Return a link to the free list (plus its store).
        link_free: u32 = 2, Provenance::Choice(
            "write the free-list head into the link's next field, make the link the head."),
            from 1: "the link's store is one of its instructions";
        /// Choose a list to reclaim when the store is full.
        reclaim: u32 = 4, Provenance::Choice(
            "take the oldest list from the reclamation queue, load its entry, test it.");
    }
}

/// A known bug that can be planted in the protocol's handlers, so that a
/// checker can be shown to find it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bug {
    /// The home forgets to mark an entry pending when it forwards a request
    /// to the owner, so a second request is forwarded too.
    ForgetPending,
    /// The home sends no invalidation to the last sharer of a line it
    /// grants exclusive (and does not wait for its acknowledgement).
    SkipInvalidation,
    /// The home does not keep an entry pending while it collects
    /// invalidation acknowledgements: new requests are served with
    /// invalidations still on their way.
    EarlyRelease,
}

impl Bug {
    /// Every bug, in the order `--inject list` prints them.
    pub const ALL: [Bug; 3] = [Bug::ForgetPending, Bug::SkipInvalidation, Bug::EarlyRelease];

    /// Whether the bug changes the protocol when `acks` collects the
    /// acknowledgements: the early release is of the entry the home keeps
    /// pending while it collects them, which a writer that collects them
    /// leaves unset.
    pub fn acts_under(self, acks: crate::Acks) -> bool {
        self != Bug::EarlyRelease || acks == crate::Acks::Home
    }

    /// The bug's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Bug::ForgetPending => "forget-pending",
            Bug::SkipInvalidation => "skip-invalidation",
            Bug::EarlyRelease => "early-release",
        }
    }
}

/// Links in each node's pointer store by default: one per line of a 1 MB
/// processor cache (8192 lines of 128 bytes), so one node's cache can be
/// listed whole. The size FLASH used is not in the reference: a model choice.
pub const POINTER_STORE: u32 = 8192;

/// Parameters of the protocol (`[coherence]` in a scenario file). Its
/// `Deserialize` reads them as they serialize (a result's configuration),
/// a field left out keeping its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CohParams {
    /// Where lines are homed (by the address's node bits by default).
    pub placement: Placement,
    /// How directory entries keep their sharers (the reference model's bit
    /// vector by default, or FLASH's dynamic pointer allocation).
    pub format: DirFormat,
    /// Links in each node's pointer store (dynamic pointers only; 1 to
    /// 2^20, [`POINTER_STORE`] by default).
    pub pointer_store: u32,
    /// Who collects invalidation acknowledgements (the home by default).
    pub acks: Acks,
    /// Clean evictions send replacement hints to the home (true by
    /// default); false: they are silent and sharer lists only grow until a
    /// write.
    pub hints: bool,
    /// What an owner does with a forward that arrives before its own reply
    /// (NAK by default).
    pub forwards: Forwards,
    /// What each handler step costs, in PP instructions ([`CoherenceCosts`]
    /// gives the defaults).
    pub costs: CoherenceCosts,
    /// A known bug planted in the handlers, for testing a checker (none by
    /// default; see [`Bug`]).
    pub inject: Option<Bug>,
}

impl Default for CohParams {
    fn default() -> Self {
        CohParams {
            placement: Placement::default(),
            format: DirFormat::default(),
            pointer_store: POINTER_STORE,
            acks: Acks::default(),
            hints: true,
            forwards: Forwards::default(),
            costs: CoherenceCosts::default(),
            inject: None,
        }
    }
}

impl CohParams {
    /// Refuse a value outside its documented range, naming the field (a
    /// cost as its scenario key, `costs.coherence.issue`).
    pub fn validate(&self) -> Result<(), OutOfRange> {
        OutOfRange::check("pointer_store", self.pointer_store, 1, 1 << 20)?;
        // The store is the dynamic-pointer directory's: another size under
        // the bit vector would change nothing.
        if self.format != DirFormat::DynamicPointer && self.pointer_store != POINTER_STORE {
            return Err(OutOfRange::new(
                "pointer_store",
                format!(
                    "{POINTER_STORE}, its default, under the {} directory: the store is the dynamic-pointer directory's",
                    self.format.name()
                ),
                self.pointer_store,
            ));
        }
        magic::costs::Sheet::validate(&self.costs)
    }
}

/// MAGIC-memory addresses of the protocol's data (for data-cache costs).
const DIR_BASE: u64 = 0x1000_0000;
const LINK_BASE: u64 = 0x2000_0000;
const MISS_BASE: u64 = 0x3000_0000;

/// A miss this node's processor is waiting for.
#[derive(Clone, Debug)]
struct Miss {
    req: Req,
    /// Acknowledgements to collect, once the reply has said how many.
    acks_needed: Option<u32>,
    acks_got: u32,
    exclusive: bool,
    /// The reply's data, held until every acknowledgement is in.
    buf: Option<BufId>,
    /// An invalidation overtook the reply: use the data once, do not cache it.
    invalidated: bool,
    /// The fill is crossing to the processor.
    filling: bool,
    retries: u32,
}

/// Counters a study reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CohStats {
    /// Requests this node refused as their home (busy entries, no buffer).
    pub naks: u64,
    /// Requests this node's misses sent again after a NAK.
    pub retries: u64,
    /// The most NAKs one miss met.
    pub max_retries: u32,
    /// Invalidations this node sent as a home.
    pub invalidations: u64,
    /// Interventions at this node's processor cache for message data (a
    /// coherence mode's plan taking a dirty line of a buffer).
    pub message_interventions: u64,
    /// Invalidations at this node's processor cache for message data (a
    /// coherence mode's plan dropping a clean copy of a receive line).
    pub message_invalidations: u64,
    /// Requests this node forwarded to an owner as a home.
    pub forwards: u64,
    /// Forwards this node refused as the presumed owner (the line gone, or
    /// its own reply not yet in).
    pub owner_naks: u64,
    /// Forwards that waited for this node's own fill ([`Forwards::Defer`]).
    pub deferred: u64,
    /// Replacement hints this node's processor sent.
    pub hints_sent: u64,
    /// Replacement hints this node took as a home.
    pub hints: u64,
    /// Lists this node reclaimed because its pointer store was full.
    pub reclaims: u64,
    /// Messages that found the protocol in a state it does not expect.
    pub protocol_errors: u64,
}

/// A node's pointer store (dynamic pointers): how many links are taken, and
/// the lines holding lists, oldest first, for reclamation.
#[derive(Clone, Debug, Default)]
struct PointerStore {
    used: u32,
    lists: VecDeque<u64>,
}

/// One node: its directory (as home), its outstanding misses (as requester),
/// and its compute processor.
pub struct CohNode {
    /// This node.
    pub id: NodeId,
    /// Nodes in the machine.
    pub nodes: u32,
    /// The protocol's parameters.
    pub params: CohParams,
    dir: HashMap<u64, DirEntry>,
    store: PointerStore,
    misses: HashMap<u64, Miss>,
    /// Dirty evictions of each line not yet sent on by MAGIC (a line can be
    /// evicted again before the first is).
    writebacks: HashMap<u64, u32>,
    deferred: HashMap<u64, SmallVec<[Deferred; 2]>>,
    /// The compute processor's program.
    pub proc: Proc,
    /// What the protocol counted.
    pub stats: CohStats,
}

impl CohNode {
    /// What this node's state is whatever the nodes are called (see
    /// `magic::check::Model::node_signature`): how many misses, writebacks
    /// and deferred forwards it holds, and how far its processor's program
    /// is, folded into a number.
    pub fn signature(&self) -> u64 {
        magic::check::signature([
            self.misses.len() as u64,
            self.writebacks.len() as u64,
            self.deferred.len() as u64,
            self.proc.results.len() as u64,
            self.proc.remaining() as u64,
            self.proc.waiting().into(),
        ])
    }

    /// Packed for a search's frontier (see [`magic::pack`]): all but its
    /// parameters, which are the same in every state of a machine.
    pub fn pack(&self, out: &mut Vec<u8>) {
        let CohNode {
            id,
            nodes,
            params: _,
            dir,
            store,
            misses,
            writebacks,
            deferred,
            proc,
            stats,
        } = self;
        put(out, id.0.into());
        put(out, (*nodes).into());
        put(out, dir.len() as u64);
        by_key(dir, |k, e| {
            put(out, k);
            e.pack(out);
        });
        put(out, store.used.into());
        put(out, store.lists.len() as u64);
        store.lists.iter().for_each(|&k| put(out, k));
        put(out, misses.len() as u64);
        by_key(misses, |k, m| {
            put(out, k);
            put(out, m.req as u64);
            put_opt(out, m.acks_needed.map(u64::from));
            put(out, m.acks_got.into());
            put_opt(out, m.buf.map(|b| b.0.into()));
            let flags = m.exclusive as u64 | (m.invalidated as u64) << 1 | (m.filling as u64) << 2;
            put(out, flags);
            put(out, m.retries.into());
        });
        put(out, writebacks.len() as u64);
        by_key(writebacks, |k, &n| {
            put(out, k);
            put(out, n.into());
        });
        put(out, deferred.len() as u64);
        by_key(deferred, |k, ds| {
            put(out, k);
            put(out, ds.len() as u64);
            for d in ds {
                put_msg(out, &d.msg);
                put(out, d.requester.0.into());
                put(out, d.exclusive.into());
            }
        });
        proc.pack(out);
        let CohStats {
            naks,
            retries,
            max_retries,
            invalidations,
            message_interventions,
            message_invalidations,
            forwards,
            owner_naks,
            deferred,
            hints_sent,
            hints,
            reclaims,
            protocol_errors,
        } = *stats;
        for x in [
            naks,
            retries,
            max_retries.into(),
            invalidations,
            message_interventions,
            message_invalidations,
            forwards,
            owner_naks,
            deferred,
            hints_sent,
            hints,
            reclaims,
            protocol_errors,
        ] {
            put(out, x);
        }
    }

    /// Make this node (one of the same machine's) the one [`CohNode::pack`]
    /// packed, reusing its storage.
    pub fn unpack(&mut self, r: &mut Reader<'_>) {
        self.id = NodeId(r.u32());
        self.nodes = r.u32();
        self.dir.clear();
        for _ in 0..r.count() {
            let k = r.u64();
            self.dir.insert(k, DirEntry::unpack(r));
        }
        self.store.used = r.u32();
        self.store.lists.clear();
        for _ in 0..r.count() {
            self.store.lists.push_back(r.u64());
        }
        self.misses.clear();
        for _ in 0..r.count() {
            let k = r.u64();
            let req = match r.u8() {
                0 => Req::Read,
                1 => Req::Write,
                2 => Req::Upgrade,
                _ => {
                    r.mark_short();
                    Req::Read
                }
            };
            let acks_needed = r.opt().map(|x| x as u32);
            let acks_got = r.u32();
            let buf = r.opt().map(|b| magic::BufId(b as u16));
            let flags = r.u8();
            let retries = r.u32();
            let m = Miss {
                req,
                acks_needed,
                acks_got,
                exclusive: flags & 1 != 0,
                buf,
                invalidated: flags & 2 != 0,
                filling: flags & 4 != 0,
                retries,
            };
            self.misses.insert(k, m);
        }
        self.writebacks.clear();
        for _ in 0..r.count() {
            let k = r.u64();
            self.writebacks.insert(k, r.u32());
        }
        self.deferred.clear();
        for _ in 0..r.count() {
            let k = r.u64();
            let mut ds = SmallVec::new();
            for _ in 0..r.count() {
                let msg = r.msg();
                let requester = NodeId(r.u32());
                let exclusive = r.bool();
                ds.push(Deferred {
                    msg,
                    requester,
                    exclusive,
                });
            }
            self.deferred.insert(k, ds);
        }
        self.proc.unpack(r);
        let mut x = || r.u64();
        self.stats = CohStats {
            naks: x(),
            retries: x(),
            max_retries: x() as u32,
            invalidations: x(),
            message_interventions: x(),
            message_invalidations: x(),
            forwards: x(),
            owner_naks: x(),
            deferred: x(),
            hints_sent: x(),
            hints: x(),
            reclaims: x(),
            protocol_errors: x(),
        };
    }
}

/// A node's state, as a search keeps it; `clone_from` reuses the storage
/// of the node it overwrites.
impl Clone for CohNode {
    fn clone(&self) -> Self {
        CohNode {
            id: self.id,
            nodes: self.nodes,
            params: self.params,
            dir: self.dir.clone(),
            store: self.store.clone(),
            misses: self.misses.clone(),
            writebacks: self.writebacks.clone(),
            deferred: self.deferred.clone(),
            proc: self.proc.clone(),
            stats: self.stats,
        }
    }

    fn clone_from(&mut self, src: &Self) {
        let CohNode {
            id,
            nodes,
            params,
            dir,
            store,
            misses,
            writebacks,
            deferred,
            proc,
            stats,
        } = src;
        self.id = *id;
        self.nodes = *nodes;
        self.params = *params;
        self.dir.clone_from(dir);
        self.store.clone_from(store);
        self.misses.clone_from(misses);
        self.writebacks.clone_from(writebacks);
        self.deferred.clone_from(deferred);
        self.proc.clone_from(proc);
        self.stats = *stats;
    }
}

/// A forward that waits for this node's own fill of its line.
#[derive(Clone, Copy, Debug)]
struct Deferred {
    msg: Msg,
    requester: NodeId,
    exclusive: bool,
}

/// The key of a line: its canonical address over 128.
fn key(a: PAddr) -> u64 {
    a.0 / LINE_BYTES as u64
}

/// Links an entry takes in the pointer store.
fn links(e: &DirEntry) -> u32 {
    if e.shr_vld {
        e.shr.len() as u32
    } else {
        0
    }
}

impl CohNode {
    /// Node `id` of `nodes`, with an empty directory and an idle processor.
    pub fn new(id: NodeId, nodes: u32, params: CohParams) -> CohNode {
        CohNode {
            id,
            nodes,
            params,
            dir: HashMap::new(),
            store: PointerStore::default(),
            misses: HashMap::new(),
            writebacks: HashMap::new(),
            deferred: HashMap::new(),
            proc: Proc::default(),
            stats: CohStats::default(),
        }
    }

    /// The directory entry of a line homed here.
    pub fn entry(&self, line: PAddr) -> DirEntry {
        self.dir.get(&key(line)).cloned().unwrap_or_default()
    }

    /// Links of the pointer store in use (dynamic pointers).
    pub fn links_used(&self) -> u32 {
        self.store.used
    }

    /// The protocol's state at this node, canonically, into `out` (for the
    /// exhaustive checker): directory entries, outstanding misses, writebacks
    /// not yet sent on, deferred forwards and the processor's program, each
    /// in line order with sets sorted; no times, no counters of work done,
    /// no NAK retry counts (a retry loop returns to the state it left).
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_renamed(&|n| n, &|v| v, out);
    }

    /// As [`CohNode::encode`], with every node the state names as `rename`
    /// gives it and every value stored or loaded as `value` gives it (a
    /// search's symmetry: see `magic::check::Model::symmetric`).
    pub fn encode_renamed(
        &self,
        rename: &dyn Fn(NodeId) -> NodeId,
        value: &dyn Fn(u64) -> u64,
        out: &mut Vec<u8>,
    ) {
        let node = |out: &mut Vec<u8>, n: NodeId| out.extend_from_slice(&n.0.to_le_bytes());
        let set = |out: &mut Vec<u8>, s: &directory::Sharers, ordered: bool| {
            let mut v: SmallVec<[NodeId; 4]> = s.iter().map(rename).collect();
            if !ordered {
                v.sort_unstable();
            }
            out.push(v.len() as u8);
            v.into_iter().for_each(|n| node(out, n));
        };
        // The list's order decides what a walk costs, not what it means;
        // only dynamic pointers unlink by position.
        let ordered = self.params.format == DirFormat::DynamicPointer;
        out.extend_from_slice(&(self.dir.len() as u32).to_le_bytes());
        by_key(&self.dir, |k, e| {
            out.extend_from_slice(&k.to_le_bytes());
            out.push(e.pending as u8 | (e.local as u8) << 1 | (e.dirty as u8) << 2);
            out.push(e.shr_vld as u8);
            node(out, e.head.map_or(NodeId(u32::MAX), rename));
            set(out, &e.shr, ordered);
            set(out, &e.inv, false);
        });
        out.extend_from_slice(&(self.misses.len() as u32).to_le_bytes());
        by_key(&self.misses, |k, m| {
            out.extend_from_slice(&k.to_le_bytes());
            out.push(m.req as u8);
            out.extend_from_slice(&m.acks_needed.map_or(u32::MAX, |x| x).to_le_bytes());
            out.extend_from_slice(&m.acks_got.to_le_bytes());
            out.extend_from_slice(&[
                m.exclusive as u8,
                m.buf.is_some() as u8,
                m.invalidated as u8,
                m.filling as u8,
            ]);
        });
        out.extend_from_slice(&(self.writebacks.len() as u32).to_le_bytes());
        by_key(&self.writebacks, |k, n| {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        });
        out.extend_from_slice(&(self.deferred.len() as u32).to_le_bytes());
        by_key(&self.deferred, |k, ds| {
            out.extend_from_slice(&k.to_le_bytes());
            out.push(ds.len() as u8);
            for d in ds {
                out.extend_from_slice(&d.msg.mtype.0.to_le_bytes());
                node(out, rename(d.requester));
                out.push(d.exclusive as u8);
            }
        });
        self.proc.encode_renamed(value, out);
        out.extend_from_slice(&self.stats.protocol_errors.to_le_bytes());
    }

    /// Set a directory entry (for experiments preparing a starting point;
    /// the handlers' own updates go through [`dir_store`], which charges
    /// them). The pointer store follows the entry's list.
    pub fn set_entry(&mut self, line: PAddr, e: DirEntry) {
        let k = key(line);
        let before = self.dir.get(&k).map_or(0, links);
        let after = links(&e);
        if self.params.format == DirFormat::DynamicPointer {
            self.store.used = (self.store.used + after).saturating_sub(before);
            if before == 0 && after > 0 {
                self.store.lists.push_back(k);
            }
        }
        if e == DirEntry::default() {
            self.dir.remove(&k);
        } else {
            self.dir.insert(k, e);
        }
    }

    /// This node's processor has a miss outstanding or a writeback not yet
    /// sent on for the line: its cache cannot be trusted to hold it as the
    /// directory says until that is over.
    pub(crate) fn local_busy(&self, k: u64) -> bool {
        self.misses.contains_key(&k) || self.writebacks.contains_key(&k)
    }

    /// This node's processor is filling or writing back `line`: its cache is
    /// in flux, and anything that would intervene must wait.
    pub fn in_flux(&self, line: PAddr) -> bool {
        self.local_busy(key(line))
    }

    /// One writeback of the line has been sent on; false if none was due.
    fn writeback_done(&mut self, k: u64) -> bool {
        match self.writebacks.get_mut(&k) {
            Some(n) if *n > 1 => {
                *n -= 1;
                true
            }
            Some(_) => {
                self.writebacks.remove(&k);
                true
            }
            None => false,
        }
    }

    /// The processor writes `line` back and drops it from its cache, as a
    /// cache instruction of the user's program does (a flush before a send
    /// or after a receive without coherence): a dirty line goes to MAGIC as
    /// a writeback, a clean one is dropped (with a replacement hint when
    /// hints are on). True if it was dirty.
    pub fn flush_line(&mut self, p: &mut Processor<'_>, line: PAddr) -> bool {
        let a = canonical(self.params.placement, self.nodes, line);
        match crate::processor::evict(p, a, self.params.hints) {
            crate::processor::Evicted::Dirty => {
                *self.writebacks.entry(key(a)).or_default() += 1;
                true
            }
            crate::processor::Evicted::Clean => {
                self.stats.hints_sent += 1;
                false
            }
            crate::processor::Evicted::Nothing => false,
        }
    }

    /// Lines whose directory entries are not uncached.
    pub fn directory(&self) -> impl Iterator<Item = (u64, &DirEntry)> {
        self.dir.iter().map(|(k, e)| (*k, e))
    }
}

/// A node state that contains the coherence protocol's: lets the protocol's
/// handlers run on machines whose nodes also do other things.
pub trait Coherent: NodeState + 'static {
    /// The coherence protocol's part of the node.
    fn coh(&self) -> &CohNode;
    /// The same, to change.
    fn coh_mut(&mut self) -> &mut CohNode;
}

impl Coherent for CohNode {
    fn coh(&self) -> &CohNode {
        self
    }

    fn coh_mut(&mut self) -> &mut CohNode {
        self
    }
}

/// A protocol beside one that carries coherence: the first's directory is
/// the machine's.
impl<A: Coherent, B: NodeState + 'static> Coherent for (A, B) {
    fn coh(&self) -> &CohNode {
        self.0.coh()
    }

    fn coh_mut(&mut self) -> &mut CohNode {
        self.0.coh_mut()
    }
}

impl NodeState for CohNode {
    fn pending(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.misses.is_empty() {
            let mut lines: Vec<_> = self
                .misses
                .keys()
                .map(|k| format!("{:#x}", k * 128))
                .collect();
            lines.sort();
            parts.push(format!("outstanding misses on {}", lines.join(", ")));
        }
        if !self.writebacks.is_empty() {
            parts.push(format!(
                "{} writeback(s) not sent on",
                self.writebacks.len()
            ));
        }
        let busy = self.dir.values().filter(|e| e.pending).count();
        if busy > 0 {
            parts.push(format!("{busy} directory entr(ies) still busy"));
        }
        if self.proc.waiting() {
            parts.push("processor still waiting".into());
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        let placement = self.params.placement;
        let nodes = self.nodes;
        let step = self
            .proc
            .step(p, self.params.hints, |a| canonical(placement, nodes, a));
        // A dirty line leaves the cache now; until MAGIC has sent it home,
        // the home's own refusals and this node's forwards see it in flux.
        match self.proc.evicted.take() {
            Some((line, crate::processor::Evicted::Dirty)) => {
                *self.writebacks.entry(key(line)).or_default() += 1;
            }
            Some((_, crate::processor::Evicted::Clean)) => self.stats.hints_sent += 1,
            _ => {}
        }
        step
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        // Another protocol's message is not ours to take.
        let (exclusive, retries) = match p.decode::<CohMsg>(msg).ok()? {
            CohMsg::Nak => {
                // Refused by our own home: ask again (the miss record stays).
                let Some(miss) = self.misses.get_mut(&key(msg.addr)) else {
                    self.stats.protocol_errors += 1;
                    return Some(ProcStep::Idle);
                };
                miss.retries += 1;
                let (req, retries) = (miss.req, miss.retries);
                self.stats.retries += 1;
                self.stats.max_retries = self.stats.max_retries.max(retries);
                let again = p.msg(CohMsg::pi(req)).addr(msg.addr);
                p.request(again, None);
                return Some(ProcStep::Idle);
            }
            CohMsg::Fill { exclusive, retries } => (exclusive, retries),
            _ => return None,
        };
        // The miss ends when the processor has the line; an invalidation
        // that came meanwhile says not to keep a read's copy.
        let invalidated = match self.misses.remove(&key(msg.addr)) {
            Some(m) => m.invalidated,
            None => {
                self.stats.protocol_errors += 1;
                false
            }
        };
        let fill = Fill {
            exclusive,
            retries,
            invalidated,
        };
        let step = self.proc.fill(p, fill, data);
        // Forwards that arrived while the fill was outstanding can go now
        // that the processor has used the line.
        if self.deferred.contains_key(&key(msg.addr)) {
            let resume = p.msg(CohMsg::PiResume).addr(msg.addr);
            p.request(resume, None);
        }
        Some(step)
    }
}

/// A saved run's machine and coherence parameters, checked as the run
/// that made it checks them (the coherence model's ranges, and lines homed
/// by their node bits), naming the field under `config`.
pub(crate) fn saved_params(params: &magic::MagicParams, coh: &CohParams) -> Result<(), String> {
    params
        .validate()
        .map_err(|e| format!("config.params.{e}"))?;
    coh.validate()
        .and_then(|()| by_node_bits(coh))
        .map_err(|e| format!("config.{e}"))
}

/// `Ok` where lines are homed by their address's node bits, else the
/// error naming `coherence.placement`: for the experiments that place a
/// line at its home by address (a miss's cases, the shared line, a
/// transfer's buffers), where interleaving would home it elsewhere and
/// read memory that never held it.
pub fn by_node_bits(coh: &CohParams) -> Result<(), OutOfRange> {
    match coh.placement {
        Placement::NodeBits => Ok(()),
        other => Err(OutOfRange::new(
            "coherence.placement",
            "NodeBits: the experiment homes its lines by their address",
            format!("{other:?}"),
        )),
    }
}

/// The canonical (home) address of a processor address (a machine of no
/// nodes is taken as one of one).
///
/// ```
/// use coherence::protocol::{canonical, Placement};
/// use magic::{NodeId, PAddr, Region};
/// let a = PAddr::new(Region::Normal, NodeId(1), 0x1080);
/// assert_eq!(canonical(Placement::Interleaved, 4, a).node(), NodeId(1));
/// assert_eq!(canonical(Placement::Interleaved, 0, a).node(), NodeId(0));
/// ```
pub fn canonical(placement: Placement, nodes: u32, a: PAddr) -> PAddr {
    match placement {
        Placement::NodeBits => a.with_region(Region::Normal),
        Placement::Interleaved => {
            let home = ((a.offset() / LINE_BYTES as u64) % nodes.max(1) as u64) as u32;
            PAddr::new(Region::Normal, NodeId(home), a.offset())
        }
    }
}

fn costs<S: Coherent>(cx: &mut Cx<'_, S>) -> CoherenceCosts {
    cx.state().coh_mut().params.costs
}

fn params<S: Coherent>(cx: &mut Cx<'_, S>) -> CohParams {
    cx.state().coh_mut().params
}

/// The pointer-store link at position `at` of `line`'s list.
fn link_addr(line: PAddr, at: usize) -> u64 {
    LINK_BASE + ((line.line().0 * 8 + at as u64) % (1 << 16)) * 8
}

/// The MAGIC-memory address of `line`'s directory entry (what a handler
/// loads and stores to read and write it).
pub fn dir_addr(line: PAddr) -> u64 {
    DIR_BASE + (line.line().0 % (1 << 20)) * 8
}

fn miss_addr(line: PAddr) -> u64 {
    MISS_BASE + (line.line().0 % 1024) * 32
}

/// Load and test the directory entry of `line`.
pub fn dir_load<S: Coherent>(cx: &mut Cx<'_, S>, line: PAddr) -> DirEntry {
    let c = costs(cx);
    cx.instr(c.dir_check);
    cx.load(dir_addr(line));
    cx.state().coh_mut().entry(line)
}

/// Walk `n` links of `line`'s list (dynamic pointers), charged.
fn walk<S: Coherent>(cx: &mut Cx<'_, S>, line: PAddr, n: usize) {
    if params(cx).format != DirFormat::DynamicPointer {
        return;
    }
    let c = costs(cx);
    for at in 0..n {
        cx.instr(c.link_walk);
        cx.load(link_addr(line, at));
    }
}

/// Write the new entry back; with dynamic pointers, links the list took are
/// taken from the free list and links it gave up go back to it, charged.
pub fn dir_store<S: Coherent>(cx: &mut Cx<'_, S>, line: PAddr, e: DirEntry) {
    let c = costs(cx);
    cx.instr(c.dir_update);
    cx.store(dir_addr(line));
    if params(cx).format == DirFormat::DynamicPointer {
        let before = links(&cx.state().coh_mut().entry(line));
        let after = links(&e);
        for at in before..after {
            cx.instr(c.link_alloc);
            cx.store(link_addr(line, at as usize));
        }
        for at in after..before {
            cx.instr(c.link_free);
            cx.store(link_addr(line, at as usize));
        }
    }
    cx.state().coh_mut().set_entry(line, e);
}

/// The entry's store is being written outside the handlers' own steps
/// (a coherence mode's plan dropping every copy): the list's links go back.
pub(crate) fn charge_pointers<S: Coherent>(cx: &mut Cx<'_, S>, line: PAddr) {
    let n = links(&cx.state().coh_mut().entry(line));
    if params(cx).format == DirFormat::DynamicPointer {
        let c = costs(cx);
        for at in 0..n {
            cx.instr(c.link_free);
            cx.store(link_addr(line, at as usize));
        }
    }
}

fn send<S: Coherent>(cx: &mut Cx<'_, S>, m: Msg, data: Option<BufId>) {
    let c = costs(cx);
    cx.instr(c.send);
    if cx.send(m, data).is_err() {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
}

/// What a reply grants a requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grant {
    /// A shared copy, with the line.
    Shared,
    /// An exclusive copy, with the line.
    Exclusive,
    /// Exclusivity over a clean copy the requester holds.
    Upgrade,
}

impl Grant {
    fn exclusive(self) -> bool {
        self != Grant::Shared
    }

    fn msg(self, acks: u32) -> CohMsg {
        match self {
            Grant::Shared => CohMsg::Put { acks },
            Grant::Exclusive => CohMsg::PutX { acks },
            Grant::Upgrade => CohMsg::UpgradeAck { acks },
        }
    }
}

/// A message a handler did not expect: counted, otherwise ignored.
fn unexpected<T: Coherent>(cx: &mut Cx<'_, T>) {
    cx.state().coh_mut().stats.protocol_errors += 1;
}

/// PI_Remote_Get, PI_Remote_GetX, PI_Local_*: a miss from this node's
/// processor.
fn pi_miss<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let Some(req) = msg.req() else {
        return unexpected(cx);
    };
    let line = m.addr;
    let me = cx.node();
    cx.instr(c.record);
    cx.store(miss_addr(line));
    cx.state()
        .coh_mut()
        .misses
        .entry(key(line))
        .or_insert(Miss {
            req,
            acks_needed: None,
            acks_got: 0,
            exclusive: false,
            buf: None,
            invalidated: false,
            filling: false,
            retries: 0,
        });
    if line.node() == me {
        serve_request(cx, line, me, req);
    } else {
        let r = cx.msg(CohMsg::request(req)).to(line.node()).addr(line);
        send(cx, r, None);
    }
}

/// NI_Local_Get_*, NI_Local_GetX_*: a request at the home.
fn home_request<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let Some(req) = msg.req() else {
        return unexpected(cx);
    };
    serve_request(cx, m.addr, m.src, req);
}

/// The home's part of a request from `r` (this node or another).
fn serve_request<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr, r: NodeId, req: Req) {
    let me = cx.node();
    let p = params(cx);
    let e = dir_load(cx, line);
    let hp = HomeProc {
        exclusive: e.dirty && e.local && !cx.state().coh_mut().local_busy(key(line)),
    };
    let (mut next, outcome) = directory::on_request(&e, me, r, req, hp, p.acks);
    let (exclusive, data, mut invalidate, invalidate_local) = match outcome {
        Outcome::Nak => return refuse(cx, r, line),
        Outcome::Forward { owner } => {
            if p.inject == Some(Bug::ForgetPending) {
                next.pending = false;
            }
            dir_store(cx, line, next);
            cx.state().coh_mut().stats.forwards += 1;
            let fwd = if req.exclusive() {
                CohMsg::FwdGetX { requester: r }
            } else {
                CohMsg::FwdGet { requester: r }
            };
            let f = cx.msg(fwd).to(owner).addr(line);
            return send(cx, f, None);
        }
        Outcome::Answer {
            exclusive,
            data,
            invalidate,
            invalidate_local,
        } => (exclusive, data, invalidate, invalidate_local),
    };
    // Claim the data buffer before committing the entry: without one, the
    // request is refused like a busy entry.
    let spec = cx.speculative_read();
    let buf = match (data, spec) {
        (Source::None, _) => None,
        (Source::Memory, Some((b, _))) => Some(b),
        (_, _) => match cx.alloc_buffer() {
            Some(b) => {
                if data == Source::Memory {
                    let c = costs(cx);
                    cx.instr(c.issue);
                    let _ = cx.mem_read(line, b);
                }
                Some(b)
            }
            None => None,
        },
    };
    if let Some((b, _)) = spec {
        if buf != Some(b) {
            let _ = cx.free_buffer(b);
        }
    }
    if data != Source::None && buf.is_none() {
        return refuse(cx, r, line);
    }
    // A further sharer needs a link: a full store is made room in first,
    // and when the room is made by reclaiming this very line, the request
    // waits like one at a busy entry.
    if links(&next) > links(&e) && !make_room(cx, line) {
        if let Some(b) = buf {
            let _ = cx.free_buffer(b);
        }
        return refuse(cx, r, line);
    }
    if p.inject == Some(Bug::EarlyRelease) {
        next.pending = false;
    }
    if p.inject == Some(Bug::SkipInvalidation) {
        if let Some(t) = invalidate.pop() {
            next.inv.remove(t);
            next.pending = next.pending && !next.inv.is_empty();
        }
    }
    dir_store(cx, line, next);
    let collector = if p.acks == Acks::Home { me } else { r };
    walk(cx, line, invalidate.len().saturating_sub(1));
    for &t in &invalidate {
        let c = costs(cx);
        cx.instr(c.per_target);
        cx.state().coh_mut().stats.invalidations += 1;
        let inv = cx.msg(CohMsg::Inval { collector }).to(t).addr(line);
        send(cx, inv, None);
    }
    if invalidate_local {
        cx.state().coh_mut().stats.invalidations += 1;
        invalidate_local_copy(cx, line);
    }
    if data == Source::Local {
        let Some(b) = buf else {
            return unexpected(cx);
        };
        let c = costs(cx);
        cx.instr(c.issue);
        let keep = if exclusive {
            LineState::Uncached
        } else {
            LineState::Clean
        };
        match cx.pc_get(line, Some(b), keep) {
            Ok(iv) => {
                // The line comes back whole before the handler goes on.
                cx.wait_until(iv.done);
                if iv.state != LineState::Dirty {
                    cx.state().coh_mut().stats.protocol_errors += 1;
                }
            }
            Err(_) => cx.state().coh_mut().stats.protocol_errors += 1,
        }
        if !exclusive {
            cx.instr(c.issue);
            let _ = cx.mem_write(line, b);
        }
    }
    let grant = match (exclusive, data) {
        (false, _) => Grant::Shared,
        (true, Source::None) => Grant::Upgrade,
        (true, _) => Grant::Exclusive,
    };
    let acks = if p.acks == Acks::Requester {
        invalidate.len() as u32
    } else {
        0
    };
    answer(cx, line, r, grant, acks, buf);
}

/// Make room for one more link in the pointer store (dynamic pointers): a
/// full store reclaims the list held longest, invalidating its copies.
/// False when the list reclaimed is `line`'s own.
fn make_room<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr) -> bool {
    let p = params(cx);
    if p.format != DirFormat::DynamicPointer || cx.state().coh_mut().store.used < p.pointer_store {
        return true;
    }
    let c = costs(cx);
    loop {
        cx.instr(c.reclaim);
        let Some(k) = cx.state().coh_mut().store.lists.pop_front() else {
            // The store is full but no list holds a link: cannot happen.
            unexpected(cx);
            return true;
        };
        let victim = PAddr(k * LINE_BYTES as u64);
        let mut e = dir_load(cx, victim);
        if links(&e) == 0 || e.pending {
            continue;
        }
        cx.state().coh_mut().stats.reclaims += 1;
        let (targets, local) = directory::reclaim(&mut e);
        dir_store(cx, victim, e);
        let me = cx.node();
        walk(cx, victim, targets.len().saturating_sub(1));
        for t in targets {
            cx.instr(c.per_target);
            cx.state().coh_mut().stats.invalidations += 1;
            let inv = cx.msg(CohMsg::Inval { collector: me }).to(t).addr(victim);
            send(cx, inv, None);
        }
        if local {
            invalidate_local_copy(cx, victim);
        }
        return victim != line;
    }
}

/// NI_Local_Get_Nak, NI_Local_GetX_Nak: refuse a request for `line`; the
/// requester tries again.
fn refuse<T: Coherent>(cx: &mut Cx<'_, T>, r: NodeId, line: PAddr) {
    cx.state().coh_mut().stats.naks += 1;
    let me = cx.node();
    let n = cx.msg(CohMsg::Nak).to(r).addr(line);
    if r == me {
        // Our own processor's request: the NAK goes back across the processor
        // interface and the processor asks again.
        let c = costs(cx);
        cx.instr(c.send);
        if cx.to_processor(n, None).is_err() {
            cx.state().coh_mut().stats.protocol_errors += 1;
        }
    } else {
        send(cx, n, None);
    }
}

/// Answer requester `r` (here or remote) with `grant`, telling it how many
/// invalidation acknowledgements to expect.
fn answer<T: Coherent>(
    cx: &mut Cx<'_, T>,
    line: PAddr,
    r: NodeId,
    grant: Grant,
    acks: u32,
    buf: Option<BufId>,
) {
    if r == cx.node() {
        got_reply(cx, line, grant.exclusive(), acks, buf);
    } else {
        let m = cx.msg(grant.msg(acks)).to(r).addr(line);
        send(cx, m, buf);
    }
}

/// Invalidate this node's processor's copy (clean: the directory said shared).
/// A read waiting for the line uses its data once without keeping it.
fn invalidate_local_copy<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr) {
    let c = costs(cx);
    cx.instr(c.issue);
    if let Some(miss) = cx.state().coh_mut().misses.get_mut(&key(line)) {
        if miss.req == Req::Read {
            miss.invalidated = true;
        }
    }
    match cx.pc_get(line, None, LineState::Uncached) {
        Ok(iv) => cx.wait_until(iv.state_at),
        Err(_) => cx.state().coh_mut().stats.protocol_errors += 1,
    }
}

/// NI_Remote_Put, NI_Remote_PutX, NI_Local_Put, NI_Local_PutXAcksDone: PUT,
/// PUTX or UPGRADE_ACK at the requester (the home, for its own processor's
/// request answered by a remote owner).
fn reply<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let (exclusive, acks) = match msg {
        CohMsg::Put { acks } => (false, acks),
        CohMsg::PutX { acks } | CohMsg::UpgradeAck { acks } => (true, acks),
        _ => return unexpected(cx),
    };
    let buf = cx.take_msg_buffer();
    let line = m.addr;
    if line.node() == cx.node() {
        let mut e = dir_load(cx, line);
        if exclusive {
            directory::on_local_putx(&mut e);
        } else {
            directory::on_local_put(&mut e);
            if let Some(b) = buf {
                cx.instr(c.issue);
                let _ = cx.mem_write(line, b);
            }
        }
        dir_store(cx, line, e);
    }
    got_reply(cx, line, exclusive, acks, buf);
}

fn got_reply<T: Coherent>(
    cx: &mut Cx<'_, T>,
    line: PAddr,
    exclusive: bool,
    acks: u32,
    buf: Option<BufId>,
) {
    let c = costs(cx);
    cx.instr(c.record);
    cx.load(miss_addr(line));
    cx.store(miss_addr(line));
    let Some(miss) = cx.state().coh_mut().misses.get_mut(&key(line)) else {
        cx.state().coh_mut().stats.protocol_errors += 1;
        if let Some(b) = buf {
            let _ = cx.free_buffer(b);
        }
        return;
    };
    miss.acks_needed = Some(acks);
    miss.exclusive = exclusive;
    miss.buf = buf;
    try_complete(cx, line);
}

/// NI_InvAck: an invalidation acknowledgement, at the home collecting them
/// or (acknowledgements to the requester) at the writer.
fn inval_ack<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::InvAck) {
    let c = costs(cx);
    cx.instr(c.decode);
    let line = m.addr;
    if line.node() == cx.node() {
        let mut e = dir_load(cx, line);
        if e.collecting() && e.inv.contains(m.src) {
            directory::on_inv_ack(&mut e, m.src);
            return dir_store(cx, line, e);
        }
    }
    cx.instr(c.record);
    cx.load(miss_addr(line));
    cx.store(miss_addr(line));
    match cx.state().coh_mut().misses.get_mut(&key(line)) {
        Some(miss) => miss.acks_got += 1,
        None => return unexpected(cx),
    }
    try_complete(cx, line);
}

/// Hand the processor its line once the reply and every acknowledgement
/// it waits for are in.
fn try_complete<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr) {
    let k = key(line);
    let Some(miss) = cx.state().coh_mut().misses.get_mut(&k) else {
        return;
    };
    if miss.filling || miss.acks_needed != Some(miss.acks_got) {
        return;
    }
    // The record stays until the processor has the line (see
    // `processor_receive`): forwards and invalidations still see the miss.
    miss.filling = true;
    let (exclusive, retries, buf) = (miss.exclusive, miss.retries, miss.buf.take());
    let f = cx.msg(CohMsg::Fill { exclusive, retries }).addr(line);
    let c = costs(cx);
    cx.instr(c.send);
    if cx.to_processor(f, buf).is_err() {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
}

/// NI_Nak: a NAK at the requester: ask again.
fn nak<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::Nak) {
    let c = costs(cx);
    cx.instr(c.decode + c.record);
    let Some(miss) = cx.state().coh_mut().misses.get_mut(&key(m.addr)) else {
        cx.state().coh_mut().stats.protocol_errors += 1;
        return;
    };
    miss.retries += 1;
    let (req, retries) = (miss.req, miss.retries);
    let s = &mut cx.state().coh_mut().stats;
    s.retries += 1;
    s.max_retries = s.max_retries.max(retries);
    let line = m.addr;
    if line.node() == cx.node() {
        // The home's own processor's request, refused by a remote owner:
        // the home asks again for it.
        return serve_request(cx, line, cx.node(), req);
    }
    let r = cx.msg(CohMsg::request(req)).to(line.node()).addr(line);
    send(cx, r, None);
}

/// NI_Remote_Get_*, NI_Remote_GetX_*: a forwarded request at the (presumed)
/// owner.
fn owner_forward<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let (requester, exclusive) = match msg {
        CohMsg::FwdGet { requester } => (requester, false),
        CohMsg::FwdGetX { requester } => (requester, true),
        _ => return unexpected(cx),
    };
    serve_forward(
        cx,
        Deferred {
            msg: *m,
            requester,
            exclusive,
        },
    );
}

/// NI_Remote_Get_Nak, NI_Remote_GetX_Nak: the owner cannot serve a forward:
/// the requester asks again and the home's entry is free.
fn owner_refuse<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr, r: NodeId) {
    cx.state().coh_mut().stats.owner_naks += 1;
    let n = cx.msg(CohMsg::Nak).to(r).addr(line);
    send(cx, n, None);
    let clear = cx.msg(CohMsg::NakClear).to(line.node()).addr(line);
    send(cx, clear, None);
}

/// Serve forward `f` at the owner: the line goes from its processor's cache
/// to the requester (and, for a read by another node, to the home).
fn serve_forward<T: Coherent>(cx: &mut Cx<'_, T>, f: Deferred) {
    let line = f.msg.addr;
    let k = key(line);
    let r = f.requester;
    if let Some(miss) = cx.state().coh_mut().misses.get(&k) {
        // Our own reply has not been used yet. Deferral waits only for a
        // reply that is in (its acknowledgements or the fill still to
        // come): before it, the forward cannot be told from one for a line
        // this node has written back since, which the home no longer
        // counts on.
        let reply_in = miss.acks_needed.is_some();
        if reply_in && params(cx).forwards == Forwards::Defer {
            cx.state().coh_mut().stats.deferred += 1;
            cx.state().coh_mut().deferred.entry(k).or_default().push(f);
            return;
        }
        return owner_refuse(cx, line, r);
    }
    if cx.state().coh_mut().writebacks.contains_key(&k) {
        // The line left the cache; its writeback is on its way.
        return owner_refuse(cx, line, r);
    }
    let Some(b) = cx.alloc_buffer() else {
        if cx.reschedule(f.msg).is_err() {
            cx.state().coh_mut().stats.protocol_errors += 1;
        }
        return;
    };
    let issue = costs(cx).issue;
    cx.instr(issue);
    let keep = if f.exclusive {
        LineState::Uncached
    } else {
        LineState::Clean
    };
    match cx.pc_get(line, Some(b), keep) {
        Ok(iv) if iv.state == LineState::Dirty => cx.wait_until(iv.done),
        _ => {
            let _ = cx.free_buffer(b);
            return owner_refuse(cx, line, r);
        }
    }
    let home = line.node();
    if f.exclusive {
        let d = cx.msg(CohMsg::PutX { acks: 0 }).to(r).addr(line);
        send(cx, d, Some(b));
        if r != home {
            let t = cx
                .msg(CohMsg::ForwardAck { requester: r })
                .to(home)
                .addr(line);
            send(cx, t, None);
        }
        return;
    }
    if r == home {
        // The home is the reader: its reply is the only message.
        let d = cx.msg(CohMsg::Put { acks: 0 }).to(r).addr(line);
        return send(cx, d, Some(b));
    }
    // The reader and the home each get the line.
    let d = cx.msg(CohMsg::Put { acks: 0 }).to(r).addr(line);
    match cx.alloc_buffer() {
        Some(b2) => {
            let bytes = cx.buffer(b).copied().unwrap_or([0; LINE_BYTES]);
            if let Some(x) = cx.buffer_mut(b2) {
                *x = bytes;
            }
            let issue = costs(cx).issue;
            cx.instr(issue);
            send(cx, d, Some(b));
            let w = cx
                .msg(CohMsg::SharingWriteback {
                    requester: r,
                    answer: false,
                })
                .to(home)
                .addr(line);
            send(cx, w, Some(b2));
        }
        None => {
            // No second buffer: the home gets the line first and answers
            // the reader from memory.
            let w = cx
                .msg(CohMsg::SharingWriteback {
                    requester: r,
                    answer: true,
                })
                .to(home)
                .addr(line);
            send(cx, w, Some(b));
        }
    }
}

/// The processor has used a fill: serve forwards that waited for it.
fn pi_resume<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::PiResume) {
    let c = costs(cx);
    cx.instr(c.decode);
    let waiting = cx
        .state()
        .coh_mut()
        .deferred
        .remove(&key(m.addr))
        .unwrap_or_default();
    for f in waiting {
        serve_forward(cx, f);
    }
}

/// NI_Inv: an invalidation at a sharer.
fn invalidate<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: coh_msg::Inval) {
    let c = costs(cx);
    cx.instr(c.decode);
    let coh_msg::Inval { collector } = msg;
    invalidate_local_copy(cx, m.addr);
    let a = cx.msg(CohMsg::InvAck).to(collector).addr(m.addr);
    send(cx, a, None);
}

/// NI_ShWb: the owner kept a clean copy and answered the reader: memory gets
/// the line, the reader joins the sharers.
fn sharing_writeback<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: coh_msg::SharingWriteback) {
    let c = costs(cx);
    cx.instr(c.decode);
    let coh_msg::SharingWriteback { requester, answer } = msg;
    let line = m.addr;
    let mut e = dir_load(cx, line);
    if !e.pending {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
    directory::on_sharing_writeback(&mut e, requester);
    make_room(cx, line);
    dir_store(cx, line, e);
    if let Some(b) = cx.take_msg_buffer() {
        cx.instr(c.issue);
        let _ = cx.mem_write(line, b);
        if answer {
            // The owner had no second buffer: answer the reader from here.
            self::answer(cx, line, requester, Grant::Shared, 0, Some(b));
        } else {
            let _ = cx.free_buffer(b);
        }
    }
}

/// NI_FAck: the owner handed the line to the writer.
fn forward_ack<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: coh_msg::ForwardAck) {
    let c = costs(cx);
    cx.instr(c.decode);
    let coh_msg::ForwardAck { requester } = msg;
    let mut e = dir_load(cx, m.addr);
    if !e.pending {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
    directory::on_forward_ack(&mut e, requester);
    dir_store(cx, m.addr, e);
}

/// NI_Nak_Clear: the owner refused a forward; the entry is free again.
fn nak_clear<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::NakClear) {
    let c = costs(cx);
    cx.instr(c.decode);
    let mut e = dir_load(cx, m.addr);
    directory::on_nak_clear(&mut e);
    dir_store(cx, m.addr, e);
}

/// PI_Remote_PutX, PI_Local_PutX: this node's processor writes a dirty
/// line back.
fn pi_writeback<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::PiWriteback) {
    let c = costs(cx);
    cx.instr(c.decode);
    let line = m.addr;
    let me = cx.node();
    cx.state().coh_mut().writeback_done(key(line));
    let Some(b) = cx.take_msg_buffer() else {
        return unexpected(cx);
    };
    if line.node() == me {
        let mut e = dir_load(cx, line);
        directory::on_local_writeback(&mut e);
        dir_store(cx, line, e);
        cx.instr(c.issue);
        let _ = cx.mem_write(line, b);
        let _ = cx.free_buffer(b);
    } else {
        let w = cx.msg(CohMsg::Writeback).to(line.node()).addr(line);
        send(cx, w, Some(b));
    }
}

/// NI_Wb: a writeback at the home.
fn home_writeback<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::Writeback) {
    let c = costs(cx);
    cx.instr(c.decode);
    let line = m.addr;
    let Some(b) = cx.take_msg_buffer() else {
        return unexpected(cx);
    };
    let mut e = dir_load(cx, line);
    directory::on_writeback(&mut e);
    dir_store(cx, line, e);
    cx.instr(c.issue);
    let _ = cx.mem_write(line, b);
    let _ = cx.free_buffer(b);
}

/// PI_Remote_Replace, PI_Local_Replace: this node's processor dropped a
/// clean copy.
fn pi_replace<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::PiReplace) {
    let c = costs(cx);
    cx.instr(c.decode);
    let line = m.addr;
    if line.node() == cx.node() {
        let mut e = dir_load(cx, line);
        directory::on_local_replace(&mut e);
        dir_store(cx, line, e);
    } else {
        let h = cx.msg(CohMsg::Replace).to(line.node()).addr(line);
        send(cx, h, None);
    }
}

/// NI_Replace: a replacement hint at the home.
fn home_replace<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: coh_msg::Replace) {
    let c = costs(cx);
    cx.instr(c.decode);
    let line = m.addr;
    cx.state().coh_mut().stats.hints += 1;
    let mut e = dir_load(cx, line);
    let format = params(cx).format;
    if let Some(at) = directory::on_replace(&mut e, m.src, format) {
        walk(cx, line, at);
        dir_store(cx, line, e);
    }
}

/// Install the protocol's handlers under the name `coherence`, over the
/// part `T` of the machine's node state that `b` installs on: how a
/// protocol whose nodes are [`Coherent`] carries the coherence protocol.
pub fn install_on<S: 'static, T: Coherent + 'static>(b: &mut Install<'_, S, T>) {
    let mut b = b.part("coherence");
    let spec = Dispatch {
        speculative_read: true,
        ..Dispatch::default()
    };
    let n = Region::Normal;
    // The misses, the requests at the home, the forwards and the replies
    // each have one handler for several kinds (which request, which grant):
    // handlers of every kind, routed to exactly those kinds. The rest take
    // their kind's own type.
    let h = b.handler_of_all("pi_miss", pi_miss::<T>);
    for k in [CohKind::PiGet, CohKind::PiGetX, CohKind::PiUpgrade] {
        b.route_kind_with(k, n, h, spec);
    }
    let h = b.handler("pi_writeback", pi_writeback::<T>);
    b.route(n, h);
    let h = b.handler("pi_replace", pi_replace::<T>);
    b.route(n, h);
    let h = b.handler("pi_resume", pi_resume::<T>);
    b.route(n, h);
    let h = b.handler_of_all("home_request", home_request::<T>);
    for k in [CohKind::Get, CohKind::GetX, CohKind::Upgrade] {
        b.route_kind_with(k, n, h, spec);
    }
    let h = b.handler("home_writeback", home_writeback::<T>);
    b.route(n, h);
    let h = b.handler("home_replace", home_replace::<T>);
    b.route(n, h);
    let h = b.handler_of_all("owner_forward", owner_forward::<T>);
    b.route_kind(CohKind::FwdGet, n, h)
        .route_kind(CohKind::FwdGetX, n, h);
    let h = b.handler("invalidate", invalidate::<T>);
    b.route(n, h);
    let h = b.handler_of_all("reply", reply::<T>);
    b.route_kind(CohKind::Put, n, h)
        .route_kind(CohKind::PutX, n, h)
        .route_kind(CohKind::UpgradeAck, n, h);
    let h = b.handler("inval_ack", inval_ack::<T>);
    b.route(n, h);
    let h = b.handler("nak", nak::<T>);
    b.route(n, h);
    let h = b.handler("nak_clear", nak_clear::<T>);
    b.route(n, h);
    let h = b.handler("sharing_writeback", sharing_writeback::<T>);
    b.route(n, h);
    let h = b.handler("forward_ack", forward_ack::<T>);
    b.route(n, h);
}

/// The coherence protocol as a unit: its messages ([`CohMsg`]), handlers,
/// routes and per-node state ([`CohNode`]), installed on a machine alone or
/// beside other protocols.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coherence {
    /// The protocol's parameters, given to every node.
    pub params: CohParams,
}

impl Coherence {
    /// The protocol with parameters `params`.
    pub fn new(params: CohParams) -> Coherence {
        Coherence { params }
    }
}

impl Protocol for Coherence {
    type Node = CohNode;

    fn name(&self) -> &'static str {
        "coherence"
    }

    fn node(&self, n: NodeId, nodes: u32) -> CohNode {
        CohNode::new(n, nodes, self.params)
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, CohNode>) {
        install_on(b);
    }

    /// A requester holds a reply's buffer while it waits for invalidation
    /// acknowledgements; the inbox may need another for a data reply at the
    /// head of the same queue, so one buffer could deadlock the node.
    fn check(&self, params: &MagicParams, _nodes: u32) -> Result<(), BuildError> {
        self.params.validate().map_err(BuildError::Params)?;
        if params.data_buffers < LEAST_DATA_BUFFERS {
            return Err(BuildError::Params(magic::OutOfRange::new(
                "data_buffers",
                format!("at least {LEAST_DATA_BUFFERS} for the coherence protocol"),
                params.data_buffers,
            )));
        }
        Ok(())
    }
}

/// The fewest data buffers a node running the protocol may have: a
/// requester holds a reply's buffer while it waits for invalidation
/// acknowledgements, and the inbox may need another for a data reply at the
/// head of the same queue, so one buffer could deadlock the node.
pub const LEAST_DATA_BUFFERS: usize = 2;

/// A FLASH machine running the coherence protocol alone.
pub fn machine(
    params: MagicParams,
    coh: CohParams,
    nodes: u32,
) -> Result<Magic<CohNode>, crate::Error> {
    let unit = Coherence::new(coh);
    // The protocol's own refusal comes before any other.
    unit.check(&params, nodes)?;
    Ok(Magic::with(params, nodes, &unit)?)
}

/// Put a line in a starting state: `copies` are the caches holding it (at most
/// one dirty, and then no other), with `cached` bytes; memory at the home
/// holds `memory`. The directory is set to match.
pub fn place<S: Coherent>(
    m: &mut Magic<S>,
    line: PAddr,
    copies: &[(NodeId, LineState)],
    memory: [u8; LINE_BYTES],
    cached: [u8; LINE_BYTES],
) -> Result<(), crate::Error> {
    let nodes = m.nodes();
    let line = PAddr(line.with_region(Region::Normal).0 & !(LINE_BYTES as u64 - 1));
    let home = line.node();
    if home.0 >= nodes {
        return Err(OutOfRange::new(
            "line",
            format!("homed at a node below {nodes} (the machine's nodes)"),
            format!("{line} (homed at node {home})"),
        )
        .into());
    }
    if line.offset() >= m.params().mem_bytes {
        return Err(OutOfRange::new(
            "line",
            format!("within node memory, below {:#x}", m.params().mem_bytes),
            line,
        )
        .into());
    }
    let dirty: Vec<_> = copies.iter().filter(|c| c.1 == LineState::Dirty).collect();
    if dirty.len() > 1 || (dirty.len() == 1 && copies.len() > 1) {
        return Err(crate::Error::Placement(
            "a dirty line can have no other copy",
        ));
    }
    if let Some(&(n, _)) = copies.iter().find(|c| c.0 .0 >= nodes) {
        return Err(OutOfRange::new(
            "copies",
            format!("nodes below {nodes} (the machine's nodes)"),
            n,
        )
        .into());
    }
    let mut remote = Vec::new();
    let mut local = false;
    for &(n, st) in copies {
        m.pcache_mut(n)?.set(line, st, cached);
        if st == LineState::Clean {
            if n == home {
                local = true;
            } else {
                remote.push(n);
            }
        }
    }
    m.memory_mut(home)?.store_line(line.line(), &memory);
    let entry = match dirty.first() {
        Some(&&(n, _)) if n == home => DirEntry::local_owner(),
        Some(&&(n, _)) => DirEntry::remote_owner(n),
        None => DirEntry::shared(local, &remote),
    };
    m.state_mut(home)?.coh_mut().set_entry(line, entry);
    Ok(())
}
