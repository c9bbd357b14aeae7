//! mcscore's jobs as a library, shared by every front end (the `mcscore`
//! command line, a server): scoring a task file with resume and cancellation
//! ([`ScoreJob`]), the sample log it writes ([`log`]), the report built from
//! logs ([`report`]), paired comparisons of runs of the same tasks
//! ([`compare`]) and sequential ones that stop once decided
//! ([`until_decided`]), the prompt-format sweep ([`sweep`]),
//! llama-perplexity's output ([`llama`]), the results JSON ([`results`]),
//! what `mcscore view`'s page shows ([`view`]), the option-ID
//! tokenisation audit ([`tokens`]), the runs and task groups they read
//! ([`run`], [`groups`]), and a run's shards merged into one ([`shard`]).
//! Front ends parse, print and plot; every result is computed here. The
//! server's requests, queue and HTTP, and the cluster scripts of a study,
//! belong to the `mcscore` binary: a library caller scores through
//! [`ScoreJob`], with the [`Engine`] it re-exports.
//!
//! Score a file with two models loaded once, write a log, compare the runs
//! in memory and build a report, without the binary:
//!
//! ```no_run
//! use std::path::PathBuf;
//! use mcscore_eval::compare::{compare, CompareOptions};
//! use mcscore_eval::run::Run;
//! use mcscore_eval::{report, Cancel, Engine, NoProgress, Normalisation, ScoreJob, ScoreSpec, Settings};
//!
//! let file = PathBuf::from("datasets/arc-easy-validation.bin");
//! let mut outcomes = Vec::new();
//! for model in ["gemma-3-270m-q4_k_m.gguf", "gemma-3-270m-Q8_0.gguf"] {
//!     // Loaded once: an engine may be lent to any number of jobs.
//!     let engine = Engine::load(model.as_ref(), &Settings::on_cpu())?;
//!     let mut spec = ScoreSpec::new(model, &file);
//!     spec.subset = Some(100);
//!     spec.log = Some(PathBuf::from(format!("{model}.jsonl")));
//!     let outcome = ScoreJob::with_engine(&engine, spec)?.run(&mut NoProgress, &Cancel::new())?;
//!     println!("{model}: acc_norm {:.2} %", outcome.accuracy(Normalisation::AccNorm).percent());
//!     outcomes.push(Run { label: model.into(), source: model.into(), header: outcome.header, records: outcome.records });
//! }
//! let comparison = compare(&outcomes[0], &outcomes[1..], None, &CompareOptions::default())?;
//! println!("{}", comparison.others[0].conclusion);
//!
//! // From the runs in memory, or from their logs (`report::build`).
//! let built = report::of_runs(&outcomes, &report::ReportOptions::default(), None)?;
//! println!("ECE {:.4}", built.models[0].calibration.ece);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

/// The unit tests count a chat template's allocations as the binary does.
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: mcscore_engine::budget::BoundedAlloc = mcscore_engine::budget::BoundedAlloc;
pub mod chat;
pub mod compare;
mod error;
mod fills;
pub mod groups;
mod hashes;
mod job;
pub mod llama;
pub mod lm_eval;
pub mod many;
pub mod report;
pub mod results;
pub mod run;
pub mod schemes;
pub mod shard;
pub mod sweep;
pub mod thumbnails;
pub mod tokens;
pub mod until_decided;
pub mod view;
pub mod vqa;

pub use error::{
    with_causes, ChatError, EvalError, GroupsFault, LogsError, SchemesError, SequentialError, SequentialSetting, ShardError, SpecError,
    SweepError, SweepFault,
};
pub use fills::Cancel;
pub use job::{select, BeyondTraining, End, Ordered, Running, ScoreJob, ScoreOutcome, ScoreSpec, Selection, Tasks, Timings};
/// The engine a job scores with, and how it maps the model file: what a
/// library caller needs to load a model once and lend it to many jobs.
pub use mcscore_engine::{Engine, Mmap, Settings};
/// The sample log, in its own crate (no engine), re-exported here.
pub use mcscore_log as log;
pub use mcscore_log::{LogError, LogFault, TaskKind};
/// The normalisations an outcome's accuracy is read under.
pub use mcscore_metrics::Normalisation;

/// A stretch of work a job reports progress on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// acc_pmi's pass over the options after "Answer:" alone.
    Unconditional,
    /// The tasks of a score job.
    Scoring,
    /// The prompts of a sweep, for one model.
    Prompts,
}

/// What a front end shows while a job runs (a progress bar, running lines).
/// Every method has a default that does nothing.
pub trait Progress {
    /// `total` units of `phase` start, `done` of them already done (resumed).
    fn start(&mut self, _phase: Phase, _total: usize, _done: usize) {}

    /// One more unit of `phase` is done.
    fn tick(&mut self, _phase: Phase) {}

    /// The unit about to be ticked or scored held `n` tokens (a task's
    /// prefix once, then each option's: what one evaluation of it decodes
    /// without sharing), for a rate in tokens.
    fn tokens(&mut self, _n: usize) {}

    /// A task of the score job was scored; `done` tasks of the run are now
    /// done. An error stops the run and is returned by it.
    fn scored(&mut self, _record: &log::TaskRecord, _done: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.tick(Phase::Scoring);
        Ok(())
    }

    /// `phase` is over: its units are done, or a cancel stopped it (an error
    /// returns without this call).
    fn finish(&mut self, _phase: Phase) {}
}

/// Progress that nobody watches.
pub struct NoProgress;

impl Progress for NoProgress {}
