//! The connection: the user program's command sequences, MAGIC's command,
//! setup and space-notice handlers, and the receiving side (component and
//! cleanup handlers). Global coherence's fetch of a remote owner's dirty
//! line lives here too: it is a request and reply between MAGICs.
//!
//! A command is one write naming the operation (its address) and length
//! (its data), then one write per page of the buffer through the page's
//! shadow (the address is the authentic physical page, the data the user's
//! virtual address of it), then the committing read. A receive names its
//! pages through the write shadow, which exists only for writable pages.

use super::{addr, costs, mt, Op, RecvOp, Refusal, SendOp, Space, Span, XferNode, C};
use coherence::directory::{DirEntry, DirState, Sharers};
use coherence::modes;
use magic::costs::Task;
use magic::{
    Cycles, Lane, LineState, MagicBuilder, Msg, PAddr, ProcStep, Processor, Region, LINE_BYTES,
};
use os_shim::{Change, Pid, VPage, PAGE_BYTES, WRITE_SHADOW};

/// In an OS answer: the page is not mapped.
pub const NO_FRAME: u64 = u64::MAX;
use serde::Serialize;
use std::collections::VecDeque;

/// Run a handler's tasks in order, their loads and stores at `base`.
fn run_tasks(cx: &mut C<'_>, ts: &[Task], base: u64) {
    for t in ts {
        t.charge(cx, base, base);
    }
}

// ---------------------------------------------------------------- processor

/// One operation of the user program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnOp {
    /// Connect to the process the virtual PID names.
    Connect {
        vpid: u16,
    },
    /// Post a receive of `len` bytes at virtual address `va`.
    Post {
        va: u64,
        len: u64,
    },
    /// Send `len` bytes from virtual address `va`.
    Send {
        va: u64,
        len: u64,
    },
    /// A translation change of the process's page: the OS notifies MAGIC,
    /// waits for its answer, then applies it (a move copies the page).
    Change(Change),
    Think(Cycles),
}

impl ConnOp {
    fn op(&self) -> Option<Op> {
        match self {
            ConnOp::Connect { .. } => Some(Op::Connect),
            ConnOp::Post { .. } => Some(Op::Post),
            ConnOp::Send { .. } => Some(Op::Send),
            ConnOp::Think(_) | ConnOp::Change(_) => None,
        }
    }
}

/// What the user program saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ConnEvent {
    /// The first write of a command sequence went out.
    Issued {
        op: Op,
        at: Cycles,
    },
    Ack {
        op: Op,
        at: Cycles,
    },
    Nack {
        op: Op,
        at: Cycles,
        reason: Refusal,
    },
    /// A shadow reference to a page the process has not mapped faulted.
    Fault {
        at: Cycles,
        va: u64,
    },
    /// MAGIC met a stale page and asked the OS for its translation.
    Interrupt {
        at: Cycles,
        page: u64,
    },
    /// The OS applied a translation change after waiting for MAGIC.
    Changed {
        at: Cycles,
        waited: Cycles,
    },
    /// A send has been handed to the network whole.
    SendDone {
        at: Cycles,
        bytes: u64,
    },
    RecvDone {
        at: Cycles,
        bytes: u64,
    },
}

/// The compute processor's user program.
#[derive(Clone, Debug, Default)]
pub struct ConnCpu {
    pub pid: Pid,
    program: VecDeque<ConnOp>,
    /// The writes and commit of the command being issued, one per cycle.
    issuing: VecDeque<Msg>,
    current: Option<Op>,
    waiting: bool,
    resume_at: Option<Cycles>,
    /// Interrupts to answer: when, and which virtual page.
    os_due: Vec<(Cycles, VPage)>,
    /// The change waiting for MAGIC's answer, and since when.
    change: Option<(Change, Cycles)>,
    pub log: Vec<ConnEvent>,
}

