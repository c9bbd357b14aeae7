//! Ctrl-C keeps the log, marked incomplete, and exits 130; --resume finishes
//! the run with the same numbers as an uninterrupted one; a log from other
//! inputs is refused.

mod common;

use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

const SUBSET: &str = "40";

fn score_args<'a>(model: &'a str, file: &'a str, log: &'a str) -> Vec<&'a str> {
    // Small fills (-b 64) make many of them, so the interrupt lands mid-run.
    vec!["score", "-m", model, "-bf", file, "--multiple-choice-tasks", SUBSET, "-b", "64", "-t", "2", "--log-samples", log, "--json"]
}

#[test]
fn interrupted_run_resumes_to_the_same_numbers() {
    let (model, file) = (model(), reference("mc_text5.bin"));
    let dir = tempdir();
    let full_log = dir.path().join("full.jsonl");
    let full = run(&score_args(&model, &file, path_str(&full_log)));
    assert!(full.status.success(), "{}", stderr(&full));

    let log = dir.path().join("part.jsonl");
    let mut child =
        mcscore().args(score_args(&model, &file, path_str(&log))).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while log_tasks_or_empty(&log) < 1 {
        assert!(started.elapsed() < Duration::from_secs(120), "no task was logged");
        assert!(child.try_wait().unwrap().is_none(), "finished before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));
    let footer = log_footer(&log);
    assert_eq!(footer["complete"], false);
    let partial = log_tasks(&log).len();
    assert!(partial < 40, "interrupted after {partial} tasks");

    // Without --resume the log is not touched; with it the run completes.
    assert_eq!(run(&score_args(&model, &file, path_str(&log))).status.code(), Some(1));
    let mut args = score_args(&model, &file, path_str(&log));
    args.push("--resume");
    let resumed = run(&args);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(log_footer(&log)["complete"], true);
    assert_eq!(log_tasks(&log), log_tasks(&full_log), "per-task results");
    let metrics = |out: &std::process::Output| serde_json::from_str::<serde_json::Value>(&stdout(out)).unwrap()["metrics"].clone();
    assert_eq!(metrics(&resumed), metrics(&full));
    let resumed_json: serde_json::Value = serde_json::from_str(&stdout(&resumed)).unwrap();
    assert!(resumed_json["resumed_tasks"].as_u64().unwrap() > 0);

    // A log from another file is refused.
    let other = reference("edge/mc_small8.bin");
    let mut args = score_args(&model, &other, path_str(&log));
    args.push("--resume");
    let refused = run(&args);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("cannot resume"), "{}", stderr(&refused));
}

fn log_tasks_or_empty(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().filter(|l| l.contains("\"type\":\"task\"")).count())
}

#[test]
fn a_resume_inside_a_preamble_gives_the_uninterrupted_runs_numbers() {
    // The first tasks of the 5-shot MMLU file share their subject's preamble,
    // which fills take from the cache. Under the batch rule a cached cell
    // holds what any batch computes, so a resume decodes nothing again.
    // (Before the rule, resuming here without decoding the earlier fills
    // again moved a score by 0.055 nats.)
    let (model, file) = (model(), repo("datasets/mmlu-validation-5shot.bin"));
    let dir = tempdir();
    let log = dir.path().join("run.jsonl");
    let args = |resume: bool| {
        let mut args =
            vec!["score", "-m", &model, &file, "--shard", "0/150", "-b", "512", "-t", "2", "--log-samples", path_str(&log), "--json"];
        if resume {
            args.push("--resume");
        }
        args
    };
    let full = run(&args(false));
    assert!(full.status.success(), "{}", stderr(&full));
    let full_json: serde_json::Value = serde_json::from_str(&stdout(&full)).unwrap();
    let complete = std::fs::read_to_string(&log).unwrap();
    // Keep the header and the first 3 tasks, as after a kill -9: inside the
    // first fill, which the resumed run cannot repeat.
    let kept: String = complete.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept).unwrap();
    let resumed = run(&args(true));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let json: serde_json::Value = serde_json::from_str(&stdout(&resumed)).unwrap();
    assert_eq!(json["resumed_tasks"], 3, "{json}");
    assert!(json["tokens_evaluated"].as_u64() < full_json["tokens_evaluated"].as_u64(), "the logged tasks are not scored again: {json}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), complete, "the resumed log is the uninterrupted run's, byte for byte");
}

#[test]
fn ctrl_c_in_the_unconditional_pass_stops_it() {
    use std::io::BufRead;
    // ARC-Easy's options are long enough that small fills (-b 64) spread
    // the pass over seconds (about 3 for 30 tasks here).
    let (model, file) = (model(), repo("datasets/arc-easy-validation.bin"));
    let dir = tempdir();
    let log = dir.path().join("pmi.jsonl");
    let args = |resume: bool| {
        let mut args = vec![
            "score",
            "-m",
            &model,
            &file,
            "--limit",
            "30",
            "-b",
            "64",
            "-t",
            "2",
            "--pmi",
            "--progress",
            "lines",
            "--log-samples",
            path_str(&log),
        ];
        if resume {
            args.push("--resume");
        }
        args
    };
    let mut child = mcscore().args(args(false)).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // stderr is not a terminal: a progress line at each tenth of the pass.
    let mut errors = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("mcscore: --pmi: options after") {
        line.clear();
        assert!(errors.read_line(&mut line).unwrap() > 0, "the unconditional pass showed no progress");
    }
    interrupt(&child);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut errors, &mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{rest}");
    assert!(rest.contains("--resume"), "{rest}");
    assert!(!rest.contains("30/30 tasks"), "the pass ran to its end: {line}{rest}");
    assert_eq!(log_footer(&log)["complete"], false);
    assert!(log_tasks(&log).is_empty());

    let resumed = run(&args(true));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let tasks = log_tasks(&log);
    assert_eq!(tasks.len(), 30);
    assert!(tasks.iter().all(|t| t["pred"]["acc_pmi"].is_u64()), "{}", tasks[0]);
}
