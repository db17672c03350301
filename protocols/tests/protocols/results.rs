//! Results as a study keeps them: plain data that crosses threads, copies,
//! prints and serializes; and a transfer's table, JSON and struct agree on
//! every figure, each rounded the one way `magic::figures` says.

use magic::figures::{text, value, Figure};
use protocols::transfer::{run, Config, Direction, Outcome, SenderState, Version};
use serde_json::Value;

/// Compiles only for a type a study can keep.
fn assert_result<T: Send + Clone + std::fmt::Debug + serde::Serialize>() {}

#[test]
fn run_results_are_send_clone_debug_serialize() {
    assert_result::<Outcome>();
    assert_result::<protocols::transfer::Startup>();
    assert_result::<protocols::pipeline::PipelineRun>();
    assert_result::<protocols::pipeline::PipelineResult>();
    assert_result::<coherence::miss::MissRun>();
    assert_result::<coherence::AccessResult>();
    assert_result::<coherence::CohStats>();
    assert_result::<magic::Ledger>();
    // The errors are std errors, for `?` into a study's own.
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<protocols::transfer::Failed>();
    assert_error::<coherence::Error>();
}

/// The configurations the agreement is checked on: the default, a dirty
/// sender with chunks of 8, and both directions at once.
fn configs() -> Vec<Config> {
    vec![
        Config::default(),
        Config {
            sender: SenderState::Dirty,
            handler: Version::Chunked(8),
            ..Config::default()
        },
        Config {
            direction: Direction::Bi,
            ..Config::default()
        },
    ]
}

/// The numbers of a line of text, as printed (a trailing `%` dropped).
fn numbers(line: &str) -> Vec<String> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|t| t.trim_matches('.'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// One figure: the table's digits are the struct's value rounded, and the
/// JSON holds those digits.
fn agree(what: &str, table: &str, json: &Value, kind: Figure, x: f64) {
    assert_eq!(table, text(kind, x), "{what}: table against struct");
    assert_eq!(
        json.as_f64(),
        Some(value(kind, x)),
        "{what}: JSON against struct"
    );
    let t: f64 = table.parse().unwrap();
    let j = json.as_f64().unwrap();
    let j = if kind == Figure::Percent {
        100.0 * j
    } else {
        j
    };
    assert!((t - j).abs() < 1e-9, "{what}: table {t} against JSON {j}");
}

/// A whole number: table, JSON and struct the same.
fn same(what: &str, table: &str, json: &Value, x: u64) {
    assert_eq!(table, x.to_string(), "{what}: table against struct");
    assert_eq!(json.as_u64(), Some(x), "{what}: JSON against struct");
}

fn line<'a>(t: &'a str, start: &str) -> &'a str {
    t.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in\n{t}"))
}

