//! The kit's integration tests, as one test binary: the command line, the
//! scenarios and sweeps, the published figures the model is calibrated on
//! and predicts, the engine benchmark's results, the exports, the plots,
//! and the structural rules of the code. Each module is one concern.
//!
//! Some need more than `cargo test`: `pipeline`'s full table runs with
//! `--ignored` on the release build, `interop` with `FLASHKIT_INTEROP=1`
//! and the real LogGOPSim and SimGrid (see `.ci/interop.sh`).

mod common;

mod bad_input;
mod check;
mod cli;
mod coherence;
mod docs;
mod fuzz;
mod handlers;
mod interop;
mod ledger;
mod library;
mod modes;
mod pipeline;
mod plot;
mod plot_series;
mod results_props;
mod scenario;
mod suite;
mod sweep;
mod tidy;
mod trace;
mod transfer;