impl ConnCpu {
    pub fn push(&mut self, ops: impl IntoIterator<Item = ConnOp>) {
        self.program.extend(ops);
    }

    pub(super) fn pending(&self) -> Option<String> {
        (self.waiting || !self.program.is_empty() || !self.issuing.is_empty()).then(|| {
            format!(
                "user program: {} op(s) left{}",
                self.program.len(),
                if self.waiting {
                    ", waiting for an answer"
                } else {
                    ""
                }
            )
        })
    }

    /// An interrupt about a page whose change is not yet applied waits: its
    /// answer must carry the new frame.
    fn answerable(&self, v: VPage) -> bool {
        self.change.is_none_or(|(c, _)| c.page() != v)
    }

    fn next(&self) -> ProcStep {
        let os = self
            .os_due
            .iter()
            .filter(|x| self.answerable(x.1))
            .map(|x| x.0)
            .min();
        let prog = self.resume_at.filter(|_| !self.waiting);
        match (os, prog) {
            (Some(a), Some(b)) => ProcStep::At(a.min(b)),
            (Some(a), None) | (None, Some(a)) => ProcStep::At(a),
            (None, None) => ProcStep::Idle,
        }
    }
}

/// Start the program (its first step is at `at`).
pub fn start(n: &mut XferNode, at: Cycles) {
    n.cpu.resume_at = Some(at);
}

pub(super) fn processor_step(n: &mut XferNode, p: &mut Processor<'_>) -> ProcStep {
    let now = p.now();
    // The OS's answers to MAGIC's interrupts, from the page table as it is.
    let mut i = 0;
    while i < n.cpu.os_due.len() {
        let (t, v) = n.cpu.os_due[i];
        if t <= now && n.cpu.answerable(v) {
            n.cpu.os_due.remove(i);
            let frame = n.os.lookup(n.cpu.pid, v).map_or(NO_FRAME, |m| m.frame.0);
            let me = n.id;
            p.request(
                Msg::new(mt::OS_TRANSLATION, me, me)
                    .addr(PAddr::new(Region::Message, me, 0))
                    .args([v.0, n.cpu.pid.0 as u64, frame]),
                None,
            );
        } else {
            i += 1;
        }
    }
    if n.cpu.waiting || n.cpu.resume_at.is_none_or(|t| t > now) {
        return n.cpu.next();
    }
    n.cpu.resume_at = None;
    if let Some(m) = n.cpu.issuing.pop_front() {
        if m.mtype == mt::CMD_COMMIT {
            n.cpu.waiting = true;
        } else {
            n.cpu.resume_at = Some(now + Cycles(1));
        }
        p.request(m, None);
        return n.cpu.next();
    }
    let Some(op) = n.cpu.program.pop_front() else {
        return ProcStep::Idle;
    };
    if let ConnOp::Think(c) = op {
        n.cpu.resume_at = Some(now + c);
        return n.cpu.next();
    }
    if let ConnOp::Change(c) = op {
        let old =
            n.os.lookup(n.cpu.pid, c.page())
                .map_or(NO_FRAME, |m| m.frame.0);
        let me = n.id;
        p.request(
            Msg::new(mt::OS_NOTICE, me, me)
                .addr(PAddr::new(Region::Message, me, 0))
                .args([c.page().0, n.cpu.pid.0 as u64, old]),
            None,
        );
        n.cpu.change = Some((c, now));
        n.cpu.waiting = true;
        return n.cpu.next();
    }
    let me = n.id;
    let pid = n.cpu.pid;
    let code = op.op().expect("a command");
    let cmd = |t, a: PAddr, d: u64| Msg::new(t, me, me).addr(a).args([d, 0, 0]);
    let op_addr = PAddr::new(Region::Message, me, code as u64 * 8);
    let mut q = VecDeque::new();
    match op {
        ConnOp::Connect { vpid } => q.push_back(cmd(mt::CMD_OP, op_addr, vpid as u64)),
        ConnOp::Post { va, len } | ConnOp::Send { va, len } => {
            q.push_back(cmd(mt::CMD_OP, op_addr, len));
            let write = code == Op::Post;
            for k in 0..Span::pages(va, len.max(1)) {
                let v = if k == 0 {
                    va
                } else {
                    (va / PAGE_BYTES + k) * PAGE_BYTES
                };
                let shadow = if write {
                    n.os.shadow_write(pid, v)
                } else {
                    n.os.shadow(pid, v)
                };
                match shadow {
                    Ok(a) => q.push_back(cmd(mt::CMD_PAGE, a, v)),
                    // The reference faults in the processor; MAGIC never
                    // sees the page.
                    Err(_) => n.cpu.log.push(ConnEvent::Fault { at: now, va: v }),
                }
            }
        }
        ConnOp::Think(_) | ConnOp::Change(_) => unreachable!(),
    }
    q.push_back(Msg::new(mt::CMD_COMMIT, me, me).addr(PAddr::new(Region::Message, me, 0)));
    n.cpu.log.push(ConnEvent::Issued { op: code, at: now });
    n.cpu.current = Some(code);
    n.cpu.issuing = q;
    n.cpu.resume_at = Some(now);
    processor_step(n, p)
}

