//! `mcscore score`: llama-perplexity --multiple-choice, loud and lean.

use std::io::Write;
use std::path::{Path, PathBuf};

use mcscore_eval::log::{accuracy, normalisations, TaskRecord};
use mcscore_eval::shard::Shard;
use mcscore_eval::{Cancel, End, EvalError, Phase, Progress, ScoreJob, ScoreSpec, Selection, TaskKind};
use mcscore_format::Baselines;
use mcscore_metrics::Normalisation;
use serde_json::json;

use crate::chat_args::ChatArgs;
use crate::engine_args::{self, EngineArgs};
use crate::progress::{Meter, ProgressMode};
use crate::{defaults, llama_output, output, Outcome};

const EXAMPLES: &str = "\
Examples:
  mcscore score                                   the default model on the bundled dataset
  mcscore score -m model.gguf -bf mmlu.bin --json
  mcscore score -m model.gguf -bf hellaswag.bin --multiple-choice -c 512 -np 16 -t 2 --output llama
  mcscore score -m model.gguf -f hellaswag_val_full.txt --hellaswag --hellaswag-tasks 400
  mcscore score -m model.gguf -f winogrande-debiased-eval.csv --winogrande   (every line, the last included)
  mcscore score -m model.gguf -bf f.bin --log-samples run.jsonl    (Ctrl-C, then the same command
                                                                  with --resume continues it)";

