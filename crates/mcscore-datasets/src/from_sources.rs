//! Building task files from source files, and verifying them against their
//! sources (the `sources` feature): where a benchmark's sources come from
//! (local copies or the hub), the sha256 of a source, and the task-by-task
//! comparison.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcscore_format::{sha256_file, sha256_hex, winogrande_line, write_atomic, Baselines, Summary, Task, TaskFile, TaskWriter};

use crate::shots::{shot_name, Preambles};
use crate::{
    entry_benchmark, for_each_item, hub, Benchmark, ConvertError, DatasetError, Entry, GroupRuns, Provenance, Scaffold, ShotsRecord,
    Source, SourceFile,
};

/// Where a benchmark's source files come from.
#[derive(Debug, Clone, Copy)]
pub enum Sources<'a> {
    /// One file or folder, for one benchmark: the manifest names it by its
    /// file name alone (it holds no absolute or `..` path, and verify is
    /// given the file again).
    File(&'a Path),
    /// A root of local copies, each benchmark's registered copy under it.
    Root(&'a Path),
    /// The Hugging Face hub, at the benchmark's pinned revision.
    Hub,
}

impl Sources<'_> {
    /// The source files of `benchmark`, local or downloaded.
    pub fn resolve(self, benchmark: &Benchmark) -> Result<Vec<Source>, DatasetError> {
        match self {
            Sources::File(path) => {
                let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
                Ok(vec![Source::local(path, name)])
            }
            Sources::Root(root) => {
                let relative = benchmark.local.ok_or_else(|| DatasetError::NoLocalCopy { name: benchmark.name, root: root.to_owned() })?;
                let path = root.join(relative);
                if !path.exists() {
                    return Err(DatasetError::LocalCopyMissing { name: benchmark.name, path });
                }
                Ok(vec![Source::local(&path, relative)])
            }
            Sources::Hub => Ok(hub::fetch(benchmark)?.into_iter().map(|(url, path)| Source { name: url, path }).collect()),
        }
    }
}

/// sha256 of a source: of the file, or of a folder's files in name order
/// (each file's name, then its bytes), read as a stream.
pub fn source_sha256(path: &Path) -> Result<String, DatasetError> {
    use sha2::Digest as _;
    let error = |e: std::io::Error| DatasetError::Source { path: path.to_owned(), source: e.into() };
    if path.is_dir() {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(path).map_err(error)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        files.sort();
        let mut hasher = sha2::Sha256::new();
        for file in files {
            hasher.update(file.file_name().unwrap_or_default().as_encoded_bytes());
            std::io::copy(&mut std::fs::File::open(&file).map_err(error)?, &mut hasher).map_err(error)?;
        }
        return Ok(mcscore_format::hex(&hasher.finalize()));
    }
    sha256_file(path).map_err(error)
}

/// A task as built: question, options, gold.
type Rendered = (String, Vec<String>, usize);

/// Renders every task of `benchmark` in its scaffold, in source order, after
/// its k-shot preamble where `preambles` are given, into `each` with its
/// index; returns the task count and groups. One task is held at a time.
fn render_each(
    benchmark: &Benchmark,
    sources: &[Source],
    mut preambles: Option<&mut Preambles>,
    each: &mut dyn FnMut(usize, Rendered) -> Result<(), DatasetError>,
) -> Result<(usize, Option<GroupRuns>), DatasetError> {
    let mut groups = benchmark.group.map(|field| (field, GroupRuns::of(field, &[])));
    let mut tasks = 0;
    for_each_item(benchmark, sources, &mut |item, row| {
        if let Some((field, groups)) = &mut groups {
            groups.push(row.group(field)?);
        }
        let (mut question, options) = benchmark.scaffold.render(&item);
        if let Some(preambles) = preambles.as_deref_mut() {
            question = format!("{}{question}", preambles.of(tasks, &row)?);
        }
        // What score tokenises: question + " " + option (a blank's halves are shorter).
        let bytes = question.len() + 1 + options.iter().map(String::len).max().unwrap_or(0);
        if bytes > mcscore_format::MAX_TEXT_BYTES {
            let source = Box::new(ConvertError::TextTooLong { bytes });
            return Err(DatasetError::Row { name: benchmark.name.to_owned(), file: row.file.to_owned(), row: row.row, source });
        }
        each(tasks, (question, options, item.gold))?;
        tasks += 1;
        Ok(())
    })?;
    let mut groups = groups.map(|(_, groups)| groups);
    if let (Some(groups), Some(table)) = (&mut groups, benchmark.categories) {
        groups.categories = Some(table.iter().map(|&(group, category)| (group.to_owned(), category.to_owned())).collect());
    }
    Ok((tasks, groups))
}