pub(super) fn processor_receive(
    n: &mut XferNode,
    p: &mut Processor<'_>,
    msg: &Msg,
) -> Option<ProcStep> {
    let now = p.now();
    // The answer names the operation it answers.
    let op = Op::from_u64(msg.args[2])
        .or(n.cpu.current)
        .unwrap_or(Op::Send);
    match msg.mtype {
        mt::ACK | mt::NACK => {
            n.cpu.log.push(if msg.mtype == mt::ACK {
                ConnEvent::Ack { op, at: now }
            } else {
                let reason = Refusal::from_u64(msg.args[0]).unwrap_or(Refusal::Malformed);
                ConnEvent::Nack {
                    op,
                    at: now,
                    reason,
                }
            });
            n.cpu.waiting = false;
            n.cpu.current = None;
            n.cpu.resume_at = Some(now + Cycles(1));
        }
        mt::INTERRUPT => {
            let v = VPage(msg.args[0]);
            n.cpu.log.push(ConnEvent::Interrupt { at: now, page: v.0 });
            n.cpu.os_due.push((now + n.os.costs.interrupt, v));
        }
        mt::OS_ANSWER => {
            if let Some((c, since)) = n.cpu.change.take() {
                let mut cost = n.os.costs.change;
                if let (Change::Move(_, to), Ok(old)) = (c, n.os.lookup(n.cpu.pid, c.page())) {
                    if to.node() == n.id && old.frame.node() == n.id {
                        // The OS copies the page (its lines are in memory:
                        // the buffers it moves are not cached).
                        for k in 0..PAGE_BYTES / LINE_BYTES as u64 {
                            let at = |f: PAddr| PAddr(f.0 + k * LINE_BYTES as u64).line();
                            let bytes = p.memory().line(at(old.frame));
                            p.memory().store_line(at(to), &bytes);
                            cost += n.os.costs.copy_line;
                        }
                    }
                }
                let _ = n.os.apply(n.cpu.pid, c);
                n.cpu.log.push(ConnEvent::Changed {
                    at: now,
                    waited: now - since,
                });
                n.cpu.waiting = false;
                n.cpu.resume_at = Some(now + cost);
            }
        }
        mt::SEND_DONE => n.cpu.log.push(ConnEvent::SendDone {
            at: now,
            bytes: msg.args[0],
        }),
        mt::RECV_DONE => n.cpu.log.push(ConnEvent::RecvDone {
            at: now,
            bytes: msg.args[0],
        }),
        _ => return None,
    }
    Some(n.cpu.next())
}

// ---------------------------------------------------------------- commands