/// Score a GGUF model on a multiple-choice task file by log-likelihood.
///
/// Same semantics as `llama-perplexity --multiple-choice` (tokenise
/// `question + " " + option`, evaluate the shared prefix once, score each option
/// by its tokens' log-probabilities, first maximum wins), from one pass:
/// acc (sum), acc_norm (per token, llama-perplexity's number), acc_char and
/// acc_byte. `--hellaswag` and `--winogrande` read llama-perplexity's text
/// inputs for those modes and score them as it does. Unlike llama-perplexity
/// it fails loudly: an invalid file or line, a task that does not fit, a model
/// that does not load, or fewer scored tasks than announced all exit 1 with a
/// message naming the file, task or line, and flag.
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
    /// FILE is a multiple-choice task file (.bin): the default mode.
    #[arg(long, conflicts_with_all = ["hellaswag", "winogrande"])]
    multiple_choice: bool,
    /// Score N tasks picked as llama-perplexity picks them (mt19937 seeded 1), in its
    /// order. 0, as in llama-perplexity, and N at or above the task count score every
    /// task in file order.
    #[arg(long, value_name = "N", conflicts_with_all = ["hellaswag", "winogrande"])]
    multiple_choice_tasks: Option<usize>,
    /// FILE is HellaSwag in llama.cpp's six-line text format (hellaswag_val_full.txt:
    /// context, gold index 0-3, four endings per task), scored as llama-perplexity
    /// --hellaswag: in its shuffled order, each ending after `context + " "`.
    #[arg(long, conflicts_with = "winogrande")]
    hellaswag: bool,
    /// HellaSwag tasks to score, picked as llama-perplexity picks them (default 400,
    /// as it); 0, or N at or above the task count, scores every task (llama-perplexity
    /// scores none for 0).
    #[arg(long, value_name = "N", requires = "hellaswag")]
    hellaswag_tasks: Option<usize>,
    /// FILE is a Winogrande CSV (index,sentence,option1,option2,answer; the sentence
    /// quoted when it holds commas; `mcscore build winogrande-debiased-eval` writes it),
    /// scored as llama-perplexity --winogrande: each option fills the `_`, and the
    /// sentence after it is scored. Every line is read (llama-perplexity drops the last).
    #[arg(long)]
    winogrande: bool,
    /// Winogrande tasks to score, picked as llama-perplexity picks them; 0 (its
    /// default), or N at or above the task count, scores every task in file order.
    #[arg(long, value_name = "N", requires = "winogrande")]
    winogrande_tasks: Option<usize>,
    /// Score the file's first N tasks, in file order (lm-evaluation-harness's
    /// --limit), in any mode; all of them where the file has no more. Not with
    /// --multiple-choice-tasks, --hellaswag-tasks or --winogrande-tasks, which are
    /// llama-perplexity's random picks of N.
    #[arg(long, value_name = "N", conflicts_with_all = ["multiple_choice_tasks", "hellaswag_tasks", "winogrande_tasks"],
          value_parser = parse_limit)]
    limit: Option<usize>,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    chat: ChatArgs,
    /// Also score every option after the context "Answer:" alone, for acc_pmi
    /// (log-probability given the question minus log-probability without it).
    #[arg(long, conflicts_with = "winogrande")]
    pmi: bool,
    /// Score a file that fails strict validation the way llama.cpp would, listing what is wrong.
    #[arg(long, conflicts_with_all = ["hellaswag", "winogrande"])]
    lenient: bool,
    /// `human` (summary, progress bar) or `llama` (llama-perplexity's stdout byte for byte,
    /// and its Final result / Random chance lines on stderr).
    #[arg(long, value_enum, default_value = "human")]
    output: OutputFormat,
    /// Print the results as JSON on stdout.
    #[arg(long, conflicts_with = "output")]
    json: bool,
    /// Say where the time went, phase by phase (read, model load, tokenising,
    /// planning, hashing, log; then context, batching, decode, logits, logging),
    /// and where memory went (peak RSS; llama.cpp's weight, KV-cache and compute
    /// buffers; anonymous and file-backed pages): on stderr, and as "timings"
    /// and "memory" in --json.
    #[arg(long)]
    timings: bool,
    /// Progress on stderr: a bar on a terminal, and where stderr is not one (a
    /// Slurm job's output file, a CI log) a line every 30 s and at each tenth
    /// of the tasks: done of total, rate, time left.
    #[arg(long, value_enum, default_value = "auto", value_name = "auto|bar|lines|none")]
    progress: ProgressMode,
    /// Write one JSON line per task (per-option sums and counts, predictions, gold) to FILE.
    #[arg(long, value_name = "FILE")]
    log_samples: Option<PathBuf>,
    /// Score one shard of the run: K/N (K from 0), or `auto`: K and N from a Slurm
    /// array job (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT)
    /// or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with N from --shards).
    /// Shards are contiguous runs of tasks balanced by their bytes (each shard
    /// reads and tokenises its own tasks only); `mcscore merge` joins their
    /// logs into one run's.
    #[arg(long, value_name = "K/N|auto", requires = "log_samples")]
    shard: Option<String>,
    /// The number of shards, for `--shard auto` under Kubernetes (checked against Slurm's count).
    #[arg(long, value_name = "N", requires = "shard", value_parser = clap::value_parser!(u32).range(1..))]
    shards: Option<u32>,
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

impl Args {
    /// Refuses flags clap still parses but that were removed.
    pub(crate) fn refuse_removed(&self) -> Result<(), crate::UsageError> {
        self.engine.refuse_removed()
    }

    fn kind(&self) -> TaskKind {
        if self.hellaswag {
            TaskKind::HellaSwag
        } else if self.winogrande {
            TaskKind::Winogrande
        } else {
            TaskKind::MultipleChoice
        }
    }

    /// The subset flag of the mode, and its value (HellaSwag's default is
    /// llama-perplexity's 400); none with --limit.
    fn subset(&self) -> (&'static str, Option<usize>) {
        if self.limit.is_some() {
            return ("--limit", None);
        }
        match self.kind() {
            TaskKind::MultipleChoice => ("--multiple-choice-tasks", self.multiple_choice_tasks),
            TaskKind::HellaSwag => ("--hellaswag-tasks", Some(self.hellaswag_tasks.unwrap_or(HELLASWAG_TASKS))),
            TaskKind::Winogrande => ("--winogrande-tasks", self.winogrande_tasks),
        }
    }
}

