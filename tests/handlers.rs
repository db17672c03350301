//! The guide's example handler (examples/fetch_inc.rs), run beside the
//! transfer: it works, and its occupancy is a reviewed snapshot.

mod common;

#[allow(dead_code)]
#[path = "../examples/fetch_inc.rs"]
mod fetch_inc;

#[test]
fn the_fetch_and_increment_example_counts_and_costs_what_it_should() {
    let o = fetch_inc::run(8).unwrap();
    assert_eq!(fetch_inc::count(&o), 8);
    assert!(o.data_ok, "the transfer beside it is intact");
    let ledger = o.machine.ledger();
    let rows: Vec<_> = ledger
        .handlers
        .iter()
        .filter(|r| r.handler.starts_with("finc"))
        .cloned()
        .collect();
    assert_eq!(rows.len(), 3);
    let table = magic::Ledger {
        handlers: rows,
        units: Vec::new(),
        ..ledger
    };
    common::insta_settings().bind(|| insta::assert_snapshot!("handlers_fetch_inc", table.render()));
}
