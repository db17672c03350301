//! Sweeps: a scenario run over the cross product of values of some of its
//! keys, one row per point.
//!
//! Points are numbered in the cross product's order (the last axis changing
//! fastest). [`Plan::new`] checks every point before anything runs, one at
//! a time, keeping none: a plan holds the scenario and the axes, and
//! [`Plan::point`] builds a point when it is wanted, so a sweep's memory
//! does not grow with its points. A sweep has at most [`MAX_POINTS`].
//! [`run_in_order`] runs points on worker threads and hands back each
//! result in point order, as soon as every point before it is done, so the
//! rows are the same on any number of threads; [`Plan::row`] turns a point
//! and its report into the row's columns (the experiment's parameters,
//! defaults included, the machine's and the cost sheets' where the sweep
//! varies them or sets them away from their defaults, then every scalar of
//! the result).
//!
//! ```
//! use flashkit::scenario::Source;
//! use flashkit::sweep::{Axis, Plan};
//!
//! let src = Source { path: "study.toml", text: "[transfer]\nsender = \"dirty\"\n" };
//! let axes = [Axis::parse("transfer.chunk=1,8").unwrap()];
//! let plan = Plan::new(&src, &axes).unwrap();
//! let rows = plan.run(2, |_done, _total| {}).unwrap();
//! assert_eq!(rows.len(), 2);
//! let cell = |row: &Vec<(String, String)>, key: &str| {
//!     row.iter().find(|c| c.0 == key).map(|c| c.1.clone()).unwrap()
//! };
//! assert_eq!(cell(&rows[1], "transfer.chunk"), "8");
//! let cycles: Vec<u64> = rows.iter().map(|r| cell(r, "result.total_cycles").parse().unwrap()).collect();
//! assert!(cycles[1] < cycles[0], "with dirty lines, chunking by 8 beats one line at a time");
//! ```
//!
//! A sweep built in code rather than from string keys, its points
//! configurations (`transfer::Config`s) and its rows typed (a configuration
//! and its result), is a [`TypedSweep`]: [`typed`] shows one.
//!
//! A sweep as data: [`Plan::run_records`] gives each point's complete
//! scenario and result ([`Record`]), which [`jsonl`] writes as JSON Lines
//! and [`csv`] (through [`Plan::record_row`]) as the CSV `flashkit sweep`
//! writes; a record reads back, and its scenario runs again to its result.
//!
//! ```
//! use flashkit::scenario::{self, Source};
//! use flashkit::sweep::{self, Axis, Plan, Record};
//!
//! let src = Source { path: "study.toml", text: "[transfer]\nsender = \"dirty\"\n" };
//! let plan = Plan::new(&src, &[Axis::parse("transfer.chunk=1,8").unwrap()]).unwrap();
//! let records = plan.run_records(2, |_, _| {}).unwrap();
//! let lines = sweep::jsonl(&records).unwrap();
//! let rows: Vec<_> = records.iter().map(|r| plan.record_row(r)).collect();
//! let table = sweep::csv(&rows);
//! assert!(table.starts_with("point,transfer.bytes,"));
//! assert_eq!(table.lines().count(), 3, "a header and two points");
//!
//! let back: Record = serde_json::from_str(lines.lines().nth(1).unwrap()).unwrap();
//! assert_eq!((back.point, back.config.transfer.as_ref().unwrap().chunk), (1, 8));
//! assert_eq!(scenario::run(&back.config).unwrap().json, back.result);
//! ```

pub mod typed;
pub use typed::{TypedConfig, TypedRow, TypedSweep, Unheld};

use crate::scenario::{self, Report, RunError, Scenario, ScenarioError, Source};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// One varied key and its values (`transfer.chunk=1,2,4`).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The key, as `table.key`.
    pub key: String,
    /// Its values, in order, as TOML reads them.
    pub values: Vec<toml::Value>,
}

impl Axis {
    /// Read `table.key=v1,v2,...`; each value is an integer, a boolean, a
    /// float or else a string, as TOML would read it.
    pub fn parse(s: &str) -> Result<Axis, SweepError> {
        let bad = |why: &str| SweepError::Axis {
            given: s.to_string(),
            why: why.to_string(),
        };
        let (k, vals) = s.split_once('=').ok_or(bad("write key=v1,v2,..."))?;
        if !k.contains('.') {
            return Err(bad("name a key as table.key"));
        }
        let bare = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !k.split('.').all(bare) {
            return Err(bad(
                "a key's parts are bare names (letters, digits, _ and -), a dot between each",
            ));
        }
        if vals.is_empty() {
            return Err(bad("no values"));
        }
        if vals.split(',').any(str::is_empty) {
            return Err(bad(
                "an empty value (two commas together, or one at an end)",
            ));
        }
        let values: Vec<toml::Value> = vals
            .split(',')
            .map(|v| value(v).ok_or_else(|| bad(&format!("{v} is beyond a 64-bit integer"))))
            .collect::<Result<_, _>>()?;
        // The same point twice is no sweep's intent (a slip in the list):
        // values compared as TOML writes them (`0x10` is `16`).
        let mut seen = std::collections::HashSet::new();
        for (v, given) in values.iter().zip(vals.split(',')) {
            if !seen.insert(v.to_string()) {
                return Err(SweepError::Axis {
                    given: s.to_string(),
                    why: format!("{given} is given twice"),
                });
            }
        }
        Ok(Axis {
            key: k.to_string(),
            values,
        })
    }
}

