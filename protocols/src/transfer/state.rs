//! A node's state for the transfer: the handler choices a study varies
//! ([`XferParams`]), the open command sequence and the accepted commands,
//! the outgoing stream (sends, the partner's receive space), the receives
//! posted here, the in-use page table, the coherence protocol's state, the
//! OS and the compute processor, and the counters.

use super::costs::TransferCosts;
use super::cpu::ConnCpu;
use super::msg::{XferMsg, XferOp};
use crate::command::CommandCosts;
use crate::user::pages::{PageTable, UseRef};
use coherence::modes::Mode;
use coherence::protocol::{CohNode, Coherent};
use magic::costs::Breakdown;
use magic::{
    BufId, Cycles, Msg, NodeId, NodeState, PAddr, ProcStep, Processor, Region, LINE_BYTES,
};
use os_shim::{Os, Pid, PAGE_BYTES};
use serde::Serialize;
use std::collections::VecDeque;

/// Which sender handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Version {
    /// One line per invocation, stalling for the processor cache.
    Base,
    /// One line per invocation, working while the processor cache answers.
    Optimized,
    /// `k` lines per invocation, with the state in registers.
    Chunked(u32),
}

impl Version {
    /// Components sent by one invocation.
    pub fn lines_per_invocation(self) -> u32 {
        match self {
            Version::Chunked(k) => k.max(1),
            _ => 1,
        }
    }

    /// B, O or Ck, as the paper names them.
    pub fn short(self) -> String {
        match self {
            Version::Base => "B".into(),
            Version::Optimized => "O".into(),
            Version::Chunked(k) => format!("C{k}"),
        }
    }
}

/// How the sender keeps message data coherent when lines are dirty in a
/// third node's cache (`global` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Strategy {
    /// Fetch each dirty line a window ahead of the transfer.
    Pipelined,
    /// Fetch every dirty line first (requests pipelined), then transfer.
    Collect,
}

/// A known bug that can be planted in the transfer's handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bug {
    /// The receiver completes a receive when its last line's worth of
    /// bytes is still to come.
    EarlyDone,
    /// The sender fills a receive announced while an earlier one is still
    /// unused first, out of the stream's order.
    LatestSpace,
}

impl Bug {
    /// Every bug, in the order `--inject list` prints them.
    pub const ALL: [Bug; 2] = [Bug::EarlyDone, Bug::LatestSpace];

    /// Whether the bug changes a transfer split over `receives` receives:
    /// filling a later receive first needs two.
    pub fn acts_with(self, receives: u32) -> bool {
        self != Bug::LatestSpace || receives >= 2
    }

    /// The bug's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Bug::EarlyDone => "early-done",
            Bug::LatestSpace => "latest-space",
        }
    }
}

/// The handler choices of one node (not calibration: what a study varies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct XferParams {
    /// The sender's handler.
    pub handler: Version,
    /// How message data is kept coherent.
    pub mode: Mode,
    /// How global coherence fetches a third node's dirty lines.
    pub strategy: Strategy,
    /// Lines fetched ahead of the transfer under `Pipelined`.
    pub window: u32,
    /// What the transfer's handlers charge.
    pub costs: TransferCosts,
    /// What the command interface's handlers charge.
    pub command: CommandCosts,
    /// A known bug planted in the handlers, for testing a checker (none by
    /// default; see [`Bug`]).
    pub inject: Option<Bug>,
}

impl Default for XferParams {
    fn default() -> Self {
        XferParams {
            handler: Version::Chunked(4),
            mode: Mode::Local,
            strategy: Strategy::Pipelined,
            window: 8,
            costs: TransferCosts::default(),
            command: CommandCosts::default(),
            inject: None,
        }
    }
}

/// A buffer named by a command: the user's virtual range and the authentic
/// physical page of each virtual page it spans, each linked into the in-use
/// page table while the operation runs.
#[derive(Clone, Debug)]
pub struct Span {
    /// The buffer's virtual address.
    pub va: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The physical frame of each page it spans.
    pub frames: Vec<PAddr>,
    /// Each page's use, linked into the in-use page table.
    pub uses: Vec<UseRef>,
}

