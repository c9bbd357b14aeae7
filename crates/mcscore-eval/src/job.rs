//! A scoring job: a task file (strict or lenient), a subset, the optional
//! unconditional pass for acc_pmi, a sample log that can be resumed, and
//! cancellation (see `fills`). [`ScoreJob::prepare`] does everything that can
//! fail before the first decode; [`ScoreJob::run`] scores.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mcscore_engine::{hellaswag_order, plan, select_tasks, Engine, Plan, PreparedTask, Settings, TokenCounts};
use mcscore_format::{
    read_hellaswag, read_lenient, read_winogrande, sha256_file, sha256_hex, Baselines, Error as FormatError, Fault, Task, TaskFile,
};
use mcscore_metrics::{Normalisation, Proportion};

use crate::chat::{ChatSpec, Template};
use crate::fills::{score_fills, Cancel, FillEvent, FillsEnd, MemorySeen, Scoring};
use crate::groups::Groups;
use crate::log::ShardHeader;
use crate::log::{normalisations, Header, Opened, ProjectorHeader, SampleLog, Stop, TaskKind, TaskRecord};
use crate::shard::{partition, run_sha256, Shard};
use crate::{ChatError, SequentialError, SpecError};
use crate::{EvalError, Phase, Progress};
use mcscore_datasets::vqa::VqaTask;

/// The context of the unconditional pass of acc_pmi (lm-evaluation-harness, OLMES).
pub(crate) const UNCONDITIONAL_CONTEXT: &str = "Answer:";

/// What to score, and how: [`ScoreSpec::new`], then the fields to change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScoreSpec {
    /// The file to score: a `.bin` task file, or HellaSwag's text or a Winogrande CSV as `kind` says.
    pub file: PathBuf,
    /// The mode: how `file` is read, how its tasks are picked and what of each option is scored.
    pub kind: TaskKind,
    /// The GGUF model to score with (for [`ScoreJob::with_engine`], the path its engine was loaded from).
    pub model: PathBuf,
    /// Score a file that fails strict validation the way llama.cpp reads it.
    pub lenient: bool,
    /// Score this many tasks, picked as llama-perplexity picks them for `kind`.
    pub subset: Option<usize>,
    /// Score the file's first this many tasks, in file order (not with `subset`).
    pub limit: Option<usize>,
    /// Apply `limit` to each of these groups instead (lm-eval's `--limit`,
    /// which counts each subtask's first documents): they must reach every
    /// task of the file.
    pub limit_groups: Option<Groups>,
    /// Also score every option after the unconditional context `Answer:`
    /// alone (the acc_pmi pass).
    pub pmi: bool,
    /// llama.cpp's settings (context, fill size, threads, GPU layers, mmap).
    pub settings: Settings,
    /// Write (or continue) a sample log here.
    pub log: Option<PathBuf>,
    /// Continue the log of an interrupted run instead of refusing it.
    pub resume: bool,
    /// Hash the model even without a log (for results that name it).
    pub hash_model: bool,
    /// A folder to cache model hashes in (by path, size and modification time).
    pub hash_cache: Option<PathBuf>,
    /// Score only this shard of the run ([`crate::shard`]).
    pub shard: Option<Shard>,
    /// Take the tasks in this order, recorded in the log (a sequential
    /// comparison's); with it, no subset, shard or acc_pmi pass.
    pub ordered: Option<Ordered>,
    /// The model's sha256 where the caller has read it already, so that a
    /// large model is read once.
    pub model_sha256: Option<String>,
    /// Score inside a chat template ([`crate::chat`]); none by default.
    pub chat: ChatSpec,
    /// A vision projector (llama.cpp's `mmproj` GGUF) for the model, to read
    /// the images of a file of image tasks (VLMEvalKit's TSV, `.tsv`).
    pub mmproj: Option<PathBuf>,
}

/// llama-perplexity's default `--hellaswag-tasks`: a HellaSwag run given no
/// subset, limit or order scores this many of the file's tasks, picked as it
/// picks them (a subset of 0 scores every task).
pub(crate) const HELLASWAG_DEFAULT_TASKS: usize = 400;

impl ScoreSpec {
    /// Refuses settings that do not go together, before anything is read.
    fn check(&self) -> Result<(), EvalError> {
        let path = || self.file.clone();
        if self.pmi && self.kind == TaskKind::Winogrande {
            return Err(EvalError::Spec(SpecError::PmiWinogrande { path: path() }));
        }
        if self.kind == TaskKind::LmEval && !self.chat.is_none() {
            return Err(EvalError::Spec(SpecError::LmEvalChat { path: path() }));
        }
        if self.ordered.is_some() && (self.subset.is_some() || self.limit.is_some() || self.shard.is_some() || self.pmi) {
            return Err(EvalError::Spec(SpecError::OrderedWith { path: path() }));
        }
        if self.limit.is_some() && self.subset.is_some() {
            return Err(EvalError::Spec(SpecError::LimitWithSubset { path: path() }));
        }
        if self.limit == Some(0) {
            return Err(EvalError::Spec(SpecError::ZeroLimit { path: path() }));
        }
        if let Some(shard) = self.shard {
            shard.check()?;
        }
        if self.mmproj.is_none() && self.kind == TaskKind::MultipleChoice && mcscore_datasets::vqa::is_vqa_file(&self.file) {
            return Err(EvalError::Spec(SpecError::ImagesWithoutProjector { path: path() }));
        }
        if !self.chat.is_none() && self.kind == TaskKind::Winogrande {
            return Err(EvalError::Chat(ChatError::ChatWinogrande { path: path() }));
        }
        if self.chat.is_none() && (self.chat.system.is_some() || self.chat.shots.is_some()) {
            return Err(EvalError::Chat(ChatError::ChatWithoutTemplate { path: path() }));
        }
        Ok(())
    }

