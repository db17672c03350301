//! The MAGIC machine: nodes of inbox -> protocol processor -> outbox, their
//! memory, processor caches and network links, driven by the event engine.
//!
//! Each instant is applied in two phases, so the order in which the engine
//! stores simultaneous events cannot change a result: first every event
//! stamped `t` (deliveries into input queues, handlers finishing), then every
//! node whose PP is idle and that has something to do picks its next message
//! by the inbox's priority. A delivery's position in a network input queue is
//! (arrival cycle, source node): simultaneous arrivals enter lowest source
//! first, as a fixed-priority arbiter of the network ports would order them.
//!
//! Software is installed as [`Protocol`]s: each brings its messages, its
//! handlers and routes, and its per-node state. A machine runs one protocol,
//! or several side by side (its node state is then a tuple of theirs, and
//! each handler sees only its own protocol's part).

use crate::buffers::BufferPool;
use crate::cx::{Cx, Run, Ticket};
use crate::dcache::DCache;
use crate::engine::Engine;
use crate::error::{NoNode, PostError};
use crate::ids::{HandlerId, Msg, MsgType, NodeId, PAddr, Region, LINE_BYTES};
use crate::ledger::{HandlerStats, Ledger, NodeFigures};
use crate::link::OutLink;
use crate::memory::Memory;
use crate::message::{
    self, BuildError, DecodeError, IntoMessage, Kind, Message, Registry, Variant,
};
use crate::node::{Arrival, Cause, Ev, First, NodeHw, Packets, Queued, Route};
pub use crate::node::{Dispatch, Drops};
use crate::params::{InQueue, MagicParams};
use crate::pcache::ProcCache;
use crate::time::{Cycles, Time, LAST_CYCLE};
use core::marker::PhantomData;
use smallvec::SmallVec;
use std::fmt::Write as _;

/// How many dirty nodes ahead arbitration asks for what a node's dispatch
/// will read: far enough to cover a memory access, near enough that the
/// lines are still in the cache when their turn comes.
const AHEAD: usize = 4;

/// Machines from this many nodes up ask ahead. Below it the nodes' state
/// stays in a core's own cache, and the hints only cost instructions (about
/// 3.5 ns an event at 64 nodes; at 4096 nodes they save about 18, of some
/// 54). A host-speed choice: it changes no result.
const AHEAD_FROM: u32 = 512;

/// A handler: a plain function over its protocol's context, the message's
/// header, and the message decoded: one kind's own type (a
/// [`Variant`], for [`Install::handler`]) or the
/// whole message type (for [`Install::handler_of_all`]).
pub type HandlerFn<S, M> = fn(&mut Cx<'_, S>, &Msg, M);

/// The protocol's per-node state, and the node's compute processor.
///
/// `pending` describes work the protocol still holds, so a run that stops
/// with work outstanding can say what is stuck. The two processor hooks let a
/// workload program run on the compute processor: it steps when it scheduled
/// itself to, and it is told when MAGIC hands it something.
pub trait NodeState {
    /// Work this node's protocol still holds, in one line (`None`: nothing).
    fn pending(&self) -> Option<String> {
        None
    }

    /// The processor's step, scheduled by an earlier `ProcStep::At` or by
    /// `Magic::start_processor`.
    fn processor_step(&mut self, _p: &mut Processor<'_>) -> ProcStep {
        ProcStep::Idle
    }

    /// MAGIC handed the processor `msg`, with a line of data if it carried
    /// one. `None` leaves the message for `Magic::take_processor_messages`
    /// (or for the next protocol beside this one).
    fn processor_receive(
        &mut self,
        _p: &mut Processor<'_>,
        _msg: &Msg,
        _data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        None
    }
}

impl NodeState for () {}

/// Two protocols side by side: both programs step, a message to the
/// processor goes to the first that takes it. A program may so be stepped
/// when the other scheduled the step: it acts only on what is due.
impl<A: NodeState, B: NodeState> NodeState for (A, B) {
    fn pending(&self) -> Option<String> {
        match (self.0.pending(), self.1.pending()) {
            (None, None) => None,
            (Some(a), None) | (None, Some(a)) => Some(a),
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        }
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        let a = self.0.processor_step(p);
        let b = self.1.processor_step(p);
        a.earliest(b)
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        self.0
            .processor_receive(p, msg, data)
            .or_else(|| self.1.processor_receive(p, msg, data))
    }
}

/// Requests a processor step handed MAGIC (rarely more than one).
type Requests = SmallVec<[(Msg, Option<[u8; LINE_BYTES]>); 2]>;

/// What the compute processor does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcStep {
    /// Nothing until MAGIC hands it something.
    Idle,
    /// Step again at this cycle.
    At(Cycles),
}

impl ProcStep {
    /// The sooner of two: what a processor running both programs does.
    pub fn earliest(self, other: ProcStep) -> ProcStep {
        match (self, other) {
            (ProcStep::At(x), ProcStep::At(y)) => ProcStep::At(x.min(y)),
            (ProcStep::At(x), _) | (_, ProcStep::At(x)) => ProcStep::At(x),
            _ => ProcStep::Idle,
        }
    }
}

/// The compute processor as a workload program sees it: its cache and the
/// processor interface.
pub struct Processor<'a> {
    node: NodeId,
    now: Cycles,
    cache: &'a mut ProcCache,
    memory: &'a mut Memory,
    requests: &'a mut Requests,
    reg: &'a Registry,
    #[allow(clippy::box_collection)] // the node's own, boxed (see `NodeHw::trace`)
    trace: &'a mut Option<Box<Vec<crate::trace::Slice>>>,
}

impl<'a> Processor<'a> {
    /// Node `node`'s processor at cycle `now`, on its hardware `hw`.
    fn of(
        hw: &'a mut crate::node::NodeHw,
        reg: &'a Registry,
        node: NodeId,
        now: Cycles,
        requests: &'a mut Requests,
    ) -> Processor<'a> {
        Processor {
            node,
            now,
            cache: &mut hw.pcache,
            memory: &mut hw.mem,
            requests,
            reg,
            trace: &mut hw.trace,
        }
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The processor's current cycle.
    pub fn now(&self) -> Cycles {
        self.now
    }

    /// The processor's own cache (hits need no MAGIC).
    pub fn cache(&mut self) -> &mut ProcCache {
        self.cache
    }

    /// This node's memory, as the operating system reaches it (to copy a
    /// page it moves; the OS charges its own time for that).
    pub fn memory(&mut self) -> &mut Memory {
        self.memory
    }

    /// `m` as a message from this node to itself (its MAGIC); set another
    /// destination with [`Msg::to`].
    pub fn msg<M: IntoMessage>(&self, m: M) -> Msg {
        self.reg.encode(self.node, self.node, &m.into_message())
    }

    /// A message MAGIC handed the processor, decoded as an `M`.
    pub fn decode<M: Message>(&self, msg: &Msg) -> Result<M, DecodeError> {
        self.reg.decode(msg)
    }

    /// The program kept the processor busy from `start` to `end` with `what`
    /// (a flush, say): a slice on the node's compute-processor track when
    /// the machine records its timelines, nothing otherwise.
    pub fn busy(&mut self, what: &'static str, start: Cycles, end: Cycles) {
        if let Some(tr) = self.trace.as_mut() {
            tr.push(crate::trace::Slice {
                node: self.node.0,
                track: crate::trace::Track::Processor,
                protocol: "",
                name: what,
                start,
                end,
                msg: None,
            });
        }
    }

    /// Hand MAGIC a request (a miss, a writeback with its line, a command):
    /// it enters the processor-interface queue `pi_in` cycles from now.
    pub fn request(&mut self, msg: Msg, data: Option<[u8; LINE_BYTES]>) {
        self.requests.push((msg, data));
    }
}

/// What a registered handler runs: one function made for the handler when
/// it is registered, in which the protocol's function, its part of the node
/// state and its message's decoding are all known to the compiler (the
/// handler's body is compiled into it). The dispatch makes this one call,
/// handing over the context's parts one by one (see [`Parts`]) and the
/// message.
type Call<S> = Box<
    dyn for<'a> Fn(
            &'a mut Run,
            &'a mut NodeHw,
            &'a mut S,
            &'a mut Engine<Ev>,
            &'a mut Packets,
            &'a [[Option<Route>; 4]],
            &'a Registry,
            &'a MagicParams,
            &'a Msg,
        ) + Send
        + Sync,
>;

/// What a handler's context is made of. The dispatch hands the parts to the
/// handler's call one by one, so the call makes the handler's context once,
/// from values passed in registers, rather than copying a context the
/// dispatch has just written (a copy that waits for those writes).
type Parts<'a, S> = (
    &'a mut Run,
    &'a mut NodeHw,
    &'a mut S,
    &'a mut Engine<Ev>,
    &'a mut Packets,
    &'a [[Option<Route>; 4]],
    &'a Registry,
    &'a MagicParams,
);

/// Where a protocol's state is in the machine's node state `S`: the whole of
/// it (a machine of one protocol), one half of a pair (`Magic::pair`), or
/// the part a function picks (a protocol installed beside others).
pub(crate) enum Part<S, T> {
    /// `T` is `S`: only ever made by [`Part::whole`], so finding `T` in an
    /// `S` is a comparison of two types the compiler settles, at no cost.
    Whole,
    /// `S` is a pair of which `T` is the half at this byte offset: only
    /// ever made by [`Part::first`] and [`Part::second`], so finding `T` in
    /// an `S` is one addition, with no call.
    Half(usize),
    /// The part `.0` picks.
    Picked(fn(&mut S) -> &mut T),
}

impl<S, T> Clone for Part<S, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, T> Copy for Part<S, T> {}

impl<S> Part<S, S> {
    /// The whole node state.
    pub(crate) fn whole() -> Self {
        Part::Whole
    }
}

impl<A, B> Part<(A, B), A> {
    /// The first half of a pair.
    pub(crate) fn first() -> Self {
        Part::Half(core::mem::offset_of!((A, B), 0))
    }
}

impl<A, B> Part<(A, B), B> {
    /// The second half of a pair.
    pub(crate) fn second() -> Self {
        Part::Half(core::mem::offset_of!((A, B), 1))
    }
}

