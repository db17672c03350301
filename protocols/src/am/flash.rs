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
use crate::command::CommandCosts;
use crate::transfer::TransferCosts;
use crate::Error;
use magic::costs::Source;
use magic::message::Word;
use magic::{
    Cx, Cycles, Install, Magic, MagicParams, Msg, NodeId, NodeState, PAddr, ProcStep, Processor,
    Protocol, Region, Time, LINE_BYTES,
};
use std::collections::VecDeque;

/// What a command sequence asks MAGIC to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AmOp {
    /// Send a request.
    #[default]
    Request,
    /// Send a reply.
    Reply,
    /// Store a block into the destination's memory.
    Store,
}

impl Word for AmOp {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Self> {
        [AmOp::Request, AmOp::Reply, AmOp::Store]
            .get(usize::try_from(w).ok()?)
            .copied()
    }
}

magic::messages! {
    /// Active Messages on MAGIC: the command sequence from the processor,
    /// the messages between MAGICs, and what MAGIC hands the processor.
    pub enum AmMsg: AmKind {
        /// Processor to MAGIC, the command's first write: the operation,
        /// the destination and the handler the message names.
        CmdOp {
            /// What to do.
            op: AmOp,
            /// The destination node.
            to: NodeId,
            /// The handler the message names.
            handler: Handler,
        },
        /// Processor to MAGIC, the command's second write: the argument
        /// words and the bytes of a block.
        CmdSize {
            /// Argument words (0 to 4).
            words: u8,
            /// The block's size (bytes; a get's size for a request).
            bytes: u64,
        },
        /// Processor to MAGIC: the committing read.
        Commit,
        /// A request between MAGICs, with its argument words (a get's
        /// block size in `bytes`).
        Request {
            /// The handler the request runs.
            handler: Handler,
            /// Argument words (0 to 4).
            words: u8,
            /// A get's block size (bytes).
            bytes: u64,
        },
        /// A reply between MAGICs.
        Reply {
            /// The handler the reply runs.
            handler: Handler,
            /// Argument words (0 to 4).
            words: u8,
            /// A get's block size (bytes), as in a request.
            bytes: u64,
        } => Reply,
        /// The receiver's MAGIC acknowledges a store to its sender.
        StoreAck => Reply,
        /// The sender's MAGIC sends the next line of its stores (through
        /// its software queue).
        StoreStep,
        /// A line of a store: where it goes in the block, the block's size,
        /// and the bytes this line carries.
        Line {
            /// Where the line goes in the block (bytes from its start).
            offset: u64,
            /// The block's size (bytes).
            total: u64,
            /// The bytes this line carries.
            bytes: u64,
        },
        /// MAGIC to the processor: the command was taken.
        Ack,
        /// MAGIC to the processor: a message from `from` is in the queue;
        /// `handler` is the user handler it runs.
        Deliver {
            /// The node the message came from.
            from: NodeId,
            /// The user handler it runs.
            handler: Handler,
        },
    }
}

magic::cost_sheet! {
    /// Costs of Active Messages on FLASH: on the compute processor (system
    /// cycles) and MAGIC's handlers (instructions, dual issue). The paper
    /// measures no Active Message layer on FLASH; these are the model's, of
    /// the size of the transfer's command handling.
    pub struct FlashCosts in "costs.am" {
        /// Processor: a poll that finds the queue empty (a cache hit), cycles.
        poll_empty: u64 = 1, Source::Choice(
            "the queue head is in the processor's cache while nothing arrives.");
        /// Processor: dispatching the user handler of a message taken, cycles
        /// (the read miss on its queue entry comes on top: the coherence
        /// model's local clean miss, run on the platform's parameters).
        dispatch: u64 = 5, Source::Choice(
            "load the handler index from the entry, an indirect call.");
        /// MAGIC: delivering an arrival to the process's queue in memory.
        deliver: u32 = 8, Source::Choice(
            "decode, find the queue's tail, issue the write, bump the tail.");
        /// MAGIC: storing one incoming line (besides the memory write).
        line_in: u32 = 12, Source::Choice(
            "decode, find the destination, issue the write, count the bytes."),
            from 1: "its load of the store's record is one of its instructions";
    }
}

