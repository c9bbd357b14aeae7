//! `score` with several models or task files: each model on each file in
//! turn, then the table of models × files; and the tables of one run
//! (`--format csv|markdown|latex`).

use std::path::{Path, PathBuf};

use mcscore_engine::{QuantOptions, QuantType};

use mcscore_eval::many::{Grid, RunsSummary};
use mcscore_eval::results::RunSummary;
use mcscore_eval::{End, EvalError};

use super::{prepare, run_groups, Args, OutputFormat};
use crate::run_text::Shown;
use crate::table::{Cell, Table, TableFormat};
use crate::text::printable;
use crate::{output, Outcome, UsageError};

/// A finished run: what it scored, with what, its groups' accuracies and its log.
struct Done {
    outcome: mcscore_eval::ScoreOutcome,
    settings: mcscore_engine::Settings,
    groups: Option<mcscore_eval::results::GroupAccuracies>,
    log: Option<PathBuf>,
}

/// Scores every model on every file, each run as `score` scores one (its
/// log `MODEL.FILE.jsonl` in the --log-samples folder), then prints the table.
pub(super) fn run(args: &Args, models: &[PathBuf], files: &[PathBuf]) -> anyhow::Result<Outcome> {
    if !args.quantize.is_empty() && models.len() != 1 {
        return Err(UsageError(format!("--quantize quantizes one model: give one -m, not {}", models.len())).into());
    }
    let refused = [
        (args.format == OutputFormat::Llama, "--format llama (llama-perplexity's output is of one run)"),
        (args.format == OutputFormat::LmEval, "--format lm-eval (score each file `build --lm-eval` wrote alone)"),
        (args.shard.is_some(), "--shard (a shard is part of one run)"),
        (args.lm_eval_samples.is_some(), "--lm-eval-samples"),
        (args.timings, "--timings (score one file alone for its timings)"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(UsageError(format!("several models or task files do not go with {flag}")).into());
    }
    let norm = normalisation(args);
    if norm == mcscore_metrics::Normalisation::AccPmi && !args.pmi {
        return Err(UsageError("--normalisation acc-pmi needs --pmi (the unconditional pass acc_pmi comes from)".into()).into());
    }
    if let Some(twice) = args.quantize.iter().enumerate().find_map(|(k, t)| args.quantize[..k].contains(t).then_some(t)) {
        return Err(UsageError(format!("--quantize {}: given twice; give each type once", twice.name())).into());
    }
    let file_labels = labels(files, "-bf")?;
    if let Some(manifest) = args.manifest.as_deref() {
        crate::compare::check_named_manifest(manifest)?;
    }
    if let Some(dir) = &args.log_samples {
        output::check_dir(dir, "--log-samples")?;
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: --log-samples: {e}", dir.display()))?;
    }
    // The quants' names first: every name and log is checked before minutes of quantizing.
    let quants: Vec<PathBuf> = match &args.log_samples {
        Some(dir) => args.quantize.iter().map(|t| quant_path(&models[0], dir, *t)).collect(),
        None => Vec::new(),
    };
    let models: Vec<PathBuf> = models.iter().chain(&quants).cloned().collect();
    let models = models.as_slice();
    let model_labels = labels(models, "-m")?;
    let runs: Vec<(usize, usize)> = (0..models.len()).flat_map(|m| (0..files.len()).map(move |f| (m, f))).collect();
    // Each run's log, checked before anything is scored: one name per run,
    // and an existing log only with --resume.
    let logs: Vec<Option<PathBuf>> = runs
        .iter()
        .map(|&(m, f)| -> anyhow::Result<Option<PathBuf>> {
            let Some(dir) = &args.log_samples else { return Ok(None) };
            let log = dir.join(format!("{}.{}.jsonl", model_labels[m], file_labels[f]));
            output::check_log(&log, "--log-samples", &[&files[f], &models[m]])?;
            if log.exists() && !args.resume {
                return Err(UsageError(format!(
                    "{}: --log-samples: the log of {} on {} exists; add --resume to continue it, or give another folder",
                    log.display(),
                    printable(&model_labels[m]),
                    printable(&file_labels[f])
                ))
                .into());
            }
            Ok(Some(log))
        })
        .collect::<anyhow::Result<_>>()?;
    if let Some((k, log)) =
        logs.iter().enumerate().find_map(|(k, l)| l.as_ref().filter(|l| logs[..k].contains(&Some(l.to_path_buf()))).map(|l| (k, l)))
    {
        let (m, f) = runs[k];
        return Err(UsageError(format!(
            "{}: --log-samples: two runs would share this log ({} on {} and another); rename a model or a file",
            log.display(),
            printable(&model_labels[m]),
            printable(&file_labels[f])
        ))
        .into());
    }
    if let Some(dir) = args.log_samples.as_deref().filter(|_| !quants.is_empty()) {
        quantize(args, &models[0], dir)?;
    }
    let cancel = crate::signals::cancel_on_signal();
    let mut done = Vec::new();
    for (k, (&(m, f), log)) in runs.iter().zip(logs).enumerate() {
        eprintln!("mcscore: run {} of {}: {} on {}", k + 1, runs.len(), printable(&model_labels[m]), printable(&file_labels[f]));
        let (job, settings, found) = prepare(args, &models[m], &files[f], log.clone(), args.pmi, None)?;
        let mut shown = Shown::new(args.progress, None);
        let outcome = job.run(&mut shown, &cancel).map_err(|e| match e {
            EvalError::Consumer(e) => anyhow::anyhow!("{}", crate::with_causes(&*e)),
            e => e.into(),
        })?;
        if outcome.end == End::Interrupted {
            eprintln!(
                "mcscore: {} in run {} of {} ({} on {}), after {} of its {} tasks; {} run(s) finished{}",
                crate::signals::interrupted(),
                k + 1,
                runs.len(),
                printable(&model_labels[m]),
                printable(&file_labels[f]),
                outcome.records.len(),
                outcome.header.tasks,
                k,
                if args.log_samples.is_some() { "; the same command with --resume continues" } else { "" }
            );
            return Ok(Outcome::Interrupted);
        }
        let groups = run_groups(args, &outcome, &files[f], found);
        if let Some(a) = mcscore_eval::results::accuracies(&outcome.records).get(norm.name()) {
            eprintln!(
                "mcscore: {} on {}: {} {:.2} % over {} tasks ({:.1} s)",
                printable(&model_labels[m]),
                printable(&file_labels[f]),
                norm.name(),
                100.0 * a.accuracy,
                outcome.records.len(),
                outcome.wall_seconds
            );
        }
        done.push(Done { outcome, settings, groups, log });
    }
    let summaries: Vec<RunSummary<'_>> =
        done.iter().map(|d| RunSummary::new(&d.outcome, &d.settings, args.lenient, d.groups.clone(), false)).collect();
    let mut summary = RunsSummary::new(summaries, norm);
    if !quants.is_empty() {
        summary.comparisons = comparisons(args, &done, files, &model_labels)?;
    }
    if args.json {
        crate::print_json(&summary)?;
    } else if let Some(format) = args.format.table() {
        // CSV: one table, a row per run with its comparison beside it; for
        // reading: the table, then each file's comparison under its name.
        let mut tables = vec![("accuracy of each model on each file".to_owned(), grid_table(&summary, format))];
        if format != crate::table::TableFormat::Csv {
            tables.extend(
                summary
                    .comparisons
                    .iter()
                    .map(|c| (format!("{}: each quant against the model", mcscore_eval::log::label(&c.file)), crate::compare::table(c))),
            );
        }
        out!("{}", crate::table::render_all(&tables, format))?;
    } else {
        for c in &summary.comparisons {
            for p in &c.others {
                outln!("{}: {}", printable(&mcscore_eval::log::label(&c.file)), crate::compare::headline(c, p))?;
            }
        }
        if let Some(dir) = args.log_samples.as_deref().filter(|_| !summary.comparisons.is_empty()) {
            outln!("(each in full: `mcscore compare` on the logs in {}, the model's first; --json holds them all)\n", dir.display())?;
        }
        out!("{}", grid_text(&summary.table))?;
    }
    Ok(Outcome::Ok)
}

/// The normalisation of the table and the comparisons (--normalisation; acc_norm by default).
fn normalisation(args: &Args) -> mcscore_metrics::Normalisation {
    args.normalisation.map_or(mcscore_metrics::Normalisation::AccNorm, Into::into)
}

/// Where --quantize writes `base` quantized as `quant`: `MODEL.TYPE.gguf` in the study's folder.
fn quant_path(base: &Path, dir: &Path, quant: QuantType) -> PathBuf {
    dir.join(format!("{}.{}.gguf", mcscore_eval::log::label(&base.to_string_lossy()), quant.name()))
}

/// What a study's quant was made from, recorded beside it (`quants.json`),
/// so that a resumed study reuses only its own quants.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct QuantSource {
    base_sha256: String,
    quant: String,
    imatrix_sha256: Option<String>,
}