    /// The run's tasks, in the order they are scored, from a file of
    /// `file_tasks`: a sequential comparison's order, the first `--limit`,
    /// or llama-perplexity's pick.
    fn run_order(&self, file_tasks: usize) -> Result<(Selection, Vec<usize>), EvalError> {
        Ok(match &self.ordered {
            Some(ordered) => {
                check_order(&ordered.order, file_tasks)
                    .map_err(|why| EvalError::Sequential(SequentialError::NotAnOrder { path: self.file.clone(), why }))?;
                (Selection::All, ordered.order.clone())
            }
            None => match (self.limit, &self.limit_groups) {
                (Some(limit), Some(groups)) => first_per_group(limit, groups, file_tasks).ok_or_else(|| {
                    EvalError::Spec(SpecError::LimitGroupsShort { path: self.file.clone(), reach: groups.tasks(), tasks: file_tasks })
                })?,
                (Some(limit), None) => first(limit, file_tasks),
                (None, _) => select(self.kind, self.effective_subset(), file_tasks),
            },
        })
    }

    /// This shard's header and its range of `order`, for a shard's run. A
    /// shard cuts the run by its tasks' bytes (no tokeniser needed) and reads
    /// and tokenises its own range only: a shard of an 819,772-task file
    /// prepares its tasks, not the run's.
    fn shard_range(&self, order: &[usize], tasks: &Tasks<'_>) -> Result<Option<(ShardHeader, std::ops::Range<usize>)>, EvalError> {
        let Some(shard) = self.shard else { return Ok(None) };
        let bytes: Vec<usize> = order.iter().map(|&i| task_bytes(&tasks.get(i).expect("orders index the file's tasks"))).collect();
        let range = partition(&bytes, shard.count)?.swap_remove(shard.index);
        let header = ShardHeader {
            index: shard.index,
            count: shard.count,
            rule: crate::shard::RULE.to_owned(),
            run_tasks: order.len(),
            file_tasks: tasks.len(),
            run_sha256: run_sha256(order.iter().copied()),
        };
        Ok(Some((header, range)))
    }

    /// The model's sha256 and whether it came from the cache, where a log
    /// records it or the caller asked; empty otherwise.
    fn model_hash(&self) -> Result<(String, bool), EvalError> {
        Ok(match (self.log.is_some() || self.hash_model, &self.hash_cache, &self.model_sha256) {
            (false, _, _) => (String::new(), false),
            (true, _, Some(known)) => (known.clone(), false),
            (true, Some(cache), None) => crate::hashes::sha256_cached(&self.model, cache)?,
            (true, None, None) => (sha256_file(&self.model).map_err(EvalError::io(&self.model))?, false),
        })
    }

    /// The sample log, opened new or resumed after its last task: under the
    /// batch rule a task's numbers do not depend on the fill it lands in.
    /// The header pins the file and the subset; the lines kept must be the
    /// run's tasks (`prepared`) in the run's order too.
    fn open_log(&self, header: &Header, prepared: &[PreparedTask]) -> Result<Logged, EvalError> {
        let Some(log_path) = &self.log else { return Ok(Logged { log: None, kept: Vec::new(), already_complete: false, stopped: None }) };
        let logged = match SampleLog::open(log_path, header, self.resume, |done| done)? {
            Opened::Writing { log, kept } => Logged { log: Some(log), kept, already_complete: false, stopped: None },
            Opened::Complete { records, stopped } => Logged { log: None, kept: records, already_complete: true, stopped },
        };
        if let Some((at, record)) = logged.kept.iter().enumerate().find(|(i, r)| prepared.get(*i).is_none_or(|p| p.index != r.task)) {
            return Err(EvalError::ResumeOtherTasks {
                path: log_path.clone(),
                position: at,
                logged: record.task,
                run: prepared.get(at).map(|p| p.index),
            });
        }
        Ok(logged)
    }

    /// The subset the run takes: `subset`, or its mode's default where it
    /// has one and no limit or order is given (HellaSwag's 400 tasks, as
    /// llama-perplexity's `--hellaswag` defaults to).
    pub fn effective_subset(&self) -> Option<usize> {
        match self.subset {
            None if self.kind == TaskKind::HellaSwag && self.limit.is_none() && self.ordered.is_none() => Some(HELLASWAG_DEFAULT_TASKS),
            subset => subset,
        }
    }

    /// Every task of the task file `file` (`--multiple-choice`), read
    /// strictly, scored by `model` with llama.cpp's default settings; no log.
    pub fn new(model: impl Into<PathBuf>, file: impl Into<PathBuf>) -> ScoreSpec {
        ScoreSpec {
            file: file.into(),
            kind: TaskKind::MultipleChoice,
            model: model.into(),
            lenient: false,
            subset: None,
            limit: None,
            limit_groups: None,
            pmi: false,
            settings: Settings::default(),
            log: None,
            resume: false,
            hash_model: false,
            hash_cache: None,
            shard: None,
            ordered: None,
            model_sha256: None,
            chat: ChatSpec::default(),
            mmproj: None,
        }
    }
}

/// Tasks in an order of the caller's choosing, and what the log records of it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Ordered {
    /// Task indices into the file, each at most once.
    pub order: Vec<usize>,
    /// The sequential comparison's seed, stopping rule and models, recorded in the log's header.
    pub sequential: crate::log::Sequential,
}

/// Which tasks a subset request selects. HellaSwag's are always in
/// llama-perplexity's shuffled order; the others' are in file order but for
/// a subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// No subset asked for: every task.
    All,
    /// A subset of 0: every task, as llama-perplexity reads 0.
    AllForZero,
    /// More tasks than the file has: every task.
    AllForMore {
        /// The subset asked for, more than the file's tasks.
        asked: usize,
    },
    /// llama-perplexity's pick of this many tasks, in its order.
    Subset(usize),
    /// The file's first tasks, this many, in file order (`--limit`; all of
    /// them where the file has no more).
    First(usize),
    /// Each group's first tasks, this many, in file order (`--limit` where
    /// the file has groups, as lm-eval limits each subtask).
    FirstPerGroup {
        /// The tasks taken from each group (fewer where a group has fewer).
        limit: usize,
        /// The groups.
        groups: usize,
    },
}

/// The file's first `limit` tasks of `n_tasks`, in file order.
pub(crate) fn first(limit: usize, n_tasks: usize) -> (Selection, Vec<usize>) {
    (Selection::First(limit), (0..limit.min(n_tasks)).collect())
}

