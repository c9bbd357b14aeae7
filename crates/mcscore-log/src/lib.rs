//! The sample log (`score --log-samples`): one JSON line per task, between a
//! header that pins the inputs and a footer that says whether the run
//! completed. The footer is what tells a finished log from an interrupted
//! one, and the header is what a resume checks before it trusts the lines in
//! between. Every line is checked when read ([`check_record`]), so a damaged
//! or edited log is refused by name, never reported as a result; the reader
//! has a fuzz target (`fuzz/fuzz_targets/read_log.rs`). Its own crate, without
//! the engine, so that fuzzing it builds no llama.cpp. The layout is in
//! docs/formats.md.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use mcscore_metrics::{Normalisation, OptionScore};
use serde::{Deserialize, Serialize};

/// Why a sample log could not be read, written or resumed. Messages name
/// the log (and line); `Display` leaves the source to the error chain.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Format(#[from] mcscore_format::Error),

    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{}: line {line}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        #[source]
        fault: LogFault,
    },

    #[error("{}", path.display())]
    Whole {
        path: PathBuf,
        #[source]
        fault: LogFault,
    },

    #[error("{}: the sample log exists; resume it, or remove it to start again", path.display())]
    Exists { path: PathBuf },

    #[error("{}: cannot resume: the log was written with other {field}\n  log: {log}\n  now: {now}", path.display())]
    ResumeMismatch { path: PathBuf, field: &'static str, log: String, now: String },

    #[error("{}: another process is writing this file (it holds the file's lock); wait for it to end, or stop it", path.display())]
    Locked { path: PathBuf },

    /// A log whose run did not end normally, read where results are needed.
    #[error("{}: {why}", path.display())]
    Unfinished { path: PathBuf, why: String },
}

impl LogError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> LogError {
        let path = path.into();
        move |source| LogError::Io { path, source }
    }
}

/// What is wrong with a sample log.
#[derive(Debug, thiserror::Error)]
pub enum LogFault {
    #[error("not a sample-log line")]
    NotALogLine(#[source] serde_json::Error),

    #[error("the first line must be the header")]
    HeaderNotFirst,

    #[error("a second header")]
    SecondHeader,

    #[error("a line after the footer (two runs written into one file?)")]
    AfterFooter,

    #[error("task {task} is logged twice (first on line {first_line})")]
    TaskTwice { task: usize, first_line: usize },

    #[error("the footer says {said} tasks were scored, but {lines} task lines precede it")]
    FooterCount { said: usize, lines: usize },

    #[error("log format version {found}, newer than the {supported} this mcscore reads: read it with a newer mcscore")]
    NewerVersion { found: u32, supported: u32 },

    #[error("log format version 0: versions start at 1")]
    VersionZero,

    #[error("the header's limit is 0: a run of the first tasks scores at least one")]
    ZeroLimit,

    #[error("empty sample log (no header line)")]
    Empty,

    #[error("a directory, not a sample log")]
    Directory,

    #[error("task {task}: {what}")]
    Record { task: usize, what: String },

    #[error(
        "the header's shard is {index} of {count} (of a run of {run_tasks} tasks of the file's {file_tasks}): a shard index is below the count, the count at most the run's tasks, and those at most the file's"
    )]
    Shard { index: usize, count: usize, run_tasks: usize, file_tasks: usize },

    #[error("{lines} task lines, but the header announces {announced} tasks")]
    TooManyTasks { lines: usize, announced: usize },

    #[error("the footer says the run is complete, but {logged} of {announced} tasks are logged")]
    CompleteButShort { logged: usize, announced: usize },

    #[error(
        "the footer says a sequential comparison stopped the run ({stopped:?}), but the header is not one's, or the run is not complete"
    )]
    StoppedNotSequential { stopped: Stop },

    #[error("the header's sequential comparison does not hold together: {why}")]
    BadSequential { why: &'static str },

    #[error("the header records a chat template, which a version-{version} log cannot hold (version 3 added it)")]
    ChatInOldVersion { version: u32 },
}

/// Which of llama-perplexity's multiple-choice modes a job is: what its file
/// holds, how its tasks are picked and what of each option is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskKind {
    /// A task file (`.bin`, `--multiple-choice`): `question + " " + option`,
    /// the option's tokens scored.
    #[default]
    MultipleChoice,
    /// HellaSwag's six-line text file (`--hellaswag`): scored as multiple
    /// choice, in llama-perplexity's shuffled order.
    HellaSwag,
    /// A Winogrande CSV (`--winogrande`): each option fills the sentence's
    /// `_`, and the sentence after it is scored.
    Winogrande,
}

impl TaskKind {
    /// llama-perplexity's flag for this mode.
    pub fn flag(self) -> &'static str {
        match self {
            TaskKind::MultipleChoice => "--multiple-choice",
            TaskKind::HellaSwag => "--hellaswag",
            TaskKind::Winogrande => "--winogrande",
        }
    }
}

/// What a shard log's header says about its shard and the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardHeader {
    pub index: usize,
    pub count: usize,
    /// The partition rule (`mcscore_eval::shard::RULE`).
    pub rule: String,
    /// Tasks of the whole run, and in its file (for llama-perplexity's output of a merged run).
    pub run_tasks: usize,
    pub file_tasks: usize,
    /// sha256 of the whole run's task indices in run order ([`run_sha256`]).
    pub run_sha256: String,
}