/// The record of the quants a study made, by file name.
const QUANTS: &str = "quants.json";

/// Quantizes `base` into each --quantize type in `dir`, reusing a quant this
/// study made before from the same model and importance matrix, and
/// refusing a file of that name it did not make.
fn quantize(args: &Args, base: &Path, dir: &Path) -> anyhow::Result<()> {
    if let Some(t) = args.quantize.iter().find(|t| t.needs_imatrix() && args.imatrix.is_none()) {
        return Err(UsageError(format!(
            "--quantize {}: this type needs an importance matrix (--imatrix FILE, as llama-imatrix writes it)",
            t.name()
        ))
        .into());
    }
    let sha256 = |path: &Path| mcscore_format::sha256_file(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()));
    let base_sha256 = sha256(base)?;
    let imatrix_sha256 = args.imatrix.as_deref().map(sha256).transpose()?;
    let imatrix = args.imatrix.as_deref().map(mcscore_engine::read_imatrix).transpose()?;
    let record_path = dir.join(QUANTS);
    let mut record: std::collections::BTreeMap<String, QuantSource> = match std::fs::read(&record_path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| anyhow::anyhow!("{}: not a record of quants: {e}", record_path.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Default::default(),
        Err(e) => anyhow::bail!("{}: {e}", record_path.display()),
    };
    let options = QuantOptions { threads: args.engine.threads().unwrap_or(0), imatrix, ..QuantOptions::default() };
    for &quant in &args.quantize {
        let path = quant_path(base, dir, quant);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let source =
            QuantSource { base_sha256: base_sha256.clone(), quant: quant.name().to_owned(), imatrix_sha256: imatrix_sha256.clone() };
        if path.exists() {
            if record.get(&name) == Some(&source) {
                eprintln!("mcscore: {} is this study's {} quant of {}: reused", path.display(), quant.name(), base.display());
                continue;
            }
            anyhow::bail!(
                "{}: exists, but {} does not record it as {} quantized from {} with this importance matrix; remove it or give another --log-samples folder",
                path.display(),
                record_path.display(),
                quant.name(),
                base.display()
            );
        }
        // Recorded before the quant is renamed into place: a stop between the
        // two leaves a record of a quant not there, which is made again.
        record.insert(name, source);
        let text = serde_json::to_vec_pretty(&record)?;
        mcscore_format::write_atomic(&record_path, &text).map_err(|e| anyhow::anyhow!("{}: {e}", record_path.display()))?;
        crate::quantize::write(base, &path, mcscore_format::Existing::Refuse, quant, &options)?;
    }
    Ok(())
}