/// The FLASH machine running Active Messages.
#[derive(Clone, Debug)]
pub struct Flash {
    /// Nodes in the machine.
    pub nodes: u32,
    /// The layer's cost sheet.
    pub costs: FlashCosts,
    /// The command interface's sheet (the command write), shared with the
    /// user layer and the transfer.
    pub command: CommandCosts,
    /// The machine's parameters.
    pub params: MagicParams,
}

impl Flash {
    /// FLASH's machine of `nodes` nodes, with the layer's default costs.
    pub fn new(nodes: u32) -> Flash {
        Flash {
            nodes,
            costs: FlashCosts::default(),
            command: CommandCosts::default(),
            params: MagicParams::default(),
        }
    }

    /// FLASH's machine of `nodes` nodes with the layer's costs `costs`, the
    /// command interface's `command` and the machine's parameters `params`;
    /// an error names the first value out of range.
    pub fn with(
        nodes: u32,
        costs: FlashCosts,
        command: CommandCosts,
        params: MagicParams,
    ) -> Result<Flash, Error> {
        let f = Flash {
            nodes,
            costs,
            command,
            params,
        };
        f.validate()?;
        Ok(f)
    }

    /// The configuration is one the machine can run: 1 to [`MAX_NODES`]
    /// nodes (as many as MAGIC's addresses name), machine parameters MAGIC
    /// takes, every cost at most [`MAX_COST`](super::MAX_COST) (named as its scenario key,
    /// `costs.am.dispatch`).
    pub fn validate(&self) -> Result<(), Error> {
        use magic::costs::Sheet;
        super::Machines::Flash.check(self.nodes, 1)?;
        self.params.validate()?;
        if self.params.mem_bytes < MEMORY {
            let allowed = format!("at least {MEMORY} for the stores' lines");
            return Err(magic::OutOfRange::new("mem_bytes", allowed, self.params.mem_bytes).into());
        }
        self.costs.validate_on(self.params.pp_issue_width)?;
        Ok(self.command.validate_on(self.params.pp_issue_width)?)
    }
}

/// The most nodes FLASH's machine has: as many as MAGIC's addresses name.
pub const MAX_NODES: u32 = super::Machines::Flash.max_nodes();

/// Active Messages on MAGIC as a protocol unit: the layer's handlers, and
/// on each node the program its processor runs.
#[derive(Clone, Copy, Debug)]
pub struct FlashAm<'a> {
    /// The layer's cost sheet.
    pub costs: FlashCosts,
    /// The command interface's sheet.
    pub command: CommandCosts,
    /// The processor's read miss on a queue entry MAGIC wrote (cycles).
    pub queue_miss: u64,
    /// Node `i` runs `programs[i]` (a node beyond the list runs nothing).
    pub programs: &'a [Vec<Step>],
}

impl Protocol for FlashAm<'_> {
    type Node = AmNode;

    fn name(&self) -> &'static str {
        "am"
    }

    fn node(&self, n: NodeId, _nodes: u32) -> AmNode {
        AmNode {
            id: n,
            costs: self.costs,
            command: self.command,
            queue_miss: self.queue_miss,
            program: self.programs.get(n.index()).cloned().unwrap_or_default(),
            pc: 0,
            resume_at: Some(Cycles(0)),
            waiting_ack: false,
            reply_to: None,
            queue: VecDeque::new(),
            received: 0,
            marks: Vec::new(),
            cmd: Command::default(),
            stores: VecDeque::new(),
            incoming: Vec::new(),
            ops: Default::default(),
        }
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, AmNode>) {
        // `cmd_write` takes both command writes, `deliver` every arrival
        // that runs a user handler: handlers of every kind, routed by kind.
        let h = b.handler_of_all("cmd_write", cmd_write);
        b.route_kind_any(AmKind::CmdOp, h)
            .route_kind_any(AmKind::CmdSize, h);
        let h = b.handler("cmd_commit", cmd_commit);
        b.route_any(h);
        let h = b.handler_of_all("deliver", deliver);
        b.route_kind_any(AmKind::Request, h)
            .route_kind_any(AmKind::Reply, h)
            .route_kind_any(AmKind::StoreAck, h);
        let h = b.handler("store_step", store_step);
        b.route_any(h);
        let h = b.handler("line_in", line_in);
        b.route_any_with(
            h,
            magic::Dispatch {
                whole_packet: true,
                ..magic::Dispatch::default()
            },
        );
    }
}

/// A store under way at the sender's MAGIC.
#[derive(Clone, Copy, Debug)]
struct Outgoing {
    to: NodeId,
    bytes: u64,
    sent: u64,
}

