//! `mcscore sweep`: accuracy under each prompt format of methods.md (option-ID
//! set × delimiter × separator) and each cyclic rotation of the options, and
//! how much of a result, or of a model ranking, is the format's doing.

use std::collections::HashSet;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use mcscore_datasets::formats::{parse_letter_task, PromptFormat};
use mcscore_datasets::{find, load_items, Item};
use mcscore_engine::{plan, Completion, Engine, EngineError, TokenCounts};
use mcscore_format::{sha256_hex, write_tasks, AtomicFile, Task, TaskFile};
use mcscore_metrics::robustness::{self, PairRecord};
use mcscore_metrics::stats::{std_dev, SplitMix64};
use mcscore_metrics::{debias, first_max};
use serde::{Deserialize, Serialize};

use crate::datasets::SourceArgs;
use crate::engine_args::{self, EngineArgs};
use crate::output::{self, WriteLock};
use crate::score::task_progress;
use crate::{defaults, plots, Outcome};

const EXAMPLES: &str = "\
Examples:
  mcscore sweep datasets/mmlu-validation.bin --tasks 200 --circular
  mcscore sweep -m a.gguf -m b.gguf datasets/mmlu-validation.bin --circular --plots out/ --json
  mcscore sweep --benchmark mmlu-validation --sources ../data/sources --pride 0.05
  mcscore sweep datasets/mmlu-validation.bin --formats upper.dot.newline,roman.parens.comma
  mcscore sweep datasets/mmlu-validation.bin --write-tasks formats/   (one .bin per format, no scoring)
  mcscore sweep --compare a.json b.json --plots out/   (sweeps saved with --save-json, side by side)

Formats are named ids.delimiter.separator: ids upper|lower|digit|roman, delimiter
colon (A:) | dot (A.) | paren (A)) | parens ((A)), separator newline|comma|semicolon.
upper.dot.newline is the letter scaffold of task-format.md. Prompts that share a
question stem share its evaluation, so 48 formats × 4 rotations cost far less than
192 runs; the summary says how many tokens were decoded against a naive run.";

/// Score a letter-mode benchmark under many prompt formats and option orders.
///
/// Each item is re-rendered in every chosen format (option-ID set, delimiter,
/// separator; methods.md) and, with --circular, every cyclic rotation of its
/// options. Per format: accuracy, circular accuracy (right under every
/// rotation), the histogram of picked positions, RStd and PIA. Across formats:
/// mean, std, min, max. With several -m: each model's rank distribution over
/// formats, rank reversals and Kendall τ between formats. Items are parsed back
/// from a letter-mode task file in the scaffold of task-format.md, or read from
/// a benchmark's source (--benchmark).
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Letter-mode task file (.bin) written in the letter scaffold of task-format.md.
    #[arg(value_name = "FILE", required_unless_present_any = ["benchmark", "compare"], conflicts_with = "benchmark")]
    file: Option<PathBuf>,
    /// Instead of scoring: report sweeps saved with --save-json (one, to render
    /// it again; several side by side, with rank distributions, reversals and
    /// Kendall τ), e.g. sweeps of models run apart.
    #[arg(long, value_name = "SWEEP.json", num_args = 1.., conflicts_with_all = ["file", "benchmark", "models", "write_tasks", "log_samples"])]
    compare: Vec<PathBuf>,
    /// Instead of FILE: a benchmark's items from its source (see `mcscore build --list`).
    #[arg(long, value_name = "NAME")]
    benchmark: Option<String>,
    #[command(flatten)]
    source: SourceArgs,
    /// GGUF model; repeat to compare models. Default: the default model.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    models: Vec<PathBuf>,
    /// `all` (48 formats) or a comma-separated list such as upper.dot.newline,digit.parens.comma.
    #[arg(long, value_name = "all|LIST", default_value = "all")]
    formats: String,
    /// Score every cyclic rotation of the options (the gold visits every position).
    #[arg(long)]
    circular: bool,
    /// Sweep N tasks picked as llama-perplexity picks them (mt19937 seeded 1); 0, or N
    /// at or above the task count, sweeps every task.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(usize))]
    tasks: Option<usize>,
    /// PriDe: estimate each format's position prior from a share α of the tasks
    /// under all rotations, and debias the other tasks (scored once) with it.
    #[arg(long, value_name = "α", value_parser = parse_share)]
    pride: Option<f64>,
    /// Add a line naming the IDs in use after the options ("Answer with the option's label: A, B, C or D.").
    #[arg(long)]
    instruction: bool,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the JSON results to FILE (what --json prints).
    #[arg(long, value_name = "FILE")]
    save_json: Option<PathBuf>,
    /// Write SVG plots to DIR: accuracy per format for each model, and the rank
    /// distributions when there are several models.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Write one JSON line per prompt (task, format, rotation, gold, log P of each ID, pick) to FILE.
    #[arg(long, value_name = "FILE")]
    log_samples: Option<PathBuf>,
    /// Write each format and rotation as its own task file in DIR, then stop
    /// (to score them one by one, with mcscore or llama-perplexity).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["json", "save_json", "plots", "log_samples", "models"])]
    write_tasks: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
}