/// Each file's runs of the quants against the model's (the first), as
/// `mcscore compare` compares logs.
fn comparisons(
    args: &Args,
    done: &[Done],
    files: &[PathBuf],
    model_labels: &[String],
) -> anyhow::Result<Vec<mcscore_eval::compare::Comparison>> {
    // compare's defaults (margin ±1 point, α 0.05, 1,000 resamples, seed 1) under the normalisation asked for.
    let mut options = mcscore_eval::compare::CompareOptions::default();
    options.normalisation = normalisation(args);
    let run = |k: usize, m: usize| mcscore_eval::run::Run {
        label: model_labels[m].clone(),
        source: done[k].log.clone().unwrap_or_default(),
        header: done[k].outcome.header.clone(),
        records: done[k].outcome.records.clone(),
    };
    (0..files.len())
        .map(|f| {
            // Runs are model-major: model m on file f is run m × files + f.
            let base = run(f, 0);
            let others: Vec<_> = (1..model_labels.len()).map(|m| run(m * files.len() + f, m)).collect();
            let groups = crate::compare::file_groups(&files[f], args.manifest.as_deref())?;
            Ok(mcscore_eval::compare::compare(&base, &others, groups.as_ref(), &options)?)
        })
        .collect()
}

/// Each path's label (its file stem), refusing a path given twice and two
/// paths under one label: the table's rows or columns, and the logs' names.
fn labels(paths: &[PathBuf], flag: &str) -> Result<Vec<String>, UsageError> {
    let labels: Vec<String> = paths.iter().map(|p| mcscore_eval::log::label(&p.to_string_lossy())).collect();
    for (k, label) in labels.iter().enumerate() {
        if let Some(j) = labels[..k].iter().position(|l| l == label) {
            let same = crate::output::same_path(&paths[j], &paths[k]);
            return Err(UsageError(if same {
                format!("{flag} {}: given twice; give each once", paths[k].display())
            } else {
                format!(
                    "{flag} {} and {}: both are labelled {} in the table and the logs; give files with different names",
                    paths[j].display(),
                    paths[k].display(),
                    printable(label)
                )
            }));
        }
    }
    Ok(labels)
}

