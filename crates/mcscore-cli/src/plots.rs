//! Plots for `report`, `compare` and `sweep --plots` and for `mcscore view`'s
//! page: drawn as SVG (plotters), each file written with a PNG beside it
//! (rendered by resvg: `png.rs`) for papers and slides.

use std::path::Path;

use anyhow::Context;
use mcscore_metrics::calibration::Calibration;
use mcscore_metrics::paired::LogHistogram;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::prelude::*;

use crate::run_text::points;

// The figures are drawn near the width the page shows them at (about 520 px)
// and a column of a paper prints them at, so their text stays legible there:
// tick labels, axis descriptions and captions, as plotters takes sizes (it
// writes each as font-size ÷ 1.24 in the SVG: 14.5, 15.3 and 16.1 px).
const TEXT: u32 = 18;
const DESC: u32 = 19;
const CAPTION: u32 = 20;
/// Bars: Okabe and Ito's sky blue (their palette stays distinct under
/// every common colour-vision deficiency), light enough that intervals and
/// marks drawn over it stay visible.
const FILL: RGBColor = RGBColor(86, 180, 233);
/// A second series, and what stands out (a significant group, chance):
/// Okabe and Ito's vermillion.
const ACCENT: RGBColor = RGBColor(213, 94, 0);
/// The major grid only, faint: a minor grid drawn over bars is noise.
const GRID: RGBAColor = RGBAColor(0, 0, 0, 0.12);
/// Half the width of an interval's caps, in pixels.
const CAP: i32 = 5;

/// A tick of a continuous axis, as the shortest decimal of its value to a
/// millionth: 5 not 5.0, 0.05 not 0.1 (plotters puts ticks at round steps).
fn tick(x: &f64) -> String {
    let rounded = (x * 1e6).round() / 1e6;
    // -0 is 0.
    format!("{}", rounded + 0.0)
}

/// A tick label's or axis description's font.
fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().into()
}

/// The pixels a label of `chars` characters takes at plotters' `size` (at
/// most 0.6 em a character in sans-serif), for areas that fit their labels.
/// The tests hold every plot's text to the same estimate.
fn text_width(chars: usize, size: u32) -> u32 {
    (chars as f64 * size as f64 / 1.24 * 0.6).ceil() as u32
}

/// A plot's width: `width`, or wider where its caption needs it.
fn fit(width: u32, caption: &str) -> u32 {
    width.max(text_width(caption.chars().count(), CAPTION) + 32)
}

/// An interval's caps: a short line across each end, drawn in pixels around
/// the data point (whatever the coordinates), horizontal for a vertical interval.
fn caps<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    ends: impl IntoIterator<Item = CT::From>,
    vertical: bool,
    style: ShapeStyle,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
    CT::From: Clone,
{
    let across = if vertical { [(-CAP, 0), (CAP, 0)] } else { [(0, -CAP), (0, CAP)] };
    chart.draw_series(ends.into_iter().map(|end| EmptyElement::at(end) + PathElement::new(across, style)))?;
    Ok(())
}

/// Draws an SVG in memory, then writes it and its PNG atomically: a full
/// disk never leaves a truncated plot under its name, and no plot replaces
/// one of `protected` (the command's inputs and other outputs).
fn save(path: &Path, protected: &[&Path], draw: impl FnOnce(&mut String) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let png_path = path.with_extension("png");
    crate::output::check_folder_file(path, protected)?;
    crate::output::check_folder_file(&png_path, protected)?;
    let svg = render(draw).with_context(|| path.display().to_string())?;
    let png = crate::png::of_svg(&svg).with_context(|| png_path.display().to_string())?;
    mcscore_format::write_atomic(path, svg.as_bytes())?;
    mcscore_format::write_atomic(&png_path, &png)?;
    Ok(())
}

