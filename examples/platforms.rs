//! A study: MAGIC, the CM-5 and the SP side by side in LogP terms, from the
//! same Active Message benchmarks run on each platform's model.
//!
//! Run it with `cargo run --release --example platforms [NODES]` (default 16
//! nodes, at least 3: the suite's two-to-one benchmark needs them).

use flashkit::protocols::am::cm5::{Cm5, Layer};
use flashkit::protocols::am::flash::Flash;
use flashkit::protocols::am::sp::Sp;
use flashkit::protocols::am::{suite, Platform};
use std::error::Error;

/// How a row reads its figure.
type Figure = fn(&suite::LogP) -> f64;

fn main() -> Result<(), Box<dyn Error>> {
    let nodes: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|_| format!("{n}: not a node count"))?,
        None => 16,
    };
    let platforms: [Box<dyn Platform>; 3] = [
        Box::new(Flash::new(nodes)),
        Box::new(Cm5::new(nodes, Layer::Cmam)),
        Box::new(Sp::new(nodes)),
    ];
    let mut figures = Vec::new();
    for p in &platforms {
        figures.push(suite::logp(p.as_ref())?);
    }
    println!("LogP figures on {nodes} nodes (microseconds; bandwidth in MB/s)");
    print!("{:<34}", "");
    for f in &figures {
        print!("{:>10}", f.platform);
    }
    println!();
    let rows: [(&str, Figure); 9] = [
        ("send overhead o_s", |f| f.send_overhead_us),
        ("reply overhead", |f| f.reply_overhead_us),
        ("receive overhead o_r", |f| f.recv_overhead_us),
        ("empty poll", |f| f.poll_empty_us),
        ("round trip", |f| f.round_trip_us),
        ("ring, per message (gap g)", |f| f.ring_us),
        ("bulk start-up", |f| f.bulk.startup_us),
        ("bulk bandwidth", |f| f.bulk.bandwidth_mb_s),
        ("bulk n1/2 (bytes)", |f| f.bulk.n_half_bytes),
    ];
    for (name, get) in rows {
        print!("{name:<34}");
        for f in &figures {
            print!("{:>10.2}", get(f));
        }
        println!();
    }
    // Latency L: half a round trip less the overheads at both ends.
    print!("{:<34}", "latency L = RT/2 - o_s - o_r");
    for f in &figures {
        print!(
            "{:>10.2}",
            f.round_trip_us / 2.0 - f.send_overhead_us - f.recv_overhead_us
        );
    }
    println!();
    Ok(())
}
