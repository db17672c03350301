//! Sweeps: a scenario run over the cross product of values of some of its
//! keys, on worker threads, one row per point; and the merge of a sharded
//! sweep's parts into its table.
//!
//! Points are numbered in the cross product's order (the last `--vary`
//! changing fastest) and rows are written in that order whatever the number
//! of threads, so a sweep's output is the same on any machine. Workers take
//! points in order and the writer appends each row as soon as every point
//! before it is done, flushed: output cut short by a kill holds every row
//! before the first unfinished point, nothing else.
//!
//! `--shard i/n` runs only the points whose number is `i` modulo `n` and
//! writes a *part*: one first line that only parts carry,
//!
//! ```text
//! # flashkit-sweep digest=<sha-256> points=75 shard=3/16 format=csv
//! ```
//!
//! then the table's header and the shard's rows (CSV), or one JSON object a
//! line (JSON Lines). The digest covers the kit's version, the scenario's
//! text and the `--vary` arguments, so parts of one sweep are recognised
//! wherever its file lies. [`merge`] checks that a set of parts holds every
//! point exactly once and writes the table the unsharded sweep writes, byte
//! for byte. `--out FILE` writes the part itself; with `--resume` it keeps
//! the rows a killed run wrote and runs only the points they lack.

use crate::output::{self, Failure, Sink};
use flashkit::scenario::{self, Source};
use flashkit::sweep::{
    csv_header, csv_line, default_threads, jsonl_line, run_in_order, Axis, Plan, Row, SweepError,
    MAX_POINTS,
};
use indicatif::{ProgressBar, ProgressStyle};

/// The most worker threads a command takes: more than any machine it runs
/// on has, and few enough that each gets its stack.
pub const MAX_THREADS: usize = 1024;

/// The worker threads `--threads` asks for, or by default the CPUs this
/// process may use ([`default_threads`]).
pub fn threads(asked: Option<usize>) -> Result<usize, Failure> {
    match asked {
        Some(n) if n == 0 || n > MAX_THREADS => Err(Failure::Usage(format!(
            "--threads must be from 1 to {MAX_THREADS}, got {n}"
        ))),
        Some(n) => Ok(n),
        None => Ok(default_threads()),
    }
}

/// A progress bar of `len` `what` on standard error; hidden when `quiet`
/// or when standard error is not a terminal.
pub fn progress(len: usize, what: &str, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len as u64);
    let template = format!("{{bar:40}} {{pos}}/{{len}} {what}, {{eta}} left");
    if let Ok(st) = ProgressStyle::with_template(&template) {
        b.set_style(st);
    }
    b
}
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Read as _, Seek as _};

/// A sweep as the command line gives it.
pub struct Sweep<'a> {
    /// The scenario file, as named (for errors).
    pub path: &'a str,
    /// The scenario file's text.
    pub text: &'a str,
    /// "table.key=v1,v2,...".
    pub vary: &'a [String],
    /// "i/n": run only the points numbered i modulo n, and write a part.
    pub shard: Option<&'a str>,
    /// Worker threads (default: [`default_threads`]).
    pub threads: Option<usize>,
    /// No progress bar.
    pub quiet: bool,
    /// The rows' format.
    pub format: RowFormat,
    /// Write the part to this file rather than to standard output.
    pub out: Option<&'a str>,
    /// Keep the rows `out` already holds and run only the missing points.
    pub resume: bool,
}

/// How a sweep writes its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFormat {
    /// CSV: a header, then a line a row ([`flashkit::sweep::csv_line`]).
    Csv,
    /// The CSV's columns as a JSON object a row (every value a string): a
    /// JSON array, or in a part one object a line.
    Json,
    /// JSON Lines of [`flashkit::sweep::Record`]s: each point's complete
    /// scenario under `config` and its result, counts as numbers.
    Jsonl,
}

impl RowFormat {
    /// As a part's first line names it.
    fn name(self) -> &'static str {
        match self {
            RowFormat::Csv => "csv",
            RowFormat::Json => "json",
            RowFormat::Jsonl => "jsonl",
        }
    }

    /// As an error names it.
    fn shown(self) -> &'static str {
        match self {
            RowFormat::Csv => "CSV",
            RowFormat::Json => "JSON",
            RowFormat::Jsonl => "JSON Lines",
        }
    }
}

