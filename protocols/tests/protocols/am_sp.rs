//! SP AM on the SP model: the measured operation costs are the calibration;
//! the reliability protocol delivers every message exactly once and in
//! order through a switch that drops and reorders.

use magic::{NodeId, Time};
use protocols::am::sp::{Chan, Sp};
use protocols::am::{suite, Handler, Platform, Step};

fn within(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 0.05 * want,
        "{what}: {got:.3} us, published {want}"
    );
}

/// Node 0 sends `n` requests of `words` words to nodes 1 and 2 in turn (or
/// replies); its time per send.
fn per_send(p: &Sp, words: u8, reply: bool) -> f64 {
    let n = 100;
    let mut progs = vec![Vec::new(); p.nodes as usize];
    progs[0].push(Step::Mark);
    for i in 0..n {
        let to = NodeId(1 + i % 2);
        progs[0].push(if reply {
            Step::Reply { to, words }
        } else {
            Step::Request {
                to,
                words,
                handler: Handler::Nop,
            }
        });
    }
    progs[0].push(Step::Mark);
    progs[1].push(Step::Wait { received: 50 });
    progs[2].push(Step::Wait { received: 50 });
    p.run(&progs).unwrap().between(0, 0, 1).unwrap() / n as f64
}

#[test]
fn sp_am_operations_cost_what_was_measured() {
    let p = Sp::new(8);
    for (w, req, rep) in [(1, 7.7, 4.0), (2, 7.9, 4.1), (3, 8.0, 4.3), (4, 8.2, 4.4)] {
        within(per_send(&p, w, false), req, &format!("am_request_{w}"));
        within(per_send(&p, w, true), rep, &format!("am_reply_{w}"));
    }
    let empty = suite::poll_empty(&p).unwrap();
    within(empty, 1.3, "empty poll");
    within(
        suite::poll_one(&p).unwrap() - empty,
        1.8,
        "per message polled",
    );
}

#[test]
fn the_raw_round_trip_is_the_adapters_and_the_switch() {
    let mut p = Sp::new(4);
    p.raw = true;
    let rt = suite::round_trip(&p, 1).unwrap();
    assert!((46.6 * 0.95..=47.0 * 1.05).contains(&rt), "{rt}");
}

#[test]
fn an_sp_am_round_trip_is_the_raw_one_plus_only_sp_ams_own_work() {
    let mut raw = Sp::new(4);
    raw.raw = true;
    let raw_rt = suite::round_trip(&raw, 1).unwrap();
    let p = Sp::new(4);
    let rt = suite::round_trip(&p, 1).unwrap();
    // Flushes and flow-control bookkeeping on two sends and two receives,
    // and each of the two waiting nodes finds its arrival at its next poll
    // (polls 1.3 us apart; the raw loop's cost next to nothing).
    let c = p.costs;
    let extra = (2 * (c.flow_send + c.flush_line + c.flow_recv)) as f64 / 66.0;
    let d = rt - raw_rt;
    assert!(
        d > extra && d < extra + 2.0 * 1.3,
        "{rt:.2} against raw {raw_rt:.2} + {extra:.2}"
    );
    // Far below the raw latency plus the per-call costs (8.2 + 4.4 us).
    assert!(rt < raw_rt + 0.5 * (8.2 + 4.4), "{rt:.2}");
}

#[test]
fn asynchronous_stores_overlap_so_their_half_power_point_is_far_smaller() {
    let b = suite::bandwidth(&Sp::new(4)).unwrap();
    let (asy, syn) = (b.pipelined_n_half_bytes, b.store.n_half_bytes);
    assert!(
        asy > 0.0 && asy < syn / 4.0,
        "async n1/2 {asy:.0}, sync {syn:.0}"
    );
    // Above one chunk the N-2 flow control makes them no better than
    // blocking ones (within 10%).
    let at = |x: u32| b.points.iter().find(|p| p.0 == x).unwrap();
    let (_, st, get, pipe) = *at(16384);
    let blocking = 16384.0 / st;
    assert!(
        pipe.unwrap() < 1.1 * blocking,
        "{pipe:?} against {blocking:.2}"
    );
    // A get pays its request: slower than a store at small sizes.
    let (_, st, get64, _) = *at(64);
    assert!(get64.unwrap() > st, "{get64:?} {st}");
    let _ = get;
}

/// Every sender's messages arrive once each, in the order sent.
fn in_order_exactly_once(delivered: &[(u32, Chan, u32)], from: u32, chan: Chan, n: u32) {
    let seqs: Vec<u32> = delivered
        .iter()
        .filter(|d| d.0 == from && d.1 == chan)
        .map(|d| d.2)
        .collect();
    assert_eq!(seqs, (0..n).collect::<Vec<_>>(), "from {from} on {chan:?}");
}