/// A value from the command line, as TOML would read it (integers in
/// decimal, or hexadecimal, octal or binary with TOML's `0x`, `0o`, `0b`);
/// `None` for an integer no TOML integer holds (never read as a float).
fn value(s: &str) -> Option<toml::Value> {
    // An integer: all digits of its base (a sign only without a prefix,
    // as TOML has it), refused rather than read as a float when too many.
    let (digits, radix) = [("0x", 16), ("0o", 8), ("0b", 2)]
        .into_iter()
        .find_map(|(p, r)| Some((s.strip_prefix(p)?, r)))
        .unwrap_or((s, 10));
    let unsigned = match radix {
        10 => digits.strip_prefix(['+', '-']).unwrap_or(digits),
        _ => digits,
    };
    if !unsigned.is_empty() && unsigned.chars().all(|c| c.is_digit(radix)) {
        return i64::from_str_radix(digits, radix)
            .ok()
            .map(toml::Value::Integer);
    }
    Some(if let Ok(b) = s.parse::<bool>() {
        toml::Value::Boolean(b)
    } else if let Ok(f) = s.parse::<f64>() {
        toml::Value::Float(f)
    } else {
        toml::Value::String(s.to_string())
    })
}

fn set(t: &mut toml::Table, key: &str, v: toml::Value) -> Result<(), SweepError> {
    let not_a_table = || SweepError::NotATable {
        key: key.to_string(),
    };
    // `table.key`, or deeper: `costs.transfer.recv_write`.
    let (tables, field) = key.rsplit_once('.').ok_or_else(not_a_table)?;
    let mut sub = t;
    for table in tables.split('.') {
        sub = sub
            .entry(table.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(not_a_table)?;
    }
    sub.insert(field.to_string(), v);
    Ok(())
}

/// Refuse a key below one that is a value in the complete scenario
/// (`costs.coherence.decode.cycles`: `decode` is a number, not a task).
fn in_value(key: &str) -> Result<(), SweepError> {
    let Ok(toml::Value::Table(mut t)) = toml::Value::try_from(Scenario::default()) else {
        return Ok(());
    };
    let parts: Vec<&str> = key.split('.').collect();
    for (n, part) in parts.iter().enumerate().take(parts.len() - 1) {
        match t.remove(*part) {
            Some(toml::Value::Table(sub)) => t = sub,
            Some(_) => {
                return Err(SweepError::InValue {
                    key: key.to_string(),
                    value: parts[..=n].join("."),
                })
            }
            None => break,
        }
    }
    Ok(())
}

/// How the first line of a sharded sweep's part begins (`sweep --shard ..
/// --out`): a part is merged into the table (`flashkit merge`) before it
/// is read as one.
pub const PART_MARK: &str = "# flashkit-sweep ";

/// `Err` for a text that is a sweep's part, not its merged table.
pub(crate) fn not_a_part(text: &str) -> Result<(), String> {
    match text.trim_start_matches('\u{feff}').starts_with(PART_MARK) {
        true => Err(format!(
            "a sharded sweep's part, not its table (its first line is the part's `{}` \
             mark): merge the parts first (flashkit merge)",
            PART_MARK.trim_end()
        )),
        false => Ok(()),
    }
}

/// Every scalar of `v` as (dotted key, text), in key order, appended to
/// `out`; a list of plain values (the inbox's order) is one cell of them a
/// space apart (a semicolon and a space where a value holds a space). Lists of tables (occupancy tables) and nulls (a setting
/// not given) are left out: a row holds scalars.
///
/// ```
/// let v = serde_json::json!({"a": {"b": 1, "order": ["x", "y"]}, "rows": [{"c": 2}], "n": null});
/// let mut out = Vec::new();
/// flashkit::sweep::flatten("", &v, &mut out);
/// assert_eq!(out, [("a.b".into(), "1".into()), ("a.order".into(), "x y".into())]);
/// ```
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    walk(prefix, v, false, true, out);
}

/// A scenario's parameters by dotted key, as [`flatten`] gives them, a
/// list of values (the inbox's order) one cell of its values a space
/// apart: what the sweep's columns and its quiet entries compare.
fn parameters(sc: &Scenario, out: &mut Vec<(String, String)>) {
    if let Ok(v) = serde_json::to_value(sc) {
        parameter_cells("", &v, out);
    }
}

/// [`parameters`] of a scenario as JSON (a record's `config`): [`flatten`]'s
/// cells.
fn parameter_cells(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    flatten(prefix, v, out);
}

/// Every scalar of `v` by dotted key, lists left out, and with `nulls` as
/// empty cells rather than left out: a figure a run leaves undefined (a
/// transfer within one line has no rate) keeps its column in a sweep's
/// rows.
fn cells(prefix: &str, v: &serde_json::Value, nulls: bool, out: &mut Vec<(String, String)>) {
    walk(prefix, v, nulls, false, out);
}

