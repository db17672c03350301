//! The coherence crate's error: what its public calls refuse, typed.

use magic::{BuildError, OutOfRange, PostError};

/// Why a call of this crate refused or failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A configuration value (or an argument) is out of its range; the
    /// field is named as its struct (or the function) spells it.
    #[error(transparent)]
    OutOfRange(#[from] OutOfRange),
    /// The machine could not be built (a parameter, the node count, or the
    /// protocol's own refusal).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A line's starting copies contradict each other.
    #[error("{0}")]
    Placement(&'static str),
    /// The machine refused a step the experiment asked of it.
    #[error(transparent)]
    Machine(#[from] PostError),
    /// A node the machine does not have.
    #[error(transparent)]
    NoNode(#[from] magic::NoNode),
    /// The ledger could not start afresh: a handler was still running.
    #[error(transparent)]
    Running(#[from] magic::Running),
    /// The model stopped with work pending: what is stuck.
    #[error("the {what} did not complete: {stuck}")]
    Stuck {
        /// What was running (`warm-up miss`, `miss`, `load`).
        what: &'static str,
        /// What was left, one item after another.
        stuck: String,
    },
}

/// In words, for callers that report errors as text.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}
