//! The one cancellation rule of every job: a run stops before its next
//! micro-batch; what was handed over (and made durable) ends at a fill, and
//! the fill being decoded is dropped, to be scored again on resume.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcscore_engine::{Buffer, Completion, Engine, Plan, PreparedTask, Resident, ScoreTimes, Settings, TaskScores, TokenCounts};

use crate::EvalError;

/// A flag a front end sets (from a Ctrl-C handler, a closed connection) to
/// stop a job before its next micro-batch. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not yet set.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Sets the flag, for this handle and every clone: the job stops before
    /// its next micro-batch. Setting it again does nothing more.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How [`score_fills`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FillsEnd {
    Finished,
    Cancelled,
}

#[derive(Debug, Clone)]
pub(crate) struct Fills {
    pub end: FillsEnd,
    pub tokens: TokenCounts,
    pub times: ScoreTimes,
    pub context_buffers: Vec<Buffer>,
    pub resident: Option<Resident>,
}

impl Fills {
    /// Adds what these fills saw to `seen`.
    pub(crate) fn note_memory(&self, seen: &mut MemorySeen) {
        seen.sample(self.resident);
        let bytes = |buffers: &[Buffer]| buffers.iter().map(|b| b.bytes).sum::<u64>();
        if bytes(&self.context_buffers) > bytes(&seen.context) {
            seen.context.clone_from(&self.context_buffers);
        }
    }
}

/// The memory a job saw: the largest resident sample (after loading, and at
/// the end of each scoring pass) and its largest context's buffers.
#[derive(Debug, Default)]
pub(crate) struct MemorySeen {
    pub largest: Option<Resident>,
    pub context: Vec<Buffer>,
}

impl MemorySeen {
    pub(crate) fn sample(&mut self, sample: Option<Resident>) {
        self.largest = match (self.largest, sample) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// What to score: prepared tasks and their plan on an engine; engine errors
/// name `path`.
pub(crate) struct Scoring<'a> {
    pub engine: &'a Engine,
    pub tasks: &'a [PreparedTask],
    pub plan: &'a Plan,
    pub settings: &'a Settings,
    pub path: &'a Path,
}

/// What [`score_fills`] hands its consumer.
pub(crate) enum FillEvent {
    /// A task's scores, in order.
    Task(TaskScores),
    /// The fill's last task was handed over: make it durable now.
    FillDone,
}

/// Scores the plan's fills in order, handing each task's scores to `on`,
/// then [`FillEvent::FillDone`] after a fill's last task. Once `cancel` is
/// set it stops before the next micro-batch, dropping the fill being decoded
/// (so what `on` made durable ends at a fill). The first error of `on` ends
/// the run and is returned.
pub(crate) fn score_fills(
    scoring: Scoring<'_>,
    cancel: &Cancel,
    mut on: impl FnMut(FillEvent) -> Result<(), EvalError>,
) -> Result<Fills, EvalError> {
    let Scoring { engine, tasks, plan, settings, path } = scoring;
    // Tasks done when each fill ends.
    let mut fill_ends = plan.fills.iter().map(|b| b.end).peekable();
    let mut done = 0;
    let mut failure = None;
    let run = engine
        .score(tasks, plan, settings, &|| cancel.is_cancelled(), |scores| {
            let step = on(FillEvent::Task(scores)).and_then(|()| {
                done += 1;
                if fill_ends.next_if_eq(&done).is_some() {
                    on(FillEvent::FillDone)?;
                }
                Ok(())
            });
            match step {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            }
        })
        .map_err(EvalError::engine(path))?;
    if let Some(e) = failure {
        return Err(e);
    }
    let end = match run.completion {
        Completion::Finished => FillsEnd::Finished,
        Completion::Interrupted { .. } => FillsEnd::Cancelled,
    };
    Ok(Fills { end, tokens: run.tokens, times: run.times, context_buffers: run.context_buffers, resident: run.resident })
}
