//! Results as a study keeps them: plain data that crosses threads, copies,
//! prints and serializes; a transfer's table, JSON and struct agree on
//! every figure (the table rounding the one way `magic::figures` says, the
//! JSON exact); its JSON reads back equal, and its configuration measures
//! it again.

use magic::figures::{text, value, Figure};
use protocols::transfer::{run, Config, Direction, Outcome, SenderState, Version};
use serde_json::Value;

/// Compiles only for a type a study can keep.
fn assert_result<T: Send + Clone + std::fmt::Debug + serde::Serialize>() {}

/// Compiles only for a type that reads back what it writes, comparably.
fn assert_round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq>() {}

#[test]
fn run_results_are_send_clone_debug_serialize() {
    assert_round_trip::<Outcome>();
    assert_round_trip::<Config>();
    assert_result::<Outcome>();
    assert_result::<protocols::transfer::Startup>();
    assert_result::<protocols::pipeline::PipelineRun>();
    assert_result::<protocols::pipeline::PipelineResult>();
    assert_result::<coherence::miss::MissRun>();
    assert_round_trip::<coherence::sharing::SharingRun>();
    assert_round_trip::<coherence::sharing::Config>();
    assert_result::<coherence::sharing::SharingRun>();
    assert_round_trip::<protocols::am::suite::LogpResult>();
    assert_round_trip::<protocols::am::suite::SuiteResult>();
    assert_round_trip::<protocols::am::costs::FeatureCosts>();
    assert_round_trip::<protocols::am::config::PlatformConfig>();
    assert_result::<protocols::am::suite::LogpResult>();
    assert_result::<protocols::am::suite::SuiteResult>();
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
/// JSON holds the struct's value exactly.
fn agree(what: &str, table: &str, json: &Value, kind: Figure, x: f64) {
    assert_eq!(table, text(kind, x), "{what}: table against struct");
    assert_eq!(json.as_f64(), Some(x), "{what}: JSON against struct");
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
        // The transfer's JSON holds the unit rows too, exact.
        let json_units = j["units"].as_array().unwrap();
        assert_eq!(json_units.len(), o.ledger.units.len());
        for (u, ju) in o.ledger.units.iter().zip(json_units) {
            assert_eq!(ju["unit"], u.unit.name());
            same("unit busy", &u.busy.to_string(), &ju["busy"], u.busy);
            assert_eq!(ju["utilization"].as_f64(), Some(u.utilization));
        }
        // The ledger's own JSON (as experiments that keep no exact figures
        // print it) rounds its figures the table's way.
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

/// A transfer's JSON reads back equal to the outcome that wrote it, and
/// the configuration it carries (every machine parameter and cost, and the
/// kit's version beside it) measures the same outcome again.
#[test]
fn a_transfers_json_reads_back_equal_and_its_config_measures_it_again() {
    let mut cs = configs();
    let mut slow = Config {
        bytes: 1000,
        src_offset: 8,
        ..Config::default()
    };
    slow.params.mem_first_dword = magic::Cycles(20);
    slow.costs.send_init.cycles = 12;
    slow.costs.send_init.instrs = 14;
    slow.coherence.hints = false;
    cs.push(slow);
    // A page moved mid-transfer, and buffers homed at a third node with
    // flushes: the options the configuration carries beyond the shapes.
    cs.push(Config {
        bytes: 8192,
        change: Some(protocols::transfer::PageChange {
            side: protocols::transfer::Side::Receive,
            page: 1,
            after: magic::Cycles(700),
        }),
        ..Config::default()
    });
    cs.push(Config {
        sender: SenderState::Dirty,
        mode: protocols::transfer::Mode::Global,
        placement: protocols::transfer::Placement::Third,
        strategy: protocols::transfer::Strategy::Collect,
        flush: true,
        ..Config::default()
    });
    // Coherence off and a dirty sender: the stale lines are kept too.
    cs.push(Config {
        sender: SenderState::Dirty,
        mode: protocols::transfer::Mode::None,
        ..Config::default()
    });
    for c in cs {
        let o = run(&c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert_eq!(o.config, c);
        assert_eq!(o.version, env!("CARGO_PKG_VERSION"));
        let text = serde_json::to_string(&o).unwrap();
        let back: Outcome = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(back, o);
        assert_eq!(back.to_string(), o.to_string(), "the table as well");
        if c.mode == protocols::transfer::Mode::None {
            assert!(!o.stale.is_empty(), "stale lines to carry");
        }
        let again = run(&back.config).unwrap();
        assert_eq!(
            again, o,
            "{c:?}: the carried configuration measures it again"
        );
        // The configuration alone reads back too, and a partial one takes
        // the defaults for what it leaves out.
        let cj = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Config>(&cj).unwrap(), c);
    }
    // A planted bug is part of the configuration too.
    let bugged = Config {
        inject: Some(protocols::transfer::state::Bug::EarlyDone),
        ..Config::default()
    };
    let cj = serde_json::to_string(&bugged).unwrap();
    assert_eq!(serde_json::from_str::<Config>(&cj).unwrap(), bugged);
    // A run with a planted bug reads back as it ran, its lines cut as the
    // bug cut them (not as a correct sender would).
    let mut cut_otherwise = 0;
    for bug in protocols::transfer::state::Bug::ALL {
        for (sends, receives) in [(1, 1), (2, 2), (4, 4), (1, 4), (4, 1), (3, 2)] {
            let c = Config {
                inject: Some(bug),
                sends,
                receives,
                ..Config::default()
            };
            let Ok(o) = run(&c) else { continue };
            let back: Outcome = serde_json::from_value(o.json())
                .unwrap_or_else(|e| panic!("{bug:?} {sends}x{receives}: {e}"));
            assert_eq!(back, o, "{bug:?} {sends}x{receives}");
            let clean = run(&Config { inject: None, ..c }).unwrap();
            cut_otherwise += usize::from(o.lines != clean.lines);
        }
    }
    assert!(cut_otherwise > 0, "no planted bug cut its stream otherwise");
    let partial: Config = serde_json::from_str(r#"{"bytes": 300}"#).unwrap();
    assert_eq!(
        partial,
        Config {
            bytes: 300,
            ..Config::default()
        }
    );
    let e = serde_json::from_str::<Config>(r#"{"byte": 300}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `byte`"), "{e}");
}

/// Every derived figure of a transfer's JSON, recomputed from the counts
/// the JSON holds, is the struct's value exactly (and so is the JSON's own).
#[test]
fn every_derived_figure_recomputes_exactly_from_the_counts_in_the_json() {
    for c in configs() {
        let o = run(&c).unwrap();
        let j: Value = serde_json::from_str(&o.json().to_string()).unwrap();
        let n = |k: &str| j[k].as_u64().unwrap_or_else(|| panic!("{k}: {j}"));
        let (lines, bytes) = (n("lines"), n("bytes"));
        let dirs = if c.direction == Direction::Bi { 2 } else { 1 };
        let total_us = n("total_cycles") as f64 / 100.0;
        let per = |k: &str| n(k) as f64 / lines as f64;
        let sender = (n("sender_busy_cycles") - n("sender_stall_cycles")) as f64 / lines as f64;
        let receiver =
            (n("receiver_busy_cycles") - n("receiver_stall_cycles")) as f64 / lines as f64;
        let network = per("network_busy_cycles");
        let rate = n("landing_cycles") as f64 / (lines - 1) as f64;
        for (k, from_counts, in_struct) in [
            ("total_us", total_us, o.total_us()),
            (
                "bandwidth_mb_s",
                (bytes * dirs) as f64 / total_us,
                o.bandwidth_mb_s(),
            ),
            (
                "processor_us",
                n("processor_cycles") as f64 / 100.0,
                o.processor_us(),
            ),
            ("per_line_cycles", rate, o.per_line.unwrap()),
            (
                "sender_occupancy_per_line",
                per("sender_busy_cycles"),
                o.sender_occupancy_per_line,
            ),
            (
                "receiver_occupancy_per_line",
                per("receiver_busy_cycles"),
                o.receiver_occupancy_per_line,
            ),
            ("sender_handler_per_line", sender, o.sender_handler_per_line),
            (
                "receiver_handler_per_line",
                receiver,
                o.receiver_handler_per_line,
            ),
            ("network_cycles_per_line", network, o.network_per_line),
        ] {
            assert_eq!(from_counts, in_struct, "{k}: counts against struct");
            assert_eq!(j[k].as_f64(), Some(in_struct), "{k}: JSON against struct");
        }
        // The bound: the slowest stage, stalls apart.
        let bound = match c.direction {
            Direction::Bi if network >= sender + receiver => "network",
            Direction::Bi => "pp",
            Direction::Uni if network >= sender && network >= receiver => "network",
            Direction::Uni if sender >= receiver => "sender",
            Direction::Uni => "receiver",
        };
        assert_eq!(j["limited_by"], bound);
        assert_eq!(serde_json::to_value(o.limited_by).unwrap(), j["limited_by"]);
        // The ledger's rows: a mean per invocation, a share of the window.
        let window = n("occupancy_cycles") as f64;
        let rows = j["occupancy"].as_array().unwrap();
        for (r, h) in rows.iter().zip(&o.ledger.handlers) {
            let busy = r["busy"].as_u64().unwrap() as f64;
            let mean = busy / r["invocations"].as_u64().unwrap() as f64;
            assert_eq!((mean, r["mean"].as_f64()), (h.mean, Some(h.mean)));
            let share = busy / window;
            assert_eq!(
                (share, r["pp_share"].as_f64()),
                (h.pp_share, Some(h.pp_share))
            );
        }
        for (r, u) in j["units"].as_array().unwrap().iter().zip(&o.ledger.units) {
            let share = r["busy"].as_u64().unwrap() as f64 / window;
            assert_eq!(
                (share, r["utilization"].as_f64()),
                (u.utilization, Some(u.utilization))
            );
        }
    }
}

/// A JSON whose derived figures its counts do not give (edited, or rounded
/// as an older kit printed them) is refused, naming the figure; so are a
/// key the result does not have and a repeated figure that disagrees.
#[test]
fn a_json_its_counts_do_not_give_is_refused_naming_the_figure() {
    let o = run(&Config {
        sender: SenderState::Dirty,
        ..Config::default()
    })
    .unwrap();
    let j = o.json();
    let refused = |edit: &dyn Fn(&mut Value)| refusal::<Outcome>(&j, edit);
    let rounded = magic::figures::value(Figure::FracCycles, o.per_line.unwrap());
    assert_ne!(Some(rounded), o.per_line, "a rate rounding changes");
    let e = refused(&|v| v["per_line_cycles"] = rounded.into());
    assert_eq!(
        e,
        format!(
            "per_line_cycles is {rounded:?}, but the counts give {:?}",
            o.per_line.unwrap()
        )
    );
    let e = refused(&|v| v["sender_busy_cycles"] = (o.stages.sender_busy + 1).into());
    assert!(e.starts_with("sender_occupancy_per_line is "), "{e}");
    let e = refused(&|v| v["occupancy"][0]["busy"] = 1.into());
    assert!(e.starts_with("occupancy (transfer."), "{e}");
    let e = refused(&|v| v["sender_stall_cycles"] = (o.stages.sender_busy + 1).into());
    assert_eq!(
        e,
        format!(
            "sender_stall_cycles is {}, more than the {} sender_busy_cycles it is part of",
            o.stages.sender_busy + 1,
            o.stages.sender_busy
        )
    );
    // The start-up is its parts' sum; it and the transfer fit the whole.
    let e = refused(&|v| v["startup"]["total"] = 1.into());
    assert_eq!(
        e,
        format!(
            "startup.total is 1, but its parts add to {}",
            o.startup.total
        )
    );
    let e = refused(&|v| v["transfer_cycles"] = o.total.0.into());
    assert!(
        e.starts_with("startup.total (") && e.ends_with("total_cycles they are part of"),
        "{e}"
    );
    let e = refused(&|v| v["startup"]["initiation"] = u64::MAX.into());
    assert_eq!(e, "startup: its parts add past 2^64 - 1");
    let e = refused(&|v| v["bytes"] = 5.into());
    assert_eq!(
        e,
        "bytes (a repeat of config.bytes) disagrees with the rest of the result"
    );
    let e = refused(&|v| v["wall_s"] = 0.5.into());
    assert!(e.contains("unknown field `wall_s`"), "{e}");
    let e = refused(&|v| v["total_cycles"] = (-1).into());
    assert!(e.contains("invalid value"), "{e}");
    // Waits, flushes and actions within what the run took.
    let e = refused(&|v| v["held_back"]["memory"] = (o.total.0 + 1).into());
    assert_eq!(
        e,
        format!(
            "held_back.memory is {}, more than the {} total_cycles",
            o.total.0 + 1,
            o.total.0
        )
    );
    let e = refused(&|v| {
        v["held_back"]["memory"] = u64::MAX.into();
        v["held_back"]["pcache_if"] = u64::MAX.into();
    });
    assert!(
        e.starts_with("held_back.memory is 18446744073709551615"),
        "{e}"
    );
    let e = refused(&|v| v["coherence_actions"]["fetches"] = u64::MAX.into());
    assert!(
        e.starts_with("coherence_actions.fetches is 18446744073709551615, more than 2 nodes do"),
        "{e}"
    );
    let e = refused(&|v| v["flushes"]["send_cycles"] = (o.total.0 + 1).into());
    assert!(e.starts_with("flushes.send_cycles is "), "{e}");
    let e = refused(&|v| v["processor_cycles"] = u64::MAX.into());
    assert!(e.starts_with("processor_cycles is "), "{e}");
}

/// Sums of waits and of actions do not overflow, whatever a caller
/// builds them from.
#[test]
fn held_back_and_action_sums_stop_at_the_largest_count() {
    use protocols::transfer::state::HeldBack;
    let h = HeldBack {
        pp_arbitration: u64::MAX,
        memory: 1,
        pcache_if: 0,
    };
    assert_eq!(h.total(), u64::MAX);
    assert_eq!(h.plus(h).pp_arbitration, u64::MAX);
    let a = protocols::transfer::CoherenceActions {
        interventions: u64::MAX,
        invalidations: 1,
        fetches: 1,
    };
    assert_eq!(a.total(), u64::MAX);
}

/// A read miss away from its defaults in every part of its configuration.
fn miss_config(case: coherence::miss::Case) -> coherence::miss::Config {
    use coherence::miss::{Config, Setup};
    let mut c = Config {
        case,
        setup: Setup {
            nodes: 5,
            // Only a dirty line has an owner.
            owner: if case == coherence::miss::Case::RemoteDirty {
                3
            } else {
                2
            },
            offset: 0x8100,
        },
        ..Config::default()
    };
    c.params.net_latency = magic::Cycles(30);
    c.params.mem_first_dword = magic::Cycles(18);
    c.coherence.acks = coherence::Acks::Requester;
    c.coherence.costs.decode = 6;
    c
}

/// A miss's result carries its configuration and version: its JSON reads
/// back equal, and the configuration measures it again, equal.
#[test]
fn a_misss_json_reads_back_equal_and_its_config_measures_it_again() {
    use coherence::miss::{self, Case, MissRun};
    assert_round_trip::<MissRun>();
    assert_round_trip::<miss::Config>();
    for case in Case::ALL {
        for c in [
            miss::Config {
                case,
                ..Default::default()
            },
            miss_config(case),
        ] {
            let r = miss::run_config(&c).unwrap();
            assert_eq!(r.config, c);
            assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
            let text = serde_json::to_string(&r).unwrap();
            let back: MissRun = serde_json::from_str(&text).unwrap();
            assert_eq!(back, r, "{text}");
            assert_eq!(miss::run_config(&back.config).unwrap(), r);
        }
        // The configuration is what ran: another machine, another latency.
        assert_ne!(
            miss::run_config(&miss_config(case)).unwrap().latency,
            miss::run_config(&miss::Config {
                case,
                ..Default::default()
            })
            .unwrap()
            .latency
        );
    }
}

/// A miss's JSON holds the counts behind its figures, and each figure is
/// what they give, exactly; one they do not give is refused, named.
#[test]
fn a_misss_figures_recompute_exactly_from_the_counts_in_its_json() {
    use coherence::miss::{self, Case, MissRun};
    let r = miss::run_config(&miss_config(Case::RemoteDirty)).unwrap();
    let j = serde_json::to_value(&r).unwrap();
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    let latency = n(&j, "latency_cycles");
    assert_eq!(latency, r.latency.0);
    assert_eq!(j["latency_us"].as_f64(), Some(latency as f64 / 100.0));
    let elapsed = n(&j, "occupancy_cycles");
    assert_eq!(elapsed, r.ledger.elapsed.0);
    let rows = j["occupancy"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        let busy = n(row, "busy");
        assert_eq!(
            row["mean"].as_f64(),
            Some(busy as f64 / n(row, "invocations") as f64),
            "{row}"
        );
        assert_eq!(
            row["pp_share"].as_f64(),
            Some(busy as f64 / elapsed as f64),
            "{row}"
        );
    }
    let units = j["units"].as_array().unwrap();
    assert_eq!(units.len(), 6 * 5);
    for u in units {
        assert_eq!(
            u["utilization"].as_f64(),
            Some(n(u, "busy") as f64 / elapsed as f64),
            "{u}"
        );
    }
    let refused = |edit: &dyn Fn(&mut Value)| {
        let mut v = j.clone();
        edit(&mut v);
        serde_json::from_value::<MissRun>(v)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = refused(&|v| v["latency_us"] = 1.9.into());
    assert_eq!(
        e,
        format!(
            "latency_us is 1.9, but the counts give {}",
            latency as f64 / 100.0
        )
    );
    let e = refused(&|v| v["occupancy"][0]["busy"] = 1.into());
    assert!(e.starts_with("occupancy (coherence."), "{e}");
    let e = refused(&|v| v["units"][1]["utilization"] = 0.5.into());
    assert!(
        e.starts_with("units (pp on node 0).utilization is 0.5"),
        "{e}"
    );
    let e = refused(&|v| v["case"] = "local-clean".into());
    assert_eq!(e, "case disagrees with the rest of the result");
    let e = refused(&|v| v["wall_s"] = 0.5.into());
    assert!(e.contains("unknown field `wall_s`"), "{e}");
}

/// A pipeline run carries its workload and version; its JSON keeps the
/// peers' counts at the top level (where the benchmarks read them), the
/// ledger's counters with figures that are exactly theirs, and reads back
/// equal; a figure its counts do not give, or the wall-clock time the
/// command prints beside it, is no part of it.
#[test]
fn a_pipelines_json_keeps_its_counts_and_reads_back_equal() {
    use protocols::pipeline::{self, Pattern, PipelineConfig, PipelineRun};
    assert_round_trip::<PipelineRun>();
    assert_round_trip::<PipelineConfig>();
    let c = PipelineConfig {
        nodes: 4,
        msgs: 3,
        pattern: Pattern::Shift,
        costs: Default::default(),
        budget: magic::params::DEFAULT_BUDGET,
    };
    let r = pipeline::run(&c).unwrap();
    assert_eq!(r.config, c);
    assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
    let j = serde_json::to_value(&r).unwrap();
    for (k, x) in [
        ("completion", r.result.completion),
        ("sum_completion", r.result.sum_completion),
        ("sum_latency", r.result.sum_latency),
        ("events", r.result.events),
        ("end_cycles", r.end.0),
        ("occupancy_cycles", r.ledger.elapsed.0),
    ] {
        assert_eq!(j[k].as_u64(), Some(x), "{k}");
    }
    let elapsed = r.ledger.elapsed.0 as f64;
    for row in j["occupancy"].as_array().unwrap() {
        let busy = row["busy"].as_u64().unwrap() as f64;
        let calls = row["invocations"].as_u64().unwrap() as f64;
        assert_eq!(row["mean"].as_f64(), Some(busy / calls), "{row}");
        assert_eq!(row["pp_share"].as_f64(), Some(busy / elapsed), "{row}");
    }
    for u in j["units"].as_array().unwrap() {
        let busy = u["busy"].as_u64().unwrap() as f64;
        assert_eq!(u["utilization"].as_f64(), Some(busy / elapsed), "{u}");
    }
    let back: PipelineRun = serde_json::from_value(j.clone()).unwrap();
    assert_eq!(back, r);
    assert_eq!(pipeline::run(&back.config).unwrap(), r);
    let refused = |edit: &dyn Fn(&mut Value)| {
        let mut v = j.clone();
        edit(&mut v);
        serde_json::from_value::<PipelineRun>(v)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = refused(&|v| v["occupancy"][0]["mean"] = 1.5.into());
    assert!(e.starts_with("occupancy (pipeline."), "{e}");
    assert!(e.contains(".mean is 1.5, but the counts give"), "{e}");
    // A run's figures are read against its configuration, checked
    // first; its last completion is within it.
    let e = refused(&|v| v["config"]["nodes"] = 0.into());
    assert_eq!(e, "config.nodes must be from 2 to 4096, got 0");
    let e = refused(&|v| v["config"]["costs"]["send"] = 0.into());
    assert!(e.starts_with("config.costs.send must be from 1 to "), "{e}");
    let e = refused(&|v| v["completion"] = (r.end.0 + 1).into());
    assert_eq!(
        e,
        format!(
            "completion is cycle {}, after the run's end at cycle {}",
            r.end.0 + 1,
            r.end.0
        )
    );
    let e = refused(&|v| v["wall_s"] = 0.5.into());
    assert!(e.contains("unknown field `wall_s`"), "{e}");
    let e = refused(&|v| v["config"]["nodes"] = "four".into());
    assert!(e.contains("invalid type"), "{e}");
    // The peers' figures hold together as a run gives them.
    let e = refused(&|v| v["sum_latency"] = u64::MAX.into());
    assert!(
        e.starts_with("sum_latency is 18446744073709551615, more than the "),
        "{e}"
    );
    let e = refused(&|v| v["sum_completion"] = (12 * r.result.completion + 1).into());
    assert!(e.starts_with("sum_completion is "), "{e}");
    let e = refused(&|v| v["events"] = 0.into());
    assert_eq!(
        e,
        "events is 0, where a clean run of 12 messages counts 1548"
    );
    let e = refused(&|v| v["occupancy_booked_cycles"] = u64::MAX.into());
    assert!(e.contains("past the last cycle a run reaches"), "{e}");
}

/// A fetch-and-add's result carries its configuration and version, keeps
/// its counts, its ledger's figures exactly theirs, and reads back equal;
/// the configuration measures it again, equal.
#[test]
fn a_fetch_ops_json_keeps_its_counts_and_reads_back_equal() {
    use protocols::user::experiments::{fetch_op_config, FetchOpConfig, FetchOpResult};
    assert_round_trip::<FetchOpResult>();
    assert_round_trip::<FetchOpConfig>();
    let mut c = FetchOpConfig {
        target: 3,
        ..Default::default()
    };
    c.params.net_latency = magic::Cycles(30);
    c.user.costs.receive = 10;
    for c in [FetchOpConfig::default(), c] {
        let r = fetch_op_config(&c).unwrap().result();
        assert_eq!(r.config, c);
        assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
        assert_eq!((r.old, r.new), (40, 42));
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["latency_cycles"].as_u64(), Some(r.latency.0));
        assert_eq!(j["startup_cycles"].as_u64(), Some(r.startup.0));
        let elapsed = j["occupancy_cycles"].as_u64().unwrap() as f64;
        for row in j["occupancy"].as_array().unwrap() {
            let busy = row["busy"].as_u64().unwrap() as f64;
            let calls = row["invocations"].as_u64().unwrap() as f64;
            assert_eq!(row["mean"].as_f64(), Some(busy / calls), "{row}");
            assert_eq!(row["pp_share"].as_f64(), Some(busy / elapsed), "{row}");
        }
        let back: FetchOpResult = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(back, r);
        assert_eq!(fetch_op_config(&back.config).unwrap().result(), r);
        let refused = |edit: &dyn Fn(&mut Value)| {
            let mut v = j.clone();
            edit(&mut v);
            serde_json::from_value::<FetchOpResult>(v)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        let e = refused(&|v| v["occupancy"][0]["pp_share"] = 0.5.into());
        assert!(e.contains(".pp_share is 0.5, but the counts give"), "{e}");
        let e = refused(&|v| v["startup_cycles"] = (r.latency.0 + 1).into());
        assert!(e.starts_with("startup_cycles is "), "{e}");
    }
}

/// A remap's result carries its configuration and version and reads back
/// equal; the configuration measures it again, equal; a technique that
/// disagrees with the configuration's is refused.
#[test]
fn a_remaps_json_reads_back_equal_and_its_config_measures_it_again() {
    use protocols::user::experiments::{remap_config, RemapConfig, RemapResult, Technique};
    assert_round_trip::<RemapResult>();
    assert_round_trip::<RemapConfig>();
    for technique in [Technique::Holdoff, Technique::Invalidate, Technique::Tlb] {
        let mut c = RemapConfig {
            technique,
            ..Default::default()
        };
        c.params.net_latency = magic::Cycles(30);
        c.user.costs.receive = 10;
        for c in [
            RemapConfig {
                technique,
                ..Default::default()
            },
            c,
        ] {
            let (r, _) = remap_config(&c).unwrap();
            assert_eq!(r.config, c);
            assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
            assert!(r.data_ok);
            let j = serde_json::to_value(&r).unwrap();
            assert_eq!(j["total_cycles"].as_u64(), Some(r.total_cycles));
            let back: RemapResult = serde_json::from_value(j.clone()).unwrap();
            assert_eq!(back, r);
            assert_eq!(remap_config(&back.config).unwrap().0, r);
            // Its total within its budget, the OS's wait within its total.
            for (k, x, says) in [
                ("total_cycles", u64::MAX, "past the run's budget"),
                ("os_wait_cycles", r.total_cycles + 1, "more than the"),
            ] {
                let mut v = j.clone();
                v[k] = x.into();
                let e = serde_json::from_value::<RemapResult>(v)
                    .unwrap_err()
                    .to_string();
                assert!(e.starts_with(k) && e.contains(says), "{e}");
            }
            let mut v = j.clone();
            v["technique"] = if technique == Technique::Tlb {
                "holdoff"
            } else {
                "tlb"
            }
            .into();
            let e = serde_json::from_value::<RemapResult>(v).unwrap_err();
            assert_eq!(
                e.to_string(),
                "technique disagrees with the rest of the result"
            );
            // Where the cycles went is in it, and a figure of it its
            // counters do not give is refused.
            assert!(r.ledger.elapsed.0 > 0 && !j["occupancy"].as_array().unwrap().is_empty());
            let mut v = j.clone();
            v["occupancy"][0]["mean"] = 1e9.into();
            let e = serde_json::from_value::<RemapResult>(v).unwrap_err();
            assert!(e.to_string().starts_with("occupancy (user."), "{e}");
        }
    }
}

/// A sharing run carries its workload, machine and protocol options and
/// the kit's version; its JSON keeps the counts, the cycles per hint and
/// per invalidation exactly what they give, and each phase's ledger with
/// its counters; it reads back equal, and a figure its counts do not give
/// is refused, named.
#[test]
fn a_sharing_runs_json_keeps_its_counts_and_reads_back_equal() {
    use coherence::sharing::{self, Config, Sharing, SharingRun};
    let mut c = Config {
        sharing: Sharing {
            readers: 10,
            evicting: 4,
        },
        ..Default::default()
    };
    c.coherence.format = coherence::DirFormat::DynamicPointer;
    c.coherence.costs.decode = 6;
    c.params.net_latency = magic::Cycles(25);
    let r = sharing::run_config(&c).unwrap();
    assert_eq!(r.config, c);
    assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
    assert_eq!((r.hints, r.invalidations), (4, 6));
    let j = serde_json::to_value(&r).unwrap();
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert_eq!(j["config"]["coherence"]["costs"]["decode"], 6);
    assert_eq!(j["directory"], "dynamic-pointer");
    assert_eq!(n(&j, "nodes"), 12);
    assert_eq!(
        j["per_hint"].as_f64(),
        Some(n(&j, "hint_cycles") as f64 / n(&j, "hints") as f64)
    );
    assert_eq!(
        j["per_invalidation"].as_f64(),
        Some(n(&j, "write_cycles") as f64 / n(&j, "invalidations") as f64)
    );
    assert_eq!(n(&j, "write_latency_cycles"), r.write_latency.0);
    for (phase, l) in [
        ("hint_ledger", &r.hint_ledger),
        ("write_ledger", &r.write_ledger),
    ] {
        let elapsed = n(&j[phase], "occupancy_cycles");
        assert_eq!(elapsed, l.elapsed.0, "{phase}");
        let rows = j[phase]["occupancy"].as_array().unwrap();
        assert!(!rows.is_empty(), "{phase}");
        for row in rows {
            assert_eq!(
                row["pp_share"].as_f64(),
                Some(n(row, "busy") as f64 / elapsed as f64),
                "{phase}: {row}"
            );
        }
    }
    let back: SharingRun = serde_json::from_value(j.clone()).unwrap();
    assert_eq!(back, r);
    let refused = |edit: &dyn Fn(&mut Value)| {
        let mut v = j.clone();
        edit(&mut v);
        serde_json::from_value::<SharingRun>(v)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = refused(&|v| v["per_hint"] = 1.5.into());
    assert!(
        e.starts_with("per_hint is 1.5, but the counts give "),
        "{e}"
    );
    let e = refused(&|v| v["hint_cycles"] = 1.into());
    assert!(e.starts_with("per_hint is "), "{e}");
    // Every reader evicting: no invalidation to divide the write among,
    // and no figure per invalidation (null, not the whole write's).
    let all = Config {
        sharing: Sharing {
            readers: 8,
            evicting: 8,
        },
        ..c.clone()
    };
    let none = sharing::run_config(&all).unwrap();
    assert_eq!((none.invalidations, none.per_invalidation()), (0, None));
    assert!(none.write_cycles > 0);
    let nj = serde_json::to_value(&none).unwrap();
    assert_eq!(nj["per_invalidation"], Value::Null);
    assert_eq!(
        serde_json::from_value::<SharingRun>(nj.clone()).unwrap(),
        none
    );
    let mut made_up = nj.clone();
    made_up["per_invalidation"] = 8.0.into();
    let e = serde_json::from_value::<SharingRun>(made_up)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "per_invalidation is 8, but no invalidation was sent");
    let e = refused(&|v| v["write_ledger"]["occupancy"][0]["busy"] = 1.into());
    assert!(e.starts_with("write_ledger: occupancy (coherence."), "{e}");
    let e = refused(&|v| v["readers"] = 3.into());
    assert!(
        e.starts_with("readers disagrees with the result's config, which gives "),
        "{e}"
    );
    let e = refused(&|v| v["nodes"] = 1000.into());
    assert!(
        e.starts_with("nodes disagrees with the result's config, which gives "),
        "{e}"
    );
    let e = refused(&|v| v["wall_s"] = 0.5.into());
    assert!(e.contains("unknown field `wall_s`"), "{e}");
}

/// The AM suite's results and the cost study's refuse, naming it, a figure
/// their counts do not give (a fit its curve does not give, a total its
/// features do not sum to), and read back what they wrote.
#[test]
fn an_am_results_json_its_counts_do_not_give_is_refused_naming_the_figure() {
    use protocols::am::config::PlatformConfig;
    use protocols::am::costs::{self, CostsConfig, Delivery, FeatureCosts};
    use protocols::am::suite::{self, logp_config, LogpResult, SuiteConfig, SuiteResult};
    fn refused<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
        r: &T,
        edit: &dyn Fn(&mut Value),
    ) -> String {
        let mut v = serde_json::to_value(r).unwrap();
        assert_eq!(&serde_json::from_value::<T>(v.clone()).unwrap(), r);
        edit(&mut v);
        serde_json::from_value::<T>(v)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    }
    let l = logp_config(&PlatformConfig::sp(3)).unwrap();
    let study = |c: &CostsConfig| costs::run_config(c).unwrap();
    let tables = |b: &str| {
        suite::run(&SuiteConfig {
            platform: PlatformConfig::cm5(3),
            benchmark: Some(b.into()),
        })
        .unwrap()
    };
    let (array, bw) = (tables("array-transfer"), tables("bandwidth"));
    let finite = study(&CostsConfig {
        protocol: Delivery::Finite,
        words: 16,
        packet_words: 4,
        ..CostsConfig::default()
    });
    for (e, says) in [
        (
            refused::<LogpResult>(&l, &|v| v["ring_us"] = 9.5.into()),
            "ring_us is 9.5, but the counts give",
        ),
        (
            refused::<LogpResult>(&l, &|v| v["counts"]["bulk"][3]["ticks"] = 1.into()),
            "bulk.startup_us is ",
        ),
        (
            refused::<LogpResult>(&l, &|v| v["counts"]["ring"]["repeats"] = 0.into()),
            "counts.ring: repeats must be from 1",
        ),
        (
            refused::<LogpResult>(&l, &|v| v["counts"]["bulk"][3]["repeats"] = 0.into()),
            "counts.bulk[3]: repeats must be from 1",
        ),
        (
            refused::<LogpResult>(&l, &|v| v["config"]["nodes"] = "3".into()),
            "invalid type",
        ),
        (
            refused::<LogpResult>(&l, &|v| v["platform"] = "cm5".into()),
            r#"platform (a repeat of config.platform) is "cm5", but config.platform is "sp""#,
        ),
        (
            refused::<SuiteResult>(&array, &|v| v["tables"][0]["rows"][0][1] = 9.5.into()),
            "array-transfer: rows[0][1] is 9.5, but the counts give",
        ),
        (
            refused::<SuiteResult>(&array, &|v| v["tables"][1]["rows"][0][2] = 9.5.into()),
            "rows[0][2] is 9.5, but the counts give",
        ),
        (
            refused::<SuiteResult>(&bw, &|v| v["tables"][1]["rows"][2][1] = 9.5.into()),
            "bandwidth r-infinity and n1/2: rows[2][1] is 9.5",
        ),
        (
            refused::<SuiteResult>(&bw, &|v| v["tables"][0]["counts"][0][1] = Value::Null),
            "bandwidth: rows[0][1] is no label, count or figure with the counts",
        ),
        (
            refused::<FeatureCosts>(&finite, &|v| v["total"]["total"] = 1.into()),
            "total.total is 1, but the features sum to",
        ),
        (
            refused::<FeatureCosts>(&finite, &|v| v["packets"] = 5.into()),
            "packets is 5, but 16 words in packets of 4 take 4",
        ),
        (
            refused::<FeatureCosts>(&finite, &|v| v["out_of_order"] = 5.into()),
            "out_of_order is 5, more than the 4 packets that arrive",
        ),
    ] {
        assert!(e.contains(says), "{e}, not {says}");
    }
}

/// A saved result whose configuration no run takes is refused on reading,
/// naming the field where the result holds it, as its run refuses it.
#[test]
fn a_result_whose_config_is_out_of_range_is_refused_on_reading_naming_the_field() {
    use protocols::am::config::PlatformConfig;
    use protocols::am::suite::{logp_config, LogpResult};
    use protocols::user::experiments::{fetch_op, fetch_op_config, FetchOpResult};
    fn refused<T: serde::Serialize + serde::de::DeserializeOwned>(
        r: &T,
        path: &[&str],
        to: Value,
    ) -> String {
        let mut v = serde_json::to_value(r).unwrap();
        let mut at = &mut v;
        for p in path {
            at = at.get_mut(*p).unwrap_or_else(|| panic!("{path:?}"));
        }
        *at = to;
        match serde_json::from_value::<T>(v) {
            Ok(_) => panic!("{path:?}: read back"),
            Err(e) => e.to_string(),
        }
    }
    let f = fetch_op(1, magic::MagicParams::default()).unwrap().result();
    for (path, to) in [
        (&["config", "target"][..], Value::from(4096)),
        (&["config", "target"], Value::from(u32::MAX)),
        (&["config", "params", "pi_out"], Value::from(u64::MAX)),
        (&["config", "params", "data_buffers"], Value::from(0)),
    ] {
        let e = refused::<FetchOpResult>(&f, path, to.clone());
        assert!(
            e.starts_with(&format!("{} must be ", path.join("."))),
            "{e}"
        );
        // The run refuses it too, naming the same field.
        let mut c = f.config.clone();
        match path.last() {
            Some(&"target") => c.target = to.as_u64().unwrap() as u32,
            Some(&"pi_out") => c.params.pi_out = magic::Cycles(u64::MAX),
            _ => c.params.data_buffers = 0,
        }
        let run = fetch_op_config(&c).err().unwrap().to_string();
        assert!(run.contains(path.last().unwrap()), "{run}");
    }
    let m = coherence::miss::run_config(&miss_config(coherence::miss::Case::RemoteDirty)).unwrap();
    for (path, to) in [
        (&["config", "setup", "offset"][..], Value::from(u64::MAX)),
        (&["config", "setup", "offset"], Value::from(1u64 << 62)),
        (&["config", "setup", "owner"], Value::from(0)),
        (&["config", "params", "swq_capacity"], Value::from(u64::MAX)),
    ] {
        let e = refused::<coherence::miss::MissRun>(&m, path, to);
        assert!(
            e.starts_with(&format!("{} must be ", path.join("."))),
            "{e}"
        );
    }
    let s = coherence::sharing::run_config(&coherence::sharing::Config::default()).unwrap();
    let e = refused::<coherence::sharing::SharingRun>(
        &s,
        &["config", "params", "mem_bytes"],
        Value::from(u64::MAX),
    );
    assert!(e.starts_with("config.params.mem_bytes must be "), "{e}");
    let l = logp_config(&PlatformConfig::sp(3)).unwrap();
    let e = refused::<LogpResult>(&l, &["config", "nodes"], Value::from(2));
    assert!(e.starts_with("config.nodes must be "), "{e}");
    let run = logp_config(&PlatformConfig::sp(2))
        .err()
        .unwrap()
        .to_string();
    assert!(run.starts_with("nodes must be "), "{run}");
}

/// The pipeline's handlers take any message of theirs a protocol author
/// posts, and a machine of one node, without a panic: a forged packet
/// number ends its message, and one node sends to itself.
#[test]
fn the_pipelines_handlers_take_forged_messages_and_one_node() {
    use magic::{Cycles, Magic, NodeId};
    use protocols::pipeline::{self, Pattern, PipeMsg, Pipeline, PipelineConfig};
    let cfg = PipelineConfig {
        nodes: 2,
        msgs: 1,
        pattern: Pattern::Ring,
        costs: Default::default(),
        budget: magic::params::DEFAULT_BUDGET,
    };
    for forged in [
        PipeMsg::Next {
            dst: NodeId(1),
            k: u64::MAX,
            start: Cycles(0),
        },
        PipeMsg::Packet {
            k: u64::MAX,
            start: Cycles(u64::MAX / 2),
        },
        PipeMsg::Packet {
            k: 31,
            start: Cycles(u64::MAX / 2),
        },
    ] {
        let mut m = pipeline::build(&cfg).unwrap();
        let msg = m.msg(NodeId(0), forged);
        m.post(NodeId(0), Cycles(0), msg).unwrap();
        m.run();
    }
    for pattern in [Pattern::Ring, Pattern::Shift, Pattern::Rand] {
        let config = PipelineConfig {
            nodes: 1,
            pattern,
            ..cfg
        };
        let mut m = Magic::with(pipeline::pipeline_params(), 1, &Pipeline { config }).unwrap();
        let post = m.msg(NodeId(0), PipeMsg::Post);
        m.post(NodeId(0), Cycles(0), post).unwrap();
        assert!(m.run().is_clean());
        assert_eq!(pipeline::completed(&m), 1);
    }
}

/// A saved miss's word expected is the one its case places, and its
/// latency within its budget; a fetch-and-add's latency too.
#[test]
fn a_saved_miss_or_fetch_ops_edited_check_or_latency_is_refused() {
    use coherence::miss::{self, Case, MissRun};
    use protocols::user::experiments::{fetch_op_config, FetchOpConfig, FetchOpResult};
    for case in [Case::RemoteDirty, Case::RemoteClean] {
        let r = miss::run_config(&miss_config(case)).unwrap();
        let j = serde_json::to_value(&r).unwrap();
        let edit = |k: &str, x: u64| {
            let mut v = j.clone();
            v[k] = x.into();
            serde_json::from_value::<MissRun>(v)
                .unwrap_err()
                .to_string()
        };
        // A failed check edited to pass: value and expected both changed.
        let mut v = j.clone();
        v["value"] = 5.into();
        v["expected"] = 5.into();
        let e = serde_json::from_value::<MissRun>(v)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("expected is 0x5, where the "), "{e}");
        let e = edit("latency_cycles", u64::MAX);
        assert!(e.contains("past the run's budget"), "{e}");
    }
    let r = fetch_op_config(&FetchOpConfig::default()).unwrap().result();
    let mut v = serde_json::to_value(&r).unwrap();
    v["latency_cycles"] = u64::MAX.into();
    let e = serde_json::from_value::<FetchOpResult>(v)
        .unwrap_err()
        .to_string();
    assert!(e.contains("past the run's budget"), "{e}");
    // A budget the latency fits in but the run does not: the run goes on
    // to its last event (occupancy_cycles), and could not have.
    let mut v = serde_json::to_value(&r).unwrap();
    assert!(r.latency.0 < 200 && v["occupancy_cycles"].as_u64() > Some(200));
    v["config"]["params"]["budget"] = 200.into();
    let e = serde_json::from_value::<FetchOpResult>(v)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("occupancy_cycles is "), "{e}");
    assert!(e.contains("past the run's budget of 200"), "{e}");
    // The word it finds and what it adds are the experiment's.
    assert_eq!((r.old, r.new), (40, 42));
    let mut v = serde_json::to_value(&r).unwrap();
    v["old"] = 7.into();
    let e = serde_json::from_value::<FetchOpResult>(v)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "old and new are 7 and 42, where the fetch-and-add finds 40 and adds 2"
    );
}

/// The refusal of `j`, edited by `edit`, read back as a `T` (a panic if it
/// reads back).
fn refusal<T: serde::de::DeserializeOwned>(j: &Value, edit: &dyn Fn(&mut Value)) -> String {
    let mut v = j.clone();
    edit(&mut v);
    match serde_json::from_value::<T>(v) {
        Ok(_) => panic!("an edited result read back"),
        Err(e) => e.to_string(),
    }
}

/// A transfer's JSON is read against its configuration: one no run takes is
/// refused as the run refuses it, named under `config`; its lines are the
/// components its bytes, offsets, sends and receives are cut into, and its
/// stages' counts lie within the run.
#[test]
fn a_transfers_json_is_held_to_its_config_its_lines_and_its_span() {
    let o = run(&Config::default()).unwrap();
    let j = o.json();
    let refused = |edit: &dyn Fn(&mut Value)| refusal::<Outcome>(&j, edit);
    for (edit, says) in [
        (
            &(|v: &mut Value| {
                v["config"]["bytes"] = 0.into();
                v["bytes"] = 0.into();
            }) as &dyn Fn(&mut Value),
            "config.bytes must be from 1 to 1048576, got 0",
        ),
        (
            &|v: &mut Value| v["config"]["params"]["data_buffers"] = 0.into(),
            "config.params.data_buffers must be ",
        ),
        (
            &|v: &mut Value| v["config"]["params"]["mem_first_dword"] = 1_000_000_000_000u64.into(),
            "config.params.mem_first_dword must be ",
        ),
        (
            &|v: &mut Value| v["config"]["handler"] = serde_json::json!({"Chunked": 0}),
            "config.chunk must be from 1 to the data-buffer pool",
        ),
        (
            &|v: &mut Value| v["config"]["sends"] = 0.into(),
            "config.sends must be from 1 to ",
        ),
        (
            &|v: &mut Value| v["lines"] = 0.into(),
            "lines is 0, but 4096 bytes at the config's offsets, sends and receives come in 32",
        ),
        (
            &|v: &mut Value| v["lines"] = 1_000_000_000u64.into(),
            "lines is 1000000000, but ",
        ),
        (
            &|v: &mut Value| v["network_busy_cycles"] = 10_000_000_000u64.into(),
            "network_busy_cycles is 10000000000, more than the ",
        ),
        (
            &|v: &mut Value| v["sender_busy_cycles"] = 1_000_000_000u64.into(),
            "sender_busy_cycles is 1000000000, more than the ",
        ),
        (
            &|v: &mut Value| v["landing_cycles"] = 10_000_000_000u64.into(),
            "landing_cycles is 10000000000, more than the ",
        ),
    ] {
        let e = refused(edit);
        assert!(e.starts_with(says), "{e}, not {says}");
    }
    // Lines cut at the destination's line ends, and at every send's and
    // receive's: each shape reads back equal.
    for c in [
        Config {
            bytes: 1000,
            src_offset: 5,
            dst_offset: 77,
            sends: 3,
            receives: 5,
            ..Config::default()
        },
        Config {
            bytes: 300,
            dst_offset: 100,
            sends: 7,
            ..Config::default()
        },
        Config {
            direction: Direction::Bi,
            bytes: 129,
            src_offset: 127,
            ..Config::default()
        },
    ] {
        let o = run(&c).unwrap();
        let back: Outcome = serde_json::from_value(o.json()).unwrap();
        assert_eq!(back, o, "{c:?}");
    }
}

/// A miss whose load returned another word than its case places is a
/// failed run: read back, it is refused, naming `value`.
#[test]
fn a_saved_miss_whose_load_returned_another_word_is_refused() {
    use coherence::miss::{self, Case, MissRun};
    let r = miss::run_config(&miss_config(Case::RemoteDirty)).unwrap();
    let mut v = serde_json::to_value(&r).unwrap();
    v["value"] = 0.into();
    let e = serde_json::from_value::<MissRun>(v)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "value is 0x0, where the load of the RemoteDirty case returns 0x7777777777777777"
    );
}

/// A remap's TLB counts are within what its send looks up: a lookup a page
/// moved and one again a stale use, a miss an interrupt each.
#[test]
fn a_saved_remaps_tlb_counts_are_held_to_its_lookups() {
    use protocols::user::experiments::{remap_config, RemapConfig, RemapResult, Technique, PAGES};
    let (r, _) = remap_config(&RemapConfig {
        technique: Technique::Tlb,
        ..RemapConfig::default()
    })
    .unwrap();
    assert!(r.tlb_hits > 0, "{r:?}");
    let j = serde_json::to_value(&r).unwrap();
    let refused = |k: &str, x: u64| {
        let mut v = j.clone();
        v[k] = x.into();
        serde_json::from_value::<RemapResult>(v)
            .unwrap_err()
            .to_string()
    };
    let e = refused("tlb_hits", 1_000_000_000_000_000_000);
    assert!(
        e.starts_with(&format!(
            "tlb_hits is 1000000000000000000, more than the {PAGES} pages moved"
        )),
        "{e}"
    );
    let e = refused("tlb_misses", r.processor_interrupts + 1);
    assert!(e.starts_with("tlb_misses is "), "{e}");
    let mut v = j.clone();
    v["config"]["params"]["mem_bytes"] = 256.into();
    let e = serde_json::from_value::<RemapResult>(v)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("config.mem_bytes"), "{e}");
}

