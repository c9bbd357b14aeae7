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
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use mcscore_datasets::formats::{parse_letter_task, PromptFormat};
use mcscore_datasets::{Benchmark, Item, Source};
use mcscore_engine::{plan, Engine, EngineError, PreparedTask, Settings, TokenCounts};
use mcscore_format::{sha256_hex, write_tasks, Task, TaskFile};
use mcscore_metrics::first_max;
use mcscore_metrics::stats::SplitMix64;

use crate::fills::{score_fills, Cancel, FillEvent, FillsEnd, Scoring};
use crate::groups::Groups;
use crate::job::{first, first_per_group, select, Selection};
use crate::log::{ShardHeader, TaskKind};
use crate::shard::{partition, Shard};
use crate::{EvalError, Phase, Progress, SweepError};

mod report;
mod saved;
mod shard;

pub use report::{FormatResult, FormatSpread, ModelSweep, Pride, RankReversals, SweepReport};
pub use saved::{merge_saved, save};
use shard::SHARD_RULE;
use shard::SWEEP_SHARD_VERSION;
pub use shard::{SweepIdentity, SweepRunIdentity, SweepShard};

/// One prompt: an item rendered in a format under a rotation.
#[non_exhaustive]
pub struct Prompt {
    /// Position of the item among the swept items.
    pub item: usize,
    /// The format's index into the sweep's formats (`Sweep::names`), from 0.
    pub format: usize,
    /// How far the options are rotated left, from 0: rotation r puts the item's option r first.
    pub rotation: usize,
    /// The prompt's text: `Question: `, the stem, the options under their IDs, the instruction line
    /// where asked for, and `Answer:`.
    pub question: String,
    /// The option IDs in position order (`A`, `B`, … in the upper-case formats): what is scored after
    /// `question`.
    pub ids: Vec<String>,
    /// The gold option's position in this prompt, from 0 (after the rotation).
    pub gold: usize,
}

/// The swept items, with their index in the file or source.
pub struct Items {
    /// The task file's path as given, or the benchmark's name: what messages and a report's `file` name.
    pub label: String,
    /// Each swept item's index in the file or source, from 0, in the order swept (llama-perplexity's
    /// pick order for a subset).
    pub indices: Vec<usize>,
    /// The items, in the order of `indices`.
    pub items: Vec<Item>,
    /// The items' images and hints, for items of a VQA file; `None` for text.
    pub visual: Option<Visual>,
}

/// What image items hold beside their text, in the order of [`Items::items`].
pub struct Visual {
    /// Each item's images' file bytes.
    pub images: Vec<Vec<Arc<[u8]>>>,
    /// Each item's hint, where it has one.
    pub hints: Vec<Option<String>>,
}

impl Visual {
    /// What goes before an item's prompt: each image at a marker on a line of
    /// its own, then its hint, as VLMEvalKit lays them out.
    fn preamble(&self, item: usize) -> String {
        mcscore_datasets::vqa::preamble(self.images[item].len(), self.hints[item].as_deref())
    }
}

