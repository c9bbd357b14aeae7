//! Greedy generation, optionally under a GBNF grammar (llama.cpp's grammar
//! sampler), for the prompted scoring schemes: a model asked to answer in
//! words.
//!
//! Several sequences are decoded at once under the batch rule, so a response
//! never depends on what it was generated beside. Requests run in waves of
//! at most `parallel` sequences from an empty cache: each wave's prompts are
//! decoded as one fill (micro-batches of [`MICRO_BATCH`] tokens, the last
//! padded), then one token per live sequence per step, each step one padded
//! micro-batch. The padding's cells are removed after each decode and the
//! next decode's tokens take their place, so a sequence's cells always lie
//! in position order, right after the cells of the tokens before them: the
//! order attention's sums follow. A finished sequence keeps its cells until
//! its wave ends, leaving no hole another sequence's token could fall into,
//! and the sliding-window layers keep a full cache (`swa_full`), so no cell
//! is reused for another sequence's token either.

use std::ops::ControlFlow;

use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use crate::plan::{round_up, Plan, Settings, MAX_SEQUENCES, MICRO_BATCH};
use crate::score::{decode_fill, fill_entries, Completion, Entry, ScoreTimes};
use crate::trie::Trie;
use crate::{Engine, EngineError, LlamaCause};

/// One response to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationRequest {
    /// The prompt's tokens, as the model reads them (a BOS included).
    pub tokens: Vec<u32>,
    /// A GBNF grammar (root rule `root`) every response must follow; `None`
    /// for free text.
    pub grammar: Option<String>,
    /// The most tokens the response may take (at least 1).
    pub max_tokens: usize,
}

/// Why a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// The model chose an end-of-generation token (under a grammar: only
    /// once the grammar was complete).
    EndOfGeneration,
    /// It reached the request's `max_tokens`.
    MaxTokens,
    /// The grammar allowed no token, not even an end (a grammar that
    /// cannot be completed from where the response stands).
    GrammarDeadEnd,
}

/// A generated response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// Its tokens, the end-of-generation token not among them.
    pub tokens: Vec<u32>,
    /// Why it ended.
    pub finish: Finish,
}

/// A sequence being generated within a wave.
struct Live {
    request: usize,
    grammar: Option<LlamaSampler>,
    tokens: Vec<u32>,
    prompt: usize,
    /// Its sequence id.
    seq: i32,
    finish: Option<Finish>,
}

