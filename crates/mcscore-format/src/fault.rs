//! Every structural fault a task file can have, one variant each.
//!
//! Each variant carries the task index (where one exists) and the byte offset a
//! user should look at with a hex dump, so a message alone is enough to find it.

use std::fmt;

/// Which string or count inside a task a fault is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Question,
    OptionCount,
    Option(usize),
    Label(usize),
    Mc2OptionCount,
    Mc2Option(usize),
    Mc2Label(usize),
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Question => write!(f, "question"),
            Field::OptionCount => write!(f, "option count"),
            Field::Option(k) => write!(f, "option {k}"),
            Field::Label(k) => write!(f, "label {k}"),
            Field::Mc2OptionCount => write!(f, "mc2 option count"),
            Field::Mc2Option(k) => write!(f, "mc2 option {k}"),
            Field::Mc2Label(k) => write!(f, "mc2 label {k}"),
        }
    }
}

/// One violation of the task-file layout (docs/formats.md).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    #[error("file is {len} bytes, shorter than the 4-byte task count at byte 0")]
    ShortHeader { len: u64 },

    #[error("the task count at byte 0 is zero: the file holds no tasks")]
    NoTasks,

    #[error("offset table cut short: {n_tasks} tasks need an offset table ending at byte {needed}, but the file is {len} bytes")]
    OffsetTableTruncated { n_tasks: u32, needed: u64, len: u64 },

    #[error("task 0: first offset (byte 4) is {found}, but it must be 4 + 4*n_task = {expected}")]
    FirstOffset { expected: u64, found: u64 },

    #[error("task {task}: offset {offset} (stored at byte {at}) is past the end of the {len}-byte file")]
    OffsetOutOfBounds { task: usize, at: u64, offset: u64, len: u64 },

    #[error("task {task}: offset {offset} (stored at byte {at}) goes backwards from task {}'s offset {previous}", task.saturating_sub(1))]
    OffsetBackwards { task: usize, at: u64, offset: u64, previous: u64 },

    #[error("task {task}: offset {offset} leaves a gap of {} bytes after task {} ends at byte {previous_end}", offset.saturating_sub(*previous_end), task.saturating_sub(1))]
    Gap { task: usize, offset: u64, previous_end: u64 },

    #[error("task {task}: offset {offset} overlaps task {}, which ends at byte {previous_end}", task.saturating_sub(1))]
    Overlap { task: usize, offset: u64, previous_end: u64 },

    #[error("task {task}: the 4-byte {field} at byte {at} runs past the end of the file ({len} bytes)")]
    CountPastEnd { task: usize, field: Field, at: u64, len: u64 },

    #[error("task {task}: the {field} at byte {at} claims {claimed} bytes, running past the end of the file ({len} bytes)")]
    StringPastEnd { task: usize, field: Field, at: u64, claimed: u64, len: u64 },

    #[error("task {task}: the {field} is not valid UTF-8 (bad byte at byte {at})")]
    InvalidUtf8 { task: usize, field: Field, at: u64 },

    #[error("task {task}: the question at byte {at} is empty")]
    EmptyQuestion { task: usize, at: u64 },

    #[error("task {task}: no options (option count 0 at byte {at})")]
    NoOptions { task: usize, at: u64 },

    #[error("task {task}: one option (count at byte {at}); a task needs at least 2 options to be scored")]
    OneOption { task: usize, at: u64 },

    /// A task whose text mcscore would refuse to tokenise: a file it writes
    /// or calls valid is one it scores.
    #[error("task {task}: the question at byte {at} and its longest option are {bytes} bytes together; mcscore tokenises at most {max} bytes (4 MiB) per text, more than any context holds", max = crate::MAX_TEXT_BYTES)]
    TextTooLong { task: usize, at: u64, bytes: u64 },

    #[error("task {task}: {count} options (count at byte {at}); at most {max} are allowed", max = crate::MAX_OPTIONS)]
    TooManyOptions { task: usize, at: u64, count: u32 },

    #[error("task {task}: option {option} at byte {at} is empty")]
    EmptyOption { task: usize, option: usize, at: u64 },

    #[error("task {task}: {field} at byte {at} is {value}; labels must be 0 or 1")]
    BadLabel { task: usize, field: Field, at: u64, value: i32 },

    #[error("task {task}: no label is 1 (labels start at byte {at}); exactly one option must be gold")]
    NoGoldLabel { task: usize, at: u64 },

    #[error("task {task}: {count} labels are 1 (labels start at byte {at}); exactly one option must be gold")]
    SeveralGoldLabels { task: usize, at: u64, count: usize },

    #[error("task {task}: {count} mc2 options (count at byte {at}); at most {max} are allowed", max = crate::MAX_OPTIONS)]
    Mc2TooManyOptions { task: usize, at: u64, count: u32 },

    #[error("task {task}: mc2 option {option} at byte {at} is empty")]
    Mc2EmptyOption { task: usize, option: usize, at: u64 },

    #[error("task {task}: mc2 label {label} at byte {at} is {value}; labels must be 0 or 1")]
    Mc2BadLabel { task: usize, label: usize, at: u64, value: i32 },

    #[error("{count} bytes after the last task, from byte {at} to the end of the file")]
    TrailingBytes { at: u64, count: u64 },
}

