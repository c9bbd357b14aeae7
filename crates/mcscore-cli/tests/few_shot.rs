//! A few-shot preamble shared by every task of a file is decoded once for the
//! whole file (the engine keeps the tokens a fill's tasks share for the next
//! fill), and scores stay bit for bit those of each task in a fill of its own.

mod common;

use common::*;
use mcscore_format::{write_tasks, Task, TaskFile};

#[test]
fn a_few_shot_preamble_is_decoded_once_per_file() {
    let source = TaskFile::open(repo("datasets/mmlu-validation.bin")).unwrap();
    let tasks: Vec<Task<'_>> = source.tasks().collect();
    // Three solved examples, then the question: about 400 tokens shared by all.
    let mut preamble = String::new();
    for example in &tasks[..3] {
        let gold = example.gold().unwrap();
        preamble.push_str(&format!("{} {}\n\n", example.question, example.options()[gold]));
    }
    let questions: Vec<String> = tasks[10..30].iter().map(|t| format!("{preamble}{}", t.question)).collect();
    let few_shot: Vec<Task<'_>> =
        tasks[10..30].iter().zip(&questions).map(|(t, q)| Task::new(q, t.options().to_vec(), t.gold().unwrap())).collect();
    let dir = tempdir();
    let file = dir.path().join("few-shot.bin");
    write_tasks(&file, few_shot.into_iter()).unwrap();
    let plain_file = dir.path().join("zero-shot.bin");
    write_tasks(&plain_file, tasks[10..30].iter().cloned()).unwrap();

    let model = model();
    let score_file = |file: &std::path::Path, extra: &[&str], log: &str| {
        let log = dir.path().join(log);
        let mut args = vec!["score", "-m", &model, path_str(file), "-t", "2", "--json", "--log-samples", path_str(&log)];
        args.extend(extra);
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        (json, log_tasks(&log))
    };
    let (shared, shared_log) = score_file(&file, &[], "shared.jsonl");
    // -b 60: one task a fill, each taking the preamble from the last fill's cache.
    let (alone, alone_log) = score_file(&file, &["-b", "60"], "alone.jsonl");
    let (plain, _) = score_file(&plain_file, &[], "plain.jsonl");
    let tokens = |json: &serde_json::Value, key: &str| json[key].as_u64().unwrap() as f64;
    assert!(tokens(&alone, "tokens_evaluated") > tokens(&shared, "tokens_evaluated"), "smaller fills share less");
    // The preamble's tokens, from what the 20 tasks gain by it unshared.
    let preamble_tokens = (tokens(&shared, "tokens_unshared") - tokens(&plain, "tokens_unshared")) / 20.0;
    let preamble_decoded = tokens(&shared, "tokens_evaluated") - tokens(&plain, "tokens_evaluated");
    assert!(preamble_tokens > 100.0, "{preamble_tokens}");
    assert!(
        preamble_decoded < 1.5 * preamble_tokens,
        "a {preamble_tokens}-token preamble over 20 tasks cost {preamble_decoded} decoded tokens"
    );

    assert_eq!(shared_log, alone_log, "the batch rule: a task's scores do not depend on its fill");
}
