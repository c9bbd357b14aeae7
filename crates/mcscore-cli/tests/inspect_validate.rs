//! `mcscore validate` and `inspect` on the reference edge files.

mod common;

use common::*;

#[test]
fn malformed_files_exit_1_each_with_its_own_message() {
    for (name, message) in [
        ("edge/empty.bin", "file is 0 bytes, shorter than the 4-byte task count at byte 0"),
        ("edge/trunc_offsets.bin", "offset table cut short: 5 tasks need an offset table ending at byte 24, but the file is 12 bytes"),
        ("edge/odd_labels.bin", "task 0: no label is 1 (labels start at byte 97)"),
    ] {
        let out = run(&["validate", &reference(name)]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(stdout(&out).contains(message), "{name}: {}", stdout(&out));
    }
    let out = run(&["validate", &reference("edge/odd_labels.bin")]);
    assert!(stdout(&out).contains("task 1: 4 labels are 1"), "{}", stdout(&out));
    assert!(stdout(&out).contains("llama-perplexity would still score 2 tasks"), "{}", stdout(&out));
}

#[test]
fn valid_files_exit_0() {
    for name in [
        "edge/mc_small8.bin",
        "edge/prefix_option.bin",
        "edge/text5_x6.bin",
        "edge/too_long.bin",
        "mc_letter4.bin",
        "mc_text5.bin",
        "mc_mixed.bin",
    ] {
        let out = run(&["validate", &reference(name)]);
        assert!(out.status.success(), "{name}: {}", stdout(&out));
    }
}

#[test]
fn one_bad_file_among_good_ones_fails_the_run_and_json_lists_faults() {
    let out = run(&["validate", "--json", &reference("mc_text5.bin"), &reference("edge/odd_labels.bin")]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json[0]["valid"], true);
    assert_eq!(json[1]["valid"], false);
    let kinds: Vec<&str> = json[1]["faults"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["no_gold_label", "several_gold_labels"]);
    assert_eq!(json[1]["faults"][1]["task"], 1);
}

#[test]
fn inspect_reports_min_parallel_and_the_statistics() {
    let out = run(&["inspect", "--json", &reference("edge/text5_x6.bin")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json[0]["min_parallel"], 5);
    assert_eq!(json[0]["tasks"], 600);
    assert_eq!(json[0]["mode"], "text");
    // A fraction, as every JSON mcscore prints (results schema 2).
    assert_eq!((json[0]["chance"].as_f64(), json[0]["majority_class"].as_f64().map(|m| m <= 1.0)), (Some(0.2), Some(true)));
    let letter = run(&["inspect", &reference("mc_letter4.bin")]);
    let text = stdout(&letter);
    assert!(text.contains("mode            letter") && text.contains("min_parallel    4"), "{text}");
}

#[test]
fn inspect_one_task_and_refuse_invalid_files() {
    let out = run(&["inspect", "--task", "3", &reference("mc_mixed.bin")]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("\"C\"  <- gold"), "{}", stdout(&out));
    let out = run(&["inspect", "--task", "300", &reference("mc_mixed.bin")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--task 300 is out of range: the file has 300 tasks"), "{}", stderr(&out));
    let out = run(&["inspect", &reference("edge/trunc_offsets.bin")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("trunc_offsets.bin: invalid task file"), "{}", stderr(&out));
}
