//! lm-evaluation-harness's results JSON for a run of an lm-eval export
//! (`build --lm-eval`, then `score --lm-eval`): its `results`, `groups`,
//! `group_subtasks`, `configs`, `versions`, `n-shot`, `higher_is_better`,
//! `n-samples` and `config`, with the numbers computed as lm-eval computes
//! them, in the same order of floating-point operations, so that they agree
//! to the last digit.
//!
//! lm-eval's `acc` is the first option with the largest summed
//! log-likelihood (mcscore's `acc`), its `acc_norm` divides by the choice's
//! characters (mcscore's `acc_char`) and its `acc_bytes` by its UTF-8 bytes
//! (`acc_byte`). Its stderr of a mean is the sample standard deviation over
//! √n; a group's mean is weighted by its tasks' sizes (or not, as its YAML
//! says) and its stderr pooled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcscore_datasets::lm_eval::{LmEvalGroup, LmEvalRecord};
use serde_json::{json, Map, Value};

use crate::log::TaskRecord;
use crate::EvalError;

/// The manifest entry of an lm-eval export, for the task file of sha256
/// `file_sha256`: from `manifest` where one is named, else the nearest
/// manifest found beside the file ([`crate::groups::found_manifests`]).
pub fn record_for(task_file: &Path, file_sha256: &str, manifest: Option<&Path>) -> Result<LmEvalRecord, EvalError> {
    let looked: Vec<PathBuf> = match manifest {
        Some(m) => vec![m.to_owned()],
        None => crate::groups::found_manifests(task_file),
    };
    for m in &looked {
        if let Some(entry) = crate::groups::manifest_entry(m, file_sha256)? {
            if let Some(record) = entry.lm_eval {
                return Ok(*record);
            }
        }
    }
    Err(EvalError::NotAnLmEvalExport { path: task_file.to_owned(), looked })
}

/// Python's `sum` of floats, which lm-eval's statistics use: left to right
/// before 3.12, with Neumaier's compensation from 3.12 on (CPython's
/// `builtin_sum_impl`), so that the results agree to the last digit with
/// those of the Python that exported the tasks.
#[derive(Debug, Clone, Copy)]
struct PythonSum {
    compensated: bool,
}

impl PythonSum {
    /// The sum of the Python `version` ("3.11.7") the record names; a record
    /// that names none is summed as before 3.12.
    fn of(version: Option<&str>) -> PythonSum {
        let mut parts = version.unwrap_or("3.11").split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(3), parts.next().unwrap_or(0));
        PythonSum { compensated: (major, minor) >= (3, 12) }
    }

    fn sum(self, values: impl IntoIterator<Item = f64>) -> f64 {
        let (mut total, mut compensation) = (0.0f64, 0.0f64);
        for x in values {
            if !self.compensated {
                total += x;
                continue;
            }
            let t = total + x;
            compensation += if total.abs() >= x.abs() { (total - t) + x } else { (x - t) + total };
            total = t;
        }
        if self.compensated && compensation != 0.0 && compensation.is_finite() {
            total += compensation;
        }
        total
    }

    /// lm-eval's mean: the sum over the count.
    fn mean(self, values: &[f64]) -> f64 {
        self.sum(values.iter().copied()) / values.len() as f64
    }

    /// lm-eval's `mean_stderr`: the sample standard deviation (n − 1) over
    /// √n, "N/A" below two items.
    fn mean_stderr(self, values: &[f64]) -> Value {
        if values.len() < 2 {
            return json!("N/A");
        }
        let mu = self.mean(values);
        let squares = self.sum(values.iter().map(|x| (x - mu) * (x - mu)));
        json!((squares / (values.len() - 1) as f64).sqrt() / (values.len() as f64).sqrt())
    }
}

/// One metric's per-document values, 1.0 or 0.0, from mcscore's records.
fn values(records: &[&TaskRecord], metric: &str) -> Option<Vec<f64>> {
    let pick = |r: &TaskRecord| match metric {
        "acc" => Some(r.correct.acc),
        "acc_norm" => Some(r.correct.acc_char),
        "acc_bytes" => Some(r.correct.acc_byte),
        "acc_mutual_info" => r.correct.acc_pmi,
        _ => None,
    };
    records.iter().map(|r| pick(r).map(|c| f64::from(u8::from(c)))).collect()
}

