//! llama.cpp's multiple-choice task file (`.bin`): a strict validator that
//! names every fault, zero-copy task views over a memory map, a lenient reader
//! that reads what llama.cpp would, and an atomic streaming writer.
//!
//! The layout is in `docs/formats.md`. The rules are stricter than llama.cpp's:
//! it ignores offsets and labels and exits 0 on broken files; a file this crate
//! opens has offsets that match, tasks that tile the file, UTF-8 strings and
//! exactly one gold option per task.

#![warn(missing_docs)]

mod fault;
mod file;
mod lenient;
mod parse;
mod report;
mod summary;
mod task;
mod text;
mod writer;

use std::path::PathBuf;

pub use fault::{Fault, Field};
pub use file::TaskFile;
pub use lenient::{llama_cpp_rejects, llama_cpp_task_count, read_lenient};
pub use parse::validate;
pub use report::{FaultReport, TaskReport, ValidationReport, LISTED_PER_KIND};
pub use summary::{hex, sha256_file, sha256_hex, BaselineCounter, Baselines, Summary};
pub use task::{Choices, IdSet, Mode, Task, IMAGE_MARKER};
pub use text::{read_hellaswag, read_winogrande, winogrande_line, TextFault, HELLASWAG_ENDINGS, WINOGRANDE_HEADER};
pub use writer::{
    check_input, check_input_io, check_target, file_kind, probe_folder, read_input, remove_partial_files, same_file, write_atomic,
    write_tasks, AtomicFile, Existing, TaskWriter,
};

/// The most bytes mcscore tokenises as one text (a question, a space and an
/// option; a rendered prompt and an option): 4 MiB, about a million tokens,
/// more than any context holds. A task file's task past it is a fault.
pub const MAX_TEXT_BYTES: usize = 4 << 20;

/// How every mcscore error is printed: a message leaves its cause out (the
/// cause is its `source()`), and this writes the whole chain,
/// `path: what: why`. `error` and its causes on one line, joined by ": ",
/// each once (another crate's error may repeat its cause in its own message).
pub fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = std::iter::successors(Some(error), |e| e.source());
    let mut message = chain.next().map(|e| e.to_string()).unwrap_or_default();
    for cause in chain {
        let text = cause.to_string();
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
    }
    message
}

/// llama.cpp rejects tasks with more options than this.
pub const MAX_OPTIONS: usize = 100;

/// Why a task file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file the system could not open, read or write, or a directory
    /// given where a task file was expected.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },

    /// An input or output that is not a regular file (a device, a FIFO, a
    /// socket, a directory, or for an output a symbolic link).
    #[error("{}: {kind}, not a regular file", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a FIFO").
        kind: &'static str,
    },

    /// An output that exists where the command may not replace it.
    #[error("{}: exists", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },

    /// A task file with faults, read or about to be written.
    #[error("{}: invalid task file ({} fault{}): {}", path.display(), faults.len(),
        if faults.len() == 1 { "" } else { "s" }, describe(faults))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The faults, in file order.
        faults: Vec<Fault>,
    },

    /// A task the writer refused: it would not read back strictly valid and
    /// as written.
    #[error("{}: refusing to write invalid task: {}", path.display(), describe(faults))]
    InvalidTask {
        /// The file being written.
        path: PathBuf,
        /// The task, by the index it would have had in the file.
        task: usize,
        /// Its faults; none where it reads back otherwise than written.
        faults: Vec<Fault>,
    },

    /// A writer given more or fewer tasks than it was told to expect.
    #[error("{}: {announced} tasks were announced but {written} were written", path.display())]
    CountMismatch {
        /// The file being written.
        path: PathBuf,
        /// The task count given when the file was started.
        announced: usize,
        /// The tasks written, counting the one refused when there is one too many.
        written: usize,
    },

    /// A fault in a HellaSwag or Winogrande text file.
    #[error("{}: line {line} (byte {offset}): {fault}", path.display())]
    Text {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The fault's byte offset in the file.
        offset: usize,
        /// What is wrong there.
        fault: TextFault,
    },

    /// A task file that would pass 4 GiB, which its 32-bit offsets cannot address.
    #[error("{}: the file would pass 4 GiB, beyond the format's 32-bit offsets", path.display())]
    TooLarge {
        /// The file being written.
        path: PathBuf,
    },
}

/// The first few faults, then how many more: enough for a one-line message.
fn describe(faults: &[Fault]) -> String {
    const SHOWN: usize = 3;
    let mut text = faults.iter().take(SHOWN).map(|f| f.to_string()).collect::<Vec<_>>().join("; ");
    if faults.len() > SHOWN {
        text.push_str(&format!("; and {} more", faults.len() - SHOWN));
    }
    if text.is_empty() {
        text.push_str("the task does not re-read as written");
    }
    text
}
