//! The three read-miss latencies of the reference (docs/reference.md, "The machine"), from the protocol's
//! own charged steps plus memory and network timing.

use coherence::miss::{self, Case};
use coherence::CohParams;
use magic::MagicParams;

/// (case, published cycles)
const TARGETS: [(Case, f64); 3] = [
    (Case::LocalClean, 27.0),
    (Case::RemoteClean, 111.0),
    (Case::RemoteDirty, 191.0),
];

#[test]
fn read_miss_latencies_are_within_five_percent_of_flash() {
    for (case, target) in TARGETS {
        let r = miss::run(case, MagicParams::default(), CohParams::default()).unwrap();
        assert_eq!(
            r.value,
            r.expected,
            "{}: the load returned the wrong word",
            case.name()
        );
        let l = r.latency.0 as f64;
        assert!(
            (l - target).abs() <= 0.05 * target,
            "{}: {l} cycles, target {target}",
            case.name()
        );
    }
}

#[test]
fn latency_comes_from_the_mechanisms() {
    // Slower memory lengthens the memory-bound misses by exactly the change;
    // the dirty miss is served by the owner's cache and does not move.
    let slow = MagicParams {
        mem_first_dword: magic::Cycles(24),
        ..MagicParams::default()
    };
    let base = |c| {
        miss::run(c, MagicParams::default(), CohParams::default())
            .unwrap()
            .latency
            .0
    };
    let with = |c| {
        miss::run(c, slow.clone(), CohParams::default())
            .unwrap()
            .latency
            .0
    };
    assert_eq!(with(Case::LocalClean), base(Case::LocalClean) + 10);
    assert_eq!(with(Case::RemoteClean), base(Case::RemoteClean) + 10);
    assert_eq!(with(Case::RemoteDirty), base(Case::RemoteDirty));
    // A longer network adds its latency once per hop: 2, 2 and 3 hops.
    let far = MagicParams {
        net_latency: magic::Cycles(32),
        ..MagicParams::default()
    };
    let with = |c| {
        miss::run(c, far.clone(), CohParams::default())
            .unwrap()
            .latency
            .0
    };
    assert_eq!(with(Case::LocalClean), base(Case::LocalClean));
    assert_eq!(with(Case::RemoteClean), base(Case::RemoteClean) + 20);
    assert_eq!(with(Case::RemoteDirty), base(Case::RemoteDirty) + 30);
}

#[test]
fn the_protocol_refuses_a_machine_with_one_data_buffer() {
    // A requester holding its reply's buffer while acknowledgements come
    // behind a data reply at the head of the queue would deadlock.
    let one = MagicParams {
        data_buffers: 1,
        ..MagicParams::default()
    };
    let e = coherence::protocol::machine(one.clone(), CohParams::default(), 2)
        .err()
        .unwrap();
    assert!(
        matches!(&e, coherence::Error::Build(magic::BuildError::Params(r)) if r.field == "data_buffers"),
        "{e}"
    );
    // The protocol unit refuses it wherever it is installed.
    let e = magic::Magic::with(one, 2, &coherence::Coherence::default())
        .err()
        .unwrap();
    assert!(
        matches!(&e, magic::BuildError::Params(r) if r.to_string() == "data_buffers must be at least 2 for the coherence protocol, got 1"),
        "{e}"
    );
}

#[test]
fn the_warm_up_works_wherever_the_line_is() {
    use coherence::miss::Setup;
    for offset in [0x0, 0x4000, 0x4800, 0x4080, 0x10_0F80] {
        let s = Setup {
            offset,
            ..Setup::default()
        };
        let r = miss::run_with(
            Case::RemoteClean,
            s,
            MagicParams::default(),
            CohParams::default(),
        )
        .unwrap();
        assert_eq!(r.latency.0, 107, "offset {offset:#x}");
    }
}