/// Call `f` with the context made of `parts`, over `part` of its node
/// state. Inlined into each handler's call, so the whole state is passed on
/// as it is.
#[inline(always)]
fn with_part<S: 'static, T: 'static>(
    (run, hw, state, engine, packets, table, reg, params): Parts<'_, S>,
    part: Part<S, T>,
    f: impl FnOnce(&mut Cx<'_, T>),
) {
    let state: &mut T = match part {
        // `T` is `S` (see `Part::whole`): the downcast always succeeds and
        // compiles to nothing.
        Part::Whole => match (state as &mut dyn core::any::Any).downcast_mut::<T>() {
            Some(t) => t,
            None => return,
        },
        // SAFETY: a `Half` is made only by `Part::first` and `Part::second`,
        // for an `S` that is a pair `(A, B)` and a `T` that is its `A` or
        // `B`, with the offset of that half as `offset_of!` gives it. So
        // the address `offset` bytes into `state` is that half's: a `T`,
        // inside the `S` borrowed exclusively, borrowed for as long.
        Part::Half(offset) => unsafe {
            &mut *(state as *mut S).cast::<u8>().add(offset).cast::<T>()
        },
        Part::Picked(pick) => pick(state),
    };
    f(&mut Cx {
        run,
        hw,
        state,
        engine,
        packets,
        table,
        reg,
        params,
    })
}

/// A message whose payload did not decode as its handler's type: counted
/// on its node, named in the run's report.
#[cold]
fn undecodable<S>((run, hw, ..): Parts<'_, S>, msg: &Msg) {
    hw.lose(
        Cause::Undecodable,
        run.first("dispatch", Some(msg.mtype), 0),
    );
}

pub(crate) struct HandlerEntry<S> {
    pub(crate) protocol: &'static str,
    pub(crate) name: &'static str,
    call: Call<S>,
}

impl<S> HandlerEntry<S> {
    pub(crate) fn full_name(&self) -> String {
        full_name(self.protocol, self.name)
    }
}

/// A handler's name as the ledger spells it: `protocol.handler`.
fn full_name(protocol: &str, name: &str) -> String {
    if protocol.is_empty() {
        name.to_string()
    } else {
        format!("{protocol}.{name}")
    }
}

/// A type's name without its modules' paths: `protocols::am::flash::FlashAm`
/// is `FlashAm`, `a::Pair<b::X, c::Y>` is `Pair<X, Y>`.
fn short_type(full: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            word.clear();
        } else {
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
    }
    out + &word
}

/// A protocol: its messages, handlers, routes and per-node state, installed
/// on a machine as one unit, alone or beside other protocols.
pub trait Protocol {
    /// What the protocol keeps per node (and the node's processor program).
    type Node: NodeState;

    /// The protocol's name: its ledger rows are `name.handler`.
    fn name(&self) -> &'static str;

    /// Node `n`'s state, in a machine of `nodes` nodes.
    fn node(&self, n: NodeId, nodes: u32) -> Self::Node;

    /// Register the handlers and fill their routes.
    fn install<S: 'static>(&self, b: &mut Install<'_, S, Self::Node>);

    /// Check the machine's parameters and size before it is built (a
    /// protocol that needs two data buffers says so here).
    fn check(&self, _params: &MagicParams, _nodes: u32) -> Result<(), BuildError> {
        Ok(())
    }
}

/// A typed handler registered with a machine. `Handler<V>` for a kind's own
/// type `V` (a [`Variant`], from [`Install::handler`]): its routes take the
/// kind from `V`. `Handler<M>` for a whole message type `M` (from
/// [`Install::handler_of_all`]): its routes name their kinds.
pub struct Handler<M> {
    id: HandlerId,
    base: Option<u8>,
    _m: PhantomData<fn(M)>,
}

impl<M> Clone for Handler<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Handler<M> {}

/// A protocol's view of the builder while it installs: its handlers see
/// their own node state `T`, a part of the machine's `S`.
pub struct Install<'b, S, T> {
    b: &'b mut MagicBuilder<S>,
    protocol: &'static str,
    part: Part<S, T>,
}

