//! The prompt-format sweep: each item re-rendered in many option-ID /
//! delimiter / separator formats (docs/formats.md) and, with circular
//! evaluation, every cyclic rotation of its options; scored in one engine
//! run, so that prompts sharing a stem share its evaluation; then analysed
//! per format (accuracy, circular accuracy, picks, RStd, PIA, PriDe) and
//! across formats and models. The analysis is a pure function of the
//! log-probabilities, so it is tested without a model.

use std::collections::HashSet;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mcscore_datasets::formats::{parse_letter_task, PromptFormat};
use mcscore_datasets::{Benchmark, Item, Source};
use mcscore_engine::{plan, Engine, EngineError, PreparedTask, Settings, TokenCounts};
use mcscore_format::{sha256_hex, write_tasks, AtomicFile, Task, TaskFile};
use mcscore_metrics::robustness::{self, PairRecord};
use mcscore_metrics::stats::{std_dev, SplitMix64};
use mcscore_metrics::{debias, first_max};
use serde::{Deserialize, Serialize};

use crate::fills::{score_fills, Cancel, FillEvent, FillsEnd, Scoring};
use crate::job::{select, Selection};
use crate::log::{or_none, Mismatch, ShardHeader, TaskKind};
use crate::shard::{check_all_present, partition, Shard};
use crate::{ShardError, SweepError, SweepFault};

/// How a sweep's items are split into shards, recorded in each saved shard:
/// contiguous items balanced by the tokens of all their prompts (a sweep
/// tokenises every prompt to share stems anyway).
const SHARD_RULE: &str = "contiguous-by-tokens";
use crate::{EvalError, Phase, Progress};

/// One prompt: an item rendered in a format under a rotation.
#[non_exhaustive]
pub struct Prompt {
    /// Position of the item among the swept items.
    pub item: usize,
    pub format: usize,
    pub rotation: usize,
    pub question: String,
    pub ids: Vec<String>,
    pub gold: usize,
}

/// The swept items, with their index in the file or source.
pub struct Items {
    pub label: String,
    pub indices: Vec<usize>,
    pub items: Vec<Item>,
}

/// Where the items come from.
pub enum ItemSource<'a> {
    /// A letter-mode task file in the letter scaffold, parsed back to items.
    File(&'a Path),
    /// A benchmark's items, read from its source files.
    Benchmark { benchmark: &'a Benchmark, sources: &'a [Source] },
}

/// The items to sweep: all of them, or `subset` picked as llama-perplexity
/// picks tasks; with the selection rule that applied.
pub fn load_items(source: ItemSource<'_>, subset: Option<usize>) -> Result<(Items, Selection), EvalError> {
    let (label, all): (String, Vec<Item>) = match source {
        ItemSource::File(path) => {
            let label = path.display().to_string();
            let file = TaskFile::open(path)?;
            let items = file
                .tasks()
                .enumerate()
                .map(|(task, t)| {
                    parse_letter_task(&t).ok_or_else(|| EvalError::Sweep(SweepError::NotLetterScaffold { label: label.clone(), task }))
                })
                .collect::<Result<_, _>>()?;
            (label, items)
        }
        ItemSource::Benchmark { benchmark, sources } => {
            let items = mcscore_datasets::load_items(benchmark, sources)?;
            if let Some(row) = items.iter().position(|i| i.passage.is_some()) {
                return Err(EvalError::Sweep(SweepError::PassageItem { name: benchmark.name.to_owned(), row }));
            }
            (benchmark.name.to_owned(), items)
        }
    };
    if all.is_empty() {
        return Err(EvalError::Sweep(SweepError::NoItems { label }));
    }
    let (selection, indices) = select(TaskKind::MultipleChoice, subset, all.len());
    let items = indices.iter().map(|&i| all[i].clone()).collect();
    Ok((Items { label, indices, items }, selection))
}

/// How to sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    pub formats: Vec<PromptFormat>,
    /// Score every cyclic rotation of the options.
    pub circular: bool,
    /// Add the line naming the IDs after the options.
    pub instruction: bool,
    /// PriDe's calibration share α (0 < α < 1).
    pub pride: Option<f64>,
    /// Score every prompt inside this chat template ([`crate::chat`]); none by default.
    pub chat: crate::chat::ChatSpec,
}

/// A sweep ready to score: its items, formats and rendered prompts.
#[non_exhaustive]
pub struct Sweep {
    pub items: Items,
    pub spec: SweepSpec,
    /// The formats' names, in order.
    pub names: Vec<String>,
    /// Items whose rotations calibrate PriDe.
    calibration: HashSet<usize>,
    pub prompts: Vec<Prompt>,
}

