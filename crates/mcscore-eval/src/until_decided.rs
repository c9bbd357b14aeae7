//! `compare --until-decided`: BASE and every OTHER score the same tasks, in
//! one seeded random order, a chunk at a time; after each chunk an
//! anytime-valid confidence sequence of each OTHER's paired difference to
//! BASE ([`mcscore_metrics::sequential`]) is looked at, and an OTHER stops
//! as soon as its sequence excludes 0 ("different") or lies inside ±margin
//! ("equivalent"). Every model is loaded once and lent to its job; each
//! writes an ordinary sample log that a resume continues in the same order.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mcscore_engine::{available_memory, host_memory_bounds, Engine, Settings};
use mcscore_metrics::sequential::{ConfidenceSequence, Decision};
use mcscore_metrics::stats::SplitMix64;
use serde::Serialize;

use crate::compare::{self, CompareOptions, Pairing};
use crate::groups::Groups;
use crate::job::{End, Ordered, Running, ScoreJob, ScoreOutcome, ScoreSpec};
use crate::log::{Sequential, Stop};
use crate::run::Run;
use crate::shard::run_sha256;
use crate::{Cancel, EvalError, Progress};
use crate::{SequentialError, SequentialSetting};

/// How the order is drawn: a Fisher–Yates shuffle of the file's task indices
/// (from the last position down, each swapped with a position drawn by
/// `SplitMix64::below` from the seed).
pub(crate) const ORDER_RULE: &str = "fisher-yates/splitmix64";

/// The file's `n` task indices in the order [`ORDER_RULE`] draws from `seed`.
pub(crate) fn shuffled_order(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order
}

/// The default tasks between two looks at the sequences.
pub const DEFAULT_CHUNK: usize = 100;

/// What to compare, and when to stop.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UntilDecidedSpec {
    /// A multiple-choice task file.
    pub file: PathBuf,
    /// BASE's model (a GGUF file), the one every OTHER is compared with.
    pub base: PathBuf,
    /// The OTHERs' models, each compared with BASE (a model given twice is loaded once).
    pub others: Vec<PathBuf>,
    /// llama.cpp's settings, the same for every model.
    pub settings: Settings,
    /// The normalisation, margin and α of the decisions (α split between
    /// the OTHERs), and the bootstrap of the fixed-sample comparison.
    pub options: CompareOptions,
    /// The seed of the task order.
    pub order_seed: u64,
    /// Score at most this many tasks of the order.
    pub max_tasks: Option<usize>,
    /// Tasks scored between two looks.
    pub chunk: usize,
    /// Write a sample log per model here (`base.STEM.jsonl`, `other1.STEM.jsonl`, …).
    pub log_dir: Option<PathBuf>,
    /// Continue the logs in `log_dir` instead of refusing them.
    pub resume: bool,
    /// A folder to cache model hashes in.
    pub hash_cache: Option<PathBuf>,
    /// Every model scores inside this chat template ([`crate::chat`]); none by default.
    pub chat: crate::chat::ChatSpec,
}

impl UntilDecidedSpec {
    /// `others` against `base` on `file`, with the default options, order
    /// seed 1, chunks of [`DEFAULT_CHUNK`], no logs.
    pub fn new(base: impl Into<PathBuf>, others: Vec<PathBuf>, file: impl Into<PathBuf>) -> UntilDecidedSpec {
        UntilDecidedSpec {
            file: file.into(),
            base: base.into(),
            others,
            settings: Settings::default(),
            options: CompareOptions::default(),
            order_seed: 1,
            max_tasks: None,
            chunk: DEFAULT_CHUNK,
            log_dir: None,
            resume: false,
            hash_cache: None,
            chat: crate::chat::ChatSpec::default(),
        }
    }