#[test]
fn loss_and_reordering_cost_retransmissions_not_messages() {
    for (drop_ppm, delay_ppm, seed) in [(50_000, 0, 1), (0, 50_000, 2), (30_000, 30_000, 3)] {
        let mut p = Sp::new(4);
        p.hw.drop_ppm = drop_ppm;
        p.hw.delay_ppm = delay_ppm;
        p.hw.seed = seed;
        // Nodes 1 and 2 stream requests to node 0, whose handler replies;
        // node 3 runs round trips with node 0 meanwhile.
        let n = 300u32;
        let mut progs = vec![Vec::new(); 4];
        for s in [1, 2] {
            for _ in 0..n {
                progs[s].push(Step::Request {
                    to: NodeId(0),
                    words: 4,
                    handler: Handler::Echo,
                });
                progs[s].push(Step::Poll);
            }
            progs[s].push(Step::Wait { received: n as u64 });
        }
        for i in 0..50u64 {
            progs[3].push(Step::Request {
                to: NodeId(0),
                words: 1,
                handler: Handler::Echo,
            });
            progs[3].push(Step::Wait { received: i + 1 });
        }
        progs[0].push(Step::Wait {
            received: 2 * n as u64 + 50,
        });
        let r = p.run_detailed(&progs).unwrap();
        for s in [1, 2] {
            in_order_exactly_once(&r.delivered[0], s, Chan::Req, n);
            in_order_exactly_once(&r.delivered[s as usize], 0, Chan::Rep, n);
        }
        in_order_exactly_once(&r.delivered[0], 3, Chan::Req, 50);
        assert!(r.reliability.retransmitted > 0, "{:?}", r.reliability);
        if drop_ppm > 0 {
            assert!(r.switch.dropped > 0);
        }
        if delay_ppm > 0 {
            assert!(r.reliability.out_of_sequence > 0, "{:?}", r.reliability);
        }
    }
}

#[test]
fn a_clean_switch_needs_no_retransmission() {
    let p = Sp::new(4);
    let mut progs = vec![Vec::new(); 4];
    progs[1] = (0..200)
        .map(|_| Step::Request {
            to: NodeId(0),
            words: 4,
            handler: Handler::Nop,
        })
        .collect();
    progs[0].push(Step::Wait { received: 200 });
    let r = p.run_detailed(&progs).unwrap();
    assert_eq!(r.reliability.retransmitted, 0);
    assert!(r.reliability.acks > 0, "explicit acks flow back");
    let _ = Time::ZERO;
}

#[test]
fn stores_move_in_chunks_with_one_ack_each_and_two_outstanding() {
    use protocols::am::Align;
    let p = Sp::new(4);
    let mut progs = vec![Vec::new(); 4];
    progs[0] = vec![
        Step::Store {
            to: NodeId(1),
            bytes: 65536,
            align: Align::Double,
        },
        Step::Wait { received: 1 },
    ];
    progs[1] = vec![Step::Wait { received: 1 }];
    let r = p.run_detailed(&progs).unwrap();
    // 65536 bytes are 9 chunks of at most 8064 bytes, 293 packets.
    assert_eq!(r.run.ops[&(0, "store")].calls, 9);
    assert_eq!(r.run.ops[&(1, "bulk-in")].calls, 293);
    assert_eq!(r.run.ops[&(1, "ack")].calls, 9);
    assert_eq!(r.reliability.retransmitted, 0);
    // The switch bounds the rate: 224 data bytes per 256-byte packet at 40 MB/s.
    let b = suite::bulk(&p).unwrap();
    assert!(b.bandwidth_mb_s <= 40.0 * 224.0 / 256.0 + 0.5, "{b:?}");
    assert!(b.bandwidth_mb_s > 25.0, "{b:?}");
}

#[test]
fn a_lost_bulk_packet_is_sent_again_with_its_chunk() {
    use protocols::am::Align;
    let mut p = Sp::new(4);
    p.hw.drop_ppm = 20_000;
    p.hw.seed = 5;
    let mut progs = vec![Vec::new(); 4];
    progs[0] = vec![
        Step::Store {
            to: NodeId(1),
            bytes: 100_000,
            align: Align::Double,
        },
        Step::Wait { received: 1 },
    ];
    progs[1] = vec![Step::Wait { received: 1 }];
    let r = p.run_detailed(&progs).unwrap();
    assert!(r.switch.dropped > 0);
    assert!(r.reliability.retransmitted > 0);
    assert_eq!(r.run.received[1], 1, "the block arrived, once");
}