/// Builds `benchmark` from `sources` into `out_dir/`[`Benchmark::file_name`]
/// (atomically) and returns its manifest entry. `file_name` is how the
/// manifest refers to it. `progress` hears the count of tasks written.
pub fn build(
    benchmark: &Benchmark,
    sources: &[Source],
    out_dir: &Path,
    file_name: &str,
    progress: &mut dyn FnMut(usize),
) -> Result<Entry, DatasetError> {
    let path = out_dir.join(benchmark.file_name());
    write_entry(benchmark, benchmark.name, None, sources, (&path, file_name), progress)
}

/// Builds `benchmark` with `k` solved examples before each question (see
/// [`shots`](crate::shots)) into `out_dir/NAME-Kshot.bin` and returns its
/// manifest entry, which records the shots, their seed and their split's
/// source files.
#[allow(clippy::too_many_arguments)] // `build`'s, plus the shots' sources, K and seed
pub fn build_with_shots(
    benchmark: &Benchmark,
    sources: &[Source],
    shot_sources: &[Source],
    k: usize,
    seed: Option<u64>,
    out_dir: &Path,
    file_name: &str,
    progress: &mut dyn FnMut(usize),
) -> Result<Entry, DatasetError> {
    let (mut preambles, seed) = Preambles::new(benchmark, shot_sources, k, seed)?;
    let name = shot_name(benchmark.name, k);
    let path = out_dir.join(format!("{name}.bin"));
    let mut entry = write_entry(benchmark, &name, Some(&mut preambles), sources, (&path, file_name), progress)?;
    let split = preambles.split();
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

/// Renders `benchmark`'s tasks into `path` (a task file, written as the
/// source streams past, or Winogrande's CSV) and returns the manifest entry
/// called `name`; `file_name` is how the manifest refers to `path`.
fn write_entry(
    benchmark: &Benchmark,
    name: &str,
    preambles: Option<&mut Preambles>,
    sources: &[Source],
    (path, file_name): (&Path, &str),
    progress: &mut dyn FnMut(usize),
) -> Result<Entry, DatasetError> {
    // What the manifest records of the file, whichever format it is.
    let (tasks, groups, sha256, bytes, option_counts, mode, baselines, min_parallel);
    if benchmark.scaffold == Scaffold::Blank {
        // Winogrande's CSV is written whole: its files are small (1,267 and
        // 40,398 tasks), and the format has no offset table to stream behind.
        let mut csv = String::new();
        let mut golds = Baselines::counter();
        (tasks, groups) = render_each(benchmark, sources, preambles, &mut |index, (sentence, options, gold)| {
            csv.push_str(
                // only Winogrande uses the blank scaffold, and its converter yields exactly 2 options
                &winogrande_line(index, &sentence, [&options[0], &options[1]], gold + 1).expect("the converter admits only CSV-safe rows"),
            );
            golds.add(options.len(), Some(gold));
            progress(index + 1);
            Ok(())
        })?;
        write_atomic(path, csv.as_bytes())?;
        (sha256, bytes, option_counts, mode, baselines, min_parallel) =
            (sha256_hex(csv.as_bytes()), csv.len() as u64, BTreeMap::from([(2, tasks)]), benchmark.scaffold.mode(), golds.baselines(), 2);
    } else {
        let mut writer = TaskWriter::uncounted(path)?;
        (tasks, groups) = render_each(benchmark, sources, preambles, &mut |index, (question, options, gold)| {
            writer.write(&Task::new(&question, options.iter().map(String::as_str).collect(), gold))?;
            progress(index + 1);
            Ok(())
        })?;
        writer.finish()?;
        let s = Summary::of(&TaskFile::open(path)?);
        (sha256, bytes, option_counts, mode, min_parallel) = (s.sha256, s.bytes, s.option_counts, s.mode, s.min_parallel);
        baselines = Baselines { chance: s.chance, majority_class: s.majority_class, majority_position: s.majority_position };
    }
    Ok(Entry {
        name: name.to_owned(),
        file: file_name.to_owned(),
        sha256,
        bytes,
        tasks,
        option_counts,
        mode,
        chance: 100.0 * baselines.chance,
        majority_class: 100.0 * baselines.majority_class,
        min_parallel,
        source: provenance(benchmark, sources)?,
        licence: benchmark.licence.to_owned(),
        shots: None,
        groups,
        lm_eval: None,
    })
}

/// One way a task file differs from what its source says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyFault {
    /// The file holds more or fewer tasks than the source gives.
    #[error("the file has {found} tasks, the source {expected}")]
    TaskCount {
        /// Tasks the source gives.
        expected: usize,
        /// Tasks the file holds.
        found: usize,
    },
    /// A question that differs from the source's.
    #[error("task {task}: question differs from the source")]
    Question {
        /// The task, by its index in the file.
        task: usize,
    },
    /// Options that differ from the source's.
    #[error("task {task}: options differ from the source (expected {expected:?}, found {found:?})")]
    Options {
        /// The task, by its index in the file.
        task: usize,
        /// The options the source gives.
        expected: Vec<String>,
        /// The file's.
        found: Vec<String>,
    },
    /// A gold option other than the source's.
    #[error("task {task}: gold option is {}, the source says {expected}", found.map_or_else(|| "none".to_owned(), |g| g.to_string()))]
    Gold {
        /// The task, by its index in the file.
        task: usize,
        /// The source's gold option.
        expected: usize,
        /// The file's, if any label is 1.
        found: Option<usize>,
    },
    /// A letter-scaffold task whose options are not the bare IDs A, B, … in order.
    #[error("task {task}: letter-mode options are not the bare IDs A, B, … in order: {found:?}")]
    LetterOptions {
        /// The task, by its index in the file.
        task: usize,
        /// The file's options.
        found: Vec<String>,
    },
    /// A file whose sha256 is not the manifest's.
    #[error("sha256 {found} differs from the manifest's {expected}")]
    FileSha256 {
        /// The manifest's.
        expected: String,
        /// The file's.
        found: String,
    },
    /// What an lm-eval export records that lm-eval gives otherwise now (its
    /// version, a task's metrics or YAML, a group, a results skeleton).
    #[error("the manifest's lm_eval.{field} differs from what lm-eval exports now (another lm-eval version, task YAML or dataset?)")]
    LmEvalRecord {
        /// The record's field: `lm_eval_version`, `tasks`, `groups`, `results`.
        field: &'static str,
    },
    /// A source whose sha256 is not the manifest's.
    #[error("source {path}: sha256 {found} differs from the manifest's {expected} (another revision of the source?)")]
    SourceSha256 {
        /// The source, by the name it was given.
        path: String,
        /// The manifest's.
        expected: String,
        /// The source's.
        found: String,
    },
    /// A recorded source path that is absolute or climbs out of its folder
    /// (`..`), where it should be relative or an `hf://` address.
    #[error("the manifest names the source {path:?}, which is not a relative path inside a sources folder or a hub address (was the manifest edited?)")]
    SourcePath {
        /// The path, as the manifest records it.
        path: String,
    },
    /// More or fewer source files given than the manifest records (for the
    /// tasks, or for a k-shot file's examples).
    #[error("the manifest records {recorded} source file(s), but {read} were read")]
    SourceCount {
        /// Files the manifest records.
        recorded: usize,
        /// Files given.
        read: usize,
    },
    /// Task groups other than the manifest records.
    #[error("the task groups differ from the source's: the manifest records {recorded}, the source gives {found}")]
    Groups {
        /// The manifest's groups, described.
        recorded: String,
        /// The source's, described.
        found: String,
    },
    /// Differences past the first [`MAX_LISTED`], counted, not kept: a file
    /// wrong everywhere does not fill memory with them.
    #[error("{count} more task difference(s), not listed")]
    Unlisted {
        /// How many.
        count: usize,
    },
}

