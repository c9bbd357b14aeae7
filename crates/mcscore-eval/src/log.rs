//! The sample log (`score --log-samples`): one JSON line per task, between a
//! header that pins the inputs and a footer that says whether the run
//! completed. The footer is what tells a finished log from an interrupted
//! one, and the header is what a resume checks before it trusts the lines in
//! between. The layout is in docs/formats.md.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use mcscore_metrics::{Normalisation, OptionScore};
use serde::{Deserialize, Serialize};

use crate::lock::{lock, ReplaceLock};
use crate::{EvalError, LogFault};

/// The log format this mcscore writes; a reader refuses a newer one by name.
/// Logs written before the field existed read as version 1.
pub const LOG_VERSION: u32 = 1;

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
    pub settings: String,
    /// Set in the log of one shard of a run (`--shard K/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::ShardHeader>,
}

impl Header {
    /// Which mode the run scored, as its settings record it.
    pub fn kind(&self) -> crate::TaskKind {
        let words: Vec<&str> = self.settings.split(' ').collect();
        if words.contains(&"hellaswag") {
            crate::TaskKind::HellaSwag
        } else if words.contains(&"winogrande") {
            crate::TaskKind::Winogrande
        } else {
            crate::TaskKind::MultipleChoice
        }
    }

    /// The first field that identifies a run and differs, with both values.
    pub fn mismatch(&self, now: &Header) -> Option<(&'static str, String, String)> {
        let fields = [
            ("version", self.version.to_string(), now.version.to_string()),
            ("model_sha256", self.model_sha256.clone(), now.model_sha256.clone()),
            ("model_bytes", self.model_bytes.to_string(), now.model_bytes.to_string()),
            ("file_sha256", self.file_sha256.clone(), now.file_sha256.clone()),
            ("file_bytes", self.file_bytes.to_string(), now.file_bytes.to_string()),
            ("tasks", self.tasks.to_string(), now.tasks.to_string()),
            ("selection", format!("{:?}", self.selection), format!("{:?}", now.selection)),
            ("settings", self.settings.clone(), now.settings.clone()),
            ("mcscore", self.mcscore.clone(), now.mcscore.clone()),
        ];
        // A shard's fields, or "none" for each in the log of a whole run.
        let shard = |h: &Header| match &h.shard {
            Some(s) => [s.index.to_string(), s.count.to_string(), s.rule.clone(), s.run_tasks.to_string(), s.run_sha256.clone()],
            None => std::array::from_fn(|_| "none".to_owned()),
        };
        let shard_names = ["shard index", "shard count", "partition rule", "run tasks", "run task list (run_sha256)"];
        fields
            .into_iter()
            .chain(shard_names.into_iter().zip(shard(self)).zip(shard(now)).map(|((name, log), now)| (name, log, now)))
            .find(|(_, log, now)| log != now)
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
    pub fn from_fn(with_pmi: bool, f: impl Fn(Normalisation) -> T) -> Self {
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
        let correct = PerNormalisation::from_fn(with_pmi, |n| labels[pred.get(n)]);
        TaskRecord { task, gold: labels.iter().position(|&l| l), options, labels, pred, correct }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Header(Header),
    Task(TaskRecord),
    Footer(Footer),
}

/// The last line of a log that was closed: after Ctrl-C (`complete: false`)
/// or at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footer {
    pub complete: bool,
    pub scored: usize,
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
        self.footer.is_some_and(|f| f.complete) && self.records.len() == self.header.tasks
    }