/// The table of several runs: CSV's long (a row per run, fractions and
/// standard errors), Markdown's and LaTeX's wide (a row per model, a
/// column per file, accuracy ± standard error in percent, and the mean).
fn grid_table(summary: &RunsSummary<'_>, format: TableFormat) -> Table {
    let grid = &summary.table;
    if format == TableFormat::Csv {
        let mut t = Table::new([
            "model",
            "file",
            "tasks",
            "normalisation",
            "accuracy",
            "stderr",
            "difference",
            "ci_low",
            "ci_high",
            "verdict",
            "mcnemar_p",
            "file_sha256",
            "model_sha256",
        ]);
        for r in &summary.runs {
            let a = r.metrics.get(grid.normalisation);
            // With --quantize, a quant's row carries its comparison with the model on that file.
            let pairing = summary
                .comparisons
                .iter()
                .filter(|c| c.file_sha256 == r.file_sha256)
                .flat_map(|c| &c.others)
                .find(|p| p.other.model == r.model);
            let d = pairing.map(|p| &p.difference);
            t.row(vec![
                Cell::text(mcscore_eval::log::label(r.model)),
                Cell::text(mcscore_eval::log::label(r.file)),
                Cell::Count(r.tasks as u64),
                Cell::text(grid.normalisation),
                a.map_or(Cell::Empty, |a| Cell::Fraction(a.accuracy)),
                a.and_then(|a| a.stderr).map_or(Cell::Empty, Cell::Fraction),
                d.map_or(Cell::Empty, |d| Cell::Fraction(d.estimate)),
                d.map_or(Cell::Empty, |d| Cell::Fraction(d.interval.0)),
                d.map_or(Cell::Empty, |d| Cell::Fraction(d.interval.1)),
                pairing.map_or(Cell::Empty, |p| Cell::text(p.verdict.name())),
                pairing.map_or(Cell::Empty, |p| Cell::P(p.mcnemar.p)),
                Cell::text(r.file_sha256),
                Cell::text(r.model_sha256),
            ]);
        }
        return t;
    }
    let columns = std::iter::once("model".to_owned()).chain(grid.benchmarks.iter().cloned()).chain(["mean".to_owned()]);
    let mut t = Table::new(columns);
    for (m, model) in grid.models.iter().enumerate() {
        let cells = grid.cells[m].iter().map(|c| c.map_or(Cell::Empty, |a| Cell::Estimate(a.accuracy, a.stderr)));
        t.row(std::iter::once(Cell::text(model)).chain(cells).chain([grid.mean[m].map_or(Cell::Empty, Cell::Fraction)]).collect());
    }
    t
}

