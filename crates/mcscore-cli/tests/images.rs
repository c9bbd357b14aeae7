//! Image tasks end to end: a synthetic MC-VQA set in VLMEvalKit's TSV
//! layout (scripts/make-vqa) scored by a random LLaVA 1.5 (scripts/make-model
//! --mmproj: a random Llama and a random CLIP projector of llama.cpp's `mlp`
//! kind; no vision-language GGUF is reachable here, so the scores mean
//! nothing, but the path is llama.cpp's own).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A random LLaVA (model, projector) named `name` in `dir`, its weights from `seed`.
fn random_vlm(dir: &Path, name: &str, seed: &str) -> (PathBuf, PathBuf) {
    let projector = dir.join(format!("{name}.mmproj.gguf"));
    let shape = ["--dim", "128", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ff", "256", "--type", "q8_0", "--seed", seed];
    let model = random_model(dir, name, &[&shape[..], &["--mmproj", path_str(&projector)]].concat());
    (model, projector)
}

/// A random LLaVA (model, projector) and the synthetic set, in `dir`.
fn setup(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (model, projector) = random_vlm(dir, "vlm", "0");
    let set = dir.join("shapes.tsv");
    let made = Command::new(repo("scripts/make-vqa")).args(["-o", path_str(&set), "--rows", "20"]).output().unwrap();
    assert!(made.status.success(), "make-vqa: {}", stderr(&made));
    (model, projector, set)
}

#[test]
fn a_vqa_file_scores_the_same_whatever_the_batch_and_its_log_names_its_images() {
    let dir = tempdir();
    let (model, projector, set) = setup(dir.path());
    let score = |log: &Path, extra: &[&str]| {
        let args = [&["score", "-m", path_str(&model), "--mmproj", path_str(&projector), "-bf", path_str(&set)], extra].concat();
        let out = run(&[&args[..], &["--log-samples", path_str(log), "-t", "2"]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let (wide, narrow) = (dir.path().join("wide.jsonl"), dir.path().join("narrow.jsonl"));
    let out = score(&wide, &["-b", "2048", "--json", "--timings"]);
    score(&narrow, &["-b", "60", "-np", "1"]);
    assert_eq!(option_scores(&wide), option_scores(&narrow));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tasks"], 20);

    // --timings: the images' phase apart from the fills' decodes, every phase
    // within the run's wall time; the projector's file and buffers in "memory".
    let (t, s) = (&json["timings"], &json["timings"]["scoring"]);
    assert!(s["images"].as_f64().unwrap() > 0.0 && s["decode"].as_f64().unwrap() > 0.0, "{t}");
    let parts: f64 =
        ["read", "load", "tokenise", "plan", "hash", "log", "unconditional"].iter().map(|k| t[k].as_f64().unwrap()).sum::<f64>()
            + ["context", "batching", "images", "decode", "projection", "logits", "consumer"]
                .iter()
                .map(|k| s[k].as_f64().unwrap())
                .sum::<f64>();
    let total = t["total"].as_f64().unwrap();
    assert!(parts <= total * 1.001 && parts >= total * 0.9, "phases {parts} s of {total} s");
    let memory = &json["memory"];
    let file = std::fs::metadata(&projector).unwrap().len();
    assert_eq!(memory["projector_file"], file);
    let mmproj = |holds: &str| -> Vec<u64> {
        let buffers = memory["buffers"].as_array().unwrap();
        buffers.iter().filter(|b| b["name"] == "mmproj CPU" && b["use"] == holds).map(|b| b["bytes"].as_u64().unwrap()).collect()
    };
    // Its weights, read into memory (logged in MiB to two decimals): the
    // file less its metadata.
    let weights = mmproj("weights");
    assert!(weights.len() == 1 && weights[0] <= file && weights[0] + 20_000 >= file * 9 / 10, "{weights:?} of {file}: {memory}");
    assert_eq!(mmproj("compute").len(), 1, "{memory}");
    let err = stderr(&out);
    for line in ["images (mtmd)", "the model and projector files", "mmproj CPU"] {
        assert!(err.contains(line), "{line} missing: {err}");
    }

    // The log names the projector by content, and each task's image.
    let header = log_header(&wide);
    let sha = |p: &Path| mcscore_format::sha256_file(p).unwrap();
    assert_eq!(header["projector"]["sha256"], sha(&projector));
    let tasks = log_tasks(&wide);
    let images: Vec<&str> = tasks.iter().map(|t| t["images"][0].as_str().unwrap()).collect();
    assert_eq!(images.len(), 20);
    // Row 4 shares row 3's image by naming its index (make-vqa does every fifth).
    assert_eq!(images[4], images[3]);

    // Three options where D is empty (make-vqa leaves it so in every third row).
    assert_eq!(tasks[2]["options"].as_array().unwrap().len(), 3);

    // The same rows as JSON Lines naming image files: the same scores.
    let text = std::fs::read_to_string(&set).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let mut jsonl = String::new();
    for row in lines {
        let mut object = serde_json::Map::new();
        for (key, cell) in header.iter().zip(row.split('\t')) {
            if *key == "image" && cell.len() > 64 {
                use base64::Engine as _;
                let file = format!("{}.png", object["index"].as_str().unwrap());
                std::fs::write(dir.path().join(&file), base64::engine::general_purpose::STANDARD.decode(cell).unwrap()).unwrap();
                object.insert("image_path".into(), file.into());
            } else {
                object.insert((*key).into(), cell.into());
            }
        }
        jsonl.push_str(&format!("{}\n", serde_json::Value::Object(object)));
    }
    let jsonl_set = dir.path().join("shapes.jsonl");
    std::fs::write(&jsonl_set, jsonl).unwrap();
    let from_files = dir.path().join("files.jsonl.log");
    let out = run(&[
        "score",
        "-m",
        path_str(&model),
        "--mmproj",
        path_str(&projector),
        "-bf",
        path_str(&jsonl_set),
        "--log-samples",
        path_str(&from_files),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(option_scores(&from_files), option_scores(&wide));
    // Another picture under an image's name: the log is of other images.
    std::fs::copy(dir.path().join("2.png"), dir.path().join("0.png")).unwrap();
    let args = ["score", "-m", path_str(&model), "--mmproj", path_str(&projector), "-bf", path_str(&jsonl_set)];
    let out = run(&[&args[..], &["--log-samples", path_str(&from_files), "--resume"]].concat());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("images_sha256"), "{}", stderr(&out));

    // Two shards merged: the run's log, task for task.
    let shards: Vec<PathBuf> = (0..2).map(|k| dir.path().join(format!("shard{k}.jsonl"))).collect();
    for (k, log) in shards.iter().enumerate() {
        score(log, &["--shard", &format!("{k}/2")]);
    }
    let merged = dir.path().join("merged.jsonl");
    let out = run(&["merge", path_str(&shards[0]), path_str(&shards[1]), "-o", path_str(&merged)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(option_scores(&merged), option_scores(&wide));
    assert_eq!(
        log_tasks(&merged).iter().map(|t| t["images"].clone()).collect::<Vec<_>>(),
        tasks.iter().map(|t| t["images"].clone()).collect::<Vec<_>>()
    );

    // A resume with another projector is refused, naming it.
    let (_, other) = random_vlm(dir.path(), "vlm2", "1");
    let resumed = run(&[
        "score",
        "-m",
        path_str(&model),
        "--mmproj",
        path_str(&other),
        "-bf",
        path_str(&set),
        "--log-samples",
        path_str(&wide),
        "--resume",
    ]);
    assert!(!resumed.status.success());
    assert!(stderr(&resumed).contains("projector_sha256"), "{}", stderr(&resumed));
}

#[test]
fn image_faults_name_the_file_row_and_flag() {
    let dir = tempdir();
    let (model, projector, set) = setup(dir.path());
    // No projector: the flag to give.
    let out = run(&["score", "-m", path_str(&model), "-bf", path_str(&set)]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("a file of image tasks needs the model's vision projector: `mcscore score --mmproj FILE`"),
        "{}",
        stderr(&out)
    );
    // So do commands that take no projector.
    let out = run(&["compare", "-m", path_str(&model), "-m", path_str(&model), "--until-decided", "-bf", path_str(&set)]);
    assert!(stderr(&out).contains("a file of image tasks needs the model's vision projector"), "{}", stderr(&out));

    // A row whose base64 is corrupt, and one whose PNG is cut short.
    let text = std::fs::read_to_string(&set).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let corrupt = dir.path().join("corrupt.tsv");
    let mut cells: Vec<String> = lines[3].split('\t').map(str::to_owned).collect();
    let image = cells.last_mut().unwrap();
    image.replace_range(100..101, "!");
    lines[3] = cells.join("\t");
    std::fs::write(&corrupt, lines.join("\n") + "\n").unwrap();
    let out = run(&["score", "-m", path_str(&model), "--mmproj", path_str(&projector), "-bf", path_str(&corrupt)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("corrupt.tsv: line 4 (byte"), "{}", stderr(&out));
    assert!(stderr(&out).contains("index \"2\": image 0 is not base64 (at byte 100 of it)"), "{}", stderr(&out));

    let cut = dir.path().join("cut.tsv");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut cells: Vec<String> = lines[2].split('\t').map(str::to_owned).collect();
    let image = cells.last_mut().unwrap();
    let half = image.len() / 8 * 4;
    image.truncate(half);
    lines[2] = cells.join("\t");
    std::fs::write(&cut, lines.join("\n") + "\n").unwrap();
    let out = run(&["score", "-m", path_str(&model), "--mmproj", path_str(&projector), "-bf", path_str(&cut)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("task 1: image 0 cannot be read"), "{}", stderr(&out));
    // Nothing of llama.cpp's video path (ffprobe on the bytes) runs or speaks.
    assert!(!stderr(&out).contains("ffprobe"), "{}", stderr(&out));

    // validate and inspect, without a model: every image decoded as llama.cpp does.
    let out = run(&["validate", path_str(&set)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("valid (20 tasks, 20 images ("), "{}", stdout(&out));
    let out = run(&["validate", path_str(&cut), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["image_faults"][0]["line"], 3);
    assert_eq!(json[0]["image_faults"][0]["index"], "1");
    // verify: a VQA file is its own source, so no manifest; each file
    // checked whatever the one before it, the image that fails named by line.
    let out = run(&["verify", path_str(&cut), path_str(&set), "--manifest", path_str(&dir.path().join("none.json"))]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("shapes.tsv: verified (20 tasks, 20 images ("), "{}", stdout(&out));
    assert!(stdout(&out).contains("cut.tsv: INVALID (1 image llama.cpp would not read"), "{}", stdout(&out));
    assert!(stdout(&out).contains("  line 3 (index \"1\", task 1): image 0:"), "{}", stdout(&out));
    assert!(stderr(&out).contains("1 of 2 file(s) failed verification"), "{}", stderr(&out));
    let out = run(&["verify", path_str(&set), "--source", path_str(&set)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("a VQA file is its own source"), "{}", stderr(&out));
    let out = run(&["inspect", path_str(&set), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((json[0]["tasks"].as_u64(), json[0]["categories"]["category"]["colour"].as_u64()), (Some(20), Some(10)));
    let out = run(&["inspect", path_str(&set), "--task", "2"]);
    assert!(stdout(&out).contains("image 0: 56 x 56 px"), "{}", stdout(&out));
    assert!(stdout(&out).contains("Please select the correct answer from the options above."), "{}", stdout(&out));
}

/// The paper's study on the random VLM: every format and rotation of the
/// synthetic set, the same bits whatever the batch.
#[test]
fn a_circular_sweep_of_a_vqa_file_does_not_move_with_the_batch() {
    let dir = tempdir();
    let (model, projector, set) = setup(dir.path());
    let sweep = |log: &Path, extra: &[&str]| {
        let args = [
            &["sweep", path_str(&set), "-m", path_str(&model), "--mmproj", path_str(&projector), "--circular", "--limit-total", "6"][..],
            &["--log-samples", path_str(log), "-t", "2", "--json"],
            extra,
        ]
        .concat();
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (wide, narrow) = (dir.path().join("wide.jsonl"), dir.path().join("narrow.jsonl"));
    let report = sweep(&wide, &["-b", "2048"]);
    sweep(&narrow, &["-b", "60", "--formats", "upper.dot.newline,digit.parens.comma"]);
    let lines = |p: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let (all, two) = (lines(&wide), lines(&narrow));
    // 6 items (two of three options, four of four: rotations per item), 48 formats.
    assert_eq!(all.len(), 48 * (4 + 4 + 3 + 4 + 4 + 3));
    assert_eq!(report["formats"].as_array().unwrap().len(), 48);
    // Each prompt of the narrow run is the wide run's, bit for bit.
    for line in &two {
        let same = all.iter().find(|l| l["task"] == line["task"] && l["format"] == line["format"] && l["rotation"] == line["rotation"]);
        assert_eq!(same.unwrap()["log_probs"], line["log_probs"], "{line}");
    }
    // Two VLMs, each read with its own projector: the paper's reversals
    // between models; the first model's numbers are those it has alone.
    let (model2, other) = random_vlm(dir.path(), "vlm2", "1");
    let two_models = |projectors: &[&Path]| {
        let mut args = vec!["sweep", path_str(&set), "-m", path_str(&model), "-m", path_str(&model2), "--circular", "--limit-total", "6"];
        for p in projectors {
            args.extend(["--mmproj", path_str(p)]);
        }
        run(&[&args[..], &["--formats", "upper.dot.newline,digit.parens.comma", "-t", "2", "--json"]].concat())
    };
    let out = two_models(&[&projector, &other]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pair: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sha = |p: &Path| mcscore_format::sha256_file(p).unwrap();
    assert_eq!(pair["models"][0]["projector_sha256"], sha(&projector));
    assert_eq!(pair["models"][1]["projector_sha256"], sha(&other));
    assert_eq!(pair["comparison"]["pairs"].as_array().unwrap().len(), 1, "{}", pair["comparison"]);
    for format in pair["models"][0]["formats"].as_array().unwrap() {
        let alone = report["models"][0]["formats"].as_array().unwrap().iter().find(|f| f["format"] == format["format"]).unwrap();
        assert_eq!(alone["circular_accuracy"], format["circular_accuracy"]);
    }
    let out = two_models(&[&projector, &other, &projector]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--mmproj given 3 times for 2 models"), "{}", stderr(&out));
    // A projector with no images to read: a text FILE.
    let out = run(&["sweep", &reference("mc_letter4.bin"), "-m", path_str(&model), "--mmproj", path_str(&projector)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--mmproj reads the images of a VQA FILE"), "{}", stderr(&out));

    // Task files cannot hold the images.
    let out = run(&["sweep", path_str(&set), "--mmproj", path_str(&projector), "--write-tasks", path_str(&dir.path().join("t"))]);
    assert!(stderr(&out).contains("--write-tasks does not take a file of image tasks"), "{}", stderr(&out));
}

/// Runs of two VLMs on a VQA file: `report` and `compare` take their logs as
/// they take text runs', and `view`'s page shows each task's images as
/// thumbnails (data: URIs) in headless Chromium, offline, a question that
/// tries to run script shown as text.
#[test]
fn image_runs_are_reported_compared_and_viewed_with_thumbnails() {
    let dir = tempdir();
    let (model, projector, _) = setup(dir.path());
    let (model2, other) = random_vlm(dir.path(), "vlm2", "1");
    // Images larger than a thumbnail, and a hostile question in row 1.
    let set = dir.path().join("large.tsv");
    let made = Command::new(repo("scripts/make-vqa")).args(["-o", path_str(&set), "--rows", "6", "--size", "300"]).output().unwrap();
    assert!(made.status.success(), "make-vqa: {}", stderr(&made));
    let hostile = "<img src=x onerror=\"window.__pwned = 1\"></script><script>window.__pwned = 2</script>";
    let text = std::fs::read_to_string(&set).unwrap();
    let mut rows: Vec<Vec<String>> = text.lines().map(|l| l.split('\t').map(str::to_owned).collect()).collect();
    rows[2][1] = hostile.to_owned();
    std::fs::write(&set, rows.iter().map(|r| r.join("\t") + "\n").collect::<String>()).unwrap();

    let logs = [dir.path().join("vlm.jsonl"), dir.path().join("vlm2.jsonl")];
    for ((m, p), log) in [(&model, &projector), (&model2, &other)].into_iter().zip(&logs) {
        let out = run(&["score", "-m", path_str(m), "--mmproj", path_str(p), "-bf", path_str(&set), "--log-samples", path_str(log)]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = run(&["report", path_str(&logs[0]), path_str(&logs[1]), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["models"].as_array().unwrap().len(), 2, "{report}");
    let out = run(&["compare", path_str(&logs[0]), path_str(&logs[1]), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let compared: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(compared["others"][0]["tasks"], 6, "{compared}");

    let page = dir.path().join("page.html");
    let out = run(&["view", path_str(&logs[0]), path_str(&logs[1]), "-o", path_str(&page)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Each task's images by sha256, as the log names them, with the size in the PNG's header.
    let tasks: Vec<serde_json::Value> = log_tasks(&logs[0])
        .iter()
        .map(|t| {
            let row = &rows[t["task"].as_u64().unwrap() as usize + 1];
            use base64::Engine as _;
            // A row that shares an image names the row holding it.
            let mut cell = row.last().unwrap();
            if cell.len() < 64 {
                cell = rows.iter().find(|r| r[0] == *cell).unwrap().last().unwrap();
            }
            let png = base64::engine::general_purpose::STANDARD.decode(cell).unwrap();
            let side = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
            serde_json::json!({ "index": t["task"], "question": row[1], "images": t["images"], "sizes": [[side(16), side(20)]] })
        })
        .collect();
    assert_eq!(tasks[1]["question"], hostile);
    let case = dir.path().join("case.json");
    std::fs::write(&case, serde_json::json!({ "tasks": tasks }).to_string()).unwrap();
    view_browser(&setup_browser(), &["images", path_str(&page), path_str(&case)]);
}
