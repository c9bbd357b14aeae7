//! `mcscore schemes`: the eight response modes end to end on the real model
//! (plain completion prompts) and on a small random instruct model inside a
//! real chat template. Every response parses, inspect_ai's own parser reads
//! the same answers, an independent Python implementation of the paper's
//! rules gives every logged score, AUC's turns render as Python's jinja2
//! renders them, and the logs are byte for byte the same whatever -np, and
//! after an interrupted run is resumed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};

fn inspect_dir() -> PathBuf {
    python_stats().join("inspect-ai-0.3.285")
}

/// The Python check of a log (tests/python/schemes_reference.py).
fn reference(log: &Path) -> Value {
    let out = Command::new("python3")
        .arg(repo("crates/mcscore-cli/tests/python/schemes_reference.py"))
        .arg(inspect_dir())
        .arg(log)
        .output()
        .unwrap();
    assert!(out.status.success(), "schemes_reference.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn log_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn schemes(args: &[&str]) -> Value {
    let mut all = vec!["schemes", "-t", "2", "--json", "--resamples", "200"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{all:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Checks a run's log against the Python reference and its report against
/// both; every response parsed as `parses` allows.
fn check_run(log: &Path, report: &Value, parses: &[&str]) {
    let checked = reference(log);
    assert_eq!(checked["problems"], json!([]), "{}", log.display());
    let model = &report["models"][0];
    for figures in model["modes"].as_array().unwrap() {
        let mode = figures["mode"].as_str().unwrap();
        let close = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-12;
        assert!(close(&figures["prompted"]["mean"], &checked["means"][mode]), "{mode}: {figures} against {checked}");
        assert!(close(&figures["logprob"]["mean"], &checked["logprob_means"][mode]), "{mode}: {figures} against {checked}");
        for (outcome, count) in figures["parses"].as_object().unwrap() {
            assert!(parses.contains(&outcome.as_str()) || count == 0, "{mode}: {count} responses {outcome}");
        }
    }
}

#[test]
fn the_eight_modes_on_the_real_model_are_read_and_scored_as_the_paper_says_whatever_np() {
    let dir = tempdir();
    let file = repo("datasets/arc-easy-validation.bin");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let report = schemes(&[&file, "--limit", "4", "--logs", path_str(&logs)]);
    let log = logs.join("gemma-3-270m-q4_k_m.schemes.jsonl");
    // A base model: plain prompts; every response under its grammar parses strictly.
    check_run(&log, &report, &["strict"]);
    let lines = log_lines(&log);
    assert_eq!(lines[0]["modes"], json!(["NR", "NR-Var", "NM", "Elim", "Elim-NM", "CBM", "PPA", "AUC"]));
    assert_eq!((lines[0]["chat_template"].as_str(), lines.len()), (Some("none"), 5));
    let first = &lines[1]["modes"][0]["turns"][0];
    assert!(first["prompt"].as_str().unwrap().starts_with(
        "Answer the following multiple choice question. The entire content of your response should be of the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of A,B,C,D.\n\n"
    ));
    // AUC: a turn per attempt until the key, at most k − 1, each later prompt after the earlier turns.
    for record in &lines[1..] {
        let auc = record["modes"].as_array().unwrap().iter().find(|m| m["mode"] == "AUC").unwrap();
        let turns = auc["turns"].as_array().unwrap();
        assert!(!turns.is_empty() && turns.len() < record["k"].as_u64().unwrap() as usize);
        for pair in turns.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            let expected = format!(
                "{}{}\n\n{}\n\n",
                before["prompt"].as_str().unwrap(),
                before["response"].as_str().unwrap(),
                after["user"].as_str().unwrap()
            );
            assert_eq!(after["prompt"].as_str().unwrap(), expected);
            assert!(after["user"].as_str().unwrap().starts_with("Incorrect. The wrong choices so far: "));
        }
    }

    // A run cut after its first chunks, its last line torn, resumes to the
    // same log, three sequences at a time (one task a chunk) where it ran 32.
    let resumed = dir.path().join("resumed");
    std::fs::create_dir(&resumed).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text.split_inclusive('\n').take(3).collect();
    let torn = &text.split_inclusive('\n').nth(3).unwrap()[..40];
    let cut = resumed.join("gemma-3-270m-q4_k_m.schemes.jsonl");
    std::fs::write(&cut, format!("{}{torn}", kept.concat())).unwrap();
    let out = run(&["schemes", &file, "--limit", "4", "--logs", path_str(&resumed), "-t", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("a log is there already (--logs); give --resume"), "{}", stderr(&out));
    let again = schemes(&["-bf", &file, "--limit", "4", "--logs", path_str(&resumed), "-np", "3", "--resume"]);
    assert_eq!(std::fs::read_to_string(&cut).unwrap(), text);
    assert_eq!(again["models"][0]["modes"], report["models"][0]["modes"]);
    // Resumed with other settings: refused, naming the field.
    let out = run(&["schemes", &file, "--limit", "3", "--logs", path_str(&resumed), "--resume", "-t", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("a log of another run: its tasks (the log's 4, this run's 3)"), "{}", stderr(&out));

    // Two shards, three sequences at a time, merged: the same log again.
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    for shard in ["0/2", "1/2"] {
        let out = run(&["schemes", &file, "--limit", "4", "--logs", path_str(&shards), "-np", "3", "--shard", shard, "-t", "2"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let merged = dir.path().join("merged.jsonl");
    let parts = [shards.join("gemma-3-270m-q4_k_m.1-of-2.schemes.jsonl"), shards.join("gemma-3-270m-q4_k_m.0-of-2.schemes.jsonl")];
    let out = run(&["merge", path_str(&parts[0]), path_str(&parts[1]), "-o", path_str(&merged), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&merged).unwrap(), std::fs::read(&log).unwrap());
    let merged_report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(merged_report["models"][0]["modes"][0]["prompted"], report["models"][0]["modes"][0]["prompted"]);
    // A shard alone is not a run; one shard is not the run.
    let out = run(&["schemes", "--report", path_str(&parts[0])]);
    assert!(stderr(&out).contains("the log of shard 1/2 of a run: merge the run's shards with `mcscore merge` first"), "{}", stderr(&out));
    let out = run(&["merge", path_str(&parts[0]), "-o", path_str(&dir.path().join("half.jsonl"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("a run of 2 shards; only 1 of their logs given"), "{}", stderr(&out));

    // The results JSON follows its schema.
    assert_eq!(schema_complaints("schemes.schema.json", &report), Vec::<String>::new(), "{report:#}");
    // The page shows the same tables, in Chromium.
    let page = dir.path().join("schemes.html");
    let out = run(&["view", "--schemes", path_str(&log), "-o", path_str(&page), "--resamples", "200"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let saved = dir.path().join("report.json");
    std::fs::write(&saved, report.to_string()).unwrap();
    view_browser(&setup_browser(), &["schemes", path_str(&page), path_str(&saved)]);

    // The tables again from the logs: the same report.
    let out = run(&["schemes", "--report", path_str(&log), "--json", "--resamples", "200"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let from_log: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(from_log["models"][0]["modes"], report["models"][0]["modes"]);
    // And as text, the answer first.
    let out = run(&["schemes", "--report", path_str(&log), "--resamples", "200"]);
    let text = stdout(&out);
    assert!(text.starts_with("schemes: ") && text.lines().next().unwrap().contains("arc-easy-validation.bin (4 tasks)"), "{text}");
    assert!(text.contains("\n  AUC "), "{text}");
}

#[test]
fn an_instruct_model_answers_inside_its_template_and_auc_turns_render_as_jinja2() {
    let dir = tempdir();
    let template = "Qwen-Qwen2.5-7B-Instruct";
    let model = tiny_model(dir.path(), "chatml", "qwen2", false, Some(template));
    let file = repo("datasets/arc-easy-validation.bin");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let report = schemes(&["-m", path_str(&model), &file, "--limit", "4", "--chat-template", "auto", "--logs", path_str(&logs)]);
    let log = logs.join("chatml.schemes.jsonl");
    check_run(&log, &report, &["strict"]);
    // Every turn's prompt is the template's rendering of the turns so far.
    let mut requests = Vec::new();
    let mut prompts = Vec::new();
    for record in &log_lines(&log)[1..] {
        for mode in record["modes"].as_array().unwrap() {
            let mut messages: Vec<Value> = Vec::new();
            for turn in mode["turns"].as_array().unwrap() {
                messages.push(json!({"role": "user", "content": turn["user"]}));
                requests.push(json!({
                    "template": llama_cpp_template(template), "messages": messages.clone(), "add_generation_prompt": true,
                    "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                }));
                prompts.push(turn["prompt"].clone());
                messages.push(json!({"role": "assistant", "content": turn["response"]}));
            }
        }
    }
    assert!(prompts.len() > 4 * 8, "AUC's later turns are among them");
    assert_eq!(jinja2(&requests), prompts);

    // With reasoning: free text first (a random model rambles to --max-tokens),
    // then the answer line asked for under the grammar.
    let logs = dir.path().join("reasoning");
    std::fs::create_dir(&logs).unwrap();
    let report = schemes(&[
        "-m",
        path_str(&model),
        &file,
        "--limit",
        "2",
        "--chat-template",
        "auto",
        "--logs",
        path_str(&logs),
        "--reasoning",
        "--max-tokens",
        "6",
        "--modes",
        "NR,Elim,PPA",
    ]);
    check_run(&logs.join("chatml.schemes.jsonl"), &report, &["strict", "loose", "forced"]);
    let prompt = log_lines(&logs.join("chatml.schemes.jsonl"))[1]["modes"][0]["turns"][0]["prompt"].as_str().unwrap().to_owned();
    assert!(prompt.contains("The last line of your response should be of the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of A,B,C,D. Think step by step before answering."), "{prompt}");
}

#[test]
fn bad_flags_and_files_are_refused_with_what_is_allowed() {
    let dir = tempdir();
    let out = run(&["schemes", &repo("datasets/arc-easy-validation.bin"), "--modes", "NR,XYZ"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--modes: unknown response mode \"XYZ\"; the modes are NR, NR-Var, NM, Elim, Elim-NM, CBM, PPA, AUC"),
        "{}",
        stderr(&out)
    );
    let out = run(&["schemes", &repo("datasets/arc-easy-validation.bin"), "--max-tokens", "9"]);
    assert_eq!(out.status.code(), Some(2), "--max-tokens needs --reasoning");
    // BoolQ's passage is in neither scaffold.
    let out = run(&["schemes", &repo("datasets/boolq-validation.bin"), "--limit", "1", "-t", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("task 0 is in neither the letter scaffold"), "{}", stderr(&out));
    // A log that is not one.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"task\": 0}\n").unwrap();
    let out = run(&["schemes", "--report", path_str(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad.jsonl: line 1: not the header of a log of `mcscore schemes`"), "{}", stderr(&out));
    // --limit counts per group; a schemes run cannot, and says what can.
    let out = run(&["schemes", "mmlu-validation", "--limit", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("has 57 groups") && stderr(&out).contains("--limit-total 3 runs the file's first 3"), "{}", stderr(&out));
}