/// The command sequence being written.
#[derive(Clone, Debug, Default)]
pub struct CmdRecord {
    pub op: Option<Op>,
    pub arg: u64,
    /// (authentic page with the in-page offset, user virtual address,
    /// named through the write shadow).
    pub pages: Vec<(PAddr, u64, bool)>,
    pub bad: bool,
}

/// An accepted command waiting for its setup.
#[derive(Clone, Debug)]
pub struct Accepted {
    pub op: Op,
    pub pid: Pid,
    pub va: u64,
    pub len: u64,
    pub frames: Vec<PAddr>,
}

/// At most this many accepted commands wait for setup.
const MAX_ACCEPTED: usize = 8;

fn to_cpu(cx: &mut C<'_>, t: magic::MsgType, args: [u64; 3]) {
    let me = cx.node();
    let _ = cx.to_processor(Msg::new(t, me, me).args(args), None);
}

fn cmd_op(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.cmd_write);
    cx.store(addr::CMD);
    let op = Op::from_u64(m.addr.offset() / 8);
    cx.state().cmd = super::conn::CmdRecord {
        op,
        arg: m.args[0],
        pages: Vec::new(),
        bad: op.is_none(),
    };
}

fn cmd_page(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.cmd_write);
    cx.store(addr::CMD + 8);
    let write = m.addr.0 & WRITE_SHADOW != 0;
    let a = PAddr(m.addr.0 & !WRITE_SHADOW).with_region(Region::Normal);
    let r = &mut cx.state().cmd;
    if r.op.is_none() {
        r.bad = true;
    }
    r.pages.push((a, m.args[0], write));
}

/// The committing read: check the sequence and answer; the setup follows
/// through the software queue.
fn cmd_commit(cx: &mut C<'_>, _m: &Msg) {
    let c = costs(cx);
    run_tasks(
        cx,
        &[
            c.commit_decode,
            c.commit_check,
            c.commit_connection,
            c.commit_answer,
        ],
        addr::CMD,
    );
    let r = std::mem::take(&mut cx.state().cmd);
    let me = cx.node();
    let pid = cx.state().cpu.pid;
    let code = r.op.map_or(0, |o| o as u64);
    match check(cx, &r) {
        Err(why) => to_cpu(cx, mt::NACK, [why as u64, pid.0 as u64, code]),
        Ok(None) => to_cpu(cx, mt::ACK, [0, pid.0 as u64, code]),
        Ok(Some(a)) => {
            to_cpu(cx, mt::ACK, [0, pid.0 as u64, code]);
            cx.state().accepted.push_back(a);
            let _ =
                cx.reschedule(Msg::new(mt::SETUP, me, me).addr(PAddr::new(Region::Message, me, 0)));
        }
    }
}

/// Check a command; a connect takes effect at once, a send or receive is
/// accepted for setup.
fn check(cx: &mut C<'_>, r: &CmdRecord) -> Result<Option<Accepted>, Refusal> {
    let pid = cx.state().cpu.pid;
    let me = cx.node();
    let mem = cx.params().mem_bytes;
    let op = match (r.op, r.bad) {
        (Some(op), false) => op,
        _ => return Err(Refusal::Malformed),
    };
    if op == Op::Connect {
        let peer = cx.state().os.vpid(pid, r.arg as u16);
        return match peer {
            Some(p) if p.0 != me => {
                cx.state().partner = Some(p);
                Ok(None)
            }
            _ => Err(Refusal::NotConnected),
        };
    }
    if cx.state().partner.is_none() {
        return Err(Refusal::NotConnected);
    }
    if cx.state().accepted.len() >= MAX_ACCEPTED {
        return Err(Refusal::NoRecord);
    }
    let len = r.arg;
    let Some(&(first, va, _)) = r.pages.first() else {
        return Err(Refusal::Malformed);
    };
    let pages = Span::pages(va, len);
    let contiguous = r
        .pages
        .iter()
        .enumerate()
        .all(|(k, p)| p.1 / PAGE_BYTES == va / PAGE_BYTES + k as u64);
    let ours = r
        .pages
        .iter()
        .all(|p| p.0.node() == me && p.0.offset() < mem);
    if len == 0
        || r.pages.len() as u64 != pages
        || !contiguous
        || !ours
        || first.offset() % PAGE_BYTES != va % PAGE_BYTES
    {
        return Err(Refusal::Malformed);
    }
    if op == Op::Post && !r.pages.iter().all(|p| p.2) {
        return Err(Refusal::NotAllowed);
    }
    Ok(Some(Accepted {
        op,
        pid,
        va,
        len,
        frames: r
            .pages
            .iter()
            .map(|p| PAddr(p.0 .0 - p.0.offset() % PAGE_BYTES))
            .collect(),
    }))
}

