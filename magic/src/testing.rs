//! A test bench for handlers: a quiet machine running only the protocols
//! under test. Inject one message and get back what its handler did, step
//! by step, with its ledger line and the messages it sent; or run the
//! machine to quiescence within a deadline.
//!
//! ```
//! use magic::testing::Bench;
//! use magic::{messages, Cx, Install, Msg, NodeId, Protocol};
//!
//! messages! {
//!     /// A ping and its answer.
//!     pub enum PingMsg: PingKind {
//!         /// Ask for an answer.
//!         Ping,
//!         /// The answer.
//!         Pong => Reply,
//!     }
//! }
//!
//! fn ping(cx: &mut Cx<'_, ()>, m: &Msg, _: ping_msg::Ping) {
//!     cx.instr(4);
//!     let _ = cx.send(cx.msg(ping_msg::Pong).to(m.src), None);
//! }
//!
//! struct Pinger;
//! impl Protocol for Pinger {
//!     type Node = ();
//!     fn name(&self) -> &'static str {
//!         "pinger"
//!     }
//!     fn node(&self, _: NodeId, _: u32) {}
//!     fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
//!         let h = b.handler("ping", ping);
//!         b.route_any(h);
//!     }
//! }
//!
//! let mut bench = Bench::new(2, &Pinger).unwrap();
//! let msg = bench.msg(NodeId(0), PingMsg::Ping).to(NodeId(1));
//! let shot = bench.inject(NodeId(1), msg).unwrap();
//! assert_eq!(shot.handler, "pinger.ping");
//! assert_eq!((shot.stats.busy, shot.stats.instructions), (2, 4));
//! assert_eq!(shot.sent[0].name, "pinger PingMsg::Pong");
//! ```

use crate::error::Refused;
use crate::ids::{Msg, NodeId, PAddr, LINE_BYTES};
use crate::ledger::HandlerStats;
use crate::machine::{Magic, NodeState, Protocol, RunReport};
use crate::message::{BuildError, DecodeError, IntoMessage, Message};
use crate::node::Ev;
use crate::params::{InQueue, MagicParams};
use crate::time::{Cycles, Time};
use core::fmt;

pub use crate::watch::{Dest, Sent, Step};

/// One handler invocation, seen whole.
#[derive(Clone, Debug, PartialEq)]
pub struct Shot {
    /// The node it ran on.
    pub node: NodeId,
    /// The ledger's name of the handler (`protocol.handler`).
    pub handler: String,
    /// Its ledger line: one invocation.
    pub stats: HandlerStats,
    /// Its steps, in order.
    pub steps: Vec<Step>,
    /// The messages it sent, in order.
    pub sent: Vec<Sent>,
}

impl fmt::Display for Shot {
    /// A text table: the ledger line, the steps, the messages sent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        writeln!(
            f,
            "{} on node {}: {} cycles, {} instructions, {} loads, {} stores, {} waiting, {} outbox stall",
            self.handler, self.node, s.busy, s.instructions, s.loads, s.stores, s.wait, s.outbox_stall
        )?;
        writeln!(f, "{:>5} {:>5}  {:<14} detail", "from", "to", "step")?;
        for st in &self.steps {
            let d = st.detail;
            let detail = match st.refused {
                Some(why) => refused(why, st.what, d),
                None => done(st),
            };
            let line = format!(
                "{:>5} {:>5}  {:<14} {detail}",
                st.start.0, st.end.0, st.what
            );
            writeln!(f, "{}", line.trim_end())?;
        }
        for m in &self.sent {
            let to = match m.to {
                Dest::Node(n) => format!("node {n}"),
                Dest::Software => "software queue".to_string(),
                Dest::Processor => "processor".to_string(),
            };
            let data = if m.data { ", with a line" } else { "" };
            writeln!(f, "sent at {:>3}: {} to {to}{data}", m.at.0, m.name)?;
        }
        Ok(())
    }
}

/// A refused step's detail column: what step `what` named, and why it
/// was refused.
fn refused(why: Refused, what: &str, d: u64) -> String {
    let named = match why {
        Refused::Overissue if what == "instructions" => {
            format!("{} in {} bundle(s)", d >> 32, d & u32::MAX as u64)
        }
        Refused::Overissue => format!("beyond {d} instruction(s)"),
        Refused::BadNode => format!("to node {d}"),
        Refused::TooLong => format!("{d} bytes"),
        Refused::BadAddress | Refused::NoBuffer => PAddr(d).to_string(),
        Refused::BadBuffer => format!("buffer {d}"),
        Refused::QueueFull => format!("{d} entries"),
    };
    format!("{named}: refused, {why}")
}