/// Takes the exclusive lock on `file` (opened from `path`) without waiting.
pub(crate) fn lock(file: &File, path: &Path) -> Result<(), LogError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(LogError::Locked { path: path.to_owned() }),
        Err(std::fs::TryLockError::Error(source)) => Err(LogError::Io { path: path.to_owned(), source }),
    }
}

/// Holds the lock of the regular file at `path`, if one is there, while an
/// output replaces it: a file another run is writing is never replaced.
pub(crate) struct ReplaceLock {
    _file: Option<File>,
}

impl ReplaceLock {
    pub(crate) fn acquire(path: &Path) -> Result<ReplaceLock, LogError> {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => {
                let file = File::open(path).map_err(LogError::io(path))?;
                lock(&file, path)?;
                Ok(ReplaceLock { _file: Some(file) })
            }
            _ => Ok(ReplaceLock { _file: None }),
        }
    }
}

/// The newest log format this mcscore reads and writes; a reader refuses a
/// newer one by name. Logs written before the field existed read as version 1.
/// Version 2 adds a sequential comparison's `sequential` header field and
/// the footer's `stopped`; version 3 the `chat` header field. A log without
/// them is still written as the oldest version that holds it, so that older
/// readers read it (and refuse, by name, what they cannot read right).
pub const LOG_VERSION: u32 = 3;

/// The version of a log with this header: the oldest that holds all of it.
pub fn version_for(sequential: Option<&Sequential>, chat: Option<&ChatHeader>) -> u32 {
    if chat.is_some() {
        3
    } else if sequential.is_some() {
        2
    } else {
        1
    }
}

fn version_1() -> u32 {
    1
}

/// What a log was written from; `--resume` requires all of it but the paths
/// to match. Inputs are identified by content (sha256 and size), so the same
/// model or file reached through another path, a copy or a link still matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The log format version ([`LOG_VERSION`]).
    #[serde(default = "version_1")]
    pub version: u32,
    pub mcscore: String,
    /// The model's path as given (for people; not compared).
    pub model: String,
    pub model_sha256: String,
    /// Whether `model_sha256` came from the hash cache rather than a read of
    /// the model (for people; not compared).
    #[serde(default)]
    pub model_sha256_cached: bool,
    #[serde(default)]
    pub model_bytes: u64,
    /// The task file's path as given (for people; not compared).
    pub file: String,
    pub file_sha256: String,
    #[serde(default)]
    pub file_bytes: u64,
    /// Tasks this run announced.
    pub tasks: usize,
    /// `--multiple-choice-tasks`, if a subset was scored.
    pub selection: Option<usize>,
    /// `--limit`, if the file's first tasks were scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    pub settings: String,
    /// Set in the log of one shard of a run (`--shard K/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardHeader>,
    /// Set in the logs of a sequential comparison (`compare --until-decided`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// Set where the run scored inside a chat template (`--chat-template`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatHeader>,
}

/// A run's chat template and its guards, as the log's header records them:
/// part of the run's identity, so `--resume` and `merge` refuse a run that
/// scored another way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatHeader {
    /// `auto`, a built-in name or the file given (for people; not compared).
    pub template: String,
    /// Where it came from: `gguf`, `builtin` or `file`.
    pub origin: String,
    /// sha256 of the template's text (of the name, for a built-in one).
    pub sha256: String,
    /// The engine that rendered it.
    pub renderer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Solved examples scored as turns, if the file's shots were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shots_as_turns: Option<usize>,
    /// Where the one BOS comes from: `template`, `tokenizer` or `none`.
    pub bos: String,
    /// `disabled` (rendering with `enable_thinking` true gives another prompt;
    /// it is rendered false) or `not in template`.
    pub thinking: String,
    /// The text the template adds to open the assistant's turn.
    pub generation_prompt: String,
    /// Between the generation prompt and the option: always empty, the
    /// option starts the answer (lm-evaluation-harness puts a `" "` there).
    pub delimiter: String,
    /// The rendered prompt of the run's first task, up to the option.
    pub first_task_prompt: String,
}

impl ChatHeader {
    /// What tells two runs' use of a template apart (the path given aside).
    pub fn identity(&self) -> String {
        format!(
            "{} template sha256 {} rendered by {}, system {}, shots as turns {}, BOS from {}, thinking {}, delimiter {:?}, first prompt sha256 {}",
            self.origin,
            self.sha256,
            self.renderer,
            or_none(self.system.as_ref().map(|s| format!("{s:?}"))),
            or_none(self.shots_as_turns),
            self.bos,
            self.thinking,
            self.delimiter,
            mcscore_format::sha256_hex(self.first_task_prompt.as_bytes())
        )
    }
}

/// What a sequential comparison's logs say of it: the order its tasks were
/// taken in and the rule that stops it. A resume requires all of it to match,
/// so that it continues the same order and reaches the same decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequential {
    /// How the order is drawn from the seed (`mcscore_eval::until_decided::ORDER_RULE`).
    pub order_rule: String,
    pub seed: u64,
    /// sha256 of the order's task indices ([`ShardHeader::run_sha256`]'s rule).
    pub order_sha256: String,
    /// Tasks in the file (the order takes at most `--max-tasks` of them).
    pub file_tasks: usize,
    /// Tasks scored between two looks at the confidence sequences.
    pub chunk: usize,
    /// The error rate of each decision, before it is split between the OTHERs.
    pub alpha: f64,
    /// The equivalence margin, in accuracy points.
    pub margin: f64,
    /// The normalisation whose right or wrong the sequences follow.
    pub normalisation: String,
    /// The sha256 of BASE's model, and of each OTHER's, in order.
    pub base_sha256: String,
    pub other_sha256: Vec<String>,
}