/// Set up an accepted send or receive: verify it, link its pages, and
/// start the transfer or offer the space to the partner.
fn setup(cx: &mut C<'_>, _m: &Msg) {
    let Some(a) = cx.state().accepted.pop_front() else {
        return;
    };
    let c = costs(cx);
    run_tasks(cx, &[c.setup_load, c.setup_verify], addr::SEND);
    let mut uses = Vec::with_capacity(a.frames.len());
    for (k, f) in a.frames.iter().enumerate() {
        cx.bundles(c.link.cycles, c.link.instrs);
        uses.push(cx.state().pages.link(*f, 0, k as u8));
    }
    run_tasks(
        cx,
        &[c.setup_space, c.setup_state, c.setup_schedule],
        addr::SEND,
    );
    let span = Span {
        va: a.va,
        len: a.len,
        frames: a.frames,
        uses,
    };
    let me = cx.node();
    match a.op {
        Op::Send => {
            let s = cx.state();
            s.out.sends.push_back(SendOp {
                pid: a.pid,
                span,
                sent: 0,
            });
            maybe_start(cx);
        }
        Op::Post => {
            let s = cx.state();
            let id = s.next_recv;
            s.next_recv += 1;
            let align = a.va % LINE_BYTES as u64;
            s.recvs.push(RecvOp {
                id,
                pid: a.pid,
                span,
                got: 0,
                written: Cycles(0),
            });
            let to = s.partner.map_or(me, |p| p.0);
            let m = Msg::new(mt::SPACE, me, to)
                .addr(PAddr::new(Region::Message, to, 0))
                .args([id as u64, a.len, align]);
            let _ = cx.send(m, None);
        }
        Op::Connect => {}
    }
}

/// Schedule the transfer handler if there is data and space and it is not
/// already running.
fn maybe_start(cx: &mut C<'_>) {
    let me = cx.node();
    let o = &mut cx.state().out;
    if !o.running && !o.sends.is_empty() && !o.space.is_empty() {
        o.running = true;
        let _ = cx.reschedule(Msg::new(mt::STEP, me, me).addr(PAddr::new(Region::Message, me, 0)));
    }
}

/// The partner posted a receive.
fn space(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    run_tasks(cx, &[c.space_load, c.space_queue], addr::SEND);
    cx.state().out.space.push_back(Space {
        id: m.args[0] as u32,
        len: m.args[1],
        align: m.args[2],
        used: 0,
    });
    maybe_start(cx);
}

// ---------------------------------------------------------------- receiver

/// A component arrives: write its bytes into the receive buffer under the
/// directory's control; the one that fills the receive schedules cleanup.
///
/// Task by task, as the sender's Table 2 (the counts are the cost sheet's
/// `recv_*`): start and load the receive record; decode the header and
/// verify it (sender, receive, stream position); walk the receive buffer to
/// the destination line (with the page's validity check); load and test the
/// line's directory entry (and act on a cached copy); issue the memory
/// write; write a changed entry back; count the bytes, release the buffer
/// and test for completion. The handler is dispatched when the header is
/// in: its work before the write overlaps the data streaming into the
/// buffer, and the write follows the data.
fn component(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    c.recv_init.charge(cx, addr::RECV, addr::RECV);
    c.recv_verify.charge(cx, addr::CMD, addr::RECV);
    let Some(b) = cx.take_msg_buffer() else {
        return;
    };
    store(cx, m, b);
}

