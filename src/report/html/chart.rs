//! One chart as inline SVG, drawn by plotters' SVG backend: lines (optionally as steps, with
//! markers), error bars, shaded spans (measured windows) and vertical marks (retractions).
//! Titles, axis labels with units and the legend are HTML around the SVG, so they are real,
//! selectable text and the legend never covers data.

use plotters::coord::Shift;
use plotters::element::ErrorBar;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

use super::data::Points;
use super::esc;

/// The Okabe-Ito palette (safe for the common colour-vision deficiencies), yellow last.
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0x00, 0x72, 0xB2), // blue
    (0xE6, 0x9F, 0x00), // orange
    (0x00, 0x9E, 0x73), // bluish green
    (0xD5, 0x5E, 0x00), // vermillion
    (0x56, 0xB4, 0xE9), // sky blue
    (0xCC, 0x79, 0xA7), // reddish purple
    (0x00, 0x00, 0x00), // black
    (0xF0, 0xE4, 0x42), // yellow
];

pub fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE.get(i % PALETTE.len()).copied().unwrap_or((0, 0, 0));
    RGBColor(r, g, b)
}

fn hex(i: usize) -> String {
    let c = color(i);
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The stroke colour a dashed line is drawn with: its palette colour with the lowest blue
/// bit flipped, used by nothing else, so [`dash`] can find its strokes in the SVG and dash
/// them (plotters' own dashed series writes every dash as an element of its own).
fn dash_twin(i: usize) -> RGBColor {
    let c = color(i);
    RGBColor(c.0, c.1, c.2 ^ 1)
}

/// Dash the strokes drawn with [`dash_twin`] colours.
fn dash(svg: &str) -> String {
    let mut s = svg.to_string();
    for i in 0..PALETTE.len() {
        let t = dash_twin(i);
        let twin = format!("stroke=\"#{:02X}{:02X}{:02X}\"", t.0, t.1, t.2);
        if s.contains(&twin) {
            s = s.replace(
                &twin,
                &format!("stroke=\"{}\" stroke-dasharray=\"6 4\"", hex(i)),
            );
        }
    }
    s
}

/// At most `max` marks: marks closer than 1/`max` of the span to the previous kept one are
/// dropped. Returns the kept marks and how many were dropped.
pub fn thin_marks(marks: &[f64], x0: f64, x1: f64, max: usize) -> (Vec<f64>, usize) {
    let gap = (x1 - x0).abs() / max.max(1) as f64;
    let mut m: Vec<f64> = marks.iter().copied().filter(|x| x.is_finite()).collect();
    m.sort_by(f64::total_cmp);
    let mut kept: Vec<f64> = Vec::new();
    for x in &m {
        if kept.last().is_none_or(|k| x - k >= gap) {
            kept.push(*x);
        }
    }
    let dropped = m.len() - kept.len();
    (kept, dropped)
}

/// Most marks drawn on one chart.
const MAX_MARKS: usize = 60;

/// A point marker, so lines differ by more than colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    None,
    Circle,
    Triangle,
    Square,
}

impl Marker {
    /// The n-th marker shape, for the n-th time the palette wraps.
    pub fn nth(n: usize) -> Marker {
        [Marker::Circle, Marker::Triangle, Marker::Square][n % 3]
    }
}

#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub points: Points,
    pub color: usize,
    pub marker: Marker,
    /// Hold each value until the next point (counts sampled over time).
    pub step: bool,
    pub dashed: bool,
    /// Thin and light, for context (e.g. the client's line under the server's).
    pub thin: bool,
}

impl Line {
    pub fn new(name: impl Into<String>, points: Points, color: usize) -> Line {
        Line {
            name: name.into(),
            points,
            color,
            marker: Marker::None,
            step: false,
            dashed: false,
            thin: false,
        }
    }
    pub fn marker(mut self, m: Marker) -> Line {
        self.marker = m;
        self
    }
    pub fn step(mut self) -> Line {
        self.step = true;
        self
    }
    pub fn dashed(mut self) -> Line {
        self.dashed = true;
        self
    }
}

/// A vertical error bar (the spread of repeats) at x from lo to hi.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub x: f64,
    pub lo: f64,
    pub hi: f64,
    pub color: usize,
}

