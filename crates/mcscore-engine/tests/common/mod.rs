//! What the engine's tests share: the real model.

use std::path::PathBuf;

/// The bundled model (`MCSCORE_MODEL`, or the cache `scripts/fetch-model` fills).
pub fn model() -> PathBuf {
    let path = std::env::var_os("MCSCORE_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("MCSCORE_CACHE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/mcscore"));
        cache.join("models/gemma-3-270m-q4_k_m.gguf")
    });
    assert!(path.is_file(), "the model is not at {}: run scripts/fetch-model first", path.display());
    path
}
