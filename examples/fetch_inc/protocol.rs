// A remote fetch-and-increment on MAGIC, written as a protocol of its own
// (its messages, its handlers, its node state) against the public API only,
// as a crate that depends on `flashkit` would: the example's main runs it,
// the guide (docs/handlers.md) checks it in every order, and the kit's
// tests snapshot its occupancy.

use flashkit::magic::{
    messages, Cx, Cycles, Install, Magic, MagicParams, Msg, NodeId, NodeState, PAddr, ProcStep,
    Processor, Protocol, Region, LINE_BYTES,
};
use flashkit::protocols::transfer::{self, Config, Measured, XferNode};

/// A fetch-and-increment handler's context.
type C<'a> = Cx<'a, FincNode>;

messages! {
    /// The fetch-and-increment's messages.
    pub enum FincMsg: FincKind {
        /// Processor to its MAGIC: increment the word at the message's address.
        Ask,
        /// The requester's MAGIC to the word's home.
        Inc,
        /// The home to the requester: the old value, or a refusal (`ok`
        /// false: no data buffer was free, or the address is not the home's).
        Old { value: u64, ok: bool } => Reply,
        /// MAGIC to its processor: the answer.
        Done { value: u64, ok: bool },
    }
}

/// Decode the request and form the header (instructions; a model choice).
pub const FORWARD: u32 = 4;
/// Decode and check the address at the home.
pub const CHECK: u32 = 6;
/// Add one, merge the word into the line, issue the write.
pub const UPDATE: u32 = 3;
/// Hand the answer to the processor.
pub const ANSWER: u32 = 3;

/// The counter: a word in node 1's memory, away from the transfer's buffers.
pub fn counter() -> PAddr {
    PAddr::new(Region::Normal, NodeId(1), 0x30_0000)
}

/// At the requester's MAGIC: forward the request to the word's home.
pub fn request(cx: &mut C<'_>, m: &Msg, _: finc_msg::Ask) {
    cx.instr(FORWARD);
    let home = m.addr.node();
    let inc = cx.msg(FincMsg::Inc).to(home).addr(m.addr);
    let _ = cx.send(inc, None);
}

/// At the home: read the line into a data buffer, add one to the word,
/// write the line back, and reply with the old value. With no buffer free,
/// refuse (the requester's processor would ask again).
pub fn increment(cx: &mut C<'_>, m: &Msg, _: finc_msg::Inc) {
    cx.instr(CHECK);
    let reply = |cx: &mut C<'_>, value: u64, ok: bool| {
        let old = cx.msg(FincMsg::Old { value, ok }).to(m.src).addr(m.addr);
        let _ = cx.send(old, None);
    };
    let Some(b) = cx.alloc_buffer() else {
        return reply(cx, 0, false);
    };
    let Ok(t) = cx.mem_read(m.addr, b) else {
        let _ = cx.free_buffer(b);
        return reply(cx, 0, false);
    };
    cx.wait(t); // the word is needed: stall for memory
    let at = (m.addr.offset() % LINE_BYTES as u64 / 8 * 8) as usize;
    let mut old = None;
    if let Some(word) = cx.buffer_mut(b).and_then(|l| l.get_mut(at..at + 8)) {
        let mut v = [0; 8];
        v.copy_from_slice(word);
        let value = u64::from_le_bytes(v);
        word.copy_from_slice(&value.wrapping_add(1).to_le_bytes());
        old = Some(value);
    }
    cx.instr(UPDATE);
    match cx.mem_write(m.addr, b) {
        Ok(w) => {
            let _ = cx.free_buffer_after(b, w);
        }
        Err(_) => {
            let _ = cx.free_buffer(b);
        }
    }
    reply(cx, old.unwrap_or(0), old.is_some());
}

/// Back at the requester's MAGIC: hand the old value to the processor.
pub fn reply(cx: &mut C<'_>, _m: &Msg, finc_msg::Old { value, ok }: finc_msg::Old) {
    cx.instr(ANSWER);
    let _ = cx.to_processor(cx.msg(finc_msg::Done { value, ok }), None);
}

