//! The real lm-evaluation-harness (PyPI lm-eval 0.4.13, scripts/setup-lm-eval)
//! scores a local multiple-choice task through `mcscore serve`, offline, three
//! ways: `local-completions` with token prompts and the remote tokenizer, the
//! same with text prompts, and the `gguf` model type. Its per-document
//! log-likelihoods must be `mcscore score`'s own numbers for the same strings,
//! bit for bit where the tokens are the same (the batch rule), and its acc
//! and acc_norm must agree wherever the margin exceeds what tokenising moves.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::server::Server;
use common::*;
use mcscore_format::{write_tasks, TaskFile};
use serde_json::{json, Value};

/// The documents scored: the validation file's first 30 (an lm-eval run
/// costs about 0.8 s per document through the server on 2 cores).
const DOCS: usize = 30;

/// Per task: each option's summed log-probability, from a --log-samples file.
fn mcscore_scores(log: &Path) -> Vec<Vec<f64>> {
    log_tasks(log).iter().map(|t| t["options"].as_array().unwrap().iter().map(|o| o["logprob_sum"].as_f64().unwrap()).collect()).collect()
}

/// One lm-eval document: its per-option log-likelihoods and its acc, acc_norm.
struct LmDoc {
    lls: Vec<f64>,
    acc: f64,
    acc_norm: f64,
    /// What lm-eval asked for: per option, its context and continuation.
    requests: Vec<(String, String)>,
}

