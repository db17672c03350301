//! The base cache-coherence protocol as MAGIC handlers, and [`Coherence`],
//! the protocol unit that installs them.
//!
//! A processor miss enters its node's processor interface; the handler there
//! either acts as the home (a local line) or sends the request to the home.
//! The home reads the directory entry, asks [`crate::directory`]
//! what to do, and does it: answer from memory (speculatively read at
//! dispatch), intervene in its own processor's cache, send invalidations
//! (acknowledged to the requester), forward to a remote owner (three hops), or
//! NAK a busy entry. Requests and replies travel on separate lanes; the
//! messages are [`CohMsg`]'s.
//!
//! Every step a handler takes is charged through the context with the
//! instruction counts of [`CoherenceCosts`]; directory entries and outstanding-miss
//! records live in MAGIC memory and are reached through its data cache.
//!
//! The protocol runs alone ([`machine`], or [`Coherence`] beside other
//! protocols), or carried by a protocol over its own node state: a state
//! that is [`Coherent`] gets the handlers with [`install_on`].

use crate::directory::{self, Decision, DirEntry, DirFormat, DirState, Pending, Req, WbDecision};
use crate::msg::{CohKind, CohMsg};
use crate::processor::{Fill, Proc};
use hashbrown::HashMap;
use magic::costs::Source;
use magic::{
    BufId, BuildError, Cx, Dispatch, Install, LineState, Magic, MagicParams, Msg, NodeId,
    NodeState, PAddr, ProcStep, Processor, Protocol, Region, LINE_BYTES,
};
use serde::Serialize;
use smallvec::SmallVec;

/// Where a line's home is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Placement {
    /// The node bits of the physical address (page placement by the OS).
    #[default]
    NodeBits,
    /// Consecutive lines on consecutive nodes.
    Interleaved,
}

magic::cost_sheet! {
    /// Instructions each protocol step issues on the PP (dual issue: a cycle
    /// per two), with the data-cache loads and stores the handlers charge
    /// beside them. One set for every handler. The paper gives no handler
    /// counts for the base protocol: these are the model's, and the remote
    /// read-miss latencies (111 and 191 cycles published; 107 and 187 with
    /// these, 95 and 161 with none) check their size.
    pub struct CoherenceCosts {
        /// Read the header, branch on the case.
        decode: u32 = 4, Source::Choice(
            "a jump-table handler knows its case; the header's fields are two bit-field extracts.");
        /// Extract and test the directory entry's state (plus its load).
        dir_check: u32 = 4, Source::Choice(
            "extract the state and sharer fields, compare, branch.");
        /// Compose and write back the new entry (plus its store).
        dir_update: u32 = 3, Source::Choice(
            "insert two fields, store; the paper's transfer handler updates an entry in 2 (Table 2).");
        /// Form a header and hand it to the outbox or the processor interface.
        send: u32 = 4, Source::Choice(
            "type, destination, address and count into the header registers.");
        /// Per invalidation sent (plus a pointer load in the pointer-list format).
        per_target: u32 = 3, Source::Choice(
            "next sharer (a find-first-set), form and send an invalidation.");
        /// Issue an intervention, memory read or memory write.
        issue: u32 = 2, Source::Choice(
            "one command to the unit, one for its buffer.");
        /// Update the outstanding-miss record (plus its load and store).
        record: u32 = 3, Source::Choice(
            "load, modify a count or state, store.");
    }
}

/// A known bug that can be planted in the protocol's handlers, so that a
/// checker can be shown to find it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bug {
    /// The home forgets to mark an entry pending when it forwards a request
    /// to the owner, so a second request is forwarded too.
    ForgetPending,
    /// The home sends no invalidation to the last sharer of a line it
    /// grants exclusive (and does not count its acknowledgement).
    SkipInvalidation,
    /// The requester hands its processor an exclusive line before every
    /// invalidation has been acknowledged.
    EarlyFill,
}

impl Bug {
    /// Every bug, in the order `--inject list` prints them.
    pub const ALL: [Bug; 3] = [Bug::ForgetPending, Bug::SkipInvalidation, Bug::EarlyFill];

    /// The bug's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Bug::ForgetPending => "forget-pending",
            Bug::SkipInvalidation => "skip-invalidation",
            Bug::EarlyFill => "early-fill",
        }
    }
}