thread_local! {
    /// The labels the plot being drawn shows shorter than they are, as
    /// (shown, full): gathered where labels are shortened ([`distinct`],
    /// [`short`]), so that no drawing function can shorten one and forget
    /// to give it in full.
    static SHORTENED: std::cell::RefCell<Vec<(String, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn shortened(shown: &str, full: &str) {
    if shown != full {
        SHORTENED.with_borrow_mut(|all| {
            if !all.iter().any(|(s, f)| s == shown && f == full) {
                all.push((shown.to_owned(), full.to_owned()));
            }
        });
    }
}

/// One plot as an SVG document, with a key under it giving in full every
/// label it shows shortened. Control characters in a label (a model or
/// group name) are not XML: they are drawn as U+FFFD.
fn render(draw: impl FnOnce(&mut String) -> anyhow::Result<()>) -> anyhow::Result<String> {
    let mut svg = String::new();
    SHORTENED.with_borrow_mut(Vec::clear);
    draw(&mut svg)?;
    let svg = with_key(&svg, &SHORTENED.take());
    Ok(svg.chars().map(|c| if c.is_control() && !matches!(c, '\t' | '\n' | '\r') { '\u{FFFD}' } else { c }).collect())
}

/// `svg` (as plotters writes it) made taller, and wider where a line needs
/// it, for a key of `shortened` labels (shown: full) below the plot, each
/// line wrapped to the width of a column of a page.
fn with_key(svg: &str, shortened: &[(String, String)]) -> String {
    let Some(end) = svg.find('>').filter(|_| !shortened.is_empty() && svg.starts_with("<svg ")) else { return svg.to_owned() };
    let number = |name: &str| -> Option<u32> {
        let start = svg[..end].find(&format!(" {name}=\""))? + name.len() + 3;
        svg[start..end].split('"').next()?.parse().ok()
    };
    let (Some(width), Some(height)) = (number("width"), number("height")) else { return svg.to_owned() };
    let size = TEXT as f64 / 1.24;
    // At most 520 px of text a line (the width the page shows), wrapped.
    let per_line = ((520.0 - 20.0) / (0.6 * size)) as usize;
    let mut lines = vec!["Labels in full:".to_owned()];
    for (shown, full) in shortened {
        let text: Vec<char> = format!("{shown} = {full}").chars().collect();
        lines.extend(text.chunks(per_line).enumerate().map(|(i, c)| format!("{}{}", if i > 0 { "   " } else { "" }, String::from_iter(c))));
    }
    let longest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = width.max((0.6 * size * longest as f64).ceil() as u32 + 20);
    let top = height + 8;
    let total = top + 22 * lines.len() as u32 + 8;
    let escape = |t: &str| t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut out = format!(
        "<svg width=\"{width}\" height=\"{total}\" viewBox=\"0 0 {width} {total}\" xmlns=\"http://www.w3.org/2000/svg\">\n\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{total}\" fill=\"#FFFFFF\" stroke=\"none\"/>"
    );
    let body = &svg[end + 1..];
    out.push_str(body.trim_end().strip_suffix("</svg>").unwrap_or(body));
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!(
            "<text x=\"10\" y=\"{}\" dy=\"0.76em\" font-family=\"sans-serif\" font-size=\"{size}\" fill=\"#000000\">{}</text>\n",
            top + 22 * i as u32,
            escape(line)
        ));
    }
    out.push_str("</svg>\n");
    out
}

