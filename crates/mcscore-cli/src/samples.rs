//! `--log-samples`: one JSON line per task, between a header that pins the
//! inputs and a footer that says whether the run completed. The footer is
//! what tells a finished log from an interrupted one, and the header is what
//! `--resume` checks before it trusts the lines in between.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mcscore_metrics::{Normalisation, OptionScore};
use serde::{Deserialize, Serialize};

use crate::output::WriteLock;

/// What a log was written from; `--resume` requires all of it but the paths
/// to match. Inputs are identified by content (sha256 and size), so the same
/// model or file reached through another path, a copy or a link still matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Header {
    pub mcscore: String,
    /// The model's path as given (for people; not compared).
    pub model: String,
    pub model_sha256: String,
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
}

impl Header {
    /// The first field that identifies a run and differs, with both values.
    fn mismatch(&self, now: &Header) -> Option<(&'static str, String, String)> {
        let fields = [
            ("model_sha256", self.model_sha256.clone(), now.model_sha256.clone()),
            ("model_bytes", self.model_bytes.to_string(), now.model_bytes.to_string()),
            ("file_sha256", self.file_sha256.clone(), now.file_sha256.clone()),
            ("file_bytes", self.file_bytes.to_string(), now.file_bytes.to_string()),
            ("tasks", self.tasks.to_string(), now.tasks.to_string()),
            ("selection", format!("{:?}", self.selection), format!("{:?}", now.selection)),
            ("settings", self.settings.clone(), now.settings.clone()),
            ("mcscore", self.mcscore.clone(), now.mcscore.clone()),
        ];
        fields.into_iter().find(|(_, log, now)| log != now)
    }
}

/// The prediction of each normalisation, or whether it was right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct PerNormalisation<T> {
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

/// One scored task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
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
pub(crate) fn normalisations(records: &[TaskRecord]) -> &'static [Normalisation] {
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
pub(crate) struct Footer {
    pub complete: bool,
    pub scored: usize,
}

/// A log as read: its header, task lines and footer, and where each line ends.
pub(crate) struct Contents {
    pub header: Header,
    pub records: Vec<TaskRecord>,
    pub footer: Option<Footer>,
    /// Byte offset just past the header line and past each task line.
    line_ends: Vec<u64>,
}

impl Contents {
    /// Whether the log holds a finished run: a footer saying so, over every task.
    pub fn is_complete(&self) -> bool {
        self.footer.is_some_and(|f| f.complete) && self.records.len() == self.header.tasks
    }
}

/// How [`SampleLog::open`] found the log.
pub(crate) enum Opened {
    /// Ready for task lines, after the kept ones.
    Writing { log: SampleLog, kept: Vec<TaskRecord> },
    /// `--resume` of a log that already holds the whole run: left untouched.
    Complete { records: Vec<TaskRecord> },
}

/// Appends task lines as they are scored, flushing after each batch. It holds
/// the log's write lock, so a second run on the same log is refused.
pub(crate) struct SampleLog {
    path: PathBuf,
    out: BufWriter<File>,
    _lock: WriteLock,
}

