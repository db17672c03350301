//! User-level messaging on MAGIC: command sequences, protection, and the
//! three ways of keeping MAGIC's physical addresses valid while the operating
//! system changes translations (hold-off, invalidation, software TLB), with
//! fetch-and-add, memory copy and sends built on them.
//!
//! By actor: the compute processor's user program and OS ([`cpu`]), MAGIC's
//! handlers ([`handlers`]), and the node's state ([`state`]); the messages
//! between them ([`msg`]), the command registers and operation records
//! ([`cmd`]), the in-use page table ([`pages`]) and the software TLB
//! ([`tlb`]). [`User`] installs it all as one protocol.

pub mod check;
pub mod cmd;
pub mod cpu;
pub mod experiments;
pub mod handlers;
pub mod msg;
pub mod pages;
pub mod params;
pub mod state;
pub mod tlb;
pub mod unit;

pub use cmd::{Field, Nack, OpCode, FLAG_HOLDOFF};
pub use cpu::{UserCpu, UserEvent, UserOp};
pub use msg::{user_msg, UserKind, UserMsg};
pub use pages::{PageTable, UseRef};
pub use params::{UserCosts, UserParams};
pub use state::{MagicSide, UserNode, UserStats};
pub use unit::{machine, User};