/// A step's detail column (see [`Step`]).
fn done(st: &Step) -> String {
    let d = st.detail;
    match st.what {
        "instructions" => format!("{d} issued"),
        "load" | "store" if st.end > st.start => format!("{d:#x}, a miss"),
        "load" | "store" => format!("{d:#x}"),
        "send" => format!("to node {d}"),
        "memory read" | "memory write" | "intervention" => format!("done at {d}"),
        "to processor" => format!("there at {d}"),
        _ => String::new(),
    }
}

impl Shot {
    /// The steps MAGIC refused (each also a drop that makes the run not
    /// clean).
    pub fn refused(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.refused.is_some())
    }
}

/// Why the bench could not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BenchError {
    /// No such node.
    #[error("no node {node} (the machine has {nodes})")]
    NoNode {
        /// The node asked for.
        node: NodeId,
        /// Nodes in the machine.
        nodes: u32,
    },
    /// The message declares more payload than a packet holds (as
    /// [`Magic::post`](crate::Magic::post) refuses it).
    #[error(
        "a message of {len} bytes of payload: a packet holds at most {}",
        LINE_BYTES
    )]
    TooLong {
        /// The payload the message declares.
        len: u16,
    },
    /// The machine was not quiet: the node took other pending work
    /// before the message injected, whose shot it would not be.
    #[error("the node took {took} before the message injected: inject into a quiet machine (run it first)")]
    NotQuiet {
        /// The message the node took.
        took: String,
    },
    /// The handler ran, and the machine halted as it ended (its clock
    /// passed the end of time, say): its figures would be the halt's, not
    /// the handler's.
    #[error("the handler ran, and the machine halted: {halt}")]
    Halted {
        /// Why the machine halted ([`crate::Halt`], in words).
        halt: String,
    },
    /// The message ran no handler (no route, or the machine ran dry or
    /// halted first): what the run reports.
    #[error("the message ran no handler{}", stuck_list(stuck))]
    NotDispatched {
        /// The run's account of what is wrong ([`RunReport::problems`]).
        stuck: Vec<String>,
    },
}

/// `: what; is; stuck`, or nothing.
fn stuck_list(stuck: &[String]) -> String {
    if stuck.is_empty() {
        String::new()
    } else {
        format!(": {}", stuck.join("; "))
    }
}

/// A quiet machine for testing handlers.
pub struct Bench<S> {
    m: Magic<S>,
}

impl<N: NodeState + 'static> Bench<N> {
    /// `nodes` nodes with FLASH's parameters, running `p` alone.
    pub fn new<P: Protocol<Node = N>>(nodes: u32, p: &P) -> Result<Self, BuildError> {
        Self::with_params(MagicParams::default(), nodes, p)
    }

    /// As [`Bench::new`], with other parameters.
    pub fn with_params<P: Protocol<Node = N>>(
        params: MagicParams,
        nodes: u32,
        p: &P,
    ) -> Result<Self, BuildError> {
        Ok(Bench {
            m: Magic::with(params, nodes, p)?,
        })
    }
}

impl<S: NodeState> Bench<S> {
    /// A bench around a machine built some other way (protocols side by
    /// side, a prepared state).
    pub fn from_machine(m: Magic<S>) -> Self {
        Bench { m }
    }

    /// The machine (to place data, read state, look at the ledger).
    pub fn machine(&mut self) -> &mut Magic<S> {
        &mut self.m
    }

    /// `m` from node `src` (to itself; [`Msg::to`] sends it elsewhere).
    pub fn msg<M: IntoMessage>(&self, src: NodeId, m: M) -> Msg {
        self.m.msg(src, m)
    }

    /// A message decoded (one a handler sent, say).
    pub fn decode<M: Message>(&self, msg: &Msg) -> Result<M, DecodeError> {
        self.m.decode(msg)
    }