impl Header {
    /// Which mode the run scored, as its settings record it.
    pub fn kind(&self) -> TaskKind {
        let words: Vec<&str> = self.settings.split(' ').collect();
        if words.contains(&"hellaswag") {
            TaskKind::HellaSwag
        } else if words.contains(&"winogrande") {
            TaskKind::Winogrande
        } else {
            TaskKind::MultipleChoice
        }
    }

    /// The task file's task count, where the header tells it: a shard's or
    /// a sequential comparison's record of it, or a run of the whole file.
    pub fn file_tasks(&self) -> Option<usize> {
        match (&self.shard, &self.sequential) {
            (Some(shard), _) => Some(shard.file_tasks),
            (None, Some(sequential)) => Some(sequential.file_tasks),
            (None, None) => (self.selection.is_none() && self.limit.is_none()).then_some(self.tasks),
        }
    }
}

/// The inputs a run read, by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub sha256: String,
    pub bytes: u64,
}

/// What makes logs parts of one run: the inputs by content, what was scored
/// and how, the chat template, the log format and mcscore's version, and the
/// shard. `--resume` and shard merges check it through one
/// [`RunIdentity::mismatch`], which names the first field that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunIdentity {
    /// [`chat_identity`]: the template and its guards, or "none".
    pub chat_template: String,
    /// The log format ([`LOG_VERSION`]).
    pub version: u32,
    pub model: Input,
    pub file: Input,
    /// Tasks announced (for a shard: its own).
    pub tasks: usize,
    /// The subset, or the first tasks (`limit`), scored.
    pub selection: Option<usize>,
    pub limit: Option<usize>,
    /// The mode and the settings that change a score, as the log records them.
    pub settings: String,
    /// A sequential comparison's order and stopping rule, or "none".
    pub sequential: String,
    pub mcscore: String,
    pub shard: Option<ShardHeader>,
}

/// The first field of two identities (a run's, a sweep's) that differs,
/// with both values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub field: &'static str,
    pub was: String,
    pub now: String,
}

impl Mismatch {
    /// The first of `fields` (name, value then, value now) whose values differ.
    pub fn first(fields: impl IntoIterator<Item = (&'static str, String, String)>) -> Option<Mismatch> {
        fields.into_iter().find(|(_, was, now)| was != now).map(|(field, was, now)| Mismatch { field, was, now })
    }
}

impl RunIdentity {
    pub fn of(header: &Header) -> RunIdentity {
        RunIdentity {
            chat_template: chat_identity(header.chat.as_ref()),
            version: header.version,
            model: Input { sha256: header.model_sha256.clone(), bytes: header.model_bytes },
            file: Input { sha256: header.file_sha256.clone(), bytes: header.file_bytes },
            tasks: header.tasks,
            selection: header.selection,
            limit: header.limit,
            settings: header.settings.clone(),
            sequential: describe_sequential(header),
            mcscore: header.mcscore.clone(),
            shard: header.shard.clone(),
        }
    }

    /// The identity of the whole run a shard log is part of: what differs
    /// from shard to shard of one run (its task count and index) set aside.
    pub fn of_run(header: &Header) -> RunIdentity {
        let mut identity = RunIdentity::of(header);
        identity.tasks = 0;
        if let Some(shard) = identity.shard.as_mut() {
            shard.index = 0;
        }
        identity
    }

    /// The first field that differs from `now`'s, with both values; the chat
    /// template before the version, which a template raises.
    pub fn mismatch(&self, now: &RunIdentity) -> Option<Mismatch> {
        let fields = [
            ("chat template", self.chat_template.clone(), now.chat_template.clone()),
            ("version", self.version.to_string(), now.version.to_string()),
            ("model_sha256", self.model.sha256.clone(), now.model.sha256.clone()),
            ("model_bytes", self.model.bytes.to_string(), now.model.bytes.to_string()),
            ("file_sha256", self.file.sha256.clone(), now.file.sha256.clone()),
            ("file_bytes", self.file.bytes.to_string(), now.file.bytes.to_string()),
            ("tasks", self.tasks.to_string(), now.tasks.to_string()),
            ("selection", or_none(self.selection), or_none(now.selection)),
            ("limit", or_none(self.limit), or_none(now.limit)),
            ("settings", self.settings.clone(), now.settings.clone()),
            ("sequential comparison", self.sequential.clone(), now.sequential.clone()),
            ("mcscore", self.mcscore.clone(), now.mcscore.clone()),
        ];
        // A shard's fields, or "none" for each in the log of a whole run.
        let shard = |identity: &RunIdentity| match &identity.shard {
            Some(s) => [s.index.to_string(), s.count.to_string(), s.rule.clone(), s.run_tasks.to_string(), s.run_sha256.clone()],
            None => std::array::from_fn(|_| "none".to_owned()),
        };
        let shard_names = ["shard index", "shard count", "partition rule", "run tasks", "run task list (run_sha256)"];
        Mismatch::first(
            fields.into_iter().chain(shard_names.into_iter().zip(shard(self)).zip(shard(now)).map(|((name, was), now)| (name, was, now))),
        )
    }
}

/// How an input (a model, a task file) is named in text, tables, plots and
/// file names, by every command: its file stem (`gemma-3-270m-q4_k_m` for
/// `models/gemma-3-270m-q4_k_m.gguf`), or the whole path where it has none.
pub fn label(path: &str) -> String {
    std::path::Path::new(path).file_stem().map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned())
}