/// A sharing run's configuration is one its run takes, and its hints are
/// at most one an evicting reader.
#[test]
fn a_saved_sharing_runs_config_and_hints_are_held_to_its_run() {
    use coherence::sharing::{self, Config, SharingRun};
    let r = sharing::run_config(&Config::default()).unwrap();
    let j = serde_json::to_value(&r).unwrap();
    let mut v = j.clone();
    let over = r.sharing.readers + 1;
    v["evicting"] = over.into();
    v["config"]["sharing"]["evicting"] = over.into();
    let e = serde_json::from_value::<SharingRun>(v)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("config.sharing.evicting must be "), "{e}");
    let mut v = j.clone();
    v["hints"] = 1_000_000_000_000u64.into();
    v["per_hint"] = (r.hint_cycles as f64 / 1e12).into();
    let e = serde_json::from_value::<SharingRun>(v)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("hints is 1000000000000, more than the "),
        "{e}"
    );
}

/// A pipeline's end and its ledger's span lie within its budget.
#[test]
fn a_saved_pipelines_end_is_within_its_budget() {
    use protocols::pipeline::{self, Pattern, PipelineConfig, PipelineRun};
    let r = pipeline::run(&PipelineConfig {
        nodes: 4,
        msgs: 2,
        pattern: Pattern::Ring,
        costs: Default::default(),
        budget: magic::params::DEFAULT_BUDGET,
    })
    .unwrap();
    let j = serde_json::to_value(&r).unwrap();
    for k in ["end_cycles", "occupancy_cycles"] {
        let mut v = j.clone();
        v[k] = 1_000_000_000_000_000u64.into();
        let e = serde_json::from_value::<PipelineRun>(v)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("{k} is 1000000000000000, past the run's budget")),
            "{e}"
        );
    }
}

