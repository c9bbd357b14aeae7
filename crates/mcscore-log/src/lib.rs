//! The sample log (`score --log-samples`): one JSON line per task, between a
//! header that pins the inputs and a footer that says whether the run
//! completed. The footer is what tells a finished log from an interrupted
//! one, and the header is what a resume checks before it trusts the lines in
//! between. Every line is checked when read ([`check_record`]), so a damaged
//! or edited log is refused by name, never reported as a result; the reader
//! has a fuzz target (`fuzz/fuzz_targets/read_log.rs`). Its own crate, without
//! the engine, so that fuzzing it builds no llama.cpp. The layout is in
//! docs/formats.md.

#![warn(missing_docs)]

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
    /// The log as a file: one the system could not open, read or write, one
    /// that is not a regular file, or an output that may not replace the
    /// file at its path.
    #[error(transparent)]
    Format(#[from] mcscore_format::Error),

    /// Reading, writing or cutting the log failed.
    #[error("{}", path.display())]
    Io {
        /// The log.
        path: PathBuf,
        /// The OS's error.
        #[source]
        source: std::io::Error,
    },

    /// A line of the log is at fault.
    #[error("{}: line {line}", path.display())]
    Line {
        /// The log.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        #[source]
        fault: LogFault,
    },

    /// The log as a whole is at fault: no header, a directory, or lines that
    /// do not add up to what the header and footer say.
    #[error("{}", path.display())]
    Whole {
        /// The log.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        fault: LogFault,
    },

    /// A new log was asked for where one exists: a run never writes over a
    /// log it does not resume.
    #[error("{}: the sample log exists; resume it, or remove it to start again", path.display())]
    Exists {
        /// The log.
        path: PathBuf,
    },

    /// A resume of a log written for another run: its header differs from
    /// the run's in `field`.
    #[error("{}: cannot resume: the log was written with other {field}\n  log: {log}\n  now: {now}", path.display())]
    ResumeMismatch {
        /// The log.
        path: PathBuf,
        /// The first field that differs ([`RunIdentity::mismatch`]).
        field: &'static str,
        /// Its value in the log.
        log: String,
        /// Its value for the run resuming it.
        now: String,
    },

    /// Another process holds the log's lock: it is writing the log.
    #[error("{}: another process is writing this file (it holds the file's lock); wait for it to end, or stop it", path.display())]
    Locked {
        /// The log.
        path: PathBuf,
    },

    /// A log whose run did not end normally, read where results are needed.
    #[error("{}: {why}", path.display())]
    Unfinished {
        /// The log.
        path: PathBuf,
        /// What the log lacks, and how to finish the run ([`Contents::unfinished`]).
        why: String,
    },
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
    /// A line that is not the JSON of a header, a task line or a footer.
    #[error("not a sample-log line")]
    NotALogLine(#[source] serde_json::Error),

    /// A first line that is not a header.
    #[error("the first line must be the header")]
    HeaderNotFirst,

    /// A header after the first line.
    #[error("a second header")]
    SecondHeader,

    /// A line after the footer, which ends a log.
    #[error("a line after the footer (two runs written into one file?)")]
    AfterFooter,

    /// A task on two lines.
    #[error("task {task} is logged twice (first on line {first_line})")]
    TaskTwice {
        /// The task's index in its file.
        task: usize,
        /// The line that logged it first.
        first_line: usize,
    },

    /// A footer whose count of tasks scored differs from the task lines above it.
    #[error("the footer says {said} tasks were scored, but {lines} task lines precede it")]
    FooterCount {
        /// The footer's count.
        said: usize,
        /// The task lines above it.
        lines: usize,
    },

    /// A log in a newer format than this mcscore reads.
    #[error("log format version {found}, newer than the {supported} this mcscore reads: read it with a newer mcscore")]
    NewerVersion {
        /// The log's format version.
        found: u32,
        /// The newest this mcscore reads ([`LOG_VERSION`]).
        supported: u32,
    },

    /// A header of version 0, which no mcscore writes.
    #[error("log format version 0: versions start at 1")]
    VersionZero,

    /// A header whose `limit` is 0.
    #[error("the header's limit is 0: a run of the first tasks scores at least one")]
    ZeroLimit,

    /// No header: the file holds no whole line.
    #[error("empty sample log (no header line)")]
    Empty,

    /// A directory given as the log.
    #[error("a directory, not a sample log")]
    Directory,

    /// A task line that does not hold together ([`check_record`]).
    #[error("task {task}: {what}")]
    Record {
        /// The task's index in its file.
        task: usize,
        /// What does not hold, as the message says it.
        what: String,
    },

    /// A shard header whose numbers no shard has.
    #[error(
        "the header's shard is {index} of {count} (of a run of {run_tasks} tasks of the file's {file_tasks}): a shard index is below the count, the count at most the run's tasks, and those at most the file's"
    )]
    Shard {
        /// The shard's index.
        index: usize,
        /// The shards of the run.
        count: usize,
        /// The tasks of the whole run.
        run_tasks: usize,
        /// The tasks of the task file.
        file_tasks: usize,
    },

    /// More task lines than the header announces.
    #[error("{lines} task lines, but the header announces {announced} tasks")]
    TooManyTasks {
        /// The task lines.
        lines: usize,
        /// The header's task count.
        announced: usize,
    },

    /// A footer that says the run is complete over fewer task lines than the
    /// header announces, and no sequential comparison stopped it.
    #[error("the footer says the run is complete, but {logged} of {announced} tasks are logged")]
    CompleteButShort {
        /// The task lines.
        logged: usize,
        /// The header's task count.
        announced: usize,
    },

    /// A footer that says a sequential comparison stopped the run, where the
    /// header is not a sequential comparison's or the footer says the run is
    /// not complete.
    #[error(
        "the footer says a sequential comparison stopped the run ({stopped:?}), but the header is not one's, or the run is not complete"
    )]
    StoppedNotSequential {
        /// Why the footer says the run stopped.
        stopped: Stop,
    },

    /// A header whose sequential comparison cannot be.
    #[error("the header's sequential comparison does not hold together: {why}")]
    BadSequential {
        /// What is wrong with it, as the message says it.
        why: &'static str,
    },

    /// A chat template in a header of a version before 3, which had no field
    /// for one.
    #[error("the header records a chat template, which a version-{version} log cannot hold (version 3 added it)")]
    ChatInOldVersion {
        /// The header's version.
        version: u32,
    },
}