impl Span {
    /// The physical address of byte `off` of the buffer (`off` may run up to
    /// a line before the start or after the end: the line is the same page's;
    /// further out, the first or last page's). A span of no page (which
    /// no buffer has) puts every byte in frame 0.
    pub fn paddr(&self, off: i64) -> PAddr {
        let v = self.byte(off);
        let first = self.va / PAGE_BYTES;
        let last = first.saturating_add((self.frames.len() as u64).saturating_sub(1));
        let k = (v / PAGE_BYTES).clamp(first, last) - first;
        let frame = self.frames.get(k as usize).map_or(0, |f| f.0);
        PAddr(frame.saturating_add(v % PAGE_BYTES))
    }

    /// The virtual address of byte `off` (within the address space).
    fn byte(&self, off: i64) -> u64 {
        (self.va as i128 + off as i128).clamp(0, u64::MAX as i128) as u64
    }

    /// The invalidation technique's check before a use: one branch.
    pub fn valid(&self, pages: &PageTable, off: i64) -> bool {
        let v = self.byte(off.max(0));
        let k = v / PAGE_BYTES - self.va / PAGE_BYTES;
        usize::try_from(k)
            .ok()
            .and_then(|k| self.uses.get(k))
            .is_none_or(|u| pages.valid(u))
    }

    /// The pages a buffer of `len` bytes at `va` spans.
    pub fn pages(va: u64, len: u64) -> u64 {
        crate::os_side::pages_spanned(va, len)
    }
}

/// An accepted send, in stream order.
#[derive(Clone, Debug)]
pub struct SendOp {
    /// The process that sent it.
    pub pid: Pid,
    /// The buffer.
    pub span: Span,
    /// Bytes handed to the network.
    pub sent: u64,
}

/// The partner's posted receive, as its notice described it.
#[derive(Clone, Copy, Debug)]
pub struct Space {
    /// The receive's number at the partner.
    pub id: u32,
    /// Its length in bytes.
    pub len: u64,
    /// The receive buffer's offset within its first line.
    pub align: u64,
    /// Bytes already sent into it.
    pub used: u64,
}

/// A receive posted here.
#[derive(Clone, Debug)]
pub struct RecvOp {
    /// The receive's number here.
    pub id: u32,
    /// The process that posted it.
    pub pid: Pid,
    /// The buffer.
    pub span: Span,
    /// Bytes in so far.
    pub got: u64,
    /// When the last write into memory is done.
    pub written: Cycles,
    /// Lines sent on to their home (a third node) and not yet acknowledged.
    pub deposits: u32,
    /// What waits cost the end of the receive so far: its last
    /// component's write (the cleanup's part is added when it runs).
    pub held: HeldBack,
}

/// The buffer carried from one component to the next: the head of the next
/// component (wrap-around) or the last source line read (PP realignment).
#[derive(Clone, Copy, Debug)]
pub struct Carry {
    /// Stream position (bytes sent before it in the current send) of the
    /// component the buffer is for, or of the source line it holds.
    pub at: i64,
    /// The data buffer.
    pub buf: BufId,
    /// It holds the next component's head (wrap-around), not a source line.
    pub wrap: bool,
}

/// The outgoing half of the stream at one node.
#[derive(Clone, Debug, Default)]
pub struct Outgoing {
    /// Accepted sends, in stream order.
    pub sends: VecDeque<SendOp>,
    /// The partner's posted receives, in order.
    pub space: VecDeque<Space>,
    /// The transfer handler is scheduled.
    pub running: bool,
    /// The buffer carried to the next component within an invocation.
    pub carry: Option<Carry>,
    /// Global coherence: lines whose fetch is out (line addresses).
    pub fetching: Vec<PAddr>,
    /// The handler waits for a fetch or a translation before it can go on.
    pub blocked: bool,
    /// Send lines homed at a third node asked of their home, not yet in.
    pub pulling: Vec<PAddr>,
    /// Send lines in from their home, each in its data buffer.
    pub pulled: Vec<(PAddr, BufId)>,
    /// The pulled line the blocked handler waits for.
    pub awaiting: Option<PAddr>,
}