fn parse_share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("expected a share between 0 and 1 (exclusive), such as 0.05; got {text:?}")),
    }
}

/// One prompt: an item rendered in a format under a rotation.
struct Prompt {
    /// Position of the item among the swept items.
    item: usize,
    format: usize,
    rotation: usize,
    question: String,
    ids: Vec<String>,
    gold: usize,
}

/// The swept items, with their index in the file or source.
struct Items {
    label: String,
    indices: Vec<usize>,
    items: Vec<Item>,
}

fn load(args: &Args) -> anyhow::Result<Items> {
    let (label, all): (String, Vec<Item>) = match (&args.file, &args.benchmark) {
        (Some(path), _) => {
            let file = TaskFile::open(path)?;
            let items = file
                .tasks()
                .enumerate()
                .map(|(i, task)| {
                    parse_letter_task(&task).with_context(|| {
                        format!(
                            "{}: task {i} is not in the letter scaffold of task-format.md (\"Question: …\\nA. …\\nAnswer:\" with options A, B, …); sweep re-renders items, so it needs that exact layout (or use --benchmark)",
                            path.display()
                        )
                    })
                })
                .collect::<anyhow::Result<_>>()?;
            (path.display().to_string(), items)
        }
        (None, Some(name)) => {
            let benchmark =
                find(name).with_context(|| format!("--benchmark {name}: no such benchmark (mcscore build --list shows them)"))?;
            let sources = args.source.resolve(benchmark)?;
            let items = load_items(benchmark, &sources)?;
            if let Some(row) = items.iter().position(|i| i.passage.is_some()) {
                bail!("--benchmark {name}: item {row} comes with a passage, which the letter formats have no place for; sweep takes question-and-options benchmarks");
            }
            (name.clone(), items)
        }
        (None, None) => unreachable!("clap requires FILE or --benchmark"),
    };
    if all.is_empty() {
        bail!("{label}: no tasks to sweep");
    }
    let indices = crate::score::selection(args.tasks, all.len(), "--tasks");
    let items = indices.iter().map(|&i| all[i].clone()).collect();
    Ok(Items { label, indices, items })
}

fn parse_formats(list: &str) -> anyhow::Result<Vec<PromptFormat>> {
    let all = PromptFormat::all();
    if list == "all" {
        return Ok(all);
    }
    let mut chosen = Vec::new();
    for name in list.split(',').map(str::trim) {
        let format = all.iter().find(|f| f.name() == name).with_context(|| {
            format!("--formats: unknown format {name:?}; formats are ids.delimiter.separator, e.g. upper.dot.newline (see mcscore sweep --help)")
        })?;
        if chosen.contains(format) {
            bail!("--formats: {name} is listed twice");
        }
        chosen.push(*format);
    }
    Ok(chosen)
}

/// Items whose rotations calibrate PriDe: a seeded share α of them.
fn calibration_items(n: usize, alpha: f64) -> HashSet<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::new(0);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    // At least one task calibrates and one is debiased.
    let take = ((alpha * n as f64).ceil() as usize).clamp(1, n - 1);
    order.into_iter().take(take).collect()
}

