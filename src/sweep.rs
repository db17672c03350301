//! Sweeps: a scenario run over the cross product of values of some of its
//! keys, in parallel (rayon), one row per point.
//!
//! Points are numbered in the cross product's order (the last `--vary`
//! changing fastest) and results are written in that order whatever the
//! number of threads, so a sweep's output is the same on any machine.
//! `--shard i/n` runs only the points whose number is `i` modulo `n`; only
//! shard 0 writes the CSV header, so the shards' files concatenate into the
//! full table (rows grouped by shard; sorted by the `point` column they are
//! the full run's rows).

use crate::scenario::{self, Source};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::io::IsTerminal as _;

pub struct Sweep<'a> {
    pub path: &'a str,
    pub text: &'a str,
    /// "table.key=v1,v2,...".
    pub vary: &'a [String],
    pub shard: Option<&'a str>,
    pub threads: Option<usize>,
    pub quiet: bool,
    pub json: bool,
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

fn set(t: &mut toml::Table, key: &str, v: toml::Value) -> Result<(), String> {
    let (table, field) = key
        .split_once('.')
        .ok_or_else(|| format!("--vary {key}: name a key as table.key"))?;
    let sub = t
        .entry(table.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let sub = sub
        .as_table_mut()
        .ok_or_else(|| format!("--vary {key}: {table} is not a table"))?;
    sub.insert(field.to_string(), v);
    Ok(())
}

/// Every scalar of a table as (dotted key, text), in key order.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
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
        // Arrays (occupancy tables) are left to `flashkit run`.
        serde_json::Value::Array(_) | serde_json::Value::Null => {}
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        x => out.push((prefix.to_string(), x.to_string())),
    }
}

/// Cost-sheet entries stay out of the table unless some point sets one
/// away from its default (a sheet has some 200 scalars).
fn drop_default_costs(rows: &mut [Vec<(String, String)>]) {
    let defaults = serde_json::to_value(crate::scenario::CostTables::default())
        .map(|v| {
            let mut d = Vec::new();
            flatten("costs", &v, &mut d);
            d.into_iter().collect::<std::collections::HashMap<_, _>>()
        })
        .unwrap_or_default();
    let changed: std::collections::HashSet<String> = rows
        .iter()
        .flatten()
        .filter(|(k, v)| k.starts_with("costs.") && defaults.get(k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect();
    for r in rows.iter_mut() {
        r.retain(|(k, _)| !k.starts_with("costs.") || changed.contains(k));
    }
}

/// A header and one row: every scalar of `v`, by dotted key.
pub fn csv_row(v: &serde_json::Value) -> String {
    let mut cols = Vec::new();
    flatten("", v, &mut cols);
    let head: Vec<String> = cols.iter().map(|c| csv_cell(&c.0)).collect();
    let row: Vec<String> = cols.iter().map(|c| csv_cell(&c.1)).collect();
    format!("{}\n{}\n", head.join(","), row.join(","))
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn sweep(s: &Sweep<'_>) -> Result<String, String> {
    let src = Source {
        path: s.path,
        text: s.text,
    };
    let base = scenario::table(&src)?;
    let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
    for v in s.vary {
        let (k, vals) = v
            .split_once('=')
            .ok_or_else(|| format!("--vary {v}: write key=v1,v2,..."))?;
        let vals: Vec<toml::Value> = vals
            .split(',')
            .filter(|x| !x.is_empty())
            .map(value)
            .collect();
        if vals.is_empty() {
            return Err(format!("--vary {v}: no values"));
        }
        axes.push((k.to_string(), vals));
    }
    let (shard, of) = match s.shard {
        None => (0, 1),
        Some(x) => {
            let (i, n) = x
                .split_once('/')
                .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
                .filter(|(i, n)| *n > 0 && i < n)
                .ok_or_else(|| format!("--shard {x}: write i/n with 0 <= i < n"))?;
            (i, n)
        }
    };
    let total: usize = axes.iter().map(|a| a.1.len()).product();
    // Build every point of this shard, checking each before anything runs.
    let mut points = Vec::new();
    for p in (shard..total).step_by(of) {
        let mut t = base.clone();
        let mut rest = p;
        let mut chosen = Vec::new();
        for (k, vals) in axes.iter().rev() {
            let v = vals[rest % vals.len()].clone();
            rest /= vals.len();
            set(&mut t, k, v.clone())?;
            chosen.push((k.clone(), v));
        }
        let sc = scenario::parse(&src, t.clone())
            .map_err(|e| format!("point {p} ({}): {e}", describe(&chosen)))?;
        points.push((p, t, sc));
    }
    let pool = {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(n) = s.threads {
            if n == 0 {
                return Err("--threads must be at least 1".into());
            }
            b = b.num_threads(n);
        }
        b.build()
            .map_err(|e| format!("cannot start the worker threads: {e}"))?
    };
    let bar = if s.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(points.len() as u64);
        if let Ok(st) = ProgressStyle::with_template("{bar:40} {pos}/{len} points, {eta} left") {
            b.set_style(st);
        }
        b
    };
    let results: Vec<Result<serde_json::Value, String>> = pool.install(|| {
        points
            .par_iter()
            .map(|(p, _, sc)| {
                let r = scenario::run(sc)
                    .map(|r| r.json)
                    .map_err(|e| format!("point {p}: {e}"));
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let mut rows = Vec::new();
    for ((p, _, sc), r) in points.iter().zip(results) {
        let r = r?;
        let mut cols = vec![("point".to_string(), p.to_string())];
        // Every parameter, defaults included (unset machine keys are FLASH's).
        let params = serde_json::to_value(sc).map_err(|e| e.to_string())?;
        flatten("", &params, &mut cols);
        flatten("result", &r, &mut cols);
        rows.push(cols);
    }
    drop_default_costs(&mut rows);
    let mut out = String::new();
    if s.json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::Value::Object(
                    r.iter()
                        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                        .collect(),
                )
            })
            .collect();
        let _ = writeln!(out, "{}", serde_json::Value::Array(v));
        return Ok(out);
    }
    if let Some(first) = rows.first() {
        if shard == 0 {
            let head: Vec<String> = first.iter().map(|c| csv_cell(&c.0)).collect();
            let _ = writeln!(out, "{}", head.join(","));
        }
        for r in &rows {
            let cells: Vec<String> = r.iter().map(|c| csv_cell(&c.1)).collect();
            let _ = writeln!(out, "{}", cells.join(","));
        }
    }
    Ok(out)
}

fn describe(chosen: &[(String, toml::Value)]) -> String {
    chosen
        .iter()
        .rev()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
