//! `mcscore compare`: is OTHER worse than BASE, by how much, and is it real?

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mcscore_eval::compare::{self, CompareOptions, Comparison, Pairing, VerdictBasis, MIN_GROUPS_FOR_CLUSTERS};
use mcscore_eval::groups::Groups;
use mcscore_eval::run::Run;
use mcscore_metrics::paired::PairedDifference;

use crate::normalisation::NormArg;
use crate::progress::ProgressMode;
use crate::run_text::{nats, p_value, points};
use crate::table::{Cell, Printed, Table};
use crate::text::printable;
use crate::Outcome;

/// Is OTHER worse than BASE, by how much, and is it real? Paired statistics over logs of the same tasks
///
/// Each OTHER log is compared with BASE task by task (the same task file,
/// mode and task list, or the logs are refused). The first line per OTHER answers the question:
/// the difference in accuracy points with its paired BCa interval,
/// McNemar's exact p and the flips, and a verdict: better, worse,
/// equivalent within ±MARGIN points (TOST), or undecided. Then the flip
/// table, the divergence of the choice distributions (KL, Jensen–Shannon),
/// the change of the gold option's log-probability and, where the tasks
/// have groups (MMLU's subjects, from the manifest or --groups), a cluster
/// bootstrap interval and the groups that moved most. With several OTHERs
/// α is split between them (Bonferroni) and McNemar's p is Holm-adjusted.
/// docs/compare.md explains every figure.
///
/// With --until-decided, the models themselves (-m BASE.gguf -m OTHER.gguf …)
/// score a task file's tasks side by side in a seeded random order, a chunk
/// at a time, and each OTHER stops as soon as an anytime-valid confidence
/// sequence of its difference to BASE excludes 0 (different) or lies inside
/// ±MARGIN (equivalent): often a few hundred tasks instead of the whole file.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  mcscore compare q4_k_m.jsonl q2_k.jsonl q8_0.jsonl --margin 1\n      mcscore compare --until-decided -m q4_k_m.gguf -m q8_0.gguf -bf mmlu-test.bin --margin 2 --log-dir runs/"
)]
#[command(group(clap::ArgGroup::new("sequential").multiple(true).requires("until_decided")
    .args(["models", "binary_file", "max_tasks", "chunk", "log_dir", "resume", "ctx_size", "parallel", "batch_size",
        "ubatch_size", "threads", "threads_batch", "n_gpu_layers", "flash_attn", "chat_template", "system", "shots_as_turns"])))]