impl<S: 'static, T: 'static> Install<'_, S, T> {
    /// The protocol installing.
    pub fn protocol(&self) -> &'static str {
        self.protocol
    }

    /// The machine's parameters.
    pub fn params(&self) -> &MagicParams {
        &self.b.params
    }

    /// Install a part under its own name (a protocol another one carries:
    /// the transfer carries the coherence protocol), on the same state.
    /// The name must be free in the machine, as a protocol's is (the
    /// installing protocol's own name is its own); `build` reports a name
    /// taken.
    pub fn part(&mut self, name: &'static str) -> Install<'_, S, T> {
        if name != self.protocol {
            let what = format!("a part of {}", self.protocol);
            self.b.claim_name(name, what, None);
        }
        Install {
            b: self.b,
            protocol: name,
            part: self.part,
        }
    }

    /// Register `f`, a handler of one kind of message, under `name` (the
    /// ledger's row is `protocol.name`). `f` takes the kind's own type `V`
    /// (`lock_msg::Grant`, made by [`messages!`](crate::messages)), and the
    /// handler's routes ([`Install::route`], [`Install::route_any`]) take
    /// their kind from `V`: a reply cannot be routed to a request's handler,
    /// because the types differ. The first handler of a message type gives
    /// it its block of type numbers; another protocol's claim on it is an
    /// error that `build` reports, and so is a second handler of one name.
    ///
    /// `f` is a plain function (a [`HandlerFn`]); named as itself rather
    /// than as a pointer, its body is compiled into the handler's call.
    pub fn handler<V: Variant, F>(&mut self, name: &'static str, f: F) -> Handler<V>
    where
        F: Fn(&mut Cx<'_, T>, &Msg, V) + Copy + Send + Sync + 'static,
    {
        let base = self.claim::<V::Message>();
        let part = self.part;
        // The one type number this handler takes, found once here: a
        // dispatch compares it and decodes the payload as `V`'s kind, known
        // when this is compiled, with no look-up of the kind.
        let own = base.and_then(|b| {
            u8::try_from(V::KIND.index())
                .ok()
                .and_then(|i| b.checked_add(i))
        });
        let call: Call<S> = Box::new(
            move |run, hw, state, engine, packets, table, reg, params, msg| {
                let parts = (run, hw, state, engine, packets, table, reg, params);
                let m = if own == Some(msg.mtype.0) {
                    message::decode_words::<V::Message>(V::KIND, &msg.words)
                        .and_then(V::from_message)
                } else {
                    None
                };
                match m {
                    Some(m) => with_part(parts, part, |cx| f(cx, msg, m)),
                    None => undecodable(parts, msg),
                }
            },
        );
        self.register(name, base, call)
    }

    /// Register `f`, a handler of every kind of message type `M`, under
    /// `name`: for one function that truly serves several kinds (the
    /// coherence protocol's `reply` takes PUT, PUTX and UPGRADE_ACK). Its
    /// routes name their kinds ([`Install::route_kind`]), so this opts out
    /// of the check [`Install::handler`] gives: a kind routed here by
    /// mistake reaches `f`, which must match on what it gets.
    pub fn handler_of_all<M: Message, F>(&mut self, name: &'static str, f: F) -> Handler<M>
    where
        F: Fn(&mut Cx<'_, T>, &Msg, M) + Copy + Send + Sync + 'static,
    {
        let base = self.claim::<M>();
        let part = self.part;
        let call: Call<S> = Box::new(
            move |run, hw, state, engine, packets, table, reg, params, msg| {
                let parts = (run, hw, state, engine, packets, table, reg, params);
                let kind = base.and_then(|b| message::kind_at::<M>(b, msg.mtype));
                match kind.and_then(|k| message::decode_words::<M>(k, &msg.words)) {
                    Some(m) => with_part(parts, part, |cx| f(cx, msg, m)),
                    None => undecodable(parts, msg),
                }
            },
        );
        self.register(name, base, call)
    }

    /// `M`'s block of type numbers, given to this protocol (`None`, and an
    /// error `build` reports, when another protocol has claimed it).
    fn claim<M: Message>(&mut self) -> Option<u8> {
        match self.b.reg.add::<M>(self.protocol) {
            Ok(b) => Some(b),
            Err(e) => {
                self.b.errors.push(e);
                None
            }
        }
    }

    fn register<X>(&mut self, name: &'static str, base: Option<u8>, call: Call<S>) -> Handler<X> {
        let id = self.b.push(self.protocol, name, call);
        Handler {
            id,
            base,
            _m: PhantomData,
        }
    }

    /// Dispatch messages of `h`'s kind whose address is in `region` to `h`.
    pub fn route<V: Variant>(&mut self, region: Region, h: Handler<V>) -> &mut Self {
        self.route_with(region, h, Dispatch::default())
    }

    /// As [`Install::route`], with dispatch options.
    pub fn route_with<V: Variant>(
        &mut self,
        region: Region,
        h: Handler<V>,
        opts: Dispatch,
    ) -> &mut Self {
        self.route_number::<V::Message, V>(V::KIND, region, h, opts)
    }

    /// Dispatch `h`'s kind to `h` whatever region its address is in.
    pub fn route_any<V: Variant>(&mut self, h: Handler<V>) -> &mut Self {
        self.route_any_with(h, Dispatch::default())
    }

    /// As [`Install::route_any`], with dispatch options.
    pub fn route_any_with<V: Variant>(&mut self, h: Handler<V>, opts: Dispatch) -> &mut Self {
        for r in Region::ALL {
            self.route_with(r, h, opts);
        }
        self
    }

    /// Dispatch messages of kind `k` whose address is in `region` to `h`, a
    /// handler of every kind ([`Install::handler_of_all`]).
    pub fn route_kind<M: Message>(
        &mut self,
        k: M::Kind,
        region: Region,
        h: Handler<M>,
    ) -> &mut Self {
        self.route_kind_with(k, region, h, Dispatch::default())
    }

    /// As [`Install::route_kind`], with dispatch options.
    pub fn route_kind_with<M: Message>(
        &mut self,
        k: M::Kind,
        region: Region,
        h: Handler<M>,
        opts: Dispatch,
    ) -> &mut Self {
        self.route_number::<M, M>(k, region, h, opts)
    }

    /// Dispatch kind `k` to `h`, a handler of every kind, whatever region
    /// its address is in.
    pub fn route_kind_any<M: Message>(&mut self, k: M::Kind, h: Handler<M>) -> &mut Self {
        self.route_kind_any_with(k, h, Dispatch::default())
    }

    /// As [`Install::route_kind_any`], with dispatch options.
    pub fn route_kind_any_with<M: Message>(
        &mut self,
        k: M::Kind,
        h: Handler<M>,
        opts: Dispatch,
    ) -> &mut Self {
        for r in Region::ALL {
            self.route_kind_with(k, r, h, opts);
        }
        self
    }

    /// Route kind `k` of `h`'s message type `M`. A kind whose index is not
    /// a position in its [`Kind::NAMES`] (a hand-written kind) is an error
    /// that `build` reports, where its number would be another kind's.
    fn route_number<M: Message, X>(
        &mut self,
        k: M::Kind,
        region: Region,
        h: Handler<X>,
        opts: Dispatch,
    ) -> &mut Self {
        let Some(base) = h.base else {
            return self;
        };
        match message::number_at::<M>(base, k) {
            Some(t) => {
                self.b.route_with(t, region, h.id, opts);
            }
            None => {
                let e = BuildError::KindOutOfRange {
                    message: message::short_name::<M>(),
                    kind: format!("{k:?}"),
                    index: k.index(),
                    kinds: <M::Kind as Kind>::NAMES.len(),
                    protocol: self.protocol,
                };
                if !self.b.errors.contains(&e) {
                    self.b.errors.push(e);
                }
            }
        }
        self
    }
}

/// Builds a machine: install protocols, then `build`.
pub struct MagicBuilder<S> {
    params: MagicParams,
    nodes: u32,
    handlers: Vec<HandlerEntry<S>>,
    table: Vec<[Option<Route>; 4]>,
    reg: Registry,
    /// The protocol names taken, each with what took it (a protocol's type,
    /// or a part and who installed it) and the protocol's type name.
    names: Vec<(&'static str, String, Option<&'static str>)>,
    /// Conflicts found while installing: `build` refuses them.
    errors: Vec<BuildError>,
    /// Every handler's (protocol, name), to find one registered twice at
    /// once however many there are.
    handler_names: std::collections::HashSet<(&'static str, &'static str)>,
}

impl<S: 'static> MagicBuilder<S> {
    /// A builder for a machine of `nodes` nodes.
    pub fn new(params: MagicParams, nodes: u32) -> Self {
        MagicBuilder {
            params,
            nodes,
            handlers: Vec::new(),
            handler_names: Default::default(),
            table: vec![[None; 4]; 256],
            reg: Registry::starting_at(0),
            names: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Install protocol `p`, whose state is the part of the node state
    /// `project` picks (`|s| s` when it is the whole). A protocol's name is
    /// unique in a machine (it names the ledger's rows): a second protocol
    /// of a name already installed, or the same protocol installed again,
    /// is an error that `build` reports, and the second is not installed.
    pub fn install<P: Protocol>(&mut self, p: &P, project: fn(&mut S) -> &mut P::Node) -> &mut Self
    where
        P::Node: 'static,
    {
        self.install_on(p, Part::Picked(project))
    }

    /// Install protocol `p` on `part` of the node state (see `install`).
    pub(crate) fn install_on<P: Protocol>(&mut self, p: &P, part: Part<S, P::Node>) -> &mut Self
    where
        P::Node: 'static,
    {
        let ty = core::any::type_name::<P>();
        if !self.claim_name(p.name(), short_type(ty), Some(ty)) {
            return self;
        }
        if let Err(e) = p.check(&self.params, self.nodes) {
            self.errors.push(e);
        }
        let mut i = Install {
            b: self,
            protocol: p.name(),
            part,
        };
        p.install(&mut i);
        self
    }

    /// Install handlers under a protocol name without a [`Protocol`] value:
    /// their state is the part of the node state `project` picks. The name
    /// must be free in the machine, as a protocol's is.
    pub fn part<T: 'static>(
        &mut self,
        name: &'static str,
        project: fn(&mut S) -> &mut T,
    ) -> Install<'_, S, T> {
        let what = "a part installed with MagicBuilder::part".to_string();
        self.claim_name(name, what, None);
        Install {
            b: self,
            protocol: name,
            part: Part::Picked(project),
        }
    }

    /// Take protocol name `name` for `what` (of type `ty`, for a protocol):
    /// `false`, with the error `build` reports, when it is taken: by the
    /// same protocol (installed twice) or by another.
    fn claim_name(&mut self, name: &'static str, what: String, ty: Option<&'static str>) -> bool {
        match self.names.iter().find(|n| n.0 == name) {
            Some((_, first, first_ty)) => {
                // The same protocol type, or the same part of the same protocol.
                let same = match ty {
                    Some(_) => *first_ty == ty,
                    None => first_ty.is_none() && *first == what,
                };
                let e = if same {
                    BuildError::InstalledTwice {
                        protocol: name,
                        what,
                    }
                } else {
                    BuildError::NameTaken {
                        name,
                        first: first.clone(),
                        second: what,
                    }
                };
                self.errors.push(e);
                false
            }
            None => {
                self.names.push((name, what, ty));
                true
            }
        }
    }

    fn push(&mut self, protocol: &'static str, name: &'static str, call: Call<S>) -> HandlerId {
        if !self.handler_names.insert((protocol, name)) {
            self.errors.push(BuildError::HandlerNamedTwice {
                handler: full_name(protocol, name),
            });
        }
        // A handler's number is 16 bits: past the most, `build` refuses
        // the machine (once), rather than a number wrapping onto another
        // handler.
        let Ok(id) = u16::try_from(self.handlers.len()) else {
            if !self
                .errors
                .iter()
                .any(|e| matches!(e, BuildError::TooManyHandlers { .. }))
            {
                self.errors.push(BuildError::TooManyHandlers {
                    handler: full_name(protocol, name),
                    count: self.handlers.len() + 1,
                    max: usize::from(u16::MAX) + 1,
                });
            }
            return HandlerId(u16::MAX);
        };
        self.handlers.push(HandlerEntry {
            protocol,
            name,
            call,
        });
        HandlerId(id)
    }

    /// Route type `t` in `region` to `h`. A (type, region) already routed
    /// to another handler is a conflict that `build` reports, naming both;
    /// the first route stays.
    fn route_with(
        &mut self,
        t: MsgType,
        region: Region,
        h: HandlerId,
        opts: Dispatch,
    ) -> &mut Self {
        let slot = &mut self.table[t.0 as usize][region as usize];
        match slot {
            Some(r) if r.handler == h => {
                let handler = self
                    .handlers
                    .get(h.0 as usize)
                    .map_or("an unregistered handler".to_string(), |e| e.full_name());
                self.errors.push(BuildError::RoutedTwice {
                    handler,
                    message: self.reg.describe(t),
                    region,
                });
            }
            Some(r) => {
                let name = |id: HandlerId| {
                    self.handlers
                        .get(id.0 as usize)
                        .map_or("an unregistered handler".to_string(), |e| e.full_name())
                };
                self.errors.push(BuildError::RouteConflict {
                    message: self.reg.describe(t),
                    region,
                    first: name(r.handler),
                    second: name(h),
                });
            }
            _ => *slot = Some(Route { handler: h, opts }),
        }
        self
    }
}

impl<S: NodeState + 'static> MagicBuilder<S> {
    /// The machine, with node `n`'s state `state(n)`; or the first problem:
    /// a parameter out of its range ([`MagicParams::validate`], as
    /// [`BuildError::Params`] naming the field), then what installing found.
    pub fn build(self, mut state: impl FnMut(NodeId) -> S) -> Result<Magic<S>, BuildError> {
        self.params.validate()?;
        if let Some(e) = self.errors.into_iter().next() {
            return Err(e);
        }
        let max = PAddr::MAX_NODES;
        if self.nodes == 0 || self.nodes > max {
            return Err(BuildError::Nodes {
                got: self.nodes,
                max,
            });
        }
        let n = self.handlers.len();
        if let Some(r) = self
            .table
            .iter()
            .flatten()
            .flatten()
            .find(|r| r.handler.0 as usize >= n)
        {
            return Err(BuildError::Protocol(format!(
                "the jump table names handler {} but only {n} are registered",
                r.handler.0
            )));
        }
        let p = &self.params;
        let hw = (0..self.nodes)
            .map(|_| NodeHw {
                lost: None,
                watch: None,
                queues: Default::default(),
                mem: Memory::default(),
                pcache: ProcCache::default(),
                link: OutLink::default(),
                bufs: BufferPool::new(p.data_buffers),
                dcache: DCache::new(p.dcache_lines),
                to_processor: Vec::new(),
                trace: self.params.trace.then(Box::default),
                pp_running: false,
                pp_busy: 0,
                pp_until: Cycles(0),
                dispatched: 0,
                net_delivered: 0,
                inbox_wait: 0,
                dirty: false,
                wake_at: None,
                software_held: None,
                in_free: Cycles(0),
            })
            .collect();
        let handlers = self.handlers.len();
        Ok(Magic {
            engine: Engine::with_quantum(crate::time::TICKS_PER_SYSTEM_CYCLE),
            hw,
            state: (0..self.nodes).map(|i| state(NodeId(i))).collect(),
            handlers: self.handlers,
            table: self.table,
            reg: self.reg,
            packets: Packets::default(),
            dirty: Vec::with_capacity(self.nodes as usize),
            ahead: self.nodes >= AHEAD_FROM,
            batch: Vec::new(),
            stats: vec![HandlerStats::default(); self.nodes as usize * handlers],
            ledger_from: Cycles(0),
            held: None,
            budget: self.params.budget,
            halt: None,
            spin: 0,
            spin_limit: SPIN_LIMIT,
            event_limit: EVENT_LIMIT,
            proc_spin: (Cycles(0), 0),
            traced: 0,
            params: self.params,
            nodes: self.nodes,
        })
    }
}

impl<N: NodeState + 'static> Magic<N> {
    /// A machine of `nodes` nodes running protocol `p` alone.
    pub fn with<P: Protocol<Node = N>>(
        params: MagicParams,
        nodes: u32,
        p: &P,
    ) -> Result<Magic<N>, BuildError> {
        let mut b = MagicBuilder::new(params, nodes);
        b.install_on(p, Part::whole());
        b.build(|n| p.node(n, nodes))
    }
}

impl<A: NodeState + 'static, B: NodeState + 'static> Magic<(A, B)> {
    /// A machine running two protocols side by side, each with its own
    /// state: node `n`'s is `(a's, b's)`.
    pub fn pair<P: Protocol<Node = A>, Q: Protocol<Node = B>>(
        params: MagicParams,
        nodes: u32,
        a: &P,
        b: &Q,
    ) -> Result<Magic<(A, B)>, BuildError> {
        // Each protocol reaches its half at its offset in the pair: no call
        // to a projection function per handler.
        let mut bld = MagicBuilder::new(params, nodes);
        bld.install_on(a, Part::first())
            .install_on(b, Part::second());
        bld.build(|n| (a.node(n, nodes), b.node(n, nodes)))
    }
}

pub use crate::params::{DEFAULT_BUDGET, MAX_BUDGET};

/// How a run past `budget` goes further: by a larger budget, or, at the
/// most there is, not at all.
fn raise_budget(budget: Cycles, next: Cycles) -> String {
    if next > MAX_BUDGET && budget < MAX_BUDGET {
        format!(
            "no budget reaches that (the most a run may have is {MAX_BUDGET}): \
             a run that needs more is too long for the model"
        )
    } else if budget >= MAX_BUDGET {
        format!(
            "that is the most a run may have ({MAX_BUDGET}): \
             a run that needs more is too long for the model"
        )
    } else {
        format!(
            "a run that needs more raises it with [machine] budget \
             (MagicParams::budget, or Magic::set_budget; at most {MAX_BUDGET})"
        )
    }
}

/// Why a run stopped before its work was done (beside a caller's own
/// limit, [`RunReport::limit_reached`]): not clean, and no figure of it
/// is a result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Halt {
    /// The next instant lies past the run's cycle budget.
    #[error(
        "the run reached its cycle budget of {budget} cycles with work left at cycle {next}; {}",
        raise_budget(*budget, *next)
    )]
    Budget {
        /// The budget.
        budget: Cycles,
        /// The cycle of the next instant, the first past the budget.
        next: Cycles,
    },
    /// A handler's clock, or an event, would pass the model's last cycle
    /// ([`LAST_CYCLE`]): time cannot represent it, and nothing
    /// saturates into a result.
    #[error(
        "node {node}: {what} at cycle {at}, past the last cycle the model can represent ({last})",
        last = LAST_CYCLE
    )]
    EndOfTime {
        /// The node.
        node: NodeId,
        /// What would pass it: the handler and its step, or the event.
        what: String,
        /// The cycle asked for (exact: it may not fit a cycle count).
        at: u128,
    },
    /// Only handlers from the software queue have run, [`SPIN_LIMIT`] in a
    /// row, with nothing else in flight that could end their loop (no
    /// message on its way, no processor step, no data buffer coming back):
    /// handlers that reschedule themselves waiting for what never comes.
    /// Left alone, such a run would spin to its budget.
    #[error(
        "livelock at cycle {at}: only the software queue has run, {limit} handlers in a row, \
         with nothing else in flight that could end its loop (node {node}'s next: {what}); \
         a protocol of the library's whose loop does end raises the limit \
         (Magic::set_spin_limit)"
    )]
    Livelock {
        /// A node whose software queue holds the loop.
        node: NodeId,
        /// The message at the front of its software queue.
        what: String,
        /// The cycle the loop was found at.
        at: Cycles,
        /// The spin limit it reached.
        limit: u64,
    },
    /// Compute processors' steps have asked, [`SPIN_LIMIT`] times at one
    /// cycle, to step again at that cycle or an earlier one: a program
    /// that never lets time pass. Left alone, such a run would never end.
    #[error(
        "node {node}'s processor stepped again without letting time pass, {limit} steps at \
         cycle {at}: a processor step asks for a later cycle (the limit is \
         Magic::set_spin_limit's)"
    )]
    ProcessorSpin {
        /// The node whose step reached the limit.
        node: NodeId,
        /// The cycle time stood still at.
        at: Cycles,
        /// The spin limit it reached.
        limit: u64,
    },
    /// The run applied [`EVENT_LIMIT`] events (or the limit
    /// [`Magic::set_event_limit`] set) with work left: handlers that keep
    /// one another going without end, a message a handler sends to its
    /// own node say, which would take hours to reach the cycle budget.
    #[error(
        "the run applied {events} events by cycle {at}, its limit of {limit}, with work left: \
         handlers that keep one another going without end (a message a handler sends to its \
         own node, say), or a run longer than the kit's own, which raises the limit \
         (Magic::set_event_limit)"
    )]
    Events {
        /// Events the run applied.
        events: u64,
        /// The limit.
        limit: u64,
        /// The cycle of the last instant applied.
        at: Cycles,
    },
    /// A traced run recorded more than [`crate::trace::MAX_SLICES`]
    /// slices of its timelines: its trace would hold more than a viewer
    /// opens (and more memory than the run), so the run stops rather than
    /// grow it or write a part of it as the whole.
    #[error(
        "the run's trace passed its maximum of {max} slices at cycle {at}: trace a shorter \
         run (fewer nodes, messages or bytes), or run this one untraced"
    )]
    TraceFull {
        /// The cycle of the instant that passed it.
        at: Cycles,
        /// The maximum ([`crate::trace::MAX_SLICES`]).
        max: u64,
    },
}

