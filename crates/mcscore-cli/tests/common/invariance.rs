//! The batch-invariance matrix both builds are held to: the same tasks
//! scored under other settings, as shards merged and resumed after a cut,
//! must log every task line bit for bit as the first run did.

use std::path::{Path, PathBuf};

use super::{path_str, run, stderr, tempdir};

/// A log's task lines, which hold every option's sums.
pub fn task_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().filter(|l| l.contains("\"type\":\"task\"")).map(str::to_owned).collect()
}

/// One completion request's per-token log-probabilities (echoed prompt).
pub fn logprobs(reply: &serde_json::Value) -> Vec<serde_json::Value> {
    reply["choices"][0]["logprobs"]["token_logprobs"].as_array().unwrap_or_else(|| panic!("{reply}")).clone()
}

/// A resume point in 1..n, different per file and run (seeded by the name).
fn cut_point(name: &str, n: usize) -> usize {
    let seed = name.bytes().fold(0x9e37_79b9_7f4a_7c15u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    1 + (seed % (n as u64 - 1)) as usize
}

/// Scores with `score(log, extra flags)` once plainly, then with each of
/// `settings`, as each of `shard_counts` shards merged, and resumed (`-b
/// 256`) after a cut at a random task; every run's task lines must be the
/// first run's, and there must be `tasks` of them.
pub fn check_matrix(name: &str, tasks: usize, score: &dyn Fn(&Path, &[&str]), settings: &[&[&str]], shard_counts: &[usize]) {
    let dir = tempdir();
    let d = dir.path();
    let base = d.join("base.jsonl");
    score(&base, &[]);
    let expected = task_lines(&base);
    assert_eq!(expected.len(), tasks, "{name}");
    let same = |what: &str, log: &Path| {
        let lines = task_lines(log);
        let differ: Vec<usize> = (0..expected.len()).filter(|&i| lines.get(i) != Some(&expected[i])).collect();
        assert!(
            differ.is_empty(),
            "{name}, {what}: {} of {} tasks differ from the default run (first: {:?})",
            differ.len(),
            expected.len(),
            differ.first()
        );
    };
    for (i, flags) in settings.iter().enumerate() {
        let log = d.join(format!("s{i}.jsonl"));
        score(&log, flags);
        same(&flags.join(" "), &log);
    }
    for &count in shard_counts {
        let logs: Vec<PathBuf> = (0..count).map(|k| d.join(format!("shard{k}of{count}.jsonl"))).collect();
        for (k, log) in logs.iter().enumerate() {
            score(log, &["--shard", &format!("{k}/{count}")]);
        }
        let merged = d.join(format!("merged{count}.jsonl"));
        let args: Vec<&str> = ["merge", "-o", path_str(&merged)].into_iter().chain(logs.iter().map(|p| path_str(p))).collect();
        let out = run(&args);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        same(&format!("{count} shards merged"), &merged);
    }
    // A log cut after a random task, as after a kill -9, then resumed.
    let cut = cut_point(name, expected.len());
    let resumed = d.join("resumed.jsonl");
    let text = std::fs::read_to_string(&base).unwrap();
    std::fs::write(&resumed, text.lines().take(1 + cut).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    score(&resumed, &["--resume", "-b", "256"]);
    same(&format!("resumed after task {cut}"), &resumed);
}

/// Sends `alone` prompts (ARC-Easy questions with an option) one at a time,
/// then the same among `total` concurrent requests, which the server packs
/// together as it likes: every prompt's log-probabilities must be the same.
pub fn check_served(server: &super::server::Server, alone: usize, total: usize) {
    let file = mcscore_format::TaskFile::open(super::repo("datasets/arc-easy-validation.bin")).unwrap();
    let prompt = |i: usize| {
        let task = file.task(i);
        format!("{} {}", task.question, task.options()[i % task.options().len()])
    };
    let request = |text: String| serde_json::json!({"prompt": text, "max_tokens": 0, "echo": true, "logprobs": 1});
    let first: Vec<_> = (0..alone).map(|i| logprobs(&server.post("/v1/completions", &request(prompt(i))).json())).collect();
    let threads: Vec<_> = (0..total)
        .map(|i| {
            let address = server.address.clone();
            let body = serde_json::to_vec(&request(prompt(if i < alone { i } else { 100 + i }))).unwrap();
            std::thread::spawn(move || logprobs(&super::server::request(&address, "POST", "/v1/completions", &body, &[]).json()))
        })
        .collect();
    let loaded: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (i, (a, b)) in first.iter().zip(&loaded).enumerate() {
        assert_eq!(a, b, "prompt {i}: alone against beside {} other requests", total - 1);
    }
}
