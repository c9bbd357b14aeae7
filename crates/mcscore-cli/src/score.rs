//! `mcscore score`: llama-perplexity --multiple-choice, loud and lean.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use mcscore_engine::{plan, select_tasks, Completion, Engine};
use mcscore_format::{read_lenient, sha256_file, sha256_hex, Baselines, Error as FormatError, Task, TaskFile};
use mcscore_metrics::{Normalisation, Proportion};
use serde_json::json;

use crate::engine_args::{self, EngineArgs};
use crate::samples::{self, Header, Opened, SampleLog, TaskRecord};
use crate::{defaults, llama_output, output, Outcome};

/// The context of the unconditional pass of `--pmi` (lm-evaluation-harness, OLMES).
const UNCONDITIONAL_CONTEXT: &str = "Answer:";

const EXAMPLES: &str = "\
Examples:
  mcscore score                                   the default model on the bundled dataset
  mcscore score -m model.gguf -bf mmlu.bin --json
  mcscore score -m model.gguf -bf hellaswag.bin --multiple-choice -c 512 -np 16 -t 2 --output llama
  mcscore score -m model.gguf -bf f.bin --log-samples run.jsonl    (Ctrl-C, then the same command
                                                                  with --resume continues it)";

/// Score a GGUF model on a multiple-choice task file by log-likelihood.
///
/// Same semantics as `llama-perplexity --multiple-choice` (tokenise
/// `question + " " + option`, evaluate the shared prefix once, score each option
/// by its tokens' log-probabilities, first maximum wins), from one pass:
/// acc (sum), acc_norm (per token, llama-perplexity's number), acc_char and
/// acc_byte. Unlike llama-perplexity it fails loudly: an invalid file, a task
/// that does not fit, a model that does not load, or fewer scored tasks than
/// announced all exit 1 with a message naming the file, task and flag.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Task file (.bin); default: the bundled dataset.
    #[arg(value_name = "FILE", conflicts_with = "binary_file")]
    file: Option<PathBuf>,
    /// Task file: -bf FILE, as llama-perplexity takes it (also -f, --file).
    #[arg(long = "binary-file", short = 'f', visible_alias = "file", value_name = "FILE")]
    binary_file: Option<PathBuf>,
    /// GGUF model; default: gemma-3-270m Q4_K_M from scripts/fetch-model (or $MCSCORE_MODEL).
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    model: Option<PathBuf>,
    /// Accepted for llama-perplexity compatibility; multiple choice is what mcscore does.
    #[arg(long)]
    multiple_choice: bool,
    /// Score N tasks picked as llama-perplexity picks them (mt19937 seeded 1), in its
    /// order. 0, as in llama-perplexity, and N at or above the task count score every
    /// task in file order.
    #[arg(long, value_name = "N")]
    multiple_choice_tasks: Option<usize>,
    #[command(flatten)]
    engine: EngineArgs,
    /// Also score every option after the context "Answer:" alone, for acc_pmi
    /// (log-probability given the question minus log-probability without it).
    #[arg(long)]
    pmi: bool,
    /// Score a file that fails strict validation the way llama.cpp would, listing what is wrong.
    #[arg(long)]
    lenient: bool,
    /// `human` (summary, progress bar) or `llama` (llama-perplexity's stdout byte for byte,
    /// and its Final result / Random chance lines on stderr).
    #[arg(long, value_enum, default_value = "human")]
    output: OutputFormat,
    /// Print the results as JSON on stdout.
    #[arg(long, conflicts_with = "output")]
    json: bool,
    /// Write one JSON line per task (per-option sums and counts, predictions, gold) to FILE.
    #[arg(long, value_name = "FILE")]
    log_samples: Option<PathBuf>,
    /// Continue the --log-samples file of an interrupted run with the same inputs and
    /// settings (the same contents: paths may differ). A complete log is left as it is
    /// and its results are printed.
    #[arg(long, requires = "log_samples")]
    resume: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutputFormat {
    Human,
    Llama,
}

/// The tasks of a file: strictly validated, or read as llama.cpp would.
enum Source {
    Strict(TaskFile),
    Lenient(Vec<u8>),
}