/// The task differences a verification keeps; the rest are counted.
pub const MAX_LISTED: usize = 1000;

impl VerifyFault {
    /// The differences `mismatches` stand for: one each, or an
    /// [`VerifyFault::Unlisted`]'s count.
    pub fn count(mismatches: &[VerifyFault]) -> usize {
        mismatches.iter().map(|m| if let VerifyFault::Unlisted { count } = m { *count } else { 1 }).sum()
    }
}

/// Re-derives every task of a file (`tasks`, read from it) from `sources` and
/// lists each difference. `progress` is called with the number of tasks
/// checked so far.
pub fn verify_tasks<'t>(
    benchmark: &Benchmark,
    tasks: impl IntoIterator<Item = Task<'t>>,
    sources: &[Source],
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<VerifyFault>, DatasetError> {
    Ok(compare(benchmark, sources, None, &mut tasks.into_iter(), progress)?.0)
}

/// The differences between the tasks as built from `sources` (one at a time)
/// and as read, and the groups of the tasks as built.
fn compare(
    benchmark: &Benchmark,
    sources: &[Source],
    preambles: Option<&mut Preambles>,
    tasks: &mut dyn Iterator<Item = Task<'_>>,
    progress: &mut dyn FnMut(usize),
) -> Result<(Vec<VerifyFault>, Option<GroupRuns>), DatasetError> {
    let scaffold = benchmark.scaffold;
    let (mut mismatches, mut read, mut unlisted) = (Vec::new(), 0, 0);
    let (expected, groups) = render_each(benchmark, sources, preambles, &mut |index, (question, options, gold)| {
        let Some(task) = tasks.next() else { return Ok(()) };
        read += 1;
        let mut differs = |mismatch: VerifyFault| {
            if mismatches.len() < MAX_LISTED {
                mismatches.push(mismatch);
            } else {
                unlisted += 1;
            }
        };
        if task.question != question {
            differs(VerifyFault::Question { task: index });
        }
        if task.options() != options.iter().map(String::as_str).collect::<Vec<_>>() {
            let found: Vec<String> = task.options().iter().map(|o| o.to_string()).collect();
            if scaffold == Scaffold::Letter {
                differs(VerifyFault::LetterOptions { task: index, found });
            } else {
                differs(VerifyFault::Options { task: index, expected: options, found });
            }
        }
        if task.gold() != Some(gold) {
            differs(VerifyFault::Gold { task: index, expected: gold, found: task.gold() });
        }
        // Tasks of the file compared, against the file's count.
        progress(read);
        Ok(())
    })?;
    let found = read + tasks.count();
    progress(found);
    if expected != found {
        mismatches.insert(0, VerifyFault::TaskCount { expected, found });
    }
    if unlisted > 0 {
        mismatches.push(VerifyFault::Unlisted { count: unlisted });
    }
    Ok((mismatches, groups))
}

