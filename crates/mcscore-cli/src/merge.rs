//! `mcscore merge`: the logs of a run's shards joined into the log of one run.

use std::path::PathBuf;

use mcscore_eval::log::write_complete;
use mcscore_eval::shard::merge;

use crate::output::{self, Target};
use crate::progress::ProgressMode;
use crate::run_text::{print_accuracies, Shown};
use crate::text::printable;
use crate::Outcome;

const EXAMPLES: &str = "\
Examples:
  mcscore merge logs/run.*.jsonl -o run.jsonl            the shards of `score --shard K/N --log-samples logs/run.K.jsonl`
  mcscore merge logs/run.*.jsonl -o run.jsonl --json
  mcscore merge logs/run.*.jsonl --format llama          llama-perplexity's stdout of the whole run";

/// Merge the logs of a run's shards (`score --shard K/N`) into one run's log.
///
/// Reads the sample logs of every shard of a run and prints the run's results.
/// Refuses logs of different models, files, settings, subsets or partitions,
/// an incomplete shard (finish it with --resume), a shard given twice or
/// missing, and a task in two shards, naming the log and shard. The merged
/// log is a complete log like any run's: `report`, `score --resume` and
/// every other reader accept it, and its results are those of an unsharded
/// run: under the batch rule, its task lines are byte-identical to one's.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// The shard logs, in any order.
    #[arg(value_name = "LOG", required = true)]
    logs: Vec<PathBuf>,
    /// Write the merged log here (atomically); an existing file only with --force,
    /// and never one of the shard logs.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Replace the -o file if it exists (a regular file that is not an input).
    #[arg(long, requires = "out")]
    force: bool,
    /// Print the results as JSON on stdout.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// `human` (a summary), `llama` (llama-perplexity's stdout for the whole run, and its
    /// final lines on stderr), or the run's accuracies as a table: `csv` (fractions),
    /// `markdown` or `latex` (percent).
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Human,
    Llama,
    Csv,
    Markdown,
    Latex,
}

impl Format {
    fn table(self) -> Option<crate::table::Printed> {
        match self {
            Format::Human | Format::Llama => None,
            Format::Csv => Some(crate::table::Printed::Csv),
            Format::Markdown => Some(crate::table::Printed::Markdown),
            Format::Latex => Some(crate::table::Printed::Latex),
        }
    }
}

/// The shard logs of `mcscore schemes --shard K/N`, joined into the run's
/// log, and the run's tables.
fn merge_schemes(args: &Args, target: Option<&Target<'_>>) -> anyhow::Result<Outcome> {
    if args.format == Format::Llama {
        return Err(crate::UsageError("--format llama: a run of `mcscore schemes` has no llama-perplexity output".into()).into());
    }
    let merged = mcscore_eval::schemes::merge(&args.logs)?;
    if let (Some(out), Some(target)) = (&args.out, target) {
        let mut file = mcscore_format::AtomicFile::with(out, target.existing)?;
        std::io::Write::write_all(&mut file, mcscore_eval::schemes::log_text(&merged).as_bytes())?;
        file.commit()?;
        eprintln!("mcscore: {} shards merged into {} ({} tasks)", args.logs.len(), out.display(), merged.records.len());
    }
    let printed = if args.json { None } else { Some(args.format.table().unwrap_or(crate::table::Printed::Human)) };
    crate::schemes::print_report(&[merged], 1000, 1, printed, None)
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let target = args.out.as_deref().map(|out| Target::new(out, "-o", args.force));
    if let Some(target) = &target {
        output::check_file(target, &args.logs.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    }
    if mcscore_eval::schemes::is_log(&args.logs[0]) {
        return merge_schemes(&args, target.as_ref());
    }
    let merged = merge(&args.logs)?;
    if let (Some(out), Some(target)) = (&args.out, &target) {
        write_complete(out, &merged.header, &merged.records, target.existing)?;
        eprintln!("mcscore: {} shards merged into {} ({} tasks)", merged.shards, out.display(), merged.records.len());
    }
    let header = &merged.header;
    let n = merged.records.len();
    let baselines = merged.baselines();
    if args.json {
        crate::print_json(&mcscore_eval::results::MergedSummary::new(&merged, args.out.as_deref()))?;
    } else if let Some(format) = args.format.table().and_then(crate::table::Printed::table) {
        let summary = mcscore_eval::results::MergedSummary::new(&merged, args.out.as_deref());
        // The groups the file's manifest records, as `score` shows them; a
        // manifest that cannot be read loses nothing of the run: a warning.
        let file = std::path::Path::new(&header.file);
        let groups = crate::compare::groups_from(None, None, file, &header.file_sha256, Some(merged.file_tasks))
            .and_then(|g| {
                let log = args.logs[0].as_path();
                Ok(g.map(|g| mcscore_eval::results::group_accuracies_of(&merged.records, &g, log)).transpose()?)
            })
            .unwrap_or_else(|error| {
                eprintln!("mcscore: warning: no accuracy per group: {}", crate::with_causes(&*error));
                None
            });
        let run = crate::score::many::OneRun {
            model: summary.model,
            file: summary.file,
            tasks: summary.tasks,
            metrics: &summary.metrics,
            chance: summary.chance,
            majority_class: summary.majority_class,
            groups: groups.as_ref(),
        };
        out!("{}", crate::score::many::run_table(&run).render(format))?;
    } else if args.format == Format::Llama {
        let mut shown = Shown::new(ProgressMode::None, Some(header.mode));
        shown.llama_preamble(merged.file_tasks, n, header.limit.is_none() && n < merged.file_tasks)?;
        for (i, record) in merged.records.iter().enumerate() {
            shown.llama_line(record, i + 1)?;
        }
        shown.llama_end(n, merged.total_options())?;
    } else {
        let model = mcscore_eval::log::label(&header.model);
        outln!("{} on {}: {n} tasks, merged from {} shards", printable(&model), printable(&header.file), merged.shards)?;
        print_accuracies(&merged.records, header.mode, &baselines)?;
    }
    Ok(Outcome::Ok)
}