/// The first line of every part: what it marks out.
const MARK: &str = flashkit::sweep::PART_MARK;

/// The digest that names a sweep: the kit's version, the scenario's text
/// and the `--vary` arguments in order (not the file's path).
fn digest(text: &str, vary: &[String]) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &str, s: &str| {
        h.update(format!("{tag} {}\n", s.len()));
        h.update(s);
        h.update("\n");
    };
    field("flashkit", env!("CARGO_PKG_VERSION"));
    field("scenario", text);
    for v in vary {
        field("vary", v);
    }
    format!("{:x}", h.finalize())
}

/// A part that went through a tool that ends lines in CR LF: a sweep
/// writes LF only, and a resumed part is cut at its lines' lengths.
const CRLF: &str = "its lines end in CR LF, not as a sweep writes them: convert them back (dos2unix) or run its shard again";

/// What a part's first line says.
#[derive(Clone, PartialEq, Eq)]
struct Mark {
    digest: String,
    points: usize,
    shard: usize,
    of: usize,
    format: RowFormat,
}

impl Mark {
    fn line(&self) -> String {
        format!(
            "{MARK}digest={} points={} shard={}/{} format={}\n",
            self.digest,
            self.points,
            self.shard,
            self.of,
            self.format.name()
        )
    }

    fn parse(line: &str) -> Option<Mark> {
        let rest = line.strip_prefix(MARK)?;
        let mut m = Mark {
            digest: String::new(),
            points: 0,
            shard: 0,
            of: 0,
            format: RowFormat::Csv,
        };
        let mut seen = 0;
        for f in rest.split(' ') {
            let (k, v) = f.split_once('=')?;
            match k {
                "digest" => m.digest = v.to_string(),
                "points" => m.points = v.parse().ok()?,
                "shard" => {
                    let (i, n) = v.split_once('/')?;
                    (m.shard, m.of) = (i.parse().ok()?, n.parse().ok()?);
                }
                "format" => {
                    m.format = [RowFormat::Csv, RowFormat::Json, RowFormat::Jsonl]
                        .into_iter()
                        .find(|f| f.name() == v)?
                }
                _ => return None,
            }
            seen += 1;
        }
        // No sweep has more points, or more shards, than MAX_POINTS: a
        // mark that says so was not written by one (and would have merge
        // make room for them all).
        // Every sweep has a point, and its digest is a SHA-256 in hex.
        let sane = (1..=MAX_POINTS).contains(&m.points) && m.of <= MAX_POINTS;
        let digest = m.digest.len() == 64 && m.digest.bytes().all(|b| b.is_ascii_hexdigit());
        (seen == 4 && sane && digest && m.of > 0 && m.shard < m.of).then_some(m)
    }
}

/// The point a row is for: its first CSV cell, or its JSON object's
/// "point" (a string in JSON, a number in JSON Lines).
fn row_point(row: &str, format: RowFormat) -> Option<usize> {
    let point = || -> Option<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(row).ok()?;
        v.as_object()?.get("point").cloned()
    };
    match format {
        RowFormat::Csv => row.split(',').next()?.parse().ok(),
        RowFormat::Json => point()?.as_str()?.parse().ok(),
        RowFormat::Jsonl => usize::try_from(point()?.as_u64()?).ok(),
    }
}

/// The cells of a CSV line as the kit writes them, counted; `None` for a
/// line no sweep writes.
fn csv_width(line: &str) -> Option<usize> {
    flashkit::sweep::csv_cells_of(line).map(|c| c.len())
}

/// A cell no sweep writes: a figure that is not a number (the kit refuses
/// NaN and infinities in every result).
fn not_a_figure(cell: &str) -> bool {
    let c = cell.trim_start_matches(['-', '+']).to_ascii_lowercase();
    matches!(c.as_str(), "nan" | "inf" | "infinity")
}