/// Store a component held in buffer `b` (on arrival, or once a stale page's
/// new translation is in).
fn store(cx: &mut C<'_>, m: &Msg, b: magic::BufId) {
    let (id, ro, n) = (m.args[0] as u32, m.args[1], m.args[2]);
    let found = cx
        .state()
        .recvs
        .iter()
        .position(|r| r.id == id && ro + n <= r.span.len);
    let Some(i) = found else {
        cx.state().stats.dropped += 1;
        let _ = cx.free_buffer(b);
        return;
    };
    // The buffer walk, with the invalidation technique's check (one branch).
    let c = costs(cx);
    c.recv_walk.charge(cx, addr::RECV + 16, addr::RECV);
    let stale = {
        let r = &cx.state().recvs[i];
        [ro as i64, (ro + n - 1) as i64]
            .into_iter()
            .find(|&o| !r.span.valid(o))
            .map(|o| VPage((r.span.va as i64 + o) as u64 / PAGE_BYTES))
    };
    if let Some(v) = stale {
        cx.state().stats.stale_uses += 1;
        cx.state().parked.push((*m, b));
        interrupt(cx, v);
        return;
    }
    let (line, at) = {
        let a = cx.state().recvs[i].span.paddr(ro as i64);
        (
            PAddr(a.0 & !(LINE_BYTES as u64 - 1)),
            a.0 as usize % LINE_BYTES,
        )
    };
    // The bytes sit in the buffer where they go in the line.
    let mode = cx.state().params.mode;
    let steps = modes::Steps {
        directory: c.recv_directory,
        issue: c.recv_issue,
        memory: c.recv_write,
        update: c.recv_update_directory,
        merge: c.recv_merge,
    };
    match modes::receiver_write_with(cx, mode, line, b, at..at + n as usize, &steps) {
        Ok(t) => {
            let _ = cx.free_buffer_after(b, t);
            let s = cx.state();
            s.stats.marks.first_written.get_or_insert(t.ready);
            let r = &mut s.recvs[i];
            r.written = r.written.max(t.ready);
        }
        Err(modes::ModeError::Busy { .. }) => {
            // No buffer for merging a part of a line, or the processor's
            // copy is in flux: try again from the software queue.
            cx.state().stats.retries += 1;
            cx.state().retry.push((*m, b));
            if cx.state().retry.len() == 1 {
                let me = cx.node();
                let _ = cx.reschedule(Msg::new(mt::RETRY, me, me).addr(PAddr::new(
                    Region::Message,
                    me,
                    0,
                )));
            }
            return;
        }
        Err(_) => {
            // Outside the coherence mode's precondition: refused, counted.
            cx.state().stats.dropped += 1;
            let _ = cx.free_buffer(b);
            return;
        }
    }
    c.recv_update.charge(cx, addr::RECV, addr::RECV);
    let now = cx.now();
    let s = cx.state();
    s.stats.components_received += 1;
    s.stats.bytes_received += n;
    let r = &mut s.recvs[i];
    r.got += n;
    if r.got == r.span.len {
        // The receive is complete once its last bytes are in memory.
        s.stats.marks.last_component = Some(r.written.max(now));
        let me = cx.node();
        let _ = cx.reschedule(
            Msg::new(mt::CLEANUP, me, me)
                .addr(PAddr::new(Region::Message, me, 0))
                .args([id as u64, 0, 0]),
        );
    }
}

