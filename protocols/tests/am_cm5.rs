//! CMAM and CMAML on the CM-5 model: the per-operation costs PEERS.md
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
    assert!(e.contains("stuck"), "{e}");
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

#[test]
fn bulk_transfer_is_bounded_by_the_per_packet_overheads() {
    use protocols::am::Align;
    let p = Cm5::new(8, Layer::Cmam);
    let b = suite::bulk(&p).unwrap();
    // 16 bytes a packet, at the slower of sending and receiving one.
    let per_packet = (1.49f64).max(1.60);
    assert!(b.bandwidth_mb_s < 16.0 / per_packet, "{b:?}");
    assert!(b.bandwidth_mb_s > 5.0, "{b:?}");
    // Blocking pays a round trip per block; byte alignment pays per byte.
    let nb = suite::array_transfer(&p, 1024, Align::Double, false).unwrap();
    let bl = suite::array_transfer(&p, 1024, Align::Double, true).unwrap();
    let by = suite::array_transfer(&p, 1024, Align::Byte, false).unwrap();
    assert!(bl > nb && by > nb, "{nb} {bl} {by}");
}

#[test]
fn traverse_shows_the_fat_tree_levels() {
    let p = Cm5::new(64, Layer::Cmam);
    let t: std::collections::BTreeMap<u32, f64> =
        suite::traverse(&p).unwrap().into_iter().collect();
    // Partners within a group of four, within sixteen, and beyond.
    assert!(t[&4] > t[&1] + 1.0, "{t:?}");
    assert!(t[&16] > t[&4] + 1.0, "{t:?}");
    assert!(suite::swap(&p, 1024).unwrap() > 0.0);
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
    let one = r.between(0, 0, 1);
    assert!((one - r.between(0, 1, 2)).abs() < 1e-9);
    // A full poll reads two status registers, a one-network poll one.
    let full = r.between(0, 2, 3);
    let read = 7.0 / 33.0;
    assert!((full - one - read).abs() < 0.01, "{full} {one}");
}