/// Parameters of the protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CohParams {
    /// Where lines are homed (by the address's node bits by default).
    pub placement: Placement,
    /// How directory entries hold their sharers (a bit vector by default).
    pub format: DirFormat,
    /// What each handler step costs, in PP instructions ([`CoherenceCosts`]
    /// gives the defaults).
    pub costs: CoherenceCosts,
    /// A known bug planted in the handlers, for testing a checker (none by
    /// default; see [`Bug`]).
    pub inject: Option<crate::check::Bug>,
}

/// MAGIC-memory addresses of the protocol's data (for data-cache costs).
const DIR_BASE: u64 = 0x1000_0000;
const PTR_POOL: u64 = 0x2000_0000;
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
    /// The fill is crossing to the processor: forwards still wait for it.
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
    /// Forwards dropped because the writeback crossing them answered instead.
    pub forwards_dropped: u64,
    /// Forwards that waited for this node's own fill.
    pub deferred: u64,
    /// Messages that found the protocol in a state it does not expect.
    pub protocol_errors: u64,
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
    misses: HashMap<u64, Miss>,
    /// Dirty evictions of each line whose writeback the home has not yet
    /// acknowledged (a line can be evicted again before the first is).
    writebacks: HashMap<u64, u32>,
    deferred: HashMap<u64, SmallVec<[Deferred; 2]>>,
    /// The compute processor's program.
    pub proc: Proc,
    /// What the protocol counted.
    pub stats: CohStats,
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

