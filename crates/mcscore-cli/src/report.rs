//! `mcscore report`: what accuracy alone hides, from `--log-samples` files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mcscore_metrics::calibration::{Calibration, ECE_BINS};
use mcscore_metrics::schemes::{Behaviour, Scheme, TaskProbs};
use mcscore_metrics::stats::{kendall, spearman, std_dev, Bootstrap, Estimate};
use mcscore_metrics::Normalisation;
use serde::Serialize;

use crate::samples::{self, Header, TaskRecord};
use crate::Outcome;

/// Report every normalisation and scoring scheme, with 95 % bootstrap
/// intervals, behaviour rates and calibration, for one or more models' logs
/// of the same dataset (checked by its sha256). With several models, each
/// scheme's ranking and its Spearman correlation with NR's (± bootstrap SE).
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
    #[arg(long, value_name = "TAU", value_parser = parse_probability)]
    tau: Option<f64>,
    /// Elim's elimination threshold ε, a probability in [0, 1]: eliminate options
    /// with p < ε (default 1/k).
    #[arg(long, value_name = "EPSILON", value_parser = parse_probability)]
    epsilon: Option<f64>,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    resamples: u32,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV (one row per model and metric) instead of text.
    #[arg(long)]
    csv: bool,
    /// Write SVGs: a reliability diagram per model and a scheme × model rank heatmap.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
}

fn parse_probability(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("expected a probability between 0 and 1, such as 0.25; got {text:?}")),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum NormArg {
    Acc,
    AccNorm,
    AccChar,
    AccByte,
    /// Needs logs of `score --pmi`.
    AccPmi,
}

impl From<NormArg> for Normalisation {
    fn from(n: NormArg) -> Self {
        match n {
            NormArg::Acc => Normalisation::Acc,
            NormArg::AccNorm => Normalisation::AccNorm,
            NormArg::AccChar => Normalisation::AccChar,
            NormArg::AccByte => Normalisation::AccByte,
            NormArg::AccPmi => Normalisation::AccPmi,
        }
    }
}

#[derive(Serialize)]
struct ModelReport {
    label: String,
    log: String,
    model_sha256: String,
    settings: String,
    tasks: usize,
    /// Accuracy (%) of each normalisation.
    normalisations: Vec<(String, Estimate)>,
    /// Mean score of each scheme.
    schemes: Vec<(String, Estimate)>,
    behaviour: Behaviour,
    calibration: Calibration,
}

#[derive(Serialize)]
struct Ranking {
    scheme: String,
    /// Rank of each model (1 = best), in model order.
    ranks: Vec<f64>,
    spearman_vs_nr: f64,
    spearman_se: f64,
    kendall_vs_nr: f64,
    kendall_se: f64,
}

#[derive(Serialize)]
struct Report {
    file: String,
    file_sha256: String,
    normalisation: &'static str,
    resamples: u32,
    seed: u64,
    models: Vec<ModelReport>,
    rankings: Vec<Ranking>,
}

struct Run {
    path: PathBuf,
    header: Header,
    records: Vec<TaskRecord>,
}

fn load(paths: &[PathBuf]) -> anyhow::Result<Vec<Run>> {
    let mut runs: Vec<Run> = Vec::new();
    for path in paths {
        let samples::Contents { header, records, .. } = samples::read(path)?;
        if records.len() != header.tasks {
            bail!(
                "{}: {} of {} announced tasks are logged: the run is incomplete (finish it with `mcscore score ... --resume`)",
                path.display(),
                records.len(),
                header.tasks
            );
        }
        if let Some(first) = runs.first() {
            if header.file_sha256 != first.header.file_sha256 {
                bail!(
                    "{}: scored {} (sha256 {}), but {} scored {} (sha256 {}): a report compares runs on the same dataset",
                    path.display(),
                    header.file,
                    header.file_sha256,
                    first.path.display(),
                    first.header.file,
                    first.header.file_sha256
                );
            }
            let same_tasks = records.iter().map(|r| r.task).eq(first.records.iter().map(|r| r.task));
            if !same_tasks {
                bail!(
                    "{}: scored other tasks (or another order) than {}; use the same --multiple-choice-tasks",
                    path.display(),
                    first.path.display()
                );
            }
        }
        runs.push(Run { path: path.clone(), header, records });
    }
    Ok(runs)
}

