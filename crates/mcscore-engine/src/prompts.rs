//! Whole prompts scored for a server: each token's log-probability given the
//! tokens before it, the likeliest tokens at each position, and the likeliest
//! token after the prompt. Prompts scored together share the KV cells of the
//! tokens they share: lm-evaluation-harness sends each option of a question
//! as its own prompt behind the same context, which is then decoded once.

use std::ops::Range;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use rayon::prelude::*;

use mcscore_metrics::LogSoftmax;

use crate::plan::{round_up, Plan, Settings, MAX_SEQUENCES, MICRO_BATCH};
use crate::score::{decode_fill, fill_entries};
use crate::trie::Trie;
use crate::LlamaCause;
use crate::{Engine, EngineError, ScoreTimes};

/// One prompt to score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptRequest {
    /// Its tokens, as the model reads them (a BOS included).
    pub tokens: Vec<u32>,
    /// The positions whose logits rows are read: the row at position `i`
    /// predicts token `i + 1`; the row at the last position predicts the token
    /// after the prompt.
    pub rows: Range<usize>,
    /// How many of the likeliest tokens each row reports (at least one is
    /// always found: the greedy choice).
    pub top: usize,
}

/// What one logits row says.
#[derive(Debug, Clone, PartialEq)]
pub struct RowScores {
    /// The log-probability of the prompt's next token; `None` for the row
    /// after the prompt's last token.
    pub next: Option<f64>,
    /// The `top` likeliest tokens (at least one) with their log-probabilities,
    /// likeliest first, the lower id first among ties.
    pub top: Vec<(u32, f64)>,
}

/// A context kept for scoring prompts, request after request, so that none
/// pays for creating one.
pub struct Session<'e> {
    ctx: LlamaContext<'e>,
    batch: LlamaBatch<'static>,
    plan: Plan,
    n_vocab: u32,
    max_prompt: usize,
    /// Tokens one fill may decode when its prompts are shorter.
    fill_budget: usize,
    /// Prompts that may branch apart within one fill.
    branches: usize,
    /// Every prompt decoded alone ([`crate::OFFLOAD_BATCH_RULE`]).
    alone: bool,
}

/// What a [`Session`] holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Tokens of the longest prompt.
    pub max_prompt: usize,
    /// Prompts that may branch apart within one fill (`serve --parallel`),
    /// at most 255.
    pub branches: u32,
}

impl Engine {
    /// A session for prompts within `limits`, decoding with `settings`
    /// (threads, fills of `-b` tokens, GPU layers). Prompts are decoded under
    /// the batch rule (see [`crate::MICRO_BATCH`]), so a prompt's scores do
    /// not depend on the requests beside it.
    pub fn session(&self, settings: &Settings, limits: SessionLimits) -> Result<Session<'_>, EngineError> {
        let max_prompt = limits.max_prompt.max(1);
        let branches = limits.branches.clamp(1, (MAX_SEQUENCES - 1) as u32);
        let fill_budget = settings.fill_budget();
        let n_ctx = round_up(max_prompt.max(fill_budget) + MICRO_BATCH as usize - 1, 256);
        if n_ctx > u32::MAX as usize {
            return Err(EngineError::ContextOverflow { n_ctx: n_ctx as u64 });
        }
        // One more sequence id for the padding.
        let plan = Plan {
            fills: Vec::new(),
            reused: Vec::new(),
            n_ctx: n_ctx as u64,
            n_batch: MICRO_BATCH.max(branches + 1),
            n_ubatch: MICRO_BATCH,
            n_seq_max: branches + 1,
        };
        self.check_memory(&plan, settings)?;
        let ctx = self.new_context(self.context_params(&plan, settings)?)?;
        Ok(Session {
            ctx,
            batch: LlamaBatch::new(plan.n_batch as usize, plan.n_seq_max as i32),
            n_vocab: self.n_vocab(),
            max_prompt,
            fill_budget,
            branches: branches as usize,
            alone: settings.alone(),
            plan,
        })
    }

    /// Tokens in the model's vocabulary: every valid id is below it.
    pub fn n_vocab(&self) -> u32 {
        self.model.n_vocab().max(0) as u32
    }
}