    /// Hand `node` the message now and run the handler it dispatches: from
    /// the processor interface if its source is `node`, else from the
    /// network on its lane. Other work the machine has pending runs too,
    /// so inject into a quiet machine: a node that takes other work before
    /// the message is [`BenchError::NotQuiet`]. A message from or to a node
    /// the machine lacks, or with more payload than a packet holds, is
    /// refused. A message with no route is dropped and is
    /// [`BenchError::NotDispatched`], naming the drop, even when other
    /// pending work ran after it. What the handler sent is
    /// delivered only by a later [`Bench::run`].
    pub fn inject(&mut self, node: NodeId, msg: Msg) -> Result<Shot, BenchError> {
        self.inject_data(node, msg, None)
    }

    /// As [`Bench::inject`], with a line of data.
    pub fn inject_data(
        &mut self,
        node: NodeId,
        msg: Msg,
        data: Option<[u8; LINE_BYTES]>,
    ) -> Result<Shot, BenchError> {
        let nodes = self.m.nodes;
        // The message comes from a node of the machine (its source is the
        // node it arrives from).
        for n in [node, msg.src] {
            if n.0 >= nodes {
                return Err(BenchError::NoNode { node: n, nodes });
            }
        }
        if msg.len as usize > LINE_BYTES {
            return Err(BenchError::TooLong { len: msg.len });
        }
        let msg = msg.to(node);
        let q = if msg.src == node {
            InQueue::Processor
        } else {
            match msg.lane {
                crate::ids::Lane::Request => InQueue::NetRequest,
                crate::ids::Lane::Reply => InQueue::NetReply,
            }
        };
        let now = self.m.now();
        let at = crate::node::Arrival {
            first: now,
            full: now,
        };
        let (pkt, tag) = self.m.packets.insert(msg, data, at);
        self.m.engine.schedule(
            Time::from_cycles(now + self.m.params.inbox_dispatch),
            Ev::Deliver {
                node: node.0,
                q,
                pkt,
                tag,
            },
        );
        let i = node.index();
        let before = self.m.node_stats(i).to_vec();
        let dispatched = self.m.hw[i].dispatched;
        self.m.hw[i].watch = Some(Box::default());
        while self.m.hw[i].dispatched == dispatched {
            let Some(t) = self.m.next_instant() else {
                break;
            };
            self.m.instant(t);
        }
        let watch = self.m.hw[i].watch.take().unwrap_or_default();
        // The node's first dispatch took other work the machine had
        // pending, not the message injected: its shot would be another's.
        if let Some(took) = watch.took.filter(|t| *t != msg) {
            return Err(BenchError::NotQuiet {
                took: self.m.reg.describe(took.mtype),
            });
        }
        // The handler is the one the message is routed to. With no route
        // it was dropped, and the same dispatch went on to other pending
        // work: whatever ran then is not the message's.
        let after = self.m.node_stats(i);
        let ran = watch.took.and_then(|t| {
            let route = (*self.m.table.get(t.mtype.0 as usize)?)[t.addr.region() as usize]?;
            let h = route.handler.0 as usize;
            let (a, b) = (*after.get(h)?, *before.get(h)?);
            let name = self.m.handlers.get(h)?.full_name();
            (a.invocations > b.invocations).then_some((name, a, b))
        });
        let Some((handler, a, b)) = ran else {
            return Err(BenchError::NotDispatched {
                stuck: self.m.report(false).problems(),
            });
        };
        if let Some(halt) = &self.m.halt {
            return Err(BenchError::Halted {
                halt: halt.to_string(),
            });
        }
        let stats = HandlerStats {
            invocations: a.invocations - b.invocations,
            busy: a.busy - b.busy,
            max: a.busy - b.busy,
            outbox_stall: a.outbox_stall - b.outbox_stall,
            wait: a.wait - b.wait,
            instructions: a.instructions - b.instructions,
            loads: a.loads - b.loads,
            stores: a.stores - b.stores,
        };
        let sent = watch
            .sent
            .into_iter()
            .map(|mut s| {
                s.name = self.m.reg.describe(s.msg.mtype);
                s
            })
            .collect();
        Ok(Shot {
            node,
            handler,
            stats,
            steps: watch.steps,
            sent,
        })
    }

