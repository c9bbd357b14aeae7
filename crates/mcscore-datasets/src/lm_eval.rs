//! lm-evaluation-harness tasks as task files, rendered by lm-eval itself.
//!
//! `build --lm-eval` runs [`EXPORT_SCRIPT`] with lm-eval's Python API: its
//! `simple_evaluate`, given a model that only records what it is asked, so
//! that few-shot contexts, seeds, `--limit`, `process_docs` functions and
//! groups are lm-eval's own. Each document's `(context, continuation)` pairs
//! become one task in llama-perplexity's multiple-choice layout: the context
//! as the question, each continuation less its leading space as an option.
//! Scored with `score --lm-eval`, every option then counts the tokens lm-eval
//! counts. What the file cannot hold exactly is refused with its reason.
//!
//! The manifest entry carries an [`LmEvalRecord`]: the lm-eval version, each
//! task's YAML hash and dataset, its groups and how they aggregate, and the
//! parts of lm-eval's results JSON that do not depend on scores, so that
//! `score --format lm-eval` writes lm-eval's file.

pub use crate::manifest::{Aggregate, ExportSettings, LmEvalGroup, LmEvalRecord, LmEvalTask};

/// lm-eval's metrics mcscore computes for multiple choice, from the same
/// log-likelihoods lm-eval would be given (`acc_mutual_info` from `score
/// --pmi`'s unconditional pass, which `--format lm-eval` turns on for it).
pub const METRICS: [&str; 4] = ["acc", "acc_norm", "acc_bytes", "acc_mutual_info"];

#[cfg(feature = "sources")]
pub use export::{export, verify, ExportSpec, LmEvalError, EXPORT_SCRIPT};

#[cfg(feature = "sources")]
mod export {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use mcscore_format::{Task, TaskFile, TaskWriter};
    use serde::Deserialize;

    use super::{Aggregate, ExportSettings, LmEvalGroup, LmEvalRecord, LmEvalTask, METRICS};
    use crate::manifest::{Entry, GroupRuns, Provenance, SourceFile};
    use crate::{DatasetError, VerifyFault};

    /// The Python program that asks lm-eval for its requests.
    pub const EXPORT_SCRIPT: &str = include_str!("lm_eval_export.py");

    /// The exit status with which the script refuses, its reason on stderr's last line.
    const REFUSED: i32 = 3;

    /// What to export, and with which Python.
    #[derive(Debug, Clone)]
    pub struct ExportSpec {
        /// The tasks, groups or tags, each to its own file.
        pub names: Vec<String>,
        /// A folder of task YAMLs (lm-eval's `--include_path`).
        pub include_path: Option<PathBuf>,
        /// Documents per task (lm-eval's `--limit`).
        pub limit: Option<f64>,
        /// Few-shot examples (lm-eval's `--num_fewshot`).
        pub num_fewshot: Option<u32>,
        /// The few-shot sampler's seed (lm-eval's `--fewshot_random_seed`).
        pub fewshot_seed: u64,
        /// The Python interpreter with lm-eval installed.
        pub python: PathBuf,
    }

    /// Why an export failed.
    #[derive(Debug, thiserror::Error)]
    pub enum LmEvalError {
        /// The interpreter could not be started.
        #[error("{}: could not be run: {source} (name a Python that has lm-eval installed with --python)", python.display())]
        NoPython {
            /// The interpreter.
            python: PathBuf,
            /// Why.
            source: std::io::Error,
        },
        /// lm-eval cannot be imported.
        #[error("{}: {reason} (install it: pip install lm-eval; or name another interpreter with --python)", python.display())]
        NoLmEval {
            /// The interpreter.
            python: PathBuf,
            /// lm-eval's import error.
            reason: String,
        },
        /// A task lm-eval refuses, or one that is not multiple choice.
        #[error("lm-eval task {task}: {reason}")]
        Refused {
            /// The task, group or tag.
            task: String,
            /// Why.
            reason: String,
        },
        /// A task lm-eval could not load: offline, its dataset is out of reach.
        #[error("lm-eval task {task}: {reason} (offline? an --include-path folder of task YAMLs can give its data from local files: dataset_path: json, with data_files)")]
        NotLoaded {
            /// The task, group or tag.
            task: String,
            /// lm-eval's error.
            reason: String,
        },
        /// lm-eval stopped with another error.
        #[error("lm-eval failed ({status}); the end of what it printed:\n{tail}")]
        Failed {
            /// Its exit status.
            status: String,
            /// The last lines of its stderr.
            tail: String,
        },
        /// The script named a task or group it did not export.
        #[error("lm-eval's export names {name} but holds no such task or group (the export script and lm-eval disagree)")]
        Inconsistent {
            /// The name.
            name: String,
        },
        /// What the script wrote could not be read.
        #[error("lm-eval's export could not be read: {0}")]
        Output(#[from] serde_json::Error),
        /// A document the task file cannot hold as lm-eval scores it.
        #[error("lm-eval task {task}: document {doc}: {reason}")]
        Unfit {
            /// The task.
            task: String,
            /// The document, by its lm-eval doc_id.
            doc: usize,
            /// Why.
            reason: String,
        },
    }

