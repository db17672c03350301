//! CMAM and CMAML on the CM-5 model: the per-operation costs docs/reference.md
//! reports are the calibration (each within 5% as the suite measures it);
//! the network's structure shows in the round trips.

use magic::Time;
use protocols::am::cm5::{Cm5, Layer, Reception};
use protocols::am::{suite, Handler, Platform, Step};

fn within(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 0.05 * want,
        "{what}: {got:.3} us, published {want}"
    );
}

#[test]
fn cmam_and_cmaml_operations_cost_what_was_measured() {
    for (layer, send, reply, recv, empty, one) in [
        (Layer::Cmam, 1.49, 1.25, 1.60, 0.85, 2.85),
        (Layer::Cmaml, 1.96, 1.28, 2.01, 1.33, 3.3),
    ] {
        let p = Cm5::new(64, layer);
        let l = suite::logp(&p).unwrap();
        within(l.send_overhead_us, send, "request send");
        within(l.reply_overhead_us, reply, "reply send");
        within(l.recv_overhead_us, recv, "receive");
        within(l.poll_empty_us, empty, "empty poll");
        within(l.poll_one_us, one, "poll taking one message");
    }
}

#[test]
fn interrupt_reception_costs_the_kernel_path() {
    for (fast, want) in [(false, 19.0), (true, 9.6)] {
        let mut p = Cm5::new(8, Layer::Cmaml);
        p.reception = Reception::Interrupts { fast };
        let got = suite::interrupt_cost(&p, Time(100 * magic::time::TICKS_PER_US)).unwrap();
        within(got, want, "one message per interrupt");
    }
}

#[test]
fn round_trips_step_up_where_the_fat_tree_does() {
    let p = Cm5::new(64, Layer::Cmam);
    let rt: Vec<f64> = suite::round_trips(&p)
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect();
    let at = |d: usize| rt[d - 1];
    assert!((at(1) - at(3)).abs() < 0.05);
    assert!(at(4) > at(3) + 0.5 && (at(4) - at(15)).abs() < 0.05);
    assert!(at(16) > at(15) + 0.5 && (at(16) - at(63)).abs() < 0.05);
    // Each step is two routers each way: the router delay, measured.
    let router = (at(4) - at(3)) / 4.0;
    within(router, 0.25, "router delay");
}

#[test]
fn a_full_network_makes_senders_retry_and_nothing_is_lost() {
    let mut p = Cm5::new(4, Layer::Cmam);
    p.hw.capacity = 2;
    // Three senders flood node 0, which only starts polling late.
    let mut progs = vec![Vec::new(); 4];
    for prog in progs.iter_mut().skip(1) {
        *prog = (0..50)
            .map(|_| Step::Request {
                to: magic::NodeId(0),
                words: 4,
                handler: Handler::Nop,
            })
            .collect();
    }
    progs[0] = vec![
        Step::Compute(Time(200 * magic::time::TICKS_PER_US)),
        Step::Wait { received: 150 },
    ];
    let r = p.run(&progs).unwrap();
    assert!(r.retries > 0);
    assert_eq!(r.received[0], 150);
}

#[test]
fn a_program_that_can_never_finish_is_reported_stuck() {
    let p = Cm5::new(2, Layer::Cmam);
    let progs = vec![vec![Step::Wait { received: 1 }], vec![]];
    let e = p.run(&progs).unwrap_err();
    assert!(e.to_string().contains("stuck"), "{e}");
}

#[test]
fn segments_take_packets_in_any_order() {
    use protocols::am::Align;
    let mut p = Cm5::new(64, Layer::Cmam);
    // Paths that differ by more than the time between packets.
    p.hw.path_jitter = Time(20 * magic::time::TICKS_PER_US);
    let progs: Vec<Vec<Step>> = (0..64)
        .map(|i| match i {
            0 => vec![Step::Store {
                to: magic::NodeId(63),
                bytes: 4096,
                align: Align::Double,
            }],
            63 => vec![Step::Wait { received: 1 }],
            _ => vec![],
        })
        .collect();
    let r = p.run(&progs).unwrap();
    assert!(r.overtaken > 0, "the packets came out of order");
    assert_eq!(r.received[63], 1, "the block completed once");
    // One segment opened, 256 packets of 16 bytes stored.
    let seg = r.ops[&(63, "segment")];
    assert_eq!(seg.calls, 1);
    // (Attempts the full network refused were made again.)
    assert_eq!(r.ops[&(0, "xfer")].calls - r.retries, 256);
}

/// Send plus receive overhead, as the suite measures them.
fn overheads(p: &Cm5) -> f64 {
    suite::one_to_two(p, false).unwrap() + suite::two_to_one(p).unwrap()
}

#[test]
fn traverse_is_local_overhead_low_in_the_tree_and_slower_across_its_thin_top() {
    let p = Cm5::new(64, Layer::Cmam);
    let o = overheads(&p);
    let step = |i| suite::traverse_step(&p, i, false).unwrap();
    let low: Vec<f64> = [1, 2, 4, 8].into_iter().map(step).collect();
    let high: Vec<f64> = [16, 32, 63].into_iter().map(step).collect();
    for &l in &low {
        assert!(l < 2.0 * o, "low step {l:.2} us, send + receive {o:.2}");
    }
    let worst_low = low.iter().cloned().fold(0.0, f64::max);
    for &h in &high {
        assert!(
            h >= 1.2 * worst_low,
            "upper step {h:.2} against {worst_low:.2}"
        );
    }
}