    /// Run until nothing is left or `deadline` cycles from now have passed.
    pub fn run(&mut self, deadline: Cycles) -> RunReport {
        let limit = self.m.now() + deadline;
        self.m.run_until(Some(limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Install;
    use crate::Cx;

    crate::messages! {
        /// A message with a field that only two words decode as.
        enum Flag: FlagKind {
            /// Set or clear.
            Set { on: bool },
        }
    }

    fn set(cx: &mut Cx<'_, ()>, _: &Msg, _: flag::Set) {
        cx.busy(Cycles(1));
    }

    struct Flags;

    impl Protocol for Flags {
        type Node = ();
        fn name(&self) -> &'static str {
            "flags"
        }
        fn node(&self, _: NodeId, _: u32) {}
        fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
            let h = b.handler("set", set);
            b.route_any(h);
        }
    }

    #[test]
    fn a_payload_field_out_of_range_at_dispatch_is_counted_and_reported() {
        let mut bench = Bench::new(1, &Flags).unwrap();
        let good = bench.msg(NodeId(0), Flag::Set { on: true });
        assert!(bench.inject(NodeId(0), good).is_ok());
        // Only code inside the crate reaches the payload words: forge a
        // `bool` that is neither 0 nor 1.
        let mut bad = good;
        bad.words[0] = 2;
        assert_eq!(
            bench.decode::<Flag>(&bad),
            Err(DecodeError::BadField {
                message: "flags Flag::Set".into()
            })
        );
        // The handler is dispatched but never sees it: dropped and counted.
        let shot = bench.inject(NodeId(0), bad).unwrap();
        assert_eq!(shot.handler, "flags.set");
        assert!(shot.steps.is_empty());
        let r = bench.run(Cycles(100));
        assert!(!r.is_clean());
        assert!(r.stuck.is_empty(), "{:?}", r.stuck);
        assert_eq!(
            r.refused,
            ["node 0: 1 message(s) dropped: they did not decode as their handler's type (the first: flags Flag::Set for flags.set, at cycle 6)"]
        );
        assert_eq!(bench.machine().drops(NodeId(0)).unwrap().undecodable, 1);
    }

    /// A message no machine's node could send, or longer than a packet,
    /// is refused as `Magic::post` refuses it.
    #[test]
    fn an_injection_from_no_node_or_too_long_is_refused() {
        let mut bench = Bench::new(2, &Flags).unwrap();
        let stranger = bench.msg(NodeId(u32::MAX), Flag::Set { on: true });
        assert_eq!(
            bench.inject(NodeId(0), stranger).unwrap_err().to_string(),
            format!("no node {} (the machine has 2)", u32::MAX)
        );
        let long = bench.msg(NodeId(1), Flag::Set { on: true }).len(u16::MAX);
        assert_eq!(
            bench.inject(NodeId(0), long).unwrap_err(),
            BenchError::TooLong { len: u16::MAX }
        );
        assert!(bench.run(Cycles(100)).is_clean());
    }

    /// Work pending before the message injected is taken first: refused,
    /// not shown as the injected message's shot.
    #[test]
    fn an_injection_into_a_busy_machine_is_refused() {
        let mut bench = Bench::new(1, &Flags).unwrap();
        let first = bench.msg(NodeId(0), Flag::Set { on: false });
        bench.machine().post(NodeId(0), Cycles(0), first).unwrap();
        let ours = bench.msg(NodeId(0), Flag::Set { on: true });
        let e = bench.inject(NodeId(0), ours).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the node took flags Flag::Set before the message injected: inject into a quiet \
             machine (run it first)"
        );
        // Quiet again, the injection is its own.
        assert!(bench.run(Cycles(100)).is_clean());
        let shot = bench.inject(NodeId(0), ours).unwrap();
        assert_eq!(shot.handler, "flags.set");
    }

    crate::messages! {
        /// A message routed in one region only.
        enum Near: NearKind {
            /// Answered in the normal region.
            Ping,
        }
    }

    fn ping(cx: &mut Cx<'_, ()>, _: &Msg, _: near::Ping) {
        cx.instr(2);
    }

    /// Routes `Near::Ping` in the normal region only.
    struct NormOnly;

