//! Sweep shards and what identifies a sweep: a shard's saved scores, the
//! sweep and run it belongs to, and merging a sweep's shards back into its scores.

use std::path::PathBuf;

use mcscore_engine::TokenCounts;
use serde::{Deserialize, Serialize};

use super::{items_sha256, Scores, Sweep};
use crate::log::{or_none, Mismatch, ShardHeader};
use crate::shard::check_all_present;
use crate::{EvalError, ShardError, SweepError, SweepFault};

/// How a sweep's items are split into shards, recorded in each saved shard:
/// contiguous items balanced by the tokens of all their prompts (a sweep
/// tokenises every prompt to share stems anyway).
pub(super) const SHARD_RULE: &str = "contiguous-by-tokens";

/// The format of a saved sweep shard, written as `version`; a shard saved
/// before it was written is version 1.
pub(crate) const SWEEP_SHARD_VERSION: u32 = 1;

fn first_shard_version() -> u32 {
    1
}

/// A shard of a sweep's scores as saved (`sweep --shard K/N --save-json`):
/// the log-probabilities of a contiguous run of prompts (whole items), and
/// what identifies the sweep they belong to.
#[derive(Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SweepShard {
    /// The sweep shard layout's version when written (1 now).
    #[serde(default = "first_shard_version")]
    pub version: u32,
    /// The model's path as given; the shards of one run must give the same (compared as written).
    pub model: String,
    /// sha256 of the swept items (stem, options, gold, in order), as lowercase hex.
    pub items_sha256: String,
    /// The sweep's formats' names, in order.
    pub formats: Vec<String>,
    /// Whether each task is scored under every rotation of its options (circular evaluation, `--circular`).
    pub circular: bool,
    /// Whether each prompt has the line naming the IDs after the options (`--instruction`).
    pub instruction: bool,
    /// PriDe's calibration share α (0 < α < 1), with `--pride`; `null` without it.
    pub pride_alpha: Option<f64>,
    /// The engine settings the shard scored with, as an object; the shards of one run must have the same.
    pub settings: serde_json::Value,
    /// The chat template the prompts were scored inside, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<crate::chat::ChatHeader>,
    /// The sha256 of the vision projector the images were read with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projector_sha256: Option<String>,
    /// Which shard this is (`index` from 0) of how many, and the rule that split the tasks
    /// (`contiguous-by-tokens`); `run_tasks` and `file_tasks` both count the swept tasks, and
    /// `run_sha256` is `items_sha256`.
    pub shard: ShardHeader,
    /// The first prompt this shard scored, in the sweep's prompt order.
    pub first_prompt: usize,
    /// Per prompt from `first_prompt` on, in the sweep's prompt order: the log-probability in nats of
    /// each ID, in position order.
    pub log_probs: Vec<Vec<f64>>,
    /// Tokens this shard decoded, padding aside: a fill's shared tokens once, those reused from the
    /// previous fill's cache not at all.
    pub tokens_decoded: usize,
    /// Tokens that scoring each of this shard's prompts on its own would decode.
    pub tokens_unshared: usize,
    /// Seconds from loading the model to the shard's last prompt scored.
    pub seconds: f64,
}

/// What makes two sweeps the same sweep: the items, the formats, the
/// rotations, the instruction line and the PriDe share (and for a shard the
/// chat template). Saved sweeps compare, and shards merge, only when it
/// matches. Checked through [`SweepIdentity::mismatch`],
/// as a score run's through [`crate::log::RunIdentity`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SweepIdentity {
    /// sha256 of the swept items (stem, options, gold, in order), as lowercase hex.
    pub items_sha256: String,
    /// The formats' names, in order.
    pub formats: Vec<String>,
    /// Whether each task is scored under every rotation of its options (circular evaluation).
    pub circular: bool,
    /// Whether each prompt has the line naming the IDs after the options.
    pub instruction: bool,
    /// PriDe's calibration share, if the sweep debiases.
    pub pride_alpha: Option<f64>,
    /// The chat template's name ("none" without one), where it is part of
    /// the identity: a shard's, not a saved sweep's, whose models may each
    /// take their own template.
    pub chat_template: Option<String>,
}

