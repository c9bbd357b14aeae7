//! Several models and files in one `score`, the table of models × files,
//! and every table command's `--format csv|markdown|latex`, on the real model.

mod common;

use common::*;

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn several_models_and_files_give_one_table_and_a_log_per_run() {
    let dir = tempdir();
    let model = model();
    // The same model under a second name: two rows, which must agree.
    let second = dir.path().join("second.gguf");
    std::os::unix::fs::symlink(&model, &second).unwrap();
    let (text5, letter4) = (reference("mc_text5.bin"), reference("mc_letter4.bin"));
    let files = format!("{text5},{letter4}");
    let logs = dir.path().join("logs");
    let base = ["score", "-m", &model, "-m", path_str(&second), "-bf", &files, "--limit-total", "8", "-t", "2"];
    let with = |extra: &[&str]| -> Vec<String> { base.iter().chain(extra).map(|s| s.to_string()).collect() };
    let args = with(&["--log-samples", path_str(&logs), "--json"]);
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let all = json(&out);
    assert_eq!(schema_complaints("score.schema.json", &all), Vec::<String>::new(), "{all:#}");
    let table = &all["table"];
    let first = model.rsplit('/').next().unwrap().trim_end_matches(".gguf").to_owned();
    assert_eq!(table["models"], serde_json::json!([first, "second"]), "{table}");
    assert_eq!(table["benchmarks"], serde_json::json!(["mc_text5", "mc_letter4"]), "{table}");
    assert_eq!(table["normalisation"], "acc_norm");
    let runs = all["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for (k, run) in runs.iter().enumerate() {
        let (m, b) = (k / 2, k % 2);
        assert_eq!(run["tasks"], 8, "{run}");
        assert_eq!(table["cells"][m][b]["accuracy"], run["metrics"]["acc_norm"]["accuracy"], "cell {m},{b}");
        // Each run's log, named MODEL.FILE.jsonl.
        let log = logs.join(format!("{}.{}.jsonl", table["models"][m].as_str().unwrap(), table["benchmarks"][b].as_str().unwrap()));
        assert_eq!(log_footer(&log)["scored"], 8, "{}", log.display());
    }
    // One model under two names scores the same.
    assert_eq!(table["cells"][0], table["cells"][1]);
    let mean = (table["cells"][0][0]["accuracy"].as_f64().unwrap() + table["cells"][0][1]["accuracy"].as_f64().unwrap()) / 2.0;
    assert_eq!(table["mean"][0].as_f64().unwrap(), mean);
    // A cell is what scoring that file alone gives.
    let alone = json(&run(&["score", "-m", &model, "-bf", &letter4, "--limit-total", "8", "-t", "2", "--json"]));
    assert_eq!(alone["metrics"], runs[1]["metrics"]);

    // Resumed: every log is complete, so nothing is scored and the table is the same.
    let args = with(&["--log-samples", path_str(&logs), "--resume", "--json"]);
    let again = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(json(&again)["table"], *table);
    assert!(stderr(&again).contains("already holds the complete run"), "{}", stderr(&again));

    // The table for people, and as CSV, Markdown and LaTeX, from the logs.
    let resumed = |format: &str| {
        let args = with(&["--log-samples", path_str(&logs), "--resume", "--format", format]);
        let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let points = |m: usize, b: usize| format!("{:.2}", 100.0 * table["cells"][m][b]["accuracy"].as_f64().unwrap());
    let human = resumed("human");
    assert!(human.starts_with("acc_norm of 2 models on 2 task files"), "{human}");
    assert!(human.lines().nth(2).unwrap().contains(&format!("{} ± ", points(0, 0))), "{human}");
    let csv = resumed("csv");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][..6], ["model", "file", "tasks", "normalisation", "accuracy", "stderr"], "{csv}");
    assert_eq!(rows.len(), 5, "{csv}");
    assert_eq!(rows[2][4].parse::<f64>().unwrap(), table["cells"][0][1]["accuracy"].as_f64().unwrap(), "{csv}");
    let markdown = resumed("markdown");
    let lines: Vec<&str> = markdown.lines().collect();
    assert_eq!(lines[0], "| model | mc_text5 (%) | mc_letter4 (%) | mean (%) |", "{markdown}");
    assert_eq!(lines[1], "| --- | ---: | ---: | ---: |");
    assert!(lines[2].starts_with(&format!("| {first} | {} ± ", points(0, 0))), "{markdown}");
    let latex = resumed("latex");
    assert!(
        latex
            .starts_with("\\begin{tabular}{lrrr}\n\\toprule\nmodel & mc\\_text5 (\\%) & mc\\_letter4 (\\%) & mean (\\%) \\\\\n\\midrule\n"),
        "{latex}"
    );
    assert!(latex.contains("$\\pm$") && latex.ends_with("\\bottomrule\n\\end{tabular}\n"), "{latex}");

    // compare and report print the same forms; compare's old --csv is --format csv, with a warning.
    let (a, b) = (logs.join(format!("{first}.mc_text5.jsonl")), logs.join("second.mc_text5.jsonl"));
    let old = run(&["compare", path_str(&a), path_str(&b), "--csv"]);
    let new = run(&["compare", path_str(&a), path_str(&b), "--format", "csv"]);
    assert_eq!(stdout(&old), stdout(&new));
    assert!(stderr(&old).contains("compare --csv is now --format csv"), "{}", stderr(&old));
    let compared = stdout(&run(&["compare", path_str(&a), path_str(&b), "--format", "markdown"]));
    assert!(compared.starts_with("| base | other | tasks | base_accuracy (%) |"), "{compared}");
    assert!(compared.lines().nth(2).unwrap().contains(" | 0.00 | "), "the same model differs by 0: {compared}");
    let reported = stdout(&run(&["report", path_str(&a), "--format", "latex"]));
    assert!(reported.starts_with("\\begin{tabular}{lllrrr}\n"), "{reported}");
    assert!(reported.contains(" & normalisation & acc\\_norm & "), "{reported}");

    // One run's tables: its accuracies, the baselines beside them.
    let one = run(&["score", "-m", &model, "-bf", &letter4, "--limit-total", "8", "-t", "2", "--format", "csv"]);
    let csv = stdout(&one);
    let acc_norm = csv.lines().find(|l| l.contains(",acc_norm,")).unwrap_or_else(|| panic!("{csv}"));
    assert!(csv.starts_with("model,file,scope,name,normalisation,tasks,accuracy,"), "{csv}");
    assert_eq!(acc_norm.split(',').nth(6).unwrap().parse::<f64>().unwrap(), alone["metrics"]["acc_norm"]["accuracy"].as_f64().unwrap());
    assert!(csv.lines().any(|l| l.contains(",majority_class,")), "{csv}");
    // Shards merged print the same table as the run they make.
    let shards: Vec<_> = (0..2).map(|k| dir.path().join(format!("shard{k}.jsonl"))).collect();
    for (k, shard) in shards.iter().enumerate() {
        let out = run(&[
            "score",
            "-m",
            &model,
            "-bf",
            &letter4,
            "--limit-total",
            "8",
            "-t",
            "2",
            "--shard",
            &format!("{k}/2"),
            "--log-samples",
            path_str(shard),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let merged = run(&["merge", path_str(&shards[0]), path_str(&shards[1]), "--format", "csv"]);
    assert_eq!(stdout(&merged), csv, "{}", stderr(&merged));
}

#[test]
fn several_runs_refuse_what_belongs_to_one() {
    let dir = tempdir();
    let model = model();
    let text5 = reference("mc_text5.bin");
    // Two files under one label.
    let copy = dir.path().join("mc_text5.bin");
    std::fs::copy(&text5, &copy).unwrap();
    let usage = |args: &[&str], says: &str| {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    };
    usage(&["score", "-m", &model, "-bf", &text5, "-bf", path_str(&copy)], "both are labelled mc_text5");
    usage(&["score", "-m", &model, "-bf", &text5, "-bf", &text5], "given twice");
    let two = format!("{text5},{}", reference("mc_letter4.bin"));
    usage(&["score", "-m", &model, "-bf", &two, "--format", "llama"], "several models or task files do not go with --format llama");
    usage(&["score", "-m", &model, "-bf", &two, "--timings"], "--timings");
    usage(&["score", "-m", &model, "-bf", &two, "--normalisation", "acc-pmi"], "--normalisation acc-pmi needs --pmi");
    // An empty name in a list is refused, never the default model or dataset in its place.
    usage(&["score", "-m", &model, "-bf", ","], "-bf \",\": an empty name");
    usage(&["score", "-m", &format!("{model},"), "-bf", &text5], "-m \"");
    usage(
        &["score", "-m", &model, "--quantize", "Q8_0,q8_0", "-bf", &two, "--log-samples", path_str(&dir.path().join("q"))],
        "--quantize Q8_0: given twice",
    );
    // A run's log that exists is continued only when asked, before any run starts.
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let stem = model.rsplit('/').next().unwrap().trim_end_matches(".gguf").to_owned();
    std::fs::write(logs.join(format!("{stem}.mc_letter4.jsonl")), "").unwrap();
    usage(&["score", "-m", &model, "-bf", &two, "--log-samples", path_str(&logs)], "exists; add --resume to continue it");
    assert!(!logs.join(format!("{stem}.mc_text5.jsonl")).exists(), "nothing was scored");
}

#[test]
fn quantize_score_and_compare_in_one_resumable_job() {
    let dir = tempdir();
    let model = model();
    let study = dir.path().join("study");
    let letter4 = reference("mc_letter4.bin");
    let args = [
        "score",
        "-m",
        &model,
        "--quantize",
        "Q8_0,Q4_0",
        "-bf",
        &letter4,
        "--limit-total",
        "12",
        "-t",
        "2",
        "--log-samples",
        path_str(&study),
    ];
    let out = run(&[&args[..], &["--json"]].concat());
    let all = json(&out);
    assert_eq!(schema_complaints("score.schema.json", &all), Vec::<String>::new(), "{all:#}");
    let stem = model.rsplit('/').next().unwrap().trim_end_matches(".gguf").to_owned();
    let quants = [format!("{stem}.Q8_0"), format!("{stem}.Q4_0")];
    assert_eq!(all["table"]["models"], serde_json::json!([stem, quants[0], quants[1]]), "{}", all["table"]);
    // Each quant is a real model file, scored and logged, and compared with the model.
    for q in &quants {
        assert!(study.join(format!("{q}.gguf")).is_file(), "{q}");
        assert_eq!(log_footer(&study.join(format!("{q}.mc_letter4.jsonl")))["scored"], 12);
    }
    let comparison = &all["comparisons"][0];
    assert_eq!(comparison["base"]["label"], stem.as_str());
    let others: Vec<&str> = comparison["others"].as_array().unwrap().iter().map(|p| p["other"]["label"].as_str().unwrap()).collect();
    assert_eq!(others, quants.iter().map(String::as_str).collect::<Vec<_>>());
    // The comparison is `mcscore compare`'s on the logs.
    let logs: Vec<String> =
        [&stem, &quants[0], &quants[1]].iter().map(|m| path_str(&study.join(format!("{m}.mc_letter4.jsonl"))).to_owned()).collect();
    let compared = json(&run(&["compare", &logs[0], &logs[1], &logs[2], "--json"]));
    for k in 0..2 {
        for key in ["difference", "verdict", "flips", "mcnemar"] {
            assert_eq!(compared["others"][k][key], comparison["others"][k][key], "{key}");
        }
    }

    // Again with --resume: the quants are reused, nothing is scored, the answer is the same;
    // the text says it first.
    let again = run(&[&args[..], &["--resume"]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stderr(&again).matches(": reused").count(), 2, "{}", stderr(&again));
    let text = stdout(&again);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with(&format!("mc_letter4: {} vs {stem}: ", quants[0])), "{text}");

    // A file under a quant's name that the study did not make is refused, not scored.
    std::fs::write(study.join("quants.json"), "{}").unwrap();
    let out = run(&[&args[..], &["--resume"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not record it as Q8_0 quantized from"), "{}", stderr(&out));
    // A type that needs an importance matrix, without one: refused before any work.
    let out = run(&["score", "-m", &model, "--quantize", "IQ2_XS", "-bf", &letter4, "--log-samples", path_str(&dir.path().join("iq"))]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--quantize IQ2_XS: this type needs an importance matrix"), "{}", stderr(&out));
}