/// Every prompt, item by item, then rotation, then format: prompts that share
/// the most leading tokens sit next to each other, for the engine's prefix tree.
fn render(
    items: &Items,
    formats: &[PromptFormat],
    rotations_of: impl Fn(usize) -> usize,
    instruction: bool,
) -> anyhow::Result<Vec<Prompt>> {
    let mut prompts = Vec::new();
    for (p, item) in items.items.iter().enumerate() {
        for rotation in 0..rotations_of(p) {
            for (f, format) in formats.iter().enumerate() {
                let (question, ids, gold) = format.render(item, rotation, instruction).with_context(|| {
                    format!("{}: task {}: its {} options have no {} IDs", items.label, items.indices[p], item.options.len(), format.name())
                })?;
                prompts.push(Prompt { item: p, format: f, rotation, question, ids, gold });
            }
        }
    }
    Ok(prompts)
}

fn task_of(prompt: &Prompt) -> Task<'_> {
    Task::new(&prompt.question, prompt.ids.iter().map(String::as_str).collect(), prompt.gold)
}

/// A prompt with the log-probability of each ID and the ID picked (the first
/// maximum, as every accuracy in mcscore).
struct Scored<'a> {
    prompt: &'a Prompt,
    log_probs: &'a [f64],
    pick: usize,
}

impl Scored<'_> {
    fn right(&self) -> bool {
        self.pick == self.prompt.gold
    }
}

#[derive(Serialize, Deserialize)]
struct Spread {
    mean: f64,
    std: f64,
    min: f64,
    min_format: String,
    max: f64,
    max_format: String,
}

fn spread(values: &[f64], names: &[String]) -> Spread {
    // The first minimum is the first maximum of the negated values.
    let argmin = first_max(values.iter().map(|v| -v));
    let argmax = first_max(values.iter().copied());
    Spread {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        std: if values.len() > 1 { std_dev(values) } else { 0.0 },
        min: values[argmin],
        min_format: names[argmin].clone(),
        max: values[argmax],
        max_format: names[argmax].clone(),
    }
}

#[derive(Serialize, Deserialize)]
struct Pride {
    /// The position prior, per ID position.
    prior: Vec<f64>,
    calibration_tasks: usize,
    /// Tasks debiased (scored in the original order only).
    debiased_tasks: usize,
    accuracy_before: f64,
    accuracy_after: f64,
    rstd_before: f64,
    rstd_after: f64,
}

#[derive(Serialize, Deserialize)]
struct FormatResult {
    format: String,
    /// Percent correct with the options in source order.
    accuracy: f64,
    /// Percent correct per rotation (rotation r puts option r first); with --circular.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    accuracy_by_rotation: Vec<f64>,
    /// Percent of tasks right under every rotation; with --circular.
    circular_accuracy: Option<f64>,
    /// How often each position was picked (all scored rotations with --circular).
    picks: Vec<usize>,
    /// Recall standard deviation across positions, in points.
    rstd: f64,
    /// PIA, where every task has the same number of options.
    pia: Option<f64>,
    pride: Option<Pride>,
}

#[derive(Serialize, Deserialize)]
struct ModelSweep {
    model: String,
    prompts: usize,
    tokens_decoded: usize,
    /// What scoring every prompt on its own would decode.
    tokens_unshared: usize,
    scoring_seconds: f64,
    formats: Vec<FormatResult>,
    accuracy_across_formats: Spread,
    circular_accuracy_across_formats: Option<Spread>,
}

#[derive(Serialize)]
struct Comparison {
    /// What models are ranked by.
    ranked_by: &'static str,
    /// Per model: how many formats rank it 1st, 2nd, ….
    rank_distribution: Vec<Vec<usize>>,
    pairs: Vec<PairRecord>,
    /// Share of (model pair, format pair) combinations whose order flips.
    reversal_rate: f64,
    kendall_tau_mean: f64,
    kendall_tau_min: f64,
    /// Format pairs where τ is defined (neither format ties every model).
    kendall_pairs: usize,
}

#[derive(Serialize, Deserialize)]
struct SweepReport {
    file: String,
    tasks: usize,
    selection: Option<usize>,
    formats: Vec<String>,
    circular: bool,
    instruction: bool,
    pride_alpha: Option<f64>,
    /// sha256 of the swept items (stem, options, gold, in order): sweeps
    /// compare only when they scored the same items.
    items_sha256: String,
    settings: serde_json::Value,
    models: Vec<ModelSweep>,
    /// Recomputed whenever sweeps are put side by side.
    #[serde(skip_deserializing)]
    comparison: Option<Comparison>,
}

