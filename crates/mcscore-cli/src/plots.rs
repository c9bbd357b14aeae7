//! Plots for `report`, `compare` and `sweep --plots` and for `mcscore view`'s
//! page: drawn as SVG (plotters), each file written with a PNG beside it
//! (rendered by resvg: `png.rs`) for papers and slides.

use std::path::Path;

use anyhow::Context;
use mcscore_metrics::calibration::Calibration;
use mcscore_metrics::paired::LogHistogram;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::run_text::points;

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

/// One plot as an SVG document. Control characters in a label (a model
/// or group name) are not XML: they are drawn as U+FFFD.
fn render(draw: impl FnOnce(&mut String) -> anyhow::Result<()>) -> anyhow::Result<String> {
    let mut svg = String::new();
    draw(&mut svg)?;
    Ok(svg.chars().map(|c| if c.is_control() && !matches!(c, '\t' | '\n' | '\r') { '\u{FFFD}' } else { c }).collect())
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
    let root = SVGBackend::with_string(svg, (640, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: ECE {:.3} (bars: 95 % intervals; diagonal: calibrated)", short(label, 32), c.ece), ("sans-serif", 17))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("confidence: the largest option probability (p_max)")
        .y_desc("accuracy in the bin (share right)")
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .draw()?;
    chart.draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.4)))?;
    chart.draw_series(
        c.bins.iter().filter(|b| b.count > 0).map(|b| Rectangle::new([(b.low, 0.0), (b.high, b.accuracy)], BLUE.mix(0.5).filled())),
    )?;
    // The 95 % Wilson interval of each bin's accuracy.
    for b in c.bins.iter().filter(|b| b.count > 0) {
        let (low, high) = b.accuracy_interval;
        chart.draw_series(LineSeries::new([(b.mean_confidence, low), (b.mean_confidence, high)], BLACK.stroke_width(1)))?;
    }
    chart.draw_series(c.bins.iter().filter(|b| b.count > 0).map(|b| Circle::new((b.mean_confidence, b.accuracy), 4, RED.filled())))?;
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
    labels.iter().map(|l| short(&l.chars().skip(shared).collect::<String>(), max)).collect()
}

fn short(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_owned()
    } else {
        label.chars().take(max - 1).chain(std::iter::once('…')).collect()
    }
}

