//! The decode loop: fills the KV cache with a batch of tasks, asks for logits
//! only at the rows that are scored, and turns those rows into log-probabilities
//! in parallel.

use std::num::NonZeroU32;
use std::ops::{ControlFlow, Range};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use rayon::prelude::*;

use mcscore_metrics::{log_softmax_greedy, OptionScore};

use crate::memory::{Buffer, Resident};
use crate::plan::{FlashAttention, Plan, Settings, MICRO_BATCH, MIN_OUTPUTS};
use crate::prepare::PreparedTask;
use crate::trie::{FillTree, Layout, Trie};
use crate::LlamaCause;
use crate::{Engine, EngineError};

/// Scores of every option of one task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskScores {
    /// Index of the task in its file.
    pub task: usize,
    /// Each option's score, in the task's order.
    pub options: Vec<OptionScore>,
    /// Per option: whether its label is 1.
    pub labels: Vec<bool>,
}

/// How a run ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Every task was scored.
    Finished,
    /// The consumer or `interrupted` (Ctrl-C) stopped the run after the given
    /// number of tasks.
    Interrupted {
        /// Tasks scored before it stopped.
        scored: usize,
    },
}

/// Tokens a run decoded, against what scoring each task on its own decodes
/// (its prefix once, each option's tokens but the last).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Tokens decoded, the padding aside: a fill's shared tokens once, and
    /// those reused from the previous fill's cache not at all.
    pub decoded: usize,
    /// Tokens that scoring each task on its own would decode.
    pub unshared: usize,
    /// Scratch tokens that filled the last micro-batch of each fill (the
    /// batch rule), decoded beside `decoded`.
    pub padding: usize,
}

impl std::ops::AddAssign for TokenCounts {
    fn add_assign(&mut self, other: TokenCounts) {
        self.decoded += other.decoded;
        self.unshared += other.unshared;
        self.padding += other.padding;
    }
}

/// Where [`Engine::score`] spent its time, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ScoreTimes {
    /// Creating the llama.cpp context (KV cache, compute buffers).
    pub context: f64,
    /// Building each fill's prefix tree and batch, and reusing cached tokens.
    pub batching: f64,
    /// `llama_decode`: the model's arithmetic.
    pub decode: f64,
    /// Tasks' media prefixes through the projector (mtmd): each image read,
    /// resized and encoded, and the text and embeddings up to the last image
    /// decoded. Not in `decode` or `decodes`, which are the fills' own.
    pub images: f64,
    /// The output projection of the rows read, where the engine computes it
    /// instead of llama.cpp (project.rs): the model's arithmetic, beside `decode`.
    pub projection: f64,
    /// Reading logits rows and their log-softmax.
    pub logits: f64,
    /// The consumer of the scores (logging, progress), between fills.
    pub consumer: f64,
    /// Decodes: `llama_decode` calls, one per micro-batch.
    pub decodes: usize,
    /// KV-cache fills.
    pub fills: usize,
}

/// The times of a run scored in parts (a sequential comparison's chunks).
impl std::ops::AddAssign for ScoreTimes {
    fn add_assign(&mut self, other: ScoreTimes) {
        self.context += other.context;
        self.batching += other.batching;
        self.decode += other.decode;
        self.images += other.images;
        self.projection += other.projection;
        self.logits += other.logits;
        self.consumer += other.consumer;
        self.decodes += other.decodes;
        self.fills += other.fills;
    }
}

/// What [`Engine::score`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreSummary {
    /// How it ended.
    pub completion: Completion,
    /// The tokens it decoded.
    pub tokens: TokenCounts,
    /// Where its time went.
    pub times: ScoreTimes,
    /// The buffers llama.cpp allocated for the run's context (none where
    /// there was nothing to score).
    pub context_buffers: Vec<Buffer>,
    /// The process's resident memory when the run ended, its context still allocated.
    pub resident: Option<Resident>,
}

/// One token of a batch: what it is, where, for which sequences, and whether
/// its logits row is read.
pub(crate) struct Entry {
    pub(crate) token: LlamaToken,
    pub(crate) pos: i32,
    pub(crate) seqs: std::ops::Range<i32>,
    pub(crate) logits: bool,
}

/// A logits row to read: it predicts `target` for option `option` of the
/// batch's task `task`.
struct Row {
    entry: usize,
    target: LlamaToken,
    task: usize,
    option: usize,
}