/// MAGIC's data cache is direct mapped: where a line's directory entry and
/// the requester's miss record fall in one slot (the first four lines of
/// memory, or 0x800000's), a local miss evicts one with the other and
/// waits on MAGIC's memory for it; elsewhere the warm-up leaves both
/// cached. (A remote miss keeps them in two nodes' caches.)
#[test]
fn a_local_miss_waits_where_its_entry_and_record_share_a_cache_slot() {
    use coherence::miss::Setup;
    for (offset, cycles, waits) in [
        (0x0, 93, true),
        (0x100, 93, true),
        (0x80_0000, 93, true),
        (0x1000, 27, false),
        (0x4080, 27, false),
        (0x8000, 27, false),
    ] {
        let s = Setup {
            offset,
            ..Setup::default()
        };
        let r = miss::run_with(
            Case::LocalClean,
            s,
            MagicParams::default(),
            CohParams::default(),
        )
        .unwrap();
        assert_eq!(r.value, r.expected, "offset {offset:#x}");
        assert_eq!(r.latency.0, cycles, "offset {offset:#x}");
        let h = r.ledger.handler(Some(0), "coherence.pi_miss").unwrap();
        assert_eq!(h.stats.wait > 0, waits, "offset {offset:#x}: {h:?}");
    }
}

#[test]
fn bad_setups_are_typed_errors_naming_the_field() {
    use coherence::miss::Setup;
    use coherence::Error;
    let field = |case, s: Setup| match miss::run_with(
        case,
        s,
        MagicParams::default(),
        CohParams::default(),
    ) {
        Err(Error::OutOfRange(e)) => e.field,
        other => panic!("{case:?} {s:?}: {other:?}"),
    };
    let d = Setup::default();
    assert_eq!(field(Case::LocalClean, Setup { nodes: 2, ..d }), "nodes");
    assert_eq!(field(Case::RemoteDirty, Setup { owner: 3, ..d }), "owner");
    assert_eq!(field(Case::RemoteDirty, Setup { owner: 1, ..d }), "owner");
    assert_eq!(
        field(
            Case::RemoteClean,
            Setup {
                offset: u64::MAX,
                ..d
            }
        ),
        "offset"
    );
    let e = miss::run_with(
        Case::LocalClean,
        Setup { nodes: 2, ..d },
        MagicParams::default(),
        CohParams::default(),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "nodes must be at least 3, got 2");
    // A placement outside the machine names its argument too.
    let mut m =
        coherence::protocol::machine(MagicParams::default(), CohParams::default(), 2).unwrap();
    let line = magic::PAddr::new(magic::Region::Normal, magic::NodeId(1), 0x1000);
    let e = coherence::protocol::place(
        &mut m,
        line,
        &[(magic::NodeId(5), magic::LineState::Clean)],
        [0; 128],
        [0; 128],
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::OutOfRange(o) if o.field == "copies"),
        "{e}"
    );
}

/// A miss's cases and the shared line are homed by their address: under
/// interleaved homing each would read a home that never held the line
/// (the word loaded 0), so both experiments refuse it by its field.
#[test]
fn interleaved_homing_is_refused_where_lines_are_homed_by_address() {
    use coherence::protocol::Placement;
    use coherence::sharing::{self, Sharing};
    use coherence::Error;
    let coh = CohParams {
        placement: Placement::Interleaved,
        ..CohParams::default()
    };
    for case in [Case::LocalClean, Case::RemoteClean, Case::RemoteDirty] {
        match miss::run(case, MagicParams::default(), coh) {
            Err(Error::OutOfRange(e)) => {
                assert_eq!(
                    (e.field, e.got.as_str()),
                    ("coherence.placement", "Interleaved")
                )
            }
            other => panic!("{case:?}: {other:?}"),
        }
        // By node bits, the word loaded is the word expected.
        let r = miss::run(case, MagicParams::default(), CohParams::default()).unwrap();
        assert_eq!(r.value, r.expected, "{case:?}");
    }
    let s = Sharing {
        readers: 4,
        evicting: 1,
    };
    match sharing::run(s, MagicParams::default(), coh) {
        Err(Error::OutOfRange(e)) => assert_eq!(e.field, "coherence.placement"),
        other => panic!("{other:?}"),
    }
    assert!(sharing::run(s, MagicParams::default(), CohParams::default()).is_ok());
}
