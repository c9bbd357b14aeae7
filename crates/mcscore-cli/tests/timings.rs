//! `score --timings`: where a run's time went, phase by phase, on stderr and
//! in --json; the phases add up to the run's wall time.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

#[test]
fn timings_account_for_the_run() {
    let model = model();
    let file = reference("mc_letter4.bin");
    let out = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "30", "-t", "2", "--timings", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for phase in ["load model", "tokenise", "create context", "decode", "logits, log-softmax", "total", "tokens/s of decode time"] {
        assert!(err.contains(phase), "{phase} missing: {err}");
    }
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let t = &json["timings"];
    let s = &t["scoring"];
    let parts: f64 =
        ["read", "load", "tokenise", "plan", "hash", "log", "unconditional"].iter().map(|k| t[k].as_f64().unwrap()).sum::<f64>()
            + ["context", "batching", "decode", "projection", "logits", "consumer"].iter().map(|k| s[k].as_f64().unwrap()).sum::<f64>();
    let total = t["total"].as_f64().unwrap();
    assert!(parts <= total * 1.001 && parts >= total * 0.9, "phases {parts} s of {total} s");
    assert!(s["decode"].as_f64().unwrap() > 0.0 && s["decodes"].as_u64().unwrap() >= 1);
    assert_eq!(s["fills"].as_u64(), json["fills"].as_u64(), "every planned fill made here");
    assert!(json.get("decodes").is_none(), "the old name of the fill count went with schema 3");
    // Without --timings, no profile.
    let plain = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "5", "-t", "2", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&plain)).unwrap();
    assert!(json["timings"].is_null() && !stderr(&plain).contains("timings ("));
}

