//! A sweep's results (per format, per model, and compared across models)
//! and the analysis that computes them from the log-probabilities alone.

use std::collections::HashSet;
use std::path::Path;

use mcscore_engine::Settings;
use mcscore_metrics::robustness::{self, PairRecord};
use mcscore_metrics::stats::std_dev;
use mcscore_metrics::{debias, first_max};
use serde::{Deserialize, Serialize};

use super::{items_sha256, Prompt, Scores, Sweep};
use crate::EvalError;

/// One model's accuracy (or circular accuracy) across the sweep's formats, as fractions: its mean,
/// its spread and the formats at either end.
#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct FormatSpread {
    /// The mean over formats, as a fraction.
    pub mean: f64,
    /// The sample standard deviation over formats (n − 1 in the denominator), as a fraction; 0 for one format.
    pub std: f64,
    /// The lowest value, as a fraction.
    pub min: f64,
    /// The format that scores `min` (the first in the sweep's order, on a tie).
    pub min_format: String,
    /// The highest value, as a fraction.
    pub max: f64,
    /// The format that scores `max` (the first in the sweep's order, on a tie).
    pub max_format: String,
}

pub(super) fn spread(values: &[f64], names: &[String]) -> FormatSpread {
    // The first minimum is the first maximum of the negated values.
    let argmin = first_max(values.iter().map(|v| -v));
    let argmax = first_max(values.iter().copied());
    FormatSpread {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        std: if values.len() > 1 { std_dev(values) } else { 0.0 },
        min: values[argmin],
        min_format: names[argmin].clone(),
        max: values[argmax],
        max_format: names[argmax].clone(),
    }
}

/// PriDe's debiasing in one format (`--pride`): the position prior estimated from the calibration
/// tasks, and the other tasks' accuracy and RStd before and after it, as fractions.
#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct Pride {
    /// The position prior, per ID position.
    pub prior: Vec<f64>,
    /// Tasks whose every rotation was scored to estimate the prior: a seeded share α of the swept
    /// tasks (rounded up), at least one and at most all but one.
    pub calibration_tasks: usize,
    /// Tasks debiased (scored in the original order only).
    pub debiased_tasks: usize,
    /// The debiased tasks' accuracy with the model's own picks, as a fraction.
    pub accuracy_before: f64,
    /// The debiased tasks' accuracy with PriDe's picks (the first maximum of each ID's log-probability
    /// less the log of its prior), as a fraction.
    pub accuracy_after: f64,
    /// RStd of the model's own picks on the debiased tasks, as a fraction (as `FormatResult::rstd`).
    pub rstd_before: f64,
    /// RStd of PriDe's picks on the debiased tasks, as a fraction.
    pub rstd_after: f64,
    /// How often each position (from 0) was picked among the debiased tasks
    /// before PriDe; empty where the saved sweep file holds none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub picks_before: Vec<usize>,
    /// How often each position (from 0) was picked among the debiased tasks after PriDe; empty where
    /// the saved sweep holds none, as `picks_before`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub picks_after: Vec<usize>,
}

/// One model's results in one format, accuracies as fractions: accuracy in source order and, with
/// circular evaluation, per rotation and under all rotations at once; where the picks fall and the
/// position bias they show; PriDe's where asked for.
#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct FormatResult {
    /// The format's name: ID set, delimiter and separator (`upper.dot.newline`).
    pub format: String,
    /// The share of tasks right with the options in source order.
    pub accuracy: f64,
    /// Its 95 % Wilson interval; absent where the saved sweep file holds
    /// none (such a file re-saves as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy_interval: Option<(f64, f64)>,
    /// The share right per rotation (rotation r puts option r first); with --circular.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accuracy_by_rotation: Vec<f64>,
    /// The share of tasks right under every rotation; with --circular.
    pub circular_accuracy: Option<f64>,
    /// Its 95 % Wilson interval; absent where the saved sweep file holds none.
    /// Wilson, not a bootstrap: a bootstrap of a proportion of 0 is [0, 0],
    /// while 0 of 20 items is as likely from a true 10 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circular_interval: Option<(f64, f64)>,
    /// How often each position was picked (all scored rotations with --circular).
    pub picks: Vec<usize>,
    /// Recall standard deviation across positions (recalls as fractions).
    pub rstd: f64,
    /// PIA, where every task has the same number of options.
    pub pia: Option<f64>,
    /// PriDe's debiasing in this format, with `--pride`; `null` without it.
    pub pride: Option<Pride>,
}

