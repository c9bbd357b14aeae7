//! The conventions of the results JSON that `score`, `merge`, `report`,
//! `compare` and `sweep` print (docs/formats.md, "Results JSON"): accuracies
//! and baselines as fractions, as lm-evaluation-harness writes them; metrics
//! in objects keyed by name; a `schema_version` that a change of meaning
//! raises. Every library type holds accuracies as fractions, so each
//! serialises as this JSON; text prints them in percent or points.

use serde::ser::{Serialize, SerializeMap, Serializer};

use std::path::Path;

use mcscore_metrics::{Normalisation, Proportion};

use crate::groups::Groups;
use crate::log::{accuracy, normalisations, TaskRecord};
use crate::EvalError;

/// The results JSON's version. 1 (unnamed in the output) gave accuracies in
/// percent and `report`'s metrics as `[name, value]` pairs; 2 gave
/// `compare`'s mode as llama-perplexity's flag and kept `score`'s `decodes`
/// beside `fills`.
pub(crate) const SCHEMA_VERSION: u32 = 3;

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
    /// The mode scored (llama-perplexity's flag without its dashes).
    pub mode: crate::log::TaskKind,
    pub selection: Option<usize>,
    pub limit: Option<usize>,
    pub lenient: bool,
    pub chat: Option<&'a crate::log::ChatHeader>,
    pub settings: &'a mcscore_engine::Settings,
    pub n_ctx: u64,
    /// The run's KV-cache fills (not `llama_decode` calls:
    /// `timings.scoring.decodes` counts those).
    pub fills: usize,
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
            mode: header.mode,
            selection: header.selection,
            limit: header.limit,
            lenient,
            chat: header.chat.as_ref(),
            settings,
            n_ctx: outcome.n_ctx,
            fills: outcome.planned_fills,
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
    pub mode: crate::log::TaskKind,
    pub selection: Option<usize>,
    pub limit: Option<usize>,
    /// What the shards scored with that changes a number
    /// ([`crate::log::Header::settings`]).
    pub settings: String,
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
            mode: header.mode,
            selection: header.selection,
            limit: header.limit,
            settings: header.settings(),
            metrics: accuracies(&merged.records),
            chance: fractions.chance,
            majority_class: fractions.majority_class,
            log,
        }
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

/// The baselines of `records`: chance and the majority class, as fractions.
pub fn baselines(records: &[TaskRecord]) -> mcscore_format::Baselines {
    mcscore_format::Baselines::from_tasks(records.iter().map(|r| (r.options.len(), r.gold)))
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

/// The accuracy per group and category of a scored run, as `score` gives
/// it: under acc_norm, the normalisation of llama-perplexity's number.
pub fn score_group_accuracies(outcome: &crate::ScoreOutcome, groups: &Groups, log: &Path) -> Result<GroupAccuracies, EvalError> {
    group_accuracies(&outcome.records, groups, Normalisation::AccNorm, log)
}

/// The accuracy under `norm` of each group and category of `records` (read
/// from `log`); refused where the groups do not reach a task.
pub(crate) fn group_accuracies(
    records: &[TaskRecord],
    groups: &Groups,
    norm: Normalisation,
    log: &Path,
) -> Result<GroupAccuracies, EvalError> {
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
