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
            assert!(!t.rows.is_empty());
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

#[test]
fn magic_moves_bulk_data_at_the_network_rate() {
    // A line of 128 bytes every 40 cycles of 10 ns: 320 MB/s.
    let b = suite::bulk(&Flash::new(4)).unwrap();
    assert!((b.bandwidth_mb_s - 320.0).abs() < 5.0, "{b:?}");
}

#[test]
fn runs_repeat_exactly() {
    for p in platforms() {
        let a = suite::table(p.as_ref(), "round-trip").unwrap().to_string();
        let b = suite::table(p.as_ref(), "round-trip").unwrap().to_string();
        assert_eq!(a, b, "{}", p.name());
    }
}
