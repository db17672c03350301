//! The `pipeline` scenario agrees exactly with the engine benchmark's
//! reference peers (bench/peers): the workload's published table and smaller
//! runs of theirs; and the plain binary-heap peer itself reproduces them.

use protocols::pipeline::{self, Pattern, PipelineConfig};

/// (nodes, msgs, pattern, completion, sum of completions, sum of latencies),
/// as the binary-heap peer (bench/peers/heap.rs) prints them.
const PEERS: &[(u32, u32, Pattern, u64, u64, u64)] = &[
    (3, 3, Pattern::Rand, 3920, 23894, 12842),
    (3, 50, Pattern::Rand, 64080, 4911608, 219074),
    (5, 10, Pattern::Ring, 12880, 356810, 72320),
    (5, 10, Pattern::Shift, 12880, 356810, 72320),
    (5, 50, Pattern::Rand, 65740, 8304342, 365778),
    (8, 3, Pattern::Rand, 5026, 65398, 35706),
    (8, 10, Pattern::Rand, 16804, 615388, 126186),
    (8, 50, Pattern::Shift, 64080, 13095056, 581632),
    (8, 50, Pattern::Rand, 68926, 13677774, 597494),
    (16, 3, Pattern::Rand, 5182, 129666, 70436),
    (16, 10, Pattern::Rand, 14142, 1159434, 233682),
];

/// The workload definition's table (all three implementations agree on it).
const PUBLISHED: &[(u32, u32, Pattern, u64, u64, u64)] = &[
    (16, 1000, Pattern::Ring, 1280080, 10251807712, 23294464),
    (16, 1000, Pattern::Rand, 1322768, 10531903180, 23760054),
    (64, 1000, Pattern::Ring, 1280080, 41007230848, 93177856),
    (64, 1000, Pattern::Rand, 1335580, 42239407390, 95629802),
];

fn check(rows: &[(u32, u32, Pattern, u64, u64, u64)]) {
    for &(nodes, msgs, pattern, completion, sum_completion, sum_latency) in rows {
        let cfg = PipelineConfig {
            nodes,
            msgs,
            pattern,
            costs: Default::default(),
            budget: magic::params::DEFAULT_BUDGET,
        };
        let run = pipeline::run(&cfg).unwrap();
        assert!(run.is_clean(), "{cfg:?}: {:?}", run.stuck);
        let (r, ledger) = (run.result, run.ledger);
        assert_eq!(
            (r.completion, r.sum_completion, r.sum_latency),
            (completion, sum_completion, sum_latency),
            "{cfg:?}"
        );
        // Model events as the peers count them: N*M*(1 + 4*32).
        assert_eq!(r.events, nodes as u64 * msgs as u64 * 129, "{cfg:?}");
        let recv = ledger
            .summed()
            .handler(None, "pipeline.recv")
            .unwrap()
            .stats
            .invocations;
        assert_eq!(recv, nodes as u64 * msgs as u64 * 32);
    }
}

#[test]
fn small_runs_match_the_peers() {
    check(PEERS);
}

#[test]
fn the_sixteen_node_rows_of_the_published_table_match() {
    check(&PUBLISHED[..2]);
}

#[test]
#[ignore = "large: run with cargo test --release -- --ignored (CI does)"]
fn every_row_of_the_published_table_matches() {
    check(PUBLISHED);
}

#[test]
fn runs_are_identical_byte_for_byte() {
    let cfg = PipelineConfig {
        nodes: 8,
        msgs: 20,
        pattern: Pattern::Rand,
        costs: Default::default(),
        budget: magic::params::DEFAULT_BUDGET,
    };
    let a = pipeline::run(&cfg).unwrap();
    let b = pipeline::run(&cfg).unwrap();
    assert_eq!(a.result, b.result);
    assert_eq!(a.ledger.render(), b.ledger.render());
    assert_eq!(
        serde_json::to_string(&a.ledger).unwrap(),
        serde_json::to_string(&b.ledger).unwrap()
    );
}

