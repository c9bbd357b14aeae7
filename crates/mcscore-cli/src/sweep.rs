//! `mcscore sweep`: accuracy under each prompt format of docs/methods.md (option-ID
//! set × delimiter × separator) and each cyclic rotation of the options, and
//! how much of a result, or of a model ranking, is the format's doing.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mcscore_datasets::find;
use mcscore_datasets::formats::PromptFormat;
use mcscore_eval::shard::Shard;
use mcscore_eval::sweep::{load_items, merge_saved, save, ItemPick, ItemSource, Sweep, SweepReport, SweepSpec};
use mcscore_format::{AtomicFile, Existing};

use crate::datasets::SourceArgs;
use crate::engine_args::EngineArgs;
use crate::numbers::End;
use crate::output::{self, Target};
use crate::progress::ProgressMode;
use crate::run_text::{chat_line, note_selection, points, Shown};
use crate::table::{Cell, Printed, Table};
use crate::{defaults, plots, Outcome, UsageError};

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
upper.dot.newline is the letter scaffold of the committed files. Prompts that share a
question stem share its evaluation, so 48 formats × 4 rotations cost far less than
192 runs; the summary says how many tokens were decoded against a naive run.";

/// Score a letter-mode benchmark under many prompt formats and option orders.
///
/// Each item is re-rendered in every chosen format (option-ID set, delimiter,
/// separator; docs/methods.md) and, with --circular, every cyclic rotation of its
/// options. Per format: accuracy, circular accuracy (right under every
/// rotation), the histogram of picked positions, RStd and PIA. Across formats:
/// mean, std, min, max. With several -m: each model's rank distribution over
/// formats, rank reversals and Kendall τ between formats. Items are parsed back
/// from a letter-mode task file in the letter scaffold ("Question: …\nA. …\nAnswer:"), read from
/// a benchmark's source (--benchmark), or, with --mmproj, from a VQA file in VLMEvalKit's TSV
/// layout (each prompt after the row's image and hint).
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Letter-mode task file (.bin) written in the letter scaffold ("Question: …\nA. …\nAnswer:"),
    /// or a VQA file in VLMEvalKit's TSV layout (.tsv, or .jsonl; with --mmproj).
    #[arg(value_name = "FILE", required_unless_present_any = ["benchmark", "compare"], conflicts_with = "benchmark")]
    file: Option<PathBuf>,
    /// Instead of scoring: report sweeps saved with --save-json (one, to render
    /// it again; several side by side, with rank distributions, reversals and
    /// Kendall τ), e.g. sweeps of models run apart.
    #[arg(long, value_name = "SWEEP.json", num_args = 1.., conflicts_with_all = ["file", "benchmark", "models", "mmproj", "write_tasks", "log_samples"])]
    compare: Vec<PathBuf>,
    /// A vision projector (llama.cpp's mmproj GGUF), for a FILE of image tasks in
    /// VLMEvalKit's TSV layout (.tsv, or its JSON Lines form, .jsonl): each prompt starts with the row's image and hint
    /// (docs/vqa.md). Give one for every model (quants of one VLM share it), or one per
    /// -m, in the same order.
    #[arg(long, value_name = "FILE")]
    mmproj: Vec<PathBuf>,
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
    #[arg(long, value_name = "N", value_parser = crate::numbers::at_least(0usize))]
    tasks: Option<usize>,
    /// Sweep the first N tasks of each group, in file order (as `score --limit`: MMLU's
    /// subjects, where the file's manifest records groups), else the file's first N.
    #[arg(long, value_name = "N", conflicts_with_all = ["tasks", "limit_total"], value_parser = crate::numbers::at_least(1usize))]
    limit: Option<usize>,
    /// Sweep the file's first N tasks, whatever its groups (--limit counts per group).
    #[arg(long, value_name = "N", conflicts_with = "tasks", value_parser = crate::numbers::at_least(1usize))]
    limit_total: Option<usize>,
    /// PriDe: estimate each format's position prior from a share α of the tasks
    /// under all rotations, and debias the other tasks (scored once) with it.
    #[arg(long, value_name = "α", value_parser = crate::numbers::real("a share", End::Open(0.0), End::Open(1.0), "0.05"))]
    pride: Option<f64>,
    /// Add a line naming the IDs in use after the options ("Answer with the option's label: A, B, C or D.").
    #[arg(long)]
    instruction: bool,
    /// Print the results as JSON on stdout.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// How the results are printed (not which prompt formats: that is
    /// --formats): `human`, or a table of one row per model and prompt format
    /// as `csv` (fractions), `markdown` or `latex` (in percent).
    #[arg(long, value_enum, default_value = "human")]
    format: Printed,
    /// Progress on stderr: a bar on a terminal, and where stderr is not one (a
    /// Slurm job's output file, a CI log) a line every 30 s and at each tenth
    /// of the prompts: done of total, rate, time left.
    #[arg(long, value_enum, default_value = "auto", value_name = "auto|bar|lines|none")]
    progress: ProgressMode,
    /// Also write the JSON results to FILE (what --json prints).
    #[arg(long, value_name = "FILE")]
    save_json: Option<PathBuf>,
    /// Write plots (SVG and PNG) to DIR: accuracy per format for each model, and the rank
    /// distributions when there are several models.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Write one JSON line per prompt (task, format, rotation, gold, log P of each ID, pick) to FILE.
    #[arg(long, value_name = "FILE")]
    log_samples: Option<PathBuf>,
    /// Replace the --save-json or --log-samples file if it exists (a regular file
    /// that is none of the inputs); without it an existing file is refused.
    #[arg(long)]
    force: bool,
    /// Write each format and rotation as its own task file in DIR, then stop
    /// (to score them one by one, with mcscore or llama-perplexity).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["json", "save_json", "plots", "log_samples", "models"])]
    write_tasks: Option<PathBuf>,
    /// Score one shard of the items (K/N, K from 0): every format and rotation of
    /// an item stays in its shard. --save-json then saves the shard's scores, for
    /// --merge-shards; one model.
    #[arg(long, value_name = "K/N", requires = "save_json", conflicts_with_all = ["compare", "write_tasks", "log_samples", "plots", "merge_shards"])]
    shard: Option<Shard>,
    /// Instead of scoring: the saved shards of this sweep (run with the same FILE
    /// and flags and --shard K/N), merged into the report of one run.
    #[arg(long, value_name = "SHARD.json", num_args = 1.., conflicts_with_all = ["compare", "write_tasks", "models"])]
    merge_shards: Vec<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    chat: crate::chat_args::ChatArgs,
}

