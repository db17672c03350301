//! The directory-based cache-coherence protocol on MAGIC, the compute
//! processor that drives it, and the coherence modes for message data.
//!
//! - [`directory`]: entries (the reference model's fields) and the home's
//!   rules, pure functions; docs/coherence.md maps each rule to its handler.
//! - [`msg`]: the protocol's messages ([`CohMsg`]).
//! - [`protocol`]: the handlers (read and write misses, upgrades,
//!   invalidations with acknowledgements, interventions, three-hop forwards,
//!   writebacks, NAK and retry), the per-node state, and the protocol unit
//!   [`Coherence`].
//! - [`processor`]: an in-order processor running a program of loads, stores
//!   and evictions against its cache, missing to MAGIC.
//! - [`modes`]: none / local / global coherence for message data, as plans
//!   the messaging handlers perform.
//! - [`miss`]: the single read-miss experiment (`flashkit miss`).
//! - [`sharing`]: many readers of a line, some evicting, then a writer: the
//!   cost per hint and per invalidation (`[sharing]`).
//! - [`error`]: what the crate's calls refuse ([`Error`]; a value out of
//!   range names its field through [`magic::OutOfRange`]).
//!
//! Where to start reading: [`directory`], whose pure functions say what the
//! home does with each request; then [`protocol`], whose handlers perform
//! those decisions and charge them; [`processor`] for the program that
//! drives a machine.
//!
//! A machine running the protocol alone:
//!
//! ```
//! use coherence::{Access, Coherence};
//! use magic::{Cycles, Magic, MagicParams, NodeId, PAddr, Region};
//!
//! let mut m = Magic::with(MagicParams::default(), 2, &Coherence::default()).unwrap();
//! let line = PAddr::new(Region::Normal, NodeId(1), 0x1000);
//! m.state_mut(NodeId(0)).unwrap().proc.push([Access::Store(line, 7), Access::Load(line)]);
//! m.start_processor(NodeId(0), Cycles(0)).unwrap();
//! assert!(m.run().is_clean());
//! assert_eq!(m.state(NodeId(0)).unwrap().proc.results[1].value, Some(7));
//! assert!(m.ledger().handler(Some(1), "coherence.home_request").is_some());
//! ```

#![warn(missing_docs)]

pub mod check;
pub mod directory;
pub mod error;
pub mod miss;
pub mod modes;
pub mod msg;
pub mod processor;
pub mod protocol;
pub mod sharing;

pub use directory::{Acks, DirEntry, DirFormat, DirState, Sharers};
pub use error::Error;
pub use msg::{coh_msg, CohKind, CohMsg};
pub use processor::{Access, AccessResult};
pub use protocol::{
    machine, CohNode, CohParams, CohStats, Coherence, Coherent, Forwards, Placement,
};
