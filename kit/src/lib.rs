#![warn(missing_docs)]
//! flashkit: a model of the Stanford FLASH multiprocessor's programmable node
//! controller, MAGIC, and the message-passing protocols that run on it.
//!
//! This facade re-exports the workspace's crates under one name and holds
//! the study layer: [`scenario`] files, [`sweep`]s over their keys, and the
//! [`plot`]s' data (drawn with the `plot` feature).

pub use coherence;
pub use magic;
pub use os_shim;
pub use protocols;

pub mod plot;
pub mod scenario;
pub mod sweep;

/// The README, whose library example runs as this crate's test.
#[doc = include_str!("../../README.md")]
pub mod readme {}
