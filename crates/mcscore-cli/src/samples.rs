//! `--log-samples`: one JSON line per task, between a header that pins the
//! inputs and a footer that says whether the run completed. The footer is
//! what tells a finished log from an interrupted one, and the header is what
//! `--resume` checks before it trusts the lines in between.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mcscore_metrics::{Normalisation, OptionScore};
use serde::{Deserialize, Serialize};

/// What a log was written from; `--resume` requires all of it to match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Header {
    pub mcscore: String,
    pub model: String,
    pub model_sha256: String,
    pub file: String,
    pub file_sha256: String,
    /// Tasks this run announced.
    pub tasks: usize,
    /// `--multiple-choice-tasks`, if a subset was scored.
    pub selection: Option<usize>,
    pub settings: String,
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
    Footer { complete: bool, scored: usize },
}

/// Appends task lines as they are scored, flushing after each batch.
pub(crate) struct SampleLog {
    path: PathBuf,
    out: BufWriter<File>,
}

impl SampleLog {
    /// Starts a new log, or (with `resume`) continues one written for the
    /// same header, keeping its first `keep(done)` task lines. Returns the
    /// log and the tasks kept.
    pub fn open(
        path: &Path,
        header: &Header,
        resume: bool,
        keep: impl FnOnce(usize) -> usize,
    ) -> anyhow::Result<(SampleLog, Vec<TaskRecord>)> {
        let mut kept = Vec::new();
        if path.exists() {
            if !resume {
                bail!("{}: --log-samples file exists; pass --resume to continue it, or remove it to start again", path.display());
            }
            let (old_header, records) = read(path)?;
            if old_header != *header {
                bail!(
                    "{}: cannot resume: the log was written for other inputs or settings\n  log: {}\n  now: {}",
                    path.display(),
                    serde_json::to_string(&old_header)?,
                    serde_json::to_string(header)?
                );
            }
            kept = records;
            kept.truncate(keep(kept.len()));
        }
        // Rewrite header + kept lines to a temporary file, then rename: the
        // old log stays intact until the new one is complete.
        let io = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
        let mut tmp = mcscore_format::temp_file_beside(path).map_err(io)?;
        {
            let mut out = BufWriter::new(tmp.as_file_mut());
            write_line(&mut out, &Line::Header(header.clone()))?;
            for record in &kept {
                write_line(&mut out, &Line::Task(record.clone()))?;
            }
            out.flush().map_err(io)?;
        }
        let file = tmp.persist(path).map_err(|e| io(e.error))?;
        Ok((SampleLog { path: path.to_owned(), out: BufWriter::new(file) }, kept))
    }

    pub fn record(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        write_line(&mut self.out, &Line::Task(record.clone()))
            .with_context(|| format!("{}: writing the sample log", self.path.display()))
    }

    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush().with_context(|| format!("{}: writing the sample log", self.path.display()))
    }

    /// Ends the log; `complete: false` marks it as resumable, not finished.
    pub fn finish(mut self, complete: bool, scored: usize) -> anyhow::Result<()> {
        write_line(&mut self.out, &Line::Footer { complete, scored })?;
        self.out.flush()?;
        self.out.get_ref().sync_all().with_context(|| format!("{}: syncing the sample log", self.path.display()))
    }
}

fn write_line(out: &mut impl Write, line: &Line) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Reads a log's header and task lines. A last line cut short by a crash is
/// dropped; any other unreadable line is an error naming its line number.
pub(crate) fn read(path: &Path) -> anyhow::Result<(Header, Vec<TaskRecord>)> {
    let file = File::open(path).with_context(|| format!("{}: cannot open the sample log", path.display()))?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: cannot read the sample log", path.display()))?;
    let mut header = None;
    let mut records = Vec::new();
    for (n, text) in lines.iter().enumerate() {
        let line: Line = match serde_json::from_str(text) {
            Ok(line) => line,
            Err(_) if n + 1 == lines.len() && !text.ends_with('}') => break,
            Err(e) => bail!("{}: line {}: not a sample-log line: {e}", path.display(), n + 1),
        };
        match (line, n) {
            (Line::Header(h), 0) => header = Some(h),
            (Line::Task(record), _) if n > 0 => records.push(record),
            (Line::Footer { .. }, _) if n > 0 => {}
            _ => bail!("{}: line {}: unexpected line (the first line must be the header)", path.display(), n + 1),
        }
    }
    let header = header.with_context(|| format!("{}: empty sample log", path.display()))?;
    Ok((header, records))
}
