//! `mcscore score`: llama-perplexity --multiple-choice, loud and lean.

use std::io::Write;
use std::path::{Path, PathBuf};

use mcscore_eval::shard::Shard;
use mcscore_eval::{End, EvalError, ScoreJob, ScoreSpec, Selection, TaskKind};

use crate::chat_args::ChatArgs;
use crate::engine_args::EngineArgs;
use crate::progress::ProgressMode;
use crate::run_text::{chat_line, note_selection, print_accuracies, Shown};
use anyhow::Context;

use crate::normalisation::NormArg;
use crate::table::TableFormat;
use crate::{defaults, output, Outcome};

pub(crate) mod many;

const EXAMPLES: &str = "\
Examples:
  mcscore score                                   the default model on the bundled dataset
  mcscore score -m model.gguf -bf mmlu.bin --json
  mcscore score -m model.gguf -bf hellaswag.bin --multiple-choice -c 512 -np 16 -t 2 --format llama
  mcscore score -m model.gguf -f hellaswag_val_full.txt --hellaswag --hellaswag-tasks 400
  mcscore score -m model.gguf -f winogrande-debiased-eval.csv --winogrande   (every line, the last included)
  mcscore score -m model.gguf -bf f.bin --log-samples run.jsonl    (Ctrl-C, then the same command
                                                                  with --resume continues it)
  mcscore score -m q4.gguf,q8.gguf -bf arc-easy-validation,mmlu-validation --format markdown
                                                  (a table of models × files; bundled files by name)";

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
    /// Task file: -bf FILE, as llama-perplexity takes it (also -f, --file). Several
    /// (repeated, or joined by commas as lm-eval's --tasks) score each in turn and print
    /// a table of models × files.
    #[arg(long = "binary-file", short = 'f', visible_alias = "file", value_name = "FILE")]
    binary_file: Vec<PathBuf>,
    /// GGUF model; default: gemma-3-270m Q4_K_M from scripts/fetch-model (or $MCSCORE_MODEL).
    /// Several (repeated, or joined by commas) score each in turn on every file.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    model: Vec<PathBuf>,
    /// With several models or files: the normalisation the table of models × files
    /// shows and --quantize compares (default acc-norm; every run's JSON and log hold
    /// them all, and one run prints them all).
    #[arg(long, value_enum)]
    normalisation: Option<NormArg>,
    /// Quantize the model (-m, one) into each of these llama-quantize types first
    /// (Q8_0,Q4_K_M,Q2_K), score it and every quant on each file, and compare each quant
    /// with it, as `mcscore compare` does (margin ±1 point): quantize, score and compare
    /// in one job. The quants (MODEL.TYPE.gguf) and the logs go in the --log-samples
    /// folder; the same command with --resume continues it, reusing what is done.
    #[arg(long, value_name = "TYPES", value_delimiter = ',', value_parser = crate::quantize::parse_type, requires = "log_samples")]
    quantize: Vec<mcscore_engine::QuantType>,
    /// With --quantize: an importance matrix, as llama-imatrix writes it (GGUF or the
    /// legacy .dat), for every quant (the IQ1, IQ2 and IQ3_XS/XXS types and Q2_K_S need one).
    #[arg(long, value_name = "FILE", requires = "quantize")]
    imatrix: Option<PathBuf>,
    /// A vision projector for the model (llama.cpp's mmproj GGUF, as llama-mtmd-cli takes it),
    /// for a FILE of image tasks: a multiple-choice TSV in VLMEvalKit's layout (.tsv: MMBench,
    /// SEED-Bench, AI2D, ScienceQA-IMG, MMStar, ...) or its JSON Lines form with image files
    /// (.jsonl), each row's image decoded as llama.cpp decodes it and its options scored as
    /// letters (docs/vqa.md).
    #[arg(long, value_name = "FILE")]
    mmproj: Option<PathBuf>,
    /// FILE is a multiple-choice task file (.bin): the default mode.
    #[arg(long, conflicts_with_all = ["hellaswag", "winogrande"])]
    multiple_choice: bool,
    /// Score N tasks picked as llama-perplexity picks them (mt19937 seeded 1), in its
    /// order. 0, as in llama-perplexity, and N at or above the task count score every
    /// task in file order.
    #[arg(long, value_name = "N", conflicts_with_all = ["hellaswag", "winogrande"], value_parser = crate::numbers::at_least(0usize))]
    multiple_choice_tasks: Option<usize>,
    /// FILE is a task file `mcscore build --lm-eval` wrote, scored as
    /// lm-evaluation-harness scores its requests: each option counts every
    /// token of `question + " " + option` after the question's own tokens
    /// (a first word all options share included); acc is lm-eval's acc,
    /// acc_char its acc_norm, acc_byte its acc_bytes.
    #[arg(long, conflicts_with_all = ["hellaswag", "winogrande", "multiple_choice"])]
    lm_eval: bool,
    /// FILE is HellaSwag in llama.cpp's six-line text format (hellaswag_val_full.txt:
    /// context, gold index 0-3, four endings per task), scored as llama-perplexity
    /// --hellaswag: in its shuffled order, each ending after `context + " "`.
    #[arg(long, conflicts_with = "winogrande")]
    hellaswag: bool,
    /// HellaSwag tasks to score, picked as llama-perplexity picks them (default 400,
    /// as it); 0, or N at or above the task count, scores every task (llama-perplexity
    /// scores none for 0).
    #[arg(long, value_name = "N", requires = "hellaswag", value_parser = crate::numbers::at_least(0usize))]
    hellaswag_tasks: Option<usize>,
    /// FILE is a Winogrande CSV (index,sentence,option1,option2,answer; the sentence
    /// quoted when it holds commas; `mcscore build winogrande-debiased-eval` writes it),
    /// scored as llama-perplexity --winogrande: each option fills the `_`, and the
    /// sentence after it is scored. Every line is read (llama-perplexity drops the last).
    #[arg(long)]
    winogrande: bool,
    /// Winogrande tasks to score, picked as llama-perplexity picks them; 0 (its
    /// default), or N at or above the task count, scores every task in file order.
    #[arg(long, value_name = "N", requires = "winogrande", value_parser = crate::numbers::at_least(0usize))]
    winogrande_tasks: Option<usize>,
    /// Score the first N tasks of each group, in file order, as lm-evaluation-harness's
    /// --limit takes each subtask's first N (MMLU: N per subject), where the file's
    /// manifest records groups; elsewhere the file's first N tasks. All of them
    /// where there are no more. Not with --multiple-choice-tasks, --hellaswag-tasks or
    /// --winogrande-tasks, which are llama-perplexity's random picks of N.
    #[arg(long, value_name = "N", conflicts_with_all = ["multiple_choice_tasks", "hellaswag_tasks", "winogrande_tasks", "limit_total"],
          value_parser = crate::numbers::at_least(1usize))]
    limit: Option<usize>,
    /// Score the file's first N tasks, in file order, whatever its groups (--limit
    /// counts per group).
    #[arg(long, value_name = "N", conflicts_with_all = ["multiple_choice_tasks", "hellaswag_tasks", "winogrande_tasks"],
          value_parser = crate::numbers::at_least(1usize))]
    limit_total: Option<usize>,
    /// The manifest to look the task file's groups up in (by its sha256), for
    /// the accuracy per group (MMLU's subjects). Default: a manifest.json in
    /// the task file's folder or a folder above it, then the working
    /// directory's, then mcscore's bundled one (the datasets it carries,
    /// wherever they are copied).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    chat: ChatArgs,
    /// Also score every option after the context "Answer:" alone, for acc_pmi
    /// (log-probability given the question minus log-probability without it);
    /// with --lm-eval after no context, as lm-eval's acc_mutual_info (which
    /// --format lm-eval turns on for a task that asks for it).
    #[arg(long, conflicts_with = "winogrande")]
    pmi: bool,
    /// Score a file that fails strict validation the way llama.cpp would, listing what is wrong.
    #[arg(long, conflicts_with_all = ["hellaswag", "winogrande"])]
    lenient: bool,
    /// `human` (summary, progress bar), `llama` (llama-perplexity's stdout byte for byte,
    /// and its Final result / Random chance lines on stderr), `lm-eval` (lm-evaluation-harness's
    /// results JSON on stdout: results, groups, configs, versions, n-shot, n-samples, config;
    /// for a file `build --lm-eval` wrote, found by its manifest entry, and implies --lm-eval),
    /// or the results as a table: `csv` (fractions), `markdown` or `latex` (percent).
    #[arg(long, value_enum, default_value = "human")]
    format: OutputFormat,
    /// With --format lm-eval: also write lm-eval's per-sample lines, one
    /// `samples_TASK.jsonl` per lm-eval task, into DIR (what its --log_samples
    /// writes: arguments, each option's log-likelihood and greedy flag as it
    /// writes them, the metrics; not the dataset row).
    #[arg(long, value_name = "DIR")]
    lm_eval_samples: Option<PathBuf>,
    /// Print the results as JSON on stdout.
    #[arg(long, conflicts_with = "format")]
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
    /// With several models or files, FILE is a folder: one log per run, MODEL.FILE.jsonl
    /// (each resumable with --resume).
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
    #[arg(long, value_name = "N", requires = "shard", value_parser = crate::numbers::at_least(1u32))]
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
    LmEval,
    Csv,
    Markdown,
    Latex,
}