/// The formats `--formats` names; a name that is not one is a usage error (exit 2).
fn parse_formats(list: &str) -> Result<Vec<PromptFormat>, UsageError> {
    let all = PromptFormat::all();
    if list == "all" {
        return Ok(all);
    }
    let mut chosen = Vec::new();
    for name in list.split(',').map(str::trim) {
        let format = all.iter().find(|f| f.name() == name).ok_or_else(|| {
            UsageError(format!("--formats: unknown format {name:?}; formats are ids.delimiter.separator, e.g. upper.dot.newline (see mcscore sweep --help)"))
        })?;
        if chosen.contains(format) {
            return Err(UsageError(format!("--formats: {name} is listed twice")));
        }
        chosen.push(*format);
    }
    Ok(chosen)
}

/// Checks every output location before any work, and locks the files a run
/// writes, so that a sweep is never lost to a path that cannot be written.
/// The command's inputs: no output may replace one.
fn inputs(args: &Args) -> Vec<&Path> {
    args.file
        .iter()
        .chain(&args.models)
        .chain(&args.mmproj)
        .chain(&args.compare)
        .chain(&args.merge_shards)
        .chain(args.source.source.iter())
        .map(PathBuf::as_path)
        .collect()
}

fn check_outputs(args: &Args) -> anyhow::Result<()> {
    let inputs = inputs(args);
    for (path, flag) in [(&args.save_json, "--save-json"), (&args.log_samples, "--log-samples")] {
        if let Some(path) = path {
            output::check_file(&Target::new(path, flag, args.force), &inputs)?;
        }
    }
    if let (Some(a), Some(b)) = (&args.save_json, &args.log_samples) {
        if a == b || mcscore_format::same_file(a, b) {
            bail!("{}: --save-json and --log-samples name the same file", a.display());
        }
    }
    for (dir, flag) in [(&args.plots, "--plots"), (&args.write_tasks, "--write-tasks")] {
        if let Some(dir) = dir {
            output::check_dir(dir, flag)?;
        }
    }
    Ok(())
}

