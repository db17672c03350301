//! The library from a study's side: every public configuration a scenario
//! can hold, at its extremes, runs or is refused with an error; nothing
//! panics.

use flashkit::scenario::{self, Scenario};
use proptest::prelude::*;

/// Values at and around every edge a u64 field has.
fn edge_u64(typical: &'static [u64]) -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => proptest::sample::select(typical),
        1 => proptest::sample::select(&[0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX][..]),
    ]
}

fn edge_u32(typical: &'static [u32]) -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => proptest::sample::select(typical),
        1 => proptest::sample::select(&[0, 1, u32::MAX - 1, u32::MAX][..]),
    ]
}

fn transfer() -> impl Strategy<Value = scenario::Transfer> {
    use scenario::*;
    (
        edge_u64(&[0, 1, 127, 128, 129, 4096, 1 << 14, (1 << 20) + 1]),
        proptest::sample::select(
            &[
                Sender::Uncached,
                Sender::Clean,
                Sender::Dirty,
                Sender::DirtyRemote,
            ][..],
        ),
        proptest::sample::select(&[Receiver::Uncached, Receiver::Clean, Receiver::Dirty][..]),
        proptest::sample::select(
            &[
                HandlerKind::Base,
                HandlerKind::Optimized,
                HandlerKind::Chunked,
            ][..],
        ),
        edge_u32(&[1, 4, 8, 16, 17]),
        (
            edge_u64(&[0, 8, 64, 4095, 4096]),
            edge_u64(&[0, 8, 64, 4095, 4096]),
            any::<bool>(),
            any::<bool>(),
            edge_u32(&[1, 2, 3, 32]),
            edge_u32(&[1, 2, 3, 32]),
            any::<bool>(),
            (0..3u8, any::<bool>(), any::<bool>()),
        ),
    )
        .prop_map(
            |(
                bytes,
                sender,
                receiver,
                handler,
                chunk,
                (src, dst, collect, bi, receives, sends, first, (mode, flush, third)),
            )| {
                Transfer {
                    bytes,
                    sender,
                    receiver,
                    handler,
                    chunk,
                    src_offset: src,
                    dst_offset: dst,
                    coherence: [
                        CoherenceKind::None,
                        CoherenceKind::Local,
                        CoherenceKind::Global,
                    ][mode as usize],
                    flush,
                    placement: if third {
                        Placement::Third
                    } else {
                        Placement::Home
                    },
                    // A fetch strategy is global coherence's alone.
                    strategy: if collect && mode == 2 {
                        StrategyKind::Collect
                    } else {
                        StrategyKind::Pipelined
                    },
                    direction: if bi {
                        DirectionKind::Bi
                    } else {
                        DirectionKind::Uni
                    },
                    receives,
                    sends,
                    receive_first: first,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// A transfer at the edges of every field runs to its outcome or is
    /// refused naming what is wrong.
    #[test]
    fn a_transfer_at_its_extremes_runs_or_is_refused(t in transfer()) {
        let s = Scenario { transfer: Some(t.clone()), ..Default::default() };
        match scenario::run(&s) {
            Ok(r) => prop_assert!(r.json.is_object()),
            Err(e) => prop_assert!(!e.to_string().is_empty(), "{t:?}"),
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// The other experiments at the edges of their sizes and node counts.
    #[test]
    fn every_experiment_at_its_extremes_runs_or_is_refused(
        which in 0..6u8,
        nodes in edge_u32(&[1, 2, 3, 4, 16, 256, 257, 1024, 1025]),
        size in edge_u64(&[0, 1, 4, 16, 1 << 20, (1 << 20) + 1]),
        small in edge_u32(&[0, 1, 2, 3, 255, 256]),
    ) {
        let mut s = Scenario::default();
        match which {
            0 => s.miss = Some(scenario::Miss { nodes, offset: size, owner: small, ..Default::default() }),
            1 => s.fetch_op = Some(scenario::FetchOp { remote_node: small }),
            2 => s.messaging_costs = Some(scenario::MessagingCosts { words: size, packet_words: u64::from(small), ..Default::default() }),
            3 => s.logp = Some(scenario::Logp { nodes: nodes.min(8).max(small.min(3)), ..Default::default() }),
            4 => s.pipeline = Some(scenario::Pipeline { nodes, msgs: small.min(4), setup_cycles: size.min(1 << 40), ..Default::default() }),
            _ => s.suite = Some(scenario::Suite { nodes: nodes.min(4), benchmark: Some("one-to-one".into()), ..Default::default() }),
        }
        if let Err(e) = scenario::run(&s) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

/// What a study keeps of a run crosses threads, copies and prints.
#[test]
fn the_study_layers_results_are_send_clone_debug_serialize() {
    fn result<T: Send + Clone + std::fmt::Debug + serde::Serialize>() {}
    result::<scenario::Report>();
    result::<scenario::Scenario>();
    result::<flashkit::sweep::Row>();
}
