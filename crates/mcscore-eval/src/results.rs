//! The conventions of the results JSON that `score`, `merge`, `report`,
//! `compare` and `sweep` print (docs/formats.md, "Results JSON"): accuracies
//! and baselines as fractions, as lm-evaluation-harness writes them; metrics
//! in objects keyed by name; a `schema_version` that a change of meaning
//! raises. `compare` and `sweep` compute in accuracy points, as their text
//! prints them; [`in_fractions`] turns their values into this JSON.

use serde::ser::{Serialize, SerializeMap, Serializer};

use std::path::Path;

use mcscore_metrics::{Normalisation, Proportion};

use crate::compare::Groups;
use crate::log::{accuracy, normalisations, TaskRecord};
use crate::EvalError;

/// The results JSON's version. 1 (unnamed in the output) gave accuracies in
/// percent and `report`'s metrics as `[name, value]` pairs.
pub const SCHEMA_VERSION: u32 = 2;

/// What `score --json` prints of a run (docs/schema/score.schema.json): what
/// was scored and how, accuracies and baselines as fractions, accuracy per
/// group where the file's groups are known, tokens and seconds; `timings`
/// and `memory` where asked for.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct RunSummary<'a> {
    pub schema_version: u32,
    pub model: &'a str,
    pub model_sha256: &'a str,
    pub model_sha256_cached: bool,
    pub file: &'a str,
    pub file_sha256: &'a str,
    pub tasks: usize,
    /// llama-perplexity's flag for the mode, without its dashes.
    pub mode: &'static str,
    pub selection: Option<usize>,
    pub limit: Option<usize>,
    pub lenient: bool,
    pub chat: Option<&'a crate::log::ChatHeader>,
    pub settings: &'a mcscore_engine::Settings,
    pub n_ctx: u64,
    /// The run's KV-cache fills.
    pub fills: usize,
    /// `fills` under its old name, kept for schema 2 only: a fill is not a
    /// `llama_decode` call (`timings.scoring.decodes` counts those).
    pub decodes: usize,
    pub metrics: ByName<Accuracy>,
    pub groups: Option<GroupAccuracies>,
    pub chance: f64,
    pub majority_class: f64,
    pub tokens_evaluated: usize,
    pub tokens_unshared: usize,
    pub tokens_padding: usize,
    pub resumed_tasks: usize,
    pub scoring_seconds: f64,
    pub wall_seconds: f64,
    pub timings: Option<&'a crate::Timings>,
    pub memory: Option<&'a mcscore_engine::MemoryReport>,
    /// Tasks longer than the model's training context; `null` when none are.
    pub beyond_training: Option<crate::BeyondTraining>,
}

impl<'a> RunSummary<'a> {
    /// The summary of `outcome`, scored with `settings` (`lenient`: read as
    /// llama.cpp reads a file that fails validation), with its `groups`;
    /// `with_timings` adds the phase profile and memory.
    pub fn new(
        outcome: &'a crate::ScoreOutcome,
        settings: &'a mcscore_engine::Settings,
        lenient: bool,
        groups: Option<GroupAccuracies>,
        with_timings: bool,
    ) -> RunSummary<'a> {
        let (header, tokens) = (&outcome.header, outcome.tokens);
        let fractions = baselines(&outcome.records);
        RunSummary {
            schema_version: SCHEMA_VERSION,
            model: &header.model,
            model_sha256: &header.model_sha256,
            model_sha256_cached: header.model_sha256_cached,
            file: &header.file,
            file_sha256: &header.file_sha256,
            tasks: outcome.records.len(),
            mode: header.kind().flag().trim_start_matches('-'),
            selection: header.selection,
            limit: header.limit,
            lenient,
            chat: header.chat.as_ref(),
            settings,
            n_ctx: outcome.n_ctx,
            fills: outcome.planned_fills,
            decodes: outcome.planned_fills,
            metrics: accuracies(&outcome.records),
            groups,
            chance: fractions.chance,
            majority_class: fractions.majority_class,
            tokens_evaluated: tokens.decoded,
            tokens_unshared: tokens.unshared,
            tokens_padding: tokens.padding,
            resumed_tasks: outcome.resumed,
            scoring_seconds: outcome.scoring_seconds,
            wall_seconds: outcome.wall_seconds,
            timings: with_timings.then_some(&outcome.timings),
            memory: with_timings.then_some(&outcome.memory),
            beyond_training: outcome.beyond_training,
        }
    }
}

