//! Drawing a chart with plotters (the `plot` feature).

use super::{Chart, Series};
use plotters::coord::Shift;
use plotters::prelude::*;

const FONTS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Register a font for bitmap text, once.
fn font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        // A font the user names is the one used: one that cannot be read
        // is an error, never a quiet fall back to another.
        let named = std::env::var_os("FLASHKIT_FONT").filter(|p| !p.is_empty());
        let (path, bytes) = match named {
            Some(p) => {
                let path = p.to_string_lossy().into_owned();
                let bytes = std::fs::read(&p).map_err(|e| format!("FLASHKIT_FONT: {path}: {e}"))?;
                (path, bytes)
            }
            None => {
                let path = FONTS
                    .iter()
                    .find(|p| std::path::Path::new(p).exists())
                    .ok_or("plots need a TrueType font to lay out their labels (install fonts-dejavu, or set FLASHKIT_FONT to a .ttf file)")?;
                let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
                (path.to_string(), bytes)
            }
        };
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{path}: not a usable TrueType font"))
    })
    .clone()
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Refuse a chart no drawing can show: a point that is not a number, a
/// bar outside its groups, more labels or groups than a chart is wide.
fn drawable(c: &Chart) -> Result<(), String> {
    use super::MOST_LABELS;
    if c.x_labels > MOST_LABELS {
        return Err(format!(
            "x_labels must be at most {MOST_LABELS}, got {}",
            c.x_labels
        ));
    }
    if c.groups.len() > MOST_LABELS {
        return Err(format!(
            "groups must be at most {MOST_LABELS}, got {}",
            c.groups.len()
        ));
    }
    // Bars stand at their groups' indices: a logarithmic axis has no
    // place for the first, and no bar is drawn on one.
    if c.log_x && !c.groups.is_empty() {
        return Err("log_x and groups together: bars have no logarithmic axis".into());
    }
    for s in &c.series {
        for (i, &(x, y)) in s.points.iter().enumerate() {
            if x.is_nan() || y.is_nan() {
                return Err(format!(
                    "series {}: point {i} ({x}, {y}) is not a number",
                    s.name
                ));
            }
            if c.log_x && x <= 0.0 {
                return Err(format!(
                    "series {}: point {i}'s x ({x}) has no place on a logarithmic axis",
                    s.name
                ));
            }
            let group = x >= 0.0 && x.fract() == 0.0 && x < c.groups.len() as f64;
            if !c.groups.is_empty() && !group {
                return Err(format!(
                    "series {}: point {i}'s x ({x}) is no group's index (0 to {})",
                    s.name,
                    c.groups.len() - 1
                ));
            }
        }
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, c: &Chart) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    area.fill(&WHITE).map_err(e)?;
    // A logarithmic x axis is drawn as a linear one in log2 of x, labelled
    // with the powers of two: evenly spaced and uncrowded.
    let logged: Vec<Series>;
    let c = if c.log_x {
        logged = c
            .series
            .iter()
            .map(|s| Series {
                name: s.name.clone(),
                points: s
                    .points
                    .iter()
                    .map(|&(x, y)| (x.max(1e-9).log2(), y))
                    .collect(),
                bound: s.bound,
            })
            .collect();
        &Chart {
            title: c.title.clone(),
            x: c.x.clone(),
            y: c.y.clone(),
            log_x: true,
            x_labels: c.x_labels,
            groups: Vec::new(),
            series: logged,
        }
    } else {
        c
    };
    let pts = c.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Err("nothing to plot".into());
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    let ymax = y1;
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.35 };
    // Axes of a finite length, holding every point (plotters would lay out
    // ticks on an infinite one for ever, and overflow placing a point far
    // outside its axes).
    let finite = |a: f64, b: f64| (b - a).is_finite();
    if !(finite(x0, x1) && finite(y0, y1)) {
        return Err(format!(
            "values too large to draw: x from {x0:.3e} to {x1:.3e}, y from {y0:.3e} to {ymax:.3e}"
        ));
    }
    // The title in one line across the image: smaller type for a long one.
    let width = area.dim_in_pixel().0;
    let text_width = |t: &str, size: u32| {
        area.estimate_text_size(t, &TextStyle::from(("sans-serif", size).into_font()))
            .map_or(0, |d| d.0)
    };
    let title_size = (10..=22)
        .rev()
        .find(|&s| text_width(&c.title, s) + 2 * 16 <= width)
        .unwrap_or(10);
    // Room beside the y axis for its widest label and its title.
    let widest = [y0, y1, (y0 + y1) / 2.0]
        .iter()
        .map(|&v| text_width(&tick(v), 14))
        .max()
        .unwrap_or(0);
    let mut b = ChartBuilder::on(&area);
    b.caption(&c.title, ("sans-serif", title_size))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size((widest + 36).max(64));
    macro_rules! body {
        ($chart:expr, $xl:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(c.x.as_str())
                .y_desc(c.y.as_str())
                .x_labels($xl)
                .y_labels(8)
                .x_label_formatter(&|v| {
                    if !c.groups.is_empty() {
                        // A group's name under its bars, nothing between.
                        let i = v.round();
                        match c.groups.get(i.max(0.0) as usize) {
                            Some(g) if (v - i).abs() < 1e-6 => g.clone(),
                            _ => String::new(),
                        }
                    } else if c.log_x {
                        tick(2f64.powf(*v))
                    } else {
                        tick(*v)
                    }
                })
                .y_label_formatter(&|v| tick(*v))
                .label_style(("sans-serif", 14))
                .axis_desc_style(("sans-serif", 16))
                .draw()
                .map_err(e)?;
            for (i, s) in c.series.iter().enumerate() {
                let color = if s.bound {
                    RGBColor(120, 120, 120)
                } else {
                    COLORS[i % COLORS.len()]
                };
                let style = if s.bound {
                    color.stroke_width(2)
                } else {
                    color.stroke_width(3)
                };
                if !c.groups.is_empty() {
                    // Bar i of n in each group, side by side.
                    let n = c.series.len().max(1) as f64;
                    let w = 0.8 / n;
                    let left = -0.4 + i as f64 * w;
                    chart
                        .draw_series(s.points.iter().map(|&(x, y)| {
                            Rectangle::new(
                                [(x + left, 0.0), (x + left + w * 0.9, y)],
                                color.filled(),
                            )
                        }))
                        .map_err(e)?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| {
                            Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled())
                        });
                    continue;
                }
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), style))
                    .map_err(e)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                    });
                if !s.bound {
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                        .map_err(e)?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(e)?;
        }};
    }
    let (x0, x1, xl) = if !c.groups.is_empty() {
        (-0.5, c.groups.len() as f64 - 0.5, c.groups.len())
    } else if c.log_x {
        // One label per power of two (as many as an axis takes).
        let (a, b) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0));
        (a, b, ((b - a) as usize + 1).min(super::MOST_LABELS))
    } else {
        (x0, x1, c.x_labels)
    };
    body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(e)?, xl);
    area.present().map_err(e)
}

