//! `flashkit plot` writes SVG and PNG files that parse and hold a chart.

use crate::common;

use common::have_font;
use std::process::Command;

fn plot(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .arg("plot")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn check_svg(path: &std::path::Path, labels: &[&str]) {
    let s = std::fs::read_to_string(path).unwrap();
    assert!(
        s.starts_with("<svg") && s.trim_end().ends_with("</svg>"),
        "{path:?}"
    );
    // Balanced elements: every opened tag closes (or closes itself).
    let opens = s.matches('<').count();
    let closes = s.matches("/>").count() + s.matches("</").count() * 2;
    assert_eq!(opens, closes, "{path:?}: unbalanced tags");
    assert!(
        s.matches("<polyline").count() + s.matches("<path").count() >= 3,
        "lines drawn"
    );
    for l in labels {
        assert!(s.contains(l), "{path:?}: no '{l}'");
    }
}

fn check_png(path: &std::path::Path) {
    let dec = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (960, 600));
    let px = &buf[..info.buffer_size()];
    let step = info.color_type.samples();
    let colors: std::collections::BTreeSet<&[u8]> = px.chunks(step).collect();
    assert!(
        colors.len() > 10,
        "a chart, not a blank image: {} colours",
        colors.len()
    );
}

#[test]
fn every_plot_writes_svg_and_png() {
    let dir = std::env::temp_dir().join(format!("flashkit-plots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if !have_font() {
        // Without a font the command says so, in one line, with status 2.
        let (code, err) = plot(&["chunk", "--out", dir.join("x.svg").to_str().unwrap()]);
        assert_eq!(code, 2);
        assert!(err.contains("TrueType font"), "{err}");
        return;
    }
    for (kind, labels) in [
        (
            "per-line",
            vec!["lines sent", "cycles per line", "start-up, amortized"],
        ),
        (
            "bandwidth",
            vec!["bytes sent", "MB/s", "network bound", "C4, dirty"],
        ),
        (
            "chunk",
            vec!["chunk factor", "dirty, aligned", "3 bytes off"],
        ),
        ("logp", vec!["microseconds", "cm5", "sp", "flash"]),
    ] {
        let svg = dir.join(format!("{kind}.svg"));
        let png = dir.join(format!("{kind}.png"));
        for f in [&svg, &png] {
            let (code, err) = plot(&[kind, "--out", f.to_str().unwrap()]);
            assert_eq!(code, 0, "{kind}: {err}");
        }
        check_svg(&svg, &labels);
        check_png(&png);
    }
    // An extension in capitals names the same format.
    let (svg, png) = (dir.join("CHUNK.SVG"), dir.join("Chunk.Png"));
    for f in [&svg, &png] {
        let (code, err) = plot(&["chunk", "--out", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{f:?}: {err}");
    }
    check_svg(&svg, &["chunk factor"]);
    check_png(&png);
    // From a sweep's CSV.
    let csv = dir.join("sweep.csv");
    std::fs::write(
        &csv,
        "point,transfer.chunk,transfer.sender,result.per_line_cycles\n0,1,dirty,69\n1,2,dirty,55\n2,1,uncached,40\n3,2,uncached,40\n",
    )
    .unwrap();
    let out = dir.join("csv.svg");
    let (code, err) = plot(&[
        "csv",
        "--csv",
        csv.to_str().unwrap(),
        "--x",
        "transfer.chunk",
        "--y",
        "result.per_line_cycles",
        "--series",
        "transfer.sender",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    check_svg(
        &out,
        &["transfer.sender = dirty", "transfer.sender = uncached"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_plot_requests_get_one_line_and_status_2() {
    for args in [
        vec!["chunk", "--out", "/tmp/flashkit-plot.gif"],
        vec!["csv", "--out", "/tmp/x.svg"],
        vec![
            "csv",
            "--csv",
            "/nonexistent.csv",
            "--x",
            "a",
            "--y",
            "b",
            "--out",
            "/tmp/x.svg",
        ],
    ] {
        let (code, err) = plot(&args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Each names what is wrong: a flag the plot would ignore, the output's
    // flag, the input file and its row.
    let dir = std::env::temp_dir().join(format!("flashkit-plot-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_string()
    };
    let (header, dup, wide) = (
        csv("header.csv", "a,b\n"),
        csv("dup.csv", "a,a\n1,2\n"),
        csv("wide.csv", "a,b\n3,4,5\n"),
    );
    let (mixed, empty) = (
        csv("mixed.csv", "s,a,b\nx,1,2\ny,1,3\nx,2,4\ny,2,5\n"),
        csv("empty.csv", "a,b\n1,2\n2,\n"),
    );
    let svg = dir.join("x.svg");
    let svg = svg.to_str().unwrap();
    for (args, says) in [
        (
            vec!["chunk", "--csv", &header, "--out", svg],
            "error: --csv does not apply to plot chunk, which draws from the model\n".to_string(),
        ),
        (
            vec!["logp", "--series", "a", "--out", svg],
            "error: --series does not apply to plot logp, which draws from the model\n".into(),
        ),
        (
            vec![
                "csv", "--csv", &header, "--jsonl", &header, "--x", "a", "--y", "b", "--out", svg,
            ],
            "error: --jsonl does not apply to plot csv, which draws from its own file flag\n"
                .into(),
        ),
        (
            vec!["chunk", "--out", "x.jpg"],
            "error: --out x.jpg: write .svg or .png (the extension names the format)\n".into(),
        ),
        (
            vec![
                "csv", "--csv", &header, "--x", "a", "--y", "b", "--out", svg,
            ],
            format!("error: {header}: the CSV holds a header and no row\n"),
        ),
        (
            vec!["csv", "--csv", &dup, "--x", "a", "--y", "a", "--out", svg],
            format!("error: {dup}: row 1: column 'a' is named twice\n"),
        ),
        (
            vec!["csv", "--csv", &wide, "--x", "a", "--y", "b", "--out", svg],
            format!("error: {wide}: row 2 has 3 cells where the header has 2\n"),
        ),
        // Two rows at one x in one series differ in a column not drawn.
        (
            vec!["csv", "--csv", &mixed, "--x", "a", "--y", "b", "--out", svg],
            format!("error: {mixed}: a = 1 is on two rows of the chart (no --series): a line has one point at each x; name with --series the column that tells them apart (or plot fewer rows)\n"),
        ),
        // An empty cell is a figure the run left undefined, not a bad number.
        (
            vec!["csv", "--csv", &empty, "--x", "a", "--y", "b", "--out", svg],
            format!("error: {empty}: row 3: 'b' is empty (the run left it undefined): plot rows that have it\n"),
        ),
    ] {
        let (code, err) = plot(&args);
        assert_eq!((code, err.as_str()), (2, says.as_str()), "{args:?}");
        assert!(!std::path::Path::new(svg).exists(), "{args:?}");
    }
    // The plot never replaces its data: not by the data's own name, not
    // through a hard link.
    let data = csv("data.svg", "a,b\n1,2\n2,3\n");
    let linked = dir.join("linked.svg");
    std::fs::hard_link(&data, &linked).unwrap();
    let linked = linked.to_str().unwrap();
    for (kind, flag, out) in [("csv", "--csv", &data[..]), ("jsonl", "--jsonl", linked)] {
        let args = [kind, flag, &data, "--x", "a", "--y", "b", "--out", out];
        let (code, err) = plot(&args);
        let says = format!(
            "error: --out {out} is the {flag} file {data}: write the plot to another file\n"
        );
        assert_eq!((code, err.as_str()), (2, says.as_str()), "{args:?}");
        assert_eq!(std::fs::read_to_string(&data).unwrap(), "a,b\n1,2\n2,3\n");
    }
    // Told apart by their series, the same rows draw, ticks between whole
    // numbers labelled as they are (1.4, not 1).
    let (code, err) = plot(&[
        "csv", "--csv", &mixed, "--x", "a", "--y", "b", "--series", "s", "--out", svg,
    ]);
    if have_font() {
        assert_eq!(code, 0, "{err}");
        let drawn = std::fs::read_to_string(svg).unwrap();
        assert!(drawn.contains(">\n1.4\n<"), "{drawn}");
        let _ = std::fs::remove_file(svg);
    } else {
        assert!(!err.contains("two rows"), "{err}");
    }
    // A quoted cell holds its comma.
    let quoted = csv("quoted.csv", "s,a,b\n\"x, y\",1,2\n\"x, y\",2,3\n");
    let (code, err) = plot(&[
        "csv", "--csv", &quoted, "--x", "a", "--y", "b", "--series", "s", "--out", svg,
    ]);
    if have_font() {
        assert_eq!(code, 0, "{err}");
    } else {
        assert!(!err.contains("cells where"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `flashkit plot ARGS` with a deadline: its status and standard error, or
/// a failure if it is still running after `secs` seconds (it is killed).
fn plot_within(args: &[&str], secs: u64) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .arg("plot")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() >= secs {
            let _ = child.kill();
            panic!("plot {args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_cell_that_is_not_a_finite_number_is_refused_naming_its_row_and_column() {
    let dir = std::env::temp_dir().join(format!("flashkit-plot-inf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("s.csv");
    let svg = dir.join("s.svg");
    let (csv_s, svg_s) = (csv.to_str().unwrap(), svg.to_str().unwrap());
    // The CSV of columns a and b with `rows`, drawn as b against a.
    let draw = |rows: &str| {
        std::fs::write(&csv, format!("a,b\n{rows}")).unwrap();
        plot_within(
            &[
                "csv", "--csv", csv_s, "--x", "a", "--y", "b", "--out", svg_s,
            ],
            20,
        )
    };
    for (cell, x, y) in [
        ("inf", "1", "inf"),
        ("-inf", "-inf", "2"),
        ("NaN", "3", "NaN"),
        ("infinity", "4", "infinity"),
    ] {
        let column = if x == cell { "a" } else { "b" };
        let (code, err) = draw(&format!("0,1\n{x},{y}\n"));
        assert_eq!(
            (code, err),
            (
                2,
                format!(
                    "error: {csv_s}: row 3, column '{column}': '{cell}' is not a finite number\n"
                )
            )
        );
        assert!(!svg.exists(), "nothing drawn");
    }
    // Integers past 2^53, which an axis would draw at a neighbour (two of
    // them at one x): refused, named as written.
    for (rows, cell) in [
        (
            "18446744073709551615,1\n18446744073709551614,2\n",
            "18446744073709551615",
        ),
        ("9007199254740993,1\n", "9007199254740993"),
        ("-9007199254740994,1\n", "-9007199254740994"),
    ] {
        let (code, err) = draw(rows);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.starts_with(&format!(
                "error: {csv_s}: row 2, column 'a': {cell} is past 2^53"
            )),
            "{err}"
        );
        assert!(!svg.exists(), "nothing drawn");
    }
    // Finite values too far apart for an axis: refused, not drawn (plotters
    // would overflow placing them).
    if have_font() {
        for rows in ["1e308,1\n-1e308,2\n", "1,1e308\n2,-1e308\n"] {
            let (code, err) = draw(rows);
            assert_eq!(code, 2, "{rows}: {err}");
            assert!(
                err.starts_with(&format!("error: {svg_s}: values too large to draw: ")),
                "{err}"
            );
            assert!(!svg.exists(), "nothing drawn");
        }
        // Negative values are drawn inside the axes.
        let (code, err) = draw("1,5\n2,-7\n");
        assert_eq!(code, 0, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the sweep's CSV writer writes, the chart's reader reads back: a
/// cell with a line break or a carriage return, quoted, is the same text.
#[test]
fn a_cell_the_csv_writer_quotes_reads_back_the_same() {
    use flashkit::{plot, sweep};
    let row = |x: &str, s: &str| {
        vec![
            ("x".into(), x.into()),
            ("y".into(), "2".into()),
            ("s".into(), s.into()),
        ]
    };
    let text = sweep::csv(&[
        row("1", "line\nbreak"),
        row("2", "trail\r"),
        row("3", "plain"),
    ]);
    let chart = plot::from_csv(&text, "x", "y", Some("s")).unwrap();
    let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["s = line\nbreak", "s = plain", "s = trail\r"]);
    // A quote left open to the end is still one.
    let e = plot::from_csv("x,y\n1,\"2\n3,4\n", "x", "y", None).unwrap_err();
    assert_eq!(e, "row 2: a quote left open");
}

/// The library's charts read a sweep's JSON Lines as well as its CSV: the
/// same sweep, written both ways, plots the same chart, its columns named
/// alike (a parameter by its key, a figure as `result.*`); a chart is
/// `Clone` and `Debug`.
#[test]
fn a_sweeps_json_lines_plot_as_its_csv_does() {
    use flashkit::plot;
    use flashkit::scenario::Source;
    use flashkit::sweep::{self, Axis, Plan};
    let src = Source {
        path: "s.toml",
        text: "[transfer]\nbytes = 1024\n",
    };
    let axes = [
        Axis::parse("transfer.sender=uncached,dirty").unwrap(),
        Axis::parse("transfer.chunk=1,2,4").unwrap(),
    ];
    let plan = Plan::new(&src, &axes).unwrap();
    let records = plan.run_records(1, |_, _| {}).unwrap();
    let lines = sweep::jsonl(&records).unwrap();
    let rows: Vec<_> = records.iter().map(|r| plan.record_row(r)).collect();
    let csv = sweep::csv(&rows);
    let (x, y, s) = (
        "transfer.chunk",
        "result.per_line_cycles",
        Some("transfer.sender"),
    );
    let from_lines = plot::from_jsonl(&lines, x, y, s).unwrap();
    let from_csv = plot::from_csv(&csv, x, y, s).unwrap();
    assert_eq!(from_lines, from_csv);
    assert_eq!(from_lines.series.len(), 2);
    assert_eq!(from_lines.series[0].name, "transfer.sender = dirty");
    assert_eq!(from_lines.series[0].points.len(), 3);
    // Dirty lines: chunking lowers the time a line.
    let dirty = &from_lines.series[0].points;
    assert!(dirty[2].1 < dirty[0].1, "{dirty:?}");
    // A quiet parameter the CSV leaves out is a column of every line: read
    // from all six, one x for every row, so refused as a line.
    let by_latency = plot::from_jsonl(&lines, "machine.net_latency", y, None).unwrap_err();
    assert!(
        by_latency.starts_with("machine.net_latency = 22 is on two rows"),
        "{by_latency}"
    );
    let copy = from_lines.clone();
    assert_eq!(copy, from_lines);
    assert!(format!("{copy:?}").contains("transfer.sender = uncached"));
    // What is wrong is named with its line.
    let second = lines.lines().nth(1).unwrap();
    for (text, want) in [
        (
            format!("{}\nnot json\n", lines.lines().next().unwrap()),
            "line 2: not JSON",
        ),
        ("[1, 2]\n".to_string(), "line 1: not a JSON object"),
        (
            format!(
                "{}\n",
                second.replacen("\"result\":{", "\"result\":{\"x\":1,\"x\":2,", 1)
            ),
            "line 1: result.x is given twice",
        ),
        // A line edited into something no run gives: its point, or a
        // figure of its result.
        (
            format!("{}\n", second.replacen("\"point\":1", "\"point\":-5", 1)),
            "line 1: not a sweep's record: point: invalid value",
        ),
        (
            format!(
                "{}\n",
                second.replacen("\"total_cycles\":", "\"total_cycles\":1", 1)
            ),
            "line 1: result: a transfer result that does not read back: total_us is",
        ),
        // ... or its scenario: a value no run takes.
        (
            format!("{}\n", second.replacen("\"chunk\":2", "\"chunk\":99", 1)),
            "line 1: config.transfer.chunk: must be from 1 to the data-buffer pool, 16, got 99",
        ),
        (
            format!(
                "{}\n",
                second.replacen("\"net_latency\":22", "\"net_latency\":2000000", 1)
            ),
            "line 1: config.machine.net_latency: must be from 0 to 1000000, got 2000000",
        ),
        (format!("\n{second}\n"), "line 2: no column 'result.nope'"),
        (String::new(), "the JSON Lines hold no line"),
    ] {
        let y = if want.contains("nope") {
            "result.nope"
        } else {
            y
        };
        let err = plot::from_jsonl(&text, x, y, None).unwrap_err();
        assert!(err.starts_with(want), "{err}");
    }
    let err = plot::from_jsonl(&lines, "transfer.sender", y, None).unwrap_err();
    assert_eq!(err, "line 1: 'transfer.sender' is not a number");
}

/// `flashkit plot jsonl` draws a sweep's JSON Lines; a line that is not
/// JSON is one line of error naming the file and the line, status 2.
#[test]
fn plot_reads_a_sweeps_json_lines() {
    let dir = std::env::temp_dir().join(format!("flashkit-plot-jsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args([
            "sweep",
            "examples/transfer.toml",
            "--quiet",
            "--format",
            "jsonl",
        ])
        .args([
            "--vary",
            "transfer.chunk=1,2",
            "--vary",
            "transfer.sender=uncached,dirty",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = dir.join("sweep.jsonl");
    std::fs::write(&lines, &out.stdout).unwrap();
    let svg = dir.join("jsonl.svg");
    let (lines_s, svg_s) = (lines.to_str().unwrap(), svg.to_str().unwrap());
    let args = [
        "jsonl",
        "--jsonl",
        lines_s,
        "--x",
        "transfer.chunk",
        "--y",
        "result.sender_occupancy_per_line",
        "--series",
        "transfer.sender",
        "--out",
        svg_s,
    ];
    let (code, err) = plot(&args);
    if have_font() {
        assert_eq!(code, 0, "{err}");
        check_svg(
            &svg,
            &["transfer.sender = dirty", "transfer.sender = uncached"],
        );
    } else {
        assert_eq!(code, 2);
        assert!(err.contains("TrueType font"), "{err}");
    }
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&lines, format!("{first}\n# torn\n")).unwrap();
    let (code, err) = plot(&args);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("error: {lines_s}: line 2: not JSON")),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = plot(&["jsonl", "--out", svg_s]);
    assert_eq!(
        (code, err.trim()),
        (
            2,
            "error: plot jsonl needs --jsonl FILE --x COLUMN --y COLUMN"
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A font named by `FLASHKIT_FONT` that cannot be read is an error naming
/// the variable, never a quiet fall back to the system's font.
#[test]
fn a_named_font_that_is_missing_is_refused() {
    let dir = std::env::temp_dir().join(format!("flashkit-font-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for ext in ["svg", "png"] {
        let out = dir.join(format!("chunk.{ext}"));
        let got = Command::new(env!("CARGO_BIN_EXE_flashkit"))
            .args(["plot", "chunk", "--out"])
            .arg(&out)
            .env("FLASHKIT_FONT", "/nonexistent/flashkit-font.ttf")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.status.code(), Some(2), "{ext}: {err}");
        assert_eq!(err.lines().count(), 1, "{ext}: {err}");
        assert!(
            err.contains("FLASHKIT_FONT: /nonexistent/flashkit-font.ttf"),
            "{ext}: {err}"
        );
        assert!(!out.exists(), "{ext}: a file was written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chart built by hand that no drawing can show is refused, naming what
/// is wrong, before anything is laid out (too many labels would be laid
/// out for ever; a bar far outside its groups overflowed).
#[test]
fn a_chart_no_drawing_can_show_is_refused() {
    use flashkit::plot::{render, Chart, Series, MOST_LABELS};
    if !have_font() {
        return;
    }
    let chart = |points: Vec<(f64, f64)>| Chart {
        title: "t".into(),
        x: "x".into(),
        y: "y".into(),
        log_x: false,
        x_labels: 10,
        groups: vec![],
        series: vec![Series {
            name: "s".into(),
            points,
            bound: false,
        }],
    };
    let line = chart(vec![(0.0, 1.0), (1.0, 2.0)]);
    assert!(render(&line, "a.svg").is_ok());
    let cases = [
        (
            Chart {
                x_labels: usize::MAX,
                ..line.clone()
            },
            format!("x_labels must be at most {MOST_LABELS}"),
        ),
        (
            Chart {
                x_labels: 10_000_000,
                ..line.clone()
            },
            "x_labels must be at most".to_string(),
        ),
        (
            Chart {
                log_x: true,
                groups: vec!["a".into(), "b".into()],
                ..chart(vec![(1.0, 1.0)])
            },
            "log_x and groups together: bars have no logarithmic axis".into(),
        ),
        (
            Chart {
                groups: vec!["a".into()],
                ..chart(vec![(1e7, 1.0)])
            },
            "series s: point 0's x (10000000) is no group's index (0 to 0)".into(),
        ),
        (
            Chart {
                groups: (0..=MOST_LABELS).map(|i| i.to_string()).collect(),
                ..chart(vec![(0.0, 1.0)])
            },
            "groups must be at most".into(),
        ),
        (
            chart(vec![(f64::NAN, 1.0), (1.0, 2.0)]),
            "series s: point 0 (NaN, 1) is not a number".into(),
        ),
        (
            chart(vec![(1.0, 1.0), (2.0, f64::NAN)]),
            "series s: point 1 (2, NaN) is not a number".into(),
        ),
        (
            Chart {
                log_x: true,
                ..chart(vec![(0.0, 1.0), (4.0, 2.0)])
            },
            "has no place on a logarithmic axis".into(),
        ),
    ];
    for (c, says) in cases {
        for path in ["a.svg", "a.png"] {
            let err = render(&c, path).unwrap_err();
            assert!(err.starts_with(&format!("{path}: ")), "{err}");
            assert!(err.contains(&says), "{err}");
        }
    }
}
