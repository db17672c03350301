//! User-level messaging on MAGIC: command sequences, protection, and the
//! three ways of keeping MAGIC's physical addresses valid while the operating
//! system changes translations (hold-off, invalidation, software TLB), with
//! fetch-and-add, memory copy and sends built on them.

pub mod cmd;
pub mod experiments;
pub mod node;
pub mod pages;
pub mod tlb;

pub use cmd::{Field, Nack, OpCode};
pub use node::{machine, UserCosts, UserEvent, UserNode, UserOp, UserParams};
pub use pages::{PageTable, UseRef};