/// Every scalar of `v` by dotted key: a null an empty cell with `nulls`
/// (else left out), a list of plain values one cell of them a space apart
/// (a semicolon and a space where a value holds a space) with `lists`
/// (else left out); a list that holds a table or a list is always left
/// out.
fn walk(
    prefix: &str,
    v: &serde_json::Value,
    nulls: bool,
    lists: bool,
    out: &mut Vec<(String, String)>,
) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let key = crate::json::dotted(prefix, k);
                walk(&key, x, nulls, lists, out);
            }
        }
        serde_json::Value::Null if nulls => out.push((prefix.to_string(), String::new())),
        serde_json::Value::Array(xs)
            if lists && !xs.iter().any(|x| x.is_object() || x.is_array()) =>
        {
            let words: Vec<String> = xs
                .iter()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                .collect();
            // Words a space apart; phrases (a check's trace) a semicolon.
            let gap = if words.iter().any(|w| w.contains(' ')) {
                "; "
            } else {
                " "
            };
            out.push((prefix.to_string(), words.join(gap)));
        }
        serde_json::Value::Array(_) | serde_json::Value::Null => {}
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        x => out.push((prefix.to_string(), x.to_string())),
    }
}

/// The `result.*` cells of a run's JSON: every scalar, nulls as empty
/// cells, but for the `config` and `version` a result may carry.
fn result_cells(json: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match json {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k != "config" && k != "version" {
                    cells(&format!("result.{k}"), x, true, out);
                }
            }
        }
        x => cells("result", x, true, out),
    }
}

/// Every column of a line of a sweep's JSON Lines, read as JSON (a
/// [`Record`]): `point`, every parameter of its `config` by its key
/// (`transfer.chunk`, `machine.net_latency`: all of them, defaults
/// included, where a CSV row has those its sweep moves), `version`, and
/// the `result.*` columns a row has. What [`crate::plot::from_jsonl`]
/// plots.
pub fn jsonl_cells(line: &serde_json::Value) -> Row {
    let mut out = Vec::new();
    match line {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match k.as_str() {
                    "config" => parameter_cells("", x, &mut out),
                    "result" => result_cells(x, &mut out),
                    _ => cells(k, x, true, &mut out),
                }
            }
        }
        x => cells("", x, true, &mut out),
    }
    out
}

/// The `result.*` columns a sweep's row has for a run's JSON (`result`
/// and the dotted key of each figure; a list, as the suite's tables, is
/// left out). docs/sweeps.md lists each experiment's.
pub fn result_columns(json: &serde_json::Value) -> Vec<String> {
    let mut cols = Vec::new();
    result_cells(json, &mut cols);
    cols.into_iter().map(|c| c.0).collect()
}

/// A CSV header and one row: every scalar of `v`, by dotted key.
pub fn csv_row(v: &serde_json::Value) -> String {
    csv_table(std::slice::from_ref(v))
}

/// A CSV header (the first value's keys) and a row per value: every scalar,
/// by dotted key, as [`flatten`] gives them but for a null, which is an
/// empty cell: a figure a run leaves undefined keeps its column, so rows
/// of one shape (rows of one struct, runs of one command) line up.
pub fn csv_table(values: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        let mut cols = Vec::new();
        walk("", v, true, true, &mut cols);
        let mut put = |cells: Vec<String>| {
            out += &cells.join(",");
            out.push('\n');
        };
        if i == 0 {
            put(cols.iter().map(|c| csv_cell(&c.0)).collect());
        }
        put(cols.iter().map(|c| csv_cell(&c.1)).collect());
    }
    out
}

/// A CSV line's cells as [`csv_cell`] writes them (a quoted cell's
/// doubled quotes made one); `None` for a line no such writer gives (a
/// quote left open, or text after a closing one).
///
/// ```
/// use flashkit::sweep::csv_cells_of;
/// assert_eq!(csv_cells_of("1,\"a, b\",\"\"\"q\"\"\""), Some(vec!["1".into(), "a, b".into(), "\"q\"".into()]));
/// assert_eq!(csv_cells_of("1,\"open"), None);
/// ```
pub fn csv_cells_of(line: &str) -> Option<Vec<String>> {
    let mut cells = vec![String::new()];
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cell = cells.last_mut()?;
        match c {
            ',' => cells.push(String::new()),
            '"' if cell.is_empty() => loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        cell.push('"');
                    }
                    '"' => match chars.peek() {
                        None | Some(',') => break,
                        Some(_) => return None,
                    },
                    c => cell.push(c),
                }
            },
            c => cell.push(c),
        }
    }
    Some(cells)
}

/// One CSV cell, quoted when it holds a comma, a quote or a newline.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The machine parameters, cost-sheet entries, networks and protocol
/// options (the *quiet* tables, some 360 entries) that become columns: those
/// the sweep varies, and those the scenario or some point sets away from
/// their defaults. A quiet entry that is not a column is at its default in
/// every row. Decided for the whole sweep before it runs, so every shard has
/// the same columns.
#[derive(Clone, Debug)]
struct Changed {
    defaults: HashMap<String, String>,
    changed: HashSet<String>,
}

/// The tables whose entries become columns only where a point changes them.
const QUIET_TABLES: [&str; 4] = ["machine", "costs", "network", "coherence"];

impl Changed {
    fn new() -> Self {
        let mut d = Vec::new();
        parameters(&Scenario::default(), &mut d);
        Changed {
            defaults: d.into_iter().collect(),
            changed: HashSet::new(),
        }
    }