impl CohNode {
    /// Node `id` of `nodes`, with an empty directory and an idle processor.
    pub fn new(id: NodeId, nodes: u32, params: CohParams) -> CohNode {
        CohNode {
            id,
            nodes,
            params,
            dir: HashMap::new(),
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

    /// The protocol's state at this node, canonically, into `out` (for the
    /// exhaustive checker): directory entries, outstanding misses,
    /// unacknowledged writebacks, deferred forwards and the processor's
    /// program, each in line order with sharers as a set; no times, no
    /// counters of work done, no NAK retry counts (a retry loop returns to
    /// the state it left).
    pub fn encode(&self, out: &mut Vec<u8>) {
        fn sorted<V>(m: &HashMap<u64, V>) -> Vec<(&u64, &V)> {
            let mut v: Vec<_> = m.iter().collect();
            v.sort_unstable_by_key(|x| *x.0);
            v
        }
        let node = |out: &mut Vec<u8>, n: NodeId| out.extend_from_slice(&n.0.to_le_bytes());
        out.extend_from_slice(&(self.dir.len() as u32).to_le_bytes());
        for (k, e) in sorted(&self.dir) {
            out.extend_from_slice(&k.to_le_bytes());
            match &e.state {
                DirState::Uncached => out.push(0),
                DirState::Shared(s) => {
                    out.push(1);
                    let mut v: Vec<NodeId> = s.iter().collect();
                    v.sort_unstable();
                    out.push(v.len() as u8);
                    v.into_iter().for_each(|n| node(out, n));
                }
                DirState::Exclusive(o) => {
                    out.push(2);
                    node(out, *o);
                }
            }
            match e.pending {
                None => out.push(0),
                Some(Pending::Read { requester }) => {
                    out.push(1);
                    node(out, requester);
                }
                Some(Pending::Write { requester }) => {
                    out.push(2);
                    node(out, requester);
                }
                Some(Pending::Transfer) => out.push(3),
            }
        }
        out.extend_from_slice(&(self.misses.len() as u32).to_le_bytes());
        for (k, m) in sorted(&self.misses) {
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
        }
        out.extend_from_slice(&(self.writebacks.len() as u32).to_le_bytes());
        for (k, n) in sorted(&self.writebacks) {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&(self.deferred.len() as u32).to_le_bytes());
        for (k, ds) in sorted(&self.deferred) {
            out.extend_from_slice(&k.to_le_bytes());
            out.push(ds.len() as u8);
            for d in ds {
                out.extend_from_slice(&d.msg.mtype.0.to_le_bytes());
                node(out, d.requester);
                out.push(d.exclusive as u8);
            }
        }
        self.proc.encode(out);
        out.extend_from_slice(&self.stats.protocol_errors.to_le_bytes());
    }

    /// Set a directory entry (for experiments preparing a starting point).
    pub fn set_entry(&mut self, line: PAddr, e: DirEntry) {
        if e == DirEntry::default() {
            self.dir.remove(&key(line));
        } else {
            self.dir.insert(key(line), e);
        }
    }

    /// This node's processor has a miss outstanding or a writeback unfinished
    /// for the line: its cache cannot be trusted to hold it as the directory
    /// says until that is over.
    pub(crate) fn local_busy(&self, k: u64) -> bool {
        self.misses.contains_key(&k) || self.writebacks.contains_key(&k)
    }

    /// This node's processor is filling or writing back `line`: its cache is
    /// in flux, and anything that would intervene must wait.
    pub fn in_flux(&self, line: PAddr) -> bool {
        self.local_busy(key(line))
    }

    /// One writeback of the line is over; false if none was under way.
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
    /// a writeback, a clean one is dropped silently. True if it was dirty.
    pub fn flush_line(&mut self, p: &mut Processor<'_>, line: PAddr) -> bool {
        let a = canonical(self.params.placement, self.nodes, line);
        let written = crate::processor::evict(p, a);
        if written {
            *self.writebacks.entry(key(a)).or_default() += 1;
        }
        written
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
                "{} unacknowledged writeback(s)",
                self.writebacks.len()
            ));
        }
        let busy = self.dir.values().filter(|e| e.pending.is_some()).count();
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
        let step = self.proc.step(p, |a| canonical(placement, nodes, a));
        // A dirty line leaves the cache now; until MAGIC has sent it home,
        // forwards for it are answered by the home from the writeback.
        if let Some(line) = self.proc.evicted.take() {
            *self.writebacks.entry(key(line)).or_default() += 1;
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

/// The canonical (home) address of a processor address.
pub fn canonical(placement: Placement, nodes: u32, a: PAddr) -> PAddr {
    match placement {
        Placement::NodeBits => a.with_region(Region::Normal),
        Placement::Interleaved => {
            let home = ((a.offset() / LINE_BYTES as u64) % nodes as u64) as u32;
            PAddr::new(Region::Normal, NodeId(home), a.offset())
        }
    }
}

fn costs<S: Coherent>(cx: &mut Cx<'_, S>) -> CoherenceCosts {
    cx.state().coh_mut().params.costs
}

/// The pointer-pool element holding sharer `n` of `line` (pointer-list format).
fn ptr_addr(line: PAddr, n: NodeId) -> u64 {
    PTR_POOL + ((line.line().0 * 8 + n.0 as u64) % (1 << 16)) * 8
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

/// The pointer-list format's extra store when an entry's sharers change.
pub(crate) fn charge_pointers<S: Coherent>(cx: &mut Cx<'_, S>, line: PAddr) {
    if cx.state().coh_mut().params.format == DirFormat::PointerList {
        cx.store(ptr_addr(line, NodeId(0)));
    }
}

/// Write the new entry back.
pub fn dir_store<S: Coherent>(cx: &mut Cx<'_, S>, line: PAddr, e: DirEntry) {
    let c = costs(cx);
    cx.instr(c.dir_update);
    cx.store(dir_addr(line));
    if cx.state().coh_mut().params.format == DirFormat::PointerList {
        // Adding or freeing pointers touches the pool.
        cx.store(ptr_addr(line, NodeId(0)));
    }
    cx.state().coh_mut().set_entry(line, e);
}

fn send<S: Coherent>(cx: &mut Cx<'_, S>, m: Msg, data: Option<BufId>) {
    let c = costs(cx);
    cx.instr(c.send);
    if cx.send(m, data).is_err() {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
}

/// What the home grants a requester.
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

/// A miss from this node's processor.
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

/// A request at the home.
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
    let e = dir_load(cx, line);
    let (mut next, decision) = directory::on_request(&e, me, r, req);
    if cx.state().coh().params.inject == Some(Bug::ForgetPending) {
        next.pending = None;
    }
    // Claim the data buffer before committing the entry: without one, the
    // request is refused like a busy entry.
    let needs_buf = matches!(
        decision,
        Decision::Memory { data: true, .. } | Decision::LocalOwner { .. }
    );
    let spec = cx.speculative_read();
    let buf = match (needs_buf, spec) {
        (false, _) => None,
        (true, Some((b, _))) => Some(b),
        (true, None) => match cx.alloc_buffer() {
            Some(b) => {
                if !matches!(decision, Decision::LocalOwner { .. }) {
                    let c = costs(cx);
                    cx.instr(c.issue);
                    let _ = cx.mem_read(line, b);
                }
                Some(b)
            }
            None => None,
        },
    };
    if let (Some((b, _)), false) = (spec, needs_buf) {
        let _ = cx.free_buffer(b);
    }
    // Our own processor owns the line but does not hold it yet (its fill is
    // crossing the processor interface) or no longer (its writeback is still
    // in the processor-interface queue): refuse until that is over.
    let k = key(line);
    let evicting =
        matches!(decision, Decision::LocalOwner { .. }) && cx.state().coh_mut().local_busy(k);
    if decision == Decision::Nak || (needs_buf && buf.is_none()) || evicting {
        if let Some(b) = buf {
            let _ = cx.free_buffer(b);
        }
        refuse(cx, r, line);
        return;
    }
    match decision {
        // Refused above.
        Decision::Nak => {}
        Decision::Memory {
            exclusive,
            data,
            invalidate,
        } => {
            dir_store(cx, line, next);
            let mut remote = 0u32;
            let mut invalidate = invalidate;
            if cx.state().coh().params.inject == Some(Bug::SkipInvalidation) {
                invalidate.pop();
            }
            for t in invalidate {
                let c = costs(cx);
                cx.instr(c.per_target);
                if cx.state().coh_mut().params.format == DirFormat::PointerList {
                    cx.load(ptr_addr(line, t));
                }
                cx.state().coh_mut().stats.invalidations += 1;
                if t == me {
                    invalidate_local(cx, line);
                } else {
                    remote += 1;
                    let inv = cx.msg(CohMsg::Inval { requester: r }).to(t).addr(line);
                    send(cx, inv, None);
                }
            }
            let grant = match (exclusive, data) {
                (false, _) => Grant::Shared,
                (true, true) => Grant::Exclusive,
                (true, false) => Grant::Upgrade,
            };
            answer(cx, line, r, grant, remote, buf);
        }
        Decision::LocalOwner { exclusive } => {
            // Claimed above: a refusal without one returned.
            let Some(b) = buf else {
                return unexpected(cx);
            };
            dir_store(cx, line, next);
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
            let grant = if exclusive {
                Grant::Exclusive
            } else {
                Grant::Shared
            };
            answer(cx, line, r, grant, 0, Some(b));
        }
        Decision::Forward { owner, exclusive } => {
            dir_store(cx, line, next);
            cx.state().coh_mut().stats.forwards += 1;
            let fwd = if exclusive {
                CohMsg::FwdGetX { requester: r }
            } else {
                CohMsg::FwdGet { requester: r }
            };
            let f = cx.msg(fwd).to(owner).addr(line);
            send(cx, f, None);
        }
    }
}

/// Refuse a request for `line`: the requester tries again.
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
fn invalidate_local<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr) {
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

/// PUT, PUTX or UPGRADE_ACK at the requester.
fn reply<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let (exclusive, acks) = match msg {
        CohMsg::Put { acks } => (false, acks),
        CohMsg::PutX { acks } | CohMsg::UpgradeAck { acks } => (true, acks),
        _ => return unexpected(cx),
    };
    let buf = cx.take_msg_buffer();
    got_reply(cx, m.addr, exclusive, acks, buf);
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

/// An invalidation acknowledgement at the requester.
fn inval_ack<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode + c.record);
    cx.load(miss_addr(m.addr));
    cx.store(miss_addr(m.addr));
    match cx.state().coh_mut().misses.get_mut(&key(m.addr)) {
        Some(miss) => miss.acks_got += 1,
        None => {
            cx.state().coh_mut().stats.protocol_errors += 1;
            return;
        }
    }
    try_complete(cx, m.addr);
}

/// Hand the processor its line once the reply and every acknowledgement are in.
fn try_complete<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr) {
    let k = key(line);
    let early = cx.state().coh().params.inject == Some(Bug::EarlyFill);
    let Some(miss) = cx.state().coh_mut().misses.get_mut(&k) else {
        return;
    };
    if miss.filling
        || miss
            .acks_needed
            .is_none_or(|n| n != miss.acks_got && !early)
    {
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

/// A NAK at the requester: ask again.
fn nak<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
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
    let r = cx.msg(CohMsg::request(req)).to(m.addr.node()).addr(m.addr);
    send(cx, r, None);
}

/// A forwarded request at the (presumed) owner.
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

/// Serve forward `f` at the owner: the line goes from its processor's cache
/// to the requester (and, for a read, to the home).
fn serve_forward<T: Coherent>(cx: &mut Cx<'_, T>, f: Deferred) {
    let line = f.msg.addr;
    let k = key(line);
    let r = f.requester;
    if cx.state().coh_mut().writebacks.contains_key(&k) {
        // Our writeback crossed it; the home answers from the written-back line.
        cx.state().coh_mut().stats.forwards_dropped += 1;
        return;
    }
    if cx.state().coh_mut().misses.contains_key(&k) {
        // Our own fill is still on its way: serve it once the processor has it.
        cx.state().coh_mut().stats.deferred += 1;
        cx.state().coh_mut().deferred.entry(k).or_default().push(f);
        return;
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
            cx.state().coh_mut().stats.protocol_errors += 1;
            let _ = cx.free_buffer(b);
            return;
        }
    }
    let home = line.node();
    if f.exclusive {
        let d = cx.msg(CohMsg::PutX { acks: 0 }).to(r).addr(line);
        send(cx, d, Some(b));
        let t = cx.msg(CohMsg::Transfer).to(home).addr(line);
        send(cx, t, None);
    } else {
        // The reader and the home each get the line.
        let copy = cx.alloc_buffer();
        let d = cx.msg(CohMsg::Put { acks: 0 }).to(r).addr(line);
        match copy {
            Some(b2) => {
                let bytes = cx.buffer(b).copied().unwrap_or([0; LINE_BYTES]);
                if let Some(x) = cx.buffer_mut(b2) {
                    *x = bytes;
                }
                let issue = costs(cx).issue;
                cx.instr(issue);
                send(cx, d, Some(b));
                let w = cx
                    .msg(CohMsg::SharingWriteback { answer: false })
                    .to(home)
                    .addr(line);
                send(cx, w, Some(b2));
            }
            None => {
                // No second buffer: the home gets the line first and answers
                // the reader from memory.
                let w = cx
                    .msg(CohMsg::SharingWriteback { answer: true })
                    .to(home)
                    .addr(line);
                send(cx, w, Some(b));
            }
        }
    }
}

