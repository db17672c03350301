//! The messaging software that runs on the node controllers.
//!
//! - [`pipeline`]: the engine benchmark's workload built on MAGIC with three
//!   handlers of fixed cost (the way a protocol author prototypes a handler
//!   before writing its code);
//! - [`user`]: user-level messaging through command sequences, and the three
//!   ways of keeping MAGIC's physical addresses valid;
//! - [`transfer`]: bulk transfer over a connection, calibrated on the FLASH
//!   paper's start-up and 4 KB figures;
//! - [`am`]: Active Messages over every controller, and the benchmark suite;
//! - [`command`], [`os_side`]: what the user layer and the transfer share;
//!   [`sheets`]: every cost sheet, for docs/costs.md; [`Error`]: what the
//!   platforms and layers refuse, a field out of range named.
//!
//! Where to start: docs/handlers.md (the library's `flashkit::guide`) for
//! the way a protocol is written; [`transfer::run`] for the paper's central
//! experiment;
//! [`am::suite`] for the platforms side by side.
//!
//! A transfer's start-up in the parts the paper reports, and its handlers'
//! occupancy:
//!
//! ```
//! use protocols::transfer::{self, Config, SenderState};
//!
//! let t = transfer::run(&Config { sender: SenderState::Dirty, ..Config::default() })?;
//! let s = &t.startup;
//! println!("start-up {} = {} + {} + {} + {} + {} cycles", s.total, s.initiation,
//!     s.setup_verification, s.initial_line, s.network_queueing, s.receiver_cleanup);
//! let send = t.ledger.handler(Some(0), "transfer.send_step").expect("the sender's handler ran");
//! assert!(send.stats.busy > 0 && t.data_ok);
//! print!("{}", t.ledger);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same Active Message round trip on each platform, and a platform too
//! small for a benchmark refused, naming the field:
//!
//! ```
//! use protocols::am::{cm5::{Cm5, Layer}, flash::Flash, sp::Sp, suite, Platform};
//!
//! for p in [&Flash::new(4) as &dyn Platform, &Cm5::new(4, Layer::Cmam), &Sp::new(4)] {
//!     println!("{}: {:.2} us", p.name(), suite::round_trip(p, 1)?);
//! }
//! let e = suite::logp(&Sp::new(2)).unwrap_err();
//! assert_eq!(e.field(), Some("nodes"));
//! # Ok::<(), protocols::Error>(())
//! ```

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