/// Model file names, made unique with the settings where they repeat.
fn labels(runs: &[Run]) -> Vec<String> {
    let stem =
        |r: &Run| Path::new(&r.header.model).file_stem().map_or_else(|| r.header.model.clone(), |s| s.to_string_lossy().into_owned());
    runs.iter()
        .map(|r| {
            let repeated = runs.iter().filter(|o| stem(o) == stem(r)).count() > 1;
            if repeated {
                format!("{} [{}]", stem(r), r.header.settings)
            } else {
                stem(r)
            }
        })
        .collect()
}

/// Ranks (1 = best) with ties sharing the mean rank.
fn ranks_desc(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .map(|&v| {
            let better = values.iter().filter(|&&o| o > v).count() as f64;
            let equal = values.iter().filter(|&&o| o == v).count() as f64;
            better + (equal + 1.0) / 2.0
        })
        .collect()
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    if let Some(dir) = &args.plots {
        crate::output::check_dir(dir, "--plots")?;
    }
    let runs = load(&args.logs)?;
    let norm: Normalisation = args.normalisation.into();
    let n = runs[0].records.len();
    let bootstrap = Bootstrap { n, resamples: args.resamples as usize, seed: args.seed };
    let labels = labels(&runs);
    let schemes_used: Vec<Scheme> = Scheme::DEFAULTS
        .iter()
        .map(|&s| match s {
            Scheme::Nm { .. } => Scheme::Nm { tau: args.tau },
            Scheme::Elim { .. } => Scheme::Elim { epsilon: args.epsilon },
            Scheme::ElimNm { .. } => Scheme::ElimNm { epsilon: args.epsilon },
            other => other,
        })
        .collect();

    // Per model: each scheme's mean overall, and under each resample.
    let mut scheme_means: Vec<Vec<f64>> = Vec::new();
    let mut scheme_draws: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut models = Vec::new();
    for (run, label) in runs.iter().zip(&labels) {
        if norm == Normalisation::AccPmi && !samples::normalisations(&run.records).contains(&Normalisation::AccPmi) {
            bail!("{}: --normalisation acc-pmi needs a log of `mcscore score --pmi`", run.path.display());
        }
        let probs: Vec<TaskProbs> = run
            .records
            .iter()
            .map(|r| {
                let scores: Vec<f64> = r.options.iter().map(|o| norm.score(o)).collect();
                let key =
                    r.gold.with_context(|| format!("{}: task {} has no gold option (a --lenient run)", run.path.display(), r.task))?;
                Ok(TaskProbs::from_scores(&scores, key))
            })
            .collect::<anyhow::Result<_>>()?;
        let norms = samples::normalisations(&run.records);
        let hits: Vec<Vec<f64>> =
            norms.iter().map(|&nm| run.records.iter().map(|r| 100.0 * f64::from(u8::from(r.correct.get(nm)))).collect()).collect();
        let per_scheme: Vec<Vec<f64>> = schemes_used.iter().map(|s| probs.iter().map(|t| s.score(t)).collect()).collect();
        let columns: Vec<&[f64]> = hits.iter().chain(&per_scheme).map(Vec::as_slice).collect();
        let (estimates, draws) = bootstrap.estimates(&columns);
        let n_norm = norms.len();
        let normalisations = norms.iter().zip(&estimates).map(|(nm, e)| (nm.name().to_owned(), *e)).collect();
        let schemes: Vec<(String, Estimate)> =
            schemes_used.iter().zip(&estimates[n_norm..]).map(|(s, e)| (s.name().to_owned(), *e)).collect();
        scheme_means.push(schemes.iter().map(|(_, e)| e.mean).collect());
        scheme_draws.push(draws.iter().map(|d| d[n_norm..].to_vec()).collect());
        models.push(ModelReport {
            label: label.clone(),
            log: run.path.display().to_string(),
            model_sha256: run.header.model_sha256.clone(),
            settings: run.header.settings.clone(),
            tasks: n,
            normalisations,
            schemes,
            behaviour: Behaviour::of(&probs),
            calibration: Calibration::of(&probs, ECE_BINS),
        });
    }

    let mut rankings = Vec::new();
    if runs.len() > 1 {
        let models = 0..runs.len();
        for (s, scheme) in schemes_used.iter().enumerate() {
            let means: Vec<f64> = models.clone().map(|m| scheme_means[m][s]).collect();
            let nr: Vec<f64> = models.clone().map(|m| scheme_means[m][0]).collect();
            let (boot_rho, boot_tau): (Vec<f64>, Vec<f64>) = (0..bootstrap.resamples)
                .map(|r| {
                    let a: Vec<f64> = models.clone().map(|m| scheme_draws[m][r][s]).collect();
                    let b: Vec<f64> = models.clone().map(|m| scheme_draws[m][r][0]).collect();
                    (spearman(&a, &b), kendall(&a, &b))
                })
                .unzip();
            rankings.push(Ranking {
                scheme: scheme.name().to_owned(),
                ranks: ranks_desc(&means),
                spearman_vs_nr: spearman(&means, &nr),
                spearman_se: std_dev(&boot_rho),
                kendall_vs_nr: kendall(&means, &nr),
                kendall_se: std_dev(&boot_tau),
            });
        }
    }

    let report = Report {
        file: runs[0].header.file.clone(),
        file_sha256: runs[0].header.file_sha256.clone(),
        normalisation: norm.name(),
        resamples: args.resamples,
        seed: args.seed,
        models,
        rankings,
    };
    // Printed before the plots are written, so a plot that cannot be written
    // (a full disk) loses nothing else.
    if args.json {
        crate::print_json(&report)?;
    } else if args.csv {
        out!("{}", csv(&report))?;
    } else {
        out!("{}", text(&report))?;
    }
    if let Some(dir) = &args.plots {
        crate::plots::write(
            dir,
            &report.models.iter().map(|m| (m.label.as_str(), &m.calibration)).collect::<Vec<_>>(),
            &report.rankings.iter().map(|r| (r.scheme.as_str(), r.ranks.as_slice())).collect::<Vec<_>>(),
            &labels,
        )?;
    }
    Ok(Outcome::Ok)
}