/// The processor has used a fill: serve forwards that waited for it.
fn pi_resume<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
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

/// An invalidation at a sharer.
fn invalidate<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let CohMsg::Inval { requester } = msg else {
        return unexpected(cx);
    };
    invalidate_local(cx, m.addr);
    let a = cx.msg(CohMsg::InvAck).to(requester).addr(m.addr);
    send(cx, a, None);
}

/// The owner kept a clean copy: memory gets the line, the entry is shared.
fn sharing_writeback<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, msg: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let answer_reader = matches!(msg, CohMsg::SharingWriteback { answer: true });
    let line = m.addr;
    let e = dir_load(cx, line);
    let next = directory::on_sharing_writeback(&e, m.src);
    let requester = match e.pending {
        Some(directory::Pending::Read { requester }) => Some(requester),
        _ => None,
    };
    if next == e {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
    dir_store(cx, line, next);
    if let Some(b) = cx.take_msg_buffer() {
        cx.instr(c.issue);
        let _ = cx.mem_write(line, b);
        match (answer_reader, requester) {
            // The owner had no second buffer: answer the reader from here.
            (true, Some(r)) => answer(cx, line, r, Grant::Shared, 0, Some(b)),
            _ => {
                let _ = cx.free_buffer(b);
            }
        }
    }
}