/// A group's figures from its leaf tasks', as lm-eval's `Group.aggregate`.
fn aggregate(group: &LmEvalGroup, tasks: &Map<String, Value>, python: PythonSum) -> Value {
    let mut out = Map::new();
    out.insert("alias".into(), json!(group.alias));
    out.insert("name".into(), json!(group.name));
    if group.aggregate.is_empty() {
        return Value::Object(out);
    }
    let leaves: Vec<&Map<String, Value>> = group.leaves.iter().filter_map(|l| tasks.get(l).and_then(Value::as_object)).collect();
    let sample_len: u64 = leaves.iter().filter_map(|t| t.get("sample_len").and_then(Value::as_u64)).sum();
    out.insert("sample_len".into(), json!(sample_len));
    let mut counts = Map::new();
    for how in &group.aggregate {
        let key = format!("{},none", how.metric);
        let stderr_key = format!("{}_stderr,none", how.metric);
        let with: Vec<&&Map<String, Value>> = leaves.iter().filter(|t| t.contains_key(&key)).collect();
        if with.is_empty() {
            continue;
        }
        let metric: Vec<f64> = with.iter().filter_map(|t| t[&key].as_f64()).collect();
        let true_sizes: Vec<f64> = with.iter().map(|t| t.get("sample_len").and_then(Value::as_u64).unwrap_or(0) as f64).collect();
        let sizes: Vec<f64> = if how.weight_by_size { true_sizes.clone() } else { vec![1.0; metric.len()] };
        // The sizes are Python ints, summed exactly.
        let weighted = python.sum(metric.iter().zip(&sizes).map(|(m, s)| m * s));
        out.insert(key.clone(), json!(weighted / sizes.iter().sum::<f64>()));
        counts.insert(key, json!(true_sizes.iter().sum::<f64>() as u64));
        let stderrs: Option<Vec<f64>> = with.iter().map(|t| t.get(&stderr_key).and_then(Value::as_f64)).collect();
        let stderr = match stderrs {
            Some(stderrs) if how.weight_by_size => {
                let n: f64 = true_sizes.iter().sum();
                let pooled = python.sum(true_sizes.iter().zip(&stderrs).map(|(size, se)| (size - 1.0) * (se * se) * size))
                    / (n - true_sizes.len() as f64);
                json!((pooled / n).sqrt())
            }
            Some(stderrs) => json!(python.sum(stderrs.iter().map(|se| se * se)).sqrt() / stderrs.len() as f64),
            None => json!("N/A"),
        };
        out.insert(stderr_key, stderr);
    }
    if !counts.is_empty() {
        out.insert("sample_count".into(), Value::Object(counts));
    }
    Value::Object(out)
}

/// What lm-eval's `config` says of the model and the run.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The model file.
    pub model: String,
    /// Its sha256, where known.
    pub model_sha256: Option<String>,
    /// The task file and its sha256.
    pub file: String,
    /// The task file's sha256.
    pub file_sha256: String,
}

