//! One workload program, every controller: the suite's benchmarks run
//! unchanged on the CM-5, the SP and FLASH.

use protocols::am::cm5::{Cm5, Layer};
use protocols::am::flash::Flash;
use protocols::am::sp::Sp;
use protocols::am::{suite, Platform};

fn platforms() -> Vec<Box<dyn Platform>> {
    vec![
        Box::new(Cm5::new(16, Layer::Cmam)),
        Box::new(Cm5::new(16, Layer::Cmaml)),
        Box::new(Sp::new(16)),
        Box::new(Flash::new(16)),
    ]
}

#[test]
fn every_benchmark_runs_on_every_platform() {
    for p in platforms() {
        for b in suite::BENCHMARKS {
            let t = suite::table(p.as_ref(), b).unwrap_or_else(|e| panic!("{} {b}: {e}", p.name()));
            assert!(t.iter().all(|t| !t.rows.is_empty()));
        }
    }
}

#[test]
fn a_round_trip_costs_at_least_its_overheads() {
    for p in platforms() {
        let l = suite::logp(p.as_ref()).unwrap();
        let o = l.send_overhead_us + l.reply_overhead_us;
        assert!(l.round_trip_us > o, "{}: {l:?}", p.name());
        assert!(l.bulk.bandwidth_mb_s > 0.0 && l.bulk.startup_us.is_finite());
    }
}

/// Two senders into one MAGIC are timed at the receiver: its processor
/// takes each message, so a message received costs it at least what
/// taking one costs (a poll that found one, less an empty poll; on
/// MAGIC a poll's own cost does not grow with what it finds, where the
/// CM-5's found-poll cost is shared by the messages one poll takes), and
/// a round trip holds two of them besides the two sends.
#[test]
fn a_receiver_pays_for_every_message_it_takes() {
    let p = Flash::new(16);
    let take = suite::poll_one(&p).unwrap() - suite::poll_empty(&p).unwrap();
    let l = suite::logp(&p).unwrap();
    let floor = l.send_overhead_us + l.reply_overhead_us + 2.0 * take;
    assert!(take > 0.3, "{take}");
    assert!(l.recv_overhead_us >= take - 1e-9, "{take} {l:?}");
    assert!(l.round_trip_us >= floor - 1e-9, "{take} {l:?}");
}

/// On MAGIC a message taken while the program waits costs its
/// receive in full: a dearer receive slows two-to-one by as much.
#[test]
fn a_dearer_receive_slows_the_receiver_by_as_much() {
    use protocols::am::flash::FlashCosts;
    let at = |dispatch: u64| {
        let costs = FlashCosts {
            dispatch,
            ..FlashCosts::default()
        };
        let f = Flash::with(4, costs, Default::default(), Default::default()).unwrap();
        suite::two_to_one(&f).unwrap()
    };
    let (cheap, dear) = (at(5), at(105));
    // 100 cycles of 10 ns more a message.
    assert!((dear - cheap - 1.0).abs() < 0.02, "{cheap} {dear}");
}

#[test]
fn magic_moves_bulk_data_at_the_network_rate() {
    // A line of 128 bytes every 40 cycles of 10 ns: 320 MB/s.
    let b = suite::bulk(&Flash::new(4)).unwrap();
    assert!((b.bandwidth_mb_s - 320.0).abs() < 5.0, "{b:?}");
}

#[test]
fn two_senders_into_one_magic_node_share_its_inbound_link() {
    // Each sender's 64 KB alone moves at the link's 320 MB/s; the two
    // into one node come in through its one port, so together they take
    // at least twice one's time on the wire (409.6 us), whichever
    // segments they fill.
    let f = Flash::new(4);
    for shared in [true, false] {
        let us = suite::two_to_one_segments(&f, 65536, shared).unwrap();
        let mb_s = 2.0 * 65536.0 / us;
        assert!(
            us >= 409.6 && mb_s <= 320.0,
            "shared {shared}: {us:.2} us, {mb_s:.2} MB/s"
        );
    }
    // A machine whose packets never wait at a port takes them at once.
    let mut free = Flash::new(4);
    free.params.inbound_contention = false;
    let us = suite::two_to_one_segments(&free, 65536, true).unwrap();
    assert!(us < 300.0, "{us:.2} us");
}

#[test]
fn runs_repeat_exactly() {
    for p in platforms() {
        let a = suite::table(p.as_ref(), "round-trip").unwrap()[0].to_string();
        let b = suite::table(p.as_ref(), "round-trip").unwrap()[0].to_string();
        assert_eq!(a, b, "{}", p.name());
    }
}