/// A request at a line's home from a transferring node (the buffers are
/// homed at a third node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HomeReq {
    /// Send the line to `to`.
    Pull {
        /// The sender asking.
        to: NodeId,
    },
    /// Write bytes `at..at + len` of `bytes` into the line; tell `from`
    /// (receive `id`).
    Deposit {
        /// The receiver depositing.
        from: NodeId,
        /// The receive's number there.
        id: u32,
        /// The line's bytes as deposited (those outside the range unused),
        /// copied here when the request first waits: a waiting request is
        /// kept in the home's record in MAGIC's memory, not in a data
        /// buffer, since a home holding buffers while it waits for answers
        /// that need buffers could deadlock. Until then they are in the
        /// arriving message's buffer.
        bytes: [u8; LINE_BYTES],
        /// Where the bytes start within the line.
        at: u8,
        /// How many bytes (1 to a line).
        len: u8,
    },
}

/// A line whose home waits for other nodes' answers (fetches from an
/// owner, drops from sharers) before it can serve the requests queued on it.
#[derive(Clone, Debug)]
pub struct HomeLine {
    /// The line.
    pub line: PAddr,
    /// Answers still due.
    pub due: u32,
    /// Requests to serve once they are in, in arrival order (rarely more
    /// than the one that asked: kept inline).
    pub waiting: smallvec::SmallVec<[HomeReq; 2]>,
}

/// Times the handlers stamp, for the start-up breakdown.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Marks {
    /// The sender's first line begins (after the first invocation's state load).
    pub first_line: Option<Cycles>,
    /// The first component goes on the wire; the last comes off it.
    pub first_wire: Option<Cycles>,
    /// The last component comes off the wire.
    pub last_wire: Option<Cycles>,
    /// The first component's bytes are in the receiver's memory.
    pub first_written: Option<Cycles>,
    /// The last receive's last bytes are in memory.
    pub last_component: Option<Cycles>,
}

/// What waits on a node's shared units cost a stream: of each wait, the
/// part the stream could not hide (cycles of 10 ns). A wait held the
/// stream back where it left the sender's link idle between two of the
/// stream's components (a component late because its handler waited to be
/// dispatched, or its data behind another handler's transfer), or where it
/// delayed the end: the last component's memory write and the cleanup
/// that tells the process. A wait the stream hid (the link still busy
/// with components queued before it, the data not yet in) costs nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct HeldBack {
    /// Waiting for the PP, which was running other handlers (the inbox's
    /// arbitration between its queues).
    pub pp_arbitration: u64,
    /// Waiting for memory's data bus, held by another handler's transfer.
    pub memory: u64,
    /// Waiting for the processor-cache interface, held by another
    /// handler's intervention or reply.
    pub pcache_if: u64,
}

impl HeldBack {
    /// All of it (at most 2^64 - 1: a run's waits are far less, and a
    /// result read back holds none past its total).
    pub fn total(&self) -> u64 {
        self.pp_arbitration
            .saturating_add(self.memory)
            .saturating_add(self.pcache_if)
    }

    /// Both added (each at most 2^64 - 1, as [`HeldBack::total`]).
    pub fn plus(self, o: HeldBack) -> HeldBack {
        HeldBack {
            pp_arbitration: self.pp_arbitration.saturating_add(o.pp_arbitration),
            memory: self.memory.saturating_add(o.memory),
            pcache_if: self.pcache_if.saturating_add(o.pcache_if),
        }
    }