impl FormatResult {
    /// The mean of the accuracies by rotation; with --circular.
    pub fn rotation_mean(&self) -> Option<f64> {
        let n = self.accuracy_by_rotation.len();
        (n > 0).then(|| self.accuracy_by_rotation.iter().sum::<f64>() / n as f64)
    }

    /// Each position's share of the picks (0 where nothing was picked).
    pub fn pick_shares(&self) -> Vec<f64> {
        let total: usize = self.picks.iter().sum();
        self.picks.iter().map(|&c| c as f64 / total.max(1) as f64).collect()
    }
}

/// One model's sweep: what scoring its prompts decoded and took, its results per format, and their
/// spread across formats.
#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelSweep {
    /// The model's path as given.
    pub model: String,
    /// Prompts scored: every format of every task, under each rotation scored.
    pub prompts: usize,
    /// Tokens decoded, padding aside: a fill's shared tokens once, those reused from the previous
    /// fill's cache not at all.
    pub tokens_decoded: usize,
    /// What scoring every prompt on its own would decode.
    pub tokens_unshared: usize,
    /// Seconds from loading the model to the last prompt scored, tokenising and planning included;
    /// for merged shards, the sum of the shards' seconds.
    pub scoring_seconds: f64,
    /// The results per format, in the sweep's order of formats.
    pub formats: Vec<FormatResult>,
    /// The spread of the formats' `accuracy`.
    pub accuracy_across_formats: FormatSpread,
    /// The spread of the formats' `circular_accuracy`, with circular evaluation; `null` without it.
    pub circular_accuracy_across_formats: Option<FormatSpread>,
    /// The chat template the prompts were scored inside, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<crate::chat::ChatHeader>,
    /// The sha256 of the vision projector the images were read with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projector_sha256: Option<String>,
}

impl ModelSweep {
    /// Tokens decoded for each token that scoring every prompt on its own
    /// would decode: what sharing prefixes saved.
    pub fn sharing_ratio(&self) -> f64 {
        self.tokens_decoded as f64 / self.tokens_unshared.max(1) as f64
    }
}

/// Whether the models' ranking survives a change of format (a sweep of several models): where each
/// format ranks each model, which of each pair of models each format puts ahead, and how well the
/// formats' rankings agree.
#[derive(Serialize)]
#[non_exhaustive]
pub struct RankReversals {
    /// What models are ranked by.
    pub ranked_by: &'static str,
    /// Per model: how many formats rank it 1st, 2nd, ….
    pub rank_distribution: Vec<Vec<usize>>,
    /// Per pair of models (`a` before `b`, indices into `models` from 0): the formats where each is
    /// ahead, and those where they tie.
    pub pairs: Vec<PairRecord>,
    /// Share of (model pair, format pair) combinations whose order flips.
    pub reversal_rate: f64,
    /// The mean of Kendall's τ-b between the model rankings of two formats, over the `kendall_pairs`
    /// format pairs; NaN (`null` in JSON) where there are none.
    pub kendall_tau_mean: f64,
    /// The lowest of those τ; NaN (`null` in JSON) where there are none.
    pub kendall_tau_min: f64,
    /// Format pairs where τ is defined (neither format ties every model).
    pub kendall_pairs: usize,
}