/// Whether a part's JSON or JSON Lines rows are as a sweep writes them: a
/// JSON array's rows objects of text cells under one list of keys, a JSON
/// Lines record its `point`, `version`, `config` and `result`. The keys of
/// the first row (what another part's must match); the error names the
/// first row that is not, counting rows from 1.
fn json_rows_fit<'a>(
    format: RowFormat,
    rows: impl Iterator<Item = &'a str>,
) -> Result<Option<String>, String> {
    // Sorted, as the keys are compared.
    const RECORD: [&str; 4] = ["config", "point", "result", "version"];
    let mut first: Option<Vec<String>> = None;
    for (i, row) in rows.enumerate() {
        let bad = |why: &str| format!("row {} {why}: not a row a sweep wrote", i + 1);
        let v: serde_json::Value =
            serde_json::from_str(row).map_err(|_| bad("is not a JSON object"))?;
        let obj = v.as_object().ok_or_else(|| bad("is not a JSON object"))?;
        // Compared sorted: the order a map keeps is no part of a row.
        let mut keys: Vec<String> = obj.keys().cloned().collect();
        keys.sort_unstable();
        match format {
            RowFormat::Jsonl => {
                let objects = obj.get("config").is_some_and(|c| c.is_object())
                    && obj.get("result").is_some_and(|r| r.is_object());
                if keys != RECORD || !objects {
                    return Err(bad("is not a record of point, version, config and result"));
                }
                // A record edited into one no run wrote (a figure its
                // counts do not give, a scenario the kit would refuse).
                flashkit::sweep::Record::read(&v)
                    .map_err(|e| format!("row {}: {e}: not a row a sweep wrote", i + 1))?;
            }
            _ => {
                let cells = obj
                    .values()
                    .all(|c| c.as_str().is_some_and(|c| !not_a_figure(c)));
                if !cells {
                    return Err(bad("holds a cell that is not text, or not a figure"));
                }
                match &first {
                    Some(f) if *f != keys => return Err(bad("has other keys than row 1")),
                    _ => {}
                }
            }
        }
        first.get_or_insert(keys);
    }
    Ok(first
        .filter(|_| format == RowFormat::Json)
        .map(|k| k.join(",")))
}

/// Whether a part's CSV header and rows are as a sweep writes them: the
/// header's first column `point`, every row as many cells as the header,
/// no cell a NaN or an infinity. The error names the first line that is
/// not, counting rows from 1.
fn csv_rows_fit<'a>(
    header: Option<&str>,
    rows: impl Iterator<Item = &'a str>,
) -> Result<(), String> {
    let Some(h) = header else {
        return Ok(());
    };
    let width = csv_width(h).filter(|_| h.split(',').next() == Some("point"));
    let Some(width) = width else {
        return Err("its second line is not a sweep's CSV header (`point,...`)".into());
    };
    for (i, row) in rows.enumerate() {
        let n = csv_width(row);
        if n != Some(width) {
            let cells = n.map_or("a quote left open".into(), |n| format!("{n} cells"));
            return Err(format!(
                "row {} has {cells} where its header has {width}: not a row a sweep wrote",
                i + 1
            ));
        }
        if flashkit::sweep::csv_cells_of(row).is_some_and(|c| c.iter().any(|c| not_a_figure(c))) {
            return Err(format!(
                "row {} holds a cell that is not a figure (NaN or an infinity): not a row a sweep wrote",
                i + 1
            ));
        }
    }
    Ok(())
}

/// Where a run's rows go and what is there already.
struct Target {
    sink: Sink,
    /// A part (the mark line and, in CSV, a header on every part) or the
    /// whole table (a header, or a JSON array).
    part: bool,
    /// The CSV header already written (a resumed part).
    header: Option<String>,
    /// Rows already there (a resumed part).
    kept: usize,
}

/// The points of shard `shard` of `of` in a sweep of `total`: the `k`-th is
/// point `shard + k * of`.
#[derive(Clone, Copy)]
struct Shard {
    shard: usize,
    of: usize,
    total: usize,
}

impl Shard {
    /// How many points the shard has.
    fn len(self) -> usize {
        self.total.saturating_sub(self.shard).div_ceil(self.of)
    }

    /// The number of the shard's `k`-th point, if it has one.
    fn get(self, k: usize) -> Option<usize> {
        (k < self.len()).then(|| self.shard + k * self.of)
    }
}