/// What an output may replace: a regular file with --force, else nothing.
fn existing(args: &Args) -> Existing {
    if args.force {
        Existing::Replace
    } else {
        Existing::Refuse
    }
}

pub(crate) fn run(mut args: Args) -> anyhow::Result<Outcome> {
    args.file = args.file.map(|f| crate::defaults::task_file(f, mcscore_eval::TaskKind::MultipleChoice)).transpose()?;
    check_outputs(&args)?;
    if !args.compare.is_empty() {
        if args.chat.given() {
            return Err(crate::UsageError(
                "--compare puts saved sweeps side by side and scores nothing: a chat template applies when they are scored".into(),
            )
            .into());
        }
        return emit(&merge_saved(&args.compare)?, &args);
    }
    // A projector reads images, which only a VQA file has; one is given for
    // every model or one per -m (a lone -m or the default model: one).
    if !args.mmproj.is_empty() && !args.file.as_deref().is_some_and(mcscore_datasets::vqa::is_vqa_file) {
        return Err(crate::UsageError("--mmproj reads the images of a VQA FILE (.tsv, .jsonl), and no such FILE is given".into()).into());
    }
    let n_models = args.models.len().max(1);
    if args.mmproj.len() > 1 && args.mmproj.len() != n_models {
        return Err(crate::UsageError(format!(
            "--mmproj given {} times for {n_models} models; give one for every model, or one per -m in the same order",
            args.mmproj.len()
        ))
        .into());
    }
    let formats = parse_formats(&args.formats)?;
    // A benchmark's source files are inputs too, once they are known.
    let mut source_paths: Vec<PathBuf> = Vec::new();
    // --limit counts per group where the task file's manifest records groups.
    let groups = match (&args.file, args.limit) {
        (Some(path), Some(_)) => crate::compare::file_groups(path, None)?,
        (None, Some(limit)) => {
            eprintln!("mcscore: --limit {limit}: a benchmark's source items carry no groups here: its first {limit} items");
            None
        }
        (_, None) => None,
    };
    let pick = match (args.limit, args.limit_total) {
        (Some(limit), _) => ItemPick::First { limit, groups: groups.as_ref() },
        (None, Some(limit)) => ItemPick::First { limit, groups: None },
        (None, None) => ItemPick::Subset(args.tasks),
    };
    let (items, selection) = match (&args.file, &args.benchmark) {
        (Some(path), _) if mcscore_datasets::vqa::is_vqa_file(path) => load_items(ItemSource::Vqa(path), pick)?,
        (Some(path), _) => load_items(ItemSource::File(path), pick)?,
        (None, Some(name)) => {
            let benchmark =
                find(name).with_context(|| format!("--benchmark {name}: no such benchmark (mcscore build --list shows them)"))?;
            let sources = args.source.resolve(benchmark)?;
            source_paths = sources.iter().map(|s| s.path.clone()).collect();
            load_items(ItemSource::Benchmark { benchmark, sources: &sources }, pick)?
        }
        (None, None) => unreachable!("clap requires FILE or --benchmark"),
    };
    note_selection(
        selection,
        items.items.len(),
        match (args.limit, args.limit_total) {
            (Some(_), _) => "--limit",
            (None, Some(_)) => "--limit-total",
            (None, None) => "--tasks",
        },
    );
    let chat = args.chat.spec_without_shots("sweep: its prompts are rendered from items and hold no shots")?;
    let spec = SweepSpec { formats, circular: args.circular, instruction: args.instruction, pride: args.pride, chat };
    let sweep = Sweep::new(items, spec)?;
    args.engine.refuse_removed()?;
    if let Some(dir) = &args.write_tasks {
        let protected: Vec<&Path> = inputs(&args).into_iter().chain(source_paths.iter().map(PathBuf::as_path)).collect();
        let written = sweep.write_tasks(dir, &protected)?;
        eprintln!("mcscore: wrote {written} task files ({} tasks each) to {}", sweep.items.items.len(), dir.display());
        return Ok(Outcome::Ok);
    }
    let settings = args.engine.settings()?;
    if !args.merge_shards.is_empty() {
        let (model, scores) = sweep.merge_shards(&args.merge_shards)?;
        if let Some(path) = &args.log_samples {
            let mut log = AtomicFile::with(path, existing(&args))?;
            sweep.write_log(&mut log, &model, &scores).with_context(|| path.display().to_string())?;
            log.commit()?;
        }
        let merged = sweep.analyse(&model, &scores);
        return emit(&sweep.report(pick, &settings, vec![merged])?, &args);
    }
    let models = if args.models.is_empty() { vec![defaults::model()?] } else { args.models.clone() };
    // The same model twice would be swept twice and compared with itself.
    for (i, model) in models.iter().enumerate() {
        if let Some(earlier) = models[..i].iter().find(|m| output::same_path(m, model)) {
            return Err(crate::UsageError(format!(
                "-m {}: the same model file as -m {}; give each model once",
                model.display(),
                earlier.display()
            ))
            .into());
        }
    }
    // Their count was checked before the items were read.
    let projectors: Vec<Option<&Path>> = match &args.mmproj[..] {
        [] => vec![None; models.len()],
        [one] => vec![Some(one.as_path()); models.len()],
        many => many.iter().map(|p| Some(p.as_path())).collect(),
    };
    if let Some(dir) = &args.plots {
        let protected: Vec<&Path> = inputs(&args).into_iter().chain(args.save_json.as_deref()).chain(args.log_samples.as_deref()).collect();
        let names: Vec<String> = models.iter().map(|m| m.display().to_string()).collect();
        for path in plots::sweep_paths(dir, &names) {
            output::check_folder_file(&path, &protected)?;
            output::check_folder_file(&path.with_extension("png"), &protected)?;
        }
    }
    if let Some(shard) = args.shard {
        let [model] = &models[..] else { bail!("--shard scores one model; {} were given", models.len()) };
        let cancel = crate::signals::cancel_on_signal();
        let Some(scores) = sweep.score_shard(model, projectors[0], &settings, shard, &mut Shown::progress(args.progress), &cancel)? else {
            eprintln!("mcscore: {} while scoring {}; nothing was written", crate::signals::interrupted(), model.display());
            return Ok(Outcome::Interrupted);
        };
        let path = args.save_json.as_ref().expect("clap requires --save-json with --shard");
        save(&scores, path, existing(&args))?;
        eprintln!("mcscore: shard {shard}: {} prompts scored, saved to {}", scores.log_probs.len(), path.display());
        return Ok(Outcome::Ok);
    }
    // Written beside its final name and renamed when complete.
    let mut log = args.log_samples.as_deref().map(|path| AtomicFile::with(path, existing(&args))).transpose()?;
    let cancel = crate::signals::cancel_on_signal();
    let mut sweeps = Vec::new();
    for (model, projector) in models.iter().zip(projectors) {
        let mut bar = Shown::progress(args.progress);
        let Some(scores) = sweep.score(model, projector, &settings, &mut bar, &cancel)? else {
            eprintln!("mcscore: {} while scoring {}; nothing was written", crate::signals::interrupted(), model.display());
            return Ok(Outcome::Interrupted);
        };
        if let Some(log) = log.as_mut() {
            sweep.write_log(log, model, &scores).with_context(|| log.path().display().to_string())?;
        }
        sweeps.push(sweep.analyse(model, &scores));
    }
    if let Some(log) = log {
        log.commit()?;
    }
    emit(&sweep.report(pick, &settings, sweeps)?, &args)
}