    fn note(&mut self, sc: &Scenario) {
        let mut cols = Vec::new();
        parameters(sc, &mut cols);
        for (k, x) in cols {
            if self.quiet(&k) && self.defaults.get(&k) != Some(&x) {
                self.changed.insert(k);
            }
        }
    }

    fn quiet(&self, key: &str) -> bool {
        QUIET_TABLES
            .iter()
            .any(|t| key.strip_prefix(t).is_some_and(|r| r.starts_with('.')))
    }

    fn keep(&self, key: &str) -> bool {
        !self.quiet(key) || self.changed.contains(key)
    }
}

/// A sweep that cannot run: its scenario, an axis or a point is wrong.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The scenario file itself.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// An axis as given is malformed.
    #[error("{given}: {why}")]
    Axis {
        /// The axis as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// A key that is not inside a table of the scenario.
    #[error("{key}: name a key inside a table, as table.key")]
    NotATable {
        /// The key.
        key: String,
    },
    /// A key below one that is a value, not a table
    /// (`costs.coherence.decode.cycles`, where `decode` is a number).
    #[error("{key}: {value} is a value, not a table: vary {value} itself")]
    InValue {
        /// The key as given.
        key: String,
        /// The value it is below.
        value: String,
    },
    /// A key on one axis and a key inside it on another: each point
    /// would set the one and the other over it.
    #[error("{outer} and {inner}, a key inside it, are both varied: vary one of them")]
    Within {
        /// The key that holds the other.
        outer: String,
        /// The key inside it.
        inner: String,
    },
    /// One key on two axes.
    #[error("{key} is varied twice: give its values once")]
    Twice {
        /// The key.
        key: String,
    },
    /// More points than a sweep may have.
    #[error("the sweep has {} points; a sweep has at most {MAX_POINTS} (2^20)", size(.axes))]
    TooMany {
        /// The number of values on each axis, in order: `usize::MAX` for
        /// one of 2^64 - 1 or more, or whose iterator did not know its
        /// length and was read no further than the limit.
        axes: Vec<usize>,
    },
    /// A point whose run failed.
    #[error("point {index}: {error}")]
    Run {
        /// Its number.
        index: usize,
        /// Why.
        error: Box<RunError>,
    },
    /// A point number past the sweep's last.
    #[error("no point {index}: the sweep has {total}")]
    NoPoint {
        /// The number asked for.
        index: usize,
        /// The sweep's points.
        total: usize,
    },
    /// A typed point whose configuration sets what no scenario holds: its
    /// row has no columns, no record.
    #[error("point {index}: {error}")]
    Unheld {
        /// Its number.
        index: usize,
        /// The field.
        error: typed::Unheld,
    },
    /// A point whose scenario is not valid.
    #[error("point {index} ({chosen}): {error}")]
    Point {
        /// Its number.
        index: usize,
        /// Its values.
        chosen: String,
        /// What is wrong with its scenario.
        error: ScenarioError,
    },
}

/// One point of a sweep.
#[derive(Clone, Debug)]
pub struct Point {
    /// Its number in the cross product.
    pub index: usize,
    /// The scenario with the point's values set.
    pub scenario: Scenario,
    /// The values this point takes, as `key=value`, first axis first.
    pub chosen: String,
}

/// A sweep, checked: its scenario and axes. Points are built from them
/// when wanted ([`Plan::point`]), none kept.
#[derive(Clone, Debug)]
pub struct Plan {
    path: String,
    text: String,
    base: toml::Table,
    axes: Vec<Axis>,
    total: usize,
    costs: Changed,
}

/// One row: (column, value) in column order.
pub type Row = Vec<(String, String)>;

/// A sweep's size as its axes make it: `8 x 3 = 24`, or the product's
/// factors alone when it passes 2^128.
fn size(axes: &[usize]) -> String {
    if axes.contains(&usize::MAX) {
        return format!("more than {MAX_POINTS}");
    }
    let factors: Vec<String> = axes.iter().map(|n| n.to_string()).collect();
    let product = axes
        .iter()
        .try_fold(1u128, |n, &a| n.checked_mul(a as u128));
    match (axes.len(), product) {
        (0 | 1, Some(n)) => n.to_string(),
        (_, Some(n)) => format!("{} = {n}", factors.join(" x ")),
        (_, None) => format!("{} (more than 2^128)", factors.join(" x ")),
    }
}

impl Plan {
    /// Check a sweep of `src` varied along `axes`: the axes (each key once,
    /// at most [`MAX_POINTS`] points), then every point, built and checked
    /// one at a time and dropped (a bad point is an error naming it and its
    /// values).
    pub fn new(src: &Source<'_>, axes: &[Axis]) -> Result<Plan, SweepError> {
        Plan::checked(src, axes, 1, |_, _| {})
    }

