//! The model's sha256 without reading the model again: a 40 GB model takes
//! about a minute to hash, on every run that logs or prints JSON. Hashes are
//! cached by canonical path, size and modification time (to the nanosecond),
//! and recomputed on any change.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::EvalError;

/// The cache file, under the cache folder.
const FILE: &str = "model-sha256.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    bytes: u64,
    modified_ns: u128,
    sha256: String,
}

/// The sha256 of `path`, and whether it came from the cache in `cache_dir`.
/// A cache that cannot be read or written only costs the hashing.
pub(crate) fn sha256_cached(path: &Path, cache_dir: &Path) -> Result<(String, bool), EvalError> {
    let metadata = std::fs::metadata(path).map_err(EvalError::io(path))?;
    let modified_ns = metadata.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let key = std::fs::canonicalize(path).map_err(EvalError::io(path))?.display().to_string();
    let cache_file = cache_dir.join(FILE);
    let mut entries: BTreeMap<String, Entry> =
        std::fs::read(&cache_file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
    if let Some(entry) = entries.get(&key).filter(|e| e.bytes == metadata.len() && e.modified_ns == modified_ns) {
        return Ok((entry.sha256.clone(), true));
    }
    let sha256 = mcscore_format::sha256_file(path).map_err(EvalError::io(path))?;
    entries.insert(key, Entry { bytes: metadata.len(), modified_ns, sha256: sha256.clone() });
    if std::fs::create_dir_all(cache_dir).is_ok() {
        let text = serde_json::to_vec_pretty(&entries).expect("entries serialise");
        let _ = mcscore_format::write_atomic(&cache_file, &text);
    }
    Ok((sha256, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_is_reused_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (file, cache) = (dir.path().join("model.gguf"), dir.path().join("cache"));
        std::fs::write(&file, b"weights").unwrap();
        let (first, cached) = sha256_cached(&file, &cache).unwrap();
        assert!(!cached);
        assert_eq!(first, mcscore_format::sha256_hex(b"weights"));
        assert_eq!(sha256_cached(&file, &cache).unwrap(), (first.clone(), true));
        // Same size, new content and time: hashed again.
        std::fs::write(&file, b"WEIGHTS").unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(later).unwrap();
        let (second, cached) = sha256_cached(&file, &cache).unwrap();
        assert!(!cached);
        assert_eq!(second, mcscore_format::sha256_hex(b"WEIGHTS"));
    }
}
