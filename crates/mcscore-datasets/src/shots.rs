//! k-shot task files: solved examples from a benchmark's own dev or training
//! split, written into each task's question, so every tool that reads the
//! task-file format scores them. Tasks that share their examples share the
//! preamble's tokens, which the engine decodes once for all of them.

#[cfg(feature = "sources")]
mod preambles;

#[cfg(feature = "sources")]
pub(crate) use preambles::Preambles;
#[cfg(feature = "sources")]
pub use preambles::DEFAULT_SHOT_SEED;

/// Why a k-shot file cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShotError {
    /// A benchmark with no split registered to draw shots from.
    #[error("{name} has no split to draw shots from (k-shot files: {with})")]
    NoSplit {
        /// The benchmark.
        name: String,
        /// The benchmarks that have one, comma-separated.
        with: String,
    },
    /// Zero shots asked.
    #[error("{name}: 0 shots; a k-shot file needs at least 1 (without --shots the file is 0-shot)")]
    Zero {
        /// The benchmark.
        name: String,
    },
    /// A seed given for shots that are not drawn at random.
    #[error("{name}: its shots are the first K per {field} of {from}, in source order; a shot seed does not apply")]
    SeedNotApplicable {
        /// The benchmark.
        name: String,
        /// The source field that groups its tasks.
        field: &'static str,
        /// The split the shots come from.
        from: &'static str,
    },
    /// A group with fewer examples in the shot split than shots asked.
    #[error("{name}: task {task} is about {group:?}, of which {from} holds {available} examples; {k} asked")]
    TooFewInGroup {
        /// The benchmark.
        name: String,
        /// The group's first task, by its index in the file.
        task: usize,
        /// The group.
        group: String,
        /// The split the shots come from.
        from: &'static str,
        /// The group's examples in that split.
        available: usize,
        /// The shots asked.
        k: usize,
    },
    /// A shot split with fewer examples than shots asked.
    #[error("{from} holds {available} examples; {k} shots asked")]
    TooFew {
        /// The split the shots come from.
        from: &'static str,
        /// Its examples.
        available: usize,
        /// The shots asked.
        k: usize,
    },
    /// A source row whose group field is missing or not a string.
    #[error("{}: row {row}: field {field:?} missing or not a string", file.display())]
    NoGroup {
        /// The source file.
        file: std::path::PathBuf,
        /// The row, from 0, within that file.
        row: usize,
        /// The group field.
        field: &'static str,
    },
}

/// The name of `benchmark`'s k-shot file (its stem, and its manifest entry).
pub fn shot_name(benchmark: &str, k: usize) -> String {
    format!("{benchmark}-{k}shot")
}
