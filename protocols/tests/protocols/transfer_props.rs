//! Data integrity of the bulk transfer: random sizes (1 byte to 64 KB, small
//! and unaligned ones frequent), random offsets (doubleword multiples, which
//! the data path realigns by wrap-around, and arbitrary bytes, which the PP
//! realigns), cache states, handler versions, chunk factors, coherence modes,
//! strategies, directions and receive/send splits. Every run completes, the
//! destination bytes equal the source stream, no byte outside the destination
//! changes, and the caches and directories agree afterwards (for `local`
//! within its precondition: never a send line dirty in a third node's cache).

use coherence::modes::Mode;
use magic::NodeId;
use proptest::prelude::*;
use protocols::transfer::{
    run, run_with_machine, Config, Direction, ReceiverState, SenderState, Strategy as XferStrategy,
    Version,
};

/// Sizes: small ones and unaligned ones are the interesting cases.
fn bytes() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..=300,
        3 => 1u64..=5000,
        1 => 1u64..=65536,
        1 => (1u64..=16).prop_map(|k| k * 4096),
    ]
}

/// Offsets within a page: line aligned, doubleword multiples, any byte.
fn offset() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => Just(0u64),
        1 => (0u64..32).prop_map(|k| k * 128),
        3 => (0u64..512).prop_map(|k| k * 8),
        3 => 0u64..4096,
        1 => prop_oneof![Just(1u64), Just(7), Just(127), Just(4095), Just(4088)],
    ]
}

/// The sender's state with a coherence mode that admits it (`dirty-remote`
/// only under `global`).
fn sender_mode() -> impl Strategy<Value = (SenderState, Mode)> {
    prop_oneof![
        1 => Just((SenderState::Uncached, Mode::Local)),
        1 => Just((SenderState::Clean, Mode::Local)),
        1 => Just((SenderState::Dirty, Mode::Local)),
        1 => Just((SenderState::Uncached, Mode::Global)),
        1 => Just((SenderState::Clean, Mode::Global)),
        1 => Just((SenderState::Dirty, Mode::Global)),
        2 => Just((SenderState::DirtyRemote, Mode::Global)),
    ]
}

fn receiver() -> impl Strategy<Value = ReceiverState> {
    prop_oneof![
        Just(ReceiverState::Uncached),
        Just(ReceiverState::Clean),
        Just(ReceiverState::Dirty),
    ]
}

fn version() -> impl Strategy<Value = Version> {
    prop_oneof![
        1 => Just(Version::Base),
        1 => Just(Version::Optimized),
        3 => (1u32..=16).prop_map(Version::Chunked),
    ]
}

prop_compose! {
    pub(crate) fn config()(
        bytes in bytes(),
        (sender, mode) in sender_mode(),
        receiver in receiver(),
        version in version(),
        src_offset in offset(),
        dst_offset in offset(),
        strategy in prop_oneof![Just(XferStrategy::Pipelined), Just(XferStrategy::Collect)],
        direction in prop_oneof![Just(Direction::Uni), Just(Direction::Bi)],
        receives in 1u32..=4,
        sends in 1u32..=4,
        receive_first in any::<bool>(),
    ) -> Config {
        Config {
            bytes,
            sender,
            receiver,
            handler: version,
            src_offset,
            dst_offset,
            mode,
            // Fetch strategies are global coherence's alone.
            strategy: if mode == Mode::Global { strategy } else { XferStrategy::Pipelined },
            direction,
            // At most one part per byte.
            receives: receives.min(bytes as u32),
            sends: sends.min(bytes as u32),
            receive_first,
            ..Config::default()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn transfers_deliver_the_stream_intact_and_coherent(c in config()) {
        prop_assert!(c.validate().is_ok(), "{c:?}: {:?}", c.validate());
        let r = match run_with_machine(&c) {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("{c:?}: {e}"))),
        };
        prop_assert!(r.data_ok, "{c:?}: wrong data at the destination or around it");
        prop_assert!(r.incoherent.is_none(), "{c:?}: incoherent: {:?}", r.incoherent);
        let receivers: &[NodeId] = match c.direction {
            Direction::Uni => &[NodeId(1)],
            Direction::Bi => &[NodeId(1), NodeId(0)],
        };
        for &n in receivers {
            let s = &r.machine.state(n).unwrap().stats;
            prop_assert_eq!(s.bytes_received, c.bytes, "{:?}: node {} received", c, n.0);
            let from = &r.machine.state(NodeId(1 - n.0)).unwrap().stats;
            prop_assert_eq!(from.bytes_sent, c.bytes, "{:?}: node {} sent", c, 1 - n.0);
        }
        for n in [NodeId(0), NodeId(1)] {
            let s = &r.machine.state(n).unwrap().stats;
            prop_assert_eq!(s.dropped, 0, "{:?}: node {} dropped components", c, n.0);
            prop_assert_eq!(
                s.outside_local, 0,
                "{:?}: node {} met lines outside local coherence's precondition", c, n.0
            );
        }
        prop_assert!(r.lines > 0, "{c:?}: no components");
        prop_assert_eq!(
            r.startup.total,
            r.startup.initiation
                + r.startup.setup_verification
                + r.startup.initial_line
                + r.startup.network_queueing
                + r.startup.receiver_cleanup,
            "{:?}: start-up parts", c
        );
    }
}

/// The same experiment twice gives the same measurements, to the byte.
#[test]
fn a_transfer_is_deterministic() {
    for c in [
        Config::default(),
        Config {
            bytes: 5001,
            sender: SenderState::DirtyRemote,
            receiver: ReceiverState::Dirty,
            handler: Version::Chunked(7),
            src_offset: 13,
            dst_offset: 1000,
            mode: Mode::Global,
            strategy: XferStrategy::Collect,
            direction: Direction::Bi,
            receives: 3,
            sends: 2,
            receive_first: false,
            ..Config::default()
        },
        Config {
            bytes: 300,
            sender: SenderState::Dirty,
            receiver: ReceiverState::Clean,
            handler: Version::Optimized,
            src_offset: 8,
            dst_offset: 24,
            receives: 4,
            sends: 3,
            ..Config::default()
        },
    ] {
        let a = run(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let b = run(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert!(a.data_ok && a.incoherent.is_none(), "{c:?}");
        assert_eq!(a.json().to_string(), b.json().to_string(), "{c:?}");
        assert_eq!(format!("{a}"), format!("{b}"), "{c:?}");
    }
}