/// The command a processor is writing, as MAGIC's record holds it.
#[derive(Clone, Copy, Debug, Default)]
struct Command {
    op: AmOp,
    to: NodeId,
    words: u8,
    handler: Handler,
    bytes: u64,
}

/// One node: the program on its processor and MAGIC's AM state.
#[derive(Debug)]
pub struct AmNode {
    id: NodeId,
    costs: FlashCosts,
    command: CommandCosts,
    /// The processor's read miss on a queue entry MAGIC wrote (cycles).
    queue_miss: u64,
    program: Vec<Step>,
    pc: usize,
    resume_at: Option<Cycles>,
    /// Waiting for a command's ACK, or for messages.
    waiting_ack: bool,
    /// An echo's handler has run and replies to this node once its
    /// receive's cost has passed (the reply's command is written then).
    reply_to: Option<NodeId>,
    /// Messages delivered to the process and not yet taken: (from, handler).
    queue: VecDeque<(NodeId, Handler)>,
    received: u64,
    marks: Vec<Time>,
    /// The open command.
    cmd: Command,
    /// MAGIC: stores under way, and per source the bytes of the block coming in.
    stores: VecDeque<Outgoing>,
    /// (source, bytes in, block bytes) of each block coming in: only the
    /// sources storing to this node now, so a node's state does not grow
    /// with the machine.
    incoming: Vec<(NodeId, u64, u64)>,
    /// Processor time in each operation (system cycles).
    ops: std::collections::BTreeMap<&'static str, super::OpStats>,
}

/// Where the blocks live in memory.
const BLOCK_BASE: u64 = 0x40_0000;

/// Bytes of node memory the layer needs: a store's lines cycle through
/// 4096 lines from 4 MB.
pub const MEMORY: u64 = BLOCK_BASE + 4096 * LINE_BYTES as u64;

impl AmNode {
    /// Messages whose handlers this node's program ran.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The times of the program's `Mark` steps.
    pub fn marks(&self) -> &[Time] {
        &self.marks
    }

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

    /// Take every delivered message and run its handler, `now` moving on
    /// by each one's cost; `true` if a handler is to reply (an echo), which
    /// the program does once the receive is over (see
    /// [`AmNode::processor_step`]) and then waits for.
    fn take_all(&mut self, now: &mut Cycles) -> bool {
        while let Some((from, h)) = self.queue.pop_front() {
            let take = self.queue_miss + self.costs.dispatch;
            self.charge("receive", take);
            *now += Cycles(take);
            self.received += 1;
            if h == Handler::Echo {
                self.reply_to = Some(from);
                return true;
            }
        }
        false
    }

    /// Go on at `now`: the processor is busy until then (its receives'
    /// cost), and takes up its program, or an echo's reply, there.
    fn resume(&mut self, now: Cycles) -> ProcStep {
        self.resume_at = Some(now);
        self.next()
    }

    /// Issue a command sequence (its writes, then the commit).
    fn issue(
        &mut self,
        p: &mut Processor<'_>,
        op: AmOp,
        to: NodeId,
        words: u8,
        handler: Handler,
        bytes: u64,
    ) {
        let name = match op {
            AmOp::Request => "request",
            AmOp::Reply => "reply",
            AmOp::Store => "store",
        };
        let writes = 1 + words as u64 + u64::from(op == AmOp::Store);
        self.charge(name, writes + 1);
        let record = PAddr::new(Region::Message, self.id, 0);
        for m in [
            AmMsg::CmdOp { op, to, handler },
            AmMsg::CmdSize { words, bytes },
            AmMsg::Commit,
        ] {
            let m = p.msg(m).addr(record);
            p.request(m, None);
        }
        self.waiting_ack = true;
    }
}

