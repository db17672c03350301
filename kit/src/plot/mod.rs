//! Plots: charts computed from the model or read from a sweep's CSV or
//! JSON Lines, and
//! (with the `plot` feature) drawn as SVG or PNG with plotters. Labels are
//! laid out with a TrueType font found on the machine (DejaVu or Liberation
//! Sans, or `FLASHKIT_FONT`).

#[cfg(feature = "plot")]
mod draw;
#[cfg(feature = "plot")]
pub use draw::{image_format, render};

use protocols::transfer::{self, Config, SenderState, Version};

/// One named series of (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its legend.
    pub name: String,
    /// Its points, in x order.
    pub points: Vec<(f64, f64)>,
    /// A reference line drawn dashed (a bound, not a measurement).
    pub bound: bool,
}

/// The most labels an x axis takes, and the most groups of bars: more
/// would not fit a chart's width.
pub const MOST_LABELS: usize = 100;

/// The most series a chart draws. Each is told apart from the others by
/// its colour (one of six) together with its mark (one of three: a circle
/// and a solid line, a triangle and a dashed line, a cross and a dotted
/// line; for bars, a solid, a hollow and a pale fill), so that no two
/// series of a chart look alike; and their legend, a line each, fits
/// beside the plot. A chart from a sweep with more values of `--series`
/// than this is refused, naming the count.
pub const MOST_SERIES: usize = 18;

/// A chart: axes, and the series drawn on them.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The title above the plot.
    pub title: String,
    /// The x axis's label.
    pub x: String,
    /// The y axis's label.
    pub y: String,
    /// Draw x on a log2 scale, labelled with powers of two.
    pub log_x: bool,
    /// Labels on the x axis (a categorical axis wants one per category;
    /// at most [`MOST_LABELS`]).
    pub x_labels: usize,
    /// Bars instead of lines when not empty: the names of the groups (at
    /// most [`MOST_LABELS`]), each series a bar in each group (its points'
    /// x is the group's index, a whole number from 0).
    pub groups: Vec<String>,
    /// The series, drawn in order (at most [`MOST_SERIES`]).
    pub series: Vec<Series>,
}

fn run(c: &Config) -> Result<transfer::Outcome, String> {
    transfer::run(c).map_err(|e| e.to_string())
}

/// Time per line against lines sent: the whole per line, and the fixed
/// start-up amortized over the lines, apart.
pub fn per_line() -> Result<Chart, String> {
    let mut total = Vec::new();
    let mut fixed = Vec::new();
    let mut rate = Vec::new();
    for lines in [1u64, 2, 4, 8, 16, 32, 64, 128, 256] {
        let o = run(&Config {
            bytes: lines * 128,
            ..Config::default()
        })?;
        let n = lines as f64;
        total.push((n, o.total.0 as f64 / n));
        fixed.push((n, o.startup.total as f64 / n));
        // A single line has no spacing: the transfer phase starts at two.
        if let Some(r) = o.per_line {
            rate.push((n, r));
        }
    }
    Ok(Chart {
        title: "Transfer time per line (uncached, C4)".into(),
        x: "lines sent".into(),
        y: "cycles per line (10 ns)".into(),
        log_x: true,
        x_labels: 10,
        groups: Vec::new(),
        series: vec![
            Series {
                name: "total per line".into(),
                points: total,
                bound: false,
            },
            Series {
                name: "start-up, amortized".into(),
                points: fixed,
                bound: false,
            },
            Series {
                name: "transfer phase per line".into(),
                points: rate,
                bound: false,
            },
        ],
    })
}

