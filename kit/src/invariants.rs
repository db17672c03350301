//! The rules every result keeps, whatever its inputs: checked in one place,
//! on what every experiment's run becomes (its report's JSON), before
//! anything is printed or written. A result that breaks one is a model bug:
//! the run fails (exit status 1) naming the figure, the rule and its
//! figures, instead of passing a figure the machine could not have made.
//!
//! - **Each handler row** of an occupancy ledger keeps its counters' rules
//!   ([`magic::HandlerStats::invariants`]): instructions fit the issue width
//!   times the cycles the handler neither waited nor stalled, its loads and
//!   stores are among its instructions, `1 ≤ max ≤ busy ≤ invocations ×
//!   max`.
//! - **A start-up's parts add up to it**, and it fits in the run's total:
//!   so the total is at least each part.
//! - **Every occupancy ledger** the run kept keeps all of
//!   [`magic::Ledger::invariants`] ([`check`]).
//!
//! The Active Message platforms' reports hold benchmark tables, with no
//! ledger or start-up of MAGIC's: their figures are the fits' and the
//! benchmarks' own.
//!
//! ```
//! let good = serde_json::json!({
//!     "total_cycles": 300,
//!     "startup": { "initiation": 41, "setup_verification": 116, "total": 157 },
//!     "occupancy": [{ "handler": "t.go", "invocations": 1, "busy": 3, "max": 3,
//!                     "outbox_stall": 0, "wait": 0, "instructions": 6, "loads": 0, "stores": 1 }],
//! });
//! assert_eq!(flashkit::invariants::hold(&good, 2), Ok(()));
//! let e = flashkit::invariants::hold(&good, 1).unwrap_err();
//! assert_eq!(e.at, "occupancy[0] (t.go)");
//! ```

use serde_json::Value;

/// A figure of a result that breaks a rule every result keeps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a figure breaks a rule every result keeps (a model bug): {at}: {rule}, but {figures}")]
pub struct Broken {
    /// Where in the result: a JSON path, with the handler's name for a
    /// ledger row (`occupancy[3] (transfer.send_step)`).
    pub at: String,
    /// The rule, in words.
    pub rule: &'static str,
    /// The figures that break it.
    pub figures: String,
}

/// Check every rule on a result's JSON, made on a machine whose protocol
/// processors issue `issue_width` instructions a cycle.
pub fn hold(result: &Value, issue_width: u32) -> Result<(), Broken> {
    walk(result, "", issue_width)
}

/// Check a result whole: its JSON ([`hold`]) and every occupancy ledger its
/// run kept, each held to all of [`magic::Ledger::invariants`] (unit rows
/// and the rows' sums too, which the JSON may leave out). Every MAGIC
/// experiment of the kit ends here.
pub fn check(result: &Value, ledgers: &[&magic::Ledger], issue_width: u32) -> Result<(), Broken> {
    hold(result, issue_width)?;
    for l in ledgers {
        l.invariants(issue_width).map_err(|v| Broken {
            at: format!("the ledger's {}", v.row),
            rule: v.rule,
            figures: v.figures,
        })?;
    }
    Ok(())
}

fn walk(v: &Value, at: &str, width: u32) -> Result<(), Broken> {
    match v {
        Value::Object(m) => {
            if m.contains_key("handler") && m.contains_key("instructions") {
                row(v, at, width)?;
            }
            if let Some(Value::Object(s)) = m.get("startup") {
                startup(s, m.get("total_cycles").and_then(Value::as_u64), at)?;
            }
            for (k, x) in m {
                let here = crate::json::dotted(at, k);
                walk(x, &here, width)?;
            }
            Ok(())
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| walk(x, &format!("{at}[{i}]"), width)),
        _ => Ok(()),
    }
}

/// A ledger's handler row: its counters keep [`magic::HandlerStats`]'s rules.
fn row(v: &Value, at: &str, width: u32) -> Result<(), Broken> {
    let name = v.get("handler").and_then(Value::as_str).unwrap_or("?");
    let at = format!("{at} ({name})");
    let stats: magic::HandlerStats = serde_json::from_value(v.clone()).map_err(|e| Broken {
        at: at.clone(),
        rule: "a handler row holds whole counts",
        figures: e.to_string(),
    })?;
    stats
        .invariants(width)
        .map_err(|(rule, figures)| Broken { at, rule, figures })
}

/// A start-up: its parts add up to its total, which fits in the run's.
fn startup(
    s: &serde_json::Map<String, Value>,
    run_total: Option<u64>,
    at: &str,
) -> Result<(), Broken> {
    let at = if at.is_empty() {
        "startup".to_string()
    } else {
        format!("{at}.startup")
    };
    let Some(total) = s.get("total").and_then(Value::as_u64) else {
        return Ok(());
    };
    let parts: u128 = s
        .iter()
        .filter(|(k, _)| *k != "total")
        .filter_map(|(_, x)| x.as_u64())
        .map(u128::from)
        .sum();
    if parts != u128::from(total) {
        return Err(Broken {
            at,
            rule: "the start-up's parts add up to it",
            figures: format!("parts adding to {parts}, a total of {total}"),
        });
    }
    match run_total {
        Some(all) if total > all => Err(Broken {
            at,
            rule: "the start-up fits in the run",
            figures: format!("a start-up of {total} in a run of {all}"),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(instructions: u64, loads: u64) -> Value {
        json!({ "node": 0, "handler": "t.go", "invocations": 2, "busy": 10, "max": 6,
                "outbox_stall": 1, "wait": 2, "instructions": instructions,
                "loads": loads, "stores": 0, "mean": 5.0, "pp_share": 0.1 })
    }

    #[test]
    fn every_rule_finds_a_figure_that_breaks_it() {
        // 2-issue, 10 busy of which 3 waited or stalled: 14 instructions fit.
        assert_eq!(hold(&json!({ "occupancy": [row(14, 2)] }), 2), Ok(()));
        let e = hold(&json!({ "occupancy": [row(15, 2)] }), 2).unwrap_err();
        assert_eq!(e.at, "occupancy[0] (t.go)");
        assert_eq!(
            e.rule,
            "instructions ≤ issue width × (busy − wait − outbox stall)"
        );
        let e = hold(&json!({ "rows": [{ "phase": [row(4, 5)] }] }), 2).unwrap_err();
        assert_eq!(e.at, "rows[0].phase[0] (t.go)");
        assert_eq!(e.rule, "loads + stores ≤ instructions");
        let e = hold(
            &json!({ "occupancy": [{ "handler": "t.go", "instructions": -1 }] }),
            2,
        )
        .unwrap_err();
        assert_eq!(e.rule, "a handler row holds whole counts");

        let startup = |a: u64, b: u64, total: u64, run: u64| json!({ "total_cycles": run, "startup": { "a": a, "b": b, "total": total } });
        assert_eq!(hold(&startup(100, 183, 283, 1563), 2), Ok(()));
        let e = hold(&startup(100, 183, 284, 1563), 2).unwrap_err();
        assert_eq!(
            (e.at.as_str(), e.rule),
            ("startup", "the start-up's parts add up to it")
        );
        let e = hold(&startup(1_000_000, 1_000_132, 2_000_132, 1_001_557), 2).unwrap_err();
        assert_eq!(e.rule, "the start-up fits in the run");
        assert_eq!(
            e.to_string(),
            "a figure breaks a rule every result keeps (a model bug): startup: \
             the start-up fits in the run, but a start-up of 2000132 in a run of 1001557"
        );
    }
}