/// A chart: id (for tests and links), title, axis labels with units, and what to draw.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
    pub bars: Vec<Bar>,
    /// Shaded x spans (measured windows) with their labels.
    pub spans: Vec<(f64, f64, String)>,
    /// Vertical marks (retractions).
    pub marks: Vec<f64>,
    /// What the marks mean, for the legend.
    pub marks_label: String,
    /// Labelled grey vertical lines (e.g. when the server said it was ready).
    pub events: Vec<(f64, String)>,
    /// Fixed y range (e.g. 0..1 for shares); otherwise from 0 to the data's max.
    pub y_range: Option<(f64, f64)>,
    /// Let x start at the data's minimum instead of 0.
    pub x_from_data: bool,
    /// Ticks on the x axis at whole numbers only: a load in concurrent requests.
    pub x_whole: bool,
    /// Ticks on the y axis at whole numbers only: a count of requests.
    pub y_whole: bool,
    /// A note under the chart.
    pub note: String,
}

const W: u32 = 560;
const H: u32 = 260;

fn steps(p: &[(f64, f64)]) -> Points {
    let mut out = Vec::with_capacity(p.len() * 2);
    for (i, q) in p.iter().enumerate() {
        if i > 0 {
            if let Some(prev) = p.get(i - 1) {
                out.push((q.0, prev.1));
            }
        }
        out.push(*q);
    }
    out
}

fn ranges(c: &Chart) -> Option<((f64, f64), (f64, f64))> {
    let xs = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .chain(c.bars.iter().map(|b| b.x))
        .chain(c.spans.iter().flat_map(|s| [s.0, s.1]))
        .chain(c.marks.iter().copied())
        .chain(c.events.iter().map(|e| e.0))
        .filter(|x| x.is_finite());
    let ys = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(c.bars.iter().flat_map(|b| [b.lo, b.hi]))
        .filter(|y| y.is_finite());
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    if !x0.is_finite() || !y0.is_finite() {
        return None;
    }
    let x0 = if c.x_from_data { x0 } else { x0.min(0.0) };
    let (x0, x1) = if x1 > x0 {
        let pad = (x1 - x0) * 0.03;
        (if c.x_from_data { x0 - pad } else { x0 }, x1 + pad)
    } else {
        (x0 - 1.0, x1 + 1.0)
    };
    let (y0, y1) = c.y_range.unwrap_or((y0.min(0.0), y1.max(0.0)));
    let y1 = if y1 > y0 {
        y1 + (y1 - y0) * 0.05
    } else {
        y0 + 1.0
    };
    Some(((x0, x1), (y0, y1)))
}

/// How many axis labels to ask plotters for so that every tick on [lo, hi] is a whole
/// number: no more than the whole numbers in the range (and at most `max`). Plotters picks a
/// step of 1, 2 or 5 × 10^k with at most that many ticks; a step below 1 would put ticks
/// between the whole numbers and so exceed their count, hence steps of 1 or more.
fn whole_labels(lo: f64, hi: f64, max: usize) -> usize {
    let n = hi.floor() - lo.ceil() + 1.0;
    if n.is_finite() && n >= 1.0 {
        (n as usize).clamp(1, max)
    } else {
        1
    }
}

fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if a >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn draw(root: &DrawingArea<SVGBackend<'_>, Shift>, c: &Chart) -> PlotResult {
    root.fill(&WHITE)?;
    let Some(((x0, x1), (y0, y1))) = ranges(c) else {
        return Ok(());
    };
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(58)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let fmt = |v: &f64| tick(*v);
    ch.configure_mesh()
        .max_light_lines(0)
        .x_labels(if c.x_whole {
            whole_labels(x0, x1, 6)
        } else {
            6
        })
        .y_labels(if c.y_whole {
            whole_labels(y0, y1, 5)
        } else {
            5
        })
        .bold_line_style(BLACK.mix(0.08))
        .axis_style(BLACK.mix(0.5))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .draw()?;
    let small = ("sans-serif", 13).into_font().color(&BLACK.mix(0.7));
    // Labels sit just right of their line or span's start; event labels one line lower, so a
    // window that opens right after an event keeps both readable.
    let nudge = (x1 - x0) * 0.006;
    let line_down = (y1 - y0) * 0.08;
    for (a, b, label) in &c.spans {
        ch.draw_series(std::iter::once(Rectangle::new(
            [(*a, y0), (*b, y1)],
            RGBColor(0x56, 0xB4, 0xE9).mix(0.12).filled(),
        )))?;
        // The load point's label inside its window, at the top.
        ch.draw_series(std::iter::once(Text::new(
            label.clone(),
            (*a + nudge, y1),
            small.clone(),
        )))?;
    }
    for (x, label) in &c.events {
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(*x, y0), (*x, y1)],
            BLACK.mix(0.35).stroke_width(1),
        )))?;
        ch.draw_series(std::iter::once(Text::new(
            label.clone(),
            (*x + nudge, y1 - line_down),
            small.clone(),
        )))?;
    }
    for m in &thin_marks(&c.marks, x0, x1, MAX_MARKS).0 {
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(*m, y0), (*m, y1)],
            RGBColor(0xD5, 0x5E, 0x00).mix(0.7).stroke_width(1),
        )))?;
    }
    for l in &c.lines {
        let col = color(l.color);
        let stroke = if l.dashed { dash_twin(l.color) } else { col };
        let style = if l.thin {
            stroke.mix(0.6).stroke_width(1)
        } else {
            stroke.stroke_width(2)
        };
        let pts = if l.step {
            steps(&l.points)
        } else {
            l.points.clone()
        };
        ch.draw_series(LineSeries::new(pts, style))?;
        match l.marker {
            Marker::None => {}
            Marker::Circle => {
                ch.draw_series(l.points.iter().map(|p| Circle::new(*p, 3, col.filled())))?;
            }
            Marker::Triangle => {
                ch.draw_series(
                    l.points
                        .iter()
                        .map(|p| TriangleMarker::new(*p, 4, col.filled())),
                )?;
            }
            Marker::Square => {
                ch.draw_series(l.points.iter().map(|p| {
                    EmptyElement::at(*p)
                        + plotters::element::Rectangle::new([(-3, -3), (3, 3)], col.filled())
                }))?;
            }
        }
    }
    for b in &c.bars {
        ch.draw_series(std::iter::once(ErrorBar::new_vertical(
            b.x,
            b.lo,
            (b.lo + b.hi) / 2.0,
            b.hi,
            color(b.color).stroke_width(1),
            8,
        )))?;
    }
    root.present()?;
    Ok(())
}

fn swatch(color: usize, dashed: bool) -> String {
    let style = if dashed { "dashed" } else { "solid" };
    format!(
        "<span class=\"sw\" style=\"border-top:3px {style} {}\"></span>",
        hex(color)
    )
}

/// The chart as a `<figure>`: title, SVG (scales to its container), legend, note.
pub fn render(c: &Chart) -> String {
    let mut svg = String::new();
    let empty = ranges(c).is_none();
    let drawn = if empty {
        Ok(())
    } else {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        draw(&root, c).map_err(|e| e.to_string())
    };
    let mut o = String::new();
    let _ = write!(
        o,
        "<figure class=\"chart\" id=\"{}\"><figcaption>{}</figcaption>",
        esc(&c.id),
        esc(&c.title)
    );
    match drawn {
        _ if empty => o.push_str("<p class=\"nodata\">no data</p>"),
        Err(e) => {
            let _ = write!(o, "<p class=\"nodata\">chart not drawn: {}</p>", esc(&e));
        }
        Ok(()) => {
            // Scale with the page: drop the fixed size, keep the viewBox.
            let svg = dash(&svg).replace(" opacity=\"1\"", "");
            let svg = svg.replacen(
                &format!("<svg width=\"{W}\" height=\"{H}\" "),
                &format!(
                    "<svg role=\"img\" aria-label=\"{}\" preserveAspectRatio=\"xMidYMid meet\" ",
                    esc(&c.title)
                ),
                1,
            );
            o.push_str(&svg);
        }
    }
    let mut legend = String::new();
    for l in c.lines.iter().filter(|l| !l.name.is_empty()) {
        let _ = write!(
            legend,
            "<li>{}{}</li>",
            swatch(l.color, l.dashed),
            esc(&l.name)
        );
    }
    if !c.spans.is_empty() {
        legend.push_str("<li><span class=\"sw win\"></span>measured window</li>");
    }
    for (_, label) in &c.events {
        let _ = write!(
            legend,
            "<li><span class=\"sw ev\"></span>{}</li>",
            esc(label)
        );
    }
    if !c.marks.is_empty() {
        let dropped =
            ranges(c).map_or(0, |((x0, x1), _)| thin_marks(&c.marks, x0, x1, MAX_MARKS).1);
        let more = if dropped > 0 {
            format!(
                " ({} in all; {dropped} too close to draw apart)",
                c.marks.len()
            )
        } else {
            String::new()
        };
        let _ = write!(
            legend,
            "<li><span class=\"sw mark\"></span>{}{}</li>",
            esc(&c.marks_label),
            esc(&more)
        );
    }
    if !legend.is_empty() {
        let _ = write!(o, "<ul class=\"legend\">{legend}</ul>");
    }
    if !c.note.is_empty() {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(&c.note));
    }
    o.push_str("</figure>");
    o
}