/// The first `limit` tasks of each of `groups`, in file order; `None` where
/// the groups do not reach all `n_tasks` tasks.
pub(crate) fn first_per_group(limit: usize, groups: &Groups, n_tasks: usize) -> Option<(Selection, Vec<usize>)> {
    let mut taken = vec![0usize; groups.len()];
    let mut order = Vec::new();
    for task in 0..n_tasks {
        let count = &mut taken[groups.group(task)?];
        *count += 1;
        if *count <= limit {
            order.push(task);
        }
    }
    (groups.tasks() == n_tasks).then_some((Selection::FirstPerGroup { limit, groups: groups.len() }, order))
}

/// The task indices `requested` selects from `n_tasks` for `kind`, and which rule applied.
pub fn select(kind: TaskKind, requested: Option<usize>, n_tasks: usize) -> (Selection, Vec<usize>) {
    let (selection, n) = match requested {
        None => (Selection::All, n_tasks),
        Some(0) => (Selection::AllForZero, n_tasks),
        Some(asked) if asked > n_tasks => (Selection::AllForMore { asked }, n_tasks),
        Some(n) => (Selection::Subset(n), n),
    };
    let order = match kind {
        TaskKind::HellaSwag => hellaswag_order(n_tasks, n),
        TaskKind::MultipleChoice | TaskKind::Winogrande | TaskKind::LmEval => select_tasks(n_tasks, n),
    };
    (selection, order)
}

/// The tasks of a file: strictly validated, or read as llama.cpp would.
pub(crate) enum OpenedFile {
    Strict(TaskFile),
    /// The bytes of a file that fails strict validation, and its faults.
    Lenient {
        bytes: Vec<u8>,
        faults: Vec<Fault>,
    },
    /// A HellaSwag or Winogrande text file.
    Text {
        bytes: Vec<u8>,
        kind: TaskKind,
    },
    /// A file of image tasks (VLMEvalKit's multiple-choice TSV), each row rendered.
    Images {
        bytes: Vec<u8>,
        tasks: Vec<VqaTask>,
    },
}

impl OpenedFile {
    /// Opens `path` as `kind` says: a task file strictly or, with `lenient`,
    /// kept with the faults llama.cpp reads past; a text file as it is (its
    /// tasks are read, strictly, by [`OpenedFile::tasks`]).
    pub(crate) fn open(path: &Path, kind: TaskKind, lenient: bool) -> Result<OpenedFile, EvalError> {
        if matches!(kind, TaskKind::HellaSwag | TaskKind::Winogrande) {
            return Ok(OpenedFile::Text { bytes: mcscore_format::read_input(path)?, kind });
        }
        if kind == TaskKind::MultipleChoice && mcscore_datasets::vqa::is_vqa_file(path) {
            let bytes = mcscore_format::read_input(path)?;
            let tasks = mcscore_datasets::vqa::parse_vqa(&bytes, path)?;
            return Ok(OpenedFile::Images { bytes, tasks });
        }
        match TaskFile::open(path) {
            Ok(file) => Ok(OpenedFile::Strict(file)),
            Err(FormatError::Invalid { faults, .. }) if lenient => {
                let bytes = mcscore_format::read_input(path)?;
                Ok(OpenedFile::Lenient { bytes, faults })
            }
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn tasks(&self, path: &Path) -> Result<Tasks<'_>, EvalError> {
        Ok(match self {
            OpenedFile::Strict(file) => Tasks::Mapped(file),
            OpenedFile::Lenient { bytes, .. } => Tasks::Parsed(read_lenient(bytes, path)?),
            OpenedFile::Text { bytes, kind: TaskKind::HellaSwag } => Tasks::Parsed(read_hellaswag(bytes, path)?),
            OpenedFile::Text { bytes, .. } => Tasks::Parsed(read_winogrande(bytes, path)?),
            OpenedFile::Images { tasks, .. } => {
                Tasks::Parsed(tasks.iter().map(|t| Task::new(&t.context, t.letters.clone(), t.gold)).collect())
            }
        })
    }

    /// For a file of image tasks, the sha256 of every task's images' sha256s
    /// (hex, one a line), in file order: what the images are, wherever they are read from.
    pub(crate) fn images_sha256(&self) -> Option<String> {
        match self {
            OpenedFile::Images { tasks, .. } => {
                let hashes: Vec<String> = tasks.iter().flat_map(|t| t.images.iter().map(|b| sha256_hex(b))).collect();
                Some(sha256_hex(hashes.join("\n").as_bytes()))
            }
            _ => None,
        }
    }

    /// Per task of `selected` (by its index in the file), its images: `None`
    /// for a file without any.
    pub(crate) fn images(&self, selected: &[(usize, Task<'_>)]) -> Option<Vec<Vec<Arc<[u8]>>>> {
        match self {
            OpenedFile::Images { tasks, .. } => Some(selected.iter().map(|(i, _)| tasks[*i].images.clone()).collect()),
            _ => None,
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            OpenedFile::Strict(file) => file.bytes(),
            OpenedFile::Lenient { bytes, .. } | OpenedFile::Text { bytes, .. } | OpenedFile::Images { bytes, .. } => bytes,
        }
    }
}

/// The tasks of an input: a strictly valid file's, viewed one at a time in
/// the mapped file (a run or shard of an 819,772-task file holds views of
/// its own tasks only), or those parsed from a lenient or text file.
pub enum Tasks<'a> {
    /// A strictly valid task file, each task viewed in the mapped bytes when asked for.
    Mapped(&'a TaskFile),
    /// Every task of a lenient or text file, parsed.
    Parsed(Vec<Task<'a>>),
}

impl<'a> Tasks<'a> {
    /// Tasks in the file.
    pub fn len(&self) -> usize {
        match self {
            Tasks::Mapped(file) => file.len(),
            Tasks::Parsed(tasks) => tasks.len(),
        }
    }

    /// Whether the file has no tasks.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Task `index`, or `None` past the last.
    pub fn get(&self, index: usize) -> Option<Task<'a>> {
        match self {
            Tasks::Mapped(file) => (index < file.len()).then(|| file.task(index)),
            Tasks::Parsed(tasks) => tasks.get(index).cloned(),
        }
    }
}

/// A run's sample log as opened: the writer (none without a log, or for
/// a complete one), the records kept, and how a complete log ended.
struct Logged {
    log: Option<SampleLog>,
    kept: Vec<TaskRecord>,
    already_complete: bool,
    stopped: Option<crate::log::Stop>,
}

/// One task's options after no question (`--pmi`): each option's summed
/// log-probability and whether its tokens were the greedy picks.
type Unconditional = Vec<(f64, Option<bool>)>;

/// `--pmi`'s pass: every selected task's options after the context
/// "Answer:" alone, inside the same chat turns (no shots to split), tokenised
/// and planned; for a file scored as lm-eval scores it, after no context
/// (lm-eval's `acc_mutual_info`).
fn unconditional_pass(
    spec: &ScoreSpec,
    engine: &Engine,
    template: Option<&Template>,
    selected: &[(usize, Task<'_>)],
) -> Result<(Vec<PreparedTask>, Plan), EvalError> {
    let path = spec.file.as_path();
    // lm-eval's acc_mutual_info conditions on nothing but the BOS.
    let context = if spec.kind == TaskKind::LmEval { "" } else { UNCONDITIONAL_CONTEXT };
    let bare: Vec<(usize, Task<'_>)> =
        selected.iter().map(|(i, t)| (*i, Task { question: context, mc1: t.mc1.clone(), mc2: Default::default() })).collect();
    let unconditional_error = |source| EvalError::Unconditional { path: path.to_owned(), source };
    if spec.kind == TaskKind::LmEval {
        let prepared = engine.prepare_contexts(&bare).map_err(unconditional_error)?;
        let plan = mcscore_engine::plan(&prepared, &spec.settings).map_err(unconditional_error)?;
        return Ok((prepared, plan));
    }
    let chat = ChatSpec { shots: None, ..spec.chat.clone() };
    let prepared = crate::chat::prepare(engine, &chat, template, path, &bare, spec.settings.task_limit(), unconditional_error)?.0;
    let plan = mcscore_engine::plan(&prepared, &spec.settings).map_err(unconditional_error)?;
    Ok((prepared, plan))
}

/// The engine a job scores with: its own, or one lent by the caller (who
/// may lend it to many jobs, one after another).
enum Lent<'e> {
    Owned(Box<Engine>),
    Borrowed(&'e Engine),
}

impl std::ops::Deref for Lent<'_> {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        match self {
            Lent::Owned(engine) => engine,
            Lent::Borrowed(engine) => engine,
        }
    }
}

/// A job ready to score: inputs read and checked, tasks tokenised and
/// planned, the log opened (and its kept lines read back).
#[non_exhaustive]
pub struct ScoreJob<'e> {
    spec: ScoreSpec,
    engine: Lent<'e>,
    prepared: Vec<PreparedTask>,
    plan: Plan,
    /// The unconditional pass of acc_pmi, tokenised and planned.
    unconditional: Option<(Vec<PreparedTask>, Plan)>,
    header: Header,
    log: Option<SampleLog>,
    kept: Vec<TaskRecord>,
    already_complete: bool,
    /// Why the complete log found by a resume stopped early, if it did.
    stopped: Option<Stop>,
    baselines: Baselines,
    total_options: usize,
    file_tasks: usize,
    selection: Selection,
    lenient_faults: Vec<Fault>,
    /// The sha256 of each image of each task that has any, by task index.
    image_hashes: HashMap<usize, Vec<String>>,
    started: Instant,
    timings: Timings,
    memory: MemorySeen,
}

/// Tasks of a run longer than the model's training context ([`ScoreJob::beyond_training`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct BeyondTraining {
    /// The model's training context, in tokens.
    pub trained: usize,
    /// How many of the run's tasks decode past it.
    pub tasks: usize,
    /// The longest of them: its index in the file (from 0).
    pub longest_task: usize,
    /// The tokens the longest task's longest sequence decodes (its prefix, then an option's tokens but its last).
    pub longest_tokens: usize,
}

impl std::fmt::Display for BeyondTraining {
    /// The warning front ends print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} task(s) run past the model's training context of {} tokens (the longest, task {}, decodes {}): \
             their scores rest on positions the model was not trained on",
            self.tasks, self.trained, self.longest_task, self.longest_tokens
        )
    }
}

