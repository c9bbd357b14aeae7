//! Hostile use: flag values that used to crash or wrap, outputs that were
//! checked only after the work, standard output that cannot be written, two
//! writers on one log, logs cut by a crash, quadratic validation, misleading
//! messages and a model file that changes under a run. docs/reliability.md
//! lists each case with the test here that shows it.

mod common;

use common::*;
use std::fs::File;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use mcscore_format::{write_tasks, Task};

fn fails_with(out: &Output, code: i32, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in stderr:\n{err}");
    }
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// Runs mcscore with stdout on /dev/full.
fn run_to_full_disk(args: &[&str]) -> Output {
    let full = File::options().write(true).open("/dev/full").expect("/dev/full exists on Linux");
    mcscore().args(args).stdout(Stdio::from(full)).output().unwrap()
}

/// A small valid task file of letter tasks.
fn small_file(dir: &Path) -> String {
    let path = dir.join("small.bin");
    let tasks: Vec<Task<'_>> = (0..6).map(|i| Task::new(["Is the sky blue?", "Is fire cold?"][i % 2], vec!["Yes", "No"], i % 2)).collect();
    write_tasks(&path, tasks.into_iter()).unwrap();
    path_str(&path).to_owned()
}

// 1. Flag values.

#[test]
fn a_batch_below_a_micro_batch_is_refused_and_one_scores() {
    // -b 1 used to abort in llama.cpp; fills are now decoded in 60-token
    // micro-batches, so a smaller -b means nothing.
    let out = run(&["score", "-m", &model(), "-bf", &reference("mc_mixed.bin"), "--multiple-choice-tasks", "6", "-b", "1"]);
    fails_with(&out, 2, &["--batch-size", "from 60 to 16777216"]);
    let out = run(&["score", "-m", &model(), "-bf", &reference("mc_mixed.bin"), "--multiple-choice-tasks", "6", "-b", "60", "--json"]);
    assert_eq!(json(&out)["tasks"], 6);
}