/// Checks every output location before any work, and locks the files a run
/// writes, so that a sweep is never lost to a path that cannot be written.
fn check_outputs(args: &Args) -> anyhow::Result<Vec<WriteLock>> {
    let mut locks = Vec::new();
    for (path, flag) in [(&args.save_json, "--save-json"), (&args.log_samples, "--log-samples")] {
        if let Some(path) = path {
            output::check_file(path, flag)?;
            locks.push(WriteLock::acquire(path)?);
        }
    }
    for (dir, flag) in [(&args.plots, "--plots"), (&args.write_tasks, "--write-tasks")] {
        if let Some(dir) = dir {
            output::check_dir(dir, flag)?;
        }
    }
    Ok(locks)
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let _locks = check_outputs(&args)?;
    if !args.compare.is_empty() {
        return compare_saved(&args);
    }
    let items = load(&args)?;
    let formats = parse_formats(&args.formats)?;
    let names: Vec<String> = formats.iter().map(PromptFormat::name).collect();
    let n = items.items.len();
    if args.pride.is_some() {
        if n < 2 {
            bail!("{}: --pride needs at least two tasks: one to estimate the prior, one to debias", items.label);
        }
        let k = items.items[0].options.len();
        if let Some(p) = items.items.iter().position(|i| i.options.len() != k) {
            bail!(
                "{}: --pride needs one number of options; task {} has {} where task {} has {k}",
                items.label,
                items.indices[p],
                items.items[p].options.len(),
                items.indices[0]
            );
        }
    }
    let calibration = args.pride.map(|alpha| calibration_items(n, alpha)).unwrap_or_default();
    let rotations_of = |p: usize| if args.circular || calibration.contains(&p) { items.items[p].options.len() } else { 1 };

    if let Some(dir) = &args.write_tasks {
        return write_format_files(dir, &items, &formats, args.circular, args.instruction);
    }

    let prompts = render(&items, &formats, rotations_of, args.instruction)?;
    let settings = args.engine.settings();
    let models = if args.models.is_empty() { vec![defaults::model()?] } else { args.models.clone() };
    // Written beside its final name and renamed when complete.
    let mut log = args.log_samples.as_ref().map(AtomicFile::create).transpose()?;
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).context("installing the Ctrl-C handler")?;
    }
    let mut sweeps = Vec::new();
    for model in &models {
        let started = Instant::now();
        let Some((log_probs, tokens)) = score_prompts(model, &prompts, &items, &names, &settings, &interrupted)? else {
            eprintln!("mcscore: interrupted while scoring {}; nothing was written", model.display());
            return Ok(Outcome::Interrupted);
        };
        let seconds = started.elapsed().as_secs_f64();
        let scored: Vec<Scored<'_>> = prompts
            .iter()
            .zip(&log_probs)
            .map(|(prompt, lp)| Scored { prompt, log_probs: lp, pick: first_max(lp.iter().copied()) })
            .collect();
        if let Some(log) = log.as_mut() {
            for s in &scored {
                let prompt = s.prompt;
                let line = serde_json::json!({
                    "model": model.display().to_string(),
                    "task": items.indices[prompt.item],
                    "format": names[prompt.format],
                    "rotation": prompt.rotation,
                    "gold": prompt.gold,
                    "log_probs": s.log_probs,
                    "pick": s.pick,
                });
                writeln!(log, "{line}").with_context(|| log.path().display().to_string())?;
            }
        }
        sweeps.push(analyse(model, &scored, &items, &names, &calibration, args.circular, tokens, seconds));
    }
    if let Some(log) = log {
        log.commit()?;
    }
    let comparison = (sweeps.len() > 1).then(|| compare(&sweeps, args.circular));
    let report = SweepReport {
        file: items.label.clone(),
        tasks: n,
        selection: args.tasks,
        formats: names,
        circular: args.circular,
        instruction: args.instruction,
        pride_alpha: args.pride,
        items_sha256: items_sha256(&items.items)?,
        settings: serde_json::to_value(settings)?,
        models: sweeps,
        comparison,
    };
    emit(&report, &args)
}

