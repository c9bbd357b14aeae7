//! The statistics every task file reports (docs/datasets.md lists them per file).

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::file::TaskFile;
use crate::task::{Mode, Task};

/// Facts about a whole file that `inspect` prints and the manifest records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub tasks: usize,
    pub bytes: u64,
    /// Option count → number of tasks with that many options.
    pub option_counts: BTreeMap<usize, usize>,
    pub mode: Mode,
    /// Mean over tasks of 100 / n_options.
    pub chance: f64,
    /// 100 × the largest share of tasks whose gold answer is at one position.
    pub majority_class: f64,
    /// Position (0-based) that `majority_class` is about.
    pub majority_position: usize,
    /// The widest task's option count: the smallest `-np` llama-perplexity needs.
    pub min_parallel: usize,
    pub longest_task_bytes: u64,
    pub longest_task: usize,
    pub sha256: String,
}

/// The two baselines a score must beat, over any set of tasks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Baselines {
    /// Mean over tasks of 100 / n_options.
    pub chance: f64,
    /// 100 × the largest share of tasks whose gold answer is at one position.
    pub majority_class: f64,
    /// Position (0-based) that `majority_class` is about.
    pub majority_position: usize,
}

impl Baselines {
    /// Tasks without a gold label (only the lenient reader yields them) count
    /// towards no position.
    pub fn of<'a, 't: 'a>(tasks: impl IntoIterator<Item = &'a Task<'t>>) -> Baselines {
        Baselines::from_tasks(tasks.into_iter().map(|t| (t.options().len(), t.gold())))
    }

    /// The baselines of tasks given as (option count, gold position).
    pub fn from_tasks(tasks: impl IntoIterator<Item = (usize, Option<usize>)>) -> Baselines {
        let mut counter = Baselines::counter();
        for (options, gold) in tasks {
            counter.add(options, gold);
        }
        counter.baselines()
    }

    /// Baselines counted one task at a time (tasks that stream past).
    pub fn counter() -> BaselineCounter {
        BaselineCounter::default()
    }
}

/// The running sums of [`Baselines`]: memory grows with the gold positions,
/// not the tasks.
#[derive(Debug, Clone, Default)]
pub struct BaselineCounter {
    n: usize,
    chance: f64,
    gold_positions: Vec<usize>,
}

impl BaselineCounter {
    /// One more task of `options` options, its gold at `gold`.
    pub fn add(&mut self, options: usize, gold: Option<usize>) {
        self.n += 1;
        self.chance += 100.0 / options as f64;
        if let Some(gold) = gold {
            if self.gold_positions.len() <= gold {
                self.gold_positions.resize(gold + 1, 0);
            }
            // resized above to hold gold
            self.gold_positions[gold] += 1;
        }
    }

    /// Tasks counted so far.
    pub fn count(&self) -> usize {
        self.n
    }

    pub fn baselines(&self) -> Baselines {
        let (majority_position, majority) =
            self.gold_positions.iter().enumerate().fold((0, 0), |best, (k, &c)| if c > best.1 { (k, c) } else { best });
        let n = self.n.max(1) as f64;
        Baselines { chance: self.chance / n, majority_class: 100.0 * majority as f64 / n, majority_position }
    }
}

impl Summary {
    pub fn of(file: &TaskFile) -> Summary {
        // One pass over views of the mapped file: memory does not grow with
        // the task count.
        let mut option_counts = BTreeMap::new();
        let mut letter = true;
        let (mut longest_task, mut longest_task_bytes) = (0, 0);
        let mut counter = Baselines::counter();
        for (index, task) in file.tasks().enumerate() {
            counter.add(task.options().len(), task.gold());
            *option_counts.entry(task.options().len()).or_insert(0) += 1;
            letter &= Mode::of_task(&task) == Mode::Letter;
            let bytes = file.task_len(index);
            if bytes > longest_task_bytes {
                (longest_task, longest_task_bytes) = (index, bytes);
            }
        }
        let baselines = counter.baselines();
        Summary {
            tasks: file.len(),
            bytes: file.bytes().len() as u64,
            min_parallel: option_counts.keys().copied().max().unwrap_or(0),
            option_counts,
            mode: if letter { Mode::Letter } else { Mode::Text },
            chance: baselines.chance,
            majority_class: baselines.majority_class,
            majority_position: baselines.majority_position,
            longest_task_bytes,
            longest_task,
            sha256: sha256_hex(file.bytes()),
        }
    }
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex sha256 of a file, read in a stream (models are large).
/// Only a regular file: a FIFO would block, `/dev/zero` never ends.
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<String> {
    crate::check_input_io(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

/// Lower-case hex of a digest.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
