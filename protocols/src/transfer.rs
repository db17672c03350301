//! The bulk-transfer engine: the sender's transfer handler, which sends the
//! data as cache-line components through data buffers and reschedules itself
//! through the software queue, and the receiver's component handler.
//!
//! The sender's steps follow the paper's task breakdown (FLASH.md §6). Each
//! task is a hand-scheduled run of PP bundles with its instruction count and
//! its loads and stores of MAGIC memory (operation record, directory), so the
//! optimized handler's own accounting reads 46 instructions for a clean line
//! and 56 for a dirty one. Bundles take more than half a cycle per instruction
//! where a load's result is needed by the next instruction; the schedule puts
//! the memory read 18 cycles into the handler and the processor-cache get 17.
//!
//! Versions:
//! - `Base`: issues the get to the processor cache and stalls for it before
//!   doing anything else;
//! - `Optimized`: issues the get early and forms the header while the cache
//!   answers (speculative work), stalling only for what is left;
//! - `Chunked(k)`: the optimized handler sending `k` lines per invocation with
//!   its state in registers: the record is loaded and stored once per
//!   invocation, and for a dirty line the next line's get goes out as soon as
//!   the processor cache is free.
//!
//! This first part covers the engine itself: a transfer between two buffers
//! whose pages are known to MAGIC, with `local` coherence at both ends. The
//! connection protocol, the start-up sequence and alignment build on it.

use coherence::directory::{DirEntry, DirState, Sharers};
use coherence::protocol::{self, CohNode, CohParams, Coherent};
use magic::{
    BufId, Cx, Cycles, Lane, LineState, Magic, MagicBuilder, MagicParams, Msg, NodeId, NodeState,
    PAddr, ProcStep, Processor, Region, LINE_BYTES,
};
use serde::Serialize;

pub mod mt {
    use magic::MsgType;
    /// Start a transfer (processor interface; its command has been accepted).
    pub const START: MsgType = MsgType(70);
    /// The transfer handler's next invocation (software queue).
    pub const STEP: MsgType = MsgType(71);
    /// One component: a line of data (request lane).
    pub const COMPONENT: MsgType = MsgType(72);
}

/// Which sender handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Version {
    Base,
    Optimized,
    Chunked(u32),
}

impl Version {
    fn lines_per_invocation(self) -> u32 {
        match self {
            Version::Chunked(k) => k.max(1),
            _ => 1,
        }
    }
}

/// One task of the transfer handler: bundles, instructions, and the loads
/// and stores among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub name: &'static str,
    pub cycles: u32,
    pub instrs: u32,
    pub loads: u32,
    pub stores: u32,
}

const fn task(name: &'static str, cycles: u32, instrs: u32, loads: u32, stores: u32) -> Task {
    Task {
        name,
        cycles,
        instrs,
        loads,
        stores,
    }
}

/// The tasks of FLASH.md §6's optimized send handler.
pub mod tasks {
    use super::{task, Task};
    pub const INIT: Task = task("initialization and state load", 9, 10, 4, 0);
    pub const DIRECTORY: Task = task("load directory, check", 7, 6, 2, 0);
    /// Clean line: the memory read goes out in the second bundle.
    pub const READ_MEMORY: Task = task("read memory", 2, 3, 0, 0);
    /// Dirty line: the get goes out in the first bundle.
    pub const GET: Task = task("send get to processor cache", 2, 4, 0, 0);
    pub const UPDATE_DIRECTORY: Task = task("update directory", 2, 2, 0, 1);
    pub const WAIT_WRITE: Task = task("wait for cache, write to memory", 2, 4, 0, 0);
    pub const HEADER_CLEAN: Task = task("form header, update state", 8, 15, 1, 2);
    pub const HEADER_DIRTY: Task = task("form header, update state", 9, 16, 2, 2);
    /// Send and reschedule, split: forming the send (done speculatively for
    /// a dirty line), then issuing it and the reschedule.
    pub const SEND_CLEAN: Task = task("send, reschedule", 6, 12, 1, 2);
    pub const SEND_DIRTY_PREPARE: Task = task("send, reschedule", 3, 6, 1, 0);
    pub const SEND_DIRTY_ISSUE: Task = task("send, reschedule", 4, 8, 1, 2);
}

/// Instructions, loads and stores by task name, for one invocation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    pub tasks: Vec<(&'static str, u32)>,
    pub instructions: u32,
    pub loads: u32,
    pub stores: u32,
}