#[test]
fn a_get_fetches_a_block_where_the_layer_offers_it() {
    use magic::NodeId;
    use protocols::am::Step;
    let progs = |n: usize| {
        let mut v = vec![Vec::new(); n];
        v[0] = vec![
            Step::Mark,
            Step::Get {
                from: NodeId(1),
                bytes: 16384,
            },
            Step::Wait { received: 1 },
            Step::Mark,
        ];
        v
    };
    let sp = Sp::new(4);
    let r = sp.run(&progs(4)).unwrap();
    assert_eq!(r.received[0], 1);
    // The owner's processor sent the block: its store ran there.
    assert!(r.ops[&(1, "store")].calls >= 3, "{}", r.render());
    let f = Flash::new(4);
    let r = f.run(&progs(4)).unwrap();
    assert_eq!(r.received[0], 1);
    // On MAGIC the owner's processor does nothing at all.
    assert!(
        !r.ops.keys().any(|k| k.0 == 1 && k.1 != "receive"),
        "{}",
        r.render()
    );
    // CMAM has no get.
    let e = Cm5::new(4, Layer::Cmam).run(&progs(4)).unwrap_err();
    assert!(matches!(e, protocols::Error::Program(_)), "{e}");
    assert!(e.to_string().contains("no get"), "{e}");
}

/// A sender's part of a shared segment larger than the segment is a
/// program error on every platform, never counts that disagree.
#[test]
fn a_part_larger_than_its_segment_is_refused() {
    use magic::NodeId;
    use protocols::am::{Align, Step};
    let part = Step::StoreShared {
        to: NodeId(1),
        bytes: 100,
        align: Align::Byte,
        segment: 0,
        total: 50,
    };
    let progs = vec![
        vec![part, part, Step::Wait { received: 2 }],
        vec![Step::Wait { received: 2 }],
    ];
    let two: Vec<Box<dyn Platform>> = vec![
        Box::new(Cm5::new(2, Layer::Cmam)),
        Box::new(Cm5::new(2, Layer::Cmaml)),
        Box::new(Sp::new(2)),
        Box::new(Flash::new(2)),
    ];
    for p in two {
        let e = p.run(&progs).unwrap_err();
        assert!(matches!(e, protocols::Error::Program(_)), "{e}");
        assert!(
            e.to_string()
                .contains("a part of 100 bytes of a segment of 50"),
            "{e}"
        );
    }
}

/// Too few nodes for a benchmark is an error naming what it needs, on every
/// platform, never a panic; the suite's benchmarks that fit still run.
#[test]
fn too_small_a_platform_is_refused_not_a_panic() {
    for nodes in [1, 2] {
        let small: Vec<Box<dyn Platform>> = vec![
            Box::new(Cm5::new(nodes, Layer::Cmam)),
            Box::new(Cm5::new(nodes, Layer::Cmaml)),
            Box::new(Sp::new(nodes)),
            Box::new(Flash::new(nodes)),
        ];
        for p in small {
            let e = suite::logp(p.as_ref()).expect_err("logp needs three nodes");
            assert_eq!(e.field(), Some("nodes"), "{}: {e}", p.name());
            assert!(
                matches!(e, protocols::Error::TooFewNodes { .. }),
                "{}: {e}",
                p.name()
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("nodes must be at least 3, got {nodes}")),
                "{}: {e}",
                p.name()
            );
            for b in suite::BENCHMARKS {
                // Ok where the benchmark fits, Err otherwise; never a panic.
                let _ = suite::table(p.as_ref(), b);
            }
            let two = suite::table(p.as_ref(), "two-to-one").expect_err("two-to-one needs three");
            assert_eq!(two.field(), Some("nodes"), "{}: {two}", p.name());
        }
    }
}

