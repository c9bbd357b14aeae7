//! `mcscore validate`: every fault of a task file, and whether llama.cpp
//! would still (silently) score it.

use std::path::PathBuf;

use mcscore_format::{ValidationReport, LISTED_PER_KIND};

use crate::Outcome;

/// Check task files strictly and list every fault, each with its task index
/// and byte offset.
///
/// A file is valid when its offsets match where tasks start, tasks tile the
/// file with no gap, overlap or trailing bytes, strings are UTF-8, every task
/// has 2 to 100 non-empty options and exactly one label set to 1, and mc2 is
/// well formed. For an invalid file it also says whether llama-perplexity
/// would score it anyway (it ignores offsets and labels, and exits 0 even when
/// it cannot read a file). At most 20 faults of each kind are listed, with a
/// count of the rest. A file of image tasks (.tsv, docs/vqa.md) is read row by
/// row (its first structural fault named by line and byte), and every image is
/// decoded as llama.cpp's image loader decodes it, each that fails named by row.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Task files (.bin) to validate, or files of image tasks (VLMEvalKit's TSV, .tsv, or its JSON
    /// Lines form, .jsonl: every row read, every image decoded as llama.cpp decodes it).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome::Ok;
    let mut reports = Vec::new();
    for path in &args.files {
        if mcscore_datasets::vqa::is_vqa_file(path) {
            match mcscore_eval::vqa::summarise(path) {
                Ok((summary, _)) => {
                    if !summary.valid() {
                        outcome = Outcome::InvalidInput;
                    }
                    if args.json {
                        reports.push(serde_json::json!({"file": summary.file, "valid": summary.valid(), "tasks": summary.tasks,
                            "images": summary.images, "image_faults": summary.image_faults}));
                    } else {
                        print_vqa(&summary, "valid")?;
                    }
                }
                Err(error) => {
                    crate::flag_hints::report(crate::flag_hints::Asked::Other, &error.into());
                    outcome = Outcome::InvalidInput;
                }
            }
            continue;
        }
        let report = match ValidationReport::of(path) {
            Ok(report) => report,
            Err(error) => {
                crate::flag_hints::report(crate::flag_hints::Asked::Other, &error.into());
                outcome = Outcome::InvalidInput;
                continue;
            }
        };
        if !report.valid {
            outcome = Outcome::InvalidInput;
        }
        if args.json {
            reports.push(serde_json::to_value(report)?);
        } else {
            print_report(&report)?;
        }
    }
    if args.json {
        crate::print_json(&reports)?;
    }
    Ok(outcome)
}

/// A file of image tasks: its rows were read whole (a structural fault is an
/// error), so what is left to say is which images do not decode; `verdict`
/// is what a file all of whose images decode is (`valid`, `verified`).
pub(crate) fn print_vqa(summary: &mcscore_eval::vqa::VqaSummary, verdict: &str) -> anyhow::Result<()> {
    let counts = format!("{} tasks, {} images ({} distinct)", summary.tasks, summary.images, summary.distinct_images);
    if summary.valid() {
        return outln!("{}: {verdict} ({counts}, each decoded as llama.cpp decodes it)", summary.file);
    }
    let n = summary.image_faults.len();
    outln!("{}: INVALID ({n} image{} llama.cpp would not read; {counts})", summary.file, if n == 1 { "" } else { "s" })?;
    for f in &summary.image_faults {
        outln!("  line {} (index {:?}, task {}): image {}: {}", f.line, f.index, f.task, f.image, f.message)?;
    }
    Ok(())
}

fn print_report(report: &ValidationReport) -> anyhow::Result<()> {
    if report.valid {
        let tasks = report.llama_cpp_would_score.unwrap_or(0);
        return outln!("{}: valid ({tasks} tasks)", report.file);
    }
    let n = report.fault_count;
    outln!("{}: INVALID ({n} fault{})", report.file, if n == 1 { "" } else { "s" })?;
    for fault in &report.faults {
        outln!("  {}", fault.message)?;
    }
    for (kind, more) in &report.not_listed {
        outln!("  ... and {more} more {kind} fault{} (the first {LISTED_PER_KIND} are listed)", if *more == 1 { "" } else { "s" })?;
    }
    match report.llama_cpp_would_score {
        Some(tasks) => outln!(
            "  llama-perplexity would still score {tasks} task{} from this file and exit 0: it ignores offsets, labels, mc2, invalid UTF-8, one-option tasks and trailing bytes",
            if tasks == 1 { "" } else { "s" }
        ),
        None => outln!("  llama-perplexity cannot read this file either, yet it exits 0"),
    }
}