impl SweepIdentity {
    /// The first field that differs from `now`'s, with both values; a field
    /// one side does not know is not compared.
    pub fn mismatch(&self, now: &SweepIdentity) -> Option<Mismatch> {
        let shown = |v: &dyn std::fmt::Display| v.to_string();
        Mismatch::check("items (items_sha256)", &self.items_sha256, &now.items_sha256, String::clone)
            .or_else(|| Mismatch::check("formats", &self.formats, &now.formats, |f| f.join(",")))
            .or_else(|| Mismatch::check("rotations (circular)", &self.circular, &now.circular, |v| shown(v)))
            .or_else(|| Mismatch::check("instruction line", &self.instruction, &now.instruction, |v| shown(v)))
            .or_else(|| Mismatch::check("PriDe share", &self.pride_alpha, &now.pride_alpha, |v| or_none(v.as_ref())))
            .or_else(|| match (&self.chat_template, &now.chat_template) {
                (Some(was), Some(is)) => Mismatch::check("chat template", was, is, String::clone),
                _ => None,
            })
    }
}

/// The run a sweep shard belongs to: the shards of one run differ only in
/// their index and prompts. Checked through [`SweepRunIdentity::mismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepRunIdentity {
    /// The model's path as the shard gives it, compared as written (not by the model's sha256).
    pub model: String,
    /// The engine settings the shard scored with, as their JSON text.
    pub settings: String,
    /// [`crate::log::chat_identity`]: the template and its guards, or "none".
    pub chat_template: String,
    /// The shards the run is split into.
    pub shard_count: usize,
    /// The name of the rule that split the tasks into shards (`contiguous-by-tokens`).
    pub partition_rule: String,
    /// The vision projector's sha256, or "none".
    pub projector: String,
}

impl SweepRunIdentity {
    /// The first field that differs from `now`'s, with both values.
    pub fn mismatch(&self, now: &SweepRunIdentity) -> Option<Mismatch> {
        Mismatch::check("model", &self.model, &now.model, String::clone)
            .or_else(|| Mismatch::check("settings", &self.settings, &now.settings, String::clone))
            .or_else(|| Mismatch::check("chat template", &self.chat_template, &now.chat_template, String::clone))
            .or_else(|| Mismatch::check("shard count", &self.shard_count, &now.shard_count, usize::to_string))
            .or_else(|| Mismatch::check("partition rule", &self.partition_rule, &now.partition_rule, String::clone))
            .or_else(|| Mismatch::check("projector_sha256", &self.projector, &now.projector, String::clone))
    }
}

impl SweepShard {
    /// The sweep this shard is part of.
    pub(crate) fn sweep_identity(&self) -> SweepIdentity {
        SweepIdentity {
            items_sha256: self.items_sha256.clone(),
            formats: self.formats.clone(),
            circular: self.circular,
            instruction: self.instruction,
            pride_alpha: self.pride_alpha,
            chat_template: Some(self.chat.as_ref().map_or_else(|| "none".to_owned(), |c| c.template.clone())),
        }
    }

    /// The run this shard is part of.
    pub(crate) fn run_identity(&self) -> SweepRunIdentity {
        SweepRunIdentity {
            model: self.model.clone(),
            settings: self.settings.to_string(),
            chat_template: crate::log::chat_identity(self.chat.as_ref()),
            shard_count: self.shard.count,
            partition_rule: self.shard.rule.clone(),
            projector: self.projector_sha256.clone().unwrap_or_else(|| "none".to_owned()),
        }
    }
}

impl Sweep {
    /// The sweep this one renders: what a shard must match to merge into it.
    pub fn identity(&self) -> SweepIdentity {
        SweepIdentity {
            items_sha256: items_sha256(&self.items),
            formats: self.names.clone(),
            circular: self.spec.circular,
            instruction: self.spec.instruction,
            pride_alpha: self.spec.pride,
            chat_template: Some(self.spec.chat.template.name().unwrap_or_else(|| "none".to_owned())),
        }
    }

