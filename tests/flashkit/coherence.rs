//! Occupancy of the directory protocol, as people read it.

use crate::common;

use coherence::miss::{self, Case};
use coherence::protocol;
use coherence::{Access, CohParams};
use magic::{Cycles, MagicParams, NodeId, PAddr, Region};
use std::fmt::Write as _;

#[test]
fn miss_cases_occupancy() {
    let mut out = String::new();
    for case in Case::ALL {
        let r = miss::run(case, MagicParams::default(), CohParams::default()).unwrap();
        writeln!(out, "== {}: {} cycles", case.name(), r.latency).unwrap();
        out.push_str(&r.ledger.render());
        out.push('\n');
    }
    common::insta_settings().bind(|| insta::assert_snapshot!("miss_cases", out));
}

/// Four processors share eight lines homed on all four nodes: each reads
/// them all, then writes two (one of them everybody's), reads again and
/// evicts one, so every kind of transaction occurs.
#[test]
fn mixed_workload_on_four_nodes() {
    let mut m = protocol::machine(MagicParams::default(), CohParams::default(), 4).unwrap();
    let line = |i: u32| PAddr::new(Region::Normal, NodeId(i % 4), 0x10_000 + (i as u64) * 128);
    for n in 0..4u32 {
        let mut ops: Vec<Access> = (0..8).map(|i| Access::Load(line((i + n) % 8))).collect();
        ops.push(Access::Store(line(n), 100 + n as u64));
        ops.push(Access::Store(line(7), 200 + n as u64));
        ops.extend((0..8).map(|i| Access::Load(line(i))));
        ops.push(Access::Evict(line(7)));
        ops.push(Access::Store(line((n + 1) % 4), 300 + n as u64));
        m.state_mut(NodeId(n)).unwrap().proc.push(ops);
        m.start_processor(NodeId(n), Cycles(n as u64 * 7)).unwrap();
    }
    let report = m.run();
    assert!(report.is_clean(), "{:?}", report.stuck);
    let mut out = m.ledger().render();
    writeln!(out, "\nprotocol counters").unwrap();
    for n in 0..4u32 {
        let s = m.state(NodeId(n)).unwrap().stats;
        let p = &m.state(NodeId(n)).unwrap().proc;
        assert_eq!(s.protocol_errors, 0);
        let misses = p.results.iter().filter(|r| !r.hit).count();
        writeln!(
            out,
            "node {n}: ops {:>2}  misses {:>2}  naks {}  retries {}  invalidations {}  forwards {}  owner naks {}  hints {}",
            p.results.len(),
            misses,
            s.naks,
            s.retries,
            s.invalidations,
            s.forwards,
            s.owner_naks,
            s.hints
        )
        .unwrap();
    }
    common::insta_settings().bind(|| insta::assert_snapshot!("coherence_mixed_4_nodes", out));
}

#[test]
fn user_level_messaging_occupancy() {
    use protocols::user::experiments::{self, Technique};
    let f = experiments::fetch_op(1, MagicParams::default()).unwrap();
    let mut out = format!(
        "== fetch-op: start-up {} cycles, latency {} cycles\n",
        f.startup, f.latency
    );
    out.push_str(&f.machine.ledger().render());
    common::insta_settings().bind(|| insta::assert_snapshot!("fetch_op", out));
    for t in [Technique::Holdoff, Technique::Invalidate, Technique::Tlb] {
        let (r, m) = experiments::remap(t, MagicParams::default()).unwrap();
        let mut out = format!("{r}\n");
        out.push_str(&m.ledger().render());
        common::insta_settings()
            .bind(|| insta::assert_snapshot!(format!("remap_{}", t.name()), out));
    }
}

/// The sharing workload with each directory format: 16 readers, 6 of them
/// evicting, then a writer. The bit vector's hint leaves the head pointer, so
/// the head's node gets one invalidation it did not need; the dynamic
/// pointer list unlinks every hinting sharer, at the price of walking to it.
#[test]
fn sharing_with_both_directories() {
    use coherence::sharing::{self, Sharing};
    use coherence::DirFormat;
    let s = Sharing {
        readers: 16,
        evicting: 6,
    };
    let mut out = String::new();
    for format in [DirFormat::BitVector, DirFormat::DynamicPointer] {
        let coh = CohParams {
            format,
            ..CohParams::default()
        };
        let r = sharing::run(s, MagicParams::default(), coh).unwrap();
        assert_eq!(r.hints, 6);
        let expected = match format {
            DirFormat::BitVector => 11,
            DirFormat::DynamicPointer => 10,
        };
        assert_eq!(r.invalidations, expected, "{}", format.name());
        writeln!(
            out,
            "== {}: {} hints, {:.1} home cycles per hint; {} invalidations, {:.1} home cycles per invalidation; write latency {} cycles; {} links before the write",
            format.name(),
            r.hints,
            r.per_hint().unwrap(),
            r.invalidations,
            r.per_invalidation().unwrap(),
            r.write_latency,
            r.links
        )
        .unwrap();
        out.push_str("-- hints\n");
        out.push_str(&r.hint_ledger.render());
        out.push_str("-- write\n");
        out.push_str(&r.write_ledger.render());
        out.push('\n');
    }
    common::insta_settings().bind(|| insta::assert_snapshot!("sharing_directories", out));
    // A pointer store of four links for sixteen readers: the home reclaims
    // the line's list (every copy invalidated) and the readers are NAKed
    // and retried; every access still completes.
    let small = CohParams {
        format: DirFormat::DynamicPointer,
        pointer_store: 4,
        ..CohParams::default()
    };
    let r = sharing::run(s, MagicParams::default(), small).unwrap();
    assert!(r.reclaims >= 1, "{r:?}");
    assert!(r.links <= 4, "{r:?}");
}
