//! The library from a study's side: every public configuration a scenario
//! can hold, at its extremes, runs or is refused with an error; nothing
//! panics.

use flashkit::scenario::{self, Scenario};
use proptest::prelude::*;

/// Values at and around every edge a u64 field has.
fn edge_u64(typical: &'static [u64]) -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => proptest::sample::select(typical),
        1 => proptest::sample::select(&[0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX][..]),
    ]
}

fn edge_u32(typical: &'static [u32]) -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => proptest::sample::select(typical),
        1 => proptest::sample::select(&[0, 1, u32::MAX - 1, u32::MAX][..]),
    ]
}

fn transfer() -> impl Strategy<Value = scenario::Transfer> {
    use scenario::*;
    (
        edge_u64(&[0, 1, 127, 128, 129, 4096, 1 << 14, (1 << 20) + 1]),
        proptest::sample::select(
            &[
                Sender::Uncached,
                Sender::Clean,
                Sender::Dirty,
                Sender::DirtyRemote,
            ][..],
        ),
        proptest::sample::select(&[Receiver::Uncached, Receiver::Clean, Receiver::Dirty][..]),
        proptest::sample::select(
            &[
                HandlerKind::Base,
                HandlerKind::Optimized,
                HandlerKind::Chunked,
            ][..],
        ),
        edge_u32(&[1, 4, 8, 16, 17]),
        (
            edge_u64(&[0, 8, 64, 4095, 4096]),
            edge_u64(&[0, 8, 64, 4095, 4096]),
            any::<bool>(),
            any::<bool>(),
            edge_u32(&[1, 2, 3, 32]),
            edge_u32(&[1, 2, 3, 32]),
            any::<bool>(),
            (0..3u8, any::<bool>(), any::<bool>()),
        ),
    )
        .prop_map(
            |(
                bytes,
                sender,
                receiver,
                handler,
                chunk,
                (src, dst, collect, bi, receives, sends, first, (mode, flush, third)),
            )| {
                Transfer {
                    bytes,
                    sender,
                    receiver,
                    handler,
                    chunk,
                    src_offset: src,
                    dst_offset: dst,
                    coherence: [
                        CoherenceKind::None,
                        CoherenceKind::Local,
                        CoherenceKind::Global,
                    ][mode as usize],
                    flush,
                    placement: if third {
                        Placement::Third
                    } else {
                        Placement::Home
                    },
                    // A fetch strategy is global coherence's alone.
                    strategy: if collect && mode == 2 {
                        StrategyKind::Collect
                    } else {
                        StrategyKind::Pipelined
                    },
                    direction: if bi {
                        DirectionKind::Bi
                    } else {
                        DirectionKind::Uni
                    },
                    receives,
                    sends,
                    receive_first: first,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// A transfer at the edges of every field runs to its outcome or is
    /// refused naming what is wrong.
    #[test]
    fn a_transfer_at_its_extremes_runs_or_is_refused(t in transfer()) {
        let s = Scenario { transfer: Some(t.clone()), ..Default::default() };
        match scenario::run(&s) {
            Ok(r) => prop_assert!(r.json.is_object()),
            Err(e) => prop_assert!(!e.to_string().is_empty(), "{t:?}"),
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// The other experiments at the edges of their sizes and node counts.
    #[test]
    fn every_experiment_at_its_extremes_runs_or_is_refused(
        which in 0..6u8,
        nodes in edge_u32(&[1, 2, 3, 4, 16, 256, 257, 1024, 1025]),
        size in edge_u64(&[0, 1, 4, 16, 1 << 20, (1 << 20) + 1]),
        small in edge_u32(&[0, 1, 2, 3, 255, 256]),
    ) {
        let mut s = Scenario::default();
        match which {
            0 => s.miss = Some(scenario::Miss { nodes, offset: size, owner: small, ..Default::default() }),
            1 => s.fetch_op = Some(scenario::FetchOp { remote_node: small }),
            2 => s.messaging_costs = Some(scenario::MessagingCosts { words: size, packet_words: u64::from(small), ..Default::default() }),
            3 => s.logp = Some(scenario::Logp { nodes: nodes.min(8).max(small.min(3)), ..Default::default() }),
            4 => s.pipeline = Some(scenario::Pipeline { nodes, msgs: small.min(4), setup_cycles: size.min(1 << 40), ..Default::default() }),
            _ => s.suite = Some(scenario::Suite { nodes: nodes.min(4), benchmark: Some("one-to-one".into()), ..Default::default() }),
        }
        if let Err(e) = scenario::run(&s) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

/// What a study keeps of a run crosses threads, copies and prints.
#[test]
fn the_study_layers_results_are_send_clone_debug_serialize() {
    fn result<T: Send + Clone + std::fmt::Debug + serde::Serialize>() {}
    result::<scenario::Report>();
    result::<scenario::Scenario>();
    result::<flashkit::sweep::Row>();
}

/// A saved result hand-edited to counts no run gives is refused when read
/// back, naming what is wrong, not read into figures that overflow later.
#[test]
fn saved_counts_no_run_gives_are_refused_not_summed_past_u64() {
    use flashkit::scenario::Saved;
    let run = |toml: &str| {
        let s: Scenario = toml::from_str(toml).unwrap();
        scenario::run(&s).unwrap().json
    };
    // A cost study's features summed past 2^64 - 1.
    let mut v = run("[messaging_costs]\n");
    v["features"]["base"]["source"] = u64::MAX.into();
    let e = Saved::read(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("features sum past"), "{e}");
    // A pipeline's unit counters at 2^64 - 1: the ledger's own rules.
    let clean = run("[pipeline]\nnodes = 2\nmsgs = 2\n");
    let mut v = clean.clone();
    v["units"][0]["ops"] = u64::MAX.into();
    v["units"][0]["waiting"] = u64::MAX.into();
    let e = Saved::read(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("units"), "{e}");
    // Loads past the instructions.
    let mut v = clean;
    v["occupancy"][0]["loads"] = u64::MAX.into();
    let e = Saved::read(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("loads + stores ≤ instructions"), "{e}");
    // A suite's rate over no repetitions: 0 MB/s, but from no run.
    let mut v = run("[suite]\nplatform = \"cm5\"\nbenchmark = \"swap\"\nnodes = 4\n");
    let cell = v["tables"][0]["counts"][0]
        .as_array()
        .and_then(|r| r.iter().position(|c| c.get("bytes").is_some()))
        .expect("swap has a rate");
    v["tables"][0]["counts"][0][cell]["repeats"] = 0.into();
    v["tables"][0]["rows"][0][cell] = 0.into();
    let e = Saved::read(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("repeats must be from 1"), "{e}");
    // A span's cell likewise, named by its key, not "no variant matched".
    let mut v = run("[suite]\nplatform = \"cm5\"\nbenchmark = \"round-trip\"\nnodes = 4\n");
    v["tables"][0]["counts"][0][1]["repeats"] = 0.into();
    let e = Saved::read(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("repeats must be from 1"), "{e}");
}

/// A scenario built in code is held to what a file is: a pipeline's
/// `[machine]` key other than the budget is refused by `run` as by
/// `parse`, naming it.
#[test]
fn a_scenario_built_in_code_refuses_what_its_file_would() {
    let s: Scenario =
        toml::from_str("[pipeline]\nnodes = 2\nmsgs = 3\n[machine]\npi_out = 5\n").unwrap();
    let e = scenario::run(&s).unwrap_err().to_string();
    assert!(
        e.starts_with("machine.pi_out: does not apply to [pipeline]"),
        "{e}"
    );
    let s: Scenario =
        toml::from_str("[pipeline]\nnodes = 2\nmsgs = 3\n[machine]\nbudget = 100000\n").unwrap();
    assert!(scenario::run(&s).is_ok());
}

/// A study takes only its own points' rows: another transfer's row would
/// make a study whose JSON does not read back.
#[test]
fn a_study_refuses_a_row_that_is_not_its_points() {
    use flashkit::scenario::{study_config, study_points, RunError, Study, StudyConfig};
    let base = Scenario::defaults(scenario::Experiment::Study);
    let config = StudyConfig::on(&base, 128);
    let mut study = Study::new(config.clone());
    let mine = &study_points(128)[0];
    let other = &study_points(4096)[0];
    let foreign = study_config(other, &config.base);
    assert!(matches!(
        study.add(other, foreign),
        Err(RunError::NotItsPoint)
    ));
    let foreign = study_config(other, &config.base);
    assert!(matches!(
        study.add(mine, foreign),
        Err(RunError::NotItsPoint)
    ));
    let second = &study_points(128)[1];
    let wrong = study_config(second, &config.base);
    assert!(matches!(study.add(mine, wrong), Err(RunError::NotItsPoint)));
    assert!(study.rows.is_empty() && study.refused.is_empty());
    study.add(mine, study_config(mine, &config.base)).unwrap();
    let back: Study = serde_json::from_value(serde_json::to_value(&study).unwrap()).unwrap();
    assert_eq!(back, study);
}

/// Library calls out of their ranges are refused, naming the field, where
/// they gave a figure no run defines or a false finding.
#[test]
fn out_of_range_library_calls_are_refused_naming_the_field() {
    use flashkit::coherence::check::CoherenceCheck;
    use flashkit::magic::check::Bounds;
    use flashkit::protocols::am::{flash::Flash, sp::Sp, suite};
    // A traverse step past the nodes pairs none: no figure, a refusal.
    let e = suite::traverse_step(&Flash::new(4), 1000, false).unwrap_err();
    assert_eq!(e.field(), Some("step"), "{e}");
    let e = suite::traverse_span(&Sp::new(4), 7, false).unwrap_err();
    assert_eq!(e.field(), Some("step"), "{e}");
    assert!(suite::traverse_step(&Flash::new(4), 3, false).unwrap() > 0.0);
    // Past the nodes, a step still pairs some where their count is not a
    // power of two: on 6 nodes, step 7 pairs 2 with 5 and 3 with 4.
    assert!(suite::traverse_step(&Flash::new(6), 7, false).unwrap() > 0.0);
    let e = suite::traverse_step(&Flash::new(6), 8, false).unwrap_err();
    assert_eq!(e.to_string(), "step must be from 1 to 7, got 8");
    // A span of no repetitions does not read back.
    let e = serde_json::from_str::<suite::Span>(r#"{"ticks":5,"repeats":0}"#).unwrap_err();
    assert!(e.to_string().contains("repeats"), "{e}");
    // A search that may not settle would report a livelock in a correct
    // protocol; one of no states, an empty search.
    let check = CoherenceCheck {
        nodes: 2,
        lines: 1,
        ops: 1,
        ..Default::default()
    };
    for (bounds, field) in [
        (
            Bounds {
                settle_instants: 0,
                ..Bounds::default()
            },
            "settle_instants",
        ),
        (
            Bounds {
                max_states: 0,
                ..Bounds::default()
            },
            "max_states",
        ),
        (
            Bounds {
                max_bytes: 0,
                ..Bounds::default()
            },
            "max_bytes",
        ),
    ] {
        assert_eq!(check.run(bounds).unwrap_err().field, field);
    }
    assert_eq!(check.run(Bounds::default()).unwrap().violations, 0);
    assert_eq!(flashkit::sweep::window(usize::MAX), usize::MAX);
}