/// The owner handed the line to the writer.
fn transfer<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let e = dir_load(cx, m.addr);
    let next = directory::on_ownership_transfer(&e);
    if next == e {
        cx.state().coh_mut().stats.protocol_errors += 1;
    }
    dir_store(cx, m.addr, next);
}

/// This node's processor writes a dirty line back.
fn pi_writeback<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    let line = m.addr;
    let me = cx.node();
    if line.node() == me {
        cx.state().coh_mut().writeback_done(key(line));
        write_back(cx, line, me);
    } else {
        let b = cx.take_msg_buffer();
        let w = cx.msg(CohMsg::Writeback).to(line.node()).addr(line);
        send(cx, w, b);
    }
}

/// A writeback at the home.
fn home_writeback<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    write_back(cx, m.addr, m.src);
    let a = cx.msg(CohMsg::WritebackAck).to(m.src).addr(m.addr);
    send(cx, a, None);
}

/// The home takes `from`'s writeback of `line` (in the message's buffer).
fn write_back<T: Coherent>(cx: &mut Cx<'_, T>, line: PAddr, from: NodeId) {
    let e = dir_load(cx, line);
    let (next, d) = directory::on_writeback(&e, from);
    let Some(b) = cx.take_msg_buffer() else {
        cx.state().coh_mut().stats.protocol_errors += 1;
        return;
    };
    if d == WbDecision::Stale {
        cx.state().coh_mut().stats.protocol_errors += 1;
        let _ = cx.free_buffer(b);
        return;
    }
    dir_store(cx, line, next);
    let c = costs(cx);
    cx.instr(c.issue);
    let _ = cx.mem_write(line, b);
    match d {
        WbDecision::Answer {
            requester,
            exclusive,
        } => {
            let grant = if exclusive {
                Grant::Exclusive
            } else {
                Grant::Shared
            };
            answer(cx, line, requester, grant, 0, Some(b));
        }
        _ => {
            let _ = cx.free_buffer(b);
        }
    }
}