/// One configuration's value on a bar chart: the mean of its repeats and their min–max.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Spread {
    /// The mean and min–max of the finite values; None when there are none.
    pub fn of(v: &[f64]) -> Option<Spread> {
        let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        Some(Spread {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            lo: v.iter().copied().fold(f64::INFINITY, f64::min),
            hi: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// One measure on a bar chart (e.g. TTFT p50): per row its value, None where not measured.
#[derive(Debug, Clone, Default)]
pub struct Measure {
    pub name: String,
    pub values: Vec<Option<Spread>>,
}

/// Horizontal bars, one row per configuration, for values measured at a single load point,
/// where a line chart would have nothing to join. The filled bar is the main measure; an
/// optional second one (a p99 beside its p50) is a dashed outline behind it, so it reads as
/// the filled bar's extension. Error bars: the repeats' min–max.
#[derive(Debug, Clone, Default)]
pub struct BarChart {
    pub id: String,
    pub title: String,
    /// The value axis' label, with its unit.
    pub x_label: String,
    /// Each row's name and palette colour, top to bottom.
    pub rows: Vec<(String, usize)>,
    pub filled: Measure,
    pub outline: Option<Measure>,
    pub note: String,
}

/// The height of one bar chart row, in SVG pixels.
const BAR_ROW_H: u32 = 30;

/// A value printed beside its bar.
fn value_text(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || v == v.round() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl BarChart {
    fn measures(&self) -> impl Iterator<Item = &Measure> {
        std::iter::once(&self.filled).chain(self.outline.iter())
    }
    /// The largest value drawn (a bar's end or an error bar's), None when nothing is.
    fn max(&self) -> Option<f64> {
        let m = self
            .measures()
            .flat_map(|m| m.values.iter().flatten())
            .flat_map(|v| [v.mean, v.hi])
            .filter(|x| x.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        m.is_finite().then_some(m)
    }
}

fn draw_bars(root: &DrawingArea<SVGBackend<'_>, Shift>, c: &BarChart, max: f64) -> PlotResult {
    root.fill(&WHITE)?;
    let n = c.rows.len();
    let longest = c.rows.iter().map(|(r, _)| r.chars().count()).max();
    let name_px = (longest.unwrap_or(0) as u32 * 8 + 14).clamp(40, 240);
    // Room right of the longest bar for its value.
    let x1 = if max > 0.0 { max * 1.2 } else { 1.0 };
    let (y0, y1) = (-0.5, n as f64 - 0.5);
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(name_px)
        .build_cartesian_2d(0.0..x1, y0..y1)?;
    // Row 0 is drawn at the top, at y = n - 1.
    let row_at = |y: f64| -> Option<usize> {
        let r = y.round();
        if (y - r).abs() > 1e-6 || r < 0.0 {
            return None;
        }
        n.checked_sub(1 + r as usize)
    };
    let xfmt = |v: &f64| tick(*v);
    let yfmt = |v: &f64| {
        row_at(*v)
            .and_then(|k| c.rows.get(k))
            .map(|(name, _)| name.clone())
            .unwrap_or_default()
    };
    ch.configure_mesh()
        .max_light_lines(0)
        .disable_y_mesh()
        .x_labels(5)
        // One label per row: the whole numbers of the range are the rows.
        .y_labels(whole_labels(y0, y1, n.max(1)))
        .bold_line_style(BLACK.mix(0.08))
        .axis_style(BLACK.mix(0.5))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .x_desc(c.x_label.as_str())
        .draw()?;
    let small = ("sans-serif", 13)
        .into_font()
        .color(&BLACK.mix(0.7))
        .pos(Pos::new(HPos::Left, VPos::Center));
    let value = |m: Option<&Measure>, k: usize| m.and_then(|m| m.values.get(k).copied().flatten());
    for (k, (_, col)) in c.rows.iter().enumerate() {
        let y = (n - 1 - k) as f64;
        let filled = value(Some(&c.filled), k);
        let outline = value(c.outline.as_ref(), k);
        if let Some(v) = outline {
            ch.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.34), (v.mean, y + 0.34)],
                dash_twin(*col).stroke_width(2),
            )))?;
        }
        if let Some(v) = filled {
            ch.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.22), (v.mean, y + 0.22)],
                color(*col).mix(0.85).filled(),
            )))?;
        }
        for v in [filled, outline].into_iter().flatten() {
            if v.hi > v.lo {
                ch.draw_series(std::iter::once(ErrorBar::new_horizontal(
                    y,
                    v.lo,
                    v.mean,
                    v.hi,
                    BLACK.mix(0.6).stroke_width(1),
                    8,
                )))?;
            }
        }
        let shown: Vec<String> = [filled, outline]
            .into_iter()
            .flatten()
            .map(|v| value_text(v.mean))
            .collect();
        let end = [filled, outline]
            .into_iter()
            .flatten()
            .map(|v| v.mean.max(v.hi))
            .fold(0.0, f64::max);
        if !shown.is_empty() {
            ch.draw_series(std::iter::once(Text::new(
                shown.join(" / "),
                (end + x1 * 0.015, y),
                small.clone(),
            )))?;
        }
    }
    root.present()?;
    Ok(())
}

