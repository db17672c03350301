//! The occupancy ledger of a small scenario, as people read it.

use crate::common;

use protocols::pipeline::{self, Pattern, PipelineConfig};

#[test]
fn pipeline_occupancy_table() {
    let cfg = PipelineConfig {
        nodes: 3,
        msgs: 2,
        pattern: Pattern::Rand,
        costs: Default::default(),
        budget: magic::params::DEFAULT_BUDGET,
    };
    let run = pipeline::run(&cfg).unwrap();
    assert!(run.is_clean());
    let (r, ledger) = (run.result, run.ledger);
    assert_eq!(r.events, 3 * 2 * 129);
    common::insta_settings().bind(|| {
        insta::assert_snapshot!("pipeline_3x2_rand_per_node", ledger.render());
        insta::assert_snapshot!("pipeline_3x2_rand_summed", ledger.summed().render());
    });
}

#[test]
fn ledger_json_has_the_rows_of_the_table() {
    let cfg = PipelineConfig {
        nodes: 2,
        msgs: 1,
        pattern: Pattern::Ring,
        costs: Default::default(),
        budget: magic::params::DEFAULT_BUDGET,
    };
    let ledger = pipeline::run(&cfg).unwrap().ledger;
    let v: serde_json::Value = serde_json::to_value(&ledger).unwrap();
    assert_eq!(v["nodes"], 2);
    let rows = v["handlers"].as_array().unwrap();
    // setup, send and recv ran on both nodes.
    assert_eq!(rows.len(), 6);
    let send0 = rows
        .iter()
        .find(|r| r["node"] == 0 && r["handler"] == "pipeline.send")
        .unwrap();
    assert_eq!(send0["invocations"], 32);
    // 12 cycles each, plus the stalls of a 2-slot outbox behind a 40-cycle wire.
    let stall = send0["outbox_stall"].as_u64().unwrap();
    assert!(stall > 0);
    assert_eq!(send0["busy"].as_u64().unwrap(), 32 * 12 + stall);
    assert_eq!(v["units"].as_array().unwrap().len(), 2 * 6);
}
