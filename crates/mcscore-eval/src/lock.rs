//! One writer per output: an OS lock beside each file a run appends to, so
//! that two runs never interleave one log while both report success.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::EvalError;

/// An exclusive OS lock on `<path>.lock`, held while a run writes `path`. The
/// lock file holds the writer's pid, for the message a second writer gets;
/// it is removed when the lock is dropped, and a stale one (left by a killed
/// process, whose lock the OS has released) is simply taken over.
pub struct WriteLock {
    lock_path: PathBuf,
    _file: File,
}

impl WriteLock {
    pub fn acquire(path: &Path) -> Result<WriteLock, EvalError> {
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = PathBuf::from(name);
        let fail = |e: std::io::Error| EvalError::Io { path: lock_path.clone(), source: e };
        loop {
            let mut file = File::options().read(true).write(true).create(true).truncate(false).open(&lock_path).map_err(fail)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    let holder = if holder.is_empty() { "unknown".to_owned() } else { holder.to_owned() };
                    return Err(EvalError::Locked { path: path.to_owned(), holder, lock: lock_path });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
            }
            // The previous holder removes the lock file as it ends; if it did
            // so after we opened it, we hold a lock on a file nobody else can
            // see: take the one at the path now instead.
            if is_same_file(&file, &lock_path) {
                file.set_len(0).map_err(fail)?;
                write!(file, "{}", std::process::id()).map_err(fail)?;
                return Ok(WriteLock { lock_path, _file: file });
            }
        }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        // Removed while still locked, so no one can take it in between.
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

#[cfg(unix)]
fn is_same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run.jsonl");
        let first = WriteLock::acquire(&log).unwrap();
        let Err(error) = WriteLock::acquire(&log) else { panic!("a second lock was granted") };
        let error = error.to_string();
        assert!(error.contains(&format!("pid {}", std::process::id())), "{error}");
        assert!(error.contains("run.jsonl"), "{error}");
        drop(first);
        assert!(!dir.path().join("run.jsonl.lock").exists());
        WriteLock::acquire(&log).expect("free again");
    }
}
