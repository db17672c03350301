#![warn(missing_docs)]
//! flashkit: a model of the Stanford FLASH multiprocessor's programmable node
//! controller, MAGIC, and the message-passing protocols that run on it, with
//! the CM-5's and the IBM SP's network interfaces behind the same controller
//! interface so the three can be compared on the same workloads.
//!
//! This is the crate a study depends on. It re-exports the model's crates
//! under one name and holds the study layer:
//!
//! - [`magic`]: the hardware: time, the event engine, MAGIC's
//!   macropipeline, the handler context that charges every step, the
//!   occupancy ledger, the comparison platforms' network interfaces;
//! - [`coherence`]: the directory protocol on MAGIC and the coherence of
//!   message data;
//! - [`os_shim`]: the operating system as MAGIC sees it;
//! - [`protocols`]: the messaging software: the bulk transfer of the FLASH
//!   paper, user-level messaging, Active Messages on every platform and the
//!   benchmark suite;
//! - [`scenario`]: an experiment and its machine as a TOML file, run by one
//!   function; [`sweep`]: a scenario over the cross product of some of its
//!   keys, in parallel; [`plot`]: charts of the figures (drawn as SVG or PNG
//!   with the `plot` feature).
//!
//! Where to start: [`protocols::transfer::run`] for the paper's central
//! experiment, [`protocols::am::suite`] for the platforms side by side,
//! [`scenario::run`] for anything a scenario file describes, and [`guide`]
//! (`docs/handlers.md`) to write a protocol of your own.
//!
//! # A transfer and where its time went
//!
//! The 4 KB transfer with the built-in defaults, its fixed overhead in the
//! parts the paper reports, and what bounds its rate:
//!
//! ```
//! use flashkit::protocols::transfer::{self, Config};
//!
//! let t = transfer::run(&Config::default())?;
//! let s = &t.startup;
//! assert_eq!(
//!     s.initiation + s.setup_verification + s.initial_line + s.network_queueing
//!         + s.receiver_cleanup,
//!     s.total
//! );
//! assert!(t.data_ok && t.incoherent.is_none());
//! // A rate needs two lines landed (4 KB is 32); within one line it is None.
//! let (rate, bound) = (t.per_line.ok_or("no rate")?, t.limited_by.ok_or("no rate")?);
//! println!(
//!     "{} bytes in {:.2} us; start-up {} cycles; {rate:.1} cycles a line, limited by the {bound}",
//!     t.config.bytes, t.total_us(), s.total
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # A handler occupancy table
//!
//! Every handler's invocations, busy cycles, stalls, instructions and share
//! of its protocol processor, as a test suite snapshots it:
//!
//! ```
//! use flashkit::protocols::transfer::{self, Config};
//!
//! let t = transfer::run(&Config::default())?;
//! let table = t.ledger.to_string();
//! assert!(table.starts_with("handler occupancy"));
//! // The receiver's component handler runs once a line, 32 cycles each.
//! let c = t.ledger.handler(Some(1), "transfer.component").expect("a row");
//! assert_eq!((c.stats.invocations, c.stats.busy), (32, 1024));
//! print!("{table}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # A round trip on each platform
//!
//! The same Active Message benchmark on MAGIC, the CM-5 and the SP:
//!
//! ```
//! use flashkit::protocols::am::{cm5::{Cm5, Layer}, flash::Flash, sp::Sp, suite, Platform};
//!
//! let platforms: [Box<dyn Platform>; 3] =
//!     [Box::new(Flash::new(4)), Box::new(Cm5::new(4, Layer::Cmam)), Box::new(Sp::new(4))];
//! let mut rt = Vec::new();
//! for p in &platforms {
//!     rt.push(suite::round_trip(p.as_ref(), 1)?);
//! }
//! // MAGIC's handlers beat both message-passing machines' software.
//! assert!(rt[0] < rt[1] && rt[1] < rt[2], "{rt:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # A scenario, as a file holds it
//!
//! ```
//! use flashkit::scenario::{self, Source};
//!
//! let src = Source { path: "dirty.toml", text: "[transfer]\nsender = \"dirty\"\nchunk = 8\n" };
//! let s = scenario::parse(&src, scenario::table(&src)?)?;
//! let report = scenario::run(&s)?;
//! assert_eq!(report.json["data_ok"], true);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Stability
//!
//! The public API is every item these crates export and document; their
//! figures are the model's and change only with a reviewed change of the
//! model. While the version is 0.x, any minor version (0.1 to 0.2) may change
//! the API; a patch version does not.

pub use coherence;
pub use magic;
pub use os_shim;
pub use protocols;

pub mod check;
pub mod fuzzing;
pub mod invariants;
pub mod json;
pub mod plot;
pub mod scenario;
pub mod study;
pub mod sweep;

/// How to write a protocol: messages, handlers, what each step costs, a
/// round trip timed cycle by cycle, protocols side by side, testing one
/// handler and checking every order, written as a crate that depends on
/// `flashkit` writes it. (This is `docs/handlers.md`; its examples run as
/// tests.)
#[doc = include_str!("../../docs/handlers.md")]
pub mod guide {}

/// Scenarios and sweeps (`docs/sweeps.md`): the files, the columns, a
/// sweep built in code, saved, read back and plotted (its example runs as
/// this crate's test), splitting a sweep across machines.
#[doc = include_str!("../../docs/sweeps.md")]
pub mod sweeps_guide {}

/// The README, whose library example runs as this crate's test.
#[doc = include_str!("../../README.md")]
pub mod readme {}