/// Which of llama-perplexity's multiple-choice modes a job is: what its file
/// holds, how its tasks are picked and what of each option is scored.
/// Written by its [`TaskKind::name`], llama-perplexity's flag without its
/// dashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// A task file (`.bin`, `--multiple-choice`): `question + " " + option`,
    /// the option's tokens scored.
    #[default]
    MultipleChoice,
    /// HellaSwag's six-line text file (`--hellaswag`): scored as multiple
    /// choice, in llama-perplexity's shuffled order.
    #[serde(rename = "hellaswag")]
    HellaSwag,
    /// A Winogrande CSV (`--winogrande`): each option fills the sentence's
    /// `_`, and the sentence after it is scored.
    Winogrande,
}

impl TaskKind {
    /// The mode's name, as logs and results write it.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::MultipleChoice => "multiple-choice",
            TaskKind::HellaSwag => "hellaswag",
            TaskKind::Winogrande => "winogrande",
        }
    }
}

impl std::fmt::Display for TaskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a shard log's header says about its shard and the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardHeader {
    /// This shard's index, from 0 (below `count`).
    pub index: usize,
    /// The shards the run is split into.
    pub count: usize,
    /// The name of the rule that split the run into shards.
    pub rule: String,
    /// Tasks of the whole run, and in its file (for llama-perplexity's output of a merged run).
    pub run_tasks: usize,
    /// Tasks in the run's task file.
    pub file_tasks: usize,
    /// sha256 of the whole run's task indices in run order, written as
    /// decimals joined by commas.
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

/// The log format this mcscore writes, and the newest it reads; a reader
/// refuses a newer one by name. Logs written before the field existed read
/// as version 1. Version 2 added a sequential comparison's `sequential`
/// header field and the footer's `stopped`; version 3 the `chat` header
/// field; version 4 writes the run's mode, `lenient`, `pmi` and kernel
/// settings as fields where earlier versions glued them into one `settings`
/// string, and a sequential comparison's margin as a fraction where earlier
/// versions wrote accuracy points. Older logs are read through one
/// migration ([`Header`]'s reader).
pub const LOG_VERSION: u32 = 4;

