//! `mcscore report` end to end: two real runs of the default model, reported
//! as text, JSON, CSV and SVG; logs that cannot be compared are refused.

mod common;

use common::*;

fn score(dir: &std::path::Path, name: &str, file: &str, extra: &[&str]) -> std::path::PathBuf {
    let log = dir.join(name);
    let model = model();
    let mut args = vec!["score", "-m", &model, "-bf", file, "--multiple-choice-tasks", "30", "-t", "2", "--log-samples", path_str(&log)];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    log
}

#[test]
fn report_on_two_real_runs() {
    let dir = tempdir();
    let file = reference("mc_text5.bin");
    let a = score(dir.path(), "a.jsonl", &file, &["-c", "512", "-np", "16"]);
    let b = score(dir.path(), "b.jsonl", &file, &["-fa", "off"]);
    let plots = dir.path().join("plots");
    let out = run(&["report", path_str(&a), path_str(&b), "--json", "--plots", path_str(&plots)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let models = json["models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    for m in models {
        assert_eq!(m["tasks"], 30);
        let schemes: Vec<&str> = m["schemes"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(schemes, ["NR", "NM", "Elim", "Elim-NM", "CBM", "PPA", "AUC"]);
        // NR equals the engine's acc_norm accuracy on the same log, a fraction both.
        let nr = m["schemes"]["NR"]["mean"].as_f64().unwrap();
        let acc_norm = m["normalisations"]["acc_norm"]["mean"].as_f64().unwrap();
        assert!((nr - acc_norm).abs() < 1e-12 && (0.0..=1.0).contains(&acc_norm), "{nr} vs {acc_norm}");
        let brier = m["calibration"]["brier"].as_f64().unwrap();
        assert!((0.0..=2.0).contains(&brier));
        let e = &m["schemes"]["PPA"];
        assert!(e["low"].as_f64().unwrap() <= e["mean"].as_f64().unwrap() && e["mean"].as_f64().unwrap() <= e["high"].as_f64().unwrap());
    }
    assert_eq!(json["rankings"].as_array().unwrap().len(), 7);
    let names: Vec<String> = std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    let svgs: Vec<&String> = names.iter().filter(|n| n.ends_with(".svg")).collect();
    assert_eq!((svgs.len(), names.len()), (3, 6), "an SVG and a PNG of each plot: {names:?}");
    for svg in svgs {
        let text = std::fs::read_to_string(plots.join(svg)).unwrap();
        assert!(text.starts_with("<svg") && text.contains("</svg>"), "{svg}");
        let png = std::fs::read(plots.join(svg).with_extension("png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{svg}");
        check_plot_text(&plots.join(svg));
    }
    let text = run(&["report", path_str(&a), path_str(&b)]);
    assert!(stdout(&text).contains("Spearman ρ and Kendall τ with NR's ranking"), "{}", stdout(&text));
    // τ = 1 abstains on every task (p_max > 1 never holds); ε = 0 eliminates nothing.
    let strict = run(&["report", path_str(&a), "--tau", "1", "--epsilon", "0", "--json"]);
    let strict: serde_json::Value = serde_json::from_str(&stdout(&strict)).unwrap();
    for scheme in ["NM", "Elim", "Elim-NM"] {
        assert_eq!(strict["models"][0]["schemes"][scheme]["mean"], 0.0, "{}", strict["models"][0]["schemes"][scheme]);
    }
    let csv = run(&["report", path_str(&a), "--csv"]);
    assert!(stdout(&csv).starts_with("model,kind,metric,value,ci_low,ci_high\n"), "{}", stdout(&csv));
    assert!(stdout(&csv).lines().any(|l| l.contains(",calibration,ece,")));
}

#[test]
fn logs_of_different_datasets_or_unfinished_runs_are_refused() {
    let dir = tempdir();
    let a = score(dir.path(), "a.jsonl", &reference("mc_text5.bin"), &[]);
    let b = score(dir.path(), "b.jsonl", &reference("mc_letter4.bin"), &[]);
    let out = run(&["report", path_str(&a), path_str(&b)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("a report compares runs on the same dataset"), "{}", stderr(&out));
    // One run given twice (or under another name, or scored again with other
    // -np, which under the batch rule gives the same scores) is refused.
    let again = score(dir.path(), "again.jsonl", &reference("mc_text5.bin"), &["-np", "7"]);
    for twice in [&a, &again] {
        let out = run(&["report", path_str(&a), path_str(twice)]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("the same run as") && stderr(&out).contains("give each run once"), "{}", stderr(&out));
    }
    // An unfinished log: drop its last task line and the footer.
    let text = std::fs::read_to_string(&a).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, lines[..lines.len() - 2].join("\n") + "\n").unwrap();
    let out = run(&["report", path_str(&cut)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("29 of 30 tasks logged and no footer"), "{}", stderr(&out));
}

#[test]
fn pmi_pass_is_logged_and_reported() {
    let dir = tempdir();
    let log = score(dir.path(), "pmi.jsonl", &reference("mc_text5.bin"), &["--pmi"]);
    let tasks = log_tasks(&log);
    assert_eq!(tasks.len(), 30);
    for task in &tasks {
        let options = task["options"].as_array().unwrap();
        let pmi: Vec<f64> = options
            .iter()
            .map(|o| o["logprob_sum"].as_f64().unwrap() - o["uncond_logprob_sum"].as_f64().expect("uncond_logprob_sum logged"))
            .collect();
        let best = (1..pmi.len()).fold(0, |b, k| if pmi[k] > pmi[b] { k } else { b });
        assert_eq!(task["pred"]["acc_pmi"].as_u64().unwrap() as usize, best);
    }
    let out = run(&["report", path_str(&log), "--normalisation", "acc-pmi", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["models"][0]["normalisations"].as_object().unwrap().keys().nth(4).map(String::as_str), Some("acc_pmi"));
    // Without --pmi there is nothing to report acc_pmi from.
    let plain = score(dir.path(), "plain.jsonl", &reference("mc_text5.bin"), &[]);
    let out = run(&["report", path_str(&plain), "--normalisation", "acc-pmi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("needs a log of `mcscore score --pmi`"), "{}", stderr(&out));
}

#[test]
fn tokens_audit_of_the_default_model() {
    let out = run(&["tokens", "-m", &model(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pairs: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let pairs = pairs.as_array().unwrap();
    assert_eq!(pairs.len(), 16);
    assert_eq!(pairs[0]["format"], "upper.colon");
    // Gemma 3's tokenizer keeps every ID whole; "(A)" takes three tokens.
    assert!(pairs.iter().all(|p| p["flagged"] == false), "{pairs:?}");
    let parens = pairs.iter().find(|p| p["format"] == "upper.parens").unwrap();
    assert_eq!(parens["label_tokens"], serde_json::json!([3, 3, 3, 3]));
    // After an image, the text tokenised from the image's end: Gemma 3 splits
    // the labels as it does in text.
    let out = run(&["tokens", "-m", &model(), "--image", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(after.as_array().unwrap(), pairs);
    let out = run(&["tokens", "-m", &model(), "--image"]);
    assert!(stdout(&out).lines().next().unwrap().ends_with("after an image (\"<__media__>\\nQuestion: …\")"), "{}", stdout(&out));
}
