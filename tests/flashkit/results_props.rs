//! Round trip over random study points (any mode, buffer states and
//! placement, sizes up to 1 KB, a machine parameter and two cost entries
//! away from their defaults), small whole studies, and checks of each kind
//! at small bounds (a planted bug at times): the JSON of a result reads
//! back equal to it, and the configuration it carries gives it again. Each
//! property stops starting cases once its time budget is spent, so a slow
//! debug build stays bounded.

use flashkit::check::{self, CheckConfig, CheckReport, Model};
use flashkit::magic::Cycles;
use flashkit::scenario::{
    self, Placement, Receiver, RunError, Saved, Scenario, Sender, StudyPoint,
};
use flashkit::study::{self, Row, Study};
use proptest::prelude::*;
use std::time::{Duration, Instant};

/// How long each property starts new cases for.
const BUDGET: Duration = Duration::from_secs(20);

/// The budget of a property that started at `start` is spent.
fn spent(start: &std::sync::OnceLock<Instant>) -> bool {
    start.get_or_init(Instant::now).elapsed() > BUDGET
}

fn cases(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

prop_compose! {
    /// A study point of up to 1 KB on a machine, a transfer cost and a
    /// flush cost away from their defaults.
    fn study_case()(
        mode in prop::sample::select(study::MODES.to_vec()),
        sender in prop::sample::select(Sender::ALL.to_vec()),
        receiver in prop::sample::select(Receiver::ALL.to_vec()),
        placement in prop::sample::select(Placement::ALL.to_vec()),
        bytes in 1u64..=1024,
        net_latency in 10u64..=40,
        send_init in 9u32..=14,
        dirty_line in 8u64..=32,
    ) -> (StudyPoint, Scenario) {
        let mut s = Scenario::default();
        s.machine.net_latency = Cycles(net_latency);
        s.costs.transfer.send_init.cycles = send_init;
        s.costs.flush.dirty_line = Cycles(dirty_line);
        (StudyPoint { mode, sender, receiver, placement, bytes }, s)
    }
}

static ROW_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
static STUDY_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
static CHECK_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

proptest! {
    #![proptest_config(cases(48))]

    /// A study row's JSON reads back equal, its figures are what its
    /// counts give, and its configuration measures it again, in the
    /// library and as a saved result.
    #[test]
    fn a_study_rows_json_reads_back_equal_and_its_config_measures_it_again(
        (p, s) in study_case(),
    ) {
        if spent(&ROW_START) {
            return Ok(());
        }
        let row = match study::point(&p, &s, false) {
            Ok((row, _)) => row,
            // A combination its mode cannot serve has no row.
            Err(RunError::Mode(_)) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{p:?}: {e}"))),
        };
        prop_assert_eq!(row.point(), p.clone());
        let f = Row::figures(row.bytes, row.total, row.processor);
        prop_assert_eq!(
            (f.total_us, f.bandwidth_mb_s, f.processor_us),
            (row.total_us, row.bandwidth_mb_s, row.processor_us)
        );
        let text = serde_json::to_string(&row).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(v["total_cycles"].as_u64(), Some(row.total.0));
        prop_assert_eq!(v["total_us"].as_f64(), Some(row.total_us));
        let back: Row = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &row);
        let (again, _) = scenario::study_config(&back.point(), &back.config)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &row);
        let saved = Saved::read(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&saved, &Saved::StudyRow(Box::new(row.clone())));
        let (report, _) = scenario::rerun(&saved, false)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(report.json, v);
    }
}

proptest! {
    #![proptest_config(cases(3))]

    /// A whole study of a few lines reads back equal, and its
    /// configuration runs it again, on workers or point by point.
    #[test]
    fn a_studys_json_reads_back_equal_and_its_config_runs_it_again(
        (p, s) in study_case(),
    ) {
        if spent(&STUDY_START) {
            return Ok(());
        }
        let bytes = p.bytes.min(384);
        let st = study::run(&s, bytes, 2, |_, _| {})
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(st.rows.len() + st.refused.len(), study::points(bytes).len());
        let text = serde_json::to_string(&st).unwrap();
        let back: Study = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(&back, &st);
        let again = study::run_config(&back.config, 1, |_, _| {})
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &st);
        let saved = Saved::read(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (report, _) = scenario::rerun(&saved, false)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(report.json, serde_json::to_value(&st).unwrap());
    }
}

/// A check's model at small bounds, of any kind, a planted bug at times.
fn small_model() -> impl Strategy<Value = Model> {
    use flashkit::coherence::check::{Bug as CohBug, CoherenceCheck};
    use flashkit::protocols::transfer::check::{Bug as XferBug, TransferCheck};
    use flashkit::protocols::user::check::{Bug as UserBug, HoldoffCheck};
    use flashkit::protocols::user::experiments::Technique;
    prop_oneof![
        (
            2u32..=3,
            1u32..=2,
            0u32..=2,
            2u32..=3,
            any::<bool>(),
            prop::option::weighted(0.3, prop::sample::select(CohBug::ALL.to_vec())),
        )
            .prop_map(|(nodes, lines, ops, buffers, hints, inject)| {
                Model::Coherence(CoherenceCheck {
                    nodes,
                    lines,
                    ops,
                    buffers,
                    hints,
                    inject,
                    ..CoherenceCheck::default()
                })
            }),
        (
            prop::sample::select(vec![
                Technique::Holdoff,
                Technique::Invalidate,
                Technique::Tlb
            ]),
            1u32..=2,
            1u32..=2,
            prop::option::weighted(0.3, prop::sample::select(UserBug::ALL.to_vec())),
        )
            .prop_map(|(technique, lines, buffers, inject)| {
                Model::Holdoff(HoldoffCheck {
                    technique,
                    lines,
                    changes: 1,
                    ops: 1,
                    buffers,
                    // A bug is planted only where it acts (else refused).
                    inject: inject.filter(|b| b.acts_under(technique)),
                })
            }),
        (
            1u32..=3,
            1u32..=2,
            1u32..=2,
            prop::sample::select(vec![0u32, 64]),
            prop::option::weighted(0.3, prop::sample::select(XferBug::ALL.to_vec())),
        )
            .prop_map(|(lines, receives, chunk, offset, inject)| {
                let receives = receives.min(lines);
                Model::Transfer(TransferCheck {
                    lines,
                    receives,
                    chunk,
                    offset,
                    // A bug is planted only where it acts (else refused).
                    inject: inject.filter(|b| b.acts_with(receives)),
                    ..TransferCheck::default()
                })
            }),
    ]
}

proptest! {
    #![proptest_config(cases(24))]

    /// A check's report reads back equal, and its configuration gives it
    /// again, in the library and as a saved result.
    #[test]
    fn a_checks_report_reads_back_equal_and_its_config_gives_it_again(
        model in small_model(),
        max_states in 1usize..=3000,
    ) {
        if spent(&CHECK_START) {
            return Ok(());
        }
        let config = CheckConfig::new(model.kind(), max_states, vec![model]);
        let r = check::run(&config, None)
            .map_err(|e| TestCaseError::fail(format!("{model:?}: {e}")))?;
        prop_assert_eq!(&r.config, &config);
        prop_assert!(r.states <= max_states as u64);
        let text = serde_json::to_string(&r).unwrap();
        let back: CheckReport = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &r);
        let again = check::run(&back.config, None)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again, &r);
        let saved = Saved::read(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (report, _) = scenario::rerun(&saved, false)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(report.json, serde_json::to_value(&r).unwrap());
        prop_assert_eq!(report.failed.is_some(), r.violations > 0);
    }
}