/// `added` slices more recorded at cycle `t`, on top of the `traced`
/// already: past [`crate::trace::MAX_SLICES`] in all, the run halts
/// ([`Halt::TraceFull`]).
#[cold]
fn count_traced(traced: &mut u64, halt: &mut Option<Halt>, added: usize, t: Cycles) {
    *traced = traced.saturating_add(added as u64);
    if *traced > crate::trace::MAX_SLICES {
        halt.get_or_insert(Halt::TraceFull {
            at: t,
            max: crate::trace::MAX_SLICES,
        });
    }
}

/// Events a run applies before it halts ([`Halt::Events`]) unless
/// [`Magic::set_event_limit`] sets another limit: 10^9, some 40 seconds of
/// the engine's time. The longest run of the kit's own, a pipeline of
/// its most messages (4 million), applies some 4 x 10^8; a loop of
/// handlers with no end, which the cycle budget would stop only after
/// some 5 x 10^10 events (an hour), stops here.
pub const EVENT_LIMIT: u64 = 1_000_000_000;

/// Handlers from the software queue in a row, counted over the whole
/// machine, with no handler from another queue and no processor event
/// between them, after which a run looks whether anything but their loop
/// is in flight, and halts ([`Halt::Livelock`]) if nothing is: 2^24 (some
/// 16.8 million) by default. Every loop of the kit's own protocols sends
/// or waits for a message within a few handlers; a protocol whose
/// handlers truly do that much local work in a row, with nothing else in
/// flight, raises it or turns it off ([`Magic::set_spin_limit`]).
pub const SPIN_LIMIT: u64 = 1 << 24;

/// What a run ended with.
///
/// Clean ([`RunReport::is_clean`]) means the run did all its work and lost
/// nothing: not stopped by its limit or by a [`Halt`], nothing stuck,
/// nothing refused. `stuck` is work left behind; `refused` is work the
/// machine dropped or refused (every count in [`Drops`], and events applied
/// late), one line per node and cause naming the first instance. Both are
/// plain text lines for people; [`RunReport::problems`] gives every line
/// that makes the run not clean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    /// The last cycle at which anything happened.
    pub end: Cycles,
    /// Events the engine applied.
    pub engine_events: u64,
    /// True if the run stopped at its cycle limit with events still pending.
    pub limit_reached: bool,
    /// Why the run stopped early, if it did (see [`Halt`]): its cycle
    /// budget, time passing its end, a livelock, its event limit or a
    /// full trace.
    pub halted: Option<Halt>,
    /// Work left when the run stopped: one line per stuck item.
    pub stuck: Vec<String>,
    /// What the machine refused or dropped: one line per node and cause,
    /// naming the first instance (which handler, which message, which
    /// destination), e.g. `node 0: 1 send(s) to a node that does not exist
    /// (the first: lock.request sent lock LockMsg::Grant to node 9 of a
    /// 2-node machine, at cycle 5)`.
    pub refused: Vec<String>,
}

impl RunReport {
    /// True if the run did all its work and lost nothing: no limit or halt
    /// stopped it, nothing is stuck and nothing was refused.
    pub fn is_clean(&self) -> bool {
        !self.limit_reached
            && self.halted.is_none()
            && self.stuck.is_empty()
            && self.refused.is_empty()
    }

    /// Every reason the run is not clean, one line each (none if it is):
    /// the halt, the limit, what was refused, what is stuck.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(h) = &self.halted {
            out.push(h.to_string());
        }
        if self.limit_reached {
            out.push(format!(
                "the run stopped at its limit, cycle {}, with events pending",
                self.end
            ));
        }
        out.extend(self.refused.iter().cloned());
        out.extend(self.stuck.iter().cloned());
        out
    }
}

/// A FLASH machine of MAGIC nodes running one protocol (`S` is its per-node state).
pub struct Magic<S> {
    pub(crate) params: MagicParams,
    pub(crate) nodes: u32,
    pub(crate) engine: Engine<Ev>,
    pub(crate) hw: Vec<NodeHw>,
    pub(crate) state: Vec<S>,
    pub(crate) handlers: Vec<HandlerEntry<S>>,
    pub(crate) table: Vec<[Option<Route>; 4]>,
    pub(crate) reg: Registry,
    pub(crate) packets: Packets,
    pub(crate) dirty: Vec<u32>,
    /// The machine is large enough for asking ahead to pay (see `AHEAD_FROM`).
    ahead: bool,
    /// The events of the instant being applied (kept for its capacity).
    batch: Vec<Ev>,
    /// Each node's handler counters: node `n`'s are the `handlers.len()`
    /// entries from `n * handlers.len()`, in one block so the dispatch can ask
    /// for them ahead without reading the node first.
    pub(crate) stats: Vec<HandlerStats>,
    /// Where the ledger's counting starts (see `reset_counters`).
    pub(crate) ledger_from: Cycles,
    /// Deliveries held for an explorer to order (see `check`); `None` in a
    /// timed run.
    pub(crate) held: Option<Vec<crate::node::Held>>,
    /// The run stops before an instant later than this.
    budget: Cycles,
    /// Why the run stopped early; once set, nothing more runs.
    pub(crate) halt: Option<Halt>,
    /// Handlers dispatched from the software queue, machine-wide, since
    /// a handler from another queue or a processor event (see
    /// [`SPIN_LIMIT`]).
    spin: u64,
    /// When `spin` makes the run look for a livelock (`u64::MAX`: never).
    spin_limit: u64,
    /// Events the run may apply (see [`EVENT_LIMIT`]).
    event_limit: u64,
    /// Processor steps that asked for no later cycle than their own, and
    /// the cycle they ran at: a program that never lets time pass halts
    /// at the spin limit ([`Halt::ProcessorSpin`]).
    proc_spin: (Cycles, u64),
    /// Slices the nodes' timelines have recorded since `trace_on` (or
    /// the start), held to [`crate::trace::MAX_SLICES`].
    traced: u64,
}