fn file_name(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// Plots as (file name, SVG document), in the order they are shown.
pub(crate) type Plots = Vec<(String, String)>;

/// Writes `plots` into `dir` (created if need be), each SVG with its PNG.
pub(crate) fn write(dir: &Path, protected: &[&Path], plots: &[(String, String)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    for (name, svg) in plots {
        let svg = svg.clone();
        save(&dir.join(name), protected, move |out| {
            *out = svg;
            Ok(())
        })?;
    }
    Ok(())
}

/// `report --plots`: a reliability diagram per model, and a scheme × model
/// rank heatmap when there are several models.
pub(crate) fn report(report: &mcscore_eval::report::Report) -> anyhow::Result<Plots> {
    let mut plots = Vec::new();
    for (i, m) in report.models.iter().enumerate() {
        plots.push((
            format!("reliability-{}-{}.svg", i + 1, file_name(&m.label)),
            render(|svg| reliability(svg, &m.label, &m.calibration))?,
        ));
    }
    if report.models.len() > 1 {
        let rankings: Vec<(&str, &[f64])> = report.rankings.iter().map(|r| (r.scheme.as_str(), r.ranks.as_slice())).collect();
        let models: Vec<String> = report.models.iter().map(|m| m.label.clone()).collect();
        plots.push(("rank-heatmap.svg".to_owned(), render(|svg| heatmap(svg, &rankings, &models))?));
    }
    Ok(plots)
}

fn reliability(svg: &mut String, label: &str, c: &Calibration) -> anyhow::Result<()> {
    let caption = format!("{}: ECE {:.3}", short(label, 36), c.ece);
    let root = SVGBackend::with_string(svg, (fit(560, &caption), 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", CAPTION))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(58)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .x_desc("confidence (the largest option probability)")
        .y_desc("accuracy in the bin")
        .axis_desc_style(font(DESC))
        .label_style(font(TEXT))
        .draw()?;
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.5)))?
        .label("calibrated")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.mix(0.5)));
    let bins: Vec<_> = c.bins.iter().filter(|b| b.count > 0).collect();
    chart
        .draw_series(bins.iter().map(|b| Rectangle::new([(b.low, 0.0), (b.high, b.accuracy)], FILL.mix(0.6).filled())))?
        .label("accuracy per bin (95 % interval)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], FILL.mix(0.6).filled()));
    // The 95 % Wilson interval of each bin's accuracy, at its mean confidence.
    for b in &bins {
        let (low, high) = b.accuracy_interval;
        chart.draw_series(std::iter::once(PathElement::new([(b.mean_confidence, low), (b.mean_confidence, high)], BLACK)))?;
        caps(&mut chart, [(b.mean_confidence, low), (b.mean_confidence, high)], true, BLACK.into())?;
    }
    chart.draw_series(bins.iter().map(|b| Circle::new((b.mean_confidence, b.accuracy), 4, ACCENT.filled())))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(font(TEXT))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Labels without the start they all share ("gemma-3-270m-Q8_0" and
/// "gemma-3-270m-Q2_K" read "Q8_0" and "Q2_K"), cut by characters.
fn distinct(labels: &[&str], max: usize) -> Vec<String> {
    let first: Vec<char> = labels.first().map_or_else(Vec::new, |l| l.chars().collect());
    let shared = labels.iter().skip(1).fold(first.len(), |n, l| l.chars().zip(&first).take(n).take_while(|(a, b)| a == *b).count());
    // Keep what a label would be empty without.
    // Cut after a separator, so that Q4_K_M and Q4_0 keep their "Q4_".
    let shared = first[..shared].iter().rposition(|c| matches!(c, '-' | ' ' | '.' | '/')).map_or(0, |i| i + 1);
    let shared = if labels.iter().any(|l| l.chars().count() == shared) { 0 } else { shared };
    labels
        .iter()
        .map(|l| {
            let shown = cut(&l.chars().skip(shared).collect::<String>(), max);
            shortened(&shown, l);
            shown
        })
        .collect()
}

/// `label`, cut to `max` characters with an ellipsis where longer; the plot's
/// key gives it in full.
fn short(label: &str, max: usize) -> String {
    let shown = cut(label, max);
    shortened(&shown, label);
    shown
}

fn cut(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_owned()
    } else {
        label.chars().take(max - 1).chain(std::iter::once('…')).collect()
    }
}

fn heatmap(svg: &mut String, rankings: &[(&str, &[f64])], models: &[String]) -> anyhow::Result<()> {
    let (rows, cols) = (rankings.len(), models.len());
    let names = distinct(&models.iter().map(String::as_str).collect::<Vec<_>>(), 18);
    let names: Vec<String> = names.iter().enumerate().map(|(x, name)| format!("#{} {name}", x + 1)).collect();
    // A column fits its label.
    let column = (text_width(names.iter().map(|n| n.chars().count()).max().unwrap_or(4), TEXT - 2) + 16).max(170);
    let root = SVGBackend::with_string(svg, (120 + column * cols as u32, 90 + 40 * rows as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    // Label space inside the plot: one column on the left, one row on top.
    let mut chart = ChartBuilder::on(&root)
        .caption("model rank per scheme (1 = best)", ("sans-serif", CAPTION))
        .margin(10)
        .build_cartesian_2d(-0.8f64..cols as f64, rows as f64 + 1.0..0f64)?;
    let worst = cols.max(2) as f64;
    for (y, (scheme, ranks)) in rankings.iter().enumerate() {
        let top = y as f64 + 1.0;
        chart.draw_series(std::iter::once(Text::new(scheme.to_string(), (-0.75, top + 0.3), font(TEXT))))?;
        for (x, &rank) in ranks.iter().enumerate() {
            let shade = 1.0 - (rank - 1.0) / (worst - 1.0);
            let color = RGBColor(255 - (200.0 * shade) as u8, 255 - (120.0 * shade) as u8, 255);
            let left = x as f64;
            chart.draw_series(std::iter::once(Rectangle::new([(left, top), (left + 0.98, top + 0.95)], color.filled())))?;
            chart.draw_series(std::iter::once(Text::new(format!("{rank:.1}"), (left + 0.42, top + 0.3), font(TEXT))))?;
        }
    }
    for (x, name) in names.iter().enumerate() {
        chart.draw_series(std::iter::once(Text::new(name.clone(), (x as f64 + 0.02, 0.3), font(TEXT - 2))))?;
    }
    root.present()?;
    Ok(())
}

/// `mcscore sweep --plots`: per model, accuracy in each format (and circular
/// accuracy beside it); with several models, each one's rank distribution.
pub(crate) fn sweep(report: &mcscore_eval::sweep::SweepReport) -> anyhow::Result<Plots> {
    let models: Vec<String> = report.models.iter().map(|m| m.model.clone()).collect();
    let names = sweep_paths(Path::new(""), &models);
    let mut plots = Vec::new();
    for (name, m) in names.iter().zip(&report.models) {
        let accuracy: Vec<f64> = m.formats.iter().map(|f| points(f.accuracy)).collect();
        let intervals: Vec<Option<(f64, f64)>> = m.formats.iter().map(|f| f.accuracy_interval.map(interval_points)).collect();
        // Per format, in the formats' order (a saved sweep may lack one).
        let circular: Option<Vec<Option<f64>>> =
            report.circular.then(|| m.formats.iter().map(|f| f.circular_accuracy.map(points)).collect());
        let label = mcscore_eval::log::label(&m.model);
        let svg = render(|svg| format_bars(svg, &label, &report.formats, &accuracy, &intervals, circular.as_deref()))?;
        plots.push((name.display().to_string(), svg));
    }
    if let (Some(c), Some(name)) = (&report.comparison, names.get(models.len())) {
        plots.push((name.display().to_string(), render(|svg| rank_bars(svg, &models, &c.rank_distribution, report.formats.len()))?));
    }
    Ok(plots)
}

/// The files `sweep` plots `models` into: one per model, then the rank
/// distributions where there are several (known before scoring, so a clash
/// with another output is refused before any work).
pub(crate) fn sweep_paths(dir: &Path, models: &[String]) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<std::path::PathBuf> = models
        .iter()
        .enumerate()
        .map(|(i, m)| dir.join(format!("sweep-accuracy-{}-{}.svg", i + 1, file_name(&mcscore_eval::log::label(m)))))
        .collect();
    if models.len() > 1 {
        paths.push(dir.join("sweep-ranks.svg"));
    }
    paths
}

/// Bar `i` of a bar chart, `value` high.
fn bar(i: usize, value: f64, color: RGBAColor) -> Rectangle<(SegmentValue<usize>, f64)> {
    let mut bar = Rectangle::new([(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), value)], color.filled());
    bar.set_margin(0, 0, 6, 6);
    bar
}

/// An interval from `low` to `high` through the centre of bar `i`, with caps.
fn whisker<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordusize>, RangedCoordf64>>,
    i: usize,
    (low, high): (f64, f64),
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let ends = [(SegmentValue::CenterOf(i), low), (SegmentValue::CenterOf(i), high)];
    chart.draw_series(std::iter::once(PathElement::new(ends.to_vec(), BLACK.stroke_width(1))))?;
    caps(chart, ends, true, BLACK.stroke_width(1))
}