/// What `merge --json` prints of shards merged into their run: its
/// identity and accuracies as `score`'s summary gives them, and where the
/// merged log was written.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct MergedSummary<'a> {
    pub schema_version: u32,
    pub model: &'a str,
    pub model_sha256: &'a str,
    pub file: &'a str,
    pub file_sha256: &'a str,
    pub tasks: usize,
    pub shards: usize,
    pub mode: &'static str,
    pub selection: Option<usize>,
    pub limit: Option<usize>,
    /// The settings as the shards' logs record them.
    pub settings: &'a str,
    pub metrics: ByName<Accuracy>,
    pub chance: f64,
    pub majority_class: f64,
    /// The merged log, where one was written.
    pub log: Option<&'a Path>,
}

impl<'a> MergedSummary<'a> {
    pub fn new(merged: &'a crate::shard::Merged, log: Option<&'a Path>) -> MergedSummary<'a> {
        let header = &merged.header;
        let fractions = baselines(&merged.records);
        MergedSummary {
            schema_version: SCHEMA_VERSION,
            model: &header.model,
            model_sha256: &header.model_sha256,
            file: &header.file,
            file_sha256: &header.file_sha256,
            tasks: merged.records.len(),
            shards: merged.shards,
            mode: header.kind().flag().trim_start_matches('-'),
            selection: header.selection,
            limit: header.limit,
            settings: &header.settings,
            metrics: accuracies(&merged.records),
            chance: fractions.chance,
            majority_class: fractions.majority_class,
            log,
        }
    }
}

/// The fields `compare`, `compare --until-decided` and `sweep` hold in
/// accuracy points: a number, a list of numbers (an interval, per rotation),
/// or an object whose [`POINT_PARTS`] are (a paired difference, a spread).
const POINT_FIELDS: &[&str] = &[
    "accuracy",
    "accuracy_interval",
    "accuracy_by_rotation",
    "circular_accuracy",
    "circular_interval",
    "base_accuracy",
    "other_accuracy",
    "accuracy_before",
    "accuracy_after",
    "difference",
    "interval",
    "tost_interval",
    "margin",
    "chance",
    "rstd",
    "rstd_before",
    "rstd_after",
    "accuracy_across_formats",
    "circular_accuracy_across_formats",
];

/// The parts in points of an object under a [`POINT_FIELDS`] name.
const POINT_PARTS: &[&str] = &["estimate", "interval", "tost_interval", "mean", "std", "min", "max"];

/// `value` serialised as the results JSON: every field in accuracy points
/// ([`POINT_FIELDS`]) as a fraction, and `schema_version` first.
pub fn in_fractions(value: &impl Serialize) -> Result<serde_json::Value, serde_json::Error> {
    let mut json = serde_json::to_value(value)?;
    scale_points(&mut json, &|x| x / 100.0);
    let serde_json::Value::Object(fields) = json else { return Ok(json) };
    let mut versioned = serde_json::Map::with_capacity(fields.len() + 1);
    versioned.insert("schema_version".into(), SCHEMA_VERSION.into());
    versioned.extend(fields.into_iter().filter(|(k, _)| k != "schema_version"));
    Ok(serde_json::Value::Object(versioned))
}