fn run_lm_eval(dir: &Path, name: &str, args: &[&str]) -> HashMap<usize, LmDoc> {
    let out = dir.join(format!("out-{name}"));
    let output = Command::new("python3")
        .args([
            "-m",
            "lm_eval",
            "run",
            "--tasks",
            "mcscore_arc_easy",
            "--include_path",
            path_str(dir),
            "--log_samples",
            "--output_path",
            path_str(&out),
        ])
        .args(args)
        .env("PYTHONPATH", lm_eval_path())
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("TOKENIZERS_PARALLELISM", "false")
        .output()
        .expect("python3 runs");
    let tail = |text: String| text.chars().rev().take(4000).collect::<Vec<_>>().into_iter().rev().collect::<String>();
    assert!(output.status.success(), "lm-eval ({name}) failed:\n{}", tail(stderr(&output)));
    // lm-eval names the folder after the model (or at random, for gguf).
    let samples = std::fs::read_dir(&out)
        .unwrap()
        .flat_map(|folder| std::fs::read_dir(folder.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("samples_"))
        .unwrap_or_else(|| panic!("lm-eval ({name}) wrote no samples:\n{}", tail(stderr(&output))));
    let number = |v: &Value| v.as_str().map_or_else(|| v.as_f64().unwrap(), |s| s.parse().unwrap());
    std::fs::read_to_string(samples)
        .unwrap()
        .lines()
        .map(|line| {
            let s: Value = serde_json::from_str(line).unwrap();
            let lls = s["filtered_resps"].as_array().unwrap().iter().map(|r| number(&r[0])).collect();
            let requests = (0..)
                .map_while(|k| s["arguments"].get(format!("gen_args_{k}")))
                .map(|a| (a["arg_0"].as_str().unwrap().to_owned(), a["arg_1"].as_str().unwrap().to_owned()))
                .collect();
            let doc = LmDoc { lls, acc: number(&s["acc"]), acc_norm: number(&s["acc_norm"]), requests };
            (s["doc_id"].as_u64().unwrap() as usize, doc)
        })
        .collect()
}

/// Bounds on lm-eval's option differences against mcscore score's, and on
/// its sums where the tokens are the same. Measured: sums the same bits, and
/// differences within 7e-15 (where lm-eval's sums hold a shared token more,
/// the subtraction rounds otherwise), all the documents, all three ways.
/// Before the batch rule the bounds were twice what scoring each task alone
/// moved mcscore's own sums.
const GAP_MEDIAN: f64 = 1e-12;
const GAP_MAX: f64 = 1e-12;
const DIRECT_MAX: f64 = 0.0;

/// Each option's score against option 0's: the tokens every option shares
/// cancel, so these compare whatever the two programs call the continuation.
fn differences(scores: &[f64]) -> Vec<f64> {
    scores[1..].iter().map(|s| s - scores[0]).collect()
}

/// The best value's lead over the second best.
fn margin(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    sorted[0] - sorted[1]
}

/// How many tokens the server's tokenizer makes of `text`, no BOS added.
fn token_count(server: &Server, text: &str) -> usize {
    server.post("/tokenize", &json!({"prompt": text, "add_special_tokens": false})).json()["tokens"].as_array().unwrap().len()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The real ARC-Easy validation source, its first [`DOCS`] rows, and the
/// same tasks of the verified task file built from it, in `dir`: `arc.bin`,
/// `arc.jsonl`, and lm-eval's own arc_easy task over the local file with
/// mcscore's scaffold, `task.yaml`. The task file, and each option's length
/// in characters (lm-eval's acc_norm divides by it).
fn arc_docs(dir: &Path) -> (TaskFile, Vec<Vec<usize>>) {
    let source = format!("{}/ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Easy_validation.jsonl", sources());
    let lines: Vec<String> = std::fs::read_to_string(&source).unwrap().lines().take(DOCS).map(str::to_owned).collect();
    let file = TaskFile::open(repo("datasets/arc-easy-validation.bin")).unwrap();
    let mut chars: Vec<Vec<usize>> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let row: Value = serde_json::from_str(line).unwrap();
        let task = file.task(i);
        assert_eq!(task.question, format!("Question: \"{}\" Answer:", row["question"].as_str().unwrap()), "task {i}");
        let texts: Vec<&str> = row["choices"]["text"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert_eq!(task.options(), texts.as_slice(), "task {i}");
        chars.push(texts.iter().map(|t| t.chars().count()).collect());
    }
    write_tasks(dir.join("arc.bin"), file.tasks().take(DOCS)).unwrap();
    std::fs::write(dir.join("arc.jsonl"), lines.join("\n") + "\n").unwrap();
    let yaml = format!(
        "task: mcscore_arc_easy\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    validation: {}\nvalidation_split: validation\noutput_type: multiple_choice\n\
         doc_to_text: 'Question: \"{{{{question}}}}\" Answer:'\ndoc_to_target: \"{{{{choices.label.index(answerKey)}}}}\"\ndoc_to_choice: \"{{{{choices.text}}}}\"\n\
         target_delimiter: \" \"\nmetric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n",
        path_str(&dir.join("arc.jsonl"))
    );
    std::fs::write(dir.join("task.yaml"), yaml).unwrap();
    (file, chars)
}

#[test]
fn lm_eval_scores_through_mcscore_serve_as_mcscore_score_does() {
    lm_eval_path();
    let dir = tempdir();
    let dir = dir.path();

    let (file, chars) = arc_docs(dir);
    let bin = dir.join("arc.bin");

    // mcscore's own scores. Under the batch rule a served prompt whose tokens
    // are a task's scores as the task does; where lm-eval tokenises otherwise,
    // the sums move by what another tokenisation moves them.
    let model = model();
    let score = |log: &Path, extra: &[&str]| {
        let output = run(&[&["score", "-m", &model, "-bf", path_str(&bin), "-t", "2", "--log-samples", path_str(log)], extra].concat());
        assert!(output.status.success(), "{}", stderr(&output));
        mcscore_scores(log)
    };
    let packed = score(&dir.join("packed.jsonl"), &[]);

    let server = Server::start(&[]);
    let base = format!("http://{}", server.address);
    let completions = format!("model=gemma-3-270m-q4_k_m,base_url={base}/v1/completions,tokenizer_backend=remote,num_concurrent=4");
    let text = format!("{completions},tokenized_requests=False");
    let gguf = format!("base_url={base}");
    let runs = [
        ("tokens", vec!["--model", "local-completions", "--model_args", completions.as_str(), "--batch_size", "8"]),
        ("text", vec!["--model", "local-completions", "--model_args", text.as_str(), "--batch_size", "8"]),
        ("gguf", vec!["--model", "gguf", "--model_args", gguf.as_str()]),
    ];
    // Where lm-eval's continuation tokens are exactly mcscore's scored tokens
    // (no leading token shared by every option), the sums compare directly.
    let same_tokens: Vec<bool> = (0..DOCS)
        .map(|i| {
            let task = file.task(i);
            let context = token_count(&server, task.question);
            let scored: Vec<u64> = log_tasks(&dir.join("packed.jsonl"))[i]["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["tokens"].as_u64().unwrap())
                .collect();
            task.options()
                .iter()
                .zip(&scored)
                .all(|(o, &n)| token_count(&server, &format!("{} {o}", task.question)) - context == n as usize)
        })
        .collect();

    let mut report = Vec::new();
    for (name, args) in &runs {
        let docs = run_lm_eval(dir, name, args);
        assert_eq!(docs.len(), DOCS, "{name}");
        let mut gaps: Vec<f64> = Vec::new();
        let mut direct: Vec<f64> = Vec::new();
        let (mut acc_checked, mut norm_checked) = (0, 0);
        for (i, ours) in packed.iter().enumerate() {
            let doc = &docs[&i];
            assert_eq!(doc.lls.len(), ours.len(), "{name}: document {i}");
            gaps.extend(differences(&doc.lls).iter().zip(differences(ours)).map(|(x, y)| (x - y).abs()));
            if same_tokens[i] {
                direct.extend(doc.lls.iter().zip(ours).map(|(x, y)| (x - y).abs()));
            }
            let gold = file.task(i).gold().unwrap();
            // acc: the summed log-likelihoods' first maximum, where the tokens
            // are the same or mcscore's margin is beyond what tokenising moves.
            if same_tokens[i] || margin(ours) > GAP_MAX {
                assert_eq!(doc.acc, f64::from(u8::from(first_max(ours) == gold)), "{name}: document {i}: acc");
                acc_checked += 1;
            }
            // acc_norm: lm-eval divides by the option's characters.
            if same_tokens[i] {
                let per_char: Vec<f64> = ours.iter().zip(&chars[i]).map(|(s, &c)| s / c as f64).collect();
                let min_chars = *chars[i].iter().min().unwrap() as f64;
                if margin(&per_char) > 2.0 * DIRECT_MAX / min_chars {
                    assert_eq!(doc.acc_norm, f64::from(u8::from(first_max(&per_char) == gold)), "{name}: document {i}: acc_norm");
                    norm_checked += 1;
                }
            }
        }
        let gap_median = median(&mut gaps);
        let gap_max = gaps[gaps.len() - 1];
        let direct_median = median(&mut direct);
        let direct_max = direct.last().copied().unwrap_or(0.0);
        report.push(format!(
            "{name}: option differences vs mcscore score: median {gap_median:.4}, max {gap_max:.4}; \
             sums of {} options whose tokens are the same: median |Δ| {direct_median:.2e}, max {direct_max:.2e}; acc checked on {acc_checked} documents, acc_norm on {norm_checked}",
            direct.len()
        ));
        // A row off by one, a missing BOS or a wrong sum is off by nats.
        assert!(gap_median <= GAP_MEDIAN, "{name}: median gap {gap_median}\n{}", report.join("\n"));
        assert!(gap_max <= GAP_MAX, "{name}: largest gap {gap_max}\n{}", report.join("\n"));
        assert!(direct_max <= DIRECT_MAX, "{name}: largest |Δ| of the same tokens {direct_max}\n{}", report.join("\n"));
        // Measured on the first 30: 97 options, acc on 30 documents, acc_norm on 24.
        assert!(
            direct.len() >= 5 * DOCS / 2 && acc_checked >= DOCS * 4 / 5 && norm_checked >= DOCS / 2,
            "{name}: too little compared\n{}",
            report.join("\n")
        );
    }
    println!("{}", report.join("\n"));
    assert!(server.log_has("POST /v1/completions 200"));
}

/// `--apply_chat_template` through `local-completions`: lm-eval renders each
/// chat with a Hugging Face tokenizer (here transformers' conversion of the
/// GGUF's own, carrying llama.cpp's Gemma template: tests/python/gguf_tokenizer.py)
/// and sends the rendered prompt and the option, without a delimiter, as
/// token ids. What it sends is what `score --chat-template` scores: the same
/// prompt text, the option straight after the generation prompt, one BOS;
/// its numbers are score's but for what it counts as part of every option
/// (the generation prompt's closing newline, the tokens all options share),
/// so its acc is score's acc.
#[test]
fn lm_eval_apply_chat_template_through_serve_scores_as_score_chat_template_does() {
    let lm_eval = lm_eval_path();
    let dir = tempdir();
    let dir = dir.path();
    let (file, _) = arc_docs(dir);
    let template = llama_cpp_template("google-gemma-2-2b-it");
    let model = model();

    let tokenizer = dir.join("hf-tokenizer");
    let made = Command::new("python3")
        .args([
            &repo("crates/mcscore-cli/tests/python/gguf_tokenizer.py"),
            &model,
            path_str(&tokenizer),
            "--chat-template",
            path_str(&template),
        ])
        .env("PYTHONPATH", &lm_eval)
        .output()
        .expect("python3 runs");
    assert!(made.status.success(), "gguf_tokenizer.py (transformers from scripts/setup-lm-eval): {}", stderr(&made));
    let probe: Value = serde_json::from_str(stdout(&made).lines().last().unwrap()).unwrap();

    let log = dir.join("chat.jsonl");
    let output = run(&[
        "score",
        "-m",
        &model,
        "-bf",
        path_str(&dir.join("arc.bin")),
        "--chat-template",
        path_str(&template),
        "--log-samples",
        path_str(&log),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let ours = mcscore_scores(&log);
    let header = log_header(&log);
    let chat = &header["chat"];
    assert_eq!(chat["bos"], "template");

    let server = Server::start(&[]);
    let tokens = server.post("/tokenize", &json!({"prompt": probe["probe"], "add_special_tokens": false})).json()["tokens"].clone();
    assert_eq!(probe["ids"], tokens, "the Hugging Face tokenizer tokenises as llama.cpp does");
    let args = format!(
        "model=gemma-3-270m-q4_k_m,base_url=http://{}/v1/completions,tokenizer_backend=huggingface,tokenizer={},tokenized_requests=True,num_concurrent=4",
        server.address,
        path_str(&tokenizer)
    );
    let docs =
        run_lm_eval(dir, "chat", &["--model", "local-completions", "--model_args", &args, "--batch_size", "8", "--apply_chat_template"]);
    assert_eq!(docs.len(), DOCS);

    // What lm-eval sent: the prompt mcscore renders, and the option after it
    // with no " " (a space there is the delimiter trap, lm-eval #3508).
    let first = &docs[&0];
    assert_eq!(first.requests[0].0, chat["first_task_prompt"].as_str().unwrap(), "lm-eval's rendered prompt is mcscore's");
    assert!(first.requests[0].0.ends_with(chat["generation_prompt"].as_str().unwrap()));
    // lm-eval moves the context's trailing whitespace into the continuation
    // (`_encode_pair`), so each of its sums also holds the log-probability of
    // the generation prompt's closing "\n", the same for every option, and it
    // sums the tokens every option shares, which score (as llama-perplexity)
    // leaves in the context: the options' differences are score's, and where
    // no token is shared, so are the sums plus the newline's. Its acc is then
    // score's acc; its acc_norm (per character of the option) is not.
    let scored = log_tasks(&log);
    let (mut direct, mut moved, mut largest) = (0, 0, 0.0f64);
    for (i, ours) in ours.iter().enumerate() {
        let doc = &docs[&i];
        let task = file.task(i);
        let sent: Vec<&str> = doc.requests.iter().map(|(_, option)| option.as_str()).collect();
        assert_eq!(sent, task.options(), "document {i}: the options, as they are, after the generation prompt");
        let prompt = &doc.requests[0].0;
        assert!(doc.requests.iter().all(|(p, _)| p == prompt), "document {i}: one prompt");
        assert!(prompt.starts_with("<bos><start_of_turn>user\n") && !prompt.starts_with("<bos><bos>") && prompt.ends_with('\n'));
        for (k, (theirs, ours)) in differences(&doc.lls).iter().zip(differences(ours)).enumerate() {
            let gap = (theirs - ours).abs();
            largest = largest.max(gap);
            assert!(gap <= 1e-9, "document {i} option {}: lm-eval's difference {theirs}, score --chat-template's {ours}", k + 1);
        }
        let gold = task.gold().unwrap();
        if margin(ours) > 1e-9 {
            assert_eq!(doc.acc, f64::from(u8::from(first_max(ours) == gold)), "document {i}: acc");
        }
        let context = token_count(&server, prompt);
        let same_tokens = task.options().iter().zip(scored[i]["options"].as_array().unwrap()).all(|(option, logged)| {
            token_count(&server, &format!("{prompt}{option}")) - context == logged["tokens"].as_u64().unwrap() as usize
        });
        if !same_tokens {
            continue;
        }
        direct += 1;
        let reply = server.post("/v1/completions", &json!({"prompt": prompt, "max_tokens": 0, "echo": true, "logprobs": 1})).json();
        let newline = reply["choices"][0]["logprobs"]["token_logprobs"].as_array().unwrap().last().unwrap().as_f64().unwrap();
        for (k, (theirs, ours)) in doc.lls.iter().zip(ours).enumerate() {
            let gap = (theirs - (newline + ours)).abs();
            largest = largest.max(gap);
            assert!(gap <= 1e-9, "document {i} option {k}: lm-eval {theirs}, score --chat-template {ours} + the newline's {newline}");
        }
        let chars: Vec<f64> = task.options().iter().map(|o| o.chars().count() as f64).collect();
        let per_char = |offset: f64| -> Vec<f64> { ours.iter().zip(&chars).map(|(s, c)| (s + offset) / c).collect() };
        if margin(&per_char(newline)) > 1e-9 {
            assert_eq!(doc.acc_norm, f64::from(u8::from(first_max(&per_char(newline)) == gold)), "document {i}: acc_norm");
        }
        moved += usize::from(first_max(&per_char(newline)) != first_max(&per_char(0.0)));
    }
    assert!(direct >= DOCS / 2, "only {direct} of {DOCS} documents score the same tokens");
    let acc = docs.values().map(|d| d.acc).sum::<f64>() / DOCS as f64;
    println!(
        "lm-eval --apply_chat_template through serve: {DOCS} documents, acc {acc:.2} as score's; option differences \
         score's, sums of {direct} documents score's plus the newline's (largest gap {largest:.1e}); the newline moves \
         acc_norm's pick on {moved} of those"
    );
}
