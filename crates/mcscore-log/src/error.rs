//! The crate's errors: why a sample log could not be read, written or
//! resumed ([`LogError`]), and what is wrong with a log ([`LogFault`]).

use std::path::PathBuf;

use crate::header::Stop;

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
        /// The first field that differs ([`RunIdentity::mismatch`](crate::RunIdentity::mismatch)).
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
        /// What the log lacks.
        why: Unfinished,
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
        /// The newest this mcscore reads ([`LOG_VERSION`](crate::LOG_VERSION)).
        supported: u32,
    },

    /// A header of version 0, which no mcscore writes.
    #[error("log format version 0: versions start at 1")]
    VersionZero,

    /// A header whose `limit` is 0.
    #[error("the header's limit is 0: a run of the first tasks scores at least one")]
    ZeroLimit,

    /// A header that counts a limit per group but has no limit.
    #[error("the header's limit_per_group is true but it has no limit")]
    GroupLimitWithoutLimit,

    /// No header: the file holds no whole line.
    #[error("empty sample log (no header line)")]
    Empty,

    /// A directory given as the log.
    #[error("a directory, not a sample log")]
    Directory,

    /// A task line that does not hold together ([`check_record`](crate::check_record)).
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

/// Why a log does not hold a finished run. The first two can be finished by
/// resuming the run that wrote them; the last cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unfinished {
    /// The run was interrupted and wrote a footer that says so.
    #[error("{logged} of {announced} tasks logged, marked incomplete when the run was interrupted")]
    Interrupted {
        /// Task lines in the log.
        logged: usize,
        /// Tasks the header announces.
        announced: usize,
        /// The log is one of a sequential comparison's, which is resumed as
        /// a comparison, not as a score.
        sequential: bool,
    },
    /// The run ended without a footer before its last task: killed, or out of power.
    #[error("{logged} of {announced} tasks logged and no footer: the run was interrupted or killed")]
    Killed {
        /// Task lines in the log.
        logged: usize,
        /// Tasks the header announces.
        announced: usize,
        /// The log is one of a sequential comparison's.
        sequential: bool,
    },
    /// Every task is logged but the footer is missing: the run failed after
    /// its last task, so nothing vouches for what it logged.
    #[error(
        "all {announced} tasks are logged, but the log has no footer: the run did not end normally (it failed after its last task, \
         e.g. because the model file changed), so its results are not to be trusted; score it again"
    )]
    NoFooter {
        /// Tasks the header announces (and the log holds).
        announced: usize,
    },
}

impl Unfinished {
    /// Whether resuming finishes the run: `Some(sequential)` for a run that
    /// stopped early, `None` for one whose results cannot be trusted.
    pub fn resumable(&self) -> Option<bool> {
        match *self {
            Unfinished::Interrupted { sequential, .. } | Unfinished::Killed { sequential, .. } => Some(sequential),
            Unfinished::NoFooter { .. } => None,
        }
    }
}