/// Open `--out` for a resumed run: keep its mark, header and the rows that
/// are the shard's first points in order; drop a torn last line.
fn reopen(path: &str, mark: &Mark, order: Shard, plan: &Plan) -> Result<Option<Target>, Failure> {
    let usage = |why: String| Failure::Usage(format!("--resume {path}: {why}"));
    // A device would be read forever (or written to as if a part).
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(usage("not a regular file: a part is one".into()));
    }
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(usage(e.to_string())),
    };
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| usage(e.to_string()))?;
    if text.is_empty() {
        return Ok(None);
    }
    // Its lengths are counted in LF-ended lines, as a sweep writes them.
    if text.contains('\r') {
        return Err(usage(CRLF.into()));
    }
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    // Cut short in its first line, the mark (a task killed as it began):
    // nothing of this part was written, so it starts afresh, as an empty
    // file does.
    if whole.is_empty() && mark.line().starts_with(text.as_str()) {
        return Ok(None);
    }
    let mut lines = whole.lines();
    let first = lines.next().unwrap_or_default();
    if format!("{first}\n") != mark.line() {
        return Err(usage(match Mark::parse(first) {
            None => "not a sweep part (write parts with --out); remove it to start afresh".into(),
            Some(m) if m.digest != mark.digest => {
                "a part of another sweep (scenario, --vary or version differ); remove it to start afresh".into()
            }
            Some(m) => format!(
                "holds shard {}/{} of {} points in {}, not this run's {}/{} of {} in {}; remove it to start afresh",
                m.shard,
                m.of,
                m.points,
                m.format.shown(),
                mark.shard,
                mark.of,
                mark.points,
                mark.format.shown(),
            ),
        }));
    }
    let mut len = first.len() + 1;
    let mut header = None;
    if mark.format == RowFormat::Csv {
        if let Some(h) = lines.next() {
            len += h.len() + 1;
            header = Some(h.to_string());
        }
    }
    // The header names the sweep's parameters first, as the shard's
    // first point gives them (read once, for every row's cells too).
    let columns = header
        .as_deref()
        .and_then(flashkit::sweep::csv_cells_of)
        .unwrap_or_default();
    if let (Some(_), Some(first)) = (&header, order.get(0)) {
        let names = plan_parameters(plan, first)?;
        if !names
            .iter()
            .map(|c| &c.0)
            .eq(columns.iter().take(names.len()))
        {
            return Err(usage(
                "its header is not this sweep's columns; remove it to start afresh".into(),
            ));
        }
    }
    let mut kept = 0;
    for row in lines {
        let p = row_point(row, mark.format);
        if p.is_none() || p != order.get(kept) {
            return Err(usage(format!(
                "row {} is not point {} of shard {}/{}: not a part this sweep wrote; remove it to start afresh",
                kept + 1,
                order.get(kept).map_or("(none)".into(), |p| p.to_string()),
                mark.shard,
                mark.of
            )));
        }
        len += row.len() + 1;
        kept += 1;
    }
    let rows = whole.lines().skip(if header.is_some() { 2 } else { 1 });
    let fit = match mark.format {
        RowFormat::Csv => csv_rows_fit(header.as_deref(), rows.clone()),
        f => json_rows_fit(f, rows.clone()).map(drop),
    };
    fit.map_err(|e| usage(format!("{e}; remove it to start afresh")))?;
    // Each row's parameters are its point's: a row edited, or of another
    // sweep's point of that number, is no row of this one.
    for (k, row) in rows.enumerate() {
        let index = order.get(k).unwrap_or_default();
        let point = plan.point(index).map_err(|e| usage(e.to_string()))?;
        // A record carries its point's whole scenario (the machine's and
        // the costs' parameters too, which no column shows): compared
        // whole, it holds every parameter a row's cells would.
        if mark.format == RowFormat::Jsonl {
            let kept = serde_json::from_str::<serde_json::Value>(row)
                .ok()
                .and_then(|v| v.get("config").cloned());
            if kept != serde_json::to_value(&point.scenario).ok() {
                return Err(usage(format!(
                    "row {} (point {index}) has another scenario than this sweep's point {index}: not a part this sweep wrote; remove it to start afresh",
                    k + 1
                )));
            }
            continue;
        }
        let cells = row_cells(row, mark.format, &columns);
        for (key, want) in plan.parameter_row(&point) {
            let have = cells.iter().find(|c| c.0 == key).map(|c| c.1.as_str());
            if have != Some(want.as_str()) {
                return Err(usage(format!(
                    "row {} (point {index}) has {key} = {}, where this sweep's point {index} has {want}: not a part this sweep wrote; remove it to start afresh",
                    k + 1,
                    have.unwrap_or("nothing"),
                )));
            }
        }
    }
    f.set_len(len as u64)
        .map_err(|e| output::failed(path, &e))?;
    f.seek(std::io::SeekFrom::End(0))
        .map_err(|e| output::failed(path, &e))?;
    Ok(Some(Target {
        sink: Sink::file(path, f),
        part: true,
        header,
        kept,
    }))
}