/// `--limit`: a positive number of tasks (0 would score nothing).
fn parse_limit(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a positive number of tasks, got {text:?}")),
    }
}

/// llama-perplexity's default `--hellaswag-tasks`.
const HELLASWAG_TASKS: usize = 400;

/// Says on stderr when a subset request (`flag`) selects every task.
pub(crate) fn note_selection(selection: Selection, n_tasks: usize, flag: &str) {
    match selection {
        Selection::AllForZero => eprintln!("mcscore: {flag} 0: scoring all {n_tasks} tasks, as llama-perplexity does"),
        Selection::AllForMore { asked } => eprintln!("mcscore: {flag} {asked}: the file has {n_tasks} tasks; scoring all of them"),
        Selection::First(limit) if limit > n_tasks => {
            eprintln!("mcscore: --limit {limit}: the file has {n_tasks} tasks; scoring all of them")
        }
        Selection::All | Selection::Subset(_) | Selection::First(_) => {}
    }
}

/// A job's progress on stderr (a bar or lines per phase, `--progress`) and,
/// for `--output llama`, llama-perplexity's running lines on stdout. `score`
/// and `sweep` share it.
pub(crate) struct Shown {
    mode: ProgressMode,
    meter: Option<Meter>,
    /// Print the running lines of this mode, counting its hits from `hits`.
    llama: Option<TaskKind>,
    hits: usize,
}

impl Shown {
    /// Progress alone, shown as `mode` says.
    pub(crate) fn progress(mode: ProgressMode) -> Shown {
        Shown { mode, meter: None, llama: None, hits: 0 }
    }

    /// llama-perplexity's running lines of `kind`, without progress.
    pub(crate) fn llama(kind: TaskKind) -> Shown {
        Shown { mode: ProgressMode::None, meter: None, llama: Some(kind), hits: 0 }
    }

    /// Tasks counted right by llama-perplexity's rule so far.
    pub(crate) fn hits(&self) -> usize {
        self.hits
    }

    /// Counts `record` and prints its running line, the `done`th of the run.
    pub(crate) fn llama_line(&mut self, kind: TaskKind, record: &TaskRecord, done: usize) -> anyhow::Result<()> {
        if kind == TaskKind::Winogrande {
            self.hits += usize::from(llama_output::winogrande_hit(record));
            return out!("{}", llama_output::winogrande_line(done, self.hits, record));
        }
        self.hits += usize::from(record.correct.acc_norm);
        match kind {
            TaskKind::HellaSwag => out!("{}", llama_output::hellaswag_line(done, self.hits)),
            _ => out!("{}", llama_output::running_line(done, self.hits)),
        }
    }
}

/// Stops `cancel`'s job at its next fill boundary on Ctrl-C.
pub(crate) fn cancel_on_ctrl_c() -> anyhow::Result<Cancel> {
    let cancel = Cancel::new();
    let handle = cancel.clone();
    ctrlc::set_handler(move || handle.cancel()).map_err(|e| anyhow::anyhow!("installing the Ctrl-C handler: {e}"))?;
    Ok(cancel)
}

impl Progress for Shown {
    fn start(&mut self, phase: Phase, total: usize, done: usize) {
        let (what, unit) = match phase {
            Phase::Unconditional => ("--pmi: options after \"Answer:\"", "tasks"),
            Phase::Prompts => ("sweep", "prompts"),
            Phase::Scoring => ("scoring", "tasks"),
        };
        self.meter = Some(Meter::new(self.mode, what, unit, Some(total), done));
    }

    fn tick(&mut self, _phase: Phase) {
        if let Some(meter) = &mut self.meter {
            meter.inc();
        }
    }

    fn tokens(&mut self, n: usize) {
        if let Some(meter) = &mut self.meter {
            meter.tokens(n);
        }
    }

    fn scored(&mut self, record: &TaskRecord, done: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.tick(Phase::Scoring);
        if let Some(kind) = self.llama {
            self.llama_line(kind, record, done)?;
        }
        Ok(())
    }