impl BeyondTraining {
    fn of(engine: &Engine, tasks: &[PreparedTask]) -> Option<BeyondTraining> {
        let trained = engine.training_context()?;
        let beyond = tasks.iter().filter(|t| t.longest_sequence() > trained);
        let longest = beyond.clone().max_by_key(|t| t.longest_sequence())?;
        Some(BeyondTraining { trained, tasks: beyond.count(), longest_task: longest.index, longest_tokens: longest.longest_sequence() })
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Every task was scored; the log (if any) is marked complete.
    Finished,
    /// Cancelled; the log (if any) ends at a fill and is marked incomplete.
    Interrupted,
    /// The log already held the complete run; nothing was scored or written.
    AlreadyComplete,
    /// A sequential comparison stopped the run before its last task; the
    /// log is complete.
    Stopped(Stop),
}

/// Where a run's time went, in seconds, phase by phase (`score --timings`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
#[non_exhaustive]
pub struct Timings {
    /// Reading and validating the task file.
    pub read: f64,
    /// Loading the model.
    pub load: f64,
    /// Tokenising every task (and finding common prefixes).
    pub tokenise: f64,
    /// Planning fills and checking memory.
    pub plan: f64,
    /// The model's sha256 (read, or from the hash cache) for the log or JSON.
    pub hash: f64,
    /// Opening the log (and reading it back, for --resume).
    pub log: f64,
    /// From the start to the first decode.
    pub first_decode: f64,
    /// acc_pmi's unconditional pass.
    pub unconditional: f64,
    /// Scoring, broken down.
    pub scoring: mcscore_engine::ScoreTimes,
    /// From the start of the job's preparation to its outcome (not the load of a lent engine).
    pub total: f64,
}

impl Timings {
    /// Every phase in run order with its seconds (the images' only where a
    /// task had one), then "other" (the time no phase accounts for): the
    /// rows of `--timings`' table.
    pub fn phases(&self) -> Vec<(&'static str, f64)> {
        let s = &self.scoring;
        let mut phases = vec![
            ("read task file", self.read),
            ("load model", self.load),
            ("tokenise", self.tokenise),
            ("plan fills", self.plan),
            ("model sha256", self.hash),
            ("open log", self.log),
            ("unconditional pass", self.unconditional),
            ("create context", s.context),
            ("build batches", s.batching),
        ];
        // A run without images has no images phase to show.
        if s.images > 0.0 {
            phases.push(("images (mtmd)", s.images));
        }
        phases.push(("decode", s.decode));
        // Where the engine computed the output projection itself.
        if s.projection > 0.0 {
            phases.push(("output projection", s.projection));
        }
        phases.extend([("logits, log-softmax", s.logits), ("log, progress", s.consumer)]);
        let accounted: f64 = phases.iter().map(|p| p.1).sum();
        phases.push(("other", (self.total - accounted).max(0.0)));
        phases
    }