fn version_1() -> u32 {
    1
}

/// What a log was written from; `--resume` requires all of it but the paths
/// to match. Inputs are identified by content (sha256 and size), so the same
/// model or file reached through another path, a copy or a link still matches.
/// A header of any version is read into this form (by one migration); it is written
/// as [`LOG_VERSION`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "wire::Header")]
pub struct Header {
    /// The log format version ([`LOG_VERSION`] for a log written now; an
    /// older log keeps its own).
    pub version: u32,
    /// The mcscore that wrote the log (`CARGO_PKG_VERSION`).
    pub mcscore: String,
    /// The model's path as given (for people; not compared).
    pub model: String,
    /// The model's sha256, as hex.
    pub model_sha256: String,
    /// Whether `model_sha256` came from the hash cache rather than a read of
    /// the model (for people; not compared).
    pub model_sha256_cached: bool,
    /// The model's size (0 in logs written before it was recorded).
    pub model_bytes: u64,
    /// The task file's path as given (for people; not compared).
    pub file: String,
    /// The task file's sha256, as hex.
    pub file_sha256: String,
    /// The task file's size (0 in logs written before it was recorded).
    pub file_bytes: u64,
    /// Tasks this run announced.
    pub tasks: usize,
    /// `--multiple-choice-tasks`, if a subset was scored.
    pub selection: Option<usize>,
    /// `--limit`, if the file's first tasks were scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The mode scored.
    pub mode: TaskKind,
    /// Read as llama.cpp reads a file that fails validation (`--lenient`).
    pub lenient: bool,
    /// Each option also scored without its question (`--pmi`).
    pub pmi: bool,
    /// The engine's settings that decide which kernels run and so the
    /// numbers (flash attention, the batch rule), as space-separated
    /// `name=value` words; a log written before version 4 keeps whatever
    /// words its settings had besides the mode, `lenient` and `pmi`.
    pub kernels: String,
    /// Set in the log of one shard of a run (`--shard K/N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardHeader>,
    /// Set in the logs of a sequential comparison (`compare --until-decided`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// Set where the run scored inside a chat template (`--chat-template`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatHeader>,
}

/// A header line as any version of the log wrote it, and the one migration
/// that reads it into a [`Header`]: before version 4 the mode, `lenient`,
/// `pmi` and the kernel settings were words of one `settings` string, and a
/// sequential comparison's margin was in accuracy points.
mod wire {
    use super::{version_1, ChatHeader, Sequential, ShardHeader, TaskKind};
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(super) struct Header {
        #[serde(default = "version_1")]
        version: u32,
        mcscore: String,
        model: String,
        model_sha256: String,
        #[serde(default)]
        model_sha256_cached: bool,
        #[serde(default)]
        model_bytes: u64,
        file: String,
        file_sha256: String,
        #[serde(default)]
        file_bytes: u64,
        tasks: usize,
        selection: Option<usize>,
        limit: Option<usize>,
        settings: Option<String>,
        mode: Option<TaskKind>,
        lenient: Option<bool>,
        pmi: Option<bool>,
        kernels: Option<String>,
        shard: Option<ShardHeader>,
        sequential: Option<Sequential>,
        chat: Option<ChatHeader>,
    }

    impl TryFrom<Header> for super::Header {
        type Error = String;

