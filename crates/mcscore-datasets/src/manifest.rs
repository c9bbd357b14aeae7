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
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub repo: String,
    pub config: String,
    pub split: String,
    pub revision: Option<String>,
    pub files: Vec<SourceFile>,
}

/// A k-shot file's examples: how many, from which split, drawn how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShotsRecord {
    /// The benchmark whose tasks the file holds.
    pub of: String,
    pub k: usize,
    /// The seed of a seeded draw; none where the examples are fixed (MMLU's dev split).
    pub seed: Option<u64>,
    /// The split the examples come from.
    pub from: Provenance,
}

/// A manifest entry: the file, its statistics and its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub name: String,
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
    pub tasks: usize,
    pub option_counts: BTreeMap<usize, usize>,
    pub mode: mcscore_format::Mode,
    pub chance: f64,
    pub majority_class: f64,
    pub min_parallel: usize,
    pub source: Provenance,
    pub licence: String,
    /// Set for a k-shot file (`build --shots K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shots: Option<ShotsRecord>,
    /// The tasks' groups (MMLU's subject), for `compare`'s clustered statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<GroupRuns>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
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
