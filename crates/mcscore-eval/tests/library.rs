//! The library without a model: sample logs written, resumed and read back,
//! a report built from hand-made logs, and a sweep analysed from hand-made
//! log-probabilities, each figure checked against a hand computation.

use std::path::{Path, PathBuf};

use mcscore_datasets::formats::{Delimiter, PromptFormat, Separator};
use mcscore_datasets::Item;
use mcscore_engine::TokenCounts;
use mcscore_eval::log::{self, Header, Opened, SampleLog, TaskRecord, LOG_VERSION};
use mcscore_eval::report::{self, ReportOptions};
use mcscore_eval::sweep::{Items, Scores, Sweep, SweepSpec};
use mcscore_eval::LogsError;
use mcscore_eval::{EvalError, LogError, LogFault};
use mcscore_format::IdSet;
use mcscore_metrics::{Normalisation, OptionScore};

fn header(tasks: usize, model: &str) -> Header {
    Header {
        version: LOG_VERSION,
        mcscore: "test".into(),
        model: model.into(),
        model_sha256: format!("sha-of-{model}"),
        model_sha256_cached: false,
        model_bytes: 1,
        file: "tasks.bin".into(),
        file_sha256: "file-sha".into(),
        file_bytes: 2,
        tasks,
        selection: None,
        limit: None,
        limit_per_group: false,
        mode: mcscore_eval::log::TaskKind::MultipleChoice,
        lenient: false,
        pmi: false,
        kernels: "c=auto".into(),
        shard: None,
        sequential: None,
        chat: None,
        projector: None,
        images_sha256: None,
    }
}

/// A task whose options score `sums` (one token, one character each), gold `gold`.
fn record(task: usize, sums: &[f64], gold: usize) -> TaskRecord {
    let options = sums.iter().map(|&s| OptionScore::new(s, 1, 1, 1)).collect();
    TaskRecord::new(task, options, (0..sums.len()).map(|k| k == gold).collect())
}

fn write_log(path: &Path, header: &Header, records: &[TaskRecord], complete: bool) {
    let Opened::Writing { mut log, kept } = SampleLog::open(path, header, false, |_| 0).unwrap() else { panic!("a new log") };
    assert!(kept.is_empty());
    for r in records {
        log.record(r).unwrap();
    }
    log.finish(complete, records.len()).unwrap();
}

#[test]
fn a_log_round_trips_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    // Values that a float printer without round-tripping changes in the last bit.
    let records = vec![record(0, &[-0.1 - 0.2, -1.0 / 3.0], 0), record(1, &[-2.0f64.sqrt(), -1e-300], 1)];
    write_log(&path, &header(2, "m"), &records, true);
    let contents = log::read(&path).unwrap();
    assert_eq!(contents.header, header(2, "m"));
    assert_eq!(contents.records, records);
    assert!(contents.is_complete());
}

#[test]
fn resume_keeps_the_lines_before_the_boundary_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let records: Vec<TaskRecord> = (0..5).map(|i| record(i, &[-1.0, -(i as f64)], 0)).collect();
    write_log(&path, &header(8, "m"), &records, false);
    let before = std::fs::read(&path).unwrap();
    // A crash cut the next line short.
    std::fs::write(&path, [&before[..], b"{\"type\":\"task\",\"task\":9,\"options\":[{}]}"].concat()).unwrap();
    let Opened::Writing { log, kept } = SampleLog::open(&path, &header(8, "m"), true, |done| {
        assert_eq!(done, 5, "the torn line and the footer are not tasks");
        3
    })
    .unwrap() else {
        panic!("an incomplete log resumes")
    };
    assert_eq!(kept, records[..3]);
    drop(log);
    let after = std::fs::read(&path).unwrap();
    let header_and_three: usize = String::from_utf8(before.clone()).unwrap().lines().take(4).map(|l| l.len() + 1).sum();
    assert_eq!(after, before[..header_and_three], "cut after the kept lines, which are untouched");
}

