//! Active Messages on MAGIC: the same programs on the FLASH machine.
//!
//! The program runs on each node's compute processor. A request or reply
//! is a command sequence (one uncached write naming the operation, the
//! destination and the handler, one per argument word, then the committing
//! read); MAGIC's commit handler checks it, answers ACK and sends the
//! message; the destination's MAGIC runs the message's handler on its PP,
//! which delivers the message to the process: it appears in a queue in
//! memory, so a poll that finds nothing is one cache hit, and each message
//! taken is a read miss to MAGIC's local memory and the dispatch of the
//! user handler. A store is the bulk transfer: the sender's MAGIC sends the
//! block line by line from its memory through data buffers, rescheduling
//! itself through the software queue with the transfer handler's task
//! schedule for a clean line; the receiver's component handler writes each
//! line to memory, and the last one tells the process and acknowledges the
//! store to the sender's process.

use super::{Handler, Platform, Run, Step};
use crate::transfer::TransferCosts;
use magic::costs::Source;
use magic::{
    Cx, Cycles, Lane, MagicBuilder, MagicParams, Msg, MsgType, NodeId, NodeState, PAddr, ProcStep,
    Processor, Region, Time, LINE_BYTES,
};
use std::collections::VecDeque;

mod mt {
    use magic::MsgType;
    pub const CMD_WRITE: MsgType = MsgType(100);
    pub const CMD_COMMIT: MsgType = MsgType(101);
    pub const AM: MsgType = MsgType(102);
    pub const STORE_STEP: MsgType = MsgType(103);
    pub const LINE: MsgType = MsgType(104);
    // MAGIC -> processor.
    pub const ACK: MsgType = MsgType(105);
    pub const DELIVER: MsgType = MsgType(106);
}

magic::cost_sheet! {
    /// Costs of Active Messages on FLASH: on the compute processor (system
    /// cycles) and MAGIC's handlers (instructions, dual issue). The paper
    /// measures no Active Message layer on FLASH; these are the model's, of
    /// the size of the transfer's command handling.
    pub struct FlashCosts {
        /// Processor: a poll that finds the queue empty (a cache hit), cycles.
        poll_empty: u64 = 1, Source::Choice(
            "the queue head is in the processor's cache while nothing arrives.");
        /// Processor: dispatching the user handler of a message taken, cycles
        /// (the read miss on its queue entry comes on top: the coherence
        /// model's local clean miss, run on the platform's parameters).
        dispatch: u64 = 5, Source::Choice(
            "load the handler index from the entry, an indirect call.");
        /// MAGIC: one command write taken into the record.
        write: u32 = 6, Source::Choice(
            "as the transfer's command write (decode the address, store the data).");
        /// MAGIC: the committing read of a request or reply.
        commit: u32 = 16, Source::Choice(
            "as the user layer's commit: load, check, answer.");
        /// MAGIC: delivering an arrival to the process's queue in memory.
        deliver: u32 = 8, Source::Choice(
            "decode, find the queue's tail, issue the write, bump the tail.");
        /// MAGIC: storing one incoming line (besides the memory write).
        line_in: u32 = 12, Source::Choice(
            "decode, find the destination, issue the write, count the bytes.");
    }
}

/// The FLASH machine running Active Messages.
#[derive(Clone, Debug)]
pub struct Flash {
    pub nodes: u32,
    pub costs: FlashCosts,
    pub params: MagicParams,
}

impl Flash {
    pub fn new(nodes: u32) -> Flash {
        Flash {
            nodes,
            costs: FlashCosts::default(),
            params: MagicParams::default(),
        }
    }
}

/// A store under way at the sender's MAGIC.
#[derive(Clone, Copy, Debug)]
struct Outgoing {
    to: NodeId,
    bytes: u64,
    sent: u64,
}

/// One node: the program on its processor and MAGIC's AM state.
struct AmNode {
    id: NodeId,
    costs: FlashCosts,
    /// The processor's read miss on a queue entry MAGIC wrote (cycles).
    queue_miss: u64,
    program: Vec<Step>,
    pc: usize,
    resume_at: Option<Cycles>,
    /// Waiting for a command's ACK, or for messages.
    waiting_ack: bool,
    /// Messages delivered to the process and not yet taken: (from, handler).
    queue: VecDeque<(NodeId, u64)>,
    received: u64,
    marks: Vec<Time>,
    /// The open command (operation, destination, words, handler, bytes).
    cmd: [u64; 5],
    /// MAGIC: stores under way, and per source the bytes of the block coming in.
    stores: VecDeque<Outgoing>,
    incoming: Vec<(u64, u64)>,
    /// Processor time in each operation (system cycles).
    ops: std::collections::BTreeMap<&'static str, super::OpStats>,
}

