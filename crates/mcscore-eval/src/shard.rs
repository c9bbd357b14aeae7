//! One run split over N processes (`score --shard K/N`, one per array task of a
//! cluster scheduler) and their logs merged back into the log of one run.
//!
//! The partition is of the run's tasks (after any subset) in run order, into
//! N contiguous ranges cut where the running count of the tasks' bytes
//! (question and options: the text to decode, without a tokeniser) crosses
//! k/N of the total, so shards finish together and tasks that share a prefix
//! (a subject's few-shot preamble) mostly stay together. A shard finds its
//! range from the file alone and tokenises only that range, and records in
//! its header the rule, N and a hash of the whole run's task list, which
//! `merge` checks.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use mcscore_format::sha256_hex;

use crate::log::{read, Header, RunIdentity, ShardHeader, TaskRecord};
use crate::EvalError;
use crate::ShardError;

/// The partition rule's name, recorded in shard logs (a later rule gets a new name).
pub(crate) const RULE: &str = "contiguous-by-bytes";

/// Shard `index` (0-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0 (`K` of `--shard K/N`).
    pub index: usize,
    /// How many shards the run is split into (`N`).
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    /// `K/N`, 0 ≤ K < N.
    fn from_str(text: &str) -> Result<Shard, String> {
        let (k, n) = text.split_once('/').ok_or_else(|| format!("{text:?}: expected K/N, e.g. 0/4 (K counts from 0)"))?;
        let number = |s: &str, what: &str| s.trim().parse::<usize>().map_err(|_| format!("{text:?}: {what} {s:?} is not a whole number"));
        let (index, count) = (number(k, "K")?, number(n, "N")?);
        if count == 0 || index >= count {
            return Err(format!("{text:?}: need 0 <= K < N (K counts from 0)"));
        }
        Ok(Shard { index, count })
    }
}

/// Why a scheduler's environment names no shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardEnvError {
    /// A variable the shard is read from does not hold a whole number.
    #[error("{name}={value:?} is not a whole number")]
    NotANumber {
        /// The variable's name.
        name: &'static str,
        /// What it holds.
        value: String,
    },
    /// A Slurm array task's index without the array's size.
    #[error("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")]
    NoSlurmCount,
    /// The shard count given disagrees with the Slurm array's size.
    #[error("{asked} shards were asked for, but SLURM_ARRAY_TASK_COUNT={count}")]
    OtherCount {
        /// The shard count the caller gave.
        asked: usize,
        /// `SLURM_ARRAY_TASK_COUNT`.
        count: usize,
    },
    /// The array task's ID is below the array's first, so it has no shard index.
    #[error("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")]
    BelowMin {
        /// `SLURM_ARRAY_TASK_ID`.
        id: usize,
        /// `SLURM_ARRAY_TASK_MIN`.
        min: usize,
    },
    /// A Kubernetes Indexed Job's environment holds its index, not its count.
    #[error("JOB_COMPLETION_INDEX is set, but a Kubernetes job's environment holds no shard count")]
    NoKubernetesCount,
    /// Both schedulers' variables are set: which one runs this process is unclear.
    #[error("both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set")]
    Both,
    /// Neither scheduler's index is set: this process is not an array task.
    #[error("neither SLURM_ARRAY_TASK_ID (a Slurm array job) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set")]
    Neither,
    /// The index read is not below the shard count.
    #[error("shard {index} is not below the shard count {count} (are the array indices contiguous?)")]
    OutOfRange {
        /// The shard index read (from 0; Slurm's less `SLURM_ARRAY_TASK_MIN`).
        index: usize,
        /// The shard count.
        count: usize,
    },
}

impl Shard {
    /// Refuses a shard no run has: the index at or past the count, or no
    /// shards (a caller may build one by its fields).
    pub fn check(self) -> Result<Shard, ShardError> {
        if self.count == 0 || self.index >= self.count {
            return Err(ShardError::NoSuchShard { index: self.index, count: self.count });
        }
        Ok(self)
    }