/// Components that could not be stored for lack of a buffer, again.
fn retry(cx: &mut C<'_>, _m: &Msg) {
    let t = costs(cx).recv_retry;
    t.charge(cx, addr::RECV, addr::RECV);
    let waiting = std::mem::take(&mut cx.state().retry);
    for (m, b) in waiting {
        store(cx, &m, b);
    }
}

/// Ask the OS for the translation of a stale page (once until it answers).
pub(super) fn interrupt(cx: &mut C<'_>, v: VPage) {
    if cx.state().asked.contains(&v) {
        return;
    }
    cx.state().asked.push(v);
    let pid = cx.state().cpu.pid;
    to_cpu(cx, mt::INTERRUPT, [v.0, pid.0 as u64, 0]);
}

/// The OS says a page is about to change: mark every use of its frame
/// stale (walking the page's list), then answer.
fn os_notice(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.notice);
    let old = m.args[2];
    if old != NO_FRAME {
        let n = cx.state().pages.invalidate(PAddr(old));
        for _ in 0..n {
            cx.instr(c.walk);
            cx.load(addr::RECV + 192);
        }
    }
    to_cpu(cx, mt::OS_ANSWER, [0, 0, 0]);
}

/// The OS's answer to an interrupt: relink the page in every operation that
/// holds it stale, and let them go on.
fn os_translation(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.notice);
    let (v, frame) = (VPage(m.args[0]), m.args[2]);
    cx.state().asked.retain(|x| *x != v);
    let mut relinked = 0;
    let s = cx.state();
    let spans = s
        .out
        .sends
        .iter_mut()
        .map(|x| &mut x.span)
        .chain(s.recvs.iter_mut().map(|x| &mut x.span));
    for span in spans {
        let k = v.0 as i64 - (span.va / PAGE_BYTES) as i64;
        if k < 0 || k as usize >= span.frames.len() || span.uses[k as usize].valid() {
            continue;
        }
        let k = k as usize;
        if frame == NO_FRAME {
            // Unmapped: the page stays stale and the operation cannot go on.
            continue;
        }
        s.pages.unlink(&span.uses[k]);
        span.frames[k] = PAddr(frame);
        span.uses[k] = s.pages.link(PAddr(frame), 0, k as u8);
        relinked += 1;
    }
    for _ in 0..relinked {
        cx.bundles(c.link.cycles, c.link.instrs);
    }
    if frame == NO_FRAME {
        cx.state().stats.unmapped += 1;
        return;
    }
    // Components that waited for the page, in arrival order.
    let parked = std::mem::take(&mut cx.state().parked);
    for (pm, b) in parked {
        store(cx, &pm, b);
    }
    let me = cx.node();
    let o = &mut cx.state().out;
    if o.blocked && o.fetching.is_empty() {
        o.blocked = false;
        let _ = cx.reschedule(Msg::new(mt::STEP, me, me).addr(PAddr::new(Region::Message, me, 0)));
    }
}

/// A receive is complete: once its last write is in memory, unlink its
/// pages and tell the process.
fn cleanup(cx: &mut C<'_>, m: &Msg) {
    let id = m.args[0] as u32;
    let c = costs(cx);
    run_tasks(cx, &[c.cleanup_load], addr::RECV);
    let Some(i) = cx.state().recvs.iter().position(|r| r.id == id) else {
        return;
    };
    let r = cx.state().recvs.remove(i);
    // Nothing is released or told before the last bytes are in memory (and
    // any cached copy of the buffer is gone).
    cx.wait_until(r.written);
    for u in &r.span.uses {
        cx.instr(c.unlink);
        cx.state().pages.unlink(u);
    }
    run_tasks(cx, &[c.cleanup_update, c.cleanup_notify], addr::RECV);
    to_cpu(cx, mt::RECV_DONE, [r.span.len, r.pid.0 as u64, id as u64]);
}

// ---------------------------------------------------------------- global