/// The report as text or JSON, with its plots and saved copy. The report is
/// printed first, so that a file that cannot be written at the end (a full
/// disk) loses nothing: every failure is named, and the first fails the run.
fn emit(report: &SweepReport, args: &Args) -> anyhow::Result<Outcome> {
    let printed = if args.json {
        crate::print_json(report)
    } else if let Some(format) = args.format.table() {
        out!("{}", table(report).render(format))
    } else {
        print_human(report)
    };
    let plotted = args.plots.as_ref().map_or(Ok(()), |dir| {
        let protected: Vec<&Path> = inputs(args).into_iter().chain(args.save_json.as_deref()).chain(args.log_samples.as_deref()).collect();
        plots::write(dir, &protected, &plots::sweep(report)?)
    });
    let saved = args.save_json.as_ref().map_or(Ok(()), |path| Ok(save(report, path, existing(args))?));
    let mut failures = [printed, plotted, saved].into_iter().filter_map(Result::err);
    let first = failures.next();
    for later in failures {
        crate::flag_hints::report(crate::flag_hints::Asked::Sweep, &later);
    }
    match first {
        Some(error) => Err(error),
        None => Ok(Outcome::Ok),
    }
}

/// One row per model and prompt format.
fn table(report: &SweepReport) -> Table {
    let mut t = Table::with_detail([
        ("model", true),
        ("format", true),
        ("tasks", false),
        ("accuracy", true),
        ("ci_low", true),
        ("ci_high", true),
        ("rotation_mean", false),
        ("circular_accuracy", report.circular),
        ("circular_ci_low", false),
        ("circular_ci_high", false),
        ("rstd", true),
        ("pia", true),
    ]);
    for m in &report.models {
        for f in &m.formats {
            let fraction = |x: Option<f64>| x.map_or(Cell::Empty, Cell::Fraction);
            let (low, high) = f.accuracy_interval.unzip();
            let (circular_low, circular_high) = f.circular_interval.unzip();
            t.row(vec![
                Cell::text(mcscore_eval::log::label(&m.model)),
                Cell::text(&*f.format),
                Cell::Count(report.tasks as u64),
                Cell::Fraction(f.accuracy),
                fraction(low),
                fraction(high),
                fraction(f.rotation_mean()),
                fraction(f.circular_accuracy),
                fraction(circular_low),
                fraction(circular_high),
                Cell::Fraction(f.rstd),
                Cell::maybe(f.pia, 3),
            ]);
        }
    }
    t
}