impl SampleLog {
    /// Starts a new log, or (with `resume`) continues one written for the same
    /// inputs and settings, keeping its first `keep(done)` task lines byte for
    /// byte and cutting the file after them.
    pub fn open(path: &Path, header: &Header, resume: bool, keep: impl FnOnce(usize) -> usize) -> anyhow::Result<Opened> {
        if path.is_dir() {
            bail!("{}: --log-samples names a directory; give a file path", path.display());
        }
        let lock = WriteLock::acquire(path)?;
        let io = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
        if !path.exists() {
            let mut out = BufWriter::new(File::options().write(true).create_new(true).open(path).map_err(io)?);
            write_line(&mut out, &Line::Header(header.clone())).map_err(io)?;
            out.flush().map_err(io)?;
            return Ok(Opened::Writing { log: SampleLog { path: path.to_owned(), out, _lock: lock }, kept: Vec::new() });
        }
        if !resume {
            bail!("{}: --log-samples file exists; pass --resume to continue it, or remove it to start again", path.display());
        }
        let contents = read(path)?;
        if let Some((field, log, now)) = contents.header.mismatch(header) {
            bail!("{}: cannot resume: the log was written for another {field}\n  log: {log}\n  now: {now}", path.display());
        }
        if contents.is_complete() {
            return Ok(Opened::Complete { records: contents.records });
        }
        let Contents { mut records, line_ends, .. } = contents;
        let kept = keep(records.len()).min(records.len());
        records.truncate(kept);
        // Everything after the kept lines (later tasks, a torn line, the
        // footer) goes; the kept bytes are not rewritten.
        let file = File::options().write(true).open(path).map_err(io)?;
        file.set_len(line_ends[kept]).map_err(io)?;
        file.sync_all().map_err(io)?;
        let mut out = BufWriter::new(file);
        out.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(Opened::Writing { log: SampleLog { path: path.to_owned(), out, _lock: lock }, kept: records })
    }

    pub fn record(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        write_line(&mut self.out, &Line::Task(record.clone())).with_context(|| format!("{}: writing the sample log", self.path.display()))
    }

    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush().with_context(|| format!("{}: writing the sample log", self.path.display()))
    }

    /// Ends the log; `complete: false` marks it as resumable, not finished.
    pub fn finish(mut self, complete: bool, scored: usize) -> anyhow::Result<()> {
        let context = || format!("{}: writing the sample log", self.path.display());
        write_line(&mut self.out, &Line::Footer(Footer { complete, scored })).with_context(context)?;
        self.out.flush().with_context(context)?;
        self.out.get_ref().sync_all().with_context(context)
    }
}

fn write_line(out: &mut impl Write, line: &Line) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Reads a log. Every line a run wrote ends in a newline, so a last line
/// without one was cut short by a crash and is dropped, whatever it holds;
/// any other unreadable line is an error naming its line number, and so is a
/// task logged twice or a footer that does not match the lines above it.
pub(crate) fn read(path: &Path) -> anyhow::Result<Contents> {
    if path.is_dir() {
        bail!("{}: a directory, not a sample log", path.display());
    }
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: cannot read the sample log: {e}", path.display()))?;
    let mut header = None;
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
        let fail = |what: String| anyhow::anyhow!("{}: line {n}: {what}", path.display());
        if footer.is_some() {
            return Err(fail("a line after the footer (two runs written into one file?)".into()));
        }
        let line: Line = serde_json::from_slice(text).map_err(|e| fail(format!("not a sample-log line: {e}")))?;
        match line {
            Line::Header(h) if n == 1 => header = Some(h),
            _ if n == 1 => return Err(fail("the first line must be the header".into())),
            Line::Header(_) => return Err(fail("a second header".into())),
            Line::Task(record) => {
                if let Some(first) = first_line_of.insert(record.task, n) {
                    return Err(fail(format!("task {} is logged twice (first on line {first})", record.task)));
                }
                records.push(record);
            }
            Line::Footer(f) => {
                if f.scored != records.len() {
                    return Err(fail(format!(
                        "the footer says {} tasks were scored, but {} task lines precede it",
                        f.scored,
                        records.len()
                    )));
                }
                footer = Some(f);
            }
        }
        if footer.is_none() {
            line_ends.push(start as u64);
        }
    }
    let header = header.with_context(|| format!("{}: empty sample log (no header line)", path.display()))?;
    if records.len() > header.tasks {
        bail!("{}: {} task lines, but the header announces {} tasks", path.display(), records.len(), header.tasks);
    }
    if footer.is_some_and(|f| f.complete) && records.len() != header.tasks {
        bail!("{}: the footer says the run is complete, but {} of {} tasks are logged", path.display(), records.len(), header.tasks);
    }
    Ok(Contents { header, records, footer, line_ends })
}