    #[derive(Deserialize)]
    struct Exported {
        lm_eval_version: Option<String>,
        python: Option<String>,
        exports: Vec<Export>,
        tasks: BTreeMap<String, ExportedTask>,
        groups: BTreeMap<String, ExportedGroup>,
        skeleton: BTreeMap<String, serde_json::Value>,
    }

    #[derive(Deserialize)]
    struct Export {
        name: String,
        tasks: Vec<String>,
        groups: Vec<String>,
    }

    #[derive(Deserialize)]
    struct ExportedTask {
        alias: String,
        docs: Vec<Doc>,
        metrics: Vec<String>,
        dropped: Vec<String>,
        yaml: Option<String>,
        yaml_sha256: Option<String>,
        dataset_path: Option<String>,
        dataset_name: Option<String>,
        split: Option<String>,
        revision: Option<String>,
        data_files: Option<serde_json::Value>,
    }

    #[derive(Deserialize)]
    struct ExportedGroup {
        alias: String,
        children: Vec<String>,
        leaves: Vec<String>,
        aggregate: Vec<Aggregate>,
        yaml: Option<String>,
        yaml_sha256: Option<String>,
    }

    #[derive(Deserialize)]
    pub(super) struct Doc {
        pub(super) doc_id: usize,
        pub(super) gold: Option<usize>,
        pub(super) choices: Vec<String>,
        pub(super) context: String,
        pub(super) continuations: Vec<String>,
    }

    /// One document as a task, and the whitespace lm-eval's context ended in.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) struct RenderedTask {
        pub(super) question: String,
        pub(super) options: Vec<String>,
        pub(super) gold: usize,
        pub(super) moved: String,
    }

    /// Python's `str.isspace`, which lm-eval's `rstrip` uses: Unicode's
    /// whitespace and the four information separators.
    fn python_space(c: char) -> bool {
        c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
    }

    /// A document as one task: lm-eval moves the context's trailing
    /// whitespace into each continuation before tokenising, and the layout
    /// joins question and option with one space, so each moved continuation
    /// must start with that space and be the choice lm-eval's `acc_norm`
    /// measures.
    pub(super) fn task_of(name: &str, doc: &Doc) -> Result<RenderedTask, LmEvalError> {
        let unfit = |reason: String| LmEvalError::Unfit { task: name.to_owned(), doc: doc.doc_id, reason };
        let context = doc.context.trim_end_matches(python_space);
        if context.is_empty() {
            return Err(unfit("its context is empty (lm-eval then conditions on the end-of-text token alone)".into()));
        }
        let moved = &doc.context[context.len()..];
        let mut options = Vec::with_capacity(doc.continuations.len());
        for (k, continuation) in doc.continuations.iter().enumerate() {
            let whole = format!("{moved}{continuation}");
            let Some(option) = whole.strip_prefix(' ') else {
                return Err(unfit(format!(
                    "option {k}'s continuation {whole:?} does not start with the one space that joins question and option in a task file"
                )));
            };
            if doc.choices.get(k).map(String::as_str) != Some(option) {
                return Err(unfit(format!(
                    "option {k}'s continuation {whole:?} is not a space and its choice {:?}, whose length acc_norm divides by",
                    doc.choices.get(k).map_or("", String::as_str)
                )));
            }
            options.push(option.to_owned());
        }
        let gold = doc.gold.ok_or_else(|| unfit("its target is not one of its choices (lm-eval warns and scores it wrong)".into()))?;
        Ok(RenderedTask { question: context.to_owned(), options, gold, moved: moved.to_owned() })
    }

