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
pub const SCHEMA_VERSION: u32 = 3;

/// What `score --json` prints of a run (docs/schema/score.schema.json): what
/// was scored and how, accuracies and baselines as fractions, accuracy per
/// group where the file's groups are known, tokens and seconds; `timings`
/// and `memory` where asked for.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct RunSummary<'a> {
    /// The results JSON's version (`SCHEMA_VERSION`): it goes up when a key changes meaning or goes away.
    pub schema_version: u32,
    /// The model's path as given (for people: the run is identified by `model_sha256`).
    pub model: &'a str,
    /// The model file's sha256, as lowercase hex.
    pub model_sha256: &'a str,
    /// Whether `model_sha256` came from the hash cache (keyed by the model's path, size and modification
    /// time) rather than a read of the model.
    pub model_sha256_cached: bool,
    /// The task file's path as given (for people: the run is identified by `file_sha256`).
    pub file: &'a str,
    /// The task file's sha256, as lowercase hex.
    pub file_sha256: &'a str,
    /// Tasks scored, resumed ones included: every task of the run unless it ended early.
    pub tasks: usize,
    /// The mode scored (llama-perplexity's flag without its dashes).
    pub mode: crate::log::TaskKind,
    /// The subset asked for (`--multiple-choice-tasks N` and its kin, or HellaSwag's default of 400),
    /// picked as llama-perplexity picks; `null` for every task. A subset of 0, or of more tasks than
    /// the file holds, scores every task.
    pub selection: Option<usize>,
    /// `--limit N`: the file's first N tasks, or each group's (`limit_per_group`), in file order;
    /// `null` without it.
    pub limit: Option<usize>,
    /// Whether `limit` counted the first N tasks of each group (lm-eval's meaning, where the
    /// file's manifest records groups) rather than of the file.
    pub limit_per_group: bool,
    /// Whether the file was read as llama.cpp reads one that fails validation (`--lenient`).
    pub lenient: bool,
    /// The chat template the tasks were scored inside, as the log's header records it; `null` without one.
    pub chat: Option<&'a crate::log::ChatHeader>,
    /// The engine settings the run scored with (`-np`, `-b`, `-t`, `-tb`, `-ngl`, flash attention),
    /// as an object.
    pub settings: &'a mcscore_engine::Settings,
    /// The KV-cache context allocated, in tokens: what the run's largest fill holds with its
    /// padding, rounded up to 256.
    pub n_ctx: u64,
    /// The run's KV-cache fills (not `llama_decode` calls:
    /// `timings.scoring.decodes` counts those).
    pub fills: usize,
    /// The accuracy under each normalisation, keyed by name in the order `acc`, `acc_norm`,
    /// `acc_char`, `acc_byte`, then `acc_pmi` where every task has it (`--pmi`).
    pub metrics: ByName<Accuracy>,
    /// The accuracy per group and category under acc_norm, where the file's groups are known (MMLU's
    /// subjects); `null` otherwise.
    pub groups: Option<GroupAccuracies>,
    /// A uniform guess's accuracy over the tasks scored, as a fraction: the mean over tasks of 1 ÷ its options.
    pub chance: f64,
    /// The largest share of the tasks scored whose gold is at one option position, as a fraction:
    /// what always picking that position scores.
    pub majority_class: f64,
    /// Tokens this process decoded, padding aside: a fill's shared tokens once, those reused from the
    /// previous fill's cache not at all. Resumed tasks are not counted.
    pub tokens_evaluated: usize,
    /// Tokens that scoring each of this process's tasks on its own would decode (its prefix once,
    /// each option's tokens but the last): against `tokens_evaluated`, what sharing saved.
    pub tokens_unshared: usize,
    /// Scratch tokens decoded to fill the last micro-batch of each fill (the batch rule), beside
    /// `tokens_evaluated`.
    pub tokens_padding: usize,
    /// Tasks taken from the log (`--resume`) rather than scored by this process.
    pub resumed_tasks: usize,
    /// Seconds this process spent scoring the tasks' fills; preparation and acc_pmi's unconditional
    /// pass are not counted.
    pub scoring_seconds: f64,
    /// Seconds from the job's start (reading the task file) to its end: preparation (loading the model
    /// where the job loads it, tokenising, hashing) and scoring.
    pub wall_seconds: f64,
    /// Where the run's time went, phase by phase, in seconds; `null` unless asked for (`--timings`).
    pub timings: Option<&'a crate::Timings>,
    /// Where the run's memory went (llama.cpp's buffers, the process's resident pages), in bytes;
    /// `null` unless asked for (`--timings`).
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
            limit_per_group: header.limit_per_group,
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
    /// The results JSON's version (`SCHEMA_VERSION`): it goes up when a key changes meaning or goes away.
    pub schema_version: u32,
    /// The model's path as the first shard's header gives it (for people: the run is identified by
    /// `model_sha256`).
    pub model: &'a str,
    /// The model file's sha256, as lowercase hex.
    pub model_sha256: &'a str,
    /// The task file's path as the first shard's header gives it (for people: the run is identified
    /// by `file_sha256`).
    pub file: &'a str,
    /// The task file's sha256, as lowercase hex.
    pub file_sha256: &'a str,
    /// Tasks of the merged run: every shard's together.
    pub tasks: usize,
    /// Shard logs merged (the run's shard count).
    pub shards: usize,
    /// The mode scored (llama-perplexity's flag without its dashes).
    pub mode: crate::log::TaskKind,
    /// The subset the run asked for, as in [`RunSummary::selection`]; `null` for every task.
    pub selection: Option<usize>,
    /// `--limit N`: the file's first N tasks, or each group's (`limit_per_group`), in file order;
    /// `null` without it.
    pub limit: Option<usize>,
    /// Whether `limit` counted the first N tasks of each group (lm-eval's meaning, where the
    /// file's manifest records groups) rather than of the file.
    pub limit_per_group: bool,
    /// What the shards scored with that changes a number
    /// ([`crate::log::Header::settings`]).
    pub settings: String,
    /// The accuracy under each normalisation over the merged run, keyed by name, as in
    /// [`RunSummary::metrics`].
    pub metrics: ByName<Accuracy>,
    /// A uniform guess's accuracy over the run's tasks, as a fraction: the mean over tasks of 1 ÷ its options.
    pub chance: f64,
    /// The largest share of the run's tasks whose gold is at one option position, as a fraction.
    pub majority_class: f64,
    /// The merged log, where one was written.
    pub log: Option<&'a Path>,
}

