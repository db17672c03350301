//! What a watched node's handlers did, step by step: the record the test
//! bench ([`crate::testing`]) reads. A leaf, so the handler context can
//! write it without depending on the bench.

use crate::error::Refused;
use crate::ids::{Msg, NodeId};
use crate::time::Cycles;

/// One step a handler took: what, from when to when (cycles from the
/// handler's start), and a detail (instructions issued; for a transfer it
/// started, when it will be done; for a load or store, the address; for a
/// send, the destination node), or the step MAGIC refused and why.
///
/// A refused step takes no time (`start == end`) and its detail is what it
/// named, by the refusal: the destination node ([`Refused::BadNode`]), the
/// payload length ([`Refused::TooLong`]), the address
/// ([`Refused::BadAddress`], [`Refused::NoBuffer`]), the buffer
/// ([`Refused::BadBuffer`]), the queue's capacity ([`Refused::QueueFull`]);
/// for [`Refused::Overissue`], the instructions (high 32 bits) and bundles
/// (low 32) of an `instructions` step, the instructions issued before a
/// `load` or `store`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Cycle the step began, from the handler's start.
    pub start: Cycles,
    /// Cycle the handler went on after it.
    pub end: Cycles,
    /// `instructions`, `load`, `store`, `wait`, `busy`, `memory read`,
    /// `memory write`, `intervention`, `send`, `reschedule`, `to processor`,
    /// `free buffer` (only when refused).
    pub what: &'static str,
    /// See the type's description.
    pub detail: u64,
    /// Why MAGIC refused the step (`None`: it was done).
    pub refused: Option<Refused>,
}

/// Where a handler sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// Through the outbox to a node (itself: loopback).
    Node(NodeId),
    /// This node's software queue.
    Software,
    /// This node's compute processor.
    Processor,
}

/// A message a handler sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// Cycle it was handed over, from the handler's start.
    pub at: Cycles,
    /// Where to.
    pub to: Dest,
    /// The header.
    pub msg: Msg,
    /// Whether a line of data went with it.
    pub data: bool,
    /// Its type as people read it (`protocol Type::Kind`).
    pub name: String,
}

/// What a watched node's handlers did.
#[derive(Clone, Default)]
pub(crate) struct Watch {
    pub steps: Vec<Step>,
    pub sent: Vec<Sent>,
    /// The message the watched node's first dispatch took.
    pub took: Option<Msg>,
}
