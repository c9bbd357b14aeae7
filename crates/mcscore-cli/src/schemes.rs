//! `mcscore schemes`: the scoring schemes of "Check the Scoreboard" as the
//! paper runs them, each a response mode the model is prompted for and
//! answers in words, scored by its rule, beside the log-probability version.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::bail;
use mcscore_eval::schemes::report::{build, SchemesReport};
use mcscore_eval::schemes::{read_log, run, Mode, SchemesRun, SchemesSpec};
use mcscore_eval::shard::Shard;
use mcscore_eval::Engine;

use crate::engine_args::EngineArgs;
use crate::output::{self, Target};
use crate::table::{Cell, Printed, Table};
use crate::text::printable;
use crate::{defaults, Outcome, UsageError};

const EXAMPLES: &str = "\
Examples:
  mcscore schemes -m a.gguf -m b.gguf -bf datasets/arc-easy-validation.bin --limit 100 --logs runs/
  mcscore schemes -m instruct.gguf --chat-template auto datasets/arc-easy-validation.bin --limit 50 --reasoning
  mcscore schemes --modes NR,NM,AUC datasets/mmlu-validation.bin --limit 20 --json
  mcscore schemes --logs runs/ --resume -m a.gguf -m b.gguf datasets/arc-easy-validation.bin --limit 100
  mcscore schemes --report runs/a.schemes.jsonl runs/b.schemes.jsonl   (the tables again, from the logs)

The response modes (docs/methods.md gives each prompt and rule):
  NR       pick one letter                                    1 / 0
  NR-Var   NR's task in other words (prompt sensitivity)      1 / 0
  NM       a letter, or ABSTAIN                               +1, -1/(k-1), 0
  Elim     the letters of the options believed wrong          1/(k-1) per distractor; 0 if the key is out
  Elim-NM  the same, the key's elimination penalised          ... -(k-1)/(k-1) if the key is out
  CBM      a letter and a confidence 1-3                      +1/+2/+3 right, 0/-2/-6 wrong
  PPA      a probability for every option                     1 - Brier/2
  AUC      answer until correct, told the wrong choices       (k - a)/(k - 1) at attempt a
Every prompt is inspect_ai's multiple-choice prompt adapted to its mode, inside the model's
chat template (--chat-template auto) or as a plain completion prompt (base models). Responses
are greedy, under a grammar that only lets the answer's format through, so every response
parses; --reasoning lets the model think first and asks for the answer line only where its
own text holds none (counted as `forced`). Beside each prompted scheme stands the same rule
applied to the options' log-likelihoods (acc_norm's softmax) on the same tasks.";

/// The scoring schemes of "Check the Scoreboard", prompted: each model is asked
/// to answer in each response mode, its words are parsed as inspect_ai parses
/// them, and each mode's rule scores them.
///
/// Prints each scheme's mean with its 95 % bootstrap interval beside its
/// log-probability version, the task-level agreement of each with NR and with
/// its log-probability version, how responses were read (strict, loose,
/// forced, unparsed), median prompt and response tokens, the behaviour behind
/// the scores (abstention, eliminations, confidence, attempts), and with
/// several models each scheme's ranking and Spearman's ρ against NR's.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Task file (.bin) in the letter or the text scaffold, such as datasets/arc-easy-validation.bin.
    #[arg(value_name = "FILE", required_unless_present_any = ["report", "binary_file"], conflicts_with = "binary_file")]
    file: Option<PathBuf>,
    /// The task file, as llama-perplexity's -bf names it (instead of FILE).
    #[arg(long = "binary-file", short = 'f', value_name = "FILE", conflicts_with = "report")]
    binary_file: Option<PathBuf>,
    /// GGUF model; repeat to rank models. Default: the default model.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    models: Vec<PathBuf>,
    /// `all`, or a comma-separated list of NR, NR-Var, NM, Elim, Elim-NM, CBM, PPA, AUC.
    #[arg(long, value_name = "all|LIST", default_value = "all")]
    modes: String,
    /// Run the file's first N tasks (each costs a few generations per mode). As
    /// elsewhere --limit would count each group's first N; a schemes log holds a
    /// run of consecutive tasks, so a file whose manifest records groups (MMLU)
    /// takes --limit-total instead.
    #[arg(long, value_name = "N", conflicts_with = "limit_total", value_parser = crate::numbers::at_least(1usize))]
    limit: Option<usize>,
    /// Run the file's first N tasks, whatever its groups.
    #[arg(long, value_name = "N", value_parser = crate::numbers::at_least(1usize))]
    limit_total: Option<usize>,
    /// Let the model reason before answering (inspect_ai's chain-of-thought prompt);
    /// the answer line is asked for under the grammar only where its text holds none.
    #[arg(long)]
    reasoning: bool,
    /// The most tokens of a free response (--reasoning), 1 to 32768.
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = crate::numbers::whole(1usize, 32768), requires = "reasoning")]
    max_tokens: usize,
    /// Write one log per model to DIR (MODEL-STEM.schemes.jsonl): each task's prompts,
    /// responses, parses and scores, a chunk of tasks at a time (those whose first
    /// turns fill two waves of -np sequences).
    #[arg(long, value_name = "DIR")]
    logs: Option<PathBuf>,
    /// Continue the logs in --logs of runs that were interrupted.
    #[arg(long, requires = "logs")]
    resume: bool,
    /// Run one shard of the tasks (K/N, K from 0: contiguous, balanced by their
    /// bytes), for a cluster; its log, in --logs, is named MODEL-STEM.K-of-N.schemes.jsonl.
    /// `mcscore merge` joins the shards' logs into the run's.
    #[arg(long, value_name = "K/N", requires = "logs")]
    shard: Option<Shard>,
    /// Instead of running: the tables of these complete logs (one per model).
    #[arg(long, value_name = "LOG", num_args = 1.., conflicts_with_all = ["file", "models", "logs", "resume"])]
    report: Vec<PathBuf>,
    /// Bootstrap resamples for the intervals and standard errors.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = crate::numbers::whole(1usize, 1_000_000))]
    resamples: usize,
    /// The bootstrap's seed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Print the results as JSON on stdout.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// How the results are printed: `human`, or a table of one row per model
    /// and scheme as `csv`, `markdown` or `latex`.
    #[arg(long, value_enum, default_value = "human")]
    format: Printed,
    /// Also write the JSON results to FILE.
    #[arg(long, value_name = "FILE")]
    save_json: Option<PathBuf>,
    /// Replace the --save-json file if it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    chat: crate::chat_args::ChatArgs,
}

