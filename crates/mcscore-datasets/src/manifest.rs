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
    pub lm_eval: Option<Box<LmEvalRecord>>,
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

    /// The manifest of the task files this repository carries (`datasets/`),
    /// compiled in: a bundled file copied anywhere keeps its groups and shots
    /// (matched by sha256, as in any manifest), and its name finds it.
    pub fn bundled() -> &'static Manifest {
        static BUNDLED: std::sync::OnceLock<Manifest> = std::sync::OnceLock::new();
        // The text is the repository's manifest.json, which a unit test parses;
        // `mcscore build` run in the checkout adds its entries to that file,
        // and they are bundled from the next build of mcscore on.
        BUNDLED.get_or_init(|| serde_json::from_str(include_str!("../../../manifest.json")).unwrap_or_default())
    }

    /// Where the bundled manifest is said to be in messages.
    pub const BUNDLED_LABEL: &'static str = "mcscore's bundled manifest.json";
}

// What `build --lm-eval` records of an lm-evaluation-harness export: the
// manifest's, read by `score --format lm-eval` and `verify`.

/// How a group aggregates one metric over its tasks (lm-eval's
/// `aggregate_metric_list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregate {
    /// The metric (`acc`, `acc_norm`).
    pub metric: String,
    /// A mean weighted by each task's documents (true), or of the tasks' means.
    pub weight_by_size: bool,
}

/// One lm-eval task in a task file: a run of consecutive tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LmEvalTask {
    /// Its lm-eval name (`mmlu_anatomy`).
    pub name: String,
    /// The name lm-eval prints (`anatomy`).
    pub alias: String,
    /// How many documents, in file order after the tasks before it.
    pub docs: usize,
    /// The metrics its YAML asks for that mcscore computes, in its order.
    pub metrics: Vec<String>,
    /// Those it asks for that mcscore does not compute (`mcc`, `f1`,
    /// `brier_score`, `exact_match`, any not averaged over documents): not
    /// in its results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// The YAML file that defines it, and its sha256.
    pub yaml: Option<String>,
    /// The YAML's sha256, in hex.
    pub yaml_sha256: Option<String>,
    /// Its dataset (`dataset_path`, `dataset_name`) and the split scored.
    pub dataset: String,
    /// The dataset revision its YAML pins, if it pins one.
    pub revision: Option<String>,
}

/// One lm-eval group in a task file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LmEvalGroup {
    /// Its lm-eval name (`mmlu_stem`).
    pub name: String,
    /// The name lm-eval prints (`stem`).
    pub alias: String,
    /// Its tasks and subgroups, by name.
    pub children: Vec<String>,
    /// The tasks beneath it, in lm-eval's order: what it aggregates.
    pub leaves: Vec<String>,
    /// The metrics it reports, and how.
    pub aggregate: Vec<Aggregate>,
    /// The YAML file that defines it.
    pub yaml: Option<String>,
    /// The YAML's sha256, in hex.
    pub yaml_sha256: Option<String>,
}

/// What `build --lm-eval` asked of lm-eval: enough to export again
/// (`verify`) and to say how the file was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportSettings {
    /// The task, group or tag named.
    pub name: String,
    /// `--include-path`, as given.
    pub include_path: Option<String>,
    /// `--limit`: documents per task (a fraction below 1: of each task's).
    pub limit: Option<f64>,
    /// `--num-fewshot`; none: each task's own.
    pub num_fewshot: Option<u32>,
    /// `--fewshot-seed` (lm-eval's default 1234).
    pub fewshot_seed: u64,
}

/// An lm-eval export, as its manifest entry records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LmEvalRecord {
    /// The lm-eval version that rendered it.
    pub lm_eval_version: String,
    /// The Python version it ran under, whose `sum` lm-eval's statistics use
    /// (compensated from 3.12).
    #[serde(default)]
    pub python: Option<String>,
    /// What was asked of it.
    pub settings: ExportSettings,
    /// Its tasks, in file order.
    pub tasks: Vec<LmEvalTask>,
    /// Its groups, outermost first.
    pub groups: Vec<LmEvalGroup>,
    /// File task → the whitespace lm-eval's context ended in, which it moved
    /// into each continuation (the request it logs keeps it in the context).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moved: BTreeMap<usize, String>,
    /// lm-eval's `configs`, `versions`, `n-shot`, `higher_is_better` and
    /// `n-samples` for these tasks and groups, as its results JSON gives them.
    pub results: BTreeMap<String, serde_json::Value>,
}

impl LmEvalRecord {
    /// Each task with the range of file tasks it holds.
    pub fn ranges(&self) -> Vec<(&LmEvalTask, std::ops::Range<usize>)> {
        let mut start = 0;
        self.tasks
            .iter()
            .map(|t| {
                start += t.docs;
                (t, start - t.docs..start)
            })
            .collect()
    }
}

impl LmEvalRecord {
    /// Whether a task asks for `acc_mutual_info`, which needs the
    /// unconditional pass.
    pub fn needs_unconditional(&self) -> bool {
        self.tasks.iter().any(|t| t.metrics.iter().any(|m| m == "acc_mutual_info"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bundled` falls back to an empty manifest only if the compiled-in text
    /// does not parse: this keeps that from happening unseen.
    #[test]
    fn the_bundled_manifest_is_the_repositorys() {
        let on_disk = Manifest::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifest.json")).unwrap();
        assert!(!on_disk.datasets.is_empty());
        assert_eq!(Manifest::bundled(), &on_disk);
    }
}