    /// The shard a scheduler's array task scores, read from its environment
    /// (`env`, e.g. `|name| std::env::var(name).ok()`): a Slurm array job's
    /// `SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN` of
    /// `SLURM_ARRAY_TASK_COUNT`, or a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` of `count`. `count`, where given, must agree
    /// with Slurm's. A missing or inconsistent variable is an error, never
    /// shard 0 of 1.
    pub fn from_env(count: Option<usize>, env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, ShardEnvError> {
        let number = |name: &'static str| -> Result<Option<usize>, ShardEnvError> {
            env(name).map(|value| value.trim().parse::<usize>().map_err(|_| ShardEnvError::NotANumber { name, value })).transpose()
        };
        let (index, count) = match (number("SLURM_ARRAY_TASK_ID")?, number("JOB_COMPLETION_INDEX")?) {
            (Some(id), None) => {
                let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
                let slurm_count = number("SLURM_ARRAY_TASK_COUNT")?.ok_or(ShardEnvError::NoSlurmCount)?;
                if let Some(asked) = count.filter(|&n| n != slurm_count) {
                    return Err(ShardEnvError::OtherCount { asked, count: slurm_count });
                }
                (id.checked_sub(min).ok_or(ShardEnvError::BelowMin { id, min })?, slurm_count)
            }
            (None, Some(index)) => (index, count.ok_or(ShardEnvError::NoKubernetesCount)?),
            (Some(_), Some(_)) => return Err(ShardEnvError::Both),
            (None, None) => return Err(ShardEnvError::Neither),
        };
        if index >= count {
            return Err(ShardEnvError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// sha256 of task indices in run order, written as decimal numbers joined by commas.
pub fn run_sha256(tasks: impl IntoIterator<Item = usize>) -> String {
    let text: Vec<String> = tasks.into_iter().map(|t| t.to_string()).collect();
    sha256_hex(text.join(",").as_bytes())
}

/// The ranges of `costs.len()` tasks (each costing `costs[i]`, its bytes)
/// that `count` shards score: contiguous, each cut at the first task whose
/// preceding costs reach k/`count` of the total, and never empty.
pub fn partition(costs: &[usize], count: usize) -> Result<Vec<Range<usize>>, EvalError> {
    let n = costs.len();
    if count > n {
        return Err(EvalError::Shard(ShardError::TooManyShards { shards: count, tasks: n }));
    }
    let total: u128 = costs.iter().map(|&t| t as u128).sum();
    let mut before = Vec::with_capacity(n);
    let mut sum = 0u128;
    for &t in costs {
        before.push(sum);
        sum += t as u128;
    }
    let mut starts = vec![0usize];
    for k in 1..count {
        let wanted = before.partition_point(|&b| b * (count as u128) < (k as u128) * total);
        // At least one task per shard, and one left for each shard after it.
        // 1 <= k < count <= n (checked above): starts holds k entries, and n - (count - k) does not underflow
        let start = wanted.max(starts[k - 1] + 1).min(n - (count - k));
        starts.push(start);
    }
    starts.push(n);
    Ok(starts.windows(2).map(|w| w[0]..w[1]).collect())
}

/// Shard logs merged: the header and records of one run over every task.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Merged {
    /// The first shard's header, as the whole run's: no shard, and `tasks` the run's.
    pub header: Header,
    /// Every shard's records, in run order.
    pub records: Vec<TaskRecord>,
    /// How many shards were merged (the run's shard count).
    pub shards: usize,
    /// Tasks in the file the run picked from.
    pub file_tasks: usize,
}

impl Merged {
    /// The tasks that `norm` got right, of all the run's; acc_pmi panics where the run has no PMI pass.
    pub fn accuracy(&self, norm: mcscore_metrics::Normalisation) -> mcscore_metrics::Proportion {
        crate::log::accuracy(&self.records, norm)
    }

    /// Chance and majority-class accuracy over the run's tasks.
    pub fn baselines(&self) -> mcscore_format::Baselines {
        mcscore_format::Baselines::from_tasks(self.records.iter().map(|r| (r.options.len(), r.gold)))
    }

    /// Options over all tasks (llama-perplexity's chance line).
    pub fn total_options(&self) -> usize {
        self.records.iter().map(|r| r.options.len()).sum()
    }
}

/// Reads the complete logs of every shard of one run and merges them in run
/// order, refusing logs of different runs, incomplete shards, a shard given
/// twice or missing, and a task in two shards, each by name.
pub fn merge(paths: &[PathBuf]) -> Result<Merged, EvalError> {
    let mut shards: Vec<(PathBuf, Header, ShardHeader, Vec<TaskRecord>)> = Vec::new();
    for path in paths {
        let contents = read(path)?;
        let shard = contents.header.shard.clone().ok_or_else(|| EvalError::Shard(ShardError::NotAShard { path: path.clone() }))?;
        if let Some(why) = contents.unfinished() {
            return Err(EvalError::Shard(ShardError::ShardIncomplete { path: path.clone(), shard: shard.index, why }));
        }
        if let Some((first, first_header, ..)) = shards.first() {
            if let Some(m) = RunIdentity::of_run(first_header).mismatch(&RunIdentity::of_run(&contents.header)) {
                let (field, log, now) = (m.field, m.was, m.now);
                return Err(EvalError::Shard(ShardError::OtherRun {
                    path: path.clone(),
                    shard: shard.index,
                    field,
                    first: first.clone(),
                    log,
                    now,
                }));
            }
        }
        if let Some((other, ..)) = shards.iter().find(|s| s.2.index == shard.index) {
            return Err(EvalError::Shard(ShardError::ShardTwice { shard: shard.index, first: other.clone(), second: path.clone() }));
        }
        shards.push((path.clone(), contents.header, shard, contents.records));
    }
    let Some((_, first_header, first_shard, _)) = shards.first() else { return Err(EvalError::NoLogs) };
    let count = first_shard.count;
    check_all_present(count, shards.iter().map(|s| s.2.index))?;
    let mut header = first_header.clone();
    let run = first_shard.clone();
    shards.sort_by_key(|s| s.2.index);
    let mut seen: std::collections::HashMap<usize, &Path> = std::collections::HashMap::new();
    for (path, _, _, records) in &shards {
        for record in records {
            if let Some(first) = seen.insert(record.task, path) {
                return Err(EvalError::Shard(ShardError::TaskInTwoShards {
                    task: record.task,
                    first: first.to_owned(),
                    second: path.clone(),
                }));
            }
        }
    }
    let held: usize = shards.iter().map(|s| s.3.len()).sum();
    if held != run.run_tasks {
        let each: Vec<String> =
            shards.iter().take(20).map(|s| format!("shard {} holds {} ({})", s.2.index, s.3.len(), s.0.display())).collect();
        let more = if shards.len() > 20 { format!(" and {} more", shards.len() - 20) } else { String::new() };
        let why = format!("they hold {held} tasks, not the run's {}: {}{more}", run.run_tasks, each.join(", "));
        return Err(EvalError::Shard(ShardError::ShardsOtherTasks { why }));
    }
    let records: Vec<TaskRecord> = shards.into_iter().flat_map(|s| s.3).collect();
    if run_sha256(records.iter().map(|r| r.task)) != run.run_sha256 {
        let why = format!(
            "they hold {held} tasks, as many as the run, but not its task list (the headers' run_sha256): a task line or header was edited"
        );
        return Err(EvalError::Shard(ShardError::ShardsOtherTasks { why }));
    }
    header.shard = None;
    header.tasks = records.len();
    Ok(Merged { header, records, shards: count, file_tasks: run.file_tasks })
}

/// Refuses a set of shards (their indices, each below `count` and given
/// once) that lacks any of `count`, listing the first missing ones: the
/// count comes from a file, so nothing here grows with it.
pub(crate) fn check_all_present(count: usize, indices: impl Iterator<Item = usize>) -> Result<(), EvalError> {
    const LISTED: usize = 20;
    let mut present: Vec<usize> = indices.collect();
    present.sort_unstable();
    present.dedup();
    if present.len() == count {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut next = 0;
    for &index in present.iter().chain(std::iter::once(&count)) {
        // missing stops at LISTED: take caps it, and the loop breaks there
        missing.extend((next..index).take(LISTED - missing.len()));
        next = index + 1;
        if missing.len() == LISTED {
            break;
        }
    }
    // present holds distinct indices below count (both callers check each index)
    Err(EvalError::Shard(ShardError::ShardsMissing { missing, absent: count - present.len(), count }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_built_by_its_fields_is_checked() {
        assert_eq!(Shard { index: 1, count: 2 }.check().ok(), Some(Shard { index: 1, count: 2 }));
        for (index, count) in [(2, 2), (1, 0), (0, 0)] {
            assert!(matches!(Shard { index, count }.check(), Err(ShardError::NoSuchShard { .. })), "{index}/{count}");
        }
    }

    fn auto(vars: &[(&str, &str)], count: Option<usize>) -> Result<Shard, ShardEnvError> {
        Shard::from_env(count, &|name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn a_shard_is_read_from_slurm_or_kubernetes_and_never_guessed() {
        let slurm = [("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")];
        assert_eq!(auto(&slurm, None), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(auto(&slurm, Some(4)), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(auto(&slurm, Some(5)), Err(ShardEnvError::OtherCount { asked: 5, count: 4 }));
        assert_eq!(auto(&slurm[..1], None), Err(ShardEnvError::NoSlurmCount));
        assert_eq!(
            auto(&[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "2")], None),
            Err(ShardEnvError::BelowMin { id: 0, min: 1 })
        );
        assert_eq!(auto(&[("JOB_COMPLETION_INDEX", "0")], Some(2)), Ok(Shard { index: 0, count: 2 }));
        assert_eq!(auto(&[("JOB_COMPLETION_INDEX", "0")], None), Err(ShardEnvError::NoKubernetesCount));
        assert_eq!(auto(&[("JOB_COMPLETION_INDEX", "2")], Some(2)), Err(ShardEnvError::OutOfRange { index: 2, count: 2 }));
        assert!(matches!(
            auto(&[("JOB_COMPLETION_INDEX", "x")], Some(2)),
            Err(ShardEnvError::NotANumber { name: "JOB_COMPLETION_INDEX", .. })
        ));
        assert_eq!(auto(&[], Some(2)), Err(ShardEnvError::Neither));
        assert_eq!(auto(&[("JOB_COMPLETION_INDEX", "0"), ("SLURM_ARRAY_TASK_ID", "0")], Some(2)), Err(ShardEnvError::Both));
    }

    #[test]
    fn shards_parse_as_k_of_n() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["4/4", "1/0", "3", "a/4", "-1/4", "1/4/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn partitions_are_contiguous_balanced_by_cost_and_never_empty() {
        assert_eq!(partition(&[10; 8], 4).unwrap(), vec![0..2, 2..4, 4..6, 6..8]);
        // One long task fills its own shard; the rest share by cost.
        assert_eq!(partition(&[100, 10, 10, 10, 10], 2).unwrap(), vec![0..1, 1..5]);
        assert_eq!(partition(&[1, 1, 1, 100], 3).unwrap(), vec![0..2, 2..3, 3..4]);
        assert_eq!(partition(&[5, 5, 5], 3).unwrap(), vec![0..1, 1..2, 2..3]);
        assert_eq!(partition(&[7], 1).unwrap(), vec![0..1]);
        assert!(matches!(partition(&[1, 2], 3), Err(EvalError::Shard(ShardError::TooManyShards { shards: 3, tasks: 2 }))));
        let tokens: Vec<usize> = (0..1000).map(|i| 20 + (i * 37) % 200).collect();
        let ranges = partition(&tokens, 7).unwrap();
        let sums: Vec<usize> = ranges.iter().map(|r| tokens[r.clone()].iter().sum()).collect();
        let (min, max) = (sums.iter().min().unwrap(), sums.iter().max().unwrap());
        assert!(max - min <= 2 * 220, "{sums:?}");
        assert_eq!(ranges.last().unwrap().end, 1000);
    }
}
