//! The hostile pass's findings, each attack reproduced first: outputs aimed
//! at devices, FIFOs and the command's own inputs; a second writer through a
//! link; crafted and unfinished logs; flag values that sized allocations; a
//! 100 MB line; and the messages that named the wrong thing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{log_tasks, model, path_str, reference, repo, run, stderr, stdout, tempdir};
use serde_json::Value;

/// A finished log of the first `n` tasks of mc_letter4 (`extra` flags added).
fn scored_log(dir: &Path, name: &str, n: usize, extra: &[&str]) -> PathBuf {
    let log = dir.join(name);
    let tasks = n.to_string();
    let file = reference("mc_letter4.bin");
    let out = run(&[&["score", "-m", &model(), &file, "--multiple-choice-tasks", &tasks, "--log-samples", path_str(&log)], extra].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    log
}

/// The log's lines as JSON, changed by `edit`, written to `path`.
fn edited(log: &Path, path: &Path, edit: impl Fn(&mut Vec<Value>)) -> PathBuf {
    let mut lines: Vec<Value> = std::fs::read_to_string(log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    edit(&mut lines);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
    path.to_owned()
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn crafted_task_lines_are_refused_by_name_and_never_panic() {
    let dir = tempdir();
    let log = scored_log(dir.path(), "run.jsonl", 6, &[]);
    let shard = scored_log(dir.path(), "shard.jsonl", 6, &["--shard", "0/1"]);
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 15] = [
        ("gold beyond the options", |t| t["gold"] = 9.into(), "gold is option 9, but the labels' first 1 is option"),
        ("no options", |t| t["options"] = Value::Array(vec![]), "0 option(s)"),
        ("one option", |t| t["options"] = Value::Array(vec![t["options"][0].clone()]), "1 option(s)"),
        ("acc_pmi predicted, not judged", |t| t["pred"]["acc_pmi"] = 0.into(), "acc_pmi is logged for some"),
        (
            "right where the scores say wrong",
            |t| t["correct"]["acc"] = (!t["correct"]["acc"].as_bool().unwrap()).into(),
            "edited or damaged",
        ),
        ("a prediction out of range", |t| t["pred"]["acc_norm"] = 7.into(), "edited or damaged"),
        ("labels that disagree with gold", |t| t["labels"] = serde_json::json!([true, false, false, false]), "gold is"),
        (
            "two gold labels",
            |t| {
                t["labels"] = serde_json::json!([true, true, false, false]);
                t["gold"] = 0.into();
            },
            "not exactly one 1",
        ),
        ("a 0-token option", |t| t["options"][1]["tokens"] = 0.into(), "option 1 has 0 scored tokens"),
        ("fewer labels than options", |t| t["labels"] = serde_json::json!([true]), "1 labels for 4 options"),
        ("a log-probability above 0", |t| t["options"][2]["logprob_sum"] = 5.into(), "option 2 has a log-probability of 5, above 0"),
        ("a log-probability no f32 logits give", |t| t["options"][1]["logprob_sum"] = (-1e300).into(), "which no row of f32 logits gives"),
        (
            "an unconditional one",
            |t| {
                for option in t["options"].as_array_mut().unwrap() {
                    option["uncond_logprob_sum"] = (-1e300).into();
                }
            },
            "option 0 has a log-probability of -1e300",
        ),
        (
            "more options than a task file holds",
            |t| {
                let option = t["options"][0].clone();
                t["options"] = Value::Array(vec![option; 101]);
                t["labels"] = Value::Array((0..101).map(|i| (i == 0).into()).collect());
            },
            "101 options; a task file holds at most 100",
        ),
        (
            "an option of no characters",
            |t| {
                t["options"][0]["chars"] = 0.into();
                t["options"][0]["bytes"] = 0.into();
            },
            "which no text has",
        ),
    ];
    for (what, edit, expected) in cases {
        for (source, command) in [(&log, "report"), (&shard, "merge")] {
            let bad = edited(source, &dir.path().join(format!("{command}.jsonl")), |lines| edit(&mut lines[2]));
            let out = run(&[command, path_str(&bad)]);
            assert_eq!(out.status.code(), Some(1), "{what} ({command}): {}", stderr(&out));
            assert!(stderr(&out).contains(expected) && stderr(&out).contains("line 3"), "{what} ({command}): {}", stderr(&out));
        }
    }
    // A Winogrande shard with a one-option task (it panicked in --format llama).
    let wino = edited(&shard, &dir.path().join("wino.jsonl"), |lines| {
        lines[0]["mode"] = "winogrande".into();
    });
    let out = run(&["merge", path_str(&wino), "--format", "llama"]);
    assert!(stderr(&out).contains("a Winogrande task has exactly 2"), "{}", stderr(&out));
    // A header whose shard is not below its count.
    let beyond = edited(&shard, &dir.path().join("beyond.jsonl"), |lines| lines[0]["shard"]["index"] = 5.into());
    let out = run(&["merge", path_str(&beyond)]);
    assert!(stderr(&out).contains("the header's shard is 5 of 1"), "{}", stderr(&out));
    // A shard whose run's task list is another.
    let other = edited(&shard, &dir.path().join("other.jsonl"), |lines| lines[0]["shard"]["run_sha256"] = "00".into());
    let out = run(&["merge", path_str(&other)]);
    assert!(stderr(&out).contains("they hold 6 tasks, as many as the run, but not its task list"), "{}", stderr(&out));
    // A run of more tasks than its file has.
    let beyond = edited(&shard, &dir.path().join("beyond.jsonl"), |lines| lines[0]["shard"]["file_tasks"] = 5.into());
    let out = run(&["merge", path_str(&beyond)]);
    assert!(stderr(&out).contains("of a run of 6 tasks of the file's 5"), "{}", stderr(&out));
    // Bytes after the footer, even without a newline (no crash writes there).
    let mut after = std::fs::read(&log).unwrap();
    after.extend_from_slice(b"garbage");
    let path = dir.path().join("after.jsonl");
    std::fs::write(&path, after).unwrap();
    let out = run(&["report", path_str(&path)]);
    assert!(stderr(&out).contains("line 9: a line after the footer"), "{}", stderr(&out));
    // A header of version 0, or of a run of the first 0 tasks.
    for (field, value, expected) in [("version", 0, "versions start at 1"), ("limit", 0, "the header's limit is 0")] {
        let bad = edited(&log, &dir.path().join("header.jsonl"), |lines| lines[0][field] = value.into());
        let out = run(&["report", path_str(&bad)]);
        assert_eq!(out.status.code(), Some(1), "{field}: {}", stderr(&out));
        assert!(stderr(&out).contains(expected) && stderr(&out).contains("line 1"), "{field}: {}", stderr(&out));
    }
    // A count of 2^62 shards: refused without building a list that long.
    let huge = edited(&shard, &dir.path().join("huge.jsonl"), |lines| {
        lines[0]["shard"]["count"] = (1u64 << 62).into();
        lines[0]["shard"]["run_tasks"] = (1u64 << 62).into();
        lines[0]["shard"]["file_tasks"] = (1u64 << 62).into();
    });
    let out = run(&["merge", path_str(&huge)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("4611686018427387903 of the run's 4611686018427387904 shards missing: 1, 2, 3"), "{}", stderr(&out));
}

/// Log-probabilities near the lowest a row of f32 logits gives (−6.8e38
/// nats a token) are absurd but possible: a comparison stays finite, and its
/// text gives them in scientific notation rather than in 39 digits.
#[test]
fn extreme_log_probabilities_compare_to_finite_intervals() {
    let dir = tempdir();
    let log = scored_log(dir.path(), "run.jsonl", 6, &[]);
    let lines: Vec<Value> = std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let lowest = lines
        .iter()
        .filter(|l| l["type"] == "task")
        .flat_map(|t| t["options"].as_array().unwrap().iter().map(|o| o["logprob_sum"].as_f64().unwrap()))
        .fold(0.0, f64::min);
    // The lowest becomes −1.2e39 (one token of one byte may reach −1.36e39); scaling
    // every option of a task by one positive factor keeps each normalisation's pick.
    let factor = -1.2e39 / lowest;
    let scaled = edited(&log, &dir.path().join("scaled.jsonl"), |lines| {
        for line in lines.iter_mut().filter(|l| l["type"] == "task") {
            for option in line["options"].as_array_mut().unwrap() {
                option["logprob_sum"] = (option["logprob_sum"].as_f64().unwrap() * factor).into();
            }
        }
    });
    let out = run(&["compare", path_str(&log), path_str(&scaled), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for measure in ["kl_mean", "gold_logprob_change"] {
        let interval = &json["others"][0][measure];
        for bound in ["estimate", "low", "high"] {
            assert!(interval[bound].as_f64().is_some_and(f64::is_finite), "{measure} {bound}: {interval}");
        }
    }
    // Near f32's 3.4e38 (values past it: metrics' `stats::tests`).
    assert!(json["others"][0]["gold_logprob_change"]["low"].as_f64().unwrap() < -1e38, "{json}");
    let text = run(&["compare", path_str(&log), path_str(&scaled)]);
    let text = stdout(&text);
    assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
    assert!(text.contains("e38") && text.lines().all(|l| l.len() < 300), "in scientific notation, not 39 digits: {text}");
}

/// A groups file gives one group per task of the file: exactly as many lines
/// where a log's header tells the file's task count, and a Windows editor's
/// byte-order mark is not part of the first group's name.
#[test]
fn groups_files_fit_the_task_file() {
    let dir = tempdir();
    let log = scored_log(dir.path(), "run.jsonl", 6, &[]);
    let groups = dir.path().join("groups.txt");
    let lines: String = (0..200).map(|i| format!("g{}\n", i / 50)).collect();
    std::fs::write(&groups, format!("\u{feff}{lines}")).unwrap();
    let out = run(&["report", path_str(&log), "--groups", path_str(&groups), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("\"g0\"") && !text.contains('\u{feff}') && !text.contains("\\ufeff"), "{text}");
    // A header of the whole file (no subset) gives the file's task count: 6 here, not 200.
    let whole = |path: &Path, past: usize| {
        edited(&log, path, |lines| {
            lines[0]["selection"] = Value::Null;
            for (i, line) in lines.iter_mut().filter(|l| l["type"] == "task").enumerate() {
                line["task"] = (i + past).into();
            }
        })
    };
    let out = run(&["report", path_str(&whole(&dir.path().join("whole.jsonl"), 0)), "--groups", path_str(&groups)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("200 lines, but the task file has 6 tasks"), "{}", stderr(&out));
    // And a task past it is refused as the log is read.
    let out = run(&["report", path_str(&whole(&dir.path().join("past.jsonl"), 1))]);
    assert!(stderr(&out).contains("line 7: task 6: its index is past the task file's 6 tasks"), "{}", stderr(&out));
}

/// A saved sweep is reported as it was saved, so one whose figures no sweep
/// gives is refused by name (it printed accuracies of 150 %, picks adding up
/// to 200 %); so are the same file twice, and what is not a regular file
/// (`/dev/zero` took 10 GB).
#[test]
fn edited_saved_sweeps_are_refused_by_name() {
    let dir = tempdir();
    let recorded = repo("docs/results/sweep-mmlu-validation-200.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&recorded).unwrap()).unwrap();
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 7] = [
        ("an accuracy of 150 %", |s| s["models"][0]["formats"][1]["accuracy"] = 150.0.into(), "accuracy is 150, not in 0 to 100"),
        (
            "a rotation's of -5 %",
            |s| s["models"][0]["formats"][0]["accuracy_by_rotation"][2] = (-5.0).into(),
            "a rotation's accuracy is -5",
        ),
        ("twice the picks", |s| s["models"][0]["formats"][0]["picks"][3] = 1421.into(), "1600 picks over 4 positions"),
        ("0 tasks", |s| s["tasks"] = 0.into(), "0 tasks"),
        (
            "an interval without its accuracy",
            |s| s["models"][0]["formats"][0]["accuracy_interval"] = serde_json::json!([90.0, 95.0]),
            "accuracy_interval [90, 95] does not hold its accuracy",
        ),
        ("a format twice", |s| s["formats"][1] = s["formats"][0].clone(), "is listed twice"),
        (
            "a spread the formats do not give",
            |s| s["models"][0]["accuracy_across_formats"]["max"] = 99.0.into(),
            "does not follow from the formats' accuracies",
        ),
    ];
    for (what, edit, expected) in cases {
        let mut sweep = saved.clone();
        edit(&mut sweep);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, sweep.to_string()).unwrap();
        let out = run(&["sweep", "--compare", path_str(&path)]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stdout(&out));
        assert!(stderr(&out).contains("edited.json") && stderr(&out).contains(expected), "{what}: {}", stderr(&out));
    }
    // A Wilson bound an ulp above 100 % (100.00000000000003, as of n of n) is a sweep's.
    let mut sweep = saved.clone();
    sweep["models"][0]["formats"][0]["accuracy_interval"] = serde_json::json!([20.0, 100.00000000000003]);
    let path = dir.path().join("wilson.json");
    std::fs::write(&path, sweep.to_string()).unwrap();
    let out = run(&["sweep", "--compare", path_str(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["sweep", "--compare", &recorded, &recorded]);
    assert!(stderr(&out).contains("give each saved sweep once"), "{}", stderr(&out));
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    for path in ["/dev/zero", path_str(&fifo)] {
        let out = run(&["sweep", "--compare", path]);
        assert!(stderr(&out).contains("not a regular file"), "{path}: {}", stderr(&out));
        let out = run(&["validate", path]);
        assert!(stderr(&out).contains("not a regular file"), "validate {path}: {}", stderr(&out));
    }
}

#[test]
fn results_come_only_from_runs_that_ended_normally() {
    let dir = tempdir();
    let log = scored_log(dir.path(), "run.jsonl", 4, &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    let footer_start = text.trim_end().rfind('\n').unwrap() + 1;
    let cases = [
        ("no footer", text[..footer_start].to_owned(), "all 4 tasks are logged, but the log has no footer"),
        ("a torn footer", text[..text.len() - 5].to_owned(), "all 4 tasks are logged, but the log has no footer"),
        ("interrupted", text.replace("\"complete\":true", "\"complete\":false"), "marked incomplete"),
        ("cut short", text.lines().take(3).map(|l| format!("{l}\n")).collect(), "2 of 4 tasks logged and no footer"),
    ];
    for (what, body, expected) in cases {
        let path = dir.path().join("unfinished.jsonl");
        std::fs::write(&path, body).unwrap();
        let out = run(&["report", path_str(&path)]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stdout(&out));
        assert!(stderr(&out).contains(expected), "{what}: {}", stderr(&out));
    }
    // --tau changes what NM's behaviour reports, as it changes NM's score.
    let out = run(&["report", path_str(&log), "--tau", "0.99", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let model = &report["models"][0];
    assert_eq!(model["behaviour"]["abstention_rate"], 1.0, "{model}");
    assert_eq!(model["schemes"]["NM"]["mean"], 0.0, "abstaining on every task scores 0");
    // A terminal escape in a log's model path prints as text.
    let escaped = edited(&log, &dir.path().join("escape.jsonl"), |lines| lines[0]["model"] = "m\u{1b}[2J.gguf".into());
    let out = run(&["report", path_str(&escaped)]);
    assert!(stdout(&out).contains("\\u{1b}[2J") && !stdout(&out).contains('\u{1b}'), "{}", stdout(&out));
}

#[test]
fn outputs_never_replace_devices_fifos_or_inputs() {
    let dir = tempdir();
    let d = dir.path();
    let shard = scored_log(d, "shard.jsonl", 4, &["--shard", "0/1"]);
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let device = d.join("null");
    let have_device = Command::new("mknod").arg(&device).args(["c", "1", "3"]).status().unwrap().success();
    let study = d.join("study.json");
    std::fs::write(&study, r#"{"models": ["m.gguf"], "files": ["f.bin"], "shards": 2, "out": "o"}"#).unwrap();
    let task_file = d.join("x.bin");
    std::fs::copy(reference("mc_letter4.bin"), &task_file).unwrap();
    let existing = d.join("existing.json");
    std::fs::write(&existing, "keep me").unwrap();
    let (m, shard, fifo_path, study, task_file, existing) =
        (model(), path_str(&shard).to_owned(), path_str(&fifo).to_owned(), path_str(&study), path_str(&task_file), path_str(&existing));
    let resume_into =
        |log: &str| -> Vec<String> { ["score", "-m", &m, task_file, "--log-samples", log, "--resume"].map(str::to_owned).to_vec() };
    let words = |args: &[&str]| -> Vec<String> { args.iter().map(|a| a.to_string()).collect() };
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (words(&["merge", &shard, "-o", &fifo_path, "--force"]), "names a FIFO"),
        (words(&["merge", &shard, "-o", &shard, "--force"]), "one of the command's inputs"),
        (words(&["merge", &shard, "-o", existing]), "pass --force"),
        (words(&["plan", study, "--slurm", "-o", study, "--force"]), "inputs"),
        (words(&["plan", study, "--slurm", "-o", &fifo_path]), "names a FIFO"),
        (words(&["sweep", task_file, "--log-samples", task_file, "--force"]), "inputs"),
        (words(&["sweep", task_file, "--save-json", existing]), "pass --force"),
        (words(&["sweep", task_file, "--save-json", "/dev/stdout", "--force"]), "not a regular file"),
        (resume_into(&fifo_path), "names a FIFO"),
        (resume_into(task_file), "inputs"),
    ];
    if have_device {
        cases.push((words(&["merge", &shard, "-o", path_str(&device), "--force"]), "a character device"));
    }
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let message = stderr(&out);
        assert!(message.contains(expected) || (expected == "not a regular file" && message.contains("names a")), "{args:?}: {message}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is still a FIFO");
    if have_device {
        assert!(std::fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
    }
    assert_eq!(std::fs::read_to_string(existing).unwrap(), "keep me");
    assert_eq!(std::fs::read(task_file).unwrap(), std::fs::read(reference("mc_letter4.bin")).unwrap());
    // With --force a regular output is replaced, atomically.
    let out = run(&["merge", &shard, "-o", existing, "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(log_tasks(Path::new(existing)).len(), 4);
    // Inputs that are not regular files are refused, not read forever.
    let out = run(&["score", "-m", &model(), "-bf", "/dev/zero"]);
    assert!(stderr(&out).contains("/dev/zero: a character device, not a regular file"), "{}", stderr(&out));
    let out = run(&["report", &fifo_path]);
    assert!(stderr(&out).contains("a FIFO, not a regular file"), "{}", stderr(&out));
}

#[test]
fn files_written_in_an_output_folder_never_replace_an_input() {
    let dir = tempdir();
    let d = dir.path();
    // A log named like the plot report would write: the plot must not replace it.
    let log = scored_log(d, "reliability-1-gemma-3-270m-q4_k_m.svg", 4, &[]);
    let before = std::fs::read(&log).unwrap();
    let out = run(&["report", path_str(&log), "--plots", path_str(d)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("an input or another output"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&log).unwrap(), before);
    // A task file named like one --write-tasks writes.
    let task_file = d.join("digit.parens.comma.r0.bin");
    std::fs::copy(reference("mc_letter4.bin"), &task_file).unwrap();
    let out = run(&["sweep", path_str(&task_file), "--tasks", "3", "--formats", "digit.parens.comma", "--write-tasks", path_str(d)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("one of the inputs"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&task_file).unwrap(), std::fs::read(reference("mc_letter4.bin")).unwrap());
    // plan --merge never writes a merged log over the study or a task file.
    let study = d.join("study.json");
    let out_dir = d.join("o");
    let model_stem = "gemma-3-270m-q4_k_m";
    // The merged log of model M, settings `default` on task file F is
    // OUT/stem(F)/M.default.jsonl: here F is the study file itself.
    let run_dir = format!("{model_stem}.default");
    std::fs::create_dir_all(out_dir.join(&run_dir)).unwrap();
    let victim = out_dir.join(&run_dir).join(format!("{model_stem}.default.jsonl"));
    let study_text = serde_json::json!({"models": [model()], "files": [path_str(&victim)], "shards": 1, "out": path_str(&out_dir)});
    std::fs::write(&victim, study_text.to_string()).unwrap();
    std::fs::copy(&victim, &study).unwrap();
    let shard = d.join("shard.jsonl");
    let args = ["score", "-m", &model(), &reference("mc_letter4.bin"), "--multiple-choice-tasks", "2", "--shard", "0/1", "--log-samples"];
    assert!(run(&[&args[..], &[path_str(&shard)]].concat()).status.success());
    let shard_dir = out_dir.join("shards").join(&run_dir);
    std::fs::create_dir_all(&shard_dir).unwrap();
    std::fs::copy(&shard, shard_dir.join(format!("{model_stem}.default.shard-0.jsonl"))).unwrap();
    let out = run(&["plan", path_str(&victim), "--merge"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("would replace"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), study_text.to_string());
    // Nor over another run's task file: run 0 (on `task.bin`) merges to
    // OUT/task/M.default.jsonl, where run 1's task file is.
    let other_dir = out_dir.join("task");
    std::fs::create_dir_all(&other_dir).unwrap();
    let second_file = other_dir.join(format!("{model_stem}.default.jsonl"));
    std::fs::copy(reference("mc_letter4.bin"), &second_file).unwrap();
    let two = d.join("two.json");
    let first_file = d.join("task.bin");
    std::fs::copy(reference("mc_letter4.bin"), &first_file).unwrap();
    let two_text = serde_json::json!({"models": [model()], "files": [path_str(&first_file), path_str(&second_file)], "shards": 1, "out": path_str(&out_dir)});
    std::fs::write(&two, two_text.to_string()).unwrap();
    std::fs::create_dir_all(out_dir.join("shards/task")).unwrap();
    std::fs::copy(&shard, out_dir.join(format!("shards/task/{model_stem}.default.shard-0.jsonl"))).unwrap();
    let out = run(&["plan", path_str(&two), "--merge"]);
    assert!(stderr(&out).contains("would replace"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&second_file).unwrap(), std::fs::read(reference("mc_letter4.bin")).unwrap());
}

#[test]
fn a_resume_refuses_lines_of_other_tasks() {
    let dir = tempdir();
    let log = scored_log(dir.path(), "run.jsonl", 4, &[]);
    let file = reference("mc_letter4.bin");
    for (what, task) in [("another task", 0u64), ("an impossible index", 10_000_000_000_000_000_000)] {
        let bad = edited(&log, &dir.path().join("bad.jsonl"), |lines| lines[2]["task"] = task.into());
        let out = run(&["score", "-m", &model(), &file, "--multiple-choice-tasks", "4", "--log-samples", path_str(&bad), "--resume"]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stdout(&out));
        assert!(stderr(&out).contains("cannot resume: task line 2 is task"), "{what}: {}", stderr(&out));
    }
}

#[test]
fn a_second_run_on_a_log_through_a_link_is_refused() {
    let dir = tempdir();
    let log = dir.path().join("run.jsonl");
    let file = reference("mc_letter4.bin");
    let mut first = common::mcscore()
        .args(["score", "-m", &model(), &file, "-t", "1", "--log-samples", path_str(&log)])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the first run to write its header.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&log).map_or(true, |t| !t.contains("\"type\":\"header\"")) {
        assert!(std::time::Instant::now() < deadline, "the first run never wrote its log");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let soft = dir.path().join("soft.jsonl");
    std::os::unix::fs::symlink(&log, &soft).unwrap();
    let hard = dir.path().join("hard.jsonl");
    std::fs::hard_link(&log, &hard).unwrap();
    for link in [&soft, &hard] {
        let out = run(&["score", "-m", &model(), &file, "-t", "1", "--log-samples", path_str(link), "--resume"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("another process is writing this file"), "{}", stderr(&out));
    }
    let status = first.wait().unwrap();
    assert!(status.success());
    assert_eq!(log_tasks(&log).len(), 200, "the first run's log is whole");
    assert_eq!(common::log_footer(&log)["complete"], true);
    assert!(!dir.path().join("run.jsonl.lock").exists(), "no lock file is left beside the log");
}

#[test]
fn values_that_sized_allocations_are_bounded() {
    let file = reference("mc_letter4.bin");
    let m = model();
    // Above 2^24, allocations that break; -b below a micro-batch (60) means nothing.
    for (flag, values) in [("-b", &["2147483648", "4294967295", "0", "59"][..]), ("-ub", &["2147483648", "4294967295", "0"][..])] {
        for value in values {
            let out = run(&["score", "-m", &m, &file, flag, value]);
            assert_eq!(out.status.code(), Some(2), "{flag} {value}: {}", stderr(&out));
        }
    }
    // The largest value scores, with a batch no wider than the context.
    let out = run(&["score", "-m", &m, &file, "--multiple-choice-tasks", "4", "-b", "16777216", "-ub", "16777216", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for resamples in ["4294967295", "1"] {
        let out = run(&["report", "x.jsonl", "--resamples", resamples]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("expected a whole number from 100 to 100000"), "{}", stderr(&out));
    }
    // A 100 MB HellaSwag context is refused before the tokenizer sees it.
    let dir = tempdir();
    let huge = dir.path().join("hellaswag.txt");
    let mut text = "x ".repeat(50 << 20);
    text.push_str("\n0\na.\nb.\nc.\nd.\n");
    std::fs::write(&huge, text).unwrap();
    let out = run(&["score", "-m", &m, "-f", path_str(&huge), "--hellaswag"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("task 0: a text of 104857603 bytes; mcscore tokenises at most 4194304 bytes"), "{}", stderr(&out));
}

#[test]
fn messages_name_the_right_thing() {
    let dir = tempdir();
    let d = dir.path();
    // The model's path once, not twice.
    let missing = d.join("missing.gguf");
    let out = run(&["score", "-m", path_str(&missing), &reference("mc_letter4.bin")]);
    assert_eq!(stderr(&out).matches("missing.gguf").count(), 1, "{}", stderr(&out));
    // A range in words, not Rust's `1..=N` or its parser's "invalid digit".
    let out = run(&["score", "-m", &model(), &reference("mc_letter4.bin"), "-t", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'--threads <N>': expected a whole number of at least 1, got \"0\""), "{}", stderr(&out));
    let (m, f) = (model(), reference("mc_letter4.bin"));
    for args in [
        &["score", "-m", &m, &f, "--n-gpu-layers=-1"][..],
        &["score", "-m", &m, &f, "--multiple-choice-tasks", "x"],
        &["score", "-m", &m, &f, "--limit", "99999999999999999999"],
        &["serve", "-m", &m, "--port", "65536"],
        &["report", "x.jsonl", "--seed=-1"],
        &["inspect", &f, "--task", "1e3"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("expected a whole number"), "{args:?}: {}", stderr(&out));
    }
    // --lenient cannot score bytes that are not UTF-8, and says so.
    let mut bytes = std::fs::read(reference("mc_letter4.bin")).unwrap();
    let at = bytes.windows(8).position(|w| w == b"Question").unwrap();
    bytes[at] = 0xff;
    let bad = d.join("bad.bin");
    std::fs::write(&bad, bytes).unwrap();
    let out = run(&["score", "-m", &model(), path_str(&bad), "--lenient"]);
    assert!(
        stderr(&out).contains("cannot be scored even with --lenient") && !stderr(&out).contains("--lenient scores"),
        "{}",
        stderr(&out)
    );
    // A bad --formats is a usage error; --out naming a file says so.
    let out = run(&["sweep", &reference("mc_letter4.bin"), "--formats", "upper.nope.newline"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let file = d.join("file");
    std::fs::write(&file, "x").unwrap();
    let out = run(&["build", "arc-easy-validation", "--out", path_str(&file), "--sources", &common::sources()]);
    assert!(stderr(&out).contains("--out names a file; give a folder"), "{}", stderr(&out));
    // verify refuses a manifest whose source path leaves the sources folder.
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(common::repo("manifest.json")).unwrap()).unwrap();
    let mut entry = manifest["datasets"].as_array().unwrap().iter().find(|e| e["name"] == "arc-easy-validation").unwrap().clone();
    entry["source"]["files"][0]["path"] = "../../../../etc/shadow".into();
    entry["file"] = common::repo("datasets/arc-easy-validation.bin").into();
    let edited = d.join("manifest.json");
    std::fs::write(&edited, serde_json::json!({"datasets": [entry]}).to_string()).unwrap();
    let out = run(&["verify", "--manifest", path_str(&edited), "--sources", &common::sources()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("not a relative path inside a sources folder"), "{}", stdout(&out));
}
