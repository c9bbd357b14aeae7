//! `manifest.json`: what each committed task file is and where it came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::DatasetError;

/// One source file a task file was built from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// As given to `build`: relative to the sources root for registered local
    /// copies, `hf://REPO@REV/PATH` for hub files.
    pub path: String,
    /// sha256 of the file (of a folder: its files' names and bytes in name
    /// order, as `source_sha256` hashes it), in hex.
    pub sha256: String,
}

/// Where a task file's tasks (or a k-shot file's examples) came from: the
/// benchmark split's hub coordinates and the files read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The hub dataset repository.
    pub repo: String,
    /// The dataset's configuration (its subset).
    pub config: String,
    /// The split.
    pub split: String,
    /// The dataset commit the registry pins, if it pins one.
    pub revision: Option<String>,
    /// The files read, in order.
    pub files: Vec<SourceFile>,
}

/// A k-shot file's examples: how many, from which split, drawn how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShotsRecord {
    /// The benchmark whose tasks the file holds.
    pub of: String,
    /// Solved examples before each question.
    pub k: usize,
    /// The seed of a seeded draw; none where the examples are fixed (MMLU's dev split).
    pub seed: Option<u64>,
    /// The split the examples come from.
    pub from: Provenance,
}

/// A manifest entry: the file, its statistics and its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The benchmark's name, or `NAME-Kshot` for a k-shot file.
    pub name: String,
    /// The task file (Winogrande: its CSV), relative to the manifest's folder.
    pub file: String,
    /// sha256 of the file, in hex.
    pub sha256: String,
    /// The file's size in bytes.
    pub bytes: u64,
    /// How many tasks it holds.
    pub tasks: usize,
    /// Option count → how many tasks have that many options.
    pub option_counts: BTreeMap<usize, usize>,
    /// How its options relate to its prompts.
    pub mode: mcscore_format::Mode,
    /// The file's baselines in percent: the manifest is read by people
    /// (docs/datasets.md tables it), and its unit is part of its format.
    pub chance: f64,
    /// The largest share of tasks whose gold option is at one position, in percent.
    pub majority_class: f64,
    /// The widest task's option count: the smallest `-np` llama-perplexity needs.
    pub min_parallel: usize,
    /// Where its tasks came from.
    pub source: Provenance,
    /// The source's licence, as its publishers name it.
    pub licence: String,
    /// Set for a k-shot file (`build --shots K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shots: Option<ShotsRecord>,
    /// The tasks' groups (MMLU's subject), for `compare`'s clustered statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<GroupRuns>,
    /// Set for an lm-eval export (`build --lm-eval`): its tasks, groups and
    /// lm-eval's results skeleton.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lm_eval: Option<Box<crate::lm_eval::LmEvalRecord>>,
}

/// Which group each task of a file is in, as runs of consecutive tasks in
/// file order: MMLU's 57 subjects are 57 runs, not one name per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRuns {
    /// The source field the groups come from.
    pub field: String,
    /// (group, how many consecutive tasks).
    pub runs: Vec<(String, usize)>,
    /// Each group's category (MMLU's subject → stem, humanities, …), where
    /// the benchmark has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<BTreeMap<String, String>>,
}

impl GroupRuns {
    /// The runs of `groups`, one name per task in file order.
    pub fn of(field: &str, groups: &[String]) -> GroupRuns {
        let mut runs = GroupRuns { field: field.to_owned(), runs: Vec::new(), categories: None };
        for group in groups {
            runs.push(group.clone());
        }
        runs
    }

    /// The next task is in `group`.
    pub fn push(&mut self, group: String) {
        match self.runs.last_mut() {
            Some((name, count)) if *name == group => *count += 1,
            _ => self.runs.push((group, 1)),
        }
    }
}

/// `manifest.json`: one entry per task file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The entries; [`Manifest::upsert`] keeps them sorted by name.
    pub datasets: Vec<Entry>,
}

impl Manifest {
    /// Reads `path`; a missing file is an empty manifest.
    pub fn load(path: &Path) -> Result<Manifest, DatasetError> {
        if !path.exists() {
            return Ok(Manifest::default());
        }
        let error = |e: std::io::Error| DatasetError::Manifest { path: path.to_owned(), source: e.into() };
        mcscore_format::check_input_io(path).map_err(error)?;
        let text = std::fs::read_to_string(path).map_err(error)?;
        serde_json::from_str(&text).map_err(|e| DatasetError::Manifest { path: path.to_owned(), source: e.into() })
    }

    /// Adds or replaces the entry of the same name, keeping names sorted.
    pub fn upsert(&mut self, entry: Entry) {
        self.datasets.retain(|e| e.name != entry.name);
        self.datasets.push(entry);
        self.datasets.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// The entry called `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.datasets.iter().find(|e| e.name == name)
    }

    /// Writes atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), DatasetError> {
        let mut text =
            serde_json::to_string_pretty(self).map_err(|e| DatasetError::Manifest { path: path.to_owned(), source: e.into() })?;
        text.push('\n');
        Ok(mcscore_format::write_atomic(path, text.as_bytes())?)
    }

    /// Where an entry's task file lies, relative to the manifest.
    pub fn file_path(manifest: &Path, entry: &Entry) -> PathBuf {
        manifest.parent().unwrap_or(Path::new(".")).join(&entry.file)
    }
}
