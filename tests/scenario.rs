//! Scenario files and sweeps through the program, as users run them.

mod common;

use std::process::Command;

fn flashkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_shipped_scenarios_run_and_their_outputs_are_reviewed() {
    let mut files: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let rel = format!("examples/{name}.toml");
        let (code, out, err) = flashkit(&["run", &rel]);
        assert_eq!(code, 0, "{rel}: {err}");
        common::insta_settings().bind(|| insta::assert_snapshot!(format!("scenario_{name}"), out));
    }
}

#[test]
fn every_commands_defaults_are_a_shipped_scenario() {
    for (file, cmd) in [
        ("examples/transfer.toml", vec!["transfer"]),
        ("examples/miss.toml", vec!["miss", "--case", "remote-clean"]),
        ("examples/fetch-op.toml", vec!["fetch-op"]),
        ("examples/costs.toml", vec!["costs", "--protocol", "single"]),
        ("examples/logp.toml", vec!["logp", "--platform", "cm5"]),
        (
            "examples/remap.toml",
            vec!["remap", "--technique", "invalidate"],
        ),
        (
            "examples/suite.toml",
            vec!["suite", "--platform", "cm5", "--benchmark", "round-trip"],
        ),
    ] {
        let (c1, a, e1) = flashkit(&["run", file, "--format", "json"]);
        let mut args = cmd.clone();
        args.extend(["--format", "json"]);
        let (c2, b, e2) = flashkit(&args);
        assert_eq!((c1, c2), (0, 0), "{file}: {e1} {e2}");
        assert_eq!(a, b, "{file}");
    }
    // The pipeline command adds its event loop's wall time, which is not
    // the model's; everything else is the scenario's.
    let (_, a, _) = flashkit(&["run", "examples/pipeline.toml", "--format", "json"]);
    let (_, b, _) = flashkit(&["pipeline", "--format", "json"]);
    let mut b: serde_json::Value = serde_json::from_str(&b).unwrap();
    b.as_object_mut().unwrap().remove("wall_s");
    let a: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(a, b);
}

#[test]
fn bad_scenarios_name_the_file_line_and_key() {
    let dir = std::env::temp_dir().join(format!("flashkit-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, want) in [
        (
            "[transfer]\nbytes = 4096\nchunkz = 3\n",
            ":3: chunkz: unknown field",
        ),
        ("[transfer]\nbytes = \"lots\"\n", ":2: bytes: invalid type"),
        (
            "[transfer]\nsender = \"warm\"\n",
            ":2: sender: unknown variant",
        ),
        (
            "[machine]\ndata_buffers = 0\n[transfer]\n",
            ":2: data_buffers:",
        ),
        ("[transfer]\nchunk = 0\n", ":2: chunk:"),
        (
            "[transfer]\nhandler = \"base\"\nchunk = 8\n",
            ":3: chunk: --chunk applies only",
        ),
        ("[transfer\n", ":1: invalid table header"),
        ("[machine]\n", "exactly one experiment table"),
        (
            "[miss]\n[messaging_costs]\n",
            "exactly one experiment table",
        ),
        (
            "[costs.transfer]\nrecv_verfy = 3\n[transfer]\n",
            ":2: recv_verfy: unknown field",
        ),
        ("[costs.routing]\n[transfer]\n", "unknown field `routing`"),
    ] {
        let f = dir.join("bad.toml");
        std::fs::write(&f, text).unwrap();
        let (code, out, err) = flashkit(&["run", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{text}");
        assert!(out.is_empty());
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{text}: {err}");
        assert!(err.contains("bad.toml"), "{err}");
    }
}

fn sweep(extra: &[&str]) -> String {
    let mut args = vec![
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2,3,4,5,6,7,8",
        "--vary",
        "transfer.sender=uncached,clean,dirty",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = flashkit(&args);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn a_sweep_is_the_same_on_any_number_of_threads_and_in_shards() {
    let one = sweep(&["--threads", "1"]);
    let two = sweep(&["--threads", "2"]);
    assert_eq!(one, two);
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(lines.len(), 1 + 24, "a header and 8 x 3 points");
    assert!(lines[0].starts_with("point,machine."));
    for col in [
        "transfer.chunk",
        "transfer.sender",
        "result.total_cycles",
        "result.limited_by",
    ] {
        assert!(lines[0].split(',').any(|c| c == col), "{col}");
    }
    // Two shards: the first has the header; together, ordered by point,
    // they are the whole sweep.
    let s0 = sweep(&["--shard", "0/2"]);
    let s1 = sweep(&["--shard", "1/2"]);
    let mut rows: Vec<&str> = s0.lines().skip(1).chain(s1.lines()).collect();
    rows.sort_by_key(|r| r.split(',').next().unwrap().parse::<u32>().unwrap());
    let merged = std::iter::once(s0.lines().next().unwrap())
        .chain(rows)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_eq!(merged, one);
}

#[test]
fn bad_sweeps_say_what_is_wrong() {
    for args in [
        vec![
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk",
        ],
        vec!["sweep", "examples/transfer.toml", "--vary", "chunk=1,2"],
        vec![
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=0,1",
        ],
        vec![
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1",
            "--shard",
            "2/2",
        ],
        vec![
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1",
            "--threads",
            "0",
        ],
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_scenario_can_change_any_handler_cost() {
    let dir = std::env::temp_dir().join(format!("flashkit-costs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let receiver = |costs: &str| {
        let f = dir.join("c.toml");
        std::fs::write(&f, format!("{costs}[transfer]\n")).unwrap();
        let (code, out, err) = flashkit(&["run", f.to_str().unwrap(), "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        j["receiver_handler_per_line"].as_f64().unwrap()
    };
    let base = receiver("");
    // "What if the receiver's verification were 4 cycles cheaper?"
    let cheaper = receiver(
        "[costs.transfer]\nrecv_verify = { cycles = 1, instrs = 2, loads = 1, stores = 0 }\n",
    );
    assert_eq!(base - cheaper, 4.0, "{base} {cheaper}");
    // The coherence protocol's sheet reaches the miss experiment.
    let f = dir.join("m.toml");
    std::fs::write(&f, "[costs.coherence]\ndecode = 40\n[miss]\n").unwrap();
    let (code, out, _) = flashkit(&["run", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(j["latency_cycles"].as_u64().unwrap() > 111);
    let _ = std::fs::remove_dir_all(&dir);
}