impl NodeState for AmNode {
    fn pending(&self) -> Option<String> {
        let left = self.program.len() - self.pc;
        let reply = if self.reply_to.is_some() {
            "; an echo's reply not written"
        } else {
            ""
        };
        (left > 0 || !self.stores.is_empty() || self.reply_to.is_some()).then(|| {
            format!(
                "program: {left} step(s) left, {} of its messages in; {} store(s) sending{reply}",
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
        if let Some(to) = self.reply_to.take() {
            // The echo's handler replies: a command sequence of its own,
            // written once the handler's receive is over.
            self.issue(p, AmOp::Reply, to, 4, Handler::Nop, 0);
            return ProcStep::Idle;
        }
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
                    self.issue(p, AmOp::Request, to, words, handler, 0);
                    return ProcStep::Idle;
                }
                Step::Reply { to, words } => {
                    self.pc += 1;
                    self.issue(p, AmOp::Reply, to, words, Handler::Nop, 0);
                    return ProcStep::Idle;
                }
                Step::Store { to, bytes, .. } | Step::StoreShared { to, bytes, .. } => {
                    self.pc += 1;
                    self.issue(p, AmOp::Store, to, 0, Handler::Nop, bytes.max(1) as u64);
                    return ProcStep::Idle;
                }
                Step::Get { from, bytes } => {
                    // A request whose handler, at the owner's MAGIC, stores
                    // the block back without the owner's processor.
                    self.pc += 1;
                    self.issue(p, AmOp::Request, from, 1, Handler::Get, bytes.max(1) as u64);
                    return ProcStep::Idle;
                }
                Step::Poll | Step::PollOnly { .. } => {
                    self.pc += 1;
                    self.charge("poll", self.costs.poll_empty);
                    now += Cycles(self.costs.poll_empty);
                    self.take_all(&mut now);
                    return self.resume(now);
                }
                Step::Wait { received } => {
                    let before = now;
                    let replying = self.take_all(&mut now);
                    if !replying && self.received >= received {
                        self.pc += 1;
                    }
                    if replying || now > before {
                        // The program (or the reply, or the next look for
                        // messages) goes on once the handlers have run, not
                        // at the instant they began.
                        return self.resume(now);
                    }
                    if self.received >= received {
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
        match p.decode::<AmMsg>(msg).ok()? {
            AmMsg::Ack => {
                self.waiting_ack = false;
                self.resume_at = Some(now + Cycles(1));
            }
            AmMsg::Deliver { from, handler } => {
                self.queue.push_back((from, handler));
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

/// Hand the processor a message.
fn to_cpu(cx: &mut C<'_>, m: AmMsg) {
    let _ = cx.to_processor(cx.msg(m), None);
}

/// Start sending the stores queued if none was under way.
fn start_stores(cx: &mut C<'_>) {
    if cx.state().stores.len() == 1 {
        store_again(cx);
    }
}

/// Send the next line of the stores later, through the software queue.
fn store_again(cx: &mut C<'_>) {
    let me = cx.node();
    let m = cx
        .msg(AmMsg::StoreStep)
        .addr(PAddr::new(Region::Message, me, 0));
    let _ = cx.reschedule(m);
}

/// A command write (the operation's or the size's): into the record.
fn cmd_write(cx: &mut C<'_>, _m: &Msg, msg: AmMsg) {
    let c = cx.state().command;
    cx.instr(c.write);
    cx.store(RECORD);
    let cmd = &mut cx.state().cmd;
    match msg {
        AmMsg::CmdOp { op, to, handler } => (cmd.op, cmd.to, cmd.handler) = (op, to, handler),
        AmMsg::CmdSize { words, bytes } => (cmd.words, cmd.bytes) = (words, bytes),
        _ => {}
    }
}

/// The commit: check, answer, and send the message or start the store.
fn cmd_commit(cx: &mut C<'_>, _m: &Msg, _msg: am_msg::Commit) {
    let c = cx.state().command;
    cx.instr(c.commit);
    cx.load(RECORD);
    let Command {
        op,
        to,
        words,
        handler,
        bytes,
    } = cx.state().cmd;
    to_cpu(cx, AmMsg::Ack);
    let am = match op {
        AmOp::Request => AmMsg::Request {
            handler,
            words,
            bytes,
        },
        AmOp::Reply => AmMsg::Reply {
            handler,
            words,
            bytes,
        },
        AmOp::Store => {
            cx.state().stores.push_back(Outgoing { to, bytes, sent: 0 });
            return start_stores(cx);
        }
    };
    let m = cx
        .msg(am)
        .to(to)
        .addr(PAddr::new(Region::Message, to, 0))
        .len(8 * u16::from(words));
    let _ = cx.send(m, None);
}

/// An active message arrives: its handler hands it to the process (a get's
/// stores the block back to the requester instead).
fn deliver(cx: &mut C<'_>, m: &Msg, msg: AmMsg) {
    let c = cx.state().costs;
    cx.instr(c.deliver);
    let handler = match msg {
        AmMsg::Request { handler, bytes, .. } | AmMsg::Reply { handler, bytes, .. } => {
            if handler == Handler::Get {
                let to = m.src;
                cx.state().stores.push_back(Outgoing {
                    to,
                    bytes: bytes.max(1),
                    sent: 0,
                });
                return start_stores(cx);
            }
            handler
        }
        // A store's acknowledgement runs no user handler.
        _ => Handler::Nop,
    };
    to_cpu(
        cx,
        AmMsg::Deliver {
            from: m.src,
            handler,
        },
    );
}

/// One line of the store at the head of the queue, with the transfer
/// handler's clean-line schedule.
fn store_step(cx: &mut C<'_>, _m: &Msg, _msg: am_msg::StoreStep) {
    let Some(o) = cx.state().stores.front().copied() else {
        return;
    };
    let me = cx.node();
    let Some(buf) = cx.alloc_buffer() else {
        return store_again(cx);
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
    let m = cx
        .msg(AmMsg::Line {
            offset: o.sent,
            total: o.bytes,
            bytes: n,
        })
        .to(o.to)
        .addr(PAddr::new(Region::Message, o.to, 0))
        .len(n as u16);
    let _ = cx.send(m, Some(buf));
    let s = cx.state();
    if let Some(f) = s.stores.front_mut() {
        f.sent += n;
        if f.sent >= f.bytes {
            s.stores.pop_front();
        }
    }
    if !cx.state().stores.is_empty() {
        store_again(cx);
    }
}

/// A line of a store arrives: into memory; the last one tells the process
/// and acknowledges the store to its sender.
fn line_in(cx: &mut C<'_>, m: &Msg, msg: am_msg::Line) {
    let c = cx.state().costs;
    cx.instr(c.line_in);
    cx.load(RECORD + 128);
    let am_msg::Line {
        offset,
        total,
        bytes,
    } = msg;
    let me = cx.node();
    if let Some(b) = cx.take_msg_buffer() {
        let line = PAddr::new(
            Region::Normal,
            me,
            BLOCK_BASE + (offset / LINE_BYTES as u64 % 4096) * LINE_BYTES as u64,
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
    let s = cx.state();
    let i = match s.incoming.iter().position(|x| x.0 == m.src) {
        Some(i) => i,
        None => {
            s.incoming.push((m.src, 0, 0));
            s.incoming.len() - 1
        }
    };
    let inc = &mut s.incoming[i];
    // Bytes a message of no more than `total` carries: a forged count
    // stops at the most, which delivers it.
    inc.1 = inc.1.saturating_add(bytes);
    inc.2 = total;
    if inc.1 >= inc.2 {
        s.incoming.swap_remove(i);
        to_cpu(
            cx,
            AmMsg::Deliver {
                from: m.src,
                handler: Handler::Nop,
            },
        );
        let ack = cx
            .msg(AmMsg::StoreAck)
            .to(m.src)
            .addr(PAddr::new(Region::Message, m.src, 0));
        let _ = cx.send(ack, None);
    }
}

impl Platform for Flash {
    fn machine(&self) -> super::Machines {
        super::Machines::Flash
    }

    fn name(&self) -> &'static str {
        "flash"
    }

    fn nodes(&self) -> u32 {
        self.nodes
    }

    fn check(&self) -> Result<(), Error> {
        self.validate()
    }

    fn run(&self, programs: &[Vec<Step>]) -> Result<Run, Error> {
        self.validate()?;
        super::check_programs(self.nodes, programs)?;
        let nodes = self.nodes;
        // A message MAGIC put in the process's queue is a local clean miss
        // for the processor: as long as the coherence model says it takes.
        let queue_miss = coherence::miss::run(
            coherence::miss::Case::LocalClean,
            self.params.clone(),
            coherence::CohParams::default(),
        )
        .map_err(Error::Coherence)?
        .latency
        .0;
        let am = FlashAm {
            costs: self.costs,
            command: self.command,
            queue_miss,
            programs,
        };
        let mut m = Magic::with(self.params.clone(), nodes, &am)?;
        for n in 0..nodes {
            m.start_processor(NodeId(n), Cycles(0))
                .map_err(|e| Error::Incomplete(e.to_string()))?;
        }
        let rep = m.run();
        if !rep.is_clean() {
            return Err(Error::unclean("the run is not clean", &rep));
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
