//! The FLASH node controller, MAGIC, as a deterministic discrete-event model.
//!
//! This crate is the hardware: simulated [time], the event
//! [engine], the units of a node ([memory], the compute processor's
//! cache in [pcache], the outbox and network [link], MAGIC's data
//! [buffers] and data cache in [dcache]), the macropipeline that runs protocol
//! handlers ([machine]), the handler context ([cx]) through which a handler
//! performs and pays for every step, and the occupancy [ledger].
//! It knows no protocol: a machine runs the [`Protocol`]s installed on it,
//! each with its typed [message]s, handlers and routes. The comparison platforms' network interfaces are in [ni],
//! and [trace] records timelines.
//!
//! Where to start reading: [`Magic`], the machine (build it with
//! [`Magic::with`], [`post`](Magic::post) messages, [`run`](Magic::run) it,
//! read its [`Ledger`]); then [`Protocol`] and [`Install`], how a protocol
//! declares its handlers and routes; [`Cx`], everything a handler can do and
//! what each step costs; [`MagicParams`], every timing figure. [`testing`]
//! runs one handler on a quiet machine and shows its steps.
//!
//! A handler is a plain function over its context; every step it takes is
//! performed and charged there, so the ledger reports what it did:
//!
//! ```
//! use magic::{messages, Cx, Cycles, Install, Magic, MagicParams, Msg, NodeId, PAddr, Protocol, Region};
//!
//! messages! {
//!     /// One message: read the line at its address.
//!     pub enum PingMsg: PingKind {
//!         /// Read the line at the message's address.
//!         Ping,
//!     }
//! }
//!
//! /// Read a line of this node's memory into a data buffer and wait for it.
//! /// A handler takes its kind's own type (`messages!` makes `ping_msg::Ping`),
//! /// and its route takes the kind from it.
//! fn ping(cx: &mut Cx<'_, ()>, m: &Msg, _: ping_msg::Ping) {
//!     cx.instr(4); // decode: two dual-issue bundles
//!     let Some(b) = cx.alloc_buffer() else { return };
//!     if let Ok(t) = cx.mem_read(m.addr, b) {
//!         cx.wait(t); // 14 cycles to the first doubleword, 29 to the whole line
//!     }
//!     let _ = cx.free_buffer(b);
//! }
//!
//! /// The protocol: one handler, no state.
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
//! let mut m = Magic::with(MagicParams::default(), 2, &Pinger).unwrap();
//! let line = PAddr::new(Region::Normal, NodeId(0), 0x1000);
//! let msg = m.msg(NodeId(0), PingMsg::Ping).addr(line);
//! m.post(NodeId(0), Cycles(0), msg).unwrap();
//! assert!(m.run().is_clean());
//!
//! let ledger = m.ledger();
//! let row = ledger.handler(Some(0), "pinger.ping").unwrap();
//! assert_eq!(row.stats.invocations, 1);
//! assert_eq!(row.stats.instructions, 4);
//! // Two cycles of decode, then the wait for the whole line.
//! assert_eq!(row.stats.busy, 2 + 29);
//! println!("{}", ledger.render());
//! ```

#![warn(missing_docs)]

pub mod buffers;
pub mod check;
pub mod controller;
pub mod costs;
pub mod cx;
pub mod dcache;
pub mod engine;
pub mod error;
pub mod figures;
mod hint;
pub mod ids;
pub mod ledger;
pub mod link;
pub mod machine;
pub mod memory;
pub mod message;
pub mod ni;
mod node;
pub mod pack;
pub mod params;
pub mod pcache;
pub mod testing;
pub mod time;
pub mod trace;
mod watch;

pub use controller::Controller;
pub use cx::{Cx, Refused, Ticket};
pub use error::{NoNode, OutOfRange, PostError, Running};
pub use ids::{BufId, HandlerId, Lane, LineAddr, Msg, MsgType, NodeId, PAddr, Region, LINE_BYTES};
pub use ledger::{HandlerStats, Ledger, Unit};
pub use machine::{
    Dispatch, Drops, Halt, Handler, HandlerFn, Install, Magic, MagicBuilder, NodeState, ProcStep,
    Processor, Protocol, RunReport, EVENT_LIMIT, SPIN_LIMIT,
};
pub use message::{BuildError, DecodeError, Message};
pub use params::{InQueue, MagicParams};
pub use pcache::LineState;
pub use time::{Cycles, Time};
