//! The conventions of the results JSON that `score`, `merge` and `report`
//! print (docs/formats.md, "Results JSON"): accuracies and baselines as
//! fractions, as lm-evaluation-harness writes them; metrics in objects keyed
//! by name; a `schema_version` that a change of meaning raises.

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::log::{accuracy, normalisations, TaskRecord};

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
