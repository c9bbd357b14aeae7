//! `score --shard K/N` and `mcscore merge`: a run split over shards and merged
//! is the unsplit run, task line for task line (the batch rule), and
//! every way logs can fail to form one run is refused by name.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Scores 60 of the reference's letter tasks (llama-perplexity's pick) as shard `shard`, or unsharded.
fn score(dir: &Path, name: &str, shard: Option<&str>, extra: &[&str]) -> PathBuf {
    let log = dir.join(name);
    let model = model();
    let file = reference("mc_letter4.bin");
    let mut args = vec!["score", "-m", &model, &file, "--multiple-choice-tasks", "60", "-t", "2", "--log-samples", path_str(&log)];
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    args.extend(extra);
    let out = run(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    log
}

fn task_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().filter(|l| l.contains("\"type\":\"task\"")).map(str::to_owned).collect()
}

fn merge(args: &[&str]) -> std::process::Output {
    run(&[&["merge"], args].concat())
}

#[test]
fn merged_shards_are_the_unsharded_run() {
    let dir = tempdir();
    let shards: Vec<PathBuf> = (0..3).map(|k| score(dir.path(), &format!("s{k}.jsonl"), Some(&format!("{k}/3")), &[])).collect();
    let whole = score(dir.path(), "whole.jsonl", None, &["--json"]);
    // Shards are contiguous, balanced, and together the run.
    let sizes: Vec<usize> = shards.iter().map(|s| task_lines(s).len()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 60);
    assert!(sizes.iter().all(|&n| (15..=25).contains(&n)), "{sizes:?}");

    let merged = dir.path().join("merged.jsonl");
    let mut args: Vec<&str> = shards.iter().rev().map(|p| path_str(p)).collect();
    args.extend(["-o", path_str(&merged), "--json"]);
    let out = merge(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&merged).unwrap(), std::fs::read(&whole).unwrap(), "the merged log is the unsharded run's, byte for byte");
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((json["tasks"].as_u64(), json["shards"].as_u64()), (Some(60), Some(3)));

    // The merged log is a log like any other: report reads it, --resume finds it complete.
    let report = run(&["report", path_str(&merged)]);
    assert!(report.status.success(), "{}", stderr(&report));
    let model = model();
    let file = reference("mc_letter4.bin");
    let resumed = run(&[
        "score",
        "-m",
        &model,
        &file,
        "--multiple-choice-tasks",
        "60",
        "-t",
        "2",
        "--log-samples",
        path_str(&merged),
        "--resume",
        "--json",
    ]);
    assert!(resumed.status.success() && stderr(&resumed).contains("already holds the complete run"), "{}", stderr(&resumed));
    let again: serde_json::Value = serde_json::from_str(&stdout(&resumed)).unwrap();
    assert_eq!(again["metrics"], json["metrics"]);

    // --format llama: the unsharded run's stdout.
    let llama = merge(&[path_str(&shards[0]), path_str(&shards[1]), path_str(&shards[2]), "--format", "llama"]);
    let direct = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "60", "-t", "2", "--format", "llama"]);
    assert_eq!(stdout(&llama), stdout(&direct));
}