impl Sweep {
    /// Renders every prompt; refuses a PriDe split that cannot work.
    pub fn new(items: Items, spec: SweepSpec) -> Result<Sweep, EvalError> {
        if spec.formats.is_empty() {
            return Err(SweepError::NoFormats { label: items.label }.into());
        }
        let n = items.items.len();
        if spec.pride.is_some() {
            if n < 2 {
                return Err(EvalError::Sweep(SweepError::PrideTooFewTasks { label: items.label }));
            }
            let k = items.items[0].options.len();
            if let Some(p) = items.items.iter().position(|i| i.options.len() != k) {
                return Err(EvalError::Sweep(SweepError::PrideMixedOptions {
                    label: items.label.clone(),
                    task: items.indices[p],
                    options: items.items[p].options.len(),
                    first: items.indices[0],
                    first_options: k,
                }));
            }
        }
        let calibration = spec.pride.map(|alpha| calibration_items(n, alpha)).unwrap_or_default();
        let rotations_of = |p: usize| if spec.circular || calibration.contains(&p) { items.items[p].options.len() } else { 1 };
        let prompts = render(&items, &spec.formats, rotations_of, spec.instruction)?;
        let names = spec.formats.iter().map(PromptFormat::name).collect();
        Ok(Sweep { items, spec, names, calibration, prompts })
    }

    /// Scores every prompt with `model`: the log-probability of each ID, or
    /// `None` when cancelled.
    pub fn score(
        &self,
        model: &Path,
        settings: &Settings,
        progress: &mut dyn Progress,
        cancel: &Cancel,
    ) -> Result<Option<Scores>, EvalError> {
        Ok(self.score_prompts(model, settings, None, progress, cancel)?.map(|(_, scores)| scores))
    }

    /// Scores the prompts of one shard of the items (every format and rotation
    /// of an item stays in its shard, so shared stems stay shared): contiguous
    /// items balanced by tokens, as [`crate::shard`] splits tasks.
    pub fn score_shard(
        &self,
        model: &Path,
        settings: &Settings,
        shard: Shard,
        progress: &mut dyn Progress,
        cancel: &Cancel,
    ) -> Result<Option<SweepShard>, EvalError> {
        let shard = shard.check()?;
        let Some((prompts, scores)) = self.score_prompts(model, settings, Some(shard), progress, cancel)? else { return Ok(None) };
        let items_sha256 = items_sha256(&self.items.items);
        Ok(Some(SweepShard {
            version: SWEEP_SHARD_VERSION,
            model: model.display().to_string(),
            items_sha256: items_sha256.clone(),
            formats: self.names.clone(),
            circular: self.spec.circular,
            instruction: self.spec.instruction,
            pride_alpha: self.spec.pride,
            settings: serde_json::to_value(settings).expect("settings serialise"),
            chat: scores.chat.clone(),
            shard: ShardHeader {
                index: shard.index,
                count: shard.count,
                rule: SHARD_RULE.to_owned(),
                run_tasks: self.items.items.len(),
                file_tasks: self.items.items.len(),
                run_sha256: items_sha256,
            },
            first_prompt: prompts.start,
            log_probs: scores.log_probs,
            tokens_decoded: scores.tokens.decoded,
            tokens_unshared: scores.tokens.unshared,
            seconds: scores.seconds,
        }))
    }

