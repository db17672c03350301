//! The transfer engine: the optimized handler's own accounting matches the
//! paper's task breakdown, its timeline puts the memory read and the
//! processor-cache get where the paper does, and every version moves the
//! data intact.

use magic::{MagicParams, NodeId};
use protocols::transfer::{self, SendState, Version};

fn run(v: Version, s: SendState) -> transfer::PhaseRun {
    transfer::phase(32, v, s, MagicParams::default()).unwrap()
}

fn sorted(mut t: Vec<(&'static str, u32)>) -> Vec<(&'static str, u32)> {
    t.sort();
    t
}

#[test]
fn the_optimized_handler_counts_46_instructions_for_a_clean_line_and_56_for_a_dirty_one() {
    let r = run(Version::Optimized, SendState::Uncached);
    let s = &r.machine.state(NodeId(0)).stats;
    assert_eq!(
        sorted(s.last.tasks.clone()),
        sorted(vec![
            ("initialization and state load", 10),
            ("load directory, check", 6),
            ("read memory", 3),
            ("form header, update state", 15),
            ("send, reschedule", 12),
        ])
    );
    assert_eq!(
        (s.last.instructions, s.last.loads, s.last.stores),
        (46, 8, 4)
    );
    // The memory read goes out 18 cycles into the handler.
    assert_eq!(s.first_issue, Some(18));

    let r = run(Version::Optimized, SendState::Dirty);
    let s = &r.machine.state(NodeId(0)).stats;
    assert_eq!(
        sorted(s.last.tasks.clone()),
        sorted(vec![
            ("initialization and state load", 10),
            ("load directory, check", 6),
            ("send get to processor cache", 4),
            ("update directory", 2),
            ("wait for cache, write to memory", 4),
            ("form header, update state", 16),
            ("send, reschedule", 14),
        ])
    );
    assert_eq!(
        (s.last.instructions, s.last.loads, s.last.stores),
        (56, 10, 5)
    );
    // The get to the processor cache goes out 17 cycles in.
    assert_eq!(s.first_issue, Some(17));
}

#[test]
fn every_version_moves_the_data_intact() {
    for s in [SendState::Uncached, SendState::Dirty] {
        for v in [
            Version::Base,
            Version::Optimized,
            Version::Chunked(1),
            Version::Chunked(4),
            Version::Chunked(16),
        ] {
            let r = run(v, s);
            assert!(r.data_ok, "{v:?} {s:?}");
            assert_eq!(r.machine.state(NodeId(1)).stats.components_received, 32);
        }
    }
}

#[test]
fn dirty_lines_make_the_sender_the_bottleneck_and_chunking_helps_only_there() {
    let t = |v, s| run(v, s).cycles.0;
    // Clean lines: the network (40 cycles a line) bounds every version.
    let clean: Vec<_> = [Version::Base, Version::Optimized, Version::Chunked(4)]
        .into_iter()
        .map(|v| t(v, SendState::Uncached))
        .collect();
    assert!(clean.windows(2).all(|w| w[0] == w[1]), "{clean:?}");
    assert!((32 * 40..32 * 40 + 150).contains(&clean[0]), "{clean:?}");
    // Dirty lines: speculative work beats stalling, chunking beats both, and
    // a factor of 8 nears the processor cache's 43 cycles a line.
    let b = t(Version::Base, SendState::Dirty);
    let o = t(Version::Optimized, SendState::Dirty);
    let c1 = t(Version::Chunked(1), SendState::Dirty);
    let c4 = t(Version::Chunked(4), SendState::Dirty);
    let c8 = t(Version::Chunked(8), SendState::Dirty);
    assert_eq!(o, c1, "one line per invocation is the optimized handler");
    assert!(b > o && o > c4 && c4 > c8, "{b} {o} {c4} {c8}");
    let per_line = c8 as f64 / 32.0;
    assert!((43.0..52.0).contains(&per_line), "{per_line}");
}
