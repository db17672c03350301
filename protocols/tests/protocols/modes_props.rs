//! The coherence modes against each other on random transfers (sizes,
//! offsets, buffer states, handlers, receive splits, directions): `none`
//! with the user programs' flushes, `local` and `global` deliver the same
//! bytes, the latest writes' (the receiving process sees them, line for
//! line, identically under the three), and `none` without flushes reads
//! wrong exactly on the lines it reports stale. With the buffers homed at a
//! third node, `none` with flushes and `global` deliver the bytes the
//! buffers homed at the transferring nodes get.

use magic::NodeId;
use proptest::prelude::*;
use protocols::transfer::experiment::DST_VA;
use protocols::transfer::{
    run_with_machine, Config, Direction, Measured, Mode, Placement, ReceiverState, SenderState,
    StaleLine, Version,
};

const LINE: u64 = 128;

prop_compose! {
    fn config()(
        bytes in prop_oneof![2 => 1u64..=400, 3 => 1u64..=9000],
        sender in prop_oneof![
            Just(SenderState::Uncached),
            Just(SenderState::Clean),
            Just(SenderState::Dirty),
        ],
        receiver in prop_oneof![
            Just(ReceiverState::Uncached),
            Just(ReceiverState::Clean),
            Just(ReceiverState::Dirty),
        ],
        handler in prop_oneof![
            Just(Version::Base),
            Just(Version::Optimized),
            (1u32..=8).prop_map(Version::Chunked),
        ],
        src_offset in prop_oneof![Just(0u64), (0u64..512).prop_map(|k| k * 8), 0u64..4096],
        dst_offset in prop_oneof![Just(0u64), (0u64..512).prop_map(|k| k * 8), 0u64..4096],
        receives in 1u32..=3,
        bi in any::<bool>(),
    ) -> Config {
        Config {
            bytes,
            sender,
            receiver,
            handler,
            src_offset,
            dst_offset,
            receives: receives.min(bytes as u32),
            direction: if bi { Direction::Bi } else { Direction::Uni },
            ..Config::default()
        }
    }
}

prop_compose! {
    /// One send into one receive, one way, the buffers at the same offset
    /// within a line: what a third-node placement is modelled for.
    fn third()(
        c in config(),
        sender in prop_oneof![
            Just(SenderState::Uncached),
            Just(SenderState::Clean),
            Just(SenderState::Dirty),
        ],
    ) -> Config {
        Config {
            sender,
            dst_offset: c.src_offset % LINE + c.dst_offset / LINE * LINE,
            receives: 1,
            direction: Direction::Uni,
            placement: Placement::Third,
            ..c
        }
    }
}

/// `none` reads wrong exactly on the lines it reports stale, taking
/// `want` (a correct run) for the latest bytes.
fn none_wrong_where_it_says(
    c: &Config,
    want: &Measured,
    none: &Measured,
    receivers: &[NodeId],
) -> Result<Vec<StaleLine>, TestCaseError> {
    let mut wrong = Vec::new();
    for &node in receivers {
        for va in receive_lines(c) {
            let Some(w) = want.seen(node, va) else {
                continue;
            };
            if none.seen(node, va) != Some(w) {
                wrong.push(StaleLine { node, va });
            }
        }
    }
    prop_assert_eq!(&wrong, &none.stale, "{:?}: the lines none reads wrong", c);
    prop_assert_eq!(none.data_ok, wrong.is_empty());
    Ok(wrong)
}

fn under(c: &Config, mode: Mode, flush: bool) -> Result<Measured, TestCaseError> {
    let c = Config {
        mode,
        flush,
        ..c.clone()
    };
    run_with_machine(&c).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))
}

