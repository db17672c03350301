//! The one shape of a bad value: which field, what it may be, what it was.
//!
//! Every crate's error type wraps an [`OutOfRange`] where a configuration
//! field holds a value the model cannot serve, so a study (or the command
//! line, which maps field names to its flags) can say exactly what to change.
//! [`PostError`] is a controller's refusal of a message posted to it;
//! [`Refused`], MAGIC's refusal of a handler's step.

use crate::ids::NodeId;
use crate::time::Time;

/// A configuration field holds a value outside its allowed range.
///
/// ```
/// use magic::OutOfRange;
/// let e = OutOfRange::new("nodes", "at least 3", 2);
/// assert_eq!(e.to_string(), "nodes must be at least 3, got 2");
/// assert_eq!(e.field, "nodes");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be {allowed}, got {got}")]
pub struct OutOfRange {
    /// The field's name as the configuration spells it (`src_offset`).
    pub field: &'static str,
    /// What the field may hold, in words (`from 1 to 256`).
    pub allowed: String,
    /// The value it held.
    pub got: String,
}

impl OutOfRange {
    /// `field` must be `allowed`, and held `got`.
    pub fn new(field: &'static str, allowed: impl Into<String>, got: impl ToString) -> Self {
        OutOfRange {
            field,
            allowed: allowed.into(),
            got: got.to_string(),
        }
    }

    /// `Err` unless `lo <= got <= hi` (inclusive): a value that compares
    /// with neither bound (a NaN) is out of range.
    ///
    /// ```
    /// use magic::OutOfRange;
    /// assert!(OutOfRange::check("chunk", 4u64, 1, 64).is_ok());
    /// let e = OutOfRange::check("chunk", 0u64, 1, 64).unwrap_err();
    /// assert_eq!(e.to_string(), "chunk must be from 1 to 64, got 0");
    /// assert!(OutOfRange::check("share", f64::NAN, 0.0, 1.0).is_err());
    /// ```
    pub fn check<T: PartialOrd + std::fmt::Display>(
        field: &'static str,
        got: T,
        lo: T,
        hi: T,
    ) -> Result<(), OutOfRange> {
        if !(lo <= got && got <= hi) {
            Err(OutOfRange::new(field, format!("from {lo} to {hi}"), got))
        } else {
            Ok(())
        }
    }
}

/// For callers that still carry errors as text: the message.
impl From<OutOfRange> for String {
    fn from(e: OutOfRange) -> String {
        e.to_string()
    }
}

/// A node past the machine: what every accessor by node
/// ([`crate::Magic::state`], `memory`, `pcache`, `drops`, ...) answers for
/// one, instead of a panic.
///
/// ```
/// use magic::{NoNode, NodeId};
/// let e = NoNode { node: NodeId(9), nodes: 2 };
/// assert_eq!(e.to_string(), "no node 9 (the machine has 2)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no node {node} (the machine has {nodes})")]
pub struct NoNode {
    /// The node asked for.
    pub node: NodeId,
    /// Nodes in the machine.
    pub nodes: u32,
}

/// The same refusal, where a message or a processor start was posted.
impl From<NoNode> for PostError {
    fn from(e: NoNode) -> PostError {
        PostError::NoNode {
            node: e.node,
            nodes: e.nodes,
        }
    }
}

/// For callers that still carry errors as text: the message.
impl From<NoNode> for String {
    fn from(e: NoNode) -> String {
        e.to_string()
    }
}

/// Why [`crate::Magic::reset_counters`] refused: a node's PP is still
/// running a handler, whose counters were booked at its dispatch (before
/// the reset), so the fresh ledger would show its PP idle while it works.
///
/// ```
/// use magic::{Cycles, NodeId, Running};
/// let e = Running { node: NodeId(2), until: Cycles(1003) };
/// assert!(e.to_string().starts_with("node 2's PP runs a handler until cycle 1003"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "node {node}'s PP runs a handler until cycle {until}: a ledger started now would \
     leave it out; reset the counters at a quiet point (run the machine on first)"
)]
pub struct Running {
    /// The first node found running.
    pub node: NodeId,
    /// When its handler ends.
    pub until: crate::time::Cycles,
}

/// For callers that still carry errors as text: the message.
impl From<Running> for String {
    fn from(e: Running) -> String {
        e.to_string()
    }
}

/// Why a controller refused a message (or a processor start) posted to it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// The node does not exist.
    #[error("no node {node} (the machine has {nodes})")]
    NoNode {
        /// The node asked for.
        node: NodeId,
        /// Nodes in the machine.
        nodes: u32,
    },
    /// The time is before the model's present.
    #[error("cannot post at {at}: the model is already at {now}")]
    Past {
        /// The time asked for.
        at: Time,
        /// The model's present.
        now: Time,
    },
    /// The time is beyond the model's clock (past [`LAST_CYCLE`](crate::time::LAST_CYCLE)).
    #[error(
        "cannot post at tick {at} (system cycle {}): past the last cycle the model can represent ({})",
        at / crate::time::TICKS_PER_SYSTEM_CYCLE as u128,
        crate::time::LAST_CYCLE
    )]
    BeyondClock {
        /// The time asked for, in ticks, exactly (it may not fit a [`Time`]).
        at: u128,
    },
    /// The message declares more payload than a packet holds.
    #[error("cannot post a message of {len} payload bytes: a packet holds at most {most}", most = crate::ids::LINE_BYTES)]
    TooLong {
        /// The payload length the message declares.
        len: u16,
    },
}

/// For callers that still carry errors as text: the message.
impl From<PostError> for String {
    fn from(e: PostError) -> String {
        e.to_string()
    }
}

/// Why a handler's step did nothing. Each is also counted as a drop on the
/// node and named in the run's report ([`crate::RunReport::refused`]), so
/// the run is not clean even if the handler ignores the refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The address is not in this node's memory (for an intervention in
    /// the processor's cache, which holds lines of every node: in no
    /// node's memory).
    #[error("the address is not in this node's memory")]
    BadAddress,
    /// The buffer is not allocated (or a realignment's shift does not fit
    /// the buffers given).
    #[error("the data buffer is not allocated")]
    BadBuffer,
    /// A dirty line's bytes need a data buffer and none was given.
    #[error("a dirty line needs a data buffer")]
    NoBuffer,
    /// No such destination node.
    #[error("no such destination node")]
    BadNode,
    /// The software queue is full.
    #[error("the software queue is full")]
    QueueFull,
    /// A payload longer than a line.
    #[error("the payload is longer than a line")]
    TooLong,
    /// More than the PP can issue: more instructions than its bundles hold
    /// at `pp_issue_width` a bundle, or a load or store beyond the
    /// instructions issued.
    #[error("more than the PP can issue")]
    Overissue,
}
