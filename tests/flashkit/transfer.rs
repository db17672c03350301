//! Occupancy of the transfer handlers over the paper's grid of cache states
//! and handler versions (32 lines), as text tables people review.

use crate::common;

use protocols::transfer::{run, Config, ReceiverState, SenderState, Version};
use std::fmt::Write as _;

#[test]
fn transfer_occupancy_grid() {
    let senders = [
        ("uncached", SenderState::Uncached),
        ("clean", SenderState::Clean),
        ("dirty", SenderState::Dirty),
    ];
    let receivers = [
        ("uncached", ReceiverState::Uncached),
        ("clean", ReceiverState::Clean),
        ("dirty", ReceiverState::Dirty),
    ];
    for (sname, sender) in senders {
        for version in [Version::Base, Version::Optimized, Version::Chunked(4)] {
            let mut out = String::new();
            for (rname, receiver) in receivers {
                let c = Config {
                    sender,
                    receiver,
                    handler: version,
                    ..Config::default()
                };
                let r = run(&c).unwrap();
                assert!(r.data_ok && r.incoherent.is_none(), "{c:?}");
                let s = r.startup;
                writeln!(
                    out,
                    "== sender {sname}, receiver {rname}, handler {}: {} cycles ({:.2} us)",
                    version.short(),
                    r.total.0,
                    r.total_us()
                )
                .unwrap();
                writeln!(
                    out,
                    "start-up {} = {} + {} + {} + {} + {}; per line {:.1} (network {:.1}, sender {:.1}, receiver {:.1}): {}",
                    s.total,
                    s.initiation,
                    s.setup_verification,
                    s.initial_line,
                    s.network_queueing,
                    s.receiver_cleanup,
                    r.per_line.expect("32 lines: a rate"),
                    r.network_per_line,
                    r.sender_occupancy_per_line,
                    r.receiver_occupancy_per_line,
                    r.limited_by.expect("32 lines: a bound")
                )
                .unwrap();
                out.push_str(&r.ledger.render());
                out.push('\n');
            }
            let name = format!("transfer_{sname}_{}", version.short().to_lowercase());
            common::insta_settings().bind(|| insta::assert_snapshot!(name, out));
        }
    }
}