/// Every line of the receive buffers with one more line each side (the
/// layout puts later receives a line and 64 bytes apart).
fn receive_lines(c: &Config) -> Vec<u64> {
    let gaps = if c.receives > 1 {
        (c.receives as u64 - 1) * (LINE + 64)
    } else {
        0
    };
    let start = DST_VA + c.dst_offset;
    let first = (start / LINE).saturating_sub(1) * LINE;
    let end = (start + c.bytes + gaps).div_ceil(LINE) * LINE + LINE;
    (first..end).step_by(LINE as usize).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(24),
        ..ProptestConfig::default()
    })]

    #[test]
    fn correct_modes_agree_and_none_is_wrong_exactly_where_it_says(c in config()) {
        let flushed = under(&c, Mode::None, true)?;
        let local = under(&c, Mode::Local, false)?;
        let global = under(&c, Mode::Global, false)?;
        let none = under(&c, Mode::None, false)?;
        for (name, r) in [("none+flush", &flushed), ("local", &local), ("global", &global)] {
            prop_assert!(r.data_ok && r.stale.is_empty(), "{c:?}: {name}: stale {:?}", r.stale);
            prop_assert!(r.incoherent.is_none(), "{c:?}: {name}: {:?}", r.incoherent);
        }
        let receivers: &[NodeId] = match c.direction {
            Direction::Uni => &[NodeId(1)],
            Direction::Bi => &[NodeId(1), NodeId(0)],
        };
        for &node in receivers {
            for va in receive_lines(&c) {
                let Some(want) = flushed.seen(node, va) else { continue };
                prop_assert_eq!(local.seen(node, va), Some(want), "{:?}: local, {:#x}", c, va);
                prop_assert_eq!(global.seen(node, va), Some(want), "{:?}: global, {:#x}", c, va);
            }
        }
        let wrong = none_wrong_where_it_says(&c, &flushed, &none, receivers)?;
        // Nothing cached, nothing stale; a cached buffer of any size beyond
        // a few bytes is stale somewhere.
        let cached = c.sender == SenderState::Dirty || c.receiver != ReceiverState::Uncached;
        if !cached {
            prop_assert!(wrong.is_empty(), "{c:?}: stale with nothing cached");
        } else if c.bytes >= 16 {
            prop_assert!(!wrong.is_empty(), "{c:?}: cached, and no line stale");
        }
        // The flushes are the processors' time; the modes that keep
        // coherence in MAGIC leave the processors to their commands.
        prop_assert!(flushed.processor > local.processor, "{c:?}");
        prop_assert_eq!(local.flush.send_cycles + local.flush.receive_cycles, 0);
    }

    #[test]
    fn buffers_homed_at_a_third_node_get_the_same_bytes(c in third()) {
        let home = Config { placement: Placement::Home, ..c.clone() };
        let at_home = under(&home, Mode::Global, false)?;
        let flushed = under(&c, Mode::None, true)?;
        let global = under(&c, Mode::Global, false)?;
        let none = under(&c, Mode::None, false)?;
        for (name, r) in [("none+flush", &flushed), ("global", &global)] {
            prop_assert!(r.data_ok && r.stale.is_empty(), "{c:?}: {name}: stale {:?}", r.stale);
            prop_assert!(r.incoherent.is_none(), "{c:?}: {name}: {:?}", r.incoherent);
            for va in receive_lines(&c) {
                let want = at_home.seen(NodeId(1), va);
                prop_assert_eq!(r.seen(NodeId(1), va), want, "{:?}: {}, {:#x}", c, name, va);
            }
        }
        none_wrong_where_it_says(&c, &global, &none, &[NodeId(1)])?;
        // Every send line came from the home, every receive line went to it.
        let lines = |off: u64, len: u64| (off % LINE + len).div_ceil(LINE);
        prop_assert_eq!(global.machine.state(NodeId(0)).unwrap().stats.pulls, lines(c.src_offset, c.bytes), "{:?}", c);
        prop_assert_eq!(global.machine.state(NodeId(1)).unwrap().stats.deposits, lines(c.dst_offset, c.bytes), "{:?}", c);
    }
}

#[test]
fn a_dirty_send_buffer_without_coherence_sends_memory_as_it_is() {
    let c = Config {
        sender: SenderState::Dirty,
        mode: Mode::None,
        ..Config::default()
    };
    let r = run_with_machine(&c).expect("runs");
    assert!(!r.data_ok);
    assert_eq!(r.stale.len(), 32, "every line of the 4 KB");
    assert_eq!(r.coherence.total(), 0, "no intervention under none");
    let f = run_with_machine(&Config {
        flush: true,
        ..c.clone()
    })
    .expect("runs");
    assert!(f.data_ok && f.stale.is_empty());
    assert_eq!(
        f.flush.written_back, 32,
        "the sender's dirty lines written back"
    );
    // The sender's flush: 32 dirty lines at 16 cycles; the receiver's
    // invalidation after the data: 32 absent lines at 2 (and as many before
    // posting, outside the measured span).
    assert_eq!(f.flush.send_cycles, 32 * 16);
    assert_eq!(f.flush.receive_cycles, 2 * 32 * 2);
    let l = run_with_machine(&Config {
        mode: Mode::Local,
        ..c
    })
    .expect("runs");
    assert_eq!(l.coherence.interventions, 32);
    // The flushes add exactly their cycles to the total (the receiver's
    // program goes on the cycle after it hears of the data): the writebacks
    // MAGIC handles meanwhile delay nothing.
    let added = 32 * 16 + 1 + 32 * 2;
    assert_eq!(
        f.total.0,
        r.total.0 + added,
        "{} vs {}",
        f.total.0,
        r.total.0
    );
    assert_ne!(f.total, l.total);
}
