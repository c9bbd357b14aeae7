//! Reading a log: its lines, the footer, and the strict reader that checks
//! every line against itself, the header and the lines before it.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{LogError, LogFault, Unfinished};
use crate::header::{version_1, Header, Stop, LOG_VERSION};
use crate::record::{check_record, TaskRecord};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Line {
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
    pub fn unfinished(&self) -> Option<Unfinished> {
        let (logged, announced) = (self.records.len(), self.header.tasks);
        let sequential = self.header.sequential.is_some();
        Some(match self.footer {
            _ if self.is_complete() => return None,
            Some(_) => Unfinished::Interrupted { logged, announced, sequential },
            None if logged < announced => Unfinished::Killed { logged, announced, sequential },
            None => Unfinished::NoFooter { announced },
        })
    }
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
    if header.limit_per_group && header.limit.is_none() {
        return Err(LogFault::GroupLimitWithoutLimit);
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

/// Just the version of a header line.
#[derive(Deserialize)]
struct Versioned {
    #[serde(default = "version_1")]
    version: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::identity::RunIdentity;
    use crate::test_support::{as_version, header, log_text};
    use mcscore_format::with_causes;

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
        // A limit per group and the same limit over the file are two runs,
        // even where they select the same tasks; the field is read back.
        let (mut per_group, mut total) = (header(false), header(false));
        per_group.limit = Some(2000);
        per_group.limit_per_group = true;
        total.limit = Some(2000);
        assert_eq!(RunIdentity::of(&per_group).mismatch(&RunIdentity::of(&total)).map(|m| m.field), Some("limit per group"));
        let unfinished = r#"{"type":"footer","complete":false,"scored":1}"#;
        assert!(parse(&log_text(&per_group, 1, unfinished), path).unwrap().header.limit_per_group);
        per_group.limit = None;
        let error = with_causes(&parse(&log_text(&per_group, 1, unfinished), path).unwrap_err());
        assert!(error.contains("limit_per_group is true but it has no limit"), "{error}");
        assert!(!parse(&log_text(&total, 1, unfinished), path).unwrap().header.limit_per_group);
    }
}
