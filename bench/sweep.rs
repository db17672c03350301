//! The sweep benchmark's timing loop (run by bench/sweep.sh): one sweep
//! checked and run through the library on each thread count in turn, the
//! rounds interleaved so machine noise hits every thread count alike, each
//! reporting the median of its rounds. The rows must be the same on every
//! thread count before any timing counts (exit 1 if not).
//!
//! Usage: sweep-bench SCENARIO ROUNDS THREADS... -- VARY...
//! (`cargo run --release --example sweep-bench -- examples/transfer.toml 101 1 2 4 -- transfer.chunk=1,2,3,4,5,6,7,8`)

use flashkit::scenario::Source;
use flashkit::sweep::{self, Axis, Plan};
use std::error::Error;
use std::time::Instant;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: sweep-bench SCENARIO ROUNDS THREADS... -- VARY...";
    let split = args.iter().position(|a| a == "--").ok_or(usage)?;
    let (head, vary) = (&args[..split], &args[split + 1..]);
    let [path, rounds, threads @ ..] = head else {
        return Err(usage.into());
    };
    let rounds: usize = rounds
        .parse()
        .map_err(|_| format!("{rounds}: not a count"))?;
    let threads = threads
        .iter()
        .map(|t| t.parse::<usize>().map_err(|_| format!("{t}: not a count")))
        .collect::<Result<Vec<_>, _>>()?;
    if threads.is_empty() || rounds == 0 || vary.is_empty() {
        return Err(usage.into());
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let src = Source { path, text: &text };
    let axes = vary
        .iter()
        .map(|v| Axis::parse(v))
        .collect::<Result<Vec<_>, _>>()?;
    // The whole sweep as the command makes it: checked, run, written.
    let once = |t: usize| -> Result<(f64, String), Box<dyn Error>> {
        let start = Instant::now();
        let plan = Plan::checked(&src, &axes, t, |_, _| {})?;
        let rows = plan.run(t, |_, _| {})?;
        let table = sweep::csv(&rows);
        Ok((start.elapsed().as_secs_f64() * 1e3, table))
    };
    let (_, want) = once(threads[0])?;
    for &t in &threads[1..] {
        if once(t)?.1 != want {
            eprintln!(
                "sweep-bench: MISMATCH: {t} threads make other rows than {} (timings discarded)",
                threads[0]
            );
            std::process::exit(1);
        }
    }
    let mut walls = vec![Vec::new(); threads.len()];
    for _ in 0..rounds {
        for (k, &t) in threads.iter().enumerate() {
            walls[k].push(once(t)?.0);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        (v[(n - 1) / 2] + v[n / 2]) / 2.0
    };
    let medians: Vec<f64> = walls.iter_mut().map(median).collect();
    let points = want.lines().count().saturating_sub(1);
    println!(
        "== {path} {}: {points} points, {rounds} interleaved rounds ==",
        vary.join(" ")
    );
    for (t, m) in threads.iter().zip(&medians) {
        let s = if *t == 1 { " " } else { "s" };
        println!(
            "  {t} thread{s}  median {m:7.3} ms  ({:5.2} x {} thread)",
            m / medians[0],
            threads[0]
        );
    }
    let at = |n: usize| threads.iter().position(|&t| t == n).map(|k| medians[k]);
    if let (Some(one), Some(two)) = (at(1), at(2)) {
        let ratio = two / one;
        let verdict = if ratio <= 1.05 { "PASS" } else { "MISS" };
        println!("  2 threads / 1 thread = {ratio:5.2}  (target <= 1.05)  {verdict}");
    }
    Ok(())
}