impl Breakdown {
    fn add(&mut self, t: &Task) {
        match self.tasks.iter_mut().find(|x| x.0 == t.name) {
            Some(x) => x.1 += t.instrs,
            None => self.tasks.push((t.name, t.instrs)),
        }
        self.instructions += t.instrs;
        self.loads += t.loads;
        self.stores += t.stores;
    }
}

/// MAGIC-memory address of the transfer's state: placed where it does not
/// share data-cache lines with the directory entries of the buffers the
/// experiments use (the cache is direct mapped).
const RECORD: u64 = 0x7000_0000 + 1000 * LINE_BYTES as u64;

/// The sender's operation record.
#[derive(Clone, Debug)]
pub struct SendRecord {
    pub src: PAddr,
    pub dst: PAddr,
    pub to: NodeId,
    pub lines: u32,
    pub sent: u32,
    pub version: Version,
    pub started: Cycles,
}

/// The receiver's posted receive.
#[derive(Clone, Debug)]
pub struct RecvRecord {
    pub dst: PAddr,
    pub lines: u32,
    pub got: u32,
    pub done_at: Option<Cycles>,
}

/// What a transfer measured (set by the handlers).
#[derive(Clone, Debug, Default, Serialize)]
pub struct XferStats {
    /// Per invocation of the transfer handler: the breakdown of the last one
    /// and when (cycles into the handler) its first memory read or processor
    /// get went out.
    pub last: Breakdown,
    pub first_issue: Option<u32>,
    pub invocations: u64,
    pub components_received: u64,
}

/// A node that can send and receive transfers over the coherence protocol.
pub struct XferNode {
    pub coh: CohNode,
    pub send: Option<SendRecord>,
    pub recv: Option<RecvRecord>,
    pub stats: XferStats,
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
        if let Some(s) = &self.send {
            if s.sent < s.lines {
                p.push(format!("transfer: {} of {} lines sent", s.sent, s.lines));
            }
        }
        if let Some(r) = &self.recv {
            if r.got < r.lines {
                p.push(format!("receive: {} of {} lines in", r.got, r.lines));
            }
        }
        (!p.is_empty()).then(|| p.join("; "))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        self.coh.processor_step(p)
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        self.coh.processor_receive(p, msg, data)
    }
}

type C<'a> = Cx<'a, XferNode>;

fn charge(cx: &mut C<'_>, t: &Task, b: &mut Breakdown) {
    charge_at(cx, t, b, RECORD);
}

/// As `charge`, with the task's first load at `at` (the directory entry it
/// reads) and the others in the operation record.
fn charge_at(cx: &mut C<'_>, t: &Task, b: &mut Breakdown, at: u64) {
    cx.bundles(t.cycles, t.instrs);
    for i in 0..t.loads {
        cx.load(if i == 0 { at } else { RECORD + i as u64 * 8 });
    }
    for i in 0..t.stores {
        cx.store(RECORD + 64 + i as u64 * 8);
    }
    b.add(t);
}

/// The sender's processor holds the line dirty (the directory says so).
fn dirty_here(cx: &mut C<'_>, line: PAddr) -> bool {
    let me = cx.node();
    matches!(cx.state().coh.entry(line).state, DirState::Exclusive(o) if o == me)
}

/// The directory says dirty here, but the processor is still filling or
/// writing the line back: intervening now would read a cache in flux.
fn in_flux(cx: &mut C<'_>, line: PAddr) -> bool {
    dirty_here(cx, line) && cx.state().coh.in_flux(line)
}

/// Begin a transfer: the record is in place; start the handler.
fn start(cx: &mut C<'_>, _m: &Msg) {
    cx.instr(4);
    let now = cx.now();
    if let Some(s) = cx.state().send.as_mut() {
        s.started = now;
    }
    let me = cx.node();
    let _ = cx.reschedule(Msg::new(mt::STEP, me, me).addr(PAddr::new(Region::Message, me, 0)));
}

