//! A study: MAGIC, the CM-5 and the SP side by side in LogP terms, from the
//! same Active Message benchmarks run on each platform's model.
//!
//! Run it with `cargo run --release --example platforms [NODES]` (default 16
//! nodes, at least 3: the suite's two-to-one benchmark needs them).

use flashkit::magic::figures::{text, Figure as Kind};
use flashkit::protocols::am::cm5::{Cm5, Layer};
use flashkit::protocols::am::flash::Flash;
use flashkit::protocols::am::sp::Sp;
use flashkit::protocols::am::{suite, Platform};
use std::error::Error;

/// How a row reads its figure.
type Reader = fn(&suite::LogP) -> f64;

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
    let rows: [(&str, Kind, Reader); 10] = [
        ("send overhead o_s", Kind::Us, |f| f.send_overhead_us),
        ("reply overhead", Kind::Us, |f| f.reply_overhead_us),
        ("receive overhead o_r", Kind::Us, |f| f.recv_overhead_us),
        ("empty poll", Kind::Us, |f| f.poll_empty_us),
        ("round trip", Kind::Us, |f| f.round_trip_us),
        // Latency L: half a round trip less the overheads at both ends.
        ("latency L = RT/2 - o_s - o_r", Kind::Us, |f| {
            f.round_trip_us / 2.0 - f.send_overhead_us - f.recv_overhead_us
        }),
        ("ring, per message (gap g)", Kind::Us, |f| f.ring_us),
        ("bulk start-up", Kind::Us, |f| f.bulk.startup_us),
        ("bulk bandwidth", Kind::MbS, |f| f.bulk.bandwidth_mb_s),
        ("bulk n1/2 (bytes)", Kind::Cycles, |f| f.bulk.n_half_bytes),
    ];
    for (name, kind, get) in rows {
        print!("{name:<34}");
        for f in &figures {
            print!("{:>10}", text(kind, get(f)));
        }
        println!();
    }
    Ok(())
}