    /// The log each model writes (BASE first), where logs are written.
    pub fn log_paths(&self) -> Option<Vec<PathBuf>> {
        let dir = self.log_dir.as_ref()?;
        let stem = |p: &Path| label(p);
        let roles = std::iter::once("base".to_owned()).chain((1..=self.others.len()).map(|k| format!("other{k}")));
        Some(roles.zip(self.models()).map(|(role, model)| dir.join(format!("{role}.{}.jsonl", stem(model)))).collect())
    }

    fn models(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.base).chain(&self.others)
    }

    fn check(&self) -> Result<(), EvalError> {
        let bad = |setting: SequentialSetting| Err(EvalError::Sequential(setting.into()));
        let CompareOptions { margin, alpha, .. } = self.options;
        if self.options.normalisation == mcscore_metrics::Normalisation::AccPmi {
            return bad(SequentialSetting::AccPmi);
        }
        if self.others.is_empty() {
            return bad(SequentialSetting::NoOther);
        }
        if !(margin > 0.0 && margin <= 1.0) {
            return bad(SequentialSetting::Margin(margin));
        }
        if !(alpha > 0.0 && alpha < 0.5) {
            return bad(SequentialSetting::Alpha(alpha));
        }
        if self.chunk == 0 || self.max_tasks == Some(0) {
            return bad(SequentialSetting::NoTasks);
        }
        if self.resume && self.log_dir.is_none() {
            return bad(SequentialSetting::ResumeWithoutLogs);
        }
        Ok(())
    }
}

/// One OTHER's state at a look.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct OtherLook {
    /// OTHER's label: its model's file stem.
    pub label: String,
    /// The confidence sequence: (low, high), differences of fractions.
    pub interval: (f64, f64),
    /// Its decision: undecided until the sequence decides, then kept (a decided OTHER scores no more tasks).
    pub decision: Decision,
    /// The tasks it was decided after, once decided.
    pub decided_at: Option<usize>,
}

/// What a look at the sequences shows (the front end's progress line).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Look {
    /// Tasks of the order scored by every model still needed.
    pub tasks: usize,
    /// Tasks in the order.
    pub of: usize,
    /// Each OTHER, in the order given.
    pub others: Vec<OtherLook>,
}

/// One model's part, as the output names it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ModelPart {
    /// The model's label: its file stem.
    pub label: String,
    /// The model's path as given.
    pub model: String,
    /// Its sample log's path; `None` where no logs are written.
    pub log: Option<String>,
    /// Tasks in its log or memory (resumed ones included).
    pub tasks: usize,
    /// Tasks scored by this process (not resumed from its log).
    pub scored: usize,
    /// Seconds this process spent scoring them.
    pub scoring_seconds: f64,
    /// Its scored tasks longer than the model's training context, if any.
    pub beyond_training: Option<crate::BeyondTraining>,
}

/// One OTHER's answer.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct OtherOutcome {
    /// OTHER's model, log and work.
    pub part: ModelPart,
    /// What its confidence sequence decided; undecided where the order ended or the run was interrupted first.
    pub decision: Decision,
    /// "worse", "better", "equivalent within ±2 points", "undecided at ±2:
    /// every task of the file was scored" or "undecided: interrupted".
    pub conclusion: String,
    /// The tasks the decision rests on (all scored ones when undecided).
    pub tasks_used: usize,
    /// OTHER − BASE over those tasks (a difference of fractions).
    pub difference: f64,
    /// The confidence sequence at the stop, at level 1 − α/k.
    pub interval: (f64, f64),
    /// Tasks whose options the two models tokenise into different numbers of
    /// tokens (models with different vocabularies still compare task by task).
    pub tasks_tokenised_differently: usize,
    /// `compare` on the tasks used, at α/k: descriptive only, since the
    /// number of tasks was chosen by looking (its p-value and TOST are not
    /// valid after a data-dependent stop; the sequence is). `None` before
    /// the first look.
    pub fixed_sample: Option<Pairing>,
}

