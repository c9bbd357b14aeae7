//! One test per fault variant: each names the task and byte offset exactly.

mod common;

use common::*;
use mcscore_format::{read_lenient, validate, Choices, Fault, Field, Task};
use std::path::Path;

fn one_task(task: Task<'_>) -> Vec<u8> {
    file_bytes(&[task])
}

// Layout of `one_task(sample("Q?"))`: count 0..4, offset 4..8, question len 8..12,
// "Q?" 12..14, option count 14..18, options 18..38 (4 × 5 bytes), labels 38..54,
// mc2 count 54..58.
const LABELS_AT: u64 = 38;

#[test]
fn valid_file_has_no_faults() {
    let bytes = file_bytes(&[sample("Q1?"), sample("Q2?")]);
    assert_eq!(validate(&bytes), vec![]);
}

#[test]
fn short_header() {
    assert_eq!(validate(&[1, 0]), vec![Fault::ShortHeader { len: 2 }]);
    assert_eq!(validate(&[]), vec![Fault::ShortHeader { len: 0 }]);
}

#[test]
fn zero_tasks() {
    assert_eq!(validate(&[0, 0, 0, 0]), vec![Fault::NoTasks]);
}

#[test]
fn offset_table_cut_short() {
    let bytes = [5, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(validate(&bytes), vec![Fault::OffsetTableTruncated { n_tasks: 5, needed: 24, len: 12 }]);
}

#[test]
fn first_offset_wrong() {
    let mut bytes = file_bytes(&[sample("Q1?"), sample("Q2?")]);
    set_offset(&mut bytes, 0, 16);
    assert_eq!(validate(&bytes)[0], Fault::FirstOffset { expected: 12, found: 16 });
}

#[test]
fn offset_out_of_bounds() {
    let mut bytes = file_bytes(&[sample("Q1?"), sample("Q2?")]);
    let len = bytes.len() as u64;
    set_offset(&mut bytes, 1, 9999);
    assert_eq!(validate(&bytes)[0], Fault::OffsetOutOfBounds { task: 1, at: 8, offset: 9999, len });
}

#[test]
fn offset_backwards() {
    let mut bytes = file_bytes(&[sample("Q1?"), sample("Q2?"), sample("Q3?")]);
    let first = offset(&bytes, 0);
    let second = offset(&bytes, 1);
    set_offset(&mut bytes, 2, first);
    let faults = validate(&bytes);
    assert!(faults.contains(&Fault::OffsetBackwards { task: 2, at: 12, offset: first as u64, previous: second as u64 }), "{faults:?}");
}

#[test]
fn gap_between_tasks() {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    sample("Q1?").encode(&mut a);
    sample("Q2?").encode(&mut b);
    let first = 12u32;
    let end_of_first = first + a.len() as u32;
    a.extend_from_slice(&[0xEE; 3]); // three stray bytes after task 0
    let bytes = assemble(&[first, end_of_first + 3], &[a, b]);
    assert_eq!(validate(&bytes), vec![Fault::Gap { task: 1, offset: end_of_first as u64 + 3, previous_end: end_of_first as u64 }]);
}

#[test]
fn overlapping_tasks() {
    // Task 1's offset points at task 0's mc2 count, which parses as a
    // (different) task: the overlap is reported whatever follows.
    let mut bytes = file_bytes(&[sample("Q1?"), sample("Q2?")]);
    let end_of_first = offset(&bytes, 1);
    set_offset(&mut bytes, 1, end_of_first - 4);
    let faults = validate(&bytes);
    assert_eq!(faults[0], Fault::Overlap { task: 1, offset: end_of_first as u64 - 4, previous_end: end_of_first as u64 });
}

#[test]
fn count_past_end() {
    let mut bytes = one_task(sample("Q?"));
    bytes.truncate(LABELS_AT as usize + 6); // inside label 1
    assert_eq!(validate(&bytes), vec![Fault::CountPastEnd { task: 0, field: Field::Label(1), at: LABELS_AT + 4, len: LABELS_AT + 6 }]);
}

#[test]
fn string_past_end() {
    let mut bytes = one_task(sample("Q?"));
    bytes[8..12].copy_from_slice(&1000u32.to_le_bytes());
    let len = bytes.len() as u64;
    assert_eq!(validate(&bytes), vec![Fault::StringPastEnd { task: 0, field: Field::Question, at: 8, claimed: 1000, len }]);
}

#[test]
fn invalid_utf8_names_the_bad_byte() {
    let mut bytes = one_task(Task::new("abcdef", vec!["A", "B"], 0));
    bytes[12 + 3] = 0xFF; // the 'd'
    assert_eq!(validate(&bytes), vec![Fault::InvalidUtf8 { task: 0, field: Field::Question, at: 15 }]);
}

#[test]
fn empty_question() {
    let bytes = one_task(Task::new("", vec!["A", "B"], 0));
    assert_eq!(validate(&bytes), vec![Fault::EmptyQuestion { task: 0, at: 8 }]);
}

#[test]
fn no_options() {
    let task = Task { question: "Q?", mc1: Choices::default(), mc2: Choices::default() };
    assert_eq!(validate(&one_task(task)), vec![Fault::NoOptions { task: 0, at: 14 }]);
}

#[test]
fn too_many_options() {
    let options = vec!["x"; 101];
    let bytes = one_task(Task::new("Q?", options, 0));
    assert_eq!(validate(&bytes), vec![Fault::TooManyOptions { task: 0, at: 14, count: 101 }]);
    let ok = one_task(Task::new("Q?", vec!["x"; 100], 99));
    assert_eq!(validate(&ok), vec![]);
}

#[test]
fn empty_option() {
    let bytes = one_task(Task::new("Q?", vec!["A", "", "C"], 0));
    // option 1's length is at 18 + 5 = 23.
    assert_eq!(validate(&bytes), vec![Fault::EmptyOption { task: 0, option: 1, at: 23 }]);
}

#[test]
fn label_other_than_zero_or_one() {
    let mut task = sample("Q?");
    task.mc1.labels[3] = 7;
    assert_eq!(validate(&one_task(task)), vec![Fault::BadLabel { task: 0, field: Field::Label(3), at: LABELS_AT + 12, value: 7 }]);
}

#[test]
fn no_gold_label() {
    let mut task = sample("Q?");
    task.mc1.labels = vec![0; 4];
    assert_eq!(validate(&one_task(task)), vec![Fault::NoGoldLabel { task: 0, at: LABELS_AT }]);
}

#[test]
fn several_gold_labels() {
    let mut task = sample("Q?");
    task.mc1.labels = vec![1, 0, 1, 1];
    assert_eq!(validate(&one_task(task)), vec![Fault::SeveralGoldLabels { task: 0, at: LABELS_AT, count: 3 }]);
}

#[test]
fn malformed_mc2() {
    let mut task = sample("Q?");
    task.mc2 = Choices { options: vec!["x", "y"], labels: vec![1, 3] };
    let faults = validate(&one_task(task));
    assert_eq!(faults.len(), 1);
    assert!(matches!(&faults[0], Fault::Mc2BadLabel { task: 0, label: 1, value: 3, .. }), "{faults:?}");
    assert!(faults[0].to_string().contains("mc2 label 1 at byte"), "{}", faults[0]);
    // mc2 with content but well formed is valid (and must round-trip).
    let mut task = sample("Q?");
    task.mc2 = Choices { options: vec!["x", "y"], labels: vec![1, 1] };
    assert_eq!(validate(&one_task(task)), vec![]);
}

#[test]
fn trailing_bytes() {
    let mut bytes = one_task(sample("Q?"));
    let len = bytes.len() as u64;
    bytes.extend_from_slice(b"junk");
    assert_eq!(validate(&bytes), vec![Fault::TrailingBytes { at: len, count: 4 }]);
}

#[test]
fn all_faults_are_reported_not_only_the_first() {
    let mut bad_labels = sample("Q1?");
    bad_labels.mc1.labels = vec![0; 4];
    let mut bytes = file_bytes(&[bad_labels, Task::new("", vec!["A", "B"], 0), Task::new("Q3?", vec!["A", ""], 0)]);
    bytes.extend_from_slice(b"!");
    let kinds: Vec<_> = validate(&bytes).iter().map(Fault::kind).collect();
    assert_eq!(kinds, ["no_gold_label", "empty_question", "empty_option", "trailing_bytes"]);
}

#[test]
fn every_message_names_task_and_byte() {
    let mut task = sample("Q?");
    task.mc1.labels = vec![0, 0, 2, 0];
    let message = validate(&one_task(task))[0].to_string();
    assert_eq!(message, "task 0: label 2 at byte 46 is 2; labels must be 0 or 1");
}

#[test]
fn lenient_reads_what_llama_cpp_reads() {
    // Wrong offsets and labels: llama.cpp scores it, strict validation does not.
    let mut task = sample("Q1?");
    task.mc1.labels = vec![1, 1, 0, 0];
    let mut bytes = file_bytes(&[task, sample("Q2?")]);
    set_offset(&mut bytes, 1, 5);
    let tasks = read_lenient(&bytes, Path::new("x.bin")).expect("llama.cpp would read it");
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[1].question, "Q2?");
    let kinds: Vec<_> = validate(&bytes).iter().map(Fault::kind).collect();
    assert!(kinds.contains(&"several_gold_labels") && kinds.contains(&"offset_backwards"), "{kinds:?}");

    // An empty option stops llama.cpp too.
    let bytes = one_task(Task::new("Q?", vec!["A", ""], 0));
    let error = read_lenient(&bytes, Path::new("x.bin")).expect_err("rejected");
    assert!(error.to_string().contains("x.bin: invalid task file (1 fault): task 0: option 1"), "{error}");
}

#[test]
fn a_text_score_would_not_tokenise() {
    let max = mcscore_format::MAX_TEXT_BYTES;
    // question + " " + the longest option, exactly at the cap and one past it.
    let question = "q".repeat(max - 1 - 3);
    assert_eq!(validate(&one_task(Task::new(&question, vec!["a", "bbb"], 0))), vec![]);
    let bytes = one_task(Task::new(&question, vec!["a", "bbbb"], 0));
    let faults = validate(&bytes);
    assert_eq!(faults, vec![Fault::TextTooLong { task: 0, at: 8, bytes: max as u64 + 1 }]);
    assert!(faults[0]
        .to_string()
        .starts_with(&format!("task 0: the question at byte 8 and its longest option are {} bytes together", max + 1)));
    assert!(!mcscore_format::llama_cpp_rejects(&faults[0]), "llama.cpp reads it");
    // The writer refuses what validation calls a fault.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.bin");
    let error = mcscore_format::write_tasks(&path, [Task::new(&question, vec!["a", "bbbb"], 0)].into_iter()).unwrap_err();
    assert!(error.to_string().contains("refusing to write invalid task"), "{error}");
    assert!(!path.exists());
}
