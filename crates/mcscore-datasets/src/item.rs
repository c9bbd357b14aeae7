//! What a benchmark's source says of one task, before any scaffold renders
//! it: the type every converter produces and every renderer reads.

/// A benchmark item before it is rendered: what the source says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Passage shown before the question (BoolQ).
    pub passage: Option<String>,
    pub stem: String,
    pub options: Vec<String>,
    pub gold: usize,
}