    /// `seconds` as a percentage of the run's total.
    pub fn share(&self, seconds: f64) -> f64 {
        100.0 * seconds / self.total.max(1e-9)
    }

    /// `tokens` decoded per second of decode time (and image time: a task's
    /// image positions count among the tokens and were decoded through the
    /// projector; and the output projection's, where the engine computed
    /// it); `None` before any decode.
    pub fn decode_rate(&self, tokens: usize) -> Option<f64> {
        let seconds = self.scoring.decode + self.scoring.images + self.scoring.projection;
        (self.scoring.decode > 0.0).then(|| tokens as f64 / seconds)
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScoreOutcome {
    /// The sample log's header of the run (written, or matched by the log resumed).
    pub header: Header,
    /// Every task of the run so far, in run order (kept ones first).
    pub records: Vec<TaskRecord>,
    /// Tasks taken from the log rather than scored.
    pub resumed: usize,
    /// How the run ended.
    pub end: End,
    /// Tokens this process decoded, with what scoring each task on its own would decode and the padding (not the resumed tasks').
    pub tokens: TokenCounts,
    /// KV-cache fills this run made.
    pub fills: usize,
    /// Fills of the whole run, resumed or not.
    pub planned_fills: usize,
    /// The context allocated for the whole run's plan, in tokens (KV-cache cells).
    pub n_ctx: u64,
    /// Chance and majority-class accuracies (fractions) over the run's tasks (a shard's: its own).
    pub baselines: Baselines,
    /// Options over all tasks of the run (llama-perplexity's chance line).
    pub total_options: usize,
    /// Seconds this process spent scoring tasks (the unconditional pass aside).
    pub scoring_seconds: f64,
    /// Seconds from the start of the job's preparation to its outcome.
    pub wall_seconds: f64,
    /// Where the time went, phase by phase.
    pub timings: Timings,
    /// Where memory went: llama.cpp's buffers and the process's resident pages.
    pub memory: mcscore_engine::MemoryReport,
    /// The tasks in `records` longer than the model's training context, if any.
    pub beyond_training: Option<BeyondTraining>,
}

impl ScoreOutcome {
    /// Tokens decoded per second of scoring (decode and everything around it).
    pub fn scoring_rate(&self) -> f64 {
        self.tokens.decoded as f64 / self.scoring_seconds.max(1e-9)
    }

    /// The normalisations every record has.
    pub fn normalisations(&self) -> &'static [Normalisation] {
        normalisations(&self.records)
    }

    /// The tasks of `records` that `norm` got right, of all of them; `norm` must be one of
    /// [`ScoreOutcome::normalisations`] (acc_pmi without its pass panics).
    pub fn accuracy(&self, norm: Normalisation) -> Proportion {
        crate::log::accuracy(&self.records, norm)
    }
}

impl ScoreJob<'static> {
    /// Reads and checks everything a run needs, so that every refusal comes
    /// before the first decode: the file, the subset, the model (loaded for
    /// this job), each task (tokenised), the context and its memory, and the log.
    pub fn prepare(spec: ScoreSpec) -> Result<ScoreJob<'static>, EvalError> {
        ScoreJob::prepare_on(spec, |spec| {
            let mut engine = Engine::load(&spec.model, &spec.settings).map_err(EvalError::Load)?;
            if let Some(mmproj) = &spec.mmproj {
                engine.attach_projector(mmproj, spec.settings.threads_batch).map_err(EvalError::Load)?;
            }
            Ok(Lent::Owned(Box::new(engine)))
        })
    }
}