#[test]
fn a_resume_names_the_field_that_differs_and_a_complete_log_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    write_log(&path, &header(1, "m"), &[record(0, &[-1.0, -2.0], 0)], true);
    let mut other = header(1, "m");
    other.kernels = "c=512".into();
    let Err(LogError::ResumeMismatch { field, .. }) = SampleLog::open(&path, &other, true, |d| d) else { panic!("refused") };
    assert_eq!(field, "settings");
    // The same inputs under another path are the same run.
    let mut moved = header(1, "m");
    moved.file = "elsewhere/tasks.bin".into();
    assert!(matches!(SampleLog::open(&path, &moved, true, |d| d).unwrap(), Opened::Complete { .. }));
    assert!(matches!(SampleLog::open(&path, &moved, false, |d| d), Err(LogError::Exists { .. })));
}

#[test]
fn a_newer_log_is_refused_by_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let mut h = serde_json::to_value(header(1, "m")).unwrap();
    h["type"] = "header".into();
    h["version"] = (LOG_VERSION + 1).into();
    std::fs::write(&path, format!("{h}\n")).unwrap();
    let error = log::read(&path).unwrap_err();
    assert!(matches!(error, LogError::Line { line: 1, fault: LogFault::NewerVersion { .. }, .. }), "{error}");
    assert!(mcscore_eval::with_causes(&error).contains("newer"), "{error}");
}

#[test]
fn a_report_is_built_from_logs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b): (PathBuf, PathBuf) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    // Model a: right on tasks 0 and 1; model b: right on task 0 only.
    write_log(&a, &header(3, "a.gguf"), &[record(0, &[-1.0, -3.0], 0), record(1, &[-3.0, -1.0], 1), record(2, &[-1.0, -3.0], 1)], true);
    write_log(&b, &header(3, "b.gguf"), &[record(0, &[-1.0, -3.0], 0), record(1, &[-1.0, -3.0], 1), record(2, &[-1.0, -3.0], 1)], true);
    let built = report::build(&[a.clone(), b.clone()], &ReportOptions { resamples: 50, ..ReportOptions::default() }, None).unwrap();
    let labels: Vec<&str> = built.models.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, ["a", "b"]);
    let acc = |m: usize| built.models[m].normalisations.get("acc").unwrap().mean;
    assert!((acc(0) - 2.0 / 3.0).abs() < 1e-12 && (acc(1) - 1.0 / 3.0).abs() < 1e-12);
    // p = softmax(-1, -3): the pick holds 1/(1+e^-2) of the mass on every task.
    let p = 1.0 / (1.0 + (-2.0f64).exp());
    assert!((built.models[0].calibration.bins.iter().map(|b| b.count).sum::<usize>() as f64 - 3.0).abs() < 1e-9);
    let ece = built.models[1].calibration.ece;
    assert!((ece - (p - 1.0 / 3.0)).abs() < 1e-9, "ECE {ece}");
    // Every scheme ranks a above b.
    assert!(built.rankings.iter().all(|r| r.ranks == [1.0, 2.0]), "{:?}", built.rankings);

    // With 3 tasks a resample can put b first: the ranks' intervals say so.
    assert!(built.rankings.iter().all(|r| !r.tied && r.rank_intervals.iter().all(|&(l, h)| l >= 1.0 && l <= h && h <= 2.0)));

    // Two settings of one model, scoring alike: labelled by the setting that
    // differs, no ranking where every run ties, no correlation with a tie.
    let (fa_on, fa_off) = (dir.path().join("on.jsonl"), dir.path().join("off.jsonl"));
    // (Right on the other task each, with the same confidence: every scheme's mean ties.)
    let on = [record(0, &[-1.0, -3.0], 0), record(1, &[-1.0, -3.0], 1)];
    let off = [record(0, &[-3.0, -1.0], 0), record(1, &[-3.0, -1.0], 1)];
    write_log(&fa_on, &Header { kernels: "c=auto fa=On batch=micro60".into(), ..header(2, "m.gguf") }, &on, true);
    write_log(&fa_off, &Header { kernels: "c=auto fa=Off batch=micro60".into(), ..header(2, "m.gguf") }, &off, true);
    let tied = report::build(&[fa_on, fa_off], &ReportOptions { resamples: 50, ..ReportOptions::default() }, None).unwrap();
    let labels: Vec<&str> = tied.models.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, ["m [fa=On]", "m [fa=Off]"]);
    assert!(tied.rankings.iter().all(|r| r.tied && r.spearman_vs_nr.is_none() && r.kendall_se.is_none()), "{:?}", tied.rankings);
    let json = serde_json::to_value(&tied).unwrap();
    assert_eq!(json["rankings"][0]["spearman_vs_nr"], serde_json::Value::Null, "undefined, not NaN");

    // Logs of other tasks are refused.
    let c = dir.path().join("c.jsonl");
    write_log(&c, &header(3, "c.gguf"), &[record(2, &[-1.0, -3.0], 0), record(1, &[-1.0, -3.0], 1), record(0, &[-1.0, -3.0], 1)], true);
    assert!(matches!(report::build(&[a, c], &ReportOptions::default(), None), Err(EvalError::Logs(LogsError::OtherTasks { .. }))));
}