/// A suite run's tables are those its configuration makes, in order, and
/// its configuration one `run` takes; a whole suite (the interrupt load,
/// the fits and the operations among it) reads back equal.
#[test]
fn a_saved_suites_tables_are_its_configs_in_order() {
    use protocols::am::config::PlatformConfig;
    use protocols::am::suite::{self, SuiteConfig, SuiteResult};
    let ring = suite::run(&SuiteConfig {
        platform: PlatformConfig::cm5(3),
        benchmark: Some("ring".into()),
    })
    .unwrap();
    let j = serde_json::to_value(&ring).unwrap();
    let refused = |edit: &dyn Fn(&mut Value)| refusal::<SuiteResult>(&j, edit);
    for (e, says) in [
        (
            refused(&|v| v["tables"] = serde_json::json!([])),
            r#"tables[0].benchmark is none, where the config's run makes "ring""#,
        ),
        (
            refused(&|v| v["tables"][0]["benchmark"] = "not-a-benchmark".into()),
            r#"tables[0].benchmark is "not-a-benchmark", where the config's run makes "ring""#,
        ),
        (
            refused(&|v| v["config"]["benchmark"] = "swap".into()),
            r#"tables[0].benchmark is "ring", where the config's run makes "swap""#,
        ),
        (
            refused(&|v| v["config"]["benchmark"] = "nonsense".into()),
            r#"config.benchmark is "nonsense", none of one-to-one"#,
        ),
        (
            refused(&|v| v["config"]["benchmark"] = "interrupt".into()),
            "config.benchmark: interrupt-driven reception is CMAML's",
        ),
        (
            refused(&|v| v["config"]["platform"]["nodes"] = 1.into()),
            "config.platform.nodes must be ",
        ),
    ] {
        assert!(e.starts_with(says), "{e}, not {says}");
    }
    let whole = suite::run(&SuiteConfig {
        platform: PlatformConfig::cm5_cmaml(3),
        benchmark: None,
    })
    .unwrap();
    let back: SuiteResult = serde_json::from_value(serde_json::to_value(&whole).unwrap()).unwrap();
    assert_eq!(back, whole);
}