    fn finish(&mut self, _phase: Phase) {
        if let Some(meter) = self.meter.take() {
            meter.finish();
        }
    }
}

/// The phase profile of a run, on stderr (`--timings`).
fn print_timings(outcome: &mcscore_eval::ScoreOutcome) {
    let t = &outcome.timings;
    let s = &t.scoring;
    let share = |x: f64| 100.0 * x / t.total.max(1e-9);
    let mut lines = vec![
        ("read task file", t.read),
        ("load model", t.load),
        ("tokenise", t.tokenise),
        ("plan fills", t.plan),
        ("model sha256", t.hash),
        ("open log", t.log),
        ("unconditional pass", t.unconditional),
        ("create context", s.context),
        ("build batches", s.batching),
        ("decode", s.decode),
        ("logits, log-softmax", s.logits),
        ("log, progress", s.consumer),
    ];
    let accounted: f64 = lines.iter().map(|l| l.1).sum();
    lines.push(("other", (t.total - accounted).max(0.0)));
    eprintln!("timings ({} fills, {} decodes, {} tokens):", s.fills, s.decodes, outcome.tokens.decoded);
    for (what, seconds) in lines {
        eprintln!("  {what:<22}{seconds:>9.3} s {:>6.1} %", share(seconds));
    }
    eprintln!("  {:<22}{:>9.3} s  (first decode after {:.3} s)", "total", t.total, t.first_decode);
    if s.decode > 0.0 {
        eprintln!("  {:<22}{:>9.0} tokens/s of decode time", "throughput", outcome.tokens.decoded as f64 / s.decode);
    }
    print_memory(&outcome.memory);
}

/// Where memory went, on stderr (`--timings`): the peak first, then
/// llama.cpp's buffers and the kinds of resident page.
fn print_memory(m: &mcscore_engine::MemoryReport) {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let file = m.model_file.max(1) as f64;
    match m.peak {
        Some(peak) => eprintln!(
            "memory: peak RSS {:.0} MB, {:.2}× the model file ({:.0} MB; weights {}):",
            mb(peak),
            peak as f64 / file,
            mb(m.model_file),
            match (m.mmap, m.pages_released) {
                (mcscore_engine::Mmap::On, _) => "mapped, --mmap on",
                (mcscore_engine::Mmap::Off, _) => "read into memory, --mmap off",
                (mcscore_engine::Mmap::Auto, true) => "mapped, pages released as they were copied, --mmap auto",
                (mcscore_engine::Mmap::Auto, false) => "--mmap auto, but no mapping of the file was found to release",
            }
        ),
        None => eprintln!("memory: peak RSS not known here (no /proc/self/status); model file {:.0} MB:", mb(m.model_file)),
    }
    use mcscore_engine::BufferUse;
    for (what, holds) in
        [("weights", BufferUse::Weights), ("KV cache", BufferUse::Kv), ("compute", BufferUse::Compute), ("output", BufferUse::Output)]
    {
        let parts: Vec<String> = m.buffers.iter().filter(|b| b.holds == holds).map(|b| format!("{} {:.0}", b.name, mb(b.bytes))).collect();
        if !parts.is_empty() {
            eprintln!("  {what:<22}{:>9.0} MB  ({})", mb(m.bytes(holds)), parts.join(", "));
        }
    }
    if let Some(sample) = m.largest_sample {
        eprintln!(
            "  {:<22}{:>9.0} MB  (anonymous {:.0}, file-backed {:.0}, shared {:.0})",
            "largest RSS sample",
            mb(sample.total()),
            mb(sample.anonymous),
            mb(sample.file),
            mb(sample.shared)
        );
    }
}

