//! The real default model, gemma-3-270m Q4_K_M, passes the check. It is
//! where scripts/fetch-model caches it (scripts/test fetches it first); a
//! missing model fails this test rather than passing it unchecked.

use std::path::PathBuf;

use mcscore_gguf::{check_file, check_model_file, Value};

/// scripts/fetch-model's path: $MCSCORE_CACHE_DIR/models/NAME, the cache
/// directory defaulting to ~/.cache/mcscore.
fn default_model() -> PathBuf {
    let cache = match std::env::var_os("MCSCORE_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/mcscore"),
    };
    cache.join("models/gemma-3-270m-q4_k_m.gguf")
}

#[test]
fn the_default_model_passes() {
    let path = default_model();
    assert!(path.is_file(), "{} is missing: run scripts/fetch-model first (scripts/test does)", path.display());
    let header = check_file(&path).unwrap_or_else(|e| panic!("{e}"));
    // Its values too: 262,144 distinct tokens, special ids among them.
    check_model_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(header.get_str("general.architecture"), Some("gemma3"));
    assert_eq!(header.version(), 3);
    assert!(header.tensor_count() > 0);
    assert!(header.get_u64("gemma3.context_length").is_some_and(|n| n > 0));
    // This GGUF carries no chat template; its vocabulary is an array.
    assert_eq!(header.get_str("tokenizer.chat_template"), None);
    assert!(matches!(header.get("tokenizer.ggml.tokens"), Some(Value::Array { element_type: "string", len }) if len > 100_000));
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(
        header.data_offset() + header.data_size() >= len && header.data_offset() + header.data_size() < len + u64::from(header.alignment())
    );
}