    /// [`Plan::new`], checking the points on `threads` workers and calling
    /// `progress(checked, total)` as they are checked. The first bad point
    /// in point order is the error, whatever the threads.
    pub fn checked(
        src: &Source<'_>,
        axes: &[Axis],
        threads: usize,
        progress: impl Fn(usize, usize) + Sync,
    ) -> Result<Plan, SweepError> {
        let base = scenario::table(src)?;
        let mut seen = HashSet::new();
        for a in axes {
            if !seen.insert(a.key.as_str()) {
                return Err(SweepError::Twice { key: a.key.clone() });
            }
            // A key inside this one, on any axis (before or after it).
            let inner = axes.iter().find(|b| {
                b.key
                    .strip_prefix(a.key.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
            });
            if let Some(b) = inner {
                return Err(SweepError::Within {
                    outer: a.key.clone(),
                    inner: b.key.clone(),
                });
            }
            in_value(&a.key)?;
            if a.values.is_empty() {
                // As `Axis::parse` refuses one: a sweep of no points.
                return Err(SweepError::Axis {
                    given: a.key.clone(),
                    why: "no values".into(),
                });
            }
            // As `Axis::parse` refuses one: the same point twice.
            let mut values = HashSet::new();
            if let Some(v) = a.values.iter().find(|v| !values.insert(v.to_string())) {
                return Err(SweepError::Axis {
                    given: a.key.clone(),
                    why: format!("{v} is given twice"),
                });
            }
        }
        let total = axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
            .filter(|&n| n <= MAX_POINTS)
            .ok_or_else(|| SweepError::TooMany {
                axes: axes.iter().map(|a| a.values.len()).collect(),
            })?;
        let mut plan = Plan {
            path: src.path.to_string(),
            text: src.text.to_string(),
            base,
            axes: axes.to_vec(),
            total,
            costs: Changed::new(),
        };
        run_in_order(
            total,
            threads,
            |i| plan.point(i).map(drop),
            |n| progress(n, total),
            |_, r| r,
        )?;
        plan.costs = plan.changed(threads);
        Ok(plan)
    }

    /// The quiet columns some point changes. A point's scenario sets each
    /// key on its own (a value read for one key never moves another), so a
    /// column changes in some point exactly when it differs from its default
    /// in the scenario alone or with one axis's value set: the points
    /// themselves need not be built again. The scenarios are read on
    /// `threads` workers.
    fn changed(&self, threads: usize) -> Changed {
        let mut costs = Changed::new();
        // A varied key is a column even where every value is its default.
        costs
            .changed
            .extend(self.axes.iter().map(|a| a.key.clone()));
        // The scenario alone, then each value of each axis set on it.
        let values: Vec<(&Axis, &toml::Value)> = self
            .axes
            .iter()
            .flat_map(|a| a.values.iter().map(move |v| (a, v)))
            .collect();
        let _ = run_in_order(
            values.len() + 1,
            threads,
            |i| {
                let mut t = self.base.clone();
                if let Some((a, v)) = i.checked_sub(1).map(|i| values[i]) {
                    set(&mut t, &a.key, v.clone()).ok()?;
                }
                toml::Value::Table(t).try_into::<Scenario>().ok()
            },
            |_| {},
            |_, sc: Option<Scenario>| {
                if let Some(sc) = sc {
                    costs.note(&sc);
                }
                Ok::<(), ()>(())
            },
        );
        costs
    }

    /// How many points the sweep has.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Build and check point `index` (an error names it and its values).
    pub fn point(&self, index: usize) -> Result<Point, SweepError> {
        if index >= self.total {
            return Err(SweepError::NoPoint {
                index,
                total: self.total,
            });
        }
        let mut t = self.base.clone();
        let mut rest = index;
        let mut chosen = Vec::new();
        let mut values = Vec::new();
        for a in self.axes.iter().rev() {
            let v = a.values[rest % a.values.len()].clone();
            rest /= a.values.len();
            set(&mut t, &a.key, v.clone())?;
            chosen.push(format!("{}={v}", a.key));
            values.push((a, v));
        }
        chosen.reverse();
        let chosen = chosen.join(", ");
        let src = Source {
            path: &self.path,
            text: &self.text,
        };
        let sc = scenario::parse_values(&src, t).map_err(|mut error| {
            // What the file does wrong without any value of the sweep is
            // the file's, at its own line.
            if let Err(base) = scenario::parse_values(&src, self.base.clone()) {
                if base.message == error.message {
                    return SweepError::Point {
                        index,
                        chosen: chosen.clone(),
                        error: base,
                    };
                }
            }
            // A key of a nested table is named in full (as the file's own
            // keys are): the axis that sets it.
            if let Some(k) = &error.key {
                let end = format!(".{k}");
                if let Some(a) = self
                    .axes
                    .iter()
                    .find(|a| a.key.ends_with(&end) && a.key.split('.').count() > 2)
                {
                    error.key = Some(a.key.clone());
                }
            }
            // An error the text cannot place (a value of the wrong type):
            // the first axis whose value alone makes it, named as the file's
            // keys are (bare in a table of the root, whole in a nested one).
            if error.key.is_none() {
                error.key = values.iter().rev().find_map(|(a, v)| {
                    let mut alone = self.base.clone();
                    set(&mut alone, &a.key, v.clone()).ok()?;
                    let key = match a.key.split_once('.') {
                        Some((_, k)) if !k.contains('.') => k.to_string(),
                        _ => a.key.clone(),
                    };
                    scenario::parse_values(&src, alone).is_err().then_some(key)
                });
            }
            // A value the sweep set is the command line's, not the file's:
            // no line of the file holds it.
            let varied = |k: &str| {
                self.axes.iter().find(|a| {
                    a.key == k
                        || (a.key.split('.').count() == 2 && a.key.ends_with(&format!(".{k}")))
                })
            };
            if let Some(a) = error.key.as_deref().and_then(varied) {
                error.path = "--vary".into();
                error.line = None;
                error.key = Some(a.key.clone());
            } else if error.line.is_none() {
                // A key no line of the file holds (its default), out of
                // range only beside a value the sweep set (an issue width
                // against the cycles varied): that value's.
                let culprit = values.iter().rev().find_map(|(a, v)| {
                    let mut alone = self.base.clone();
                    set(&mut alone, &a.key, v.clone()).ok()?;
                    scenario::parse_values(&src, alone).is_err().then_some(a)
                });
                if let (Some(a), Some(k)) = (culprit, error.key.clone()) {
                    let sep = if error.message.starts_with("must") {
                        " "
                    } else {
                        ": "
                    };
                    error.message = format!("with it, {k}{sep}{}", error.message);
                    error.path = "--vary".into();
                    error.key = Some(a.key.clone());
                }
            }
            SweepError::Point {
                index,
                chosen: chosen.clone(),
                error,
            }
        })?;
        // A varied key the point's experiment does not read would give
        // rows that do not differ.
        if let Some(a) = self.axes.iter().find(|a| !scenario::reads(&sc, &a.key)) {
            let [own, ..] = scenario::tables_of(&sc);
            return Err(SweepError::Point {
                index,
                chosen,
                error: scenario::ScenarioError {
                    path: "--vary".into(),
                    line: None,
                    key: Some(a.key.clone()),
                    message: format!(
                        "[{own}] does not read it here, so its rows would not differ: vary what the experiment reads"
                    ),
                },
            });
        }
        // One the file sets, at its line.
        scenario::refuse_unread(&src, &sc).map_err(|error| SweepError::Point {
            index,
            chosen: chosen.clone(),
            error,
        })?;
        Ok(Point {
            index,
            scenario: sc,
            chosen,
        })
    }

    /// The row of `point` with its run's report: `point`, the parameters,
    /// then `result.*`, every scalar of the report's JSON (a figure the run
    /// leaves undefined, an empty cell; `config` and `version`, which a
    /// result may carry, left out: the parameters are the row's own). The
    /// parameters are every key of the experiment's table, defaults
    /// included, and of the quiet tables (`machine`, `costs`, `network`,
    /// `coherence`) those the sweep varies or the scenario or some point
    /// sets away from their defaults.
    pub fn row(&self, point: &Point, report: &Report) -> Row {
        self.columns(point.index, &point.scenario, &report.json)
    }

    /// The columns of `point`'s row that its result does not give: its
    /// number and its parameters, as [`Plan::row`] makes them (what a
    /// resumed part's kept rows are checked against).
    pub fn parameter_row(&self, point: &Point) -> Row {
        parameter_columns(&self.costs, point.index, &point.scenario)
    }

    /// The row of a [`Record`] (of this sweep): its columns as
    /// [`Plan::row`] makes them.
    pub fn record_row(&self, record: &Record) -> Row {
        self.columns(record.point, &record.config, &record.result)
    }

    fn columns(&self, index: usize, sc: &Scenario, result: &serde_json::Value) -> Row {
        columns(&self.costs, index, sc, result)
    }

    /// The record of `point` with its run's report: its number, the kit's
    /// version, its complete scenario and the result.
    pub fn record(&self, point: Point, report: Report) -> Record {
        Record {
            point: point.index,
            version: VERSION.to_string(),
            config: point.scenario,
            result: report.json,
        }
    }

    /// Run every point as [`Plan::run`] does, and return each point's
    /// [`Record`] (its complete scenario and its result), in order.
    pub fn run_records(
        &self,
        threads: usize,
        progress: impl Fn(usize, usize) + Sync,
    ) -> Result<Vec<Record>, SweepError> {
        self.run_with(threads, progress, |p, r| self.record(p, r))
    }

    /// Run every point on `threads` workers and return the rows in order;
    /// `progress(done, total)` is called as points finish. The first point
    /// that fails ends the sweep with its error (its number in the message).
    /// The rows are all kept: a large sweep is better written as it goes,
    /// with [`run_in_order`] over [`Plan::point`] as `flashkit sweep` does.
    pub fn run(
        &self,
        threads: usize,
        progress: impl Fn(usize, usize) + Sync,
    ) -> Result<Vec<Row>, SweepError> {
        self.run_with(threads, progress, |p, r| self.row(&p, &r))
    }

    /// Every point run, and `make` of it and its report, in point order.
    fn run_with<T: Send>(
        &self,
        threads: usize,
        progress: impl Fn(usize, usize) + Sync,
        make: impl Fn(Point, Report) -> T + Sync,
    ) -> Result<Vec<T>, SweepError> {
        let total = self.total;
        let mut rows = Vec::new();
        run_in_order(
            total,
            threads,
            |i| {
                let p = self.point(i)?;
                let r = scenario::run(&p.scenario).map_err(|error| SweepError::Run {
                    index: i,
                    error: Box::new(error),
                })?;
                // Each row is made on the worker that ran its point.
                Ok(make(p, r))
            },
            |done| progress(done, total),
            |_, r: Result<T, SweepError>| {
                rows.push(r?);
                Ok::<(), SweepError>(())
            },
        )?;
        Ok(rows)
    }
}

/// A row's columns: `point`, the parameters of `sc` that `keep` keeps,
/// then `result.*`.
fn columns(keep: &Changed, index: usize, sc: &Scenario, result: &serde_json::Value) -> Row {
    let mut cols = parameter_columns(keep, index, sc);
    let mut results = Vec::new();
    result_cells(result, &mut results);
    cols.extend(results.into_iter().filter(|(k, _)| keep.keep(k)));
    cols
}

/// A row's point number and parameters (see [`columns`]).
fn parameter_columns(keep: &Changed, index: usize, sc: &Scenario) -> Row {
    let mut cols = vec![("point".to_string(), index.to_string())];
    parameters(sc, &mut cols);
    cols.retain(|(k, _)| keep.keep(k));
    cols
}

/// The kit's version, as a [`Record`] carries it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One point of a sweep as data: its number, the kit's version, its
/// complete scenario (every parameter, defaults included) and its result.
/// A line of a sweep's JSON Lines ([`jsonl_line`]); it reads back with
/// `serde_json::from_str`, and its scenario runs again with
/// [`scenario::run`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The point's number in the cross product.
    pub point: usize,
    /// The version of the kit that ran it.
    pub version: String,
    /// The point's complete scenario.
    pub config: Scenario,
    /// The result: the run's JSON.
    pub result: serde_json::Value,
}