impl<S: NodeState> Magic<S> {
    /// `m` as a message from node `src` to itself (set another destination
    /// with [`Msg::to`]), numbered as this machine installed its type.
    pub fn msg<M: IntoMessage>(&self, src: NodeId, m: M) -> Msg {
        self.reg.encode(src, src, &m.into_message())
    }

    /// A message decoded as an `M` (one the processor was handed, say).
    pub fn decode<M: Message>(&self, msg: &Msg) -> Result<M, DecodeError> {
        self.reg.decode(msg)
    }

    /// The message types installed, and their numbers.
    pub fn registry(&self) -> &Registry {
        &self.reg
    }

    /// The latest cycle the model's clock can reach with room to spare.
    pub const LAST_CYCLE: Cycles = crate::time::LAST_CYCLE;

    /// The machine's parameters.
    pub fn params(&self) -> &MagicParams {
        &self.params
    }

    /// Nodes in the machine.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// The current cycle (of the last event applied).
    pub fn now(&self) -> Cycles {
        self.engine.now().to_cycles_floor()
    }

    /// Node `n` past the machine, as an error.
    fn no_node(&self, n: NodeId) -> NoNode {
        NoNode {
            node: n,
            nodes: self.nodes,
        }
    }

    /// The protocol state of node `n`. A node past the machine is an error
    /// naming it and the machine's size, as for every accessor by node.
    pub fn state(&self, n: NodeId) -> Result<&S, NoNode> {
        self.state.get(n.index()).ok_or(self.no_node(n))
    }

    /// The protocol state of node `n`, to set up or change between runs.
    pub fn state_mut(&mut self, n: NodeId) -> Result<&mut S, NoNode> {
        let e = self.no_node(n);
        self.state.get_mut(n.index()).ok_or(e)
    }

    /// Every node's protocol state, by node number.
    pub fn states(&self) -> &[S] {
        &self.state
    }

    /// What node `n` dropped so far (refused operations and unhandled
    /// messages), by cause; the run's report names the first of each
    /// ([`RunReport::refused`]).
    pub fn drops(&self, n: NodeId) -> Result<Drops, NoNode> {
        self.hw
            .get(n.index())
            .map(NodeHw::drops)
            .ok_or(self.no_node(n))
    }

    /// The run's cycle budget: it stops (not clean, [`Halt::Budget`])
    /// before an instant later than this: its parameters' `budget`
    /// ([`MagicParams::budget`], [`DEFAULT_BUDGET`] by default) unless
    /// [`Magic::set_budget`] changed it since.
    pub fn budget(&self) -> Cycles {
        self.budget
    }

    /// Look for a livelock ([`Halt::Livelock`]) after `limit` handlers in a
    /// row from the software queue with nothing else applied ([`SPIN_LIMIT`]
    /// by default), or never (`None`): for a protocol whose handlers do
    /// that much local work in a row and do end. A limit of 0 is taken as 1.
    /// The same limit bounds processor steps at one cycle that ask to step
    /// again at once ([`Halt::ProcessorSpin`]).
    pub fn set_spin_limit(&mut self, limit: Option<u64>) {
        self.spin_limit = limit.map_or(u64::MAX, |l| l.max(1));
    }

    /// Halt a run ([`Halt::Events`]) once it has applied `limit` events
    /// ([`EVENT_LIMIT`] by default), or never (`None`): for a run longer
    /// than any of the kit's own. A run halted on the limit goes on under a
    /// larger one (it halted before an instant it applied nothing of).
    /// A limit of 0 is taken as 1.
    pub fn set_event_limit(&mut self, limit: Option<u64>) {
        self.event_limit = limit.map_or(u64::MAX, |l| l.max(1));
        if matches!(self.halt, Some(Halt::Events { limit, .. }) if limit < self.event_limit) {
            self.halt = None;
        }
    }

    /// Set the run's cycle budget, from 1 to [`MAX_BUDGET`] cycles. A run
    /// halted on its budget ([`Halt::Budget`]) goes on under the new one
    /// (it halted before an instant it applied nothing of).
    ///
    /// ```
    /// # use magic::{Cycles, Magic, MagicParams, NodeId, Protocol, Install};
    /// # struct Idle;
    /// # impl Protocol for Idle {
    /// #     type Node = ();
    /// #     fn name(&self) -> &'static str { "idle" }
    /// #     fn node(&self, _: NodeId, _: u32) {}
    /// #     fn install<S: 'static>(&self, _: &mut Install<'_, S, ()>) {}
    /// # }
    /// // The machine takes its parameters' budget (a scenario's
    /// // `[machine] budget`) when it is built.
    /// let p = MagicParams { budget: Cycles(5000), ..MagicParams::default() };
    /// let mut m = Magic::with(p, 2, &Idle).unwrap();
    /// assert_eq!(m.budget(), Cycles(5000));
    /// m.set_budget(Cycles(1_000_000)).unwrap();
    /// let e = m.set_budget(Cycles(0)).unwrap_err();
    /// assert_eq!(e.to_string(), "budget must be from 1 to 1000000000000, got 0");
    /// ```
    pub fn set_budget(&mut self, budget: Cycles) -> Result<(), crate::OutOfRange> {
        crate::OutOfRange::check("budget", budget, Cycles(1), MAX_BUDGET)?;
        self.budget = budget;
        // A run halted on the old budget stopped before its next instant,
        // which it applied nothing of: it goes on under the new one.
        if matches!(self.halt, Some(Halt::Budget { .. })) {
            self.halt = None;
        }
        Ok(())
    }

    /// Why the run stopped early, if it did (see [`Halt`]): a halted
    /// machine runs no further.
    pub fn halted(&self) -> Option<&Halt> {
        self.halt.as_ref()
    }

    /// The compute processor of `node` hands MAGIC `msg` at cycle `at`
    /// (through the processor interface input queue).
    pub fn post(&mut self, node: NodeId, at: Cycles, msg: Msg) -> Result<(), PostError> {
        self.post_data(node, at, msg, None)
    }

    /// As `post`, with a line of data (a writeback, a command's payload).
    pub fn post_data(
        &mut self,
        node: NodeId,
        at: Cycles,
        mut msg: Msg,
        data: Option<[u8; LINE_BYTES]>,
    ) -> Result<(), PostError> {
        self.check_post(node, at)?;
        if msg.len as usize > LINE_BYTES {
            return Err(PostError::TooLong { len: msg.len });
        }
        msg.src = node;
        let here = Arrival {
            first: at,
            full: at,
        };
        let (pkt, tag) = self.packets.insert(msg, data, here);
        self.engine.schedule(
            Time::from_cycles(at + self.params.inbox_dispatch),
            Ev::Deliver {
                node: node.0,
                q: InQueue::Processor,
                pkt,
                tag,
            },
        );
        Ok(())
    }

    /// Messages MAGIC handed node `n`'s processor, with their cycles; drained.
    pub fn take_processor_messages(&mut self, n: NodeId) -> Result<Vec<(Cycles, Msg)>, NoNode> {
        let e = self.no_node(n);
        let hw = self.hw.get_mut(n.index()).ok_or(e)?;
        Ok(std::mem::take(&mut hw.to_processor))
    }

    /// Memory of node `n` (functional access, for setting up and checking data).
    pub fn memory(&self, n: NodeId) -> Result<&Memory, NoNode> {
        self.hw
            .get(n.index())
            .map(|hw| &hw.mem)
            .ok_or(self.no_node(n))
    }

    /// Memory of node `n`, to set up data (functional: no cycles charged).
    pub fn memory_mut(&mut self, n: NodeId) -> Result<&mut Memory, NoNode> {
        let e = self.no_node(n);
        self.hw.get_mut(n.index()).map(|hw| &mut hw.mem).ok_or(e)
    }

    /// The compute processor's cache of node `n` (states and bytes of its lines).
    pub fn pcache(&self, n: NodeId) -> Result<&ProcCache, NoNode> {
        self.hw
            .get(n.index())
            .map(|hw| &hw.pcache)
            .ok_or(self.no_node(n))
    }

    /// The compute processor's cache of node `n`, to set up lines before a run.
    pub fn pcache_mut(&mut self, n: NodeId) -> Result<&mut ProcCache, NoNode> {
        let e = self.no_node(n);
        self.hw.get_mut(n.index()).map(|hw| &mut hw.pcache).ok_or(e)
    }

    /// Run until no event is left (or the run halts: see [`Halt`]).
    pub fn run(&mut self) -> RunReport {
        self.run_until(None)
    }

    /// Run until no event is left or the next one is later than `limit`
    /// (or the run halts: see [`Halt`]).
    pub fn run_until(&mut self, limit: Option<Cycles>) -> RunReport {
        let mut limit_reached = false;
        loop {
            // The caller's limit before the budget and the end of time: an
            // instant past the limit is not the run's to halt on.
            if let Some(l) = limit {
                let next = self.engine.next_time();
                if self.halt.is_none() && next.is_some_and(|t| t.to_cycles_floor() > l) {
                    limit_reached = true;
                    break;
                }
            }
            let Some(t) = self.next_instant() else {
                break;
            };
            self.instant(t);
        }
        self.report(limit_reached)
    }

    /// Apply the next instant (every event stamped with the earliest time,
    /// then arbitration) and return its cycle; `None` when nothing is left
    /// or the run has halted ([`Magic::halted`]).
    /// For checkers that look at the machine between instants.
    pub fn step(&mut self) -> Option<Cycles> {
        let t = self.next_instant()?;
        self.instant(t);
        Some(t.to_cycles_floor())
    }

