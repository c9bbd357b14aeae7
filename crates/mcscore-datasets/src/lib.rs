//! Building task files from real benchmark sources, and proving a task file
//! is exactly its source: every task re-derived and compared, not a sample
//! (a label-scrambling bug passes every structural check and just scores at
//! chance).
//!
//! Flow: source files → [`read_records`] (Parquet, Arrow, JSON Lines, JSON,
//! CSV/TSV → JSON rows) → the benchmark's converter → [`Item`] → its
//! [`Scaffold`] → `mcscore_format::TaskWriter` (atomic; Winogrande: its CSV)
//! → [`manifest::Entry`].

pub mod benchmarks;
pub mod formats;
pub mod hub;
pub mod manifest;
mod render;
pub mod shots;
mod source;

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use mcscore_format::{sha256_file, sha256_hex, winogrande_line, write_atomic, write_tasks, Baselines, Summary, Task, TaskFile};

pub use benchmarks::{find, Benchmark, ConvertError, BENCHMARKS};
pub use manifest::{Entry, GroupRuns, Manifest, Provenance, ShotsRecord, SourceFile};
pub use render::{Item, Scaffold};
pub use shots::{render_with_shots, shot_name, ShotError};
pub use source::{read_records, SourceFormat};

/// A cause of another crate's type (a reader's, a parser's), kept as the source.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{}: {source}", path.display())]
    Source {
        path: PathBuf,
        #[source]
        source: Cause,
    },

    #[error("{name}: row {row} of {}: {source}", file.display())]
    Row {
        name: String,
        file: PathBuf,
        row: usize,
        #[source]
        source: Box<ConvertError>,
    },

    #[error("{}: {source}", path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: Cause,
    },

    #[error("{name}: no verified revision of {repo} is pinned, so it is not built from the hub; build it from a local copy of its files")]
    Unpinned { name: String, repo: String },

    #[error("{name}: {url}: hub download failed{}: {source}", if *unconfirmed { " (this path was not confirmed against the repository at that commit, which may name the file otherwise: build from a local copy with --source)" } else { "" })]
    Hub {
        name: String,
        url: String,
        /// The path was not confirmed against the repository.
        unconfirmed: bool,
        #[source]
        source: Box<hf_hub::api::sync::ApiError>,
    },

    #[error(transparent)]
    Format(#[from] mcscore_format::Error),

    #[error(transparent)]
    Shots(#[from] ShotError),
}

/// A source file to read: how the manifest names it, and where it is.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
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
    for source in sources {
        for (row, record) in read_records(&source.path)?.iter().enumerate() {
            let item = (benchmark.convert)(record).map_err(|source_error| DatasetError::Row {
                name: benchmark.name.to_owned(),
                file: source.path.clone(),
                row,
                source: Box::new(source_error),
            })?;
            items.push(item);
        }
    }
    Ok(items)
}

/// sha256 of a source: of the file, or of a folder's files in name order.
pub fn source_sha256(path: &Path) -> Result<String, DatasetError> {
    let error = |e: std::io::Error| DatasetError::Source { path: path.to_owned(), source: e.into() };
    if path.is_dir() {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(path).map_err(error)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        files.sort();
        let mut all = Vec::new();
        for file in files {
            all.extend_from_slice(file.file_name().unwrap_or_default().as_encoded_bytes());
            all.extend_from_slice(&std::fs::read(&file).map_err(error)?);
        }
        return Ok(sha256_hex(&all));
    }
    sha256_file(path).map_err(error)
}

/// A task as built: question, options, gold.
pub(crate) type Rendered = (String, Vec<String>, usize);

/// Every task of `benchmark`, rendered in its scaffold.
fn render(benchmark: &Benchmark, sources: &[Source]) -> Result<Vec<Rendered>, DatasetError> {
    Ok(load_items(benchmark, sources)?
        .iter()
        .map(|item| {
            let (question, options) = benchmark.scaffold.render(item);
            (question, options, item.gold)
        })
        .collect())
}

/// Builds `benchmark` from `sources` into `out_dir/`[`Benchmark::file_name`]
/// (atomically) and returns its manifest entry. `file_name` is how the
/// manifest refers to it.
pub fn build(benchmark: &Benchmark, sources: &[Source], out_dir: &Path, file_name: &str) -> Result<Entry, DatasetError> {
    let rendered = render(benchmark, sources)?;
    let path = out_dir.join(benchmark.file_name());
    write_entry(benchmark, benchmark.name, &rendered, sources, &path, file_name)
}