/// A sweep's results, as `sweep --json` prints them and `--save-json` writes them: what was swept
/// and how, each model's sweep, and with several models their comparison.
#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct SweepReport {
    /// The results JSON's version ([`crate::results::SCHEMA_VERSION`]);
    /// below 2 (0 where none was saved), accuracies in points.
    #[serde(default)]
    pub schema_version: u32,
    /// The task file's path as given, or the benchmark's name.
    pub file: String,
    /// Tasks swept: the file's (or source's) every task, or the subset's.
    pub tasks: usize,
    /// The subset asked for (`--tasks N`, picked as llama-perplexity picks), as given; `null` for
    /// every task. A subset of 0, or of at least the file's tasks, sweeps every task.
    pub selection: Option<usize>,
    /// `--limit N`: the first N tasks of each group (`limit_per_group`) or of the file; `null` without it.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Whether `limit` counted each group's tasks (the file's manifest records groups).
    #[serde(default)]
    pub limit_per_group: bool,
    /// The formats' names, in order: the order of each model's `formats`.
    pub formats: Vec<String>,
    /// Whether each task was scored under every rotation of its options (circular evaluation, `--circular`).
    pub circular: bool,
    /// Whether each prompt has the line naming the IDs after the options (`--instruction`).
    pub instruction: bool,
    /// PriDe's calibration share α (0 < α < 1), with `--pride`; `null` without it.
    pub pride_alpha: Option<f64>,
    /// sha256 of the swept items (stem, options, gold, in order): sweeps
    /// compare only when they scored the same items.
    pub items_sha256: String,
    /// The engine settings `Sweep::report` was given (those the models scored with), as an object;
    /// the first file's where saved sweeps are put side by side.
    pub settings: serde_json::Value,
    /// Each model's sweep, in the order given (saved sweeps' in the order of their files).
    pub models: Vec<ModelSweep>,
    /// Recomputed whenever sweeps are put side by side.
    #[serde(skip_deserializing)]
    pub comparison: Option<RankReversals>,
}

impl Sweep {
    /// The sweep of one model, from its log-probabilities.
    pub fn analyse(&self, model: &Path, scores: &Scores) -> ModelSweep {
        let scored: Vec<Scored<'_>> = self
            .prompts
            .iter()
            .zip(&scores.log_probs)
            .map(|(prompt, lp)| Scored { prompt, log_probs: lp, pick: first_max(lp.iter().copied()) })
            .collect();
        analyse(self, model, &scored, scores)
    }

    /// The report of the models swept, with their comparison.
    pub fn report(&self, pick: super::ItemPick<'_>, settings: &Settings, models: Vec<ModelSweep>) -> Result<SweepReport, EvalError> {
        let (subset, limit, limit_per_group) = match pick {
            super::ItemPick::Subset(subset) => (subset, None, false),
            super::ItemPick::First { limit, groups } => (None, Some(limit), groups.is_some()),
        };
        let comparison = (models.len() > 1).then(|| rank(&models, self.spec.circular));
        Ok(SweepReport {
            schema_version: crate::results::SCHEMA_VERSION,
            file: self.items.label.clone(),
            tasks: self.items.items.len(),
            selection: subset,
            limit,
            limit_per_group,
            formats: self.names.clone(),
            circular: self.spec.circular,
            instruction: self.spec.instruction,
            pride_alpha: self.spec.pride,
            items_sha256: items_sha256(&self.items),
            settings: serde_json::to_value(settings).expect("settings serialise"),
            models,
            comparison,
        })
    }
}

/// A prompt with the log-probability of each ID and the ID picked (the first
/// maximum, as every accuracy in mcscore).
struct Scored<'a> {
    prompt: &'a Prompt,
    log_probs: &'a [f64],
    pick: usize,
}

impl Scored<'_> {
    fn right(&self) -> bool {
        self.pick == self.prompt.gold
    }
}

