//! Output locations, checked before any work starts, so that an hour of
//! scoring is never lost to a typo in a path.

use std::path::Path;

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

/// Checks that files can be written in the folder `dir` (given by `flag`):
/// it is a writable folder, or the nearest folder above it that exists is
/// writable, so that it can be created when the results are written. Nothing
/// is created now: a run refused for another reason leaves no trace.
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
    tempfile::Builder::new()
        .prefix(".mcscore-probe-")
        .tempfile_in(folder)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("{}: {flag}: cannot write in {}: {e}", named.display(), folder.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!dir.path().join("plots").exists(), "checking creates nothing");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_dir(&file, "--plots").unwrap_err().to_string().contains("names a file"));
        // Nothing but what was asked for is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_unwritable_folder_is_refused() {
        // /proc takes no new files, not even from root.
        let error = check_file(Path::new("/proc/out.json"), "--save-json").unwrap_err().to_string();
        assert!(error.contains("cannot write in /proc"), "{error}");
    }
}
