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
    // A list set away from its default is a column too: one cell.
    let rows = plan(
        "[machine]\ninbox_priority = [\"processor\", \"net-reply\", \"net-request\", \"software\"]\n[miss]\n",
        &["miss.nodes=3,4"],
    )
    .run(1, |_, _| {})
    .unwrap();
    for row in &rows {
        let cell = row.iter().find(|c| c.0 == "machine.inbox_priority");
        assert_eq!(
            cell.map(|c| c.1.as_str()),
            Some("processor net-reply net-request software"),
            "{row:?}"
        );
    }
    // A sweep that moves no quiet entry has none of them as columns.
    let rows = plan("[transfer]\n", &["transfer.chunk=1,2"])
        .run(1, |_, _| {})
        .unwrap();
    assert!(keys(&rows[0])
        .iter()
        .all(|k| !QUIET.iter().any(|q| k.starts_with(q))));
}

fn flashkit(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A point that fails ends the sweep, status 1, naming it; the rows
/// before it stand as they were written, a JSON array still (closed).
#[test]
fn a_failed_point_leaves_the_rows_before_it_whole() {
    let dir = std::env::temp_dir().join(format!("flashkit-sweep-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.toml");
    std::fs::write(&f, "[transfer]\nbytes = 256\n").unwrap();
    let f = f.to_str().unwrap();
    for (format, rows) in [("json", 1), ("csv", 2), ("jsonl", 1)] {
        let (code, out, err) = flashkit(&[
            "sweep",
            f,
            "--vary",
            "machine.budget=100000000,10",
            "--format",
            format,
            "--quiet",
        ]);
        assert_eq!(code, 1, "{format}: {err}");
        assert!(
            err.starts_with("error: point 1: the transfer did not complete"),
            "{err}"
        );
        assert_eq!(out.lines().count(), rows, "{format}: {out}");
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&out).expect("a JSON array");
            assert_eq!(v.as_array().map(Vec::len), Some(1), "{out}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One part of a cost entry is a key like any other: the other parts keep
/// their values, and the figure moves with it.
#[test]
fn a_sweep_varies_one_part_of_a_cost_entry() {
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "costs.transfer.send_init.cycles=5,20",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(lines.len(), 3, "{out}");
    let col = |k: &str| lines[0].iter().position(|c| *c == k).unwrap();
    let (cycles, total) = (
        col("costs.transfer.send_init.cycles"),
        col("result.total_cycles"),
    );
    assert_eq!((lines[1][cycles], lines[2][cycles]), ("5", "20"));
    let t: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l[total].parse().unwrap())
        .collect();
    assert_eq!(
        t[1] - t[0],
        15,
        "the sender's set-up is on the transfer's path"
    );
    // The other parts of the entry keep their defaults.
    let p = plan("[transfer]\n", &["costs.transfer.send_init.cycles=20"]);
    let sc = p.point(0).unwrap().scenario;
    let default = flashkit::scenario::Scenario::default()
        .costs
        .transfer
        .send_init;
    assert_eq!(sc.costs.transfer.send_init.cycles, 20);
    assert_eq!(sc.costs.transfer.send_init.instrs, default.instrs);
    assert_eq!(sc.costs.transfer.send_init.loads, default.loads);
}

/// A bad key below a table, or below a value, is one line naming it in full.
#[test]
fn a_bad_part_of_an_entry_is_one_line_naming_the_key() {
    for (vary, names) in [
        (
            "costs.transfer.send_init.cyclez=5",
            "costs.transfer.send_init.cyclez: unknown field `cyclez`",
        ),
        (
            "costs.transfer.send_init.cycles=x",
            "costs.transfer.send_init.cycles: invalid type",
        ),
        (
            "costs.coherence.decode.cycles=5",
            "costs.coherence.decode is a value, not a table",
        ),
        (
            "costs.transfer.send_init.cycles=1",
            "with it, costs.transfer.send_init.instrs must be at most 2",
        ),
    ] {
        let (code, out, err) =
            flashkit(&["sweep", "examples/transfer.toml", "--vary", vary, "--quiet"]);
        assert_eq!(code, 2, "{vary}: {err}");
        assert!(out.is_empty(), "{vary}: {out}");
        assert_eq!(err.lines().count(), 1, "{vary}: {err}");
        assert!(err.contains(names), "{vary}: {err}");
    }
}

/// Every scalar key of a complete scenario can be varied: set to its
/// default it is accepted, and an integer set one away from its default,
/// where its range allows, is the point's value.
#[test]
fn string_keys_reach_every_field() {
    use flashkit::scenario::{Experiment, Scenario};
    let all = [
        Experiment::Transfer,
        Experiment::Miss,
        Experiment::FetchOp,
        Experiment::MessagingCosts,
        Experiment::Logp,
        Experiment::Pipeline,
        Experiment::Remap,
        Experiment::Suite,
        Experiment::Study,
        Experiment::Sharing,
    ];
    let (mut tried, mut moved) = (0, 0);
    for (n, e) in all.into_iter().enumerate() {
        let sc = Scenario::defaults(e);
        let own = toml::Value::try_from(&sc).unwrap();
        let mut leaves = Vec::new();
        flatten("", &serde_json::to_value(&sc).unwrap(), &mut leaves);
        // The quiet tables once (they are every experiment's), the
        // experiment's own table for each.
        let mine: Vec<&(String, String)> = leaves
            .iter()
            .filter(|(k, _)| n == 0 || !QUIET.iter().any(|q| k.starts_with(q)))
            .collect();
        let name = own
            .as_table()
            .unwrap()
            .keys()
            .find(|k| !QUIET.iter().any(|q| q.trim_end_matches('.') == k.as_str()))
            .unwrap()
            .clone();
        let own_text = format!("[{name}]\n");
        for (k, v) in mine {
            // A quiet key is varied where an experiment reads it (a sweep
            // refuses one its experiment does not read).
            let readers = [
                own_text.as_str(),
                "[fetch_op]\n",
                "[remap]\n",
                "[logp]\nplatform = \"cm5\"\n",
                "[logp]\nplatform = \"cm5-cmaml\"\n",
                "[logp]\nplatform = \"sp\"\n",
                "[logp]\nplatform = \"flash\"\n",
                "[suite]\nplatform = \"cm5\"\n",
                "[suite]\nplatform = \"cm5-cmaml\"\n",
                "[suite]\nplatform = \"sp\"\n",
            ];
            let found = readers.iter().find(|t| {
                let sc: Scenario = toml::from_str(t).unwrap();
                flashkit::scenario::reads(&sc, k)
            });
            // The OS's page-table edit and copy are charged only to a
            // program held up behind a second change, and the transfer's
            // walk only for a page change under a transfer: no scenario
            // holds either; CMAM polls, so takes no interrupt; the SP's
            // FIFOs are sized, not modelled. Every experiment refuses them.
            const UNREAD: [&str; 7] = [
                "costs.os.change",
                "costs.os.copy_line",
                "costs.transfer.walk",
                "costs.cmam.interrupt",
                "costs.cmam.interrupt_fast",
                "network.sp.send_fifo",
                "network.sp.recv_fifo",
            ];
            if UNREAD.contains(&k.as_str()) {
                assert!(found.is_none(), "{k}: read by {found:?}");
                continue;
            }
            let text = found
                .unwrap_or_else(|| panic!("{k}: read by no experiment"))
                .to_string();
            let value = |k: &str| -> Option<String> {
                let mut t = &own;
                for part in k.split('.') {
                    t = t.get(part)?;
                }
                Some(match t {
                    toml::Value::String(s) => s.clone(),
                    x => x.to_string(),
                })
            };
            let Some(default) = value(k) else {
                // A key the scenario serializes but TOML leaves out.
                continue;
            };
            if default.starts_with('[') {
                // A list (the inbox's order): a cell of its own, set in
                // the file, not through `--vary`'s comma-separated values.
                continue;
            }
            let p = plan(&text, &[&format!("{k}={default}")]);
            let mut got = Vec::new();
            let point = p.point(0).unwrap();
            flatten(
                "",
                &serde_json::to_value(&point.scenario).unwrap(),
                &mut got,
            );
            assert!(got.iter().any(|c| c.0 == *k && c.1 == *v), "{k}");
            tried += 1;
            if let Ok(i) = default.parse::<i64>() {
                let src = Source {
                    path: "s.toml",
                    text: &text,
                };
                let axes = [Axis::parse(&format!("{k}={}", i + 1)).unwrap()];
                if let Ok(p) = Plan::new(&src, &axes) {
                    let mut got = Vec::new();
                    let sc = p.point(0).unwrap().scenario;
                    flatten("", &serde_json::to_value(&sc).unwrap(), &mut got);
                    let want = (i + 1).to_string();
                    assert!(got.iter().any(|c| c.0 == *k && c.1 == want), "{k}");
                    moved += 1;
                }
            }
        }
    }
    assert!(tried >= 400, "{tried} keys");
    assert!(moved > 300, "{moved} of {tried} keys moved");
}

fn sweep_out(extra: &[&str]) -> String {
    let mut args = vec![
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2,8",
        "--vary",
        "transfer.sender=uncached,dirty",
        "--vary",
        "machine.net_latency=22,40",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = flashkit(&args);
    assert_eq!(code, 0, "{err}");
    out
}

/// `--format jsonl`: a line a point, each the point's complete scenario and
/// its result, read back as a `Record`; the scenario reruns to the result.
/// The library's writers write what the command does, byte for byte.
#[test]
fn json_lines_carry_each_points_complete_scenario_and_its_result() {
    use flashkit::sweep::{csv, jsonl, Record};
    let out = sweep_out(&["--format", "jsonl"]);
    let text = std::fs::read_to_string("examples/transfer.toml").unwrap();
    let p = plan(
        &text,
        &[
            "transfer.chunk=1,2,8",
            "transfer.sender=uncached,dirty",
            "machine.net_latency=22,40",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 12);
    for (i, line) in lines.iter().enumerate() {
        let raw: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(
            line.starts_with(&format!("{{\"point\":{i},\"version\":")),
            "{line}"
        );
        let keys: Vec<&str> = raw
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(keys, ["config", "point", "result", "version"]);
        let r: Record = serde_json::from_str(line).unwrap();
        assert_eq!(r.point, i);
        assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
        // The complete scenario: every parameter, defaults included.
        let want = serde_json::to_value(&p.point(i).unwrap().scenario).unwrap();
        assert_eq!(raw["config"], want, "point {i}");
        assert!(raw["config"]["costs"]["transfer"]["send_init"]["instrs"].is_u64());
        assert_eq!(raw["config"]["machine"]["net_latency"], [22, 40][i % 2]);
        // It runs again to the same result.
        let again = flashkit::scenario::run(&r.config).unwrap();
        assert_eq!(again.json, r.result, "point {i}");
        assert!(r.result["total_cycles"].is_u64());
    }
    // A line whose scenario gives a table as a list (read by position,
    // the rest defaulted) or a key as null is refused, naming it.
    let mut raw: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert!(Record::read(&raw).is_ok());
    raw["config"]["machine"] = serde_json::json!([14, 8, 23, 28, 43, 4, 32, 22]);
    let e = Record::read(&raw).unwrap_err();
    assert_eq!(e, "config.machine: a list, where a table is written");
    let mut raw: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    raw["config"]["costs"]["transfer"]["send_init"] = serde_json::Value::Null;
    let e = Record::read(&raw).unwrap_err();
    assert!(
        e.starts_with("config.costs.transfer.send_init: null"),
        "{e}"
    );
    // The library writes the command's bytes, both formats.
    let records = p.run_records(2, |_, _| {}).unwrap();
    assert_eq!(jsonl(&records).unwrap(), out);
    let rows: Vec<_> = records.iter().map(|r| p.record_row(r)).collect();
    assert_eq!(rows, p.run(1, |_, _| {}).unwrap());
    assert_eq!(csv(&rows), sweep_out(&[]));
    // Sharded and merged, JSON Lines are the unsharded sweep's.
    let dir = std::env::temp_dir().join(format!("flashkit-jsonl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut merge = vec!["merge".to_string()];
    for i in [1, 0, 2] {
        let f = dir.join(format!("part-{i}.jsonl"));
        let f = f.to_str().unwrap();
        let shard = format!("{i}/3");
        sweep_out(&["--format", "jsonl", "--shard", &shard, "--out", f]);
        let part = std::fs::read_to_string(f).unwrap();
        assert!(
            part.lines().next().unwrap().ends_with(" format=jsonl"),
            "{part}"
        );
        merge.push(f.to_string());
    }
    let merge: Vec<&str> = merge.iter().map(|s| s.as_str()).collect();
    let (code, merged, err) = flashkit(&merge);
    assert_eq!(code, 0, "{err}");
    assert_eq!(merged, out);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where docs/sweeps.md's generated list of result columns begins and ends.
const BEGIN: &str = "<!-- result columns: generated by tests/flashkit/sweep.rs; do not edit -->\n";
const END: &str = "<!-- end of result columns -->\n";

/// The result columns of every experiment, as docs/sweeps.md lists them:
/// each experiment's run, its JSON flattened as a sweep's row flattens it.
/// The pipeline and the suite run small (the shape of their results does
/// not depend on their size).
fn result_columns_section() -> String {
    use flashkit::scenario::{self, Experiment, Scenario};
    use flashkit::sweep::result_columns;
    let mut out = String::from(BEGIN);
    for &e in Experiment::ALL {
        let mut sc = Scenario::defaults(e);
        if let Some(p) = &mut sc.pipeline {
            (p.nodes, p.msgs) = (4, 10);
        }
        if let Some(x) = &mut sc.suite {
            x.benchmark = Some("one-to-one".into());
        }
        let json = serde_json::to_value(&sc).unwrap();
        let table = json
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, v)| !v.is_null() && !QUIET.iter().any(|q| q.trim_end_matches('.') == *k))
            .map(|(k, _)| k.clone())
            .unwrap();
        let r = scenario::run(&sc).unwrap_or_else(|err| panic!("[{table}]: {err}"));
        let cols = result_columns(&r.json);
        let mut line = format!("- `[{table}]`:");
        if cols.is_empty() {
            line += " none (its tables are a list, which a row leaves out).";
        }
        for (i, c) in cols.iter().enumerate() {
            let name = c.strip_prefix("result.").unwrap();
            let sep = if i + 1 < cols.len() { "," } else { "." };
            let word = format!(" `{name}`{sep}");
            if line.len() + word.len() > 80 {
                out += &line;
                out.push('\n');
                line = " ".to_string();
            }
            line += &word;
        }
        out += &line;
        out.push('\n');
    }
    out += END;
    out
}

/// docs/sweeps.md lists the result columns the kit's results make; on a
/// difference, the test prints the list to put there.
#[test]
fn the_docs_list_every_experiments_result_columns() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sweeps.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let want = result_columns_section();
    let listed = doc
        .find(BEGIN)
        .and_then(|a| Some(&doc[a..a + doc[a..].find(END)? + END.len()]));
    assert!(
        listed == Some(want.as_str()),
        "docs/sweeps.md's result columns differ from the kit's; put this there:\n{want}"
    );
}

/// A sweep built in code, its axes closures over `transfer::Config`, gives
/// the rows the string-key sweep of the same points gives, cell for cell:
/// the experiment's keys, a machine parameter and one part of a cost entry
/// among the axes, in the same order, on several threads.
#[test]
fn a_typed_sweep_gives_the_string_key_sweeps_rows() {
    use flashkit::protocols::transfer::{Config, SenderState, Version};
    use flashkit::sweep::{self, TypedSweep};
    let strings = plan(
        "[transfer]\nbytes = 1024\n",
        &[
            "transfer.sender=uncached,dirty",
            "transfer.chunk=1,8",
            "machine.net_latency=22,30",
            "costs.transfer.send_init.cycles=5,20",
        ],
    );
    let want = strings.run(2, |_, _| {}).unwrap();
    let typed = TypedSweep::new(Config {
        bytes: 1024,
        ..Config::default()
    })
    .vary(
        "transfer.sender",
        [SenderState::Uncached, SenderState::Dirty],
        |c, s| c.sender = s,
    )
    .vary("transfer.chunk", [1, 8], |c, k| {
        c.handler = Version::Chunked(k)
    })
    .vary("machine.net_latency", [22, 30], |c, l| {
        c.params.net_latency = flashkit::magic::Cycles(l)
    })
    .vary("costs.transfer.send_init.cycles", [5, 20], |c, n| {
        c.costs.send_init.cycles = n
    });
    let points = typed.run(2, |_, _| {}).unwrap();
    assert_eq!(points.len(), 16);
    for (i, p) in points.iter().enumerate() {
        assert_eq!(p.point, i);
    }
    // The typed rows hold what was set, in the string sweep's order.
    assert_eq!(points[15].config.sender, SenderState::Dirty);
    assert_eq!(points[15].config.handler, Version::Chunked(8));
    assert_eq!(points[15].config.costs.send_init.cycles, 20);
    assert_eq!(points[14].config.costs.send_init.cycles, 5);
    let got = typed.rows(&points).unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    assert_eq!(sweep::csv(&got), sweep::csv(&want));
    // As records (JSON Lines), the same too: the scenario and the result.
    let records = strings.run_records(2, |_, _| {}).unwrap();
    let typed_lines: Vec<_> = points.iter().map(|p| p.record().unwrap()).collect();
    assert_eq!(
        sweep::jsonl(&typed_lines).unwrap(),
        sweep::jsonl(&records).unwrap()
    );
    // The varied cost part is a column, and it moves the result.
    let cell = |r: &Row, k: &str| r.iter().find(|c| c.0 == k).map(|c| c.1.clone());
    assert_eq!(
        cell(&got[0], "costs.transfer.send_init.cycles").as_deref(),
        Some("5")
    );
    assert_ne!(
        cell(&got[0], "result.total_cycles"),
        cell(&got[1], "result.total_cycles")
    );
    // The same points as a list of configurations: the same rows but for
    // the quiet columns no axis names (here every one a point moves).
    let list = TypedSweep::configs(points.iter().map(|p| p.config.clone()));
    let again = list.run(1, |_, _| {}).unwrap();
    assert_eq!(list.rows(&again).unwrap(), got);
}

/// A typed row reads back from its JSON: its configuration and its result
/// equal the ones that wrote it.
#[test]
fn a_typed_row_reads_back_equal() {
    use flashkit::protocols::transfer::{Config, Version};
    use flashkit::sweep::{TypedRow, TypedSweep};
    let typed = TypedSweep::configs([Config {
        handler: Version::Chunked(2),
        ..Config::default()
    }]);
    let rows = typed.run(1, |_, _| {}).unwrap();
    let json = serde_json::to_string(&rows[0]).unwrap();
    let back: TypedRow<Config> = serde_json::from_str(&json).unwrap();
    assert_eq!(back.point, 0);
    assert_eq!(back.config, rows[0].config);
    assert_eq!(back.result, rows[0].result);
}

/// A typed sweep refuses, before it runs a point, an axis given no values
/// (not a sweep of no points), a name on two axes, and too many points.
#[test]
fn a_typed_sweep_refuses_an_empty_axis_a_twice_named_one_and_too_many_points() {
    use flashkit::protocols::transfer::{Config, Version};
    use flashkit::sweep::{SweepError, TypedSweep};
    let none: [u32; 0] = [];
    let empty = TypedSweep::new(Config::default())
        .vary("transfer.chunk", [1, 2], |c, k| {
            c.handler = Version::Chunked(k)
        })
        .vary("transfer.bytes", none, |c, b| c.bytes = u64::from(b));
    let e = empty.run(1, |_, _| panic!("no point runs")).unwrap_err();
    assert!(matches!(e, SweepError::Axis { .. }), "{e:?}");
    assert_eq!(e.to_string(), "transfer.bytes: no values");
    let listed = TypedSweep::configs([Config::default()])
        .vary("transfer.bytes", none, |c, b| c.bytes = u64::from(b));
    assert_eq!(
        listed.total().unwrap_err().to_string(),
        "transfer.bytes: no values"
    );
    // A string-key axis built by hand with no values, as one parsed.
    let src = Source {
        path: "s.toml",
        text: "[transfer]\n",
    };
    let bare = Axis {
        key: "transfer.bytes".into(),
        values: Vec::new(),
    };
    let e = Plan::new(&src, &[bare]).map(|_| ()).unwrap_err();
    assert_eq!(e.to_string(), "transfer.bytes: no values");
    // Nor one that gives a value twice.
    let again = Axis {
        key: "transfer.bytes".into(),
        values: vec![128.into(), 128.into()],
    };
    let e = Plan::new(&src, &[again]).map(|_| ()).unwrap_err();
    assert_eq!(e.to_string(), "transfer.bytes: 128 is given twice");
    // Nor a key and a key inside it, in either order: the error names both.
    let table = Axis {
        key: "costs.transfer.send_init".into(),
        values: vec![3.into()],
    };
    let inner = Axis {
        key: "costs.transfer.send_init.cycles".into(),
        values: vec![1.into(), 2.into()],
    };
    for axes in [[table.clone(), inner.clone()], [inner, table]] {
        let e = Plan::new(&src, &axes).map(|_| ()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "costs.transfer.send_init and costs.transfer.send_init.cycles, a key inside it, are both varied: vary one of them"
        );
    }
    // A list of no configurations is no sweep either.
    let none = TypedSweep::configs(Vec::<Config>::new());
    assert_eq!(none.total().unwrap_err().to_string(), "configs: no values");
    let twice = TypedSweep::new(Config::default())
        .vary("transfer.bytes", [128], |c, b| c.bytes = b)
        .vary("transfer.bytes", [256], |c, b| c.bytes = b);
    assert_eq!(
        twice.total().unwrap_err().to_string(),
        "transfer.bytes is varied twice: give its values once"
    );
    let wide: Vec<u64> = (0..1024).collect();
    let many = TypedSweep::new(Config::default())
        .vary("transfer.src_offset", wide.clone(), |c, o| c.src_offset = o)
        .vary("transfer.dst_offset", wide, |c, o| c.dst_offset = o)
        .vary("transfer.bytes", [128, 256], |c, b| c.bytes = b);
    assert!(matches!(many.total(), Err(SweepError::TooMany { .. })));
    assert_eq!(
        many.total().unwrap_err().to_string(),
        "the sweep has 1024 x 1024 x 2 = 2097152 points; a sweep has at most 1048576 (2^20)"
    );
    // Too many points are counted, not built: a list's product and an
    // axis of 2^64 values each say so at once.
    let listed = TypedSweep::configs(vec![Config::default(); 4])
        .vary("transfer.bytes", 1..=300_000u64, |c, b| c.bytes = b)
        .vary("transfer.chunk", [1, 2], |c, k| {
            c.handler = Version::Chunked(k)
        });
    assert_eq!(
        listed.total().unwrap_err().to_string(),
        "the sweep has 4 x 300000 x 2 = 2400000 points; a sweep has at most 1048576 (2^20)"
    );
    let endless =
        TypedSweep::new(Config::default())
            .vary("transfer.src_offset", 0..u64::MAX, |c, o| c.src_offset = o);
    assert!(
        matches!(endless.total(), Err(SweepError::TooMany { ref axes }) if axes == &[usize::MAX]),
        "{:?}",
        endless.total()
    );
    assert_eq!(
        endless.total().unwrap_err().to_string(),
        "the sweep has more than 1048576 points; a sweep has at most 1048576 (2^20)"
    );
    // An iterator that does not know its length is read no further than
    // the limit: one that never ends is refused, not read forever.
    let unknown = TypedSweep::new(Config::default())
        .vary("transfer.bytes", [128, 256], |c, b| c.bytes = b)
        .vary("transfer.src_offset", std::iter::repeat(0u64), |c, o| {
            c.src_offset = o
        });
    assert!(
        matches!(unknown.total(), Err(SweepError::TooMany { ref axes }) if axes == &[2, usize::MAX]),
        "{:?}",
        unknown.total()
    );
    let listed_forever = TypedSweep::configs(std::iter::repeat(Config::default()));
    assert!(matches!(
        listed_forever.total(),
        Err(SweepError::TooMany { ref axes }) if axes == &[usize::MAX]
    ));
    // One that ends within the limit is counted exactly.
    let filtered = TypedSweep::new(Config::default()).vary(
        "transfer.bytes",
        (1..=8u64).filter(|b| b % 2 == 0),
        |c, b| c.bytes = b * 128,
    );
    assert_eq!(filtered.total().unwrap(), 4);
    assert!(matches!(
        TypedSweep::configs([Config::default()]).point(1),
        Err(SweepError::NoPoint { index: 1, total: 1 })
    ));
}

/// A typed configuration that sets what no scenario holds (a planted bug,
/// homing by interleaving) keeps it in its typed row, but its columns and
/// its record are refused naming the point and the field, not written
/// without it.
#[test]
fn a_typed_row_a_scenario_cannot_hold_has_no_columns() {
    use flashkit::protocols::transfer::{state::Bug, Config};
    use flashkit::sweep::{SweepError, TypedSweep};
    let typed = TypedSweep::configs([Config::default()]);
    let rows = typed.run(1, |_, _| {}).unwrap();
    assert!(typed.rows(&rows).is_ok());
    let mut bugged = rows.clone();
    bugged[0].config.inject = Some(Bug::EarlyDone);
    let e = typed.rows(&bugged).unwrap_err();
    assert!(matches!(e, SweepError::Unheld { index: 0, .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "point 0: inject is set, and a scenario cannot hold it: keep the typed rows"
    );
    let mut interleaved = rows;
    interleaved[0].config.coherence.placement =
        flashkit::coherence::protocol::Placement::Interleaved;
    let e = interleaved[0].record().unwrap_err();
    assert!(e.to_string().contains("coherence.placement is set"), "{e}");
}

/// `--vary` reads a value as TOML would, hexadecimal, octal and binary
/// integers too, and refuses a value given twice (the same point twice),
/// however it is written.
#[test]
fn an_axis_reads_integers_as_toml_does_and_refuses_a_value_twice() {
    use flashkit::sweep::Axis;
    let a = Axis::parse("transfer.bytes=0x1000,0o4000,0b1000000000,256").unwrap();
    let as_toml = [4096, 2048, 512, 256].map(toml::Value::Integer);
    assert_eq!(a.values, as_toml);
    // TOML takes no sign after the prefix: a word, which the key refuses.
    let signed = Axis::parse("transfer.bytes=0x-5,0x+5").unwrap();
    assert!(signed.values.iter().all(toml::Value::is_str), "{signed:?}");
    for (axis, twice) in [
        ("transfer.chunk=1,2,1", "1"),
        ("transfer.bytes=4096,0x1000", "0x1000"),
        ("transfer.handler=base,base", "base"),
    ] {
        let e = Axis::parse(axis).unwrap_err();
        assert_eq!(e.to_string(), format!("{axis}: {twice} is given twice"));
    }
    // An integer no TOML integer holds is refused, never read as a float;
    // a key's parts are bare names.
    for (axis, why) in [
        (
            "transfer.chunk=18446744073709551616",
            "18446744073709551616 is beyond a 64-bit integer",
        ),
        (
            "transfer.chunk=-9223372036854775809",
            "is beyond a 64-bit integer",
        ),
        (
            "transfer.chunk=0x8000000000000000",
            "is beyond a 64-bit integer",
        ),
        (
            "transfer.chunk=0o7777777777777777777777",
            "is beyond a 64-bit integer",
        ),
        ("transfer.\"chunk\"=1", "a key's parts are bare names"),
        ("transfer..chunk=1", "a key's parts are bare names"),
    ] {
        let e = Axis::parse(axis).unwrap_err().to_string();
        assert!(e.starts_with(axis) && e.contains(why), "{e}");
    }
}

/// A point's value out of range is the command line's: the error names
/// the point and `--vary`, not the line of the file the value replaced.
#[test]
fn a_varied_value_out_of_range_is_named_as_the_command_lines() {
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,17",
        "--quiet",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(
        err,
        "error: point 1 (transfer.chunk=17): --vary: transfer.chunk: must be from 1 to the data-buffer pool, 16, got 17\n"
    );
}

/// A key the file leaves at its default, out of range only beside a value
/// the sweep set (a task's instructions against its cycles varied down),
/// is that value's: the error names the `--vary`, then the key it breaks.
#[test]
fn a_default_a_varied_value_breaks_is_named_as_the_varied_values() {
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "costs.transfer.send_init.cycles=1,2",
        "--quiet",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(
        err,
        "error: point 0 (costs.transfer.send_init.cycles=1): --vary: costs.transfer.send_init.cycles: \
         with it, costs.transfer.send_init.instrs must be at most 2 (issue width 2 x 1 cycles), got 10\n"
    );
}

/// A key the experiment does not read would give rows that do not differ:
/// the sweep refuses it before it runs anything, point by point (a key one
/// platform reads and another does not is refused at the first point that
/// does not), naming the key as `--vary`'s.
#[test]
fn a_sweep_refuses_a_key_its_experiment_does_not_read() {
    for (file, axes, point) in [
        (
            "examples/logp.toml",
            &["machine.net_latency=22,1000"][..],
            "point 0 (machine.net_latency=22)",
        ),
        (
            "examples/remap.toml",
            &["costs.coherence.decode=0,1000"],
            "point 0 (costs.coherence.decode=0)",
        ),
        (
            "examples/transfer.toml",
            &["network.sp.seed=1,2"],
            "point 0 (network.sp.seed=1)",
        ),
        (
            "examples/logp.toml",
            &["logp.platform=cm5,flash", "network.cm5.seed=1,2"],
            "point 2 (logp.platform=\"flash\", network.cm5.seed=1)",
        ),
    ] {
        let mut args = vec!["sweep", file, "--quiet"];
        for a in axes {
            args.extend(["--vary", a]);
        }
        let (code, out, err) = flashkit(&args);
        let key = axes.last().unwrap().split('=').next().unwrap();
        let table = file
            .trim_start_matches("examples/")
            .trim_end_matches(".toml");
        let table = if table == "remap" || table == "transfer" {
            table
        } else {
            "logp"
        };
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert_eq!(
            err,
            format!("error: {point}: --vary: {key}: [{table}] does not read it here, so its rows would not differ: vary what the experiment reads\n"),
            "{args:?}"
        );
    }
    // What the platform reads, it varies.
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/logp.toml",
        "--vary",
        "network.cm5.seed=1,2",
        "--vary",
        "logp.nodes=4",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
}
