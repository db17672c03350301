//! The FLASH node controller, MAGIC, as a deterministic discrete-event model.
//!
//! This crate is the hardware: simulated [time], the event
//! [engine], the units of a node ([memory], the compute processor's
//! cache in [pcache], the outbox and network [link], MAGIC's data
//! [buffers] and data cache in [dcache]), the macropipeline that runs protocol
//! handlers ([machine]), the handler context ([cx]) through which a handler
//! performs and pays for every step, and the occupancy [ledger].
//! It knows no protocol: whoever builds a machine registers handlers and fills
//! the jump table. The comparison platforms' network interfaces are in [ni],
//! and [trace] records timelines.
//!
//! A handler is a plain function over its context; every step it takes is
//! performed and charged there, so the ledger reports what it did:
//!
//! ```
//! use magic::{Cx, Cycles, MagicBuilder, MagicParams, Msg, MsgType, NodeId, PAddr, Region};
//!
//! const PING: MsgType = MsgType(1);
//!
//! /// Read a line of this node's memory into a data buffer and wait for it.
//! fn ping(cx: &mut Cx<'_, ()>, m: &Msg) {
//!     cx.instr(4); // decode: two dual-issue bundles
//!     let b = cx.alloc_buffer().expect("the pool is not empty");
//!     let t = cx.mem_read(m.addr, b).expect("a local line");
//!     cx.wait(t); // 14 cycles to the first doubleword, 29 to the whole line
//!     let _ = cx.free_buffer(b);
//! }
//!
//! let mut b = MagicBuilder::new(MagicParams::default(), 2);
//! let h = b.handler("ping", ping);
//! b.route_any(PING, h);
//! let mut m = b.build(|_| ()).unwrap();
//! let line = PAddr::new(Region::Normal, NodeId(0), 0x1000);
//! m.post(NodeId(0), Cycles(0), Msg::new(PING, NodeId(0), NodeId(0)).addr(line)).unwrap();
//! assert!(m.run().is_clean());
//!
//! let ledger = m.ledger();
//! let row = ledger.handler(Some(0), "ping").unwrap();
//! assert_eq!(row.stats.invocations, 1);
//! assert_eq!(row.stats.instructions, 4);
//! // Two cycles of decode, then the wait for the whole line.
//! assert_eq!(row.stats.busy, 2 + 29);
//! println!("{}", ledger.render());
//! ```

pub mod buffers;
pub mod controller;
pub mod costs;
pub mod cx;
pub mod dcache;
pub mod engine;
pub mod ids;
pub mod ledger;
pub mod link;
pub mod machine;
pub mod memory;
pub mod message;
pub mod ni;
mod node;
pub mod params;
pub mod pcache;
pub mod table;
pub mod testing;
pub mod time;
pub mod trace;
mod watch;

pub use controller::Controller;
pub use cx::{Cx, Refused, Ticket};
pub use ids::{BufId, HandlerId, Lane, LineAddr, Msg, MsgType, NodeId, PAddr, Region, LINE_BYTES};
pub use ledger::{HandlerStats, Ledger, Unit};
pub use machine::{
    Dispatch, Drops, Handler, HandlerFn, Install, Magic, MagicBuilder, NodeState, ProcStep,
    Processor, Protocol, RawHandlerFn, RunReport,
};
pub use message::{BuildError, DecodeError, Message};
pub use params::{InQueue, MagicParams};
pub use pcache::LineState;
pub use time::{Cycles, Time};
