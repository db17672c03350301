//! Coherence-mode studies at the command line and in the library: `none`
//! end to end, the user programs' flush, and `flashkit study coherence`.

use std::process::Command;

fn flashkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = flashkit(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn none_delivers_stale_lines_and_the_flush_makes_them_right() {
    let stale = json(&[
        "transfer",
        "--coherence",
        "none",
        "--sender",
        "dirty",
        "--format",
        "json",
    ]);
    assert_eq!(stale["data_ok"], false);
    assert!(stale["stale_lines"].as_u64().unwrap() > 0, "{stale}");
    assert_eq!(
        stale["stale"].as_array().unwrap().len() as u64,
        stale["stale_lines"].as_u64().unwrap(),
        "each stale line named"
    );
    assert_eq!(stale["stale"][0]["node"], 1);
    assert_eq!(stale["stale"][0]["va"], "0x20000000");
    let flushed = json(&[
        "transfer",
        "--coherence",
        "none",
        "--sender",
        "dirty",
        "--flush",
        "--format",
        "json",
    ]);
    assert_eq!(flushed["data_ok"], true);
    assert_eq!(flushed["stale_lines"], 0);
    assert_eq!(flushed["flushes"]["written_back"], 32);
    let local = json(&[
        "transfer",
        "--coherence",
        "local",
        "--sender",
        "dirty",
        "--format",
        "json",
    ]);
    assert_eq!(local["data_ok"], true);
    assert_ne!(flushed["total_cycles"], local["total_cycles"]);
    // The table names the stale lines too.
    let (code, out, _) = flashkit(&["transfer", "--coherence", "none", "--receiver", "clean"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("stale lines: 32 (node 1 0x20000000, node 1 0x20000080"),
        "{out}"
    );
    assert!(out.contains("data WRONG"), "{out}");
}

#[test]
fn local_coherence_refuses_a_third_nodes_dirty_lines_in_one_line() {
    let (code, out, err) = flashkit(&[
        "transfer",
        "--coherence",
        "local",
        "--sender",
        "dirty-remote",
    ]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--sender dirty-remote needs --coherence global"),
        "{err}"
    );
}

#[test]
fn buffers_homed_at_a_third_node_go_through_it() {
    let run = |mode: &str, sender: &str| {
        json(&[
            "transfer",
            "--placement",
            "third",
            "--coherence",
            mode,
            "--sender",
            sender,
            "--format",
            "json",
        ])
    };
    // Under global the home fetches each dirty send line from the sender's
    // own cache; under none it sends memory as it is.
    let global = run("global", "dirty");
    assert_eq!(global["data_ok"], true, "{global}");
    assert_eq!(global["coherence_actions"]["fetches"], 32);
    let none = run("none", "dirty");
    assert_eq!(none["data_ok"], false);
    assert_eq!(none["stale_lines"], 32);
    // Every line crosses the network more than at home: slower, uncached.
    let third = run("global", "uncached");
    let home = json(&["transfer", "--coherence", "global", "--format", "json"]);
    assert!(
        third["total_cycles"].as_u64() > home["total_cycles"].as_u64(),
        "{third} vs {home}"
    );
    // What the model does not carry through a home is one line, exit 2.
    for (args, says) in [
        (
            &["--coherence", "local"][..],
            "--placement third cannot go with --coherence local",
        ),
        (
            &["--coherence", "global", "--receives", "2"][..],
            "--placement third needs --receives 1",
        ),
        (
            &["--coherence", "none", "--direction", "bi"][..],
            "--placement third needs --direction uni",
        ),
        (
            &["--coherence", "global", "--src-offset", "8"][..],
            "--dst-offset must be at the send buffer's offset within a line",
        ),
    ] {
        let mut a = vec!["transfer", "--placement", "third"];
        a.extend_from_slice(args);
        let (code, _, err) = flashkit(&a);
        assert_eq!(code, 2, "{a:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{a:?}: {err}");
    }
}

#[test]
fn the_study_returns_a_row_per_run_with_every_key() {
    let v = json(&[
        "study",
        "coherence",
        "--bytes",
        "1024",
        "--format",
        "json",
        "--quiet",
    ]);
    let rows = v["rows"].as_array().expect("rows");
    let keys = [
        "mode",
        "sender",
        "receiver",
        "placement",
        "bytes",
        "total_us",
        "bandwidth_mb_s",
        "stale_lines",
        "coherence_messages",
        "processor_us",
    ];
    for r in rows {
        for k in keys {
            assert!(!r[k].is_null(), "{k} missing in {r}");
        }
        assert_eq!(r["bytes"], 1024);
    }
    let distinct = |k: &str| {
        let mut v: Vec<String> = rows.iter().map(|r| r[k].to_string()).collect();
        v.sort();
        v.dedup();
        v.len()
    };
    assert_eq!(distinct("mode"), 4);
    assert_eq!(distinct("sender"), 4);
    assert_eq!(distinct("receiver"), 5);
    // Every combination is a row or a refusal with its reason.
    let refused = v["refused"].as_array().expect("refused");
    assert_eq!(rows.len() + refused.len(), 4 * 4 * 5 * 2);
    for r in refused {
        assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
    }
    assert!(refused.iter().any(|r| r["mode"] == "local"
        && r["sender"] == "dirty-remote"
        && r["placement"] == "home"));
    // Only local coherence refuses (a third node's home or cache is outside
    // it): the other three modes run every state at both placements.
    assert!(refused.iter().all(|r| r["mode"] == "local"), "{refused:?}");
    assert_eq!(distinct("placement"), 2);
    let third = rows.iter().filter(|r| r["placement"] == "third").count();
    assert_eq!(third, 3 * 4 * 5);
    // What each mode promises. A clean copy at a third node is stale after
    // a transfer without coherence, but the receiving process does not read
    // it; a dirty one there is the line's latest copy, which it does.
    for r in rows {
        let cached = r["sender"] != "uncached" && r["sender"] != "clean"
            || (r["receiver"] != "uncached" && r["receiver"] != "clean-remote");
        let stale = r["stale_lines"].as_u64().unwrap();
        match r["mode"].as_str().unwrap() {
            "none" => assert_eq!(stale > 0, cached, "{r}"),
            "none-flush" => assert_eq!(
                stale > 0,
                r["sender"] == "dirty-remote" || r["receiver"] == "dirty-remote",
                "{r}"
            ),
            _ => assert_eq!(stale, 0, "{r}"),
        }
    }
}

#[test]
fn the_study_is_the_same_on_any_number_of_threads_and_checks_its_flags() {
    let one = flashkit(&[
        "study",
        "coherence",
        "--bytes",
        "512",
        "--threads",
        "1",
        "--format",
        "csv",
    ]);
    let three = flashkit(&[
        "study",
        "coherence",
        "--bytes",
        "512",
        "--threads",
        "3",
        "--format",
        "csv",
    ]);
    assert_eq!(one.0, 0, "{}", one.2);
    assert_eq!(one.1, three.1);
    // The refused combinations have no row: standard error says how many.
    let json = json(&[
        "study",
        "coherence",
        "--bytes",
        "512",
        "--format",
        "json",
        "--quiet",
    ]);
    let refused = json["refused"].as_array().expect("refused").len();
    assert!(refused > 0);
    assert_eq!(
        one.2,
        format!("note: {refused} combinations refused, not in the CSV (the JSON and the table list each with its reason)\n")
    );
    assert_eq!(one.1.lines().count(), 1 + 4 * 4 * 5 * 2 - refused);
    assert!(
        one.1
            .starts_with("bandwidth_mb_s,bytes,coherence_messages,"),
        "{}",
        one.1
    );
    for (args, says) in [
        (
            vec!["--threads", "0"],
            "--threads must be from 1 to 1024, got 0",
        ),
        (
            vec!["--threads", "4294967296"],
            "--threads must be from 1 to 1024",
        ),
        (
            vec!["--bytes", "2000000"],
            "--bytes must be from 1 to 1048576, got 2000000",
        ),
        (
            vec!["--bytes", "0"],
            "--bytes must be from 1 to 1048576, got 0",
        ),
        (vec!["--plot", "x.pdf"], "write .svg or .png"),
    ] {
        let mut a = vec!["study", "coherence"];
        a.extend(args);
        let (code, _, err) = flashkit(&a);
        assert_eq!(code, 2, "{a:?}");
        assert_eq!(err.lines().count(), 1, "{a:?}: {err}");
        assert!(err.contains(says), "{a:?}: {err}");
    }
}

#[test]
fn a_study_point_runs_from_a_scenario_and_sweeps() {
    let dir = std::env::temp_dir().join(format!("flashkit-modes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("point.toml");
    std::fs::write(&f, "[study]\nmode = \"none-flush\"\nsender = \"dirty\"\n").unwrap();
    let f = f.to_str().unwrap();
    let v = json(&["run", f, "--format", "json"]);
    assert_eq!(v["mode"], "none-flush");
    assert_eq!(v["stale_lines"], 0);
    let (code, out, err) = flashkit(&[
        "sweep",
        f,
        "--vary",
        "study.mode=none,local",
        "--vary",
        "costs.flush.dirty_line=8,16",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 5, "{out}");
    let refused = dir.join("refused.toml");
    std::fs::write(
        &refused,
        "[study]\nmode = \"local\"\nsender = \"dirty-remote\"\n",
    )
    .unwrap();
    let (code, _, err) = flashkit(&["run", refused.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("refused.toml:3: sender: sender = \"dirty-remote\" needs mode = \"global\""),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_study_table() {
    let s = flashkit::study::run(&flashkit::scenario::Scenario::default(), 4096, 2, |_, _| {})
        .expect("runs");
    crate::common::insta_settings()
        .bind(|| insta::assert_snapshot!("study_coherence", s.to_string()));
    // The README counts the rows and the refusals, and shows the header
    // and four rows as the table prints them.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let counts = format!(
        "(four of its {} rows; the other {} combinations are refused",
        s.rows.len(),
        s.refused.len()
    );
    assert!(readme.contains(&counts), "README.md should say {counts}");
    let table = s.to_string();
    let shown = readme
        .split("$ flashkit study coherence --bytes 4096\n")
        .nth(1)
        .and_then(|r| r.split("...\n```").next())
        .expect("README.md shows the study");
    for line in shown.lines().filter(|l| *l != "...") {
        assert!(
            table.lines().any(|l| l == line),
            "README.md's line is not the study's: {line}"
        );
    }
}

#[test]
fn the_flush_shows_on_the_compute_processors_track() {
    let path = std::env::temp_dir().join(format!("flashkit-flush-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let (code, _, err) = flashkit(&[
        "transfer",
        "--coherence",
        "none",
        "--flush",
        "--sender",
        "dirty",
        "--trace",
        p,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    let flushes: Vec<(u64, f64)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "compute processor")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["cycles"].as_f64().unwrap(),
            )
        })
        .collect();
    // The sender's flush of 32 dirty lines (16 cycles each) and the
    // receiver's invalidation after the data (32 lines, 2 each).
    assert!(flushes.contains(&(0, 512.0)), "{flushes:?}");
    assert!(flushes.contains(&(1, 64.0)), "{flushes:?}");
}