impl OutputFormat {
    fn table(self) -> Option<TableFormat> {
        match self {
            OutputFormat::Csv => Some(TableFormat::Csv),
            OutputFormat::Markdown => Some(TableFormat::Markdown),
            OutputFormat::Latex => Some(TableFormat::Latex),
            OutputFormat::Human | OutputFormat::Llama | OutputFormat::LmEval => None,
        }
    }
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
        } else if self.lm_eval || self.format == OutputFormat::LmEval {
            TaskKind::LmEval
        } else {
            TaskKind::MultipleChoice
        }
    }

    /// The subset flag of the mode, and its value (none given: the mode's
    /// default, `ScoreSpec::effective_subset`); none with --limit.
    fn subset(&self) -> (&'static str, Option<usize>) {
        if self.limit.is_some() {
            return ("--limit", None);
        }
        if self.limit_total.is_some() {
            return ("--limit-total", None);
        }
        match self.kind() {
            TaskKind::MultipleChoice | TaskKind::LmEval => ("--multiple-choice-tasks", self.multiple_choice_tasks),
            TaskKind::HellaSwag => ("--hellaswag-tasks", self.hellaswag_tasks),
            TaskKind::Winogrande => ("--winogrande-tasks", self.winogrande_tasks),
        }
    }
}