fn print_human(report: &SweepReport) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let rotations = if report.circular { "every rotation" } else { "the original order" };
    for m in &report.models {
        let model = mcscore_eval::log::label(&m.model);
        writeln!(
            out,
            "{model} on {}: {} tasks × {} formats, {rotations} ({} prompts)",
            report.file,
            report.tasks,
            report.formats.len(),
            m.prompts
        )
        .map_err(crate::stdout_error)?;
        if let Some(chat) = &m.chat {
            writeln!(out, "  {}", chat_line(chat)).map_err(crate::stdout_error)?;
        }
        let positions = m.formats.first().map_or(0, |f| f.picks.len());
        // A to Z, then numbers: a saved sweep may have any number of positions.
        let letters: String = (0..positions).map(crate::run_text::option_label).collect::<Vec<_>>().join("/");
        // Each percentage with its 95 % Wilson interval where the sweep has it.
        let with_interval = |value: f64, interval: Option<(f64, f64)>| match interval {
            Some((low, high)) => format!("{:.2} [{:.1}, {:.1}]", points(value), points(low), points(high)),
            None => format!("{:.2}", points(value)),
        };
        let intervals = m.formats.iter().any(|f| f.accuracy_interval.is_some());
        let (width, circular_width) = if intervals { (22, 24) } else { (8, 10) };
        writeln!(
            out,
            "  {:<24}{:>width$}{:>10}{:>circular_width$}  {:<24}{:>7}{:>7}",
            "format",
            if intervals { "acc % [95 % CI]" } else { "acc %" },
            "rot. mean",
            "circular",
            format!("picks {letters} %"),
            "RStd",
            "PIA"
        )
        .map_err(crate::stdout_error)?;
        for f in &m.formats {
            let picks: Vec<String> = f.pick_shares().iter().map(|&share| format!("{:.0}", points(share))).collect();
            writeln!(
                out,
                "  {:<24}{:>width$}{:>10}{:>circular_width$}  {:<24}{:>7.1}{:>7}",
                f.format,
                with_interval(f.accuracy, f.accuracy_interval),
                f.rotation_mean().map_or("-".to_owned(), |c| format!("{:.2}", points(c))),
                f.circular_accuracy.map_or("-".to_owned(), |c| with_interval(c, f.circular_interval)),
                picks.join(" "),
                points(f.rstd),
                f.pia.map_or("-".to_owned(), |p| format!("{p:.3}"))
            )
            .map_err(crate::stdout_error)?;
        }
        writeln!(out, "  {}", spread_line("accuracy", &m.accuracy_across_formats)).map_err(crate::stdout_error)?;
        if let Some(s) = &m.circular_accuracy_across_formats {
            writeln!(out, "  {}", spread_line("circular accuracy", s)).map_err(crate::stdout_error)?;
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
                let p = f.pride.as_ref().expect("every format has PriDe: merge_saved and the sweep check it");
                let prior: Vec<String> = p.prior.iter().map(|x| format!("{x:.2}")).collect();
                writeln!(
                    out,
                    "  {:<24}{:<28}{:>20}{:>20}",
                    f.format,
                    prior.join(" "),
                    format!("{:.2}→{:.2}", points(p.accuracy_before), points(p.accuracy_after)),
                    format!("{:.1}→{:.1}", points(p.rstd_before), points(p.rstd_after))
                )
                .map_err(crate::stdout_error)?;
            }
        }
        writeln!(
            out,
            "  {} tokens decoded against {} scoring each prompt alone ({:.3}×), {:.1} s scoring",
            m.tokens_decoded,
            m.tokens_unshared,
            m.sharing_ratio(),
            m.scoring_seconds
        )
        .map_err(crate::stdout_error)?;
    }
    if let Some(c) = &report.comparison {
        writeln!(out, "Models compared by {} over {} formats:", c.ranked_by, report.formats.len()).map_err(crate::stdout_error)?;
        for (m, counts) in report.models.iter().zip(&c.rank_distribution) {
            let counts: Vec<String> = counts.iter().enumerate().map(|(r, n)| format!("#{}: {n}", r + 1)).collect();
            writeln!(out, "  {:<40} {}", mcscore_eval::log::label(&m.model), counts.join(", ")).map_err(crate::stdout_error)?;
        }
        for p in &c.pairs {
            writeln!(
                out,
                "  {} vs {}: ahead in {} and {} formats, tied in {}{}",
                mcscore_eval::log::label(&report.models[p.a].model),
                mcscore_eval::log::label(&report.models[p.b].model),
                p.a_ahead,
                p.b_ahead,
                p.tied,
                if p.reverses() { " (the format decides the winner)" } else { "" }
            )
            .map_err(crate::stdout_error)?;
        }
        if c.kendall_pairs == 0 {
            writeln!(
                out,
                "  reversal rate {:.3}; Kendall τ between formats: undefined (no format ranks the models without ties)",
                c.reversal_rate
            )?;
        } else {
            writeln!(
                out,
                "  reversal rate {:.3}; Kendall τ between formats: mean {:.3}, min {:.3} over {} format pairs",
                c.reversal_rate, c.kendall_tau_mean, c.kendall_tau_min, c.kendall_pairs
            )?;
        }
    }
    Ok(())
}

/// One line of a metric's spread across formats; where every format has the
/// same value, no format is named as the least or the most.
fn spread_line(metric: &str, s: &mcscore_eval::sweep::FormatSpread) -> String {
    if s.min == s.max {
        format!("{metric} across formats: {:.2} in every format", points(s.min))
    } else {
        format!(
            "{metric} across formats: mean {:.2}, std {:.2}, min {:.2} ({}), max {:.2} ({})",
            points(s.mean),
            points(s.std),
            points(s.min),
            s.min_format,
            points(s.max),
            s.max_format
        )
    }
}