impl Engine {
    /// Scores `tasks` fill by fill as `plan` says, handing each task's scores
    /// to `sink` in order. `sink` may stop the run between tasks. Tokens
    /// that tasks share are decoded once: within a fill through a prefix tree,
    /// and across fills by keeping the tokens the last fill's tasks all shared,
    /// as far as the plan's `reused` says.
    ///
    /// `interrupted` is asked before every micro-batch; once it says so, the
    /// fill being decoded is dropped (none of its tasks reach `sink`) and the
    /// run ends [`Completion::Interrupted`]. Ctrl-C is then answered within a
    /// micro-batch, not a fill (seconds on a sweep's), and a resumed run
    /// scores the dropped tasks to the same numbers (the batch rule).
    pub fn score(
        &self,
        tasks: &[PreparedTask],
        plan: &Plan,
        settings: &Settings,
        interrupted: &dyn Fn() -> bool,
        mut sink: impl FnMut(TaskScores) -> ControlFlow<()>,
    ) -> Result<ScoreSummary, EngineError> {
        if plan.fills.is_empty() {
            // Nothing to score (a resumed run that was complete): no context.
            return Ok(ScoreSummary {
                completion: Completion::Finished,
                tokens: TokenCounts::default(),
                times: ScoreTimes::default(),
                context_buffers: Vec::new(),
                resident: None,
            });
        }
        self.check_memory(plan, settings)?;
        let mut times = ScoreTimes::default();
        let started = Instant::now();
        // On the CPU the engine may project the rows it reads itself
        // (project.rs): llama.cpp's graph then stops at the final norm. The
        // projection holds what the context's eval callback points to, so it
        // is made first and dropped last.
        let threads = usize::try_from(settings.threads_batch).unwrap_or(1);
        let mut projection = self.output.as_ref().filter(|_| !settings.alone()).map(|m| crate::project::Projection::new(m, threads));
        let mut params = self.context_params(plan, settings)?;
        if let Some(projection) = &projection {
            params = projection.params(params);
        }
        crate::memory::take_buffers();
        let mut ctx = self.new_context(params)?;
        let context_buffers = crate::memory::take_buffers();
        times.context = started.elapsed().as_secs_f64();
        let mut batch = LlamaBatch::new(plan.n_batch as usize, plan.n_seq_max.max(1) as i32);
        let mut rows: Vec<Row> = Vec::new();
        let mut scored = 0;
        let mut tokens = TokenCounts::default();
        // Sequence 0 carries the tokens every task of the last fill shared
        // (BOS, a few-shot preamble, a question stem) to the next fill; the
        // last id holds the padding.
        let anchor = 1;
        // plan() makes n_seq_max >= EXTRA_SEQUENCES (2)
        let pad_seq = plan.n_seq_max as i32 - 1;
        let mut last_media = None;

        for (fill, (range, &planned_reuse)) in plan.fills.iter().zip(&plan.reused).enumerate() {
            let fill_started = Instant::now();
            times.fills += 1;
            let group = &tasks[range.clone()];
            let FillTree { trie, scoring, layout, has_row } = FillTree::new(group);
            // The plan says how much of the previous fill's chain to keep (it
            // compared the chains); a run's first fill finds the cache empty.
            // A task with images decodes its media prefix first, from an empty cache.
            // The same media prefix as the last fill's stays in the cache
            // (not under the offload rule, where every task starts afresh).
            let media = group[0].media.as_ref();
            let kept_media = fill > 0 && !settings.alone() && crate::vision::same_media(last_media, media);
            last_media = media;
            let mut media_seconds = 0.0;
            let reused = if let Some(media) = media.filter(|_| !kept_media) {
                ctx.clear_kv_cache();
                let projector = self.projector.as_ref().ok_or(EngineError::NoProjector { task: group[0].index })?;
                let media_started = Instant::now();
                projector.decode(&mut ctx, group[0].index, media, MICRO_BATCH)?;
                // Its decodes read no rows (the callback copied their final norms).
                if let Some(projection) = projection.as_mut() {
                    projection.skip();
                }
                media_seconds = media_started.elapsed().as_secs_f64();
                times.images += media_seconds;
                // Its positions were decoded too (the images' embeddings among them).
                tokens.decoded += media.positions;
                media.positions
            } else if fill == 0 {
                0
            } else {
                planned_reuse
            };
            if reused == 0 {
                ctx.clear_kv_cache();
            } else {
                // plan() never makes an empty fill
                let kv_error = |e: llama_cpp_2::context::kv_cache::KvCacheConversionError| EngineError::Decode {
                    task: group[0].index,
                    what: "reusing cached tokens",
                    source: Box::new(e),
                };
                ctx.llama_kv_cache_seq_keep(0);
                ctx.kv_cache_seq_rm(0, Some(reused as u32), None).map_err(kv_error)?;
                for leaf in 0..trie.leaves() as i32 {
                    ctx.kv_cache_seq_cp(0, leaf + anchor, None, None).map_err(kv_error)?;
                }
            }

            let (entries, entry_of) = fill_entries(&trie, &layout, reused, anchor, &has_row);
            rows.clear();
            for (t, (task, options)) in group.iter().zip(&scoring).enumerate() {
                for (option, (cont, nodes)) in task.continuations.iter().zip(options).enumerate() {
                    let scored = task.scored[option].clone();
                    for (&target, &node) in cont[scored.clone()].iter().zip(&nodes[scored]) {
                        rows.push(Row { entry: entry_of[node as usize], target, task: t, option });
                    }
                }
            }
            rows.sort_by_key(|r| r.entry);

            let mut sums: Vec<Vec<f64>> = group.iter().map(|t| vec![0.0; t.n_options()]).collect();
            let mut greedy: Vec<Vec<bool>> = group.iter().map(|t| vec![true; t.n_options()]).collect();
            let mut next_row = 0;
            times.batching += fill_started.elapsed().as_secs_f64() - media_seconds;
            // plan() never makes an empty fill
            let fail = |what: &'static str, source: LlamaCause| EngineError::Decode { task: group[0].index, what, source };
            let projected_before = projection.as_ref().map_or(0.0, |p| p.seconds);
            let decoded = decode_fill(&mut ctx, &mut batch, &entries, pad_seq, &mut times, &fail, interrupted, |ctx, decoded, outputs| {
                // Rows are in entry order, so this chunk's rows are contiguous.
                let end = rows[next_row..].iter().position(|r| r.entry >= decoded.end).map_or(rows.len(), |p| next_row + p);
                let mine = &rows[next_row..end];
                if mine.is_empty() {
                    if let Some(projection) = projection.as_mut() {
                        projection.skip();
                    }
                    return Ok(());
                }
                // The micro-batch's tokens that are read, each once.
                let mut read: Vec<usize> = mine.iter().map(|r| r.entry - decoded.start).collect();
                read.dedup();
                let projected = match projection.as_mut() {
                    Some(p) => p.rows(ctx, &read, outputs).map_err(|what| fail(what, what.into()))?,
                    None => None,
                };
                // each row's entry has logits set (has_row), so it was an output; earlier chunks took the rows before decoded.start
                let logits: Vec<&[f32]> = match projected {
                    Some(logits) => {
                        let n = logits.len() / read.len();
                        mine.iter().map(|r| &logits[read.partition_point(|&e| e < r.entry - decoded.start) * n..][..n]).collect()
                    }
                    None => mine.iter().map(|r| ctx.get_logits_ith((r.entry - decoded.start) as i32)).collect(),
                };
                let values: Vec<(f64, bool)> =
                    logits.par_iter().zip(mine.par_iter()).map(|(l, r)| log_softmax_greedy(l, r.target.0 as usize)).collect();
                for (r, (v, top)) in mine.iter().zip(values) {
                    if !v.is_finite() {
                        return Err(EngineError::NonFinite { task: group[r.task].index, option: r.option, value: v });
                    }
                    sums[r.task][r.option] += v;
                    greedy[r.task][r.option] &= top;
                }
                next_row = end;
                Ok(())
            })?;
            // The projection ran within the read rows' time.
            if let Some(projection) = &projection {
                let seconds = projection.seconds - projected_before;
                times.projection += seconds;
                times.logits -= seconds;
            }
            let Some(padding) = decoded else {
                let completion = Completion::Interrupted { scored };
                return Ok(ScoreSummary { completion, tokens, times, context_buffers, resident: Resident::now() });
            };
            tokens.decoded += entries.len();
            tokens.padding += padding;
            tokens.unshared += group.iter().map(PreparedTask::required_tokens).sum::<usize>();
            let consumer_started = Instant::now();

            for ((task, sums), greedy) in group.iter().zip(sums).zip(greedy) {
                let options = sums
                    .iter()
                    .zip(greedy)
                    .enumerate()
                    .map(|(k, (&logprob_sum, greedy))| OptionScore {
                        logprob_sum,
                        tokens: task.scored[k].len() as u32,
                        chars: task.option_chars[k],
                        bytes: task.option_bytes[k],
                        uncond_logprob_sum: None,
                        greedy: Some(greedy),
                        uncond_greedy: None,
                    })
                    .collect();
                scored += 1;
                if sink(TaskScores { task: task.index, options, labels: task.labels.clone() }).is_break() {
                    times.consumer += consumer_started.elapsed().as_secs_f64();
                    let completion = Completion::Interrupted { scored };
                    return Ok(ScoreSummary { completion, tokens, times, context_buffers, resident: Resident::now() });
                }
            }
            times.consumer += consumer_started.elapsed().as_secs_f64();
        }
        Ok(ScoreSummary { completion: Completion::Finished, tokens, times, context_buffers, resident: Resident::now() })
    }
}