#[test]
fn contexts_that_wrap_or_cannot_fit_are_refused_before_allocating() {
    let file = reference("mc_letter4.bin");
    // np × c beyond u32: used to run with n_ctx 0 and exit 0.
    let out = run(&["score", "-m", &model(), "-bf", &file, "-c", "4294967295", "-np", "16"]);
    fails_with(&out, 1, &["mc_letter4.bin", "beyond llama.cpp's limit", "lower -c or -np"]);
    // Used to abort in llama.cpp.
    let out = run(&["score", "-m", &model(), "-bf", &file, "-c", "1073741888"]);
    fails_with(&out, 1, &["beyond llama.cpp's limit"]);
    // Used to be killed by the OOM killer at 23 GB with no message: -c is a
    // limit now, and the context allocated is what the fills need.
    let out = run(&["score", "-m", &model(), "-bf", &file, "-c", "2000000", "--multiple-choice-tasks", "5", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(json["n_ctx"].as_u64().unwrap() <= 1024, "{}", json["n_ctx"]);
    // A task that really needs more KV cache than memory holds is refused
    // before allocating: 4 million digits (one token each), under the 4 MiB
    // a text may have.
    let dir = tempdir();
    let huge = dir.path().join("huge.bin");
    let question = "1".repeat(4_000_000);
    write_tasks(&huge, [Task::new(&question, vec!["a", "b"], 0)].into_iter()).unwrap();
    let started = Instant::now();
    let out = run(&["score", "-m", &model(), "-bf", path_str(&huge), "-c", "2000000"]);
    fails_with(&out, 1, &["KV cache", "GiB of memory is available", "lower -c or -np"]);
    assert!(started.elapsed() < Duration::from_secs(60), "refused only after {:?}", started.elapsed());
    // With a fixed context it is refused by its bytes, before it is tokenised.
    let started = Instant::now();
    let out = run(&["score", "-m", &model(), "-bf", path_str(&huge), "-c", "512"]);
    fails_with(
        &out,
        1,
        &["1 task do not fit the 2048-token context: task 0 needs at least", "counted from their bytes, before tokenising", "raise -c"],
    );
    assert!(started.elapsed() < Duration::from_secs(10), "refused only after {:?}", started.elapsed());
}

#[test]
fn files_mcscore_writes_are_files_it_scores() {
    let dir = tempdir();
    // An ARC row whose text passes the 4 MiB a text may have, and one with a label given twice.
    let question = "q".repeat(mcscore_format::MAX_TEXT_BYTES);
    let row = |question: &str, labels: [&str; 3]| {
        serde_json::json!({"id": "x", "question": question, "choices": {"text": ["a", "b", "c"], "label": labels}, "answerKey": "B"})
            .to_string()
    };
    for (name, rows, needle) in [
        ("long.jsonl", [row("Q?", ["A", "B", "C"]), row(&question, ["A", "B", "C"])], "the rendered question and its longest option are"),
        ("labels.jsonl", [row("Q?", ["A", "B", "C"]), row("Q?", ["A", "B", "A"])], "the label \"A\" names options 0 and 2"),
    ] {
        let source = dir.path().join(name);
        std::fs::write(&source, rows.join("\n")).unwrap();
        let out_dir = dir.path().join(name.replace(".jsonl", ""));
        let manifest = dir.path().join("m.json");
        let out = run(&[
            "build",
            "arc-easy-validation",
            "--source",
            path_str(&source),
            "--out",
            path_str(&out_dir),
            "--manifest",
            path_str(&manifest),
        ]);
        fails_with(&out, 1, &["arc-easy-validation: row 1 of", name, needle]);
        assert!(!out_dir.join("arc-easy-validation.bin").exists());
    }
    // A file another tool wrote with such a task: validate calls it invalid, as score refuses it.
    let mut bytes = Vec::new();
    Task::new(&question, vec!["a", "b"], 0).encode(&mut bytes);
    let file = dir.path().join("long.bin");
    std::fs::write(&file, [&1u32.to_le_bytes()[..], &8u32.to_le_bytes(), &bytes].concat()).unwrap();
    let out = run(&["validate", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("INVALID (1 fault)\n  task 0: the question at byte 8 and its longest option are 4194306 bytes together"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn zero_tasks_means_all_and_too_many_says_so() {
    let file = reference("edge/mc_small8.bin");
    let all = json(&run(&["score", "-m", &model(), "-bf", &file, "--json"]));
    let out = run(&["score", "-m", &model(), "-bf", &file, "--multiple-choice-tasks", "0", "--json"]);
    assert!(stderr(&out).contains("--multiple-choice-tasks 0: scoring all"), "{}", stderr(&out));
    let zero = json(&out);
    assert_eq!(zero["tasks"], all["tasks"]);
    assert_eq!(zero["metrics"]["acc_norm"]["correct"], all["metrics"]["acc_norm"]["correct"]);
    let out = run(&["score", "-m", &model(), "-bf", &file, "--multiple-choice-tasks", "1000", "--json"]);
    assert!(stderr(&out).contains("--multiple-choice-tasks 1000: the file has"), "{}", stderr(&out));
    assert_eq!(json(&out)["tasks"], all["tasks"]);
}

/// `--limit N`: the file's first N tasks in file order, in every mode; part
/// of a run's identity; not with llama-perplexity's random picks.
#[test]
fn a_limit_scores_the_first_tasks_in_file_order() {
    let dir = tempdir();
    let file = reference("mc_text5.bin");
    let score = |name: &str, extra: &[&str]| {
        let log = dir.path().join(name);
        let mut args = vec!["score", "-m", model_leak(), "-bf", &file, "--json", "--log-samples", path_str(&log)];
        args.extend_from_slice(extra);
        let out = run(&args);
        (out, log)
    };
    let (out, limited) = score("limited.jsonl", &["--limit", "7"]);
    assert_eq!((json(&out)["tasks"].clone(), json(&out)["limit"].clone()), (7.into(), 7.into()));
    assert_eq!(log_header(&limited)["limit"], 7);
    let tasks = log_tasks(&limited);
    assert_eq!(tasks.iter().map(|t| t["task"].as_u64().unwrap()).collect::<Vec<_>>(), (0..7).collect::<Vec<_>>());
    // The same lines as the whole file's first seven (batch-invariant scores).
    let (_, all) = score("all.jsonl", &["--multiple-choice-tasks", "0"]);
    assert_eq!(tasks, log_tasks(&all)[..7]);
    // Another limit is another run, even where it selects the same tasks.
    let small = reference("edge/mc_small8.bin");
    let log = dir.path().join("small.jsonl");
    let small_run = |limit: &str, extra: &[&str]| {
        let mut args = vec!["score", "-m", model_leak(), "-bf", &small, "--limit", limit, "--log-samples", path_str(&log)];
        args.extend_from_slice(extra);
        run(&args)
    };
    assert!(small_run("100", &[]).status.success());
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.lines().take(3).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    fails_with(&small_run("200", &["--resume"]), 1, &["cannot resume", "with other limit", "log: 100\n  now: 200"]);
    // Not with a random pick; more than the file has scores it all, saying so.
    let (out, _) = score("both.jsonl", &["--limit", "3", "--multiple-choice-tasks", "3"]);
    fails_with(&out, 2, &["--limit", "--multiple-choice-tasks"]);
    let (out, _) = score("zero.jsonl", &["--limit", "0"]);
    fails_with(&out, 2, &["--limit", "expected a whole number of at least 1"]);
    let (out, _) = score("more.jsonl", &["--limit", "100000"]);
    assert!(stderr(&out).contains("--limit 100000: the file has"), "{}", stderr(&out));
    // HellaSwag's first tasks, not its shuffled order or its default 400.
    let hellaswag = hellaswag_file(dir.path());
    let log = dir.path().join("hellaswag.jsonl");
    let out = run(&["score", "-m", &model(), "-f", path_str(&hellaswag), "--hellaswag", "--limit", "3", "--log-samples", path_str(&log)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(log_tasks(&log).iter().map(|t| t["task"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
}

/// Where the file's manifest records groups, `--limit N` takes each group's
/// first N tasks, as lm-eval limits each subtask; `--limit-total N` the
/// file's first N. A bundled file copied where no manifest is keeps its
/// groups (the bundled manifest, by sha256), and the two limits are two runs.
#[test]
fn a_limit_counts_per_group_where_the_file_has_groups() {
    let dir = tempdir();
    let file = dir.path().join("mmlu.bin");
    std::fs::copy(repo("datasets/mmlu-validation.bin"), &file).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo("manifest.json")).unwrap()).unwrap();
    let entry = manifest["datasets"].as_array().unwrap().iter().find(|e| e["name"] == "mmlu-validation").unwrap();
    let runs: Vec<(String, u64)> =
        entry["groups"]["runs"].as_array().unwrap().iter().map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_u64().unwrap())).collect();
    // Each subject's first task: where its first run starts (MMLU's runs are one per subject).
    let mut starts = Vec::new();
    let mut at = 0;
    for (_, count) in &runs {
        starts.push(at);
        at += count;
    }
    let log = dir.path().join("per-group.jsonl");
    let out = run(&["score", "-m", &model(), "-bf", path_str(&file), "--limit", "1", "--json", "--log-samples", path_str(&log)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("--limit 1: the first 1 tasks of each of the file's 57 groups"), "{}", stderr(&out));
    let results = json(&out);
    assert_eq!(
        (results["tasks"].clone(), results["limit"].clone(), results["limit_per_group"].clone()),
        (57.into(), 1.into(), true.into())
    );
    assert_eq!(log_header(&log)["limit_per_group"], true);
    assert_eq!(log_tasks(&log).iter().map(|t| t["task"].as_u64().unwrap()).collect::<Vec<_>>(), starts);
    let groups = results["groups"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 57);
    assert!(groups.iter().all(|g| g["tasks"] == 1), "{groups:?}");
    // The text names where the groups came from.
    let out = run(&["score", "-m", &model(), "-bf", path_str(&file), "--limit", "1"]);
    assert!(stdout(&out).contains("mcscore's bundled manifest.json: mmlu-validation's subject"), "{}", stdout(&out));
    // The old meaning, by its own name (another run than the per-group one:
    // mcscore-log's unit tests hold the two identities apart).
    let total = dir.path().join("total.jsonl");
    let out = run(&["score", "-m", &model(), "-bf", path_str(&file), "--limit-total", "3", "--json", "--log-samples", path_str(&total)]);
    assert_eq!(json(&out)["limit_per_group"], false);
    assert_eq!(log_tasks(&total).iter().map(|t| t["task"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(log_header(&total).get("limit_per_group").is_none());
    let out = run(&["score", "-m", &model(), "-bf", path_str(&file), "--limit", "1", "--limit-total", "1"]);
    fails_with(&out, 2, &["--limit", "--limit-total"]);
}

#[test]
fn more_threads_than_cores_are_capped_with_a_warning() {
    let out = run(&["score", "-m", &model(), "-bf", &reference("edge/mc_small8.bin"), "-t", "1000", "--json"]);
    assert!(stderr(&out).contains("-t 1000 is more threads than the"), "{}", stderr(&out));
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(json(&out)["settings"]["threads"], cores);
}

#[test]
fn report_thresholds_must_be_probabilities() {
    for (flag, value) in [("--tau", "NaN"), ("--tau", "1.5"), ("--epsilon", "-0.1"), ("--epsilon", "inf")] {
        let out = run(&["report", "x.jsonl", &format!("{flag}={value}")]);
        fails_with(&out, 2, &[flag, "expected a probability at least 0 and at most 1"]);
    }
}

// 2. Outputs are checked before the work.

#[test]
fn sweep_outputs_are_checked_before_scoring() {
    let dir = tempdir();
    let file = repo("datasets/mmlu-validation.bin");
    let missing = dir.path().join("no/such/dir/sweep.json");
    let a_file = dir.path().join("a-file");
    std::fs::write(&a_file, "x").unwrap();
    let cases: [(&str, String, &str); 4] = [
        ("--save-json", path_str(&missing).to_owned(), "does not exist"),
        ("--plots", path_str(&a_file).to_owned(), "names a file"),
        ("--log-samples", "/proc/sweep.jsonl".to_owned(), "cannot write in /proc"),
        ("--write-tasks", path_str(&a_file).to_owned(), "names a file"),
    ];
    for (flag, value, needle) in cases {
        let started = Instant::now();
        let model = model();
        let mut args = vec!["sweep", &file, "--tasks", "50", "--circular", flag, &value];
        if flag != "--write-tasks" {
            args.extend(["-m", &model]);
        }
        let out = run(&args);
        fails_with(&out, 1, &[flag, needle]);
        // Nothing was scored: the refusal comes at once.
        assert!(started.elapsed() < Duration::from_secs(15), "{flag}: refused after {:?}", started.elapsed());
    }
    // The same model twice, here through a link, would be compared with itself.
    let model = model();
    let link = dir.path().join("link.gguf");
    std::os::unix::fs::symlink(&model, &link).unwrap();
    let out = run(&["sweep", &file, "--tasks", "2", "-m", &model, "-m", path_str(&link)]);
    fails_with(&out, 2, &["the same model file as", "give each model once"]);
}

#[test]
fn report_plots_location_is_checked_before_reading_logs() {
    let out = run(&["report", "/no/such/log.jsonl", "--plots", "/proc/plots"]);
    fails_with(&out, 1, &["--plots", "/proc/plots"]);
}

// 3. Standard output that cannot be written.

#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    let dir = tempdir();
    let file = small_file(dir.path());
    let log = dir.path().join("run.jsonl");
    let model = model();
    let recorded = repo("docs/results/sweep-mmlu-validation-200.json");
    assert!(run(&["score", "-m", &model, "-bf", &file, "--log-samples", path_str(&log)]).status.success());
    let cases: Vec<Vec<&str>> = vec![
        vec!["inspect", &file],
        vec!["validate", &file],
        vec!["validate", &file, "--json"],
        vec!["build", "--list"],
        vec!["report", path_str(&log)],
        vec!["score", "-m", &model, "-bf", &file, "--json"],
        vec!["score", "-m", &model, "-bf", &file],
        vec!["tokens", "-m", &model],
        vec!["sweep", "--compare", &recorded, "--json"],
        vec!["sweep", "--compare", &recorded],
    ];
    for args in cases {
        let out = run_to_full_disk(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("writing to standard output"), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = mcscore().args(["build", "--list"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    let quiet = out.status.success() || out.status.signal() == Some(13);
    assert!(quiet, "{:?}: {}", out.status, stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

// 4. One writer per log.

#[test]
fn a_second_writer_of_a_log_is_refused() {
    let dir = tempdir();
    let log = dir.path().join("run.jsonl");
    let file = reference("mc_text5.bin");
    let args = ["score", "-m", &model(), "-bf", &file, "-b", "64", "-t", "1", "--log-samples", path_str(&log)];
    let mut first = mcscore().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    // The lock is on the log itself, taken as its header is written.
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("\"type\":\"header\"")) {
        assert!(started.elapsed() < Duration::from_secs(60), "the first run never wrote its log");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut resumed = args.to_vec();
    resumed.push("--resume");
    let second = run(&resumed);
    let still_running = first.try_wait().unwrap().is_none();
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(still_running, "the first run ended before the second started; the test proves nothing");
    fails_with(&second, 1, &["run.jsonl", "another process is writing this file"]);
}

// 5. Logs that survive any crash.

/// A complete log of `tasks` tasks of mc_text5.bin, and its bytes.
fn complete_log(dir: &Path, name: &str, tasks: &str) -> (std::path::PathBuf, Vec<u8>) {
    let log = dir.join(name);
    let out = run(&[
        "score",
        "-m",
        &model(),
        "-bf",
        &reference("mc_text5.bin"),
        "--multiple-choice-tasks",
        tasks,
        "-b",
        "64",
        "--log-samples",
        path_str(&log),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&log).unwrap();
    (log, bytes)
}

fn resume(log: &Path, file: &str, tasks: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "score",
        "-m",
        &model_leak(),
        "-bf",
        file,
        "--multiple-choice-tasks",
        tasks,
        "-b",
        "64",
        "--log-samples",
        path_str(log),
        "--resume",
        "--json",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn model_leak() -> &'static str {
    Box::leak(model().into_boxed_str())
}

#[test]
fn a_log_torn_after_an_inner_brace_resumes_and_kept_lines_stay_byte_identical() {
    let dir = tempdir();
    let (log, full) = complete_log(dir.path(), "run.jsonl", "20");
    let text = String::from_utf8(full.clone()).unwrap();
    // Cut the last task line right after an inner `}` (and drop the footer).
    let lines: Vec<&str> = text.lines().collect();
    let last_task = lines[lines.len() - 2];
    let cut_in_line = last_task.rfind("},").expect("an inner brace") + 1;
    let cut = text.find(last_task).unwrap() + cut_in_line;
    std::fs::write(&log, &full[..cut]).unwrap();
    let before = full[..text.find(lines[3]).unwrap()].to_vec();
    let out = resume(&log, &reference("mc_text5.bin"), "20", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = std::fs::read(&log).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "kept lines were rewritten");
    assert_eq!(log_tasks(&log), log_tasks_of(&full), "per-task results");
    assert_eq!(log_footer(&log)["complete"], true);
}

fn log_tasks_of(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "task")
        .collect()
}

#[test]
fn resuming_a_complete_log_leaves_it_alone_and_prints_its_results() {
    let dir = tempdir();
    let (log, full) = complete_log(dir.path(), "run.jsonl", "10");
    let modified = std::fs::metadata(&log).unwrap().modified().unwrap();
    let out = resume(&log, &reference("mc_text5.bin"), "10", &[]);
    assert!(stderr(&out).contains("already holds the complete run"), "{}", stderr(&out));
    assert_eq!(json(&out)["tasks"], 10);
    assert_eq!(std::fs::read(&log).unwrap(), full);
    assert_eq!(std::fs::metadata(&log).unwrap().modified().unwrap(), modified);
}

#[test]
fn inputs_are_identified_by_content_and_a_refusal_names_the_field() {
    let dir = tempdir();
    let (log, full) = complete_log(dir.path(), "run.jsonl", "10");
    // Interrupted-looking log: no footer, 3 tasks.
    let text = String::from_utf8(full).unwrap();
    let head: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, &head).unwrap();
    // The same task file through a copy and a symlink.
    let copy = dir.path().join("copy.bin");
    std::fs::copy(reference("mc_text5.bin"), &copy).unwrap();
    let link = dir.path().join("link.bin");
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    let out = resume(&log, path_str(&link), "10", &[]);
    assert_eq!(json(&out)["tasks"], 10);
    // Another setting is refused, naming it.
    std::fs::write(&log, &head).unwrap();
    let out = resume(&log, path_str(&copy), "10", &["-fa", "off"]);
    fails_with(&out, 1, &["cannot resume", "with other settings", "fa=Off"]);
    let out = resume(&log, &reference("edge/mc_small8.bin"), "10", &[]);
    fails_with(&out, 1, &["cannot resume", "with other file_sha256"]);
}

#[test]
fn duplicated_lines_and_wrong_footers_are_named() {
    let dir = tempdir();
    let (log, full) = complete_log(dir.path(), "run.jsonl", "5");
    let text = String::from_utf8(full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A task line twice.
    let mut twice = lines.clone();
    twice.insert(3, lines[2]);
    std::fs::write(&log, twice.join("\n") + "\n").unwrap();
    fails_with(&run(&["report", path_str(&log)]), 1, &["line 4", "logged twice (first on line 3)"]);
    // A footer whose count is wrong.
    let mut wrong = lines.clone();
    let footer = wrong.pop().unwrap().replace("\"scored\":5", "\"scored\":7");
    wrong.push(&footer);
    std::fs::write(&log, wrong.join("\n") + "\n").unwrap();
    fails_with(&run(&["report", path_str(&log)]), 1, &["line 7", "footer says 7 tasks were scored, but 5"]);
}

// 6. Validation cost is linear in the file.

#[test]
fn a_huge_claimed_task_count_is_rejected_fast_with_capped_output() {
    let dir = tempdir();
    let path = dir.path().join("zeros.bin");
    let n: u32 = 1 << 20;
    let mut bytes = vec![0u8; 4 * 1024 * 1024 + 8];
    bytes[..4].copy_from_slice(&n.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let started = Instant::now();
    let out = run(&["validate", path_str(&path), "--json"]);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.len() < 100_000, "{} bytes of JSON", out.stdout.len());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report[0]["fault_count"].as_u64().unwrap() >= u64::from(n) - 1);
    assert!(report[0]["not_listed"]["overlap"].as_u64().unwrap() > 1000, "{}", report[0]["not_listed"]);
    let text = run(&["validate", path_str(&path)]);
    assert!(stdout(&text).contains("more overlap faults (the first 20 are listed)"), "{}", stdout(&text));
}

// 7. Messages that tell the truth.

#[test]
fn invalid_utf8_is_still_read_by_llama_perplexity() {
    let dir = tempdir();
    let path = dir.path().join("latin1.bin");
    let good = small_file(dir.path());
    let mut bytes = std::fs::read(&good).unwrap();
    let at = bytes.windows(3).position(|w| w == b"sky").unwrap();
    bytes[at] = 0xE9; // a Latin-1 byte
    std::fs::write(&path, &bytes).unwrap();
    let out = run(&["validate", path_str(&path)]);
    assert!(stdout(&out).contains("not valid UTF-8"), "{}", stdout(&out));
    assert!(stdout(&out).contains("llama-perplexity would still score 6 tasks"), "{}", stdout(&out));
}

#[test]
fn directories_are_named_as_directories() {
    let dir = tempdir();
    let d = path_str(dir.path());
    let file = reference("edge/mc_small8.bin");
    fails_with(&run(&["score", "-m", &model(), "-bf", d]), 1, &["a directory, not a task file"]);
    fails_with(&run(&["score", "-m", d, "-bf", &file]), 1, &["the model does not load: a directory, not a regular file"]);
    fails_with(&run(&["score", "-m", &model(), "-bf", &file, "--log-samples", d]), 1, &["--log-samples names a directory"]);
    fails_with(&run(&["validate", d]), 1, &["a directory, not a task file"]);
}

#[test]
fn the_os_error_is_said_once() {
    for args in [vec!["score", "-m", &model_leak(), "-bf", "/no/such.bin"], vec!["sweep", "-m", &model_leak(), "/no/such.bin"]] {
        let out = run(&args);
        fails_with(&out, 1, &["/no/such.bin"]);
        assert_eq!(stderr(&out).matches("No such file or directory").count(), 1, "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn verify_names_a_missing_manifest_and_checks_every_file() {
    let dir = tempdir();
    let missing = dir.path().join("manifest.json");
    fails_with(&run(&["verify", "--manifest", path_str(&missing)]), 1, &["manifest.json: no manifest there"]);
    // A manifest whose first file is missing: the second is still verified.
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo("manifest.json")).unwrap()).unwrap();
    let pick = |name: &str| manifest["datasets"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap().clone();
    let mut present = pick("arc-easy-validation");
    present["file"] = serde_json::json!(repo("datasets/arc-easy-validation.bin"));
    let mut absent = pick("arc-challenge-validation");
    absent["file"] = serde_json::json!(path_str(&dir.path().join("gone.bin")));
    let local = dir.path().join("two.json");
    std::fs::write(&local, serde_json::json!({ "datasets": [absent, present] }).to_string()).unwrap();
    let out = run(&["verify", "--manifest", path_str(&local), "--sources", &sources()]);
    fails_with(&out, 1, &["gone.bin", "1 of 2 file(s) failed verification"]);
    assert!(stdout(&out).contains("arc-easy-validation.bin: verified"), "{}", stdout(&out));
}

#[test]
fn a_one_option_task_is_refused_by_one_rule_everywhere() {
    let dir = tempdir();
    let path = dir.path().join("one.bin");
    std::fs::write(&path, one_option_file()).unwrap();
    let rule = "one option";
    let needed = "a task needs at least 2 options to be scored";
    let out = run(&["validate", path_str(&path)]);
    assert!(stdout(&out).contains(rule) && stdout(&out).contains(needed), "{}", stdout(&out));
    fails_with(&run(&["inspect", path_str(&path)]), 1, &[rule, needed]);
    fails_with(&run(&["score", "-m", &model(), "-bf", path_str(&path)]), 1, &[rule, needed]);
    fails_with(&run(&["score", "-m", &model(), "-bf", path_str(&path), "--lenient"]), 1, &["task 1: one option", needed]);
}

/// Two tasks, the second with one option: written by hand, since the writer
/// refuses it.
fn one_option_file() -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    let task = |out: &mut Vec<u8>, options: &[&str]| {
        string(out, "Is the sky blue?");
        out.extend_from_slice(&(options.len() as u32).to_le_bytes());
        for o in options {
            string(out, o);
        }
        for k in 0..options.len() {
            out.extend_from_slice(&i32::from(k == 0).to_le_bytes());
        }
        out.extend_from_slice(&0u32.to_le_bytes());
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    task(&mut a, &["Yes", "No"]);
    task(&mut b, &["Yes"]);
    let mut bytes = 2u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&12u32.to_le_bytes());
    bytes.extend_from_slice(&(12 + a.len() as u32).to_le_bytes());
    bytes.extend(a);
    bytes.extend(b);
    bytes
}

// 8. A model file that changes under a run.

#[test]
fn a_model_touched_during_a_run_fails_the_run() {
    let dir = tempdir();
    let copy = dir.path().join("model.gguf");
    std::fs::copy(model(), &copy).unwrap();
    let log = dir.path().join("run.jsonl");
    let args = [
        "score",
        "-m",
        path_str(&copy),
        "-bf",
        &reference("mc_text5.bin"),
        "--multiple-choice-tasks",
        "60",
        "-b",
        "64",
        "-t",
        "1",
        "--log-samples",
        path_str(&log),
    ];
    let child = mcscore().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while log_lines(&log) < 2 {
        assert!(started.elapsed() < Duration::from_secs(120), "no task was logged");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Rewrite the model's modification time, as a copy over it would.
    let file = File::options().write(true).open(&copy).unwrap();
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(3600)).unwrap();
    let out = child.wait_with_output().unwrap();
    fails_with(&out, 1, &["model.gguf", "changed while it was in use", "modification time"]);
    assert_ne!(log_footer(&log)["complete"], true, "the log must not claim a complete run");
}

fn log_lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

// The model's sha256 is cached by path, size and modification time.

#[test]
fn the_model_hash_is_read_from_the_cache_until_the_model_changes() {
    let dir = tempdir();
    let copy = dir.path().join("model.gguf");
    std::fs::copy(model(), &copy).unwrap();
    let score = || {
        let out = mcscore()
            .args(["score", "-m", path_str(&copy), "-bf", &reference("edge/mc_small8.bin"), "--json"])
            .env("MCSCORE_CACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap();
        json(&out)
    };
    let first = score();
    assert_eq!(first["model_sha256_cached"], false);
    let second = score();
    assert_eq!(second["model_sha256_cached"], true);
    assert_eq!(first["model_sha256"], second["model_sha256"]);
    File::options().write(true).open(&copy).unwrap().set_modified(std::time::SystemTime::now() + Duration::from_secs(60)).unwrap();
    assert_eq!(score()["model_sha256_cached"], false, "a touched model is hashed again");
}