    /// The time of the next instant the run may apply: `None` when no
    /// event is left or the run has halted, or halts now because the next
    /// event lies past its budget or past the end of time.
    pub(crate) fn next_instant(&mut self) -> Option<Time> {
        if self.halt.is_some() {
            return None;
        }
        let (t, &ev) = self.engine.peek()?;
        let c = t.to_cycles_floor();
        if c > LAST_CYCLE {
            let (node, what) = self.describe_event(ev);
            self.halt = Some(Halt::EndOfTime {
                node: NodeId(node),
                what,
                at: c.0 as u128,
            });
            return None;
        }
        if c > self.budget {
            self.halt = Some(Halt::Budget {
                budget: self.budget,
                next: c,
            });
            return None;
        }
        if self.engine.popped() >= self.event_limit {
            self.halt = Some(Halt::Events {
                events: self.engine.popped(),
                limit: self.event_limit,
                at: self.now(),
            });
            return None;
        }
        Some(t)
    }

    /// An event as people read it: its node, and what it is.
    fn describe_event(&self, ev: Ev) -> (u32, String) {
        match ev {
            Ev::Deliver { node, q, pkt, .. } => {
                let m = self.packets.msg(pkt);
                let what = format!(
                    "the delivery of {} from node {} to the {} queue",
                    self.reg.describe(m.mtype),
                    m.src,
                    q.name()
                );
                (node, what)
            }
            Ev::Arrive { node, pkt, .. } => {
                let m = self.packets.msg(pkt);
                let what = format!(
                    "the arrival of {} from node {} at the inbound port",
                    self.reg.describe(m.mtype),
                    m.src
                );
                (node, what)
            }
            Ev::PpDone { node } => (node, "the end of a handler".to_string()),
            Ev::Wake { node } => (node, "the inbox's next look".to_string()),
            Ev::ProcStep { node } => (node, "the processor's step".to_string()),
            Ev::ProcDeliver { node, pkt } => {
                let m = self.packets.msg(pkt);
                let what = format!(
                    "the delivery of {} to the processor",
                    self.reg.describe(m.mtype)
                );
                (node, what)
            }
        }
    }

    pub(crate) fn instant(&mut self, t: Time) {
        let c = t.to_cycles_floor();
        self.apply_batched(t, c);
        self.arbitrate(c);
        if self.spin >= self.spin_limit {
            self.look_for_livelock(c);
        }
    }

    /// The spin limit's software-queue handlers have run with nothing else
    /// applied: halt if nothing but their loop is in flight, or count
    /// again if something is (it may end the loop).
    #[cold]
    #[inline(never)]
    fn look_for_livelock(&mut self, t: Cycles) {
        self.spin = 0;
        let outside = |ev: &Ev| match ev {
            Ev::Deliver { q, .. } => *q != InQueue::Software,
            Ev::Arrive { .. } => true,
            Ev::PpDone { .. } | Ev::Wake { .. } => false,
            Ev::ProcStep { .. } | Ev::ProcDeliver { .. } => true,
        };
        // A buffer still on its way back may end a loop that waits for
        // one. (One booked for now or before is back already: a loop that
        // allocates took it in at its last try.)
        let returning = self
            .hw
            .iter()
            .any(|hw| hw.bufs.last_return().is_some_and(|r| r > t));
        if returning
            || self.held.is_some()
            || self
                .engine
                .find_map(|ev| outside(ev).then_some(()))
                .is_some()
        {
            return;
        }
        // The loop goes on only if a handler put more on a software queue:
        // a chain that has just ended is no loop.
        let queued = self.hw.iter().enumerate().find_map(|(n, hw)| {
            let f = hw.queues[InQueue::Software as usize].front()?;
            Some((n as u32, f.pkt))
        });
        let coming = || {
            self.engine.find_map(|ev| match *ev {
                Ev::Deliver {
                    node,
                    q: InQueue::Software,
                    pkt,
                    ..
                } => Some((node, pkt)),
                _ => None,
            })
        };
        let Some((node, pkt)) = queued.or_else(coming) else {
            return;
        };
        let what = self.reg.describe(self.packets.msg(pkt).mtype);
        self.halt.get_or_insert(Halt::Livelock {
            node: NodeId(node),
            what,
            at: t,
            limit: self.spin_limit,
        });
    }

    /// Apply the events stamped `t` in order, a batch at a time (those
    /// scheduled for `t` while applying a batch form the next: the engine
    /// hands over its slot of the instant whole). No hints here: applying
    /// an event is a few dozen instructions that depend on no other
    /// event's, so the core overlaps their misses on its own (asking a
    /// few events ahead measured no faster at 1024 or 4096 nodes).
    fn apply_batched(&mut self, t: Time, c: Cycles) {
        let mut batch = std::mem::take(&mut self.batch);
        loop {
            batch.clear();
            if !self.engine.take_instant(t, &mut batch) {
                while let Some(ev) = self.engine.pop_next_at(t) {
                    batch.push(ev);
                }
            }
            if batch.is_empty() {
                break;
            }
            for &ev in &batch {
                self.apply(c, ev);
            }
        }
        batch.clear();
        self.batch = batch;
    }

    /// Ask for the packet and the handler's counters of the message node
    /// `n`'s dispatch will most likely take: the front of its first queue,
    /// by the inbox's priority, that holds one (a hint only). A node whose
    /// PP is running dispatches nothing now, and is asked nothing for.
    #[inline]
    fn prefetch_pick(&self, n: u32) {
        let Some(hw) = self.hw.get(n as usize) else {
            return;
        };
        if hw.pp_running {
            return;
        }
        for q in self.params.inbox_priority {
            if let Some(f) = hw.queues[q as usize].front() {
                self.packets.prefetch(f.pkt);
                self.prefetch_stats(n, f);
                return;
            }
        }
    }

    /// Ask for the counters of the handler a queued message of node `n`
    /// will run (a hint only).
    #[inline]
    fn prefetch_stats(&self, n: u32, f: &Queued) {
        let route = self
            .table
            .get(f.mtype.0 as usize)
            .and_then(|r| r[f.region as usize & 3]);
        if let Some(r) = route {
            crate::hint::prefetch_elem(&self.stats, self.stat_index(n, r.handler.0));
        }
    }

    /// Ask for the lines node `n`'s dispatch will touch first (a hint only).
    #[inline]
    fn prefetch_dispatch(&self, n: u32) {
        NodeHw::prefetch_dispatch(&self.hw, n);
        crate::hint::prefetch_elem(&self.state, n as usize);
    }

    /// How the run stands: its end so far, why it stopped early if it
    /// did, what is left behind and what was refused.
    pub fn report(&self, limit_reached: bool) -> RunReport {
        RunReport {
            end: self.now(),
            engine_events: self.engine.popped(),
            limit_reached,
            halted: self.halt.clone(),
            stuck: self.stuck(),
            refused: self.refused(),
        }
    }

    fn mark(&mut self, n: u32) {
        let hw = &mut self.hw[n as usize];
        if !hw.dirty {
            hw.dirty = true;
            self.dirty.push(n);
        }
    }

    #[inline]
    pub(crate) fn apply(&mut self, t: Cycles, ev: Ev) {
        if let Some(held) = self.held.as_mut() {
            if let Some(h) = crate::node::Held::of(ev, &self.packets) {
                held.push(h);
                return;
            }
        }
        match ev {
            Ev::Deliver { node, q, pkt, tag } => {
                let new = Queued::new(pkt, t, tag);
                let hw = &mut self.hw[node as usize];
                let queue = &mut hw.queues[q as usize];
                let mut pos = queue.len();
                if matches!(q, InQueue::NetReply | InQueue::NetRequest) {
                    hw.net_delivered += 1;
                    // Simultaneous arrivals enter lowest source first (the
                    // source is read only when there is a tie to break).
                    while pos > 0 {
                        let prev = queue[pos - 1];
                        if prev.at == t
                            && self.packets.msg(prev.pkt).src > self.packets.msg(pkt).src
                        {
                            pos -= 1;
                        } else {
                            break;
                        }
                    }
                }
                queue.insert(pos, new);
                self.mark(node);
            }
            Ev::Arrive { node, q, pkt, tag } => self.arrive(t, node, q, pkt, tag),
            Ev::PpDone { node } => {
                self.hw[node as usize].pp_running = false;
                self.mark(node);
            }
            Ev::Wake { node } => {
                let hw = &mut self.hw[node as usize];
                if hw.wake_at == Some(t) {
                    hw.wake_at = None;
                }
                self.mark(node);
            }
            Ev::ProcStep { node } => {
                self.spin = 0;
                self.step_processor(t, node)
            }
            Ev::ProcDeliver { node, pkt } => {
                self.spin = 0;
                self.deliver_to_processor(t, node, pkt)
            }
        }
    }

    /// Packet `pkt` reaches node `node`'s inbound port at `t`: it comes in
    /// once the port is free (one packet at a time, each for its wire
    /// time), its data that much later, and is delivered when its header
    /// (or, for a whole-packet route, its last byte) is in, as a send
    /// with the port to itself would have delivered it.
    #[cold]
    #[inline(never)]
    fn arrive(&mut self, t: Cycles, node: u32, q: InQueue, pkt: u32, tag: crate::node::Tag) {
        let p = &self.params;
        let msg = *self.packets.msg(pkt);
        let hw = &mut self.hw[node as usize];
        let start = t.max(hw.in_free);
        let late = start - t;
        if late.0 > 0 {
            self.packets.delay_data(pkt, late);
        }
        // Its time on the port is its time on the sender's wire (its data
        // may have left later than its header, waiting to be read).
        let wire = p.wire_cycles(msg.len as u64);
        let full = self
            .packets
            .data_full(pkt)
            .map_or(start + wire, |f| f.max(start + wire));
        hw.in_free = full;
        let header = start + p.wire_cycles(0);
        let deliver = crate::cx::delivered_at(&self.table, &msg, header, full);
        self.engine.schedule(
            Time::from_cycles(deliver + p.inbox_dispatch),
            Ev::Deliver { node, q, pkt, tag },
        );
    }

    /// Node `node`'s compute processor takes a step (out of the line of
    /// MAGIC's own events, the many).
    #[inline(never)]
    fn step_processor(&mut self, t: Cycles, node: u32) {
        let mut requests = SmallVec::new();
        let hw = &mut self.hw[node as usize];
        let traced = hw.trace.as_deref().map_or(0, Vec::len);
        let step = self.state[node as usize].processor_step(&mut Processor::of(
            hw,
            &self.reg,
            NodeId(node),
            t,
            &mut requests,
        ));
        self.processor_traced(node, traced, t);
        self.processor_after(node, t, step, requests);
    }

