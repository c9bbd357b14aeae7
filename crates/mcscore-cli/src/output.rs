//! Output locations, checked before any work starts, so that an hour of
//! scoring is never lost to a typo in a path, and never written over a
//! device, a FIFO, one of the command's own inputs or a file the user did not
//! ask to replace. The same rule is checked again when a file is renamed into
//! place (`mcscore_format::AtomicFile`).

use std::path::Path;

use anyhow::bail;
use mcscore_format::{check_target, same_file, Existing};

/// An output file named by a flag: where it goes and what it may replace.
pub(crate) struct Target<'a> {
    pub path: &'a Path,
    pub flag: &'a str,
    /// `Existing::Replace` only where the user asked for it (`--force`).
    pub existing: Existing,
}

impl<'a> Target<'a> {
    /// An output that may replace a regular file only with `--force`.
    pub(crate) fn new(path: &'a Path, flag: &'a str, force: bool) -> Target<'a> {
        Target { path, flag, existing: if force { Existing::Replace } else { Existing::Refuse } }
    }
}

/// Checks that `target` can be written: its folder exists and takes new
/// files; nothing is at the path, or (with `--force`) a regular file that is
/// none of `inputs`. Nothing is left behind.
pub(crate) fn check_file(target: &Target<'_>, inputs: &[&Path]) -> anyhow::Result<()> {
    let Target { path, flag, existing } = *target;
    if path.is_dir() {
        bail!("{}: {flag} names a directory; give a file path", path.display());
    }
    refuse_inputs(path, flag, inputs)?;
    check_target(path, existing).map_err(|e| match e {
        mcscore_format::Error::Exists { .. } => {
            anyhow::anyhow!("{}: {flag}: the file exists; pass --force to replace it, or give another path", path.display())
        }
        mcscore_format::Error::NotRegular { kind, .. } => {
            anyhow::anyhow!("{}: {flag} names {kind}; only a regular file is ever written or replaced", path.display())
        }
        e => anyhow::Error::from(e).context(format!("{flag} {}", path.display())),
    })?;
    let folder = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        bail!("{}: {flag}: the folder {} does not exist", path.display(), folder.display());
    }
    probe(folder, path, flag)
}

/// Checks where a sample log may go: not one of `inputs`, not a directory
/// or special file, in a folder that exists. A log is appended to in place
/// (through a symbolic link too); whether an existing one may be continued is
/// the job's to decide (`--resume`).
pub(crate) fn check_log(path: &Path, flag: &str, inputs: &[&Path]) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(metadata) if !metadata.is_file() => {
            bail!("{}: {flag} names {}; give a regular file", path.display(), mcscore_format::file_kind(&metadata))
        }
        Ok(_) => refuse_inputs(path, flag, inputs),
        Err(_) => check_file(&Target { path, flag, existing: Existing::Refuse }, inputs),
    }
}

/// Refuses an output at `path` that is one of `inputs` (the same inode).
fn refuse_inputs(path: &Path, flag: &str, inputs: &[&Path]) -> anyhow::Result<()> {
    match inputs.iter().find(|input| same_file(path, input)) {
        Some(input) => bail!("{}: {flag} names one of the command's inputs ({}); give another path", path.display(), input.display()),
        None => Ok(()),
    }
}

/// Whether `a` and `b` are one file: the same inode, or (for a file not
/// written yet) the same name in the same folder.
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    if same_file(a, b) {
        return true;
    }
    let folder = |p: &Path| std::fs::canonicalize(p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))).ok();
    a.file_name() == b.file_name() && folder(a).is_some() && folder(a) == folder(b)
}

/// Checks a file a command writes in its own output folder (a plot, a task
/// file): it may replace a regular file of that name, never one of
/// `protected` (the command's inputs and its other outputs) or anything that
/// is not a regular file.
pub(crate) fn check_folder_file(path: &Path, protected: &[&Path]) -> anyhow::Result<()> {
    if let Some(other) = protected.iter().find(|p| same_path(path, p)) {
        bail!(
            "{}: writing it would replace {}, an input or another output of this command; choose another folder",
            path.display(),
            other.display()
        );
    }
    check_target(path, Existing::Replace).map_err(|e| match e {
        mcscore_format::Error::NotRegular { kind, .. } => {
            anyhow::anyhow!("{}: {kind} is in the way; only a regular file is ever replaced", path.display())
        }
        e => e.into(),
    })
}