        fn try_from(h: Header) -> Result<super::Header, String> {
            let version = h.version;
            let typed = h.mode.is_some() || h.lenient.is_some() || h.pmi.is_some() || h.kernels.is_some();
            let (mode, lenient, pmi, kernels, points) = if version >= 4 {
                if h.settings.is_some() {
                    return Err(format!("a version-{version} header has no `settings`: its mode, lenient, pmi and kernels are fields"));
                }
                match (h.mode, h.lenient, h.pmi, h.kernels) {
                    (Some(mode), Some(lenient), Some(pmi), Some(kernels)) => (mode, lenient, pmi, kernels, false),
                    _ => return Err(format!("a version-{version} header needs `mode`, `lenient`, `pmi` and `kernels`")),
                }
            } else {
                if typed {
                    return Err(format!("a version-{version} header holds its settings in `settings`, not in the fields of version 4"));
                }
                let settings = h.settings.ok_or_else(|| format!("a version-{version} header needs `settings`"))?;
                let (mut mode, mut lenient, mut pmi, mut kernels) = (None, false, false, Vec::new());
                for word in settings.split_whitespace() {
                    let named = match word {
                        "hellaswag" => Some(TaskKind::HellaSwag),
                        "winogrande" => Some(TaskKind::Winogrande),
                        _ => None,
                    };
                    match (word, named) {
                        (_, Some(kind)) if mode.is_some_and(|m| m != kind) => {
                            return Err(format!("the header's settings {settings:?} name two modes"));
                        }
                        (_, Some(kind)) => mode = Some(kind),
                        ("lenient", None) => lenient = true,
                        ("pmi", None) => pmi = true,
                        (other, None) => kernels.push(other),
                    }
                }
                (mode.unwrap_or_default(), lenient, pmi, kernels.join(" "), true)
            };
            let sequential = h.sequential.map(|s| Sequential { margin: if points { s.margin / 100.0 } else { s.margin }, ..s });
            Ok(super::Header {
                version,
                mcscore: h.mcscore,
                model: h.model,
                model_sha256: h.model_sha256,
                model_sha256_cached: h.model_sha256_cached,
                model_bytes: h.model_bytes,
                file: h.file,
                file_sha256: h.file_sha256,
                file_bytes: h.file_bytes,
                tasks: h.tasks,
                selection: h.selection,
                limit: h.limit,
                mode,
                lenient,
                pmi,
                kernels,
                shard: h.shard,
                sequential,
                chat: h.chat,
            })
        }
    }
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
    /// The system turn before each question (`--system`), if there is one.
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
    /// The name of the rule that draws the order from the seed.
    pub order_rule: String,
    /// The seed the order is drawn from.
    pub seed: u64,
    /// sha256 of the order's task indices ([`ShardHeader::run_sha256`]'s rule).
    pub order_sha256: String,
    /// Tasks in the file (the order takes at most `--max-tasks` of them).
    pub file_tasks: usize,
    /// Tasks scored between two looks at the confidence sequences.
    pub chunk: usize,
    /// The error rate of each decision, before it is split between the OTHERs.
    pub alpha: f64,
    /// The equivalence margin: a difference of accuracies, as a fraction
    /// (written in accuracy points before log version 4).
    pub margin: f64,
    /// The normalisation whose right or wrong the sequences follow.
    pub normalisation: String,
    /// The sha256 of BASE's model.
    pub base_sha256: String,
    /// The sha256 of each OTHER's model, in the comparison's order.
    pub other_sha256: Vec<String>,
}

impl Header {
    /// What the run scored with that changes a number, for people: the
    /// kernel settings, then the mode (other than multiple choice),
    /// `lenient` and `pmi` where they hold.
    pub fn settings_words(&self) -> Vec<&str> {
        let mut words: Vec<&str> = self.kernels.split_whitespace().collect();
        words.extend((self.mode != TaskKind::MultipleChoice).then_some(self.mode.name()));
        words.extend(self.lenient.then_some("lenient"));
        words.extend(self.pmi.then_some("pmi"));
        words
    }

    /// [`Header::settings_words`] as one line.
    pub fn settings(&self) -> String {
        self.settings_words().join(" ")
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
    /// The content's sha256, as hex.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// What makes logs parts of one run: the inputs by content, what was scored
/// and how, the chat template, the log format and mcscore's version, and the
/// shard. `--resume` and shard merges check it through one
/// [`RunIdentity::mismatch`], which names the first field that differs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunIdentity {
    /// The chat template and its guards ([`ChatHeader::identity`]): the path
    /// it was given by and the generation prompt, which follows from the
    /// rest, set aside.
    pub chat: Option<ChatHeader>,
    /// The log format ([`LOG_VERSION`]).
    pub version: u32,
    /// The model, by content.
    pub model: Input,
    /// The task file, by content.
    pub file: Input,
    /// Tasks announced (for a shard: its own).
    pub tasks: usize,
    /// `--multiple-choice-tasks`, if a subset was scored.
    pub selection: Option<usize>,
    /// `--limit`, if the file's first tasks were scored.
    pub limit: Option<usize>,
    /// The mode scored.
    pub mode: TaskKind,
    /// Read as llama.cpp reads a file that fails validation (`--lenient`).
    pub lenient: bool,
    /// Each option also scored without its question (`--pmi`).
    pub pmi: bool,
    /// The engine's settings that decide which kernels run ([`Header::kernels`]).
    pub kernels: String,
    /// A sequential comparison's order and stopping rule.
    pub sequential: Option<Sequential>,
    /// The mcscore that wrote the log.
    pub mcscore: String,
    /// The shard, in a shard's log.
    pub shard: Option<ShardHeader>,
}

/// The first field of two identities (a run's, a sweep's) that differs,
/// with both values as a message shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The field, as a message names it.
    pub field: &'static str,
    /// Its value in the earlier identity (a log's, the first shard's).
    pub was: String,
    /// Its value now.
    pub now: String,
}

