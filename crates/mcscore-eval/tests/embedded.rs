//! The library embedded, without the binary: one process loads two real
//! models (the bundled gemma-3-270m Q4_K_M and a Q8_0 made from it with
//! llama.cpp's quantizer), lends each engine to jobs, compares and reports
//! the runs in memory, and runs a sequential comparison of both.

use std::path::{Path, PathBuf};

use mcscore_engine::{quantize, Engine, QuantType, Settings};
use mcscore_eval::compare::{compare, CompareOptions};
use mcscore_eval::report::{self, ReportOptions};
use mcscore_eval::run::Run;
use mcscore_eval::until_decided::{until_decided, UntilDecidedSpec};
use mcscore_eval::{Cancel, End, EvalError, NoProgress, ScoreJob, ScoreOutcome, ScoreSpec};
use mcscore_eval::{SequentialError, SequentialSetting, SpecError};
use mcscore_metrics::sequential::Decision;

/// The bundled model (`scripts/fetch-model`), or $MCSCORE_MODEL.
fn model() -> PathBuf {
    let path = std::env::var_os("MCSCORE_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("MCSCORE_CACHE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/mcscore"));
        cache.join("models/gemma-3-270m-q4_k_m.gguf")
    });
    assert!(path.is_file(), "the model is not at {}: run scripts/fetch-model first", path.display());
    path
}

fn task_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/arc-easy-validation.bin")
}

fn as_run(label: &str, outcome: &ScoreOutcome) -> Run {
    Run { label: label.into(), source: PathBuf::from(label), header: outcome.header.clone(), records: outcome.records.clone() }
}

#[test]
fn two_models_in_one_process_score_compare_and_decide_without_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let base_model = model();
    let q8_model = dir.path().join("q8_0.gguf");
    quantize(&base_model, &q8_model, QuantType::Q8_0, &mcscore_engine::QuantOptions { threads: 2, ..Default::default() }).unwrap();
    let base = Engine::load(&base_model, &Settings::on_cpu()).unwrap();
    let q8 = Engine::load(&q8_model, &Settings::on_cpu()).unwrap();

    let mut spec = ScoreSpec::new(&base_model, task_file());
    spec.subset = Some(12);
    let run = |engine: &Engine, spec: &ScoreSpec| {
        ScoreJob::with_engine(engine, spec.clone()).unwrap().run(&mut NoProgress, &Cancel::new()).unwrap()
    };
    let first = run(&base, &spec);
    // One engine lent to a second job: the same numbers.
    let again = run(&base, &spec);
    assert_eq!(first.end, End::Finished);
    assert_eq!(first.records.len(), 12);
    assert_eq!(first.records, again.records);
    let mut q8_spec = spec.clone();
    q8_spec.model = q8_model.clone();
    let other = run(&q8, &q8_spec);
    // A job lent the engine of another model is refused.
    assert!(matches!(ScoreJob::with_engine(&q8, spec.clone()), Err(EvalError::Spec(SpecError::LentEngine { .. }))));

    let comparison = compare(&as_run("q4_k_m", &first), &[as_run("q8_0", &other)], None, &CompareOptions::default()).unwrap();
    let pairing = &comparison.others[0];
    assert_eq!(pairing.tasks, 12);
    assert_eq!(
        pairing.flips.right_to_wrong
            + pairing.flips.wrong_to_right
            + pairing.flips.both_right
            + pairing.flips.both_wrong
            + pairing.flips.wrong_to_other_wrong,
        12
    );
    // A report of the runs in memory, no log written: both models ranked on
    // the same 12 tasks, each accuracy what the job measured.
    let runs = [as_run("q4_k_m", &first), as_run("q8_0", &other)];
    let report = report::of_runs(&runs, &ReportOptions { resamples: 50, ..ReportOptions::default() }, None).unwrap();
    assert_eq!(report.models.len(), 2);
    let acc_norm = |outcome: &ScoreOutcome| outcome.accuracy(mcscore_metrics::Normalisation::AccNorm).fraction();
    let reported = |m: usize| report.models[m].normalisations.get("acc_norm").unwrap().mean;
    assert!((reported(0) - acc_norm(&first)).abs() < 1e-6 && (reported(1) - acc_norm(&other)).abs() < 1e-6);
    drop((base, q8));

    // The sequential comparison loads both models itself, once each.
    let mut sequential = UntilDecidedSpec::new(&base_model, vec![q8_model.clone()], task_file());
    sequential.max_tasks = Some(24);
    sequential.chunk = 12;
    let mut looks = Vec::new();
    let result = until_decided(&sequential, None, &mut NoProgress, &mut |look| looks.push(look.tasks), &Cancel::new()).unwrap();
    assert_eq!(looks, [12, 24]);
    let o = &result.others[0];
    assert_eq!(o.decision, Decision::Undecided, "{o:?}");
    assert_eq!(o.tasks_used, 24);
    assert_eq!((result.base.tasks, o.part.tasks), (24, 24));
    assert!(result.whole_order_seconds.is_some());

    // One OTHER at least; a margin above 0.
    let mut bad = sequential.clone();
    bad.others.clear();
    assert!(matches!(
        until_decided(&bad, None, &mut NoProgress, &mut |_| {}, &Cancel::new()),
        Err(EvalError::Sequential(SequentialError::Setting(SequentialSetting::NoOther)))
    ));
    let mut bad = sequential;
    bad.options.margin = f64::NAN;
    assert!(matches!(
        until_decided(&bad, None, &mut NoProgress, &mut |_| {}, &Cancel::new()),
        Err(EvalError::Sequential(SequentialError::Setting(SequentialSetting::Margin(m)))) if m.is_nan()
    ));
}