/// A value of the results JSON (`schema_version` 2) back in accuracy points,
/// as the library computes: what [`in_fractions`] did, undone; a value
/// without `schema_version` (saved before it) is in points already.
pub(crate) fn in_points(mut json: serde_json::Value) -> serde_json::Value {
    if json.get("schema_version").is_some() {
        scale_points(&mut json, &|x| x * 100.0);
    }
    json
}

/// Maps every point field under `json` through `convert`.
fn scale_points(json: &mut serde_json::Value, convert: &dyn Fn(f64) -> f64) {
    use serde_json::Value;
    fn scale(value: &mut Value, convert: &dyn Fn(f64) -> f64) {
        match value {
            Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    *value = serde_json::Number::from_f64(convert(x)).map_or(Value::Null, Value::Number);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| scale(v, convert)),
            Value::Object(parts) => {
                for (name, part) in parts.iter_mut() {
                    if POINT_PARTS.contains(&name.as_str()) {
                        scale(part, convert);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    match json {
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if POINT_FIELDS.contains(&name.as_str()) {
                    scale(field, convert);
                } else {
                    scale_points(field, convert);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scale_points(v, convert)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
        // callers ask acc_pmi only of logs that hold it (report refuses NoPmi; score asks acc_norm)
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
        // every count is at least 1: baselines passes options.len().max(1)
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

    #[test]
    fn points_become_fractions_by_field_and_come_back() {
        let points = serde_json::json!({
            "tasks": 40,
            "margin": 2.0,
            "base": {"accuracy": 62.5, "accuracy_interval": [47.0, 75.8], "model": "m"},
            "others": [{
                "difference": {"estimate": -2.5, "interval": [-5.0, 0.0], "tost_interval": [-4.5, -0.5], "verdict": "different"},
                "agreement": 0.9,
                "kl_mean": {"estimate": 0.01, "low": 0.0, "high": 0.02},
                "clustered": {"shifts": [{"difference": 10.0, "interval": null, "mcnemar_p": 0.5}]}
            }],
            "accuracy_across_formats": {"mean": 50.0, "std": 5.0, "min": 45.0, "min_format": "a", "max": 55.0, "max_format": "b"}
        });
        let fractions = super::in_fractions(&points).unwrap();
        assert_eq!(fractions.as_object().unwrap().keys().next().map(String::as_str), Some("schema_version"));
        assert_eq!(fractions["schema_version"], 2);
        assert_eq!(fractions["margin"], 0.02);
        assert_eq!(fractions["base"]["accuracy"], 0.625);
        assert_eq!(fractions["base"]["accuracy_interval"], serde_json::json!([0.47, 0.758]));
        let other = &fractions["others"][0];
        assert_eq!(
            other["difference"],
            serde_json::json!({"estimate": -0.025, "interval": [-0.05, 0.0], "tost_interval": [-0.045, -0.005], "verdict": "different"})
        );
        // Shares, nats and p-values are not points.
        assert_eq!((&other["agreement"], &other["kl_mean"]), (&points["others"][0]["agreement"], &points["others"][0]["kl_mean"]));
        assert_eq!(other["clustered"]["shifts"][0], serde_json::json!({"difference": 0.1, "interval": null, "mcnemar_p": 0.5}));
        assert_eq!(fractions["accuracy_across_formats"]["min"], 0.45);
        assert_eq!(fractions["tasks"], 40);
        // Back in points, to within a rounding (0.55 × 100 is 55.00000000000001).
        let mut back = super::in_points(fractions);
        back.as_object_mut().unwrap().shift_remove("schema_version");
        fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
            use serde_json::Value;
            match (a, b) {
                (Value::Number(x), Value::Number(y)) => {
                    (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() <= 1e-12 * y.as_f64().unwrap().abs()
                }
                (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| close(x, y)),
                (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().zip(y).all(|((k, x), (l, y))| k == l && close(x, y)),
                _ => a == b,
            }
        }
        assert!(close(&back, &points), "{back}");
        // A value saved before the version is in points already.
        assert_eq!(super::in_points(points.clone()), points);
    }
}