impl Mismatch {
    /// `field`'s mismatch where `was` and `now` differ, each shown by `show`
    /// (called only then).
    pub fn check<T: PartialEq + ?Sized>(field: &'static str, was: &T, now: &T, show: impl Fn(&T) -> String) -> Option<Mismatch> {
        (was != now).then(|| Mismatch { field, was: show(was), now: show(now) })
    }
}

impl RunIdentity {
    /// The identity a log's header gives its run.
    pub fn of(header: &Header) -> RunIdentity {
        RunIdentity {
            chat: header.chat.clone().map(|chat| ChatHeader { template: String::new(), generation_prompt: String::new(), ..chat }),
            version: header.version,
            model: Input { sha256: header.model_sha256.clone(), bytes: header.model_bytes },
            file: Input { sha256: header.file_sha256.clone(), bytes: header.file_bytes },
            tasks: header.tasks,
            selection: header.selection,
            limit: header.limit,
            mode: header.mode,
            lenient: header.lenient,
            pmi: header.pmi,
            kernels: header.kernels.clone(),
            sequential: header.sequential.clone(),
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
    /// template first (it once raised the version).
    pub fn mismatch(&self, now: &RunIdentity) -> Option<Mismatch> {
        let shown = |value: &dyn std::fmt::Display| value.to_string();
        Mismatch::check("chat template", &self.chat, &now.chat, |c| chat_identity(c.as_ref()))
            .or_else(|| Mismatch::check("version", &self.version, &now.version, |v| shown(v)))
            .or_else(|| Mismatch::check("model_sha256", &self.model.sha256, &now.model.sha256, String::clone))
            .or_else(|| Mismatch::check("model_bytes", &self.model.bytes, &now.model.bytes, |v| shown(v)))
            .or_else(|| Mismatch::check("file_sha256", &self.file.sha256, &now.file.sha256, String::clone))
            .or_else(|| Mismatch::check("file_bytes", &self.file.bytes, &now.file.bytes, |v| shown(v)))
            .or_else(|| Mismatch::check("tasks", &self.tasks, &now.tasks, |v| shown(v)))
            .or_else(|| Mismatch::check("selection", &self.selection, &now.selection, |v| or_none(v.as_ref())))
            .or_else(|| Mismatch::check("limit", &self.limit, &now.limit, |v| or_none(v.as_ref())))
            .or_else(|| Mismatch::check("mode", &self.mode, &now.mode, |v| shown(v)))
            .or_else(|| Mismatch::check("lenient", &self.lenient, &now.lenient, |v| shown(v)))
            .or_else(|| Mismatch::check("pmi", &self.pmi, &now.pmi, |v| shown(v)))
            .or_else(|| Mismatch::check("settings", &self.kernels, &now.kernels, String::clone))
            .or_else(|| Mismatch::check("sequential comparison", &self.sequential, &now.sequential, |s| describe_sequential(s.as_ref())))
            .or_else(|| Mismatch::check("mcscore", &self.mcscore, &now.mcscore, String::clone))
            // A shard's fields, or "none" for each in the log of a whole run.
            .or_else(|| shard_field("shard index", &self.shard, &now.shard, |s| s.index.to_string()))
            .or_else(|| shard_field("shard count", &self.shard, &now.shard, |s| s.count.to_string()))
            .or_else(|| shard_field("partition rule", &self.shard, &now.shard, |s| s.rule.clone()))
            .or_else(|| shard_field("run tasks", &self.shard, &now.shard, |s| s.run_tasks.to_string()))
            .or_else(|| shard_field("run task list (run_sha256)", &self.shard, &now.shard, |s| s.run_sha256.clone()))
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

/// One field of two runs' shards ("none" for the log of a whole run).
fn shard_field(
    field: &'static str,
    was: &Option<ShardHeader>,
    now: &Option<ShardHeader>,
    get: fn(&ShardHeader) -> String,
) -> Option<Mismatch> {
    Mismatch::check(field, &was.as_ref().map(get), &now.as_ref().map(get), |v| or_none(v.as_ref()))
}

/// A sequential comparison's order and stopping rule, for a resume's refusal.
fn describe_sequential(sequential: Option<&Sequential>) -> String {
    match sequential {
        None => "none".to_owned(),
        Some(s) => format!(
            "order {} seed {} (sha256 {}), chunks of {}, alpha {}, margin ±{} points, {}, base {}, others {}",
            s.order_rule,
            s.seed,
            s.order_sha256,
            s.chunk,
            s.alpha,
            mcscore_metrics::shown(100.0 * s.margin),
            s.normalisation,
            s.base_sha256,
            s.other_sha256.join(" ")
        ),
    }
}

/// The prediction of each normalisation, or whether it was right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerNormalisation<T> {
    /// [`Normalisation::Acc`]'s.
    pub acc: T,
    /// [`Normalisation::AccNorm`]'s.
    pub acc_norm: T,
    /// [`Normalisation::AccChar`]'s.
    pub acc_char: T,
    /// [`Normalisation::AccByte`]'s.
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
    /// Each option's figures, in option order.
    pub options: Vec<OptionScore>,
    /// First option whose label is 1 (`null` only for lenient runs).
    pub gold: Option<usize>,
    /// Per option: whether its label is 1.
    pub labels: Vec<bool>,
    /// The option each normalisation picks.
    pub pred: PerNormalisation<usize>,
    /// Whether each normalisation's pick is right (its label is 1).
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
    /// The record of task `task` from its options' figures and labels (one
    /// label per option): gold, picks and right or wrong follow from them,
    /// `acc_pmi`'s where every option has an unconditional sum.
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
    /// Whether the run finished; `false` marks a log to resume.
    pub complete: bool,
    /// The tasks scored, as many as the task lines above it.
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
    /// The header line.
    pub header: Header,
    /// The task lines, in the log's order.
    pub records: Vec<TaskRecord>,
    /// The footer, where the log has one: a run that was killed wrote none.
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
    Writing {
        /// The log, open to append to.
        log: SampleLog,
        /// The task lines kept from the log resumed (none for a new log).
        kept: Vec<TaskRecord>,
    },
    /// `--resume` of a log that already holds the whole run: left untouched.
    Complete {
        /// Its task lines.
        records: Vec<TaskRecord>,
        /// Why a sequential comparison stopped the run early, if it did.
        stopped: Option<Stop>,
    },
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

    /// Appends a task line, which reaches the file at the next
    /// [`SampleLog::flush`] at the latest.
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
            // The version is read first, so that a newer log (or one of
            // version 0) is refused by name rather than as a line this
            // reader does not understand.
            let version = serde_json::from_slice::<Versioned>(text).map(|v| v.version).unwrap_or(1);
            if version > LOG_VERSION {
                return Err(fail(LogFault::NewerVersion { found: version, supported: LOG_VERSION }));
            }
            if version == 0 {
                return Err(fail(LogFault::VersionZero));
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
    if header.mode == TaskKind::Winogrande && k != 2 {
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
    if !header.lenient && record.labels.iter().filter(|&&l| l).count() != 1 {
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
            version: LOG_VERSION,
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
            mode: TaskKind::MultipleChoice,
            lenient: false,
            pmi: false,
            kernels: "c=auto".into(),
            shard: None,
            sequential: sequential.then(|| Sequential {
                order_rule: "rule".into(),
                seed: 1,
                order_sha256: "o".into(),
                file_tasks: 3,
                chunk: 1,
                alpha: 0.05,
                margin: 0.01,
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

    /// `log` with its header written as a version-`version` (< 4) mcscore
    /// wrote it: the settings as words of one string, a margin in points.
    fn as_version(log: Vec<u8>, version: u32) -> Vec<u8> {
        let text = String::from_utf8(log).unwrap();
        let (first, rest) = text.split_once('\n').unwrap();
        let mut header: serde_json::Value = serde_json::from_str(first).unwrap();
        let fields = header.as_object_mut().unwrap();
        let mode = fields.shift_remove("mode").unwrap();
        let mut words = vec![fields.shift_remove("kernels").unwrap().as_str().unwrap().to_owned()];
        words.extend((mode != "multiple-choice").then(|| mode.as_str().unwrap().to_owned()));
        for flag in ["lenient", "pmi"] {
            words.extend((fields.shift_remove(flag).unwrap() == true).then(|| flag.to_owned()));
        }
        fields.insert("settings".into(), words.join(" ").into());
        fields.insert("version".into(), version.into());
        if let Some(margin) = fields.get_mut("sequential").and_then(|s| s.get_mut("margin")) {
            *margin = (100.0 * margin.as_f64().unwrap()).into();
        }
        format!("{header}\n{rest}").into_bytes()
    }

    #[test]
    fn modes_are_written_by_their_names() {
        for kind in [TaskKind::MultipleChoice, TaskKind::HellaSwag, TaskKind::Winogrande] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }

    #[test]
    fn a_log_of_any_version_reads_into_one_header() {
        let path = Path::new("run.jsonl");
        let footer = r#"{"type":"footer","complete":true,"scored":3}"#;
        let mut lenient = header(false);
        (lenient.mode, lenient.lenient, lenient.pmi) = (TaskKind::HellaSwag, true, false);
        for now in [header(false), lenient, header(true)] {
            let log = log_text(&now, 3, footer);
            for version in [2, 3] {
                let old = parse(&as_version(log.clone(), version), path).unwrap().header;
                assert_eq!(Header { version: LOG_VERSION, ..old }, now, "version {version}");
            }
            assert_eq!(parse(&log, path).unwrap().header, now);
        }
        // Each form in its own versions only, and two modes are refused.
        let log = log_text(&header(false), 3, footer);
        let typed_but_old = String::from_utf8(log.clone()).unwrap().replacen("\"version\":4", "\"version\":3", 1);
        let settings_but_new = String::from_utf8(as_version(log.clone(), 3)).unwrap().replacen("\"version\":3", "\"version\":4", 1);
        let two_modes = String::from_utf8(as_version(log, 3)).unwrap().replacen("c=auto", "c=auto hellaswag winogrande", 1);
        for (text, expected) in
            [(typed_but_old, "not in the fields of version 4"), (settings_but_new, "has no `settings`"), (two_modes, "name two modes")]
        {
            let error = with_causes(&parse(text.as_bytes(), path).unwrap_err());
            assert!(error.contains(expected) && error.contains("line 1"), "{error}");
        }
    }

    #[test]
    fn a_sequential_log_stopped_early_is_complete_and_only_a_sequential_one_may_stop() {
        let path = Path::new("run.jsonl");
        let stopped = r#"{"type":"footer","complete":true,"scored":1,"stopped":"different"}"#;
        let contents = parse(&log_text(&header(true), 1, stopped), path).unwrap();
        assert!(contents.is_complete());
        assert_eq!(contents.footer.unwrap().stopped, Some(Stop::Different));
        assert_eq!(contents.header.version, LOG_VERSION);
        let error = with_causes(&parse(&log_text(&header(false), 1, stopped), path).unwrap_err());
        assert!(error.contains("stopped the run"), "{error}");
        let unfinished = r#"{"type":"footer","complete":false,"scored":1,"stopped":"different"}"#;
        assert!(parse(&log_text(&header(true), 1, unfinished), path).is_err());
        // A version-1 header cannot hold a sequential comparison.
        let unfinished = r#"{"type":"footer","complete":false,"scored":1}"#;
        let error = with_causes(&parse(&as_version(log_text(&header(true), 1, unfinished), 1), path).unwrap_err());
        assert!(error.contains("version-1"), "{error}");
        // A resume checks the comparison's rule.
        let mut other = header(true);
        other.sequential.as_mut().unwrap().margin = 0.02;
        assert_eq!(RunIdentity::of(&header(true)).mismatch(&RunIdentity::of(&other)).map(|m| m.field), Some("sequential comparison"));
        assert_eq!(RunIdentity::of(&header(false)).mismatch(&RunIdentity::of(&header(false))), None);
    }
}