impl Record {
    /// A line of a sweep's JSON Lines, as parsed JSON, read as a record a
    /// run could have written: a [`Record`], its result one that reads
    /// back as a saved result does ([`scenario::Saved::read`]: its derived
    /// figures what its counts give), its scenario one the kit runs
    /// ([`Scenario::validate`]). The error says which part is wrong; an
    /// edited line is refused wherever a sweep's lines are read (a plot,
    /// a merge, a resumed part).
    ///
    /// ```
    /// use flashkit::sweep::Record;
    /// let v = serde_json::json!({"point": 0, "version": "0", "config": {}, "result": {}});
    /// assert!(Record::read(&v).unwrap_err().starts_with("result: "));
    /// ```
    pub fn read(v: &serde_json::Value) -> Result<Record, String> {
        let record: Record = serde_path_to_error::deserialize(v)
            .map_err(|e| format!("not a sweep's record: {}: {}", e.path(), e.inner()))?;
        scenario::Saved::read(&record.result.to_string()).map_err(|e| format!("result: {e}"))?;
        // The scenario as a sweep writes it: a key given as null or a
        // table as a list would rerun defaults, or values by position.
        let written = serde_json::to_value(&record.config).map_err(|e| format!("config: {e}"))?;
        if let Some((key, why)) = crate::json::unlike(&v["config"], &written, "config") {
            return Err(format!("{key}: {why}"));
        }
        record
            .config
            .validate()
            .map_err(|e| format!("config.{e}"))?;
        Ok(record)
    }
}