pub(crate) struct Args {
    /// The reference run: a --log-samples file written by `mcscore score`.
    // Not `conflicts_with = "until_decided"`: clap then stops enforcing the
    // group's `requires` above; until_decided::run refuses logs instead.
    #[arg(value_name = "BASE.jsonl", required_unless_present = "until_decided")]
    pub(crate) base: Option<PathBuf>,
    /// Runs to compare with BASE, of the same tasks.
    #[arg(value_name = "OTHER.jsonl", required_unless_present = "until_decided")]
    pub(crate) others: Vec<PathBuf>,
    /// Score the models (-m, BASE first) on the task file (-bf) until every
    /// OTHER is decided, the order ends or --max-tasks; instead of reading logs.
    #[arg(long, requires_all = ["models", "binary_file"], conflicts_with_all = ["plots"])]
    pub(crate) until_decided: bool,
    /// With --until-decided: a GGUF model; the first is BASE, each further one an OTHER.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    pub(crate) models: Vec<PathBuf>,
    /// With --until-decided: the task file (.bin) to score, as -bf for llama-perplexity.
    #[arg(short = 'f', long = "binary-file", value_name = "FILE")]
    pub(crate) binary_file: Option<PathBuf>,
    /// With --until-decided: score at most N tasks of the order, then stop (undecided ones say so).
    #[arg(long, value_name = "N", value_parser = crate::numbers::whole(1u64, 1_000_000_000))]
    pub(crate) max_tasks: Option<u64>,
    /// With --until-decided: tasks scored between two looks at the sequences, 1 to 1,000,000.
    #[arg(long, value_name = "N", default_value_t = mcscore_eval::until_decided::DEFAULT_CHUNK as u64, value_parser = crate::numbers::whole(1u64, 1_000_000))]
    pub(crate) chunk: u64,
    /// With --until-decided: write each model's sample log in DIR (base.STEM.jsonl,
    /// other1.STEM.jsonl, …), readable by compare, report and resumable.
    #[arg(long, value_name = "DIR")]
    pub(crate) log_dir: Option<PathBuf>,
    /// With --until-decided: continue the logs in --log-dir (the same order, seed and stopping rule).
    #[arg(long, requires = "log_dir")]
    pub(crate) resume: bool,
    #[command(flatten, next_help_heading = "Scoring, with --until-decided")]
    pub(crate) engine: crate::engine_args::EngineArgs,
    #[command(flatten, next_help_heading = "Scoring, with --until-decided")]
    pub(crate) chat: crate::chat_args::ChatArgs,
    /// The normalisation whose picks are right or wrong and whose softmax
    /// gives the choice distributions.
    #[arg(long, value_enum, default_value = "acc-norm")]
    pub(crate) normalisation: NormArg,
    /// The equivalence margin in accuracy points, above 0 and at most 100:
    /// "equivalent" when the paired (1 − 2α) interval lies inside ±MARGIN.
    #[arg(long, value_name = "POINTS", default_value_t = 1.0, value_parser = crate::numbers::margin())]
    pub(crate) margin: f64,
    /// The error rate of each verdict, above 0 and below 0.5.
    #[arg(long, value_name = "A", default_value_t = 0.05, value_parser = crate::numbers::alpha())]
    pub(crate) alpha: f64,
    /// Bootstrap resamples, 100 to 100,000.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = crate::numbers::whole(100u32, 100_000))]
    pub(crate) resamples: u32,
    /// Bootstrap seed; with --until-decided also the seed of the task order.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::numbers::at_least(0u64))]
    pub(crate) seed: u64,
    /// The tasks' groups: a text file with one group name per line, one line
    /// per task of the task file, in file order. Default: the groups the
    /// manifest records for the task file (MMLU's subjects), if any.
    #[arg(long, value_name = "FILE")]
    pub(crate) groups: Option<PathBuf>,
    /// The manifest to look the task file's groups up in (by sha256).
    /// Default: a manifest.json in the task file's folder or a folder above
    /// it, then the working directory's, then mcscore's bundled one (the
    /// datasets it carries, wherever they are copied).
    #[arg(long, value_name = "FILE", conflicts_with = "groups")]
    pub(crate) manifest: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// How the comparison is printed: `human` (the answer first), or a table
    /// of one row per OTHER as `csv` (every column, fractions), `markdown` or
    /// `latex` (the main columns, in percent).
    #[arg(long, value_enum, default_value = "human")]
    pub(crate) format: Printed,
    /// Write plots (SVG and PNG): per OTHER the flip matrix, the KL histogram
    /// and the per-group differences; the paired differences and accuracies
    /// of all OTHERs.
    #[arg(long, value_name = "DIR")]
    pub(crate) plots: Option<PathBuf>,
    /// With --until-decided, progress on stderr: a bar on a terminal; in a
    /// log, a line at each look (every OTHER's interval) and every 30 s
    /// between (tasks scored, tasks and tokens a second).
    #[arg(long, value_enum, value_name = "auto|bar|lines|none", default_value_t = ProgressMode::Auto, requires = "until_decided")]
    pub(crate) progress: ProgressMode,
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    if let Some(dir) = &args.plots {
        crate::output::check_dir(dir, "--plots")?;
    }
    let base_path = args.base.as_deref().expect("clap requires BASE without --until-decided");
    let base = Run::read(base_path)?;
    let others = args.others.iter().map(|p| Run::read(p)).collect::<Result<Vec<_>, _>>()?;
    let groups = groups(&args, Path::new(&base.header.file), &base.header.file_sha256, base.header.file_tasks())?;
    let comparison = compare::compare(&base, &others, groups.as_ref(), &args.options())?;
    // Printed before the plots are written, so a plot that cannot be written
    // (a full disk) loses nothing else.
    if args.json {
        crate::print_json(&comparison)?;
    } else if let Some(format) = args.format.table() {
        out!("{}", table(&comparison).render(format))?;
    } else {
        out!("{}", text(&comparison))?;
    }
    if let Some(dir) = &args.plots {
        // The task file the logs name is an input too.
        let inputs: Vec<&Path> = std::iter::once(base_path)
            .chain(args.others.iter().map(PathBuf::as_path))
            .chain(args.groups.as_deref())
            .chain(args.manifest.as_deref())
            .chain(std::iter::once(Path::new(&base.header.file)))
            .collect();
        crate::plots::write(dir, &inputs, &crate::plots::comparison(&comparison)?)?;
    }
    Ok(Outcome::Ok)
}