impl Engine {
    /// A llama.cpp context of `params` (made by [`Engine::context_params`]).
    pub(crate) fn new_context(&self, params: LlamaContextParams) -> Result<LlamaContext<'_>, EngineError> {
        self.model.new_context(self.backend, params).map_err(|source| EngineError::Context { source })
    }

    /// The context parameters for `plan` under `settings`: a unified KV
    /// cache, since one cell of a prefix tree belongs to several sequences.
    pub(crate) fn context_params(&self, plan: &Plan, settings: &Settings) -> Result<LlamaContextParams, EngineError> {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(u32::try_from(plan.n_ctx).map_err(|_| EngineError::ContextOverflow { n_ctx: plan.n_ctx })?))
            .with_n_batch(plan.n_batch)
            .with_n_ubatch(plan.n_ubatch)
            .with_n_seq_max(plan.n_seq_max.max(1))
            .with_kv_unified(true)
            // llama.cpp otherwise runs the products of weights left on the
            // host on a GPU once a batch has 32 rows: with -ngl 0 that would
            // put some products (the output's, by the rows read) on the GPU
            // and others not, by how tasks were packed.
            .with_op_offload(settings.n_gpu_layers > 0)
            .with_flash_attention_policy(match settings.flash_attention {
                FlashAttention::On => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED,
                FlashAttention::Off => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED,
                FlashAttention::Auto => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_AUTO,
            })
            .with_type_k(settings.kv_cache.k.cache_type())
            .with_type_v(settings.kv_cache.v.cache_type())
            .with_n_threads(settings.threads)
            .with_n_threads_batch(settings.threads_batch);
        Ok(rope_params(params, &settings.rope))
    }
}

