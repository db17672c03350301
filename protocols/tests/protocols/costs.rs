//! The cost study's formulas (docs/reference.md) against what the protocol code
//! counted while it ran over the CM-5 model.

use protocols::am::costs::{run, Delivery, Network, Side};

fn side(s: u64, d: u64) -> Side {
    Side {
        source: s,
        destination: d,
    }
}

#[test]
fn a_single_datagram_costs_20_and_27_instructions() {
    let c = run(Delivery::Single, 4, 4, Network::Cm5).unwrap();
    assert_eq!(c.features.base, side(20, 27));
    assert_eq!(c.total.total, 47);
    assert_eq!(c.features.in_order, side(0, 0));
    assert_eq!(c.features.fault_tolerance, side(0, 0));
}

const WORDS: [u64; 4] = [4, 16, 64, 1024];
const PACKET_WORDS: [u64; 4] = [4, 8, 16, 128];

#[test]
fn the_finite_sequence_protocol_counts_match_the_formulas() {
    for w in WORDS {
        for n in PACKET_WORDS {
            let c = run(Delivery::Finite, w, n, Network::Cm5).unwrap();
            let p = w.div_ceil(n);
            assert_eq!(c.packets, p);
            let f = c.features;
            let what = format!("W={w} n={n}");
            assert_eq!(f.base, side(3 + (18 + n) * p, 18 + (14 + n) * p), "{what}");
            assert_eq!(f.buffer_management, side(47, 101), "{what}");
            assert_eq!(f.in_order, side(2 * p, 1 + 3 * p), "{what}");
            assert_eq!(f.fault_tolerance, side(27, 20), "{what}");
            assert_eq!(c.acks, 1);
        }
    }
}

#[test]
fn the_indefinite_sequence_protocol_counts_match_the_formulas() {
    for w in WORDS {
        for n in PACKET_WORDS {
            let c = run(Delivery::Indefinite, w, n, Network::Cm5).unwrap();
            let p = w.div_ceil(n);
            let f = c.features;
            let what = format!("W={w} n={n}");
            assert_eq!(
                f.base,
                side((18 + n / 2) * p, 13 + (12 + n / 2) * p),
                "{what}"
            );
            assert_eq!(f.buffer_management, side(0, 0), "{what}");
            assert_eq!(f.fault_tolerance, side((27 + n / 2) * p, 20 * p), "{what}");
            assert_eq!(c.acks, p, "one acknowledgement per packet");
            // Half the packets arrived out of order (of an odd number, one
            // fewer than half); each was buffered and released.
            assert_eq!(c.out_of_order, p / 2, "{what}");
            assert_eq!(f.in_order.source, 5 * p, "{what}");
            assert_eq!(
                f.in_order.destination,
                4 * p + 50 * c.out_of_order,
                "{what}"
            );
            if p % 2 == 0 {
                assert_eq!(f.in_order.destination, 29 * p, "{what}");
            }
        }
    }
}

#[test]
fn an_ordered_reliable_network_leaves_only_the_base() {
    for proto in [Delivery::Finite, Delivery::Indefinite] {
        for w in WORDS {
            for n in PACKET_WORDS {
                let cm5 = run(proto, w, n, Network::Cm5).unwrap();
                let ord = run(proto, w, n, Network::Ordered).unwrap();
                let f = ord.features;
                assert_eq!(f.base, cm5.features.base);
                assert_eq!(f.in_order, side(0, 0));
                assert_eq!(f.fault_tolerance, side(0, 0));
                // Buffer management shrinks to recording a buffer pointer.
                assert!(f.buffer_management.source == 0 && f.buffer_management.destination <= 2);
                assert_eq!(ord.acks, 0);
            }
        }
    }
}

#[test]
fn bad_sizes_are_refused() {
    let field = |d, w, p| run(d, w, p, Network::Cm5).unwrap_err().field();
    assert_eq!(field(Delivery::Single, 8, 4), Some("words"));
    assert_eq!(field(Delivery::Finite, 0, 4), Some("words"));
    assert_eq!(field(Delivery::Indefinite, 16, 3), Some("packet_words"));
    assert_eq!(field(Delivery::Finite, 16, 0), Some("packet_words"));
    assert_eq!(field(Delivery::Finite, u64::MAX, 4), Some("words"));
    let e = run(Delivery::Finite, 0, 4, Network::Cm5).unwrap_err();
    assert_eq!(e.to_string(), "words must be from 1 to 1048576, got 0");
}