/// The table of several runs for people: the normalisation first, then a
/// row per model.
fn grid_text(grid: &Grid) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} of {} model{} on {} task file{} (%, ± standard error; mean: each file once)",
        grid.normalisation,
        grid.models.len(),
        if grid.models.len() == 1 { "" } else { "s" },
        grid.benchmarks.len(),
        if grid.benchmarks.len() == 1 { "" } else { "s" }
    );
    // As the Markdown and LaTeX tables write a cell (the header says percent).
    let cell = |a: &Option<mcscore_eval::results::Accuracy>| a.map_or("-".to_owned(), |a| Cell::Estimate(a.accuracy, a.stderr).shown(true));
    let model_width = grid.models.iter().map(|m| printable(m).chars().count()).max().unwrap_or(0).max(5);
    let widths: Vec<usize> = grid
        .benchmarks
        .iter()
        .enumerate()
        .map(|(b, name)| {
            grid.cells.iter().map(|row| cell(&row[b]).chars().count()).chain([printable(name).chars().count()]).max().unwrap_or(0)
        })
        .collect();
    let _ = write!(out, "  {:<model_width$}", "model");
    for (name, width) in grid.benchmarks.iter().zip(&widths) {
        let _ = write!(out, "  {:>width$}", printable(name));
    }
    let _ = writeln!(out, "  {:>6}", "mean");
    for (m, model) in grid.models.iter().enumerate() {
        let _ = write!(out, "  {:<model_width$}", printable(model));
        for (c, width) in grid.cells[m].iter().zip(&widths) {
            let _ = write!(out, "  {:>width$}", cell(c));
        }
        let _ = writeln!(out, "  {:>6}", grid.mean[m].map_or("-".to_owned(), |x| format!("{:.2}", 100.0 * x)));
    }
    out
}

/// What the tables of one run show: a scored run's summary, or merged shards'.
pub(crate) struct OneRun<'a> {
    pub(crate) model: &'a str,
    pub(crate) file: &'a str,
    pub(crate) tasks: usize,
    pub(crate) metrics: &'a mcscore_eval::results::ByName<mcscore_eval::results::Accuracy>,
    pub(crate) chance: f64,
    pub(crate) majority_class: f64,
    pub(crate) groups: Option<&'a mcscore_eval::results::GroupAccuracies>,
}

impl<'a> From<&'a RunSummary<'a>> for OneRun<'a> {
    fn from(r: &'a RunSummary<'a>) -> OneRun<'a> {
        OneRun {
            model: r.model,
            file: r.file,
            tasks: r.tasks,
            metrics: &r.metrics,
            chance: r.chance,
            majority_class: r.majority_class,
            groups: r.groups.as_ref(),
        }
    }
}

/// The table of one run: its accuracy under each normalisation, the
/// baselines, and its accuracy per category and group where the groups are
/// known, one row each (`scope` says which), so that CSV holds one table.
pub(crate) fn run_table(r: &OneRun<'_>) -> Table {
    let mut t = Table::with_detail([
        ("model", true),
        ("file", true),
        ("scope", true),
        ("name", true),
        ("normalisation", false),
        ("tasks", true),
        ("accuracy", true),
        ("stderr", true),
        ("ci_low", true),
        ("ci_high", true),
        ("correct", false),
    ]);
    let head = || [Cell::text(mcscore_eval::log::label(r.model)), Cell::text(mcscore_eval::log::label(r.file))];
    let tasks = Cell::Count(r.tasks as u64);
    for (name, a) in r.metrics.0.iter() {
        let stderr = a.stderr.map_or(Cell::Empty, Cell::Fraction);
        let rest = [Cell::text(name), tasks.clone(), Cell::Fraction(a.accuracy), stderr, Cell::Empty, Cell::Empty];
        t.row(head().into_iter().chain([Cell::text("run"), Cell::text(name)]).chain(rest).chain([Cell::Count(a.correct as u64)]).collect());
    }
    for (name, value) in [("chance", r.chance), ("majority_class", r.majority_class)] {
        let rest = [Cell::Empty, tasks.clone(), Cell::Fraction(value), Cell::Empty, Cell::Empty, Cell::Empty, Cell::Empty];
        t.row(head().into_iter().chain([Cell::text("baseline"), Cell::text(name)]).chain(rest).collect());
    }
    if let Some(g) = r.groups {
        for (scope, rows) in [("category", &g.categories), ("group", &g.groups)] {
            for row in rows {
                t.row(
                    head()
                        .into_iter()
                        .chain([
                            Cell::text(scope),
                            Cell::text(&*row.name),
                            Cell::text(g.normalisation),
                            Cell::Count(row.tasks as u64),
                            Cell::Fraction(row.accuracy),
                            Cell::Empty,
                            Cell::Fraction(row.low),
                            Cell::Fraction(row.high),
                            Cell::Count(row.correct as u64),
                        ])
                        .collect(),
                );
            }
        }
    }
    t
}