impl<'e> ScoreJob<'e> {
    /// [`ScoreJob::prepare`] on an engine loaded by the caller, which may
    /// lend it to any number of jobs (and hold several engines at once).
    /// `spec.model` must be the path the engine was loaded from.
    pub fn with_engine(engine: &'e Engine, spec: ScoreSpec) -> Result<ScoreJob<'e>, EvalError> {
        if engine.path() != spec.model {
            return Err(EvalError::Spec(SpecError::LentEngine { model: spec.model.clone(), engine: engine.path().to_owned() }));
        }
        if engine.projector() != spec.mmproj.as_deref() {
            return Err(EvalError::Spec(SpecError::LentProjector {
                model: spec.model.clone(),
                wanted: spec.mmproj.clone(),
                attached: engine.projector().map(Path::to_owned),
            }));
        }
        ScoreJob::prepare_on(spec, |_| Ok(Lent::Borrowed(engine)))
    }

    fn prepare_on(spec: ScoreSpec, load: impl FnOnce(&ScoreSpec) -> Result<Lent<'e>, EvalError>) -> Result<ScoreJob<'e>, EvalError> {
        let started = Instant::now();
        let path = spec.file.as_path();
        spec.check()?;
        let input = OpenedFile::open(path, spec.kind, spec.lenient)?;
        let all_tasks = input.tasks(path)?;
        let mut timings = Timings::default();
        let mut lap = Instant::now();
        let mut phase = |slot: &mut f64| {
            *slot = lap.elapsed().as_secs_f64();
            lap = Instant::now();
        };
        timings.read = started.elapsed().as_secs_f64();
        let (selection, order) = spec.run_order(all_tasks.len())?;
        // Every index of an order is below the task count: `check_order`,
        // `first` and `select` make them so.
        let task = |i: usize| all_tasks.get(i).expect("orders index the file's tasks");
        let shard = spec.shard_range(&order, &all_tasks)?;
        let range = shard.as_ref().map_or(0..order.len(), |(_, range)| range.clone());
        // A chat header records the run's first prompt: every shard renders it,
        // prepared before the shard's tasks and dropped after.
        let extra = usize::from(range.start > 0 && !spec.chat.is_none());
        // extra is 1 only where range.start > 0, so order is not empty; partition's ranges lie within order
        let mut selected: Vec<(usize, Task<'_>)> = order[..extra].iter().chain(&order[range]).map(|&i| (i, task(i))).collect();
        let shard = shard.map(|(header, _)| header);
        let settings = &spec.settings;
        let engine = load(&spec)?;
        phase(&mut timings.load);
        let mut memory = MemorySeen::default();
        memory.sample(mcscore_engine::Resident::now());
        let template = Template::resolve(&spec.chat.template, &engine)?;
        let images = input.images(&selected);
        if images.is_some() {
            for (given, flag) in [(!spec.chat.is_none(), "--chat-template"), (spec.pmi, "--pmi")] {
                if given {
                    return Err(EvalError::Spec(SpecError::ImagesWith { path: path.to_owned(), flag }));
                }
            }
        }
        let (mut prepared, chat) = match (spec.kind, &images) {
            (_, Some(images)) => (engine.prepare_images(&selected, images).map_err(EvalError::engine(path))?, None),
            _ => match spec.kind {
                TaskKind::Winogrande => (engine.prepare_blanks(&selected).map_err(EvalError::engine(path))?, None),
                TaskKind::LmEval => (engine.prepare_contexts(&selected).map_err(EvalError::engine(path))?, None),
                TaskKind::MultipleChoice | TaskKind::HellaSwag => crate::chat::prepare(
                    &engine,
                    &spec.chat,
                    template.as_ref(),
                    path,
                    &selected,
                    settings.task_limit(),
                    EvalError::engine(path),
                )?,
            },
        };
        let image_hashes: HashMap<usize, Vec<String>> = images
            .iter()
            .flat_map(|images| selected.iter().zip(images))
            .filter(|(_, images)| !images.is_empty())
            .map(|((i, _), images)| (*i, images.iter().map(|b| sha256_hex(b)).collect()))
            .collect();
        prepared.drain(..extra);
        selected.drain(..extra);
        phase(&mut timings.tokenise);
        let plan = plan(&prepared, settings).map_err(EvalError::engine(path))?;
        engine.check_memory(&plan, settings).map_err(EvalError::engine(path))?;
        let unconditional = spec.pmi.then(|| unconditional_pass(&spec, &engine, template.as_ref(), &selected)).transpose()?;
        phase(&mut timings.plan);
        let (model_sha256, model_sha256_cached) = spec.model_hash()?;
        phase(&mut timings.hash);
        let sequential = spec.ordered.as_ref().map(|o| o.sequential.clone());
        let header = Header {
            version: crate::log::LOG_VERSION,
            mcscore: env!("CARGO_PKG_VERSION").to_owned(),
            model: spec.model.display().to_string(),
            model_sha256,
            model_sha256_cached,
            model_bytes: std::fs::metadata(&spec.model).map_err(EvalError::io(&spec.model))?.len(),
            file: path.display().to_string(),
            file_sha256: sha256_hex(input.bytes()),
            file_bytes: input.bytes().len() as u64,
            tasks: prepared.len(),
            selection: spec.effective_subset(),
            limit: spec.limit,
            limit_per_group: spec.limit.is_some() && spec.limit_groups.is_some(),
            mode: spec.kind,
            lenient: spec.lenient,
            pmi: spec.pmi,
            kernels: settings.fingerprint(),
            shard,
            sequential,
            chat,
            images_sha256: input.images_sha256(),
            projector: match engine.projector() {
                Some(p) => Some(ProjectorHeader {
                    path: p.display().to_string(),
                    sha256: sha256_file(p).map_err(EvalError::io(p))?,
                    bytes: std::fs::metadata(p).map_err(EvalError::io(p))?.len(),
                }),
                None => None,
            },
        };
        let Logged { log, kept, already_complete, stopped } = spec.open_log(&header, &prepared)?;
        phase(&mut timings.log);
        let lenient_faults = match &input {
            OpenedFile::Lenient { faults, .. } => faults.clone(),
            OpenedFile::Strict(_) | OpenedFile::Text { .. } | OpenedFile::Images { .. } => Vec::new(),
        };
        Ok(ScoreJob {
            baselines: Baselines::of(selected.iter().map(|(_, t)| t)),
            total_options: prepared.iter().map(PreparedTask::n_options).sum(),
            file_tasks: all_tasks.len(),
            spec,
            engine,
            prepared,
            plan,
            unconditional,
            header,
            log,
            kept,
            already_complete,
            stopped,
            selection,
            lenient_faults,
            image_hashes,
            started,
            timings,
            memory,
        })
    }

    /// The whole run's fills (a resume decodes the tasks left, packed afresh).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The settings the run scores with.
    pub fn settings(&self) -> &Settings {
        &self.spec.settings
    }

    /// The sample log's header of the run (what a resumed log must match).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Records taken from the log (all of them when it was complete).
    pub fn kept(&self) -> &[TaskRecord] {
        &self.kept
    }

    /// Whether the log already held the complete run.
    pub fn already_complete(&self) -> bool {
        self.already_complete
    }

    /// Which rule picked the run's tasks from the file.
    pub fn selection(&self) -> Selection {
        self.selection
    }

    /// Tasks in the file (before any subset).
    pub fn file_tasks(&self) -> usize {
        self.file_tasks
    }

    /// Tasks this run announces.
    pub fn tasks(&self) -> usize {
        self.prepared.len()
    }

    /// The faults of a file read leniently.
    pub fn lenient_faults(&self) -> &[Fault] {
        &self.lenient_faults
    }

    /// The run's tasks that decode positions past the model's training
    /// context, whose scores rest on positions the model was not trained on
    /// (llama.cpp warns of a context that large); `None` when every task
    /// fits or the model does not say.
    pub fn beyond_training(&self) -> Option<BeyondTraining> {
        BeyondTraining::of(&self.engine, &self.prepared)
    }

    /// Scores what the log does not hold yet, reporting each task to
    /// `progress`, and stops before the next micro-batch once `cancel` is set
    /// (the log then ends at a fill).
    pub fn run(self, progress: &mut dyn Progress, cancel: &Cancel) -> Result<ScoreOutcome, EvalError> {
        let mut running = self.start(progress, cancel)?;
        progress.start(Phase::Scoring, running.prepared.len(), running.resumed);
        running.score_to(running.prepared.len(), progress, cancel)?;
        progress.finish(Phase::Scoring);
        running.finish()
    }

    /// Starts the run (acc_pmi's unconditional pass, if asked for), to be
    /// scored in parts with [`Running::score_to`]: what a sequential
    /// comparison does, looking at the results between parts. Once `cancel`
    /// stops the unconditional pass, nothing is scored: the run can only be
    /// finished, incomplete (its sums are not logged; a resume computes them again).
    pub fn start(self, progress: &mut dyn Progress, cancel: &Cancel) -> Result<Running<'e>, EvalError> {
        let ScoreJob {
            spec,
            engine,
            prepared,
            plan,
            unconditional,
            header,
            log,
            kept,
            already_complete,
            stopped,
            baselines,
            total_options,
            image_hashes,
            started,
            mut timings,
            mut memory,
            ..
        } = self;
        let path = spec.file.as_path();
        let settings = &spec.settings;
        let resumed = kept.len();
        let unconditional_started = Instant::now();
        let (unconditional_sums, cancelled): (Vec<Unconditional>, bool) = match unconditional.filter(|_| !already_complete) {
            Some((bare, bare_plan)) => {
                // Only the tasks left need their unconditional sums.
                // one bare task per prepared one, and the resume check refused more kept records than those
                let bare = &bare[resumed..];
                let bare_plan =
                    if resumed == 0 { bare_plan } else { mcscore_engine::plan(bare, settings).map_err(EvalError::engine(path))? };
                progress.start(Phase::Unconditional, bare.len(), 0);
                let mut sums: Vec<Unconditional> = Vec::with_capacity(bare.len());
                let scoring = Scoring { engine: &engine, tasks: bare, plan: &bare_plan, settings, path };
                let run = score_fills(scoring, cancel, |event| {
                    if let FillEvent::Task(scores) = event {
                        sums.push(scores.options.iter().map(|o| (o.logprob_sum, o.greedy)).collect());
                        progress.tick(Phase::Unconditional);
                    }
                    Ok(())
                })?;
                run.note_memory(&mut memory);
                progress.finish(Phase::Unconditional);
                let cancelled = run.end == FillsEnd::Cancelled;
                if !cancelled && sums.len() != bare.len() {
                    return Err(EvalError::Incomplete { path: path.to_owned(), scored: sums.len(), announced: bare.len() });
                }
                (sums, cancelled)
            }
            None => (Vec::new(), false),
        };
        timings.unconditional = unconditional_started.elapsed().as_secs_f64();
        Ok(Running {
            spec,
            engine,
            prepared,
            plan,
            header,
            log,
            records: kept,
            resumed,
            already_complete,
            stopped,
            unconditional_sums,
            image_hashes,
            cancelled,
            fills: 0,
            tokens: TokenCounts::default(),
            baselines,
            total_options,
            started,
            scoring_seconds: 0.0,
            timings,
            memory,
        })
    }
}

/// A run in progress: scored up to some task of its order, its log open.
#[non_exhaustive]
pub struct Running<'e> {
    spec: ScoreSpec,
    engine: Lent<'e>,
    prepared: Vec<PreparedTask>,
    /// The whole run's plan, resumed or not.
    plan: Plan,
    header: Header,
    log: Option<SampleLog>,
    /// Every task scored so far, in run order (kept ones first).
    records: Vec<TaskRecord>,
    resumed: usize,
    already_complete: bool,
    stopped: Option<Stop>,
    /// Per task left at the start: its options' unconditional sums (acc_pmi).
    /// Per task left, its options' unconditional figures.
    unconditional_sums: Vec<Unconditional>,
    /// The sha256 of each image of each task that has any, by task index.
    image_hashes: HashMap<usize, Vec<String>>,
    cancelled: bool,
    /// Fills made by this process.
    fills: usize,
    tokens: TokenCounts,
    baselines: Baselines,
    total_options: usize,
    started: Instant,
    scoring_seconds: f64,
    timings: Timings,
    memory: MemorySeen,
}

impl Running<'_> {
    /// The sample log's header of the run.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Every task scored so far, in run order.
    pub fn records(&self) -> &[TaskRecord] {
        &self.records
    }