impl Fault {
    /// The task the fault is in, if it belongs to one.
    pub fn task(&self) -> Option<usize> {
        use Fault::*;
        match self {
            ShortHeader { .. } | NoTasks | OffsetTableTruncated { .. } | TrailingBytes { .. } => None,
            FirstOffset { .. } => Some(0),
            OffsetOutOfBounds { task, .. }
            | OffsetBackwards { task, .. }
            | Gap { task, .. }
            | Overlap { task, .. }
            | CountPastEnd { task, .. }
            | StringPastEnd { task, .. }
            | InvalidUtf8 { task, .. }
            | EmptyQuestion { task, .. }
            | NoOptions { task, .. }
            | OneOption { task, .. }
            | TextTooLong { task, .. }
            | TooManyOptions { task, .. }
            | EmptyOption { task, .. }
            | BadLabel { task, .. }
            | NoGoldLabel { task, .. }
            | SeveralGoldLabels { task, .. }
            | Mc2TooManyOptions { task, .. }
            | Mc2EmptyOption { task, .. }
            | Mc2BadLabel { task, .. } => Some(*task),
        }
    }

    /// A stable machine-readable name for the fault, used in JSON output.
    pub fn kind(&self) -> &'static str {
        use Fault::*;
        match self {
            ShortHeader { .. } => "short_header",
            NoTasks => "no_tasks",
            OffsetTableTruncated { .. } => "offset_table_truncated",
            FirstOffset { .. } => "first_offset",
            OffsetOutOfBounds { .. } => "offset_out_of_bounds",
            OffsetBackwards { .. } => "offset_backwards",
            Gap { .. } => "gap",
            Overlap { .. } => "overlap",
            CountPastEnd { .. } => "count_past_end",
            StringPastEnd { .. } => "string_past_end",
            InvalidUtf8 { .. } => "invalid_utf8",
            EmptyQuestion { .. } => "empty_question",
            NoOptions { .. } => "no_options",
            OneOption { .. } => "one_option",
            TextTooLong { .. } => "text_too_long",
            TooManyOptions { .. } => "too_many_options",
            EmptyOption { .. } => "empty_option",
            BadLabel { .. } => "bad_label",
            NoGoldLabel { .. } => "no_gold_label",
            SeveralGoldLabels { .. } => "several_gold_labels",
            Mc2TooManyOptions { .. } => "mc2_too_many_options",
            Mc2EmptyOption { .. } => "mc2_empty_option",
            Mc2BadLabel { .. } => "mc2_bad_label",
            TrailingBytes { .. } => "trailing_bytes",
        }
    }
}