    /// The scores of one model from the saved shards of a sweep of these
    /// items, formats and rotations (`sweep --shard K/N --save-json`), checked
    /// to tile every prompt once; with the model they were scored with.
    pub fn merge_shards(&self, paths: &[PathBuf]) -> Result<(PathBuf, Scores), EvalError> {
        let mut shards: Vec<(PathBuf, SweepShard)> = Vec::new();
        let identity = self.identity();
        for path in paths {
            let bytes = mcscore_format::read_input(path)?;
            let shard: SweepShard = serde_json::from_slice(&bytes)
                .map_err(|source| EvalError::Sweep(SweepError::NotASweepShard { path: path.clone(), source }))?;
            let bad = |fault| EvalError::Sweep(SweepError::BadSweep { path: path.clone(), fault: Box::new(fault) });
            if shard.version > SWEEP_SHARD_VERSION {
                return Err(bad(SweepFault::NewerShard { version: shard.version, max: SWEEP_SHARD_VERSION }));
            }
            if shard.shard.index >= shard.shard.count {
                return Err(bad(SweepFault::ShardIndex { index: shard.shard.index, count: shard.shard.count }));
            }
            if let Some(m) = identity.mismatch(&shard.sweep_identity()) {
                return Err(EvalError::Sweep(SweepError::ShardOfOtherSweep { path: path.clone(), what: m.field }));
            }
            if let Some((first, f)) = shards.first() {
                if let Some(m) = f.run_identity().mismatch(&shard.run_identity()) {
                    return Err(EvalError::Shard(ShardError::OtherRun {
                        path: path.clone(),
                        shard: shard.shard.index,
                        field: m.field,
                        first: first.clone(),
                        log: m.was,
                        now: m.now,
                    }));
                }
            }
            if let Some((other, _)) = shards.iter().find(|(_, s)| s.shard.index == shard.shard.index) {
                return Err(EvalError::Shard(ShardError::ShardTwice {
                    shard: shard.shard.index,
                    first: other.clone(),
                    second: path.clone(),
                }));
            }
            shards.push((path.clone(), shard));
        }
        let count = shards.first().ok_or(EvalError::NoLogs)?.1.shard.count;
        check_all_present(count, shards.iter().map(|(_, s)| s.shard.index))?;
        shards.sort_by_key(|(_, s)| s.shard.index);
        let model = PathBuf::from(&shards[0].1.model);
        let chat = shards[0].1.chat.clone();
        let projector_sha256 = shards[0].1.projector_sha256.clone();
        let mut scores = Scores {
            log_probs: Vec::with_capacity(self.prompts.len()),
            tokens: TokenCounts::default(),
            seconds: 0.0,
            chat,
            projector_sha256,
        };
        for (path, shard) in shards {
            if shard.first_prompt != scores.log_probs.len() {
                let why = format!(
                    "shard {} ({}) starts at prompt {}, but the shards before it end at prompt {}",
                    shard.shard.index,
                    path.display(),
                    shard.first_prompt,
                    scores.log_probs.len()
                );
                return Err(EvalError::Shard(ShardError::ShardsOtherTasks { why }));
            }
            // Each prompt's row holds one finite log-probability per ID: the
            // analysis indexes by them.
            for (j, row) in shard.log_probs.iter().enumerate() {
                let prompt = shard.first_prompt + j;
                let ids = self.prompts.get(prompt).map_or(0, |p| p.ids.len());
                if row.len() != ids || row.iter().any(|l| !l.is_finite() || *l > 0.0) {
                    let fault = SweepFault::PromptRow { prompt, found: row.len(), ids };
                    return Err(EvalError::Sweep(SweepError::BadSweep { path, fault: Box::new(fault) }));
                }
            }
            scores.log_probs.extend(shard.log_probs);
            scores.tokens.decoded = scores.tokens.decoded.saturating_add(shard.tokens_decoded);
            scores.tokens.unshared = scores.tokens.unshared.saturating_add(shard.tokens_unshared);
            scores.seconds += shard.seconds;
        }
        if scores.log_probs.len() != self.prompts.len() {
            let why = format!("they hold {} prompts, not the sweep's {}", scores.log_probs.len(), self.prompts.len());
            return Err(EvalError::Shard(ShardError::ShardsOtherTasks { why }));
        }
        Ok((model, scores))
    }
}
