//! Building task files from real benchmark sources, and proving a task file
//! is exactly its source: every task re-derived and compared, not a sample
//! (a label-scrambling bug passes every structural check and just scores at
//! chance).
//!
//! Flow, one row and one task at a time: source files → [`for_each_record`]
//! (Parquet, Arrow, JSON Lines, JSON, CSV/TSV → JSON rows) → the benchmark's
//! converter → [`Item`] → its [`Scaffold`] → `mcscore_format::TaskWriter`
//! (atomic, its count known at the end; Winogrande: its CSV) →
//! [`manifest::Entry`]. `verify` runs the same stream against the file.
//!
//! The `sources` feature (on by default) brings building and verifying
//! (`build`, `build_with_shots`, `verify_entry`, `Sources`), the hub download
//! (`hub`) and the Parquet and Arrow readers, with arrow, parquet and hf-hub;
//! without it a crate that only scores (the registry, manifests, prompt
//! formats, items) compiles none of them, and [`for_each_record`] refuses
//! Parquet and Arrow files with an error that names the feature.

#![warn(missing_docs)]

pub mod benchmarks;
pub mod formats;
#[cfg(feature = "sources")]
mod from_sources;
#[cfg(feature = "sources")]
pub mod hub;
mod item;
pub mod json;
pub mod lm_eval;
pub mod manifest;
mod render;
pub mod shots;
mod source;
pub mod vqa;

use std::path::{Path, PathBuf};

pub use benchmarks::{find, Benchmark, BENCHMARKS};
#[cfg(feature = "sources")]
pub use from_sources::{build, build_with_shots, source_sha256, verify_entry, verify_tasks, Sources, VerifyFault, MAX_LISTED};
pub use item::{ConvertError, Item};
pub use manifest::{Entry, GroupRuns, Manifest, Provenance, ShotsRecord, SourceFile};
pub use render::{parse_scaffolded_task, Scaffold};
pub use shots::{shot_name, ShotError};
pub use source::{for_each_record, read_records, SourceFormat};

/// A cause of another crate's type (a reader's, a parser's), kept as the source.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Why a task file could not be built or verified.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// A source file or folder that could not be read or hashed.
    #[error("{}", path.display())]
    Source {
        /// The source file or folder.
        path: PathBuf,
        /// Why: the reader's error.
        #[source]
        source: Cause,
    },

    /// A source row that gives no task of its benchmark.
    #[error("{name}: row {row} of {}", file.display())]
    Row {
        /// The benchmark being read.
        name: String,
        /// The source file.
        file: PathBuf,
        /// The row, from 0, within that file.
        row: usize,
        /// Why it gives no task.
        #[source]
        source: Box<ConvertError>,
    },

    /// An lm-eval export that failed or was refused.
    #[cfg(feature = "sources")]
    #[error(transparent)]
    LmEval(#[from] lm_eval::LmEvalError),

    /// A manifest that could not be read, parsed or written, or an entry
    /// that names no registered benchmark.
    #[error("{}", path.display())]
    Manifest {
        /// The manifest, or the entry's file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Cause,
    },

    /// A hub build of a benchmark whose registry entry pins no revision.
    #[error("{name}: no verified revision of {repo} is pinned, so it is not built from the hub; build it from a local copy of its files")]
    Unpinned {
        /// The benchmark.
        name: String,
        /// Its hub repository.
        repo: String,
    },

    /// A hub download that failed.
    #[error("{name}: {url}: hub download failed{}", if *unconfirmed { " (this path was not confirmed against the repository at that commit, which may name the file otherwise: build from a local copy with --source)" } else { "" })]
    Hub {
        /// The benchmark.
        name: String,
        /// What was being downloaded: `hf://REPO@REVISION`, then `/PATH` for a file.
        url: String,
        /// The path was not confirmed against the repository.
        unconfirmed: bool,
        /// hf-hub's error (boxed as a [`Cause`], so that the type is the
        /// same with or without the `sources` feature).
        #[source]
        source: Cause,
    },

    /// A task file, CSV or manifest that could not be read or written.
    #[error(transparent)]
    Format(#[from] mcscore_format::Error),

    /// A k-shot file that cannot be built.
    #[error(transparent)]
    Shots(#[from] ShotError),

    /// A root of local copies, for a benchmark that has no registered copy.
    #[error("{name}: no local copy is registered under {}", root.display())]
    NoLocalCopy {
        /// The benchmark.
        name: &'static str,
        /// The root of local copies.
        root: PathBuf,
    },

    /// A benchmark's registered copy missing under the root of local copies.
    #[error("{name}: {} does not exist", path.display())]
    LocalCopyMissing {
        /// The benchmark.
        name: &'static str,
        /// Where its copy was looked for.
        path: PathBuf,
    },
}

/// A source file to read: how the manifest names it, and where it is.
#[derive(Debug, Clone)]
pub struct Source {
    /// How the manifest names it: a path relative to the sources root, or
    /// an `hf://` address.
    pub name: String,
    /// Where it is on disk: a file, or a `save_to_disk` folder.
    pub path: PathBuf,
}

impl Source {
    /// A local file or folder, named by its path.
    pub fn local(path: &Path, name: impl Into<String>) -> Source {
        Source { name: name.into(), path: path.to_owned() }
    }
}

/// The items of `benchmark`, in source order, from its source files.
pub fn load_items(benchmark: &Benchmark, sources: &[Source]) -> Result<Vec<Item>, DatasetError> {
    let mut items = Vec::new();
    for_each_item(benchmark, sources, &mut |item, _| {
        items.push(item);
        Ok(())
    })?;
    Ok(items)
}

/// Where an item came from: its source row, for the fields besides the
/// item's (a task's group) and for errors.
// Read only where tasks are built (the `sources` feature); `load_items` drops it.
#[cfg_attr(not(feature = "sources"), allow(dead_code))]
pub(crate) struct Row<'a> {
    record: &'a serde_json::Value,
    file: &'a Path,
    row: usize,
}

impl Row<'_> {
    /// The row's `field`, which must be a string.
    #[cfg_attr(not(feature = "sources"), allow(dead_code))]
    pub(crate) fn group(&self, field: &'static str) -> Result<String, ShotError> {
        match self.record.get(field).and_then(serde_json::Value::as_str) {
            Some(group) => Ok(group.to_owned()),
            None => Err(ShotError::NoGroup { file: self.file.to_owned(), row: self.row, field }),
        }
    }
}

/// Hands each item of `benchmark` to `each`, in source order, with its row,
/// reading the sources as a stream.
pub(crate) fn for_each_item(
    benchmark: &Benchmark,
    sources: &[Source],
    each: &mut dyn FnMut(Item, Row<'_>) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    for source in sources {
        let mut row = 0;
        for_each_record(&source.path, &mut |record| {
            let item = (benchmark.convert)(&record).and_then(|item| benchmark.scaffold.check(item)).map_err(|source_error| {
                DatasetError::Row { name: benchmark.name.to_owned(), file: source.path.clone(), row, source: Box::new(source_error) }
            })?;
            each(item, Row { record: &record, file: &source.path, row })?;
            row += 1;
            Ok(())
        })?;
    }
    Ok(())
}

/// The registered benchmark an entry was built from (a k-shot file's is the
/// benchmark it holds the tasks of).
pub fn entry_benchmark(entry: &Entry) -> Result<&'static Benchmark, DatasetError> {
    let name = entry.shots.as_ref().map_or(&entry.name, |s| &s.of);
    find(name).ok_or_else(|| DatasetError::Manifest {
        path: PathBuf::from(&entry.file),
        source: format!("no benchmark named {name:?} is registered").into(),
    })
}