#[test]
fn logs_that_do_not_form_one_run_are_refused_by_name() {
    let dir = tempdir();
    let d = dir.path();
    let s0 = score(d, "s0.jsonl", Some("0/2"), &[]);
    let s1 = score(d, "s1.jsonl", Some("1/2"), &[]);
    // -b changes no score; flash attention does.
    let other_settings = score(d, "other.jsonl", Some("1/2"), &["-fa", "off"]);
    let other_count = score(d, "three.jsonl", Some("1/3"), &[]);
    let plain = score(d, "plain.jsonl", None, &[]);
    // An interrupted shard: its footer says incomplete.
    let text = std::fs::read_to_string(&s1).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = d.join("cut.jsonl");
    std::fs::write(&cut, format!("{}\n{}\n{{\"type\":\"footer\",\"complete\":false,\"scored\":1}}\n", lines[0], lines[1])).unwrap();
    // A shard whose task line was moved into another shard's log.
    let dup = d.join("dup.jsonl");
    let s0_text = std::fs::read_to_string(&s0).unwrap();
    let s0_lines: Vec<&str> = s0_text.lines().collect();
    let mut moved: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    moved[1] = s0_lines[1].to_owned();
    std::fs::write(&dup, moved.join("\n") + "\n").unwrap();

    let s = |p: &PathBuf| path_str(p).to_owned();
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec![s(&s0)], "1 of the run's 2 shards missing: 1".into()),
        (vec![s(&s0), s(&s0)], format!("shard 0 is given twice: {} and {}", s0.display(), s0.display())),
        (
            vec![s(&s0), s(&other_settings)],
            format!("{}: shard 1 is of another run than {}: its settings differs", other_settings.display(), s0.display()),
        ),
        (vec![s(&s0), s(&other_count)], "its shard count differs".into()),
        (vec![s(&s0), s(&cut)], format!("{}: shard 1 is incomplete: 1 of", cut.display())),
        (vec![s(&s0), s(&plain)], format!("{}: not a shard log", plain.display())),
        (vec![s(&s0), s(&dup)], "is scored by two shards".into()),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = merge(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(&expected), "{args:?}: {}", stderr(&out));
    }
    // Shard flags that cannot be honoured are usage errors.
    let model = model();
    let file = reference("mc_letter4.bin");
    for shard in ["2/2", "x", "auto"] {
        let out = run(&["score", "-m", &model, &file, "--shard", shard, "--log-samples", path_str(&d.join("x.jsonl"))]);
        assert_eq!(out.status.code(), Some(2), "--shard {shard}: {}", stderr(&out));
    }
    let out = run(&["score", "-m", &model, &file, "--shard", "0/300", "--log-samples", path_str(&d.join("y.jsonl"))]);
    assert!(stderr(&out).contains("300 shards for 200 tasks"), "{}", stderr(&out));
    assert!(!d.join("y.jsonl").exists(), "nothing written for a refused shard");
}

