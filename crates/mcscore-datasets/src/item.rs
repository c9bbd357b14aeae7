//! What a benchmark's source says of one task, before any scaffold renders
//! it: the type every converter produces and every renderer reads, and why a
//! row (or its rendering) gives none.

/// A benchmark item before it is rendered: what the source says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Passage shown before the question (BoolQ).
    pub passage: Option<String>,
    pub stem: String,
    pub options: Vec<String>,
    pub gold: usize,
}

/// Why a source row is not an item of its benchmark.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("{field} missing or not {expected}")]
    Field { field: String, expected: &'static str },

    #[error("{field} holds a non-string")]
    NonString { field: String },

    #[error("answer key {key:?} is not among the labels {}", labels.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", "))]
    UnknownKey { key: String, labels: Vec<String> },

    #[error("answer {answer:?} is not a letter among {options} options")]
    NotALetter { answer: String, options: usize },

    #[error("{labels} labels for {options} options")]
    LabelCount { labels: usize, options: usize },

    #[error("{field} {value} is out of range for {options} options")]
    OutOfRange { field: &'static str, value: String, options: usize },

    #[error("option {option} {text:?} does not start with {label:?}")]
    Unlabelled { option: usize, text: String, label: String },

    #[error("{field} key {key:?} where {expected:?} was expected")]
    UnexpectedKey { field: String, key: String, expected: String },

    #[error("sentence has {found} `_`; a Winogrande sentence has one blank")]
    Blanks { found: usize },

    #[error("{field} {value:?} cannot be written to a Winogrande CSV (a quote, a line break, or a comma in an option)")]
    NotCsv { field: &'static str, value: String },

    #[error("{options} options; the letter scaffold names at most {most} (A to Z)")]
    TooManyOptions { options: usize, most: usize },

    #[error("mc1_targets must have exactly one label 1, found {found}")]
    GoldCount { found: usize },

    /// Two options under one label: the answer key could name either.
    #[error("the label {label:?} names options {first} and {second}; each option needs a label of its own")]
    DuplicateLabel { label: String, first: usize, second: usize },

    /// A task `score` would refuse to tokenise (see `mcscore_format::MAX_TEXT_BYTES`).
    #[error("the rendered question and its longest option are {bytes} bytes together; mcscore scores at most {max} bytes (4 MiB) per text", max = mcscore_format::MAX_TEXT_BYTES)]
    TextTooLong { bytes: usize },
}
