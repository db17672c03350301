//! `flashkit check`: the exhaustive search over the real handlers. Small
//! bounds are exhausted without a violation, every planted bug is found
//! with a trace, the held deliveries keep each channel's order, and bad
//! bounds are one line and exit status 2.

use crate::cli::flashkit;

/// Each check with bounds small enough for a debug build, and the states
/// they reach at least (measured: 1845 with node symmetry, 3633 without;
/// 4688; 1083).
const SMALL: [(&str, &[&str], u64); 3] = [
    ("coherence", &["--nodes", "3", "--ops", "1"], 1800),
    ("holdoff", &["--lines", "8", "--changes", "1"], 4500),
    ("transfer", &["--lines", "4", "--receives", "2"], 1000),
];

fn check(kind: &str, bounds: &[&str], more: &[&str]) -> (i32, serde_json::Value, String) {
    let mut args = vec!["check", kind, "--format", "json"];
    args.extend(bounds);
    args.extend(more);
    let (code, out, err) = flashkit(&args);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v, err)
}

#[test]
fn small_bounds_are_exhausted_without_a_violation() {
    for (kind, bounds, least) in SMALL {
        let (code, v, err) = check(kind, bounds, &[]);
        assert_eq!(code, 0, "check {kind}: {err}");
        assert_eq!(v["config"]["check"], kind);
        assert_eq!(v["complete"], true, "check {kind}: {v}");
        assert_eq!(v["violations"], 0, "check {kind}: {v}");
        assert!(v["trace"].as_array().unwrap().is_empty());
        let states = v["states"].as_u64().unwrap();
        assert!(states >= least, "check {kind}: {states} states");
        assert!(v["transitions"].as_u64().unwrap() >= states - 1);
        // Each search's own figures add up to the totals.
        let runs = v["runs"].as_array().unwrap();
        let sum: u64 = runs.iter().map(|r| r["states"].as_u64().unwrap()).sum();
        assert_eq!(sum, states);
    }
    // Hold-off checks its three techniques in turn.
    let (_, v, _) = check("holdoff", SMALL[1].1, &[]);
    let techniques: Vec<_> = v["config"]["searches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["model"]["holdoff"]["technique"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(techniques, ["holdoff", "invalidate", "tlb"]);
}

#[test]
fn every_planted_bug_is_found_with_a_shortest_trace() {
    for (kind, bounds, _) in SMALL {
        let (code, out, err) = flashkit(&["check", kind, "--inject", "list"]);
        assert_eq!(code, 0, "{err}");
        let bugs: Vec<&str> = out.lines().collect();
        assert!(bugs.len() >= 2, "check {kind}: {bugs:?}");
        for bug in bugs {
            let (code, v, err) = check(kind, bounds, &["--inject", bug]);
            assert_eq!(code, 1, "check {kind} --inject {bug}: {v}");
            assert!(v["violations"].as_u64().unwrap() >= 1, "{kind} {bug}: {v}");
            let what = v["violation"].as_str().unwrap();
            assert!(err.contains(what), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            let trace = v["trace"].as_array().unwrap();
            assert!(!trace.is_empty(), "{kind} {bug}: no trace");
            for (i, step) in trace.iter().enumerate() {
                let step = step.as_str().unwrap();
                assert!(step.starts_with(&format!("{}. ", i + 1)), "{step}");
            }
        }
    }
}

#[test]
fn a_violation_is_printed_with_its_trace() {
    let (code, out, _) = flashkit(&[
        "check",
        "coherence",
        "--nodes",
        "2",
        "--inject",
        "skip-invalidation",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("violations   1"), "{out}");
    assert!(out.contains("single writer broken"), "{out}");
    assert!(out.contains("trace (a shortest):"), "{out}");
    assert!(out.contains("coherence CohMsg::Fill"), "{out}");
}

#[test]
fn a_bounded_search_says_it_is_not_complete() {
    let (code, v, _) = check("coherence", &["--nodes", "2", "--max-states", "100"], &[]);
    assert_eq!(code, 0);
    assert_eq!(v["complete"], false);
    assert_eq!(v["states"], 100);
}

#[test]
fn check_bad_input_gets_one_line_and_status_2() {
    for (args, says) in [
        (
            &["check", "coherence", "--nodes", "9"][..],
            "--nodes must be from 2 to 4, got 9",
        ),
        (
            &["check", "coherence", "--ops", "99"],
            "--ops must be from 0 to 8",
        ),
        (
            &["check", "transfer", "--buffers", "2"],
            "--buffers must be from 4 to 16",
        ),
        (
            &["check", "transfer", "--chunk", "9"],
            "--chunk must be from 1 to 4",
        ),
        (
            &["check", "holdoff", "--changes", "3"],
            "--changes must be from 1 to 2",
        ),
        (
            &["check", "transfer", "--nodes", "3"],
            "--nodes does not apply to check transfer",
        ),
        (
            &["check", "coherence", "--technique", "tlb"],
            "--technique does not apply",
        ),
        (
            &["check", "holdoff", "--inject", "early-fill"],
            "--inject early-fill is not a bug of check holdoff",
        ),
        (
            &["check", "coherence", "--pointer-store", "0"],
            "--pointer-store must be from 1 to 1048576, got 0",
        ),
        (
            &["check", "coherence", "--pointer-store", "5"],
            "--pointer-store applies to --directory dynamic-pointer only, not bitvector",
        ),
        (
            &["check", "coherence", "--directory", "pointer-list"],
            "unknown directory format 'pointer-list' (one of: bitvector, dynamic-pointer)",
        ),
        (
            &["check", "holdoff", "--acks", "home"],
            "--acks does not apply to check holdoff",
        ),
        (
            &["check", "coherence", "--buffers", "1"],
            "--buffers must be from 2 to 16 (a requester holds a reply's buffer",
        ),
        (
            &["check", "coherence", "--max-states", "0"],
            "--max-states must be from 1 to 100000000, got 0",
        ),
        (&["check", "nothing"], "invalid value 'nothing'"),
        // A flag or bug the check would ignore.
        (
            &["check", "holdoff", "--symmetry", "off"],
            "--symmetry does not apply to check holdoff",
        ),
        (
            &["check", "transfer", "--symmetry", "on"],
            "--symmetry does not apply to check transfer",
        ),
        (
            &["check", "holdoff", "--inject", "early-answer", "--technique", "tlb"],
            "--inject early-answer does nothing under --technique tlb: its handlers are the holdoff technique's",
        ),
        (
            &["check", "holdoff", "--inject", "keep-tlb-entry", "--technique", "invalidate"],
            "--inject keep-tlb-entry does nothing under --technique invalidate",
        ),
        (
            &["check", "coherence", "--inject", "early-release", "--acks", "requester"],
            "--inject early-release does nothing under --acks requester: the home keeps no entry pending",
        ),
        (
            &["check", "transfer", "--inject", "latest-space", "--receives", "1"],
            "--inject latest-space does nothing with --receives 1",
        ),
        (
            &["check", "coherence", "--inject", "list", "--nodes", "3"],
            "--nodes does not apply to --inject list, which runs no search",
        ),
        // At their defaults too, as every other flag is.
        (
            &["check", "coherence", "--inject", "list", "--max-states", "30000000"],
            "--max-states does not apply to --inject list",
        ),
        (
            &["check", "transfer", "--inject", "list", "--max-bytes", "8G"],
            "--max-bytes does not apply to --inject list",
        ),
        (
            &["check", "holdoff", "--inject", "list", "--threads", "0"],
            "--threads does not apply to --inject list",
        ),
        (
            &["check", "coherence", "--inject", "list", "--nodes", "9"],
            "--nodes does not apply to --inject list",
        ),
        (
            &["check", "holdoff", "--inject", "list", "--nodes", "3"],
            "--nodes does not apply to check holdoff",
        ),
    ] {
        let (code, out, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A planted bug is refused where it changes nothing, by the library as by
/// the command line; one that acts but does not show within the bounds is
/// said beside a clean report.
#[test]
fn a_planted_bug_that_cannot_show_is_refused_or_said() {
    use flashkit::coherence::check::CoherenceCheck;
    use flashkit::coherence::protocol::Bug as CohBug;
    use flashkit::coherence::Acks;
    use flashkit::protocols::transfer::check::TransferCheck;
    use flashkit::protocols::transfer::state::Bug as XferBug;
    let c = CoherenceCheck {
        acks: Acks::Requester,
        inject: Some(CohBug::EarlyRelease),
        ..CoherenceCheck::default()
    };
    assert_eq!(c.validate().unwrap_err().field, "inject");
    for bug in [CohBug::ForgetPending, CohBug::SkipInvalidation] {
        let c = CoherenceCheck {
            inject: Some(bug),
            ..c
        };
        assert_eq!(c.validate(), Ok(()), "{bug:?}");
    }
    let t = TransferCheck {
        receives: 1,
        inject: Some(XferBug::LatestSpace),
        ..TransferCheck::default()
    };
    assert_eq!(t.validate().unwrap_err().field, "inject");
    let t = TransferCheck { receives: 2, ..t };
    assert_eq!(t.validate(), Ok(()));
    // Two nodes give the forwarded request no second requester to race.
    let (code, v, err) = check(
        "coherence",
        &["--nodes", "2"],
        &["--inject", "forget-pending"],
    );
    assert_eq!((code, v["violations"].as_u64()), (0, Some(0)), "{err}");
    assert_eq!(
        err,
        "note: check coherence: the planted bug forget-pending was not found: it cannot show within these bounds (the search was complete)\n"
    );
    // A bug found says no such note.
    let (code, _, err) = check(
        "coherence",
        &["--nodes", "2"],
        &["--inject", "skip-invalidation"],
    );
    assert_eq!(code, 1);
    assert!(!err.contains("note:"), "{err}");
}

#[test]
fn held_deliveries_keep_each_channels_order() {
    use crate::handlers::fetch_inc::Finc;
    use magic::{Cycles, Magic, MagicParams, NodeId};
    // Node 0's processor asks twice, one cycle apart.
    let finc = Finc {
        requester: NodeId(0),
        count: 2,
        every: Cycles(1),
    };
    let mut m = Magic::with(MagicParams::default(), 2, &finc).unwrap();
    m.hold_deliveries();
    m.start_processor(NodeId(0), Cycles(0)).unwrap();
    while m.step().is_some() {}
    // Both asks wait at node 0's processor interface: one channel, so only
    // the older may go.
    let d = m.deliveries();
    assert_eq!(d.len(), 1);
    assert!(m
        .describe_delivery(d[0])
        .starts_with("n0 processor -> MAGIC: finc FincMsg::Ask"));
    // A run that stops with deliveries held did not do their work.
    let r = m.run();
    assert!(!r.is_clean(), "{r:?}");
    assert!(
        r.stuck.last().is_some_and(|s| s.starts_with(
            "2 message(s) held for release (Magic::deliver), first: n0 processor -> MAGIC: \
             finc FincMsg::Ask"
        )),
        "{:?}",
        r.stuck
    );
    assert!(!m.deliver(1), "the younger ask cannot overtake the older");
    assert!(m.deliver(d[0]));
    while m.step().is_some() {}
    // The first ask's increment waits on the request lane to node 1, the
    // second ask at the interface: two channels, either may go first.
    let d = m.deliveries();
    let what: Vec<String> = d.iter().map(|&i| m.describe_delivery(i)).collect();
    assert_eq!(what.len(), 2, "{what:?}");
    assert!(what
        .iter()
        .any(|w| w.starts_with("n0 -> n1 (request): finc FincMsg::Inc")));
    // The same state, encoded twice, is the same bytes.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    m.encode_hardware(&mut a);
    m.encode_hardware(&mut b);
    assert_eq!(a, b);
    assert!(!a.is_empty());
}

/// Node symmetry: the coherence check stores states up to a renaming of
/// the nodes that are no line's home, and says so; the plain search
/// (`--symmetry off`) keeps its state counts. With it on, the space is at
/// least 1.5 times smaller, every planted bug is still found, and its
/// trace, replayed from the initial machine, is as short as the plain
/// search's.
#[test]
fn symmetry_shrinks_the_coherence_space_and_still_finds_every_bug() {
    let bounds: &[&str] = &["--nodes", "3", "--ops", "1"];
    let (_, off, err) = check("coherence", bounds, &["--symmetry", "off"]);
    let (_, on, _) = check("coherence", bounds, &[]);
    assert_eq!(off["states"], 3633, "the plain search's count: {off} {err}");
    assert_eq!(off["runs"][0]["symmetry"], false);
    assert_eq!(on["runs"][0]["symmetry"], true);
    assert_eq!(on["complete"], true);
    let (a, b) = (
        off["states"].as_u64().unwrap(),
        on["states"].as_u64().unwrap(),
    );
    assert!(a * 2 >= b * 3, "{a} states plain, {b} with symmetry");
    for bug in coherence::check::Bug::ALL {
        let runs = ["on", "off"].map(|s| {
            check(
                "coherence",
                bounds,
                &["--inject", bug.name(), "--symmetry", s],
            )
        });
        for (code, v, _) in &runs {
            assert_eq!(*code, 1, "{}: {v}", bug.name());
            assert_eq!(v["violations"], 1, "{}: {v}", bug.name());
        }
        let steps = runs.clone().map(|r| r.1["trace"].as_array().unwrap().len());
        assert!(steps[0] > 0, "{}: no trace", bug.name());
        assert_eq!(steps[0], steps[1], "{}: {:?}", bug.name(), runs[0].1);
    }
}

/// The default bounds, on the release build (`.ci/run` runs it with
/// `--ignored`): each check exhausts its space without a violation, past
/// 1000 states. Measured: coherence 269 226 states with node symmetry
/// (537 624 without), holdoff 34 381 in 4.4 s, transfer 6 464 in 0.7 s.
#[test]
#[ignore = "the default bounds: run on the release build"]
fn default_bounds_are_exhausted_without_a_violation() {
    // The plain search keeps its count; node symmetry takes at least a
    // third off it.
    let (code, off, err) = check("coherence", &[], &["--symmetry", "off"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(off["states"], 537_624, "{off}");
    let (_, on, _) = check("coherence", &[], &[]);
    let on = on["states"].as_u64().unwrap();
    assert!(on * 3 <= 537_624 * 2, "{on} states with symmetry");
    for (kind, least) in [
        ("coherence", 250_000),
        ("holdoff", 30_000),
        ("transfer", 6_000),
    ] {
        let (code, v, err) = check(kind, &[], &[]);
        assert_eq!(code, 0, "check {kind}: {err}");
        assert_eq!(v["complete"], true, "check {kind}: {v}");
        assert_eq!(v["violations"], 0, "check {kind}: {v}");
        let states = v["states"].as_u64().unwrap();
        assert!(states >= least, "check {kind}: {states} states");
    }
    // Each of the protocol's options at the default bounds, and a pointer
    // store of one link, so that three readers of a line reclaim it.
    for option in [
        &["--acks", "requester"][..],
        &["--hints", "false"],
        &["--forwards", "defer"],
        &["--directory", "dynamic-pointer"],
        &[
            "--nodes",
            "4",
            "--ops",
            "1",
            "--directory",
            "dynamic-pointer",
            "--pointer-store",
            "1",
        ],
    ] {
        let (code, v, err) = check("coherence", option, &["--symmetry", "off"]);
        assert_eq!(code, 0, "check coherence {option:?}: {err}");
        assert_eq!(v["complete"], true, "check coherence {option:?}: {v}");
        assert_eq!(v["violations"], 0, "check coherence {option:?}: {v}");
        assert!(v["states"].as_u64().unwrap() >= 100_000, "{option:?}: {v}");
    }
}

/// Four nodes at the default lines and ops, on the release build
/// (`.ci/run` runs it with `--ignored`): with node symmetry, the search
/// exhausts the space within the default state cap, without a violation.
/// Measured on two cores: see docs/checking.md.
#[test]
#[ignore = "four nodes: minutes on the release build"]
fn four_nodes_are_exhausted_within_the_default_cap() {
    let (code, v, err) = check("coherence", &["--nodes", "4"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(v["violations"], 0, "{v}");
    assert_eq!(v["runs"][0]["symmetry"], true, "{v}");
    assert_eq!(v["states"], 26_767_466, "{v}");
    assert_eq!(v["depth"], 55, "{v}");
}

#[test]
fn a_search_stops_at_its_state_cap_and_posts_its_progress() {
    use magic::check::{Bounds, Progress};
    static SEEN: Progress = Progress::new();
    let bounds = Bounds {
        max_states: 100,
        progress: Some(&SEEN),
        ..Bounds::default()
    };
    bounds.validate().unwrap();
    let r = coherence::check::CoherenceCheck::default()
        .run(bounds)
        .unwrap();
    assert_eq!((r.states, r.complete), (100, false));
    assert_eq!(r.limit, Some(magic::check::Limit::States));
    // What the search posted as it went is where it stopped.
    assert_eq!(
        (SEEN.states(), SEEN.transitions(), SEEN.depth()),
        (r.states, r.transitions, r.depth)
    );
    // It held something for its 100 states, far below the maximum.
    assert!(
        SEEN.bytes() > 100 * 16 && SEEN.bytes() < magic::check::MIN_BYTES,
        "{} bytes held",
        SEEN.bytes()
    );
    // A bound past the maximum is refused by name.
    let huge = Bounds {
        max_states: usize::MAX,
        ..Bounds::default()
    };
    let e = huge.validate().unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "max_states must be from 1 to {}, got {}",
            magic::check::MAX_STATES,
            usize::MAX
        )
    );
}

/// The search's thread count changes nothing in its report: the same
/// states, transitions and depth, the same first violation and the same
/// shortest trace, with or without a planted bug.
#[test]
fn thread_count_changes_nothing_in_a_checks_report() {
    let bounds: &[&str] = &["--nodes", "3", "--ops", "1"];
    let bug = coherence::check::Bug::ALL[0].name();
    for more in [&[][..], &["--inject", bug][..]] {
        let runs: Vec<_> = ["1", "2", "3"]
            .iter()
            .map(|t| {
                let mut m = more.to_vec();
                m.extend(["--threads", t]);
                check("coherence", bounds, &m)
            })
            .collect();
        assert!(
            runs[0].1["states"].as_u64().unwrap_or(0) > 1,
            "{:?}",
            runs[0]
        );
        if !more.is_empty() {
            assert_eq!(runs[0].1["violations"], 1, "{bug} not found: {}", runs[0].1);
        }
        for r in &runs[1..] {
            assert_eq!(r.0, runs[0].0);
            assert_eq!(r.1, runs[0].1, "a thread count changed the report");
        }
    }
}

/// A memory maximum stops a search, not complete, and its report says
/// which bound stopped it; the count it stops at is the same whatever the
/// number of threads. A search that stops at the state maximum says that,
/// and a complete one names no bound.
#[test]
fn a_memory_maximum_stops_a_search_and_says_so_on_any_thread_count() {
    let (code, full, err) = check("coherence", &["--nodes", "3", "--ops", "1"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(full["complete"], true, "{full}");
    assert_eq!(full["runs"][0]["limit"], serde_json::Value::Null, "{full}");

    // The default bounds: 269,226 states when complete (docs/checking.md).
    let runs: Vec<_> = ["1", "2", "3"]
        .iter()
        .map(|t| check("coherence", &[], &["--max-bytes", "1M", "--threads", t]))
        .collect();
    let (code, v, err) = &runs[0];
    assert_eq!(*code, 0, "{err}");
    assert_eq!(v["config"]["max_bytes"], 1 << 20);
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(v["runs"][0]["limit"], "memory", "{v}");
    let states = v["states"].as_u64().unwrap();
    assert!(states > 1 && states < 269_226, "{states} states");
    for r in &runs[1..] {
        assert_eq!(
            r.1, runs[0].1,
            "a thread count changed where memory stopped"
        );
    }

    let (_, v, _) = check("coherence", &[], &["--max-states", "100"]);
    assert_eq!(v["runs"][0]["limit"], "states", "{v}");
    assert_eq!(v["states"], 100, "{v}");
}

/// A byte count is digits and a unit of powers of 1024; anything else, or
/// a count out of range, is refused with one line naming the flag.
#[test]
fn a_bad_memory_maximum_is_refused_naming_the_flag() {
    for bad in [
        "0",
        "1023K",
        "2X",
        "G",
        "-1M",
        "99999999999P",
        "2P",
        " 2M ",
        "2000000iB",
    ] {
        let flag = format!("--max-bytes={bad}");
        let (code, out, err) = flashkit(&["check", "coherence", &flag]);
        assert_eq!(code, 2, "--max-bytes {bad}: {out}");
        assert!(err.contains("--max-bytes"), "--max-bytes {bad}: {err}");
    }
    // A fraction of a unit is told as such, not as a wrong unit.
    let (code, _, err) = flashkit(&["check", "coherence", "--max-bytes", "1.5G"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a whole number of units"), "{err}");
    for good in ["1M", "1MiB", "1MB", "1048576", "1024k"] {
        let (code, _, err) = flashkit(&[
            "check",
            "coherence",
            "--max-bytes",
            good,
            "--max-states",
            "10",
        ]);
        assert_eq!(code, 0, "--max-bytes {good}: {err}");
    }
}

/// The replaying search (the library's `explore`, which no check of the
/// command line runs any more) stops at a memory maximum as the restoring
/// one does: on the holdoff check's default bounds and 1 MiB, the first
/// two techniques' searches are complete and the third, of 16 711 states
/// when complete, stops, saying so. On the release build (`.ci/run` runs
/// it with `--ignored`).
#[test]
#[ignore = "the default holdoff bounds, replayed: run on the release build"]
fn the_replaying_search_stops_at_a_memory_maximum_too() {
    use flashkit::magic::check::{explore, Bounds, Limit};
    use flashkit::protocols::user::check::HoldoffCheck;
    use flashkit::protocols::user::experiments::Technique;
    let bounds = Bounds {
        max_bytes: 1 << 20,
        ..Bounds::default()
    };
    let run = |technique| {
        let c = HoldoffCheck {
            technique,
            ..HoldoffCheck::default()
        };
        explore(&c, bounds).unwrap()
    };
    for t in [Technique::Holdoff, Technique::Invalidate] {
        let r = run(t);
        assert!(r.complete && r.limit.is_none(), "{t:?}: {r:?}");
    }
    let r = run(Technique::Tlb);
    assert!(!r.complete && r.limit == Some(Limit::Memory), "{r:?}");
    assert!(r.states > 1 && r.states < 16_711, "{} states", r.states);
}

/// `--inject list` names a check's bugs in every format, and each bug
/// planted under a technique it acts under is found.
#[test]
fn the_bug_list_follows_the_format_and_each_bug_acts_where_it_is_planted() {
    let (code, out, err) = flashkit(&["check", "holdoff", "--inject", "list"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "early-answer\nkeep-stale\nkeep-tlb-entry\n");
    let (code, out, _) = flashkit(&["check", "holdoff", "--inject", "list", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!(["early-answer", "keep-stale", "keep-tlb-entry"])
    );
    let (code, out, _) = flashkit(&["check", "transfer", "--inject", "list", "--format", "csv"]);
    assert_eq!(code, 0);
    assert_eq!(out, "bug\nearly-done\nlatest-space\n");
    // Without --technique a bug is searched for where it acts, and only there.
    for (bug, want) in [
        ("early-answer", &["holdoff"][..]),
        ("keep-stale", &["invalidate", "tlb"][..]),
        ("keep-tlb-entry", &["tlb"][..]),
    ] {
        let bounds = ["--lines", "2", "--changes", "1"];
        let (code, v, err) = check("holdoff", &bounds, &["--inject", bug]);
        assert_eq!(code, 1, "{bug}: {err}");
        let got: Vec<&str> = v["config"]["searches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["model"]["holdoff"]["technique"].as_str().unwrap())
            .collect();
        assert_eq!(got, want, "{bug}");
        assert_eq!(v["violations"], want.len(), "{bug}: {v}");
    }
    // keep-stale leaves the TLB technique's uses unmarked too.
    for t in ["invalidate", "tlb"] {
        let (code, v, err) = check(
            "holdoff",
            &["--lines", "2", "--changes", "1", "--technique", t],
            &["--inject", "keep-stale"],
        );
        assert_eq!(code, 1, "{t}: {err}");
        assert_eq!(v["violations"], 1, "{t}: {v}");
    }
}

/// A saved check's bounds are ones a check takes, each search holds at
/// most their states, and a search's report is one a search gives: else
/// it is refused on reading, naming the field.
#[test]
fn a_saved_check_no_search_gives_is_refused_naming_the_field() {
    use flashkit::check::CheckReport;
    let (code, v, err) = check("transfer", &["--lines", "2", "--receives", "1"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(serde_json::from_value::<CheckReport>(v.clone()).is_ok());
    let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut w = v.clone();
        edit(&mut w);
        serde_json::from_value::<CheckReport>(w)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = refused(&|w| w["config"]["max_states"] = 0.into());
    assert!(e.starts_with("config.max_states must be "), "{e}");
    let e = refused(&|w| w["config"]["max_states"] = 10.into());
    assert!(e.starts_with("runs[0].states is "), "{e}");
    assert!(e.ends_with("more than config.max_states, 10"), "{e}");
    let e = refused(&|w| {
        w["runs"][0]["violations"] = 1.into();
        w["runs"][0]["violation"] = "x".into();
    });
    assert!(
        e.starts_with("complete is true, but violations is 1"),
        "{e}"
    );
    let e = refused(&|w| w["runs"][0]["limit"] = "states".into());
    assert!(
        e.starts_with("complete is true, but limit is States"),
        "{e}"
    );
}