/// One decoded row: its entry, its log-softmax and its likeliest tokens.
type NodeRow = (usize, LogSoftmax, Vec<(u32, f64)>);

/// A request's row, in the order of a fill's entries.
struct Wanted {
    entry: usize,
    prompt: usize,
    position: usize,
}

impl Session<'_> {
    /// Scores prompts, returning for each the rows it asked for, in order;
    /// `None` when `stop` said so between two fills (every client of the
    /// prompts has gone: nobody would read the rest).
    pub fn score(&mut self, prompts: &[PromptRequest], stop: &dyn Fn() -> bool) -> Result<Option<Vec<Vec<RowScores>>>, EngineError> {
        for (index, prompt) in prompts.iter().enumerate() {
            self.check(index, prompt)?;
        }
        let mut results: Vec<Vec<RowScores>> = prompts.iter().map(|p| Vec::with_capacity(p.rows.len())).collect();
        let sequences: Vec<Vec<LlamaToken>> = prompts.iter().map(|p| p.tokens.iter().map(|&t| LlamaToken(t as i32)).collect()).collect();
        for fill in self.fills(&sequences) {
            if stop() {
                return Ok(None);
            }
            self.score_fill(prompts, &sequences, fill, &mut results)?;
        }
        Ok(Some(results))
    }

    fn check(&self, index: usize, prompt: &PromptRequest) -> Result<(), EngineError> {
        let invalid = |message: String| EngineError::InvalidPrompt { prompt: index, message };
        if prompt.tokens.is_empty() {
            return Err(invalid("no tokens".into()));
        }
        if prompt.tokens.len() > self.max_prompt {
            return Err(invalid(format!("{} tokens; at most {}", prompt.tokens.len(), self.max_prompt)));
        }
        if let Some((position, id)) = prompt.tokens.iter().enumerate().find(|(_, &t)| t >= self.n_vocab) {
            return Err(invalid(format!("token {position} is {id}, outside the vocabulary of {} tokens", self.n_vocab)));
        }
        if prompt.rows.end > prompt.tokens.len() || prompt.rows.start > prompt.rows.end {
            return Err(invalid(format!("rows {:?} outside its {} positions", prompt.rows, prompt.tokens.len())));
        }
        Ok(())
    }

    /// Packs prompts greedily, in order: a fill takes prompts while their
    /// prefix tree fits the fill budget and its branches the sequence limit;
    /// a longer prompt goes alone, and every prompt under the offload rule.
    fn fills(&self, sequences: &[Vec<LlamaToken>]) -> Vec<Range<usize>> {
        let mut fills = Vec::new();
        let mut start = 0;
        let mut trie = Trie::default();
        for (i, sequence) in sequences.iter().enumerate() {
            trie.insert_sequence(sequence);
            if i > start && (self.alone || trie.len() > self.fill_budget || trie.leaves() > self.branches) {
                fills.push(start..i);
                start = i;
                trie = Trie::default();
                trie.insert_sequence(sequence);
            }
        }
        if start < sequences.len() {
            fills.push(start..sequences.len());
        }
        fills
    }

    fn score_fill(
        &mut self,
        prompts: &[PromptRequest],
        sequences: &[Vec<LlamaToken>],
        fill: Range<usize>,
        results: &mut [Vec<RowScores>],
    ) -> Result<(), EngineError> {
        // Where the time goes is not reported per request.
        let mut times = ScoreTimes::default();
        let mut trie = Trie::default();
        let paths: Vec<Vec<u32>> = sequences[fill.clone()].iter().map(|s| trie.insert_sequence(s)).collect();
        let layout = trie.layout();
        let mut top_of_node = vec![0usize; trie.len()];
        let mut has_row = vec![false; trie.len()];
        for (prompt, path) in prompts[fill.clone()].iter().zip(&paths) {
            // check refused rows past the prompt's tokens, and path has a node per token
            for &node in &path[prompt.rows.clone()] {
                has_row[node as usize] = true;
                top_of_node[node as usize] = top_of_node[node as usize].max(prompt.top.max(1));
            }
        }
        self.ctx.clear_kv_cache();
        let (entries, entry_of) = fill_entries(&trie, &layout, 0, 0, &has_row);
        let mut top_of_entry = vec![0usize; entries.len()];
        for (node, &entry) in entry_of.iter().enumerate() {
            top_of_entry[entry] = top_of_node[node];
        }
        let mut wanted: Vec<Wanted> = Vec::new();
        for (offset, (prompt, path)) in prompts[fill.clone()].iter().zip(&paths).enumerate() {
            for position in prompt.rows.clone() {
                // position < rows.end <= path.len() (check), and fill_entries gives every node an entry
                wanted.push(Wanted { entry: entry_of[path[position] as usize], prompt: fill.start + offset, position });
            }
        }
        // Stable: each prompt's rows stay in position order.
        wanted.sort_by_key(|w| w.entry);

        let mut next_wanted = 0;
        let fail = |what: &'static str, source: LlamaCause| EngineError::DecodePrompts { what, source };
        // n_seq_max is branches + 1, and branches >= 1
        let pad_seq = self.plan.n_seq_max as i32 - 1;
        let (ctx, batch) = (&mut self.ctx, &mut self.batch);
        // A request is answered whole: nothing interrupts its fill.
        decode_fill(ctx, batch, &entries, pad_seq, &mut times, &fail, &|| false, |ctx, decoded, _| {
            let end = wanted[next_wanted..].iter().position(|w| w.entry >= decoded.end).map_or(wanted.len(), |p| next_wanted + p);
            let mine = &wanted[next_wanted..end];
            next_wanted = end;
            // One log-softmax and one top-k per node, however many prompts read it.
            let mut nodes: Vec<usize> = mine.iter().map(|w| w.entry).collect();
            nodes.dedup();
            // each wanted entry has logits set (has_row), so it was an output; earlier chunks took those before decoded.start
            let logits: Vec<&[f32]> = nodes.iter().map(|&entry| ctx.get_logits_ith((entry - decoded.start) as i32)).collect();
            let rows: Vec<NodeRow> = nodes
                .par_iter()
                .zip(logits.par_iter())
                .map(|(&entry, &logits)| {
                    let (parts, top) = LogSoftmax::with_top(logits, top_of_entry[entry]);
                    let top = top.into_iter().map(|t| (t as u32, parts.at(logits, t))).collect();
                    (entry, parts, top)
                })
                .collect();
            for w in mine {
                // rows holds one per entry of mine, sorted, so w.entry is found
                let (_, parts, top) = &rows[rows.partition_point(|r| r.0 < w.entry)];
                let prompt = &prompts[w.prompt];
                let next = match prompt.tokens.get(w.position + 1) {
                    Some(&token) => {
                        // the same row as read above: an output of this micro-batch
                        let logits = ctx.get_logits_ith((w.entry - decoded.start) as i32);
                        // check refused tokens at or past n_vocab, the row's length
                        let value = parts.at(logits, token as usize);
                        if !value.is_finite() {
                            return Err(EngineError::NonFinitePrompt { prompt: w.prompt, position: w.position + 1, value });
                        }
                        Some(value)
                    }
                    None => None,
                };
                if let Some(&(_, value)) = top.iter().find(|t| !t.1.is_finite()) {
                    return Err(EngineError::NonFinitePrompt { prompt: w.prompt, position: w.position + 1, value });
                }
                if top.is_empty() {
                    // A row of NaN logits has no likeliest token.
                    return Err(EngineError::NonFinitePrompt { prompt: w.prompt, position: w.position + 1, value: f64::NAN });
                }
                // min(top.len()) keeps the slice in range
                results[w.prompt].push(RowScores { next, top: top[..prompt.top.max(1).min(top.len())].to_vec() });
            }
            Ok(())
        })?;
        Ok(())
    }
}