const OP_REQUEST: u64 = 1;
const OP_REPLY: u64 = 2;
const OP_STORE: u64 = 3;
/// The handler word of a store's acknowledgement.
const STORE_ACK: u64 = 9;
/// Where the blocks live in memory.
const BLOCK_BASE: u64 = 0x40_0000;

impl AmNode {
    fn charge(&mut self, op: &'static str, c: u64) {
        let s = self.ops.entry(op).or_default();
        s.calls += 1;
        s.busy += Time::from_cycles(Cycles(c)).0;
        s.instructions += c;
    }

    fn next(&self) -> ProcStep {
        match self.resume_at {
            Some(t) if !self.waiting_ack => ProcStep::At(t),
            _ => ProcStep::Idle,
        }
    }

    /// Take every delivered message and run its handler; `true` if a
    /// handler issued a command (an echo replies), which the program then
    /// waits for.
    fn take_all(&mut self, p: &mut Processor<'_>, now: &mut Cycles) -> bool {
        while let Some((from, h)) = self.queue.pop_front() {
            let take = self.queue_miss + self.costs.dispatch;
            self.charge("receive", take);
            *now += Cycles(take);
            self.received += 1;
            if h == Handler::Echo as u64 {
                // The handler replies: a command sequence of its own.
                self.issue(p, OP_REPLY, from, 4, Handler::Nop as u64, 0);
                return true;
            }
        }
        false
    }

    /// Issue a command sequence (its writes, then the commit).
    fn issue(
        &mut self,
        p: &mut Processor<'_>,
        op: u64,
        to: NodeId,
        words: u8,
        handler: u64,
        bytes: u64,
    ) {
        let me = self.id;
        let name = match op {
            OP_REQUEST => "request",
            OP_REPLY => "reply",
            _ => "store",
        };
        let writes = 1 + words as u64 + u64::from(op == OP_STORE);
        self.charge(name, writes + 1);
        let w = |a: [u64; 3]| {
            Msg::new(mt::CMD_WRITE, me, me)
                .addr(PAddr::new(Region::Message, me, 0))
                .args(a)
        };
        p.request(w([0, op, to.0 as u64 | handler << 32]), None);
        p.request(w([1, words as u64, bytes]), None);
        p.request(
            Msg::new(mt::CMD_COMMIT, me, me).addr(PAddr::new(Region::Message, me, 0)),
            None,
        );
        self.waiting_ack = true;
    }
}

impl NodeState for AmNode {
    fn pending(&self) -> Option<String> {
        let left = self.program.len() - self.pc;
        (left > 0 || !self.stores.is_empty()).then(|| {
            format!(
                "program: {left} step(s) left, {} of its messages in; {} store(s) sending",
                self.received,
                self.stores.len()
            )
        })
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        let mut now = p.now();
        if self.waiting_ack || self.resume_at.is_none_or(|t| t > now) {
            return self.next();
        }
        self.resume_at = None;
        loop {
            let Some(&step) = self.program.get(self.pc) else {
                return ProcStep::Idle;
            };
            match step {
                Step::Mark => {
                    self.marks.push(Time::from_cycles(now));
                    self.pc += 1;
                }
                Step::Compute(d) => {
                    self.pc += 1;
                    self.resume_at =
                        Some(now + Cycles(d.0.div_ceil(magic::time::TICKS_PER_SYSTEM_CYCLE)));
                    return self.next();
                }
                Step::Request { to, words, handler } => {
                    self.pc += 1;
                    self.issue(p, OP_REQUEST, to, words, handler as u64, 0);
                    return ProcStep::Idle;
                }
                Step::Reply { to, words } => {
                    self.pc += 1;
                    self.issue(p, OP_REPLY, to, words, Handler::Nop as u64, 0);
                    return ProcStep::Idle;
                }
                Step::Store { to, bytes, .. } | Step::StoreShared { to, bytes, .. } => {
                    self.pc += 1;
                    self.issue(p, OP_STORE, to, 0, 0, bytes.max(1) as u64);
                    return ProcStep::Idle;
                }
                Step::Get { from, bytes } => {
                    // A request whose handler, at the owner's MAGIC, stores
                    // the block back without the owner's processor.
                    self.pc += 1;
                    self.issue(
                        p,
                        OP_REQUEST,
                        from,
                        1,
                        Handler::Get as u64,
                        bytes.max(1) as u64,
                    );
                    return ProcStep::Idle;
                }
                Step::Poll | Step::PollOnly { .. } => {
                    self.pc += 1;
                    self.charge("poll", self.costs.poll_empty);
                    now += Cycles(self.costs.poll_empty);
                    if self.take_all(p, &mut now) {
                        return ProcStep::Idle;
                    }
                    self.resume_at = Some(now);
                    return self.next();
                }
                Step::Wait { received } => {
                    let before = now;
                    if self.take_all(p, &mut now) {
                        return ProcStep::Idle;
                    }
                    if self.received >= received {
                        self.pc += 1;
                        if now > before {
                            // The program goes on once the handlers have
                            // run, not at the instant they began.
                            self.resume_at = Some(now);
                            return self.next();
                        }
                        continue;
                    }
                    // Nothing yet: the next delivery wakes the program.
                    return ProcStep::Idle;
                }
            }
        }
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        _data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        let now = p.now();
        match msg.mtype {
            mt::ACK => {
                self.waiting_ack = false;
                self.resume_at = Some(now + Cycles(1));
            }
            mt::DELIVER => {
                self.queue.push_back((msg.src, msg.args[0]));
                if !self.waiting_ack && self.resume_at.is_none() {
                    self.resume_at = Some(now + Cycles(1));
                }
            }
            _ => return None,
        }
        Some(self.next())
    }
}

