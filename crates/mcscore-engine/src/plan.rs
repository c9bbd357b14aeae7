//! How tasks are packed into decodes, decided from the data before any
//! scoring starts, so that a task that cannot fit fails the run up front.

use llama_cpp_2::token::LlamaToken;

use crate::prepare::PreparedTask;
use crate::trie::{FillTree, Trie};
use crate::EngineError;

/// llama.cpp's limit on sequence ids in one context (LLAMA_MAX_SEQ).
pub(crate) const MAX_SEQUENCES: usize = 256;

/// The context size, as `-c` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextSize {
    /// Tokens per sequence; the context holds `-np` of them (llama.cpp's `-c`).
    PerSequence(u32),
    /// Just large enough for the longest task (and at least one full batch).
    Auto,
}

/// llama.cpp's `-fa on|off|auto` (auto: on where the backend supports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttention {
    On,
    Off,
    Auto,
}

/// The scoring settings a user chooses (llama-perplexity's flags).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Settings {
    #[serde(skip)]
    pub context: ContextSize,
    /// `-np`: with `-c`, the context is `np × c`. Unlike llama-perplexity it
    /// does not cap sequences per decode: those follow from the data.
    pub parallel: Option<u32>,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub threads: i32,
    pub threads_batch: i32,
    pub n_gpu_layers: u32,
    /// Flash attention, as llama.cpp's `-fa`.
    pub flash_attention: FlashAttention,
    /// One task per decode, in one micro-batch: scores that do not depend on
    /// `-np`, `-b` or the other tasks.
    pub deterministic: bool,
}

impl Settings {
    /// The part of the settings that changes scores, for resume checks.
    pub fn fingerprint(&self) -> String {
        let context = match self.context {
            ContextSize::PerSequence(c) => c.to_string(),
            ContextSize::Auto => "auto".to_owned(),
        };
        format!(
            "c={context} np={} b={} ub={} fa={:?} deterministic={}",
            self.parallel.map_or("auto".to_owned(), |p| p.to_string()),
            self.n_batch,
            self.n_ubatch,
            self.flash_attention,
            self.deterministic
        )
    }
}

/// The decodes a run makes: which tasks go together, and the context for them.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Ranges into the prepared tasks, one per KV-cache fill.
    pub batches: Vec<std::ops::Range<usize>>,
    /// Per fill: the tokens it takes from the previous fill's KV cache (the
    /// start of the chain both share); 0 when it starts from an empty cache.
    pub reused: Vec<usize>,
    /// The context allocated: what the largest fill holds, rounded up to 256
    /// cells, never above the limit `-c` × `-np` sets. At most `u32::MAX`
    /// ([`plan`] refuses more).
    pub n_ctx: u64,
    /// Tokens per `llama_decode` call: `-b`, raised to the sequences of the
    /// widest fill where `-b` is smaller (llama.cpp needs that many rows).
    pub n_batch: u32,
    pub n_ubatch: u32,
    /// Sequence ids used by the widest batch.
    pub n_seq_max: u32,
}

impl Plan {
    /// The plan from fill `first` on. That fill must start from an empty
    /// cache (`reused[first] == 0`) for its scores to be the whole plan's.
    pub fn from_fill(&self, first: usize) -> Plan {
        Plan { batches: self.batches[first..].to_vec(), reused: self.reused[first..].to_vec(), ..*self }
    }

    /// The last fill at or before `fill` (one of the plan's) that starts from
    /// an empty cache: where a run must start for fill `fill` to see the
    /// cache an uninterrupted run gave it.
    pub fn fresh_fill_before(&self, fill: usize) -> usize {
        self.reused[..=fill].iter().rposition(|&r| r == 0).unwrap_or(0)
    }
}

/// A fill takes the previous fill's shared tokens from the cache only when
/// there are at least this many: fewer cost less than 2 % of a 512-token
/// fill to decode again.
const MIN_REUSED: usize = 8;

/// At most this many fills in a row take tokens from the cache. llama.cpp's
/// CPU kernels round differently for batches of other sizes, so a cached
/// cell holds what the batch that decoded it computed; a resumed run gets an
/// uninterrupted run's numbers only by decoding again from the last fill that
/// started from an empty cache, at most this many fills back.
const MAX_REUSING_FILLS: usize = 8;

