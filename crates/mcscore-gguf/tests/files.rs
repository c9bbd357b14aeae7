//! `check_file`: refusing what is not a regular file before opening it, the
//! file-level errors, and a valid file read back through the memory map.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Gguf;
use mcscore_gguf::{check_file, Fault, GgufErrorKind};

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("mcscore-gguf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn kind(path: &Path) -> GgufErrorKind {
    let error = check_file(path).expect_err("must be refused");
    assert_eq!(error.path, path);
    let message = error.to_string();
    assert!(message.starts_with(&format!("{}: ", path.display())), "{message}");
    assert!(!message.contains("Some(") && !message.contains("None"), "{message}");
    error.kind
}

#[test]
fn a_valid_file_passes_and_its_header_outlives_the_map() {
    let dir = TempDir::new("valid");
    let built = Gguf::valid().build();
    let path = dir.file("model.gguf", &built.bytes);
    let header = check_file(&path).unwrap();
    drop(dir);
    assert_eq!(header.get_str("general.architecture"), Some("gemma3"));
    assert_eq!(header.get_u64("gemma3.context_length"), Some(2048));
    assert_eq!(header.data_offset(), built.at("data"));
    assert_eq!(header.tensor_count(), 4);
}

#[test]
fn empty_short_and_malformed_files() {
    let dir = TempDir::new("short");
    assert!(matches!(kind(&dir.file("empty.gguf", b"")), GgufErrorKind::Empty));
    assert!(matches!(kind(&dir.file("three.gguf", b"GGU")), GgufErrorKind::TooShort { len: 3 }));
    let path = dir.file("three.gguf", b"GGU");
    assert_eq!(
        check_file(&path).unwrap_err().to_string(),
        format!("{}: the file is only 3 bytes long, shorter than the 24 bytes every GGUF file starts with", path.display())
    );
    let mut built = Gguf::valid().build();
    built.set_u32("version", 1);
    let path = dir.file("v1.gguf", &built.bytes);
    assert!(matches!(kind(&path), GgufErrorKind::Malformed(Fault::VersionOne { offset: 4 })));
    assert_eq!(
        check_file(&path).unwrap_err().to_string(),
        format!(
            "{}: not a GGUF file llama.cpp would load: at byte 4: GGUF version 1 is no longer supported by llama.cpp; convert the model again",
            path.display()
        )
    );
    let built = Gguf::valid().build();
    let path = dir.file("cut.gguf", &built.bytes[..built.bytes.len() - 100]);
    assert!(matches!(kind(&path), GgufErrorKind::Malformed(Fault::TensorDataPastEnd { index: 3, .. })));
}

#[test]
fn missing_file_is_an_io_error_with_its_cause_as_source() {
    let dir = TempDir::new("missing");
    let path = dir.0.join("absent.gguf");
    let error = check_file(&path).unwrap_err();
    let source = std::error::Error::source(&error).expect("the I/O error is the source");
    assert!(source.to_string().contains("No such file"), "{source}");
    assert!(matches!(error.kind, GgufErrorKind::Io { action: "read its metadata", .. }));
    assert_eq!(error.to_string(), format!("{}: cannot read its metadata", path.display()));
}

#[test]
fn special_files_are_refused_by_kind_without_opening() {
    let dir = TempDir::new("special");
    assert!(matches!(kind(&dir.0), GgufErrorKind::NotRegularFile { file_type: "a directory" }));
    assert!(matches!(kind(Path::new("/dev/null")), GgufErrorKind::NotRegularFile { file_type: "a character device" }));
    // Opening a FIFO with no writer would block forever: this returning at
    // all shows it was refused before being opened.
    let fifo = dir.0.join("model.gguf");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    assert!(matches!(kind(&fifo), GgufErrorKind::NotRegularFile { file_type: "a FIFO" }));
    assert_eq!(check_file(&fifo).unwrap_err().to_string(), format!("{}: a FIFO, not a regular file", fifo.display()));
}
