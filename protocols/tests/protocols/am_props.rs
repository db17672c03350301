//! The public configurations of the platforms and layers at their extremes:
//! node counts, cost tables, block sizes, word counts, intervals and TLB
//! shapes from zero to the type's largest value. Every call returns `Ok` or
//! an `Err` naming a field; none panics, and a node count above the allowed
//! maximum is refused before anything is built per node.

use magic::ni::cm5::Cm5Params;
use magic::ni::sp::SpParams;
use magic::{MagicParams, Time};
use proptest::prelude::*;
use protocols::am::cm5::{Cm5, Layer, LayerCosts};
use protocols::am::costs::{self, Delivery, Network};
use protocols::am::flash::{self, Flash, FlashCosts};
use protocols::am::sp::{Sp, SpCosts};
use protocols::am::{suite, Align, Platform, MAX_COST, MAX_NODES, RUN_LIMIT};
use protocols::command::CommandCosts;
use protocols::user::tlb::{Replacement, Tlb, TlbParams};
use protocols::user::UserParams;
use protocols::Error;
use serde::de::DeserializeOwned;

/// Node counts: none, too few for most benchmarks, the least that fit, a
/// middling machine, one past the most, and the largest a `u32` holds.
const NODES: [u32; 7] = [0, 1, 2, 3, 16, MAX_NODES + 1, u32::MAX];

/// Network times (ticks): none, one tick, a millisecond, a run's limit and
/// past it, the largest.
const TIMES: [u64; 6] = [0, 1, MILLISECOND, RUN_LIMIT.0, RUN_LIMIT.0 + 1, u64::MAX];

const MILLISECOND: u64 = 1000 * magic::time::TICKS_PER_US;

/// A cost entry's extremes, in range and out of it.
const EXTREME: [u64; 5] = [0, 1, MAX_COST, MAX_COST + 1, u64::MAX];

/// An `Err` names a field where the input was out of range, and is never a
/// panic; an `Ok` is fine.
fn refused_or_ran<T>(r: Result<T, Error>) {
    if let Err(e) = r {
        assert!(!e.to_string().is_empty());
    }
}

/// A cost table from JSON: the named fields set to `vals`, the rest left to
/// their defaults (so the table's serde shape is exercised too).
fn table<T: DeserializeOwned>(fields: &[&str], vals: &[u64]) -> T {
    let m: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .zip(vals)
        .map(|(f, v)| (f.to_string(), (*v).into()))
        .collect();
    serde_json::from_value(serde_json::Value::Object(m)).expect("a table of known fields")
}

const CM5_FIELDS: [&str; 22] = [
    "request",
    "reply",
    "poll",
    "poll_found",
    "dispatch",
    "segment",
    "interrupt",
    "interrupt_fast",
    "xfer_call",
    "xfer_stack_args",
    "xfer_send",
    "xfer_recv",
    "segment_switch",
    "shift_word",
    "xfer_check",
    "xfer_select",
    "xfer_address",
    "xfer_prime_shift",
    "xfer_prime_double",
    "xfer_record",
    "xfer_end",
    "xfer_ack",
];

const SP_FIELDS: [&str; 17] = [
    "request",
    "request_word",
    "reply",
    "reply_word",
    "poll",
    "per_message",
    "pop_every",
    "control",
    "retransmit",
    "keepalive_polls",
    "window_req",
    "window_rep",
    "bulk_packet",
    "flush_line",
    "flow_send",
    "flow_recv",
    "bulk_take",
];

const FLASH_FIELDS: [&str; 4] = ["poll_empty", "dispatch", "deliver", "line_in"];

/// A table's values: mostly ordinary ones, and one entry at an extreme.
fn values(n: usize, ordinary: &'static [u64]) -> impl Strategy<Value = Vec<u64>> {
    (
        prop::collection::vec(prop::sample::select(ordinary), n),
        0..n,
        prop::sample::select(&EXTREME[..]),
    )
        .prop_map(|(mut v, i, x)| {
            v[i] = x;
            v
        })
}

/// The cheapest run that exercises a platform: one request and its reply.
fn exercise(p: &dyn Platform) {
    refused_or_ran(suite::ops_of(p));
}