/// What a sequential comparison found.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct UntilDecided {
    /// The results JSON's version ([`crate::results::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The task file's path as given.
    pub file: String,
    /// The task file's sha256, as hex.
    pub file_sha256: String,
    /// Tasks in the file.
    pub file_tasks: usize,
    /// The name of the rule that draws the order from the seed (`fisher-yates/splitmix64`).
    pub order_rule: &'static str,
    /// The seed the order is drawn from.
    pub order_seed: u64,
    /// sha256 of the order's task indices, as decimal numbers joined by commas (a shard's `run_sha256` rule).
    pub order_sha256: String,
    /// Tasks the order holds (the file's, or --max-tasks of them).
    pub order_tasks: usize,
    /// Tasks scored between two looks at the sequences.
    pub chunk: usize,
    /// The normalisation whose right or wrong the sequences follow (`acc`, `acc_norm`, …).
    pub normalisation: &'static str,
    /// The equivalence margin: a difference of accuracies (a fraction).
    pub margin: f64,
    /// The error rate asked for, before it is split over the OTHERs.
    pub alpha: f64,
    /// α/k for k OTHERs (Bonferroni): each sequence's level is 1 − this.
    pub alpha_each: f64,
    /// Ctrl-C stopped it; the logs are resumable.
    pub interrupted: bool,
    /// BASE's model, log and work.
    pub base: ModelPart,
    /// Each OTHER's answer, in the order given.
    pub others: Vec<OtherOutcome>,
    /// Seconds the whole comparison took: loading the models, preparing and scoring.
    pub wall_seconds: f64,
    /// Scoring every model on every task of the order, from the seconds a
    /// task took each model here; `None` when nothing was scored.
    pub whole_order_seconds: Option<f64>,
}

impl UntilDecided {
    /// How many times longer scoring every model on every task of the
    /// order would take than this run took.
    pub fn speed_up(&self) -> Option<f64> {
        self.whole_order_seconds.map(|whole| whole / self.wall_seconds.max(1e-9))
    }
}

/// Every model of a comparison, loaded once however many roles it has.
struct Loaded {
    engines: Vec<Engine>,
    /// Per role (BASE first): its engine.
    of_model: Vec<usize>,
    /// The memory available before any was loaded, where host memory bounds the run.
    available: Option<u64>,
}

/// Loads every model once, checking the models' weights against the memory
/// available before each is loaded.
fn load_engines(spec: &UntilDecidedSpec) -> Result<Loaded, EvalError> {
    let mut engines: Vec<Engine> = Vec::new();
    let mut canonical: Vec<PathBuf> = Vec::new();
    let mut of_model = Vec::new();
    let available = available_memory().filter(|_| host_memory_bounds(spec.settings.n_gpu_layers));
    let mut weights = 0u64;
    for model in spec.models() {
        let real = std::fs::canonicalize(model).unwrap_or_else(|_| model.clone());
        if let Some(k) = canonical.iter().position(|c| *c == real) {
            of_model.push(k);
            continue;
        }
        // Before the model is loaded: models that cannot be held together
        // would only evict each other's pages.
        weights = weights.saturating_add(std::fs::metadata(model).map_or(0, |m| m.len()));
        if let Some(available) = available.filter(|&a| weights > a) {
            return Err(EvalError::Sequential(SequentialError::ModelsDoNotFit {
                model: model.clone(),
                before: engines.len(),
                what: "their weights",
                needed: weights,
                available,
            }));
        }
        engines.push(Engine::load(model, &spec.settings).map_err(EvalError::Load)?);
        canonical.push(real);
        of_model.push(engines.len() - 1);
    }
    Ok(Loaded { engines, of_model, available })
}