impl Source {
    fn open(path: &Path, lenient: bool) -> anyhow::Result<Source> {
        match TaskFile::open(path) {
            Ok(file) => Ok(Source::Strict(file)),
            Err(FormatError::Invalid { faults, .. }) if lenient => {
                let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
                eprintln!("mcscore: warning: {}: {} fault(s); scoring it as llama.cpp would (--lenient):", path.display(), faults.len());
                for fault in faults.iter().take(20) {
                    eprintln!("  {fault}");
                }
                if faults.len() > 20 {
                    eprintln!("  ... and {} more (mcscore validate lists them all)", faults.len() - 20);
                }
                Ok(Source::Lenient(bytes))
            }
            Err(FormatError::Invalid { faults, .. }) => {
                let mut message = format!("{}: invalid task file ({} fault(s)):", path.display(), faults.len());
                for fault in faults.iter().take(20) {
                    message.push_str(&format!("\n  {fault}"));
                }
                message.push_str("\n(run `mcscore validate` for every fault; --lenient scores what llama.cpp would)");
                bail!(message)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn tasks(&self, path: &Path) -> anyhow::Result<Vec<Task<'_>>> {
        Ok(match self {
            Source::Strict(file) => file.tasks().collect(),
            Source::Lenient(bytes) => read_lenient(bytes, path)?,
        })
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Source::Strict(file) => file.bytes(),
            Source::Lenient(bytes) => bytes,
        }
    }
}

/// A progress bar over tasks on stderr (hidden when stderr is not a terminal).
pub(crate) fn task_progress(len: usize, done: usize, message: &'static str) -> ProgressBar {
    let progress = ProgressBar::new(len as u64).with_position(done as u64).with_message(message);
    progress.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} tasks ({per_sec}, eta {eta}) {msg}")
            .expect("valid template"),
    );
    progress
}