    /// Scores the prompts of `shard` (all without one), returning which.
    fn score_prompts(
        &self,
        model: &Path,
        settings: &Settings,
        shard: Option<Shard>,
        progress: &mut dyn Progress,
        cancel: &Cancel,
    ) -> Result<Option<(Range<usize>, Scores)>, EvalError> {
        let started = Instant::now();
        let engine = Engine::load(model, settings.n_gpu_layers, settings.mmap).map_err(EvalError::Load)?;
        let tasks: Vec<(usize, Task<'_>)> = self.prompts.iter().enumerate().map(|(i, p)| (i, task_of(p))).collect();
        let label = Path::new(&self.items.label);
        let template = crate::chat::Template::resolve(&self.spec.chat.template, &engine)?;
        let (mut prepared, chat) =
            crate::chat::prepare(&engine, &self.spec.chat, template.as_ref(), label, &tasks, settings.task_limit(), |e| self.describe(e))?;
        let prompts = match shard {
            Some(shard) => {
                let mut item_tokens = vec![0; self.items.items.len()];
                for (prompt, task) in self.prompts.iter().zip(&prepared) {
                    item_tokens[prompt.item] += task.required_tokens();
                }
                let items = partition(&item_tokens, shard.count)?.swap_remove(shard.index);
                // Prompts are in item order.
                let first = |item: usize| self.prompts.partition_point(|p| p.item < item);
                let prompts = first(items.start)..first(items.end);
                prepared = prepared.drain(prompts.clone()).collect();
                prompts
            }
            None => 0..self.prompts.len(),
        };
        let plan = plan(&prepared, settings).map_err(EvalError::engine(label))?;
        engine.check_memory(&plan, settings.n_gpu_layers).map_err(EvalError::engine(label))?;
        progress.start(Phase::Prompts, prepared.len(), 0);
        let mut log_probs = Vec::with_capacity(prepared.len());
        let scoring = Scoring { engine: &engine, tasks: &prepared, plan: &plan, settings, path: label };
        let run = score_fills(scoring, cancel, |event| {
            if let FillEvent::Task(scores) = event {
                progress.tokens(prepared.get(log_probs.len()).map_or(0, PreparedTask::required_tokens));
                log_probs.push(scores.options.iter().map(|o| o.logprob_sum).collect::<Vec<f64>>());
                progress.tick(Phase::Prompts);
            }
            Ok(())
        });
        progress.finish(Phase::Prompts);
        let run = run.map_err(|e| match e {
            EvalError::Engine { source, .. } => self.describe(source),
            e => e,
        })?;
        if run.end == FillsEnd::Cancelled {
            return Ok(None);
        }
        if log_probs.len() != prepared.len() {
            return Err(EvalError::Incomplete { path: model.to_owned(), scored: log_probs.len(), announced: prepared.len() });
        }
        engine.check_unchanged().map_err(EvalError::engine(model))?;
        Ok(Some((prompts, Scores { log_probs, tokens: run.tokens, seconds: started.elapsed().as_secs_f64(), chat })))
    }

    /// The sweep this one renders: what a shard must match to merge into it.
    pub fn identity(&self) -> SweepIdentity {
        SweepIdentity {
            items_sha256: items_sha256(&self.items.items),
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
        let mut scores = Scores { log_probs: Vec::with_capacity(self.prompts.len()), tokens: TokenCounts::default(), seconds: 0.0, chat };
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

    /// An engine error, with the prompt it is about.
    fn describe(&self, source: EngineError) -> EvalError {
        match source.task().and_then(|i| Some((i, self.prompts.get(i)?))) {
            Some((prompt, p)) => EvalError::Prompt {
                label: self.items.label.clone(),
                task: self.items.indices[p.item],
                format: self.names[p.format].clone(),
                rotation: p.rotation,
                prompt,
                source: Box::new(source),
            },
            None => EvalError::Engine { path: self.items.label.clone().into(), source },
        }
    }

    /// One JSON line per prompt (task, format, rotation, gold, log P of each
    /// ID, pick): the sweep's sample log.
    pub fn write_log(&self, out: &mut impl Write, model: &Path, scores: &Scores) -> std::io::Result<()> {
        for (prompt, lp) in self.prompts.iter().zip(&scores.log_probs) {
            let line = serde_json::json!({
                "model": model.display().to_string(),
                "task": self.items.indices[prompt.item],
                "format": self.names[prompt.format],
                "rotation": prompt.rotation,
                "gold": prompt.gold,
                "log_probs": lp,
                "pick": first_max(lp.iter().copied()),
            });
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

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
    pub fn report(&self, subset: Option<usize>, settings: &Settings, models: Vec<ModelSweep>) -> Result<SweepReport, EvalError> {
        let comparison = (models.len() > 1).then(|| compare(&models, self.spec.circular));
        Ok(SweepReport {
            schema_version: crate::results::SCHEMA_VERSION,
            file: self.items.label.clone(),
            tasks: self.items.items.len(),
            selection: subset,
            formats: self.names.clone(),
            circular: self.spec.circular,
            instruction: self.spec.instruction,
            pride_alpha: self.spec.pride,
            items_sha256: items_sha256(&self.items.items),
            settings: serde_json::to_value(settings).expect("settings serialise"),
            models,
            comparison,
        })
    }

    /// Writes each format and rotation as its own task file `FORMAT.rR.bin` in
    /// `dir`; returns how many.
    /// `inputs` are never replaced (a task file in `dir` named like one of the
    /// outputs is refused, not overwritten).
    pub fn write_tasks(&self, dir: &Path, inputs: &[&Path]) -> Result<usize, EvalError> {
        std::fs::create_dir_all(dir).map_err(EvalError::io(dir))?;
        let widest = self.items.items.iter().map(|i| i.options.len()).max().unwrap_or(1);
        let rotations = if self.spec.circular { widest } else { 1 };
        let mut written = 0;
        for format in &self.spec.formats {
            for rotation in 0..rotations {
                let prompts = render(
                    &self.items,
                    std::slice::from_ref(format),
                    |p| if self.items.items[p].options.len() > rotation { rotation + 1 } else { 0 },
                    self.spec.instruction,
                )?;
                let path = dir.join(format!("{}.r{rotation}.bin", format.name()));
                if let Some(input) = inputs.iter().find(|i| mcscore_format::same_file(&path, i)) {
                    return Err(EvalError::WouldReplaceInput { path, input: input.to_path_buf() });
                }
                write_tasks(&path, prompts.iter().filter(|p| p.rotation == rotation).map(task_of).collect::<Vec<_>>().into_iter())?;
                written += 1;
            }
        }
        Ok(written)
    }
}

/// The format of a saved sweep shard, written as `version`; a shard saved
/// before it was written is version 1.
pub const SWEEP_SHARD_VERSION: u32 = 1;

fn first_shard_version() -> u32 {
    1
}

/// A shard of a sweep's scores as saved (`sweep --shard K/N --save-json`):
/// the log-probabilities of a contiguous run of prompts (whole items), and
/// what identifies the sweep they belong to.
#[derive(Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SweepShard {
    /// [`SWEEP_SHARD_VERSION`] when written.
    #[serde(default = "first_shard_version")]
    pub version: u32,
    pub model: String,
    pub items_sha256: String,
    pub formats: Vec<String>,
    pub circular: bool,
    pub instruction: bool,
    pub pride_alpha: Option<f64>,
    pub settings: serde_json::Value,
    /// The chat template the prompts were scored inside, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<crate::chat::ChatHeader>,
    pub shard: ShardHeader,
    /// The first prompt this shard scored, in the sweep's prompt order.
    pub first_prompt: usize,
    pub log_probs: Vec<Vec<f64>>,
    pub tokens_decoded: usize,
    pub tokens_unshared: usize,
    pub seconds: f64,
}

/// One model's log-probabilities of every prompt's IDs, in prompt order.
pub struct Scores {
    pub log_probs: Vec<Vec<f64>>,
    pub tokens: TokenCounts,
    pub seconds: f64,
    /// The chat template the prompts were scored inside, if any.
    pub chat: Option<crate::chat::ChatHeader>,
}

/// What makes two sweeps the same sweep: the items, the formats, the
/// rotations, the instruction line and the PriDe share (and for a shard the
/// chat template). Saved sweeps compare, and shards merge, only when it
/// matches. Checked through [`SweepIdentity::mismatch`],
/// as a score run's through [`crate::log::RunIdentity`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SweepIdentity {
    pub items_sha256: String,
    pub formats: Vec<String>,
    pub circular: bool,
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
    pub model: String,
    pub settings: String,
    /// [`crate::log::chat_identity`]: the template and its guards, or "none".
    pub chat_template: String,
    pub shard_count: usize,
    pub partition_rule: String,
}

impl SweepRunIdentity {
    /// The first field that differs from `now`'s, with both values.
    pub fn mismatch(&self, now: &SweepRunIdentity) -> Option<Mismatch> {
        Mismatch::check("model", &self.model, &now.model, String::clone)
            .or_else(|| Mismatch::check("settings", &self.settings, &now.settings, String::clone))
            .or_else(|| Mismatch::check("chat template", &self.chat_template, &now.chat_template, String::clone))
            .or_else(|| Mismatch::check("shard count", &self.shard_count, &now.shard_count, usize::to_string))
            .or_else(|| Mismatch::check("partition rule", &self.partition_rule, &now.partition_rule, String::clone))
    }
}

impl SweepShard {
    /// The sweep this shard is part of.
    pub fn sweep_identity(&self) -> SweepIdentity {
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
    pub fn run_identity(&self) -> SweepRunIdentity {
        SweepRunIdentity {
            model: self.model.clone(),
            settings: self.settings.to_string(),
            chat_template: crate::log::chat_identity(self.chat.as_ref()),
            shard_count: self.shard.count,
            partition_rule: self.shard.rule.clone(),
        }
    }
}

impl SweepReport {
    /// The sweep these results are of, whatever the models.
    pub fn identity(&self) -> SweepIdentity {
        SweepIdentity {
            items_sha256: self.items_sha256.clone(),
            formats: self.formats.clone(),
            circular: self.circular,
            instruction: self.instruction,
            pride_alpha: self.pride_alpha,
            chat_template: None,
        }
    }

    /// What a share of 1 is written as in this report: 100 in a sweep saved
    /// before schema 2 (accuracy points), else 1.
    fn full_share(&self) -> f64 {
        if self.schema_version < 2 {
            100.0
        } else {
            1.0
        }
    }

    /// A sweep saved before schema 2, in accuracy points, brought to
    /// fractions; a newer one is left as it is.
    fn migrate(&mut self) {
        if self.schema_version >= 2 {
            return;
        }
        let fraction = |x: &mut f64| *x /= 100.0;
        for m in &mut self.models {
            for f in &mut m.formats {
                fraction(&mut f.accuracy);
                f.accuracy_by_rotation.iter_mut().for_each(fraction);
                f.circular_accuracy.as_mut().map(fraction);
                for (low, high) in f.accuracy_interval.iter_mut().chain(f.circular_interval.iter_mut()) {
                    fraction(low);
                    fraction(high);
                }
                fraction(&mut f.rstd);
                if let Some(p) = &mut f.pride {
                    [&mut p.accuracy_before, &mut p.accuracy_after, &mut p.rstd_before, &mut p.rstd_after].into_iter().for_each(fraction);
                }
            }
            for spread in std::iter::once(&mut m.accuracy_across_formats).chain(m.circular_accuracy_across_formats.as_mut()) {
                [&mut spread.mean, &mut spread.std, &mut spread.min, &mut spread.max].into_iter().for_each(fraction);
            }
        }
        self.schema_version = crate::results::SCHEMA_VERSION;
    }
}

fn items_sha256(items: &[Item]) -> String {
    let key: Vec<(&str, &[String], usize)> = items.iter().map(|i| (i.stem.as_str(), &i.options[..], i.gold)).collect();
    sha256_hex(&serde_json::to_vec(&key).expect("strings serialise"))
}

/// Saved sweeps of the same items side by side: their models in one report,
/// compared again.
pub fn merge_saved(paths: &[PathBuf]) -> Result<SweepReport, EvalError> {
    let mut merged: Option<SweepReport> = None;
    for (i, path) in paths.iter().enumerate() {
        let bytes = mcscore_format::read_input(path)?;
        let not_a_sweep = |source| EvalError::Sweep(SweepError::NotASweep { path: path.clone(), source });
        let bad = |fault| EvalError::Sweep(SweepError::BadSweep { path: path.clone(), fault: Box::new(fault) });
        // The version alone first: a newer schema is named as such, not as
        // whatever field it changed.
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            schema_version: u64,
        }
        let max = crate::results::SCHEMA_VERSION;
        let version = serde_json::from_slice::<Version>(&bytes).map_err(not_a_sweep)?.schema_version;
        if version > u64::from(max) {
            return Err(bad(SweepFault::NewerSchema { version, max }));
        }
        let mut report: SweepReport = serde_json::from_slice(&bytes).map_err(not_a_sweep)?;
        if report.formats.is_empty() || report.models.is_empty() {
            return Err(bad(SweepFault::Empty { formats: report.formats.len(), models: report.models.len() }));
        }
        if let Some(m) = report.models.iter().find(|m| m.formats.len() != report.formats.len()) {
            return Err(bad(SweepFault::FormatCount { model: m.model.clone(), found: m.formats.len(), formats: report.formats.len() }));
        }
        let pride = report.pride_alpha.is_some();
        if let Some((m, f)) = report.models.iter().find_map(|m| Some((m, m.formats.iter().find(|f| f.pride.is_some() != pride)?))) {
            let fault = SweepFault::Pride { model: m.model.clone(), format: f.format.clone(), has: !pride, alpha: report.pride_alpha };
            return Err(bad(fault));
        }
        // Checked as saved, so that a fault names the value the file holds.
        check_figures(&report).map_err(bad)?;
        report.migrate();
        if let Some(earlier) = paths[..i].iter().find(|p| mcscore_format::same_file(p, path)) {
            return Err(bad(SweepFault::Repeated { earlier: earlier.clone() }));
        }
        let Some(first) = merged.as_mut() else {
            merged = Some(report);
            continue;
        };
        if let Some(m) = first.identity().mismatch(&report.identity()) {
            return Err(EvalError::Sweep(SweepError::OtherSweep { path: path.clone(), what: m.field, first: paths[0].clone() }));
        }
        first.models.extend(report.models);
    }
    let mut report = merged.ok_or(EvalError::NoLogs)?;
    report.comparison = (report.models.len() > 1).then(|| compare(&report.models, report.circular));
    Ok(report)
}

/// Why the figures of a saved sweep cannot be a sweep's, if they cannot.
fn check_figures(report: &SweepReport) -> Result<(), SweepFault> {
    if report.tasks == 0 {
        return Err(SweepFault::NoTasks);
    }
    let mut names = HashSet::new();
    if let Some(twice) = report.formats.iter().find(|f| !names.insert(f.as_str())) {
        return Err(SweepFault::FormatTwice(twice.clone()));
    }
    let n = report.tasks as u128;
    for m in &report.models {
        if m.prompts == 0 || m.scoring_seconds.is_nan() || m.scoring_seconds < 0.0 {
            return Err(SweepFault::Prompts { model: m.model.clone(), prompts: m.prompts, seconds: m.scoring_seconds });
        }
        if let Some((f, name)) = m.formats.iter().zip(&report.formats).find(|(f, name)| f.format != **name) {
            return Err(SweepFault::FormatOrder { model: m.model.clone(), found: f.format.clone(), listed: name.clone() });
        }
        for f in &m.formats {
            let (model, format) = (|| m.model.clone(), || f.format.clone());
            // Fractions, or points in a sweep saved before schema 2; Wilson
            // bounds of 0 or n of n can land an ulp outside.
            let top = report.full_share();
            let fraction = |what: &'static str, value: f64| {
                if (-1e-9..=top * (1.0 + 1e-9)).contains(&value) {
                    Ok(())
                } else {
                    Err(SweepFault::OutOfRange { model: model(), format: format(), what, value, top })
                }
            };
            fraction("accuracy", f.accuracy)?;
            for &r in &f.accuracy_by_rotation {
                fraction("a rotation's accuracy", r)?;
            }
            let intervals = [
                ("accuracy_interval", Some(f.accuracy), f.accuracy_interval),
                ("circular_interval", f.circular_accuracy, f.circular_interval),
            ];
            for (what, estimate, interval) in intervals {
                if let Some((low, high)) = interval {
                    fraction(what, low)?;
                    fraction(what, high)?;
                    // A Wilson interval holds its proportion (to rounding).
                    if low > high || estimate.is_some_and(|e| e < low - 1e-9 || e > high + 1e-9) {
                        return Err(SweepFault::Interval { model: model(), format: format(), what, low, high });
                    }
                }
            }
            f.circular_accuracy.map_or(Ok(()), |c| fraction("circular_accuracy", c))?;
            fraction("rstd", f.rstd)?;
            if let Some(value) = f.pia.filter(|p| !(-1e-9..=1.0 + 1e-9).contains(p)) {
                return Err(SweepFault::Pia { model: model(), format: format(), value });
            }
            if let Some(pride) = &f.pride {
                for (what, value) in [
                    ("PriDe's accuracy_before", pride.accuracy_before),
                    ("PriDe's accuracy_after", pride.accuracy_after),
                    ("PriDe's rstd_before", pride.rstd_before),
                    ("PriDe's rstd_after", pride.rstd_after),
                ] {
                    fraction(what, value)?;
                }
            }
            // One count per position; every task counted once, or once per rotation with --circular.
            let k = f.picks.len();
            let picked: u128 = f.picks.iter().map(|&p| p as u128).sum();
            let (least, most) = if report.circular { (2 * n, k as u128 * n) } else { (n, n) };
            if !(2..=mcscore_format::MAX_OPTIONS).contains(&k) || f.accuracy_by_rotation.len() > k || !(least..=most).contains(&picked) {
                return Err(SweepFault::Picks {
                    model: model(),
                    format: format(),
                    picked,
                    positions: k,
                    rotations: f.accuracy_by_rotation.len(),
                    tasks: report.tasks,
                    circular: report.circular,
                });
            }
        }
        let accuracies: Vec<f64> = m.formats.iter().map(|f| f.accuracy).collect();
        let circular: Option<Vec<f64>> = m.formats.iter().map(|f| f.circular_accuracy).collect();
        let saved = std::iter::once((&m.accuracy_across_formats, Some(accuracies)))
            .chain(m.circular_accuracy_across_formats.as_ref().map(|s| (s, circular)));
        for (spread_saved, values) in saved {
            let Some(values) = values else {
                return Err(SweepFault::CircularSpread { model: m.model.clone() });
            };
            let again = spread(&values, &report.formats);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
            if ![
                (again.mean, spread_saved.mean),
                (again.std, spread_saved.std),
                (again.min, spread_saved.min),
                (again.max, spread_saved.max),
            ]
            .iter()
            .all(|&(a, b)| close(a, b))
            {
                return Err(SweepFault::Spread { model: m.model.clone() });
            }
        }
    }
    Ok(())
}

/// Writes a report (or a shard's scores) as pretty JSON to `path`,
/// atomically; `existing` says whether a regular file there may be replaced.
pub fn save(report: &impl Serialize, path: &Path, existing: mcscore_format::Existing) -> Result<(), EvalError> {
    let mut file = AtomicFile::with(path, existing)?;
    serde_json::to_writer_pretty(&mut file, report).map_err(|e| EvalError::Io { path: path.to_owned(), source: e.into() })?;
    file.commit()?;
    Ok(())
}

/// Items whose rotations calibrate PriDe: a seeded share α of them.
fn calibration_items(n: usize, alpha: f64) -> HashSet<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::new(0);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    // At least one task calibrates and one is debiased. n >= 2: Sweep::new refuses PriDe on fewer.
    let take = ((alpha * n as f64).ceil() as usize).clamp(1, n - 1);
    order.into_iter().take(take).collect()
}

/// Every prompt, item by item, then rotation, then format: prompts that share
/// the most leading tokens sit next to each other, for the engine's prefix tree.
fn render(
    items: &Items,
    formats: &[PromptFormat],
    rotations_of: impl Fn(usize) -> usize,
    instruction: bool,
) -> Result<Vec<Prompt>, EvalError> {
    let mut prompts = Vec::new();
    for (p, item) in items.items.iter().enumerate() {
        for rotation in 0..rotations_of(p) {
            for (f, format) in formats.iter().enumerate() {
                let (question, ids, gold) = format.render(item, rotation, instruction).ok_or_else(|| {
                    EvalError::Sweep(SweepError::NoIds {
                        label: items.label.clone(),
                        task: items.indices[p],
                        options: item.options.len(),
                        format: format.name(),
                    })
                })?;
                prompts.push(Prompt { item: p, format: f, rotation, question, ids, gold });
            }
        }
    }
    Ok(prompts)
}

/// How often each of `positions` positions was picked.
fn position_counts(picks: &[usize], positions: usize) -> Vec<usize> {
    let mut counts = vec![0; positions];
    for &p in picks {
        counts[p] += 1;
    }
    counts
}

fn task_of(prompt: &Prompt) -> Task<'_> {
    Task::new(&prompt.question, prompt.ids.iter().map(String::as_str).collect(), prompt.gold)
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

#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct Spread {
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub min_format: String,
    pub max: f64,
    pub max_format: String,
}