/// `params` with RoPE's overrides; what is not overridden keeps llama.cpp's
/// default, which reads the model's own value.
fn rope_params(mut params: LlamaContextParams, rope: &crate::Rope) -> LlamaContextParams {
    use llama_cpp_2::context::params::RopeScalingType;
    if let Some(scaling) = rope.scaling {
        params = params.with_rope_scaling_type(match scaling {
            crate::RopeScaling::None => RopeScalingType::None,
            crate::RopeScaling::Linear => RopeScalingType::Linear,
            crate::RopeScaling::Yarn => RopeScalingType::Yarn,
        });
    }
    type Set = fn(LlamaContextParams, f32) -> LlamaContextParams;
    let floats: [(Option<f32>, Set); 6] = [
        (rope.freq_base, LlamaContextParams::with_rope_freq_base),
        (rope.freq_scale, LlamaContextParams::with_rope_freq_scale),
        (rope.yarn_ext_factor, LlamaContextParams::with_yarn_ext_factor),
        (rope.yarn_attn_factor, LlamaContextParams::with_yarn_attn_factor),
        (rope.yarn_beta_slow, LlamaContextParams::with_yarn_beta_slow),
        (rope.yarn_beta_fast, LlamaContextParams::with_yarn_beta_fast),
    ];
    for (value, set) in floats {
        if let Some(value) = value {
            params = set(params, value);
        }
    }
    if let Some(n) = rope.yarn_orig_ctx {
        params = params.with_yarn_orig_ctx(n);
    }
    params
}