    /// Tasks this run announces.
    pub fn tasks(&self) -> usize {
        self.prepared.len()
    }

    /// Whether the log already held the whole run (nothing is scored).
    pub fn already_complete(&self) -> bool {
        self.already_complete
    }

    /// Seconds spent scoring in this process.
    pub fn scoring_seconds(&self) -> f64 {
        self.scoring_seconds
    }

    /// Scores the run's tasks up to position `end` of its order (no further
    /// than its last), packed afresh: under the batch rule they score as they
    /// would in one uninterrupted run's fills. Returns `false` when `cancel`
    /// stopped it (at a fill, as [`ScoreJob::run`]); the run can then only be finished.
    pub fn score_to(&mut self, end: usize, progress: &mut dyn Progress, cancel: &Cancel) -> Result<bool, EvalError> {
        let end = end.min(self.prepared.len());
        let from = self.records.len();
        if self.cancelled || self.already_complete || from >= end {
            return Ok(!self.cancelled);
        }
        let path = self.spec.file.as_path();
        let settings = &self.spec.settings;
        // from < end <= prepared.len(), both checked above
        let part = &self.prepared[from..end];
        let plan = if from == 0 && end == self.prepared.len() {
            self.plan.clone()
        } else {
            mcscore_engine::plan(part, settings).map_err(EvalError::engine(path))?
        };
        let started = Instant::now();
        let (records, log, sums, resumed, image_hashes) =
            (&mut self.records, &mut self.log, &self.unconditional_sums, self.resumed, &self.image_hashes);
        let scoring = Scoring { engine: &self.engine, tasks: part, plan: &plan, settings, path };
        let run = score_fills(scoring, cancel, |event| {
            let mut scores = match event {
                FillEvent::Task(scores) => scores,
                FillEvent::FillDone => return Ok(log.as_mut().map_or(Ok(()), SampleLog::flush)?),
            };
            // records began as the `resumed` kept ones and only grow
            if let Some(bare) = sums.get(records.len() - resumed) {
                for (option, &(sum, greedy)) in scores.options.iter_mut().zip(bare) {
                    option.uncond_logprob_sum = Some(sum);
                    option.uncond_greedy = greedy;
                }
            }
            let mut record = TaskRecord::new(scores.task, scores.options, scores.labels);
            record.images = image_hashes.get(&record.task).cloned().unwrap_or_default();
            if let Some(log) = log.as_mut() {
                log.record(&record)?;
            }
            // from was records.len() when this part began, and records only grow
            progress.tokens(part.get(records.len() - from).map_or(0, PreparedTask::required_tokens));
            records.push(record);
            progress.scored(records.last().expect("just pushed"), records.len()).map_err(EvalError::Consumer)
        })?;
        if self.fills == 0 {
            self.timings.first_decode = (started - self.started).as_secs_f64() + run.times.context;
        }
        self.scoring_seconds += started.elapsed().as_secs_f64();
        self.timings.scoring += run.times;
        self.tokens += run.tokens;
        run.note_memory(&mut self.memory);
        self.fills += plan.fills.len();
        self.cancelled = run.end == FillsEnd::Cancelled;
        if !self.cancelled && self.records.len() != end {
            return Err(EvalError::Incomplete { path: path.to_owned(), scored: self.records.len(), announced: end });
        }
        Ok(!self.cancelled)
    }