/// The accuracy table of a run of `kind`, against chance and the majority class.
pub(crate) fn print_accuracies(records: &[TaskRecord], kind: TaskKind, baselines: &Baselines) -> anyhow::Result<()> {
    outln!("  {:<16}{:>9}  {:>7}", "", "accuracy", "± s.e.")?;
    for &norm in normalisations(records) {
        let a = accuracy(records, norm);
        // Winogrande's number breaks ties towards the second option, acc_norm towards the first.
        let note = if norm == Normalisation::AccNorm && kind != TaskKind::Winogrande { "  (llama-perplexity's number)" } else { "" };
        outln!("  {:<16}{:>8.2}%  {:>7.2}{note}", norm.name(), a.percent(), a.stderr_percent())?;
    }
    outln!("  {:<16}{:>8.2}%", "chance", baselines.chance)?;
    outln!("  {:<16}{:>8.2}%  (always answer position {})", "majority_class", baselines.majority_class, baselines.majority_position)?;
    Ok(())
}

/// What llama-perplexity prints after the last task of `kind`: the end of its
/// stdout, then its final lines on stderr (`hits` right of `n`).
pub(crate) fn print_llama_end(kind: TaskKind, hits: usize, n: usize, total_options: usize) -> anyhow::Result<()> {
    out!("{}", llama_output::EPILOGUE)?;
    std::io::stdout().flush().map_err(crate::stdout_error)?;
    eprint!("{}", llama_final(kind, hits, n, total_options));
    Ok(())
}

/// What llama-perplexity prints on stdout before the first task of `kind`:
/// `n_scored` of `n_file` tasks, `subset` when they were picked.
pub(crate) fn llama_preamble(kind: TaskKind, n_file: usize, n_scored: usize, subset: bool) -> String {
    match kind {
        TaskKind::MultipleChoice => llama_output::preamble(n_file, n_scored, subset),
        TaskKind::HellaSwag => llama_output::HELLASWAG_PREAMBLE.to_owned(),
        TaskKind::Winogrande => String::new(),
    }
}

/// What llama-perplexity logs on stderr after the last task of `kind`.
pub(crate) fn llama_final(kind: TaskKind, hits: usize, n: usize, total_options: usize) -> String {
    match kind {
        TaskKind::MultipleChoice => llama_output::final_lines(hits, n, total_options),
        TaskKind::HellaSwag => String::new(),
        TaskKind::Winogrande => llama_output::winogrande_final(hits, n).unwrap_or_default(),
    }
}