/// Where the items come from.
pub enum ItemSource<'a> {
    /// A letter-mode task file in the letter scaffold, parsed back to items.
    File(&'a Path),
    /// A multiple-choice VQA file in VLMEvalKit's TSV layout (images and hints kept).
    Vqa(&'a Path),
    /// A benchmark's items, read from its source files.
    Benchmark {
        /// The benchmark: which buildable task file, and how its source rows become items.
        benchmark: &'a Benchmark,
        /// Its source files (how the manifest names each, and where it is on disk).
        sources: &'a [Source],
    },
}

/// The items to sweep: all of them, or `subset` picked as llama-perplexity
/// picks tasks; with the selection rule that applied.
pub fn load_items(source: ItemSource<'_>, pick: ItemPick<'_>) -> Result<(Items, Selection), EvalError> {
    let mut visual = None;
    let (label, all): (String, Vec<Item>) = match source {
        ItemSource::Vqa(path) => {
            let rows = mcscore_datasets::vqa::read_vqa(path)?;
            let items =
                rows.iter().map(|r| Item { passage: None, stem: r.question.clone(), options: r.options.clone(), gold: r.gold }).collect();
            visual =
                Some(Visual { images: rows.iter().map(|r| r.images.clone()).collect(), hints: rows.into_iter().map(|r| r.hint).collect() });
            (path.display().to_string(), items)
        }
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
    let (selection, indices) = match pick {
        ItemPick::Subset(subset) => select(TaskKind::MultipleChoice, subset, all.len()),
        ItemPick::First { limit, groups: Some(groups) } => first_per_group(limit, groups, all.len()).ok_or_else(|| {
            EvalError::Spec(crate::error::SpecError::LimitGroupsShort {
                path: label.clone().into(),
                reach: groups.tasks(),
                tasks: all.len(),
            })
        })?,
        ItemPick::First { limit, groups: None } => first(limit, all.len()),
    };
    let items = indices.iter().map(|&i| all[i].clone()).collect();
    let visual = visual.map(|v| Visual {
        images: indices.iter().map(|&i| v.images[i].clone()).collect(),
        hints: indices.iter().map(|&i| v.hints[i].clone()).collect(),
    });
    Ok((Items { label, indices, items, visual }, selection))
}

/// Which items a sweep takes.
#[derive(Debug, Clone, Copy)]
pub enum ItemPick<'a> {
    /// `--tasks N`: llama-perplexity's pick of N; none: every item.
    Subset(Option<usize>),
    /// `--limit N`: the first N items of each of `groups` where given (the
    /// file's manifest records groups), else of the file, in file order.
    First {
        /// Items taken (from each group).
        limit: usize,
        /// The file's groups.
        groups: Option<&'a Groups>,
    },
}

/// How to sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// The prompt formats to render each item in, in order (`PromptFormat::all()` gives all 48).
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
    /// The items swept.
    pub items: Items,
    /// How they are swept.
    pub spec: SweepSpec,
    /// The formats' names, in order.
    pub names: Vec<String>,
    /// Items whose rotations calibrate PriDe.
    calibration: HashSet<usize>,
    /// Every prompt, item by item, then rotation, then format: the order of `Scores::log_probs`
    /// and of a shard's prompts.
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

    /// Scores every prompt with `model` (and, for items with images, its
    /// vision `projector`): the log-probability of each ID, or `None` when
    /// cancelled.
    pub fn score(
        &self,
        model: &Path,
        projector: Option<&Path>,
        settings: &Settings,
        progress: &mut dyn Progress,
        cancel: &Cancel,
    ) -> Result<Option<Scores>, EvalError> {
        Ok(self.score_prompts(model, projector, settings, None, progress, cancel)?.map(|(_, scores)| scores))
    }

    /// Scores the prompts of one shard of the items (every format and rotation
    /// of an item stays in its shard, so shared stems stay shared): contiguous
    /// items balanced by tokens, as [`crate::shard`] splits tasks.
    pub fn score_shard(
        &self,
        model: &Path,
        projector: Option<&Path>,
        settings: &Settings,
        shard: Shard,
        progress: &mut dyn Progress,
        cancel: &Cancel,
    ) -> Result<Option<SweepShard>, EvalError> {
        let shard = shard.check()?;
        let Some((prompts, scores)) = self.score_prompts(model, projector, settings, Some(shard), progress, cancel)? else {
            return Ok(None);
        };
        let items_sha256 = items_sha256(&self.items);
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
            projector_sha256: scores.projector_sha256.clone(),
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
        projector: Option<&Path>,
        settings: &Settings,
        shard: Option<Shard>,
        progress: &mut dyn Progress,
        cancel: &Cancel,
    ) -> Result<Option<(Range<usize>, Scores)>, EvalError> {
        let started = Instant::now();
        let mut engine = Engine::load(model, settings).map_err(EvalError::Load)?;
        if let Some(mmproj) = projector {
            engine.attach_projector(mmproj, settings.threads_batch).map_err(EvalError::Load)?;
        }
        // Hashed before scoring, as `score` does: a file replaced during the
        // run is not recorded as the one that was read.
        let projector_sha256 = projector.map(|p| mcscore_format::sha256_file(p).map_err(EvalError::io(p))).transpose()?;
        let tasks: Vec<(usize, Task<'_>)> = self.prompts.iter().enumerate().map(|(i, p)| (i, task_of(p))).collect();
        let label = Path::new(&self.items.label);
        let template = crate::chat::Template::resolve(&self.spec.chat.template, &engine)?;
        let (mut prepared, chat) = match &self.items.visual {
            Some(visual) => {
                if !self.spec.chat.is_none() {
                    return Err(EvalError::Spec(crate::error::SpecError::ImagesWith { path: label.to_owned(), flag: "--chat-template" }));
                }
                let images: Vec<Vec<Arc<[u8]>>> = self.prompts.iter().map(|p| visual.images[p.item].clone()).collect();
                (engine.prepare_images(&tasks, &images).map_err(|e| self.describe(e))?, None)
            }
            None => crate::chat::prepare(&engine, &self.spec.chat, template.as_ref(), label, &tasks, settings.task_limit(), |e| {
                self.describe(e)
            })?,
        };
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
        engine.check_memory(&plan, settings).map_err(EvalError::engine(label))?;
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
        Ok(Some((prompts, Scores { log_probs, tokens: run.tokens, seconds: started.elapsed().as_secs_f64(), chat, projector_sha256 })))
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

    /// Writes each format and rotation as its own task file `FORMAT.rR.bin` in
    /// `dir`; returns how many.
    /// `inputs` are never replaced (a task file in `dir` named like one of the
    /// outputs is refused, not overwritten).
    pub fn write_tasks(&self, dir: &Path, inputs: &[&Path]) -> Result<usize, EvalError> {
        if self.items.visual.is_some() {
            // A task file holds no images.
            return Err(EvalError::Spec(crate::error::SpecError::ImagesWith {
                path: self.items.label.clone().into(),
                flag: "--write-tasks",
            }));
        }
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

/// One model's log-probabilities of every prompt's IDs, in prompt order.
pub struct Scores {
    /// Per prompt, in `Sweep::prompts` order: the log-probability in nats of each ID, in position order
    /// (summed over the ID's tokens after the prefix every ID's sequence shares).
    pub log_probs: Vec<Vec<f64>>,
    /// Tokens decoded, and what scoring each prompt on its own would decode (summed over the shards
    /// of merged scores, which keep no padding count).
    pub tokens: TokenCounts,
    /// Seconds from loading the model to the last prompt scored (summed over the shards of merged
    /// scores).
    pub seconds: f64,
    /// The chat template the prompts were scored inside, if any.
    pub chat: Option<crate::chat::ChatHeader>,
    /// The sha256 of the vision projector the images were read with, if any.
    pub projector_sha256: Option<String>,
}

/// The items by content: their text, and where they have images, each
/// image's sha256 and the hint.
fn items_sha256(items: &Items) -> String {
    let text: Vec<(&str, &[String], usize)> = items.items.iter().map(|i| (i.stem.as_str(), &i.options[..], i.gold)).collect();
    let key = match &items.visual {
        None => serde_json::to_vec(&text),
        Some(v) => {
            let images: Vec<Vec<String>> = v.images.iter().map(|i| i.iter().map(|b| sha256_hex(b)).collect()).collect();
            serde_json::to_vec(&(text, images, &v.hints))
        }
    };
    sha256_hex(&key.expect("strings serialise"))
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
                let (mut question, ids, gold) = format.render(item, rotation, instruction).ok_or_else(|| {
                    EvalError::Sweep(SweepError::NoIds {
                        label: items.label.clone(),
                        task: items.indices[p],
                        options: item.options.len(),
                        format: format.name(),
                    })
                })?;
                if let Some(visual) = &items.visual {
                    question.insert_str(0, &visual.preamble(p));
                }
                prompts.push(Prompt { item: p, format: f, rotation, question, ids, gold });
            }
        }
    }
    Ok(prompts)
}

fn task_of(prompt: &Prompt) -> Task<'_> {
    Task::new(&prompt.question, prompt.ids.iter().map(String::as_str).collect(), prompt.gold)
}