    /// Ends the run: complete when every task is scored (the model checked
    /// unchanged first), otherwise marked incomplete and resumable.
    pub fn finish(mut self) -> Result<ScoreOutcome, EvalError> {
        if self.already_complete {
            let end = self.stopped.map_or(End::AlreadyComplete, End::Stopped);
            return Ok(self.outcome(end));
        }
        let log = self.log.take();
        let scored = self.records.len();
        if scored < self.prepared.len() {
            if let Some(log) = log {
                log.finish(false, scored)?;
            }
            return Ok(self.outcome(End::Interrupted));
        }
        // Before the results are trusted, or the log marked complete.
        self.engine.check_unchanged().map_err(EvalError::engine(&self.spec.model))?;
        if let Some(log) = log {
            log.finish(true, scored)?;
        }
        Ok(self.outcome(End::Finished))
    }

    /// Ends a sequential comparison's run before its last task, complete
    /// (the model checked unchanged first). A run already complete is left as it is.
    pub fn stop(mut self, stopped: Stop) -> Result<ScoreOutcome, EvalError> {
        if self.already_complete || self.records.len() == self.prepared.len() {
            return self.finish();
        }
        if self.cancelled {
            return Err(EvalError::Sequential(SequentialError::StopCancelled { path: self.spec.file.clone() }));
        }
        self.engine.check_unchanged().map_err(EvalError::engine(&self.spec.model))?;
        if let Some(log) = self.log.take() {
            log.stop(self.records.len(), stopped)?;
        }
        Ok(self.outcome(End::Stopped(stopped)))
    }

    fn outcome(self, end: End) -> ScoreOutcome {
        // The fills of the whole run, resumed or not.
        let planned_fills = self.plan.fills.len();
        // records are the first tasks of prepared, in run order
        let beyond_training = BeyondTraining::of(&self.engine, &self.prepared[..self.records.len().min(self.prepared.len())]);
        ScoreOutcome {
            header: self.header,
            records: self.records,
            resumed: self.resumed,
            end,
            tokens: self.tokens,
            fills: self.fills,
            planned_fills,
            n_ctx: self.plan.n_ctx,
            baselines: self.baselines,
            total_options: self.total_options,
            scoring_seconds: self.scoring_seconds,
            wall_seconds: self.started.elapsed().as_secs_f64(),
            timings: Timings { total: self.started.elapsed().as_secs_f64(), ..self.timings },
            memory: self.engine.memory_report(&self.memory.context, self.memory.largest),
            beyond_training,
        }
    }
}

/// Why `order` is not an order of tasks of a file of `n_tasks`, if it is not.
fn check_order(order: &[usize], n_tasks: usize) -> Result<(), String> {
    let mut seen = vec![false; n_tasks];
    for (position, &task) in order.iter().enumerate() {
        match seen.get_mut(task) {
            None => return Err(format!("position {position} is task {task}, but the file has {n_tasks} tasks")),
            Some(true) => return Err(format!("task {task} comes twice (again at position {position})")),
            Some(seen) => *seen = true,
        }
    }
    Ok(())
}

/// A task's size for the shard partition: its question's and options' bytes.
fn task_bytes(task: &Task<'_>) -> usize {
    task.question.len() + task.mc1.options.iter().map(|o| o.len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_per_group_takes_each_groups_first_tasks_and_needs_every_task_grouped() {
        let runs = [("a".to_owned(), 2), ("b".to_owned(), 3), ("a".to_owned(), 1)];
        let groups = Groups::from_runs("test", &runs);
        let (selection, order) = first_per_group(1, &groups, 6).unwrap();
        assert_eq!((selection, order), (Selection::FirstPerGroup { limit: 1, groups: 2 }, vec![0, 2]));
        assert_eq!(first_per_group(3, &groups, 6).unwrap().1, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(first_per_group(1, &groups, 7), None);
        let mut spec = ScoreSpec::new("m.gguf", "f.bin");
        spec.limit = Some(1);
        spec.limit_groups = Some(groups);
        let error = spec.run_order(7).unwrap_err().to_string();
        assert!(error.contains("one group for each of the file's 7 tasks, but the groups are of 6 tasks"), "{error}");
    }

    #[test]
    fn hellaswag_takes_llama_perplexitys_400_unless_told_otherwise() {
        let mut spec = ScoreSpec::new("m.gguf", "hellaswag.txt");
        assert_eq!(spec.effective_subset(), None, "a task file: every task");
        spec.kind = TaskKind::HellaSwag;
        assert_eq!(spec.effective_subset(), Some(HELLASWAG_DEFAULT_TASKS));
        spec.subset = Some(0);
        assert_eq!(spec.effective_subset(), Some(0), "0: every task, as llama-perplexity reads it");
        spec.subset = None;
        spec.limit = Some(10);
        assert_eq!(spec.effective_subset(), None, "the first 10 instead");
    }
}
