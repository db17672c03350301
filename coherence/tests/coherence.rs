//! The coherence crate's integration tests, in one binary: single handlers
//! on the test bench, the read-miss experiment, the coherence modes for
//! message data, and random streams checked for coherence. The modules live
//! in `coherence/` beside this file.

#[path = "coherence/handlers.rs"]
mod handlers;
#[path = "coherence/miss.rs"]
mod miss;
#[path = "coherence/modes.rs"]
mod modes;
#[path = "coherence/props.rs"]
mod props;