/// Global coherence with the receive buffer's lines at a remote sharer or
/// owner (node 2), homed at the receiver or at a third node, whole lines and
/// parts of lines, the send buffer in memory or dirty at node 2: the right
/// bytes arrive, the caches agree, nothing is dropped.
#[test]
fn components_waiting_for_a_buffer_hold_none() {
    // Many sends split the lines into parts, each merged with a second
    // buffer, while the lines wait for node 2's copies: components that
    // kept their buffers while they waited held all sixteen (a livelock).
    use protocols::transfer::{run_with_machine, Mode};
    for (bytes, sends, receiver, handler) in [
        (2048, 48, ReceiverState::CleanRemote, Version::Chunked(4)),
        (4096, 33, ReceiverState::CleanRemote, Version::Chunked(4)),
        (1536, 60, ReceiverState::CleanRemote, Version::Chunked(4)),
        (4096, 33, ReceiverState::DirtyRemote, Version::Optimized),
    ] {
        let c = Config {
            bytes,
            sends,
            receiver,
            handler,
            mode: Mode::Global,
            ..Config::default()
        };
        let r = run_with_machine(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let o = &r.outcome;
        assert!(o.data_ok && o.incoherent.is_none(), "{c:?}: {:?}", o.stale);
        let retried: u64 = (0..r.machine.nodes())
            .map(|n| r.machine.state(magic::NodeId(n)).unwrap().stats.retries)
            .sum();
        assert!(retried > 0, "{c:?}: no component waited");
    }
}

/// The default transfer with its receive buffer's first page moved
/// `after` cycles after the send is issued.
fn change(after: u64) -> Config {
    use protocols::transfer::{PageChange, Side};
    Config {
        change: Some(PageChange {
            side: Side::Receive,
            page: 0,
            after: magic::Cycles(after),
        }),
        ..Config::default()
    }
}

#[test]
fn a_page_change_past_the_budget_is_refused() {
    assert!(change(200).validate().is_ok());
    let e = change(u64::MAX).validate().unwrap_err();
    assert_eq!(e.field(), "after", "{e}");
    let budget = Config::default().params.budget.0;
    assert!(change(budget).validate().is_ok());
    assert_eq!(change(budget + 1).validate().unwrap_err().field(), "after");
}

#[test]
fn a_page_change_after_the_transfer_is_over_is_refused() {
    // The default transfer is over some 2,100 cycles after its send is
    // issued: a change 1,600 cycles after it comes later (the OS's notice
    // waits its turn), one 200 after it lands mid-transfer and costs it.
    use protocols::transfer::Failed;
    let plain = run(&Config::default()).unwrap().total;
    let during = run(&change(200)).unwrap();
    assert!(during.total > plain, "{:?} vs {plain:?}", during.total);
    for after in [1600, 5000] {
        match run(&change(after)) {
            Err(Failed::Config(e)) => {
                assert_eq!(e.field(), "change", "{e}");
                assert!(e.to_string().contains("transfer was over"), "{e}");
            }
            other => panic!("a change {after} cycles in: {other:?}"),
        }
    }
}

#[test]
fn an_incoherent_line_is_said_in_words() {
    // Without coherence a dirty send line goes out stale, and the
    // receiver's clean copy, listed by the directory, keeps the old bytes:
    // the states agree, the bytes do not, and the report says which.
    use protocols::transfer::Mode;
    let c = Config {
        mode: Mode::None,
        sender: SenderState::Dirty,
        receiver: ReceiverState::Clean,
        ..Config::default()
    };
    let o = run(&c).unwrap();
    let why = o.incoherent.unwrap();
    assert!(
        why.ends_with("node 1's clean copy, which the directory lists, differs from memory"),
        "{why}"
    );
    assert!(!why.contains('(') && !why.contains("NodeId"), "{why}");
}

#[test]
fn lines_served_after_a_remote_copy_land_when_written() {
    // The receiver serves a line cached at node 2 once node 2 has answered,
    // and its bytes land when the memory write is done: the landing rate
    // is no faster than the link that carried every line (it was the pace
    // of the notices that counted them in, 3.8 cycles a line), and the
    // receive is not told before its last line is in memory.
    use protocols::transfer::Mode;
    for receiver in [ReceiverState::CleanRemote, ReceiverState::DirtyRemote] {
        for bytes in [4096, 65536] {
            let c = Config {
                bytes,
                receiver,
                mode: Mode::Global,
                ..Config::default()
            };
            let o = run(&c).unwrap();
            let rate = o.per_line.unwrap();
            assert!(
                rate >= o.network_per_line,
                "{c:?}: {rate} a line, the link {}",
                o.network_per_line
            );
            let landed = o.stages.landing.unwrap();
            assert!(
                landed as f64 >= (o.lines - 1) as f64 * o.network_per_line,
                "{c:?}: {landed}"
            );
        }
    }
}

/// Lines whose home is a third node land when the home has written them,
/// which the home's notice carries: the landing rate is no faster than the
/// link that carried each line to the home (it was the pace of the notices
/// queued at the receiver, 39.4 cycles a line against the link's 40).
#[test]
fn lines_homed_on_a_third_node_land_when_the_home_writes_them() {
    use protocols::transfer::{Mode, Placement};
    for mode in [Mode::None, Mode::Global] {
        for handler in [Version::Base, Version::Chunked(4)] {
            for bytes in [4096, 65536] {
                let c = Config {
                    bytes,
                    mode,
                    handler,
                    placement: Placement::Third,
                    ..Config::default()
                };
                let o = run(&c).unwrap();
                let link = c.params.wire_cycles(128).0 as f64;
                let rate = o.per_line.unwrap();
                assert!(rate >= link, "{c:?}: {rate} a line, the link {link}");
            }
        }
    }
}

#[test]
fn global_coherence_reaches_remote_homes_sharers_and_owners() {
    use protocols::transfer::{run_with_machine, Mode, Placement};
    for placement in [Placement::Home, Placement::Third] {
        for receiver in [ReceiverState::CleanRemote, ReceiverState::DirtyRemote] {
            for sender in [SenderState::Uncached, SenderState::DirtyRemote] {
                for offset in [0, 72] {
                    let c = Config {
                        mode: Mode::Global,
                        sender,
                        receiver,
                        placement,
                        src_offset: offset,
                        dst_offset: offset,
                        ..Config::default()
                    };
                    let r = run_with_machine(&c).unwrap();
                    let o = &r.outcome;
                    assert!(o.data_ok && o.incoherent.is_none(), "{c:?}: {:?}", o.stale);
                    for n in 0..r.machine.nodes() {
                        let dropped = r.machine.state(magic::NodeId(n)).unwrap().stats.dropped;
                        assert_eq!(dropped, 0, "{c:?}: node {n} dropped {dropped}");
                    }
                    let a = o.coherence;
                    let acted = match (placement, receiver) {
                        (Placement::Home, ReceiverState::CleanRemote) => a.invalidations,
                        (Placement::Home, _) => a.fetches,
                        // Node 2 is the home: its own processor's copy.
                        (_, ReceiverState::CleanRemote) => a.invalidations,
                        (_, _) => a.interventions,
                    };
                    assert!(acted >= 32, "{c:?}: {a:?}");
                }
            }
        }
    }
}
