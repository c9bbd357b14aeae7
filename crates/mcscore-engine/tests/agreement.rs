//! The engine alone, with the real model: per-option scores against
//! llama-perplexity's real outputs (../shared/reference), and tasks that share
//! text decode it once with the scores they get alone.
//!
//! Tolerances are those of the command-line agreement tests, where they are
//! derived (crates/mcscore-cli/tests/agreement.rs): every option's per-token
//! score within 1.0 nats of the reference and token counts identical. The
//! median is over the first 40 tasks only, so it is
//! noisier than the CLI test's over whole files: measured 0.101–0.107 on a
//! CPU with AMX (whose ggml kernels the reference build lacks; the CLI test's
//! whole-file medians there are 0.084–0.093), so it must be within 0.12.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

mod common;

use common::model;
use mcscore_engine::{plan, Completion, ContextSize, Engine, FlashAttention, Mmap, Settings, TaskScores};
use mcscore_format::{Task, TaskFile};

const TOLERANCE: f64 = 1.0;
const MEDIAN_TOLERANCE: f64 = 0.12;
/// Tasks of each reference file scored here (the CLI tests score them all).
const TASKS: usize = 40;

fn reference(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference").join(name);
    assert!(path.exists(), "{} is missing: the tests read ../shared/reference beside the checkout", path.display());
    path
}

fn settings() -> Settings {
    Settings {
        context: ContextSize::PerSequence(512),
        parallel: Some(16),
        n_batch: 2048,
        threads: 2,
        threads_batch: 2,
        n_gpu_layers: 0,
        flash_attention: FlashAttention::Auto,
        kv_cache: Default::default(),
        rope: Default::default(),
        gpu_split: Default::default(),
        mmap: Mmap::Auto,
    }
}