/// The shard `--shard` names: `K/N`, or `auto` from the scheduler's
/// environment (`env`). A missing or inconsistent variable is a usage error,
/// never shard 0 of 1.
fn shard_from(text: &str, shards: Option<usize>, env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, crate::UsageError> {
    let usage = |message: String| crate::UsageError(format!("--shard {text}: {message}"));
    if text != "auto" {
        let shard: Shard = text.parse().map_err(|e: String| crate::UsageError(format!("--shard {e}")))?;
        if shards.is_some_and(|n| n != shard.count) {
            return Err(usage(format!("--shards {} differs from N", shards.unwrap_or_default())));
        }
        return Ok(shard);
    }
    let number = |name: &str| -> Result<Option<usize>, crate::UsageError> {
        env(name).map(|v| v.trim().parse::<usize>().map_err(|_| usage(format!("{name}={v:?} is not a whole number")))).transpose()
    };
    let (slurm, kubernetes) = (number("SLURM_ARRAY_TASK_ID")?, number("JOB_COMPLETION_INDEX")?);
    let (index, count) = match (slurm, kubernetes) {
        (Some(id), None) => {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let count = number("SLURM_ARRAY_TASK_COUNT")?
                .ok_or_else(|| usage("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not".to_owned()))?;
            if let Some(n) = shards.filter(|&n| n != count) {
                return Err(usage(format!("--shards {n} differs from SLURM_ARRAY_TASK_COUNT={count}")));
            }
            let index =
                id.checked_sub(min).ok_or_else(|| usage(format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")))?;
            (index, count)
        }
        (None, Some(index)) => {
            let count = shards.ok_or_else(|| usage("JOB_COMPLETION_INDEX is set; give the number of shards with --shards N".to_owned()))?;
            (index, count)
        }
        (Some(_), Some(_)) => return Err(usage("both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set".to_owned())),
        (None, None) => {
            return Err(usage(
                "neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set".to_owned(),
            ))
        }
    };
    if index >= count {
        return Err(usage(format!("shard {index} is not below the shard count {count} (are the array indices contiguous?)")));
    }
    Ok(Shard { index, count })
}

/// The message of an invalid file: its first faults, and what to do; with
/// `lenient`, the faults even a lenient read cannot get past.
fn invalid_file(error: EvalError, lenient: bool) -> anyhow::Error {
    let EvalError::Format(mcscore_format::Error::Invalid { path, faults }) = &error else { return error.into() };
    let what = if lenient { "cannot be scored even with --lenient" } else { "invalid task file" };
    let mut message = format!("{}: {what} ({} fault(s)):", path.display(), faults.len());
    for fault in faults.iter().take(20) {
        message.push_str(&format!("\n  {fault}"));
    }
    if lenient {
        message.push_str("\n(mcscore scores text; llama-perplexity would hand these bytes to its tokenizer as they are)");
    } else {
        message.push_str("\n(run `mcscore validate` for every fault; --lenient scores what llama.cpp would)");
    }
    anyhow::anyhow!(message)
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let kind = args.kind();
    let path = match args.file.clone().or(args.binary_file.clone()) {
        Some(path) => path,
        None if kind == TaskKind::MultipleChoice => defaults::dataset()?,
        None => return Err(crate::UsageError(format!("{} needs the file to score: -f FILE", kind.flag())).into()),
    };
    let (subset_flag, subset) = args.subset();
    let shard = match &args.shard {
        Some(text) => Some(shard_from(text, args.shards.map(|n| n as usize), &|name| std::env::var(name).ok())?),
        None => None,
    };
    let model = match &args.model {
        Some(model) => model.clone(),
        None => defaults::model()?,
    };
    if let Some(log_path) = &args.log_samples {
        output::check_log(log_path, "--log-samples", &[&path, &model])?;
    }
    let settings = args.engine.settings()?;
    let mut spec = ScoreSpec::new(&model, &path);
    spec.kind = kind;
    spec.lenient = args.lenient;
    spec.subset = subset;
    spec.limit = args.limit;
    spec.pmi = args.pmi;
    spec.settings = settings.clone();
    spec.log = args.log_samples.clone();
    spec.resume = args.resume;
    spec.hash_model = args.json;
    spec.hash_cache = Some(defaults::cache_dir());
    spec.shard = shard;
    spec.chat = args.chat.spec(&path)?;
    let job = ScoreJob::prepare(spec).map_err(|e| match e {
        e @ EvalError::Format(mcscore_format::Error::Invalid { .. }) => invalid_file(e, args.lenient),
        EvalError::Log(mcscore_eval::LogError::Exists { path }) => {
            anyhow::anyhow!("{}: --log-samples file exists; pass --resume to continue it, or remove it to start again", path.display())
        }
        e => engine_args::with_flag_hint(e),
    })?;
    let faults = job.lenient_faults();
    if !faults.is_empty() {
        eprintln!("mcscore: warning: {}: {} fault(s); scoring it as llama.cpp would (--lenient):", path.display(), faults.len());
        for fault in faults.iter().take(20) {
            eprintln!("  {fault}");
        }
        if faults.len() > 20 {
            eprintln!("  ... and {} more (mcscore validate lists them all)", faults.len() - 20);
        }
    }
    note_selection(job.selection(), job.file_tasks(), subset_flag);
    if job.already_complete() {
        if let Some(log) = &args.log_samples {
            eprintln!("mcscore: {} already holds the complete run: left as it is; its results follow", log.display());
        }
    }

    let llama = (args.output == OutputFormat::Llama && !args.json).then_some(kind);
    // llama-perplexity's running lines on stdout replace progress.
    let mode = if llama.is_some() { ProgressMode::None } else { args.progress };
    let mut shown = Shown { mode, meter: None, llama, hits: 0 };
    if let Some(kind) = llama {
        let picked = matches!(job.selection(), Selection::Subset(_)) && job.tasks() < job.file_tasks();
        out!("{}", llama_preamble(kind, job.file_tasks(), job.tasks(), picked))?;
        for (i, record) in job.kept().iter().enumerate() {
            shown.llama_line(kind, record, i + 1)?;
        }
    }
    let cancel = cancel_on_ctrl_c()?;
    let outcome = job.run(&mut shown, &cancel).map_err(|e| match e {
        EvalError::Consumer(e) => anyhow::anyhow!("{e}"),
        e => e.into(),
    })?;
    if outcome.end == End::Interrupted {
        std::io::stdout().flush().map_err(crate::stdout_error)?;
        eprintln!(
            "mcscore: interrupted after {} of {} tasks{}",
            outcome.records.len(),
            outcome.header.tasks,
            match &args.log_samples {
                Some(p) => format!("; {} is marked incomplete: run the same command with --resume to continue", p.display()),
                None => String::new(),
            }
        );
        return Ok(Outcome::Interrupted);
    }
    if outcome.resumed > 0 && outcome.end == End::Finished {
        eprintln!("mcscore: resumed: {} tasks taken from the log", outcome.resumed);
    }
    print_results(&args, &outcome, &model, &path, &settings, shown.hits)?;
    if args.timings {
        print_timings(&outcome);
    }
    Ok(Outcome::Ok)
}

fn print_results(
    args: &Args,
    outcome: &mcscore_eval::ScoreOutcome,
    model: &Path,
    path: &Path,
    settings: &mcscore_engine::Settings,
    llama_hits: usize,
) -> anyhow::Result<()> {
    let n = outcome.records.len();
    let baselines = &outcome.baselines;
    let tokens = outcome.tokens;
    let llama = args.output == OutputFormat::Llama && !args.json;
    // Accuracy per group (MMLU's subjects and categories), where the manifest
    // records the file's groups; llama-perplexity's output has none. Groups
    // that cannot be read or do not fit the file lose nothing of the run: a warning.
    let groups = (!llama)
        .then(|| {
            crate::compare::groups_from(None, None, &outcome.header.file_sha256).and_then(|groups| {
                groups
                    .map(|g| mcscore_eval::results::group_accuracies(&outcome.records, &g, Normalisation::AccNorm, path))
                    .transpose()
                    .map_err(Into::into)
            })
        })
        .transpose()
        .unwrap_or_else(|error| {
            eprintln!("mcscore: warning: no accuracy per group: {}", crate::with_causes(&*error));
            None
        })
        .flatten();
    if llama {
        print_llama_end(args.kind(), llama_hits, n, outcome.total_options)?;
    } else if args.json {
        let fractions = mcscore_eval::results::baselines(&outcome.records);
        crate::print_json(&json!({
            "schema_version": mcscore_eval::results::SCHEMA_VERSION,
            "model": outcome.header.model,
            "model_sha256": outcome.header.model_sha256,
            "model_sha256_cached": outcome.header.model_sha256_cached,
            "file": outcome.header.file,
            "file_sha256": outcome.header.file_sha256,
            "tasks": n,
            "mode": args.kind().flag().trim_start_matches('-'),
            "selection": args.subset().1,
            "limit": args.limit,
            "lenient": args.lenient,
            "chat": outcome.header.chat,
            "settings": settings,
            "n_ctx": outcome.n_ctx,
            "fills": outcome.planned_fills,
            // The same count under its old name, kept for schema 2 only: a fill is
            // not a llama_decode call (timings.scoring.decodes counts those).
            "decodes": outcome.planned_fills,
            "metrics": mcscore_eval::results::accuracies(&outcome.records),
            "groups": groups,
            "chance": fractions.chance,
            "majority_class": fractions.majority_class,
            "tokens_evaluated": tokens.decoded,
            "tokens_unshared": tokens.unshared,
            "tokens_padding": tokens.padding,
            "resumed_tasks": outcome.resumed,
            "scoring_seconds": outcome.scoring_seconds,
            "wall_seconds": outcome.wall_seconds,
            "timings": args.timings.then_some(outcome.timings),
            "memory": args.timings.then_some(&outcome.memory),
        }))?;
    } else {
        outln!("{} on {}: {n} tasks", model.file_name().unwrap_or_default().to_string_lossy(), path.display())?;
        if let Some(chat) = &outcome.header.chat {
            outln!("  {}", chat_line(chat))?;
        }
        print_accuracies(&outcome.records, args.kind(), baselines)?;
        if let Some(groups) = &groups {
            out!("{}", crate::text::groups_table(groups))?;
        }
        outln!(
            "  {} tokens decoded ({} if tasks shared none) in {} fills, {:.1} s scoring ({:.0} tokens/s), {:.1} s in all",
            tokens.decoded,
            tokens.unshared,
            outcome.fills,
            outcome.scoring_seconds,
            tokens.decoded as f64 / outcome.scoring_seconds.max(1e-9),
            outcome.wall_seconds
        )?;
    }
    Ok(())
}

/// How a run used its chat template, in a line (`score` and `sweep`).
pub(crate) fn chat_line(chat: &mcscore_eval::chat::ChatHeader) -> String {
    let bos = match chat.bos.as_str() {
        "none" => "no BOS (the model takes none)".to_owned(),
        from => format!("BOS from the {from}"),
    };
    format!(
        "inside chat template {} ({}, sha256 {}): {bos}, thinking {}, generation prompt {:?}, then the option{}{}",
        chat.template,
        chat.renderer,
        chat.sha256.get(..12).unwrap_or(&chat.sha256),
        chat.thinking,
        chat.generation_prompt,
        chat.system.as_ref().map_or(String::new(), |s| format!("; system {s:?}")),
        chat.shots_as_turns.map_or(String::new(), |k| format!("; {k} shots as turns")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(vars: &[(&str, &str)], shards: Option<usize>) -> Result<Shard, String> {
        let env = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        shard_from("auto", shards, &env).map_err(|e| e.0)
    }

    #[test]
    fn shard_auto_reads_slurm_or_kubernetes_and_refuses_guesses() {
        let slurm = [("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")];
        assert_eq!(auto(&slurm, None), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(auto(&slurm, Some(4)), Ok(Shard { index: 2, count: 4 }));
        assert!(auto(&slurm, Some(5)).unwrap_err().contains("--shards 5 differs from SLURM_ARRAY_TASK_COUNT=4"));
        assert!(auto(&slurm[..1], None).unwrap_err().contains("SLURM_ARRAY_TASK_COUNT is not"));
        assert_eq!(auto(&[("JOB_COMPLETION_INDEX", "0")], Some(2)), Ok(Shard { index: 0, count: 2 }));
        assert!(auto(&[("JOB_COMPLETION_INDEX", "0")], None).unwrap_err().contains("--shards N"));
        assert!(auto(&[("JOB_COMPLETION_INDEX", "2")], Some(2)).unwrap_err().contains("not below the shard count 2"));
        assert!(auto(&[("JOB_COMPLETION_INDEX", "x")], Some(2)).unwrap_err().contains("not a whole number"));
        assert!(auto(&[], Some(2)).unwrap_err().contains("neither SLURM_ARRAY_TASK_ID"));
        assert!(auto(&[("JOB_COMPLETION_INDEX", "0"), ("SLURM_ARRAY_TASK_ID", "0")], Some(2)).unwrap_err().contains("both"));
        assert_eq!(shard_from("1/3", None, &|_| None).map_err(|e| e.0), Ok(Shard { index: 1, count: 3 }));
        assert!(shard_from("3/3", None, &|_| None).is_err());
        assert!(shard_from("1/3", Some(4), &|_| None).is_err());
    }
}