/// Builds `benchmark` with `k` solved examples before each question (see
/// [`shots`]) into `out_dir/NAME-Kshot.bin` and returns its manifest entry,
/// which records the shots, their seed and their split's source files.
pub fn build_with_shots(
    benchmark: &Benchmark,
    sources: &[Source],
    shot_sources: &[Source],
    k: usize,
    seed: Option<u64>,
    out_dir: &Path,
    file_name: &str,
) -> Result<Entry, DatasetError> {
    let (rendered, seed) = render_with_shots(benchmark, sources, shot_sources, k, seed)?;
    let name = shot_name(benchmark.name, k);
    let mut entry = write_entry(benchmark, &name, &rendered, sources, &out_dir.join(format!("{name}.bin")), file_name)?;
    let split = find(benchmark.shots.expect("render_with_shots checked it").from).expect("registered");
    entry.shots = Some(ShotsRecord { of: benchmark.name.to_owned(), k, seed, from: provenance(split, shot_sources)? });
    Ok(entry)
}

/// Where `benchmark` was built from: its hub coordinates and `sources` with their sha256.
fn provenance(benchmark: &Benchmark, sources: &[Source]) -> Result<Provenance, DatasetError> {
    let files = sources
        .iter()
        .map(|s| Ok(SourceFile { path: s.name.clone(), sha256: source_sha256(&s.path)? }))
        .collect::<Result<Vec<_>, DatasetError>>()?;
    Ok(Provenance {
        repo: benchmark.hub.repo.to_owned(),
        config: benchmark.hub.config.to_owned(),
        split: benchmark.hub.split.to_owned(),
        revision: benchmark.hub.revision.map(str::to_owned),
        files,
    })
}

/// Writes `rendered` to `path` (a task file, or Winogrande's CSV) and returns
/// the manifest entry called `name`.
fn write_entry(
    benchmark: &Benchmark,
    name: &str,
    rendered: &[Rendered],
    sources: &[Source],
    path: &Path,
    file_name: &str,
) -> Result<Entry, DatasetError> {
    let tasks = rendered.iter().map(|(q, o, g)| Task::new(q, o.iter().map(String::as_str).collect(), *g));
    // What the manifest records of the file, whichever format it is.
    let (sha256, bytes, option_counts, mode, baselines, min_parallel) = if benchmark.scaffold == Scaffold::Blank {
        let csv: String = rendered
            .iter()
            .enumerate()
            .map(|(i, (sentence, options, gold))| {
                winogrande_line(i, sentence, [&options[0], &options[1]], gold + 1).expect("the converter admits only CSV-safe rows")
            })
            .collect();
        write_atomic(path, csv.as_bytes())?;
        let tasks: Vec<Task<'_>> = tasks.collect();
        let baselines = Baselines::of(&tasks);
        (sha256_hex(csv.as_bytes()), csv.len() as u64, BTreeMap::from([(2, tasks.len())]), benchmark.scaffold.mode(), baselines, 2)
    } else {
        write_tasks(path, tasks)?;
        let s = Summary::of(&TaskFile::open(path)?);
        let baselines = Baselines { chance: s.chance, majority_class: s.majority_class, majority_position: s.majority_position };
        (s.sha256, s.bytes, s.option_counts, s.mode, baselines, s.min_parallel)
    };
    Ok(Entry {
        name: name.to_owned(),
        file: file_name.to_owned(),
        sha256,
        bytes,
        tasks: rendered.len(),
        option_counts,
        mode,
        chance: baselines.chance,
        majority_class: baselines.majority_class,
        min_parallel,
        source: provenance(benchmark, sources)?,
        licence: benchmark.licence.to_owned(),
        shots: None,
        groups: group_runs(benchmark, sources)?,
    })
}

/// The groups of `benchmark`'s tasks, if it has a group field.
fn group_runs(benchmark: &Benchmark, sources: &[Source]) -> Result<Option<GroupRuns>, DatasetError> {
    let Some(field) = benchmark.group else { return Ok(None) };
    let mut runs = GroupRuns::of(field, &shots::groups(sources, field)?);
    runs.categories =
        benchmark.categories.map(|table| table.iter().map(|&(group, category)| (group.to_owned(), category.to_owned())).collect());
    Ok(Some(runs))
}

/// One way a task file differs from what its source says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("the file has {found} tasks, the source {expected}")]
    TaskCount { expected: usize, found: usize },
    #[error("task {task}: question differs from the source")]
    Question { task: usize },
    #[error("task {task}: options differ from the source (expected {expected:?}, found {found:?})")]
    Options { task: usize, expected: Vec<String>, found: Vec<String> },
    #[error("task {task}: gold option is {}, the source says {expected}", found.map_or_else(|| "none".to_owned(), |g| g.to_string()))]
    Gold { task: usize, expected: usize, found: Option<usize> },
    #[error("task {task}: letter-mode options are not the bare IDs A, B, … in order: {found:?}")]
    LetterOptions { task: usize, found: Vec<String> },
    #[error("sha256 {found} differs from the manifest's {expected}")]
    FileSha256 { expected: String, found: String },
    #[error("source {path}: sha256 {found} differs from the manifest's {expected} (another revision of the source?)")]
    SourceSha256 { path: String, expected: String, found: String },
    #[error("the manifest names the source {path:?}, which is not a relative path inside a sources folder or a hub address (was the manifest edited?)")]
    SourcePath { path: String },
    #[error("the manifest records {recorded} source file(s), but {read} were read")]
    SourceCount { recorded: usize, read: usize },
    #[error("the task groups differ from the source's: the manifest records {recorded}, the source gives {found}")]
    Groups { recorded: String, found: String },
}

