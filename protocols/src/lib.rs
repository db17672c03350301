//! The messaging software that runs on the node controllers.
//!
//! - [`pipeline`]: the engine benchmark's workload built on MAGIC with three
//!   handlers of fixed cost (the way a protocol author prototypes a handler
//!   before writing its code);
//! - [`user`]: user-level messaging through command sequences, and the three
//!   ways of keeping MAGIC's physical addresses valid;
//! - [`transfer`]: bulk transfer over a connection, calibrated on the FLASH
//!   paper's start-up and 4 KB figures;
//! - [`am`]: Active Messages over every controller, and the benchmark suite.

#![warn(missing_docs)]

pub mod am;
pub mod command;
pub mod error;
pub mod os_side;
pub mod pipeline;
pub mod sheets;
pub mod transfer;
pub mod user;

pub use error::Error;

/// How to write a protocol: messages, handlers, what each step costs, a
/// round trip timed cycle by cycle, protocols side by side, and testing one
/// handler. (This is `docs/handlers.md`; its examples run as tests.)
#[doc = include_str!("../../docs/handlers.md")]
pub mod guide {}
