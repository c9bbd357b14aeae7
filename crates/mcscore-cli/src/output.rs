//! Output locations: checked before any work starts, and locked while a run
//! writes them, so that an hour of scoring is never lost to a typo in a path
//! and two runs never interleave one log.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::bail;

/// Checks that a file can be created at `path` (given by `flag`): its folder
/// exists and takes new files, and `path` is not a folder. Nothing is left
/// behind.
pub(crate) fn check_file(path: &Path, flag: &str) -> anyhow::Result<()> {
    if path.is_dir() {
        bail!("{}: {flag} names a directory; give a file path", path.display());
    }
    let folder = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        bail!("{}: {flag}: the folder {} does not exist", path.display(), folder.display());
    }
    probe(folder, path, flag)
}

/// Checks that files can be written in the folder `dir` (given by `flag`),
/// creating it (and its parents) if it does not exist.
pub(crate) fn check_dir(dir: &Path, flag: &str) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!("{}: {flag} names a file; give a folder", dir.display());
    }
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {flag}: cannot create the folder: {e}", dir.display()))?;
    probe(dir, dir, flag)
}

/// Creates and removes a temporary file in `folder`: the one test of "can I
/// write here" that also covers read-only mounts and ACLs.
fn probe(folder: &Path, named: &Path, flag: &str) -> anyhow::Result<()> {
    mcscore_format::temp_file_beside(&folder.join("probe"))
        .map(drop)
        .map_err(|e| anyhow::anyhow!("{}: {flag}: cannot write in {}: {e}", named.display(), folder.display()))
}

/// An exclusive OS lock on `<path>.lock`, held while a run writes `path`. The
/// lock file holds the writer's pid, for the message a second writer gets;
/// it is removed when the lock is dropped, and a stale one (left by a killed
/// process, whose lock the OS has released) is simply taken over.
pub(crate) struct WriteLock {
    lock_path: PathBuf,
    _file: File,
}

impl WriteLock {
    pub(crate) fn acquire(path: &Path) -> anyhow::Result<WriteLock> {
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = PathBuf::from(name);
        let fail = |e: std::io::Error| anyhow::anyhow!("{}: cannot lock {}: {e}", path.display(), lock_path.display());
        loop {
            let mut file = File::options().read(true).write(true).create(true).truncate(false).open(&lock_path).map_err(fail)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    let holder = if holder.is_empty() { "unknown".to_owned() } else { holder.to_owned() };
                    bail!(
                        "{}: another mcscore process (pid {holder}) is writing this file; wait for it to end, or stop it (lock: {})",
                        path.display(),
                        lock_path.display()
                    );
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

    #[test]
    fn outputs_are_checked_before_work() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/folder/out.json");
        let error = check_file(&missing, "--save-json").unwrap_err().to_string();
        assert!(error.contains("--save-json") && error.contains("does not exist"), "{error}");
        let error = check_file(dir.path(), "--save-json").unwrap_err().to_string();
        assert!(error.contains("names a directory"), "{error}");
        check_file(&dir.path().join("out.json"), "--save-json").unwrap();
        check_dir(&dir.path().join("plots/new"), "--plots").unwrap();
        assert!(dir.path().join("plots/new").is_dir());
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_dir(&file, "--plots").unwrap_err().to_string().contains("names a file"));
        // Nothing but what was asked for is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_unwritable_folder_is_refused() {
        // /proc takes no new files, not even from root.
        let error = check_file(Path::new("/proc/out.json"), "--save-json").unwrap_err().to_string();
        assert!(error.contains("cannot write in /proc"), "{error}");
    }
}
