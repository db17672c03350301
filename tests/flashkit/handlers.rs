//! Protocols written outside the kit's crates, from examples/: the lock of
//! the guide (docs/handlers.md), one handler on the test bench with its
//! table a reviewed snapshot; and the fetch-and-increment, its home handler
//! on the bench, alone on a quiet machine, and beside the transfer, whose
//! occupancy is a reviewed snapshot.

use crate::common;

#[allow(dead_code)]
#[path = "../../examples/fetch_inc/protocol.rs"]
pub(crate) mod fetch_inc;

#[allow(dead_code)]
#[path = "../../examples/lock/protocol.rs"]
mod lock;

#[test]
fn the_lock_home_grants_a_free_lock_at_once() {
    let l = lock::Lock {
        home: NodeId(0),
        hold: Cycles(50),
        ask: None,
    };
    let mut bench = Bench::new(2, &l).unwrap();
    let ask = bench.msg(NodeId(1), lock::LockMsg::Request).to(NodeId(0));
    let shot = bench.inject(NodeId(0), ask).unwrap();
    assert_eq!(shot.sent.len(), 1);
    assert_eq!(
        bench.decode::<lock::LockMsg>(&shot.sent[0].msg),
        Ok(lock::LockMsg::Grant)
    );
    common::insta_settings()
        .bind(|| insta::assert_snapshot!("handler_lock_request", shot.to_string()));
    // Taken: the next asker waits, at the cost of a store and no miss.
    let again = bench.msg(NodeId(1), lock::LockMsg::Request).to(NodeId(0));
    let shot = bench.inject(NodeId(0), again).unwrap();
    assert!(shot.sent.is_empty());
    assert_eq!((shot.stats.busy, shot.stats.stores), (3, 1));
}

use fetch_inc::{counter, Finc, FincMsg};
use magic::testing::{Bench, Dest};
use magic::{Cycles, LineState, NodeId};

#[test]
fn the_home_handler_reads_adds_writes_and_answers() {
    let finc = Finc {
        requester: NodeId(0),
        count: 0,
        every: Cycles(100),
    };
    let mut bench = Bench::new(2, &finc).unwrap();
    let inc = bench.msg(NodeId(0), FincMsg::Inc).addr(counter());
    let shot = bench.inject(NodeId(1), inc).unwrap();
    assert_eq!(shot.handler, "finc.increment");
    // Check (3 cycles), the read's whole line (29), the update (2).
    assert_eq!((shot.stats.busy, shot.stats.wait), (34, 29));
    assert_eq!(shot.sent.len(), 1);
    assert_eq!(shot.sent[0].to, Dest::Node(NodeId(0)));
    assert_eq!(
        bench.decode::<FincMsg>(&shot.sent[0].msg),
        Ok(FincMsg::Old { value: 0, ok: true })
    );
}

#[test]
fn the_fetch_and_increment_runs_alone_with_its_own_node_state() {
    let m = fetch_inc::run_alone(8).unwrap();
    assert_eq!(fetch_inc::count(&m).unwrap(), 8);
    assert_eq!(
        m.pcache(NodeId(1)).unwrap().state(counter()),
        LineState::Uncached
    );
    let answers = &m.state(NodeId(0)).unwrap().answers;
    let old: Vec<_> = answers.iter().map(|a| (a.1, a.2)).collect();
    assert_eq!(old, (0..8).map(|v| (v, true)).collect::<Vec<_>>());
    let ledger = m.ledger();
    let names: Vec<_> = ledger.handlers.iter().map(|r| r.handler.as_str()).collect();
    assert_eq!(names, ["finc.request", "finc.reply", "finc.increment"]);
}

#[test]
fn the_fetch_and_increment_example_counts_and_costs_what_it_should() {
    let o = fetch_inc::run_beside_transfer(8).unwrap();
    assert_eq!(fetch_inc::count(&o.machine).unwrap(), 8);
    assert_eq!(
        o.machine.pcache(NodeId(1)).unwrap().state(counter()),
        LineState::Uncached
    );
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

/// A checked run fails on a message no handler takes, naming it: the lock's
/// `Granted` is for the processor, so MAGIC has no route for it.
#[test]
fn an_unrouted_message_fails_the_transfer_naming_it() {
    let l = lock::Lock {
        home: NodeId(0),
        hold: Cycles(50),
        ask: None,
    };
    let cfg = protocols::transfer::Config::default();
    let e = protocols::transfer::run_beside(&cfg, &l, |m, at| {
        let stray = m.msg(NodeId(1), lock::LockMsg::Granted);
        m.post(NodeId(1), at, stray).map_err(String::from)
    })
    .err()
    .expect("the run is not clean");
    let text = e.to_string();
    assert!(matches!(e, protocols::transfer::Failed::Stuck(_)), "{text}");
    assert!(
        text.contains("node 1: 1 message(s) of lock LockMsg::Granted had no route"),
        "{text}"
    );
}