    /// Runs lm-eval on `spec` and returns what it exported.
    fn run(spec: &ExportSpec) -> Result<Exported, LmEvalError> {
        let args = serde_json::json!({
            "tasks": spec.names,
            "include_path": spec.include_path.as_ref().map(|p| p.display().to_string()),
            "limit": spec.limit,
            "num_fewshot": spec.num_fewshot,
            "fewshot_seed": spec.fewshot_seed,
        });
        let output = Command::new(&spec.python)
            .arg("-c")
            .arg(EXPORT_SCRIPT)
            .arg(args.to_string())
            .output()
            .map_err(|source| LmEvalError::NoPython { python: spec.python.clone(), source })?;
        if output.status.success() {
            return Ok(serde_json::from_slice(&output.stdout)?);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(REFUSED) {
            #[derive(Deserialize)]
            struct Refusal {
                task: Option<String>,
                reason: String,
                kind: String,
            }
            // Its last line, or the last that reads as one: Python may print at exit.
            if let Some(refusal) = stderr.lines().rev().find_map(|l| serde_json::from_str::<Refusal>(l).ok()) {
                return Err(match refusal.task {
                    Some(task) if refusal.kind == "load" => LmEvalError::NotLoaded { task, reason: refusal.reason },
                    Some(task) => LmEvalError::Refused { task, reason: refusal.reason },
                    None => LmEvalError::NoLmEval { python: spec.python.clone(), reason: refusal.reason },
                });
            }
        }
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        Err(LmEvalError::Failed { status: output.status.to_string(), tail })
    }

    /// The provenance of an export: each task's YAML and local data files,
    /// hashed; hub datasets by name and revision.
    fn provenance(exported: &Exported, export: &Export) -> Result<Provenance, DatasetError> {
        let mut files = Vec::new();
        let mut datasets = Vec::new();
        let mut splits = Vec::new();
        let mut revision = None;
        for name in &export.tasks {
            let task = task(exported, name)?;
            if let (Some(yaml), Some(sha256)) = (&task.yaml, &task.yaml_sha256) {
                files.push(SourceFile { path: yaml.clone(), sha256: sha256.clone() });
            }
            let mut local = Vec::new();
            collect_strings(task.data_files.as_ref(), &mut local);
            for path in local {
                if Path::new(&path).is_file() {
                    files.push(SourceFile { sha256: crate::source_sha256(Path::new(&path))?, path });
                }
            }
            let dataset = task.dataset_path.clone().unwrap_or_default();
            if !datasets.contains(&dataset) {
                datasets.push(dataset);
            }
            let split = task.split.clone().unwrap_or_default();
            if !splits.contains(&split) {
                splits.push(split);
            }
            revision = revision.or(task.revision.clone());
        }
        for name in &export.groups {
            let group = group(exported, name)?;
            if let (Some(yaml), Some(sha256)) = (&group.yaml, &group.yaml_sha256) {
                files.push(SourceFile { path: yaml.clone(), sha256: sha256.clone() });
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files.dedup();
        Ok(Provenance { repo: datasets.join(","), config: String::new(), split: splits.join(","), revision, files })
    }

    fn collect_strings(value: Option<&serde_json::Value>, out: &mut Vec<String>) {
        match value {
            Some(serde_json::Value::String(s)) => out.push(s.clone()),
            Some(serde_json::Value::Array(items)) => items.iter().for_each(|v| collect_strings(Some(v), out)),
            Some(serde_json::Value::Object(map)) => map.values().for_each(|v| collect_strings(Some(v), out)),
            _ => {}
        }
    }

    /// The parts of lm-eval's results skeleton that concern `names`.
    fn results_of(exported: &Exported, names: &[&str]) -> BTreeMap<String, serde_json::Value> {
        exported
            .skeleton
            .iter()
            .map(|(key, value)| {
                let picked: serde_json::Map<String, serde_json::Value> = value
                    .as_object()
                    .map(|map| map.iter().filter(|(k, _)| names.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                (key.clone(), serde_json::Value::Object(picked))
            })
            .collect()
    }

    /// One name's tasks as the task file holds them, where each came from
    /// (lm-eval task, document), and its runs of lm-eval tasks.
    struct Rendered {
        tasks: Vec<RenderedTask>,
        from: Vec<(String, usize)>,
        groups: GroupRuns,
    }

    fn task<'e>(exported: &'e Exported, name: &str) -> Result<&'e ExportedTask, LmEvalError> {
        exported.tasks.get(name).ok_or_else(|| LmEvalError::Inconsistent { name: name.to_owned() })
    }

    fn group<'e>(exported: &'e Exported, name: &str) -> Result<&'e ExportedGroup, LmEvalError> {
        exported.groups.get(name).ok_or_else(|| LmEvalError::Inconsistent { name: name.to_owned() })
    }

    /// `spec`'s names through lm-eval, each as its tasks; every document
    /// is checked.
    fn render(spec: &ExportSpec) -> Result<(Exported, Vec<Rendered>), DatasetError> {
        let exported = run(spec)?;
        let mut files = Vec::new();
        for export in &exported.exports {
            let mut rendered = Rendered {
                tasks: Vec::new(),
                from: Vec::new(),
                groups: GroupRuns { field: "lm-eval task".into(), runs: Vec::new(), categories: None },
            };
            for name in &export.tasks {
                let docs = &task(&exported, name)?.docs;
                for (expected, doc) in docs.iter().enumerate() {
                    if doc.doc_id != expected {
                        let reason = format!("documents are not 0, 1, 2, … (this is number {expected})");
                        return Err(LmEvalError::Unfit { task: name.clone(), doc: doc.doc_id, reason }.into());
                    }
                    rendered.tasks.push(task_of(name, doc)?);
                    rendered.from.push((name.clone(), doc.doc_id));
                }
                if !docs.is_empty() {
                    rendered.groups.runs.push((name.clone(), docs.len()));
                }
            }
            if rendered.tasks.is_empty() {
                return Err(LmEvalError::Refused { task: export.name.clone(), reason: "lm-eval gave it no documents".into() }.into());
            }
            // Each task's innermost group, for the per-group tables.
            let mut parent = BTreeMap::new();
            for g in &export.groups {
                for child in group(&exported, g)?.children.iter().filter(|c| exported.tasks.contains_key(*c)) {
                    parent.insert(child.clone(), g.clone());
                }
            }
            if !parent.is_empty() {
                rendered.groups.categories = Some(parent);
            }
            files.push(rendered);
        }
        Ok((exported, files))
    }

    /// Exports `spec`'s tasks through lm-eval and writes one task file per
    /// name into `out` (`NAME.bin`), returning each manifest entry;
    /// `file_name` says how the manifest refers to a path. Nothing is written
    /// unless every document of every name fits.
    pub fn export(spec: &ExportSpec, out: &Path, file_name: &dyn Fn(&Path) -> String) -> Result<Vec<Entry>, DatasetError> {
        let (exported, files) = render(spec)?;
        // Every file is written beside its name, and renamed into place only
        // once all of them are: a task the format refuses leaves nothing.
        let mut writers = Vec::new();
        for (export, rendered) in exported.exports.iter().zip(&files) {
            let path = out.join(format!("{}.bin", export.name));
            let mut writer = TaskWriter::create(&path, rendered.tasks.len())?;
            for (t, (name, doc)) in rendered.tasks.iter().zip(&rendered.from) {
                let task = Task::new(&t.question, t.options.iter().map(String::as_str).collect(), t.gold);
                writer.write(&task).map_err(|e| LmEvalError::Unfit { task: name.clone(), doc: *doc, reason: e.to_string() })?;
            }
            writers.push((path, writer, provenance(&exported, export)?));
        }
        let mut entries = Vec::new();
        for ((export, rendered), (path, writer, source)) in exported.exports.iter().zip(files).zip(writers) {
            writer.finish()?;
            let summary = mcscore_format::Summary::of(&TaskFile::open(&path)?);
            let record = record_of(spec, &exported, export, &rendered)?;
            entries.push(Entry {
                name: export.name.clone(),
                file: file_name(&path),
                sha256: summary.sha256,
                bytes: summary.bytes,
                tasks: rendered.tasks.len(),
                option_counts: summary.option_counts,
                mode: summary.mode,
                chance: 100.0 * summary.chance,
                majority_class: 100.0 * summary.majority_class,
                min_parallel: summary.min_parallel,
                source,
                licence: "as the dataset's card gives it (exported by lm-eval)".into(),
                shots: None,
                groups: (rendered.groups.runs.len() > 1).then_some(rendered.groups),
                lm_eval: Some(Box::new(record)),
            });
        }
        Ok(entries)
    }

    /// What the manifest records of one name's export.
    fn record_of(spec: &ExportSpec, exported: &Exported, export: &Export, rendered: &Rendered) -> Result<LmEvalRecord, LmEvalError> {
        let names: Vec<&str> = export.tasks.iter().chain(&export.groups).map(String::as_str).collect();
        let mut tasks = Vec::new();
        for name in &export.tasks {
            let t = task(exported, name)?;
            let dataset: Vec<&str> =
                [t.dataset_path.as_deref(), t.dataset_name.as_deref(), t.split.as_deref()].into_iter().flatten().collect();
            tasks.push(LmEvalTask {
                name: name.clone(),
                alias: t.alias.clone(),
                docs: t.docs.len(),
                metrics: t.metrics.iter().filter(|m| METRICS.contains(&m.as_str())).cloned().collect(),
                dropped: t.dropped.iter().chain(t.metrics.iter().filter(|m| !METRICS.contains(&m.as_str()))).cloned().collect(),
                yaml: t.yaml.clone(),
                yaml_sha256: t.yaml_sha256.clone(),
                dataset: dataset.join(":"),
                revision: t.revision.clone(),
            });
        }
        let mut groups = Vec::new();
        for name in &export.groups {
            let g = group(exported, name)?;
            groups.push(LmEvalGroup {
                name: name.clone(),
                alias: g.alias.clone(),
                children: g.children.clone(),
                leaves: g.leaves.clone(),
                aggregate: g.aggregate.clone(),
                yaml: g.yaml.clone(),
                yaml_sha256: g.yaml_sha256.clone(),
            });
        }
        let moved = rendered.tasks.iter().enumerate().filter(|(_, t)| !t.moved.is_empty()).map(|(i, t)| (i, t.moved.clone())).collect();
        Ok(LmEvalRecord {
            lm_eval_version: exported.lm_eval_version.clone().unwrap_or_else(|| "unknown".into()),
            python: exported.python.clone(),
            settings: ExportSettings {
                name: export.name.clone(),
                include_path: spec
                    .include_path
                    .as_ref()
                    .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()).display().to_string()),
                limit: spec.limit,
                num_fewshot: spec.num_fewshot,
                fewshot_seed: spec.fewshot_seed,
            },
            tasks,
            groups,
            moved,
            results: results_of(exported, &names),
        })
    }

    /// Exports what `entry` records again, with `python`, and lists where
    /// `file` differs: its sha256 from the entry's, its tasks from lm-eval's
    /// requests now.
    pub fn verify(entry: &Entry, python: &Path, file: &TaskFile) -> Result<Vec<VerifyFault>, DatasetError> {
        let mut faults = Vec::new();
        let sha256 = mcscore_format::sha256_hex(file.bytes());
        if sha256 != entry.sha256 {
            faults.push(VerifyFault::FileSha256 { expected: entry.sha256.clone(), found: sha256 });
        }
        let Some(record) = entry.lm_eval.as_deref() else { return Ok(faults) };
        let settings = &record.settings;
        let spec = ExportSpec {
            names: vec![settings.name.clone()],
            include_path: settings.include_path.as_ref().map(PathBuf::from),
            limit: settings.limit,
            num_fewshot: settings.num_fewshot,
            fewshot_seed: settings.fewshot_seed,
            python: python.to_owned(),
        };
        let (exported, mut files) = render(&spec)?;
        let nothing = || LmEvalError::Refused { task: settings.name.clone(), reason: "lm-eval exported nothing".into() };
        let (export, rendered) = exported.exports.first().zip(files.pop()).ok_or_else(nothing)?;
        // What the results are made of, beside the tasks themselves.
        let now = record_of(&spec, &exported, export, &rendered)?;
        let same = [
            ("lm_eval_version", now.lm_eval_version == record.lm_eval_version),
            ("tasks", now.tasks == record.tasks),
            ("groups", now.groups == record.groups),
            ("results", now.results == record.results),
        ];
        faults.extend(same.iter().filter(|(_, same)| !same).map(|&(field, _)| VerifyFault::LmEvalRecord { field }));
        let expected = rendered.tasks;
        if expected.len() != file.len() {
            faults.push(VerifyFault::TaskCount { expected: expected.len(), found: file.len() });
        }
        for (index, (RenderedTask { question, options, gold, .. }, task)) in expected.iter().zip(file.tasks()).enumerate() {
            if faults.len() >= crate::MAX_LISTED {
                break;
            }
            if task.question != question {
                faults.push(VerifyFault::Question { task: index });
            }
            if task.options() != options.iter().map(String::as_str).collect::<Vec<_>>() {
                let found = task.options().iter().map(|o| o.to_string()).collect();
                faults.push(VerifyFault::Options { task: index, expected: options.clone(), found });
            } else if task.gold() != Some(*gold) {
                faults.push(VerifyFault::Gold { task: index, expected: *gold, found: task.gold() });
            }
        }
        Ok(faults)
    }
}

