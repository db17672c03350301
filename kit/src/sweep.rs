//! Sweeps: a scenario run over the cross product of values of some of its
//! keys, one row per point.
//!
//! Points are numbered in the cross product's order (the last axis changing
//! fastest). [`Plan::new`] builds and checks every point before anything
//! runs; [`run_in_order`] runs points on worker threads and hands back each
//! result in point order, as soon as every point before it is done, so the
//! rows are the same on any number of threads; [`Plan::row`] turns a point
//! and its report into the row's columns (every parameter, defaults
//! included, then every scalar of the result).
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

use crate::scenario::{self, Report, RunError, Scenario, ScenarioError, Source};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
        let bad = |why| SweepError::Axis {
            given: s.to_string(),
            why,
        };
        let (k, vals) = s.split_once('=').ok_or(bad("write key=v1,v2,..."))?;
        if !k.contains('.') {
            return Err(bad("name a key as table.key"));
        }
        let values: Vec<toml::Value> = vals
            .split(',')
            .filter(|x| !x.is_empty())
            .map(value)
            .collect();
        if values.is_empty() {
            return Err(bad("no values"));
        }
        Ok(Axis {
            key: k.to_string(),
            values,
        })
    }
}

/// A value from the command line, as TOML would read it.
fn value(s: &str) -> toml::Value {
    if let Ok(i) = s.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(b) = s.parse::<bool>() {
        toml::Value::Boolean(b)
    } else if let Ok(f) = s.parse::<f64>() {
        toml::Value::Float(f)
    } else {
        toml::Value::String(s.to_string())
    }
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

/// Every scalar of `v` as (dotted key, text), in key order, appended to
/// `out`. Arrays (occupancy tables) are left out: a row holds scalars.
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        serde_json::Value::Array(_) | serde_json::Value::Null => {}
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        x => out.push((prefix.to_string(), x.to_string())),
    }
}

/// A CSV header and one row: every scalar of `v`, by dotted key.
pub fn csv_row(v: &serde_json::Value) -> String {
    csv_table(std::slice::from_ref(v))
}