/// One invocation of the transfer handler.
fn step(cx: &mut C<'_>, _m: &Msg) {
    let Some(rec) = cx.state().send.clone() else {
        return;
    };
    let mut b = Breakdown::default();
    let t0 = cx.now();
    let mut first_issue = None;
    charge(cx, &tasks::INIT, &mut b);
    let k = rec.version.lines_per_invocation().min(rec.lines - rec.sent);
    let mut sent = rec.sent;
    // For a chunk: the buffer of a dirty line whose get is already out.
    let mut pending: Option<(BufId, magic::Ticket)> = None;
    for i in 0..k {
        let line = PAddr(rec.src.0 + sent as u64 * LINE_BYTES as u64);
        let dst = PAddr(rec.dst.0 + sent as u64 * LINE_BYTES as u64);
        let Some(buf) = pending.map(|p| p.0).or_else(|| cx.alloc_buffer()) else {
            break; // AllocFail: back off through the software queue.
        };
        charge_at(cx, &tasks::DIRECTORY, &mut b, protocol::dir_addr(line));
        if pending.is_none() && in_flux(cx, line) {
            // Back off through the software queue until the processor is done.
            let _ = cx.free_buffer(buf);
            break;
        }
        if dirty_here(cx, line) {
            // Dirty: the get may already be out (chunked); else issue it now.
            let iv_done = match pending.take() {
                Some((_, t)) => t.ready,
                None => {
                    // The get goes out at the end of the task's first bundle.
                    let g = tasks::GET;
                    cx.bundles(1, g.instrs / 2);
                    first_issue.get_or_insert((cx.now() - t0).0 as u32);
                    let iv = cx
                        .pc_get(line, Some(buf), LineState::Clean)
                        .expect("allocated");
                    cx.bundles(g.cycles - 1, g.instrs - g.instrs / 2);
                    b.add(&g);
                    iv.done
                }
            };
            if rec.version == Version::Base {
                cx.wait_until(iv_done);
            }
            charge(cx, &tasks::UPDATE_DIRECTORY, &mut b);
            let me = cx.node();
            let shared = DirEntry {
                state: DirState::Shared(Sharers::one(me)),
                pending: None,
            };
            cx.state().coh.set_entry(line, shared);
            charge(cx, &tasks::HEADER_DIRTY, &mut b);
            charge(cx, &tasks::SEND_DIRTY_PREPARE, &mut b);
            cx.wait_until(iv_done);
            // Chunked: the processor cache is free again; the next dirty
            // line's get goes out before this line is finished.
            if let Version::Chunked(_) = rec.version {
                let next = PAddr(line.0 + LINE_BYTES as u64);
                if i + 1 < k && dirty_here(cx, next) && !in_flux(cx, next) {
                    if let Some(nb) = cx.alloc_buffer() {
                        let g = tasks::GET;
                        cx.bundles(1, g.instrs / 2);
                        let iv = cx
                            .pc_get(next, Some(nb), LineState::Clean)
                            .expect("allocated");
                        cx.bundles(g.cycles - 1, g.instrs - g.instrs / 2);
                        b.add(&g);
                        pending = Some((
                            nb,
                            magic::Ticket {
                                first: iv.state_at,
                                ready: iv.done,
                            },
                        ));
                    }
                }
            }
            charge(cx, &tasks::WAIT_WRITE, &mut b);
            let _ = cx.mem_write(line, buf);
            charge(cx, &tasks::SEND_DIRTY_ISSUE, &mut b);
        } else {
            // The read goes out at the end of the task's last bundle.
            let t = tasks::READ_MEMORY;
            cx.bundles(t.cycles, t.instrs);
            first_issue.get_or_insert((cx.now() - t0).0 as u32);
            let _ = cx.mem_read(line, buf);
            b.add(&t);
            charge(cx, &tasks::HEADER_CLEAN, &mut b);
            charge(cx, &tasks::SEND_CLEAN, &mut b);
        }
        let c = Msg::new(mt::COMPONENT, cx.node(), rec.to)
            .lane(Lane::Request)
            .addr(dst)
            .args([sent as u64, rec.lines as u64, 0]);
        let _ = cx.send(c, Some(buf));
        sent += 1;
    }
    if let Some((nb, _)) = pending {
        let _ = cx.free_buffer(nb);
    }
    let me = cx.node();
    let s = cx.state();
    if let Some(r) = s.send.as_mut() {
        r.sent = sent;
    }
    s.stats.last = b;
    s.stats.first_issue = first_issue;
    s.stats.invocations += 1;
    if sent < rec.lines {
        let _ = cx.reschedule(Msg::new(mt::STEP, me, me).addr(PAddr::new(Region::Message, me, 0)));
    }
}