    /// Explain `gap` cycles the stream lost with the waits in `w` (taken
    /// in that order, each at most what is left of the gap), adding what
    /// each explains to `self` and taking it out of `w`.
    pub(crate) fn explain(&mut self, gap: u64, w: &mut HeldBack) {
        let mut left = gap;
        for (mine, theirs) in [
            (&mut self.pp_arbitration, &mut w.pp_arbitration),
            (&mut self.memory, &mut w.memory),
            (&mut self.pcache_if, &mut w.pcache_if),
        ] {
            let x = left.min(*theirs);
            (*mine, *theirs, left) = (*mine + x, *theirs - x, left - x);
        }
    }
}

/// Counters of one node's transfer activity.
#[derive(Clone, Debug, Default, Serialize)]
pub struct XferStats {
    /// The breakdown of the first transfer-handler invocation, and when
    /// (cycles into it) its first memory read or processor-cache get went out.
    pub first: Breakdown,
    /// Cycles into the first invocation when its first read or get went out.
    pub first_issue: Option<u32>,
    /// Transfer-handler invocations.
    pub invocations: u64,
    /// Components sent.
    pub components_sent: u64,
    /// Components stored here.
    pub components_received: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes stored here.
    pub bytes_received: u64,
    /// Source lines read (memory or processor cache).
    pub lines_read: u64,
    /// Global coherence: lines fetched from a third node's cache.
    pub fetches: u64,
    /// Send lines asked of their home (buffers homed at a third node).
    pub pulls: u64,
    /// Receive lines sent on to their home.
    pub deposits: u64,
    /// Transfer-handler invocations that found no data buffer.
    pub alloc_fails: u64,
    /// Components that named no posted receive, or a line outside the
    /// coherence mode's precondition (dropped).
    pub dropped: u64,
    /// Components stored later for want of a data buffer.
    pub retries: u64,
    /// Messages for this node's software queue that found it full and
    /// waited in the node's record for a free entry.
    pub deferred: u64,
    /// Uses that met a stale page (the invalidation technique's check).
    pub stale_uses: u64,
    /// Translations the OS answered with "unmapped".
    pub unmapped: u64,
    /// Lines a `local` transfer met outside the mode's precondition.
    pub outside_local: u64,
    /// Times stamped for the start-up breakdown.
    pub marks: Marks,
    /// What waits cost this node's outgoing stream on its link: the idle
    /// time between its components that the waits before each explain.
    pub held_sending: HeldBack,
    /// What waits cost the end of the last receive completed here: its
    /// last component's memory write and its cleanup.
    pub held_ending: HeldBack,
}

/// A node of the transfer machine.
#[derive(Clone)]
pub struct XferNode {
    /// This node.
    pub id: NodeId,
    /// The coherence protocol's state (directory, processor cache's misses).
    pub coh: CohNode,
    /// The operating system.
    pub os: Os,
    /// The compute processor's program.
    pub cpu: ConnCpu,
    /// The handler choices and cost sheets.
    pub params: XferParams,
    /// The partner's (node, PID), once connected.
    pub partner: Option<(NodeId, Pid)>,
    /// The open command sequence.
    pub cmd: CmdRecord,
    /// Accepted commands waiting for their setup handler.
    pub accepted: VecDeque<Accepted>,
    /// The outgoing half of the stream.
    pub out: Outgoing,
    /// Receives posted here.
    pub recvs: Vec<RecvOp>,
    /// The number of the next receive posted here.
    pub next_recv: u32,
    /// The in-use page table (the invalidation technique).
    pub pages: PageTable,
    /// Components that met a stale page, waiting for its translation.
    pub parked: Vec<(Msg, BufId)>,
    /// Components waiting for a data buffer to be stored, their bytes
    /// (where they go in the line) in the receive's record in MAGIC's
    /// memory: a waiting component keeps no data buffer, since
    /// components holding every buffer while they wait for one more
    /// would wait for ever.
    pub retry: Vec<(Msg, [u8; LINE_BYTES])>,
    /// Software-queue messages that found the queue full, in order.
    pub deferred: VecDeque<Msg>,
    /// Pages MAGIC has asked the OS about and not yet heard of.
    pub asked: Vec<os_shim::VPage>,
    /// As a third node homing buffers: lines waiting for other nodes.
    pub home: Vec<HomeLine>,
    /// As a third node: requests waiting for a data buffer.
    pub home_retry: Vec<(PAddr, HomeReq)>,
    /// Counters.
    pub stats: XferStats,
}

