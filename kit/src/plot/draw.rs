//! Drawing a chart with plotters (the `plot` feature).

use super::{Chart, Series};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

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

/// What tells a series apart besides its colour: the marker at its points
/// (and in its legend) together with its line's dashes, or a bar's fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// Circles on a solid line; a solid bar.
    Circle,
    /// Triangles on a dashed line; a hollow bar.
    Triangle,
    /// Crosses on a dotted line; a pale bar.
    Cross,
}

const MARKS: [Mark; 3] = [Mark::Circle, Mark::Triangle, Mark::Cross];

// Every series up to the most a chart draws has a look of its own.
const _: () = assert!(super::MOST_SERIES == COLORS.len() * MARKS.len());

/// Series `i`'s colour and mark: the colours in turn with circles, then
/// again with triangles, then with crosses. No two of the first
/// [`MOST_SERIES`](super::MOST_SERIES) are alike.
fn look(i: usize) -> (RGBColor, Mark) {
    (
        COLORS[i % COLORS.len()],
        MARKS[(i / COLORS.len()) % MARKS.len()],
    )
}

/// A series's line through its points: dashes of so many pixels, and the
/// gap between them (no gap: a solid line).
fn dashes(mark: Mark) -> (i32, i32) {
    match mark {
        Mark::Circle => (0, 0),
        Mark::Triangle => (10, 6),
        Mark::Cross => (3, 4),
    }
}

/// A bar's fill (in the chart and in its legend), and an outline drawn
/// over it in the chart and over its legend's sample.
fn fill(mark: Mark, color: RGBColor) -> (ShapeStyle, Option<ShapeStyle>) {
    match mark {
        Mark::Circle => (color.filled(), None),
        Mark::Triangle => (color.stroke_width(2), None),
        Mark::Cross => (color.mix(0.35).filled(), Some(color.stroke_width(1))),
    }
}

/// Draw a series's markers (`mark`'s, sized in pixels) at points `at` of
/// `area`, in its coordinates.
fn markers<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    mark: Mark,
    color: RGBColor,
    at: impl Iterator<Item = CT::From>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    CT::From: Clone + 'static,
{
    for p in at {
        match mark {
            Mark::Circle => area.draw(&Circle::new(p, 4, color.filled()))?,
            Mark::Triangle => area.draw(&TriangleMarker::new(p, 6, color.filled()))?,
            Mark::Cross => area.draw(&Cross::new(p, 5, color.stroke_width(2)))?,
        }
    }
    Ok(())
}

/// Refuse a chart no drawing can show: a point that is not a number, a
/// bar outside its groups, more labels or groups than a chart is wide.
fn drawable(c: &Chart) -> Result<(), String> {
    use super::{MOST_LABELS, MOST_SERIES};
    if c.x_labels > MOST_LABELS {
        return Err(format!(
            "x_labels must be at most {MOST_LABELS}, got {}",
            c.x_labels
        ));
    }
    if c.series.len() > MOST_SERIES {
        return Err(format!(
            "series must be at most {MOST_SERIES} (no more are told apart), got {}",
            c.series.len()
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
    let ymax = y1;
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.35 };
    // Axes of a finite length, holding every point (plotters would lay out
    // ticks on an infinite one for ever, and overflow placing a point far
    // outside its axes).
    let (ax0, ax1, xl) = x_axis(c, x0, x1);
    let finite = |a: f64, b: f64| (b - a).is_finite();
    if !(finite(ax0, ax1) && finite(y0, y1)) {
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
            // Where each series's legend sample was drawn: its marker (or
            // a bar's outline) goes on it once the legend is drawn.
            let legend_at: Rc<RefCell<Vec<(usize, (i32, i32))>>> = Default::default();
            for (i, s) in c.series.iter().enumerate() {
                let (color, mark) = look(i);
                let color = if s.bound {
                    RGBColor(120, 120, 120)
                } else {
                    color
                };
                let style = if s.bound {
                    color.stroke_width(2)
                } else {
                    color.stroke_width(3)
                };
                let at = Rc::clone(&legend_at);
                let record = move |p: (i32, i32)| at.borrow_mut().push((i, p));
                if !c.groups.is_empty() {
                    // Bar i of n in each group, side by side: its fill, then
                    // its outline over it.
                    let n = c.series.len().max(1) as f64;
                    let w = 0.8 / n;
                    let left = -0.4 + i as f64 * w;
                    let (inside, outline) = fill(mark, color);
                    chart
                        .draw_series(s.points.iter().flat_map(|&(x, y)| {
                            [Some(inside), outline]
                                .into_iter()
                                .flatten()
                                .map(move |st| {
                                    Rectangle::new([(x + left, 0.0), (x + left + w * 0.9, y)], st)
                                })
                        }))
                        .map_err(e)?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| {
                            record((x, y));
                            Rectangle::new([(x, y - 5), (x + 16, y + 5)], inside)
                        });
                    continue;
                }
                // A bound is a grey line of its own; a series, its colour's
                // line with its mark's dashes and markers (the legend shows
                // both).
                let (dash, gap) = match s.bound {
                    true => (0, 0),
                    false => dashes(mark),
                };
                let points = s.points.iter().copied();
                let drawn = if gap == 0 {
                    chart.draw_series(LineSeries::new(points, style))
                } else {
                    chart.draw_series(DashedLineSeries::new(points, dash, gap, style))
                };
                drawn
                    .map_err(e)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        record((x, y));
                        // A solid line is one dash as long as the sample.
                        let (dash, gap) = if gap == 0 { (20, 0) } else { (dash, gap) };
                        DashedPathElement::new(
                            vec![(x, y), (x + 20, y)],
                            dash,
                            gap,
                            color.stroke_width(3),
                        )
                    });
                if !s.bound {
                    markers(chart.plotting_area(), mark, color, s.points.iter().copied())
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
            // The legend's area, in the pixels its samples were placed at.
            let legend = chart.plotting_area().strip_coord_spec();
            for &(i, (x, y)) in legend_at.borrow().iter() {
                let (color, mark) = look(i);
                if !c.groups.is_empty() {
                    if let (_, Some(outline)) = fill(mark, color) {
                        legend
                            .draw(&Rectangle::new([(x, y - 5), (x + 16, y + 5)], outline))
                            .map_err(e)?;
                    }
                } else if !c.series[i].bound {
                    markers(&legend, mark, color, std::iter::once((x + 10, y))).map_err(e)?;
                }
            }
        }};
    }
    body!(b.build_cartesian_2d(ax0..ax1, y0..y1).map_err(e)?, xl);
    area.present().map_err(e)
}

