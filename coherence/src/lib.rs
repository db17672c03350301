//! The directory-based cache-coherence protocol on MAGIC, the compute
//! processor that drives it, and the coherence modes for message data.
//!
//! - [`directory`]: entries and the home's state transitions, pure functions.
//! - [`protocol`]: the handlers (read and write misses, upgrades,
//!   invalidations with acknowledgements, interventions, three-hop forwards,
//!   writebacks, NAK and retry) and the per-node state.
//! - [`processor`]: an in-order processor running a program of loads, stores
//!   and evictions against its cache, missing to MAGIC.
//! - [`modes`]: none / local / global coherence for message data, as plans
//!   the messaging handlers perform.
//! - [`miss`]: the single read-miss experiment (`flashkit miss`).

pub mod directory;
pub mod miss;
pub mod modes;
pub mod processor;
pub mod protocol;

pub use directory::{DirEntry, DirFormat, DirState, Sharers};
pub use processor::{Op, OpResult};
pub use protocol::{machine, CohNode, CohParams, CohStats, Placement};
