//! `flashkit plot csv --series`: the series of a chart are in numeric
//! order when their values are numbers, each looks unlike every other (up
//! to `flashkit::plot::MOST_SERIES`, past which the plot is refused naming
//! `--series`), and a single x value stands at the middle of its axis.

use crate::common::have_font;
use flashkit::plot::MOST_SERIES;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory of this test's own.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "flashkit-plot-series-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `flashkit plot csv` of `csv` (columns k, x, y) by series k into `out`:
/// its status and standard error.
fn plot(csv: &Path, out: &Path) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(["plot", "csv", "--csv"])
        .arg(csv)
        .args(["--x", "x", "--y", "y", "--series", "k", "--out"])
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A CSV with one series per key, each through `xs`.
fn csv(dir: &Path, keys: &[String], xs: &[f64]) -> PathBuf {
    let mut t = String::from("k,x,y\n");
    for (i, k) in keys.iter().enumerate() {
        for (j, x) in xs.iter().enumerate() {
            t.push_str(&format!("{k},{x},{}\n", i + j));
        }
    }
    let f = dir.join("sweep.csv");
    std::fs::write(&f, t).unwrap();
    f
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

/// The value of attribute `name` in an SVG element's text.
fn attr<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
    element[at..].split('"').next()
}

/// The SVG's elements named `tag`, each as its text up to its end (its
/// attributes, each after a space).
fn elements<'a>(svg: &'a str, tag: &str) -> Vec<&'a str> {
    // Each from the space before its first attribute.
    svg.split(&format!("<{tag}"))
        .skip(1)
        .filter(|e| e.starts_with(' '))
        .map(|e| e.split('>').next().unwrap())
        .collect()
}

#[test]
fn series_whose_values_are_numbers_are_in_numeric_order() {
    if !have_font() {
        return;
    }
    let d = dir("order");
    let ks: Vec<String> = ["1000", "2", "100", "0", "10", "1"]
        .iter()
        .map(|k| k.to_string())
        .collect();
    let out = d.join("o.svg");
    let (code, err) = plot(&csv(&d, &ks, &[1.0, 2.0]), &out);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&out).unwrap();
    // The legend, top to bottom, in the SVG's order.
    let at: Vec<usize> = ["0", "1", "2", "10", "100", "1000"]
        .iter()
        .map(|k| {
            svg.find(&format!("\nk = {k}\n"))
                .unwrap_or_else(|| panic!("no legend 'k = {k}'"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn every_series_up_to_the_most_looks_unlike_every_other() {
    if !have_font() {
        return;
    }
    let d = dir("looks");
    let input = csv(&d, &keys(MOST_SERIES), &[1.0, 2.0, 3.0]);
    let out = d.join("o.svg");
    let (code, err) = plot(&input, &out);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&out).unwrap();
    // Markers: circles and triangles filled in a series's colour, crosses
    // drawn in it (two strokes of width 2).
    let mut looks = std::collections::BTreeMap::<(&str, &str), usize>::new();
    for (kind, tag, colour) in [
        ("circle", "circle", "fill"),
        ("triangle", "polygon", "fill"),
        ("cross", "line", "stroke"),
    ] {
        for e in elements(&svg, tag) {
            if tag == "line" && attr(e, "stroke-width") != Some("2") {
                continue;
            }
            *looks.entry((kind, attr(e, colour).unwrap())).or_default() += 1;
        }
    }
    assert_eq!(looks.len(), MOST_SERIES, "{looks:?}");
    // Each at its three points and in the legend (a cross is two strokes).
    for ((kind, colour), n) in &looks {
        let want = if *kind == "cross" { 8 } else { 4 };
        assert_eq!(*n, want, "{kind} {colour}");
    }
    // Drawn the same, byte for byte, every time.
    for ext in ["svg", "png"] {
        let (a, b) = (d.join(format!("a.{ext}")), d.join(format!("b.{ext}")));
        for f in [&a, &b] {
            let (code, err) = plot(&input, f);
            assert_eq!(code, 0, "{err}");
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn more_series_than_a_chart_tells_apart_are_refused_naming_series() {
    let d = dir("many");
    for n in [MOST_SERIES + 1, 2000] {
        let out = d.join("o.svg");
        let (code, err) = plot(&csv(&d, &keys(n), &[1.0, 2.0]), &out);
        assert_eq!(code, 2, "{n}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(
            err.contains(&format!("--series k has {n} values")),
            "{n}: {err}"
        );
        assert!(err.contains(&format!("at most {MOST_SERIES}")), "{err}");
        assert!(!out.exists(), "{n}: no image written");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_single_x_value_stands_at_the_middle_of_its_axis() {
    if !have_font() {
        return;
    }
    let d = dir("single");
    let out = d.join("o.svg");
    let (code, err) = plot(&csv(&d, &keys(2), &[4096.0]), &out);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&out).unwrap();
    // The x axis's labels: the texts on the line of the one at 4096.
    let texts: Vec<(f64, &str, &str)> = svg
        .split("<text")
        .skip(1)
        .map(|t| {
            let (head, rest) = t.split_once('>').unwrap();
            let body = rest.split("</text>").next().unwrap().trim();
            (
                attr(head, "x").unwrap().parse().unwrap(),
                attr(head, "y").unwrap(),
                body,
            )
        })
        .collect();
    let row = texts
        .iter()
        .find(|t| t.2 == "4096")
        .expect("a label at 4096")
        .1;
    let xs: Vec<f64> = texts
        .iter()
        .filter(|t| t.1 == row && t.2.parse::<f64>().is_ok())
        .map(|t| t.0)
        .collect();
    let (left, right) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    // The points: the circles drawn before the legend's box.
    let legend = svg.find("opacity=\"0.85\"").expect("a legend");
    let cx: Vec<f64> = elements(&svg[..legend], "circle")
        .iter()
        .map(|c| attr(c, "cx").unwrap().parse().unwrap())
        .collect();
    assert_eq!(cx.len(), 2, "{cx:?}");
    for x in cx {
        assert!(
            ((x - left) - (right - x)).abs() <= 1.0,
            "at {x}, between {left} and {right}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}