/// Per fill, the tokens it takes from the previous fill's cache.
fn reuse(tasks: &[PreparedTask], batches: &[std::ops::Range<usize>], settings: &Settings) -> Vec<usize> {
    if !shares_across_fills(settings) {
        return vec![0; batches.len()];
    }
    let mut cached: Vec<LlamaToken> = Vec::new();
    let mut in_a_row = 0;
    batches
        .iter()
        .map(|range| {
            let tree = FillTree::new(&tasks[range.clone()]);
            let chain = tree.chain_tokens();
            let common = cached.iter().zip(&chain).take_while(|(a, b)| a == b).count().min(tree.cacheable());
            cached = chain;
            if common >= MIN_REUSED && in_a_row < MAX_REUSING_FILLS {
                in_a_row += 1;
                common
            } else {
                in_a_row = 0;
                0
            }
        })
        .collect()
}

pub(crate) fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Whether a fill may start from the previous fill's shared tokens still in
/// the KV cache. Not when deterministic: a task's scores then depend on
/// nothing but the task.
pub(crate) fn shares_across_fills(settings: &Settings) -> bool {
    !settings.deterministic
}

/// Packs tasks greedily, in order: a fill takes tasks while the tokens it
/// decodes (their prefix tree: a shared stem counts once) fit one micro-batch
/// and its sequences fit llama.cpp's limit. A task too long for the context
/// fails the plan, naming it.
pub fn plan(tasks: &[PreparedTask], settings: &Settings) -> Result<Plan, EngineError> {
    let longest = tasks.iter().map(PreparedTask::required_tokens).max().unwrap_or(1);
    let widest = tasks.iter().map(PreparedTask::n_options).max().unwrap_or(1);
    // When fills share, one sequence id carries the chain of tokens every
    // task of a fill shares to the next fill; the rest go to the leaves.
    let anchor = usize::from(shares_across_fills(settings));
    let max_leaves = MAX_SEQUENCES - anchor;
    if widest > max_leaves {
        return Err(EngineError::TooManySequences { widest, max: max_leaves });
    }
    let limit = match settings.context {
        // llama-perplexity forces -np to at least 4 and rounds the context up to 256.
        ContextSize::PerSequence(c) => {
            let np = settings.parallel.unwrap_or(4).max(4) as usize;
            round_up(np * c as usize, 256)
        }
        ContextSize::Auto => round_up(longest.max(settings.n_ubatch as usize), 256),
    };
    if limit > u32::MAX as usize {
        return Err(EngineError::ContextOverflow { n_ctx: limit as u64 });
    }
    let too_long: Vec<(usize, usize)> =
        tasks.iter().filter(|t| t.required_tokens() > limit).map(|t| (t.index, t.required_tokens())).collect();
    if !too_long.is_empty() {
        return Err(EngineError::TaskTooLong { tasks: too_long, n_ctx: limit });
    }
    if settings.deterministic {
        // Each task alone, in a single micro-batch, whatever the flags say.
        let n = round_up(longest, 256) as u32;
        return Ok(Plan {
            batches: (0..tasks.len()).map(|i| i..i + 1).collect(),
            reused: vec![0; tasks.len()],
            n_ctx: u64::from(n),
            n_batch: n,
            n_ubatch: n,
            n_seq_max: widest as u32,
        });
    }

    // Attention over a unified KV cache costs (tokens in the fill)², so fills
    // of one micro-batch are fastest; a longer task goes alone, decoded in
    // chunks of -b tokens.
    let budget = limit.min(settings.n_ubatch.min(settings.n_batch) as usize);
    let mut batches = Vec::new();
    let (mut start, mut n_seq_max) = (0, 0);
    // The KV cells the largest fill uses: its prefix tree, kept tokens included.
    let mut cells = 0;
    let mut trie = Trie::default();
    for (i, task) in tasks.iter().enumerate() {
        let before = trie.len();
        trie.insert(task);
        if i > start && (trie.len() > budget || trie.leaves() > max_leaves) {
            batches.push(start..i);
            cells = cells.max(before);
            start = i;
            trie = Trie::default();
            trie.insert(task);
        }
        n_seq_max = n_seq_max.max(trie.leaves() + anchor);
    }
    if start < tasks.len() {
        batches.push(start..tasks.len());
        cells = cells.max(trie.len());
    }
    // A context larger than the fills need costs time to allocate and clear,
    // and memory; it changes no score.
    let n_ctx = round_up(cells.max(1), 256).min(limit);
    // llama.cpp reserves an output row per sequence within one batch, and
    // aborts when a batch is narrower than the sequences a fill uses; a
    // batch wider than the context only costs its allocation.
    let n_batch = settings.n_batch.min(n_ctx as u32).max(n_seq_max as u32);
    let reused = reuse(tasks, &batches, settings);
    Ok(Plan { batches, reused, n_ctx: n_ctx as u64, n_batch, n_ubatch: settings.n_ubatch.min(n_batch), n_seq_max: n_seq_max as u32 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llama_cpp_2::token::LlamaToken;

    /// A task with a `prefix`-token prefix (BOS, then tokens of its own) and
    /// options of the given lengths.
    fn task(index: usize, prefix: usize, options: &[usize]) -> PreparedTask {
        let own = LlamaToken(1000 + index as i32);
        PreparedTask {
            index,
            prefix: std::iter::once(LlamaToken(1)).chain(std::iter::repeat_n(own, prefix - 1)).collect(),
            continuations: options.iter().enumerate().map(|(k, &n)| vec![LlamaToken(2 + k as i32); n]).collect(),
            scored: options.iter().map(|&n| 0..n).collect(),
            correct: vec![false; options.len()],
            option_chars: vec![1; options.len()],
            option_bytes: vec![1; options.len()],
        }
    }

    fn settings(context: ContextSize, parallel: Option<u32>) -> Settings {
        Settings {
            context,
            parallel,
            n_batch: 2048,
            n_ubatch: 512,
            threads: 1,
            threads_batch: 1,
            n_gpu_layers: 0,
            flash_attention: FlashAttention::Off,
            deterministic: false,
        }
    }

    #[test]
    fn required_tokens_skip_each_options_last_token() {
        assert_eq!(task(0, 10, &[1, 1, 3]).required_tokens(), 10 + 2);
    }

    #[test]
    fn the_context_limit_is_np_times_c_and_the_allocation_what_fills_need() {
        let tasks = [task(0, 10, &[1, 1])];
        // -np 16 -c 512 allows 8192 tokens a task, as llama-perplexity; a fill of
        // 11 tokens needs one 256-cell block.
        assert_eq!(plan(&tasks, &settings(ContextSize::PerSequence(512), Some(16))).unwrap().n_ctx, 256);
        assert!(plan(&[task(0, 8000, &[1, 1])], &settings(ContextSize::PerSequence(512), Some(16))).is_ok());
        assert!(plan(&[task(0, 8200, &[1, 1])], &settings(ContextSize::PerSequence(512), Some(16))).is_err());
        // -np is forced to at least 4, and the limit rounded up to 256.
        assert!(plan(&[task(0, 512, &[1, 1])], &settings(ContextSize::PerSequence(100), None)).is_ok());
        assert_eq!(plan(&tasks, &settings(ContextSize::Auto, None)).unwrap().n_ctx, 256);
        assert_eq!(plan(&[task(0, 1000, &[1, 1])], &settings(ContextSize::Auto, None)).unwrap().n_ctx, 1024);
        // Fills of one 512-token micro-batch need 512 cells.
        let many: Vec<_> = (0..40).map(|i| task(i, 60, &[1, 1, 1, 1])).collect();
        assert_eq!(plan(&many, &settings(ContextSize::PerSequence(512), Some(16))).unwrap().n_ctx, 512);
    }

    #[test]
    fn tasks_too_long_are_all_named_before_scoring() {
        let tasks = [task(0, 100, &[1, 1]), task(1, 600, &[1, 1]), task(2, 900, &[2, 2])];
        let error = plan(&tasks, &settings(ContextSize::PerSequence(128), Some(4))).unwrap_err();
        match &error {
            EngineError::TaskTooLong { tasks, n_ctx } => {
                assert_eq!(*n_ctx, 512);
                assert_eq!(tasks, &[(1, 600), (2, 902)]);
            }
            other => panic!("{other}"),
        }
        assert!(error.to_string().contains("task 1 needs 600 tokens, task 2 needs 902 tokens"), "{error}");
    }

    #[test]
    fn fills_hold_one_micro_batch_and_a_long_task_goes_alone() {
        let tasks: Vec<_> = (0..10).map(|i| task(i, 100, &[1, 1, 1, 1])).chain([task(10, 1500, &[1, 1])]).collect();
        let plan = plan(&tasks, &settings(ContextSize::Auto, None)).unwrap();
        assert_eq!(plan.batches, vec![0..5, 5..10, 10..11]);
        // Single-token options end where their prefix does: one leaf per task,
        // plus the sequence that carries the shared BOS to the next fill.
        assert_eq!(plan.n_seq_max, 6);
        assert_eq!(plan.n_ctx, 1536);
    }

    #[test]
    fn a_context_beyond_u32_is_refused_not_wrapped() {
        let tasks = [task(0, 10, &[1, 1])];
        let error = plan(&tasks, &settings(ContextSize::PerSequence(u32::MAX), Some(16))).unwrap_err();
        assert!(matches!(error, EngineError::ContextOverflow { n_ctx } if n_ctx > u64::from(u32::MAX)), "{error}");
    }

    #[test]
    fn a_batch_narrower_than_a_fills_sequences_is_widened() {
        // llama.cpp aborts when -b is below the sequences of a decode.
        let tasks = [task(0, 10, &[2, 2, 2, 2])];
        let mut s = settings(ContextSize::Auto, None);
        s.n_batch = 1;
        let plan = plan(&tasks, &s).unwrap();
        assert_eq!(plan.n_seq_max, 5);
        assert_eq!((plan.n_batch, plan.n_ubatch), (5, 5));
    }

    #[test]
    fn a_batch_wider_than_the_context_is_narrowed() {
        // -b 2^31 panicked in llama-cpp-2, -b 3e8 spent minutes allocating.
        let tasks = [task(0, 10, &[2, 2])];
        let mut s = settings(ContextSize::Auto, None);
        (s.n_batch, s.n_ubatch) = (1 << 24, 1 << 24);
        let plan = plan(&tasks, &s).unwrap();
        assert_eq!((plan.n_ctx, plan.n_batch, plan.n_ubatch), (256, 256, 256));
    }

    #[test]
    fn wide_tasks_do_not_need_a_wide_np() {
        let tasks = [task(0, 10, &[1; 6]), task(1, 10, &[1; 6])];
        let plan = plan(&tasks, &settings(ContextSize::PerSequence(512), Some(4))).unwrap();
        assert_eq!(plan.batches, vec![0..2]);
        assert_eq!(plan.n_seq_max, 3);
    }

    /// `n` tasks of one 300-token stem, each adding 10 tokens of its own.
    fn stem_tasks(n: usize) -> Vec<PreparedTask> {
        let stem: Vec<LlamaToken> = (0..300).map(LlamaToken).collect();
        (0..n)
            .map(|i| {
                let mut t = task(i, 11, &[1, 1, 1, 1]);
                t.prefix = stem.iter().copied().chain(t.prefix[1..].iter().copied()).collect();
                t
            })
            .collect()
    }

    #[test]
    fn a_shared_stem_counts_once_toward_the_fill() {
        let plan = plan(&stem_tasks(48), &settings(ContextSize::Auto, None)).unwrap();
        // 300 + 21 × 10 = 510 tokens fit 512; unshared, one fill would hold one task.
        assert_eq!(plan.batches[0], 0..21);
    }

    #[test]
    fn a_long_shared_chain_is_reused_at_most_eight_fills_in_a_row() {
        let plan = plan(&stem_tasks(250), &settings(ContextSize::Auto, None)).unwrap();
        assert_eq!(plan.batches.len(), 12);
        assert_eq!(plan.reused, [vec![0], vec![300; 8], vec![0], vec![300; 2]].concat());
        // A resume at fill 5 decodes again from fill 0; at fill 11, from 9.
        assert_eq!((plan.fresh_fill_before(5), plan.fresh_fill_before(11), plan.fresh_fill_before(9)), (0, 9, 9));
        let tail = plan.from_fill(9);
        assert_eq!((tail.batches[0].clone(), tail.reused.clone()), (plan.batches[9].clone(), vec![0, 300, 300]));
    }

    #[test]
    fn a_short_shared_chain_is_decoded_again_in_every_fill() {
        // Only BOS is shared: cheaper to decode again than to make a resume
        // rebuild the cache.
        let tasks: Vec<_> = (0..40).map(|i| task(i, 60, &[1, 1, 1, 1])).collect();
        let mut s = settings(ContextSize::PerSequence(512), Some(16));
        let shared = plan(&tasks, &s).unwrap();
        assert!(shared.batches.len() > 1);
        assert!(shared.reused.iter().all(|&r| r == 0), "{:?}", shared.reused);
        s.deterministic = true;
        assert!(plan(&tasks, &s).unwrap().reused.iter().all(|&r| r == 0));
    }

    #[test]
    fn deterministic_scores_each_task_alone_in_one_micro_batch() {
        let tasks = [task(0, 10, &[1, 1]), task(1, 700, &[3, 1])];
        let mut s = settings(ContextSize::Auto, Some(32));
        s.deterministic = true;
        let plan = plan(&tasks, &s).unwrap();
        assert_eq!(plan.batches, vec![0..1, 1..2]);
        assert_eq!((plan.n_batch, plan.n_ubatch), (768, 768));
    }
}
