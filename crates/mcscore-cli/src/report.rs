//! `mcscore report`: what accuracy alone hides, from `--log-samples` files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mcscore_eval::report::{self, Report, ReportOptions};
use mcscore_metrics::calibration::ECE_BINS;

use crate::normalisation::NormArg;
use crate::numbers::End;
use crate::table::{Cell, Printed, Table};
use crate::text::printable;
use crate::Outcome;

/// Report every normalisation and scoring scheme, with 95 % bootstrap
/// intervals, behaviour rates and calibration, for one or more models' logs
/// of the same dataset (checked by its sha256). With several models, each
/// scheme's ranking and its Spearman correlation with NR's (± bootstrap SE).
///
/// The schemes, each a rule applied to the option probabilities p (k options):
///
/// - NR (number right): the argmax; 1 right, 0 wrong.
///
/// - NM (negative marking): the argmax if p_max > τ, else abstain; +1 right, −1/(k−1) wrong.
///
/// - Elim (elimination): options with p < ε eliminated; the share of distractors eliminated, 0 if the key is.
///
/// - Elim-NM: the same, less k−1 if the key is eliminated, over k−1.
///
/// - CBM (confidence-based marking): confidence 1, 2 or 3 from p_max; right +1/+2/+3, wrong 0/−2/−6.
///
/// - PPA (probability allocation): 1 − Brier/2.
///
/// - AUC: options attempted in descending p; (k − the key's rank)/(k − 1).
///
/// docs/methods.md has their sources.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// --log-samples files written by `mcscore score`, one per model or setting.
    #[arg(required = true, value_name = "LOG.jsonl")]
    logs: Vec<PathBuf>,
    /// The normalisation whose softmax gives the option probabilities p.
    #[arg(long, value_enum, default_value = "acc-norm")]
    normalisation: NormArg,
    /// NM's abstention threshold τ, a probability in [0, 1]: answer only when
    /// p_max > τ (default 1/k).
    #[arg(long, value_name = "TAU", value_parser = probability())]
    tau: Option<f64>,
    /// Elim's elimination threshold ε, a probability in [0, 1]: eliminate options
    /// with p < ε (default 1/k).
    #[arg(long, value_name = "EPSILON", value_parser = probability())]
    epsilon: Option<f64>,
    /// Bootstrap resamples, 100 to 100,000 (as compare's: fewer give no 95 % interval worth the name).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = crate::numbers::whole(100u32, 100_000))]
    resamples: u32,
    /// Bootstrap seed.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::numbers::at_least(0u64))]
    seed: u64,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// How the report is printed: `human`, or a table of one row per model
    /// and metric as `csv` (fractions), `markdown` or `latex` (accuracies in
    /// percent).
    #[arg(long, value_enum, default_value = "human")]
    format: Printed,
    /// Write plots (SVG and PNG): a reliability diagram per model and a
    /// scheme × model rank heatmap.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// The tasks' groups, for accuracy per group: a text file with one group
    /// name per line, one line per task of the task file, in file order.
    /// Default: the groups (and categories) the manifest records for the
    /// task file, as MMLU's subjects.
    #[arg(long, value_name = "FILE")]
    groups: Option<PathBuf>,
    /// The manifest to look the task file's groups up in (by sha256).
    /// Default: a manifest.json in the task file's folder or a folder above
    /// it, then the working directory's.
    #[arg(long, value_name = "FILE", conflicts_with = "groups")]
    manifest: Option<PathBuf>,
}

