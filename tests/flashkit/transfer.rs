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
                    r.per_line,
                    r.network_per_line,
                    r.sender_occupancy_per_line,
                    r.receiver_occupancy_per_line,
                    r.limited_by
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