/// A value said in a message, or "none" where it is absent.
pub fn or_none<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

/// A run's chat template and its guards ([`ChatHeader::identity`]), or
/// "none", for a refusal that names what differs.
pub fn chat_identity(chat: Option<&ChatHeader>) -> String {
    chat.map_or_else(|| "none".to_owned(), ChatHeader::identity)
}

/// A sequential comparison's order and stopping rule, for a resume's refusal.
fn describe_sequential(header: &Header) -> String {
    match &header.sequential {
        None => "none".to_owned(),
        Some(s) => format!(
            "order {} seed {} (sha256 {}), chunks of {}, alpha {}, margin {}, {}, base {}, others {}",
            s.order_rule,
            s.seed,
            s.order_sha256,
            s.chunk,
            s.alpha,
            s.margin,
            s.normalisation,
            s.base_sha256,
            s.other_sha256.join(" ")
        ),
    }
}

/// The prediction of each normalisation, or whether it was right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerNormalisation<T> {
    pub acc: T,
    pub acc_norm: T,
    pub acc_char: T,
    pub acc_byte: T,
    /// Only in logs of `score --pmi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acc_pmi: Option<T>,
}

impl<T: Copy> PerNormalisation<T> {
    pub(crate) fn from_fn(with_pmi: bool, f: impl Fn(Normalisation) -> T) -> Self {
        PerNormalisation {
            acc: f(Normalisation::Acc),
            acc_norm: f(Normalisation::AccNorm),
            acc_char: f(Normalisation::AccChar),
            acc_byte: f(Normalisation::AccByte),
            acc_pmi: with_pmi.then(|| f(Normalisation::AccPmi)),
        }
    }

    /// Panics for acc_pmi in a log without it: ask `has_pmi` first.
    pub fn get(&self, norm: Normalisation) -> T {
        match norm {
            Normalisation::Acc => self.acc,
            Normalisation::AccNorm => self.acc_norm,
            Normalisation::AccChar => self.acc_char,
            Normalisation::AccByte => self.acc_byte,
            Normalisation::AccPmi => self.acc_pmi.expect("acc_pmi is logged only by score --pmi"),
        }
    }
}

/// The share of `records` that `norm` got right.
pub fn accuracy(records: &[TaskRecord], norm: Normalisation) -> mcscore_metrics::Proportion {
    mcscore_metrics::Proportion { successes: records.iter().filter(|r| r.correct.get(norm)).count(), n: records.len() }
}

/// One scored task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Index of the task in its file.
    pub task: usize,
    pub options: Vec<OptionScore>,
    /// First option whose label is 1 (`null` only for lenient runs).
    pub gold: Option<usize>,
    /// Per option: whether its label is 1.
    pub labels: Vec<bool>,
    pub pred: PerNormalisation<usize>,
    pub correct: PerNormalisation<bool>,
}

/// The normalisations every record of a run has.
pub fn normalisations(records: &[TaskRecord]) -> &'static [Normalisation] {
    if !records.is_empty() && records.iter().all(|r| r.pred.acc_pmi.is_some()) {
        &Normalisation::WITH_PMI
    } else {
        &Normalisation::ALL
    }
}

impl TaskRecord {
    pub fn new(task: usize, options: Vec<OptionScore>, labels: Vec<bool>) -> TaskRecord {
        let with_pmi = options.iter().all(|o| o.uncond_logprob_sum.is_some());
        let pred = PerNormalisation::from_fn(with_pmi, |n| n.predict(&options));
        // pred holds acc_pmi exactly when with_pmi asks for it; a pick is an option's index, and callers give a label per option
        let correct = PerNormalisation::from_fn(with_pmi, |n| labels[pred.get(n)]);
        TaskRecord { task, gold: labels.iter().position(|&l| l), options, labels, pred, correct }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    /// Boxed: a header is several times a task line's size.
    Header(Box<Header>),
    Task(TaskRecord),
    Footer(Footer),
}

/// The last line of a log that was closed: after Ctrl-C (`complete: false`)
/// or at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footer {
    pub complete: bool,
    pub scored: usize,
    /// Why a sequential comparison's run ended before its last task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stop>,
}

/// Why a sequential comparison stopped scoring a model: a complete log of
/// fewer tasks than its header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// This OTHER's confidence sequence excluded 0.
    Different,
    /// This OTHER's confidence sequence lay inside ±margin.
    Equivalent,
    /// BASE: every OTHER was decided.
    EveryOtherDecided,
}

/// A log as read: its header, task lines and footer, and where each line ends.
#[derive(Debug)]
pub struct Contents {
    pub header: Header,
    pub records: Vec<TaskRecord>,
    pub footer: Option<Footer>,
    /// Byte offset just past the header line and past each task line.
    pub(crate) line_ends: Vec<u64>,
}