impl Args {
    pub(crate) fn options(&self) -> CompareOptions {
        CompareOptions::new(
            self.normalisation.into(),
            crate::numbers::points_as_fraction(self.margin),
            self.alpha,
            self.resamples,
            self.seed,
        )
    }
}

/// The tasks' groups for the task file whose sha256 is `sha256` (and whose
/// task count is `file_tasks`, where a log's header tells it): from
/// --groups, --manifest, or a manifest.json found for `task_file`.
pub(crate) fn groups(args: &Args, task_file: &Path, sha256: &str, file_tasks: Option<usize>) -> anyhow::Result<Option<Groups>> {
    groups_from(args.groups.as_deref(), args.manifest.as_deref(), task_file, sha256, file_tasks)
}

/// The groups the manifest of the task file at `path` records (--manifest
/// where given, else one found for it), by the file's sha256.
pub(crate) fn file_groups(path: &Path, manifest: Option<&Path>) -> anyhow::Result<Option<Groups>> {
    let sha256 = mcscore_format::sha256_file(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    groups_from(None, manifest, path, &sha256, None)
}

/// Refuses a --manifest that is not a file to read: missing, a directory, or
/// a special file (a FIFO would block the read). Every error names the path.
pub(crate) fn check_named_manifest(manifest: &Path) -> anyhow::Result<()> {
    if !manifest.exists() {
        bail!("{}: --manifest: no manifest there", manifest.display());
    }
    if manifest.is_dir() {
        bail!("{}: --manifest names a directory; give the manifest file", manifest.display());
    }
    mcscore_format::check_input(manifest).context("--manifest")?;
    Ok(())
}

/// The tasks' groups from a --groups file (one line per task of the file,
/// `file_tasks` of them where known), a --manifest, or a manifest found for
/// `task_file` ([`mcscore_eval::groups::found_manifests`]).
pub(crate) fn groups_from(
    groups: Option<&Path>,
    manifest: Option<&Path>,
    task_file: &Path,
    sha256: &str,
    file_tasks: Option<usize>,
) -> anyhow::Result<Option<Groups>> {
    // A manifest found may be another program's: then no groups from it,
    // with a word; a manifest named by --manifest must be one.
    Ok(match (groups, manifest) {
        (Some(path), _) => {
            let tasks = file_tasks.or_else(|| Groups::found_tasks(task_file, sha256));
            Some(Groups::read(path, tasks).context("--groups")?)
        }
        (None, Some(manifest)) => {
            check_named_manifest(manifest)?;
            Groups::from_manifest(manifest, sha256).context("--manifest")?
        }
        (None, None) => Groups::found(task_file, sha256, &mut |m, error| {
            eprintln!(
                "mcscore: warning: {}: not read as mcscore's manifest ({}), so no task groups from it; pass --manifest FILE or --groups FILE",
                m.display(),
                crate::with_causes(error)
            );
        }),
    })
}

/// The interval the verdict rests on: the cluster bootstrap's where enough
/// groups are known, else the task bootstrap's.
fn judged(p: &Pairing) -> (&PairedDifference, &'static str) {
    match p.clustered.as_ref().and_then(|k| k.difference.as_ref()) {
        Some(d) => (d, " (over groups)"),
        None => (&p.difference, ""),
    }
}

/// The answer for one OTHER, in one line.
pub(crate) fn headline(c: &Comparison, p: &Pairing) -> String {
    let (d, basis) = judged(p);
    format!(
        "{} vs {}: {:+.2} points [{:+.2}, {:+.2}]{basis}, McNemar p = {}, {} right→wrong, {} wrong→right: {}",
        printable(&p.other.label),
        printable(&c.base.label),
        points(d.estimate),
        points(d.interval.0),
        points(d.interval.1),
        p_value(p.mcnemar.p),
        p.flips.right_to_wrong,
        p.flips.wrong_to_right,
        p.conclusion
    )
}

fn percent(level: f64) -> String {
    let p = 100.0 * level;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

fn text(c: &Comparison) -> String {
    let mut out = String::new();
    for p in &c.others {
        let _ = writeln!(out, "{}", headline(c, p));
    }
    let _ = writeln!(
        out,
        "\n{} ({}): {} tasks, {}, paired BCa intervals ({} resamples, seed {}), chance {:.2} %",
        printable(&c.file),
        crate::run_text::flag(c.mode),
        c.tasks,
        c.normalisation,
        c.resamples,
        c.seed,
        points(c.chance)
    );
    let _ = writeln!(out, "BASE {}: {:.2} %  ({})", printable(&c.base.label), points(c.base.accuracy), printable(&c.base.log));
    for p in &c.others {
        let f = &p.flips;
        let d = &p.difference;
        let _ = writeln!(out, "\n{}: {:.2} %  ({})", printable(&p.other.label), points(p.other.accuracy), printable(&p.other.log));
        let _ = writeln!(
            out,
            "  difference     {:+.2} points, {} [{:+.2}, {:+.2}]; {} [{:+.2}, {:+.2}] against ±{}{}",
            points(d.estimate),
            percent(c.interval_level),
            points(d.interval.0),
            points(d.interval.1),
            percent(c.tost_level),
            points(d.tost_interval.0),
            points(d.tost_interval.1),
            mcscore_metrics::shown(points(c.margin)),
            if p.verdict_basis == VerdictBasis::Tasks {
                format!(": {}", p.conclusion)
            } else {
                " (tasks; the verdict is the groups')".to_owned()
            }
        );
        let _ = writeln!(
            out,
            "  McNemar        exact p = {}, mid-p = {}{}",
            p_value(p.mcnemar.p),
            p_value(p.mcnemar.mid_p),
            if c.others.len() > 1 { format!(", Holm-adjusted p = {}", p_value(p.mcnemar_p_holm)) } else { String::new() }
        );
        let _ = writeln!(
            out,
            "  flips          {} right→wrong, {} wrong→right, {} wrong→another wrong; unchanged: {} right, {} wrong; same pick {:.2} %",
            f.right_to_wrong,
            f.wrong_to_right,
            f.wrong_to_other_wrong,
            f.both_right,
            f.both_wrong,
            100.0 * p.agreement
        );
        for (name, s) in [("KL(base‖other)", &p.kl), ("Jensen–Shannon", &p.js)] {
            let _ = writeln!(
                out,
                "  {name:<14} mean {}, median {}, p90 {}, p99 {}, max {} nats",
                nats(s.mean, false),
                nats(s.median, false),
                nats(s.p90, false),
                nats(s.p99, false),
                nats(s.max, false)
            );
        }
        let g = &p.gold_logprob_change;
        let _ = writeln!(
            out,
            "  gold option    ln p changes by {} [{}, {}] on average ({})",
            nats(g.estimate, true),
            nats(g.low, true),
            nats(g.high, true),
            if g.high < 0.0 {
                "OTHER is less sure of the answer"
            } else if g.low > 0.0 {
                "OTHER is surer of the answer"
            } else {
                "no clear direction"
            }
        );
        match (&p.clustered, &c.groups) {
            (Some(k), Some(source)) => {
                match &k.difference {
                    Some(g) => {
                        let _ = writeln!(
                            out,
                            "  groups         {} groups ({}): cluster bootstrap {} [{:+.2}, {:+.2}]; {} [{:+.2}, {:+.2}]: {}",
                            k.groups,
                            printable(source),
                            percent(c.interval_level),
                            points(g.interval.0),
                            points(g.interval.1),
                            percent(c.tost_level),
                            points(g.tost_interval.0),
                            points(g.tost_interval.1),
                            p.conclusion
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "  groups         {} groups ({}): too few for a cluster bootstrap (it needs {MIN_GROUPS_FOR_CLUSTERS}); the verdict is the tasks'",
                            k.groups,
                            printable(source)
                        );
                    }
                }
                let moved: Vec<_> = k.shifts.iter().take(5).collect();
                let _ = writeln!(out, "  moved most     (Benjamini–Hochberg q over the groups)");
                for s in moved {
                    let interval = s
                        .interval
                        .map_or_else(|| "no interval".to_owned(), |(low, high)| format!("[{:+.2}, {:+.2}]", points(low), points(high)));
                    let _ = writeln!(
                        out,
                        "    {:<40} {:+7.2} points {interval}, {} task{}, q = {}",
                        printable(&s.name),
                        points(s.difference),
                        s.tasks,
                        if s.tasks == 1 { "" } else { "s" },
                        p_value(s.bh_q)
                    );
                }
            }
            _ => {
                let _ = writeln!(out, "  groups         none known for this task file (pass --groups FILE for clustered statistics)");
            }
        }
    }
    out
}

/// One row per OTHER; Markdown and LaTeX show the answer's columns.
pub(crate) fn table(c: &Comparison) -> Table {
    let columns = [
        ("base", true),
        ("other", true),
        ("tasks", true),
        ("normalisation", false),
        ("base_accuracy", true),
        ("other_accuracy", true),
        ("difference", true),
        ("ci_low", true),
        ("ci_high", true),
        ("tost_low", false),
        ("tost_high", false),
        ("margin", false),
        ("verdict", true),
        ("mcnemar_p", true),
        ("mcnemar_mid_p", false),
        ("mcnemar_p_holm", false),
        ("right_to_wrong", true),
        ("wrong_to_right", true),
        ("wrong_to_other_wrong", false),
        ("both_right", false),
        ("both_wrong", false),
        ("agreement", false),
        ("kl_mean", true),
        ("kl_median", false),
        ("kl_p90", false),
        ("kl_p99", false),
        ("kl_max", false),
        ("js_mean", false),
        ("js_median", false),
        ("js_p90", false),
        ("js_p99", false),
        ("js_max", false),
        ("gold_logprob_change", false),
        ("gold_ci_low", false),
        ("gold_ci_high", false),
        ("cluster_ci_low", false),
        ("cluster_ci_high", false),
        ("verdict_basis", false),
    ];
    let mut t = Table::with_detail(columns);
    for p in &c.others {
        let (f, d, g) = (&p.flips, &p.difference, &p.gold_logprob_change);
        let cluster = p.clustered.as_ref().and_then(|k| k.difference.as_ref()).map(|g| g.interval);
        let count = |n: usize| Cell::Count(n as u64);
        let number = |x: f64| Cell::Number(x, 4);
        t.row(vec![
            Cell::text(&*c.base.label),
            Cell::text(&*p.other.label),
            count(p.tasks),
            Cell::text(c.normalisation.to_string()),
            Cell::Fraction(p.base_accuracy),
            Cell::Fraction(p.other.accuracy),
            Cell::Fraction(d.estimate),
            Cell::Fraction(d.interval.0),
            Cell::Fraction(d.interval.1),
            Cell::Fraction(d.tost_interval.0),
            Cell::Fraction(d.tost_interval.1),
            Cell::Fraction(c.margin),
            Cell::text(p.verdict.name()),
            Cell::P(p.mcnemar.p),
            Cell::P(p.mcnemar.mid_p),
            Cell::P(p.mcnemar_p_holm),
            count(f.right_to_wrong),
            count(f.wrong_to_right),
            count(f.wrong_to_other_wrong),
            count(f.both_right),
            count(f.both_wrong),
            Cell::Fraction(p.agreement),
            number(p.kl.mean),
            number(p.kl.median),
            number(p.kl.p90),
            number(p.kl.p99),
            number(p.kl.max),
            number(p.js.mean),
            number(p.js.median),
            number(p.js.p90),
            number(p.js.p99),
            number(p.js.max),
            number(g.estimate),
            number(g.low),
            number(g.high),
            cluster.map_or(Cell::Empty, |i| Cell::Fraction(i.0)),
            cluster.map_or(Cell::Empty, |i| Cell::Fraction(i.1)),
            Cell::text(p.verdict_basis.name()),
        ]);
    }
    t
}