/// The values of flags that are probabilities.
fn probability() -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    crate::numbers::real("a probability", End::Closed(0.0), End::Closed(1.0), "0.25")
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    if let Some(dir) = &args.plots {
        crate::output::check_dir(dir, "--plots")?;
    }
    let options = ReportOptions {
        normalisation: args.normalisation.into(),
        tau: args.tau,
        epsilon: args.epsilon,
        resamples: args.resamples,
        seed: args.seed,
    };
    // Each log read once; the groups are the first log's file's (the report
    // refuses logs of another file).
    let runs = report::read_runs(&args.logs)?;
    let (sha256, task_file) = runs.first().map_or(("", ""), |r| (r.header.file_sha256.as_str(), r.header.file.as_str()));
    let file_tasks = runs.iter().find_map(|r| r.header.file_tasks());
    let groups = crate::compare::groups_from(args.groups.as_deref(), args.manifest.as_deref(), Path::new(task_file), sha256, file_tasks)?;
    let report = report::of_runs(&runs, &options, groups.as_ref())?;
    // Printed before the plots are written, so a plot that cannot be written
    // (a full disk) loses nothing else.
    if args.json {
        crate::print_json(&report)?;
    } else if let Some(format) = args.format.table() {
        out!("{}", table(&report).render(format))?;
    } else {
        out!("{}", text(&report))?;
    }
    if let Some(dir) = &args.plots {
        // The task file the logs name is an input too.
        let inputs: Vec<&std::path::Path> = args
            .logs
            .iter()
            .map(PathBuf::as_path)
            .chain(args.groups.as_deref())
            .chain(args.manifest.as_deref())
            .chain(runs.iter().map(|r| std::path::Path::new(&r.header.file)))
            .collect();
        crate::plots::write(dir, &inputs, &crate::plots::report(&report)?)?;
    }
    Ok(Outcome::Ok)
}

/// One row per model and metric (long form: the metrics differ in kind).
fn table(report: &Report) -> Table {
    let mut t = Table::new(["model", "kind", "metric", "value", "ci_low", "ci_high"]);
    for m in &report.models {
        let label = || Cell::text(&*m.label);
        for (name, e) in m.normalisations.iter() {
            t.row(vec![
                label(),
                Cell::text("normalisation"),
                Cell::text(name),
                Cell::Fraction(e.mean),
                Cell::Fraction(e.low),
                Cell::Fraction(e.high),
            ]);
        }
        for (name, e) in m.schemes.iter() {
            let x = |x: f64| Cell::Number(x, 4);
            t.row(vec![label(), Cell::text("scheme"), Cell::text(name), x(e.mean), x(e.low), x(e.high)]);
        }
        if let Some(g) = &m.groups {
            for (kind, rows) in [("category", &g.categories), ("group", &g.groups)] {
                for r in rows {
                    t.row(vec![
                        label(),
                        Cell::text(kind),
                        Cell::text(&*r.name),
                        Cell::Fraction(r.accuracy),
                        Cell::Fraction(r.low),
                        Cell::Fraction(r.high),
                    ]);
                }
            }
        }
        let c = &m.calibration;
        for (name, value) in [
            ("ece", c.ece),
            ("brier", c.brier),
            ("reliability", c.reliability),
            ("resolution", c.resolution),
            ("uncertainty", c.uncertainty),
        ] {
            t.row(vec![label(), Cell::text("calibration"), Cell::text(name), Cell::Number(value, 4), Cell::Empty, Cell::Empty]);
        }
    }
    for r in &report.rankings {
        for (name, value, interval) in
            [("spearman_vs_nr", r.spearman_vs_nr, r.spearman_interval()), ("kendall_vs_nr", r.kendall_vs_nr, r.kendall_interval())]
        {
            // An undefined correlation (a ranking of ties) is an empty cell.
            let (low, high) = interval.unzip();
            t.row(vec![
                Cell::text("all"),
                Cell::text("ranking"),
                Cell::text(format!("{name}:{}", r.scheme)),
                Cell::maybe(value, 3),
                Cell::maybe(low, 3),
                Cell::maybe(high, 3),
            ]);
        }
    }
    t
}

