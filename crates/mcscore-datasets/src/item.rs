//! What a benchmark's source says of one task, before any scaffold renders
//! it: the type every converter produces and every renderer reads, and why a
//! row (or its rendering) gives none.

/// A benchmark item before it is rendered: what the source says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Passage shown before the question (BoolQ).
    pub passage: Option<String>,
    /// The question (Winogrande: the sentence, with its `_`).
    pub stem: String,
    /// The options, in source order.
    pub options: Vec<String>,
    /// The correct option's position in `options`.
    pub gold: usize,
}

/// Why a source row is not an item of its benchmark.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A field that is missing or does not hold what it should.
    #[error("{field} missing or not {expected}")]
    Field {
        /// The field, as the message names it.
        field: String,
        /// What it should hold ("a string").
        expected: &'static str,
    },

    /// A list element or option that is not a string.
    #[error("{field} holds a non-string")]
    NonString {
        /// The field that holds it.
        field: String,
    },

    /// An answer key that is none of the options' labels.
    #[error("answer key {key:?} is not among the labels {}", labels.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", "))]
    UnknownKey {
        /// The answer key.
        key: String,
        /// The options' labels.
        labels: Vec<String>,
    },

    /// An answer that is not the letter of one of the options.
    #[error("answer {answer:?} is not a letter among {options} options")]
    NotALetter {
        /// The answer.
        answer: String,
        /// How many options there are.
        options: usize,
    },

    /// More or fewer labels than options.
    #[error("{labels} labels for {options} options")]
    LabelCount {
        /// How many labels there are.
        labels: usize,
        /// How many options there are.
        options: usize,
    },

    /// An answer index that names no option.
    #[error("{field} {value} is out of range for {options} options")]
    OutOfRange {
        /// The field that holds it.
        field: &'static str,
        /// Its value.
        value: String,
        /// How many options there are.
        options: usize,
    },

    /// An option that does not start with its label, where the source labels each (AQuA-RAT's `A)`).
    #[error("option {option} {text:?} does not start with {label:?}")]
    Unlabelled {
        /// The option, by its position.
        option: usize,
        /// Its text.
        text: String,
        /// The label it should start with.
        label: String,
    },

    /// An options object whose keys are not A, B, C, … in order.
    #[error("{field} key {key:?} where {expected:?} was expected")]
    UnexpectedKey {
        /// The object.
        field: String,
        /// The key found.
        key: String,
        /// The key expected there.
        expected: String,
    },

    /// A Winogrande sentence without exactly one `_`.
    #[error("sentence has {found} `_`; a Winogrande sentence has one blank")]
    Blanks {
        /// How many `_` it has.
        found: usize,
    },

    /// A Winogrande field that its CSV cannot hold.
    #[error("{field} {value:?} cannot be written to a Winogrande CSV (a quote, a line break, or a comma in an option)")]
    NotCsv {
        /// The field.
        field: &'static str,
        /// Its text.
        value: String,
    },

    /// More options than the letter scaffold has letters for.
    #[error("{options} options; the letter scaffold names at most {most} (A to Z)")]
    TooManyOptions {
        /// How many options there are.
        options: usize,
        /// The most it names (26).
        most: usize,
    },

    /// A TruthfulQA mc1 row without exactly one label 1 (or with more or fewer labels than options).
    #[error("mc1_targets must have exactly one label 1, found {found}")]
    GoldCount {
        /// How many labels are 1.
        found: usize,
    },

    /// Two options under one label: the answer key could name either.
    #[error("the label {label:?} names options {first} and {second}; each option needs a label of its own")]
    DuplicateLabel {
        /// The label.
        label: String,
        /// The first option under it, by position.
        first: usize,
        /// The second.
        second: usize,
    },

    /// A task `score` would refuse to tokenise (see `mcscore_format::MAX_TEXT_BYTES`).
    #[error("the rendered question and its longest option are {bytes} bytes together; mcscore scores at most {max} bytes (4 MiB) per text", max = mcscore_format::MAX_TEXT_BYTES)]
    TextTooLong {
        /// The rendered question, a space and the longest option, in bytes.
        bytes: usize,
    },
}