#[cfg(all(test, feature = "sources"))]
mod tests {
    use super::export::{task_of, Doc, RenderedTask};

    /// Document 7 of a task, as the script exports it.
    fn doc(context: &str, continuations: &[&str], choices: &[&str], gold: Option<usize>) -> Doc {
        Doc {
            doc_id: 7,
            gold,
            choices: choices.iter().map(|c| c.to_string()).collect(),
            context: context.to_owned(),
            continuations: continuations.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn a_document_becomes_the_task_lm_eval_tokenises() {
        let d = doc("Question: 2+2?\nAnswer:", &[" 4", " 5"], &["4", "5"], Some(0));
        let four_five = vec!["4".to_owned(), "5".to_owned()];
        let task = RenderedTask { question: "Question: 2+2?\nAnswer:".into(), options: four_five.clone(), gold: 0, moved: String::new() };
        assert_eq!(task_of("t", &d).unwrap(), task);
        // lm-eval moves the context's trailing space into the continuation.
        let d = doc("Answer: ", &["4", "5"], &["4", "5"], Some(1));
        assert_eq!(task_of("t", &d).unwrap(), RenderedTask { question: "Answer:".into(), options: four_five, gold: 1, moved: " ".into() });
    }

    #[test]
    fn what_a_task_file_cannot_hold_is_refused_with_its_reason() {
        let refused = |context: &str, continuations: &[&str], choices: &[&str], gold| {
            task_of("t", &doc(context, continuations, choices, gold)).unwrap_err().to_string()
        };
        let newline = refused("Answer:", &["\n4", "\n5"], &["4", "5"], Some(0));
        assert!(
            newline.contains("lm-eval task t: document 7: option 0's continuation \"\\n4\" does not start with the one space"),
            "{newline}"
        );
        let moved = refused("Answer:\n", &["4", "5"], &["4", "5"], Some(0));
        assert!(moved.contains("\"\\n4\""), "the moved newline is named: {moved}");
        let other = refused("Answer:", &[" four", " five"], &["4", "5"], Some(0));
        assert!(other.contains("is not a space and its choice \"4\""), "{other}");
        assert!(refused("Answer:", &[" 4", " 5"], &["4", "5"], None).contains("its target is not one of its choices"));
        assert!(refused(" \n", &[" 4", " 5"], &["4", "5"], Some(0)).contains("its context is empty"));
    }
}