fn csv(report: &Report) -> String {
    let mut out = String::from("model,kind,metric,value,ci_low,ci_high\n");
    for m in &report.models {
        let label = m.label.replace('"', "\"\"");
        for (kind, rows) in [("normalisation", &m.normalisations), ("scheme", &m.schemes)] {
            for (name, e) in rows {
                let _ = writeln!(out, "\"{label}\",{kind},{name},{},{},{}", e.mean, e.low, e.high);
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
            let _ = writeln!(out, "\"{label}\",calibration,{name},{value},,");
        }
    }
    for r in &report.rankings {
        let _ = writeln!(
            out,
            "all,ranking,spearman_vs_nr:{},{},{},{}",
            r.scheme,
            r.spearman_vs_nr,
            r.spearman_vs_nr - 1.96 * r.spearman_se,
            r.spearman_vs_nr + 1.96 * r.spearman_se
        );
        let _ = writeln!(
            out,
            "all,ranking,kendall_vs_nr:{},{},{},{}",
            r.scheme,
            r.kendall_vs_nr,
            r.kendall_vs_nr - 1.96 * r.kendall_se,
            r.kendall_vs_nr + 1.96 * r.kendall_se
        );
    }
    out
}

fn text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} tasks, p = softmax of {}, 95 % bootstrap intervals ({} resamples, seed {})",
        report.file, report.models[0].tasks, report.normalisation, report.resamples, report.seed
    );
    for m in &report.models {
        let _ = writeln!(out, "\n{}", m.label);
        if !m.label.contains(&m.settings) {
            let _ = writeln!(out, "  settings: {}", m.settings);
        }
        let _ = writeln!(out, "  accuracy (%)");
        for (name, e) in &m.normalisations {
            let _ = writeln!(out, "    {name:<10} {:>7.2}  [{:.2}, {:.2}]", e.mean, e.low, e.high);
        }
        let _ = writeln!(out, "  schemes (mean score per task)");
        for (name, e) in &m.schemes {
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
    }
    if !report.rankings.is_empty() {
        let _ = writeln!(out, "\nmodel ranks per scheme (1 = best); Spearman ρ and Kendall τ with NR's ranking ± bootstrap SE");
        let names: Vec<&str> = report.models.iter().map(|m| m.label.as_str()).collect();
        let _ =
            writeln!(out, "  models: {}", names.iter().enumerate().map(|(i, n)| format!("#{} {n}", i + 1)).collect::<Vec<_>>().join(", "));
        for r in &report.rankings {
            let ranks: Vec<String> = r.ranks.iter().map(|x| format!("{x:.1}")).collect();
            let _ = writeln!(
                out,
                "    {:<10} ranks {:<20} ρ = {:.3} ± {:.3}   τ = {:.3} ± {:.3}",
                r.scheme,
                ranks.join(" "),
                r.spearman_vs_nr,
                r.spearman_se,
                r.kendall_vs_nr,
                r.kendall_se
            );
        }
    }
    out
}