fn items_sha256(items: &[Item]) -> anyhow::Result<String> {
    let key: Vec<(&str, &[String], usize)> = items.iter().map(|i| (i.stem.as_str(), &i.options[..], i.gold)).collect();
    Ok(sha256_hex(&serde_json::to_vec(&key)?))
}

/// `--compare`: saved sweeps of the same items side by side.
fn compare_saved(args: &Args) -> anyhow::Result<Outcome> {
    let mut merged: Option<SweepReport> = None;
    for path in &args.compare {
        let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
        let report: SweepReport =
            serde_json::from_str(&text).with_context(|| format!("{}: not a sweep saved by --save-json or --json", path.display()))?;
        let Some(first) = merged.as_mut() else {
            merged = Some(report);
            continue;
        };
        let differs = [
            ("items (items_sha256)", first.items_sha256 != report.items_sha256),
            ("formats", first.formats != report.formats),
            ("--circular", first.circular != report.circular),
            ("--instruction", first.instruction != report.instruction),
        ];
        if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
            bail!(
                "{}: swept other {what} than {}; only sweeps of the same items and formats compare",
                path.display(),
                args.compare[0].display()
            );
        }
        first.models.extend(report.models);
    }
    let mut report = merged.expect("clap requires a file");
    report.comparison = (report.models.len() > 1).then(|| compare(&report.models, report.circular));
    emit(&report, args)
}

/// The report as text or JSON, with its plots and saved copy. The report is
/// printed first, so that a file that cannot be written at the end (a full
/// disk) loses nothing: every failure is named, and the first fails the run.
fn emit(report: &SweepReport, args: &Args) -> anyhow::Result<Outcome> {
    let printed = if args.json { crate::print_json(report) } else { print_human(report) };
    let plotted = args.plots.as_ref().map_or(Ok(()), |dir| {
        let accuracy: Vec<plots::ModelAccuracy> = report
            .models
            .iter()
            .map(|m| plots::ModelAccuracy {
                model: m.model.clone(),
                accuracy: m.formats.iter().map(|f| f.accuracy).collect(),
                circular: report.circular.then(|| m.formats.iter().filter_map(|f| f.circular_accuracy).collect()),
            })
            .collect();
        let ranks = report.comparison.as_ref().map(|c| c.rank_distribution.clone());
        plots::sweep(dir, &report.formats, &accuracy, ranks.as_deref())
    });
    let saved = args.save_json.as_ref().map_or(Ok(()), |path| {
        let mut file = AtomicFile::create(path)?;
        serde_json::to_writer_pretty(&mut file, &report).with_context(|| path.display().to_string())?;
        file.commit()?;
        Ok(())
    });
    let mut failures = [printed, plotted, saved].into_iter().filter_map(Result::err);
    let first = failures.next();
    for later in failures {
        eprintln!("mcscore: error: {later:#}");
    }
    match first {
        Some(error) => Err(error),
        None => Ok(Outcome::Ok),
    }
}

fn describe_prompt(error: EngineError, prompts: &[Prompt], items: &Items, names: &[String]) -> anyhow::Error {
    let context = match error.task().and_then(|i| Some((i, prompts.get(i)?))) {
        Some((i, p)) => {
            format!("{}: task {} in format {}, rotation {} (prompt {i})", items.label, items.indices[p.item], names[p.format], p.rotation)
        }
        None => items.label.clone(),
    };
    anyhow::Error::from(error).context(context)
}

