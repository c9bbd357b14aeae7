//! One writer per log: an OS lock (`flock`) on the log file itself, held
//! while a run appends to it. The lock is on the file (its inode), not on a
//! name beside it, so a second run that reaches the same log through a
//! symbolic link, a hard link or another relative path is refused too, and a
//! run that dies releases it with its descriptors.

use std::fs::File;
use std::path::Path;

use crate::EvalError;

/// Takes the exclusive lock on `file` (opened from `path`) without waiting.
pub(crate) fn lock(file: &File, path: &Path) -> Result<(), EvalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(EvalError::Locked { path: path.to_owned() }),
        Err(std::fs::TryLockError::Error(source)) => Err(EvalError::Io { path: path.to_owned(), source }),
    }
}

/// Holds the lock of the regular file at `path`, if one is there, while an
/// output replaces it: a file another run is writing is never replaced.
pub(crate) struct ReplaceLock {
    _file: Option<File>,
}

impl ReplaceLock {
    pub(crate) fn acquire(path: &Path) -> Result<ReplaceLock, EvalError> {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => {
                let file = File::open(path).map_err(EvalError::io(path))?;
                lock(&file, path)?;
                Ok(ReplaceLock { _file: Some(file) })
            }
            _ => Ok(ReplaceLock { _file: None }),
        }
    }
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
