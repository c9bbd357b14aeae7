//! The group (an MMLU subject, a passage) of each task of a file: from a
//! groups file, or from the manifest that lists the file, found beside it
//! when none is named. Comparisons cluster by them and reports tabulate them.

use std::path::{Path, PathBuf};

use crate::EvalError;
use crate::{GroupsFault, LogsError};

/// The group (an MMLU subject, a passage) of each task of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Groups {
    /// Where the groups come from, as the output says it.
    pub source: String,
    pub(crate) names: Vec<String>,
    /// Per task of the file, in file order: an index into `names`.
    of_task: Vec<usize>,
    /// Each group's category (MMLU's stem, humanities, …), where recorded.
    categories: Option<std::collections::BTreeMap<String, String>>,
}

impl Groups {
    /// From runs of consecutive tasks: (group, how many tasks), in file order.
    pub(crate) fn from_runs(source: impl Into<String>, runs: &[(String, usize)]) -> Groups {
        let mut names: Vec<String> = Vec::new();
        let mut index_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut of_task = Vec::new();
        for (name, count) in runs {
            let index = *index_of.entry(name.as_str()).or_insert_with(|| {
                names.push(name.clone());
                names.len() - 1
            });
            of_task.extend(std::iter::repeat_n(index, *count));
        }
        Groups { source: source.into(), names, of_task, categories: None }
    }

    /// These groups with a category for each (a group the map misses has none).
    pub(crate) fn with_categories(mut self, categories: std::collections::BTreeMap<String, String>) -> Groups {
        self.categories = Some(categories);
        self
    }

    /// The category of group `name`, where the groups have categories.
    pub(crate) fn category_of(&self, name: &str) -> Option<&str> {
        self.categories.as_ref()?.get(name).map(String::as_str)
    }

    /// Refuses groups that do not reach every task of `records` (read from `log`).
    pub(crate) fn check_reach(&self, records: &[crate::log::TaskRecord], log: &Path) -> Result<(), EvalError> {
        match records.iter().map(|r| r.task).max() {
            Some(last) if last >= self.tasks() => Err(EvalError::Logs(LogsError::BadGroups {
                path: PathBuf::from(&self.source),
                fault: GroupsFault::Reach { groups_for: self.tasks(), log: log.to_owned(), task: last },
            })),
            _ => Ok(()),
        }
    }

    /// A text file with one line per task of the task file, in file order:
    /// the task's group. `file_tasks`, where known (a log's header of the
    /// whole file, a shard or a sequential comparison, or a manifest entry),
    /// must be the number of lines; where not, a comparison refuses groups
    /// that miss a task it compares.
    pub fn read(path: &Path, file_tasks: Option<usize>) -> Result<Groups, EvalError> {
        let bad = |fault| EvalError::Logs(LogsError::BadGroups { path: path.to_owned(), fault });
        let bytes = mcscore_format::read_input(path)?;
        let text = std::str::from_utf8(&bytes).map_err(|e| bad(GroupsFault::NotUtf8 { byte: e.valid_up_to() }))?;
        // A Windows editor's byte-order mark is not part of the first group's name.
        let lines: Vec<&str> = text.strip_prefix('\u{feff}').unwrap_or(text).lines().collect();
        if let Some(tasks) = file_tasks.filter(|&t| t != lines.len()) {
            return Err(bad(GroupsFault::LineCount { lines: lines.len(), tasks }));
        }
        if let Some(line) = lines.iter().position(|l| l.trim().is_empty()) {
            return Err(bad(GroupsFault::EmptyLine { line: line + 1 }));
        }
        let mut runs: Vec<(String, usize)> = Vec::new();
        for line in lines {
            match runs.last_mut() {
                Some((name, count)) if name == line.trim() => *count += 1,
                _ => runs.push((line.trim().to_owned(), 1)),
            }
        }
        Ok(Groups::from_runs(path.display().to_string(), &runs))
    }

    /// The groups `manifest` records for the task file whose sha256 is
    /// `file_sha256`; `None` when no entry of it has groups.
    pub fn from_manifest(manifest: &Path, file_sha256: &str) -> Result<Option<Groups>, EvalError> {
        match manifest_entry(manifest, file_sha256)? {
            Some(entry) => Groups::from_entry(manifest, &entry),
            None => Ok(None),
        }
    }