type C<'a> = Cx<'a, AmNode>;
const RECORD: u64 = 0x7000_0000;

fn to_cpu(cx: &mut C<'_>, t: MsgType, from: NodeId, args: [u64; 3]) {
    let me = cx.node();
    let _ = cx.to_processor(Msg::new(t, from, me).args(args), None);
}

fn cmd_write(cx: &mut C<'_>, m: &Msg) {
    let c = cx.state().costs;
    cx.instr(c.write);
    cx.store(RECORD);
    let s = cx.state();
    match m.args[0] {
        0 => (s.cmd[0], s.cmd[1], s.cmd[3]) = (m.args[1], m.args[2] & 0xFFFF_FFFF, m.args[2] >> 32),
        _ => (s.cmd[2], s.cmd[4]) = (m.args[1], m.args[2]),
    }
}

/// The commit: check, answer, and send the message or start the store.
fn cmd_commit(cx: &mut C<'_>, _m: &Msg) {
    let c = cx.state().costs;
    cx.instr(c.commit);
    cx.load(RECORD);
    let [op, to, words, handler, bytes] = cx.state().cmd;
    let me = cx.node();
    let to = NodeId(to as u32);
    to_cpu(cx, mt::ACK, me, [0; 3]);
    match op {
        OP_REQUEST | OP_REPLY => {
            let lane = if op == OP_REQUEST {
                Lane::Request
            } else {
                Lane::Reply
            };
            let m = Msg::new(mt::AM, me, to)
                .lane(lane)
                .addr(PAddr::new(Region::Message, to, 0))
                .args([handler, words, bytes])
                .len((8 * words) as u16);
            let _ = cx.send(m, None);
        }
        _ => {
            let s = cx.state();
            s.stores.push_back(Outgoing { to, bytes, sent: 0 });
            if s.stores.len() == 1 {
                let _ = cx.reschedule(Msg::new(mt::STORE_STEP, me, me).addr(PAddr::new(
                    Region::Message,
                    me,
                    0,
                )));
            }
        }
    }
}

/// An active message arrives: its handler hands it to the process.
fn am(cx: &mut C<'_>, m: &Msg) {
    let c = cx.state().costs;
    cx.instr(c.deliver);
    if m.args[0] == Handler::Get as u64 {
        // A get: this MAGIC stores the block back to the requester.
        let me = cx.node();
        let s = cx.state();
        s.stores.push_back(Outgoing {
            to: m.src,
            bytes: m.args[2].max(1),
            sent: 0,
        });
        if s.stores.len() == 1 {
            let _ = cx.reschedule(Msg::new(mt::STORE_STEP, me, me).addr(PAddr::new(
                Region::Message,
                me,
                0,
            )));
        }
        return;
    }
    to_cpu(cx, mt::DELIVER, m.src, [m.args[0], 0, 0]);
}

/// One line of the store at the head of the queue, with the transfer
/// handler's clean-line schedule.
fn store_step(cx: &mut C<'_>, _m: &Msg) {
    let Some(o) = cx.state().stores.front().copied() else {
        return;
    };
    let me = cx.node();
    let again = |cx: &mut C<'_>| {
        let _ = cx.reschedule(Msg::new(mt::STORE_STEP, me, me).addr(PAddr::new(
            Region::Message,
            me,
            0,
        )));
    };
    let Some(buf) = cx.alloc_buffer() else {
        return again(cx);
    };
    // The transfer handler's clean-line schedule, one line an invocation.
    let k = TransferCosts::default();
    for t in [k.send_init, k.send_directory] {
        t.charge(cx, RECORD + 64, RECORD + 64);
    }
    let line = PAddr::new(
        Region::Normal,
        me,
        BLOCK_BASE + (o.sent / LINE_BYTES as u64 % 4096) * LINE_BYTES as u64,
    );
    k.send_read.charge(cx, RECORD + 64, RECORD + 64);
    let _ = cx.mem_read(line, buf);
    for t in [
        k.send_header_clean,
        k.send_update_state,
        k.send_component,
        k.send_reschedule,
    ] {
        t.charge(cx, RECORD + 64, RECORD + 64);
    }
    let n = (o.bytes - o.sent).min(LINE_BYTES as u64);
    let m = Msg::new(mt::LINE, me, o.to)
        .lane(Lane::Request)
        .addr(PAddr::new(Region::Message, o.to, 0))
        .args([o.sent, o.bytes, n])
        .len(n as u16);
    let _ = cx.send(m, Some(buf));
    let s = cx.state();
    let f = s.stores.front_mut().expect("a store");
    f.sent += n;
    if f.sent >= f.bytes {
        s.stores.pop_front();
    }
    if !cx.state().stores.is_empty() {
        again(cx);
    }
}

