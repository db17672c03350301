//! `--trace` writes Chrome trace-event JSON: checked against the format's
//! rules and against what the model must show.

use std::collections::BTreeMap;
use std::process::Command;

#[test]
fn a_transfer_trace_follows_the_trace_event_format() {
    let path = std::env::temp_dir().join(format!("flashkit-trace-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(["transfer", "--sender", "dirty", "--trace"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().expect("a traceEvents array");
    let mut names: BTreeMap<(u64, u64), String> = BTreeMap::new();
    let mut processes = 0;
    let mut pp: BTreeMap<u64, Vec<(f64, f64, String)>> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        let pid = e["pid"].as_u64().expect("pid");
        let tid = e["tid"].as_u64().expect("tid");
        match ph {
            "M" => match e["name"].as_str().unwrap() {
                "process_name" => {
                    processes += 1;
                    assert!(e["args"]["name"].is_string());
                }
                "thread_name" => {
                    names.insert((pid, tid), e["args"]["name"].as_str().unwrap().into());
                }
                "thread_sort_index" => assert!(e["args"]["sort_index"].is_u64()),
                other => panic!("unexpected metadata {other}"),
            },
            "X" => {
                let ts = e["ts"].as_f64().expect("ts in microseconds");
                let dur = e["dur"].as_f64().expect("dur");
                assert!(ts >= 0.0 && dur > 0.0, "{e}");
                assert!(e["name"].is_string() && e["cat"].is_string());
                assert!(e["args"]["cycles"].as_u64().unwrap() > 0);
                if tid == 1 {
                    pp.entry(pid).or_default().push((
                        ts,
                        ts + dur,
                        e["name"].as_str().unwrap().into(),
                    ));
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(processes, 2, "one process per node");
    for track in [
        "inbox",
        "PP",
        "outbox",
        "memory",
        "processor-cache interface",
        "network out",
    ] {
        assert!(names.values().any(|n| n == track), "{track}");
    }
    // The sender's PP runs the transfer handler; a PP runs one handler at a time.
    assert!(pp[&0].iter().any(|s| s.2 == "transfer.send_step"));
    assert!(pp[&1].iter().any(|s| s.2 == "transfer.component"));
    for slices in pp.values_mut() {
        slices.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        for w in slices.windows(2) {
            assert!(w[0].1 <= w[1].0 + 1e-9, "{:?} overlaps {:?}", w[0], w[1]);
        }
    }
    // The dirty lines' interventions show on the processor-cache track.
    assert!(events
        .iter()
        .any(|e| e["cat"] == "processor-cache interface" && e["pid"] == 0));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_miss_scenario_traces_too_and_the_cm5_study_says_it_cannot() {
    let path =
        std::env::temp_dir().join(format!("flashkit-miss-trace-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(["run", "examples/miss.toml", "--trace"])
        .arg(&path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    // The miss's handlers at the requester and the home.
    let pp: Vec<&str> = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == 1)
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(pp.len() >= 2, "{pp:?}");
    let _ = std::fs::remove_file(&path);
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(["run", "examples/costs.toml", "--trace", "/tmp/never.json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CM-5"));
}

/// A pipeline of 32 nodes sending 400 messages each: some 400,000
/// packets, each a send and a receive on a PP and a packet on the wire.
const LONG_PIPELINE: &str = "[pipeline]\nnodes = 32\nmsgs = 400\n";

#[test]
fn a_run_whose_trace_would_pass_its_maximum_stops_and_writes_none() {
    let dir = std::env::temp_dir().join(format!("flashkit-long-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (toml, trace) = (dir.join("long.toml"), dir.join("long.json"));
    std::fs::write(&toml, LONG_PIPELINE).unwrap();
    let run = |traced: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_flashkit"));
        c.arg("run").arg(&toml);
        if traced {
            c.arg("--trace").arg(&trace);
        }
        c.output().unwrap()
    };
    let out = run(true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let max = flashkit::magic::trace::MAX_SLICES;
    assert!(
        err.starts_with(&format!(
            "error: the run's trace passed its maximum of {max} slices at cycle "
        )) && err.ends_with(
            "trace a shorter run (fewer nodes, messages or bytes), or run this one untraced\n"
        ) && err.lines().count() == 1,
        "{err}"
    );
    assert!(
        !trace.exists(),
        "no part of a trace is written as the whole"
    );
    // Untraced, the same run is clean.
    let out = run(false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