#[test]
fn table_json_and_struct_agree_on_every_figure_of_a_transfer() {
    for c in configs() {
        let o = run(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let t = o.to_string();
        let j = o.json();
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            j,
            "Serialize is the JSON"
        );
        let n = numbers(line(&t, "transfer of "));
        same("bytes", &n[0], &j["bytes"], c.bytes);
        same("lines", &n[1], &j["lines"], o.lines);
        let n = numbers(line(&t, "total "));
        same("total", &n[0], &j["total_cycles"], o.total.0);
        agree("total_us", &n[1], &j["total_us"], Figure::Us, o.total_us());
        agree(
            "MB/s",
            &n[2],
            &j["bandwidth_mb_s"],
            Figure::MbS,
            o.bandwidth_mb_s(),
        );
        let s = &o.startup;
        for (label, key, x) in [
            ("initiation", "initiation", s.initiation),
            (
                "setup and verification",
                "setup_verification",
                s.setup_verification,
            ),
            ("initial line", "initial_line", s.initial_line),
            (
                "network and queueing",
                "network_queueing",
                s.network_queueing,
            ),
            ("receiver cleanup", "receiver_cleanup", s.receiver_cleanup),
            ("fixed overhead", "total", s.total),
        ] {
            let n = numbers(line(&t, label));
            same(label, n.last().unwrap(), &j["startup"][key], x);
        }
        let n = numbers(line(&t, "per line: "));
        let f = Figure::FracCycles;
        let rate = o.per_line.expect("32 lines landed: a rate");
        agree("per line", &n[0], &j["per_line_cycles"], f, rate);
        agree(
            "network",
            &n[1],
            &j["network_cycles_per_line"],
            f,
            o.network_per_line,
        );
        agree(
            "sender occupancy",
            &n[2],
            &j["sender_occupancy_per_line"],
            f,
            o.sender_occupancy_per_line,
        );
        agree(
            "receiver occupancy",
            &n[3],
            &j["receiver_occupancy_per_line"],
            f,
            o.receiver_occupancy_per_line,
        );
        let n = numbers(line(&t, "handler time per line"));
        agree(
            "sender handler",
            &n[0],
            &j["sender_handler_per_line"],
            f,
            o.sender_handler_per_line,
        );
        agree(
            "receiver handler",
            &n[1],
            &j["receiver_handler_per_line"],
            f,
            o.receiver_handler_per_line,
        );
        // The occupancy table, row by row, against the JSON's rows.
        let n = numbers(line(&t, "handler occupancy"));
        same(
            "ledger window",
            &n[1],
            &j["occupancy_cycles"],
            o.ledger.elapsed.0,
        );
        let head = t
            .lines()
            .position(|l| l.starts_with("node  handler"))
            .unwrap();
        let rows: Vec<&str> = t
            .lines()
            .skip(head + 1)
            .take_while(|l| !l.is_empty())
            .collect();
        let json_rows = j["occupancy"].as_array().unwrap();
        assert_eq!(rows.len(), o.ledger.handlers.len());
        assert_eq!(json_rows.len(), o.ledger.handlers.len());
        for ((row, r), jr) in rows.iter().zip(&o.ledger.handlers).zip(json_rows) {
            let cells: Vec<&str> = row.split_whitespace().collect();
            let h = &r.stats;
            assert_eq!(cells[0], r.node.unwrap().to_string());
            assert_eq!(cells[1], r.handler);
            assert_eq!(jr["handler"], r.handler.as_str());
            same("calls", cells[2], &jr["invocations"], h.invocations);
            same("busy", cells[3], &jr["busy"], h.busy);
            agree("mean", cells[4], &jr["mean"], Figure::FracCycles, r.mean);
            same("max", cells[5], &jr["max"], h.max);
            same("stall", cells[6], &jr["outbox_stall"], h.outbox_stall);
            same("wait", cells[7], &jr["wait"], h.wait);
            same("instr", cells[8], &jr["instructions"], h.instructions);
            let (ld, st) = cells[9].split_once('/').unwrap();
            same("loads", ld, &jr["loads"], h.loads);
            same("stores", st, &jr["stores"], h.stores);
            let pp = cells[10].strip_suffix('%').unwrap();
            agree("pp-time", pp, &jr["pp_share"], Figure::Percent, r.pp_share);
        }
        // The unit table (not in the transfer's JSON) against the ledger.
        let head = t.lines().position(|l| l.starts_with("node  unit")).unwrap();
        let rows: Vec<&str> = t.lines().skip(head + 1).collect();
        let units: Vec<_> = o
            .ledger
            .units
            .iter()
            .filter(|u| u.ops + u.busy + u.waiting > 0)
            .collect();
        assert_eq!(rows.len(), units.len());
        for (row, u) in rows.iter().zip(units) {
            let cells: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cells[1], u.unit.name());
            assert_eq!(cells[2], u.ops.to_string());
            assert_eq!(cells[3], u.busy.to_string());
            assert_eq!(
                cells[4],
                format!("{}%", text(Figure::Percent, u.utilization))
            );
            assert_eq!(cells[5], u.waiting.to_string());
        }
        // The ledger's own JSON rounds its figures the same way.
        let lj = serde_json::to_value(&o.ledger).unwrap();
        for (u, ju) in o.ledger.units.iter().zip(lj["units"].as_array().unwrap()) {
            assert_eq!(
                ju["utilization"].as_f64(),
                Some(value(Figure::Percent, u.utilization))
            );
        }
    }
}

/// "total" is printed once, for the transfer's span; the ledger's window
/// (a different span: the counters' reset, a cycle before the send, to the
/// machine's last event) is named for what it is, and covers the transfer.
#[test]
fn printed_spans_say_what_they_are_and_no_two_totals_disagree() {
    for c in configs() {
        let o = run(&c).unwrap();
        let t = o.to_string();
        let totals: Vec<&str> = t.lines().filter(|l| l.contains("total")).collect();
        assert_eq!(totals.len(), 1, "{totals:?}");
        assert!(totals[0].starts_with(&format!("total {} cycles", o.total.0)));
        assert!(totals[0].contains("the send's first command write to the last receive told"));
        let window = line(&t, "handler occupancy");
        assert!(
            window.contains(&format!(
                "counters over {} cycles, from their start to the last event",
                o.ledger.elapsed.0
            )),
            "{window}"
        );
        // The window holds the transfer and the cycle before its first write.
        assert!(
            o.ledger.elapsed.0 > o.total.0,
            "{} {}",
            o.ledger.elapsed,
            o.total
        );
        assert!(!t.contains("run of"), "{t}");
    }
    // The default transfer: the window is the total and that one cycle.
    let o = run(&Config::default()).unwrap();
    assert_eq!(o.ledger.elapsed.0, o.total.0 + 1);
}

/// A study can hand outcomes to worker threads and keep copies.
#[test]
fn outcomes_cross_threads() {
    let o = std::thread::spawn(|| run(&Config::default()).unwrap())
        .join()
        .unwrap();
    let copy = o.clone();
    assert_eq!(format!("{copy}"), format!("{o}"));
    assert!(format!("{o:?}").contains("total"));
}
