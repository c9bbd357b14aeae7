//! scripts/make-model writes a GGUF that llama.cpp loads and mcscore scores:
//! a small random Llama with the real Llama 3 tokenizer. (The first run
//! downloads llama-cpp-python's source package from PyPI for gguf-py and the
//! vocab, and numpy/pyyaml if missing, into the cache.)

mod common;

use common::*;
use std::process::Command;

#[test]
fn a_random_model_loads_and_scores() {
    let dir = tempdir();
    let model = dir.path().join("tiny.gguf");
    let out = Command::new(repo("scripts/make-model"))
        .args(["--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ff", "512", "--type", "q8_0", "-o", path_str(&model)])
        .output()
        .expect("python3 runs scripts/make-model");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("vocab 128256"), "{}", stderr(&out));
    let scored = run(&["score", "-m", path_str(&model), "-bf", &reference("mc_text5.bin"), "--multiple-choice-tasks", "10", "--json"]);
    assert!(scored.status.success(), "{}", stderr(&scored));
    let json: serde_json::Value = serde_json::from_str(&stdout(&scored)).unwrap();
    assert_eq!(json["tasks"], 10);
    assert!(json["tokens_evaluated"].as_u64().unwrap() > 0);
    // A shape that does not split into heads is refused, naming it.
    let bad = Command::new(repo("scripts/make-model"))
        .args(["--dim", "250", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ff", "512", "-o", path_str(&model)])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("heads must divide dim"), "{}", stderr(&bad));
}
