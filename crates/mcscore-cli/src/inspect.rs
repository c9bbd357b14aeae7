//! `mcscore inspect`: what a task file holds, and one task in full.

use std::path::PathBuf;

use mcscore_format::{Summary, TaskFile, TaskReport};

use crate::run_text::points;
use crate::Outcome;

/// Show tasks, option counts, mode, chance, majority class, the -np llama.cpp
/// needs, the longest task and the sha256 of task files.
///
/// Files must be strictly valid; run `mcscore validate` to see every fault of
/// one that is not.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Task files (.bin) to inspect.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Print task N (0-based) in full, with its gold option marked.
    #[arg(long, value_name = "N", value_parser = crate::numbers::at_least(0usize))]
    task: Option<usize>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome::Ok;
    let mut reports = Vec::new();
    for path in &args.files {
        let file = match TaskFile::open(path) {
            Ok(file) => file,
            Err(error) => {
                let invalid = matches!(error, mcscore_format::Error::Invalid { .. });
                crate::flag_hints::report(crate::flag_hints::Asked::Other, &error.into());
                if invalid {
                    eprintln!("  (run `mcscore validate {}` to list every fault)", path.display());
                }
                outcome = Outcome::InvalidInput;
                continue;
            }
        };
        if let Some(index) = args.task.filter(|&i| i >= file.len()) {
            let error = anyhow::anyhow!(
                "{}: --task {index} is out of range: the file has {} tasks, numbered from 0 to {}",
                path.display(),
                file.len(),
                // TaskFile::open refused a file of no tasks (NoTasks)
                file.len() - 1
            );
            crate::flag_hints::report(crate::flag_hints::Asked::Other, &error);
            outcome = Outcome::InvalidInput;
            continue;
        }
        if args.json {
            let file_name = path.display().to_string();
            reports.push(match args.task {
                Some(index) => serde_json::to_value(OfFile { report: TaskReport::of(&file, index), file: file_name })?,
                None => serde_json::to_value(OfFile { report: Summary::of(&file), file: file_name })?,
            });
        } else if let Some(index) = args.task {
            print_task(&file, index)?;
        } else {
            print_summary(&file, &Summary::of(&file))?;
        }
    }
    if args.json {
        crate::print_json(&reports)?;
    }
    Ok(outcome)
}

/// A report with the file it is of, after its own fields.
#[derive(serde::Serialize)]
struct OfFile<T> {
    #[serde(flatten)]
    report: T,
    file: String,
}

fn print_task(file: &TaskFile, index: usize) -> anyhow::Result<()> {
    let task = file.task(index);
    outln!("{} task {index} (byte {}, {} bytes)", file.path().display(), file.offset(index), file.task_len(index))?;
    outln!("question:")?;
    for line in task.question.lines() {
        outln!("  {line}")?;
    }
    outln!("options:")?;
    let gold = task.gold();
    for (k, option) in task.options().iter().enumerate() {
        let mark = if Some(k) == gold { "  <- gold" } else { "" };
        outln!("  {k:>3}  {option:?}{mark}")?;
    }
    if !task.mc2.options.is_empty() {
        outln!("mc2 options: {:?}", task.mc2.options)?;
    }
    Ok(())
}

fn print_summary(file: &TaskFile, s: &Summary) -> anyhow::Result<()> {
    let histogram = s.option_counts.iter().map(|(options, tasks)| format!("{options} options: {tasks}")).collect::<Vec<_>>().join(", ");
    outln!("{}", file.path().display())?;
    outln!("  tasks           {}", s.tasks)?;
    outln!("  bytes           {}", s.bytes)?;
    outln!("  option counts   {histogram}")?;
    outln!("  mode            {}", s.mode)?;
    outln!("  chance          {:.2} %", points(s.chance))?;
    outln!("  majority_class  {:.2} % (gold at {})", points(s.majority_class), crate::run_text::option_name(s.majority_position))?;
    outln!("  min_parallel    {} (the -np llama-perplexity needs)", s.min_parallel)?;
    outln!("  longest task    task {}, {} bytes", s.longest_task, s.longest_task_bytes)?;
    outln!("  sha256          {}", s.sha256)?;
    Ok(())
}
