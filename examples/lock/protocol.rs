// A lock on MAGIC: a protocol with state of its own, written against the
// public API only, as a crate that depends on `flashkit` would. The lock
// lives at its home node, which grants it in the order it was asked for;
// each node's processor takes it once, holds it for a while and gives it
// back.

use flashkit::magic::{
    messages, Cx, Cycles, Install, Msg, NodeId, NodeState, ProcStep, Processor, Protocol,
    LINE_BYTES,
};
use std::collections::VecDeque;

messages! {
    /// The lock's messages.
    pub enum LockMsg: LockKind {
        /// Processor to its MAGIC: I want the lock.
        Acquire,
        /// MAGIC to the home: the sender wants it.
        Request,
        /// The home to a requester's MAGIC: it is yours.
        Grant => Reply,
        /// MAGIC to its processor: you hold the lock.
        Granted,
        /// Processor to its MAGIC: I am done with it.
        Release,
        /// MAGIC to the home: the sender is done with it.
        Free,
    }
}

/// Where the home keeps the lock in MAGIC memory (reached through the data cache).
pub const LOCK_WORD: u64 = 0x7000_0000;
/// Decode a message and pass it on: two dual-issue bundles (a model choice).
pub const FORWARD: u32 = 4;
/// The home's test and update of the lock: three bundles (a model choice).
pub const DECIDE: u32 = 6;

/// The lock protocol: where the lock lives, how long a processor holds it,
/// and when processors ask for it.
#[derive(Clone, Copy, Debug)]
pub struct Lock {
    /// The lock's home node.
    pub home: NodeId,
    /// Cycles a processor holds the lock.
    pub hold: Cycles,
    /// When each processor asks (once its processor is started); `None`:
    /// when a study sets `LockNode::ask_at`.
    pub ask: Option<Cycles>,
}

/// A node's part of the lock: the lock itself at the home, and the
/// processor's program everywhere.
#[derive(Debug)]
pub struct LockNode {
    /// The protocol's parameters.
    pub lock: Lock,
    /// At the home: who holds the lock.
    pub holder: Option<NodeId>,
    /// At the home: who waits for it, in order.
    pub waiting: VecDeque<NodeId>,
    /// When the processor asks for the lock.
    pub ask_at: Option<Cycles>,
    /// The processor holds it and gives it back at this cycle.
    pub release_at: Option<Cycles>,
    /// When the processor was told it holds the lock.
    pub granted_at: Vec<Cycles>,
}

impl LockNode {
    /// A node whose processor asks for the lock once, when `lock.ask` says.
    pub fn new(lock: Lock) -> LockNode {
        LockNode {
            lock,
            holder: None,
            waiting: VecDeque::new(),
            ask_at: lock.ask,
            release_at: None,
            granted_at: Vec::new(),
        }
    }
}

impl NodeState for LockNode {
    fn pending(&self) -> Option<String> {
        let n = self.waiting.len();
        (n > 0).then(|| format!("{n} node(s) still wait for the lock"))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        // A protocol beside this one may have scheduled the step: act only
        // on what is due.
        let now = p.now();
        if self.ask_at.is_some_and(|t| t <= now) {
            self.ask_at = None;
            let m = p.msg(LockMsg::Acquire);
            p.request(m, None);
        }
        if self.release_at.is_some_and(|t| t <= now) {
            self.release_at = None;
            let m = p.msg(LockMsg::Release);
            p.request(m, None);
        }
        match self.ask_at.into_iter().chain(self.release_at).min() {
            Some(t) => ProcStep::At(t),
            None => ProcStep::Idle,
        }
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        _data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        // A message of another protocol is left for it.
        let LockMsg::Granted = p.decode::<LockMsg>(msg).ok()? else {
            return None;
        };
        self.granted_at.push(p.now());
        let at = p.now() + self.lock.hold;
        self.release_at = Some(at);
        Some(ProcStep::At(at))
    }
}

/// A lock handler's context. Each handler takes its kind's own type
/// (`lock_msg::Request`, made by `messages!`), and its route takes the kind
/// from it.
pub type C<'a> = Cx<'a, LockNode>;

/// The processor asks: pass the request to the home.
pub fn acquire(cx: &mut C<'_>, _m: &Msg, _: lock_msg::Acquire) {
    cx.instr(FORWARD);
    let home = cx.state().lock.home;
    let _ = cx.send(cx.msg(LockMsg::Request).to(home), None);
}

/// At the home: grant the lock if it is free, else queue the asker.
pub fn request(cx: &mut C<'_>, m: &Msg, _: lock_msg::Request) {
    cx.instr(DECIDE);
    cx.load(LOCK_WORD);
    let s = cx.state();
    if s.holder.is_none() {
        s.holder = Some(m.src);
        let _ = cx.send(cx.msg(LockMsg::Grant).to(m.src), None);
    } else {
        s.waiting.push_back(m.src);
        cx.store(LOCK_WORD);
    }
}

/// The grant is in: tell the processor.
pub fn grant(cx: &mut C<'_>, _m: &Msg, _: lock_msg::Grant) {
    cx.instr(FORWARD);
    let _ = cx.to_processor(cx.msg(LockMsg::Granted), None);
}

/// The processor is done: tell the home.
pub fn release(cx: &mut C<'_>, _m: &Msg, _: lock_msg::Release) {
    cx.instr(FORWARD);
    let home = cx.state().lock.home;
    let _ = cx.send(cx.msg(LockMsg::Free).to(home), None);
}

/// At the home: hand the lock to the next in line, if any.
pub fn free(cx: &mut C<'_>, _m: &Msg, _: lock_msg::Free) {
    cx.instr(DECIDE);
    cx.load(LOCK_WORD);
    let s = cx.state();
    s.holder = s.waiting.pop_front();
    cx.store(LOCK_WORD);
    if let Some(next) = cx.state().holder {
        let _ = cx.send(cx.msg(LockMsg::Grant).to(next), None);
    }
}

impl Protocol for Lock {
    type Node = LockNode;

    fn name(&self) -> &'static str {
        "lock"
    }

    fn node(&self, _n: NodeId, _nodes: u32) -> LockNode {
        LockNode::new(*self)
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, LockNode>) {
        let h = b.handler("acquire", acquire);
        b.route_any(h);
        let h = b.handler("request", request);
        b.route_any(h);
        let h = b.handler("grant", grant);
        b.route_any(h);
        let h = b.handler("release", release);
        b.route_any(h);
        let h = b.handler("free", free);
        b.route_any(h);
    }
}
