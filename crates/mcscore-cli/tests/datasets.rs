//! `mcscore build`, `verify` and the bundled default, through the binary.

mod common;

use common::*;

#[test]
fn committed_manifest_verifies_against_the_real_sources() {
    let out = run(&["verify", "--manifest", &repo("manifest.json"), "--sources", &sources()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("mmlu-test.bin: verified: 14042 tasks match cais/mmlu"), "{}", stdout(&out));
}

#[test]
fn build_then_verify_and_catch_a_tampered_file() {
    let dir = tempdir();
    let manifest = dir.path().join("manifest.json");
    let out_dir = dir.path().join("datasets");
    let out = run(&[
        "build",
        "mmlu-validation",
        "--sources",
        &sources(),
        "--out",
        path_str(&out_dir),
        "--manifest",
        path_str(&manifest),
        "--progress",
        "lines",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1531 tasks, letter mode"), "{}", stdout(&out));
    // Progress in a log (stderr is a pipe here): the build's count is known
    // only at its end, so its lines say tasks written and the rate.
    assert!(
        stderr(&out).lines().any(|l| l.starts_with("mcscore: building mmlu-validation: 1531 tasks, ") && l.ends_with(" tasks/s")),
        "{}",
        stderr(&out)
    );
    let built = out_dir.join("mmlu-validation.bin");
    assert_eq!(std::fs::read(&built).unwrap(), std::fs::read(repo("datasets/mmlu-validation.bin")).unwrap(), "reproducible");
    let ok = run(&["verify", path_str(&built), "--manifest", path_str(&manifest), "--sources", &sources(), "--progress", "lines"]);
    assert!(ok.status.success(), "{}", stdout(&ok));
    let auto = run(&["verify", path_str(&built), "--manifest", path_str(&manifest), "--sources", &sources()]);
    assert!(auto.status.success() && !stderr(&auto).contains("mcscore: verifying"), "a second's work prints no lines: {}", stderr(&auto));
    let verified = stderr(&ok);
    let tenths: Vec<&str> = verified.lines().filter(|l| l.starts_with("mcscore: verifying mmlu-validation: ")).collect();
    assert_eq!(tenths.len(), 10, "{}", stderr(&ok));
    assert!(tenths[9].starts_with("mcscore: verifying mmlu-validation: 1531/1531 tasks (100 %), "), "{}", stderr(&ok));
    let quiet = run(&["verify", path_str(&built), "--manifest", path_str(&manifest), "--sources", &sources(), "--progress", "none"]);
    assert!(quiet.status.success() && !stderr(&quiet).contains("mcscore: verifying"), "{}", stderr(&quiet));

    // Move task 5's gold label: still a valid file, so only verify can tell.
    let mut bytes = std::fs::read(&built).unwrap();
    let offset = u32::from_le_bytes(bytes[4 + 4 * 5..8 + 4 * 5].try_into().unwrap()) as usize;
    let next = u32::from_le_bytes(bytes[4 + 4 * 6..8 + 4 * 6].try_into().unwrap()) as usize;
    let labels = next - 4 - 16; // mc2 count, then four i32 labels before it
    let gold = (0..4).find(|k| bytes[labels + 4 * k] == 1).unwrap();
    bytes[labels + 4 * gold] = 0;
    bytes[labels + 4 * ((gold + 1) % 4)] = 1;
    assert!(offset < labels);
    std::fs::write(&built, &bytes).unwrap();
    assert!(run(&["validate", path_str(&built)]).status.success(), "structurally still valid");
    let bad = run(&["verify", path_str(&built), "--manifest", path_str(&manifest), "--sources", &sources()]);
    assert_eq!(bad.status.code(), Some(1));
    let report = stdout(&bad);
    assert!(report.contains("differs from the manifest"), "{report}");
    assert!(report.contains(&format!("task 5: gold option is {}, the source says {gold}", (gold + 1) % 4)), "{report}");
}

#[test]
fn unknown_benchmark_and_missing_source_fail_loudly() {
    let out = run(&["build", "no-such-benchmark", "--sources", &sources()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown benchmark \"no-such-benchmark\""), "{}", stderr(&out));
    let out = run(&["build", "medqa-train", "--sources", &sources()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("medqa-train: no local copy is registered"), "{}", stderr(&out));
    // From the hub: an unpinned benchmark, and an unreachable hub (a closed
    // local port), each with the flags that build from a local copy instead.
    let dir = tempdir();
    let out = run(&["build", "piqa-validation", "--out", path_str(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no verified revision") && stderr(&out).contains("--source PATH"), "{}", stderr(&out));
    let out = mcscore()
        .args(["build", "boolq-validation", "--out", path_str(dir.path())])
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env("HF_HOME", dir.path())
        .env_remove("MCSCORE_SOURCES")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("hub download failed") && stderr(&out).contains("--source PATH"), "{}", stderr(&out));
}

#[test]
fn default_model_scores_the_bundled_dataset() {
    model(); // fails with the way to fetch it if missing
    let cache = tempdir();
    let out = mcscore()
        .args(["score", "--multiple-choice-tasks", "12", "--json"])
        .env("MCSCORE_CACHE_DIR", cache.path())
        .env("MCSCORE_MODEL", model())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("scoring the bundled arc-easy-validation.bin"), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["tasks"], 12);
    assert_eq!(json["file_sha256"], "328d30f5f768e13d777f08d714462188b66dab767b5b5aa9c550f13827496246");
}

#[test]
fn a_file_built_from_an_absolute_source_path_verifies() {
    // The manifest records the source by its name; verify is given the file again.
    let dir = tempdir();
    let (manifest, out_dir) = (dir.path().join("manifest.json"), dir.path().join("datasets"));
    let source =
        std::fs::canonicalize(format!("{}/ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Easy_validation.jsonl", sources())).unwrap();
    let source = path_str(&source);
    let out = run(&["build", "arc-easy-validation", "--source", source, "--out", path_str(&out_dir), "--manifest", path_str(&manifest)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&manifest).unwrap().contains("\"path\": \"ARC-Easy_validation.jsonl\""));
    let file = out_dir.join("arc-easy-validation.bin");
    let out = run(&["verify", path_str(&file), "--manifest", path_str(&manifest), "--source", source]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}