fn spread(values: &[f64], names: &[String]) -> Spread {
    // The first minimum is the first maximum of the negated values.
    let argmin = first_max(values.iter().map(|v| -v));
    let argmax = first_max(values.iter().copied());
    Spread {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        std: if values.len() > 1 { std_dev(values) } else { 0.0 },
        min: values[argmin],
        min_format: names[argmin].clone(),
        max: values[argmax],
        max_format: names[argmax].clone(),
    }
}

#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct Pride {
    /// The position prior, per ID position.
    pub prior: Vec<f64>,
    pub calibration_tasks: usize,
    /// Tasks debiased (scored in the original order only).
    pub debiased_tasks: usize,
    pub accuracy_before: f64,
    pub accuracy_after: f64,
    pub rstd_before: f64,
    pub rstd_after: f64,
    /// How often each position was picked among the debiased tasks, before
    /// and after PriDe (absent in sweeps saved by earlier mcscores).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub picks_before: Vec<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub picks_after: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct FormatResult {
    pub format: String,
    /// The share of tasks right with the options in source order.
    pub accuracy: f64,
    /// Its 95 % Wilson interval (absent in sweeps saved by earlier
    /// mcscores, which re-save as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy_interval: Option<(f64, f64)>,
    /// The share right per rotation (rotation r puts option r first); with --circular.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accuracy_by_rotation: Vec<f64>,
    /// The share of tasks right under every rotation; with --circular.
    pub circular_accuracy: Option<f64>,
    /// Its 95 % Wilson interval (absent in sweeps saved before it was kept).
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