fn text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} tasks, p = softmax of {}, 95 % bootstrap intervals ({} resamples, seed {})",
        printable(&report.file),
        // of_runs refuses no logs and reports a model per run
        report.models[0].tasks,
        report.normalisation,
        report.resamples,
        report.seed
    );
    for m in &report.models {
        let _ = writeln!(out, "\n{}", printable(&m.label));
        if !m.label.contains(&m.settings) {
            let _ = writeln!(out, "  settings: {}", printable(&m.settings));
        }
        let _ = writeln!(out, "  accuracy (%)");
        for (name, e) in m.normalisations.iter() {
            let _ = writeln!(out, "    {name:<10} {:>7.2}  [{:.2}, {:.2}]", 100.0 * e.mean, 100.0 * e.low, 100.0 * e.high);
        }
        let _ = writeln!(out, "  schemes (mean score per task)");
        for (name, e) in m.schemes.iter() {
            let _ = writeln!(out, "    {name:<10} {:>7.4}  [{:.4}, {:.4}]", e.mean, e.low, e.high);
        }
        let b = &m.behaviour;
        let _ = writeln!(out, "  behaviour: NM abstains on {:.1} %; Elim removes {:.2} options/task, the key in {:.1} %; CBM confidence 1/2/3: {:.1}/{:.1}/{:.1} %; AUC attempts {:.2}",
            100.0 * b.abstention_rate, b.mean_eliminated, 100.0 * b.key_eliminated_rate,
            100.0 * b.confidence_histogram[0], 100.0 * b.confidence_histogram[1], 100.0 * b.confidence_histogram[2], b.mean_attempts);
        let _ = writeln!(
            out,
            "  consistency: NR's pick survives elimination in {:.1} %, holds the largest PPA mass in {:.1} %",
            100.0 * b.pick_not_eliminated_rate,
            100.0 * b.pick_holds_max_mass_rate
        );
        let c = &m.calibration;
        let _ = writeln!(
            out,
            "  calibration: ECE {:.4} ({ECE_BINS} bins), Brier {:.4} (reliability {:.4} − resolution {:.4} + uncertainty {:.4})",
            c.ece, c.brier, c.reliability, c.resolution, c.uncertainty
        );
        if let Some(groups) = &m.groups {
            out.push_str(&crate::text::groups_table(groups));
        }
    }
    if !report.rankings.is_empty() {
        let _ = writeln!(
            out,
            "\nranks per scheme (1 = best, 95 % bootstrap interval); Spearman ρ and Kendall τ with NR's ranking ± bootstrap SE"
        );
        let names: Vec<std::borrow::Cow<'_, str>> = report.models.iter().map(|m| printable(&m.label)).collect();
        let _ =
            writeln!(out, "  runs: {}", names.iter().enumerate().map(|(i, n)| format!("#{} {n}", i + 1)).collect::<Vec<_>>().join(", "));
        let correlation = |value: Option<f64>, se: Option<f64>| match (value, se) {
            (Some(v), Some(se)) => format!("{v:.3} ± {se:.3}"),
            (Some(v), None) => format!("{v:.3}"),
            _ => "undefined".to_owned(),
        };
        for r in &report.rankings {
            if r.tied {
                let _ = writeln!(out, "    {:<10} every run scores the same: no ranking", r.scheme);
                continue;
            }
            let ranks: Vec<String> =
                r.ranks.iter().zip(&r.rank_intervals).map(|(x, (low, high))| format!("{x:.1} [{low}–{high}]")).collect();
            let _ = writeln!(
                out,
                "    {:<10} ranks {}   ρ = {}   τ = {}",
                r.scheme,
                ranks.join("  "),
                correlation(r.spearman_vs_nr, r.spearman_se),
                correlation(r.kendall_vs_nr, r.kendall_se)
            );
        }
        if report.rankings.iter().any(|r| r.spearman_vs_nr.is_none() && !r.tied) {
            let _ = writeln!(out, "  (undefined: NR gives every run the same score, so nothing correlates with its ranking)");
        }
    }
    out
}