/// lm-eval's results JSON for `records`, a run of the export `record`.
pub fn results(records: &[TaskRecord], record: &LmEvalRecord, run: &RunInfo) -> Value {
    let mut by_task: BTreeMap<&str, Vec<&TaskRecord>> = BTreeMap::new();
    let ranges = record.ranges();
    let mut sorted: Vec<&TaskRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.task);
    for r in sorted {
        if let Some((task, _)) = ranges.iter().find(|(_, range)| range.contains(&r.task)) {
            by_task.entry(task.name.as_str()).or_default().push(r);
        }
    }
    let python = PythonSum::of(record.python.as_deref());
    let mut tasks = Map::new();
    let mut samples = Map::new();
    for (task, _) in &ranges {
        let Some(scored) = by_task.get(task.name.as_str()) else { continue };
        let mut figures = Map::new();
        figures.insert("name".into(), json!(task.name));
        figures.insert("alias".into(), json!(task.alias));
        figures.insert("sample_len".into(), json!(scored.len()));
        for metric in &task.metrics {
            if let Some(values) = values(scored, metric) {
                figures.insert(format!("{metric},none"), json!(python.mean(&values)));
                figures.insert(format!("{metric}_stderr,none"), python.mean_stderr(&values));
            }
        }
        tasks.insert(task.name.clone(), Value::Object(figures));
        let original = record.results.get("n-samples").and_then(|n| n.get(&task.name)).and_then(|n| n.get("original")).cloned();
        samples.insert(task.name.clone(), json!({"original": original.unwrap_or(json!(task.docs)), "effective": scored.len()}));
    }
    let mut results = tasks.clone();
    let mut groups = Map::new();
    for group in &record.groups {
        let figures = aggregate(group, &tasks, python);
        // lm-eval's "groups" holds only the groups that aggregate a metric.
        if !group.aggregate.is_empty() {
            groups.insert(group.name.clone(), figures.clone());
        }
        results.insert(group.name.clone(), figures);
    }
    let picked = |key: &str| record.results.get(key).cloned().unwrap_or(json!({}));
    let group_subtasks: Map<String, Value> = record.groups.iter().map(|g| (g.name.clone(), json!(g.children))).collect();
    let settings = &record.settings;
    let mut out = json!({
        "results": results,
        "group_subtasks": group_subtasks,
        "configs": picked("configs"),
        "versions": picked("versions"),
        "n-shot": picked("n-shot"),
        "higher_is_better": picked("higher_is_better"),
        "n-samples": samples,
        "config": {
            "model": "mcscore",
            "model_args": format!("model={}", run.model),
            "batch_size": null,
            "batch_sizes": [],
            "device": null,
            "use_cache": null,
            "limit": settings.limit,
            "bootstrap_iters": 100000,
            "gen_kwargs": null,
            "fewshot_seed": settings.fewshot_seed,
        },
        "lm_eval_version": record.lm_eval_version,
        "mcscore": {
            "version": env!("CARGO_PKG_VERSION"),
            "model_sha256": run.model_sha256,
            "task_file": run.file,
            "task_file_sha256": run.file_sha256,
            "exported": settings.name,
        },
    });
    if !groups.is_empty() {
        out["groups"] = Value::Object(groups);
    }
    out
}

/// Python's `repr` of a float, as lm-eval writes each log-likelihood into
/// its samples (`str()` of the value): the shortest digits that read back
/// to it, fixed notation from 1e-4 up to 1e16 and exponent notation beyond.
fn python_float(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // Rust's `{:e}` gives the same shortest digits: "-1.2345e-5".
    let exp_form = format!("{x:e}");
    let (mantissa, exponent) = exp_form.split_once('e').expect("{:e} writes an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} writes an integer exponent");
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..16).contains(&exponent) {
        let mantissa = if digits.len() == 1 { digits } else { format!("{}.{}", &digits[..1], &digits[1..]) };
        return format!("{sign}{mantissa}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs());
    }
    if exponent < 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-exponent - 1) as usize));
    }
    let whole = exponent as usize + 1;
    let padded = format!("{digits:0<whole$}");
    let (int, frac) = padded.split_at(whole);
    format!("{sign}{int}.{}", if frac.is_empty() { "0" } else { frac })
}

/// lm-eval's `hash_string`: sha256 of the text, in hex.
fn hash_string(text: &str) -> String {
    mcscore_format::sha256_hex(text.as_bytes())
}

