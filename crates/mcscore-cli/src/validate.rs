//! `mcscore validate`: every fault of a task file, and whether llama.cpp
//! would still (silently) score it.

use std::path::{Path, PathBuf};

use mcscore_format::{read_lenient, validate, Fault};
use serde::Serialize;

use crate::Outcome;

/// Check task files strictly and list every fault, each with its task index
/// and byte offset.
///
/// A file is valid when its offsets match where tasks start, tasks tile the
/// file with no gap, overlap or trailing bytes, strings are UTF-8, every task
/// has 1 to 100 non-empty options and exactly one label set to 1, and mc2 is
/// well formed. For an invalid file it also says whether llama-perplexity
/// would score it anyway (it ignores offsets and labels, and exits 0 even when
/// it cannot read a file).
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Task files (.bin) to validate.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct FaultReport {
    kind: &'static str,
    task: Option<usize>,
    message: String,
}

#[derive(Serialize)]
struct FileReport {
    file: String,
    valid: bool,
    faults: Vec<FaultReport>,
    /// How many tasks llama.cpp would score (`null` when it could not read the file).
    llama_cpp_would_score: Option<usize>,
}

fn check(path: &Path) -> anyhow::Result<FileReport> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let faults = validate(&bytes);
    // A valid file has a header, and llama.cpp scores every task it announces.
    let llama_cpp_would_score = if faults.is_empty() {
        Some(u32::from_le_bytes(bytes[..4].try_into()?) as usize)
    } else {
        read_lenient(&bytes, path).ok().map(|tasks| tasks.len())
    };
    Ok(FileReport {
        file: path.display().to_string(),
        valid: faults.is_empty(),
        faults: faults.iter().map(|f: &Fault| FaultReport { kind: f.kind(), task: f.task(), message: f.to_string() }).collect(),
        llama_cpp_would_score,
    })
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome::Ok;
    let mut reports = Vec::new();
    for path in &args.files {
        let report = match check(path) {
            Ok(report) => report,
            Err(error) => {
                eprintln!("mcscore: error: {error}");
                outcome = Outcome::InvalidInput;
                continue;
            }
        };
        if !report.valid {
            outcome = Outcome::InvalidInput;
        }
        if args.json {
            reports.push(report);
        } else {
            print_report(&report);
        }
    }
    if args.json {
        crate::print_json(&reports)?;
    }
    Ok(outcome)
}

fn print_report(report: &FileReport) {
    if report.valid {
        let tasks = report.llama_cpp_would_score.unwrap_or(0);
        println!("{}: valid ({tasks} tasks)", report.file);
        return;
    }
    let n = report.faults.len();
    println!("{}: INVALID ({n} fault{})", report.file, if n == 1 { "" } else { "s" });
    for fault in &report.faults {
        println!("  {}", fault.message);
    }
    match report.llama_cpp_would_score {
        Some(tasks) => println!(
            "  llama-perplexity would still score {tasks} task{} from this file and exit 0: it ignores offsets, labels, mc2 and trailing bytes",
            if tasks == 1 { "" } else { "s" }
        ),
        None => println!("  llama-perplexity cannot read this file either, yet it exits 0"),
    }
}
