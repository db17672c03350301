//! The FLASH node controller, MAGIC, as a deterministic discrete-event model.
//!
//! This crate is the hardware: simulated [time], the event
//! [engine], the units of a node ([memory], the compute processor's
//! cache in [pcache], the outbox and network [link], MAGIC's data
//! [buffers] and data cache in [dcache]), the macropipeline that runs protocol
//! handlers ([machine]), the handler context ([cx]) through which a handler
//! performs and pays for every step, and the occupancy [ledger].
//! It knows no protocol: whoever builds a machine registers handlers and fills
//! the jump table.

pub mod buffers;
pub mod controller;
pub mod cx;
pub mod dcache;
pub mod engine;
pub mod ids;
pub mod ledger;
pub mod link;
pub mod machine;
pub mod memory;
pub mod ni;
pub mod params;
pub mod pcache;
pub mod table;
pub mod time;
pub mod trace;

pub use controller::Controller;
pub use cx::{Cx, Refused, Ticket};
pub use ids::{BufId, HandlerId, Lane, LineAddr, Msg, MsgType, NodeId, PAddr, Region, LINE_BYTES};
pub use ledger::{HandlerStats, Ledger, Unit};
pub use machine::{
    Dispatch, Drops, HandlerFn, Magic, MagicBuilder, NodeState, ProcStep, Processor, RunReport,
};
pub use params::{InQueue, MagicParams};
pub use pcache::LineState;
pub use time::{Cycles, Time};