/// A component at the receiver: store the line; the last one completes it.
fn component(cx: &mut C<'_>, m: &Msg) {
    cx.bundles(4, 8);
    cx.load(RECORD + 128);
    let Some(b) = cx.take_msg_buffer() else {
        return;
    };
    // Local coherence at the receiver: the directory says whether the
    // processor's copy must go.
    match coherence::modes::receiver_write(
        cx,
        coherence::modes::Mode::Local,
        m.addr,
        b,
        0..LINE_BYTES,
    ) {
        // The write streams from the buffer on its own; the buffer comes
        // back when it is over.
        Ok(t) => {
            let _ = cx.free_buffer_after(b, t);
        }
        Err(_) => {
            let _ = cx.free_buffer(b);
            return;
        }
    }
    cx.bundles(2, 4);
    cx.store(RECORD + 136);
    let now = cx.now();
    let s = cx.state();
    s.stats.components_received += 1;
    if let Some(r) = s.recv.as_mut() {
        r.got += 1;
        if r.got == r.lines {
            r.done_at = Some(now);
        }
    }
}

/// Install the transfer handlers (and the coherence protocol's).
pub fn install(b: &mut MagicBuilder<XferNode>) {
    protocol::install(b);
    let h = b.handler("xfer-start", start);
    b.route(mt::START, Region::Normal, h);
    let h = b.handler("xfer-send", step);
    b.route(mt::STEP, Region::Message, h);
    let h = b.handler("xfer-component", component);
    b.route(mt::COMPONENT, Region::Normal, h);
}

/// The sender's buffer state at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SendState {
    Uncached,
    Dirty,
}

/// What one transfer phase measured.
pub struct PhaseRun {
    /// From the start handler to the last component stored.
    pub cycles: Cycles,
    pub data_ok: bool,
    pub machine: Magic<XferNode>,
}

/// Send `lines` lines from node 0 to node 1 (receive posted, both buffers
/// homed where they are) with `version`, the send buffer uncached or dirty
/// in the sender's cache.
pub fn phase(
    lines: u32,
    version: Version,
    state: SendState,
    params: MagicParams,
) -> Result<PhaseRun, String> {
    let mut b = MagicBuilder::new(params, 2);
    install(&mut b);
    let mut m = b.build(|n| XferNode {
        coh: CohNode::new(n, 2, CohParams::default()),
        send: None,
        recv: None,
        stats: XferStats::default(),
    })?;
    let (a, r) = (NodeId(0), NodeId(1));
    let src = PAddr::new(Region::Normal, a, 0x10_0000);
    let dst = PAddr::new(Region::Normal, r, 0x20_0000);
    for i in 0..lines as u64 {
        let mut bytes = [0u8; LINE_BYTES];
        for (j, x) in bytes.iter_mut().enumerate() {
            *x = (i * 3 + j as u64) as u8;
        }
        let line = PAddr(src.0 + i * LINE_BYTES as u64);
        match state {
            SendState::Uncached => protocol::place(&mut m, line, &[], bytes, bytes)?,
            SendState::Dirty => protocol::place(
                &mut m,
                line,
                &[(a, LineState::Dirty)],
                [0; LINE_BYTES],
                bytes,
            )?,
        }
    }
    m.state_mut(a).send = Some(SendRecord {
        src,
        dst,
        to: r,
        lines,
        sent: 0,
        version,
        started: Cycles(0),
    });
    m.state_mut(r).recv = Some(RecvRecord {
        dst,
        lines,
        got: 0,
        done_at: None,
    });
    m.post(a, Cycles(0), Msg::new(mt::START, a, a).addr(src))?;
    let rep = m.run();
    if !rep.is_clean() {
        return Err(format!(
            "the transfer did not complete: {}",
            rep.stuck.join("; ")
        ));
    }
    let started = m.state(a).send.as_ref().map_or(Cycles(0), |s| s.started);
    let done = m
        .state(r)
        .recv
        .as_ref()
        .and_then(|x| x.done_at)
        .ok_or("no completion")?;
    let mut data_ok = true;
    for i in 0..lines as u64 {
        let l = PAddr(src.0 + i * LINE_BYTES as u64);
        let want = match state {
            SendState::Uncached => m.memory(a).line(l.line()),
            SendState::Dirty => *m.pcache(a).bytes(l).ok_or("the sender lost its copy")?,
        };
        data_ok &= m
            .memory(r)
            .line(PAddr(dst.0 + i * LINE_BYTES as u64).line())
            == want;
    }
    Ok(PhaseRun {
        cycles: done - started,
        data_ok,
        machine: m,
    })
}
