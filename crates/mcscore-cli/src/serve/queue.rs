//! The server's queue: requests wait in a bounded queue, and one worker
//! thread, which owns the engine's session, takes everything waiting at once,
//! so that the prompts of concurrent requests share fills and a context that
//! several of them repeat is decoded once.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mcscore_engine::{Engine, EngineError, PromptRequest, RowScores, SessionLimits, Settings};

/// Prompt tokens one pass of the worker gathers from the queue at most (a
/// request bigger than this goes alone).
const GATHER_TOKENS: usize = 16_384;

/// A request's prompts, waiting to be scored.
pub(crate) struct Work {
    pub prompts: Vec<PromptRequest>,
    /// Set when the client has gone: the worker skips the work.
    pub cancelled: Arc<AtomicBool>,
    pub enqueued: Instant,
    /// Called once, from the worker thread, with the outcome.
    pub reply: Box<dyn FnOnce(Outcome) + Send>,
}

/// How a request's work ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    Scored {
        /// Per prompt, the rows it asked for.
        rows: Vec<Vec<RowScores>>,
        /// Time in the queue, and scoring the pass it was part of.
        wait: Duration,
        compute: Duration,
        /// Prompts scored in that pass (this request's and others').
        pass_prompts: usize,
    },
    /// Its client went away before the worker reached it.
    Cancelled,
    /// The engine failed (the message says why); other passes go on.
    Failed(String),
}

/// Why [`Queue::submit`] did not take the work.
pub(crate) enum Refused {
    /// The queue holds as many requests, or prompt tokens, as it may.
    Full,
    /// The worker has stopped.
    Closed,
}

/// The bounded queue and its worker.
#[non_exhaustive]
pub(crate) struct Queue {
    sender: SyncSender<Work>,
    worker: JoinHandle<()>,
    capacity: usize,
    /// Prompt tokens that may wait at once, and those waiting now.
    token_capacity: usize,
    queued_tokens: Arc<AtomicUsize>,
    skipped: Arc<AtomicU64>,
}

impl Queue {
    /// Creates the engine session within `limits` (on the worker thread,
    /// which keeps it) and starts the worker. `capacity`: requests that may
    /// wait at once; `token_capacity`: their prompt tokens, in all.
    pub(crate) fn start(
        engine: Arc<Engine>,
        settings: Settings,
        limits: SessionLimits,
        capacity: usize,
        token_capacity: usize,
    ) -> Result<Queue, EngineError> {
        let (sender, receiver) = mpsc::sync_channel::<Work>(capacity.max(1));
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), EngineError>>();
        let skipped = Arc::new(AtomicU64::new(0));
        let counter = skipped.clone();
        let queued_tokens = Arc::new(AtomicUsize::new(0));
        let taken = queued_tokens.clone();
        let worker = std::thread::Builder::new()
            .name("mcscore-scorer".into())
            .spawn(move || {
                let mut session = match engine.session(&settings, limits) {
                    Ok(session) => {
                        let _ = ready_tx.send(Ok(()));
                        session
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                work(&mut session, receiver, &counter, &taken);
            })
            .map_err(|e| EngineError::ScoringThread { what: "could not start", source: Some(e) })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Queue { sender, worker, capacity: capacity.max(1), token_capacity, queued_tokens, skipped }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(EngineError::ScoringThread { what: "stopped while creating its context", source: None }),
        }
    }

    /// Queues work without waiting: a full queue (in requests or in prompt
    /// tokens) gives it back at once.
    pub(crate) fn submit(&self, work: Work) -> Result<(), Refused> {
        let tokens = tokens_of(&work);
        let before = self.queued_tokens.fetch_add(tokens, Ordering::SeqCst);
        if before > 0 && before + tokens > self.token_capacity {
            self.queued_tokens.fetch_sub(tokens, Ordering::SeqCst);
            return Err(Refused::Full);
        }
        self.sender.try_send(work).map_err(|e| {
            self.queued_tokens.fetch_sub(tokens, Ordering::SeqCst);
            match e {
                TrySendError::Full(_) => Refused::Full,
                TrySendError::Disconnected(_) => Refused::Closed,
            }
        })
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn token_capacity(&self) -> usize {
        self.token_capacity
    }

    /// Requests whose clients went away before the worker reached them, so
    /// that their prompts were never scored.
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Stops taking work, lets the worker finish what was queued, and waits
    /// for it.
    pub(crate) fn shutdown(self) {
        drop(self.sender);
        let _ = self.worker.join();
    }
}

/// Prompt tokens a request's work holds.
fn tokens_of(work: &Work) -> usize {
    work.prompts.iter().map(|p| p.tokens.len()).sum()
}

fn work(session: &mut mcscore_engine::Session<'_>, receiver: Receiver<Work>, skipped: &AtomicU64, queued_tokens: &AtomicUsize) {
    while let Ok(first) = receiver.recv() {
        let mut tokens = tokens_of(&first);
        let mut pass = vec![first];
        while tokens < GATHER_TOKENS {
            match receiver.try_recv() {
                Ok(w) => {
                    tokens += tokens_of(&w);
                    pass.push(w);
                }
                Err(_) => break,
            }
        }
        queued_tokens.fetch_sub(tokens, Ordering::SeqCst);
        let (mut live, gone): (Vec<Work>, Vec<Work>) = pass.into_iter().partition(|w| !w.cancelled.load(Ordering::Relaxed));
        for w in gone {
            skipped.fetch_add(1, Ordering::Relaxed);
            (w.reply)(Outcome::Cancelled);
        }
        if live.is_empty() {
            continue;
        }
        // Prompts sorted by their tokens (stably) put those that share a
        // context side by side, in the same fill.
        let counts: Vec<usize> = live.iter().map(|w| w.prompts.len()).collect();
        let mut indexed: Vec<(usize, PromptRequest)> = live.iter_mut().flat_map(|w| std::mem::take(&mut w.prompts)).enumerate().collect();
        indexed.sort_by(|a, b| a.1.tokens.cmp(&b.1.tokens));
        let (order, sorted): (Vec<usize>, Vec<PromptRequest>) = indexed.into_iter().unzip();
        let started = Instant::now();
        let flags: Vec<Arc<AtomicBool>> = live.iter().map(|w| w.cancelled.clone()).collect();
        let everyone_left = || flags.iter().all(|f| f.load(Ordering::Relaxed));
        let result = session.score(&sorted, &everyone_left);
        let compute = started.elapsed();
        match result {
            Ok(None) => {
                for w in live {
                    skipped.fetch_add(1, Ordering::Relaxed);
                    (w.reply)(Outcome::Cancelled);
                }
            }
            Ok(Some(rows)) => {
                let mut unsorted: Vec<(usize, Vec<RowScores>)> = order.into_iter().zip(rows).collect();
                unsorted.sort_unstable_by_key(|r| r.0);
                let mut unsorted = unsorted.into_iter().map(|r| r.1);
                let pass_prompts = sorted.len();
                for (w, n) in live.into_iter().zip(counts) {
                    let rows: Vec<Vec<RowScores>> = unsorted.by_ref().take(n).collect();
                    let wait = started.saturating_duration_since(w.enqueued);
                    (w.reply)(Outcome::Scored { rows, wait, compute, pass_prompts });
                }
            }
            Err(e) => {
                for w in live {
                    (w.reply)(Outcome::Failed(mcscore_format::with_causes(&e)));
                }
            }
        }
    }
}