/// lm-eval's per-sample lines (`--log_samples`'s `samples_TASK_*.jsonl`)
/// for `records`, a run of the export `record` whose tasks `file` holds, one
/// list per lm-eval task in file order. Each line has `doc_id`, `target`,
/// `arguments` (the context and continuation lm-eval sends for each
/// option), `resps` and `filtered_resps` (each option's log-likelihood and
/// whether all its tokens were the greedy picks, written as lm-eval writes
/// them; after them those of `acc_mutual_info`'s unconditional requests),
/// `filter`, `metrics`, `prompt_hash`, `target_hash` and the task's metrics. lm-eval's `doc` (the dataset row) and `doc_hash` are not
/// known here; `target` is the gold option's index.
pub fn samples(records: &[TaskRecord], record: &LmEvalRecord, file: &mcscore_format::TaskFile) -> Vec<(String, Vec<Value>)> {
    let mut sorted: Vec<&TaskRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.task);
    record
        .ranges()
        .into_iter()
        .map(|(task, range)| {
            let lines = sorted
                .iter()
                .filter(|r| range.contains(&r.task))
                .map(|r| {
                    let t = file.task(r.task);
                    // What lm-eval sent: its context kept the whitespace it
                    // moves into the continuation only to tokenise.
                    let moved = record.moved.get(&r.task).map_or("", String::as_str);
                    let context = format!("{}{moved}", t.question);
                    let arguments: Map<String, Value> = t
                        .options()
                        .iter()
                        .enumerate()
                        .map(|(k, option)| {
                            let whole = format!(" {option}");
                            (format!("gen_args_{k}"), json!({"arg_0": context, "arg_1": whole.get(moved.len()..).unwrap_or("")}))
                        })
                        .collect();
                    let flag = |g: Option<bool>| g.map_or("None", |g| if g { "True" } else { "False" });
                    let mut responses: Vec<Value> =
                        r.options.iter().map(|o| json!([python_float(o.logprob_sum), flag(o.greedy)])).collect();
                    // acc_mutual_info's unconditional requests follow the options, as lm-eval sends them.
                    let mut arguments = arguments;
                    if task.metrics.iter().any(|m| m == "acc_mutual_info") {
                        let n = t.options().len();
                        for (k, (option, o)) in t.options().iter().zip(&r.options).enumerate() {
                            arguments.insert(format!("gen_args_{}", n + k), json!({"arg_0": "", "arg_1": format!(" {option}")}));
                            if let Some(sum) = o.uncond_logprob_sum {
                                responses.push(json!([python_float(sum), flag(o.uncond_greedy)]));
                            }
                        }
                    }
                    let target = r.gold.map_or_else(|| "None".to_owned(), |g| g.to_string());
                    let mut line = Map::new();
                    line.insert("doc_id".into(), json!(r.task - range.start));
                    line.insert("target".into(), json!(target));
                    line.insert("arguments".into(), Value::Object(arguments));
                    line.insert("resps".into(), json!(responses.iter().map(|x| json!([x])).collect::<Vec<_>>()));
                    line.insert("filtered_resps".into(), json!(responses));
                    line.insert("filter".into(), json!("none"));
                    line.insert("metrics".into(), json!(task.metrics));
                    line.insert("prompt_hash".into(), json!(hash_string(&context)));
                    line.insert("target_hash".into(), json!(hash_string(&target)));
                    for metric in &task.metrics {
                        if let Some(&value) = values(&[*r], metric).as_deref().and_then(<[f64]>::first) {
                            line.insert(metric.clone(), json!(value));
                        }
                    }
                    Value::Object(line)
                })
                .collect();
            (task.name.clone(), lines)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        // What Python 3.11 prints for repr() of each.
        for (x, python) in [
            (-1.0, "-1.0"),
            (-0.0001, "-0.0001"),
            (-0.00001, "-1e-05"),
            (-12.345678901234567, "-12.345678901234567"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (-3.5e-7, "-3.5e-07"),
            (0.0, "0.0"),
            (-2.147483648, "-2.147483648"),
            (1234.5, "1234.5"),
        ] {
            assert_eq!(python_float(x), python, "{x:e}");
        }
    }

    #[test]
    fn the_stderr_of_a_mean_is_lm_evals_and_not_defined_for_one_item() {
        // lm-eval on [1, 0, 0, 0]: 0.25 and 0.25; on [1, 1, 0, 0]: 0.2886751345948129.
        let python = PythonSum::of(Some("3.11.7"));
        assert_eq!(python.mean_stderr(&[1.0, 0.0, 0.0, 0.0]), json!(0.25));
        assert_eq!(python.mean_stderr(&[1.0, 1.0, 0.0, 0.0]), json!(0.28867513459481287));
        assert_eq!(python.mean_stderr(&[1.0]), json!("N/A"));
    }

    #[test]
    fn python_from_3_12_sums_floats_with_compensation() {
        // Python 3.11: sum([0.1] * 10) == 0.9999999999999999; 3.12: 1.0.
        let tenths = [0.1; 10];
        assert_eq!(PythonSum::of(Some("3.11.7")).sum(tenths), 0.9999999999999999);
        assert_eq!(PythonSum::of(Some("3.12.1")).sum(tenths), 1.0);
        // 3.12: sum([1e100, 1.0, -1e100, 1.0]) == 2.0 (3.11: 1.0).
        assert_eq!(PythonSum::of(Some("3.12.1")).sum([1e100, 1.0, -1e100, 1.0]), 2.0);
        assert_eq!(PythonSum::of(Some("3.11.7")).sum([1e100, 1.0, -1e100, 1.0]), 1.0);
    }
}
