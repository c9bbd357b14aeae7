//! `mcscore sweep` with the real model on real letter datasets: shared-prefix
//! scoring against each prompt scored alone, the per-format figures against
//! the per-prompt log, PriDe, model comparison, and refusals.

mod common;

use common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Four formats covering every ID set, delimiter and separator.
const FORMATS: &str = "upper.dot.newline,lower.paren.comma,digit.colon.semicolon,roman.parens.newline";

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn shared_prefix_sweep_matches_each_prompt_scored_alone() {
    let dir = tempdir();
    let log = dir.path().join("prompts.jsonl");
    let plots = dir.path().join("plots");
    let file = repo("datasets/mmlu-validation.bin");
    let common_args = ["--tasks", "4", "--formats", FORMATS, "--circular"];
    let model = model();
    let mut args = vec!["sweep", "-m", &model, &file];
    args.extend(common_args);
    args.extend(["--pride", "0.5", "--log-samples", path_str(&log), "--plots", path_str(&plots), "-t", "2", "--json"]);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["schema_version"], 3);
    let sweep = &report["models"][0];
    let decoded = sweep["tokens_decoded"].as_u64().unwrap();
    let unshared = sweep["tokens_unshared"].as_u64().unwrap();
    assert!(decoded * 2 < unshared, "a shared stem is decoded once: {decoded} of {unshared}");

    // The same prompts, one task file per format and rotation, scored apart.
    let files = dir.path().join("files");
    let mut write = vec!["sweep", &file, "--write-tasks", path_str(&files)];
    write.extend(common_args);
    let out = run(&write);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut alone: HashMap<(String, u64, usize), Vec<f64>> = HashMap::new();
    for format in FORMATS.split(',') {
        for rotation in 0..4 {
            let bin = files.join(format!("{format}.r{rotation}.bin"));
            let scored = dir.path().join(format!("{format}.r{rotation}.jsonl"));
            let out = run(&["score", "-m", &model, path_str(&bin), "-t", "2", "--log-samples", path_str(&scored)]);
            assert!(out.status.success(), "{format} r{rotation}: {}", stderr(&out));
            for (position, task) in log_tasks(&scored).iter().enumerate() {
                let sums = task["options"].as_array().unwrap().iter().map(|o| o["logprob_sum"].as_f64().unwrap()).collect();
                alone.insert((format.to_owned(), position as u64, rotation), sums);
            }
        }
    }

    let prompts = json_lines(&log);
    assert_eq!(prompts.len(), 4 * 4 * 4, "tasks × formats × rotations");
    let task_ids: Vec<u64> = {
        let mut ids: Vec<u64> = prompts.iter().map(|p| p["task"].as_u64().unwrap()).collect();
        ids.dedup();
        ids
    };
    assert_eq!(task_ids.len(), 4);
    for p in &prompts {
        let position = task_ids.iter().position(|&t| t == p["task"].as_u64().unwrap()).unwrap() as u64;
        let key = (p["format"].as_str().unwrap().to_owned(), position, p["rotation"].as_u64().unwrap() as usize);
        let shared: Vec<f64> = p["log_probs"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        // The batch rule: bit for bit, however the sweep packed its prompts.
        assert_eq!(&shared, &alone[&key], "{key:?}: in the sweep against scored apart");
    }

    // Every per-format figure agrees with the per-prompt log.
    for f in sweep["formats"].as_array().unwrap() {
        let name = f["format"].as_str().unwrap();
        let mine: Vec<&Value> = prompts.iter().filter(|p| p["format"] == name).collect();
        let right = |p: &Value| p["pick"] == p["gold"];
        let original = mine.iter().filter(|p| p["rotation"] == 0 && right(p)).count();
        // Fractions, as the results JSON gives them (schema_version 2).
        assert!((f["accuracy"].as_f64().unwrap() - 0.25 * original as f64).abs() < 1e-9, "{name}");
        let circular = task_ids.iter().filter(|&&t| mine.iter().filter(|p| p["task"] == t).all(|p| right(p))).count();
        assert!((f["circular_accuracy"].as_f64().unwrap() - 0.25 * circular as f64).abs() < 1e-9, "{name}");
        // Each with its 95 % Wilson interval (4 tasks: 0 right is [0, 0.49]).
        for (value, interval) in [("accuracy", "accuracy_interval"), ("circular_accuracy", "circular_interval")] {
            let (v, low, high) = (f[value].as_f64().unwrap(), f[interval][0].as_f64().unwrap(), f[interval][1].as_f64().unwrap());
            assert!(low <= v && v <= high && high - low > 0.2, "{name} {value}: {v} in [{low}, {high}]");
        }
        let picks: Vec<u64> = f["picks"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
        assert_eq!(picks.len(), 4, "{name}");
        for (position, &count) in picks.iter().enumerate() {
            assert_eq!(count, mine.iter().filter(|p| p["pick"] == position).count() as u64, "{name}");
        }
        assert_eq!(f["accuracy_by_rotation"].as_array().unwrap().len(), 4);
        let pride = &f["pride"];
        assert_eq!((pride["calibration_tasks"].as_u64(), pride["debiased_tasks"].as_u64()), (Some(2), Some(2)), "{name}");
        let prior: f64 = pride["prior"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap()).sum();
        assert!((prior - 1.0).abs() < 1e-9, "{name}: the prior is a distribution");
    }
    let across = &sweep["accuracy_across_formats"];
    assert!(across["min"].as_f64() <= across["mean"].as_f64() && across["mean"].as_f64() <= across["max"].as_f64());
    let svg = std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect::<Vec<_>>();
    assert!(svg.iter().any(|n| n.starts_with("sweep-accuracy-1-") && n.ends_with(".svg")), "{svg:?}");
    for name in svg.iter().filter(|n| n.ends_with(".svg")) {
        check_plot_text(&plots.join(name));
    }
}

#[test]
fn models_are_ranked_per_format_in_one_run_or_from_saved_sweeps() {
    let model = model();
    let dir = tempdir();
    let file = repo("datasets/commonsense-qa-validation.bin");
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", &file, "--tasks", "3", "--formats", "upper.dot.newline,digit.paren.comma", "-t", "2", "--json"];
        args.extend(extra);
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let both = dir.path().join("both.json");
    // The same weights in another file (the same file twice is refused).
    let copy = dir.path().join("copy.gguf");
    std::fs::copy(&model, &copy).unwrap();
    let report = sweep(&["-m", &model, "-m", path_str(&copy), "--save-json", path_str(&both)]);
    let models = report["models"].as_array().unwrap();
    assert_eq!(models[0]["formats"], models[1]["formats"], "the same weights score the same");
    let comparison = &report["comparison"];
    // Tied in both formats: both share rank 1 everywhere, and nothing reverses.
    assert_eq!(comparison["rank_distribution"], serde_json::json!([[2, 0], [2, 0]]));
    assert_eq!(comparison["pairs"][0]["tied"], 2);
    assert_eq!(comparison["reversal_rate"], 0.0);
    // No format ranks two equal models: τ is said to be undefined, not NaN.
    let text = run(&["sweep", "--compare", path_str(&both)]);
    assert!(stdout(&text).contains("Kendall τ between formats: undefined") && !stdout(&text).contains("NaN"), "{}", stdout(&text));

    // A third sweep run apart, compared with the saved pair.
    let apart = dir.path().join("apart.json");
    sweep(&["-m", &model, "-fa", "off", "--save-json", path_str(&apart)]);
    let out = run(&["sweep", "--compare", path_str(&both), path_str(&apart), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let compared: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(compared["models"].as_array().unwrap().len(), 3);
    let ranks = compared["comparison"]["rank_distribution"].as_array().unwrap();
    assert_eq!(ranks.len(), 3);
    for counts in ranks {
        assert_eq!(counts.as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>(), 2, "every format ranks every model");
    }

    // Sweeps of other formats do not compare.
    let other = dir.path().join("other.json");
    let out =
        run(&["sweep", &file, "-m", &model, "--tasks", "3", "--formats", "upper.dot.newline", "-t", "2", "--save-json", path_str(&other)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["sweep", "--compare", path_str(&both), path_str(&other)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("swept other formats than"), "{}", stderr(&out));
}

#[test]
fn the_scaffold_format_rebuilds_the_committed_file_from_its_source() {
    let dir = tempdir();
    let out = run(&[
        "sweep",
        "--benchmark",
        "mmlu-validation",
        "--sources",
        &sources(),
        "--formats",
        "upper.dot.newline",
        "--write-tasks",
        path_str(dir.path()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read(dir.path().join("upper.dot.newline.r0.bin")).unwrap();
    assert_eq!(written, std::fs::read(repo("datasets/mmlu-validation.bin")).unwrap());
}

#[test]
fn sweep_refuses_what_it_cannot_render() {
    let text_file = repo("datasets/arc-easy-validation.bin");
    let out = run(&["sweep", &text_file, "--write-tasks", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("arc-easy-validation.bin: task 0 is not in the letter scaffold"), "{}", stderr(&out));

    let letter_file = repo("datasets/mmlu-validation.bin");
    let out = run(&["sweep", &letter_file, "--formats", "upper.dash.newline", "--write-tasks", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(stderr(&out).contains("--formats: unknown format \"upper.dash.newline\""), "{}", stderr(&out));

    let out = run(&["sweep", &letter_file, "--tasks", "1", "--pride", "0.5", "--write-tasks", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("PriDe needs at least two tasks: one to estimate the prior, one to debias; give at least 2 tasks (--tasks), or sweep without --pride"),
        "{}",
        stderr(&out)
    );

    let out = run(&["sweep", "--benchmark", "boolq-validation", "--sources", &sources(), "--write-tasks", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("item 0 comes with a passage"), "{}", stderr(&out));

    let out = run(&["sweep", &letter_file, "--pride", "1.5"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(stderr(&out).contains("expected a share above 0 and below 1"), "{}", stderr(&out));
}

#[test]
fn ctrl_c_stops_a_sweep_and_writes_nothing() {
    let dir = tempdir();
    let log = dir.path().join("prompts.jsonl");
    let saved = dir.path().join("sweep.json");
    let child = mcscore()
        .args(["sweep", "-m", &model(), &repo("datasets/mmlu-validation.bin"), "--tasks", "50", "--circular", "-t", "2"])
        .args(["--log-samples", path_str(&log), "--save-json", path_str(&saved)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough to be scoring (model loaded), far from the end of 9,600 prompts.
    std::thread::sleep(std::time::Duration::from_secs(4));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "no output, not even a partial one: {left:?}");
}

#[test]
fn the_recorded_sweep_re_renders_byte_for_byte() {
    let dir = tempdir();
    let recorded = |ext: &str| repo(&format!("docs/results/sweep-mmlu-validation-200.{ext}"));
    let plots = dir.path().join("plots");
    let saved = dir.path().join("sweep.json");
    let out = run(&["sweep", "--compare", &recorded("json"), "--plots", path_str(&plots), "--save-json", path_str(&saved)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), std::fs::read_to_string(recorded("txt")).unwrap(), "text report");
    let svg = plots.join("sweep-accuracy-1-gemma-3-270m-q4_k_m.svg");
    assert_eq!(std::fs::read(svg).unwrap(), std::fs::read(recorded("svg")).unwrap(), "accuracy plot");
    // Recorded before results schema 2 (points, no version); saved again in
    // it: the same report in fractions, which renders the same text again.
    let points: Value = serde_json::from_str(&std::fs::read_to_string(recorded("json")).unwrap()).unwrap();
    let fractions: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert!(points.get("schema_version").is_none());
    assert_eq!(fractions["schema_version"], 3);
    let (was, is) = (&points["models"][0]["formats"][3], &fractions["models"][0]["formats"][3]);
    assert_eq!(is["accuracy"].as_f64().unwrap(), was["accuracy"].as_f64().unwrap() / 100.0);
    assert_eq!((&is["picks"], &is["pia"]), (&was["picks"], &was["pia"]), "counts and PIA are not points");
    let again = run(&["sweep", "--compare", path_str(&saved)]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again), std::fs::read_to_string(recorded("txt")).unwrap(), "the text report from the re-saved sweep");
}

/// A sweep split over 2 shards by item and merged is the unsplit sweep's report
/// (all but its token counts and seconds, which depend on what a process shared).
#[test]
fn sweep_shards_merge_into_the_unsplit_report() {
    let dir = tempdir();
    let model = model();
    let file = repo("datasets/mmlu-validation.bin");
    let common = ["--tasks", "12", "--formats", "upper.dot.newline,digit.parens.comma,lower.colon.newline", "--circular", "-t", "2"];
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", file.as_str()];
        args.extend(common);
        args.extend(extra);
        let out = run(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        out
    };
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    sweep(&["-m", &model, "--save-json", &path("whole.json")]);
    sweep(&["-m", &model, "--shard", "0/2", "--save-json", &path("s0.json")]);
    sweep(&["-m", &model, "--shard", "1/2", "--save-json", &path("s1.json")]);
    sweep(&["--merge-shards", &path("s1.json"), &path("s0.json"), "--save-json", &path("merged.json")]);
    let read = |name: &str| {
        let mut report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap();
        for m in report["models"].as_array_mut().unwrap() {
            for key in ["tokens_decoded", "tokens_unshared", "scoring_seconds"] {
                m.as_object_mut().unwrap().remove(key);
            }
        }
        report
    };
    assert_eq!(read("merged.json"), read("whole.json"));
    let shard =
        |name: &str| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap() };
    let (n0, n1) = (shard("s0.json")["log_probs"].as_array().unwrap().len(), shard("s1.json")["log_probs"].as_array().unwrap().len());
    assert_eq!(n0 + n1, 12 * 4 * 3, "every prompt once");
    assert_eq!(n0 % 12, 0, "whole items: 3 formats × 4 rotations each");

    // A missing shard, or a shard of another sweep, is refused by name.
    let mut args = vec!["sweep", file.as_str()];
    args.extend(common);
    let missing = run(&[&args[..], &["--merge-shards", &path("s0.json")]].concat());
    assert!(stderr(&missing).contains("1 of the run's 2 shards missing: 1"), "{}", stderr(&missing));
    let other = run(&["sweep", &file, "--tasks", "12", "--formats", "upper.dot.newline", "--circular", "--merge-shards", &path("s0.json")]);
    assert!(stderr(&other).contains("a shard of another sweep: its formats differ"), "{}", stderr(&other));
    assert_eq!((missing.status.code(), other.status.code()), (Some(1), Some(1)));
    // Each shard says its format; a newer one is refused, not misread.
    let mut newer = shard("s1.json");
    assert_eq!(newer["version"], 1);
    newer["version"] = 2.into();
    std::fs::write(dir.path().join("newer.json"), newer.to_string()).unwrap();
    let refused = run(&[&args[..], &["--merge-shards", &path("s0.json"), &path("newer.json")]].concat());
    assert!(refused.status.code() == Some(1) && stderr(&refused).contains("written by a newer mcscore"), "{}", stderr(&refused));
    // A hostile shard is refused, not indexed: an index past its count, a row
    // of the wrong width, a run of another model.
    let refuse = |edit: &dyn Fn(&mut serde_json::Value), says: &str| {
        let mut edited = shard("s1.json");
        edit(&mut edited);
        std::fs::write(dir.path().join("edited.json"), edited.to_string()).unwrap();
        let out = run(&[&args[..], &["--merge-shards", &path("s0.json"), &path("edited.json")]].concat());
        assert!(out.status.code() == Some(1) && stderr(&out).contains(says), "{says}: {}", stderr(&out));
    };
    refuse(&|s| s["shard"]["index"] = 5.into(), "shard index 5 of 2 shards");
    refuse(&|s| s["log_probs"][3].as_array_mut().unwrap().push((-1.0).into()), "5 log-probabilities (finite and at most 0 each) for 4 IDs");
    refuse(&|s| s["model"] = "other.gguf".into(), "its model differs");
}

/// `--limit N` sweeps each group's first N tasks where the file's manifest
/// records groups (here the bundled one's, by the name `mmlu-validation`), as
/// `score --limit` does; `--limit-total N` the file's first N; both recorded.
#[test]
fn a_sweep_limit_counts_per_group_as_scores_does() {
    let model = model();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", "-m", &model, "mmlu-validation", "--formats", "upper.dot.newline", "--json"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let per_group = sweep(&["--limit", "1"]);
    assert_eq!(
        (per_group["tasks"].clone(), per_group["limit"].clone(), per_group["limit_per_group"].clone()),
        (57.into(), 1.into(), true.into())
    );
    let total = sweep(&["--limit-total", "2"]);
    assert_eq!((total["tasks"].clone(), total["limit"].clone(), total["limit_per_group"].clone()), (2.into(), 2.into(), false.into()));
    let out = run(&["sweep", "mmlu-validation", "--limit", "1", "--tasks", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