/// Sequences generated at once without -np: a step decodes one micro-batch
/// of 60 tokens whatever it holds, so the more sequences share it the fewer steps.
const DEFAULT_PARALLEL: u32 = 32;

/// The modes `--modes` names, in the paper's order.
fn parse_modes(list: &str) -> Result<Vec<Mode>, UsageError> {
    if list == "all" {
        return Ok(Mode::ALL.to_vec());
    }
    let mut chosen = Vec::new();
    for name in list.split(',').map(str::trim) {
        let mode = Mode::parse(name).ok_or_else(|| {
            UsageError(format!(
                "--modes: unknown response mode {name:?}; the modes are NR, NR-Var, NM, Elim, Elim-NM, CBM, PPA, AUC (or all)"
            ))
        })?;
        if chosen.contains(&mode) {
            return Err(UsageError(format!("--modes: {name} is listed twice")));
        }
        chosen.push(mode);
    }
    Ok(Mode::ALL.into_iter().filter(|m| chosen.contains(m)).collect())
}

/// A model's log in `dir` (a shard's, where given).
fn log_path(dir: &Path, model: &Path, shard: Option<Shard>) -> PathBuf {
    let stem = model.file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    match shard {
        Some(s) => dir.join(format!("{stem}.{}-of-{}.schemes.jsonl", s.index, s.count)),
        None => dir.join(format!("{stem}.schemes.jsonl")),
    }
}