#[test]
fn plan_checks_the_study_and_merges_only_complete_runs() {
    let dir = tempdir();
    let study = dir.path().join("study.json");
    let write = |text: &str| std::fs::write(&study, text).unwrap();
    let plan = |args: &[&str]| run(&[&["plan", path_str(&study)], args].concat());
    let out = path_str(dir.path()).to_owned();
    for (text, expected) in [
        (format!(r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 0, "out": "{out}"}}"#), "shards is 0; give 1 to 100000"),
        (
            format!(
                r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 2, "out": "{out}", "settings": {{"x": ["--shard", "0/2"]}}}}"#
            ),
            "--shard is set by the plan",
        ),
        (format!(r#"{{"models": ["a/m.gguf", "b/m.gguf"], "files": ["f.bin"], "shards": 2, "out": "{out}"}}"#), "share the name \"m\""),
        (format!(r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 2, "out": "{out}", "gpus": 1}}"#), "unknown field `gpus`"),
        (format!(r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 2, "out": "{out}\\x"}}"#), "holds a backslash"),
    ] {
        write(&text);
        let result = plan(&["--slurm"]);
        assert_eq!(result.status.code(), Some(1), "{text}");
        assert!(stderr(&result).contains(expected), "{text}: {}", stderr(&result));
    }
    write(&format!(r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 3, "out": "{out}"}}"#));
    assert_eq!(plan(&[]).status.code(), Some(2), "nothing asked for");
    let script = plan(&["--slurm"]);
    assert!(stdout(&script).contains("#SBATCH --array=0-2\n") && stdout(&script).contains("--shard \"$shard/3\""), "{}", stdout(&script));
    // No placeholders: the image, claim and mount are the cluster's, and every path lies under the mount.
    let manifest = plan(&["--kubernetes"]);
    assert!(stderr(&manifest).contains("kubernetes.image is not set; --kubernetes needs the image"), "{}", stderr(&manifest));
    let volume = r#""kubernetes": {"image": "registry/mcscore:1", "volume_claim": "data", "mount": "/data"}"#;
    write(&format!(r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 3, "out": "{out}", {volume}}}"#));
    let manifest = plan(&["--kubernetes"]);
    assert!(stderr(&manifest).contains("models: a.gguf is not on the volume the job mounts at /data"), "{}", stderr(&manifest));
    write(&format!(r#"{{"models": ["/data/a.gguf"], "files": ["/data/f.bin"], "shards": 3, "out": "/data/out", {volume}}}"#));
    let manifest = plan(&["--kubernetes"]);
    assert!(stdout(&manifest).contains("completionMode: Indexed\n  completions: 3\n"), "{}", stdout(&manifest));
    assert!(stdout(&manifest).contains("cpu: '4'") && stdout(&manifest).contains("threads=4\n"), "{}", stdout(&manifest));

    // Resources follow the settings' -t and -ngl.
    let with = |settings: &str, slurm: &str| {
        format!(
            r#"{{"models": ["/data/a.gguf"], "files": ["/data/f.bin"], "shards": 2, "out": "/data/out", "settings": {settings}, "slurm": {slurm}, {volume}}}"#
        )
    };
    write(&with(r#"{"one": ["-t", "2"], "six": ["--threads", "6"]}"#, "{}"));
    let script = stdout(&plan(&["--slurm"]));
    assert!(script.contains("#SBATCH --cpus-per-task=6\n") && !script.contains("gpus-per-task"), "{script}");
    assert!(script.contains("flags=(-t 2);;") && script.contains("flags=(--threads 6);;"), "{script}");
    assert!(stdout(&plan(&["--kubernetes"])).contains("cpu: '6'"));
    for (settings, slurm, expected) in [
        (
            r#"{"x": ["-t", "8"]}"#,
            r#"{"cpus_per_task": 4}"#,
            r#"settings "x" run -t 8 threads, but each task gets 4 CPUs (slurm.cpus_per_task)"#,
        ),
        (
            r#"{"x": ["-ngl", "99"]}"#,
            "{}",
            r#"settings "x" offload layers to a GPU (-ngl 99), but the study requests none: set slurm.gpus_per_task"#,
        ),
        (
            r#"{"x": ["-ngl", "0"]}"#,
            r#"{"gpus_per_task": 1}"#,
            r#"requests 1 GPU(s) per task (slurm.gpus_per_task), but settings "x" keep every layer on the CPU"#,
        ),
    ] {
        write(&with(settings, slurm));
        let refused = plan(&["--slurm"]);
        assert_eq!(refused.status.code(), Some(1), "{settings}");
        assert!(stderr(&refused).contains(expected), "{settings}: {}", stderr(&refused));
    }
    write(&with(r#"{"gpu": ["-ngl", "20"]}"#, r#"{"gpus_per_task": 2}"#));
    let script = stdout(&plan(&["--slurm"]));
    assert!(script.contains("#SBATCH --gpus-per-task=2\n") && script.contains("threads=${SLURM_CPUS_PER_TASK:-4}"), "{script}");

    write(&format!(r#"{{"models": ["a.gguf"], "files": ["f.bin"], "shards": 3, "out": "{out}"}}"#));
    let merge = plan(&["--merge"]);
    assert_eq!(merge.status.code(), Some(1));
    assert!(stderr(&merge).contains("shard-0.jsonl: shard log not written yet"), "{}", stderr(&merge));
    assert!(stderr(&merge).contains("array indices 0,1,2 have not finished: resubmit them (sbatch --array=0,1,2"), "{}", stderr(&merge));
}