/// The x axis of chart `c`, whose points' x (log2 of x on a logarithmic
/// axis) run from `x0` to `x1`: its ends and how many labels it takes.
/// Bars stand in their groups; a single x is centred, the axis reaching
/// as far to either side of it (by one, or more where one is lost in the
/// value's rounding), labelled at it and at the ends.
fn x_axis(c: &Chart, x0: f64, x1: f64) -> (f64, f64, usize) {
    if !c.groups.is_empty() {
        (-0.5, c.groups.len() as f64 - 0.5, c.groups.len())
    } else if x0 == x1 {
        let pad = 1f64.max(x0.abs() * f64::EPSILON * 16.0);
        (x0 - pad, x1 + pad, c.x_labels.min(3))
    } else if c.log_x {
        // One label per power of two (as many as an axis takes).
        let (a, b) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0));
        (a, b, ((b - a) as usize + 1).min(super::MOST_LABELS))
    } else {
        (x0, x1, c.x_labels)
    }
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
    use super::{drawable, look, tick, x_axis, MARKS};
    use crate::plot::{Chart, Series, MOST_SERIES};

    fn chart(series: usize, points: Vec<(f64, f64)>) -> Chart {
        Chart {
            title: "t".into(),
            x: "x".into(),
            y: "y".into(),
            log_x: false,
            x_labels: 10,
            groups: Vec::new(),
            series: (0..series)
                .map(|i| Series {
                    name: format!("s{i}"),
                    points: points.clone(),
                    bound: false,
                })
                .collect(),
        }
    }

    #[test]
    fn every_series_up_to_the_most_has_a_look_of_its_own() {
        let looks: Vec<_> = (0..MOST_SERIES).map(look).collect();
        for (i, a) in looks.iter().enumerate() {
            for (j, b) in looks[..i].iter().enumerate() {
                assert_ne!(a, b, "series {j} and {i} look alike");
            }
        }
        // Every mark is used, each with every colour.
        for m in MARKS {
            assert_eq!(looks.iter().filter(|l| l.1 == m).count(), MOST_SERIES / 3);
        }
        // The first six keep the colours and circles they always had.
        assert!(looks[..6].iter().all(|l| l.1 == super::Mark::Circle));
        // Past the most, looks would repeat: such a chart is refused.
        assert_eq!(look(MOST_SERIES), look(0));
        assert!(drawable(&chart(MOST_SERIES, vec![(1.0, 1.0)])).is_ok());
        let e = drawable(&chart(MOST_SERIES + 1, vec![(1.0, 1.0)])).unwrap_err();
        assert_eq!(
            e,
            format!(
                "series must be at most {MOST_SERIES} (no more are told apart), got {}",
                MOST_SERIES + 1
            )
        );
    }

    #[test]
    fn a_single_x_is_centred() {
        let c = chart(1, vec![(4096.0, 1.0)]);
        assert_eq!(x_axis(&c, 4096.0, 4096.0), (4095.0, 4097.0, 3));
        // On a logarithmic axis (log2 of 4096 is 12): 2048 to 8192.
        let log = Chart {
            log_x: true,
            ..c.clone()
        };
        assert_eq!(x_axis(&log, 12.0, 12.0), (11.0, 13.0, 3));
        // A value too large for one to move it still gets an axis around it.
        let (a, b, _) = x_axis(&c, 1e300, 1e300);
        assert!(
            a < 1e300 && 1e300 < b && (1e300 - a) == (b - 1e300),
            "{a} {b}"
        );
        // Fewer labels asked for are not made more.
        let few = Chart { x_labels: 2, ..c };
        assert_eq!(x_axis(&few, -0.5, -0.5), (-1.5, 0.5, 2));
        // Two values span the axis as before.
        assert_eq!(x_axis(&few, 1.0, 3.0), (1.0, 3.0, 2));
    }

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
