//! The conventions of the results JSON that `score`, `merge` and `report`
//! print (docs/formats.md, "Results JSON"): accuracies and baselines as
//! fractions, as lm-evaluation-harness writes them; metrics in objects keyed
//! by name; a `schema_version` that a change of meaning raises.

use serde::ser::{Serialize, SerializeMap, Serializer};

use std::path::Path;

use mcscore_metrics::{Normalisation, Proportion};

use crate::compare::Groups;
use crate::log::{accuracy, normalisations, TaskRecord};
use crate::EvalError;

/// The results JSON's version. 1 (unnamed in the output) gave accuracies in
/// percent and `report`'s metrics as `[name, value]` pairs.
pub const SCHEMA_VERSION: u32 = 2;

/// `(name, value)` pairs written as one JSON object keyed by name, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ByName<T>(pub Vec<(String, T)>);

impl<T> ByName<T> {
    pub fn get(&self, name: &str) -> Option<&T> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = &(String, T)> {
        self.0.iter()
    }
}

impl<T: Serialize> Serialize for ByName<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// One normalisation's accuracy over a run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Accuracy {
    /// Right picks ÷ tasks.
    pub accuracy: f64,
    /// Its standard error, √(p(1−p)/(n−1)); none below 2 tasks.
    pub stderr: Option<f64>,
    /// Right picks.
    pub correct: usize,
}

/// Every normalisation's accuracy over `records`.
pub fn accuracies(records: &[TaskRecord]) -> ByName<Accuracy> {
    ByName(
        normalisations(records)
            .iter()
            .map(|&norm| {
                let a = accuracy(records, norm);
                (norm.name().to_owned(), Accuracy { accuracy: a.fraction(), stderr: a.stderr(), correct: a.successes })
            })
            .collect(),
    )
}

/// What a run must beat, as fractions.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Baselines {
    /// The mean over tasks of 1 ÷ options: a uniform guess's accuracy.
    pub chance: f64,
    /// The largest share of tasks whose gold is at one position.
    pub majority_class: f64,
    /// That position (0-based).
    pub majority_position: usize,
}

/// The baselines of `records`, each one division of whole numbers, so
/// that five options print as 0.2, not as the sum of 1/5s (0.19999999999999998).
pub fn baselines(records: &[TaskRecord]) -> Baselines {
    let n = records.len().max(1) as f64;
    let chance = chance(records.iter().map(|r| r.options.len().max(1)));
    let position = mcscore_format::Baselines::from_tasks(records.iter().map(|r| (r.options.len(), r.gold))).majority_position;
    let majority = records.iter().filter(|r| r.gold == Some(position)).count();
    Baselines { chance, majority_class: majority as f64 / n, majority_position: position }
}

/// One group's (or category's) accuracy over a run, as fractions with the
/// 95 % Wilson interval (a subject of MMLU has 5 to 300 tasks: its interval
/// is the point).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupAccuracy {
    pub name: String,
    /// The group's category (MMLU's stem, humanities, …), where recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub tasks: usize,
    pub correct: usize,
    pub accuracy: f64,
    pub low: f64,
    pub high: f64,
}

/// A run's accuracy per group and per category.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupAccuracies {
    /// Where the groups come from (the manifest entry or the groups file).
    pub source: String,
    pub normalisation: &'static str,
    /// Per category, in order of first appearance; empty where the groups have none.
    pub categories: Vec<GroupAccuracy>,
    /// Per group, in order of first appearance.
    pub groups: Vec<GroupAccuracy>,
}

/// The accuracy under `norm` of each group and category of `records` (read
/// from `log`); refused where the groups do not reach a task.
pub fn group_accuracies(records: &[TaskRecord], groups: &Groups, norm: Normalisation, log: &Path) -> Result<GroupAccuracies, EvalError> {
    groups.check_reach(records, log)?;
    // (name, category, tasks, right) in order of first appearance.
    fn tally(rows: &mut Vec<(String, Option<String>, usize, usize)>, name: &str, category: Option<&str>, right: bool) {
        let at = match rows.iter().position(|r| r.0 == name) {
            Some(at) => at,
            None => {
                rows.push((name.to_owned(), category.map(str::to_owned), 0, 0));
                rows.len() - 1
            }
        };
        rows[at].2 += 1;
        rows[at].3 += usize::from(right);
    }
    let (mut by_group, mut by_category) = (Vec::new(), Vec::new());
    for record in records {
        let name = groups.name_of(record.task).unwrap_or_default();
        let category = groups.category_of(name);
        let right = record.correct.get(norm);
        tally(&mut by_group, name, category, right);
        if let Some(category) = category {
            tally(&mut by_category, category, None, right);
        }
    }
    let rows = |rows: Vec<(String, Option<String>, usize, usize)>| {
        rows.into_iter()
            .map(|(name, category, tasks, correct)| {
                let p = Proportion { successes: correct, n: tasks };
                let (low, high) = p.wilson();
                GroupAccuracy { name, category, tasks, correct, accuracy: p.fraction(), low, high }
            })
            .collect()
    };
    Ok(GroupAccuracies { source: groups.source.clone(), normalisation: norm.name(), categories: rows(by_category), groups: rows(by_group) })
}

/// The mean of 1/k over option counts `counts`: Σ (L/k) ÷ (L·n) with L the
/// counts' least common multiple, in integers while they fit.
fn chance(counts: impl Iterator<Item = usize> + Clone) -> f64 {
    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let exact = (|| {
        let lcm = counts.clone().try_fold(1u128, |l, k| (l / gcd(l, k as u128)).checked_mul(k as u128))?;
        let (sum, n) = counts.clone().try_fold((0u128, 0u128), |(s, n), k| Some((s.checked_add(lcm / k as u128)?, n + 1)))?;
        Some(sum as f64 / (lcm.checked_mul(n.max(1))?) as f64)
    })();
    exact.unwrap_or_else(|| {
        let (sum, n) = counts.fold((0.0, 0usize), |(s, n), k| (s + 1.0 / k as f64, n + 1));
        sum / n.max(1) as f64
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn chance_is_one_division() {
        assert_eq!(super::chance([5usize; 6].into_iter()), 0.2);
        assert_eq!(super::chance([4usize, 2].into_iter()), 0.375);
        assert_eq!(super::chance([3usize, 3, 3].into_iter()), 1.0 / 3.0);
        assert_eq!(super::chance(std::iter::empty()), 0.0);
    }
}
