//! `validate`'s account of one file: every fault counted, the first of each
//! kind listed, and what llama.cpp would make of the file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::lenient::llama_cpp_task_count;
use crate::parse::validate;
use crate::Error;

/// Faults listed per kind; the rest are counted. A corrupt offset table can
/// yield a fault per task, millions of them, that say nothing more.
pub const LISTED_PER_KIND: usize = 20;

/// One fault as a report lists it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FaultReport {
    /// The fault's kind (`offset_out_of_bounds`, ...).
    pub kind: &'static str,
    /// The task it belongs to, where it belongs to one.
    pub task: Option<usize>,
    /// The fault as a message, with its byte offset.
    pub message: String,
}

/// Every fault of one task file, and whether llama.cpp would score it anyway.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ValidationReport {
    /// The file, as given.
    pub file: String,
    /// No fault at all.
    pub valid: bool,
    /// Every fault found, however many are listed.
    pub fault_count: usize,
    /// At most [`LISTED_PER_KIND`] faults of each kind, in file order.
    pub faults: Vec<FaultReport>,
    /// Faults of each kind found beyond those listed.
    pub not_listed: BTreeMap<&'static str, usize>,
    /// How many tasks llama-perplexity would score (`None` where its reader
    /// stops on a fault; it exits 0 all the same).
    pub llama_cpp_would_score: Option<usize>,
}

impl ValidationReport {
    /// Reads and validates the file at `path`, reading each byte once.
    pub fn of(path: &Path) -> Result<ValidationReport, Error> {
        if path.is_dir() {
            return Err(crate::file::a_directory(path));
        }
        let bytes = crate::read_input(path)?;
        let found = validate(&bytes);
        let mut per_kind: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut faults = Vec::new();
        for fault in &found {
            let seen = per_kind.entry(fault.kind()).or_default();
            *seen += 1;
            if *seen <= LISTED_PER_KIND {
                faults.push(FaultReport { kind: fault.kind(), task: fault.task(), message: fault.to_string() });
            }
        }
        let not_listed = per_kind.into_iter().filter(|&(_, n)| n > LISTED_PER_KIND).map(|(kind, n)| (kind, n - LISTED_PER_KIND)).collect();
        Ok(ValidationReport {
            file: path.display().to_string(),
            valid: found.is_empty(),
            fault_count: found.len(),
            faults,
            not_listed,
            llama_cpp_would_score: llama_cpp_task_count(&bytes),
        })
    }
}

/// One task of a valid file, whole, as `inspect --task` shows it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TaskReport<'a> {
    /// Its index, from 0.
    pub task: usize,
    /// Its byte offset in the file.
    pub offset: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its question, as the file holds it.
    pub question: &'a str,
    /// Its options, in the file's order.
    pub options: Vec<&'a str>,
    /// The gold option's index.
    pub gold: Option<usize>,
    /// TruthfulQA's mc2 options, where the task has them.
    pub mc2_options: Vec<&'a str>,
}

impl<'a> TaskReport<'a> {
    /// Task `index` of `file`, which must be below `file.len()`.
    pub fn of(file: &'a crate::TaskFile, index: usize) -> TaskReport<'a> {
        let task = file.task(index);
        TaskReport {
            task: index,
            offset: file.offset(index),
            bytes: file.task_len(index),
            question: task.question,
            options: task.options().to_vec(),
            gold: task.gold(),
            mc2_options: task.mc2.options.clone(),
        }
    }
}