/// One `score --timings --json` run of 20 `mc_text5` tasks with `--mmap
/// MMAP` (`off` as llama.cpp spells it, `--no-mmap`): its "memory" object,
/// its log's task lines and its stderr.
fn score_with_mmap(model: &str, mmap: &str, dir: &Path) -> (Value, Vec<Value>, String) {
    let log = dir.join(format!("{mmap}.jsonl"));
    let file = reference("mc_text5.bin");
    let flag: &[&str] = if mmap == "off" { &["--no-mmap"] } else { &["--mmap", mmap] };
    let args =
        ["score", "-m", model, &file, "--multiple-choice-tasks", "20", "-t", "2", "--timings", "--json", "--log-samples", path_str(&log)];
    let out = run(&[&args[..], flag].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    (json["memory"].clone(), log_tasks(&log), stderr(&out))
}

/// The buffers of a memory report that hold `holds`, by name.
fn buffers(memory: &Value, holds: &str) -> Vec<(String, u64)> {
    let all = memory["buffers"].as_array().unwrap_or_else(|| panic!("{memory}"));
    all.iter().filter(|b| b["use"] == holds).map(|b| (b["name"].as_str().unwrap().to_owned(), b["bytes"].as_u64().unwrap())).collect()
}

/// `--mmap` changes no score, and `--timings` says where memory went: the
/// real model mapped (auto, on) and read into memory (off).
#[test]
fn the_weights_mapped_or_read_give_the_same_scores() {
    let model = model();
    let dir = tempdir();
    let (auto, auto_tasks, text) = score_with_mmap(&model, "auto", dir.path());
    let (on, on_tasks, _) = score_with_mmap(&model, "on", dir.path());
    let (off, off_tasks, _) = score_with_mmap(&model, "off", dir.path());
    assert_eq!(auto_tasks, on_tasks, "releasing the mapped pages changed a score");
    assert_eq!(auto_tasks, off_tasks, "reading the weights into memory changed a score");
    assert_eq!([&auto["mmap"], &on["mmap"], &off["mmap"]], ["auto", "on", "off"]);
    let names = |m: &Value| buffers(m, "weights").into_iter().map(|b| b.0).collect::<Vec<_>>();
    for mapped in [&auto, &on] {
        assert!(names(mapped).contains(&"CPU_Mapped".to_owned()), "{mapped}");
    }
    assert!(!names(&off).contains(&"CPU_Mapped".to_owned()), "{off}");
    // The copies llama.cpp makes (repacked, or AMX's layouts) are the same
    // whichever way the file is read; what it reads in place is the mapped
    // range (on) or as much read into memory (off), within the file.
    let file_bytes = off["model_file"].as_u64().unwrap();
    let copies = |m: &Value| -> u64 { buffers(m, "weights").iter().filter(|b| b.0 != "CPU" && b.0 != "CPU_Mapped").map(|b| b.1).sum() };
    let in_place = |m: &Value, name: &str| -> u64 { buffers(m, "weights").iter().filter(|b| b.0 == name).map(|b| b.1).sum() };
    assert_eq!(copies(&on), copies(&off), "{on} {off}");
    assert!(in_place(&off, "CPU") <= in_place(&on, "CPU_Mapped") && in_place(&on, "CPU_Mapped") <= file_bytes, "{on} {off}");
    assert!(in_place(&off, "CPU") > 0, "{off}");
    assert_eq!(auto["pages_released"], true, "{auto}");
    for holds in ["kv", "compute"] {
        assert!(!buffers(&off, holds).is_empty(), "no {holds} buffer: {off}");
    }
    let sample = &off["largest_sample"];
    assert!(sample["anonymous"].as_u64().unwrap() > sample["file"].as_u64().unwrap(), "{off}");
    assert!(off["peak"].as_u64().unwrap() >= sample["anonymous"].as_u64().unwrap(), "{off}");
    for line in ["memory: peak RSS", "the model file", "pages released", "weights", "KV cache", "compute", "anonymous"] {
        assert!(text.contains(line), "{line} missing: {text}");
    }
}

/// Where llama.cpp repacks the weights (Q4_0 on x86-64), mapping the file
/// keeps its pages resident beside the repacked copy (`--mmap on`); the
/// default releases them, and takes no more than the weights read into memory.
#[test]
fn repacked_weights_take_one_copy_by_default() {
    let dir = tempdir();
    let shape = ["--dim", "1024", "--layers", "4", "--heads", "8", "--kv-heads", "4", "--ff", "4096", "--vocab", "llama-spm"];
    let model = random_model(dir.path(), "q4_0", &[&shape[..], &["--type", "q4_0"]].concat());
    let (auto, auto_tasks, _) = score_with_mmap(path_str(&model), "auto", dir.path());
    let (on, on_tasks, _) = score_with_mmap(path_str(&model), "on", dir.path());
    let (off, off_tasks, _) = score_with_mmap(path_str(&model), "off", dir.path());
    assert_eq!(auto_tasks, on_tasks, "releasing the mapped pages changed a score");
    assert_eq!(auto_tasks, off_tasks, "reading the weights into memory changed a score");
    let repacked: u64 = buffers(&off, "weights").iter().filter(|b| b.0 != "CPU").map(|b| b.1).sum();
    let file_bytes = off["model_file"].as_u64().unwrap();
    if repacked == 0 {
        // No AVX2, AVX-512, AMX or NEON kernels here: nothing is copied, so
        // every mode holds one copy; the test above covers the scores.
        eprintln!("this CPU repacks no Q4_0 weights: skipped ({off})");
        return;
    }
    assert!(repacked > file_bytes / 2, "most of a Q4_0 model is repacked where it is repacked: {off}");
    let peak = |m: &Value| m["peak"].as_u64().unwrap();
    assert!(peak(&auto) + repacked / 2 < peak(&on), "peak RSS {} by default against {} mapped: {auto} {on}", peak(&auto), peak(&on));
    assert!(
        peak(&auto) <= peak(&off) + (4 << 20),
        "peak RSS {} by default against {} read into memory: {auto} {off}",
        peak(&auto),
        peak(&off)
    );
}

/// Where stderr is not a terminal (a Slurm job's output file, this test's
/// pipe), progress comes as plain lines, but only for work of more than a
/// few seconds; `--progress lines` prints one at each tenth of any work
/// (tasks and tokens a second, and the time left once a second of scoring
/// has measured it), ending with the whole; `--progress none` prints none.
#[test]
fn progress_comes_as_lines_in_a_log() {
    let model = model();
    let file = reference("mc_text5.bin");
    // Small fills (about a task each) over ARC-Easy: a few seconds of scoring.
    let arc = repo("datasets/arc-easy-validation.bin");
    let out = run(&["score", "-m", &model, &arc, "--limit", "40", "-t", "2", "-b", "128", "--progress", "lines"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("mcscore: scoring: ")).collect();
    let done: Vec<&str> = lines.iter().map(|l| l["mcscore: scoring: ".len()..].split(' ').next().unwrap()).collect();
    assert_eq!(done, ["4/40", "8/40", "12/40", "16/40", "20/40", "24/40", "28/40", "32/40", "36/40", "40/40"], "{err}");
    assert!(lines[0].contains("tasks (10 %)") && lines[0].contains(" tokens/s"), "{err}");
    // The time left, once a second of scoring has measured the rate (this run scores for seconds).
    assert!(lines.iter().any(|l| l.contains(", eta ")), "{err}");
    assert!(lines[9].contains("(100 %)") && !lines[9].contains("eta"), "{err}");
    // A second's work in a log: no lines.
    let short = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "5", "-t", "2"]);
    assert!(short.status.success() && !stderr(&short).contains("mcscore: scoring:"), "{}", stderr(&short));
    let quiet = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "5", "-t", "2", "--progress", "none"]);
    assert!(!stderr(&quiet).contains("mcscore: scoring:"), "{}", stderr(&quiet));
}
