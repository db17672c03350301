//! The command line: JSON output and bad input (one line, exit status 2).

use crate::common;

use std::process::Command;

/// Run the command line: its exit status, standard output and error.
pub(crate) fn flashkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn pipeline_prints_the_results_as_json() {
    let (code, out, err) = flashkit(&[
        "pipeline",
        "--nodes",
        "4",
        "--msgs",
        "3",
        "--pattern",
        "rand",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["completion"], 4140);
    assert_eq!(v["sum_completion"], 32570);
    assert_eq!(v["sum_latency"], 17364);
    assert_eq!(v["events"], 4 * 3 * 129);
    // The run's configuration and the kit's version, the peers' figures,
    // how the run ended and its ledger; no wall-clock time unless asked.
    let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "completion",
            "config",
            "end_cycles",
            "events",
            "halted",
            "limit_reached",
            "occupancy",
            "occupancy_booked_cycles",
            "occupancy_cycles",
            "refused",
            "stuck",
            "sum_completion",
            "sum_latency",
            "units",
            "version",
        ]
    );
    assert_eq!(
        v["config"],
        serde_json::json!({"nodes": 4, "msgs": 3, "pattern": "rand",
            "costs": {"setup": 20, "send": 12, "recv": 10, "done": 16},
            "budget": 100_000_000_000u64})
    );
}