/// A flat or falling curve defines no bandwidth: the fit's bandwidth and
/// n1/2 are NaN, never infinite or negative; a LogP result with such a fit
/// writes them `null` and reads that back.
#[test]
fn a_flat_or_falling_curve_fits_no_bandwidth_and_its_logp_reads_back() {
    use protocols::am::config::PlatformConfig;
    use protocols::am::suite::{fit, logp_config, LogP, LogpCounts, LogpResult};
    for points in [
        &[(100.0, 5.0), (200.0, 5.0)][..],
        &[(100.0, 5.0), (200.0, 4.0), (300.0, 3.0)],
        &[(0.0, 0.0), (100.0, 0.0)],
    ] {
        let b = fit(points);
        assert!(
            b.bandwidth_mb_s.is_nan() && b.n_half_bytes.is_nan(),
            "{points:?}: {b:?}"
        );
    }
    let l = logp_config(&PlatformConfig::sp(3)).unwrap();
    let mut counts = serde_json::to_value(&l.logp.counts).unwrap();
    for p in counts["bulk"].as_array_mut().unwrap() {
        p["ticks"] = 1_000_000.into();
        p["repeats"] = 4.into();
    }
    let counts: LogpCounts = serde_json::from_value(counts).unwrap();
    let flat = LogpResult {
        logp: LogP::from_counts(l.logp.platform.clone(), counts),
        ..l
    };
    assert!(flat.logp.bulk.startup_us > 0.0, "{:?}", flat.logp.bulk);
    let j = serde_json::to_value(&flat).unwrap();
    assert!(j["bulk"]["bandwidth_mb_s"].is_null(), "{}", j["bulk"]);
    assert!(j["bulk"]["n_half_bytes"].is_null(), "{}", j["bulk"]);
    let back: LogpResult = serde_json::from_value(j.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), j);
    // A figure the counts do give is still held to them.
    let mut v = j.clone();
    v["bulk"]["startup_us"] = Value::Null;
    let e = serde_json::from_value::<LogpResult>(v)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("bulk.startup_us is NaN, but the counts give"),
        "{e}"
    );
}

/// A cost study's acknowledgements are those its protocol sends on its
/// network: none for a single packet or an ordered network, one for a
/// finite message, one a packet for a stream.
#[test]
fn a_saved_cost_studys_acks_are_its_protocols() {
    use protocols::am::costs::{self, CostsConfig, Delivery, FeatureCosts, Network};
    for (protocol, network, most) in [
        (Delivery::Single, Network::Cm5, 0),
        (Delivery::Finite, Network::Cm5, 1),
        (Delivery::Finite, Network::Ordered, 0),
        (Delivery::Indefinite, Network::Cm5, 4),
    ] {
        let c = CostsConfig {
            protocol,
            words: if protocol == Delivery::Single { 4 } else { 16 },
            packet_words: 4,
            network,
        };
        let r = costs::run_config(&c).unwrap();
        assert!(r.acks <= most, "{c:?}: {r:?}");
        let mut v = serde_json::to_value(&r).unwrap();
        v["acks"] = (most + 1).into();
        let e = serde_json::from_value::<FeatureCosts>(v)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("acks is {}, more than the {most} ", most + 1)),
            "{e}"
        );
    }
}