/// Everything `verify` checks of a file against its manifest entry: the
/// file's sha256 (of `bytes`), each source's sha256 (and, for a k-shot file,
/// each of `shot_sources`), then every task (`tasks`, read from it) re-derived
/// from the sources, one at a time.
pub fn verify_entry<'t>(
    entry: &Entry,
    bytes: &[u8],
    tasks: impl IntoIterator<Item = Task<'t>>,
    sources: &[Source],
    shot_sources: &[Source],
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<VerifyFault>, DatasetError> {
    let benchmark = entry_benchmark(entry)?;
    let mut mismatches = Vec::new();
    let sha256 = sha256_hex(bytes);
    if sha256 != entry.sha256 {
        mismatches.push(VerifyFault::FileSha256 { expected: entry.sha256.clone(), found: sha256 });
    }
    let recorded_shots = entry.shots.as_ref().map_or(&[][..], |s| &s.from.files[..]);
    for (read, recorded) in [(sources.len(), entry.source.files.len()), (shot_sources.len(), recorded_shots.len())] {
        if read != recorded {
            mismatches.push(VerifyFault::SourceCount { recorded, read });
        }
    }
    for recorded in entry.source.files.iter().chain(recorded_shots) {
        let path = std::path::Path::new(&recorded.path);
        let hub = recorded.path.starts_with("hf://");
        if !hub && (path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir))) {
            mismatches.push(VerifyFault::SourcePath { path: recorded.path.clone() });
        }
    }
    for (source, recorded) in sources.iter().zip(&entry.source.files).chain(shot_sources.iter().zip(recorded_shots)) {
        let found = source_sha256(&source.path)?;
        if found != recorded.sha256 {
            mismatches.push(VerifyFault::SourceSha256 { path: source.name.clone(), expected: recorded.sha256.clone(), found });
        }
    }
    let mut preambles = match &entry.shots {
        Some(shots) => Some(Preambles::new(benchmark, shot_sources, shots.k, shots.seed)?.0),
        None => None,
    };
    let (tasks_mismatches, groups) = compare(benchmark, sources, preambles.as_mut(), &mut tasks.into_iter(), progress)?;
    if groups != entry.groups {
        let describe = |g: &Option<GroupRuns>| {
            g.as_ref().map_or("none".to_owned(), |g| {
                format!("{} runs of {} ({} tasks)", g.runs.len(), g.field, g.runs.iter().map(|r| r.1).sum::<usize>())
            })
        };
        mismatches.push(VerifyFault::Groups { recorded: describe(&entry.groups), found: describe(&groups) });
    }
    mismatches.extend(tasks_mismatches);
    Ok(mismatches)
}