#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelSweep {
    pub model: String,
    pub prompts: usize,
    pub tokens_decoded: usize,
    /// What scoring every prompt on its own would decode.
    pub tokens_unshared: usize,
    pub scoring_seconds: f64,
    pub formats: Vec<FormatResult>,
    pub accuracy_across_formats: Spread,
    pub circular_accuracy_across_formats: Option<Spread>,
    /// The chat template the prompts were scored inside, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<crate::chat::ChatHeader>,
}

impl ModelSweep {
    /// Tokens decoded for each token that scoring every prompt on its own
    /// would decode: what sharing prefixes saved.
    pub fn sharing_ratio(&self) -> f64 {
        self.tokens_decoded as f64 / self.tokens_unshared.max(1) as f64
    }
}

#[derive(Serialize)]
#[non_exhaustive]
pub struct Comparison {
    /// What models are ranked by.
    pub ranked_by: &'static str,
    /// Per model: how many formats rank it 1st, 2nd, ….
    pub rank_distribution: Vec<Vec<usize>>,
    pub pairs: Vec<PairRecord>,
    /// Share of (model pair, format pair) combinations whose order flips.
    pub reversal_rate: f64,
    pub kendall_tau_mean: f64,
    pub kendall_tau_min: f64,
    /// Format pairs where τ is defined (neither format ties every model).
    pub kendall_pairs: usize,
}

