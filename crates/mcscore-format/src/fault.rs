//! Every structural fault a task file can have, one variant each.
//!
//! Each variant carries the task index (where one exists) and the byte offset a
//! user should look at with a hex dump, so a message alone is enough to find it.

use std::fmt;

/// Which string or count inside a task a fault is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The question's string.
    Question,
    /// The count of mc1 options (those llama.cpp scores).
    OptionCount,
    /// The string of mc1 option k.
    Option(usize),
    /// The label of mc1 option k.
    Label(usize),
    /// The count of mc2 options.
    Mc2OptionCount,
    /// The string of mc2 option k.
    Mc2Option(usize),
    /// The label of mc2 option k.
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
    /// A file too short to hold the task count.
    #[error("file is {len} bytes, shorter than the 4-byte task count at byte 0")]
    ShortHeader {
        /// The file's length in bytes.
        len: u64,
    },

    /// A task count of zero.
    #[error("the task count at byte 0 is zero: the file holds no tasks")]
    NoTasks,

    /// An offset table that runs past the end of the file.
    #[error("offset table cut short: {n_tasks} tasks need an offset table ending at byte {needed}, but the file is {len} bytes")]
    OffsetTableTruncated {
        /// The task count at byte 0.
        n_tasks: u32,
        /// Where the table would end: 4 + 4 × `n_tasks`.
        needed: u64,
        /// The file's length in bytes.
        len: u64,
    },

    /// Task 0's offset is not the end of the offset table.
    #[error("task 0: first offset (byte 4) is {found}, but it must be 4 + 4*n_task = {expected}")]
    FirstOffset {
        /// The end of the offset table, where task 0 starts.
        expected: u64,
        /// The offset stored.
        found: u64,
    },

    /// An offset at or past the end of the file.
    #[error("task {task}: offset {offset} (stored at byte {at}) is past the end of the {len}-byte file")]
    OffsetOutOfBounds {
        /// The task, by its index in the file.
        task: usize,
        /// Where the offset is stored.
        at: u64,
        /// The offset stored.
        offset: u64,
        /// The file's length in bytes.
        len: u64,
    },

    /// An offset below the previous task's.
    #[error("task {task}: offset {offset} (stored at byte {at}) goes backwards from task {}'s offset {previous}", task.saturating_sub(1))]
    OffsetBackwards {
        /// The task, by its index in the file.
        task: usize,
        /// Where the offset is stored.
        at: u64,
        /// The offset stored.
        offset: u64,
        /// The previous task's offset.
        previous: u64,
    },

    /// A task that starts after the previous one ends: the bytes between belong to no task.
    #[error("task {task}: offset {offset} leaves a gap of {} bytes after task {} ends at byte {previous_end}", offset.saturating_sub(*previous_end), task.saturating_sub(1))]
    Gap {
        /// The task, by its index in the file.
        task: usize,
        /// Where it starts.
        offset: u64,
        /// Where the previous task ends.
        previous_end: u64,
    },

    /// A task that starts before the previous one ends.
    #[error("task {task}: offset {offset} overlaps task {}, which ends at byte {previous_end}", task.saturating_sub(1))]
    Overlap {
        /// The task, by its index in the file.
        task: usize,
        /// Where it starts.
        offset: u64,
        /// Where the previous task ends.
        previous_end: u64,
    },

    /// A 4-byte field (a count, a string's length, a label) that runs past the end of the file.
    #[error("task {task}: the 4-byte {field} at byte {at} runs past the end of the file ({len} bytes)")]
    CountPastEnd {
        /// The task, by its index in the file.
        task: usize,
        /// Which field.
        field: Field,
        /// Where it starts.
        at: u64,
        /// The file's length in bytes.
        len: u64,
    },

    /// A string whose length runs it past the end of the file.
    #[error("task {task}: the {field} at byte {at} claims {claimed} bytes, running past the end of the file ({len} bytes)")]
    StringPastEnd {
        /// The task, by its index in the file.
        task: usize,
        /// Which string.
        field: Field,
        /// Where its length is stored.
        at: u64,
        /// The length it claims, in bytes.
        claimed: u64,
        /// The file's length in bytes.
        len: u64,
    },

    /// A string that is not UTF-8.
    #[error("task {task}: the {field} is not valid UTF-8 (bad byte at byte {at})")]
    InvalidUtf8 {
        /// The task, by its index in the file.
        task: usize,
        /// Which string.
        field: Field,
        /// The first byte that is not UTF-8.
        at: u64,
    },

    /// A question of no bytes.
    #[error("task {task}: the question at byte {at} is empty")]
    EmptyQuestion {
        /// The task, by its index in the file.
        task: usize,
        /// Where its length is stored.
        at: u64,
    },

    /// A task of no options.
    #[error("task {task}: no options (option count 0 at byte {at})")]
    NoOptions {
        /// The task, by its index in the file.
        task: usize,
        /// Where the option count is stored.
        at: u64,
    },

    /// A task of one option: nothing to score it against.
    #[error("task {task}: one option (count at byte {at}); a task needs at least 2 options to be scored")]
    OneOption {
        /// The task, by its index in the file.
        task: usize,
        /// Where the option count is stored.
        at: u64,
    },

    /// A task whose text mcscore would refuse to tokenise: a file it writes
    /// or calls valid is one it scores.
    #[error("task {task}: the question at byte {at} and its longest option are {bytes} bytes together; mcscore tokenises at most {max} bytes (4 MiB) per text, more than any context holds", max = crate::MAX_TEXT_BYTES)]
    TextTooLong {
        /// The task, by its index in the file.
        task: usize,
        /// Where the question's length is stored.
        at: u64,
        /// The question, a space and the longest option, in bytes.
        bytes: u64,
    },

    /// More options than llama.cpp takes ([`crate::MAX_OPTIONS`]).
    #[error("task {task}: {count} options (count at byte {at}); at most {max} are allowed", max = crate::MAX_OPTIONS)]
    TooManyOptions {
        /// The task, by its index in the file.
        task: usize,
        /// Where the option count is stored.
        at: u64,
        /// The option count.
        count: u32,
    },

    /// An option of no bytes.
    #[error("task {task}: option {option} at byte {at} is empty")]
    EmptyOption {
        /// The task, by its index in the file.
        task: usize,
        /// The option, by its position.
        option: usize,
        /// Where its length is stored.
        at: u64,
    },

    /// An mc1 label other than 0 or 1.
    #[error("task {task}: {field} at byte {at} is {value}; labels must be 0 or 1")]
    BadLabel {
        /// The task, by its index in the file.
        task: usize,
        /// Which label.
        field: Field,
        /// Where it is stored.
        at: u64,
        /// The label stored.
        value: i32,
    },

    /// No mc1 label is 1: the task has no correct option.
    #[error("task {task}: no label is 1 (labels start at byte {at}); exactly one option must be gold")]
    NoGoldLabel {
        /// The task, by its index in the file.
        task: usize,
        /// Where the labels start.
        at: u64,
    },

    /// More than one mc1 label is 1.
    #[error("task {task}: {count} labels are 1 (labels start at byte {at}); exactly one option must be gold")]
    SeveralGoldLabels {
        /// The task, by its index in the file.
        task: usize,
        /// Where the labels start.
        at: u64,
        /// How many labels are 1.
        count: usize,
    },

    /// More mc2 options than [`crate::MAX_OPTIONS`].
    #[error("task {task}: {count} mc2 options (count at byte {at}); at most {max} are allowed", max = crate::MAX_OPTIONS)]
    Mc2TooManyOptions {
        /// The task, by its index in the file.
        task: usize,
        /// Where the mc2 option count is stored.
        at: u64,
        /// The mc2 option count.
        count: u32,
    },

    /// An mc2 option of no bytes.
    #[error("task {task}: mc2 option {option} at byte {at} is empty")]
    Mc2EmptyOption {
        /// The task, by its index in the file.
        task: usize,
        /// The mc2 option, by its position.
        option: usize,
        /// Where its length is stored.
        at: u64,
    },

    /// An mc2 label other than 0 or 1.
    #[error("task {task}: mc2 label {label} at byte {at} is {value}; labels must be 0 or 1")]
    Mc2BadLabel {
        /// The task, by its index in the file.
        task: usize,
        /// The label, by its position.
        label: usize,
        /// Where it is stored.
        at: u64,
        /// The label stored.
        value: i32,
    },

    /// Bytes after the end of the last task.
    #[error("{count} bytes after the last task, from byte {at} to the end of the file")]
    TrailingBytes {
        /// Where the last task ends.
        at: u64,
        /// How many bytes follow it.
        count: u64,
    },
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