impl XferNode {
    /// Node `id` of `nodes` with `params` and its OS (the coherence protocol's
    /// parameters the defaults; the `Transfer` unit builds nodes with its own).
    pub fn new(id: NodeId, nodes: u32, params: XferParams, os: Os) -> XferNode {
        XferNode {
            id,
            coh: CohNode::new(id, nodes, coherence::protocol::CohParams::default()),
            os,
            cpu: ConnCpu::default(),
            params,
            partner: None,
            cmd: CmdRecord::default(),
            accepted: VecDeque::new(),
            out: Outgoing::default(),
            recvs: Vec::new(),
            next_recv: 0,
            pages: PageTable::default(),
            parked: Vec::new(),
            retry: Vec::new(),
            deferred: VecDeque::new(),
            asked: Vec::new(),
            home: Vec::new(),
            home_retry: Vec::new(),
            stats: XferStats::default(),
        }
    }
}

impl XferNode {
    /// The node's state, canonically, into `out` (for the exhaustive
    /// checker): the coherence protocol's part, the OS, the program, the
    /// connection, the command record, the streams, the receives, the page
    /// table and what waits; times relative to `now`, and of the counters
    /// only the drops.
    pub fn encode(&self, now: Cycles, out: &mut Vec<u8>) {
        use std::io::Write;
        self.coh.encode(out);
        self.cpu.encode(now, out);
        let recvs: Vec<_> = self
            .recvs
            .iter()
            .map(|r| {
                let written = r.written.0.saturating_sub(now.0);
                (r.id, r.pid, &r.span, r.got, written, r.deposits)
            })
            .collect();
        let _ = write!(
            out,
            "{:?}{:?}{:?}{:?}{:?}{recvs:?}{}{:?}{:?}{:?}{:?}{:?}{:?}{}",
            self.os,
            self.partner,
            self.cmd,
            self.accepted,
            self.out,
            self.next_recv,
            self.parked,
            self.retry,
            self.deferred,
            self.asked,
            self.home,
            self.home_retry,
            self.stats.dropped
        );
        // Each span's uses as the invalidation technique sees them (their
        // `Debug` above names them; the table keeps their marks).
        let spans = self.out.sends.iter().map(|s| &s.span);
        for span in spans.chain(self.recvs.iter().map(|r| &r.span)) {
            out.extend(span.uses.iter().map(|u| self.pages.valid(u) as u8));
            out.push(b';');
        }
        self.pages.encode(out);
    }
}

impl Coherent for XferNode {
    fn coh(&self) -> &CohNode {
        &self.coh
    }

    fn coh_mut(&mut self) -> &mut CohNode {
        &mut self.coh
    }
}