/// A fill's batch entries: every node of `trie` but the first `reused` nodes
/// of its chain (already in the cache), each in the sequences of the leaves
/// below it (offset by `anchor`; chain nodes also in sequence 0, which
/// carries them to the next fill). Also returns each node's entry.
///
/// Order: the chain, then the nodes no read row depends on, then the rest,
/// each group in node order (a parent before its children, so a sequence's
/// cells lie in position order, which attention's sums follow). Rows read
/// then crowd into few micro-batches, and only those pay for the last
/// layer's feed-forward and the output matrix.
pub(crate) fn fill_entries(trie: &Trie, layout: &Layout, reused: usize, anchor: i32, has_row: &[bool]) -> (Vec<Entry>, Vec<usize>) {
    let on_chain = |node: u32| layout.chain.get(trie.depth(node) as usize) == Some(&node);
    // Whether a node reads a row or follows one that does (parents come first).
    let mut late = vec![false; trie.len()];
    for node in 0..trie.len() as u32 {
        let after_row = trie.parent(node).is_some_and(|p| late[p as usize]);
        late[node as usize] = !on_chain(node) && (has_row[node as usize] || after_row);
    }
    let chain = (0..trie.len() as u32).filter(|&n| on_chain(n) && (trie.depth(n) as usize) >= reused);
    let early = (0..trie.len() as u32).filter(|&n| !on_chain(n) && !late[n as usize]);
    let rest = (0..trie.len() as u32).filter(|&n| late[n as usize]);
    let mut entries = Vec::with_capacity(trie.len());
    let mut entry_of = vec![usize::MAX; trie.len()];
    for node in chain.chain(early).chain(rest) {
        let leaves = &layout.seqs[node as usize];
        let first = if on_chain(node) { leaves.start } else { leaves.start + anchor };
        entry_of[node as usize] = entries.len();
        entries.push(Entry {
            token: trie.token(node),
            pos: trie.depth(node) as i32,
            seqs: first..leaves.end + anchor,
            logits: has_row[node as usize],
        });
    }
    (entries, entry_of)
}

/// The logits rows a micro-batch that reads `wanted` rows reads: at least
/// [`MIN_OUTPUTS`], and a multiple of 4, as the output matrix's kernels take
/// rows four at a time (a partial group costs as much as a whole one).
pub(crate) fn output_rows(wanted: usize) -> usize {
    crate::plan::round_up(wanted.max(MIN_OUTPUTS), 4)
}

/// Which of a micro-batch's `size` tokens read their logits row (the batch
/// rule's part 2; `size` is [`MICRO_BATCH`] in every decode of the engine's,
/// other sizes are for experiments with the rule): those of `own` (the
/// entries', padding after them reads none), and more up to at least 12, a
/// multiple of 4, the padding first, then the last entries. None when no
/// entry reads one.
pub fn rows_to_read(own: impl Iterator<Item = bool>, size: usize) -> Vec<bool> {
    let mut outputs: Vec<bool> = own.collect();
    outputs.resize(size, false);
    let wanted = outputs.iter().filter(|&&o| o).count();
    let mut more = if wanted == 0 { 0 } else { output_rows(wanted).min(outputs.len()) - wanted };
    for o in outputs.iter_mut().rev().filter(|o| !**o) {
        if more == 0 {
            break;
        }
        *o = true;
        more -= 1;
    }
    outputs
}