impl Engine {
    /// Generates a response to each request, greedily (the first likeliest
    /// token, among those the grammar allows), at most `parallel` sequences
    /// at once (1 with layers on a GPU: [`crate::OFFLOAD_BATCH_RULE`]).
    /// Responses reach `sink` in request order, with their request's index;
    /// `sink` may stop the run between two. `interrupted` is asked before
    /// every micro-batch; the wave being decoded is then dropped.
    pub fn generate(
        &self,
        requests: &[GenerationRequest],
        settings: &Settings,
        parallel: usize,
        interrupted: &dyn Fn() -> bool,
        mut sink: impl FnMut(usize, Generation) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError> {
        let n_vocab = self.n_vocab();
        for (index, request) in requests.iter().enumerate() {
            let invalid = |message: String| EngineError::InvalidPrompt { prompt: index, message };
            if request.tokens.is_empty() {
                return Err(invalid("no tokens".into()));
            }
            if request.max_tokens == 0 {
                return Err(invalid("a response of at most 0 tokens".into()));
            }
            if let Some((position, id)) = request.tokens.iter().enumerate().find(|(_, &t)| t >= n_vocab) {
                return Err(invalid(format!("token {position} is {id}, outside the vocabulary of {n_vocab} tokens")));
            }
            if let Some(grammar) = &request.grammar {
                // Parsed now, so that a bad grammar fails before any decode.
                self.grammar(index, grammar)?;
            }
        }
        if requests.is_empty() {
            return Ok(Completion::Finished);
        }
        let parallel = if settings.alone() { 1 } else { parallel.clamp(1, MAX_SEQUENCES - 1) };
        let cells = |wave: &[GenerationRequest]| wave.iter().map(|r| r.tokens.len().saturating_add(r.max_tokens)).sum::<usize>();
        let largest = requests.chunks(parallel).map(cells).max().unwrap_or(0);
        // The padding of one micro-batch beside the wave's own cells.
        let n_ctx = round_up(largest.saturating_add(MICRO_BATCH as usize), 256);
        if n_ctx > u32::MAX as usize {
            return Err(EngineError::ContextOverflow { n_ctx: n_ctx as u64 });
        }
        let wave_size = parallel.min(requests.len());
        let plan = Plan {
            fills: Vec::new(),
            reused: Vec::new(),
            n_ctx: n_ctx as u64,
            n_batch: MICRO_BATCH.max(wave_size as u32 + 1),
            n_ubatch: MICRO_BATCH,
            n_seq_max: wave_size as u32 + 1,
        };
        self.check_memory(&plan, settings)?;
        let params = self.context_params(&plan, settings)?.with_swa_full(true);
        let mut ctx = self.new_context(params)?;
        let mut batch = LlamaBatch::new(plan.n_batch as usize, plan.n_seq_max as i32);
        let pad_seq = wave_size as i32;
        let mut times = ScoreTimes::default();
        let fail = |what: &'static str, source: LlamaCause| EngineError::DecodePrompts { what, source };
        let mut done = 0;
        for (wave_index, wave) in requests.chunks(parallel).enumerate() {
            let first = wave_index * parallel;
            ctx.clear_kv_cache();
            let mut live: Vec<Live> = Vec::with_capacity(wave.len());
            for (s, request) in wave.iter().enumerate() {
                live.push(Live {
                    request: first + s,
                    grammar: request.grammar.as_deref().map(|g| self.grammar(first + s, g)).transpose()?,
                    tokens: Vec::new(),
                    prompt: request.tokens.len(),
                    seq: s as i32,
                    finish: None,
                });
            }
            let (mut entries, mut owners) = prefill(wave, &mut live);
            loop {
                let mut next_owner = 0;
                let step = decode_fill(&mut ctx, &mut batch, &entries, pad_seq, &mut times, &fail, interrupted, |ctx, decoded, _| {
                    while let Some(&(entry, s)) = owners.get(next_owner).filter(|(entry, _)| *entry < decoded.end) {
                        next_owner += 1;
                        let row = (entry - decoded.start) as i32;
                        if let Some(value) = ctx.get_logits_ith(row).iter().find(|v| !v.is_finite()) {
                            let l = &live[s];
                            return Err(EngineError::NonFinitePrompt {
                                prompt: l.request,
                                position: l.prompt + l.tokens.len(),
                                value: f64::from(*value),
                            });
                        }
                        let l = &mut live[s];
                        let id = choose(ctx.get_logits_ith(row), l.grammar.as_mut());
                        match id {
                            Some(id) if !self.is_end_of_generation(id) => {
                                l.tokens.push(id);
                                if l.tokens.len() >= wave[s].max_tokens {
                                    l.finish = Some(Finish::MaxTokens);
                                }
                            }
                            Some(_) => l.finish = Some(Finish::EndOfGeneration),
                            None => l.finish = Some(Finish::GrammarDeadEnd),
                        }
                    }
                    Ok(())
                })?;
                if step.is_none() {
                    return Ok(Completion::Interrupted { scored: done });
                }
                // The padding's cells go: the next decode's tokens take them.
                let removed = ctx
                    .clear_kv_cache_seq(Some(pad_seq as u32), None, None)
                    .map_err(|e| fail("removing the padding's cells", Box::new(e)))?;
                if !removed {
                    return Err(fail("removing the padding's cells", "llama.cpp refused".into()));
                }
                entries.clear();
                owners.clear();
                for (s, l) in live.iter().enumerate().filter(|(_, l)| l.finish.is_none()) {
                    let seq = l.seq;
                    // A live sequence has sampled at least one token.
                    let Some(&token) = l.tokens.last() else { continue };
                    owners.push((entries.len(), s));
                    entries.push(Entry {
                        token: LlamaToken(token as i32),
                        pos: (l.prompt + l.tokens.len() - 1) as i32,
                        seqs: seq..seq + 1,
                        logits: true,
                    });
                }
                if entries.is_empty() {
                    break;
                }
            }
            for l in live {
                // the loop ends once every sequence has finished
                let finish = l.finish.unwrap_or(Finish::MaxTokens);
                done += 1;
                if sink(l.request, Generation { tokens: l.tokens, finish }).is_break() {
                    return Ok(Completion::Interrupted { scored: done });
                }
            }
        }
        Ok(Completion::Finished)
    }

    /// llama.cpp's grammar sampler for `grammar`.
    fn grammar(&self, request: usize, grammar: &str) -> Result<LlamaSampler, EngineError> {
        LlamaSampler::grammar(&self.model, grammar, "root").map_err(|e| EngineError::InvalidPrompt {
            prompt: request,
            message: format!("its grammar does not parse ({e}); llama.cpp's log above says where"),
        })
    }
}

/// A wave's prompts as one fill, and for each entry whose row is read the
/// live sequence it starts. Prompts that share their first tokens share
/// those tokens' cells, as a fill's tasks do (a prefix tree, decoded parents
/// first), each prompt's last token a leaf whose number is its sequence id;
/// where one prompt is another's start, or two are the same, each prompt is
/// decoded in a sequence of its own.
fn prefill(wave: &[GenerationRequest], live: &mut [Live]) -> (Vec<Entry>, Vec<(usize, usize)>) {
    let mut trie = Trie::default();
    let sequences: Vec<Vec<LlamaToken>> = wave.iter().map(|r| r.tokens.iter().map(|&t| LlamaToken(t as i32)).collect()).collect();
    let lasts: Vec<u32> = sequences.iter().filter_map(|s| trie.insert_sequence(s).last().copied()).collect();
    // Each leaf ends at least one prompt: as many leaves as prompts, and
    // every prompt ends at a leaf of its own.
    if trie.leaves() == wave.len() && lasts.len() == wave.len() {
        let layout = trie.layout();
        let mut has_row = vec![false; trie.len()];
        for &node in &lasts {
            has_row[node as usize] = true;
        }
        let (entries, entry_of) = fill_entries(&trie, &layout, 0, 0, &has_row);
        let mut owners: Vec<(usize, usize)> = Vec::with_capacity(wave.len());
        for (i, &node) in lasts.iter().enumerate() {
            live[i].seq = layout.seqs[node as usize].start;
            owners.push((entry_of[node as usize], i));
        }
        owners.sort_unstable();
        return (entries, owners);
    }
    let mut entries = Vec::new();
    let mut owners = Vec::with_capacity(wave.len());
    for (i, tokens) in sequences.iter().enumerate() {
        let seq = live[i].seq;
        for (pos, &token) in tokens.iter().enumerate() {
            if pos + 1 == tokens.len() {
                owners.push((entries.len(), i));
            }
            entries.push(Entry { token, pos: pos as i32, seqs: seq..seq + 1, logits: pos + 1 == tokens.len() });
        }
    }
    (entries, owners)
}

/// The first likeliest token of a logits row among those `grammar` allows
/// next (any where none), which the grammar then accepts; `None` where the
/// grammar allows none. The likeliest token overall is asked first, as
/// llama.cpp's common sampler does: where the grammar allows it, it is also
/// the likeliest it allows, and the whole vocabulary is checked only where not.
fn choose(logits: &[f32], grammar: Option<&mut LlamaSampler>) -> Option<u32> {
    let first_max = |values: &mut dyn Iterator<Item = (usize, f32)>| {
        values
            .fold(None, |best: Option<(usize, f32)>, (i, v)| if best.is_none_or(|(_, b)| v > b) { Some((i, v)) } else { best })
            .map(|(i, _)| i)
    };
    let likeliest = first_max(&mut logits.iter().copied().enumerate())?;
    let Some(grammar) = grammar else { return Some(likeliest as u32) };
    let data = |i: usize| LlamaTokenData::new(LlamaToken(i as i32), logits[i], 0.0);
    let mut one = LlamaTokenDataArray::new(vec![data(likeliest)], false);
    grammar.apply(&mut one);
    let chosen = if one.data[0].logit() > f32::NEG_INFINITY {
        likeliest
    } else {
        let mut all = LlamaTokenDataArray::new((0..logits.len()).map(data).collect(), false);
        grammar.apply(&mut all);
        // The grammar sets the logits of what it refuses to -inf, in place.
        first_max(&mut all.data.iter().filter(|d| d.logit() > f32::NEG_INFINITY).map(|d| (d.id().0 as usize, d.logit())))?
    };
    grammar.accept(LlamaToken(chosen as i32));
    Some(chosen as u32)
}