/// Checks that files can be written in the folder `dir` (given by `flag`):
/// it is a writable folder, or the nearest folder above it that exists is
/// writable, so that it can be created when the results are written. Nothing
/// is created now: a run refused for another reason leaves no trace. The
/// files a command writes in its own folder (plots, task files) replace
/// regular files of the same name, never anything else.
pub(crate) fn check_dir(dir: &Path, flag: &str) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!("{}: {flag} names a file; give a folder", dir.display());
    }
    let existing = dir.ancestors().find(|a| a.exists()).filter(|a| !a.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !existing.is_dir() {
        bail!("{}: {flag}: {} is a file, so the folder cannot be made", dir.display(), existing.display());
    }
    probe(existing, dir, flag)
}

/// Creates and removes a temporary file in `folder`: the one test of "can I
/// write here" that also covers read-only mounts and ACLs.
fn probe(folder: &Path, named: &Path, flag: &str) -> anyhow::Result<()> {
    mcscore_format::probe_folder(folder)
        .map_err(|e| anyhow::anyhow!("{}: {flag}: cannot write in {}: {e}", named.display(), folder.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &Path, force: bool, inputs: &[&Path]) -> Result<(), String> {
        check_file(&Target::new(path, "-o", force), inputs).map_err(|e| e.to_string())
    }

    #[test]
    fn outputs_are_checked_before_work() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/folder/out.json");
        let error = check(&missing, false, &[]).unwrap_err();
        assert!(error.contains("-o") && error.contains("does not exist"), "{error}");
        assert!(check(dir.path(), false, &[]).unwrap_err().contains("names a directory"));
        check(&dir.path().join("out.json"), false, &[]).unwrap();
        check_dir(&dir.path().join("plots/new"), "--plots").unwrap();
        assert!(!dir.path().join("plots").exists(), "checking creates nothing");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_dir(&file, "--plots").unwrap_err().to_string().contains("names a file"));
        // Nothing but what was asked for is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn an_existing_file_is_replaced_only_with_force_and_never_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let (out, input) = (dir.path().join("out.jsonl"), dir.path().join("in.jsonl"));
        std::fs::write(&out, "old").unwrap();
        std::fs::write(&input, "shard").unwrap();
        assert!(check(&out, false, &[]).unwrap_err().contains("pass --force"));
        check(&out, true, &[]).unwrap();
        assert!(check(&input, true, &[&input]).unwrap_err().contains("one of the command's inputs"));
        // Through a hard link or a symbolic link, the input is still the input.
        let hard = dir.path().join("hard");
        std::fs::hard_link(&input, &hard).unwrap();
        assert!(check(&hard, true, &[&input]).unwrap_err().contains("inputs"));
        let soft = dir.path().join("soft");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        assert!(check(&soft, true, &[&input]).unwrap_err().contains("inputs"));
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "shard");
    }

    #[test]
    fn a_fifo_or_a_device_is_never_an_output() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        assert!(check(&fifo, true, &[]).unwrap_err().contains("names a FIFO"));
        let device = dir.path().join("null");
        let made = std::process::Command::new("mknod").arg(&device).args(["c", "1", "3"]).status().unwrap();
        if made.success() {
            assert!(check(&device, true, &[]).unwrap_err().contains("a character device"));
        }
        assert!(check(Path::new("/dev/null"), true, &[]).unwrap_err().contains("a character device"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_unwritable_folder_is_refused() {
        // /proc takes no new files, not even from root.
        let error = check(Path::new("/proc/out.json"), false, &[]).unwrap_err();
        assert!(error.contains("cannot write in /proc"), "{error}");
    }
}