fn heatmap(svg: &mut String, rankings: &[(&str, &[f64])], models: &[String]) -> anyhow::Result<()> {
    let (rows, cols) = (rankings.len(), models.len());
    let root = SVGBackend::with_string(svg, (120 + 170 * cols as u32, 90 + 40 * rows as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    // Label space inside the plot: one column on the left, one row on top.
    let mut chart = ChartBuilder::on(&root)
        .caption("model rank per scheme (1 = best)", ("sans-serif", 18))
        .margin(10)
        .build_cartesian_2d(-0.8f64..cols as f64, rows as f64 + 1.0..0f64)?;
    let worst = cols.max(2) as f64;
    for (y, (scheme, ranks)) in rankings.iter().enumerate() {
        let top = y as f64 + 1.0;
        chart.draw_series(std::iter::once(Text::new(scheme.to_string(), (-0.75, top + 0.3), ("sans-serif", 16))))?;
        for (x, &rank) in ranks.iter().enumerate() {
            let shade = 1.0 - (rank - 1.0) / (worst - 1.0);
            let color = RGBColor(255 - (200.0 * shade) as u8, 255 - (120.0 * shade) as u8, 255);
            let left = x as f64;
            chart.draw_series(std::iter::once(Rectangle::new([(left, top), (left + 0.98, top + 0.95)], color.filled())))?;
            chart.draw_series(std::iter::once(Text::new(format!("{rank:.1}"), (left + 0.42, top + 0.3), ("sans-serif", 16))))?;
        }
    }
    for (x, model) in models.iter().enumerate() {
        chart.draw_series(std::iter::once(Text::new(
            format!("#{} {}", x + 1, short(model, 18)),
            (x as f64 + 0.02, 0.3),
            ("sans-serif", 13),
        )))?;
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
        let circular: Option<Vec<f64>> =
            report.circular.then(|| m.formats.iter().filter_map(|f| f.circular_accuracy.map(points)).collect());
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

/// One bar per format, `value` high, in the format's segment.
fn bar(i: usize, value: f64, color: RGBAColor) -> Rectangle<(SegmentValue<usize>, f64)> {
    let mut bar = Rectangle::new([(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), value)], color.filled());
    bar.set_margin(0, 0, 2, 2);
    bar
}

/// An interval from `low` to `high` through the centre of bar `i`.
fn whisker(i: usize, low: f64, high: f64, width: u32) -> PathElement<(SegmentValue<usize>, f64)> {
    PathElement::new([(SegmentValue::CenterOf(i), low), (SegmentValue::CenterOf(i), high)], BLACK.stroke_width(width))
}

/// The legend box, top right, as both sweep plots draw it.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(chart: &mut ChartContext<'a, DB, CT>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn format_bars(
    svg: &mut String,
    label: &str,
    formats: &[String],
    accuracy: &[f64],
    intervals: &[Option<(f64, f64)>],
    circular: Option<&[f64]>,
) -> anyhow::Result<()> {
    let n = formats.len();
    let root = SVGBackend::with_string(svg, ((160 + 22 * n as u32).max(640), 620)).into_drawing_area();
    root.fill(&WHITE)?;
    // Headroom above the tallest bar for the legend.
    let top = accuracy.iter().copied().chain(intervals.iter().flatten().map(|i| i.1)).fold(10.0, f64::max).min(100.0) * 1.3;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: accuracy per prompt format{}",
                short(label, 40),
                // A saved sweep file may hold no intervals.
                if intervals.iter().any(Option::is_some) { " (95 % Wilson intervals)" } else { "" }
            ),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(170)
        .y_label_area_size(50)
        // a sweep has a format at least: parse_formats and merge_saved refuse none
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc("accuracy (% correct)")
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .x_labels(n)
        .x_label_formatter(&|_| String::new())
        .draw()?;
    // Format names hang down from their bars (the mesh centres rotated labels
    // on the axis, where they would cross it).
    let style = TextStyle::from(("sans-serif", 12).into_font().transform(FontTransform::Rotate90)).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, name) in formats.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i), 0.0));
        root.draw(&Text::new(name.clone(), (x, y + 8), style.clone()))?;
    }
    let series = [("original order", Some(accuracy), BLUE.mix(0.45)), ("circular (right under every rotation)", circular, RED.mix(0.6))];
    for (label, values, color) in series {
        let Some(values) = values else { continue };
        chart
            .draw_series(values.iter().enumerate().map(|(i, &a)| bar(i, a, color)))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    // The 95 % Wilson interval of each format's accuracy (original order).
    chart.draw_series(intervals.iter().enumerate().filter_map(|(i, interval)| interval.map(|(low, high)| whisker(i, low, high, 1))))?;
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

/// One stacked bar per model: how many formats rank it 1st, 2nd, ….
fn rank_bars(svg: &mut String, models: &[String], ranks: &[Vec<usize>], n_formats: usize) -> anyhow::Result<()> {
    let m = models.len();
    let labels: Vec<String> =
        models.iter().enumerate().map(|(i, model)| format!("{}. {}", i + 1, short(&mcscore_eval::log::label(model), 28))).collect();
    let root = SVGBackend::with_string(svg, (320 + 140 * m as u32, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("rank of each model across prompt formats", ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        // An integer range's end is a key point too: 0..m-1 makes m segments.
        // drawn only with a comparison, which a sweep makes of two models or more
        .build_cartesian_2d((0..m - 1).into_segmented(), 0f64..n_formats as f64 * 1.3)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc("formats")
        .x_labels(m)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    for rank in 0..m {
        let color = Palette99::pick(rank).mix(0.8);
        chart
            .draw_series(ranks.iter().enumerate().map(|(model, counts)| {
                let below: usize = counts[..rank].iter().sum();
                let top = below + counts[rank];
                let mut bar = Rectangle::new(
                    [(SegmentValue::Exact(model), below as f64), (SegmentValue::Exact(model + 1), top as f64)],
                    color.filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            }))?
            .label(format!("rank {}", rank + 1))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
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
    let root = SVGBackend::with_string(svg, (560, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{} (rows) → {} (columns)", short(base, 24), short(&p.other.label, 24)), ("sans-serif", 17))
        .margin(12)
        .build_cartesian_2d(-0.9f64..2.0, 2.6f64..0.0)?;
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
        chart.draw_series(std::iter::once(Text::new(
            format!("{:.1} %  {note}", points(f.share(count))),
            (x + 0.1, y + 0.7),
            ("sans-serif", 13),
        )))?;
    }
    for (i, label) in ["right", "wrong"].iter().enumerate() {
        chart.draw_series(std::iter::once(Text::new(format!("OTHER {label}"), (i as f64 + 0.3, 0.3), ("sans-serif", 15))))?;
        chart.draw_series(std::iter::once(Text::new(format!("BASE {label}"), (-0.85, i as f64 + 1.0), ("sans-serif", 15))))?;
    }
    root.present()?;
    Ok(())
}

fn kl_histogram(svg: &mut String, base: &str, p: &mcscore_eval::compare::Pairing) -> anyhow::Result<()> {
    let histogram = LogHistogram::of(&p.kl_per_task, 40);
    let (counts, width, top) = (&histogram.counts, histogram.width(), histogram.top);
    const FLOOR: f64 = LogHistogram::FLOOR;
    let highest = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let root = SVGBackend::with_string(svg, (720, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "KL({}‖{}) per task: mean {}, p99 {} nats",
                short(base, 20),
                short(&p.other.label, 20),
                crate::run_text::nats(p.kl.mean, false),
                crate::run_text::nats(p.kl.p99, false)
            ),
            ("sans-serif", 16),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(FLOOR..top, 0f64..highest * 1.1)?;
    chart.configure_mesh().x_desc("log10 KL, nats (first bin: ≤ 1e-6)").y_desc("tasks").draw()?;
    chart.draw_series(counts.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| {
        let left = FLOOR + i as f64 * width;
        Rectangle::new([(left, 0.0), (left + width * 0.95, n as f64)], BLUE.mix(0.55).filled())
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
            color: if s.significant { RED } else { BLUE },
        })
        .collect();
    let reach = rows
        .iter()
        .flat_map(|r| [r.estimate.abs()].into_iter().chain(r.interval.map(|(l, h)| l.abs().max(h.abs()))))
        .fold(5.0, f64::max)
        .min(100.0)
        * 1.05;
    let caption = format!(
        "{} − {} per group, points (BCa interval from {} tasks; red: BH q ≤ {})",
        short(&p.other.label, 20),
        short(base, 20),
        mcscore_eval::compare::MIN_GROUP_FOR_INTERVAL,
        crate::run_text::p_value(k.q_level)
    );
    let layout = ForestLayout { width: 900, row_height: 18, top: 120, label_width: 300, caption_size: 15, line: 2, dot: 3 };
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
            color: BLUE,
        })
        .collect();
    let reach = rows.iter().filter_map(|r| r.interval).flat_map(|(l, h)| [l.abs(), h.abs()]).fold(margin * 1.5, f64::max) * 1.1;
    let caption = format!(
        "paired difference from {} ({:.1} % task interval), ±{} margin",
        short(&c.base.label, 28),
        points(c.interval_level),
        mcscore_metrics::shown(margin)
    );
    let layout = ForestLayout { width: 760, row_height: 40, top: 140, label_width: 200, caption_size: 16, line: 3, dot: 4 };
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

/// Sizes of a forest plot, in pixels.
struct ForestLayout {
    width: u32,
    row_height: u32,
    /// Height besides the rows (caption, axis).
    top: u32,
    label_width: u32,
    caption_size: u32,
    line: u32,
    dot: u32,
}

/// Differences in accuracy points, one row each, against a zero line and
/// the grey lines at `marks` (the margin); intervals are cut at ±`reach`.
fn forest(svg: &mut String, caption: &str, layout: &ForestLayout, reach: f64, rows: &[ForestRow], marks: &[f64]) -> anyhow::Result<()> {
    let n = rows.len();
    let root = SVGBackend::with_string(svg, (layout.width, layout.top + layout.row_height * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", layout.caption_size))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(layout.label_width)
        .build_cartesian_2d(-reach..reach, (0..n.max(1) - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("accuracy points (OTHER − BASE)")
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => rows.get(*i).map(|r| r.name.clone()).unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    chart.draw_series(LineSeries::new([(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Exact(n))], BLACK.stroke_width(1)))?;
    for &m in marks {
        chart.draw_series(LineSeries::new([(m, SegmentValue::Exact(0)), (m, SegmentValue::Exact(n))], BLACK.mix(0.4).stroke_width(1)))?;
    }
    for (i, row) in rows.iter().enumerate() {
        let y = || SegmentValue::CenterOf(i);
        if let Some((low, high)) = row.interval {
            chart.draw_series(LineSeries::new([(low.max(-reach), y()), (high.min(reach), y())], row.color.stroke_width(layout.line)))?;
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
    let root = SVGBackend::with_string(svg, ((160 + 110 * n as u32).max(560), 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let intervals: Vec<(f64, f64)> =
        std::iter::once(c.base.accuracy_interval).chain(c.others.iter().map(|p| p.other.accuracy_interval)).map(interval_points).collect();
    let chance = points(c.chance);
    let top = runs.iter().map(|r| r.1).chain(intervals.iter().map(|i| i.1)).fold(chance, f64::max) * 1.25;
    let labels = distinct(&runs.iter().map(|r| r.0).collect::<Vec<_>>(), 16);
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{} accuracy, {} tasks (95 % Wilson intervals; dashed: chance)", c.normalisation, c.tasks), ("sans-serif", 16))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        // n >= 1: BASE is always a run
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..top.clamp(1.0, 100.0))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc("accuracy (% correct)")
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .x_labels(n)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    chart.draw_series(runs.iter().enumerate().map(|(i, r)| bar(i, r.1, BLUE.mix(0.5))))?;
    chart.draw_series(intervals.iter().enumerate().map(|(i, &(low, high))| whisker(i, low, high, 2)))?;
    chart.draw_series(DashedLineSeries::new(
        [(SegmentValue::Exact(0), chance), (SegmentValue::Exact(n), chance)],
        6,
        4,
        RED.stroke_width(2),
    ))?;
    root.present()?;
    Ok(())
}