/// Too many nodes for a platform quotes that platform's own limit (the
/// CM-5's 1024, the SP's 512, FLASH's 4096), for every benchmark.
#[test]
fn too_large_a_platform_quotes_its_own_limit() {
    let large: Vec<(Box<dyn Platform>, &str)> = vec![
        (
            Box::new(Cm5::new(4097, Layer::Cmam)),
            "nodes must be from 2 to 1024, got 4097",
        ),
        (
            Box::new(Cm5::new(1025, Layer::Cmaml)),
            "nodes must be from 2 to 1024, got 1025",
        ),
        (
            Box::new(Sp::new(4097)),
            "nodes must be from 2 to 512, got 4097",
        ),
        (
            Box::new(Sp::new(513)),
            "nodes must be from 2 to 512, got 513",
        ),
        (
            Box::new(Flash::new(4097)),
            "nodes must be from 1 to 4096, got 4097",
        ),
    ];
    for (p, want) in large {
        let e = suite::logp(p.as_ref()).expect_err("too large");
        assert_eq!(e.to_string(), want, "{}", p.name());
        for b in suite::BENCHMARKS {
            let e = suite::table(p.as_ref(), b).expect_err("too large");
            assert_eq!(e.to_string(), want, "{} {b}", p.name());
        }
    }
}

/// `suite::least_nodes` is what the benchmarks themselves need: one node
/// fewer is refused, naming the nodes, and that many run.
#[test]
fn each_benchmark_runs_on_its_least_nodes_and_no_fewer() {
    use protocols::am::config::PlatformConfig;
    use protocols::am::suite::{least_nodes, SuiteConfig, BENCHMARKS};
    let mut all: Vec<Option<&str>> = BENCHMARKS.iter().map(|b| Some(*b)).collect();
    all.push(None);
    for b in all {
        let least = least_nodes(b);
        let run = |nodes| {
            suite::run(&SuiteConfig {
                platform: PlatformConfig::flash(nodes),
                benchmark: b.map(str::to_string),
            })
        };
        let e = run(least - 1).err();
        assert_eq!(
            e.as_ref().and_then(|e| e.field()),
            Some("nodes"),
            "{b:?} on {} nodes: {e:?}",
            least - 1
        );
        if let Err(e) = run(least) {
            panic!("{b:?} on {least} nodes: {e}");
        }
    }
}

/// The interrupt load runs at the longest interval it accepts on every
/// platform and reception, with their default budgets, and refuses one
/// tick more naming `interval`.
#[test]
fn the_interrupt_load_runs_up_to_its_longest_interval_and_refuses_past_it() {
    use magic::Time;
    use protocols::am::cm5::Reception;
    let interrupts = |fast| {
        let mut p = Cm5::new(2, Layer::Cmaml);
        p.reception = Reception::Interrupts { fast };
        Box::new(p) as Box<dyn Platform>
    };
    let all: [Box<dyn Platform>; 6] = [
        Box::new(Cm5::new(2, Layer::Cmam)),
        Box::new(Cm5::new(2, Layer::Cmaml)),
        interrupts(false),
        interrupts(true),
        Box::new(Sp::new(2)),
        Box::new(Flash::new(2)),
    ];
    for p in all {
        let (lost, share) = suite::interrupt_load(p.as_ref(), suite::MAX_INTERVAL)
            .unwrap_or_else(|e| panic!("{}: {e}", p.name()));
        assert!(lost.is_finite() && share.is_finite(), "{}", p.name());
        let past = Time(suite::MAX_INTERVAL.0 + 1);
        let e = suite::interrupt_load(p.as_ref(), past).unwrap_err();
        assert_eq!(e.field(), Some("interval"), "{}: {e}", p.name());
    }
}

/// A run stopped at one of its budgets names the key that raises it, on
/// every platform: the comparison platforms' simulated time (`budget`)
/// and events (`event_budget`), FLASH's cycle budget (`budget`).
#[test]
fn a_run_stopped_at_its_budget_names_the_key_that_raises_it() {
    use magic::{Cycles, MagicParams, Time};
    let mut events = Cm5::new(4, Layer::Cmam);
    events.hw.event_budget = 10;
    let mut time = Cm5::new(4, Layer::Cmam);
    time.hw.budget = Time(1);
    let mut sp = Sp::new(4);
    sp.hw.event_budget = 10;
    let flash = Flash::with(
        4,
        Default::default(),
        Default::default(),
        MagicParams {
            budget: Cycles(1000),
            ..MagicParams::default()
        },
    )
    .unwrap();
    let cases: [(Box<dyn Platform>, &str); 4] = [
        (Box::new(events), "event_budget"),
        (Box::new(time), "budget"),
        (Box::new(sp), "event_budget"),
        (Box::new(flash), "budget"),
    ];
    for (p, key) in cases {
        let e = suite::round_trip(p.as_ref(), 1).unwrap_err();
        assert_eq!(e.field(), Some(key), "{}: {e}", p.name());
        assert!(
            matches!(e, protocols::Error::OverBudget { .. }),
            "{}: {e}",
            p.name()
        );
    }
}