impl<'a> MergedSummary<'a> {
    /// The summary of the `merged` shards, with the path of the merged log where one was written.
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
            limit_per_group: header.limit_per_group,
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
    /// The value named `name`, if there is one (the first, were a name there twice).
    pub fn get(&self, name: &str) -> Option<&T> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The `(name, value)` pairs, in order.
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
    /// The group's name (an MMLU subject), or the category's in a category's row.
    pub name: String,
    /// The group's category (MMLU's stem, humanities, …), where recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Tasks of the run in the group (or category).
    pub tasks: usize,
    /// Of those, the tasks right under the normalisation of the `GroupAccuracies` that holds this row.
    pub correct: usize,
    /// `correct` ÷ `tasks`, as a fraction.
    pub accuracy: f64,
    /// The lower bound of the 95 % Wilson interval of `accuracy`, as a fraction.
    pub low: f64,
    /// The upper bound of the 95 % Wilson interval of `accuracy`, as a fraction.
    pub high: f64,
}

/// A run's accuracy per group and per category.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct GroupAccuracies {
    /// Where the groups come from (the manifest entry or the groups file).
    pub source: String,
    /// The normalisation whose picks are counted (`acc_norm` for `score`; `report`'s choice), by name.
    pub normalisation: &'static str,
    /// Per category, in order of first appearance; empty where the groups have none.
    pub categories: Vec<GroupAccuracy>,
    /// Per group, in order of first appearance.
    pub groups: Vec<GroupAccuracy>,
}

/// A run's accuracy per group and category under acc_norm, as `score` and
/// `merge` print it (`records` read from `log`, for messages).
pub fn group_accuracies_of(records: &[TaskRecord], groups: &Groups, log: &Path) -> Result<GroupAccuracies, EvalError> {
    group_accuracies(records, groups, Normalisation::AccNorm, log)
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