/// The protocol: one processor asks for `count` fetch-and-increments of
/// the counter, one every `every` cycles.
#[derive(Clone, Copy, Debug)]
pub struct Finc {
    /// The node whose processor asks.
    pub requester: NodeId,
    /// How many times it asks.
    pub count: u64,
    /// Cycles between two asks.
    pub every: Cycles,
}

/// A node's part: the processor's program and the answers it got.
#[derive(Clone, Debug, Default)]
pub struct FincNode {
    /// Asks still to make.
    left: u64,
    every: Cycles,
    /// When the next ask is due (a protocol beside this one may step the
    /// processor sooner).
    next: Cycles,
    asked: u64,
    /// The answers, in order: (cycle, old value, whether it was done).
    pub answers: Vec<(Cycles, u64, bool)>,
}

impl NodeState for FincNode {
    fn pending(&self) -> Option<String> {
        let open = self.asked.saturating_sub(self.answers.len() as u64);
        (open > 0).then(|| format!("{open} fetch-and-increment(s) unanswered"))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        if self.left == 0 {
            return ProcStep::Idle;
        }
        if p.now() < self.next {
            return ProcStep::At(self.next);
        }
        let ask = p.msg(FincMsg::Ask).addr(counter());
        p.request(ask, None);
        self.left -= 1;
        self.asked += 1;
        self.next = p.now() + self.every;
        if self.left > 0 {
            ProcStep::At(self.next)
        } else {
            ProcStep::Idle
        }
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        _data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        let FincMsg::Done { value, ok } = p.decode(msg).ok()? else {
            return None;
        };
        self.answers.push((p.now(), value, ok));
        // The program already has its next step scheduled.
        Some(ProcStep::Idle)
    }
}

impl Protocol for Finc {
    type Node = FincNode;

    fn name(&self) -> &'static str {
        "finc"
    }

    fn node(&self, n: NodeId, _nodes: u32) -> FincNode {
        FincNode {
            left: if n == self.requester { self.count } else { 0 },
            every: self.every,
            ..FincNode::default()
        }
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, FincNode>) {
        let h = b.handler("request", request);
        b.route_any(h);
        let h = b.handler("increment", increment);
        b.route_any(h);
        let h = b.handler("reply", reply);
        b.route_any(h);
    }
}

/// `n` fetch-and-increments from node 0's processor, one every 100 cycles,
/// on a quiet machine of two nodes running the protocol alone.
pub fn run_alone(n: u64) -> Result<Magic<FincNode>, String> {
    let finc = Finc {
        requester: NodeId(0),
        count: n,
        every: Cycles(100),
    };
    let mut m = Magic::with(MagicParams::default(), 2, &finc)?;
    m.start_processor(NodeId(0), Cycles(0))?;
    let report = m.run();
    if !report.is_clean() {
        return Err(format!(
            "the run did not complete: {}",
            report.problems().join("; ")
        ));
    }
    Ok(m)
}

/// The default transfer with `n` fetch-and-increments handed to node 0's
/// MAGIC, one every 100 cycles from the transfer's start.
pub fn run_beside_transfer(n: u64) -> Result<Measured<(XferNode, FincNode)>, String> {
    // Its processor program asks for nothing: the requests are handed to
    // MAGIC directly, from the measured transfer's start.
    let finc = Finc {
        requester: NodeId(0),
        count: 0,
        every: Cycles(100),
    };
    transfer::run_beside(&Config::default(), &finc, |m, at| {
        for i in 0..n {
            let ask = m.msg(NodeId(0), FincMsg::Ask).addr(counter());
            m.post(NodeId(0), at + Cycles(100 * i), ask)?;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())
}

/// The counter's value after a run (memory at its home, node 1; nothing
/// caches it); an error on a machine without node 1.
pub fn count<S: NodeState>(m: &Magic<S>) -> Result<u64, magic::NoNode> {
    let line = m.memory(NodeId(1))?.line(counter().line());
    let mut v = [0; 8];
    v.copy_from_slice(&line[..8]);
    Ok(u64::from_le_bytes(v))
}