/// Refuses jobs whose models' weights and largest context would not fit in
/// the memory that was available before any was loaded: every model is
/// held at once, and one context at a time (each chunk's is freed after it).
fn check_memory_together(engines: &[Engine], jobs: &[(usize, ScoreJob<'_>)], available: Option<u64>) -> Result<(), EvalError> {
    let Some(available) = available else { return Ok(()) };
    let weights = engines.iter().fold(0u64, |sum, e| sum.saturating_add(e.model_bytes()));
    let largest = jobs.iter().max_by_key(|(e, job)| engines[*e].kv_bytes(job.plan(), job.settings().kv_cache));
    if let Some((e, job)) = largest {
        let needed = weights.saturating_add(engines[*e].kv_bytes(job.plan(), job.settings().kv_cache));
        if needed > available {
            return Err(EvalError::Sequential(SequentialError::ModelsDoNotFit {
                model: engines[*e].path().to_owned(),
                before: engines.len() - 1,
                what: "every model's weights and the largest context, this model's",
                needed,
                available,
            }));
        }
    }
    Ok(())
}

fn label(path: &Path) -> String {
    crate::log::label(&path.to_string_lossy())
}

/// Runs the comparison: loads every model, prepares every job (every refusal
/// before the first decode), scores chunk by chunk until each OTHER is
/// decided, the order ends or `cancel` is set. `on_look` sees the sequences
/// after each chunk; `progress` each task scored.
pub fn until_decided(
    spec: &UntilDecidedSpec,
    groups: Option<&Groups>,
    progress: &mut dyn Progress,
    on_look: &mut dyn FnMut(&Look),
    cancel: &Cancel,
) -> Result<UntilDecided, EvalError> {
    spec.check()?;
    let started = Instant::now();
    let file = crate::job::OpenedFile::open(&spec.file, crate::TaskKind::MultipleChoice, false)?;
    let file_tasks = file.tasks(&spec.file)?.len();
    let file_sha256 = mcscore_format::sha256_hex(file.bytes());
    drop(file);
    let mut order = shuffled_order(file_tasks, spec.order_seed);
    order.truncate(spec.max_tasks.unwrap_or(usize::MAX));
    let loaded = load_engines(spec)?;
    let sequential = sequential_header(spec, &order, file_tasks)?;
    let jobs = prepare_jobs(spec, &loaded, &order, &sequential)?;
    let mut jobs = jobs.into_iter().map(|job| job.start(progress, cancel).map(Some)).collect::<Result<Vec<_>, _>>()?;
    let mut run = Sequences::new(spec, order.len());
    while run.at < run.n && run.decided.iter().any(Option::is_none) {
        if !run.score_chunk(&mut jobs, progress, cancel)? {
            break;
        }
        on_look(&run.look());
        run.stop_decided(&mut jobs)?;
    }
    let outcomes = run.finish(jobs)?;
    let models: Vec<&PathBuf> = spec.models().collect();
    let scored = |m: usize| outcomes[m].records.len() - outcomes[m].resumed;
    let part = |m: usize| ModelPart {
        label: label(models[m]),
        model: models[m].display().to_string(),
        log: run.log_paths.as_ref().map(|p| p[m].display().to_string()),
        tasks: outcomes[m].records.len(),
        scored: scored(m),
        scoring_seconds: outcomes[m].scoring_seconds,
        beyond_training: outcomes[m].beyond_training,
    };
    // Every model that scored here; `None` when none did (a finished comparison resumed).
    let whole_order_seconds = (0..outcomes.len())
        .filter(|&m| scored(m) > 0)
        .map(|m| outcomes[m].scoring_seconds / scored(m) as f64 * run.n as f64)
        .reduce(|a, b| a + b);
    let others = (0..spec.others.len())
        .map(|o| run.outcome_of(o, part(o + 1), &outcomes, groups, file_tasks))
        .collect::<Result<Vec<_>, EvalError>>()?;
    Ok(UntilDecided {
        schema_version: crate::results::SCHEMA_VERSION,
        file: spec.file.display().to_string(),
        file_sha256,
        file_tasks,
        order_rule: ORDER_RULE,
        order_seed: spec.order_seed,
        order_sha256: sequential.order_sha256,
        order_tasks: run.n,
        chunk: spec.chunk,
        normalisation: spec.options.normalisation.name(),
        margin: spec.options.margin,
        alpha: spec.options.alpha,
        alpha_each: run.alpha_each,
        interrupted: run.interrupted,
        base: part(0),
        others,
        wall_seconds: started.elapsed().as_secs_f64(),
        whole_order_seconds,
    })
}

/// What every log of the comparison records of it: the order, the rule
/// and every model's sha256 (hashed only where logs are written).
fn sequential_header(spec: &UntilDecidedSpec, order: &[usize], file_tasks: usize) -> Result<Sequential, EvalError> {
    let hashes: Vec<String> = match spec.log_dir {
        Some(_) => spec
            .models()
            .map(|m| match &spec.hash_cache {
                Some(cache) => crate::hashes::sha256_cached(m, cache).map(|(h, _)| h),
                None => mcscore_format::sha256_file(m).map_err(EvalError::io(m.as_path())),
            })
            .collect::<Result<_, _>>()?,
        None => vec![String::new(); spec.others.len() + 1],
    };
    Ok(Sequential {
        order_rule: ORDER_RULE.to_owned(),
        seed: spec.order_seed,
        order_sha256: run_sha256(order.iter().copied()),
        file_tasks,
        chunk: spec.chunk,
        alpha: spec.options.alpha,
        margin: spec.options.margin,
        normalisation: spec.options.normalisation.name().to_owned(),
        base_sha256: hashes[0].clone(),
        other_sha256: hashes[1..].to_vec(),
    })
}

/// Every model's job (BASE first), each on its engine, checked together
/// against the memory available before any model was loaded.
fn prepare_jobs<'e>(
    spec: &UntilDecidedSpec,
    loaded: &'e Loaded,
    order: &[usize],
    sequential: &Sequential,
) -> Result<Vec<ScoreJob<'e>>, EvalError> {
    let log_paths = spec.log_paths();
    let mut prepared: Vec<(usize, ScoreJob<'_>)> = Vec::with_capacity(loaded.of_model.len());
    for (m, &e) in loaded.of_model.iter().enumerate() {
        // The engine's own path: a model given twice is loaded once.
        let engine = &loaded.engines[e];
        let mut job_spec = ScoreSpec::new(engine.path(), &spec.file);
        job_spec.settings = spec.settings.clone();
        job_spec.log = log_paths.as_ref().map(|p| p[m].clone());
        job_spec.resume = spec.resume;
        job_spec.model_sha256 = (!sequential.base_sha256.is_empty()).then(|| {
            if m == 0 {
                sequential.base_sha256.clone()
            } else {
                sequential.other_sha256[m - 1].clone()
            }
        });
        job_spec.ordered = Some(Ordered { order: order.to_vec(), sequential: sequential.clone() });
        job_spec.chat = spec.chat.clone();
        prepared.push((e, ScoreJob::with_engine(engine, job_spec)?));
    }
    check_memory_together(&loaded.engines, &prepared, loaded.available)?;
    Ok(prepared.into_iter().map(|(_, job)| job).collect())
}

/// The comparison as it scores: each OTHER's confidence sequence and
/// decision, and each model's outcome once its job has ended.
struct Sequences<'s> {
    spec: &'s UntilDecidedSpec,
    models: Vec<&'s PathBuf>,
    log_paths: Option<Vec<PathBuf>>,
    /// Tasks in the order, and of them scored by every model still needed.
    n: usize,
    at: usize,
    alpha_each: f64,
    sequences: Vec<ConfidenceSequence>,
    /// Per OTHER: its decision and the tasks it rests on, once decided.
    decided: Vec<Option<(Decision, usize)>>,
    /// Per model (BASE first): its outcome, once its job has ended.
    outcomes: Vec<Option<ScoreOutcome>>,
    interrupted: bool,
}