#[test]
fn pipeline_table_shows_the_ledger() {
    let (code, out, _) = flashkit(&["pipeline", "--nodes", "2", "--msgs", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("completion      1360 cycles"), "{out}");
    assert!(out.contains("handler occupancy"), "{out}");
    assert!(out.contains("net-out"), "{out}");
}

#[test]
fn bad_input_gets_one_line_and_status_2() {
    for args in [
        &["pipeline", "--nodes", "1"][..],
        &["pipeline", "--msgs", "0"],
        &["pipeline", "--pattern", "star"],
        &["pipeline", "--bogus"],
        &["pipeline", "--nodes", "-3"],
        &["pipeline", "--nodes", "4097"],
        &["pipeline", "--nodes", "256", "--msgs", "4000000000"],
        &["frobnicate"],
        &[],
    ] {
        let (code, out, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        if !args.is_empty() {
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with("error: "), "{args:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn version_and_help_succeed() {
    let (code, out, _) = flashkit(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("flashkit "));
    let (code, out, _) = flashkit(&["pipeline", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Example: flashkit pipeline"), "{out}");
}

#[test]
fn miss_prints_latency_and_occupancy_as_json() {
    let (code, out, err) = flashkit(&["miss", "--case", "remote-clean", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["case"], "remote-clean");
    let l = v["latency_cycles"].as_u64().unwrap();
    assert!((100..=122).contains(&l), "{l}");
    let rows = v["occupancy"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["handler"] == "coherence.home_request" && r["node"] == 1));
}

#[test]
fn miss_bad_input_gets_one_line_and_status_2() {
    for args in [
        &["miss", "--case", "remote-warm"][..],
        &["miss"],
        &["miss", "--case", "remote-dirty", "--owner", "9"],
        &["miss", "--case", "remote-dirty", "--owner", "1"],
        &["miss", "--case", "local-clean", "--nodes", "2"],
        &["miss", "--case", "local-clean", "--offset", "0x7fffffffff"],
        &["miss", "--case", "local-clean", "--offset", "lots"],
    ] {
        let (code, out, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}

#[test]
fn fetch_op_and_remap_print_json() {
    let (code, out, err) = flashkit(&["fetch-op", "--remote-node", "1", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v["startup_cycles"].as_u64().unwrap() < 284);
    assert!(v["latency_cycles"].as_u64().unwrap() > v["startup_cycles"].as_u64().unwrap());
    assert!(v["occupancy"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["handler"] == "user.fetch_op"));
    for t in ["holdoff", "invalidate", "tlb"] {
        let (code, out, err) = flashkit(&["remap", "--technique", t, "--format", "json"]);
        assert_eq!(code, 0, "{t}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["technique"], t);
        assert_eq!(v["data_ok"], true);
        for k in [
            "os_wait_cycles",
            "processor_interrupts",
            "stale_uses_detected",
            "tlb_hits",
            "tlb_misses",
            "total_cycles",
            "occupancy_cycles",
        ] {
            assert!(v[k].is_u64(), "{t}: {k} in {v}");
        }
        // Where the cycles went, as data: the MAGIC handlers' rows.
        assert!(v["occupancy"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["handler"]
                .as_str()
                .is_some_and(|h| h.starts_with("user."))));
    }
    for args in [
        &["remap", "--technique", "magic"][..],
        &["remap"],
        &["fetch-op", "--remote-node", "x"],
        &["fetch-op", "--remote-node", "4096"],
    ] {
        let (code, _, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

/// `flashkit transfer --format json`: one object, its start-up parts add up.
fn transfer_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["transfer"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let (code, out, err) = flashkit(&all);
    assert_eq!(code, 0, "{all:?}: {err}");
    assert!(err.is_empty(), "{all:?}: {err}");
    assert_eq!(out.trim_end().lines().count(), 1, "{all:?}: {out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v.is_object(), "{all:?}: {v}");
    assert_eq!(v["data_ok"], true, "{all:?}: {v}");
    let s = &v["startup"];
    let parts: u64 = [
        "initiation",
        "setup_verification",
        "initial_line",
        "network_queueing",
        "receiver_cleanup",
    ]
    .iter()
    .map(|k| {
        s[k].as_u64()
            .unwrap_or_else(|| panic!("{all:?}: startup.{k} in {v}"))
    })
    .sum();
    assert_eq!(s["total"].as_u64(), Some(parts), "{all:?}: {v}");
    v
}

/// Many receives or sends are served, not lost: a receive whose cleanup
/// finds the software queue full waits for the next cleanup, and a send
/// MAGIC has no record for yet is issued again ("try again later").
#[test]
fn many_receives_and_sends_are_served() {
    let many = transfer_json(&["--receives", "4096", "--sends", "4096"]);
    assert_eq!(many["bytes"], 4096);
    transfer_json(&["--sends", "1000"]);
}

#[test]
fn transfer_prints_the_breakdown_as_json() {
    let v = transfer_json(&[]);
    for k in [
        "total_cycles",
        "total_us",
        "bandwidth_mb_s",
        "startup",
        "per_line_cycles",
        "sender_occupancy_per_line",
        "receiver_occupancy_per_line",
        "sender_handler_per_line",
        "receiver_handler_per_line",
        "network_cycles_per_line",
        "limited_by",
        "held_back",
        "data_ok",
        "occupancy",
    ] {
        assert!(v.get(k).is_some(), "{k} in {v}");
    }
    assert!(v["total_cycles"].as_u64().unwrap() > v["startup"]["total"].as_u64().unwrap());
    for k in [
        "total_us",
        "bandwidth_mb_s",
        "per_line_cycles",
        "sender_occupancy_per_line",
        "receiver_occupancy_per_line",
        "sender_handler_per_line",
        "receiver_handler_per_line",
        "network_cycles_per_line",
    ] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k} in {v}");
    }
    let rows = v["occupancy"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["handler"] == "transfer.send_step" && r["node"] == 0));
    assert!(rows
        .iter()
        .any(|r| r["handler"] == "transfer.component" && r["node"] == 1));
    assert_eq!(v["limited_by"], "network", "{v}");
    let v = transfer_json(&["--sender", "dirty", "--handler", "base"]);
    assert_eq!(v["limited_by"], "sender", "{v}");
}

#[test]
fn transfer_accepts_every_flag() {
    let v = transfer_json(&[
        "--bytes",
        "1000",
        "--sender",
        "dirty-remote",
        "--coherence",
        "global",
        "--receiver",
        "dirty",
        "--handler",
        "chunked",
        "--chunk",
        "8",
        "--src-offset",
        "8",
        "--dst-offset",
        "3",
        "--strategy",
        "collect",
        "--direction",
        "bi",
        "--receives",
        "2",
        "--sends",
        "3",
        "--receive-late",
    ]);
    assert_eq!(v["bytes"], 1000, "{v}");
    let v = transfer_json(&[
        "--bytes",
        "777",
        "--sender",
        "clean",
        "--receiver",
        "clean",
        "--handler",
        "optimized",
        "--coherence",
        "local",
        "--strategy",
        "pipelined",
        "--direction",
        "uni",
        "--receives",
        "1",
        "--sends",
        "1",
    ]);
    assert_eq!(v["bytes"], 777, "{v}");
    transfer_json(&[
        "--sender",
        "uncached",
        "--receiver",
        "uncached",
        "--handler",
        "chunked",
        "--chunk",
        "16",
        "--src-offset",
        "4095",
        "--dst-offset",
        "4088",
        "--bytes",
        "5000",
    ]);
    let (code, out, err) = flashkit(&[
        "transfer",
        "--sender",
        "dirty",
        "--handler",
        "base",
        "--bytes",
        "300",
        "--format",
        "table",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("data intact"), "{out}");
}

#[test]
fn transfer_table_shows_startup_limit_and_occupancy() {
    let (code, out, err) = flashkit(&["transfer"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    for s in ["start-up", "initiation", "limited by", "transfer.send_step"] {
        assert!(out.contains(s), "{s} in {out}");
    }
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().any(|w| w == "transfer.send_step")),
        "{out}"
    );
}

#[test]
fn transfer_bad_input_gets_one_line_and_status_2() {
    for args in [
        &["transfer", "--bytes", "0"][..],
        &["transfer", "--chunk", "0"],
        &["transfer", "--chunk", "17"],
        &["transfer", "--src-offset", "4096"],
        &["transfer", "--sender", "dirty-remote"],
        &["transfer", "--handler", "nonsense"],
        &["transfer", "--bytes", "2000000"],
        &["transfer", "--receives", "0"],
        &["transfer", "--receives", "4097"],
        &["transfer", "--sends", "4097", "--bytes", "8192"],
        &["transfer", "--receives", "5", "--bytes", "3"],
    ] {
        let (code, out, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn logp_and_suite_run_on_the_cm5() {
    let (code, out, err) = flashkit(&["logp", "--platform", "cm5", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for k in [
        "platform",
        "send_overhead_us",
        "reply_overhead_us",
        "recv_overhead_us",
        "poll_empty_us",
        "round_trip_us",
        "ring_us",
    ] {
        assert!(v.get(k).is_some(), "{k} missing in {out}");
    }
    let (code, out, _) = flashkit(&[
        "suite",
        "--platform",
        "cm5-cmaml",
        "--benchmark",
        "round-trip",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("== round-trip") && out.contains("63"), "{out}");
    for bad in [
        vec!["suite", "--platform", "cm5", "--benchmark", "nonsense"],
        vec!["suite", "--platform", "cm5", "--benchmark", "interrupt"],
        vec!["logp", "--platform", "cm5", "--nodes", "2"],
        vec!["logp", "--platform", "vax"],
    ] {
        let (code, out, err) = flashkit(&bad);
        assert_eq!(code, 2, "{bad:?}");
        assert!(out.is_empty(), "{bad:?}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
}

#[test]
fn suite_json_cells_are_numbers_and_every_table_names_its_units() {
    let (code, out, err) = flashkit(&[
        "suite",
        "--platform",
        "cm5",
        "--nodes",
        "8",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    // The tables, beside the run that made them and the kit's version.
    assert_eq!(v["config"]["platform"]["platform"], "cm5");
    assert_eq!(v["config"]["platform"]["nodes"], 8);
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let tables = v["tables"].as_array().unwrap();
    assert!(tables.len() >= 12, "{out}");
    for t in tables {
        let cols = t["columns"].as_array().unwrap();
        let units = t["units"].as_array().unwrap();
        assert_eq!(cols.len(), units.len(), "{t}");
        assert!(units.iter().any(|u| u.is_string()), "no unit in {t}");
        for row in t["rows"].as_array().unwrap() {
            for (cell, unit) in row.as_array().unwrap().iter().zip(units) {
                // A column with a unit holds numbers (or null where the
                // platform lacks the operation); a label column strings.
                if unit.is_string() {
                    assert!(cell.is_number() || cell.is_null(), "{cell} in {t}");
                } else {
                    assert!(cell.is_string(), "{cell} in {t}");
                }
            }
        }
    }
    let one_to_two = &tables[1];
    assert_eq!(one_to_two["rows"][0][0], "request");
    assert!(one_to_two["rows"][0][1].as_f64().unwrap() > 1.0);
    // A figure is exact, what the counts beside it give.
    let counts = &one_to_two["counts"][0][1];
    let ticks = counts["ticks"].as_u64().unwrap() as f64;
    let repeats = counts["repeats"].as_u64().unwrap() as f64;
    assert_eq!(repeats, 1024.0);
    assert_eq!(
        one_to_two["rows"][0][1].as_f64(),
        Some(ticks / magic::time::TICKS_PER_US as f64 / repeats)
    );
    assert_eq!(one_to_two["counts"][0][0], serde_json::Value::Null);
    // CSV writes the same numbers as text, exact as the JSON's.
    let (code, out, _) = flashkit(&[
        "suite",
        "--platform",
        "cm5",
        "--nodes",
        "8",
        "--benchmark",
        "one-to-two",
        "--format",
        "csv",
    ]);
    assert_eq!(code, 0);
    let request = format!("request,{}", one_to_two["rows"][0][1]);
    assert!(out.lines().any(|l| l == request), "{out}");
    // A label with a comma is one cell, quoted: the fit's rows keep the
    // JSON's four columns.
    let (code, out, err) = flashkit(&[
        "suite",
        "--platform",
        "cm5",
        "--benchmark",
        "array-transfer",
        "--format",
        "csv",
    ]);
    assert_eq!(code, 0, "{err}");
    let fit: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("# array-transfer fit"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        fit[0], "\"transfer, alignment\",start-up us,MB/s,n1/2 bytes",
        "{out}"
    );
    assert_eq!(fit.len(), 7, "{out}");
    for row in &fit[1..] {
        let rest = row.strip_prefix('"').and_then(|r| r.split_once("\","));
        let (label, cells) = rest.unwrap_or_else(|| panic!("{row}"));
        assert!(label.contains(", "), "{row}");
        assert_eq!(cells.split(',').count(), 3, "{row}");
    }
}

#[test]
fn costs_prints_features_and_totals_as_json() {
    let (code, out, err) = flashkit(&[
        "costs",
        "--protocol",
        "indefinite",
        "--words",
        "1024",
        "--packet-words",
        "16",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let f = &v["features"];
    for k in ["base", "buffer_management", "in_order", "fault_tolerance"] {
        assert!(
            f[k]["source"].is_u64() && f[k]["destination"].is_u64(),
            "{k}"
        );
    }
    let t = &v["total"];
    assert_eq!(
        t["total"].as_u64(),
        Some(t["source"].as_u64().unwrap() + t["destination"].as_u64().unwrap())
    );
    let (code, out, _) = flashkit(&[
        "costs",
        "--protocol",
        "finite",
        "--words",
        "64",
        "--network",
        "ordered",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("in-order delivery"), "{out}");
    for bad in [
        vec!["costs", "--protocol", "single", "--words", "8"],
        vec!["costs", "--protocol", "indefinite", "--packet-words", "3"],
        vec!["costs", "--protocol", "finite", "--words", "0"],
    ] {
        let (code, out, err) = flashkit(&bad);
        assert_eq!(code, 2, "{bad:?}");
        assert!(out.is_empty());
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A fresh folder under the system's temporary one.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("flashkit-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn logp_exports_write_the_tools_files() {
    let d = scratch("lgs");
    let dir = d.to_str().unwrap();
    let args = export("sp", "8", "loggopsim", dir);
    let (code, out, err) = flashkit(&args);
    assert_eq!(code, 0, "{err}");
    let names = [
        "flags",
        "unit_seconds",
        "pingpong.goal",
        "ring.goal",
        "bulk.goal",
    ];
    let listed: Vec<String> = names
        .iter()
        .map(|n| d.join(n).display().to_string())
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), listed);
    // LogGOPSim's flags are integers, in the unit written beside them.
    let flags = std::fs::read_to_string(d.join("flags")).unwrap();
    let f: Vec<&str> = flags.split_whitespace().collect();
    assert_eq!(f.len(), 12, "{flags}");
    for (i, k) in ["-L", "-o", "-g", "-G", "-O", "-S"].iter().enumerate() {
        assert_eq!(f[2 * i], *k);
        assert!(f[2 * i + 1].parse::<i32>().is_ok(), "{flags}");
    }
    assert!(f[1].parse::<i32>().unwrap() > 0 && f[7].parse::<i32>().unwrap() > 0);
    let unit = std::fs::read_to_string(d.join("unit_seconds")).unwrap();
    assert_eq!(unit, "1e-12\n");
    let ring = std::fs::read_to_string(d.join("ring.goal")).unwrap();
    assert!(
        ring.contains("num_ranks 8") && ring.contains("rank 7 {"),
        "{ring}"
    );
    // The same export twice: the same bytes.
    let first: Vec<String> = names
        .iter()
        .map(|n| std::fs::read_to_string(d.join(n)).unwrap())
        .collect();
    assert_eq!(flashkit(&args).0, 0);
    for (n, a) in names.iter().zip(&first) {
        assert_eq!(&std::fs::read_to_string(d.join(n)).unwrap(), a, "{n}");
    }
    // The list of files written follows --format.
    let mut json = args.to_vec();
    json.extend(["--format", "json"]);
    let (code, out, err) = flashkit(&json);
    assert_eq!(code, 0, "{err}");
    let v: Vec<String> = serde_json::from_str(&out).unwrap();
    assert_eq!(v, listed);
    // Too few nodes for the measurement: its range, as plain logp says it.
    for n in ["0", "2"] {
        let (code, _, err) = flashkit(&[
            "logp",
            "--platform",
            "flash",
            "--nodes",
            n,
            "--export",
            "simgrid",
            "--out",
            dir,
        ]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            err,
            format!("error: --nodes must be from 3 to 4096, got {n}\n")
        );
    }

    let d = scratch("sg");
    let (code, out, err) = flashkit(&export("cm5", "16", "simgrid", d.to_str().unwrap()));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    let xml = std::fs::read_to_string(d.join("platform.xml")).unwrap();
    for k in [
        "<prop id=\"network/model\" value=\"CM02\"/>",
        "topology=\"FAT_TREE\"",
        "radical=\"0-15\"",
    ] {
        assert!(xml.contains(k), "{k} in {xml}");
    }
    let py = std::fs::read_to_string(d.join("pingpong.py")).unwrap();
    assert!(
        py.contains("round_trip_us") && py.contains("SEND_OVERHEAD_S = "),
        "{py}"
    );
    let cfg = std::fs::read_to_string(d.join("smpi.cfg")).unwrap();
    for k in ["smpi/os:0:", "smpi/or:0:", "smpi/ois:0:"] {
        assert!(cfg.contains(k), "{k} in {cfg}");
    }
    let (code, out, _) = flashkit(&export("flash", "8", "simgrid", d.to_str().unwrap()));
    assert_eq!(code, 0, "{out}");
    let xml = std::fs::read_to_string(d.join("platform.xml")).unwrap();
    assert!(
        !xml.contains("FAT_TREE") && xml.contains("radical=\"0-7\""),
        "{xml}"
    );
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(scratch("lgs"));
    // The figures the exports are made from, as JSON.
    let (code, out, _) = flashkit(&[
        "logp",
        "--platform",
        "cm5",
        "--nodes",
        "8",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for k in ["startup_us", "bandwidth_mb_s", "n_half_bytes"] {
        assert!(v["bulk"][k].is_f64(), "{k}");
    }
}

#[test]
fn logp_export_needs_a_folder_it_can_write() {
    // Missing or stray --out: bad input, one line, status 2.
    for bad in [
        vec!["logp", "--platform", "cm5", "--export", "simgrid"],
        vec!["logp", "--platform", "cm5", "--out", "x"],
        vec!["logp", "--platform", "cm5", "--export", "ns3", "--out", "x"],
    ] {
        let (code, out, err) = flashkit(&bad);
        assert_eq!(code, 2, "{bad:?}");
        assert!(out.is_empty(), "{bad:?}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
    // A folder that cannot be made (a file is in the way): bad input, one
    // line naming it, status 2, before the measurement.
    let f = scratch("file");
    std::fs::write(&f, "not a folder").unwrap();
    let dir = f.join("out");
    let (code, out, err) = flashkit(&export("cm5", "8", "loggopsim", dir.to_str().unwrap()));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(dir.to_str().unwrap()), "{err}");
    assert!(err.contains("is a file, not a folder"), "{err}");
    let _ = std::fs::remove_file(&f);
}

#[test]
fn csv_is_a_header_and_a_row() {
    for args in [
        vec!["transfer", "--format", "csv"],
        vec![
            "costs",
            "--protocol",
            "finite",
            "--words",
            "64",
            "--format",
            "csv",
        ],
        vec!["remap", "--technique", "holdoff", "--format", "csv"],
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {out}");
        assert_eq!(
            lines[0].split(',').count(),
            lines[1].split(',').count(),
            "{args:?}"
        );
    }
    let (_, out, _) = flashkit(&["transfer", "--format", "csv"]);
    let lines: Vec<&str> = out.lines().collect();
    let cell = |key: &str| {
        let at = lines[0].split(',').position(|c| c == key);
        at.and_then(|i| lines[1].split(',').nth(i))
    };
    assert!(cell("total_cycles").is_some(), "{out}");
    // A list of the configuration (the inbox's order) is one cell, its
    // values a space apart, as a sweep's column has it.
    assert_eq!(
        cell("config.params.inbox_priority"),
        Some("net-reply net-request processor software"),
        "{out}"
    );
}

/// A suite's CSV is its tables, one block a benchmark, whether the suite
/// runs from its command, from a scenario file or from its saved JSON.
#[test]
fn a_suites_csv_is_its_tables_by_every_entry() {
    let args = [
        "suite",
        "--platform",
        "cm5",
        "--benchmark",
        "round-trip",
        "--nodes",
        "4",
    ];
    let (code, csv, err) = flashkit(&[&args[..], &["--format", "csv"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(csv.starts_with("# round-trip\nto node,us\n1,"), "{csv}");
    let (_, json, _) = flashkit(&[&args[..], &["--format", "json"]].concat());
    let dir = scratch("suite-csv");
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("suite.json");
    std::fs::write(&saved, json).unwrap();
    let toml = dir.join("suite.toml");
    let scenario = "[suite]\nplatform = \"cm5\"\nbenchmark = \"round-trip\"\nnodes = 4\n";
    std::fs::write(&toml, scenario).unwrap();
    for file in [&saved, &toml] {
        let (code, again, err) = flashkit(&["run", file.to_str().unwrap(), "--format", "csv"]);
        assert_eq!((code, again.as_str()), (0, csv.as_str()), "{file:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An output file that is a folder, or in a folder that does not exist,
/// is bad input said before the run (status 2, the flag named), not a
/// failed write after it.
#[test]
fn an_output_that_cannot_be_a_file_is_refused_up_front() {
    let dir = scratch("out-folder");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let missing = dir.join("no-such-folder").join("t.json");
    let missing = missing.to_str().unwrap();
    // A path that ends in a slash names a folder whether or not one is
    // there, and a path through a file cannot be written at all.
    let file = dir.join("a-file.svg");
    std::fs::write(&file, "x").unwrap();
    let slashed = format!("{}/", file.display());
    let new_slashed = format!("{}/", dir.join("new.csv").display());
    let through = format!("{}/sub", file.display());
    // A link that leads nowhere: into a folder that does not exist (a
    // file's place), or standing where an export's folder would be made;
    // and a folder where an export's file goes.
    let lost = dir.join("lost.svg");
    std::os::unix::fs::symlink(dir.join("gone").join("x.svg"), &lost).unwrap();
    let lost = lost.to_str().unwrap();
    let nowhere = dir.join("nowhere");
    std::os::unix::fs::symlink("no-such-target", &nowhere).unwrap();
    let nowhere = nowhere.to_str().unwrap();
    let taken = dir.join("taken");
    std::fs::create_dir_all(taken.join("ring.goal")).unwrap();
    let taken = taken.to_str().unwrap();
    let lost_args = ["plot", "chunk", "--out", lost];
    let nowhere_args = export("cm5", "16", "loggopsim", nowhere);
    let taken_args = export("cm5", "16", "loggopsim", taken);
    let cases: [(&[&str], &str); 15] = [
        (&lost_args, "--out"),
        (&nowhere_args, "--out"),
        (&taken_args, "--out"),
        (&["transfer", "--trace", d], "--trace"),
        (&["transfer", "--trace", missing], "--trace"),
        (&["run", "examples/transfer.toml", "--trace", d], "--trace"),
        (&["plot", "logp", "--out", d], "--out"),
        (
            &["study", "coherence", "--bytes", "128", "--plot", missing],
            "--plot",
        ),
        (&["merge", "examples/transfer.toml", "-o", d], "-o"),
        (&["plot", "chunk", "--out", &slashed], "--out"),
        (&["transfer", "--trace", &new_slashed], "--trace"),
        (
            &["merge", "examples/transfer.toml", "-o", &new_slashed],
            "-o",
        ),
        (
            &["plot", "chunk", "--out", &format!("{through}.svg")],
            "--out",
        ),
        (
            &[
                "logp",
                "--platform",
                "cm5",
                "--export",
                "simgrid",
                "--out",
                &through,
            ],
            "--out",
        ),
        (
            &[
                "study",
                "coherence",
                "--bytes",
                "128",
                "--plot",
                &format!("{d}/new.svg/"),
            ],
            "--plot",
        ),
    ];
    for (args, flag) in cases {
        let (code, out, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.starts_with(&format!("error: {flag} ")),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    assert!(!dir.join("new.csv").exists());
    // Nothing of the export was written beside the folder in its way.
    let left: Vec<_> = std::fs::read_dir(dir.join("taken")).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `flashkit logp` of `platform` on `nodes`, exported `to` a tool's files
/// in `out`.
fn export<'a>(platform: &'a str, nodes: &'a str, to: &'a str, out: &'a str) -> [&'a str; 9] {
    [
        "logp",
        "--platform",
        platform,
        "--nodes",
        nodes,
        "--export",
        to,
        "--out",
        out,
    ]
}

/// Run flashkit with standard output on /dev/full.
fn to_dev_full(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(full)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The subcommands `flashkit --help` lists.
fn subcommands() -> Vec<String> {
    let (code, out, _) = flashkit(&["--help"]);
    assert_eq!(code, 0);
    out.split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn output_that_cannot_be_written_exits_1_naming_it() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let dir = std::env::temp_dir().join(format!("flashkit-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let part = dir.join("part.csv");
    let part = part.to_str().unwrap();
    let (code, _, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2",
        "--out",
        part,
    ]);
    assert_eq!(code, 0, "{err}");
    // Standard output of every subcommand (plot writes only its --out).
    let listed = dir.join("listed");
    let stdout_cases: Vec<Vec<&str>> = vec![
        vec!["run", "examples/transfer.toml"],
        vec![
            "logp",
            "--platform",
            "cm5",
            "--nodes",
            "8",
            "--export",
            "simgrid",
            "--out",
            listed.to_str().unwrap(),
        ],
        vec![
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1,2",
        ],
        vec!["merge", part],
        vec!["costs", "--protocol", "single"],
        vec!["logp", "--platform", "cm5"],
        vec!["suite", "--platform", "cm5", "--benchmark", "round-trip"],
        vec!["transfer", "--format", "json"],
        vec!["miss", "--case", "remote-clean"],
        vec!["fetch-op"],
        vec!["remap", "--technique", "tlb"],
        vec!["pipeline", "--nodes", "2", "--msgs", "1"],
        vec!["study", "coherence", "--bytes", "128", "--quiet"],
        vec!["check", "transfer", "--lines", "1", "--receives", "1"],
        vec!["transfer", "--help"],
        vec!["--version"],
    ];
    let mut covered: Vec<&str> = stdout_cases.iter().map(|c| c[0]).collect();
    covered.push("plot");
    let all = subcommands();
    assert!(all.len() >= 12, "{all:?}");
    for c in all {
        assert!(covered.contains(&c.as_str()), "{c} is not tested here");
    }
    for args in &stdout_cases {
        let (code, err) = to_dev_full(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err, "error: cannot write standard output: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
    // A check that finds a violation says it, and that its report and
    // trace were lost.
    for format in ["table", "json", "csv"] {
        let args = [
            "check",
            "coherence",
            "--nodes",
            "2",
            "--inject",
            "skip-invalidation",
            "--format",
            format,
        ];
        let (code, err) = to_dev_full(&args);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(code, 1, "{format}: {err}");
        assert_eq!(lines.len(), 2, "{format}: {err}");
        assert!(
            lines[0].starts_with("error: check coherence: "),
            "{format}: {err}"
        );
        assert_eq!(
            lines[1], "error: cannot write standard output: No space left on device (os error 28)",
            "{format}"
        );
    }
    // Every file a flag names; plots pick their format by the extension.
    let svg = dir.join("full.svg");
    std::os::unix::fs::symlink("/dev/full", &svg).unwrap();
    let mut file_cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["transfer", "--trace", "/dev/full"], "/dev/full"),
        (
            vec!["run", "examples/miss.toml", "--trace", "/dev/full"],
            "/dev/full",
        ),
        (
            vec![
                "sweep",
                "examples/transfer.toml",
                "--vary",
                "transfer.chunk=1,2",
                "--out",
                "/dev/full",
            ],
            "/dev/full",
        ),
        (vec!["merge", part, "-o", "/dev/full"], "/dev/full"),
    ];
    // An export's folder holding a file that is /dev/full.
    let export = dir.join("export");
    std::fs::create_dir_all(&export).unwrap();
    let flags = export.join("flags");
    std::os::unix::fs::symlink("/dev/full", &flags).unwrap();
    file_cases.push((
        vec![
            "logp",
            "--platform",
            "cm5",
            "--nodes",
            "8",
            "--export",
            "loggopsim",
            "--out",
            export.to_str().unwrap(),
        ],
        flags.to_str().unwrap(),
    ));
    if common::have_font() {
        file_cases.push((
            vec!["plot", "chunk", "--out", svg.to_str().unwrap()],
            svg.to_str().unwrap(),
        ));
    } else {
        eprintln!("no font: plot --out is not checked here");
    }
    for (args, name) in &file_cases {
        let (code, _, err) = flashkit(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err,
            format!("error: cannot write {name}: No space left on device (os error 28)\n"),
            "{args:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reader_that_closes_the_pipe_early_is_a_quiet_exit() {
    use std::process::Stdio;
    for args in [
        &["suite", "--platform", "cm5"][..],
        &[
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1,2,3,4",
        ],
        &["transfer", "--help"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_flashkit"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before anything is written, as `| true` does.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn a_value_out_of_range_is_named_by_its_flag() {
    for (args, want) in [
        (
            &["transfer", "--src-offset", "5000"][..],
            "error: --src-offset must be below the page size",
        ),
        (
            &["transfer", "--sender", "dirty-remote"],
            "error: --sender dirty-remote needs --coherence global",
        ),
        (
            &["miss", "--case", "remote-dirty", "--owner", "9"],
            "error: --owner must be",
        ),
        (
            &["suite", "--platform", "sp", "--nodes", "2"],
            "error: --nodes must be at least 3, got 2",
        ),
        (
            &["pipeline", "--nodes", "4097"],
            "error: --nodes must be from 2 to 4096, got 4097",
        ),
        // Each machine's own size, checked in one place (LogP's range
        // starts at the three nodes its one-to-two benchmark needs).
        (
            &["logp", "--platform", "sp", "--nodes", "513"],
            "error: --nodes must be from 3 to 512, got 513",
        ),
        (
            &["suite", "--platform", "cm5", "--nodes", "1025"],
            "error: --nodes must be from 3 to 1024, got 1025",
        ),
        // One range said, the suite's least beside the machine's most.
        (
            &["suite", "--platform", "flash", "--nodes", "4097"],
            "error: --nodes must be from 3 to 4096, got 4097",
        ),
        (
            &[
                "suite",
                "--platform",
                "flash",
                "--nodes",
                "4097",
                "--benchmark",
                "ring",
            ],
            "error: --nodes must be from 2 to 4096, got 4097",
        ),
        (
            &["logp", "--platform", "flash", "--nodes", "4097"],
            "error: --nodes must be from",
        ),
        (
            &["costs", "--protocol", "finite", "--words", "99999999999"],
            "error: --words must be",
        ),
        (
            &["transfer", "--bytes", "0"],
            "error: --bytes must be from 1 to 1048576, got 0\n",
        ),
        (
            &["miss", "--case", "remote-dirty", "--owner", "99"],
            "error: --owner must be a node of the machine, below 3, got 99\n",
        ),
        (
            &["miss", "--case", "remote-clean", "--owner", "99"],
            "error: --owner must be 2, its default: only remote-dirty has an owner, got 99\n",
        ),
        (
            &["miss", "--case", "local-clean", "--nodes", "4097"],
            "error: --nodes must be from 3 to 4096, got 4097\n",
        ),
    ] {
        let (code, _, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
}

/// clap's own refusals in one line that names what is wrong: the missing
/// arguments, the values a choice takes.
#[test]
fn a_missing_or_bad_argument_is_named_in_one_line() {
    for (args, want) in [
        (
            &["miss", "--nodes", "5"][..],
            "error: the following required arguments were not provided: --case <CASE>",
        ),
        (
            &["run"],
            "error: the following required arguments were not provided: <FILE>",
        ),
        (
            &["plot", "bandwidth"],
            "error: the following required arguments were not provided: --out <OUT>",
        ),
        (
            &["merge"],
            "error: the following required arguments were not provided: <PARTS>...",
        ),
        (
            &["sweep", "examples/transfer.toml"],
            "error: the following required arguments were not provided: --vary <VARY>",
        ),
        (
            &["miss", "--case", "warm"],
            "error: invalid value 'warm' for '--case <CASE>' [possible values: remote-clean, local-clean, remote-dirty]",
        ),
        (
            &["pipeline", "--bogus"],
            "error: unexpected argument '--bogus' found",
        ),
    ] {
        let (code, out, err) = flashkit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err, format!("{want}\n"), "{args:?}");
    }
}

/// A model that cannot reach its end (here an SP whose switch drops every
/// packet, so the round trip's first request never arrives and the layer
/// probes on until its budget of simulated time) is the model's failure:
/// exit status 1, one line saying where it stands and which key raises the
/// budget, nothing on standard output.
#[test]
fn a_stalled_model_is_exit_status_1() {
    let d = scratch("stalled");
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("stalled.toml");
    std::fs::write(
        &f,
        "[costs.sp]\npoll = 1000000\nkeepalive_polls = 1000000\n\
         [network.sp]\ndrop_ppm = 1000000\n\
         [suite]\nplatform = \"sp\"\nnodes = 3\nbenchmark = \"round-trip\"\n",
    )
    .unwrap();
    let (code, out, err) = flashkit(&["run", f.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        err,
        "error: no end in sight: the run reached its budget of 100 s of simulated time \
         (2640000000000 ticks) with node 0 still running at 100.015158 s; a run that needs \
         more raises it with [network.sp] budget (at most 264000000000000 ticks, 10000 s)\n"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// FLASH's design point: 4096 nodes on the MAGIC commands.
#[test]
fn magic_commands_run_at_4096_nodes() {
    let (code, out, err) = flashkit(&[
        "miss",
        "--case",
        "remote-dirty",
        "--nodes",
        "4096",
        "--owner",
        "4095",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v["latency_cycles"].as_u64().unwrap() > 0, "{v}");
    let (code, out, err) = flashkit(&[
        "pipeline",
        "--nodes",
        "4096",
        "--msgs",
        "16",
        "--pattern",
        "rand",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["events"].as_u64().unwrap() % (4096 * 16), 0, "{v}");
    let (code, _, err) = flashkit(&["fetch-op", "--remote-node", "4095", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn check_refuses_a_state_cap_past_its_maximum_and_shows_no_progress_in_a_log() {
    for (cap, code, want) in [
        (
            "18446744073709551615",
            2,
            "error: --max-states must be from 1 to 100000000, got 18446744073709551615\n",
        ),
        (
            "100000001",
            2,
            "error: --max-states must be from 1 to 100000000, got 100000001\n",
        ),
        (
            "0",
            2,
            "error: --max-states must be from 1 to 100000000, got 0\n",
        ),
        // The maximum itself is a bound like any other: this search ends
        // long before it.
        ("100000000", 0, ""),
    ] {
        let t0 = std::time::Instant::now();
        let (c, out, err) = flashkit(&[
            "check",
            "transfer",
            "--lines",
            "1",
            "--receives",
            "1",
            "--max-states",
            cap,
        ]);
        assert_eq!((c, err.as_str()), (code, want), "--max-states {cap}");
        assert!(t0.elapsed().as_secs() < 60, "--max-states {cap}");
        if code == 0 {
            assert!(out.contains("complete     true"), "{out}");
        }
    }
}

/// Run flashkit with standard output closed (`>&-`), through the shell:
/// its status and standard error.
fn stdout_closed(args: &[&str]) -> (i32, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"exec "$0" "$@" >&-"#)
        .arg(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_closed_standard_output_is_exit_1_naming_it() {
    let closed = "error: cannot write standard output: Bad file descriptor (os error 9)\n";
    for args in [
        &["transfer"][..],
        &["transfer", "--format", "json"],
        &["run", "examples/miss.toml"],
        &[
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1,2",
            "--quiet",
        ],
        &["check", "transfer", "--lines", "1", "--receives", "1"],
        &["suite", "--platform", "cm5", "--benchmark", "round-trip"],
        &["--help"],
        &["--version"],
        &["transfer", "--help"],
    ] {
        assert_eq!(stdout_closed(args), (1, closed.to_string()), "{args:?}");
    }
    // A command that writes only the file it is told to loses nothing.
    let part = std::env::temp_dir().join(format!("flashkit-closed-{}.csv", std::process::id()));
    let part_s = part.to_str().unwrap();
    let (code, err) = stdout_closed(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2",
        "--out",
        part_s,
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(std::fs::read_to_string(&part).unwrap().lines().count(), 4);
    let _ = std::fs::remove_file(&part);
    // Standard output on /dev/null is written, and nothing is lost.
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .arg("transfer")
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn every_flags_help_lists_every_choice_it_takes() {
    // suite --benchmark: the suite's own list, and CMAML's interrupt.
    let (code, help, _) = flashkit(&["suite", "--help"]);
    assert_eq!(code, 0);
    let listed = |help: &str, flag: &str| -> Vec<String> {
        let at = help
            .find(&format!("--{flag} <"))
            .unwrap_or_else(|| panic!("--{flag}"));
        let rest = &help[at..];
        let end = rest[2..].find("\n      --").map_or(rest.len(), |e| e + 2);
        let block = &rest[..end];
        let values = block
            .split("[possible values: ")
            .nth(1)
            .unwrap_or_else(|| panic!("--{flag} lists no values: {block}"));
        values[..values.find(']').unwrap()]
            .split(", ")
            .map(str::to_string)
            .collect()
    };
    let mut want: Vec<String> = protocols::am::suite::BENCHMARKS
        .iter()
        .map(|s| s.to_string())
        .collect();
    want.push("interrupt".into());
    assert_eq!(listed(&help, "benchmark"), want);
    // Each listed benchmark is a value the flag takes (clap checks a value
    // as it reads it, before `--help` stops the command).
    for b in &want {
        let platform = if b == "interrupt" { "cm5-cmaml" } else { "cm5" };
        let (code, _, err) = flashkit(&[
            "suite",
            "--platform",
            platform,
            "--benchmark",
            b,
            "--nodes",
            "4",
            "--help",
        ]);
        assert_eq!(code, 0, "{b}: {err}");
    }
    let (code, _, err) = flashkit(&["suite", "--platform", "cm5", "--benchmark", "nonsense"]);
    assert_eq!(code, 2);
    // The refusal lists the same choices as the help.
    assert_eq!(
        err,
        format!(
            "error: invalid value 'nonsense' for '--benchmark <BENCHMARK>' [possible values: {}]\n",
            want.join(", ")
        )
    );
    // check's protocol options, from the types' own names.
    let (_, help, _) = flashkit(&["check", "--help"]);
    assert_eq!(listed(&help, "directory"), coherence::DirFormat::NAMES);
    assert_eq!(listed(&help, "acks"), coherence::Acks::NAMES);
    assert_eq!(listed(&help, "forwards"), coherence::Forwards::NAMES);
}

#[test]
fn a_transfer_within_one_line_prints_no_rate() {
    let (code, out, err) = flashkit(&["transfer", "--bytes", "1"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let line = out.lines().find(|l| l.starts_with("per line: ")).unwrap();
    assert_eq!(
        line,
        "per line: no rate, one line landed (its stages: network 9.0, sender 33.0, receiver 63.0)"
    );
    assert!(!out.contains("limited by"), "{out}");
    let v = transfer_json(&["--bytes", "1"]);
    assert_eq!(v["lines"], 1);
    assert!(v["per_line_cycles"].is_null(), "{v}");
    assert!(v["limited_by"].is_null(), "{v}");
    // Both ways, each PP runs both handlers: it bounds the rate, not the
    // network it keeps 66% busy.
    let (code, out, err) = flashkit(&["transfer", "--direction", "bi"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let line = out.lines().find(|l| l.starts_with("per line: ")).unwrap();
    assert_eq!(
        line,
        "per line: 51.7 cycles (network 40.0, sender 21.4, receiver 32.0): limited by the PP (the sender's and receiver's handlers share it)"
    );
    let v = transfer_json(&["--direction", "bi"]);
    assert_eq!(v["limited_by"], "pp", "{v}");
    // What held the stream back is the PP's arbitration: 371 of the 371
    // cycles it takes longer than one way (15.63 us).
    assert_eq!(v["held_back"]["pp_arbitration"], 371, "{v}");
    assert_eq!(v["total_cycles"].as_u64(), Some(1563 + 371), "{v}");
}

/// An empty path to write is bad input, said in one line with exit status
/// 2, whichever command takes it (not a failed write, status 1).
#[test]
fn an_empty_path_to_write_is_bad_input() {
    for args in [
        &["transfer", "--trace="][..],
        &["run", "examples/transfer.toml", "--trace="],
        &["plot", "chunk", "--out="],
        &["logp", "--platform", "cm5", "--export", "simgrid", "--out="],
        &["merge", "part.csv", "--out="],
        &[
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1",
            "--out=",
        ],
    ] {
        let (code, out, err) = flashkit(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("an empty path names no file"),
            "{args:?}: {err}"
        );
    }
}

/// `logp --nodes` states one range, the measurement's (its one-to-two
/// benchmark needs three nodes), whichever side a count misses it on.
#[test]
fn logp_states_the_node_range_it_measures_on() {
    for (platform, most) in [("flash", 4096), ("cm5", 1024), ("sp", 512)] {
        for n in [0, 2, most + 1] {
            let (code, _, err) =
                flashkit(&["logp", "--platform", platform, "--nodes", &n.to_string()]);
            assert_eq!(code, 2, "{platform} {n}: {err}");
            assert_eq!(
                err,
                format!("error: --nodes must be from 3 to {most}, got {n}\n"),
                "{platform}"
            );
        }
    }
}

#[test]
fn a_negative_number_is_refused_by_the_flag_it_was_given_to() {
    for (args, flag) in [
        (
            vec!["miss", "--case", "local-clean", "--offset", "-128"],
            "--offset",
        ),
        (vec!["transfer", "--bytes", "-1"], "--bytes"),
        (vec!["pipeline", "--nodes", "-4"], "--nodes"),
        (vec!["check", "coherence", "--threads", "-1"], "--threads"),
        // Nor a sign the byte counts' parser would take.
        (vec!["transfer", "--bytes", "+4096"], "--bytes"),
        (vec!["transfer", "--bytes", "0x+10"], "--bytes"),
        // A negative hexadecimal value is a value too, not the short
        // flag `-0`; so is a negative size with its unit.
        (
            vec!["miss", "--case", "local-clean", "--offset", "-0x10"],
            "--offset",
        ),
        (vec!["transfer", "--src-offset", "-0x80"], "--src-offset"),
        (
            vec!["check", "coherence", "--max-bytes", "-1K"],
            "--max-bytes",
        ),
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
}

#[test]
fn a_suite_benchmark_a_machine_cannot_run_is_refused_by_its_flag() {
    for (args, want) in [
        (
            vec!["suite", "--platform", "flash", "--nodes", "1", "--benchmark", "ring"],
            "error: --nodes must be at least 2, got 1 (the ring benchmark)\n",
        ),
        // One node has no round trip, and no step to traverse.
        (
            vec!["suite", "--platform", "flash", "--nodes", "1", "--benchmark", "round-trip"],
            "error: --nodes must be at least 2, got 1 (the round-trip benchmark)\n",
        ),
        // The benchmark's least, not the platform's range, at any count below.
        (
            vec!["suite", "--platform", "flash", "--nodes", "0", "--benchmark", "round-trip"],
            "error: --nodes must be at least 2, got 0 (the round-trip benchmark)\n",
        ),
        // The whole suite's least is the one-to-two benchmark's, said first.
        (
            vec!["suite", "--platform", "cm5", "--nodes", "1"],
            "error: --nodes must be at least 3, got 1 (the one-to-two benchmark)\n",
        ),
        (
            vec!["suite", "--platform", "flash", "--nodes", "1", "--benchmark", "traverse"],
            "error: --nodes must be at least 2, got 1 (the traverse benchmark)\n",
        ),
        (
            vec!["suite", "--platform", "cm5", "--benchmark", "interrupt"],
            "error: --benchmark must be a benchmark of this platform (interrupt-driven reception is CMAML's: use platform cm5-cmaml), got interrupt\n",
        ),
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!((code, out.as_str(), err.as_str()), (2, "", want), "{args:?}");
    }
}

#[test]
fn a_flag_its_case_or_mode_would_ignore_is_refused() {
    for (args, want) in [
        (
            vec!["miss", "--case", "local-clean", "--owner", "1"],
            "error: --owner must be 2, its default: only remote-dirty has an owner, got 1\n",
        ),
        (vec!["transfer", "--strategy", "collect"], "--strategy"),
        (
            vec!["transfer", "--strategy", "collect", "--coherence", "none"],
            "--strategy",
        ),
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // Where they apply, they run.
    for args in [
        vec![
            "miss",
            "--case",
            "remote-dirty",
            "--owner",
            "2",
            "--format",
            "json",
        ],
        vec!["miss", "--case", "local-clean", "--format", "json"],
        vec![
            "transfer",
            "--strategy",
            "collect",
            "--coherence",
            "global",
            "--format",
            "json",
        ],
    ] {
        let (code, _, err) = flashkit(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
}

#[test]
fn run_refuses_a_trace_onto_its_scenario_and_a_format_for_the_defaults() {
    let dir = std::env::temp_dir().join(format!("flashkit-trace-self-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.toml");
    let text = "[miss]\n";
    std::fs::write(&f, text).unwrap();
    let p = f.to_str().unwrap();
    let (code, out, err) = flashkit(&["run", p, "--trace", p]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(
        err,
        format!("error: --trace {p} is the scenario {p}: write the trace to another file\n")
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), text);
    // A hard link is the same file.
    let h = dir.join("linked.toml");
    let _ = std::fs::remove_file(&h);
    std::fs::hard_link(&f, &h).unwrap();
    let hp = h.to_str().unwrap();
    let (code, out, err) = flashkit(&["run", p, "--trace", hp]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(
        err,
        format!("error: --trace {hp} is the scenario {p}: write the trace to another file\n")
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), text);
    let (code, out, err) = flashkit(&["run", "--print-defaults", "miss", "--format", "json"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("--print-defaults") && err.contains("--format") && err.lines().count() == 1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Inputs and outputs that are not what they are named for: a device read
/// as a scenario or resumed as a part, a file named as an export's folder,
/// a shard given a negative number, a value a megabyte long echoed back,
/// and an error of the scenario file in a sweep: each one line, exit 2.
#[test]
fn devices_files_for_folders_and_long_values_are_refused_in_one_line() {
    let dir = std::env::temp_dir().join(format!("flashkit-not-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let at = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let file = at("afile");
    std::fs::write(&file, "x").unwrap();
    let full = at("full.csv");
    let _ = std::fs::remove_file(&full);
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    let long = at("long.toml");
    std::fs::write(
        &long,
        format!("[transfer]\nsender = \"{}\"\n", "x".repeat(1 << 20)),
    )
    .unwrap();
    let neg = at("neg.toml");
    std::fs::write(
        &neg,
        "[transfer]\nbytes = 4096\n[machine]\nnet_latency = -5\n",
    )
    .unwrap();
    for (args, says) in [
        (
            vec!["run", "/dev/zero"],
            "error: /dev/zero: not a regular file, and more than".to_string(),
        ),
        (
            vec![
                "sweep",
                "examples/transfer.toml",
                "--vary",
                "transfer.chunk=1,2",
                "--out",
                &full,
                "--resume",
                "--quiet",
            ],
            format!("error: --resume {full}: not a regular file"),
        ),
        (
            vec![
                "logp",
                "--platform",
                "cm5",
                "--export",
                "loggopsim",
                "--out",
                &file,
            ],
            format!("error: --out {file} is a file, not a folder"),
        ),
        (
            vec![
                "sweep",
                "examples/transfer.toml",
                "--vary",
                "transfer.chunk=1,2",
                "--shard",
                "-1/3",
            ],
            "--shard".into(),
        ),
        (vec!["run", &long], "characters left out".into()),
        (
            vec!["sweep", &neg, "--vary", "transfer.chunk=1,2", "--quiet"],
            format!(
                "error: point 0 (transfer.chunk=1): {neg}:4: net_latency: must be from 0 to 1000000, got -5"
            ),
        ),
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&says), "{args:?}: {err}");
        assert!(err.len() < 3000, "{args:?}: {} bytes", err.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A write cut short (the file-size limit reached) fails naming the file,
/// exit status 1, and leaves no file under its name.
#[test]
fn a_write_cut_short_leaves_no_file() {
    let dir = std::env::temp_dir().join(format!("flashkit-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("tr.json");
    let script = format!(
        "trap '' XFSZ; ulimit -f 8; exec {} transfer --trace {}",
        env!("CARGO_BIN_EXE_flashkit"),
        trace.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("tr.json") && err.lines().count() == 1, "{err}");
    assert!(!trace.exists(), "a cut-short trace was left");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run flashkit through `sh` with files limited to `blocks` of the
/// shell's `ulimit -f` (the limit's signal ignored, so a write past it
/// fails as a full disk does): its status and standard error.
fn with_file_limit(blocks: u32, dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The files in `dir` and their bytes, by name.
fn contents(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(dir).unwrap().display().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    all.sort();
    all
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A whole-file output that fails midway leaves the file it would have
/// replaced as it was (and no new file cut short, nor a temporary one);
/// an export's files are replaced all together or not at all.
#[test]
fn a_write_that_fails_midway_leaves_the_old_output_whole() {
    let dir = scratch("midway");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("chunk.svg"), "old").unwrap();
    std::fs::write(dir.join("merged.csv"), "old").unwrap();
    let (code, _, err) = flashkit(&[
        "logp",
        "--platform",
        "sp",
        "--nodes",
        "16",
        "--export",
        "loggopsim",
        "--out",
        dir.join("lgs").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let before = contents(&dir);
    let part = dir.join("part.csv");
    let (code, _, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2,4",
        "--shard",
        "0/1",
        "--out",
        part.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let before = [
        before,
        vec![("part.csv".into(), std::fs::read(&part).unwrap())],
    ]
    .concat();
    let mut before = before;
    before.sort();
    let cases: [&[&str]; 4] = [
        &["plot", "chunk", "--out", "chunk.svg"],
        &["merge", "part.csv", "-o", "merged.csv"],
        &["transfer", "--trace", "trace.json"],
        &[
            "logp",
            "--platform",
            "cm5",
            "--nodes",
            "16",
            "--export",
            "loggopsim",
            "--out",
            "lgs",
        ],
    ];
    for args in cases {
        let (code, err) = with_file_limit(1, &dir, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains("File too large"), "{args:?}: {err}");
        assert_eq!(contents(&dir), before, "{args:?} changed the files");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pipeline prints the same bytes on every run, in every format; its
/// event loop's wall-clock time is added only with `--timing`, beside the
/// same figures.
#[test]
fn pipeline_output_is_the_same_on_every_run_unless_timed() {
    let args = [
        "pipeline",
        "--nodes",
        "4",
        "--msgs",
        "3",
        "--pattern",
        "rand",
    ];
    for format in ["table", "json", "csv"] {
        let run = |timing: bool| {
            let mut a = args.to_vec();
            if timing {
                a.push("--timing");
            }
            a.extend(["--format", format]);
            let (code, out, err) = flashkit(&a);
            assert_eq!(code, 0, "{format}: {err}");
            out
        };
        let (one, two) = (run(false), run(false));
        assert_eq!(one, two, "{format}");
        assert!(
            !one.contains("wall_s") && !one.contains("events/s"),
            "{format}: {one}"
        );
        let timed = run(true);
        match format {
            "json" => {
                let mut v: serde_json::Value = serde_json::from_str(timed.trim()).unwrap();
                assert!(v["wall_s"].as_f64().unwrap() >= 0.0);
                v.as_object_mut().unwrap().remove("wall_s");
                assert_eq!(
                    v,
                    serde_json::from_str::<serde_json::Value>(one.trim()).unwrap()
                );
            }
            "csv" => assert!(
                timed.lines().next().unwrap().ends_with(",wall_s"),
                "{timed}"
            ),
            _ => assert!(timed.contains(" M events/s, "), "{timed}"),
        }
    }
}

/// A whole-file output renamed into place keeps what a path means: a
/// link to a file is followed (a dangling one too, making its file),
/// `/dev/stdout` is written in place when standard output is a file (the
/// rest of the output after it), and a name near the system's limit has
/// room beside it for the temporary one.
#[test]
fn an_output_renamed_into_place_is_the_file_its_path_names() {
    let dir = scratch("renamed");
    std::fs::create_dir_all(&dir).unwrap();
    // Standard output appending to a file (`>>`), the trace through
    // /dev/stdout: the trace, then the table, where a rename put the
    // trace in the file's place and the table into the removed file.
    let out = dir.join("out.txt");
    let append = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out)
        .unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(["transfer", "--trace", "/dev/stdout"])
        .stdout(append)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let (trace, table) = (text.find("traceEvents"), text.find("handler occupancy"));
    assert!(
        trace.is_some() && table.is_some() && trace < table,
        "{}",
        &text[..200.min(text.len())]
    );
    // A dangling link makes the file it names.
    let link = dir.join("link.svg");
    std::os::unix::fs::symlink("made.svg", &link).unwrap();
    let (code, _, err) = flashkit(&["plot", "chunk", "--out", link.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(dir.join("made.svg"))
        .unwrap()
        .starts_with("<svg"));
    // A long name.
    let long = dir.join(format!("{}.svg", "a".repeat(240)));
    let (code, _, err) = flashkit(&["plot", "chunk", "--out", long.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&long).unwrap().starts_with("<svg"));
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("flashkit-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file flag naming the file standard output was redirected to would
/// be renamed over it, losing what is printed: refused, status 2, nothing
/// written. `/dev/stdout` is written through standard output itself, its
/// file or pipe, before what is printed (not over it); a file of its own
/// is written as ever.
#[test]
fn a_file_that_is_standard_output_is_refused() {
    let d = scratch("stdout");
    std::fs::create_dir_all(&d).unwrap();
    let run_into = |file: &std::path::Path, args: &[&str]| {
        let out = std::fs::File::create(file).unwrap();
        let r = Command::new(env!("CARGO_BIN_EXE_flashkit"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(out)
            .output()
            .expect("runs");
        (
            r.status.code(),
            String::from_utf8_lossy(&r.stderr).to_string(),
        )
    };
    let same = d.join("same.json");
    let s = same.to_str().unwrap();
    let (code, err) = run_into(&same, &["transfer", "--trace", s, "--format", "json"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "error: --trace {s} is the file standard output goes to, which the command prints \
             to as well: write it to another file\n"
        )
    );
    assert_eq!(
        std::fs::metadata(&same).unwrap().len(),
        0,
        "nothing written"
    );
    // Through /dev/stdout, into a pipe or a file opened afresh (`>`): the
    // trace whole, then the result after it.
    let (code, out, err) = flashkit(&["transfer", "--trace", "/dev/stdout", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let both = d.join("both.txt");
    let (fcode, ferr) = run_into(
        &both,
        &["transfer", "--trace", "/dev/stdout", "--format", "json"],
    );
    assert_eq!(fcode, Some(0), "{ferr}");
    assert_eq!(std::fs::read_to_string(&both).unwrap(), out);
    let mut docs = serde_json::Deserializer::from_str(&out).into_iter::<serde_json::Value>();
    let trace = docs.next().unwrap().unwrap();
    let result = docs.next().unwrap().unwrap();
    assert!(
        trace["traceEvents"].is_array() && result["config"].is_object(),
        "{out}"
    );
    // An export whose file is the one standard output was sent to.
    let ee = d.join("ee");
    std::fs::create_dir_all(&ee).unwrap();
    let flags = ee.join("flags");
    let (code, err) = run_into(
        &flags,
        &[
            "logp",
            "--platform",
            "cm5",
            "--nodes",
            "4",
            "--export",
            "loggopsim",
            "--out",
            ee.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is the file standard output goes to"), "{err}");
    // A trace of its own is written.
    let own = d.join("own.json");
    let (code, err) = run_into(
        &d.join("result.json"),
        &[
            "transfer",
            "--trace",
            own.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::metadata(&own).unwrap().len() > 0);
    let _ = std::fs::remove_dir_all(&d);
}