/// The legend box, top right, as the sweep's plots draw it.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(chart: &mut ChartContext<'a, DB, CT>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(font(TEXT))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

fn format_bars(
    svg: &mut String,
    label: &str,
    formats: &[String],
    accuracy: &[f64],
    intervals: &[Option<(f64, f64)>],
    circular: Option<&[Option<f64>]>,
) -> anyhow::Result<()> {
    // One row per format, its name read across: 48 names would cross each
    // other under vertical bars.
    let n = formats.len();
    let label_width = 24 + text_width(formats.iter().map(|f| f.chars().count()).max().unwrap_or(4), TEXT);
    // Empty rows above the first format hold the legend, clear of every bar.
    const LEGEND_ROWS: usize = 3;
    let caption = format!(
        "{}: accuracy per prompt format{}",
        short(label, 40),
        // A saved sweep file may hold no intervals.
        if intervals.iter().any(Option::is_some) { " (95 % intervals)" } else { "" },
    );
    let root = SVGBackend::with_string(svg, (fit(label_width + 480, &caption), 100 + 22 * (n + LEGEND_ROWS) as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = accuracy.iter().copied().chain(intervals.iter().flatten().map(|i| i.1)).fold(10.0, f64::max).min(100.0) * 1.05;
    // The first format on top: rows count up from the axis.
    let at = |i: usize| n - 1 - i;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", CAPTION))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(label_width)
        // a sweep has a format at least: parse_formats and merge_saved refuse none
        .build_cartesian_2d(0f64..top, (0..n + LEGEND_ROWS - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .x_desc("accuracy (% correct)")
        .axis_desc_style(font(DESC))
        .label_style(font(TEXT))
        .x_label_formatter(&tick)
        .y_labels(n + LEGEND_ROWS)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(row) if *row < n => formats[at(*row)].clone(),
            _ => String::new(),
        })
        .draw()?;
    let row = |i: usize, value: f64, inset: u32| {
        let mut bar = Rectangle::new([(0.0, SegmentValue::Exact(at(i))), (value, SegmentValue::Exact(at(i) + 1))], FILL.filled());
        bar.set_margin(inset, inset, 0, 0);
        bar
    };
    chart
        .draw_series(accuracy.iter().enumerate().map(|(i, &a)| row(i, a, 3)))?
        .label("original order")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], FILL.filled()));
    // Circular accuracy of 0 everywhere draws no bar: the legend says so instead.
    let known = || circular.into_iter().flatten().flatten();
    if known().next().is_some() && known().all(|&a| a == 0.0) {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<usize>)>>())?
            .label("circular: 0 in every format")
            .legend(|(x, y)| Rectangle::new([(x, y - 3), (x + 14, y + 3)], ACCENT.filled()));
    }
    if let Some(circular) = circular.filter(|_| known().any(|&a| a > 0.0)) {
        // Inside the original order's bar: circular accuracy is never above it.
        chart
            .draw_series(circular.iter().enumerate().filter_map(|(i, a)| a.map(|a| (i, a))).map(|(i, a)| {
                let mut bar = Rectangle::new([(0.0, SegmentValue::Exact(at(i))), (a, SegmentValue::Exact(at(i) + 1))], ACCENT.filled());
                bar.set_margin(8, 8, 0, 0);
                bar
            }))?
            .label("circular (right under every rotation)")
            .legend(|(x, y)| Rectangle::new([(x, y - 3), (x + 14, y + 3)], ACCENT.filled()));
    }
    // The 95 % Wilson interval of each format's accuracy (original order).
    for (i, interval) in intervals.iter().enumerate() {
        let Some((low, high)) = *interval else { continue };
        let ends = [(low, SegmentValue::CenterOf(at(i))), (high, SegmentValue::CenterOf(at(i)))];
        chart.draw_series(std::iter::once(PathElement::new(ends.to_vec(), BLACK)))?;
        caps(&mut chart, ends, false, BLACK.into())?;
    }
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