pub(crate) fn run_command(mut args: Args) -> anyhow::Result<Outcome> {
    let resolve = |f| defaults::task_file(f, mcscore_eval::TaskKind::MultipleChoice);
    args.file = args.file.map(resolve).transpose()?;
    args.binary_file = args.binary_file.map(resolve).transpose()?;
    if let Some(path) = &args.save_json {
        let inputs: Vec<&Path> =
            args.file.iter().chain(&args.binary_file).chain(&args.models).chain(&args.report).map(PathBuf::as_path).collect();
        output::check_file(&Target::new(path, "--save-json", args.force), &inputs)?;
    }
    let runs: Vec<SchemesRun> = if !args.report.is_empty() {
        args.report.iter().map(|p| read_log(p)).collect::<Result<_, _>>()?
    } else {
        let modes = parse_modes(&args.modes)?;
        // clap requires FILE or -bf without --report
        let Some(file) = args.file.clone().or(args.binary_file.clone()) else { bail!("give a task file") };
        args.engine.refuse_removed()?;
        let settings = args.engine.settings()?;
        let chat = args.chat.spec_without_shots("schemes: its prompts are rendered from the tasks' items and hold no shots")?;
        let models = if args.models.is_empty() { vec![defaults::model()?] } else { args.models.clone() };
        if let Some(dir) = &args.logs {
            output::check_dir(dir, "--logs")?;
            for (i, model) in models.iter().enumerate() {
                let path = log_path(dir, model, args.shard);
                if let Some(earlier) = models[..i].iter().find(|m| log_path(dir, m, args.shard) == path) {
                    bail!(
                        "-m {} and -m {} would share the log {}: give models of different file names",
                        earlier.display(),
                        model.display(),
                        path.display()
                    );
                }
                if path.exists() && !args.resume {
                    bail!("{}: a log is there already (--logs); give --resume to continue its run, or another folder", path.display());
                }
            }
        }
        if let Some(limit) = args.limit {
            if let Some(groups) = crate::compare::file_groups(&file, None)? {
                return Err(crate::UsageError(format!(
                    "--limit {limit}: {} has {} groups ({}), and --limit counts each group's first tasks, which a schemes run \
                     (consecutive tasks) cannot take; --limit-total {limit} runs the file's first {limit}",
                    file.display(),
                    groups.len(),
                    groups.source
                ))
                .into());
            }
        }
        let cancel = crate::signals::cancel_on_signal();
        let mut runs = Vec::new();
        for model in &models {
            let spec = SchemesSpec {
                model: model.clone(),
                file: file.clone(),
                modes: modes.clone(),
                limit: args.limit.or(args.limit_total),
                chat: chat.clone(),
                reasoning: args.reasoning,
                max_tokens: args.max_tokens,
                parallel: settings.parallel.unwrap_or(DEFAULT_PARALLEL) as usize,
                settings: settings.clone(),
                shard: args.shard,
                log: args.logs.as_ref().map(|dir| log_path(dir, model, args.shard)),
                resume: args.resume,
            };
            let engine = Engine::load(model, &settings)?;
            let label = model.display().to_string();
            let mut last = std::time::Instant::now();
            let result = run(&engine, &spec, &cancel, &mut |done, total| {
                // A line a chunk, at most every few seconds, and the last.
                if done == total || last.elapsed().as_secs() >= 5 {
                    eprintln!("mcscore: schemes: {label}: {done}/{total} tasks");
                    last = std::time::Instant::now();
                }
            });
            match result {
                Ok(run) if args.shard.is_some() => {
                    eprintln!(
                        "mcscore: schemes: shard written to {}; `mcscore merge` joins the run's shards",
                        run.log.as_ref().map_or(String::new(), |p| p.display().to_string())
                    );
                }
                Ok(run) => runs.push(run),
                Err(mcscore_eval::EvalError::Schemes(mcscore_eval::SchemesError::Interrupted)) => {
                    eprintln!(
                        "mcscore: {} while running {label}; {}",
                        crate::signals::interrupted(),
                        if args.logs.is_some() {
                            "its log keeps every whole chunk of tasks: run again with --resume"
                        } else {
                            "nothing was kept (give --logs DIR to keep what is done)"
                        }
                    );
                    return Ok(Outcome::Interrupted);
                }
                Err(error) => return Err(error.into()),
            }
        }
        if args.shard.is_some() {
            return Ok(Outcome::Ok);
        }
        runs
    };
    let printed = if args.json { None } else { Some(args.format) };
    print_report(&runs, args.resamples, args.seed, printed, args.save_json.as_deref())
}

/// The tables of `runs`, printed as `printed` says (JSON for `None`), and
/// saved as JSON where asked.
pub(crate) fn print_report(
    runs: &[SchemesRun],
    resamples: usize,
    seed: u64,
    printed: Option<Printed>,
    save_json: Option<&Path>,
) -> anyhow::Result<Outcome> {
    let report = build(runs, resamples, seed)?;
    let json_text = serde_json::to_string_pretty(&report)?;
    if let Some(path) = save_json {
        mcscore_format::write_atomic(path, format!("{json_text}\n").as_bytes())?;
    }
    match printed {
        None => outln!("{json_text}")?,
        Some(Printed::Human) => out!("{}", text(&report))?,
        Some(format) => out!("{}", table(&report).render(format.table().expect("not human")))?,
    }
    Ok(Outcome::Ok)
}

