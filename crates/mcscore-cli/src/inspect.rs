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
    /// Task files (.bin) to inspect, or files of image tasks (VLMEvalKit's TSV, .tsv, or its JSON Lines form, .jsonl).
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
        if mcscore_datasets::vqa::is_vqa_file(path) {
            match inspect_vqa(path, &args) {
                Ok(Some(value)) => reports.push(value),
                Ok(None) => {}
                Err(error) => {
                    crate::flag_hints::report(crate::flag_hints::Asked::Other, &error);
                    outcome = Outcome::InvalidInput;
                }
            }
            continue;
        }
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

/// A file of image tasks: its summary, or task `args.task` in full; as JSON
/// (returned) with `--json`, else printed.
fn inspect_vqa(path: &std::path::Path, args: &Args) -> anyhow::Result<Option<serde_json::Value>> {
    let (summary, tasks) = mcscore_eval::vqa::summarise(path)?;
    let Some(index) = args.task else {
        if args.json {
            return Ok(Some(serde_json::to_value(&summary)?));
        }
        print_vqa_summary(&summary)?;
        return Ok(None);
    };
    let Some(task) = tasks.get(index) else {
        anyhow::bail!(
            "{}: --task {index} is out of range: the file has {} tasks, numbered from 0 to {}",
            path.display(),
            tasks.len(),
            tasks.len() - 1
        );
    };
    let images: Vec<serde_json::Value> = task
        .images
        .iter()
        .map(|b| {
            let size = mcscore_engine::check_image(b);
            serde_json::json!({"sha256": mcscore_format::sha256_hex(b), "bytes": b.len(),
                "width": size.as_ref().ok().map(|s| s.0), "height": size.as_ref().ok().map(|s| s.1),
                "fault": size.err().map(|e| e.to_string())})
        })
        .collect();
    if args.json {
        return Ok(Some(serde_json::json!({"file": summary.file, "task": index, "index": task.index, "line": task.line,
            "context": task.context, "options": task.letters, "gold": task.gold, "images": images, "categories": task.categories})));
    }
    outln!("{} task {index} (index {:?}, line {})", path.display(), task.index, task.line)?;
    for (k, image) in images.iter().enumerate() {
        let size = match (&image["width"], &image["height"]) {
            (serde_json::Value::Number(w), serde_json::Value::Number(h)) => format!("{w} x {h} px"),
            _ => format!("not read: {}", image["fault"].as_str().unwrap_or("")),
        };
        outln!("image {k}: {size}, {} bytes, sha256 {}", image["bytes"], image["sha256"].as_str().unwrap_or(""))?;
    }
    outln!("context:")?;
    for line in task.context.lines() {
        outln!("  {line}")?;
    }
    outln!("options:")?;
    for (k, letter) in task.letters.iter().enumerate() {
        let mark = if k == task.gold { "  <- gold" } else { "" };
        outln!("  {k:>3}  {letter:?}{mark}")?;
    }
    Ok(None)
}

fn print_vqa_summary(s: &mcscore_eval::vqa::VqaSummary) -> anyhow::Result<()> {
    let join = |m: &std::collections::BTreeMap<String, usize>| m.iter().map(|(k, n)| format!("{k}: {n}")).collect::<Vec<_>>().join(", ");
    let options = s.options.iter().map(|(k, n)| format!("{k} options: {n}")).collect::<Vec<_>>().join(", ");
    outln!("{}", s.file)?;
    outln!("  tasks           {} (VLMEvalKit's multiple-choice TSV, with images)", s.tasks)?;
    outln!("  images          {} ({} distinct), {} that llama.cpp would not read", s.images, s.distinct_images, s.image_faults.len())?;
    outln!("  hints           {}", s.hints)?;
    outln!("  option counts   {options}")?;
    outln!("  answers         {}", join(&s.answers))?;
    outln!("  chance          {:.2} %", points(s.chance))?;
    outln!("  majority_class  {:.2} %", points(s.majority_class))?;
    for (column, values) in &s.categories {
        // A column of a value per row (a comment, a source URL) says nothing summed.
        if values.len() <= 50 {
            outln!("  {column:<15} {}", join(values))?;
        } else {
            outln!("  {column:<15} {} values", values.len())?;
        }
    }
    outln!("  sha256          {}", s.sha256)?;
    Ok(())
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
