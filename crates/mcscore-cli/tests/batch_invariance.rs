//! The batch rule: a task's numbers depend on the model and the task, never
//! on what it was batched with. Every option's `logprob_sum` must be bit for
//! bit the same across -np, -c, -b, -ub, -t, shard layouts merged, a resume at
//! a random task and a server under load, on a text file, a letter file and
//! Winogrande, with the real model and with random Llama models of three
//! weight types.

mod common;

use std::path::Path;

use common::invariance;
use common::server::Server;
use common::*;
use serde_json::json;

/// Enough for fills of 128 tokens to split them many ways, and 512 a few.
const TASKS: &str = "24";

/// The flag settings each file is scored with; together they take each value
/// of the matrix at least once.
/// (`-np` × `-c` limits a fill when below `-b`: 4 × 64 gives 256-token fills.)
const SETTINGS: [&[&str]; 4] = [
    &["-np", "1", "-b", "128", "-t", "1"],
    &["-np", "4", "-c", "64", "-ub", "512", "-b", "512"],
    &["-np", "16", "-c", "512", "-ub", "128"],
    &["-np", "64", "-b", "4096"],
];

fn score(model: &str, input: &[&str], log: &Path, extra: &[&str]) {
    let threads: &[&str] = if extra.contains(&"-t") { &[] } else { &["-t", "2"] };
    let args = [&["score", "-m", model], input, threads, &["--log-samples", path_str(log)], extra].concat();
    let out = run(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
}

/// Scores `input` with every setting, as 3 (and 7) merged shards, and
/// resumed at a random task (each extra process costs a model load).
fn check_matrix(name: &str, model: &str, input: &[&str], settings: &[&[&str]], shard_counts: &[usize]) {
    let tasks = TASKS.parse().unwrap();
    invariance::check_matrix(name, tasks, &|log, extra| score(model, input, log, extra), settings, shard_counts);
}

#[test]
fn a_text_file_scores_the_same_however_it_is_batched() {
    let file = reference("mc_text5.bin");
    check_matrix("text", &model(), &["-bf", &file, "--multiple-choice-tasks", TASKS], &SETTINGS, &[3, 7]);
}

#[test]
fn a_letter_file_scores_the_same_however_it_is_batched() {
    let file = reference("mc_letter4.bin");
    check_matrix("letter", &model(), &["-bf", &file, "--multiple-choice-tasks", TASKS], &SETTINGS, &[3]);
}

/// A quantised KV cache (-ctk, -ctv) changes the scores, is part of the
/// run's identity in the log, and keeps them batch-invariant: the settings
/// farthest apart (fills of one task on one thread; one fill of all) agree.
#[test]
fn a_quantised_kv_cache_changes_the_scores_and_keeps_them_batch_invariant() {
    let (model, file, dir) = (model(), reference("mc_text5.bin"), tempdir());
    let input = ["-bf", file.as_str(), "--multiple-choice-tasks", TASKS];
    let quantised = ["-ctk", "q8_0", "-ctv", "q8_0"];
    let logs: Vec<_> = ["apart", "together", "f16"].iter().map(|n| dir.path().join(format!("{n}.jsonl"))).collect();
    score(&model, &input, &logs[0], &[&quantised[..], SETTINGS[0]].concat());
    score(&model, &input, &logs[1], &[&quantised[..], SETTINGS[3]].concat());
    score(&model, &input, &logs[2], SETTINGS[3]);
    let (apart, together, f16) = (log_tasks(&logs[0]), log_tasks(&logs[1]), log_tasks(&logs[2]));
    assert_eq!(apart, together, "a q8_0 cache's scores moved with the batch");
    assert_ne!(together, f16, "a q8_0 cache scored as f16 does");
    let kernels = log_header(&logs[1])["kernels"].as_str().unwrap().to_owned();
    assert!(kernels.ends_with(" ctk=q8_0 ctv=q8_0"), "{kernels}");
    assert!(!log_header(&logs[2])["kernels"].as_str().unwrap().contains("ctk"));
    // Another cache type is another run: a resume refuses it, naming it.
    let text = std::fs::read_to_string(&logs[1]).unwrap();
    std::fs::write(&logs[1], text.lines().take(3).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let args = [&["score", "-m", model.as_str()], &input[..], &["--log-samples", path_str(&logs[1]), "--resume", "-t", "2"]].concat();
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("ctk=q8_0 ctv=q8_0"), "{}", stderr(&out));
    // What llama.cpp cannot do, and types it does not have, are refused by flag.
    let out = run(&[&["score", "-m", model.as_str()], &input[..], &["-ctv", "q4_0", "-fa", "off"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("-ctv q4_0 with -fa off: llama.cpp quantises the V cache only with flash attention"), "{}", stderr(&out));
    let out = run(&[&["score", "-m", model.as_str()], &input[..], &["-ctk", "q9_0"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("expected one of f32, f16, bf16, q8_0"), "{}", stderr(&out));
}

#[test]
fn rope_overrides_change_the_scores_and_keep_them_batch_invariant() {
    let (model, file, dir) = (model(), reference("mc_text5.bin"), tempdir());
    let input = ["-bf", file.as_str(), "--multiple-choice-tasks", TASKS];
    let rope = ["--rope-freq-base", "20000", "--rope-scaling", "linear", "--rope-scale", "2"];
    let logs: Vec<_> = ["apart", "together", "own"].iter().map(|n| dir.path().join(format!("{n}.jsonl"))).collect();
    score(&model, &input, &logs[0], &[&rope[..], SETTINGS[0]].concat());
    score(&model, &input, &logs[1], &[&rope[..], SETTINGS[3]].concat());
    score(&model, &input, &logs[2], SETTINGS[3]);
    let (apart, together, own) = (log_tasks(&logs[0]), log_tasks(&logs[1]), log_tasks(&logs[2]));
    assert_eq!(apart, together, "RoPE's overrides made the scores move with the batch");
    assert_ne!(together, own, "RoPE's overrides scored as the model's own values do");
    let kernels = log_header(&logs[1])["kernels"].as_str().unwrap().to_owned();
    assert!(kernels.ends_with(" rope-scaling=linear rope-freq-base=20000 rope-freq-scale=0.5"), "{kernels}");
    assert!(!log_header(&logs[2])["kernels"].as_str().unwrap().contains("rope"));
    // Other overrides are another run: a resume refuses them, naming them.
    let args = [&["score", "-m", model.as_str()], &input[..], &["--log-samples", path_str(&logs[1]), "--resume", "-t", "2"]].concat();
    let out = run(&[&args[..], &["--rope-freq-base", "30000"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("rope-freq-base=20000"), "{}", stderr(&out));
    // Values llama.cpp could not use are refused by flag.
    for (flag, value, says) in [("--rope-freq-base", "0", "above 0"), ("--rope-scaling", "cubic", "expected none, linear or yarn")] {
        let out = run(&[&["score", "-m", model.as_str()], &input[..], &[flag, value]].concat());
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{flag} {value}: {}", stderr(&out));
    }
}

#[test]
fn winogrande_scores_the_same_however_it_is_batched() {
    let file = repo("datasets/winogrande-debiased-eval.csv");
    check_matrix("winogrande", &model(), &["--winogrande", "-f", &file, "--winogrande-tasks", TASKS], &SETTINGS, &[3]);
}

/// Random Llama models (scripts/make-model) of the weight types whose kernels
/// differ from the real model's: Q4_0 (repacked), Q8_0 and F16.
#[test]
fn random_models_of_three_weight_types_score_the_same_however_batched() {
    let dir = tempdir();
    let file = reference("mc_text5.bin");
    for kind in ["q4_0", "q8_0", "f16"] {
        let shape = ["--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ff", "512", "--type", kind];
        let model = random_model(dir.path(), kind, &shape);
        let settings: [&[&str]; 2] = [SETTINGS[0], SETTINGS[3]];
        check_matrix(kind, path_str(&model), &["-bf", &file, "--multiple-choice-tasks", TASKS], &settings, &[3]);
    }
}

/// 40 prompts alone and among 64 concurrent requests.
#[test]
fn a_served_prompt_scores_the_same_alone_and_beside_other_requests() {
    invariance::check_served(&Server::start(&[]), 40, 64);
}

#[test]
fn the_removed_deterministic_flag_and_logs_of_the_old_rule_are_refused() {
    let (model, file) = (model(), reference("mc_text5.bin"));
    let out = run(&["score", "-m", &model, "-bf", &file, "--deterministic"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--deterministic was removed: every run is batch-invariant now"), "{}", stderr(&out));
    // A study that passes it is refused when planned, not in every array task.
    let dir = tempdir();
    let study = dir.path().join("study.json");
    let text =
        json!({"models": [model], "files": [file], "settings": {"old": ["--deterministic"]}, "shards": 2, "out": path_str(dir.path())});
    std::fs::write(&study, text.to_string()).unwrap();
    let out = run(&["plan", path_str(&study), "--slurm"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--deterministic was removed"), "{}", stderr(&out));
    // A log written before the rule (its settings name no rule) is not resumed.
    let log = dir.path().join("old.jsonl");
    score(&model, &["-bf", &file, "--multiple-choice-tasks", "4"], &log, &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    let old_settings = "c=auto np=auto b=2048 ub=512 fa=Auto deterministic=false";
    let first_two: Vec<&str> = text.lines().take(2).collect();
    let header = first_two[0].replace("fa=Auto batch=micro60-out12", old_settings);
    assert_ne!(header, first_two[0], "the header names the rule: {}", first_two[0]);
    std::fs::write(&log, format!("{header}\n{}\n", first_two[1])).unwrap();
    let args = ["score", "-m", &model, "-bf", &file, "--multiple-choice-tasks", "4", "--log-samples", path_str(&log), "--resume"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("settings"), "{}", stderr(&out));
}
