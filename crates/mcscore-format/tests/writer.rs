//! The writer: byte-identical round trips, refusal of invalid tasks, and no
//! file under the final name unless every announced task was written.

mod common;

use common::*;
use mcscore_format::{write_tasks, Choices, Error, Task, TaskFile, TaskWriter};

fn reference(name: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference").join(name);
    assert!(path.exists(), "{} is missing: the tests read the reference files in ../shared/reference beside the checkout", path.display());
    path
}

#[test]
fn reference_files_round_trip_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["mc_letter4.bin", "mc_text5.bin", "mc_mixed.bin", "edge/text5_x6.bin", "edge/mc_small8.bin"] {
        let file = TaskFile::open(reference(name)).unwrap();
        let out = dir.path().join("copy.bin");
        write_tasks(&out, file.tasks()).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), file.bytes(), "{name}");
    }
}

#[test]
fn an_uncounted_writer_writes_the_same_bytes_and_leaves_one_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["mc_letter4.bin", "mc_mixed.bin", "edge/mc_small8.bin"] {
        let file = TaskFile::open(reference(name)).unwrap();
        let out = dir.path().join("copy.bin");
        let mut writer = TaskWriter::uncounted(&out).unwrap();
        for task in file.tasks() {
            writer.write(&task).unwrap();
        }
        writer.finish().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), file.bytes(), "{name}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "{name}: a temporary file was left behind");
    }
    // No task: refused, nothing left.
    let empty = dir.path().join("empty.bin");
    let error = TaskWriter::uncounted(&empty).unwrap().finish().unwrap_err();
    assert!(error.to_string().contains("no tasks"), "{error}");
    assert!(!empty.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn mc2_content_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut task = sample("Q?");
    task.mc2 = Choices { options: vec!["true", "false"], labels: vec![1, 0] };
    let bytes = file_bytes(&[task.clone()]);
    let path = dir.path().join("a.bin");
    write_tasks(&path, [task.clone()].into_iter()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(TaskFile::open(&path).unwrap().task(0), task);
}

#[test]
fn invalid_task_is_refused_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    let mut writer = TaskWriter::create(&path, 2).unwrap();
    writer.write(&sample("Q1?")).unwrap();
    let mut bad = sample("Q2?");
    bad.mc1.labels = vec![0; 4];
    let error = writer.write(&bad).unwrap_err();
    assert!(matches!(error, Error::InvalidTask { task: 1, .. }), "{error}");
    assert!(error.to_string().contains("task 1: no label is 1"), "{error}");
    drop(writer);
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "temporary file left behind");
}

#[test]
fn fewer_tasks_than_announced_is_an_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    let mut writer = TaskWriter::create(&path, 3).unwrap();
    writer.write(&sample("Q1?")).unwrap();
    let error = writer.finish().unwrap_err();
    assert!(matches!(error, Error::CountMismatch { announced: 3, written: 1, .. }), "{error}");
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn more_tasks_than_announced_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = TaskWriter::create(dir.path().join("out.bin"), 1).unwrap();
    writer.write(&sample("Q1?")).unwrap();
    assert!(matches!(writer.write(&sample("Q2?")), Err(Error::CountMismatch { announced: 1, written: 2, .. })));
}

#[test]
fn an_existing_file_is_replaced_only_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    std::fs::write(&path, b"precious").unwrap();
    let writer = TaskWriter::create(&path, 1).unwrap();
    drop(writer);
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    write_tasks(&path, [Task::new("Q?", vec!["yes", "no"], 1)].into_iter()).unwrap();
    assert_eq!(TaskFile::open(&path).unwrap().task(0).gold(), Some(1));
}

#[test]
fn zero_tasks_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    assert!(write_tasks(dir.path().join("x.bin"), std::iter::empty::<Task<'_>>()).is_err());
}

#[test]
fn opening_an_invalid_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.bin");
    std::fs::write(&path, [0u8; 4]).unwrap();
    let error = TaskFile::open(&path).err().unwrap().to_string();
    assert!(error.contains("broken.bin: invalid task file (1 fault): the task count at byte 0 is zero"), "{error}");
    // The path in the message, the OS error as its source (printed once, by the chain).
    let error = TaskFile::open(dir.path().join("absent.bin")).err().unwrap();
    let source = std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default();
    assert!(error.to_string().ends_with("absent.bin") && source.contains("No such file"), "{error}: {source}");
}