/// A CSV header (the first value's keys) and a row per value: every scalar,
/// by dotted key. Values of one shape (rows of one struct) line up.
pub fn csv_table(values: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        let mut cols = Vec::new();
        flatten("", v, &mut cols);
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

/// One CSV cell, quoted when it holds a comma, a quote or a newline.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The machine parameters, cost-sheet entries and networks some point of the sweep
/// sets away from their defaults: only those become columns (a scenario has
/// some 200 of them). Decided over every point, so every shard has the same
/// columns.
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
        if let Ok(v) = serde_json::to_value(Scenario::default()) {
            flatten("", &v, &mut d);
        }
        Changed {
            defaults: d.into_iter().collect(),
            changed: HashSet::new(),
        }
    }

    fn note(&mut self, sc: &Scenario) {
        let mut cols = Vec::new();
        if let Ok(v) = serde_json::to_value(sc) {
            flatten("", &v, &mut cols);
        }
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
        why: &'static str,
    },
    /// A key that is not inside a table of the scenario.
    #[error("{key}: name a key inside a table, as table.key")]
    NotATable {
        /// The key.
        key: String,
    },
    /// One key on two axes.
    #[error("{key} is varied twice: give its values once")]
    Twice {
        /// The key.
        key: String,
    },
    /// More points than a sweep may have.
    #[error("a sweep has at most {MAX_POINTS} points")]
    TooMany,
    /// A point whose run failed.
    #[error("point {index}: {error}")]
    Run {
        /// Its number.
        index: usize,
        /// Why.
        error: Box<RunError>,
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

/// Every point of a sweep, built and checked.
#[derive(Clone, Debug)]
pub struct Plan {
    points: Vec<Point>,
    costs: Changed,
}

/// One row: (column, value) in column order.
pub type Row = Vec<(String, String)>;

impl Plan {
    /// Build every point of `src` varied along `axes`, checking each (a bad
    /// point is an error naming it and its values).
    pub fn new(src: &Source<'_>, axes: &[Axis]) -> Result<Plan, SweepError> {
        let base = scenario::table(src)?;
        let mut seen = HashSet::new();
        for a in axes {
            if !seen.insert(a.key.as_str()) {
                return Err(SweepError::Twice { key: a.key.clone() });
            }
        }
        let total = axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
            .filter(|&n| n <= MAX_POINTS)
            .ok_or(SweepError::TooMany)?;
        let mut costs = Changed::new();
        let mut points = Vec::with_capacity(total);
        for p in 0..total {
            let mut t = base.clone();
            let mut rest = p;
            let mut chosen = Vec::new();
            for a in axes.iter().rev() {
                let v = a.values[rest % a.values.len()].clone();
                rest /= a.values.len();
                set(&mut t, &a.key, v.clone())?;
                chosen.push(format!("{}={v}", a.key));
            }
            chosen.reverse();
            let chosen = chosen.join(", ");
            let sc = scenario::parse(src, t).map_err(|error| SweepError::Point {
                index: p,
                chosen: chosen.clone(),
                error,
            })?;
            costs.note(&sc);
            points.push(Point {
                index: p,
                scenario: sc,
                chosen,
            });
        }
        Ok(Plan { points, costs })
    }

    /// The points, in order.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The row of `point` with its run's report: `point`, every parameter
    /// (defaults included; machine and cost entries only where some point changes
    /// them), then `result.*`, every scalar of the report's JSON.
    pub fn row(&self, point: &Point, report: &Report) -> Row {
        let mut cols = vec![("point".to_string(), point.index.to_string())];
        if let Ok(params) = serde_json::to_value(&point.scenario) {
            flatten("", &params, &mut cols);
        }
        flatten("result", &report.json, &mut cols);
        cols.retain(|(k, _)| self.costs.keep(k));
        cols
    }

    /// Run every point on `threads` workers and return the rows in order;
    /// `progress(done, total)` is called as points finish. The first point
    /// that fails ends the sweep with its error (its number in the message).
    pub fn run(
        &self,
        threads: usize,
        progress: impl Fn(usize, usize) + Sync,
    ) -> Result<Vec<Row>, SweepError> {
        let total = self.points.len();
        let mut rows = Vec::with_capacity(total);
        run_in_order(
            &self.points,
            threads,
            |p| scenario::run(&p.scenario),
            |done| progress(done, total),
            |i, r| {
                let p = &self.points[i];
                let r = r.map_err(|error| SweepError::Run {
                    index: p.index,
                    error: Box::new(error),
                })?;
                rows.push(self.row(p, &r));
                Ok::<(), SweepError>(())
            },
        )?;
        Ok(rows)
    }
}

/// The most points a sweep may have.
pub const MAX_POINTS: usize = 1 << 20;

/// Run `work` over `items` on up to `threads` workers (at least one), and
/// give each result to `each` in item order, as soon as every item before it
/// is done. `done(n)` is called with the number of finished items each time
/// one finishes. The first `Err` from `each` stops the workers and is
/// returned; results not yet handed over are dropped.
pub fn run_in_order<T: Sync, R: Send, E>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
    done: impl Fn(usize),
    mut each: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E> {
    let threads = threads.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, work) = (&next, &stop, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || stop.load(Ordering::Relaxed) {
                    break;
                }
                if tx.send((i, work(&items[i]))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<usize, R> = BTreeMap::new();
        let (mut n, mut finished) = (0, 0);
        let r = (|| {
            for (i, r) in &rx {
                finished += 1;
                done(finished);
                pending.insert(i, r);
                while let Some(r) = pending.remove(&n) {
                    each(n, r)?;
                    n += 1;
                }
            }
            Ok(())
        })();
        stop.store(true, Ordering::Relaxed);
        drop(rx);
        r
    })
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