#[derive(Serialize, Deserialize)]
#[non_exhaustive]
pub struct SweepReport {
    /// The results JSON's version ([`crate::results::SCHEMA_VERSION`]);
    /// below 2 (0 where none was saved), accuracies in points.
    #[serde(default)]
    pub schema_version: u32,
    pub file: String,
    pub tasks: usize,
    pub selection: Option<usize>,
    pub formats: Vec<String>,
    pub circular: bool,
    pub instruction: bool,
    pub pride_alpha: Option<f64>,
    /// sha256 of the swept items (stem, options, gold, in order): sweeps
    /// compare only when they scored the same items.
    pub items_sha256: String,
    pub settings: serde_json::Value,
    pub models: Vec<ModelSweep>,
    /// Recomputed whenever sweeps are put side by side.
    #[serde(skip_deserializing)]
    pub comparison: Option<Comparison>,
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
    }
}

fn compare(sweeps: &[ModelSweep], circular: bool) -> Comparison {
    let circular_accuracy: Vec<Vec<f64>> =
        sweeps.iter().map(|m| m.formats.iter().map(|f| f.circular_accuracy.unwrap_or(f.accuracy)).collect()).collect();
    // Circular accuracy that is the same for every model in every format (0
    // for small models) ranks nothing: then the models are ranked by accuracy.
    let first = circular_accuracy.first().and_then(|f| f.first()).copied();
    let circular_ranks = circular && !circular_accuracy.iter().flatten().all(|&a| Some(a) == first);
    let accuracy: Vec<Vec<f64>> =
        if circular_ranks { circular_accuracy } else { sweeps.iter().map(|m| m.formats.iter().map(|f| f.accuracy).collect()).collect() };
    let taus: Vec<f64> = robustness::kendall_between_formats(&accuracy).into_iter().filter(|t| t.is_finite()).collect();
    Comparison {
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
        let c = compare(&sweeps, true);
        assert!(c.ranked_by.starts_with("accuracy (circular accuracy is the same"), "{}", c.ranked_by);
        assert_eq!(c.rank_distribution, [[1, 1], [1, 1]], "each model first in one format, by accuracy");
        assert_eq!(c.reversal_rate, 1.0);
        // Where circular accuracy differs, it ranks.
        let mut sweeps = sweeps;
        sweeps[0].formats[0].circular_accuracy = Some(25.0);
        assert_eq!(compare(&sweeps, true).ranked_by, "circular_accuracy");
    }

    #[test]
    fn saved_sweeps_without_formats_or_with_other_formats_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = |formats: &[&str], model_formats: usize| {
            let result = |i: usize| serde_json::json!({"format": formats.get(i).unwrap_or(&"f"), "accuracy": 50.0, "circular_accuracy": null, "picks": [1, 1], "rstd": 0.0, "pia": null, "pride": null});
            let spread = serde_json::json!({"mean": 50.0, "std": 0.0, "min": 50.0, "min_format": "f", "max": 50.0, "max_format": "f"});
            serde_json::json!({
                "file": "f.bin", "tasks": 2, "selection": null, "formats": formats, "circular": false, "instruction": false,
                "pride_alpha": null, "items_sha256": "ab", "settings": {},
                "models": [{"model": "m.gguf", "prompts": 2, "tokens_decoded": 1, "tokens_unshared": 1, "scoring_seconds": 1.0,
                    "formats": (0..model_formats).map(result).collect::<Vec<_>>(), "accuracy_across_formats": spread, "circular_accuracy_across_formats": null}],
            })
        };
        let write = |name: &str, value: serde_json::Value| {
            let path = dir.path().join(name);
            std::fs::write(&path, value.to_string()).unwrap();
            path
        };
        let good = write("good.json", sweep(&["upper.dot.newline"], 1));
        assert_eq!(merge_saved(std::slice::from_ref(&good)).unwrap().models.len(), 1);
        for (name, value, why) in [
            ("empty.json", sweep(&[], 0), "0 formats and 1 models"),
            ("short.json", sweep(&["upper.dot.newline", "digit.dot.newline"], 1), "m.gguf has results for 1 formats, the sweep 2"),
        ] {
            let path = write(name, value);
            match merge_saved(&[path]) {
                Err(EvalError::Sweep(SweepError::BadSweep { fault, .. })) => assert!(fault.to_string().contains(why), "{fault}"),
                other => panic!("{name}: {:?}", other.map(|r| r.models.len())),
            }
        }
    }
}