impl NodeState for XferNode {
    fn pending(&self) -> Option<String> {
        let mut p: Vec<String> = self.coh.pending().into_iter().collect();
        p.extend(self.cpu.pending());
        for s in &self.out.sends {
            p.push(format!(
                "send of {} bytes: {} sent ({} bytes of receive space offered)",
                s.span.len,
                s.sent,
                self.out.space.iter().map(|x| x.len - x.used).sum::<u64>()
            ));
        }
        if !self.deferred.is_empty() {
            p.push(format!(
                "{} message(s) waiting for room in the software queue",
                self.deferred.len()
            ));
        }
        if !self.retry.is_empty() {
            p.push(format!(
                "{} component(s) waiting for a data buffer",
                self.retry.len()
            ));
        }
        if !self.parked.is_empty() {
            p.push(format!(
                "{} component(s) waiting for a page's translation",
                self.parked.len()
            ));
        }
        for r in &self.recvs {
            p.push(format!(
                "receive {} of {} bytes: {} in, {} line(s) at the home unanswered",
                r.id, r.span.len, r.got, r.deposits
            ));
        }
        if !self.out.pulling.is_empty() {
            p.push(format!(
                "{} send line(s) asked of their home",
                self.out.pulling.len()
            ));
        }
        for h in &self.home {
            p.push(format!(
                "home of {}: {} answer(s) due, {} request(s) waiting",
                h.line,
                h.due,
                h.waiting.len()
            ));
        }
        if !self.home_retry.is_empty() {
            p.push(format!(
                "{} home request(s) waiting for a data buffer",
                self.home_retry.len()
            ));
        }
        (!p.is_empty()).then(|| p.join("; "))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        let a = self.cpu.step(p, &mut self.os, &mut self.coh);
        let b = self.coh.processor_step(p);
        a.earliest(b)
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        match self.cpu.receive(p, &mut self.os, msg) {
            Some(s) => Some(s),
            None => self.coh.processor_receive(p, msg, data),
        }
    }
}

/// Where the handlers keep their state in MAGIC memory (for data-cache
/// charges): placed apart from the directory entries the experiments use.
pub(crate) mod addr {
    use magic::LINE_BYTES;
    const BASE: u64 = 0x7000_0000 + 1000 * LINE_BYTES as u64;
    /// The send side's operation record and stream state.
    pub const SEND: u64 = BASE;
    /// The receive side's records.
    pub const RECV: u64 = BASE + 2 * LINE_BYTES as u64;
    /// The command record and connection.
    pub const CMD: u64 = BASE + 4 * LINE_BYTES as u64;
}

/// A transfer handler's context.
pub(crate) type C<'a> = magic::Cx<'a, XferNode>;

/// The node's transfer cost sheet.
pub(crate) fn costs(cx: &mut C<'_>) -> TransferCosts {
    cx.state().params.costs
}

/// Put `m` on this node's software queue, addressed to its own message
/// space. MAGIC's queue holds `swq_capacity` entries: a message that finds
/// it full waits in the node's record and goes in when a software-queue
/// handler has taken its own message off ([`requeue`]), so no work is lost.
/// The handler asks whether the queue is full first: a refused reschedule
/// would be a drop, and the run not clean.
pub(crate) fn queue(cx: &mut C<'_>, m: XferMsg) {
    let me = cx.node();
    let m = cx.msg(m).addr(PAddr::new(Region::Message, me, 0));
    if cx.software_queue_full() || cx.reschedule(m).is_err() {
        cx.state().deferred.push_back(m);
        cx.state().stats.deferred += 1;
    }
}

/// First thing in a handler the software queue dispatched: its message
/// left the queue, so a message that found it full takes its place.
pub(crate) fn requeue(cx: &mut C<'_>) {
    if cx.software_queue_full() {
        return;
    }
    if let Some(m) = cx.state().deferred.pop_front() {
        if cx.reschedule(m).is_err() {
            cx.state().deferred.push_front(m);
        }
    }
}

/// Reschedule the sender's transfer handler.
pub(crate) fn step_again(cx: &mut C<'_>) {
    queue(cx, XferMsg::Step);
}

/// Bytes of receive `i` are in memory at `at`: the landing the per-line
/// rate is measured by, and the write its completion waits for.
pub(crate) fn land(s: &mut XferNode, i: usize, at: Cycles) {
    s.stats.marks.first_written.get_or_insert(at);
    let r = &mut s.recvs[i];
    r.written = r.written.max(at);
}

/// Bytes of receive `id` are in this node's memory at `at`: a line served
/// here as its home serves a deposit, counted in later by its notice.
pub(crate) fn landed(cx: &mut C<'_>, id: u32, at: Cycles) {
    let s = cx.state();
    if let Some(i) = s.recvs.iter().position(|r| r.id == id && r.deposits > 0) {
        land(s, i, at);
    }
}