impl<'s> Sequences<'s> {
    fn new(spec: &'s UntilDecidedSpec, n: usize) -> Sequences<'s> {
        let k = spec.others.len();
        let alpha_each = spec.options.alpha / k as f64;
        Sequences {
            spec,
            models: spec.models().collect(),
            log_paths: spec.log_paths(),
            n,
            at: 0,
            alpha_each,
            sequences: (0..k).map(|_| ConfidenceSequence::new(alpha_each)).collect(),
            decided: vec![None; k],
            outcomes: (0..=k).map(|_| None).collect(),
            interrupted: false,
        }
    }

    /// The log of model `m`, or the model where no log is written.
    fn source(&self, m: usize) -> PathBuf {
        self.log_paths.as_ref().map_or_else(|| self.models[m].clone(), |p| p[m].clone())
    }

    /// BASE and every OTHER still undecided score the next chunk, and each
    /// undecided sequence takes its tasks; false when `cancel` stopped it.
    fn score_chunk(&mut self, jobs: &mut [Option<Running<'_>>], progress: &mut dyn Progress, cancel: &Cancel) -> Result<bool, EvalError> {
        let (at, end) = (self.at, (self.at + self.spec.chunk).min(self.n));
        for m in std::iter::once(0).chain((1..jobs.len()).filter(|&m| self.decided[m - 1].is_none())) {
            let job = jobs[m].as_mut().expect("an undecided model's job is running");
            if !job.score_to(end, progress, cancel)? {
                self.interrupted = true;
                return Ok(false);
            }
            if job.records().len() < end {
                return Err(EvalError::Sequential(SequentialError::SequentialLog {
                    path: self.source(m),
                    why: format!(
                        "the log is complete after {} tasks of the order, but the stopping rule had not decided there (the log was edited, or written by another mcscore)",
                        job.records().len()
                    ),
                }));
            }
        }
        let norm = self.spec.options.normalisation;
        let base = jobs[0].as_ref().expect("BASE's job runs until the end").records();
        for o in 0..self.decided.len() {
            if self.decided[o].is_some() {
                continue;
            }
            let other = jobs[o + 1].as_ref().expect("undecided").records();
            // both jobs scored this chunk, so hold end records (checked above); check() refused acc_pmi
            for t in at..end {
                self.sequences[o].push(base[t].correct.get(norm), other[t].correct.get(norm));
            }
            let decision = self.sequences[o].decision(self.spec.options.margin);
            if decision != Decision::Undecided {
                self.decided[o] = Some((decision, end));
            }
        }
        self.at = end;
        Ok(true)
    }

    /// What the sequences show now.
    fn look(&self) -> Look {
        Look {
            tasks: self.at,
            of: self.n,
            others: (0..self.decided.len())
                .map(|o| OtherLook {
                    label: label(self.models[o + 1]),
                    interval: self.sequences[o].interval(),
                    decision: self.decided[o].map_or(Decision::Undecided, |d| d.0),
                    decided_at: self.decided[o].map(|d| d.1),
                })
                .collect(),
        }
    }

    /// Decided OTHERs end now, complete: their logs stop here.
    fn stop_decided(&mut self, jobs: &mut [Option<Running<'_>>]) -> Result<(), EvalError> {
        for o in 0..self.decided.len() {
            let Some((decision, used)) = self.decided[o] else { continue };
            let Some(job) = jobs[o + 1].take() else { continue };
            let stop = if decision == Decision::Different { Stop::Different } else { Stop::Equivalent };
            let outcome = job.stop(stop)?;
            let logged_other = matches!(outcome.end, End::Stopped(s) if s != stop) || outcome.records.len() != used;
            if logged_other {
                return Err(EvalError::Sequential(SequentialError::SequentialLog {
                    path: self.source(o + 1),
                    why: format!(
                        "the log ended {:?} after {} tasks, but the stopping rule decides {decision:?} after {used} (the log was edited, or written by another mcscore)",
                        outcome.end,
                        outcome.records.len()
                    ),
                }));
            }
            self.outcomes[o + 1] = Some(outcome);
        }
        Ok(())
    }

    /// Whatever is still running ends: complete at the end of the order,
    /// stopped when every OTHER is decided, resumable after Ctrl-C. Every
    /// model's outcome, BASE first.
    fn finish(&mut self, jobs: Vec<Option<Running<'_>>>) -> Result<Vec<ScoreOutcome>, EvalError> {
        let all_decided = !self.interrupted && self.decided.iter().all(Option::is_some);
        for (m, job) in jobs.into_iter().enumerate() {
            if let Some(job) = job {
                self.outcomes[m] = Some(if m == 0 && all_decided { job.stop(Stop::EveryOtherDecided)? } else { job.finish()? });
            }
        }
        Ok(self.outcomes.iter_mut().map(|o| o.take().expect("every job ended")).collect())
    }

    /// OTHER `o`'s answer, with its `part`: the decision in words, the
    /// sequence at the stop, and `compare` on the tasks it rests on.
    fn outcome_of(
        &self,
        o: usize,
        part: ModelPart,
        outcomes: &[ScoreOutcome],
        groups: Option<&Groups>,
        file_tasks: usize,
    ) -> Result<OtherOutcome, EvalError> {
        let used = self.decided[o].map_or(self.at, |d| d.1);
        let as_run = |m: usize| Run {
            label: label(self.models[m]),
            source: self.source(m),
            header: outcomes[m].header.clone(),
            records: outcomes[m].records[..used.min(outcomes[m].records.len())].to_vec(),
        };
        let (base_run, other_run) = (as_run(0), as_run(o + 1));
        let options = CompareOptions { alpha: self.alpha_each, ..self.spec.options };
        let fixed_sample = match used {
            0 => None,
            _ => compare::compare(&base_run, std::slice::from_ref(&other_run), groups, &options)?.others.into_iter().next(),
        };
        let decision = self.decided[o].map_or(Decision::Undecided, |d| d.0);
        let (low, high) = self.sequences[o].interval();
        let margin = self.spec.options.margin;
        let conclusion = match decision {
            Decision::Different if high < 0.0 => "worse".to_owned(),
            Decision::Different => "better".to_owned(),
            Decision::Equivalent => format!("equivalent {}", compare::within(margin)),
            Decision::Undecided if self.interrupted => "undecided: interrupted".to_owned(),
            Decision::Undecided if self.n < file_tasks => {
                format!("undecided at {}: the {} tasks --max-tasks allows were scored", compare::plus_minus(margin), self.n)
            }
            Decision::Undecided => format!("undecided at {}: every task of the file was scored", compare::plus_minus(margin)),
        };
        let differently = base_run
            .records
            .iter()
            .zip(&other_run.records)
            .filter(|(b, r)| b.options.iter().zip(&r.options).any(|(x, y)| x.tokens != y.tokens))
            .count();
        Ok(OtherOutcome {
            part,
            decision,
            conclusion,
            tasks_used: used,
            difference: fixed_sample.as_ref().map_or(0.0, |p| p.difference.estimate),
            interval: (low, high),
            tasks_tokenised_differently: differently,
            fixed_sample,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_a_seeded_permutation() {
        let order = shuffled_order(1000, 7);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_eq!(order, shuffled_order(1000, 7));
        assert_ne!(order, shuffled_order(1000, 8));
        assert_ne!(order, (0..1000).collect::<Vec<_>>());
        assert!(shuffled_order(0, 1).is_empty());
        assert_eq!(shuffled_order(1, 1), [0]);
    }

    #[test]
    fn every_role_gets_its_own_log() {
        let mut spec = UntilDecidedSpec::new("m/a.gguf", vec!["n/a.gguf".into(), "b.gguf".into()], "f.bin");
        assert_eq!(spec.log_paths(), None);
        spec.log_dir = Some("logs".into());
        let logs = spec.log_paths().unwrap();
        assert_eq!(logs, [PathBuf::from("logs/base.a.jsonl"), "logs/other1.a.jsonl".into(), "logs/other2.b.jsonl".into()]);
    }
}