    /// The groups a manifest's `entry` records (`manifest` names it in
    /// messages). The runs must add up to the entry's task count (the
    /// manifest may be another program's).
    fn from_entry(manifest: &Path, e: &mcscore_datasets::Entry) -> Result<Option<Groups>, EvalError> {
        let Some(g) = e.groups.as_ref() else { return Ok(None) };
        let total = g.runs.iter().try_fold(0usize, |sum, (_, count)| sum.checked_add(*count));
        let bad = |fault| EvalError::Logs(LogsError::BadGroups { path: manifest.to_owned(), fault });
        if total != Some(e.tasks) {
            return Err(bad(GroupsFault::ManifestCount {
                name: e.name.clone(),
                field: g.field.to_string(),
                covered: total,
                tasks: e.tasks,
            }));
        }
        // As a --groups file's empty line is: every task needs a group.
        if let Some(run) = g.runs.iter().position(|(name, _)| name.trim().is_empty()) {
            return Err(bad(GroupsFault::UnnamedRun { name: e.name.clone(), field: g.field.to_string(), run: run + 1 }));
        }
        let groups = Groups::from_runs(format!("{}: {}'s {}", manifest.display(), e.name, g.field), &g.runs);
        Ok(Some(match &g.categories {
            Some(categories) => groups.with_categories(categories.clone()),
            None => groups,
        }))
    }

    /// The group of task `task` of the file, where the groups reach it.
    pub(crate) fn name_of(&self, task: usize) -> Option<&str> {
        self.group(task).map(|g| self.names[g].as_str())
    }

    /// The index into the names of task `task`'s group.
    pub(crate) fn group(&self, task: usize) -> Option<usize> {
        self.of_task.get(task).copied()
    }

    /// How many groups there are.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no groups (no tasks).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Tasks the groups reach.
    pub(crate) fn tasks(&self) -> usize {
        self.of_task.len()
    }
}

/// The entry of `manifest` for the task file whose sha256 is `file_sha256`.
pub(crate) fn manifest_entry(manifest: &Path, file_sha256: &str) -> Result<Option<mcscore_datasets::Entry>, EvalError> {
    Ok(mcscore_datasets::Manifest::load(manifest)?.datasets.into_iter().find(|e| e.sha256 == file_sha256))
}

/// The manifests looked in when none is named, nearest first: a
/// manifest.json in the task file's folder or any folder above it (where
/// `mcscore build` writes it: beside `datasets/`), then the working
/// directory's. Each is matched by the file's sha256, so one that is not
/// the file's gives nothing.
pub fn found_manifests(task_file: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let folder = task_file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let candidates = folder.ancestors().map(|d| d.join("manifest.json")).chain(std::iter::once(PathBuf::from("manifest.json")));
    for candidate in candidates {
        if candidate.is_file() && !found.iter().any(|f| mcscore_format::same_file(f, &candidate)) {
            found.push(candidate);
        }
    }
    found
}

/// The entries for the file of `sha256` in the manifests found for
/// `task_file` ([`found_manifests`]), nearest first, then in the bundled
/// manifest (a bundled task file copied anywhere), each with where it was
/// read. A found manifest that cannot be read as mcscore's is passed to
/// `skipped` with its error and looked past.
pub(crate) fn found_entries(
    task_file: &Path,
    sha256: &str,
    skipped: &mut dyn FnMut(&Path, &EvalError),
) -> Vec<(PathBuf, mcscore_datasets::Entry)> {
    let bundled = mcscore_datasets::Manifest::bundled().datasets.iter().find(|e| e.sha256 == sha256).cloned();
    found_manifests(task_file)
        .into_iter()
        .filter_map(|m| match manifest_entry(&m, sha256) {
            Ok(entry) => entry.map(|e| (m, e)),
            Err(error) => {
                skipped(&m, &error);
                None
            }
        })
        .chain(bundled.map(|e| (PathBuf::from(mcscore_datasets::Manifest::BUNDLED_LABEL), e)))
        .collect()
}

impl Groups {
    /// The groups the nearest manifest found for `task_file` (sha256
    /// `sha256`, see [`found_manifests`]) records, if any does. A manifest
    /// found may be another program's: one that cannot be read as mcscore's
    /// is passed to `skipped` with its error and looked past.
    pub fn found(task_file: &Path, sha256: &str, skipped: &mut dyn FnMut(&Path, &EvalError)) -> Option<Groups> {
        found_entries(task_file, sha256, skipped).into_iter().find_map(|(m, entry)| match Groups::from_entry(&m, &entry) {
            Ok(groups) => groups,
            Err(error) => {
                skipped(&m, &error);
                None
            }
        })
    }

    /// The task count the nearest manifest found for `task_file` records
    /// for the file of `sha256`, if any does.
    pub fn found_tasks(task_file: &Path, sha256: &str) -> Option<usize> {
        found_entries(task_file, sha256, &mut |_, _| {}).into_iter().next().map(|(_, e)| e.tasks)
    }
}