    /// Refuses a log that does not hold a finished run, saying why: results
    /// are read only from runs that ended normally.
    pub fn require_complete(&self, path: &Path) -> Result<(), EvalError> {
        let (logged, announced) = (self.records.len(), self.header.tasks);
        let why = match self.footer {
            _ if self.is_complete() => return Ok(()),
            Some(_) => format!("marked incomplete: {logged} of {announced} tasks logged when the run was interrupted; finish it with `mcscore score ... --resume`"),
            None if logged < announced => format!("{logged} of {announced} tasks logged and no footer: the run was interrupted or killed; finish it with `mcscore score ... --resume`"),
            None => format!("all {announced} tasks are logged, but the log has no footer: the run did not end normally (it failed after its last task, e.g. because the model file changed), so its results are not to be trusted; score it again"),
        };
        Err(EvalError::Unfinished { path: path.to_owned(), why })
    }
}

/// How [`SampleLog::open`] found the log.
pub enum Opened {
    /// Ready for task lines, after the kept ones.
    Writing { log: SampleLog, kept: Vec<TaskRecord> },
    /// `--resume` of a log that already holds the whole run: left untouched.
    Complete { records: Vec<TaskRecord> },
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
    pub fn open(path: &Path, header: &Header, resume: bool, keep: impl FnOnce(usize) -> usize) -> Result<Opened, EvalError> {
        let io = EvalError::io(path);
        match File::options().read(true).write(true).create_new(true).open(path) {
            Ok(file) => {
                lock(&file, path)?;
                let mut out = BufWriter::new(file);
                write_line(&mut out, &Line::Header(header.clone())).and_then(|()| out.flush()).map_err(io)?;
                return Ok(Opened::Writing { log: SampleLog { path: path.to_owned(), out }, kept: Vec::new() });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        if path.is_dir() {
            return Err(EvalError::Log { path: path.to_owned(), fault: LogFault::Directory });
        }
        mcscore_format::check_input(path)?;
        let file = File::options().read(true).write(true).open(path).map_err(EvalError::io(path))?;
        let metadata = file.metadata().map_err(EvalError::io(path))?;
        if !metadata.is_file() {
            return Err(mcscore_format::Error::NotRegular { path: path.to_owned(), kind: mcscore_format::file_kind(&metadata) }.into());
        }
        if !resume {
            return Err(EvalError::LogExists { path: path.to_owned() });
        }
        // Locked before it is read: what is read is what no one else writes.
        lock(&file, path)?;
        let mut bytes = Vec::new();
        (&file).read_to_end(&mut bytes).map_err(EvalError::io(path))?;
        let contents = parse(&bytes, path)?;
        if let Some((field, log, now)) = contents.header.mismatch(header) {
            return Err(EvalError::ResumeMismatch { path: path.to_owned(), field, log, now });
        }
        if contents.is_complete() {
            return Ok(Opened::Complete { records: contents.records });
        }
        let Contents { mut records, line_ends, .. } = contents;
        let kept = keep(records.len()).min(records.len());
        records.truncate(kept);
        // Everything after the kept lines (later tasks, a torn line, the
        // footer) goes; the kept bytes are not rewritten.
        file.set_len(line_ends[kept]).and_then(|()| file.sync_all()).map_err(EvalError::io(path))?;
        let mut out = BufWriter::new(file);
        out.seek(SeekFrom::End(0)).map_err(EvalError::io(path))?;
        Ok(Opened::Writing { log: SampleLog { path: path.to_owned(), out }, kept: records })
    }

    pub fn record(&mut self, record: &TaskRecord) -> Result<(), EvalError> {
        write_line(&mut self.out, &Line::Task(record.clone())).map_err(EvalError::io(&self.path))
    }

    /// Hands what was written to the OS; called after each fill, so that a
    /// crash loses at most the fill in progress.
    pub fn flush(&mut self) -> Result<(), EvalError> {
        self.out.flush().map_err(EvalError::io(&self.path))
    }

    /// Ends the log; `complete: false` marks it as resumable, not finished.
    pub fn finish(mut self, complete: bool, scored: usize) -> Result<(), EvalError> {
        write_line(&mut self.out, &Line::Footer(Footer { complete, scored }))
            .and_then(|()| self.out.flush())
            .and_then(|()| self.out.get_ref().sync_all())
            .map_err(EvalError::io(&self.path))
    }
}

/// Writes a complete log (header, every record, footer) to `path`,
/// atomically: what `merge` produces, readable like any finished run's log.
/// `existing` says whether a regular file at `path` may be replaced; one
/// that another run is writing never is.
pub fn write_complete(path: &Path, header: &Header, records: &[TaskRecord], existing: mcscore_format::Existing) -> Result<(), EvalError> {
    let _lock = ReplaceLock::acquire(path)?;
    // AtomicFile buffers its writes itself.
    let mut file = mcscore_format::AtomicFile::with(path, existing)?;
    let out = &mut file;
    let written = (|| {
        write_line(out, &Line::Header(header.clone()))?;
        for record in records {
            write_line(out, &Line::Task(record.clone()))?;
        }
        write_line(out, &Line::Footer(Footer { complete: true, scored: records.len() }))?;
        out.flush()
    })();
    written.map_err(EvalError::io(path))?;
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
pub fn read(path: &Path) -> Result<Contents, EvalError> {
    if path.is_dir() {
        return Err(EvalError::Log { path: path.to_owned(), fault: LogFault::Directory });
    }
    parse(&mcscore_format::read_input(path)?, path)
}

/// Reads a log's bytes (see [`read`]); `path` names it in errors. Every task
/// line is checked against itself and the header ([`check_record`]).
pub fn parse(bytes: &[u8], path: &Path) -> Result<Contents, EvalError> {
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
        let fail = |fault: LogFault| EvalError::LogLine { path: path.to_owned(), line: n, fault };
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
                header = Some(h);
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
    let whole = |fault: LogFault| EvalError::Log { path: path.to_owned(), fault };
    let header = header.ok_or_else(|| whole(LogFault::Empty))?;
    if records.len() > header.tasks {
        return Err(whole(LogFault::TooManyTasks { lines: records.len(), announced: header.tasks }));
    }
    if footer.is_some_and(|f| f.complete) && records.len() != header.tasks {
        return Err(whole(LogFault::CompleteButShort { logged: records.len(), announced: header.tasks }));
    }
    Ok(Contents { header, records, footer, line_ends })
}

/// Checks what a header says of the run's shape.
fn check_header(header: &Header) -> Result<(), LogFault> {
    if let Some(shard) = &header.shard {
        if shard.count == 0 || shard.index >= shard.count || shard.count > shard.run_tasks.max(1) {
            return Err(LogFault::Shard { index: shard.index, count: shard.count, run_tasks: shard.run_tasks });
        }
    }
    Ok(())
}

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
    if header.kind() == crate::TaskKind::Winogrande && k != 2 {
        return Err(fault(format!("{k} options; a Winogrande task has exactly 2")));
    }
    if record.labels.len() != k {
        return Err(fault(format!("{} labels for {k} options", record.labels.len())));
    }
    for (i, option) in record.options.iter().enumerate() {
        if option.tokens == 0 {
            return Err(fault(format!("option {i} has 0 scored tokens")));
        }
        if !option.logprob_sum.is_finite() || option.uncond_logprob_sum.is_some_and(|u| !u.is_finite()) {
            return Err(fault(format!("option {i} has a log-probability that is not finite")));
        }
    }
    let with_pmi = record.options.iter().all(|o| o.uncond_logprob_sum.is_some());
    let any_pmi = record.options.iter().any(|o| o.uncond_logprob_sum.is_some());
    if with_pmi != any_pmi || record.pred.acc_pmi.is_some() != with_pmi || record.correct.acc_pmi.is_some() != with_pmi {
        return Err(fault("acc_pmi is logged for some of the options, predictions and right/wrong flags but not all".into()));
    }
    let gold = record.labels.iter().position(|&l| l);
    if record.gold != gold {
        return Err(fault(format!("gold is {:?}, but the labels' first 1 is at {gold:?}", record.gold)));
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