    /// Packet `pkt` reaches node `node`'s compute processor (out of the
    /// line of MAGIC's own events).
    #[inline(never)]
    fn deliver_to_processor(&mut self, t: Cycles, node: u32, pkt: u32) {
        let (msg, data) = self.packets.take(pkt);
        let mut requests = SmallVec::new();
        let hw = &mut self.hw[node as usize];
        let traced = hw.trace.as_deref().map_or(0, Vec::len);
        let step = self.state[node as usize].processor_receive(
            &mut Processor::of(hw, &self.reg, NodeId(node), t, &mut requests),
            &msg,
            data.as_ref(),
        );
        self.processor_traced(node, traced, t);
        let hw = &mut self.hw[node as usize];
        match step {
            Some(step) => self.processor_after(node, t, step, requests),
            None => hw.to_processor.push((t, msg)),
        }
    }

    /// Count what node `node`'s processor recorded on its timeline in a
    /// step, its timelines having held `before` slices.
    fn processor_traced(&mut self, node: u32, before: usize, t: Cycles) {
        let len = self.hw[node as usize].trace.as_deref().map(Vec::len);
        if let Some(len) = len {
            count_traced(
                &mut self.traced,
                &mut self.halt,
                len.saturating_sub(before),
                t,
            );
        }
    }

    /// Carry out what a processor step asked for. A request or a step past
    /// the end of time halts the run, naming it.
    fn processor_after(&mut self, node: u32, t: Cycles, step: ProcStep, requests: Requests) {
        for (msg, data) in requests {
            let at = t + self.params.pi_in;
            if at > LAST_CYCLE {
                let what = format!(
                    "the processor's request {} entering MAGIC",
                    self.reg.describe(msg.mtype)
                );
                self.halt_past_end(node, what, t.0 as u128 + self.params.pi_in.0 as u128);
                continue;
            }
            // The node is this one and `at` is not in the past: it is
            // taken unless it is longer than a packet, which is refused.
            if let Err(PostError::TooLong { len }) = self.post_data(NodeId(node), at, msg, data) {
                self.hw[node as usize].lose(
                    Cause::TooLong,
                    First {
                        handler: None,
                        step: "processor request",
                        msg: Some(msg.mtype),
                        detail: len.into(),
                        at: t,
                        why: Some(crate::error::Refused::TooLong),
                    },
                );
            }
        }
        if let ProcStep::At(at) = step {
            if at > LAST_CYCLE {
                let what = "the processor's next step".to_string();
                return self.halt_past_end(node, what, at.0 as u128);
            }
            if at <= t {
                // Again at once: time does not pass while it does.
                let (when, n) = self.proc_spin;
                let n = if when == t { n + 1 } else { 1 };
                self.proc_spin = (t, n);
                if n >= self.spin_limit {
                    self.halt.get_or_insert(Halt::ProcessorSpin {
                        node: NodeId(node),
                        at: t,
                        limit: self.spin_limit,
                    });
                    return;
                }
            }
            self.engine
                .schedule(Time::from_cycles(at.max(t)), Ev::ProcStep { node });
        }
    }

    /// Halt the run: `what` on `node` would be at cycle `at`, past the end
    /// of time (the first such thing is the one named).
    #[cold]
    fn halt_past_end(&mut self, node: u32, what: String, at: u128) {
        self.halt.get_or_insert(Halt::EndOfTime {
            node: NodeId(node),
            what,
            at,
        });
    }

    /// `Err` unless `node` exists and `at` is from now to [`Self::LAST_CYCLE`].
    fn check_post(&self, node: NodeId, at: Cycles) -> Result<(), PostError> {
        if node.0 >= self.nodes {
            return Err(self.no_node(node).into());
        }
        if at < self.now() {
            return Err(PostError::Past {
                at: Time::from_cycles(at),
                now: Time::from_cycles(self.now()),
            });
        }
        if at > Self::LAST_CYCLE {
            return Err(PostError::BeyondClock {
                at: at.0 as u128 * crate::time::TICKS_PER_SYSTEM_CYCLE as u128,
            });
        }
        Ok(())
    }

    /// Let node `n`'s compute processor take its first step at `at`.
    pub fn start_processor(&mut self, n: NodeId, at: Cycles) -> Result<(), PostError> {
        self.check_post(n, at)?;
        self.engine
            .schedule(Time::from_cycles(at), Ev::ProcStep { node: n.0 });
        Ok(())
    }

