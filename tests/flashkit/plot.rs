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
}