    impl Protocol for NormOnly {
        type Node = ();
        fn name(&self) -> &'static str {
            "norm"
        }
        fn node(&self, _: NodeId, _: u32) {}
        fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
            let h = b.handler("ping", ping);
            b.route(crate::Region::Normal, h);
        }
    }

    /// An injected message with no route is dropped, and the dispatch goes
    /// on to work the machine had pending: the handler that work runs is
    /// not the injected message's shot.
    #[test]
    fn an_injection_with_no_route_is_not_dispatched_whatever_runs_after_it() {
        let mut bench = Bench::new(2, &NormOnly).unwrap();
        let pending = bench.msg(NodeId(0), Near::Ping);
        bench.machine().post(NodeId(0), Cycles(0), pending).unwrap();
        let unrouted = bench
            .msg(NodeId(1), Near::Ping)
            .to(NodeId(0))
            .addr(PAddr::new(crate::Region::Io, NodeId(0), 0));
        let e = bench.inject(NodeId(0), unrouted).unwrap_err();
        let BenchError::NotDispatched { stuck } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(
            stuck,
            &["node 0: 1 message(s) of norm Near::Ping had no route (dropped)"]
        );
        assert_eq!(bench.machine().drops(NodeId(0)).unwrap().unhandled, 1);
        // The pending message ran its handler all the same.
        let ledger = bench.machine().node_stats(0).to_vec();
        assert_eq!(ledger[0].invocations, 1);
        // Alone, the message is not dispatched either.
        let e = bench.inject(NodeId(0), unrouted).unwrap_err();
        assert!(matches!(e, BenchError::NotDispatched { .. }), "{e:?}");
        assert_eq!(bench.machine().drops(NodeId(0)).unwrap().unhandled, 2);
    }

    use crate::message::tests::{BigK, BigM};

    fn big(cx: &mut Cx<'_, ()>, _: &Msg, _: BigM) {
        cx.instr(1);
    }

    /// Routes `BigM`'s kind `BigK(self.0)` to a handler of every kind.
    struct BigP(usize);

    impl Protocol for BigP {
        type Node = ();
        fn name(&self) -> &'static str {
            "big"
        }
        fn node(&self, _: NodeId, _: u32) {}
        fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
            let h = b.handler_of_all("all", big);
            b.route_kind_any(BigK(self.0), h);
        }
    }

    /// A kind whose index is past its names is refused when routed, where
    /// its number was another type's, the one kept for unknown types, or
    /// past the jump table.
    #[test]
    fn a_kind_past_its_names_is_refused_at_install() {
        for i in [1, 2, 251, 253, 254, 255, 256, 1000, usize::MAX] {
            // `Flags` takes type 0: `BigM`'s block starts at 1.
            let e = Magic::pair(MagicParams::default(), 1, &Flags, &BigP(i))
                .err()
                .unwrap_or_else(|| panic!("BigK({i}) was routed"));
            assert_eq!(
                e,
                BuildError::KindOutOfRange {
                    message: "BigM",
                    kind: format!("BigK({i})"),
                    index: i,
                    kinds: 1,
                    protocol: "big",
                }
            );
            assert_eq!(
                e.to_string(),
                format!(
                    "big routes kind BigK({i}) of message type BigM with index {i}, \
                     but the type has 1 kind(s)"
                )
            );
        }
        // Alone, its block starts at 0: a wrapped number would be its own.
        for i in [256, 512] {
            assert!(matches!(
                Bench::new(1, &BigP(i)).err(),
                Some(BuildError::KindOutOfRange { index, .. }) if index == i
            ));
        }
        assert!(Magic::pair(MagicParams::default(), 1, &Flags, &BigP(0)).is_ok());
    }

    /// A message of such a kind reaches no handler (not even its own
    /// type's, whose number a wrapped index would be): it is encoded with
    /// the number kept for unknown types, counted and reported as unrouted.
    #[test]
    fn a_message_of_a_kind_past_its_names_is_unrouted() {
        let mut bench = Bench::new(1, &BigP(0)).unwrap();
        assert_eq!(bench.msg(NodeId(0), BigM(0)).mtype, crate::MsgType(0));
        for i in [256, 1000] {
            let msg = bench.msg(NodeId(0), BigM(i));
            assert_eq!(msg.mtype, crate::message::UNKNOWN);
            let e = bench.inject(NodeId(0), msg).unwrap_err();
            assert!(matches!(e, BenchError::NotDispatched { .. }), "{e:?}");
        }
        let r = bench.run(Cycles(100));
        assert_eq!(
            r.refused,
            ["node 0: 2 message(s) of a type no installed protocol owns had no route (dropped)"]
        );
        assert_eq!(bench.machine().drops(NodeId(0)).unwrap().unhandled, 2);
        assert!(bench
            .machine()
            .node_stats(0)
            .iter()
            .all(|s| s.invocations == 0));
    }
}