/// A sweep's rows as CSV: the header (the first row's columns), then a
/// line a row. Rows of one plan line up.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::new();
    if let Some(first) = rows.first() {
        out += &csv_header(first);
    }
    for r in rows {
        out += &csv_line(r);
    }
    out
}

/// The CSV header of `row`'s columns, with its newline.
pub fn csv_header(row: &Row) -> String {
    csv_cells(row.iter().map(|c| c.0.as_str()))
}

/// `row`'s values as a CSV line, with its newline.
pub fn csv_line(row: &Row) -> String {
    csv_cells(row.iter().map(|c| c.1.as_str()))
}

fn csv_cells<'a>(cells: impl Iterator<Item = &'a str>) -> String {
    let mut line = cells.map(csv_cell).collect::<Vec<_>>().join(",");
    line.push('\n');
    line
}

/// A sweep's records as JSON Lines: one [`Record`] a line.
pub fn jsonl(records: &[Record]) -> Result<String, serde_json::Error> {
    records.iter().map(jsonl_line).collect()
}

/// One [`Record`] as a line of JSON Lines, with its newline.
pub fn jsonl_line(record: &Record) -> Result<String, serde_json::Error> {
    let mut line = serde_json::to_string(record)?;
    line.push('\n');
    Ok(line)
}

/// The most points a sweep may have, 2^20: a plan builds each point when it
/// is run, so this bounds the time a sweep takes to check (some 80 s on
/// one core at the limit) and its output, not its memory.
pub const MAX_POINTS: usize = 1 << 20;