/// Achieved bandwidth for each handler version and send-buffer state, with
/// the network's bound.
pub fn bandwidth() -> Result<Chart, String> {
    let sizes = [512u64, 1024, 2048, 4096, 8192, 16384, 32768];
    let mut series = Vec::new();
    for (v, vn) in [
        (Version::Base, "B"),
        (Version::Optimized, "O"),
        (Version::Chunked(4), "C4"),
    ] {
        for (s, sn) in [
            (SenderState::Uncached, "uncached"),
            (SenderState::Dirty, "dirty"),
        ] {
            let mut pts = Vec::new();
            for &b in &sizes {
                let o = run(&Config {
                    bytes: b,
                    handler: v,
                    sender: s,
                    ..Config::default()
                })?;
                pts.push((b as f64, o.bandwidth_mb_s()));
            }
            series.push(Series {
                name: format!("{vn}, {sn}"),
                points: pts,
                bound: false,
            });
        }
    }
    // 128 bytes of data per 40-cycle packet.
    let net = 128.0 / (40.0 * 0.01);
    series.push(Series {
        name: "network bound".into(),
        points: sizes.iter().map(|&b| (b as f64, net)).collect(),
        bound: true,
    });
    Ok(Chart {
        title: "Achieved bandwidth by handler and send-buffer state (uncached: all three coincide)"
            .into(),
        x: "bytes sent".into(),
        y: "MB/s".into(),
        log_x: true,
        x_labels: 10,
        groups: Vec::new(),
        series,
    })
}

/// Sender time per line against the chunk factor, dirty lines, aligned and
/// unaligned.
pub fn chunk() -> Result<Chart, String> {
    let mut series = Vec::new();
    for (off, name) in [(0u64, "aligned"), (16, "16 bytes off"), (3, "3 bytes off")] {
        let mut pts = Vec::new();
        for k in 1..=16u32 {
            let o = run(&Config {
                sender: SenderState::Dirty,
                handler: Version::Chunked(k),
                src_offset: off,
                ..Config::default()
            })?;
            pts.push((k as f64, o.sender_occupancy_per_line));
        }
        series.push(Series {
            name: format!("dirty, {name}"),
            points: pts,
            bound: false,
        });
    }
    series.push(Series {
        name: "processor-cache access (43)".into(),
        points: vec![(1.0, 43.0), (16.0, 43.0)],
        bound: true,
    });
    Ok(Chart {
        title: "Sender occupancy per line against chunk factor (4 KB)".into(),
        x: "chunk factor (lines per invocation)".into(),
        y: "sender cycles per line".into(),
        log_x: false,
        x_labels: 16,
        groups: Vec::new(),
        series,
    })
}

/// LogP parameters and bulk bandwidth across the platforms.
pub fn logp() -> Result<Chart, String> {
    use protocols::am::{cm5, flash, sp, suite, Platform};
    let ps: Vec<Box<dyn Platform>> = vec![
        Box::new(cm5::Cm5::new(16, cm5::Layer::Cmam)),
        Box::new(sp::Sp::new(16)),
        Box::new(flash::Flash::new(16)),
    ];
    let mut series = Vec::new();
    for p in ps {
        let l = suite::logp(p.as_ref())?;
        // One line per platform across the parameters (x = parameter index).
        let vals = [
            l.send_overhead_us,
            l.recv_overhead_us,
            l.round_trip_us / 2.0,
            l.bulk.startup_us,
        ];
        series.push(Series {
            name: format!("{} ({:.0} MB/s bulk)", l.platform, l.bulk.bandwidth_mb_s),
            points: vals
                .iter()
                .enumerate()
                .map(|(i, &v)| ((i + 1) as f64, v))
                .collect(),
            bound: false,
        });
    }
    Ok(Chart {
        title: "LogP across platforms: 1 send o, 2 receive o, 3 half round trip, 4 bulk start-up"
            .into(),
        x: "parameter (1 to 4)".into(),
        y: "microseconds".into(),
        log_x: false,
        x_labels: 4,
        groups: Vec::new(),
        series,
    })
}