/// Re-derives every task of a file (`tasks`, read from it) from `sources` and
/// lists each difference. `progress` is called with the number of tasks
/// checked so far.
pub fn verify_tasks(
    benchmark: &Benchmark,
    tasks: &[Task<'_>],
    sources: &[Source],
    progress: &dyn Fn(usize),
) -> Result<Vec<Mismatch>, DatasetError> {
    Ok(compare(benchmark.scaffold, &render(benchmark, sources)?, tasks, progress))
}

/// The differences between the tasks as built (`expected`) and as read.
fn compare(scaffold: Scaffold, expected: &[Rendered], tasks: &[Task<'_>], progress: &dyn Fn(usize)) -> Vec<Mismatch> {
    let mut mismatches = Vec::new();
    if expected.len() != tasks.len() {
        mismatches.push(Mismatch::TaskCount { expected: expected.len(), found: tasks.len() });
    }
    for (index, ((question, options, gold), task)) in expected.iter().zip(tasks).enumerate() {
        if task.question != question {
            mismatches.push(Mismatch::Question { task: index });
        }
        if task.options() != options.iter().map(String::as_str).collect::<Vec<_>>() {
            let found: Vec<String> = task.options().iter().map(|o| o.to_string()).collect();
            if scaffold == Scaffold::Letter {
                mismatches.push(Mismatch::LetterOptions { task: index, found });
            } else {
                mismatches.push(Mismatch::Options { task: index, expected: options.clone(), found });
            }
        }
        if task.gold() != Some(*gold) {
            mismatches.push(Mismatch::Gold { task: index, expected: *gold, found: task.gold() });
        }
        if index % 1024 == 0 {
            progress(index);
        }
    }
    progress(tasks.len());
    mismatches
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

/// Everything `verify` checks of a file against its manifest entry: the
/// file's sha256 (of `bytes`), each source's sha256 (and, for a k-shot file,
/// each of `shot_sources`), then every task (`tasks`, read from it) re-derived
/// from the sources.
pub fn verify_entry(
    entry: &Entry,
    bytes: &[u8],
    tasks: &[Task<'_>],
    sources: &[Source],
    shot_sources: &[Source],
    progress: &dyn Fn(usize),
) -> Result<Vec<Mismatch>, DatasetError> {
    let benchmark = entry_benchmark(entry)?;
    let mut mismatches = Vec::new();
    let sha256 = sha256_hex(bytes);
    if sha256 != entry.sha256 {
        mismatches.push(Mismatch::FileSha256 { expected: entry.sha256.clone(), found: sha256 });
    }
    let recorded_shots = entry.shots.as_ref().map_or(&[][..], |s| &s.from.files[..]);
    for (read, recorded) in [(sources.len(), entry.source.files.len()), (shot_sources.len(), recorded_shots.len())] {
        if read != recorded {
            mismatches.push(Mismatch::SourceCount { recorded, read });
        }
    }
    for recorded in entry.source.files.iter().chain(recorded_shots) {
        let path = std::path::Path::new(&recorded.path);
        let hub = recorded.path.starts_with("hf://");
        if !hub && (path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir))) {
            mismatches.push(Mismatch::SourcePath { path: recorded.path.clone() });
        }
    }
    for (source, recorded) in sources.iter().zip(&entry.source.files).chain(shot_sources.iter().zip(recorded_shots)) {
        let found = source_sha256(&source.path)?;
        if found != recorded.sha256 {
            mismatches.push(Mismatch::SourceSha256 { path: source.name.clone(), expected: recorded.sha256.clone(), found });
        }
    }
    let expected = match &entry.shots {
        Some(shots) => render_with_shots(benchmark, sources, shot_sources, shots.k, shots.seed)?.0,
        None => render(benchmark, sources)?,
    };
    let groups = group_runs(benchmark, sources)?;
    if groups != entry.groups {
        let describe = |g: &Option<GroupRuns>| {
            g.as_ref().map_or("none".to_owned(), |g| {
                format!("{} runs of {} ({} tasks)", g.runs.len(), g.field, g.runs.iter().map(|r| r.1).sum::<usize>())
            })
        };
        mismatches.push(Mismatch::Groups { recorded: describe(&entry.groups), found: describe(&groups) });
    }
    mismatches.extend(compare(benchmark.scaffold, &expected, tasks, progress));
    Ok(mismatches)
}
