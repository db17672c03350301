//! A lock protocol written outside the kit's crates, run alone on a quiet
//! machine and then beside the bulk transfer.
//!
//! ```sh
//! cargo run --release --example lock
//! ```

mod protocol;

use magic::{Cycles, Magic, MagicParams, NodeId};
use protocol::Lock;

fn main() {
    let lock = Lock {
        home: NodeId(0),
        hold: Cycles(50),
    };
    let mut m = match Magic::with(MagicParams::default(), 4, &lock) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    for n in 0..4 {
        let _ = m.start_processor(NodeId(n), Cycles(0));
    }
    let report = m.run();
    if !report.is_clean() {
        eprintln!("the run did not complete: {}", report.stuck.join("; "));
        std::process::exit(1);
    }
    println!("alone: four processors take the lock in turn");
    for n in 0..4 {
        println!(
            "  node {n} granted at cycle {:?}",
            m.state(NodeId(n)).granted_at
        );
    }
    println!("\n{}", m.ledger().render());
}