/// Asking ahead for the next events' state (on from 512 nodes) is a hint to
/// the CPU: on or off, a run's figures and ledger are the same.
#[test]
fn asking_ahead_changes_no_result() {
    for (nodes, msgs) in [(16, 40), (600, 2)] {
        let cfg = PipelineConfig {
            nodes,
            msgs,
            pattern: Pattern::Rand,
            costs: Default::default(),
            budget: magic::params::DEFAULT_BUDGET,
        };
        let runs: Vec<_> = [false, true]
            .into_iter()
            .map(|on| {
                let mut m = pipeline::build(&cfg).unwrap();
                m.set_ask_ahead(on);
                let report = m.run();
                assert!(report.stuck.is_empty(), "{:?}", report.stuck);
                (pipeline::result(&m), m.ledger().render())
            })
            .collect();
        assert!(runs[0].0.events > 1000, "{:?}", runs[0].0);
        assert_eq!(runs[0], runs[1], "{nodes} nodes");
    }
}

/// The benchmark's binary-heap peer, compiled into the test.
#[allow(dead_code)]
#[path = "../../bench/peers/heap.rs"]
mod heap;

fn heap_check(rows: &[(u32, u32, Pattern, u64, u64, u64)]) {
    for &(nodes, msgs, pattern, completion, sum_completion, sum_latency) in rows {
        let p = match pattern {
            Pattern::Ring => heap::Pattern::Ring,
            Pattern::Shift => heap::Pattern::Shift,
            Pattern::Rand => heap::Pattern::Rand,
        };
        let mut s = heap::Sim::new(nodes, msgs, p);
        s.run();
        assert_eq!(
            (s.completion, s.sum_completion, s.sum_latency),
            (completion, sum_completion, sum_latency),
            "heap peer, {nodes} nodes, {msgs} messages, {pattern:?}"
        );
    }
}

#[test]
fn the_heap_peer_reproduces_the_small_runs_and_sixteen_node_rows() {
    heap_check(PEERS);
    heap_check(&PUBLISHED[..2]);
}

#[test]
#[ignore = "large: run with cargo test --release -- --ignored (CI does)"]
fn the_heap_peer_reproduces_every_row_of_the_published_table() {
    heap_check(PUBLISHED);
}

/// A pipeline run is clean as MAGIC's report is: one that reaches its
/// cycle budget says so and is not clean.
#[test]
fn a_pipeline_run_at_its_budget_is_not_clean() {
    use magic::Cycles;
    let big = Cycles(1_000_000);
    let cfg = PipelineConfig {
        nodes: 2,
        msgs: 2_000_000,
        pattern: Pattern::Ring,
        costs: pipeline::PipelineCosts {
            setup: big,
            send: big,
            recv: big,
            done: big,
        },
        budget: magic::params::DEFAULT_BUDGET,
    };
    let run = pipeline::run(&cfg).unwrap();
    assert!(!run.is_clean());
    let h = run.halted.as_deref().unwrap_or_default();
    assert!(h.starts_with("the run reached its cycle budget"), "{h}");
    assert_eq!(run.problems()[0], h);
    // The work left is listed after it; nothing was refused.
    assert!(run
        .stuck
        .iter()
        .any(|s| s.ends_with("of its messages never set up")));
    assert!(run.refused.is_empty(), "{:?}", run.refused);
}

/// The largest pipeline a configuration may ask for runs within a MAGIC
/// run's event limit, whatever its costs and pattern: its engine events
/// per message, measured on small runs, times the most messages.
#[test]
fn the_largest_pipeline_runs_within_the_event_limit() {
    use protocols::pipeline::PipelineCosts;
    let cheap = PipelineCosts {
        setup: magic::Cycles(1),
        send: magic::Cycles(1),
        recv: magic::Cycles(1),
        done: magic::Cycles(0),
    };
    let mut most = 0.0f64;
    for (nodes, msgs) in [(2, 60), (16, 20), (64, 4)] {
        for pattern in [Pattern::Ring, Pattern::Shift, Pattern::Rand] {
            for costs in [PipelineCosts::default(), cheap] {
                let cfg = PipelineConfig {
                    nodes,
                    msgs,
                    pattern,
                    costs,
                    budget: magic::params::DEFAULT_BUDGET,
                };
                let mut m = pipeline::build(&cfg).unwrap();
                let r = m.run();
                assert!(r.is_clean(), "{r:?}");
                most = most.max(r.engine_events as f64 / (nodes * msgs) as f64);
            }
        }
    }
    let largest = most * pipeline::MAX_MESSAGES as f64;
    assert!(
        largest * 2.0 < magic::EVENT_LIMIT as f64,
        "{most} events a message: {largest} at the most messages"
    );
}