/// Scores `tasks` (with their file indices) in one run.
fn score(engine: &Engine, tasks: &[(usize, Task<'_>)], settings: &Settings) -> (Vec<TaskScores>, mcscore_engine::TokenCounts) {
    let prepared = engine.prepare(tasks).unwrap();
    let plan = plan(&prepared, settings).unwrap();
    let mut scores = Vec::new();
    let run = engine
        .score(&prepared, &plan, settings, &|| false, |s| {
            scores.push(s);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(scores.len(), tasks.len());
    (scores, run.tokens)
}

fn check_agreement(stem: &str) {
    let engine = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let file = TaskFile::open(reference(&format!("{stem}.bin"))).unwrap();
    let tasks: Vec<(usize, Task<'_>)> = file.tasks().enumerate().take(TASKS).collect();
    let reference: HashMap<(usize, usize), (f64, u32)> =
        std::fs::read_to_string(reference(&format!("{stem}.llama-perplexity.options.tsv")))
            .unwrap()
            .lines()
            .skip(1)
            .map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                ((f[0].parse().unwrap(), f[1].parse().unwrap()), (f[2].parse().unwrap(), f[3].parse().unwrap()))
            })
            .collect();
    let (scores, _) = score(&engine, &tasks, &settings());
    let mut diffs = Vec::new();
    for task in &scores {
        for (k, option) in task.options.iter().enumerate() {
            let (sum, tokens) = reference[&(task.task, k)];
            assert_eq!(option.tokens, tokens, "{stem} task {} option {k}: token count", task.task);
            let diff = (option.logprob_sum - sum).abs() / f64::from(tokens);
            assert!(diff <= TOLERANCE, "{stem} task {} option {k}: per-token score differs by {diff}", task.task);
            diffs.push(diff);
        }
    }
    diffs.sort_by(f64::total_cmp);
    let median = diffs[diffs.len() / 2];
    assert!(median <= MEDIAN_TOLERANCE, "{stem}: median difference {median}");
}

#[test]
fn letter_tasks_agree_with_llama_perplexity() {
    check_agreement("mc_letter4");
}

#[test]
fn text_tasks_agree_with_llama_perplexity() {
    check_agreement("mc_text5");
}

#[test]
fn mixed_tasks_agree_with_llama_perplexity() {
    check_agreement("mc_mixed");
}

/// Twelve tasks that share a long stem: the stem is decoded about once, and
/// every option scores bit for bit as it does when its task is scored alone
/// (the batch rule).
#[test]
fn shared_text_is_decoded_once_with_the_scores_of_each_task_alone() {
    let engine = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let stem = "The following passage is about the water cycle. Water evaporates from oceans and lakes, rises as vapour, \
                cools into clouds and falls again as rain or snow, which flows back to the sea through rivers.";
    let questions: Vec<String> = (0..12).map(|i| format!("{stem} Question {i}: what happens to water after it falls?")).collect();
    let tasks: Vec<(usize, Task<'_>)> =
        questions.iter().enumerate().map(|(i, q)| (i, Task::new(q, vec!["it flows back to the sea", "it turns into stone"], 0))).collect();
    let (shared, tokens) = score(&engine, &tasks, &settings());
    let (alone, alone_tokens): (Vec<Vec<TaskScores>>, Vec<_>) =
        tasks.iter().map(|task| score(&engine, std::slice::from_ref(task), &settings())).unzip();
    let alone: Vec<TaskScores> = alone.into_iter().flatten().collect();
    assert!(alone_tokens.iter().all(|t| t.decoded == t.unshared), "each task alone shares nothing");
    // Measured: 247 of 722 (each task keeps about 20 tokens of its own).
    assert!(
        (tokens.decoded as f64) < 0.4 * tokens.unshared as f64,
        "{} tokens decoded of {} unshared: the stem was not shared",
        tokens.decoded,
        tokens.unshared
    );
    for (a, b) in shared.iter().zip(&alone) {
        for (x, y) in a.options.iter().zip(&b.options) {
            assert_eq!(x.tokens, y.tokens);
            assert_eq!(x.logprob_sum.to_bits(), y.logprob_sum.to_bits(), "task {}: {x:?} vs {y:?}", a.task);
        }
    }
}

/// An interrupt asked for in the middle of a fill drops that fill: the run
/// ends after the fills before it, whose tasks reached the sink with the
/// numbers of an uninterrupted run, and no task of the dropped fill did.
#[test]
fn an_interrupt_drops_the_fill_being_decoded() {
    let engine = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let file = TaskFile::open(reference("mc_text5.bin")).unwrap();
    let tasks: Vec<(usize, Task<'_>)> = file.tasks().enumerate().take(TASKS).collect();
    // Fills of 128 tokens: a fill that is not the last holds over 60, so
    // two micro-batches or more.
    let settings = Settings { n_batch: 128, ..settings() };
    let (whole, _) = score(&engine, &tasks, &settings);
    let prepared = engine.prepare(&tasks).unwrap();
    let plan = plan(&prepared, &settings).unwrap();
    assert!(plan.fills.len() >= 3, "{} fills", plan.fills.len());
    // Asked before each micro-batch: yes from the first fill's micro-batches
    // plus one, which is inside the second fill.
    let first_fill = plan.fills[0].len();
    let asked = std::cell::Cell::new(0);
    let mut scores = Vec::new();
    let stop_at = std::cell::Cell::new(None);
    let run = engine
        .score(
            &prepared,
            &plan,
            &settings,
            &|| {
                asked.set(asked.get() + 1);
                stop_at.get().is_some_and(|n| asked.get() > n)
            },
            |s| {
                scores.push(s);
                if scores.len() == first_fill {
                    // The first fill is done: interrupt the second after its first micro-batch.
                    stop_at.set(Some(asked.get() + 1));
                }
                ControlFlow::Continue(())
            },
        )
        .unwrap();
    assert_eq!(run.completion, Completion::Interrupted { scored: first_fill });
    assert_eq!(scores.len(), first_fill, "no task of the dropped fill reached the sink");
    for (a, b) in scores.iter().zip(&whole) {
        assert_eq!(a.task, b.task);
        let bits = |s: &TaskScores| s.options.iter().map(|o| o.logprob_sum.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a), bits(b), "task {}", a.task);
    }
}

/// The engine's own output projection (project.rs: llama.cpp's graph stopped
/// at the final norm) gives every option llama.cpp's bits: the same tasks
/// scored with llama.cpp's projection and with the engine's, letter tasks
/// (one row read each) and text tasks (a row per option token).
#[test]
fn the_engines_projection_gives_llamas_bits() {
    let file = TaskFile::open(reference("mc_mixed.bin")).unwrap();
    let tasks: Vec<(usize, Task<'_>)> = file.tasks().enumerate().skip(185).take(40).collect();
    let run = |engine: &Engine| {
        let prepared = engine.prepare(&tasks).unwrap();
        let plan = plan(&prepared, &settings()).unwrap();
        let mut scores = Vec::new();
        let summary = engine
            .score(&prepared, &plan, &settings(), &|| false, |s| {
                scores.push(s);
                ControlFlow::Continue(())
            })
            .unwrap();
        (scores, summary.times.projection)
    };
    let ours = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let mut theirs = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    theirs.leave_projection_to_llama();
    let ((ours, projected), (theirs, unprojected)) = (run(&ours), run(&theirs));
    assert_eq!(unprojected, 0.0);
    if mcscore_engine::project::fast_kernel() {
        // The run compared the two on its first rows and kept its own.
        assert!(projected > 0.0, "the engine left the projection to llama.cpp");
    } else {
        eprintln!("this CPU has no AVX-512 VNNI: llama.cpp projects in both runs");
    }
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        for (x, y) in a.options.iter().zip(&b.options) {
            assert_eq!((x.logprob_sum.to_bits(), x.greedy), (y.logprob_sum.to_bits(), y.greedy), "task {}", a.task);
        }
    }
}
