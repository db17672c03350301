//! A protocol author's first handler: a remote fetch-and-increment on MAGIC,
//! written as a protocol of its own (its messages, its handlers, its node
//! state), run alone on a quiet machine and then beside the built-in 4 KB
//! transfer, with its occupancy read back.
//!
//! ```text
//!  node 0 (requester)                               node 1 (home of the counter)
//!  processor --Ask--> [MAGIC: request]
//!                          | request lane
//!                          +---------Inc--------> [MAGIC: increment]
//!                                                   read the line, +1,
//!                                                   write it back
//!  processor <--Done-- [MAGIC: reply] <--Old-- reply lane
//!
//!  beside the transfer, node 0 meanwhile sends node 1 a 4 KB buffer
//! ```
//!
//! Run it with `cargo run --release --example fetch_inc`; docs/handlers.md
//! explains handlers, their costs and the test bench.

/// The fetch-and-increment: its messages, handlers, node state and runs.
mod protocol;

use flashkit::magic::NodeId;
use protocol::{count, run_alone, run_beside_transfer};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let alone = run_alone(8)?;
    println!(
        "alone: counter = {} after 8 fetch-and-increments; the answers (cycle, old value, done):",
        count(&alone)?
    );
    for a in &alone.state(NodeId(0))?.answers {
        println!("  {a:?}");
    }
    println!("\n{}", alone.ledger().render());
    let o = run_beside_transfer(8)?;
    println!(
        "beside the transfer: counter = {}; the transfer took {} cycles ({})\n",
        count(&o.machine)?,
        o.total.0,
        if o.data_ok {
            "data intact"
        } else {
            "DATA WRONG"
        }
    );
    print!("{}", o.machine.ledger().render());
    Ok(())
}