impl Contents {
    /// Whether the log holds a finished run: a footer saying so, over every task.
    pub fn is_complete(&self) -> bool {
        match self.footer {
            Some(footer) if footer.complete => self.records.len() == self.header.tasks || footer.stopped.is_some(),
            _ => false,
        }
    }

    /// Refuses a log that does not hold a finished run, saying why: results
    /// are read only from runs that ended normally.
    pub fn require_complete(&self, path: &Path) -> Result<(), LogError> {
        match self.unfinished() {
            None => Ok(()),
            Some(why) => Err(LogError::Unfinished { path: path.to_owned(), why }),
        }
    }

    /// Why the log does not hold a finished run, or `None` when it does.
    pub fn unfinished(&self) -> Option<String> {
        let (logged, announced) = (self.records.len(), self.header.tasks);
        let command = if self.header.sequential.is_some() { "compare --until-decided" } else { "score" };
        Some(match self.footer {
            _ if self.is_complete() => return None,
            Some(_) => format!("{logged} of {announced} tasks logged, marked incomplete when the run was interrupted; finish it with `mcscore {command} ... --resume`"),
            None if logged < announced => format!("{logged} of {announced} tasks logged and no footer: the run was interrupted or killed; finish it with `mcscore {command} ... --resume`"),
            None => format!("all {announced} tasks are logged, but the log has no footer: the run did not end normally (it failed after its last task, e.g. because the model file changed), so its results are not to be trusted; score it again"),
        })
    }
}

/// How [`SampleLog::open`] found the log.
pub enum Opened {
    /// Ready for task lines, after the kept ones.
    Writing { log: SampleLog, kept: Vec<TaskRecord> },
    /// `--resume` of a log that already holds the whole run: left untouched.
    Complete { records: Vec<TaskRecord>, stopped: Option<Stop> },
}

/// Appends task lines as they are scored, flushing after each fill. Its file
/// holds the log's lock (on the file itself), so a second run on the same
/// log, through any path or link, is refused.
pub struct SampleLog {
    path: PathBuf,
    out: BufWriter<File>,
}

