//! Model files checked before llama.cpp opens them: every malformed GGUF
//! (crafted from the real model's bytes) exits 1 naming the file, the fault
//! and its byte offset, never llama.cpp's "null result"; a FIFO, a device or
//! a directory is refused by kind at once; random byte flips in the header
//! never crash. docs/reliability.md lists the cases.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The real model's bytes with `edit` applied, written as DIR/NAME.gguf.
fn crafted(dir: &Path, name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(model()).unwrap();
    edit(&mut bytes);
    let path = dir.join(format!("{name}.gguf"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn score_with(model: &str) -> std::process::Output {
    run(&["score", "-m", model, "-bf", &repo("datasets/arc-easy-validation.bin"), "--limit", "2"])
}

#[test]
fn malformed_gguf_files_are_refused_by_fault_and_offset() {
    let dir = tempdir();
    let d = dir.path();
    let u64_at = |at: usize, value: u64| move |b: &mut Vec<u8>| b[at..at + 8].copy_from_slice(&value.to_le_bytes());
    let cases: Vec<(PathBuf, &str)> = vec![
        (crafted(d, "empty", |b| b.clear()), "the file is empty (0 bytes), not a GGUF model"),
        (crafted(d, "short", |b| b.truncate(3)), "the file is only 3 bytes long"),
        (crafted(d, "magic", |b| b[..4].copy_from_slice(b"GGML")), "at byte 0: the file starts with"),
        (
            crafted(d, "v99", |b| b[4..8].copy_from_slice(&99u32.to_le_bytes())),
            "at byte 4: GGUF version 99 is newer than the latest version llama.cpp reads, 3",
        ),
        (crafted(d, "v1", |b| b[4..8].copy_from_slice(&1u32.to_le_bytes())), "at byte 4: GGUF version 1 is no longer supported"),
        (crafted(d, "tensors", u64_at(8, 1 << 63)), "at byte 8: the tensor count 9223372036854775808 cannot fit in the file"),
        (crafted(d, "metadata", u64_at(16, 1 << 63)), "at byte 16: the metadata count 9223372036854775808 cannot fit in the file"),
        (crafted(d, "key", u64_at(24, 1 << 63)), "at byte 24: the key of metadata entry 0 is a string of 9223372036854775808 bytes"),
        (crafted(d, "truncated", |b| b.truncate(1_000_000)), "metadata key 'tokenizer.ggml.tokens' (entry 20)"),
        (crafted(d, "no-data", |b| b.truncate(b.len() - 4096)), "the file is truncated"),
    ];
    for (path, needle) in &cases {
        let out = score_with(path_str(path));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", path.display());
        assert!(err.contains(&format!("{}: the model does not load: ", path.display())) && err.contains(needle), "{needle:?} not in {err}");
        assert!(!err.contains("null result"), "{err}");
    }
}

#[test]
fn special_files_are_refused_by_kind_without_blocking() {
    let dir = tempdir();
    let fifo = dir.path().join("model.gguf");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let started = Instant::now();
    for (path, kind) in [(path_str(&fifo), "a FIFO"), ("/dev/zero", "a character device"), (path_str(dir.path()), "a directory")] {
        let out = score_with(path);
        assert_eq!(out.status.code(), Some(1), "{path}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("{path}: the model does not load: {kind}, not a regular file")), "{}", stderr(&out));
    }
    // A FIFO opened for reading would wait for a writer for ever.
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}

#[test]
fn byte_flips_in_the_header_never_crash() {
    let dir = tempdir();
    // A seeded walk over the first 64 KiB (the metadata's start, where every
    // count and length lives): each flip is refused with a message or loads.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..12 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let at = (state >> 33) as usize % 65536;
        let bit = (state >> 20) as u8 % 8;
        let path = crafted(dir.path(), &format!("flip{i}"), |b| b[at] ^= 1 << bit);
        let out = score_with(path_str(&path));
        let code = out.status.code();
        assert!(code == Some(0) || code == Some(1), "byte {at} bit {bit}: {code:?} (a signal?): {}", stderr(&out));
        if code == Some(1) {
            assert!(stderr(&out).contains(path_str(&path)) && !stderr(&out).contains("null result"), "byte {at}: {}", stderr(&out));
        }
    }
}