fn analyse(sweep: &Sweep, model: &Path, scored: &[Scored<'_>], scores: &Scores) -> ModelSweep {
    let Sweep { items, names, calibration, .. } = sweep;
    let circular = sweep.spec.circular;
    let (tokens, seconds) = (scores.tokens, scores.seconds);
    let n = items.items.len();
    let ks: HashSet<usize> = items.items.iter().map(|i| i.options.len()).collect();
    let fixed_k = (ks.len() == 1).then(|| items.items[0].options.len());
    let widest = ks.iter().copied().max().unwrap_or(0);
    let share = |hits: usize, of: usize| hits as f64 / of.max(1) as f64;
    let mut results = Vec::new();
    for (f, name) in names.iter().enumerate() {
        let mine: Vec<&Scored<'_>> = scored.iter().filter(|s| s.prompt.format == f).collect();
        let counted: Vec<&Scored<'_>> = mine.iter().copied().filter(|s| circular || s.prompt.rotation == 0).collect();
        let original: Vec<&Scored<'_>> = mine.iter().copied().filter(|s| s.prompt.rotation == 0).collect();
        let hits = original.iter().filter(|s| s.right()).count();
        let accuracy = share(hits, n);
        let accuracy_interval = Some(mcscore_metrics::Proportion { successes: hits, n }.wilson());
        let (accuracy_by_rotation, circular_accuracy, circular_interval) = if circular {
            let by_rotation = (0..widest)
                .map(|r| {
                    let at: Vec<_> = mine.iter().filter(|s| s.prompt.rotation == r).collect();
                    share(at.iter().filter(|s| s.right()).count(), at.len())
                })
                .collect();
            let mut all_right = vec![true; n];
            for s in &mine {
                all_right[s.prompt.item] &= s.right();
            }
            let all = all_right.iter().filter(|&&r| r).count();
            (by_rotation, Some(share(all, n)), Some(mcscore_metrics::Proportion { successes: all, n }.wilson()))
        } else {
            (Vec::new(), None, None)
        };
        let picks_list: Vec<usize> = counted.iter().map(|s| s.pick).collect();
        let golds: Vec<usize> = counted.iter().map(|s| s.prompt.gold).collect();
        let picks = position_counts(&picks_list, widest);
        let pride = (!calibration.is_empty()).then(|| {
            let k = fixed_k.expect("--pride checked one k");
            let task_priors: Vec<Vec<f64>> = calibration
                .iter()
                .map(|&item| {
                    let mut rotations: Vec<&Scored<'_>> = mine.iter().copied().filter(|s| s.prompt.item == item).collect();
                    rotations.sort_by_key(|s| s.prompt.rotation);
                    debias::task_prior(&rotations.iter().map(|s| s.log_probs.to_vec()).collect::<Vec<_>>())
                })
                .collect();
            let prior = debias::prior(&task_priors);
            let rest: Vec<&Scored<'_>> = original.iter().copied().filter(|s| !calibration.contains(&s.prompt.item)).collect();
            let golds: Vec<usize> = rest.iter().map(|s| s.prompt.gold).collect();
            let before: Vec<usize> = rest.iter().map(|s| s.pick).collect();
            let after: Vec<usize> = rest.iter().map(|s| debias::debiased_pick(s.log_probs, &prior)).collect();
            let hits = |picks: &[usize]| picks.iter().zip(&golds).filter(|(p, g)| p == g).count();
            Pride {
                calibration_tasks: calibration.len(),
                debiased_tasks: rest.len(),
                accuracy_before: share(hits(&before), rest.len()),
                accuracy_after: share(hits(&after), rest.len()),
                rstd_before: debias::rstd(&before, &golds, k),
                rstd_after: debias::rstd(&after, &golds, k),
                picks_before: position_counts(&before, k),
                picks_after: position_counts(&after, k),
                prior,
            }
        });
        results.push(FormatResult {
            format: name.clone(),
            accuracy,
            accuracy_interval,
            accuracy_by_rotation,
            circular_accuracy,
            circular_interval,
            rstd: debias::rstd(&picks_list, &golds, widest),
            pia: fixed_k.map(|k| debias::pia(&picks_list, &golds, k)),
            picks,
            pride,
        });
    }
    let accuracies: Vec<f64> = results.iter().map(|r| r.accuracy).collect();
    let circular_accuracies: Vec<f64> = results.iter().filter_map(|r| r.circular_accuracy).collect();
    ModelSweep {
        model: model.display().to_string(),
        prompts: scored.len(),
        tokens_decoded: tokens.decoded,
        tokens_unshared: tokens.unshared,
        scoring_seconds: seconds,
        accuracy_across_formats: spread(&accuracies, names),
        circular_accuracy_across_formats: circular.then(|| spread(&circular_accuracies, names)),
        formats: results,
        chat: scores.chat.clone(),
        projector_sha256: scores.projector_sha256.clone(),
    }
}

pub(super) fn rank(sweeps: &[ModelSweep], circular: bool) -> RankReversals {
    let circular_accuracy: Vec<Vec<f64>> =
        sweeps.iter().map(|m| m.formats.iter().map(|f| f.circular_accuracy.unwrap_or(f.accuracy)).collect()).collect();
    // Circular accuracy that is the same for every model in every format (0
    // for small models) ranks nothing: then the models are ranked by accuracy.
    let first = circular_accuracy.first().and_then(|f| f.first()).copied();
    let circular_ranks = circular && !circular_accuracy.iter().flatten().all(|&a| Some(a) == first);
    let accuracy: Vec<Vec<f64>> =
        if circular_ranks { circular_accuracy } else { sweeps.iter().map(|m| m.formats.iter().map(|f| f.accuracy).collect()).collect() };
    let taus: Vec<f64> = robustness::kendall_between_formats(&accuracy).into_iter().filter(|t| t.is_finite()).collect();
    RankReversals {
        ranked_by: match (circular, circular_ranks) {
            (true, true) => "circular_accuracy",
            (true, false) => "accuracy (circular accuracy is the same for every model in every format)",
            _ => "accuracy",
        },
        rank_distribution: robustness::rank_distribution(&accuracy),
        pairs: robustness::pair_records(&accuracy),
        reversal_rate: robustness::reversal_rate(&accuracy),
        kendall_tau_mean: if taus.is_empty() { f64::NAN } else { taus.iter().sum::<f64>() / taus.len() as f64 },
        kendall_tau_min: taus.iter().copied().fold(f64::NAN, f64::min),
        kendall_pairs: taus.len(),
    }
}

/// How often each of `positions` positions was picked.
fn position_counts(picks: &[usize], positions: usize) -> Vec<usize> {
    let mut counts = vec![0; positions];
    for &p in picks {
        counts[p] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circular_accuracy_that_ties_everywhere_ranks_nothing() {
        // Two models, two formats, circular accuracy 0 everywhere: ranked by accuracy instead.
        let model = |name: &str, accuracies: [f64; 2]| -> ModelSweep {
            let formats: Vec<serde_json::Value> = accuracies
                .iter()
                .enumerate()
                .map(|(f, a)| serde_json::json!({"format": format!("f{f}"), "accuracy": a, "circular_accuracy": 0.0, "picks": [1, 1], "rstd": 0.0, "pia": null, "pride": null}))
                .collect();
            let spread = serde_json::json!({"mean": 0.0, "std": 0.0, "min": 0.0, "min_format": "f0", "max": 0.0, "max_format": "f0"});
            serde_json::from_value(serde_json::json!({"model": name, "prompts": 2, "tokens_decoded": 1, "tokens_unshared": 1,
                "scoring_seconds": 1.0, "formats": formats, "accuracy_across_formats": spread, "circular_accuracy_across_formats": spread}))
            .unwrap()
        };
        let sweeps = [model("a", [50.0, 40.0]), model("b", [30.0, 60.0])];
        let c = rank(&sweeps, true);
        assert!(c.ranked_by.starts_with("accuracy (circular accuracy is the same"), "{}", c.ranked_by);
        assert_eq!(c.rank_distribution, [[1, 1], [1, 1]], "each model first in one format, by accuracy");
        assert_eq!(c.reversal_rate, 1.0);
        // Where circular accuracy differs, it ranks.
        let mut sweeps = sweeps;
        sweeps[0].formats[0].circular_accuracy = Some(25.0);
        assert_eq!(rank(&sweeps, true).ranked_by, "circular_accuracy");
    }
}