/// A chart from a sweep's CSV: `y` against `x`, one series per value of
/// `series` (if given; in numeric order when every value is a number, and
/// at most [`MOST_SERIES`]). A cell of `x` or `y` that is not a finite number
/// (empty, text, `inf`, `nan`), or an integer past 2^53 (which the chart
/// would draw at a neighbour), is an error naming its row and column.
///
/// ```
/// // A spreadsheet's byte-order mark is not part of the first column's name.
/// let chart = flashkit::plot::from_csv("\u{feff}x,y\n1,2\n2,4\n", "x", "y", None).unwrap();
/// assert_eq!(chart.series[0].points, [(1.0, 2.0), (2.0, 4.0)]);
/// // 2^53 + 1 has no f64 of its own.
/// let e = flashkit::plot::from_csv("x,y\n9007199254740993,1\n", "x", "y", None).unwrap_err();
/// assert!(e.starts_with("row 2, column 'x': 9007199254740993 is past 2^53"), "{e}");
/// // A sharded sweep's part is merged before it is plotted.
/// let part = "# flashkit-sweep digest=ab points=2 shard=0/2 format=csv\nx,y\n1,2\n";
/// let e = flashkit::plot::from_csv(part, "x", "y", None).unwrap_err();
/// assert!(e.contains("merge the parts first"), "{e}");
/// ```
pub fn from_csv(text: &str, x: &str, y: &str, series: Option<&str>) -> Result<Chart, String> {
    use crate::sweep::csv_cells_of;
    crate::sweep::not_a_part(text)?;
    // A spreadsheet's CSV may begin with a byte-order mark: not a name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    let first = lines.next().ok_or("the CSV is empty")?;
    let head = csv_cells_of(first).ok_or("row 1: a quote left open, not a CSV header")?;
    if let Some(twice) = head
        .iter()
        .enumerate()
        .find(|(i, h)| head[..*i].contains(h))
    {
        return Err(format!("row 1: column '{}' is named twice", twice.1));
    }
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("no column '{name}' (columns: {})", head.join(", ")))
    };
    let (xi, yi) = (col(x)?, col(y)?);
    let si = series.map(col).transpose()?;
    let mut points = Vec::new();
    let mut rows = lines.enumerate();
    while let Some((n, l)) = rows.next() {
        // A cell is named by its row (the header is row 1) and column.
        let at = format!("row {}", n + 2);
        // A quoted cell may hold a line break: its row goes on on the
        // next line (an odd count of quotes is one left open).
        let odd = |l: &str| l.matches('"').count() % 2 == 1;
        let (mut row, mut open) = (l.to_string(), odd(l));
        while open {
            let (_, more) = rows
                .next()
                .ok_or_else(|| format!("{at}: a quote left open"))?;
            row.push('\n');
            row.push_str(more);
            open ^= odd(more);
        }
        let cells = csv_cells_of(&row).ok_or_else(|| format!("{at}: a quote left open"))?;
        if cells.len() != head.len() {
            return Err(format!(
                "{at} has {} cells where the header has {}",
                cells.len(),
                head.len()
            ));
        }
        let key = si.map_or(String::new(), |i| cells[i].clone());
        points.push((
            key,
            number(&at, x, &cells[xi])?,
            number(&at, y, &cells[yi])?,
        ));
    }
    if points.is_empty() {
        return Err("the CSV holds a header and no row".into());
    }
    chart(x, y, series, points)
}

