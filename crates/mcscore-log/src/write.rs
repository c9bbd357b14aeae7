//! Writing a log: the lock that keeps a second writer out, the writer that
//! appends a run's task lines (and resumes a log), and the atomic writer of a
//! complete log.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{LogError, LogFault};
use crate::header::{Header, Stop};
use crate::identity::{Mismatch, RunIdentity};
use crate::read::{parse, Contents, Footer, Line};
use crate::record::TaskRecord;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
