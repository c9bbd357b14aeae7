//! Reads a file the way llama.cpp does when it scores every task: back to back
//! from the end of the offset table, offsets and labels unchecked. This lets
//! `validate` and `score --lenient` say what llama.cpp would score and why the
//! file is still wrong.

use std::path::Path;

use crate::fault::Fault;
use crate::parse::{parse_header, parse_task};
use crate::task::Task;

/// Whether llama.cpp's reader also rejects a fault (it stops reading there).
/// Faults it ignores: offsets, labels, malformed mc2 content, bytes after the
/// last task, invalid UTF-8 (its tokenizer takes bytes) and a task with one
/// option (which it then mis-scores). The match is exhaustive so that a new
/// fault has to be placed on one side or the other.
pub fn llama_cpp_rejects(fault: &Fault) -> bool {
    match fault {
        Fault::ShortHeader { .. }
        | Fault::NoTasks
        | Fault::OffsetTableTruncated { .. }
        | Fault::CountPastEnd { .. }
        | Fault::StringPastEnd { .. }
        | Fault::EmptyQuestion { .. }
        | Fault::NoOptions { .. }
        | Fault::TooManyOptions { .. }
        | Fault::EmptyOption { .. } => true,
        Fault::FirstOffset { .. }
        | Fault::OffsetOutOfBounds { .. }
        | Fault::OffsetBackwards { .. }
        | Fault::Gap { .. }
        | Fault::Overlap { .. }
        | Fault::InvalidUtf8 { .. }
        | Fault::OneOption { .. }
        | Fault::TextTooLong { .. }
        | Fault::BadLabel { .. }
        | Fault::NoGoldLabel { .. }
        | Fault::SeveralGoldLabels { .. }
        | Fault::Mc2TooManyOptions { .. }
        | Fault::Mc2EmptyOption { .. }
        | Fault::Mc2BadLabel { .. }
        | Fault::TrailingBytes { .. } => false,
    }
}

/// Faults that stop a lenient read: those llama.cpp rejects too, and invalid
/// UTF-8, which our tokenizer cannot take.
fn lenient_rejects(fault: &Fault) -> bool {
    llama_cpp_rejects(fault) || matches!(fault, Fault::InvalidUtf8 { .. })
}

/// How many tasks llama-perplexity would read from `bytes` and score, or
/// `None` where its reader stops on a fault (it then exits 0 all the same).
pub fn llama_cpp_task_count(bytes: &[u8]) -> Option<usize> {
    let (count, fatal) = walk(bytes, llama_cpp_rejects, |_| {});
    fatal.is_empty().then_some(count)
}

/// Follows tasks back to back from the end of the offset table, as llama.cpp
/// reads them, handing each readable task to `each`. Returns how many tasks
/// were read and the faults that `rejects` says stop the reader.
fn walk<'a>(bytes: &'a [u8], rejects: fn(&Fault) -> bool, mut each: impl FnMut(Task<'a>)) -> (usize, Vec<Fault>) {
    let mut fatal = Vec::new();
    let mut count = 0;
    if let Some(header) = parse_header(bytes, &mut fatal) {
        let mut pos = header.table_end;
        for index in 0..header.n_tasks {
            let mut faults = Vec::new();
            let parsed = parse_task(bytes, pos, index, &mut faults);
            fatal.extend(faults.into_iter().filter(&rejects));
            let Some(end) = parsed.end else { break };
            pos = end;
            count += 1;
            if let Some(task) = parsed.task {
                each(task);
            }
        }
    }
    (count, fatal)
}

/// Reads tasks back to back as llama.cpp does, ignoring the faults it
/// ignores (`validate` lists those). `Err` carries the faults that would stop
/// llama.cpp (or our tokenizer) too.
pub fn read_lenient<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<Task<'a>>, crate::Error> {
    let mut tasks = Vec::new();
    let (_, fatal) = walk(bytes, lenient_rejects, |task| tasks.push(task));
    if fatal.is_empty() {
        Ok(tasks)
    } else {
        Err(crate::Error::Invalid { path: path.to_owned(), faults: fatal })
    }
}
