//! A lock protocol written outside the kit's crates, run alone on a quiet
//! machine and then beside the bulk transfer, each over its own state.
//!
//! ```sh
//! cargo run --release --example lock
//! ```

/// The lock: its messages, node state, handlers and protocol unit.
mod protocol;

use flashkit::magic::{Cycles, Magic, MagicParams, NodeId};
use flashkit::protocols::transfer::{self, Config};
use protocol::Lock;

fn fail(code: i32, what: impl std::fmt::Display) -> ! {
    eprintln!("error: {what}");
    std::process::exit(code);
}

fn main() {
    let lock = Lock {
        home: NodeId(0),
        hold: Cycles(50),
        ask: Some(Cycles(0)),
    };

    // Alone: four processors take the lock in turn.
    let mut m = Magic::with(MagicParams::default(), 4, &lock).unwrap_or_else(|e| fail(2, e));
    for n in 0..4 {
        m.start_processor(NodeId(n), Cycles(0))
            .unwrap_or_else(|e| fail(2, e));
    }
    let report = m.run();
    if !report.is_clean() {
        fail(
            1,
            format!("the run did not complete: {}", report.problems().join("; ")),
        );
    }
    println!("alone: four processors take the lock in turn");
    for (n, s) in m.states().iter().enumerate() {
        let at = &s.granted_at;
        println!("  node {n} granted at cycle {}", at[0].0);
    }
    println!("\n{}", m.ledger().render());

    // Beside the transfer: the lock's processors ask when node 0 starts
    // sending node 1 four kilobytes; both protocols share the two PPs.
    let cfg = Config::default();
    let alone = transfer::run(&cfg).unwrap_or_else(|e| fail(1, e));
    let beside = Lock { ask: None, ..lock };
    let start = std::cell::Cell::new(Cycles(0));
    let both = transfer::run_beside(&cfg, &beside, |m, at| {
        start.set(at);
        for n in 0..2 {
            m.state_mut(NodeId(n))?.1.ask_at = Some(at);
            m.start_processor(NodeId(n), at)?;
        }
        Ok(())
    })
    .unwrap_or_else(|e| fail(1, e));
    println!("beside a 4 KB transfer from node 0 to node 1 (cycles from its start):");
    for (n, s) in both.machine.states().iter().enumerate().take(2) {
        let at = &s.1.granted_at;
        println!("  node {n} granted at cycle {}", (at[0] - start.get()).0);
    }
    println!(
        "  the transfer: {:.2} us alone, {:.2} us beside the lock",
        alone.total_us(),
        both.total_us()
    );
    println!("\n{}", both.machine.ledger().render());
}