/// Run `work` over items `0..count` on up to `threads` workers (at least
/// one), and give each result to `each` in item order, as soon as every
/// item before it is done and the calling thread is between items.
/// `done(n)` is called with the number of finished items each time one
/// finishes. The first `Err` from `each` stops the workers and is
/// returned; results not yet handed over are dropped.
///
/// The calling thread is one of the workers. It takes the first item
/// alone, and starts the `threads - 1` others only once the items left
/// look to take longer than [`INLINE`] at the pace so far: a small run is
/// done on the calling thread, starting no thread (on a busy machine a
/// thread can take longer to start and stop than a small sweep takes), and
/// a large one has every worker after its first item.
///
/// Workers take items in order and run at most [`window`]`(threads)` items
/// ahead of the first not yet handed over, so the results held back behind
/// a slow item are bounded, not the whole rest of the run.
pub fn run_in_order<R: Send, E>(
    count: usize,
    threads: usize,
    work: impl Fn(usize) -> R + Sync,
    done: impl Fn(usize),
    each: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E> {
    let threads = threads.clamp(1, count.max(1));
    let ahead = window(threads);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // The number of results handed over, which workers wait on.
    let handed = (Mutex::new(0usize), Condvar::new());
    let (tx, rx) = std::sync::mpsc::channel();
    let mut order = InOrder {
        pending: BTreeMap::new(),
        handed: 0,
        finished: 0,
        done,
        each,
        turn: &handed,
    };
    std::thread::scope(|scope| {
        // However the calling thread leaves (an error, a panic in `work`),
        // the others stop rather than wait for their turn.
        let _stop = Stop(&stop, &handed);
        let mut tx = Some(tx);
        let start = std::time::Instant::now();
        let mut mine = 0usize;
        // Items while there are any, the others' results between them.
        loop {
            while let Ok((i, r)) = rx.try_recv() {
                order.take(i, r)?;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count {
                break;
            }
            // Too far ahead: the items before the window are the others'.
            while i >= order.handed + ahead {
                let Ok((j, r)) = rx.recv() else { break };
                order.take(j, r)?;
            }
            let r = work(i);
            order.take(i, r)?;
            mine += 1;
            let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
            let pace = start.elapsed() / n(mine);
            let long = || {
                pace.checked_mul(n(count - i - 1))
                    .is_none_or(|t| t > INLINE)
            };
            if let Some(tx) = tx.take_if(|_| threads > 1 && long()) {
                for _ in 1..threads {
                    let tx = tx.clone();
                    let (next, stop, work, handed) = (&next, &stop, &work, &handed);
                    // A thread the system will not give is one worker
                    // fewer: the calling thread takes what is left, and
                    // the results are the same in their order.
                    let spawned = std::thread::Builder::new().spawn_scoped(scope, move || loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let mut h = handed.0.lock().unwrap_or_else(|p| p.into_inner());
                        while i >= *h + ahead && !stop.load(Ordering::Relaxed) {
                            h = handed.1.wait(h).unwrap_or_else(|p| p.into_inner());
                        }
                        drop(h);
                        if stop.load(Ordering::Relaxed) || tx.send((i, work(i))).is_err() {
                            break;
                        }
                    });
                    if spawned.is_err() {
                        break;
                    }
                }
            }
        }
        // Then the others' last (none if none started).
        drop(tx);
        for (i, r) in &rx {
            order.take(i, r)?;
        }
        Ok(())
    })
}

/// How long the items left of a [`run_in_order`] must look to take, at the
/// pace of those done so far, before the calling thread starts the other
/// workers: 5 ms. On a busy machine (two cores, other work queued) starting
/// and stopping workers for an 8-point sweep of some 5 ms took as much again
/// (bench/sweep.sh); a run long enough to start them loses at most this
/// much of its parallel time.
pub const INLINE: std::time::Duration = std::time::Duration::from_millis(5);

/// The results finished but not yet handed over, the counts, and where
/// they go.
struct InOrder<'a, R, D, F> {
    pending: BTreeMap<usize, R>,
    handed: usize,
    finished: usize,
    done: D,
    each: F,
    turn: &'a (Mutex<usize>, Condvar),
}

impl<R, D: Fn(usize), F: FnMut(usize, R) -> Result<(), E>, E> InOrder<'_, R, D, F> {
    /// Item `i`'s result: hand it over, and every one after it that was
    /// waiting for it, and tell the workers how far the handing has come.
    fn take(&mut self, i: usize, r: R) -> Result<(), E> {
        self.finished += 1;
        (self.done)(self.finished);
        self.pending.insert(i, r);
        let before = self.handed;
        while let Some(r) = self.pending.remove(&self.handed) {
            (self.each)(self.handed, r)?;
            self.handed += 1;
        }
        if self.handed > before {
            *self.turn.0.lock().unwrap_or_else(|p| p.into_inner()) = self.handed;
            self.turn.1.notify_all();
        }
        Ok(())
    }
}

/// Stops [`run_in_order`]'s workers when dropped, waking those waiting for
/// their turn to see it.
struct Stop<'a>(&'a AtomicBool, &'a (Mutex<usize>, Condvar));

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        drop(self.1 .0.lock().unwrap_or_else(|p| p.into_inner()));
        self.1 .1.notify_all();
    }
}

/// How far ahead of the first result not yet handed over [`run_in_order`]'s
/// workers may run: four items a worker (at most `usize::MAX`).
pub fn window(threads: usize) -> usize {
    threads.max(1).saturating_mul(4)
}

/// Worker threads when none are asked for: the CPUs this process may use
/// (its CPU affinity and cgroup quota), and no more than Slurm gave the task
/// (`SLURM_CPUS_PER_TASK`) where that is set, since a Slurm without CPU
/// binding leaves every core of the node in the affinity mask.
pub fn default_threads() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let slurm = std::env::var("SLURM_CPUS_PER_TASK")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0);
    slurm.map_or(cpus, |n| n.min(cpus))
}
