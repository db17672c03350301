//! The messaging software that runs on the node controllers.
//!
//! So far: [`pipeline`], the engine benchmark's workload built on MAGIC with
//! three handlers of fixed cost (the way a protocol author prototypes a handler
//! before writing its code).

pub mod pipeline;
pub mod transfer;
pub mod user;