    pub(crate) fn arbitrate(&mut self, t: Cycles) {
        let mut dirty = std::mem::take(&mut self.dirty);
        for (i, &n) in dirty.iter().enumerate() {
            if self.ahead {
                // Two stages ahead, the second reading what the first
                // brought in: the node (its queues' fronts are in it), then
                // the packet and counters of the message it will take.
                if let Some(&ahead) = dirty.get(i + 3 * AHEAD) {
                    self.prefetch_dispatch(ahead);
                }
                if let Some(&ahead) = dirty.get(i + AHEAD) {
                    self.prefetch_pick(ahead);
                }
            }
            self.hw[n as usize].dirty = false;
            if !self.hw[n as usize].pp_running {
                self.dispatch(n, t);
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    /// Pick the next message of node `n` by the inbox's priority and run its
    /// handler. A message is eligible once it has been in its queue through
    /// the inbox stage; one that carries data also needs a free data buffer,
    /// and while none is free lower-priority queues are served. If nothing can
    /// go now, the node is woken when something will be able to.
    fn dispatch(&mut self, n: u32, t: Cycles) {
        loop {
            if self.halt.is_some() {
                // A handler of this instant passed the end of time: no
                // handler runs after it.
                return;
            }
            let hw = &mut self.hw[n as usize];
            let mut pick = None;
            let mut wake: Option<Cycles> = None;
            for q in self.params.inbox_priority {
                let Some(front) = hw.queues[q as usize].front() else {
                    continue;
                };
                if front.at > t {
                    wake = Some(wake.map_or(front.at, |w| w.min(front.at)));
                    continue;
                }
                if !front.data {
                    pick = Some((q, None));
                    break;
                }
                match hw.bufs.alloc(t) {
                    Some(b) => {
                        pick = Some((q, Some(b)));
                        break;
                    }
                    None => {
                        if let Some(r) = hw.bufs.next_return() {
                            wake = Some(wake.map_or(r, |w| w.min(r)));
                        }
                    }
                }
            }
            let Some((q, buf)) = pick else {
                if let Some(w) = wake {
                    if hw.wake_at.is_none_or(|x| w < x || x <= t) {
                        hw.wake_at = Some(w);
                        self.engine
                            .schedule(Time::from_cycles(w), Ev::Wake { node: n });
                    }
                }
                return;
            };
            // Software-queue handlers in a row, none from another queue
            // between them (see `SPIN_LIMIT`).
            self.spin = if q == InQueue::Software {
                self.spin + 1
            } else {
                0
            };
            let queued = hw.queues[q as usize].pop_front().expect("picked");
            let into = buf.and_then(|b| hw.bufs.get_mut(b));
            let msg = self.packets.remove(queued.pkt, into);
            if let Some(w) = hw.watch.as_mut() {
                w.took.get_or_insert(msg);
            }
            hw.dispatched += 1;
            hw.inbox_wait = hw.inbox_wait.saturating_add((t - queued.at).0);
            let Some(route) = self.table[msg.mtype.0 as usize][msg.addr.region() as usize] else {
                hw.lose(
                    Cause::Unhandled,
                    First {
                        handler: None,
                        step: "dispatch",
                        msg: Some(msg.mtype),
                        detail: msg.src.0 as u64,
                        at: t,
                        why: None,
                    },
                );
                let lost = hw.lost.get_or_insert_with(Box::default);
                match lost.unrouted.iter_mut().find(|x| x.0 == msg.mtype) {
                    Some(x) => x.1 += 1,
                    None => lost.unrouted.push((msg.mtype, 1)),
                }
                if let Some(b) = buf {
                    hw.bufs.release(b, t);
                }
                continue;
            };
            let start = t;
            // The speculative read needs a data buffer of its own; with none
            // free, the inbox does not start it.
            let spec = if route.opts.speculative_read
                && msg.addr.region() == Region::Normal
                && msg.addr.node().0 == n
                && msg.addr.offset() < self.params.mem_bytes
            {
                hw.bufs.alloc(t).map(|b| {
                    let lt = hw
                        .mem
                        .read_by(t, self.params.mem_first_dword, route.handler.0 as u32);
                    let x = hw.bufs.get_mut(b).expect("just allocated");
                    x.bytes = hw.mem.line(msg.addr.line());
                    x.first_ready = lt.first;
                    x.ready = lt.last;
                    (
                        b,
                        Ticket {
                            first: lt.first,
                            ready: lt.last,
                        },
                    )
                })
            } else {
                None
            };
            // What the node's timelines held before the handler, which
            // may record its units' slices (see `count_traced`).
            let traced = hw.trace.as_deref().map_or(0, Vec::len);
            let mut out = Run {
                node: NodeId(n),
                handler: route.handler,
                nodes: self.nodes,
                start,
                queued: t - queued.at,
                now: start,
                msg_buf: buf,
                spec,
                tally: crate::cx::Tally::default(),
                last_wire: None,
                past_end: None,
            };
            let entry = &self.handlers[route.handler.0 as usize];
            (entry.call)(
                &mut out,
                hw,
                &mut self.state[n as usize],
                &mut self.engine,
                &mut self.packets,
                &self.table,
                &self.reg,
                &self.params,
                &msg,
            );
            if let Some(p) = out.past_end {
                let what = format!("{}'s {} step", entry.full_name(), p.step);
                self.halt.get_or_insert(Halt::EndOfTime {
                    node: NodeId(n),
                    what,
                    at: p.to,
                });
            }
            let at = self.stat_index(n, route.handler.0);
            let hw = &mut self.hw[n as usize];
            // A handler occupies the PP at least one cycle.
            let end = out.now.max(start + Cycles(1));
            if let Some(tr) = hw.trace.as_mut() {
                use crate::trace::{Slice, Track};
                let (protocol, name) = (entry.protocol, entry.name);
                if start > queued.at {
                    tr.push(Slice {
                        node: n,
                        track: Track::Inbox,
                        protocol,
                        name,
                        start: queued.at,
                        end: start,
                        msg: Some(msg.mtype),
                    });
                }
                tr.push(Slice {
                    node: n,
                    track: Track::Pp,
                    protocol,
                    name,
                    start,
                    end,
                    msg: Some(msg.mtype),
                });
                let added = tr.len().saturating_sub(traced);
                count_traced(&mut self.traced, &mut self.halt, added, t);
            }
            let (tally, left, spec_left) = (out.tally, out.msg_buf, out.spec);
            // Buffers the handler neither sent nor kept go back to the pool.
            for b in left.into_iter().chain(spec_left.map(|s| s.0)) {
                hw.bufs.release(b, end);
            }
            let busy = (end - start).0;
            let s = &mut self.stats[at];
            s.invocations += 1;
            s.busy += busy;
            s.max = s.max.max(busy);
            s.outbox_stall += tally.outbox_stall;
            s.wait += tally.wait;
            s.instructions += tally.instructions;
            s.loads += tally.loads;
            s.stores += tally.stores;
            hw.pp_busy += busy;
            hw.pp_until = end;
            hw.pp_running = true;
            self.engine
                .schedule(Time::from_cycles(end), Ev::PpDone { node: n });
            return;
        }
    }

    /// One line for every piece of work left behind.
    fn stuck(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, hw) in self.hw.iter().enumerate() {
            for q in InQueue::ALL {
                let queue = &hw.queues[q as usize];
                if let Some(front) = queue.front() {
                    let m = *self.packets.msg(front.pkt);
                    let handler = self.table[m.mtype.0 as usize][m.addr.region() as usize]
                        .map_or("no handler".to_string(), |r| {
                            self.handlers[r.handler.0 as usize].full_name()
                        });
                    // A message still in the inbox stage when the run
                    // stopped is due later, not waiting since then.
                    let when = if front.at > self.now() {
                        format!("due at cycle {}", front.at)
                    } else {
                        format!("since cycle {}", front.at)
                    };
                    let mut s = String::new();
                    let _ = write!(
                        s,
                        "node {i}: {} message(s) in the {} queue (first: {} for {handler}, from node {}, {when})",
                        queue.len(),
                        q.name(),
                        self.reg.describe(m.mtype),
                        m.src,
                    );
                    out.push(s);
                }
            }
            let held = hw.bufs.held();
            if held > 0 {
                out.push(format!("node {i}: {held} data buffer(s) still allocated"));
            }
            if let Some(p) = self.state[i].pending() {
                out.push(format!("node {i}: {p}"));
            }
        }
        // Deliveries held for an explorer are work the run did not do.
        if let Some(held) = self.held.as_ref().filter(|h| !h.is_empty()) {
            out.push(format!(
                "{} message(s) held for release (Magic::deliver), first: {}",
                held.len(),
                self.describe_delivery(0)
            ));
        }
        out
    }

    /// One line for every node and cause of what was refused or dropped,
    /// naming the first instance; and events applied late.
    pub(crate) fn refused(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.engine.late() > 0 {
            out.push(format!(
                "{} event(s) were scheduled in the past and applied late: a model bug",
                self.engine.late()
            ));
        }
        for (i, hw) in self.hw.iter().enumerate() {
            let Some(lost) = &hw.lost else {
                continue;
            };
            for (t, n) in &lost.unrouted {
                out.push(format!(
                    "node {i}: {n} message(s) of {} had no route (dropped)",
                    self.reg.describe(*t)
                ));
            }
            for c in Cause::ALL {
                let n = lost.drops.get(c);
                match lost.first[c as usize] {
                    Some(f) if c != Cause::Unhandled => {
                        out.push(format!("node {i}: {}", self.describe_drop(c, n, &f)));
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// `n` drops of cause `c`, the first `f`, in words.
    fn describe_drop(&self, c: Cause, n: u64, f: &First) -> String {
        let handler = f.handler.map_or("the inbox".to_string(), |h| {
            self.handlers
                .get(h.0 as usize)
                .map_or(format!("handler {}", h.0), HandlerEntry::full_name)
        });
        let msg = f
            .msg
            .map_or("a message".to_string(), |t| self.reg.describe(t));
        let d = f.detail;
        let (what, first) = match c {
            Cause::Unhandled => ("message(s) with no route", format!("{msg} from node {d}")),
            Cause::Undecodable => (
                "message(s) dropped: they did not decode as their handler's type",
                format!("{msg} for {handler}"),
            ),
            Cause::BadNode => (
                "send(s) to a node that does not exist",
                format!(
                    "{handler} sent {msg} to node {d} of a {}-node machine",
                    self.nodes
                ),
            ),
            Cause::TooLong => (
                "send(s) of a payload longer than a line",
                format!("{handler} sent {msg} with {d} bytes"),
            ),
            Cause::QueueFull => (
                "reschedule(s) refused by a full software queue",
                format!(
                    "{handler} rescheduled {msg}; the queue holds {d} entries and the head register"
                ),
            ),
            Cause::OverIssue if f.step == "instructions" => (
                "step(s) the PP could not issue",
                format!(
                    "{handler}'s {} instructions in {} bundle(s) on a {}-issue PP",
                    d >> 32,
                    d & u32::MAX as u64,
                    self.params.pp_issue_width
                ),
            ),
            Cause::OverIssue => (
                "step(s) the PP could not issue",
                format!(
                    "{handler}'s {} beyond the {d} instruction(s) it had issued",
                    f.step
                ),
            ),
            Cause::BadAddress => (
                "reference(s) outside this node's memory",
                format!("{handler}'s {} step at {}", f.step, PAddr(d)),
            ),
            Cause::BadBuffer if f.why == Some(crate::error::Refused::NoBuffer) => (
                "step(s) without an allocated data buffer",
                format!(
                    "{handler}'s intervention step on dirty line {}, with no buffer",
                    PAddr(d)
                ),
            ),
            Cause::BadBuffer => {
                let carried = f.msg.map_or(String::new(), |_| format!(" of {msg}"));
                (
                    "step(s) without an allocated data buffer",
                    format!("{handler}'s {} step{carried} with buffer {d}", f.step),
                )
            }
        };
        format!("{n} {what} (the first: {first}, at cycle {})", f.at)
    }

    /// Whether the event loop asks the CPU ahead for the state of the next
    /// few events and nodes: on by default from 512 nodes, where it keeps the
    /// cost per event nearly flat as the machine grows. A host-speed setting
    /// only: a run gives the same result either way.
    pub fn set_ask_ahead(&mut self, on: bool) {
        self.ahead = on;
    }

    /// Start the ledger afresh from now (after a warm-up phase, say): every
    /// handler and unit counter returns to zero; the machine's state stays.
    /// Refused, changing nothing, while a PP runs a handler: its counters
    /// were booked at its dispatch, and the fresh ledger would leave it out.
    pub fn reset_counters(&mut self) -> Result<(), crate::Running> {
        let now = self.now();
        if let Some((n, hw)) = self
            .hw
            .iter()
            .enumerate()
            .find(|(_, hw)| hw.pp_running && hw.pp_until > now)
        {
            return Err(crate::Running {
                node: NodeId(n as u32),
                until: hw.pp_until,
            });
        }
        self.ledger_from = now;
        self.stats.fill(HandlerStats::default());
        for hw in &mut self.hw {
            (hw.pp_busy, hw.dispatched, hw.net_delivered, hw.inbox_wait) = (0, 0, 0, 0);
            hw.link.reset_counters();
            hw.mem.reset_counters();
            hw.pcache.reset_counters();
        }
        Ok(())
    }

    /// Model events so far, counted as the reference peers count them: handler
    /// runs, packets put on a link, and packets delivered from the network.
    pub fn model_events(&self) -> u64 {
        let runs: u64 = self.stats.iter().map(|s| s.invocations).sum();
        runs + self
            .hw
            .iter()
            .map(|hw| hw.link.packets + hw.net_delivered)
            .sum::<u64>()
    }

    /// Where node `n`'s counters of handler `h` are in `stats`.
    fn stat_index(&self, n: u32, h: u16) -> usize {
        n as usize * self.handlers.len() + h as usize
    }

    /// Node `n`'s handler counters, by handler id.
    pub(crate) fn node_stats(&self, n: usize) -> &[HandlerStats] {
        let k = self.handlers.len();
        self.stats.get(n * k..(n + 1) * k).unwrap_or(&[])
    }

    /// Count the slices the nodes' timelines hold afresh (after a restore).
    pub(crate) fn recount_traced(&mut self) {
        self.traced = self
            .hw
            .iter()
            .filter_map(|h| h.trace.as_deref())
            .map(|t| t.len() as u64)
            .sum();
    }

    /// Record every handler invocation and unit busy period from now on.
    pub fn trace_on(&mut self) {
        for hw in &mut self.hw {
            hw.trace = Some(Box::default());
        }
        self.traced = 0;
    }

    /// What was recorded since `trace_on`, in time order.
    pub fn trace(&self) -> Vec<crate::trace::Slice> {
        let mut v: Vec<_> = self
            .hw
            .iter()
            .filter_map(|h| h.trace.as_deref())
            .flatten()
            .copied()
            .collect();
        v.sort_by_key(|s| (s.start, s.node, s.track as u8));
        v
    }

    /// The occupancy ledger of the run so far.
    pub fn ledger(&self) -> Ledger {
        let names: Vec<String> = self.handlers.iter().map(|h| h.full_name()).collect();
        let figures: Vec<NodeFigures<'_>> = self
            .hw
            .iter()
            .enumerate()
            .map(|(n, hw)| NodeFigures {
                handlers: self.node_stats(n),
                units: [
                    (
                        hw.dispatched,
                        hw.dispatched.saturating_mul(self.params.inbox_dispatch.0),
                        hw.inbox_wait,
                    ),
                    (
                        self.node_stats(n).iter().map(|s| s.invocations).sum(),
                        hw.pp_busy,
                        0,
                    ),
                    (hw.link.packets, hw.link.occupied.0, hw.link.stall.0),
                    (hw.mem.ops, hw.mem.busy.0, hw.mem.waited.0),
                    (hw.pcache.ops, hw.pcache.busy.0, hw.pcache.waited.0),
                    (hw.link.packets, hw.link.busy.0, 0),
                ],
            })
            .collect();
        let booked = self
            .hw
            .iter()
            .fold(self.now(), |t, hw| t.max(hw.booked_until()));
        Ledger::build(
            self.now() - self.ledger_from,
            booked - self.ledger_from,
            &names,
            &figures,
        )
    }
}