/// Under heavy loss every store completes once at both ends: a lost
/// chunk's ack is recovered by the keep-alive the sender's own polls send
/// (the receiver's answer names the chunk it expects, so every earlier one
/// is in), also while the sender's program waits and nothing else moves.
#[test]
fn stores_complete_under_heavy_loss_whatever_is_lost() {
    use protocols::am::Align;
    let mut keepalives = 0;
    for seed in 1..=12 {
        for drop_ppm in [100_000, 300_000] {
            for bytes in [256, 4096, 65536] {
                let mut p = Sp::new(3);
                p.hw.drop_ppm = drop_ppm;
                p.hw.seed = seed;
                let mut progs = vec![Vec::new(); 3];
                for s in [1, 2] {
                    progs[s] = vec![
                        Step::Store {
                            to: NodeId(0),
                            bytes,
                            align: Align::Double,
                        },
                        Step::Wait { received: 1 },
                    ];
                }
                progs[0] = vec![Step::Wait { received: 2 }];
                let r = p
                    .run_detailed(&progs)
                    .unwrap_or_else(|e| panic!("seed {seed}, {drop_ppm} ppm, {bytes} bytes: {e}"));
                assert_eq!(
                    r.run.received,
                    [2, 1, 1],
                    "seed {seed}, {drop_ppm}, {bytes}"
                );
                keepalives += r.reliability.keepalives;
            }
        }
    }
    assert!(keepalives > 0, "some recovery needed the keep-alive");
    // The suite's benchmark that stalled on a lost chunk ack.
    let mut p = Sp::new(3);
    p.hw.drop_ppm = 100_000;
    assert!(suite::two_to_one_segments(&p, 65536, true).is_ok());
}

#[test]
fn a_chunk_hands_the_adapter_its_lengths_in_groups_of_one_to_36() {
    use protocols::am::sp::SpCosts;
    for bad in [0, 37, u64::MAX] {
        let costs = SpCosts {
            lengths_per_access: bad,
            ..SpCosts::default()
        };
        let e = Sp::with(4, costs, Default::default()).unwrap_err();
        assert_eq!(e.field(), Some("lengths_per_access"), "{e}");
        assert!(e.to_string().contains("from 1 to 36"), "{e}");
    }
    // One access a chunk or one a packet: the same packets and acks, the
    // lengths' accesses apart; the adapter starts sooner.
    let run = |group: u64| {
        let mut p = Sp::new(4);
        p.costs.lengths_per_access = group;
        let mut progs = vec![Vec::new(); 4];
        progs[0] = vec![
            Step::Mark,
            Step::Store {
                to: NodeId(1),
                bytes: 8064,
                align: protocols::am::Align::Double,
            },
            Step::Wait { received: 1 },
            Step::Mark,
        ];
        progs[1] = vec![Step::Wait { received: 1 }];
        let r = p.run_detailed(&progs).unwrap();
        let store = r.run.ops[&(0, "store")];
        (
            r.run.between(0, 0, 1).unwrap(),
            store.calls,
            store.ni_writes,
        )
    };
    let (whole, calls, writes) = run(36);
    assert_eq!((calls, writes), (1, 1));
    let (each, calls, writes) = run(1);
    assert_eq!((calls, writes), (1, 36));
    // The adapter starts after one packet's issue instead of the chunk's,
    // and the link then stays busy: the store ends 35 packets' issue
    // (161 us) sooner.
    let sooner = 35.0 * Sp::new(4).costs.bulk_packet as f64 / 66.0;
    assert!(
        (whole - each - sooner).abs() < 1.5,
        "{each} against {whole}"
    );
}

#[test]
fn two_senders_into_one_node_share_its_link_and_a_shared_segment_ends_with_both() {
    use protocols::am::sp::PACKET_DATA;
    let p = Sp::new(3);
    let bytes = 65536u32;
    let one = suite::two_to_one_segments(&p, bytes, true).unwrap();
    let two = suite::two_to_one_segments(&p, bytes, false).unwrap();
    // SP AM keeps no segment state: into one segment or two, the same
    // packets, and the shared segment is in once both parts are.
    assert_eq!(one, two);
    // Both blocks pass the switch's one link out to the receiver, every
    // packet with its header: the time is that link's, and a little more.
    let packets = bytes.div_ceil(PACKET_DATA) as u64;
    let on_link = 2 * (bytes as u64 + packets * magic::ni::sp::HEADER_BYTES);
    let link_us = on_link as f64 / p.hw.switch_bytes_per_us as f64;
    assert!(
        one >= link_us && one < 1.05 * link_us,
        "{one:.1} us against the link's {link_us:.1}"
    );
}