/// Point `index`'s number and parameters as its row has them.
fn plan_parameters(plan: &Plan, index: usize) -> Result<Row, Failure> {
    let p = plan
        .point(index)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    Ok(plan.parameter_row(&p))
}

/// A kept row's cells by column: a CSV line's under its header's
/// `columns`, a JSON row's keys (none for a line that is not one, which
/// the row checks refuse). A JSON Lines record is compared by its whole
/// scenario instead, and has none here.
fn row_cells(row: &str, format: RowFormat, columns: &[String]) -> Row {
    match format {
        RowFormat::Csv => {
            let cells = flashkit::sweep::csv_cells_of(row).unwrap_or_default();
            columns.iter().cloned().zip(cells).collect()
        }
        RowFormat::Json => serde_json::from_str::<BTreeMap<String, String>>(row)
            .map(|m| m.into_iter().collect())
            .unwrap_or_default(),
        RowFormat::Jsonl => Row::new(),
    }
}

/// Run a sweep, writing its rows as they are done (see the module's notes).
pub fn sweep(s: &Sweep<'_>) -> Result<(), Failure> {
    let usage = Failure::Usage;
    let src = Source {
        path: s.path,
        text: s.text,
    };
    let axes = s
        .vary
        .iter()
        .map(|v| Axis::parse(v).map_err(|e| usage(format!("--vary {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let (shard, of) = match s.shard {
        None => (0, 1),
        Some(x) => x
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
            .filter(|(i, n)| *n > 0 && i < n && *n <= MAX_POINTS)
            .ok_or_else(|| {
                usage(format!(
                    "--shard {x}: write i/n with 0 <= i < n <= {MAX_POINTS} (a sweep's most points)"
                ))
            })?,
    };
    let threads = threads(s.threads)?;
    if s.resume && s.out.is_none() {
        return Err(usage(
            "--resume needs --out FILE (the part to resume)".into(),
        ));
    }
    if let Some(out) = s.out {
        output::out_file("--out", out)?;
        if same_file(out, s.path) {
            return Err(usage(format!(
                "--out {out} is the scenario file {}: write the part to another file",
                s.path
            )));
        }
    }
    // Every point is built and checked before anything runs (so every shard
    // refuses a bad sweep alike), one at a time and none kept; the workers
    // build this shard's points again as they take them.
    let bar = progress(0, "points checked", s.quiet);
    let plan = Plan::checked(&src, &axes, threads, |n, total| {
        bar.set_length(total as u64);
        bar.set_position(n as u64);
    });
    bar.finish_and_clear();
    let plan = plan.map_err(|e| match e {
        SweepError::NotATable { .. }
        | SweepError::Twice { .. }
        | SweepError::Within { .. }
        | SweepError::InValue { .. } => usage(format!("--vary {e}")),
        e => usage(e.to_string()),
    })?;
    let order = Shard {
        shard,
        of,
        total: plan.total(),
    };
    let mark = Mark {
        digest: digest(s.text, s.vary),
        points: plan.total(),
        shard,
        of,
        format: s.format,
    };
    let resumed = match (s.out, s.resume) {
        (Some(path), true) => reopen(path, &mark, order, &plan)?,
        _ => None,
    };
    let mut target = match resumed {
        Some(t) => t,
        None => {
            let mut sink = match s.out {
                Some(path) => Sink::create(path)?,
                None => Sink::stdout(),
            };
            let part = s.out.is_some() || s.shard.is_some();
            if part {
                sink.write(mark.line().as_bytes())?;
            }
            Target {
                sink,
                part,
                header: None,
                kept: 0,
            }
        }
    };
    let kept = target.kept;
    let todo = order.len().saturating_sub(kept);
    let bar = progress(todo, "points", s.quiet);
    // Rows written (a JSON array opened).
    let mut rows = 0usize;
    // Each point is built as a worker takes it, and each row written as
    // soon as every point before it is done, so output cut short holds
    // every row before the first unfinished point.
    let written = run_in_order(
        todo,
        threads,
        |k| {
            let index = order.get(kept + k).unwrap_or(usize::MAX);
            let p = plan
                .point(index)
                .map_err(|e| Failure::Usage(e.to_string()))?;
            // A model stopped with work pending is status 1, bad input 2.
            let r = scenario::run(&p.scenario).map_err(|e| match e {
                e if e.not_clean() => Failure::Failed(format!("point {index}: {e}")),
                e => Failure::Usage(format!("point {index}: {e}")),
            })?;
            // The row is made on the worker; the writer only writes it.
            Ok(match s.format {
                RowFormat::Jsonl => Made::Line(
                    jsonl_line(&plan.record(p, r))
                        .map_err(|e| Failure::Failed(format!("point {index}: {e}")))?,
                ),
                _ => Made::Row(plan.row(&p, &r)),
            })
        },
        |n| bar.set_position(n as u64),
        |k, r: Result<_, Failure>| {
            let mut chunk = String::new();
            match r? {
                Made::Row(cols) => row(s.format, &mut target, &cols, k == 0, &mut chunk)?,
                Made::Line(line) => chunk = line,
            }
            target.sink.write(chunk.as_bytes())?;
            rows += 1;
            Ok(())
        },
    );
    bar.finish_and_clear();
    if !target.part && s.format == RowFormat::Json {
        // The table's end: a JSON array's bracket (an empty one if no rows),
        // also after a point that failed, so the rows before it are a JSON
        // array still.
        let end = match (rows, &written) {
            (0, Ok(())) => "[]\n",
            (0, Err(_)) => "",
            _ => "]\n",
        };
        let closed = target.sink.write(end.as_bytes());
        return written.and(closed);
    }
    written
}

/// Whether `a` and `b` name one file: one device and inode (a hard link
/// too), or else one canonical path; a file that does not exist is no
/// other file.
pub fn same_file(a: &str, b: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return (x.dev(), x.ino()) == (y.dev(), y.ino());
        }
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A point's row as a worker makes it: its columns, or its JSON Lines
/// record, written.
enum Made {
    Row(Row),
    Line(String),
}

/// One row's text, with what goes before it: the header before a CSV
/// table's or part's first row, the bracket or comma of a JSON array.
fn row(
    format: RowFormat,
    t: &mut Target,
    cols: &Row,
    first: bool,
    chunk: &mut String,
) -> Result<(), Failure> {
    if format == RowFormat::Json {
        let obj = serde_json::Value::Object(
            cols.iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
        );
        if t.part {
            chunk.push_str(&format!("{obj}\n"));
        } else {
            chunk.push_str(if first { "[" } else { "," });
            chunk.push_str(&obj.to_string());
        }
        return Ok(());
    }
    // The header as resumed parts keep it: without its newline.
    let head = csv_header(cols).trim_end_matches('\n').to_string();
    match &t.header {
        None => {
            chunk.push_str(&head);
            chunk.push('\n');
            t.header = Some(head);
        }
        Some(h) if *h != head => {
            return Err(Failure::Usage(format!(
                "{}: its header is not this sweep's columns; remove it to start afresh",
                t.sink.name()
            )))
        }
        Some(_) => {}
    }
    chunk.push_str(&csv_line(cols));
    Ok(())
}

/// Point numbers as a short list: "1, 5, 9" or "1, 5, 9, ... (40 in all)".
fn list(points: &[usize]) -> String {
    const SHOWN: usize = 12;
    let mut s = points
        .iter()
        .take(SHOWN)
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if points.len() > SHOWN {
        s.push_str(&format!(", ... ({} in all)", points.len()));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        "point"
    } else {
        "points"
    }
}

/// A part as read by the merge.
struct Part<'a> {
    path: &'a str,
    mark: Mark,
    header: Option<&'a str>,
    /// Its columns: the CSV header, a JSON array's rows' keys.
    shape: Option<String>,
    rows: Vec<(usize, &'a str)>,
}

/// Merge a sharded sweep's parts into the table the unsharded sweep writes
/// (to `out`, or standard output). Nothing is written unless the parts are
/// of one sweep and hold every point exactly once.
pub fn merge(paths: &[String], out: Option<&str>) -> Result<(), Failure> {
    if let Some(o) = out {
        output::out_file("-o", o)?;
        if let Some(p) = paths.iter().find(|p| same_file(o, p)) {
            return Err(Failure::Usage(format!(
                "-o {o} is the part {p}: write the table to another file"
            )));
        }
    }
    // One file named twice is a slip of the command line, not a part
    // that holds its points twice.
    for (i, a) in paths.iter().enumerate() {
        if let Some(b) = paths[..i].iter().find(|b| *b == a || same_file(a, b)) {
            let what = if a == b {
                format!("{a} is given twice")
            } else {
                format!("{a} and {b} are one file")
            };
            return Err(Failure::Usage(format!("{what}: name each part once")));
        }
    }
    let texts = paths
        .iter()
        .map(|p| output::read_input(p))
        .collect::<Result<Vec<_>, _>>()?;
    let table = merged(paths, &texts).map_err(Failure::Usage)?;
    match out {
        Some(path) => output::write_file(path, table.as_bytes()),
        None => Sink::stdout().write(table.as_bytes()),
    }
}

/// The merged table, or one line saying what is wrong with the parts.
fn merged(paths: &[String], texts: &[String]) -> Result<String, String> {
    let mut parts = Vec::new();
    for (path, text) in paths.iter().zip(texts) {
        if text.is_empty() {
            // A shard writes its first line before any point: an empty
            // file is no part (a task that never started, or /dev/null).
            return Err(format!(
                "{path}: empty, not a sweep part (a part begins with `{MARK}...`): run its shard again, or leave it out"
            ));
        }
        if text.contains('\r') {
            return Err(format!("{path}: {CRLF}"));
        }
        if !text.ends_with('\n') {
            return Err(format!(
                "{path}: its last line is cut short (a task killed while writing?): run its shard again with --resume"
            ));
        }
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        let mark = Mark::parse(first).ok_or_else(|| match first.starts_with(MARK) {
            true => format!(
                "{path}: its first line is not one a sweep writes (`{MARK}digest=... points=N shard=i/n format=...`, the digest 64 hex digits, N from 1 and n at most {MAX_POINTS}, i below n)"
            ),
            false => format!(
                "{path}: not a sweep part (its first line is not `{MARK}...`; write parts with sweep --out)"
            ),
        })?;
        let header = (mark.format == RowFormat::Csv)
            .then(|| lines.next())
            .flatten();
        let mut rows = Vec::new();
        for (k, row) in lines.enumerate() {
            if row.trim().is_empty() {
                return Err(format!(
                    "{path}: row {} is an empty line, which a sweep never writes: remove it",
                    k + 1
                ));
            }
            let p = row_point(row, mark.format)
                .filter(|&p| p < mark.points && p % mark.of == mark.shard)
                .ok_or_else(|| {
                    format!(
                        "{path}: row {} is not a row of shard {}/{}",
                        rows.len() + 1,
                        mark.shard,
                        mark.of
                    )
                })?;
            rows.push((p, row));
        }
        let shape = match mark.format {
            RowFormat::Csv => {
                csv_rows_fit(header, rows.iter().map(|r| r.1))
                    .map_err(|e| format!("{path}: {e}"))?;
                header.map(str::to_string)
            }
            f => json_rows_fit(f, rows.iter().map(|r| r.1)).map_err(|e| format!("{path}: {e}"))?,
        };
        parts.push(Part {
            path,
            mark,
            header,
            shape,
            rows,
        });
    }
    let Some(first) = parts.first() else {
        return Err("no parts to merge".into());
    };
    let want = first.mark.clone();
    for p in &parts[1..] {
        let m = &p.mark;
        if m.digest != want.digest {
            return Err(format!(
                "{} is a part of another sweep than {} (scenario, --vary or version differ)",
                p.path, first.path
            ));
        }
        if (m.points, m.of) != (want.points, want.of) {
            return Err(format!(
                "{} is shard {}/{} of {} points, {} shard {}/{} of {}: not one sharding of the sweep",
                p.path, m.shard, m.of, m.points, first.path, want.shard, want.of, want.points
            ));
        }
        if m.format != want.format {
            let f = |f: RowFormat| f.shown();
            return Err(format!(
                "{} is {}, {} {}: merge parts of one format",
                p.path,
                f(m.format),
                first.path,
                f(want.format)
            ));
        }
    }
    // Every point once.
    let mut owner: Vec<Option<&str>> = vec![None; want.points];
    let mut twice: BTreeMap<usize, (&str, &str)> = BTreeMap::new();
    for p in &parts {
        for &(n, _) in &p.rows {
            match owner[n] {
                Some(o) => {
                    twice.insert(n, (o, p.path));
                }
                None => owner[n] = Some(p.path),
            }
        }
    }
    if let Some((_, &(a, b))) = twice.iter().next() {
        let pts: Vec<usize> = twice.keys().copied().collect();
        let one = pts.len() == 1;
        let files = match (a == b, one) {
            (true, true) => format!("{a} holds it twice"),
            (true, false) => format!("{a} holds them twice"),
            (false, _) => format!("in {a} and {b}"),
        };
        return Err(format!(
            "{} {} {} twice: {files}",
            plural(pts.len()),
            list(&pts),
            if one { "appears" } else { "appear" }
        ));
    }
    let missing: Vec<usize> = (0..want.points).filter(|&n| owner[n].is_none()).collect();
    if !missing.is_empty() {
        let mut why = Vec::new();
        // The shards that lost points (not every shard: a mark may name
        // many more shards than points).
        let lost: std::collections::BTreeSet<usize> = missing.iter().map(|n| n % want.of).collect();
        for s in lost {
            let mine: Vec<&Part> = parts.iter().filter(|p| p.mark.shard == s).collect();
            let last = mine.iter().flat_map(|p| p.rows.iter().map(|r| r.0)).max();
            why.push(match last {
                None if mine.is_empty() => format!("shard {s}/{} produced nothing", want.of),
                None => format!("shard {s}/{} has no rows ({})", want.of, mine[0].path),
                Some(l) => format!(
                    "shard {s}/{} stopped after point {l} ({})",
                    want.of, mine[0].path
                ),
            });
        }
        // A few shards' reasons, as a few points are listed.
        const SHOWN: usize = 4;
        let more = why.len().saturating_sub(SHOWN);
        why.truncate(SHOWN);
        if more > 0 {
            why.push(format!(
                "and {more} more shard{}",
                if more == 1 { "" } else { "s" }
            ));
        }
        return Err(format!(
            "{} {} missing: {}; run those shards again with --resume",
            plural(missing.len()),
            list(&missing),
            why.join("; ")
        ));
    }
    // One header, the same on every part that has rows.
    let mut header = None;
    let mut shape: Option<(&Option<String>, &str)> = None;
    for p in parts.iter().filter(|p| !p.rows.is_empty()) {
        match shape {
            None => shape = Some((&p.shape, p.path)),
            Some((s, other)) if *s != p.shape => {
                return Err(format!(
                    "{} and {other} have different columns: not parts of one sweep",
                    p.path
                ))
            }
            _ => {}
        }
        match (header, p.header) {
            (None, h) => header = Some((h, p.path)),
            (Some((h, other)), h2) if h != h2 => {
                return Err(format!(
                    "{} and {other} have different columns: not parts of one sweep",
                    p.path
                ))
            }
            _ => {}
        }
    }
    let mut rows: Vec<(usize, &str)> = parts.iter().flat_map(|p| p.rows.iter().copied()).collect();
    rows.sort_unstable_by_key(|r| r.0);
    let mut out = String::new();
    if want.format == RowFormat::Json {
        out.push('[');
        out.push_str(&rows.iter().map(|r| r.1).collect::<Vec<_>>().join(","));
        out.push_str("]\n");
    } else {
        if let Some((Some(h), _)) = header {
            out.push_str(h);
            out.push('\n');
        }
        for (_, r) in rows {
            out.push_str(r);
            out.push('\n');
        }
    }
    Ok(out)
}
