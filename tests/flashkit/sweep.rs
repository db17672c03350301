//! Sweeps from the library and the command: the columns a sweep's rows
//! have, the keys it can vary, its JSON Lines, and the result columns the
//! docs list.

use flashkit::scenario::Source;
use flashkit::sweep::{flatten, Axis, Plan, Row};

/// The quiet tables: their entries are columns only where a sweep varies
/// them or sets them away from their defaults.
const QUIET: [&str; 4] = ["machine.", "costs.", "network.", "coherence."];

fn plan(text: &str, axes: &[&str]) -> Plan {
    let src = Source {
        path: "s.toml",
        text,
    };
    let axes: Vec<Axis> = axes.iter().map(|a| Axis::parse(a).unwrap()).collect();
    Plan::new(&src, &axes).unwrap_or_else(|e| panic!("{e}"))
}

fn keys(row: &Row) -> Vec<&str> {
    row.iter().map(|c| c.0.as_str()).collect()
}

/// docs/sweeps.md's rule, held: `point`; every key of the experiment's
/// table, defaults included; of the quiet tables, the keys varied (even
/// where every value is the default) and those set away from their
/// defaults by the file or a point, and no other; then the result.
#[test]
fn a_sweeps_columns_are_the_experiments_keys_and_the_quiet_keys_it_moves() {
    let text = "[machine]\npi_in = 5\nnet_latency = 22\n[transfer]\nchunk = 2\n";
    let p = plan(
        text,
        &[
            "machine.net_latency=22",
            "costs.flush.dirty_line=16,30",
            "transfer.bytes=128,256",
        ],
    );
    let rows = p.run(2, |_, _| {}).unwrap();
    assert_eq!(rows.len(), 4);
    let quiet = [
        "costs.flush.dirty_line",
        "machine.net_latency",
        "machine.pi_in",
    ];
    for (i, row) in rows.iter().enumerate() {
        let point = p.point(i).unwrap();
        let mut all = Vec::new();
        flatten(
            "",
            &serde_json::to_value(&point.scenario).unwrap(),
            &mut all,
        );
        let want: Vec<&str> = std::iter::once("point")
            .chain(
                all.iter()
                    .map(|c| c.0.as_str())
                    .filter(|k| !QUIET.iter().any(|q| k.starts_with(q)) || quiet.contains(k)),
            )
            .collect();
        let params: Vec<&str> = keys(row)
            .into_iter()
            .filter(|k| !k.starts_with("result."))
            .collect();
        assert_eq!(params, want, "point {i}");
        // Every key of the experiment's table, defaults included.
        for k in [
            "transfer.sender",
            "transfer.handler",
            "transfer.receive_first",
        ] {
            assert!(params.contains(&k), "{k}");
        }
        // The values are the point's.
        let cell = |k: &str| row.iter().find(|c| c.0 == k).unwrap().1.as_str();
        assert_eq!(cell("machine.pi_in"), "5");
        assert_eq!(cell("machine.net_latency"), "22");
        assert_eq!(cell("costs.flush.dirty_line"), ["16", "30"][i / 2]);
        assert_eq!(cell("transfer.bytes"), ["128", "256"][i % 2]);
        assert!(keys(row).iter().any(|k| k.starts_with("result.")));
    }
    // A sweep that moves no quiet entry has none of them as columns.
    let rows = plan("[transfer]\n", &["transfer.chunk=1,2"])
        .run(1, |_, _| {})
        .unwrap();
    assert!(keys(&rows[0])
        .iter()
        .all(|k| !QUIET.iter().any(|q| k.starts_with(q))));
}