/// The image format a path's extension names: `"svg"` or `"png"`, in any
/// case (`C.SVG` too), or `None`.
pub fn image_format(path: &str) -> Option<&'static str> {
    let ext = std::path::Path::new(path).extension()?.to_str()?;
    ["svg", "png"]
        .into_iter()
        .find(|f| ext.eq_ignore_ascii_case(f))
}

/// The chart as the file `path` names (.svg or .png), drawn in memory so
/// that writing it is one output the caller checks.
pub fn render(c: &Chart, path: &str) -> Result<Vec<u8>, String> {
    let (w, h) = (960u32, 600u32);
    let e = |e: String| format!("{path}: {e}");
    drawable(c).map_err(e)?;
    let format = image_format(path);
    if format == Some("svg") {
        font()?;
        let mut svg = String::new();
        draw(
            SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area(),
            c,
        )
        .map_err(e)?;
        Ok(svg.into_bytes())
    } else if format == Some("png") {
        font()?;
        let mut rgb = vec![0u8; (w * h * 3) as usize];
        draw(
            BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
            c,
        )
        .map_err(e)?;
        let mut bytes = Vec::new();
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()
            .and_then(|mut wr| wr.write_image_data(&rgb))
            .map_err(|x| e(x.to_string()))?;
        Ok(bytes)
    } else {
        Err(format!("{path}: write .svg or .png"))
    }
}

/// A tick's label: a whole number as one, a fraction to its sixth decimal
/// at most (ticks at 1.5 or 0.25 read as they are, not rounded into
/// labels that repeat).
fn tick(v: f64) -> String {
    // Far from one, three significant digits and an exponent: a label of
    // a few characters that says the value (plain digits would outgrow
    // the axis, or round to 0).
    let a = v.abs();
    if a.is_finite() && (a >= 1e6 || (a > 0.0 && a < 1e-3)) {
        let s = format!("{v:.2e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    let r = (v * 1e6).round() / 1e6;
    if r == 0.0 {
        // Not "-0".
        "0".into()
    } else if r.is_finite() {
        format!("{r}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn a_tick_says_its_value_in_a_few_characters() {
        // Plain digits near one; far from it, an exponent (a label of 11
        // digits was cut at the image's edge, and one of 1e-300 read 0).
        for (v, says) in [
            (0.0, "0"),
            (12.5, "12.5"),
            (-3.0, "-3"),
            (999_999.0, "999999"),
            (1.5e9, "1.5e9"),
            (42_239_407_390.0, "4.22e10"),
            (2e-300, "2e-300"),
            (-1.25e-4, "-1.25e-4"),
        ] {
            assert_eq!(tick(v), says, "{v}");
        }
    }
}