/// A chart from a sweep's JSON Lines (`flashkit sweep --format jsonl`, or
/// [`crate::sweep::jsonl`]): `y` against `x`, one series per value of
/// `series` (if given; ordered and limited as [`from_csv`]'s), each named as a CSV column of the same sweep is
/// (`transfer.chunk`, `machine.net_latency`, `result.per_line_cycles`;
/// [`crate::sweep::jsonl_cells`] lists a line's). A line that is not a JSON
/// object, not a sweep's [`Record`](crate::sweep::Record), or whose result
/// does not read back as [`Saved::read`](crate::scenario::Saved::read)
/// reads a saved result, whose scenario (`config`) is not one a run takes
/// ([`Scenario::validate`](crate::scenario::Scenario::validate)), a column
/// a line lacks, and a value of `x` or `y` that is not a finite number
/// (or an integer a chart's axis cannot hold exactly) are errors naming
/// the line.
pub fn from_jsonl(text: &str, x: &str, y: &str, series: Option<&str>) -> Result<Chart, String> {
    crate::sweep::not_a_part(text)?;
    let mut points = Vec::new();
    for (n, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", n + 1);
        let v = crate::json::parse(l).map_err(|e| match e.is_data() {
            true => format!("{at}: {e}"),
            false => format!("{at}: not JSON: {e}"),
        })?;
        if !v.is_object() {
            return Err(format!("{at}: not a JSON object"));
        }
        // A sweep's record a run could have written: not a figure drawn
        // from a line edited into something no run measured.
        crate::sweep::Record::read(&v).map_err(|e| format!("{at}: {e}"))?;
        let cells = crate::sweep::jsonl_cells(&v);
        let cell = |name: &str| {
            cells
                .iter()
                .find(|c| c.0 == name)
                .map(|c| c.1.as_str())
                .ok_or_else(|| {
                    let names: Vec<&str> = cells.iter().map(|c| c.0.as_str()).collect();
                    format!("{at}: no column '{name}' (columns: {})", names.join(", "))
                })
        };
        let key = series.map(cell).transpose()?.unwrap_or("").to_string();
        points.push((key, number(&at, x, cell(x)?)?, number(&at, y, cell(y)?)?));
    }
    if points.is_empty() {
        return Err("the JSON Lines hold no line".into());
    }
    chart(x, y, series, points)
}

/// The largest integer every integer up to which a chart's axis (an
/// `f64`) holds exactly: 2^53.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A cell of column `name` at `at` (`row 3`, `line 2`) as a finite number.
fn number(at: &str, name: &str, cell: &str) -> Result<f64, String> {
    match cell.parse::<f64>() {
        // An integer past 2^53 is drawn at a neighbour of its value, and
        // two such integers may be drawn at one x.
        Ok(v)
            if cell
                .parse::<i128>()
                .is_ok_and(|i| v as i128 != i || v.abs() > EXACT) =>
        {
            Err(format!(
                "{at}, column '{name}': {cell} is past 2^53, where a chart's axis holds \
                 integers only approximately: plot values from -2^53 to 2^53"
            ))
        }
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!(
            "{at}, column '{name}': '{cell}' is not a finite number"
        )),
        Err(_) if cell.is_empty() => Err(format!(
            "{at}: '{name}' is empty (the run left it undefined): plot rows that have it"
        )),
        Err(_) => Err(format!("{at}: '{name}' is not a number")),
    }
}

/// `y` against `x` from (series value, x, y) points: a series per value,
/// in the values' numeric order when every value is a number (`2` before
/// `10`), else in their order as text, each series's points in x order.
/// More values than [`MOST_SERIES`] are an error naming `--series` and
/// the count: their lines could not be told apart, nor their legend fit.
/// An `x` met twice in one series is an error: those rows differ in a
/// column the chart does not show, and one line through both would zigzag
/// between them as if it were a curve.
fn chart(
    x: &str,
    y: &str,
    series: Option<&str>,
    points: Vec<(String, f64, f64)>,
) -> Result<Chart, String> {
    let mut by: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for (k, px, py) in points {
        by.entry(k).or_default().push((px, py));
    }
    if by.len() > MOST_SERIES {
        return Err(format!(
            "--series {} has {} values, a line each: a chart tells at most {MOST_SERIES} \
             series apart; plot fewer rows, or name with --series a column with fewer values",
            series.unwrap_or(""),
            by.len()
        ));
    }
    let mut by: Vec<(String, Vec<(f64, f64)>)> = by.into_iter().collect();
    order_series(&mut by);
    for (k, p) in &mut by {
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some(w) = p.windows(2).find(|w| w[0].0 == w[1].0) {
            let within = match series {
                Some(s) => format!("series {s} = {k}"),
                None => "the chart (no --series)".into(),
            };
            return Err(format!(
                "{x} = {} is on two rows of {within}: a line has one point at each x; \
                 name with --series the column that tells them apart (or plot fewer rows)",
                w[0].0
            ));
        }
    }
    Ok(Chart {
        title: format!("{y} against {x}"),
        x: x.into(),
        y: y.into(),
        log_x: false,
        x_labels: 10,
        groups: Vec::new(),
        series: by
            .into_iter()
            .map(|(k, p)| Series {
                name: if k.is_empty() {
                    y.to_string()
                } else {
                    format!("{} = {k}", series.unwrap_or(""))
                },
                points: p,
                bound: false,
            })
            .collect(),
    })
}