fn score_prompts(
    model: &Path,
    prompts: &[Prompt],
    items: &Items,
    names: &[String],
    settings: &mcscore_engine::Settings,
    interrupted: &AtomicBool,
) -> anyhow::Result<Option<(Vec<Vec<f64>>, TokenCounts)>> {
    let engine = Engine::load(model, settings.n_gpu_layers)?;
    let tasks: Vec<(usize, Task<'_>)> = prompts.iter().enumerate().map(|(i, p)| (i, task_of(p))).collect();
    let describe = |e| describe_prompt(e, prompts, items, names);
    let prepared = engine.prepare(&tasks).map_err(describe)?;
    let plan = plan(&prepared, settings).map_err(|e| engine_args::with_flag_hint(e, Path::new(&items.label)))?;
    engine.check_memory(&plan, settings.n_gpu_layers).map_err(|e| engine_args::with_flag_hint(e, Path::new(&items.label)))?;
    let progress = task_progress(prompts.len(), 0, "prompts");
    let mut log_probs = Vec::with_capacity(prompts.len());
    let run = engine
        .score(&prepared, &plan, settings, |scores| {
            log_probs.push(scores.options.iter().map(|o| o.logprob_sum).collect::<Vec<f64>>());
            progress.inc(1);
            if interrupted.load(Ordering::SeqCst) {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })
        .map_err(describe)?;
    progress.finish_and_clear();
    if run.completion != Completion::Finished {
        return Ok(None);
    }
    if log_probs.len() != prompts.len() {
        bail!("{}: scored {} of {} prompts", model.display(), log_probs.len(), prompts.len());
    }
    engine.check_unchanged()?;
    Ok(Some((log_probs, run.tokens)))
}

#[allow(clippy::too_many_arguments)]
fn analyse(
    model: &Path,
    scored: &[Scored<'_>],
    items: &Items,
    names: &[String],
    calibration: &HashSet<usize>,
    circular: bool,
    tokens: TokenCounts,
    seconds: f64,
) -> ModelSweep {
    let n = items.items.len();
    let ks: HashSet<usize> = items.items.iter().map(|i| i.options.len()).collect();
    let fixed_k = (ks.len() == 1).then(|| items.items[0].options.len());
    let widest = ks.iter().copied().max().unwrap_or(0);
    let percent = |hits: usize, of: usize| 100.0 * hits as f64 / of.max(1) as f64;
    let mut results = Vec::new();
    for (f, name) in names.iter().enumerate() {
        let mine: Vec<&Scored<'_>> = scored.iter().filter(|s| s.prompt.format == f).collect();
        let counted: Vec<&Scored<'_>> = mine.iter().copied().filter(|s| circular || s.prompt.rotation == 0).collect();
        let original: Vec<&Scored<'_>> = mine.iter().copied().filter(|s| s.prompt.rotation == 0).collect();
        let accuracy = percent(original.iter().filter(|s| s.right()).count(), n);
        let (accuracy_by_rotation, circular_accuracy) = if circular {
            let by_rotation = (0..widest)
                .map(|r| {
                    let at: Vec<_> = mine.iter().filter(|s| s.prompt.rotation == r).collect();
                    percent(at.iter().filter(|s| s.right()).count(), at.len())
                })
                .collect();
            let mut all_right = vec![true; n];
            for s in &mine {
                all_right[s.prompt.item] &= s.right();
            }
            (by_rotation, Some(percent(all_right.iter().filter(|&&r| r).count(), n)))
        } else {
            (Vec::new(), None)
        };
        let picks_list: Vec<usize> = counted.iter().map(|s| s.pick).collect();
        let golds: Vec<usize> = counted.iter().map(|s| s.prompt.gold).collect();
        let mut picks = vec![0; widest];
        for &p in &picks_list {
            picks[p] += 1;
        }
        let pride = (!calibration.is_empty()).then(|| {
            let k = fixed_k.expect("--pride checked one k");
            let task_priors: Vec<Vec<f64>> = calibration
                .iter()
                .map(|&item| {
                    let mut rotations: Vec<&Scored<'_>> = mine.iter().copied().filter(|s| s.prompt.item == item).collect();
                    rotations.sort_by_key(|s| s.prompt.rotation);
                    debias::task_prior(&rotations.iter().map(|s| s.log_probs.to_vec()).collect::<Vec<_>>())
                })
                .collect();
            let prior = debias::prior(&task_priors);
            let rest: Vec<&Scored<'_>> = original.iter().copied().filter(|s| !calibration.contains(&s.prompt.item)).collect();
            let golds: Vec<usize> = rest.iter().map(|s| s.prompt.gold).collect();
            let before: Vec<usize> = rest.iter().map(|s| s.pick).collect();
            let after: Vec<usize> = rest.iter().map(|s| debias::debiased_pick(s.log_probs, &prior)).collect();
            let hits = |picks: &[usize]| picks.iter().zip(&golds).filter(|(p, g)| p == g).count();
            Pride {
                calibration_tasks: calibration.len(),
                debiased_tasks: rest.len(),
                accuracy_before: percent(hits(&before), rest.len()),
                accuracy_after: percent(hits(&after), rest.len()),
                rstd_before: debias::rstd(&before, &golds, k),
                rstd_after: debias::rstd(&after, &golds, k),
                prior,
            }
        });
        results.push(FormatResult {
            format: name.clone(),
            accuracy,
            accuracy_by_rotation,
            circular_accuracy,
            rstd: debias::rstd(&picks_list, &golds, widest),
            pia: fixed_k.map(|k| debias::pia(&picks_list, &golds, k)),
            picks,
            pride,
        });
    }
    let accuracies: Vec<f64> = results.iter().map(|r| r.accuracy).collect();
    let circular_accuracies: Vec<f64> = results.iter().filter_map(|r| r.circular_accuracy).collect();
    ModelSweep {
        model: model.display().to_string(),
        prompts: scored.len(),
        tokens_decoded: tokens.decoded,
        tokens_unshared: tokens.unshared,
        scoring_seconds: seconds,
        accuracy_across_formats: spread(&accuracies, names),
        circular_accuracy_across_formats: circular.then(|| spread(&circular_accuracies, names)),
        formats: results,
    }
}

fn compare(sweeps: &[ModelSweep], circular: bool) -> Comparison {
    let accuracy: Vec<Vec<f64>> = sweeps
        .iter()
        .map(|m| m.formats.iter().map(|f| if circular { f.circular_accuracy.unwrap_or(f.accuracy) } else { f.accuracy }).collect())
        .collect();
    let taus: Vec<f64> = robustness::kendall_between_formats(&accuracy).into_iter().filter(|t| t.is_finite()).collect();
    Comparison {
        ranked_by: if circular { "circular_accuracy" } else { "accuracy" },
        rank_distribution: robustness::rank_distribution(&accuracy),
        pairs: robustness::pair_records(&accuracy),
        reversal_rate: robustness::reversal_rate(&accuracy),
        kendall_tau_mean: if taus.is_empty() { f64::NAN } else { taus.iter().sum::<f64>() / taus.len() as f64 },
        kendall_tau_min: taus.iter().copied().fold(f64::NAN, f64::min),
        kendall_pairs: taus.len(),
    }
}

fn write_format_files(dir: &Path, items: &Items, formats: &[PromptFormat], circular: bool, instruction: bool) -> anyhow::Result<Outcome> {
    let widest = items.items.iter().map(|i| i.options.len()).max().unwrap_or(1);
    let rotations = if circular { widest } else { 1 };
    let mut written = 0;
    for format in formats {
        for rotation in 0..rotations {
            let prompts = render(
                items,
                std::slice::from_ref(format),
                |p| if items.items[p].options.len() > rotation { rotation + 1 } else { 0 },
                instruction,
            )?;
            let path = dir.join(format!("{}.r{rotation}.bin", format.name()));
            write_tasks(&path, prompts.iter().filter(|p| p.rotation == rotation).map(task_of).collect::<Vec<_>>().into_iter())
                .with_context(|| path.display().to_string())?;
            written += 1;
        }
    }
    eprintln!("mcscore: wrote {written} task files ({} tasks each) to {}", items.items.len(), dir.display());
    Ok(Outcome::Ok)
}

fn print_human(report: &SweepReport) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let rotations = if report.circular { "every rotation" } else { "the original order" };
    for m in &report.models {
        let model = plots::model_label(&m.model);
        writeln!(
            out,
            "{model} on {}: {} tasks × {} formats, {rotations} ({} prompts)",
            report.file,
            report.tasks,
            report.formats.len(),
            m.prompts
        )
        .map_err(crate::stdout_error)?;
        let positions = m.formats.first().map_or(0, |f| f.picks.len());
        let letters: String = (0..positions).map(|i| char::from(b'A' + i as u8).to_string()).collect::<Vec<_>>().join("/");
        writeln!(
            out,
            "  {:<24}{:>8}{:>10}{:>10}  {:<24}{:>7}{:>7}",
            "format",
            "acc %",
            "rot. mean",
            "circular",
            format!("picks {letters} %"),
            "RStd",
            "PIA"
        )
        .map_err(crate::stdout_error)?;
        for f in &m.formats {
            let total: usize = f.picks.iter().sum();
            let picks: Vec<String> = f.picks.iter().map(|&c| format!("{:.0}", 100.0 * c as f64 / total.max(1) as f64)).collect();
            let rotation_mean = (!f.accuracy_by_rotation.is_empty())
                .then(|| f.accuracy_by_rotation.iter().sum::<f64>() / f.accuracy_by_rotation.len() as f64);
            writeln!(
                out,
                "  {:<24}{:>8.2}{:>10}{:>10}  {:<24}{:>7.1}{:>7}",
                f.format,
                f.accuracy,
                rotation_mean.map_or("-".to_owned(), |c| format!("{c:.2}")),
                f.circular_accuracy.map_or("-".to_owned(), |c| format!("{c:.2}")),
                picks.join(" "),
                f.rstd,
                f.pia.map_or("-".to_owned(), |p| format!("{p:.3}"))
            )
            .map_err(crate::stdout_error)?;
        }
        let s = &m.accuracy_across_formats;
        writeln!(
            out,
            "  accuracy across formats: mean {:.2}, std {:.2}, min {:.2} ({}), max {:.2} ({})",
            s.mean, s.std, s.min, s.min_format, s.max, s.max_format
        )
        .map_err(crate::stdout_error)?;
        if let Some(s) = &m.circular_accuracy_across_formats {
            writeln!(
                out,
                "  circular accuracy across formats: mean {:.2}, std {:.2}, min {:.2} ({}), max {:.2} ({})",
                s.mean, s.std, s.min, s.min_format, s.max, s.max_format
            )
            .map_err(crate::stdout_error)?;
        }
        if let (Some(alpha), Some(first)) = (report.pride_alpha, m.formats.first().and_then(|f| f.pride.as_ref())) {
            writeln!(
                out,
                "  PriDe (α = {alpha}): prior from {} tasks under every rotation, {} tasks debiased",
                first.calibration_tasks, first.debiased_tasks
            )
            .map_err(crate::stdout_error)?;
            writeln!(out, "  {:<24}{:<28}{:>20}{:>20}", "format", "prior", "acc % before→after", "RStd before→after")
                .map_err(crate::stdout_error)?;
            for f in &m.formats {
                let p = f.pride.as_ref().expect("every format has PriDe");
                let prior: Vec<String> = p.prior.iter().map(|x| format!("{x:.2}")).collect();
                writeln!(
                    out,
                    "  {:<24}{:<28}{:>20}{:>20}",
                    f.format,
                    prior.join(" "),
                    format!("{:.2}→{:.2}", p.accuracy_before, p.accuracy_after),
                    format!("{:.1}→{:.1}", p.rstd_before, p.rstd_after)
                )
                .map_err(crate::stdout_error)?;
            }
        }
        writeln!(
            out,
            "  {} tokens decoded against {} scoring each prompt alone ({:.3}×), {:.1} s scoring",
            m.tokens_decoded,
            m.tokens_unshared,
            m.tokens_decoded as f64 / m.tokens_unshared.max(1) as f64,
            m.scoring_seconds
        )
        .map_err(crate::stdout_error)?;
    }
    if let Some(c) = &report.comparison {
        writeln!(out, "Models compared by {} over {} formats:", c.ranked_by, report.formats.len()).map_err(crate::stdout_error)?;
        for (m, counts) in report.models.iter().zip(&c.rank_distribution) {
            let counts: Vec<String> = counts.iter().enumerate().map(|(r, n)| format!("#{}: {n}", r + 1)).collect();
            writeln!(out, "  {:<40} {}", m.model, counts.join(", ")).map_err(crate::stdout_error)?;
        }
        for p in &c.pairs {
            writeln!(
                out,
                "  {} vs {}: ahead in {} and {} formats, tied in {}{}",
                report.models[p.a].model,
                report.models[p.b].model,
                p.a_ahead,
                p.b_ahead,
                p.tied,
                if p.reverses() { " (the format decides the winner)" } else { "" }
            )
            .map_err(crate::stdout_error)?;
        }
        writeln!(
            out,
            "  reversal rate {:.3}; Kendall τ between formats: mean {:.3}, min {:.3} over {} format pairs",
            c.reversal_rate, c.kendall_tau_mean, c.kendall_tau_min, c.kendall_pairs
        )?;
    }
    Ok(())
}