/// The bar chart as a `<figure>`, like [`render`]'s: title, SVG, legend, note.
pub fn render_bars(c: &BarChart) -> String {
    let height = 70 + BAR_ROW_H * c.rows.len().max(1) as u32;
    let mut svg = String::new();
    let max = c.max().filter(|_| !c.rows.is_empty());
    let drawn = match max {
        None => Ok(()),
        Some(max) => {
            let root = SVGBackend::with_string(&mut svg, (W, height)).into_drawing_area();
            draw_bars(&root, c, max).map_err(|e| e.to_string())
        }
    };
    let mut o = String::new();
    let _ = write!(
        o,
        "<figure class=\"chart\" id=\"{}\"><figcaption>{}</figcaption>",
        esc(&c.id),
        esc(&c.title)
    );
    match drawn {
        _ if max.is_none() => o.push_str("<p class=\"nodata\">no data</p>"),
        Err(e) => {
            let _ = write!(o, "<p class=\"nodata\">chart not drawn: {}</p>", esc(&e));
        }
        Ok(()) => {
            let svg = dash(&svg).replace(" opacity=\"1\"", "");
            let svg = svg.replacen(
                &format!("<svg width=\"{W}\" height=\"{height}\" "),
                &format!(
                    "<svg role=\"img\" aria-label=\"{}\" preserveAspectRatio=\"xMidYMid meet\" ",
                    esc(&c.title)
                ),
                1,
            );
            o.push_str(&svg);
        }
    }
    if max.is_some() && c.outline.is_some() {
        let _ = write!(
            o,
            "<ul class=\"legend\"><li><span class=\"sw\" style=\"border-top:8px solid #999\"></span>{}</li><li><span class=\"sw\" style=\"height:6px;border:2px dashed #777\"></span>{}</li></ul>",
            esc(&c.filled.name),
            esc(c.outline.as_ref().map_or("", |m| m.name.as_str()))
        );
    }
    if !c.note.is_empty() {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(&c.note));
    }
    o.push_str("</figure>");
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_chart_has_title_axes_paths_and_legend() {
        let c = Chart {
            id: "t".into(),
            title: "Gen <throughput>".into(),
            x_label: "time (s)".into(),
            y_label: "tok/s".into(),
            lines: vec![
                Line::new("server", vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)], 0).step(),
                Line::new("offered", vec![(0.0, 4.0), (2.0, 4.0)], 1).dashed(),
            ],
            spans: vec![(0.5, 1.5, "c4".into())],
            marks: vec![1.2],
            marks_label: "retraction".into(),
            ..Default::default()
        };
        let h = render(&c);
        assert!(h.contains("<figcaption>Gen &lt;throughput&gt;</figcaption>"));
        assert!(h.contains("time (s)") && h.contains("tok/s"));
        assert!(h.contains("<polyline") || h.contains("<path"));
        assert!(h.contains("viewBox"));
        assert!(!h.contains("width=\"560\" height=\"260\" viewBox"));
        assert!(h.contains("measured window") && h.contains("retraction"));
        let empty = render(&Chart {
            id: "e".into(),
            ..Default::default()
        });
        assert!(empty.contains("no data"));
    }

    #[test]
    fn dashed_lines_are_dashed_by_the_svg_not_by_segments() {
        let c = Chart {
            id: "d".into(),
            lines: vec![Line::new("p99", vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5)], 3).dashed()],
            ..Default::default()
        };
        let h = render(&c);
        assert!(
            h.contains("stroke=\"#D55E00\" stroke-dasharray=\"6 4\""),
            "{h}"
        );
        assert!(!h.contains("#D55E01"));
    }

    #[test]
    fn marks_are_thinned_to_a_bound() {
        let m: Vec<f64> = (0..1000).map(f64::from).collect();
        let (kept, dropped) = thin_marks(&m, 0.0, 1000.0, 50);
        assert_eq!(kept.len(), 50);
        assert_eq!(dropped, 950);
        assert_eq!(thin_marks(&[3.0, 1.0], 0.0, 10.0, 60), (vec![1.0, 3.0], 0));
    }

    #[test]
    fn whole_labels_never_ask_for_more_ticks_than_whole_numbers() {
        assert_eq!(whole_labels(1.94, 4.06, 6), 3);
        assert_eq!(whole_labels(-0.5, 2.5, 6), 3);
        assert_eq!(whole_labels(0.0, 100.0, 6), 6);
        assert_eq!(whole_labels(31.2, 31.8, 6), 1);
        assert_eq!(whole_labels(f64::NAN, 1.0, 6), 1);
    }

    /// A count of requests that peaks at 2 ticks 0, 1, 2, not 0.5 and 1.5.
    #[test]
    fn whole_axes_tick_whole_numbers() {
        let c = Chart {
            id: "w".into(),
            lines: vec![Line::new("running", vec![(0.0, 1.0), (1.0, 2.0)], 0).step()],
            x_whole: true,
            y_whole: true,
            ..Default::default()
        };
        let h = render(&c);
        let labels: Vec<&str> = h
            .split("<text ")
            .skip(1)
            .filter_map(|t| t.split('>').nth(1)?.split('<').next())
            .map(str::trim)
            .filter(|l| !l.is_empty()) // the axes' empty descriptions
            .collect();
        assert!(!labels.is_empty());
        for l in &labels {
            assert!(l.parse::<u32>().is_ok(), "{l:?} in {labels:?}");
        }
    }

    #[test]
    fn bars_have_a_row_per_configuration_and_no_data_says_so() {
        let c = BarChart {
            id: "b".into(),
            title: "t".into(),
            x_label: "output tok/s".into(),
            rows: vec![("a-long-configuration-name".into(), 0), ("b".into(), 1)],
            filled: Measure {
                name: "p50".into(),
                values: vec![Spread::of(&[10.0, 12.0]), Spread::of(&[20.0])],
            },
            outline: None,
            note: String::new(),
        };
        let h = render_bars(&c);
        assert!(
            h.contains("a-long-configuration-name") && h.contains(">\nb\n<"),
            "{h}"
        );
        assert!(h.contains("viewBox=\"0 0 560 130\""), "{h}");
        assert!(h.contains("fill=\"#0072B2\"") && h.contains("fill=\"#E69F00\""));
        assert!(
            h.contains(">\n11\n<") && h.contains(">\n20\n<"),
            "values: {h}"
        );
        let none = render_bars(&BarChart {
            id: "n".into(),
            ..Default::default()
        });
        assert!(none.contains("no data"));
    }

    #[test]
    fn steps_hold_values() {
        assert_eq!(
            steps(&[(0.0, 1.0), (1.0, 2.0)]),
            vec![(0.0, 1.0), (1.0, 1.0), (1.0, 2.0)]
        );
    }
}