/// The tasks `--multiple-choice-tasks` selects, saying on stderr when it
/// selects all of them (0, or more than the file holds).
pub(crate) fn selection(requested: Option<usize>, n_tasks: usize, flag: &str) -> Vec<usize> {
    match requested {
        Some(0) => {
            eprintln!("mcscore: {flag} 0: scoring all {n_tasks} tasks, as llama-perplexity does");
            (0..n_tasks).collect()
        }
        Some(n) if n > n_tasks => {
            eprintln!("mcscore: {flag} {n}: the file has {n_tasks} tasks; scoring all of them");
            (0..n_tasks).collect()
        }
        Some(n) => select_tasks(n_tasks, n),
        None => (0..n_tasks).collect(),
    }
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let path = match args.file.clone().or(args.binary_file.clone()) {
        Some(path) => path,
        None => defaults::dataset()?,
    };
    let model_path = match &args.model {
        Some(model) => model.clone(),
        None => defaults::model()?,
    };
    if let Some(log_path) = &args.log_samples {
        output::check_file(log_path, "--log-samples")?;
    }
    let source = Source::open(&path, args.lenient)?;
    let all_tasks = source.tasks(&path)?;
    let order = selection(args.multiple_choice_tasks, all_tasks.len(), "--multiple-choice-tasks");
    let selected: Vec<(usize, Task<'_>)> = order.iter().map(|&i| (i, all_tasks[i].clone())).collect();
    let settings = args.engine.settings();

    let engine = Engine::load(&model_path, settings.n_gpu_layers)?;
    let prepared = engine.prepare(&selected).with_context(|| path.display().to_string())?;
    let plan = plan(&prepared, &settings).map_err(|e| engine_args::with_flag_hint(e, &path))?;
    engine.check_memory(&plan, settings.n_gpu_layers).map_err(|e| engine_args::with_flag_hint(e, &path))?;
    if plan.n_batch > settings.n_batch {
        eprintln!(
            "mcscore: -b {} is below the {} sequences a fill uses; decoding {} tokens at a time",
            settings.n_batch, plan.n_seq_max, plan.n_batch
        );
    }

    let file_sha256 = sha256_hex(source.bytes());
    let needs_model_hash = args.log_samples.is_some() || args.json;
    let model_sha256 =
        if needs_model_hash { sha256_file(&model_path).with_context(|| model_path.display().to_string())? } else { String::new() };
    let header = Header {
        mcscore: env!("CARGO_PKG_VERSION").to_owned(),
        model: model_path.display().to_string(),
        model_sha256: model_sha256.clone(),
        model_bytes: std::fs::metadata(&model_path).map(|m| m.len()).with_context(|| model_path.display().to_string())?,
        file: path.display().to_string(),
        file_sha256: file_sha256.clone(),
        file_bytes: source.bytes().len() as u64,
        tasks: prepared.len(),
        selection: args.multiple_choice_tasks,
        settings: settings.fingerprint() + if args.lenient { " lenient" } else { "" } + if args.pmi { " pmi" } else { "" },
    };
    // Resume at a batch boundary, so the remaining batches hold the tasks an
    // uninterrupted run's do (only the tokens shared with the previous batch,
    // BOS for most files, are decoded again instead of found cached).
    let boundaries: Vec<usize> = plan.batches.iter().map(|b| b.start).collect();
    let (mut log, mut records, already_complete) = match &args.log_samples {
        Some(log_path) => match SampleLog::open(log_path, &header, args.resume, |done| {
            boundaries.iter().copied().filter(|&b| b <= done).max().unwrap_or(0)
        })? {
            Opened::Writing { log, kept } => (Some(log), kept, false),
            Opened::Complete { records } => {
                eprintln!("mcscore: {} already holds the complete run: left as it is; its results follow", log_path.display());
                (None, records, true)
            }
        },
        None => (None, Vec::new(), false),
    };
    let resumed = records.len();
    let first_batch = if already_complete {
        plan.batches.len()
    } else {
        plan.batches.iter().position(|b| b.start == resumed).unwrap_or(plan.batches.len())
    };
    let mut remaining = plan.clone();
    remaining.batches.drain(..first_batch);

    let llama = args.output == OutputFormat::Llama && !args.json;
    let mut stdout = std::io::stdout().lock();
    if llama {
        let subset = order.len() < all_tasks.len();
        write!(stdout, "{}", llama_output::preamble(all_tasks.len(), prepared.len(), subset)).map_err(crate::stdout_error)?;
        let mut hits = 0;
        for (i, record) in records.iter().enumerate() {
            hits += usize::from(record.correct.acc_norm);
            write!(stdout, "{}", llama_output::running_line(i + 1, hits)).map_err(crate::stdout_error)?;
        }
    }

    // --pmi: the options after "Answer:" alone, scored first (a short pass).
    let uncond: Vec<Vec<f64>> = if args.pmi && !already_complete {
        let bare: Vec<(usize, Task<'_>)> = selected
            .iter()
            .map(|(i, t)| (*i, Task { question: UNCONDITIONAL_CONTEXT, mc1: t.mc1.clone(), mc2: Default::default() }))
            .collect();
        let prepared_bare =
            engine.prepare(&bare).with_context(|| format!("{}: --pmi (options after {UNCONDITIONAL_CONTEXT:?})", path.display()))?;
        let plan_bare = mcscore_engine::plan(&prepared_bare, &settings)?;
        let mut sums = Vec::with_capacity(bare.len());
        let progress = task_progress(bare.len(), 0, "--pmi: options after \"Answer:\"");
        engine.score(&prepared_bare, &plan_bare, &settings, |scores| {
            sums.push(scores.options.iter().map(|o| o.logprob_sum).collect());
            progress.inc(1);
            ControlFlow::Continue(())
        })?;
        progress.finish_and_clear();
        if sums.len() != bare.len() {
            bail!("{}: --pmi scored {} of {} tasks", path.display(), sums.len(), bare.len());
        }
        sums
    } else {
        Vec::new()
    };

    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).context("installing the Ctrl-C handler")?;
    }
    let progress = task_progress(prepared.len(), resumed, "");
    let mut hits_norm = records.iter().filter(|r| r.correct.acc_norm).count();
    let mut write_error = None;
    let mut batch_end = remaining.batches.first().map_or(0, |b| b.end);
    let mut batch_index = 0;
    let score_started = Instant::now();
    let run = engine.score(&prepared, &remaining, &settings, |mut scores| {
        if let Some(bare) = uncond.get(records.len()) {
            for (option, &sum) in scores.options.iter_mut().zip(bare) {
                option.uncond_logprob_sum = Some(sum);
            }
        }
        let record = TaskRecord::new(scores.task, scores.options, scores.correct);
        if let Some(log) = log.as_mut() {
            if let Err(e) = log.record(&record) {
                write_error = Some(e);
                return ControlFlow::Break(());
            }
        }
        hits_norm += usize::from(record.correct.acc_norm);
        records.push(record);
        if llama {
            if let Err(e) = write!(stdout, "{}", llama_output::running_line(records.len(), hits_norm)) {
                write_error = Some(crate::stdout_error(e));
                return ControlFlow::Break(());
            }
        }
        progress.inc(1);
        if records.len() == batch_end {
            // A batch is done: make it durable, then honour Ctrl-C.
            batch_index += 1;
            batch_end = remaining.batches.get(batch_index).map_or(0, |b| b.end);
            if let Some(log) = log.as_mut() {
                if let Err(e) = log.flush() {
                    write_error = Some(e);
                    return ControlFlow::Break(());
                }
            }
            if interrupted.load(Ordering::SeqCst) {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    progress.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    if let Completion::Interrupted { .. } = run.completion {
        if let Some(log) = log {
            log.finish(false, records.len())?;
        }
        stdout.flush().map_err(crate::stdout_error)?;
        eprintln!(
            "mcscore: interrupted after {} of {} tasks{}",
            records.len(),
            prepared.len(),
            match &args.log_samples {
                Some(p) => format!("; {} is marked incomplete: run the same command with --resume to continue", p.display()),
                None => String::new(),
            }
        );
        return Ok(Outcome::Interrupted);
    }
    if records.len() != prepared.len() {
        bail!("{}: scored {} tasks but {} were announced", path.display(), records.len(), prepared.len());
    }
    // Before the results are trusted (or the log marked complete).
    engine.check_unchanged()?;
    if let Some(log) = log {
        log.finish(true, records.len())?;
    }

    let n = records.len();
    let accuracy = |norm: Normalisation| Proportion { successes: records.iter().filter(|r| r.correct.get(norm)).count(), n };
    let baselines = Baselines::of(selected.iter().map(|(_, t)| t));
    let total_options: usize = prepared.iter().map(|t| t.n_options()).sum();
    let tokens = run.tokens;
    let score_seconds = score_started.elapsed().as_secs_f64();

    if llama {
        write!(stdout, "{}", llama_output::EPILOGUE).map_err(crate::stdout_error)?;
        stdout.flush().map_err(crate::stdout_error)?;
        eprint!("{}", llama_output::final_lines(accuracy(Normalisation::AccNorm).successes, n, total_options));
    } else if args.json {
        let metrics: serde_json::Map<String, serde_json::Value> = samples::normalisations(&records)
            .iter()
            .map(|&norm| {
                let a = accuracy(norm);
                (norm.name().to_owned(), json!({ "accuracy": a.percent(), "stderr": a.stderr_percent(), "correct": a.successes }))
            })
            .collect();
        crate::print_json(&json!({
            "model": header.model,
            "model_sha256": model_sha256,
            "file": header.file,
            "file_sha256": file_sha256,
            "tasks": n,
            "selection": args.multiple_choice_tasks,
            "lenient": args.lenient,
            "settings": settings,
            "n_ctx": plan.n_ctx,
            "decodes": plan.batches.len(),
            "metrics": metrics,
            "chance": baselines.chance,
            "majority_class": baselines.majority_class,
            "tokens_evaluated": tokens.decoded,
            "tokens_unshared": tokens.unshared,
            "resumed_tasks": resumed,
            "scoring_seconds": score_seconds,
            "wall_seconds": started.elapsed().as_secs_f64(),
        }))?;
    } else {
        writeln!(stdout, "{} on {}: {n} tasks", model_path.file_name().unwrap_or_default().to_string_lossy(), path.display())
            .map_err(crate::stdout_error)?;
        writeln!(stdout, "  {:<16}{:>9}  {:>7}", "", "accuracy", "± s.e.").map_err(crate::stdout_error)?;
        for &norm in samples::normalisations(&records) {
            let a = accuracy(norm);
            let note = if norm == Normalisation::AccNorm { "  (llama-perplexity's number)" } else { "" };
            writeln!(stdout, "  {:<16}{:>8.2}%  {:>7.2}{note}", norm.name(), a.percent(), a.stderr_percent())
                .map_err(crate::stdout_error)?;
        }
        writeln!(stdout, "  {:<16}{:>8.2}%", "chance", baselines.chance).map_err(crate::stdout_error)?;
        writeln!(
            stdout,
            "  {:<16}{:>8.2}%  (always answer position {})",
            "majority_class", baselines.majority_class, baselines.majority_position
        )
        .map_err(crate::stdout_error)?;
        writeln!(
            stdout,
            "  {} tokens decoded ({} if tasks shared none) in {} decodes, {score_seconds:.1} s scoring ({:.0} tokens/s), {:.1} s in all",
            tokens.decoded,
            tokens.unshared,
            remaining.batches.len(),
            tokens.decoded as f64 / score_seconds.max(1e-9),
            started.elapsed().as_secs_f64()
        )
        .map_err(crate::stdout_error)?;
    }
    Ok(Outcome::Ok)
}
