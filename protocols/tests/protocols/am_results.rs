//! The platforms' and layers' run results can be kept, printed, sent to
//! worker threads and written as JSON: each is `Send + Clone + Debug +
//! Serialize` (checked when this test binary compiles).

use protocols::am::{costs, export, sp, suite, OpStats, Run};
use protocols::user::experiments::{FetchOpResult, RemapResult};

/// Compiles only for a type a study can keep and hand around.
fn assert_result<T: Send + Clone + std::fmt::Debug + serde::Serialize>() {}

#[test]
fn run_results_are_send_clone_debug_serialize() {
    assert_result::<Run>();
    assert_result::<OpStats>();
    assert_result::<suite::LogP>();
    assert_result::<suite::Table>();
    assert_result::<suite::Cell>();
    assert_result::<suite::Bulk>();
    assert_result::<suite::Bandwidth>();
    assert_result::<sp::SpRun>();
    assert_result::<sp::Reliability>();
    assert_result::<costs::FeatureCosts>();
    assert_result::<costs::Features>();
    assert_result::<costs::Total>();
    assert_result::<export::LogGp>();
    assert_result::<export::Flags>();
    assert_result::<export::File>();
    assert_result::<export::SimGridPlan>();
    assert_result::<FetchOpResult>();
    assert_result::<RemapResult>();
}

/// A run's JSON holds its operation table as a list (its keys are pairs).
#[test]
fn a_run_writes_itself_as_json() {
    use protocols::am::cm5::{Cm5, Layer};
    let r = suite::ops_of(&Cm5::new(2, Layer::Cmam)).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["received"], serde_json::json!([1, 1]));
    let ops = v["ops"].as_array().unwrap();
    assert!(ops
        .iter()
        .any(|o| o[0] == serde_json::json!([0, "request"])));
}

/// A span of no repetitions has no time per repetition: built or read
/// back (alone or as a curve's point), it is refused naming `repeats`;
/// one of some reads and writes the same JSON as ever.
#[test]
fn a_span_of_no_repetitions_is_refused_naming_repeats() {
    use suite::{CurvePoint, Span};
    assert_eq!(Span::new(5, 0).unwrap_err().field, "repeats");
    let s = Span::new(26_400, 2).unwrap();
    assert_eq!((s.ticks(), s.repeats(), s.us()), (26_400, 2, 0.5));
    let json = r#"{"ticks":26400,"repeats":2}"#;
    assert_eq!(serde_json::to_string(&s).unwrap(), json);
    assert_eq!(serde_json::from_str::<Span>(json).unwrap(), s);
    let p = CurvePoint { bytes: 8, span: s };
    let json = r#"{"bytes":8,"ticks":26400,"repeats":2}"#;
    assert_eq!(serde_json::to_string(&p).unwrap(), json);
    assert_eq!(serde_json::from_str::<CurvePoint>(json).unwrap(), p);
    let e = serde_json::from_str::<Span>(r#"{"ticks":5,"repeats":0}"#).unwrap_err();
    assert!(e.to_string().starts_with("repeats must be from 1"), "{e}");
    let e = serde_json::from_str::<CurvePoint>(r#"{"bytes":8,"ticks":5,"repeats":0}"#).unwrap_err();
    assert!(e.to_string().starts_with("repeats must be from 1"), "{e}");
}