/// Benchmarks on too small (or too large) a platform are refused naming
/// `nodes`, before any program is built.
fn refused_for_size(p: &dyn Platform) {
    let nodes = p.nodes();
    if !(3..=MAX_NODES).contains(&nodes) {
        let e = suite::logp(p).expect_err("logp needs 3 to MAX_NODES nodes");
        assert_eq!(e.field(), Some("nodes"), "{e}");
        let e = suite::two_to_one(p).expect_err("two-to-one needs 3 nodes");
        assert_eq!(e.field(), Some("nodes"), "{e}");
    }
    if nodes > MAX_NODES {
        for r in [
            suite::poll_empty(p),
            suite::round_trip(p, 1),
            suite::ring(p),
        ] {
            assert_eq!(r.expect_err("too many nodes").field(), Some("nodes"));
        }
        assert!(suite::table(p, "round-trip").is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn cm5_tables_and_sizes(
        nodes in prop::sample::select(&NODES[..]),
        cmaml in any::<bool>(),
        vals in values(CM5_FIELDS.len(), &[0, 1, 7, 1000]),
    ) {
        let layer = if cmaml { Layer::Cmaml } else { Layer::Cmam };
        let costs: LayerCosts = table(&CM5_FIELDS, &vals);
        let out_of_range = vals.iter().any(|&v| v > MAX_COST);
        match Cm5::with(nodes, layer, costs, Default::default()) {
            Ok(p) => {
                prop_assert!(!out_of_range && (2..=MAX_NODES).contains(&nodes));
                if nodes <= 16 {
                    exercise(&p);
                }
            }
            Err(e) => prop_assert!(e.field().is_some(), "{e}"),
        }
        // The same values in the public fields: refused by the run itself.
        let p = Cm5 { costs, ..Cm5::new(nodes, layer) };
        if out_of_range {
            prop_assert!(p.run(&vec![Vec::new(); nodes.min(16) as usize]).is_err());
            prop_assert!(suite::poll_empty(&p).is_err());
        }
        refused_for_size(&p);
    }

    #[test]
    fn sp_tables_and_sizes(
        nodes in prop::sample::select(&NODES[..]),
        vals in values(SP_FIELDS.len(), &[36, 75, 1000, 4096]),
    ) {
        let costs: SpCosts = table(&SP_FIELDS, &vals);
        match Sp::with(nodes, costs, Default::default()) {
            Ok(p) => {
                prop_assert!((2..=MAX_NODES).contains(&nodes));
                // A keep-alive after every few polls makes a long wait slow
                // (not wrong): run the tables whose threshold is the usual order.
                if nodes <= 16 && costs.keepalive_polls >= 1000 {
                    exercise(&p);
                }
            }
            Err(e) => prop_assert!(e.field().is_some(), "{e}"),
        }
        refused_for_size(&Sp { costs, ..Sp::new(nodes) });
    }

    #[test]
    fn flash_tables_and_sizes(
        nodes in prop::sample::select(&[0, 1, 2, 3, flash::MAX_NODES, flash::MAX_NODES + 1, MAX_NODES + 1, u32::MAX][..]),
        vals in values(FLASH_FIELDS.len(), &[0, 1, 8, 1000]),
        command in prop::sample::select(&[0u32, 16, u32::MAX][..]),
    ) {
        // The u32 entries take what a u32 holds.
        let vals: Vec<u64> = vals
            .iter()
            .enumerate()
            .map(|(i, &v)| if i >= 2 { v.min(u32::MAX as u64) } else { v })
            .collect();
        let costs: FlashCosts = table(&FLASH_FIELDS, &vals);
        let cmd = CommandCosts { commit: command, ..CommandCosts::default() };
        match Flash::with(nodes, costs, cmd, MagicParams::default()) {
            Ok(p) => {
                prop_assert!((1..=flash::MAX_NODES).contains(&nodes));
                if (2..=3).contains(&nodes) {
                    exercise(&p);
                }
            }
            Err(e) => prop_assert!(e.field().is_some(), "{e}"),
        }
        refused_for_size(&Flash { costs, command: cmd, ..Flash::new(nodes) });
    }

    #[test]
    fn suite_arguments_at_their_extremes(
        to in prop::sample::select(&[0, 1, 2, 3, u32::MAX][..]),
        bytes in prop::sample::select(&[0, 1, 4096, suite::MAX_BYTES + 1, u32::MAX][..]),
        interval in prop::sample::select(&[0, suite::MAX_INTERVAL.0, suite::MAX_INTERVAL.0 + 1, u64::MAX][..]),
        step in prop::sample::select(&[0, 1, 2, u32::MAX][..]),
    ) {
        let p = Cm5::new(3, Layer::Cmaml);
        let r = suite::round_trip(&p, to);
        if !(1..3).contains(&to) {
            prop_assert_eq!(r.expect_err("no such node").field(), Some("to"));
        }
        for r in [
            suite::blocking_op(&p, bytes, false),
            suite::swap(&p, bytes),
            suite::two_to_one_segments(&p, bytes, true),
            suite::array_transfer(&p, bytes, Align::Byte, false),
        ] {
            if bytes == 0 || bytes > suite::MAX_BYTES {
                prop_assert_eq!(r.expect_err("bytes out of range").field(), Some("bytes"));
            }
        }
        if bytes == 0 || bytes > suite::MAX_BYTES {
            // (A 1-byte pipelined stream is a million stores: only the refusals.)
            prop_assert!(suite::pipelined(&p, bytes).is_err());
        }
        let r = suite::interrupt_load(&p, Time(interval));
        if interval > suite::MAX_INTERVAL.0 {
            prop_assert_eq!(r.expect_err("interval out of range").field(), Some("interval"));
        } else {
            prop_assert!(r.is_ok(), "{:?}", r);
        }
        refused_or_ran(suite::traverse_step(&p, step, false));
        let _ = suite::traverse_steps(step);
    }

    #[test]
    fn network_parameters_at_their_extremes(
        access in prop::sample::select(&[0, 1, 7, MAX_COST + 1, u64::MAX][..]),
        time in prop::sample::select(&TIMES[..]),
        which in 0..4usize,
        rate in prop::sample::select(&[0, 1, 80, u64::MAX][..]),
        fifo in prop::sample::select(&[0, 1, 64, usize::MAX][..]),
    ) {
        let t = Time(time);
        let mut hw = Cm5Params { ni_read: access, capacity: fifo, ..Cm5Params::default() };
        match which {
            0 => hw.router_delay = t,
            1 => hw.fixed_latency = t,
            2 => hw.path_jitter = t,
            _ => hw.link_time = t,
        }
        match Cm5::with(4, Layer::Cmam, LayerCosts::cmam(), hw) {
            Ok(p) => {
                if time <= MILLISECOND {
                    exercise(&p);
                }
            }
            Err(e) => prop_assert!(e.field().is_some() || matches!(e, Error::Network(_)), "{e}"),
        }
        let mut hw = SpParams { mc_bytes_per_us: rate, recv_fifo: fifo, ..SpParams::default() };
        match which {
            0 => hw.mc_access = t,
            1 => hw.adapter_latency = t,
            2 => hw.switch_latency = t,
            _ => hw.delay = t,
        }
        match Sp::with(4, SpCosts::default(), hw) {
            Ok(p) => {
                if time <= MILLISECOND {
                    exercise(&p);
                }
            }
            Err(e) => prop_assert!(e.field().is_some() || matches!(e, Error::Network(_)), "{e}"),
        }
    }

    #[test]
    fn cost_study_at_its_extremes(
        delivery in prop::sample::select(&[Delivery::Single, Delivery::Finite, Delivery::Indefinite][..]),
        ordered in any::<bool>(),
        words in prop::sample::select(&[0, 1, 4, 64, costs::MAX_WORDS + 1, u64::MAX][..]),
        packet_words in prop::sample::select(&[0, 1, 2, 3, 4, costs::MAX_WORDS + 1, u64::MAX][..]),
    ) {
        let net = if ordered { Network::Ordered } else { Network::Cm5 };
        match costs::run(delivery, words, packet_words, net) {
            Ok(c) => prop_assert_eq!(c.total.total, c.total.source + c.total.destination),
            Err(e) => prop_assert!(
                matches!(e.field(), Some("words" | "packet_words")),
                "{}",
                e
            ),
        }
    }

    #[test]
    fn user_layer_at_its_extremes(
        records in prop::sample::select(&[0, 1, 4096, 4097, usize::MAX][..]),
        entries in prop::sample::select(&[0, 1, 64, 1 << 16, (1 << 16) + 1, usize::MAX][..]),
        ways in prop::sample::select(&[0, 1, 3, 4, usize::MAX][..]),
        retries in prop::sample::select(&[0, 16, 17, u32::MAX][..]),
        backoff in prop::sample::select(&[0, 1, 1 << 20, (1 << 20) + 1, u64::MAX][..]),
    ) {
        let tlb = TlbParams { entries, ways, replacement: Replacement::Fifo };
        match Tlb::new(tlb) {
            Ok(_) => prop_assert!(entries % ways == 0 && entries <= 1 << 16),
            Err(e) => prop_assert!(matches!(e.field(), Some("entries" | "ways")), "{}", e),
        }
        let up = UserParams {
            records,
            retries,
            backoff: magic::Cycles(backoff),
            tlb,
            ..UserParams::default()
        };
        if let Err(e) = up.validate() {
            prop_assert!(e.field().is_some(), "{}", e);
        }
    }
}

/// The fetch-and-add's target is a node of the machine it builds: the
/// largest `u32` is refused naming `target`, not an overflow.
#[test]
fn fetch_op_target_is_checked() {
    use protocols::user::experiments::fetch_op;
    for t in [flash::MAX_NODES, u32::MAX] {
        let e = fetch_op(t, MagicParams::default())
            .err()
            .expect("no such node");
        assert_eq!(e.field(), Some("target"));
    }
    let r = fetch_op(1, MagicParams::default()).unwrap().result();
    assert_eq!((r.old, r.new), (40, 42));
}

/// Exports at extreme node counts and figures: refused, never a panic.
#[test]
fn exports_at_their_extremes() {
    use protocols::am::export::{self, Network};
    let l = suite::LogP {
        platform: "x".into(),
        counts: Default::default(),
        send_overhead_us: 1.0,
        reply_overhead_us: 1.0,
        recv_overhead_us: 1.0,
        poll_empty_us: 0.1,
        poll_one_us: 0.5,
        round_trip_us: 10.0,
        ring_us: 2.0,
        bulk: suite::Bulk {
            startup_us: 5.0,
            bandwidth_mb_s: 100.0,
            n_half_bytes: 500.0,
        },
    };
    for nodes in [0, 1, MAX_NODES + 1, u32::MAX] {
        assert_eq!(
            export::loggopsim(&l, nodes).unwrap_err().field(),
            Some("nodes")
        );
        for net in [Network::Star, Network::FatTree { step_us: Some(1.0) }] {
            let e = export::simgrid(&l, nodes, net).unwrap_err();
            assert_eq!(e.field(), Some("nodes"));
        }
    }
    for x in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::MAX] {
        let bad = suite::LogP {
            round_trip_us: x,
            bulk: suite::Bulk {
                bandwidth_mb_s: x,
                ..l.bulk
            },
            ..l.clone()
        };
        let _ = export::loggopsim(&bad, 4);
        let _ = export::simgrid(&bad, 64, Network::FatTree { step_us: Some(x) });
    }
    assert!(export::loggopsim(&l, MAX_NODES).is_ok());
}

/// The platforms' cost tables as a scenario holds them: an entry left out
/// takes its default, an unknown key is an error naming it, and a table
/// written out reads back the same.
#[test]
fn cost_tables_read_as_scenarios_write_them() {
    let c: LayerCosts = serde_json::from_str(r#"{"request": 30}"#).unwrap();
    assert_eq!(
        c,
        LayerCosts {
            request: 30,
            ..LayerCosts::cmam()
        }
    );
    let e = serde_json::from_str::<SpCosts>(r#"{"requests": 1}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `requests`"), "{e}");
    let e = serde_json::from_str::<FlashCosts>(r#"{"pol_empty": 1}"#).unwrap_err();
    assert!(e.to_string().contains("pol_empty"), "{e}");
    for c in [LayerCosts::cmam(), LayerCosts::cmaml()] {
        let back: LayerCosts = serde_json::from_value(serde_json::to_value(c).unwrap()).unwrap();
        assert_eq!(back, c);
    }
    let sp = SpCosts::default();
    let back: SpCosts = serde_json::from_value(serde_json::to_value(sp).unwrap()).unwrap();
    assert_eq!(back, sp);
    // The default constructors are the validated ones with default tables.
    let p = Cm5::with(16, Layer::Cmaml, LayerCosts::cmaml(), Default::default()).unwrap();
    assert_eq!(p.costs, Cm5::new(16, Layer::Cmaml).costs);
    let e = Sp::with(
        16,
        SpCosts {
            window_req: 4,
            ..SpCosts::default()
        },
        Default::default(),
    );
    assert_eq!(e.unwrap_err().field(), Some("window_req"));
    let e = Cm5::with(
        16,
        Layer::Cmam,
        LayerCosts {
            poll: u64::MAX,
            ..LayerCosts::cmam()
        },
        Default::default(),
    );
    assert_eq!(
        e.unwrap_err().to_string(),
        "poll must be from 1 to 1000000, got 18446744073709551615"
    );
    assert!(Flash::with(
        4,
        FlashCosts::default(),
        CommandCosts::default(),
        MagicParams::default()
    )
    .is_ok());
}