impl SampleLog {
    /// Starts a new log, or (with `resume`) continues one written for the same
    /// inputs and settings, keeping its first `keep(done)` task lines byte for
    /// byte and cutting the file after them.
    pub fn open(path: &Path, header: &Header, resume: bool, keep: impl FnOnce(usize) -> usize) -> Result<Opened, LogError> {
        // A new log appears under its name only with its header whole: it is
        // written beside it and renamed without replacing anything, so a full
        // disk or a signal never leaves an empty log that --resume cannot read.
        if matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            let mut new = mcscore_format::AtomicFile::create_new(path)?;
            write_line(&mut new, &Line::Header(Box::new(header.clone()))).map_err(LogError::io(path))?;
            match new.commit() {
                Ok(file) => {
                    lock(&file, path)?;
                    return Ok(Opened::Writing { log: SampleLog { path: path.to_owned(), out: BufWriter::new(file) }, kept: Vec::new() });
                }
                // Another run made it meanwhile: read below as any existing log.
                Err(mcscore_format::Error::Exists { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if path.is_dir() {
            return Err(LogError::Whole { path: path.to_owned(), fault: LogFault::Directory });
        }
        mcscore_format::check_input(path)?;
        let file = File::options().read(true).write(true).open(path).map_err(LogError::io(path))?;
        let metadata = file.metadata().map_err(LogError::io(path))?;
        if !metadata.is_file() {
            return Err(mcscore_format::Error::NotRegular { path: path.to_owned(), kind: mcscore_format::file_kind(&metadata) }.into());
        }
        if !resume {
            return Err(LogError::Exists { path: path.to_owned() });
        }
        // Locked before it is read: what is read is what no one else writes.
        lock(&file, path)?;
        let mut bytes = Vec::new();
        (&file).read_to_end(&mut bytes).map_err(LogError::io(path))?;
        let contents = parse(&bytes, path)?;
        if let Some(Mismatch { field, was, now }) = RunIdentity::of(&contents.header).mismatch(&RunIdentity::of(header)) {
            return Err(LogError::ResumeMismatch { path: path.to_owned(), field, log: was, now });
        }
        if contents.is_complete() {
            let stopped = contents.footer.and_then(|f| f.stopped);
            return Ok(Opened::Complete { records: contents.records, stopped });
        }
        let Contents { mut records, line_ends, .. } = contents;
        let kept = keep(records.len()).min(records.len());
        records.truncate(kept);
        // Everything after the kept lines (later tasks, a torn line, the
        // footer) goes; the kept bytes are not rewritten.
        // parse records a line end for the header and each task line, and kept <= records.len()
        file.set_len(line_ends[kept]).and_then(|()| file.sync_all()).map_err(LogError::io(path))?;
        let mut out = BufWriter::new(file);
        out.seek(SeekFrom::End(0)).map_err(LogError::io(path))?;
        Ok(Opened::Writing { log: SampleLog { path: path.to_owned(), out }, kept: records })
    }

    pub fn record(&mut self, record: &TaskRecord) -> Result<(), LogError> {
        write_line(&mut self.out, &Line::Task(record.clone())).map_err(LogError::io(&self.path))
    }

    /// Hands what was written to the OS; called after each fill, so that a
    /// crash loses at most the fill in progress.
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.out.flush().map_err(LogError::io(&self.path))
    }

    /// Ends the log; `complete: false` marks it as resumable, not finished.
    pub fn finish(self, complete: bool, scored: usize) -> Result<(), LogError> {
        self.close(Footer { complete, scored, stopped: None })
    }

    /// Ends a sequential comparison's log before its last task, complete.
    pub fn stop(self, scored: usize, stopped: Stop) -> Result<(), LogError> {
        self.close(Footer { complete: true, scored, stopped: Some(stopped) })
    }

    fn close(mut self, footer: Footer) -> Result<(), LogError> {
        write_line(&mut self.out, &Line::Footer(footer))
            .and_then(|()| self.out.flush())
            .and_then(|()| self.out.get_ref().sync_all())
            .map_err(LogError::io(&self.path))
    }
}

/// Writes a complete log (header, every record, footer) to `path`,
/// atomically: what `merge` produces, readable like any finished run's log.
/// `existing` says whether a regular file at `path` may be replaced; one
/// that another run is writing never is.
pub fn write_complete(path: &Path, header: &Header, records: &[TaskRecord], existing: mcscore_format::Existing) -> Result<(), LogError> {
    let _lock = ReplaceLock::acquire(path)?;
    // AtomicFile buffers its writes itself.
    let mut file = mcscore_format::AtomicFile::with(path, existing)?;
    let out = &mut file;
    let written = (|| {
        write_line(out, &Line::Header(Box::new(header.clone())))?;
        for record in records {
            write_line(out, &Line::Task(record.clone()))?;
        }
        write_line(out, &Line::Footer(Footer { complete: true, scored: records.len(), stopped: None }))?;
        out.flush()
    })();
    written.map_err(LogError::io(path))?;
    file.commit()?;
    Ok(())
}

fn write_line(out: &mut impl Write, line: &Line) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Reads a log. Every line a run wrote ends in a newline, so a last line
/// without one was cut short by a crash and is dropped, whatever it holds;
/// any other unreadable line is an error naming its line number, and so is a
/// task logged twice or a footer that does not match the lines above it.
pub fn read(path: &Path) -> Result<Contents, LogError> {
    if path.is_dir() {
        return Err(LogError::Whole { path: path.to_owned(), fault: LogFault::Directory });
    }
    parse(&mcscore_format::read_input(path)?, path)
}

/// Reads a log's bytes (see [`read`]); `path` names it in errors. Every task
/// line is checked against itself and the header ([`check_record`]).
pub fn parse(bytes: &[u8], path: &Path) -> Result<Contents, LogError> {
    let mut header: Option<Header> = None;
    let mut records: Vec<TaskRecord> = Vec::new();
    let mut footer = None;
    let mut line_ends = Vec::new();
    let mut first_line_of: HashMap<usize, usize> = HashMap::new();
    let mut start = 0;
    let mut n = 0;
    while let Some(length) = bytes[start..].iter().position(|&b| b == b'\n') {
        n += 1;
        let text = &bytes[start..start + length];
        start += length + 1;
        let fail = |fault: LogFault| LogError::Line { path: path.to_owned(), line: n, fault };
        if footer.is_some() {
            return Err(fail(LogFault::AfterFooter));
        }
        if n == 1 {
            // The version is read first, so that a newer log is refused by
            // name rather than as a line this reader does not understand.
            let version = serde_json::from_slice::<Versioned>(text).map(|v| v.version).unwrap_or(1);
            if version > LOG_VERSION {
                return Err(fail(LogFault::NewerVersion { found: version, supported: LOG_VERSION }));
            }
        }
        let line: Line = serde_json::from_slice(text).map_err(|e| fail(LogFault::NotALogLine(e)))?;
        match line {
            Line::Header(h) if n == 1 => {
                check_header(&h).map_err(fail)?;
                header = Some(*h);
            }
            _ if n == 1 => return Err(fail(LogFault::HeaderNotFirst)),
            Line::Header(_) => return Err(fail(LogFault::SecondHeader)),
            Line::Task(record) => {
                // The header is there: a first line that is not one is refused above.
                if let Some(h) = &header {
                    check_record(h, &record).map_err(fail)?;
                }
                if let Some(first_line) = first_line_of.insert(record.task, n) {
                    return Err(fail(LogFault::TaskTwice { task: record.task, first_line }));
                }
                records.push(record);
            }
            Line::Footer(f) => {
                if f.scored != records.len() {
                    return Err(fail(LogFault::FooterCount { said: f.scored, lines: records.len() }));
                }
                footer = Some(f);
            }
        }
        if footer.is_none() {
            line_ends.push(start as u64);
        }
    }
    // Nothing is written after a complete footer, so not even a line cut short
    // by a crash (an unfinished log's torn tail is dropped: a resume cuts it).
    if footer.is_some_and(|f| f.complete) && start < bytes.len() {
        return Err(LogError::Line { path: path.to_owned(), line: n + 1, fault: LogFault::AfterFooter });
    }
    let whole = |fault: LogFault| LogError::Whole { path: path.to_owned(), fault };
    let header = header.ok_or_else(|| whole(LogFault::Empty))?;
    if records.len() > header.tasks {
        return Err(whole(LogFault::TooManyTasks { lines: records.len(), announced: header.tasks }));
    }
    if let Some(stopped) = footer.and_then(|f| f.stopped) {
        if header.sequential.is_none() || footer.is_some_and(|f| !f.complete) {
            return Err(whole(LogFault::StoppedNotSequential { stopped }));
        }
    } else if footer.is_some_and(|f| f.complete) && records.len() != header.tasks {
        return Err(whole(LogFault::CompleteButShort { logged: records.len(), announced: header.tasks }));
    }
    Ok(Contents { header, records, footer, line_ends })
}

/// Checks what a header says of the run's shape.
fn check_header(header: &Header) -> Result<(), LogFault> {
    if header.version == 0 {
        return Err(LogFault::VersionZero);
    }
    if header.limit == Some(0) {
        return Err(LogFault::ZeroLimit);
    }
    if let Some(shard) = &header.shard {
        if shard.count == 0 || shard.index >= shard.count || shard.count > shard.run_tasks.max(1) || shard.run_tasks > shard.file_tasks {
            return Err(LogFault::Shard {
                index: shard.index,
                count: shard.count,
                run_tasks: shard.run_tasks,
                file_tasks: shard.file_tasks,
            });
        }
    }
    if let Some(sequential) = &header.sequential {
        let why = if header.version < 2 {
            Some("a version-1 header cannot hold one")
        } else if header.shard.is_some() {
            Some("a sequential comparison is not sharded")
        } else if sequential.chunk == 0 || header.tasks > sequential.file_tasks {
            Some("its chunk is 0, or it announces more tasks than its file has")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(LogFault::BadSequential { why });
        }
    }
    if header.chat.is_some() && header.version < 3 {
        return Err(LogFault::ChatInOldVersion { version: header.version });
    }
    Ok(())
}

/// The lowest log-probability a token has from a row of finite f32 logits:
/// its logit less the row's largest (at worst −2 × `f32::MAX`), less the log
/// of a sum of at most 2³² terms of at most 1. Below it a log was edited, and
/// the figures derived from it (KL, softmax gaps) could overflow.
pub const MIN_TOKEN_LOGPROB: f64 = -2.0 * f32::MAX as f64 - 23.0;

/// Checks a task line against itself and its header: what a scorer writes
/// holds together (labels, gold, predictions and right/wrong follow from the
/// option scores), so a damaged or edited line is refused by name rather than
/// reported as a result.
pub fn check_record(header: &Header, record: &TaskRecord) -> Result<(), LogFault> {
    let fault = |what: String| LogFault::Record { task: record.task, what };
    let k = record.options.len();
    if k < 2 {
        return Err(fault(format!("{k} option(s); a scored task has at least 2")));
    }
    if let Some(file_tasks) = header.file_tasks().filter(|&n| record.task >= n) {
        return Err(fault(format!("its index is past the task file's {file_tasks} tasks")));
    }
    if k > mcscore_format::MAX_OPTIONS {
        return Err(fault(format!("{k} options; a task file holds at most {}", mcscore_format::MAX_OPTIONS)));
    }
    if header.kind() == TaskKind::Winogrande && k != 2 {
        return Err(fault(format!("{k} options; a Winogrande task has exactly 2")));
    }
    if record.labels.len() != k {
        return Err(fault(format!("{} labels for {k} options", record.labels.len())));
    }
    for (i, option) in record.options.iter().enumerate() {
        if option.tokens == 0 {
            return Err(fault(format!("option {i} has 0 scored tokens")));
        }
        // Options are non-empty text; UTF-8 takes 1 to 4 bytes a character.
        if option.chars == 0 || option.bytes < option.chars || u64::from(option.bytes) > 4 * u64::from(option.chars) {
            return Err(fault(format!("option {i} has {} characters in {} bytes, which no text has", option.chars, option.bytes)));
        }
        if !option.logprob_sum.is_finite() || option.uncond_logprob_sum.is_some_and(|u| !u.is_finite()) {
            return Err(fault(format!("option {i} has a log-probability that is not finite")));
        }
        // A log-softmax subtracts the row's maximum and a log of a sum of at least 1.
        if let Some(above) = [Some(option.logprob_sum), option.uncond_logprob_sum].into_iter().flatten().find(|&l| l > 0.0) {
            return Err(fault(format!(
                "option {i} has a log-probability of {}, above 0, which no probability has",
                mcscore_metrics::shown(above)
            )));
        }
        // The unconditional pass tokenises the option alone: its tokens are not
        // counted, but none is shorter than a byte.
        let tokens = f64::from(option.tokens) + f64::from(option.bytes);
        if let Some(below) =
            [Some(option.logprob_sum), option.uncond_logprob_sum].into_iter().flatten().find(|&l| l < MIN_TOKEN_LOGPROB * tokens)
        {
            return Err(fault(format!(
                "option {i} has a log-probability of {below:e}, below {MIN_TOKEN_LOGPROB:.1e} nats a token, which no row of f32 logits gives"
            )));
        }
    }
    let with_pmi = record.options.iter().all(|o| o.uncond_logprob_sum.is_some());
    let any_pmi = record.options.iter().any(|o| o.uncond_logprob_sum.is_some());
    if with_pmi != any_pmi || record.pred.acc_pmi.is_some() != with_pmi || record.correct.acc_pmi.is_some() != with_pmi {
        return Err(fault("acc_pmi is logged for some of the options, predictions and right/wrong flags but not all".into()));
    }
    let gold = record.labels.iter().position(|&l| l);
    if record.gold != gold {
        let option = |g: Option<usize>| g.map_or_else(|| "none".to_owned(), |g| format!("option {g}"));
        return Err(fault(format!("gold is {}, but the labels' first 1 is {}", option(record.gold), option(gold))));
    }
    let lenient = header.settings.split(' ').any(|w| w == "lenient");
    if !lenient && record.labels.iter().filter(|&&l| l).count() != 1 {
        return Err(fault("the labels are not exactly one 1 (only a --lenient run logs such a task)".into()));
    }
    let norms: &[Normalisation] = if with_pmi { &Normalisation::WITH_PMI } else { &Normalisation::ALL };
    for &norm in norms {
        let pick = norm.predict(&record.options);
        // acc_pmi is present in both, or in neither (checked above).
        let (logged, right) = (record.pred.get(norm), record.correct.get(norm));
        // predict picks one of the k >= 2 options, and there are k labels (both checked above)
        if logged != pick || right != record.labels[pick] {
            return Err(fault(format!(
                "{} is logged as option {logged} ({}), but the option scores pick option {pick} ({}): the line was edited or damaged",
                norm.name(),
                if right { "right" } else { "wrong" },
                if record.labels[pick] { "right" } else { "wrong" }
            )));
        }
    }
    Ok(())
}

/// Just the version of a header line.
#[derive(Deserialize)]
struct Versioned {
    #[serde(default = "version_1")]
    version: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    use mcscore_format::with_causes;
    use std::fs::File;

    #[test]
    fn a_second_writer_is_refused_through_any_link() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run.jsonl");
        std::fs::write(&log, "").unwrap();
        let first = File::options().append(true).open(&log).unwrap();
        lock(&first, &log).unwrap();
        let hard = dir.path().join("hard.jsonl");
        std::fs::hard_link(&log, &hard).unwrap();
        let soft = dir.path().join("soft.jsonl");
        std::os::unix::fs::symlink(&log, &soft).unwrap();
        for path in [&log, &hard, &soft] {
            let second = File::options().append(true).open(path).unwrap();
            let error = lock(&second, path).unwrap_err().to_string();
            assert!(error.contains("another process is writing"), "{error}");
        }
        assert!(ReplaceLock::acquire(&hard).is_err());
        drop(first);
        lock(&File::open(&soft).unwrap(), &soft).expect("free again");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no lock file beside the log");
    }

    fn header(sequential: bool) -> Header {
        Header {
            version: version_for(None, None) + u32::from(sequential),
            mcscore: "test".into(),
            model: "m".into(),
            model_sha256: "m".into(),
            model_sha256_cached: false,
            model_bytes: 1,
            file: "f".into(),
            file_sha256: "f".into(),
            file_bytes: 1,
            tasks: 3,
            selection: None,
            limit: None,
            settings: "c=auto".into(),
            shard: None,
            sequential: sequential.then(|| Sequential {
                order_rule: "rule".into(),
                seed: 1,
                order_sha256: "o".into(),
                file_tasks: 3,
                chunk: 1,
                alpha: 0.05,
                margin: 1.0,
                normalisation: "acc_norm".into(),
                base_sha256: "m".into(),
                other_sha256: vec!["n".into()],
            }),
            chat: None,
        }
    }

    fn log_text(header: &Header, tasks: usize, footer: &str) -> Vec<u8> {
        let mut text = serde_json::to_string(&Line::Header(Box::new(header.clone()))).unwrap() + "\n";
        for task in 0..tasks {
            let options = vec![OptionScore { logprob_sum: -1.0, tokens: 1, chars: 1, bytes: 1, uncond_logprob_sum: None }; 2];
            text += &(serde_json::to_string(&Line::Task(TaskRecord::new(task, options, vec![true, false]))).unwrap() + "\n");
        }
        (text + footer + "\n").into_bytes()
    }

    #[test]
    fn a_sequential_log_stopped_early_is_complete_and_only_a_sequential_one_may_stop() {
        let path = Path::new("run.jsonl");
        let stopped = r#"{"type":"footer","complete":true,"scored":1,"stopped":"different"}"#;
        let contents = parse(&log_text(&header(true), 1, stopped), path).unwrap();
        assert!(contents.is_complete());
        assert_eq!(contents.footer.unwrap().stopped, Some(Stop::Different));
        assert_eq!(contents.header.version, 2);
        let error = with_causes(&parse(&log_text(&header(false), 1, stopped), path).unwrap_err());
        assert!(error.contains("stopped the run"), "{error}");
        let unfinished = r#"{"type":"footer","complete":false,"scored":1,"stopped":"different"}"#;
        assert!(parse(&log_text(&header(true), 1, unfinished), path).is_err());
        // A version-1 header cannot hold a sequential comparison.
        let mut old = header(true);
        old.version = 1;
        let error = with_causes(&parse(&log_text(&old, 1, r#"{"type":"footer","complete":false,"scored":1}"#), path).unwrap_err());
        assert!(error.contains("version-1"), "{error}");
        // A resume checks the comparison's rule.
        let mut other = header(true);
        other.sequential.as_mut().unwrap().margin = 2.0;
        assert_eq!(RunIdentity::of(&header(true)).mismatch(&RunIdentity::of(&other)).map(|m| m.field), Some("sequential comparison"));
        assert_eq!(RunIdentity::of(&header(false)).mismatch(&RunIdentity::of(&header(false))), None);
    }
}
