//! How a figure prints: the one place that rounds.
//!
//! Results keep full precision in their structs, and a table rounds a figure
//! for people here, in one place. A result's JSON for machines holds the
//! counts and its derived figures exact (the transfer's, a miss's, the
//! pipeline's, a fetch-and-add's, a remap's, the AM suite's); JSON that
//! still rounds (the ledger's own, and the experiments not yet made to keep
//! their counts) rounds through [`value`], as its table does. Each kind of figure has a
//! fixed number of decimals:
//!
//! | kind | decimals | example |
//! |---|---|---|
//! | [`Figure::Cycles`]: whole cycles, counts | 0 | `1563` |
//! | [`Figure::FracCycles`]: means and rates in cycles | 1 | `146.9` |
//! | [`Figure::Us`]: microseconds | 2 | `15.63` |
//! | [`Figure::MbS`]: bandwidth, MB/s (bytes per µs) | 1 | `262.1` |
//! | [`Figure::Percent`]: a share, printed in percent | 1 | `83.8` (JSON: `0.838`) |
//!
//! [`text`] gives a figure's digits (for a table), [`value`] the same
//! digits as an `f64` (for JSON: serde prints it back as those digits), and
//! the `ser_*` functions put [`value`] behind `#[serde(serialize_with)]`.
//! A share is kept as a fraction in JSON (`pp_share`, `utilization`) and
//! printed in percent in tables: the JSON fraction is the table's percent
//! moved two places, so `83.8%` in the table is `0.838` in the JSON.
//!
//! ```
//! use magic::figures::{text, value, Figure};
//! assert_eq!(text(Figure::MbS, 261.3911933631142), "261.4");
//! assert_eq!(value(Figure::MbS, 261.3911933631142), 261.4);
//! assert_eq!(text(Figure::Percent, 0.83756), "83.8");
//! assert_eq!(value(Figure::Percent, 0.83756), 0.838);
//! ```

use serde::Serializer;

/// The kinds of figure, each with its decimals (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Whole cycles or a count: no decimals.
    Cycles,
    /// A fractional number of cycles (a mean, a per-line rate): 1 decimal.
    FracCycles,
    /// Microseconds: 2 decimals.
    Us,
    /// Megabytes per second (bytes per microsecond): 1 decimal.
    MbS,
    /// A share (0 to 1), printed in percent with 1 decimal.
    Percent,
}

impl Figure {
    /// Decimals the figure prints with (in percent for [`Figure::Percent`]).
    pub fn decimals(self) -> usize {
        match self {
            Figure::Cycles => 0,
            Figure::FracCycles | Figure::MbS | Figure::Percent => 1,
            Figure::Us => 2,
        }
    }
}

/// The figure's digits as a table prints them (a share in percent, without
/// the `%` sign). A value that is not finite prints as Rust prints it.
pub fn text(kind: Figure, x: f64) -> String {
    let x = if kind == Figure::Percent {
        100.0 * x
    } else {
        x
    };
    let s = format!("{:.*}", kind.decimals(), x);
    // No "-0.0": a figure rounded to zero is zero.
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// The figure as the JSON holds it: the digits of [`text`] as a number (a
/// share as a fraction: [`text`]'s percent moved two places). Not finite
/// stays as it is.
pub fn value(kind: Figure, x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let t = text(kind, x);
    if kind != Figure::Percent {
        return t.parse().unwrap_or(x);
    }
    // "83.8" -> "0.838": move the decimal point in the digits, not in binary.
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.as_str()),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let int = format!("{int:0>3}");
    let (hi, lo) = int.split_at(int.len() - 2);
    let s = format!("{}{hi}.{lo}{frac}", if neg { "-" } else { "" });
    s.parse().unwrap_or(x)
}

/// `#[serde(serialize_with)]` for a whole count held as a float (a fit's
/// bytes).
pub fn ser_count<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(value(Figure::Cycles, *x))
}

/// `#[serde(serialize_with)]` for a fractional-cycles field.
pub fn ser_frac_cycles<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(value(Figure::FracCycles, *x))
}

/// `#[serde(serialize_with)]` for a share (a fraction of 1).
pub fn ser_share<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(value(Figure::Percent, *x))
}

/// `#[serde(serialize_with)]` for a microseconds field.
pub fn ser_us<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(value(Figure::Us, *x))
}

/// `#[serde(serialize_with)]` for a MB/s field.
pub fn ser_mb_s<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(value(Figure::MbS, *x))
}

/// One row of a text table, appended to `out` with its newline: each cell
/// padded to its column (`(name, width, right-aligned)`), two spaces apart,
/// trailing blanks trimmed. Widths are fixed, so a row's padding never
/// depends on another row's values; a wider value pushes only its own row.
/// A width past 65,535 pads to 65,535.
///
/// ```
/// let cols = [("name", 6, false), ("us", 6, true)];
/// let mut out = String::new();
/// magic::figures::line(&mut out, &cols, &cols.map(|c| c.0.to_string()));
/// magic::figures::line(&mut out, &cols, &["send".into(), "1.66".into()]);
/// assert_eq!(out, "name        us\nsend      1.66\n");
/// ```
pub fn line(out: &mut String, cols: &[(&str, usize, bool)], cells: &[String]) {
    let mut row = String::new();
    for (i, ((_, w, right), cell)) in cols.iter().zip(cells).enumerate() {
        if i > 0 {
            row.push_str("  ");
        }
        // The most a format's width takes; no table is wider.
        let w = (*w).min(u16::MAX as usize);
        if *right {
            row.push_str(&format!("{cell:>w$}"));
        } else {
            row.push_str(&format!("{cell:<w$}"));
        }
    }
    out.push_str(row.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_wider_than_a_format_takes_pads_to_the_most_it_takes() {
        let mut out = String::new();
        line(&mut out, &[("a", usize::MAX / 2, true)], &["x".into()]);
        assert_eq!(out.len(), u16::MAX as usize + 1, "padded, and its newline");
        assert!(out.ends_with("x\n"));
    }

    #[test]
    fn text_and_value_agree() {
        for &x in &[0.0, 0.0004, 0.0005, 0.12345, 0.5, 0.999, 1.0, 0.05, 0.0015] {
            let t = text(Figure::Percent, x);
            let v = value(Figure::Percent, x);
            let back: f64 = t.parse().unwrap();
            assert!((v * 100.0 - back).abs() < 1e-9, "{x}: {t} vs {v}");
        }
        for k in [Figure::Cycles, Figure::FracCycles, Figure::Us, Figure::MbS] {
            for &x in &[0.0, 1.25, 146.875, 261.3911933631142, 1e9 + 0.05] {
                assert_eq!(text(k, x).parse::<f64>().unwrap(), value(k, x));
            }
        }
        assert_eq!(text(Figure::FracCycles, -0.01), "0.0");
        assert_eq!(value(Figure::Percent, 1.0), 1.0);
        assert_eq!(value(Figure::Percent, 0.001), 0.001);
        assert!(value(Figure::Us, f64::NAN).is_nan());
    }

    #[test]
    fn json_prints_the_table_digits() {
        let v = serde_json::json!({ "x": value(Figure::MbS, 261.3911933631142) });
        assert_eq!(v.to_string(), r#"{"x":261.4}"#);
        let v = serde_json::json!({ "x": value(Figure::Percent, 0.83756) });
        assert_eq!(v.to_string(), r#"{"x":0.838}"#);
    }
}