/// A waiting request's line out of data buffer `b` into its record in
/// MAGIC's memory, and the buffer back in the pool: what waits keeps no
/// buffer (at a home, a deposit waiting for other nodes; at a receiver, a
/// component waiting for a second buffer).
pub(crate) fn to_record(cx: &mut C<'_>, b: BufId) -> [u8; LINE_BYTES] {
    costs(cx).home_record.charge(cx, addr::RECV, addr::RECV);
    let bytes = cx.buffer(b).copied().unwrap_or([0; LINE_BYTES]);
    let _ = cx.free_buffer(b);
    bytes
}

/// A record's line back into data buffer `b` (see [`to_record`]).
pub(crate) fn from_record(cx: &mut C<'_>, b: BufId, bytes: [u8; LINE_BYTES]) {
    costs(cx).home_record.charge(cx, addr::RECV, addr::RECV);
    if let Some(x) = cx.buffer_mut(b) {
        *x = bytes;
    }
}

/// Receive `i` is complete once its bytes are all in and its lines at a
/// third-node home all acknowledged: schedule its cleanup.
pub(crate) fn complete_if_done(cx: &mut C<'_>, i: usize) {
    let now = cx.now();
    let s = cx.state();
    let r = &s.recvs[i];
    let early = s.params.inject == Some(Bug::EarlyDone)
        && r.span.len - r.got.min(r.span.len) <= LINE_BYTES as u64
        && r.got > 0;
    if (r.got == r.span.len || early) && r.deposits == 0 {
        // The receive is complete once its last bytes are in memory.
        let id = r.id;
        s.stats.marks.last_component = Some(r.written.max(now));
        queue(cx, XferMsg::Cleanup { id });
    }
}

/// The node's command-interface cost sheet.
pub(crate) fn command(cx: &mut C<'_>) -> CommandCosts {
    cx.state().params.command
}

/// The command sequence being written.
#[derive(Clone, Debug, Default)]
pub struct CmdRecord {
    /// The operation its first write named (by its address), if any.
    pub op: Option<XferOp>,
    /// The first write's word: a length, or a connect's virtual PID.
    pub arg: u64,
    /// (authentic page with the in-page offset, user virtual address,
    /// named through the write shadow).
    pub pages: Vec<(PAddr, u64, bool)>,
    /// A write came out of order (a page before the operation).
    pub bad: bool,
}

/// An accepted command waiting for its setup.
#[derive(Clone, Debug)]
pub struct Accepted {
    /// The operation.
    pub op: XferOp,
    /// The process.
    pub pid: Pid,
    /// The buffer's virtual address.
    pub va: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The frame of each page it spans.
    pub frames: Vec<PAddr>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_gives_an_address_for_any_offset() {
        let span = Span {
            va: 0x1000 + 64,
            len: PAGE_BYTES,
            frames: vec![PAddr(0x80_0000), PAddr(0x40_0000)],
            uses: Vec::new(),
        };
        // Each page's bytes in its own frame; far offsets in the ends'.
        assert_eq!(span.paddr(0), PAddr(0x80_0040));
        assert_eq!(span.paddr(PAGE_BYTES as i64), PAddr(0x40_0040));
        assert_eq!(span.paddr(i64::MAX).0 >> 22, 1);
        assert_eq!(span.paddr(i64::MIN), PAddr(0x80_0000));
        assert!(span.valid(&PageTable::default(), i64::MAX));
        // A span of no page, or at the top of the address space.
        let none = Span {
            va: 0,
            len: 0,
            frames: Vec::new(),
            uses: Vec::new(),
        };
        assert_eq!(none.paddr(0), PAddr(0));
        let top = Span {
            va: i64::MAX as u64,
            len: 1,
            frames: vec![PAddr(0)],
            uses: Vec::new(),
        };
        let _ = top.paddr(i64::MAX);
        assert!(top.valid(&PageTable::default(), 1));
        assert_eq!(Span::pages(4095, u64::MAX), (1 << 52) + 1);
        assert_eq!(Span::pages(0, PAGE_BYTES + 1), 2);
    }
}
