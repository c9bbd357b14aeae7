//! The statistics every task file reports (docs/datasets.md lists them per file).

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::file::TaskFile;
use crate::task::{Mode, Task};

/// Facts about a whole file that `inspect` prints and the manifest records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Tasks in the file.
    pub tasks: usize,
    /// The file's size.
    pub bytes: u64,
    /// Option count → number of tasks with that many options.
    pub option_counts: BTreeMap<usize, usize>,
    /// Letter mode where every task's options are the bare IDs, else text.
    pub mode: Mode,
    /// Mean over tasks of 1 / n_options: a uniform guess's accuracy.
    pub chance: f64,
    /// The largest share of tasks whose gold answer is at one position.
    pub majority_class: f64,
    /// Position (0-based) that `majority_class` is about.
    pub majority_position: usize,
    /// The widest task's option count: the smallest `-np` llama-perplexity needs.
    pub min_parallel: usize,
    /// The bytes of the longest task: what bounds a task's memory.
    pub longest_task_bytes: u64,
    /// The longest task's index.
    pub longest_task: usize,
    /// The file's sha256, as hex: how manifests and logs name its content.
    pub sha256: String,
}

/// The two baselines a score must beat, over any set of tasks, as fractions.
/// Each is one division of whole numbers, so that five options everywhere
/// give a chance of 0.2, not a sum of fifths (0.19999999999999998).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Baselines {
    /// Mean over tasks of 1 / n_options: a uniform guess's accuracy.
    pub chance: f64,
    /// The largest share of tasks whose gold answer is at one position.
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

/// The running counts of [`Baselines`]: memory grows with the gold
/// positions and the distinct option counts, not the tasks.
#[derive(Debug, Clone, Default)]
pub struct BaselineCounter {
    n: usize,
    /// Option count → tasks with that many options.
    option_counts: BTreeMap<usize, usize>,
    gold_positions: Vec<usize>,
}

impl BaselineCounter {
    /// One more task of `options` options, its gold at `gold`.
    pub fn add(&mut self, options: usize, gold: Option<usize>) {
        self.n += 1;
        *self.option_counts.entry(options.max(1)).or_insert(0) += 1;
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

    /// The baselines of the tasks counted so far (0 for none).
    pub fn baselines(&self) -> Baselines {
        let (majority_position, majority) =
            self.gold_positions.iter().enumerate().fold((0, 0), |best, (k, &c)| if c > best.1 { (k, c) } else { best });
        let n = self.n.max(1) as f64;
        Baselines { chance: chance(&self.option_counts, self.n), majority_class: majority as f64 / n, majority_position }
    }
}

/// The mean of 1/k over `n` tasks whose option counts are tallied in
/// `counts`: Σ count·(L/k) ÷ (L·n) with L the counts' least common multiple,
/// in integers while they fit, else a sum of floats.
fn chance(counts: &BTreeMap<usize, usize>, n: usize) -> f64 {
    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let exact = (|| {
        let lcm = counts.keys().try_fold(1u128, |l, &k| (l / gcd(l, k as u128)).checked_mul(k as u128))?;
        // every key is at least 1 (add counts options.max(1))
        let sum = counts.iter().try_fold(0u128, |s, (&k, &c)| s.checked_add((lcm / k as u128).checked_mul(c as u128)?))?;
        Some(sum as f64 / lcm.checked_mul(n.max(1) as u128)? as f64)
    })();
    exact.unwrap_or_else(|| counts.iter().map(|(&k, &c)| c as f64 / k as f64).sum::<f64>() / n.max(1) as f64)
}

impl Summary {
    /// The summary of an opened (validated) task file.
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

#[cfg(test)]
mod tests {
    use super::Baselines;

    #[test]
    fn chance_is_one_division() {
        let chance = |counts: &[usize]| Baselines::from_tasks(counts.iter().map(|&k| (k, Some(0)))).chance;
        assert_eq!(chance(&[5; 6]), 0.2);
        assert_eq!(chance(&[4, 2]), 0.375);
        assert_eq!(chance(&[3, 3, 3]), 1.0 / 3.0);
        assert_eq!(chance(&[]), 0.0);
    }

    #[test]
    fn the_majority_class_is_the_largest_share_of_golds_at_one_position() {
        let b = Baselines::from_tasks([(4, Some(1)), (4, Some(1)), (4, Some(0)), (4, None)]);
        assert_eq!((b.majority_class, b.majority_position), (0.5, 1));
    }
}
