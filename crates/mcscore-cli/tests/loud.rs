//! Every failure llama-perplexity passes over with exit 0 makes mcscore exit
//! non-zero with a message naming the file, task or flag.

mod common;

use common::*;

fn assert_fails(args: &[&str], code: i32, needles: &[&str]) {
    let out = run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}\nstderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: {needle:?} not in stderr:\n{err}");
    }
}

#[test]
fn empty_file() {
    let file = reference("edge/empty.bin");
    assert_fails(&["score", "-m", &model(), "-bf", &file], 1, &["empty.bin", "file is 0 bytes, shorter than the 4-byte task count"]);
}

#[test]
fn truncated_offsets() {
    let file = reference("edge/trunc_offsets.bin");
    assert_fails(&["score", "-m", &model(), "-bf", &file], 1, &["trunc_offsets.bin", "offset table cut short: 5 tasks"]);
}

#[test]
fn odd_labels_fail_strictly_and_score_leniently() {
    let file = reference("edge/odd_labels.bin");
    assert_fails(
        &["score", "-m", &model(), "-bf", &file],
        1,
        &["odd_labels.bin", "task 0: no label is 1", "task 1: 4 labels are 1", "--lenient"],
    );
    let out = run(&["score", "-m", &model(), "-bf", &file, "--lenient", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("scoring it as llama.cpp would (--lenient)"), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["tasks"], 2);
    assert_eq!(json["lenient"], true);
}

#[test]
fn option_that_is_a_prefix_of_the_others() {
    let file = reference("edge/prefix_option.bin");
    assert_fails(&["score", "-m", &model(), "-bf", &file], 1, &["prefix_option.bin", "task 0: option", "prefix of every other option"]);
}

#[test]
fn task_longer_than_the_context_fails_before_scoring() {
    let file = reference("edge/too_long.bin");
    assert_fails(
        &["score", "-m", &model(), "-bf", &file, "-c", "256"],
        1,
        &["too_long.bin", "task 0 needs", "1024-token context", "-c auto"],
    );
    // -c auto sizes the context to fit it.
    let out = run(&["score", "-m", &model(), "-bf", &file, "-c", "auto", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn wider_tasks_than_np_do_not_stop_the_run() {
    // llama-perplexity stops at task 0 with its default -np 4.
    let file = reference("edge/text5_x6.bin");
    let out = run(&["score", "-m", &model(), "-bf", &file, "-c", "512", "-np", "4", "--multiple-choice-tasks", "12", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["tasks"], 12);
    assert!(!stderr(&out).contains("note: tasks may be up to"), "4 × 512 is the limit: {}", stderr(&out));
    // A limit that llama-perplexity's rule raises is said.
    let out = run(&["score", "-m", &model(), "-bf", &file, "-c", "100", "-np", "2", "--multiple-choice-tasks", "2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("note: tasks may be up to 512 tokens long: -np 2 × -c 100"), "{}", stderr(&out));
}

#[test]
fn model_that_does_not_load() {
    let not_a_model = reference("mc_text5.bin");
    assert_fails(&["score", "-m", &not_a_model, "-bf", &not_a_model], 1, &["mc_text5.bin: the model does not load"]);
    assert_fails(
        &["score", "-m", "/nonexistent/model.gguf", "-bf", &not_a_model],
        1,
        &["/nonexistent/model.gguf: the model does not load: no such file"],
    );
}

#[test]
fn missing_task_file() {
    assert_fails(&["score", "-m", &model(), "-bf", "/nonexistent/tasks.bin"], 1, &["/nonexistent/tasks.bin"]);
}

#[test]
fn usage_errors_exit_2() {
    assert_fails(&["score", "-c", "zero"], 2, &["--ctx-size", "auto"]);
    assert_fails(&["score", "-np", "0"], 2, &["--parallel"]);
    assert_fails(&["score", "--resume"], 2, &["--log-samples"]);
}

#[test]
fn existing_log_is_not_overwritten() {
    let dir = tempdir();
    let log = dir.path().join("log.jsonl");
    std::fs::write(&log, "precious\n").unwrap();
    let file = reference("edge/mc_small8.bin");
    assert_fails(&["score", "-m", &model(), "-bf", &file, "--log-samples", path_str(&log)], 1, &["log.jsonl", "--resume"]);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "precious\n");
}

/// Tasks longer than the model's training context are scored (as
/// llama-perplexity scores them), with a warning naming how many and the
/// longest: llama.cpp warns of such a context too, but mcscore hides its log.
#[test]
fn tasks_past_the_training_context_are_named() {
    let dir = tempdir();
    let shape = ["--dim", "64", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--ff", "128", "--type", "f16"];
    let short = random_model(dir.path(), "short", &[&shape[..], &["--context-length", "16"]].concat());
    let file = reference("mc_text5.bin");
    let out = run(&["score", "-m", path_str(&short), "-bf", &file, "--multiple-choice-tasks", "10", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let beyond = &json["beyond_training"];
    assert_eq!((beyond["trained"].as_u64(), beyond["tasks"].as_u64()), (Some(16), Some(2)), "{json}");
    let warning = format!(
        "2 task(s) run past the model's training context of 16 tokens (the longest, task {}, decodes {})",
        beyond["longest_task"], beyond["longest_tokens"]
    );
    assert!(stderr(&out).contains(&warning), "{warning} not in {}", stderr(&out));
    // The bundled model's 32,768 tokens hold every task.
    let out = run(&["score", "-m", &model(), "-bf", &file, "--multiple-choice-tasks", "10", "--json"]);
    assert!(out.status.success() && !stderr(&out).contains("training context"), "{}", stderr(&out));
    assert!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["beyond_training"].is_null());
}

/// A missing task file says where the bundled one is; the bundled one's bare
/// name, where no such file is here, scores it.
#[test]
fn a_missing_file_points_to_the_bundled_one_which_its_name_finds() {
    let dir = tempdir();
    let missing = dir.path().join("arc-challenge.bin");
    assert_fails(
        &["score", "-m", &model(), "-bf", path_str(&missing)],
        1,
        &["arc-challenge.bin", "-bf NAME scores a bundled dataset by name", "arc-easy-validation is compiled in", "mcscore build --list"],
    );
    let out = mcscore()
        .current_dir(dir.path())
        .args(["score", "-m", &model(), "-bf", "arc-easy-validation", "--multiple-choice-tasks", "2", "-t", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("arc-easy-validation is the bundled dataset's name: scoring the bundled"), "{}", stderr(&out));
    // Another bundled name finds a copy with the bundled manifest's sha256:
    // $MCSCORE_DATASETS first; a file of that name with other bytes is passed over.
    std::fs::create_dir(dir.path().join("datasets")).unwrap();
    std::fs::copy(repo("datasets/boolq-validation.bin"), dir.path().join("datasets/mmlu-validation.bin")).unwrap();
    let ours = dir.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    std::fs::copy(repo("datasets/mmlu-validation.bin"), ours.join("mmlu-validation.bin")).unwrap();
    let named = |env: Option<&std::path::Path>| {
        let mut command = mcscore();
        command.current_dir(dir.path()).args(["score", "-m", &model(), "-bf", "mmlu-validation", "--limit-total", "1", "-t", "2"]);
        if let Some(env) = env {
            command.env("MCSCORE_DATASETS", env);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    let from_env = named(Some(&ours));
    assert!(
        from_env.contains(&format!("mmlu-validation is a bundled dataset's name: {}", ours.join("mmlu-validation.bin").display())),
        "{from_env}"
    );
    let from_checkout = named(None);
    let checkout = std::fs::canonicalize(repo("datasets/mmlu-validation.bin")).unwrap();
    assert!(from_checkout.contains(&format!("name: {}", checkout.display())), "{from_checkout}");
}

/// A renamed flag's old name still works for a version, saying the new one.
#[test]
fn an_old_flag_name_works_and_names_the_new_one() {
    let file = repo("datasets/arc-easy-validation.bin");
    let old = run(&["score", "-m", &model(), "-bf", &file, "--limit-total", "2", "--output", "llama"]);
    let new = run(&["score", "-m", &model(), "-bf", &file, "--limit-total", "2", "--format", "llama"]);
    assert!(old.status.success(), "{}", stderr(&old));
    assert!(stderr(&old).contains("mcscore: warning: score --output is now --format"), "{}", stderr(&old));
    assert!(!stderr(&new).contains("warning"), "{}", stderr(&new));
    assert_eq!(stdout(&old), stdout(&new));
}