/// Two 4-option items in two formats, every rotation, scored by a model that
/// always picks the first position, except on item 1 where it follows the gold.
#[test]
fn a_sweep_is_analysed_from_log_probabilities() {
    let item =
        |stem: &str, gold: usize| Item { passage: None, stem: stem.into(), options: ["w", "x", "y", "z"].map(String::from).to_vec(), gold };
    let items = Items { label: "hand-made".into(), indices: vec![10, 11], items: vec![item("Q0?", 2), item("Q1?", 1)], visual: None };
    let formats =
        vec![PromptFormat::SCAFFOLD, PromptFormat { ids: IdSet::Digit, delimiter: Delimiter::Parens, separator: Separator::Comma }];
    let sweep =
        Sweep::new(items, SweepSpec { formats, circular: true, instruction: false, pride: None, chat: Default::default() }).unwrap();
    assert_eq!(sweep.prompts.len(), 2 * 4 * 2);
    let log_probs: Vec<Vec<f64>> = sweep
        .prompts
        .iter()
        .map(|p| {
            let pick = if p.item == 1 { p.gold } else { 0 };
            (0..4).map(|k| if k == pick { -0.5 } else { -3.0 }).collect()
        })
        .collect();
    let scores = Scores {
        log_probs,
        tokens: TokenCounts { decoded: 10, unshared: 40, padding: 0 },
        seconds: 1.0,
        chat: None,
        projector_sha256: None,
    };
    let analysed = sweep.analyse(Path::new("model.gguf"), &scores);
    assert_eq!(analysed.formats.len(), 2);
    for f in &analysed.formats {
        // Source order: item 0's gold is at 2 (picked 0: wrong), item 1 right.
        assert_eq!(f.accuracy, 0.5, "{}", f.format);
        // Item 0 is right only under the rotation that brings its gold first.
        assert_eq!(f.circular_accuracy, Some(0.5));
        assert_eq!(f.accuracy_by_rotation, [0.5, 0.5, 1.0, 0.5], "{}", f.format);
        // Item 0 picks position 0 four times; item 1 follows its gold round.
        assert_eq!(f.picks, [5, 1, 1, 1]);
    }
    assert_eq!(analysed.accuracy_across_formats.mean, 0.5);
    assert_eq!((analysed.tokens_decoded, analysed.tokens_unshared), (10, 40));
    let report = sweep.report(mcscore_eval::sweep::ItemPick::Subset(None), &settings(), vec![analysed]).unwrap();
    assert_eq!(report.tasks, 2);
    assert!(report.comparison.is_none());
}

fn settings() -> mcscore_engine::Settings {
    mcscore_engine::Settings { threads: 1, threads_batch: 1, ..mcscore_engine::Settings::on_cpu() }
}

#[test]
fn the_acc_pmi_report_needs_pmi_logs() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    write_log(&a, &header(1, "a.gguf"), &[record(0, &[-1.0, -3.0], 0)], true);
    let options = ReportOptions { normalisation: Normalisation::AccPmi, ..ReportOptions::default() };
    assert!(matches!(report::build(&[a], &options, None), Err(EvalError::Logs(LogsError::NoPmi { .. }))));
}