/// A line of a store arrives: into memory; the last one tells the process
/// and acknowledges the store to its sender.
fn line_in(cx: &mut C<'_>, m: &Msg) {
    let c = cx.state().costs;
    cx.instr(c.line_in);
    cx.load(RECORD + 128);
    let (off, total, n) = (m.args[0], m.args[1], m.args[2]);
    let me = cx.node();
    if let Some(b) = cx.take_msg_buffer() {
        let line = PAddr::new(
            Region::Normal,
            me,
            BLOCK_BASE + (off / LINE_BYTES as u64 % 4096) * LINE_BYTES as u64,
        );
        match cx.mem_write(line, b) {
            Ok(t) => {
                let _ = cx.free_buffer_after(b, t);
            }
            Err(_) => {
                let _ = cx.free_buffer(b);
            }
        }
    }
    let src = m.src.0 as usize;
    let s = cx.state();
    let inc = &mut s.incoming[src];
    inc.0 += n;
    inc.1 = total;
    if inc.0 >= inc.1 {
        *inc = (0, 0);
        to_cpu(cx, mt::DELIVER, m.src, [Handler::Nop as u64, 0, 0]);
        let ack = Msg::new(mt::AM, me, m.src)
            .lane(Lane::Reply)
            .addr(PAddr::new(Region::Message, m.src, 0))
            .args([STORE_ACK, 0, 0]);
        let _ = cx.send(ack, None);
    }
}

fn install(b: &mut MagicBuilder<AmNode>) {
    let h = b.handler("am-cmd-write", cmd_write);
    b.route_any(mt::CMD_WRITE, h);
    let h = b.handler("am-commit", cmd_commit);
    b.route_any(mt::CMD_COMMIT, h);
    let h = b.handler("am-deliver", am);
    b.route_any(mt::AM, h);
    let h = b.handler("am-store", store_step);
    b.route_any(mt::STORE_STEP, h);
    let h = b.handler("am-line-in", line_in);
    b.route_any_with(
        mt::LINE,
        h,
        magic::Dispatch {
            whole_packet: true,
            ..magic::Dispatch::default()
        },
    );
}

impl Platform for Flash {
    fn name(&self) -> &'static str {
        "flash"
    }

    fn nodes(&self) -> u32 {
        self.nodes
    }

    fn run(&self, programs: &[Vec<Step>]) -> Result<Run, String> {
        super::check_programs(self.nodes, programs)?;
        let mut b = MagicBuilder::new(self.params.clone(), self.nodes);
        install(&mut b);
        let nodes = self.nodes;
        // A message MAGIC put in the process's queue is a local clean miss
        // for the processor: as long as the coherence model says it takes.
        let queue_miss = coherence::miss::run(
            coherence::miss::Case::LocalClean,
            self.params.clone(),
            coherence::CohParams::default(),
        )?
        .latency
        .0;
        let mut m = b.build(|n| AmNode {
            id: n,
            costs: self.costs,
            queue_miss,
            program: programs[n.0 as usize].clone(),
            pc: 0,
            resume_at: Some(Cycles(0)),
            waiting_ack: false,
            queue: VecDeque::new(),
            received: 0,
            marks: Vec::new(),
            cmd: [0; 5],
            stores: VecDeque::new(),
            incoming: vec![(0, 0); nodes as usize],
            ops: Default::default(),
        })?;
        for n in 0..nodes {
            m.start_processor(NodeId(n), Cycles(0))?;
        }
        let rep = m.run();
        if !rep.is_clean() {
            return Err(format!("stuck: {}", rep.stuck.join("; ")));
        }
        let mut run = Run {
            end: Time::from_cycles(m.now()),
            ..Run::default()
        };
        for (i, s) in m.states().iter().enumerate() {
            run.marks.push(s.marks.clone());
            run.received.push(s.received);
            for (op, st) in &s.ops {
                run.ops.insert((i as u32, op), *st);
            }
        }
        Ok(run)
    }
}