/// Order series by their keys: numerically when every key is a number
/// (`2` before `10`; keys of one value, such as `1` and `1.0`, as text),
/// else as text. Either way the order depends on the keys alone.
fn order_series<T>(by: &mut [(String, T)]) {
    let number = |k: &str| k.parse::<f64>().ok();
    let numeric = by.iter().all(|(k, _)| number(k).is_some());
    by.sort_by(|(a, _), (b, _)| {
        let by_number = match (numeric, number(a), number(b)) {
            (true, Some(a), Some(b)) => a.total_cmp(&b),
            _ => std::cmp::Ordering::Equal,
        };
        by_number.then_with(|| a.cmp(b))
    });
}

#[cfg(test)]
mod tests {
    use super::{from_csv, MOST_SERIES};

    /// A CSV of `keys` as column `k`, two points each, rows in `keys`'s order.
    fn csv(keys: &[&str]) -> String {
        let mut t = String::from("k,x,y\n");
        for (i, k) in keys.iter().enumerate() {
            t.push_str(&format!("{k},1,{i}\n{k},2,{i}\n"));
        }
        t
    }

    fn names(text: &str) -> Vec<String> {
        let chart = from_csv(text, "x", "y", Some("k")).unwrap();
        chart.series.into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn numeric_series_are_in_numeric_order() {
        // As text they read 0, 1, 10, 100, 1000, 2.
        let keys = ["1000", "2", "100", "0", "10", "1"];
        let want: Vec<String> = ["0", "1", "2", "10", "100", "1000"]
            .iter()
            .map(|k| format!("k = {k}"))
            .collect();
        assert_eq!(names(&csv(&keys)), want);
        // Whatever order the rows come in.
        let mut rev = keys;
        rev.reverse();
        assert_eq!(names(&csv(&rev)), want);
        // Negative, fractional and exponent keys are numbers too; keys of
        // one value are ordered as text, every time.
        assert_eq!(
            names(&csv(&["1e1", "-3", "2.5", "1.0", "1", "-0.5"])),
            ["-3", "-0.5", "1", "1.0", "2.5", "1e1"].map(|k| format!("k = {k}"))
        );
    }

    #[test]
    fn series_not_all_numbers_are_in_text_order() {
        let keys = ["b", "10", "a", "9", "dirty"];
        assert_eq!(
            names(&csv(&keys)),
            ["10", "9", "a", "b", "dirty"].map(|k| format!("k = {k}"))
        );
        // An empty key is no number (its series is named by y): the
        // series sort as text.
        assert_eq!(names(&csv(&["10", "", "9"])), ["y", "k = 10", "k = 9"]);
    }

    #[test]
    fn more_series_than_a_chart_tells_apart_are_refused_naming_series() {
        let keys: Vec<String> = (0..MOST_SERIES).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        assert_eq!(names(&csv(&refs)).len(), MOST_SERIES);
        for n in [MOST_SERIES + 1, 2000] {
            let keys: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let e = from_csv(&csv(&refs), "x", "y", Some("k")).unwrap_err();
            assert!(!e.contains('\n'), "one line: {e}");
            assert!(e.starts_with(&format!("--series k has {n} values")), "{e}");
            assert!(e.contains(&format!("at most {MOST_SERIES}")), "{e}");
        }
    }
}
