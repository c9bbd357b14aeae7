//! Reads a file the way llama.cpp does when it scores every task: back to back
//! from the end of the offset table, offsets and labels unchecked. This lets
//! `validate` and `score --lenient` say what llama.cpp would score and why the
//! file is still wrong.

use std::path::Path;

use crate::fault::Fault;
use crate::parse::{parse_header, parse_task};
use crate::task::Task;

/// Whether llama.cpp's reader also rejects a fault (it stops reading there).
/// Faults it would ignore: offsets, labels, malformed mc2 content and bytes
/// after the last task. UTF-8 is required by our tokenizer, not by llama.cpp.
pub fn llama_cpp_rejects(fault: &Fault) -> bool {
    matches!(
        fault,
        Fault::ShortHeader { .. }
            | Fault::NoTasks
            | Fault::OffsetTableTruncated { .. }
            | Fault::CountPastEnd { .. }
            | Fault::StringPastEnd { .. }
            | Fault::InvalidUtf8 { .. }
            | Fault::EmptyQuestion { .. }
            | Fault::NoOptions { .. }
            | Fault::TooManyOptions { .. }
            | Fault::EmptyOption { .. }
    )
}

/// Reads tasks back to back as llama.cpp does, ignoring the faults it
/// ignores (`validate` lists those). `Err` carries the faults that would stop
/// llama.cpp (or our tokenizer) too.
pub fn read_lenient<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<Task<'a>>, crate::Error> {
    let mut fatal = Vec::new();
    let mut tasks = Vec::new();
    if let Some(header) = parse_header(bytes, &mut fatal) {
        let mut pos = header.table_end;
        for index in 0..header.n_tasks {
            let mut faults = Vec::new();
            let parsed = parse_task(bytes, pos, index, &mut faults);
            fatal.extend(faults.into_iter().filter(llama_cpp_rejects));
            match (parsed.end, parsed.task) {
                (Some(end), Some(task)) => {
                    pos = end;
                    tasks.push(task);
                }
                (Some(end), None) => pos = end,
                (None, _) => break,
            }
        }
    }
    if fatal.is_empty() {
        Ok(tasks)
    } else {
        Err(crate::Error::Invalid { path: path.to_owned(), faults: fatal })
    }
}