#[test]
fn ring_traffic_is_local_so_a_message_costs_about_its_overheads() {
    let p = Cm5::new(64, Layer::Cmam);
    let (ring, o) = (suite::ring(&p).unwrap(), overheads(&p));
    assert!(
        ring >= o && ring < 1.15 * o,
        "ring {ring:.2}, send + receive {o:.2}"
    );
}

#[test]
fn two_segments_miss_the_register_cache_and_receive_markedly_slower() {
    for layer in [Layer::Cmam, Layer::Cmaml] {
        let p = Cm5::new(4, layer);
        let one = suite::two_to_one_segments(&p, 65536, true).unwrap();
        let two = suite::two_to_one_segments(&p, 65536, false).unwrap();
        assert!(
            two >= 1.15 * one,
            "{layer:?}: one {one:.0} us, two {two:.0} us"
        );
    }
}

#[test]
fn alignment_orders_bandwidth_and_blocking_adds_about_a_round_trip() {
    use protocols::am::Align;
    for layer in [Layer::Cmam, Layer::Cmaml] {
        let p = Cm5::new(4, layer);
        let rt = suite::round_trip(&p, 1).unwrap();
        let fits: Vec<(suite::Bulk, suite::Bulk)> = [Align::Byte, Align::Word, Align::Double]
            .into_iter()
            .map(|a| {
                let nb = suite::fit(&suite::array_curve(&p, a, false).unwrap());
                let bl = suite::fit(&suite::array_curve(&p, a, true).unwrap());
                (nb, bl)
            })
            .collect();
        let bw: Vec<f64> = fits.iter().map(|f| f.0.bandwidth_mb_s).collect();
        assert!(bw[0] < bw[1] && bw[1] < bw[2], "{layer:?}: {bw:?}");
        for (nb, bl) in &fits {
            assert!(
                nb.startup_us > 0.0 && bl.startup_us > 0.0,
                "{layer:?}: {nb:?} {bl:?}"
            );
            let d = bl.startup_us - nb.startup_us;
            assert!(
                (d - rt).abs() <= 0.5 * rt,
                "{layer:?}: {d:.2} against a round trip {rt:.2}"
            );
        }
    }
}

#[test]
fn a_swap_sends_while_it_receives_so_each_way_gets_about_half() {
    use protocols::am::Align;
    let p = Cm5::new(4, Layer::Cmam);
    let curve = suite::array_curve(&p, Align::Double, true).unwrap();
    let one_way = suite::fit(&curve).bandwidth_mb_s;
    let bytes = 65536;
    let each = bytes as f64 / suite::swap(&p, bytes).unwrap();
    let r = each / one_way;
    assert!(
        (0.35..0.65).contains(&r),
        "{each:.2} MB/s each way, {one_way:.2} one way"
    );
}

#[test]
fn a_shared_segment_ends_once_for_both_senders() {
    use protocols::am::Align;
    let p = Cm5::new(4, Layer::Cmam);
    let run = |shared: bool| {
        let mut progs = vec![Vec::new(); 4];
        for s in [1usize, 2] {
            progs[s] = vec![
                if shared {
                    Step::StoreShared {
                        to: magic::NodeId(0),
                        bytes: 1024,
                        align: Align::Double,
                        segment: 7,
                        total: 2048,
                    }
                } else {
                    Step::Store {
                        to: magic::NodeId(0),
                        bytes: 1024,
                        align: Align::Double,
                    }
                },
                Step::Wait { received: 1 },
            ];
        }
        p.run(&progs).unwrap()
    };
    let one = run(true);
    let two = run(false);
    assert_eq!(one.ops[&(0, "end-of-transfer")].calls, 1);
    assert_eq!(two.ops[&(0, "end-of-transfer")].calls, 2);
    assert_eq!(one.ops[&(0, "segment")].calls, 1);
    assert_eq!(two.ops[&(0, "segment")].calls, 2);
    // Both senders hear of completion either way.
    assert_eq!((one.received[1], one.received[2]), (1, 1));
}

#[test]
fn request_and_reply_polls_look_at_one_network() {
    let p = Cm5::new(4, Layer::Cmam);
    let mut progs = vec![Vec::new(); 4];
    progs[0] = vec![
        Step::Mark,
        Step::PollOnly { replies: true },
        Step::Mark,
        Step::PollOnly { replies: false },
        Step::Mark,
        Step::Poll,
        Step::Mark,
    ];
    let r = p.run(&progs).unwrap();
    let one = r.between(0, 0, 1).unwrap();
    assert!((one - r.between(0, 1, 2).unwrap()).abs() < 1e-9);
    // A full poll reads two status registers, a one-network poll one.
    let full = r.between(0, 2, 3).unwrap();
    let read = 7.0 / 33.0;
    assert!((full - one - read).abs() < 0.01, "{full} {one}");
}