/// Decodes a fill's entries in micro-batches of exactly [`MICRO_BATCH`]
/// tokens, the last padded with tokens of sequence `pad_seq` (no other
/// sequence sees them; their cells go with the fill), each reading the rows
/// [`rows_to_read`] says: the batch rule, under which a row's numbers depend
/// on nothing but its sequence. After each micro-batch, `read` gets the
/// context and the entries just decoded, to read their logits rows (its
/// time counts as logits) before the next one replaces them, with which of
/// the micro-batch's tokens had rows (a row's index among the outputs, as
/// llama.cpp orders them). Returns the
/// padding tokens decoded, or `None` if `interrupted` said so before a
/// micro-batch (the fill is then unfinished).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_fill<'m>(
    ctx: &mut LlamaContext<'m>,
    batch: &mut LlamaBatch,
    entries: &[Entry],
    pad_seq: i32,
    times: &mut ScoreTimes,
    fail: &dyn Fn(&'static str, LlamaCause) -> EngineError,
    interrupted: &dyn Fn() -> bool,
    mut read: impl FnMut(&LlamaContext<'m>, Range<usize>, &[bool]) -> Result<(), EngineError>,
) -> Result<Option<usize>, EngineError> {
    let size = MICRO_BATCH as usize;
    let mut seqs: Vec<i32> = Vec::new();
    for (c, part) in entries.chunks(size).enumerate() {
        if interrupted() {
            return Ok(None);
        }
        let batch_started = Instant::now();
        batch.clear();
        let outputs = rows_to_read(part.iter().map(|e| e.logits), size);
        for (e, &output) in part.iter().zip(&outputs) {
            seqs.clear();
            seqs.extend(e.seqs.clone());
            batch.add(e.token, e.pos, &seqs, output).map_err(|err| fail("adding a token to the batch", Box::new(err)))?;
        }
        for (k, &output) in outputs[part.len()..].iter().enumerate() {
            batch.add(LlamaToken(0), k as i32, &[pad_seq], output).map_err(|err| fail("adding a token to the batch", Box::new(err)))?;
        }
        let decode_started = Instant::now();
        times.batching += (decode_started - batch_started).as_secs_f64();
        ctx.decode(batch).map_err(|err| fail("decode", Box::new(err)))?;
        let logits_started = Instant::now();
        times.decode += (logits_started - decode_started).as_secs_f64();
        times.decodes += 1;
        let base = c * size;
        read(ctx, base..base + part.len(), &outputs)?;
        times.logits += logits_started.elapsed().as_secs_f64();
    }
    Ok(Some(entries.len().next_multiple_of(size) - entries.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trie::tests::task;
    use mcscore_metrics::log_softmax_at;

    #[test]
    fn entries_go_chain_first_then_unread_then_read_rows_parents_first() {
        // Two tasks behind a shared BOS: their questions are read by no row
        // but their last token; their options are all read.
        let tasks = [task(&[1, 10, 11, 12], &[&[20, 21], &[22, 23]]), task(&[1, 30, 31], &[&[40, 41], &[42]])];
        let FillTree { trie, layout, has_row, .. } = FillTree::new(&tasks);
        let (entries, entry_of) = fill_entries(&trie, &layout, 0, 1, &has_row);
        assert_eq!(entries.len(), trie.len());
        // The chain (BOS) first, in sequence 0 too.
        assert_eq!((entries[0].token, entries[0].seqs.start), (LlamaToken(1), 0));
        // A parent's entry is before its children's, so cells follow positions.
        for node in 0..trie.len() as u32 {
            if let Some(parent) = trie.parent(node) {
                assert!(entry_of[parent as usize] < entry_of[node as usize], "node {node}");
            }
        }
        // Every entry with a row comes after every entry without one (but the chain).
        let first_read = entries.iter().position(|e| e.logits).unwrap();
        assert!(entries[first_read..].iter().all(|e| e.logits), "{:?}", entries.iter().map(|e| e.logits).collect::<Vec<_>>());
        // Reused chain tokens are not decoded again.
        let (kept, _) = fill_entries(&trie, &layout, 1, 1, &has_row);
        assert_eq!(kept.len(), trie.len() - 1);
    }

    #[test]
    fn a_micro_batch_reads_no_row_or_at_least_twelve_in_fours() {
        assert_eq!((1..=17).map(output_rows).collect::<Vec<_>>(), [12; 12].into_iter().chain([16; 4]).chain([20]).collect::<Vec<_>>());
        let count = |rows: &[bool]| rows.iter().filter(|&&r| r).count();
        let size = MICRO_BATCH as usize;
        // No row read: none, padding included.
        assert_eq!(count(&rows_to_read([false; 30].into_iter(), size)), 0);
        // One row read of 30 entries: 12, the padding's first, the entry's kept.
        let one = rows_to_read(std::iter::once(true).chain([false; 29]), size);
        assert_eq!((one.len(), count(&one), one[0]), (size, 12, true));
        assert!(one[30..].iter().rev().take(11).all(|&r| r) && !one[29], "{one:?}");
        // 57 of 60: rounded to 60, never more than the micro-batch.
        assert_eq!(count(&rows_to_read([true; 57].into_iter().chain([false; 3]), size)), size);
        assert_eq!(count(&rows_to_read([true; 60].into_iter(), size)), size);
        // 58 of 58 entries: 60, the two padding tokens read.
        let full = rows_to_read([true; 58].into_iter(), size);
        assert_eq!((count(&full), full[58], full[59]), (60, true, true));
    }

    #[test]
    fn non_finite_logits_give_non_finite_log_probs() {
        // The decode loop turns these into EngineError::NonFinite.
        assert!(log_softmax_at(&[0.0, f32::NAN], 0).is_nan());
        assert!(!log_softmax_at(&[0.0, f32::NEG_INFINITY, f32::INFINITY], 0).is_finite());
        let error = EngineError::NonFinite { task: 7, option: 2, value: f64::NAN };
        assert_eq!(error.to_string(), "task 7: option 2 got a non-finite log-probability (NaN)");
    }
}