/// The phase profile of a run, on stderr (`--timings`).
fn print_timings(outcome: &mcscore_eval::ScoreOutcome) {
    let t = &outcome.timings;
    eprintln!("timings ({} fills, {} decodes, {} tokens):", t.scoring.fills, t.scoring.decodes, outcome.tokens.decoded);
    for (what, seconds) in t.phases() {
        eprintln!("  {what:<22}{seconds:>9.3} s {:>6.1} %", t.share(seconds));
    }
    eprintln!("  {:<22}{:>9.3} s  (first decode after {:.3} s)", "total", t.total, t.first_decode);
    if let Some(rate) = t.decode_rate(outcome.tokens.decoded) {
        let of = if t.scoring.images > 0.0 { "decode and image time" } else { "decode time" };
        eprintln!("  {:<22}{rate:>9.0} tokens/s of {of}", "throughput");
    }
    print_memory(&outcome.memory);
}

/// Where memory went, on stderr (`--timings`): the peak first, then
/// llama.cpp's buffers and the kinds of resident page.
fn print_memory(m: &mcscore_engine::MemoryReport) {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let (files, sizes) = match m.projector_file {
        Some(projector) => ("the model and projector files", format!("{:.0} MB + {:.1} MB", mb(m.model_file), mb(projector))),
        None => ("the model file", format!("{:.0} MB", mb(m.model_file))),
    };
    match (m.peak, m.peak_per_model_byte()) {
        (Some(peak), Some(ratio)) => eprintln!(
            "memory: peak RSS {:.0} MB, {ratio:.2}× {files} ({sizes}; the model's weights {}):",
            mb(peak),
            match (m.mmap, m.pages_released) {
                (mcscore_engine::Mmap::On, _) => "mapped, --mmap on",
                (mcscore_engine::Mmap::Off, _) => "read into memory, --mmap off",
                (mcscore_engine::Mmap::Auto, true) => "mapped, pages released as they were copied, --mmap auto",
                (mcscore_engine::Mmap::Auto, false) => "--mmap auto, but no mapping of the file was found to release",
            }
        ),
        _ => eprintln!("memory: peak RSS not known here (no /proc/self/status); {files} {sizes}:"),
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

/// The shard `--shard` names: `K/N`, or `auto` from the scheduler's
/// environment (`env`). A missing or inconsistent variable is a usage error,
/// never shard 0 of 1.
fn shard_from(text: &str, shards: Option<usize>, env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, crate::UsageError> {
    if text != "auto" {
        let shard: Shard = text.parse().map_err(|e: String| crate::UsageError(format!("--shard {e}")))?;
        if shards.is_some_and(|n| n != shard.count) {
            return Err(crate::UsageError(format!("--shard {text}: --shards {} differs from N", shards.unwrap_or_default())));
        }
        return Ok(shard);
    }
    Shard::from_env(shards, env).map_err(|e| crate::UsageError(format!("--shard auto: {e}{}", crate::flag_hints::shard_env_hint(&e))))
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

/// Paths given by a repeated flag, each possibly a comma-separated list
/// (lm-eval's `--tasks a,b`); a path that exists as given is never split.
/// An empty name (`-bf ,`, `-m a,,b`) is refused: it would otherwise leave no
/// path and fall back to the default, scoring something not asked for.
fn paths(given: &[PathBuf], flag: &str) -> Result<Vec<PathBuf>, crate::UsageError> {
    let mut out = Vec::new();
    for p in given {
        match p.to_str() {
            Some(text) if text.contains(',') && !p.exists() => {
                if text.split(',').any(str::is_empty) {
                    return Err(crate::UsageError(format!("{flag} {text:?}: an empty name in the comma-separated list")));
                }
                out.extend(text.split(',').map(PathBuf::from));
            }
            _ if p.as_os_str().is_empty() => return Err(crate::UsageError(format!("{flag}: an empty path"))),
            _ => out.push(p.clone()),
        }
    }
    Ok(out)
}

/// The task files to score: those given (bundled datasets by name), or the
/// bundled dataset.
fn task_files(args: &Args) -> anyhow::Result<Vec<PathBuf>> {
    let kind = args.kind();
    let given = match &args.file {
        Some(file) => vec![file.clone()],
        None => paths(&args.binary_file, "-bf")?,
    };
    if given.is_empty() {
        return match kind {
            TaskKind::MultipleChoice => Ok(vec![defaults::dataset("no task file given")?]),
            _ => Err(crate::UsageError(format!("{} needs the file to score: -f FILE", crate::run_text::flag(kind))).into()),
        };
    }
    given.into_iter().map(|path| defaults::task_file(path, kind)).collect()
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let files = task_files(&args)?;
    let models = match paths(&args.model, "-m")? {
        models if models.is_empty() => vec![defaults::model()?],
        models => models,
    };
    if files.len() > 1 || models.len() > 1 || !args.quantize.is_empty() {
        return many::run(&args, &models, &files);
    }
    if args.normalisation.is_some() {
        eprintln!("mcscore: note: --normalisation picks the column of a table of several runs; one run prints every normalisation");
    }
    run_one(&args, &models[0], &files[0])
}

fn run_one(args: &Args, model: &Path, path: &Path) -> anyhow::Result<Outcome> {
    let kind = args.kind();
    let path = path.to_path_buf();
    if let Some(manifest) = args.manifest.as_deref() {
        crate::compare::check_named_manifest(manifest)?;
    }
    if let Some(dir) = &args.lm_eval_samples {
        if args.format != OutputFormat::LmEval {
            return Err(crate::UsageError("--lm-eval-samples goes with --format lm-eval".into()).into());
        }
        output::check_dir(dir, "--lm-eval-samples")?;
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let shard = match &args.shard {
        Some(text) => Some(shard_from(text, args.shards.map(|n| n as usize), &|name| std::env::var(name).ok())?),
        None => None,
    };
    let model = model.to_path_buf();
    if let Some(log_path) = &args.log_samples {
        output::check_log(log_path, "--log-samples", &[&path, &model])?;
    }
    if args.format == OutputFormat::LmEval {
        // lm-eval's results describe whole tasks of one run.
        let refused = [
            (args.limit.is_some(), "--limit (lm-eval's --limit is per task: export with `mcscore build --lm-eval ... --limit N`)"),
            (args.limit_total.is_some(), "--limit-total (lm-eval's results describe whole tasks)"),
            (args.multiple_choice_tasks.is_some(), "--multiple-choice-tasks"),
            (
                args.shard.is_some(),
                "--shard (a shard is part of a run: `mcscore merge` its logs, then score --format lm-eval with --resume)",
            ),
            (args.hellaswag || args.winogrande, "--hellaswag and --winogrande (lm-eval's results are of files `build --lm-eval` wrote)"),
            (args.lenient, "--lenient (`build --lm-eval` writes only valid files)"),
        ];
        if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
            return Err(crate::UsageError(format!("--format lm-eval does not go with {flag}")).into());
        }
    }
    // lm-eval's results need the export's record: found before any scoring,
    // and its acc_mutual_info turns the unconditional pass on.
    let record = (args.format == OutputFormat::LmEval)
        .then(|| -> anyhow::Result<_> {
            let sha256 = mcscore_format::sha256_file(&path).with_context(|| path.display().to_string())?;
            Ok(mcscore_eval::lm_eval::record_for(&path, &sha256, args.manifest.as_deref())?)
        })
        .transpose()?;
    let pmi = args.pmi || record.as_ref().is_some_and(|r| r.needs_unconditional());
    if pmi && !args.pmi {
        eprintln!("mcscore: a task asks for lm-eval's acc_mutual_info: every option is also scored after no context (--pmi)");
    }
    let (job, settings, found_groups) = prepare(args, &model, &path, args.log_samples.clone(), pmi, shard)?;
    let mut shown = Shown::new(args.progress, (args.format == OutputFormat::Llama && !args.json).then_some(kind));
    let picked = matches!(job.selection(), Selection::Subset(_)) && job.tasks() < job.file_tasks();
    shown.llama_preamble(job.file_tasks(), job.tasks(), picked)?;
    for (i, record) in job.kept().iter().enumerate() {
        shown.llama_line(record, i + 1)?;
    }
    let cancel = crate::signals::cancel_on_signal();
    let outcome = job.run(&mut shown, &cancel).map_err(|e| match e {
        EvalError::Consumer(e) => anyhow::anyhow!("{}", crate::with_causes(&*e)),
        e => e.into(),
    })?;
    if outcome.end == End::Interrupted {
        std::io::stdout().flush().map_err(crate::stdout_error)?;
        eprintln!(
            "mcscore: {} after {} of {} tasks{}",
            crate::signals::interrupted(),
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
    print_results(args, &outcome, &path, &settings, &shown, record.as_ref(), found_groups)?;
    if args.timings {
        print_timings(&outcome);
    }
    Ok(Outcome::Ok)
}

/// The groups `--limit` counts in, as [`limit_groups`] gives them.
type FoundGroups = Option<Option<mcscore_eval::groups::Groups>>;

/// The job that scores `model` on `path` as `args` say, logged to `log`,
/// with its warnings said (a lenient read's faults, a context beyond
/// training, the tasks picked, a complete log).
pub(crate) fn prepare(
    args: &Args,
    model: &Path,
    path: &Path,
    log: Option<PathBuf>,
    pmi: bool,
    shard: Option<Shard>,
) -> anyhow::Result<(ScoreJob<'static>, mcscore_engine::Settings, FoundGroups)> {
    let subset = args.subset().1;
    let settings = args.engine.settings()?;
    let mut spec = ScoreSpec::new(model, path);
    spec.kind = args.kind();
    spec.lenient = args.lenient;
    spec.subset = subset;
    spec.limit = args.limit.or(args.limit_total);
    // Looked up once: a manifest that cannot be read warns once.
    let found_groups = limit_groups(args, path)?;
    spec.limit_groups = found_groups.clone().flatten();
    spec.pmi = pmi;
    spec.settings = settings.clone();
    spec.log = log.clone();
    spec.resume = args.resume;
    // Where the output names the model by its hash (the hash cache makes it cheap again).
    spec.hash_model = args.json || matches!(args.format, OutputFormat::LmEval | OutputFormat::Csv);
    spec.hash_cache = Some(defaults::cache_dir());
    spec.shard = shard;
    spec.chat = args.chat.spec(path)?;
    spec.mmproj = args.mmproj.clone();
    let job = ScoreJob::prepare(spec).map_err(|e| match e {
        e @ EvalError::Format(mcscore_format::Error::Invalid { .. }) => invalid_file(e, args.lenient),
        e => e.into(),
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
    if let Some(beyond) = job.beyond_training() {
        eprintln!("mcscore: warning: {beyond}");
    }
    let (subset_flag, _) = args.subset();
    note_selection(job.selection(), job.file_tasks(), subset_flag);
    if job.already_complete() {
        if let Some(log) = &log {
            eprintln!("mcscore: {} already holds the complete run: left as it is; its results follow", log.display());
        }
    }

    Ok((job, settings, found_groups))
}

/// The groups `--limit` counts in: those the file's manifest (or --manifest)
/// records, where it records any; `None` where --limit did not look.
fn limit_groups(args: &Args, path: &Path) -> anyhow::Result<Option<Option<mcscore_eval::groups::Groups>>> {
    if args.limit.is_none() {
        return Ok(None);
    }
    crate::compare::file_groups(path, args.manifest.as_deref()).map(Some)
}

/// Accuracy per group (MMLU's subjects and categories), where the manifest
/// records the file's groups: those --limit counted in (`found`), or those
/// looked up now. Groups that cannot be read or do not fit the file lose
/// nothing of the run: a warning.
pub(crate) fn run_groups(
    args: &Args,
    outcome: &mcscore_eval::ScoreOutcome,
    path: &Path,
    found: FoundGroups,
) -> Option<mcscore_eval::results::GroupAccuracies> {
    let groups = match found {
        Some(groups) => Ok(groups),
        None => crate::compare::groups_from(None, args.manifest.as_deref(), path, &outcome.header.file_sha256, None),
    };
    groups
        .and_then(|groups| {
            groups.map(|g| mcscore_eval::results::group_accuracies_of(&outcome.records, &g, path)).transpose().map_err(Into::into)
        })
        .unwrap_or_else(|error| {
            eprintln!("mcscore: warning: no accuracy per group: {}", crate::with_causes(&*error));
            None
        })
}

fn print_results(
    args: &Args,
    outcome: &mcscore_eval::ScoreOutcome,
    path: &Path,
    settings: &mcscore_engine::Settings,
    shown: &Shown,
    record: Option<&mcscore_datasets::lm_eval::LmEvalRecord>,
    found: Option<Option<mcscore_eval::groups::Groups>>,
) -> anyhow::Result<()> {
    let n = outcome.records.len();
    let baselines = &outcome.baselines;
    let tokens = outcome.tokens;
    let llama = args.format == OutputFormat::Llama && !args.json;
    let groups = if llama || args.format == OutputFormat::LmEval { None } else { run_groups(args, outcome, path, found) };
    if llama {
        shown.llama_end(n, outcome.total_options)?;
    } else if let Some(record) = record {
        let run = mcscore_eval::lm_eval::RunInfo {
            model: outcome.header.model.clone(),
            model_sha256: Some(outcome.header.model_sha256.clone()).filter(|s| !s.is_empty()),
            file: path.display().to_string(),
            file_sha256: outcome.header.file_sha256.clone(),
        };
        if let Some(dir) = &args.lm_eval_samples {
            let file = mcscore_format::TaskFile::open(path)?;
            if mcscore_format::sha256_hex(file.bytes()) != outcome.header.file_sha256 {
                anyhow::bail!("{}: changed while it was scored; no lm-eval samples written", path.display());
            }
            for (task, lines) in mcscore_eval::lm_eval::samples(&outcome.records, record, &file) {
                let mut text = String::new();
                for line in lines {
                    text.push_str(&serde_json::to_string(&line)?);
                    text.push('\n');
                }
                // A task name from the manifest becomes a file name: no folders.
                let name: String = task.chars().map(|c| if c == '/' || c == '\\' || c.is_control() { '_' } else { c }).collect();
                mcscore_format::write_atomic(dir.join(format!("samples_{name}.jsonl")), text.as_bytes())?;
            }
        }
        crate::print_json(&mcscore_eval::lm_eval::results(&outcome.records, record, &run))?;
    } else if args.json {
        crate::print_json(&mcscore_eval::results::RunSummary::new(outcome, settings, args.lenient, groups, args.timings))?;
    } else if let Some(format) = args.format.table() {
        let summary = mcscore_eval::results::RunSummary::new(outcome, settings, args.lenient, groups, false);
        out!("{}", many::run_table(&(&summary).into()).render(format))?;
    } else {
        outln!("{} on {}: {n} tasks", crate::text::printable(&mcscore_eval::log::label(&outcome.header.model)), path.display())?;
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
            outcome.scoring_rate(),
            outcome.wall_seconds
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_k_of_n_or_auto_with_the_flag_in_each_message() {
        let env = |name: &str| (name == "JOB_COMPLETION_INDEX").then(|| "0".to_owned());
        assert_eq!(shard_from("1/3", None, &|_| None).map_err(|e| e.0), Ok(Shard { index: 1, count: 3 }));
        assert!(shard_from("3/3", None, &|_| None).is_err());
        assert!(shard_from("1/3", Some(4), &|_| None).unwrap_err().0.contains("--shards 4 differs from N"));
        assert_eq!(shard_from("auto", Some(2), &env).map_err(|e| e.0), Ok(Shard { index: 0, count: 2 }));
        let error = shard_from("auto", None, &env).unwrap_err().0;
        assert!(error.starts_with("--shard auto: JOB_COMPLETION_INDEX is set") && error.ends_with("--shards N"), "{error}");
    }
}