/// At a line's dirty owner: hand the line to its home, keeping a clean copy.
fn fetch(cx: &mut C<'_>, m: &Msg) {
    let t = costs(cx).fetch_owner;
    t.charge(cx, addr::SEND, addr::SEND);
    let home = m.src;
    let b = cx.alloc_buffer();
    let iv = match b {
        Some(b) => cx.pc_get(m.addr, Some(b), LineState::Clean).ok(),
        None => None,
    };
    let dirty = iv.is_some_and(|iv| iv.state == LineState::Dirty);
    let r = Msg::new(mt::FETCHED, cx.node(), home)
        .lane(Lane::Reply)
        .addr(m.addr)
        .args([dirty as u64, 0, 0]);
    match (b, dirty) {
        (Some(b), true) => {
            let _ = cx.send(r, Some(b));
        }
        (b, _) => {
            if let Some(b) = b {
                let _ = cx.free_buffer(b);
            }
            let _ = cx.send(r, None);
        }
    }
}

/// At the home: the owner's line is in; memory takes it and the transfer
/// handler, if it waits, goes on.
fn fetched(cx: &mut C<'_>, m: &Msg) {
    let t = costs(cx).fetch_home;
    t.charge(cx, addr::SEND, addr::SEND);
    let line = m.addr;
    let owner = m.src;
    if m.args[0] == 1 {
        if let Some(b) = cx.take_msg_buffer() {
            match cx.mem_write(line, b) {
                Ok(t) => {
                    let _ = cx.free_buffer_after(b, t);
                }
                Err(_) => {
                    let _ = cx.free_buffer(b);
                }
            }
        }
        coherence::protocol::dir_store(
            cx,
            line,
            DirEntry {
                state: DirState::Shared(Sharers::one(owner)),
                pending: None,
            },
        );
    } else {
        // The owner no longer held it dirty (written back meanwhile): the
        // protocol's writeback has or will set the entry; drop the mark.
        let mut e = cx.state().coh.entry(line);
        e.pending = None;
        cx.state().coh.set_entry(line, e);
    }
    let me = cx.node();
    let o = &mut cx.state().out;
    o.fetching.retain(|l| *l != line);
    let collect = cx.state().params.strategy == super::Strategy::Collect;
    let o = &mut cx.state().out;
    if o.blocked && (!collect || o.fetching.is_empty()) {
        o.blocked = false;
        let _ = cx.reschedule(Msg::new(mt::STEP, me, me).addr(PAddr::new(Region::Message, me, 0)));
    }
}

pub(super) fn install(b: &mut MagicBuilder<XferNode>) {
    let h = b.handler("cmd-op", cmd_op);
    b.route_any(mt::CMD_OP, h);
    let h = b.handler("cmd-page", cmd_page);
    b.route_any(mt::CMD_PAGE, h);
    let h = b.handler("cmd-commit", cmd_commit);
    b.route_any(mt::CMD_COMMIT, h);
    let h = b.handler("xfer-setup", setup);
    b.route_any(mt::SETUP, h);
    let h = b.handler("xfer-space", space);
    b.route_any(mt::SPACE, h);
    // A component's handler is dispatched when its header is in (cut
    // through): it verifies and finds the line while the data streams in.
    let h = b.handler("xfer-component", component);
    b.route_any(mt::COMPONENT, h);
    let h = b.handler("xfer-cleanup", cleanup);
    b.route_any(mt::CLEANUP, h);
    let h = b.handler("xfer-retry", retry);
    b.route_any(mt::RETRY, h);
    let h = b.handler("os-notice", os_notice);
    b.route_any(mt::OS_NOTICE, h);
    let h = b.handler("os-translation", os_translation);
    b.route_any(mt::OS_TRANSLATION, h);
    let h = b.handler("xfer-fetch", fetch);
    b.route_any(mt::FETCH, h);
    let h = b.handler("xfer-fetched", fetched);
    b.route_any(mt::FETCHED, h);
}