/// One row per model and scheme: the prompted score beside the
/// log-probability one, NR's a fraction, the others' points per task.
fn table(report: &SchemesReport) -> Table {
    let mut t = Table::with_detail([
        ("model", true),
        ("scheme", true),
        ("prompted", true),
        ("prompted_low", true),
        ("prompted_high", true),
        ("logprob", true),
        ("logprob_low", true),
        ("logprob_high", true),
        ("r_nr", true),
        ("r_logprob", true),
        ("strict", false),
        ("loose", false),
        ("forced", false),
        ("unparsed", true),
        ("median_input_tokens", false),
        ("median_output_tokens", false),
    ]);
    for m in &report.models {
        for f in &m.modes {
            // NR's mean is an accuracy (a fraction); the other schemes' are
            // points per task, on scales of their own.
            let value = |x: f64| {
                if f.mode.rule() == mcscore_metrics::schemes::Scheme::Nr {
                    Cell::Fraction(x)
                } else {
                    Cell::Number(x, 3)
                }
            };
            let count = |k: &str| Cell::Count(f.parses.get(k).copied().unwrap_or(0) as u64);
            t.row(vec![
                Cell::text(&*m.label),
                Cell::text(f.mode.name()),
                value(f.prompted.mean),
                value(f.prompted.low),
                value(f.prompted.high),
                value(f.logprob.mean),
                value(f.logprob.low),
                value(f.logprob.high),
                Cell::maybe(f.agreement_with_nr, 2),
                Cell::maybe(f.agreement_with_logprob, 2),
                count("strict"),
                count("loose"),
                count("forced"),
                count("unparsed"),
                Cell::Number(f.median_input_tokens, 1),
                Cell::Number(f.median_output_tokens, 1),
            ]);
        }
    }
    t
}

/// A mean score as text: NR's in percent, the others' in points per task.
fn mean(mode: Mode, e: &mcscore_metrics::stats::Estimate) -> String {
    if mode.rule() == mcscore_metrics::schemes::Scheme::Nr {
        format!("{:.1} % [{:.1}, {:.1}]", 100.0 * e.mean, 100.0 * e.low, 100.0 * e.high)
    } else {
        format!("{:.3} [{:.3}, {:.3}]", e.mean, e.low, e.high)
    }
}

fn text(report: &SchemesReport) -> String {
    let mut out = String::new();
    let r = |x: Option<f64>| x.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    let _ = writeln!(
        out,
        "schemes: {} ({} tasks), prompted {} beside the log-probability version; 95 % bootstrap intervals ({} resamples)",
        printable(&report.file),
        report.tasks,
        if report.reasoning { "with reasoning" } else { "under each mode's grammar" },
        report.resamples
    );
    for m in &report.models {
        let _ = writeln!(out, "\n{}", printable(&m.label));
        let _ = writeln!(
            out,
            "  {:<8} {:<24} {:<24} {:>6} {:>9}  {:<17} {:>9}",
            "scheme", "prompted", "log-probability", "r(NR)", "r(log-p)", "read s/l/f/u", "tokens in/out"
        );
        for f in &m.modes {
            let p = &f.parses;
            let read = format!("{}/{}/{}/{}", p["strict"], p["loose"], p["forced"], p["unparsed"]);
            let _ = writeln!(
                out,
                "  {:<8} {:<24} {:<24} {:>6} {:>9}  {:<17} {:>4}/{}",
                f.mode.name(),
                mean(f.mode, &f.prompted),
                mean(f.mode, &f.logprob),
                r(f.agreement_with_nr),
                r(f.agreement_with_logprob),
                read,
                f.median_input_tokens,
                f.median_output_tokens
            );
        }
        let b = &m.behaviour;
        let mut parts = Vec::new();
        if let Some(a) = b.abstention_rate {
            parts.push(format!("NM abstains on {:.1} %", 100.0 * a));
        }
        if let (Some(e), Some(k)) = (b.mean_eliminated, b.key_eliminated_rate) {
            parts.push(format!("Elim removes {e:.2} options per task, the key in {:.1} %", 100.0 * k));
        }
        if let Some(h) = b.confidence_histogram {
            parts.push(format!("CBM confidence 1/2/3: {:.1}/{:.1}/{:.1} %", 100.0 * h[0], 100.0 * h[1], 100.0 * h[2]));
        }
        if let Some(a) = b.mean_attempts {
            parts.push(format!("AUC finds the key at attempt {a:.2} on average"));
        }
        if !parts.is_empty() {
            let _ = writeln!(out, "  behaviour: {}", parts.join("; "));
        }
    }
    if !report.rankings.is_empty() {
        let names: Vec<String> = report.models.iter().enumerate().map(|(i, m)| format!("#{} {}", i + 1, printable(&m.label))).collect();
        let _ = writeln!(out, "\nranks per scheme (1 = best) and Spearman ρ with NR's ranking ± bootstrap SE; runs: {}", names.join(", "));
        for k in &report.rankings {
            let ranks: Vec<String> = k.ranks.iter().map(|x| format!("{x:.1}")).collect();
            let rho = match (k.spearman_vs_nr, k.spearman_se) {
                (Some(v), Some(se)) => format!("{v:.3} ± {se:.3}"),
                (Some(v), None) => format!("{v:.3}"),
                _ => "undefined".to_owned(),
            };
            let _ = writeln!(out, "  {:<8} ranks {}   ρ = {rho}", k.mode.name(), ranks.join("  "));
        }
    }
    let _ = writeln!(out, "\nr: Pearson's r of the task scores; read: strict/loose/forced/unparsed responses; tokens: medians per task");
    out
}