/// The home has this node's writeback.
fn writeback_ack<T: Coherent>(cx: &mut Cx<'_, T>, m: &Msg, _: CohMsg) {
    let c = costs(cx);
    cx.instr(c.decode);
    if !cx.state().coh_mut().writeback_done(key(m.addr)) {
        cx.state().coh_mut().stats.protocol_errors += 1;
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
    let h = b.handler("pi_miss", pi_miss::<T>);
    for k in [CohKind::PiGet, CohKind::PiGetX, CohKind::PiUpgrade] {
        b.route_with(k, n, h, spec);
    }
    let h = b.handler("pi_writeback", pi_writeback::<T>);
    b.route(CohKind::PiWriteback, n, h);
    let h = b.handler("pi_resume", pi_resume::<T>);
    b.route(CohKind::PiResume, n, h);
    let h = b.handler("home_request", home_request::<T>);
    for k in [CohKind::Get, CohKind::GetX, CohKind::Upgrade] {
        b.route_with(k, n, h, spec);
    }
    let h = b.handler("home_writeback", home_writeback::<T>);
    b.route(CohKind::Writeback, n, h);
    let h = b.handler("owner_forward", owner_forward::<T>);
    b.route(CohKind::FwdGet, n, h).route(CohKind::FwdGetX, n, h);
    let h = b.handler("invalidate", invalidate::<T>);
    b.route(CohKind::Inval, n, h);
    let h = b.handler("writeback_ack", writeback_ack::<T>);
    b.route(CohKind::WritebackAck, n, h);
    let h = b.handler("reply", reply::<T>);
    b.route(CohKind::Put, n, h)
        .route(CohKind::PutX, n, h)
        .route(CohKind::UpgradeAck, n, h);
    let h = b.handler("inval_ack", inval_ack::<T>);
    b.route(CohKind::InvAck, n, h);
    let h = b.handler("nak", nak::<T>);
    b.route(CohKind::Nak, n, h);
    let h = b.handler("sharing_writeback", sharing_writeback::<T>);
    b.route(CohKind::SharingWriteback, n, h);
    let h = b.handler("transfer", transfer::<T>);
    b.route(CohKind::Transfer, n, h);
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
        if params.data_buffers < 2 {
            return Err(BuildError::Protocol(format!(
                "the coherence protocol needs at least 2 data buffers per node (got {})",
                params.data_buffers
            )));
        }
        Ok(())
    }
}

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
    use magic::OutOfRange;
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
    let mut sharers = directory::Sharers::default();
    for &(n, st) in copies {
        m.pcache_mut(n).set(line, st, cached);
        if st == LineState::Clean {
            sharers.add(n);
        }
    }
    m.memory_mut(home).store_line(line.line(), &memory);
    let state = match (dirty.first(), sharers.is_empty()) {
        (Some(&&(n, _)), _) => directory::DirState::Exclusive(n),
        (None, false) => directory::DirState::Shared(sharers),
        (None, true) => directory::DirState::Uncached,
    };
    m.state_mut(home).coh_mut().set_entry(
        line,
        DirEntry {
            state,
            pending: None,
        },
    );
    Ok(())
}