/// One stacked bar per model: how many formats rank it 1st, 2nd, ….
fn rank_bars(svg: &mut String, models: &[String], ranks: &[Vec<usize>], n_formats: usize) -> anyhow::Result<()> {
    let m = models.len();
    let names: Vec<String> = models.iter().map(|model| mcscore_eval::log::label(model)).collect();
    let labels = distinct(&names.iter().map(String::as_str).collect::<Vec<_>>(), 28);
    let labels: Vec<String> = labels.iter().enumerate().map(|(i, l)| format!("{}. {l}", i + 1)).collect();
    let column = (text_width(labels.iter().map(|l| l.chars().count()).max().unwrap_or(4), TEXT) + 24).max(110);
    let root = SVGBackend::with_string(svg, (300 + column * m as u32, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("rank of each model across prompt formats", ("sans-serif", CAPTION))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(56)
        // An integer range's end is a key point too: 0..m-1 makes m segments.
        // drawn only with a comparison, which a sweep makes of two models or more;
        // formats are counted in whole numbers.
        .build_cartesian_2d((0..m - 1).into_segmented(), 0usize..(n_formats * 13).div_ceil(10).max(2))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .y_desc("prompt formats")
        .axis_desc_style(font(DESC))
        .label_style(font(TEXT))
        .x_labels(m)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    for rank in 0..m {
        // From the bars' blue (rank 1) to the vermillion of what stands out (the last rank).
        let t = if m > 1 { rank as f64 / (m - 1) as f64 } else { 0.0 };
        let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
        let color = RGBColor(mix(FILL.0, ACCENT.0), mix(FILL.1, ACCENT.1), mix(FILL.2, ACCENT.2));
        chart
            .draw_series(ranks.iter().enumerate().map(|(model, counts)| {
                let below: usize = counts[..rank].iter().sum();
                let top = below + counts[rank];
                let mut bar = Rectangle::new([(SegmentValue::Exact(model), below), (SegmentValue::Exact(model + 1), top)], color.filled());
                bar.set_margin(1, 0, 14, 14);
                bar
            }))?
            .label(format!("rank {}", rank + 1))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

/// `mcscore compare --plots`: per OTHER its flip matrix, its KL histogram
/// and, where groups are known, its per-group differences; for all OTHERs
/// their accuracy against chance and their paired differences against zero
/// and the margin.
pub(crate) fn comparison(c: &mcscore_eval::compare::Comparison) -> anyhow::Result<Plots> {
    let mut plots = Vec::new();
    for i in 0..c.others.len() {
        plots.extend(pair(c, i)?);
    }
    plots.extend(overall(c)?);
    Ok(plots)
}

/// The plots of OTHER `i` against BASE.
pub(crate) fn pair(c: &mcscore_eval::compare::Comparison, i: usize) -> anyhow::Result<Plots> {
    let p = &c.others[i];
    let stem = format!("{}-{}", i + 1, file_name(&p.other.label));
    let mut plots = vec![
        (format!("flips-{stem}.svg"), render(|svg| flip_matrix(svg, &c.base.label, p))?),
        (format!("kl-{stem}.svg"), render(|svg| kl_histogram(svg, &c.base.label, p))?),
    ];
    if let Some(k) = &p.clustered {
        plots.push((format!("groups-{stem}.svg"), render(|svg| group_differences(svg, &c.base.label, p, k))?));
    }
    Ok(plots)
}

/// The plots of every OTHER together: paired differences and accuracies.
pub(crate) fn overall(c: &mcscore_eval::compare::Comparison) -> anyhow::Result<Plots> {
    Ok(vec![
        ("differences.svg".to_owned(), render(|svg| differences(svg, c))?),
        ("accuracy.svg".to_owned(), render(|svg| accuracies(svg, c))?),
    ])
}

fn flip_matrix(svg: &mut String, base: &str, p: &mcscore_eval::compare::Pairing) -> anyhow::Result<()> {
    let f = &p.flips;
    let names = distinct(&[base, &p.other.label], 24);
    let caption = format!("{} (rows) → {} (columns)", names[0], names[1]);
    let root = SVGBackend::with_string(svg, (fit(560, &caption), 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart =
        ChartBuilder::on(&root).caption(caption, ("sans-serif", CAPTION)).margin(12).build_cartesian_2d(-0.9f64..2.0, 2.6f64..0.0)?;
    let cells = [
        (0, 0, f.both_right, String::new()),
        (1, 0, f.right_to_wrong, String::new()),
        (0, 1, f.wrong_to_right, String::new()),
        (1, 1, f.both_wrong + f.wrong_to_other_wrong, format!("({} another wrong)", f.wrong_to_other_wrong)),
    ];
    for (col, row, count, note) in cells {
        let (x, y) = (col as f64, row as f64 + 0.5);
        let shade = f.share(count);
        let color = if col != row {
            RGBColor(255, 255 - (200.0 * shade.sqrt()) as u8, 255 - (200.0 * shade.sqrt()) as u8)
        } else {
            RGBColor(255 - (160.0 * shade) as u8, 255 - (90.0 * shade) as u8, 255)
        };
        chart.draw_series(std::iter::once(Rectangle::new([(x, y), (x + 0.97, y + 0.97)], color.filled())))?;
        chart.draw_series(std::iter::once(Text::new(format!("{count}"), (x + 0.35, y + 0.38), ("sans-serif", 24))))?;
        // The share, and the note on a line of its own: a cell is a third of the width.
        chart.draw_series(std::iter::once(Text::new(format!("{:.1} %", points(f.share(count))), (x + 0.1, y + 0.62), font(TEXT - 1))))?;
        if !note.is_empty() {
            chart.draw_series(std::iter::once(Text::new(note, (x + 0.1, y + 0.8), font(TEXT - 1))))?;
        }
    }
    for (i, label) in ["right", "wrong"].iter().enumerate() {
        chart.draw_series(std::iter::once(Text::new(format!("OTHER {label}"), (i as f64 + 0.3, 0.3), font(TEXT))))?;
        chart.draw_series(std::iter::once(Text::new(format!("BASE {label}"), (-0.85, i as f64 + 1.0), font(TEXT))))?;
    }
    root.present()?;
    Ok(())
}

fn kl_histogram(svg: &mut String, base: &str, p: &mcscore_eval::compare::Pairing) -> anyhow::Result<()> {
    let histogram = LogHistogram::of(&p.kl_per_task, 40);
    let (counts, width, top) = (&histogram.counts, histogram.width(), histogram.top);
    const FLOOR: f64 = LogHistogram::FLOOR;
    // Task counts on a whole-number axis: no 0.5 tasks.
    let highest = counts.iter().copied().max().unwrap_or(1).max(1);
    let names = distinct(&[base, &p.other.label], 24);
    let caption = format!(
        "KL({}‖{}) per task: mean {}, p99 {} nats",
        names[0],
        names[1],
        crate::run_text::nats(p.kl.mean, false),
        crate::run_text::nats(p.kl.p99, false)
    );
    let root = SVGBackend::with_string(svg, (fit(600, &caption), 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", CAPTION))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(56)
        .build_cartesian_2d(FLOOR..top, 0usize..(highest + highest.div_ceil(10)).max(2))?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .x_desc("log10 KL in nats (first bin: ≤ 1e-6)")
        .y_desc("tasks")
        .axis_desc_style(font(DESC))
        .label_style(font(TEXT))
        .x_label_formatter(&tick)
        .draw()?;
    chart.draw_series(counts.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| {
        let left = FLOOR + i as f64 * width;
        Rectangle::new([(left, 0), (left + width * 0.92, n)], FILL.filled())
    }))?;
    root.present()?;
    Ok(())
}

fn group_differences(
    svg: &mut String,
    base: &str,
    p: &mcscore_eval::compare::Pairing,
    k: &mcscore_eval::compare::Clustered,
) -> anyhow::Result<()> {
    let mut shifts: Vec<_> = k.shifts.iter().collect();
    shifts.sort_by(|a, b| a.difference.total_cmp(&b.difference));
    let rows: Vec<ForestRow> = shifts
        .iter()
        .map(|s| ForestRow {
            name: format!("{} ({})", short(&s.name, 34), s.tasks),
            estimate: points(s.difference),
            interval: s.interval.map(interval_points),
            color: if s.significant { ACCENT } else { FILL },
        })
        .collect();
    let reach = rows
        .iter()
        .flat_map(|r| [r.estimate.abs()].into_iter().chain(r.interval.map(|(l, h)| l.abs().max(h.abs()))))
        .fold(5.0, f64::max)
        .min(100.0)
        * 1.05;
    let names = distinct(&[base, &p.other.label], 20);
    let caption = format!(
        "{} − {} per group (intervals from {} tasks; red: BH q ≤ {})",
        names[1],
        names[0],
        mcscore_eval::compare::MIN_GROUP_FOR_INTERVAL,
        crate::run_text::p_value(k.q_level)
    );
    let layout = ForestLayout { plot_width: 520, row_height: 20, top: 110, line: 2, dot: 3 };
    forest(svg, &caption, &layout, reach, &rows, &[])
}

fn differences(svg: &mut String, c: &mcscore_eval::compare::Comparison) -> anyhow::Result<()> {
    let margin = points(c.margin);
    let names = distinct(&c.others.iter().map(|p| p.other.label.as_str()).collect::<Vec<_>>(), 28);
    let rows: Vec<ForestRow> = c
        .others
        .iter()
        .zip(names)
        .map(|(p, name)| ForestRow {
            name,
            estimate: points(p.difference.estimate),
            interval: Some(interval_points(p.difference.interval)),
            color: FILL,
        })
        .collect();
    let reach = rows.iter().filter_map(|r| r.interval).flat_map(|(l, h)| [l.abs(), h.abs()]).fold(margin * 1.5, f64::max) * 1.1;
    let caption = format!(
        "OTHER − {}: {:.1} % intervals, ±{} margin",
        short(&c.base.label, 28),
        points(c.interval_level),
        mcscore_metrics::shown(margin)
    );
    let layout = ForestLayout { plot_width: 480, row_height: 36, top: 110, line: 2, dot: 5 };
    forest(svg, &caption, &layout, reach, &rows, &[-margin, margin])
}

/// An interval of fractions in accuracy points, as the plots draw them.
fn interval_points((low, high): (f64, f64)) -> (f64, f64) {
    (points(low), points(high))
}

/// One row of a forest plot: a difference in points, its interval if any.
struct ForestRow {
    name: String,
    estimate: f64,
    interval: Option<(f64, f64)>,
    color: RGBColor,
}

/// Sizes of a forest plot, in pixels (the label area fits the labels).
struct ForestLayout {
    /// Width right of the labels.
    plot_width: u32,
    row_height: u32,
    /// Height besides the rows (caption, axis).
    top: u32,
    line: u32,
    dot: u32,
}

/// Differences in accuracy points, one row each, against a zero line and
/// the grey lines at `marks` (the margin); intervals are cut at ±`reach`.
fn forest(svg: &mut String, caption: &str, layout: &ForestLayout, reach: f64, rows: &[ForestRow], marks: &[f64]) -> anyhow::Result<()> {
    let n = rows.len();
    // The label area fits the longest label, and no more.
    let label_width = 20 + text_width(rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(4), TEXT);
    let size = (fit(label_width + layout.plot_width, caption), layout.top + layout.row_height * n as u32);
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", CAPTION))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(label_width)
        .build_cartesian_2d(-reach..reach, (0..n.max(1) - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .x_desc("accuracy points (OTHER − BASE)")
        .axis_desc_style(font(DESC))
        .label_style(font(TEXT))
        .x_label_formatter(&tick)
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => rows.get(*i).map(|r| r.name.clone()).unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    chart.draw_series(LineSeries::new([(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Exact(n))], BLACK.stroke_width(1)))?;
    for &m in marks {
        chart.draw_series(DashedLineSeries::new(
            [(m, SegmentValue::Exact(0)), (m, SegmentValue::Exact(n))],
            5,
            4,
            BLACK.mix(0.45).stroke_width(1),
        ))?;
    }
    for (i, row) in rows.iter().enumerate() {
        let y = || SegmentValue::CenterOf(i);
        if let Some((low, high)) = row.interval {
            let ends = [(low.max(-reach), y()), (high.min(reach), y())];
            chart.draw_series(std::iter::once(PathElement::new(ends.to_vec(), row.color.stroke_width(layout.line))))?;
            // A cut end has no cap: the interval goes on.
            caps(&mut chart, ends.into_iter().filter(|(x, _)| x.abs() < reach), false, row.color.stroke_width(layout.line))?;
        }
        chart.draw_series(std::iter::once(Circle::new((row.estimate, y()), layout.dot, row.color.filled())))?;
    }
    root.present()?;
    Ok(())
}

fn accuracies(svg: &mut String, c: &mcscore_eval::compare::Comparison) -> anyhow::Result<()> {
    let runs: Vec<(&str, f64)> = std::iter::once((c.base.label.as_str(), points(c.base.accuracy)))
        .chain(c.others.iter().map(|p| (p.other.label.as_str(), points(p.other.accuracy))))
        .collect();
    let n = runs.len();
    let labels = distinct(&runs.iter().map(|r| r.0).collect::<Vec<_>>(), 28);
    let column = (text_width(labels.iter().map(|l| l.chars().count()).max().unwrap_or(4), TEXT) + 16).max(90);
    let caption = format!("{}, {} tasks (95 % intervals; dashed: chance)", c.normalisation, c.tasks);
    let root = SVGBackend::with_string(svg, (fit((90 + column * n as u32).max(480), &caption), 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let intervals: Vec<(f64, f64)> =
        std::iter::once(c.base.accuracy_interval).chain(c.others.iter().map(|p| p.other.accuracy_interval)).map(interval_points).collect();
    let chance = points(c.chance);
    let top = runs.iter().map(|r| r.1).chain(intervals.iter().map(|i| i.1)).fold(chance, f64::max) * 1.2;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", CAPTION))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(56)
        // n >= 1: BASE is always a run
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..top.clamp(1.0, 100.0))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .y_desc("accuracy (% correct)")
        .axis_desc_style(font(DESC))
        .label_style(font(TEXT))
        .y_label_formatter(&tick)
        .x_labels(n)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    chart.draw_series(runs.iter().enumerate().map(|(i, r)| bar(i, r.1, FILL.into())))?;
    for (i, &interval) in intervals.iter().enumerate() {
        whisker(&mut chart, i, interval)?;
    }
    chart.draw_series(DashedLineSeries::new(
        [(SegmentValue::Exact(0), chance), (SegmentValue::Exact(n), chance)],
        6,
        4,
        ACCENT.stroke_width(2),
    ))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of each `<text>` element, in order.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text").skip(1).map(|t| t.split_once('>').unwrap().1.split("</text>").next().unwrap().trim().to_owned()).collect()
    }

    #[test]
    fn a_shortened_label_is_given_in_full_under_the_plot() {
        let long = "a-model-name-far-too-long-for-a-column-of-a-heat-map-".repeat(4);
        let models = vec![format!("{long}q4_k_m"), format!("{long}q8_0")];
        let ranks = [1.0, 2.0];
        let svg = render(|svg| heatmap(svg, &[("acc", &ranks[..])], &models)).unwrap();
        let texts = texts(&svg);
        let key = texts.iter().position(|t| t == "Labels in full:").expect("a key");
        // Each label as shown, then in full, wrapped over lines.
        let key: String = texts[key + 1..].iter().map(|t| t.trim_start()).collect();
        for model in &models {
            let shown = texts.iter().find(|t| t.starts_with('#') && model.contains(t[3..].trim_end_matches('…'))).unwrap();
            assert!(key.contains(&format!("{} = {model}", &shown[3..])), "{key}");
        }
        // The picture grew to hold it, and still renders.
        let head = &svg[..svg.find('>').unwrap()];
        assert!(head.contains("viewBox=\"0 0 "), "{head}");
        crate::png::of_svg(&svg).unwrap();
        // Labels shown whole need no key.
        let svg = render(|svg| heatmap(svg, &[("acc", &ranks[..])], &["q4_k_m".to_owned(), "q8_0".to_owned()])).unwrap();
        assert!(!svg.contains("Labels in full"), "{svg}");
    }
}
