//! What can go wrong in the protocols crate: a configuration value out of
//! range (naming the field), a platform too small for a benchmark, a machine
//! that cannot be built, a program a platform cannot run, a run that did not
//! end as it must.
//!
//! ```
//! use protocols::am::{cm5::{Cm5, Layer}, suite};
//! let e = suite::logp(&Cm5::new(2, Layer::Cmam)).unwrap_err();
//! assert_eq!(e.field(), Some("nodes"));
//! assert!(e.to_string().starts_with("nodes must be at least 3, got 2"));
//! ```

use magic::{BuildError, OutOfRange};

/// An error of the protocols crate.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration field holds a value outside its range.
    #[error(transparent)]
    OutOfRange(#[from] OutOfRange),
    /// The platform has fewer nodes than a benchmark uses (field `nodes`).
    #[error("{range} (the {benchmark} benchmark)")]
    TooFewNodes {
        /// The benchmark that needs them.
        benchmark: &'static str,
        /// The node count it needs, and the platform's.
        range: OutOfRange,
    },
    /// The machine could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The operating system model refused a step of an experiment's set-up.
    #[error(transparent)]
    Os(#[from] os_shim::OsError),
    /// The machine refused a message or a processor start.
    #[error(transparent)]
    Post(#[from] magic::PostError),
    /// A node the machine does not have.
    #[error(transparent)]
    NoNode(#[from] magic::NoNode),
    /// The network model refused its parameters (the error names the field).
    #[error("network: {0}")]
    Network(magic::OutOfRange),
    /// The coherence model's run behind a platform's figure failed.
    #[error("coherence: {0}")]
    Coherence(#[from] coherence::Error),
    /// A program set the platform cannot run: its count, a destination, a
    /// step the layer lacks.
    #[error("{0}")]
    Program(String),
    /// A name that is none of the known ones.
    #[error("no {what} '{name}' (known: {known})")]
    Unknown {
        /// What was looked up (`benchmark`).
        what: &'static str,
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A run did not end as it must (stuck, or a figure it measures is
    /// missing); the message says where.
    #[error("{0}")]
    Incomplete(String),
    /// A run reached one of its budgets (`budget`, its simulated time, or
    /// `event_budget`, its events) before it ended: a run that needs more
    /// raises the key the error names.
    #[error("{why}")]
    OverBudget {
        /// The key that bounds it (`budget` or `event_budget`).
        key: &'static str,
        /// What was reached, where, and how to raise it.
        why: String,
    },
    /// Measured figures an export cannot use.
    #[error("{0}")]
    Export(String),
}

impl Error {
    /// The configuration field the error is about, if it is about one.
    pub fn field(&self) -> Option<&'static str> {
        use coherence::Error as C;
        match self {
            Error::OutOfRange(r)
            | Error::TooFewNodes { range: r, .. }
            | Error::Network(r)
            | Error::Build(BuildError::Params(r))
            | Error::Coherence(C::OutOfRange(r))
            | Error::Coherence(C::Build(BuildError::Params(r))) => Some(r.field),
            Error::Unknown { what, .. } => Some(what),
            Error::OverBudget { key, .. } => Some(key),
            _ => None,
        }
    }

    /// A MAGIC run that did not end clean, `what` saying what did not
    /// complete: one stopped at its cycle budget names `budget`.
    pub(crate) fn unclean(what: &str, r: &magic::RunReport) -> Error {
        let why = format!("{what}: {}", r.problems().join("; "));
        match r.halted {
            Some(magic::Halt::Budget { .. }) => Error::over_budget("budget", why),
            _ => Error::Incomplete(why),
        }
    }

    /// A run stopped at the budget `key` bounds it by, `why` saying what.
    pub(crate) fn over_budget(key: &'static str, why: String) -> Error {
        Error::OverBudget { key, why }
    }

    /// The platform has `got` nodes where `benchmark` needs `need`.
    pub(crate) fn too_few_nodes(benchmark: &'static str, need: u32, got: u32) -> Error {
        Error::TooFewNodes {
            benchmark,
            range: OutOfRange::new("nodes", format!("at least {need}"), got),
        }
    }
}

/// For callers that report errors as text.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

/// `Err` unless `lo <= got <= hi`, as this crate's error.
pub(crate) fn check<T: PartialOrd + std::fmt::Display>(
    field: &'static str,
    got: T,
    lo: T,
    hi: T,
) -> Result<(), Error> {
    OutOfRange::check(field, got, lo, hi).map_err(Error::from)
}
