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
    /// Always.
    On,
    /// Never.
    Off,
    /// Where the backend supports it.
    Auto,
}

/// The scoring settings a user chooses (llama-perplexity's flags).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Settings {
    /// `-c`: the context size.
    #[serde(skip)]
    pub context: ContextSize,
    /// `-np` of `score`: with `-c`, the longest task is `np × c` tokens.
    /// Unlike llama-perplexity it does not cap sequences per decode: those
    /// follow from the data. (`serve --parallel` is another thing: a
    /// session's [`crate::SessionLimits::branches`].)
    pub parallel: Option<u32>,
    /// `-b`: the tokens one KV-cache fill decodes at most (at least
    /// [`MICRO_BATCH`]). Every fill is decoded in micro-batches of
    /// [`MICRO_BATCH`] tokens, so it changes speed and memory, never a score.
    pub n_batch: u32,
    /// `-t`: threads for a micro-batch of one token (llama.cpp's `n_threads`).
    pub threads: i32,
    /// `-tb`: threads for a micro-batch of more (llama.cpp's
    /// `n_threads_batch`), which every scoring decode is.
    pub threads_batch: i32,
    /// `-ngl`: layers offloaded to a GPU, where a GPU backend is compiled in.
    pub n_gpu_layers: u32,
    /// Flash attention, as llama.cpp's `-fa`.
    pub flash_attention: FlashAttention,
    /// The KV cache's types, as llama.cpp's `-ctk` and `-ctv`: a quantised
    /// cache changes the scores (and is recorded in the fingerprint).
    pub kv_cache: KvCache,
    /// RoPE and YaRN overrides of the model's own values, as llama.cpp's
    /// `--rope-*` and `--yarn-*`: any changes the scores (and is recorded in
    /// the fingerprint).
    #[serde(skip_serializing_if = "Rope::is_default")]
    pub rope: Rope,
    /// How offloaded layers are spread over the GPUs (`-sm`, `-mg`): with
    /// layers on a GPU, another than llama.cpp's default is recorded in the
    /// fingerprint (other devices, other kernels, other numbers).
    #[serde(skip_serializing_if = "GpuSplit::is_default")]
    pub gpu_split: GpuSplit,
    /// How the weights are read (`--mmap`): memory, never a score.
    #[serde(skip)]
    pub mmap: crate::Mmap,
}

/// llama.cpp's defaults: the context sized to the fills, fills of 2,048
/// tokens, a thread per core, every layer on a GPU where one is compiled in,
/// flash attention where supported.
impl Default for Settings {
    fn default() -> Settings {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get() as i32);
        Settings {
            context: ContextSize::Auto,
            parallel: None,
            n_batch: 2048,
            threads,
            threads_batch: threads,
            n_gpu_layers: 999,
            flash_attention: FlashAttention::Auto,
            kv_cache: KvCache::default(),
            rope: Rope::default(),
            gpu_split: GpuSplit::default(),
            mmap: crate::Mmap::Auto,
        }
    }
}

impl Settings {
    /// llama.cpp's defaults with every layer on the CPU: for work that
    /// needs a model's vocabulary or the CPU's numbers whatever the build.
    pub fn on_cpu() -> Settings {
        Settings { n_gpu_layers: 0, ..Settings::default() }
    }
}

/// A type llama.cpp keeps KV-cache cells in: the types its `-ctk` and
/// `-ctv` take (its `kv_cache_types`), by ggml's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvType {
    /// 32-bit floats.
    F32,
    /// 16-bit floats: llama.cpp's default.
    #[default]
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit blocks of 32.
    Q8_0,
    /// 4-bit blocks of 32.
    Q4_0,
    /// 4-bit blocks of 32 with an offset.
    Q4_1,
    /// 4-bit non-linear blocks of 32.
    Iq4Nl,
    /// 5-bit blocks of 32.
    Q5_0,
    /// 5-bit blocks of 32 with an offset.
    Q5_1,
}

impl KvType {
    /// Every type, in llama.cpp's order.
    pub const ALL: [KvType; 9] =
        [KvType::F32, KvType::F16, KvType::Bf16, KvType::Q8_0, KvType::Q4_0, KvType::Q4_1, KvType::Iq4Nl, KvType::Q5_0, KvType::Q5_1];

    /// ggml's name, as `-ctk` takes it.
    pub fn name(self) -> &'static str {
        match self {
            KvType::F32 => "f32",
            KvType::F16 => "f16",
            KvType::Bf16 => "bf16",
            KvType::Q8_0 => "q8_0",
            KvType::Q4_0 => "q4_0",
            KvType::Q4_1 => "q4_1",
            KvType::Iq4Nl => "iq4_nl",
            KvType::Q5_0 => "q5_0",
            KvType::Q5_1 => "q5_1",
        }
    }

    /// The type ggml calls `name`.
    pub fn parse(name: &str) -> Option<KvType> {
        KvType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether cells are stored in blocks of quantised values (a quantised V
    /// cache needs flash attention in llama.cpp).
    pub fn quantised(self) -> bool {
        !matches!(self, KvType::F32 | KvType::F16 | KvType::Bf16)
    }

    /// Bytes a value takes at most (quantised blocks take less than 2).
    pub(crate) fn bytes_bound(self) -> u64 {
        if self == KvType::F32 {
            4
        } else {
            2
        }
    }

    pub(crate) fn cache_type(self) -> llama_cpp_2::context::params::KvCacheType {
        use llama_cpp_2::context::params::KvCacheType as T;
        match self {
            KvType::F32 => T::F32,
            KvType::F16 => T::F16,
            KvType::Bf16 => T::BF16,
            KvType::Q8_0 => T::Q8_0,
            KvType::Q4_0 => T::Q4_0,
            KvType::Q4_1 => T::Q4_1,
            KvType::Iq4Nl => T::IQ4_NL,
            KvType::Q5_0 => T::Q5_0,
            KvType::Q5_1 => T::Q5_1,
        }
    }
}

/// The KV cache's key and value types (`-ctk`, `-ctv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct KvCache {
    /// The keys' type.
    pub k: KvType,
    /// The values' type.
    pub v: KvType,
}

/// How RoPE's frequencies are scaled (`--rope-scaling`), as llama.cpp names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RopeScaling {
    /// None.
    None,
    /// Linear: positions divided by the scale.
    Linear,
    /// YaRN.
    Yarn,
}

impl RopeScaling {
    /// llama.cpp's name, as `--rope-scaling` takes it.
    pub fn name(self) -> &'static str {
        match self {
            RopeScaling::None => "none",
            RopeScaling::Linear => "linear",
            RopeScaling::Yarn => "yarn",
        }
    }

    /// The scaling llama.cpp calls `name`.
    pub fn parse(name: &str) -> Option<RopeScaling> {
        [RopeScaling::None, RopeScaling::Linear, RopeScaling::Yarn].into_iter().find(|s| s.name() == name)
    }
}

/// RoPE and YaRN overrides (llama.cpp's `--rope-scaling`, `--rope-freq-base`,
/// `--rope-freq-scale`, `--yarn-orig-ctx`, `--yarn-ext-factor`,
/// `--yarn-attn-factor`, `--yarn-beta-slow`, `--yarn-beta-fast`): each
/// `None` keeps the model's own value, as llama.cpp's defaults do.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Rope {
    /// The frequency scaling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<RopeScaling>,
    /// The base frequency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freq_base: Option<f32>,
    /// The frequency scale (`--rope-scale N` is 1/N).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freq_scale: Option<f32>,
    /// YaRN's original context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yarn_orig_ctx: Option<u32>,
    /// YaRN's extrapolation mix factor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yarn_ext_factor: Option<f32>,
    /// YaRN's attention magnitude scale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yarn_attn_factor: Option<f32>,
    /// YaRN's low correction dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yarn_beta_slow: Option<f32>,
    /// YaRN's high correction dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yarn_beta_fast: Option<f32>,
}

// Settings are compared whole (a resume's check); every value here is finite
// (the flags refuse NaN), so equality is an equivalence.
impl Eq for Rope {}

impl Rope {
    /// Whether the model's own values are kept.
    pub fn is_default(&self) -> bool {
        *self == Rope::default()
    }

    /// The overrides given, as llama.cpp's flags and their values
    /// (`rope-freq-base=20000 yarn-orig-ctx=4096`), in its order.
    pub fn identity(&self) -> String {
        let float = |name: &str, v: Option<f32>| v.map(|v| format!("{name}={v}"));
        [
            self.scaling.map(|s| format!("rope-scaling={}", s.name())),
            float("rope-freq-base", self.freq_base),
            float("rope-freq-scale", self.freq_scale),
            self.yarn_orig_ctx.map(|n| format!("yarn-orig-ctx={n}")),
            float("yarn-ext-factor", self.yarn_ext_factor),
            float("yarn-attn-factor", self.yarn_attn_factor),
            float("yarn-beta-slow", self.yarn_beta_slow),
            float("yarn-beta-fast", self.yarn_beta_fast),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
    }
}

/// How llama.cpp spreads offloaded layers over several GPUs (`-sm`), by its names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitMode {
    /// One GPU only, the one `-mg` names.
    None,
    /// Whole layers (and their KV cache) to each GPU: llama.cpp's default.
    #[default]
    Layer,
    /// Each weight matrix's rows across the GPUs; `-mg` keeps the rest.
    Row,
    /// Weights and KV cache across the GPUs (llama.cpp: experimental).
    Tensor,
}

impl SplitMode {
    /// Every mode, in llama.cpp's order.
    pub const ALL: [SplitMode; 4] = [SplitMode::None, SplitMode::Layer, SplitMode::Row, SplitMode::Tensor];

    /// llama.cpp's name, as `-sm` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SplitMode::None => "none",
            SplitMode::Layer => "layer",
            SplitMode::Row => "row",
            SplitMode::Tensor => "tensor",
        }
    }

    /// The mode llama.cpp calls `name`.
    pub fn parse(name: &str) -> Option<SplitMode> {
        SplitMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether `-mg` says anything in this mode: the one GPU (`none`) or the
    /// one that keeps what is not split (`row`); the others ignore it.
    pub fn uses_main_gpu(self) -> bool {
        matches!(self, SplitMode::None | SplitMode::Row)
    }
}

/// Offloaded layers' GPUs: llama.cpp's `-sm` and `-mg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct GpuSplit {
    /// How layers are spread.
    pub mode: SplitMode,
    /// The GPU of `none` and `row`, counted from 0 in llama.cpp's order.
    #[serde(skip_serializing_if = "is_zero")]
    pub main_gpu: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl GpuSplit {
    /// Whether llama.cpp's defaults are kept (`-mg` is read only in the
    /// other modes, so with `layer` it changes nothing).
    pub fn is_default(&self) -> bool {
        self.mode == SplitMode::Layer
    }

    /// The flags given, as llama.cpp spells them (`sm=none mg=1`), empty for the defaults.
    pub fn identity(&self) -> String {
        match (self.is_default(), self.mode.uses_main_gpu()) {
            (true, _) => String::new(),
            (false, true) => format!("sm={} mg={}", self.mode.name(), self.main_gpu),
            (false, false) => format!("sm={}", self.mode.name()),
        }
    }
}

/// Tokens in every micro-batch (`llama_decode` call): each is padded to
/// exactly this many, so every row takes the same llama.cpp kernels
/// whatever it is batched with. Below 64, where the CPU's flash attention
/// switches to a tiled kernel whose sums depend on where a sequence's cells
/// lie; a multiple of 4, as the repacked matrix kernels take rows four at a
/// time; at least 8, where the K-quant kernels switch to tiles.
pub const MICRO_BATCH: u32 = 60;

/// A micro-batch that reads logits reads at least this many rows (more are
/// asked for and ignored): the last layer's feed-forward and the output
/// matrix see only the rows read, and the CPU's kernels switch below 8 rows
/// (CUDA's at 8 and 9).
pub(crate) const MIN_OUTPUTS: usize = 12;

/// The batch-invariance rule's name, recorded in each log's settings: two
/// runs under the same rule give a task the same numbers however it was
/// batched; a run under another rule (another mcscore) may not.
pub const BATCH_RULE: &str = "micro60-out12";

/// The rule with layers on a GPU: [`BATCH_RULE`]'s micro-batches, and every
/// task (every prompt of `serve`) decoded alone from an empty cache. GPU
/// kernels choose how to split a sum by the shapes they see, the number of
/// cache cells attention reads among them (Vulkan's and CUDA's flash
/// attention split the cells by their count; docs/gpu.md), and a task's
/// cells lie where its fill puts them. Alone, a task's every shape and
/// every cell follows from the task: the same kernels read the same numbers
/// in the same order whatever else the run holds.
pub const OFFLOAD_BATCH_RULE: &str = "micro60-out12-alone";

impl Settings {
    /// The part of the settings that changes scores, for resume checks: the
    /// attention kernel and the batch rule. `-c`, `-np`, `-b`, `-ub` and the
    /// threads change which tasks fit, speed and memory, not a number.
    /// Where the rule is not known to hold the settings say `none`: on the
    /// CPU without flash attention (attention's sums then follow where a
    /// sequence's cells lie). With layers on a GPU the rule is
    /// [`OFFLOAD_BATCH_RULE`], and the settings name `-ngl` (how the layers
    /// are split between the GPU and the CPU changes the numbers).
    pub fn fingerprint(&self) -> String {
        let mut rule = format!("fa={:?} batch={}", self.flash_attention, self.batch_rule());
        // The cache's types where they are not llama.cpp's default (so that
        // runs in f16 keep the fingerprint they always had).
        for (name, kind) in [("ctk", self.kv_cache.k), ("ctv", self.kv_cache.v)] {
            if kind != KvType::F16 {
                rule.push_str(&format!(" {name}={}", kind.name()));
            }
        }
        // RoPE's overrides where any is given (none keeps the fingerprint as it was).
        if !self.rope.is_default() {
            rule.push(' ');
            rule.push_str(&self.rope.identity());
        }
        // Which layers run where, and on which GPUs, changes the numbers too.
        if self.alone() {
            let split = self.gpu_split.identity();
            let split = if split.is_empty() { split } else { format!(" {split}") };
            format!("{rule} ngl={}{split}", self.n_gpu_layers)
        } else {
            rule
        }
    }

    /// The batch rule these settings score under: [`OFFLOAD_BATCH_RULE`]
    /// with layers on a GPU, [`BATCH_RULE`] on the CPU, or `none` on the
    /// CPU without flash attention (see [`Settings::fingerprint`]).
    pub fn batch_rule(&self) -> &'static str {
        if self.alone() {
            OFFLOAD_BATCH_RULE
        } else if self.flash_attention == FlashAttention::Off {
            "none"
        } else {
            BATCH_RULE
        }
    }

    /// Whether every task is decoded alone, from an empty cache
    /// ([`OFFLOAD_BATCH_RULE`]): with layers on a GPU.
    pub(crate) fn alone(&self) -> bool {
        crate::GPU_BACKEND && self.n_gpu_layers > 0
    }

    /// The longest task `-c` and `-np` allow, as llama-perplexity computes
    /// it: `-np` raised to at least 4, `np × c` rounded up to 256 tokens;
    /// `None` for `-c auto` (any task).
    pub fn task_limit(&self) -> Option<usize> {
        match self.context {
            ContextSize::PerSequence(c) => {
                let np = self.parallel.unwrap_or(4).max(4) as usize;
                // two u32s: the product, rounded up, fits a 64-bit usize
                Some(round_up(np * c as usize, 256))
            }
            ContextSize::Auto => None,
        }
    }

    /// Tokens one fill may hold: `-b`, never below a micro-batch.
    pub(crate) fn fill_budget(&self) -> usize {
        self.n_batch.max(MICRO_BATCH) as usize
    }
}

/// The decodes a run makes: which tasks go together, and the context for them.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Ranges into the prepared tasks, one per KV-cache fill.
    pub fills: Vec<std::ops::Range<usize>>,
    /// Per fill: the tokens it takes from the previous fill's KV cache (the
    /// start of the chain both share), or, for a task with images, its media
    /// prefix's positions (decoded first); 0 when it starts from an empty cache.
    pub reused: Vec<usize>,
    /// The context allocated: what the largest fill holds with its padding,
    /// rounded up to 256 cells. At most `u32::MAX` ([`plan`] refuses more).
    pub n_ctx: u64,
    /// The context's batch: [`MICRO_BATCH`], or the fill's sequences where
    /// more (llama.cpp reserves a logits row per sequence within a batch,
    /// and aborts when a batch is narrower).
    pub n_batch: u32,
    /// Tokens per `llama_decode` call, each one micro-batch: [`MICRO_BATCH`].
    pub n_ubatch: u32,
    /// Sequence ids used by the widest fill, the padding's included.
    pub n_seq_max: u32,
}

/// A fill takes the previous fill's shared tokens from the cache only when
/// there are at least this many: fewer cost less than 2 % of a 512-token
/// fill to decode again.
const MIN_REUSED: usize = 8;

/// Per fill, the tokens it takes from the previous fill's cache. A cached
/// cell holds what any batch would have computed (the batch rule), so a fill
/// may reuse the last one's however many fills in a row do. A task with
/// images takes its media prefix, which the projector decodes first.
fn reuse(tasks: &[PreparedTask], fills: &[std::ops::Range<usize>]) -> Vec<usize> {
    let mut cached: Vec<LlamaToken> = Vec::new();
    let mut last_media = None;
    fills
        .iter()
        .map(|range| {
            let tree = FillTree::new(&tasks[range.clone()]);
            let chain = tree.chain_tokens();
            let common = cached.iter().zip(&chain).take_while(|(a, b)| a == b).count().min(tree.cacheable());
            cached = chain;
            let media = tasks[range.start].media.as_ref();
            let same = crate::vision::same_media(last_media, media);
            last_media = media;
            match media {
                // The projector decodes a media prefix afresh unless the last
                // fill's was the same; no other fill takes its cells (their
                // placeholders never match a token).
                Some(media) if same => common.max(media.positions),
                Some(media) => media.positions,
                None if common >= MIN_REUSED => common,
                None => 0,
            }
        })
        .collect()
}

pub(crate) fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Sequence ids a fill needs beside its leaves: sequence 0 carries the chain
/// of tokens every task of a fill shares to the next fill, and the last id
/// holds the padding of a fill's last micro-batch.
pub(crate) const EXTRA_SEQUENCES: usize = 2;

/// Packs tasks greedily, in order: a fill takes tasks while the tokens it
/// decodes (their prefix tree: a shared stem counts once) fit the fill
/// budget and its sequences fit llama.cpp's limit; under the offload rule
/// every task is a fill of its own. A task too long for the context fails
/// the plan, naming it.
pub fn plan(tasks: &[PreparedTask], settings: &Settings) -> Result<Plan, EngineError> {
    let longest = tasks.iter().map(PreparedTask::required_tokens).max().unwrap_or(1);
    let widest = tasks.iter().map(PreparedTask::n_options).max().unwrap_or(1);
    let max_leaves = MAX_SEQUENCES - EXTRA_SEQUENCES;
    if widest > max_leaves {
        return Err(EngineError::TooManySequences { widest, max: max_leaves });
    }
    let budget = settings.fill_budget();
    let limit = settings.task_limit().unwrap_or_else(|| round_up(longest.max(budget), 256));
    if limit > u32::MAX as usize {
        return Err(EngineError::ContextOverflow { n_ctx: limit as u64 });
    }
    let too_long: Vec<(usize, usize)> =
        tasks.iter().filter(|t| t.required_tokens() > limit).map(|t| (t.index, t.required_tokens())).collect();
    if !too_long.is_empty() {
        return Err(EngineError::TaskTooLong { tasks: too_long, n_ctx: limit });
    }

    // Attention over a unified KV cache costs (tokens in the fill) × (cells
    // in the cache), so fills are kept to the budget; a longer task goes
    // alone.
    let budget = budget.min(limit);
    let mut fills = Vec::new();
    let (mut start, mut n_seq_max) = (0, 0);
    // The KV cells the largest fill uses: its prefix tree, kept tokens included.
    let mut cells = 0;
    let mut trie = Trie::default();
    for (i, task) in tasks.iter().enumerate() {
        let before = trie.len();
        trie.insert(task);
        // A fill holds tasks of one media prefix (or none) only (vision.rs).
        let other_media = !crate::vision::same_media(task.media.as_ref(), tasks[start].media.as_ref());
        if i > start && (settings.alone() || other_media || trie.len() > budget || trie.leaves() > max_leaves) {
            fills.push(start..i);
            cells = cells.max(before);
            start = i;
            trie = Trie::default();
            trie.insert(task);
        }
        n_seq_max = n_seq_max.max(trie.leaves() + EXTRA_SEQUENCES);
    }
    if start < tasks.len() {
        fills.push(start..tasks.len());
        cells = cells.max(trie.len());
    }
    // A fill's last micro-batch is padded to a whole one. A context larger
    // than the fills need costs time to allocate and clear, and memory; it
    // changes no score.
    let n_ctx = round_up(cells.max(1) + MICRO_BATCH as usize - 1, 256);
    if n_ctx > u32::MAX as usize {
        return Err(EngineError::ContextOverflow { n_ctx: n_ctx as u64 });
    }
    // Alone, a task finds the cache empty: what it would reuse would put
    // its cells where the previous task's chain ended.
    // A task with images starts from its media prefix, decoded by the projector.
    let reused = if settings.alone() {
        fills.iter().map(|f| tasks[f.start].media.as_ref().map_or(0, |m| m.positions)).collect()
    } else {
        reuse(tasks, &fills)
    };
    let n_seq_max = n_seq_max.max(EXTRA_SEQUENCES) as u32;
    Ok(Plan { fills, reused, n_ctx: n_ctx as u64, n_batch: MICRO_BATCH.max(n_seq_max), n_ubatch: MICRO_BATCH, n_seq_max })
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
            labels: vec![false; options.len()],
            option_chars: vec![1; options.len()],
            option_bytes: vec![1; options.len()],
            media: None,
        }
    }

    fn settings(context: ContextSize, parallel: Option<u32>) -> Settings {
        Settings {
            context,
            parallel,
            n_batch: 512,
            threads: 1,
            threads_batch: 1,
            n_gpu_layers: 0,
            flash_attention: FlashAttention::Off,
            kv_cache: KvCache::default(),
            rope: Rope::default(),
            gpu_split: GpuSplit::default(),
            mmap: crate::Mmap::Auto,
        }
    }

    #[test]
    fn a_gpu_split_names_only_what_it_changes() {
        assert!(GpuSplit::default().is_default());
        assert_eq!(GpuSplit { mode: SplitMode::Layer, main_gpu: 1 }.identity(), "");
        assert_eq!(GpuSplit { mode: SplitMode::None, main_gpu: 0 }.identity(), "sm=none mg=0");
        assert_eq!(GpuSplit { mode: SplitMode::Row, main_gpu: 2 }.identity(), "sm=row mg=2");
        assert_eq!(GpuSplit { mode: SplitMode::Tensor, main_gpu: 2 }.identity(), "sm=tensor");
        assert_eq!(SplitMode::ALL.map(|m| SplitMode::parse(m.name())), SplitMode::ALL.map(Some));
        // On the CPU nothing is offloaded: the split is not part of the fingerprint.
        let on_cpu = Settings { gpu_split: GpuSplit { mode: SplitMode::Row, main_gpu: 1 }, ..settings(ContextSize::Auto, None) };
        assert!(!on_cpu.fingerprint().contains("sm="), "{}", on_cpu.fingerprint());
    }

    #[test]
    fn required_tokens_skip_each_options_last_token() {
        assert_eq!(task(0, 10, &[1, 1, 3]).required_tokens(), 10 + 2);
    }

    #[test]
    fn the_context_limit_is_np_times_c_and_the_allocation_what_fills_need() {
        let tasks = [task(0, 10, &[1, 1])];
        // -np 16 -c 512 allows 8192 tokens a task, as llama-perplexity; a fill of
        // 11 tokens, padded to a micro-batch, needs one 256-cell block.
        assert_eq!(plan(&tasks, &settings(ContextSize::PerSequence(512), Some(16))).unwrap().n_ctx, 256);
        assert!(plan(&[task(0, 8000, &[1, 1])], &settings(ContextSize::PerSequence(512), Some(16))).is_ok());
        assert!(plan(&[task(0, 8200, &[1, 1])], &settings(ContextSize::PerSequence(512), Some(16))).is_err());
        // -np is forced to at least 4, and the limit rounded up to 256.
        assert!(plan(&[task(0, 512, &[1, 1])], &settings(ContextSize::PerSequence(100), None)).is_ok());
        assert_eq!(plan(&tasks, &settings(ContextSize::Auto, None)).unwrap().n_ctx, 256);
        // 1001 tokens and up to 59 of padding.
        assert_eq!(plan(&[task(0, 1000, &[1, 1])], &settings(ContextSize::Auto, None)).unwrap().n_ctx, 1280);
        // Fills of up to 512 tokens, with their padding, need 768 cells.
        let many: Vec<_> = (0..40).map(|i| task(i, 60, &[1, 1, 1, 1])).collect();
        assert_eq!(plan(&many, &settings(ContextSize::PerSequence(512), Some(16))).unwrap().n_ctx, 768);
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
    fn fills_hold_the_budget_and_a_long_task_goes_alone() {
        let tasks: Vec<_> = (0..10).map(|i| task(i, 100, &[1, 1, 1, 1])).chain([task(10, 1500, &[1, 1])]).collect();
        let plan = plan(&tasks, &settings(ContextSize::Auto, None)).unwrap();
        assert_eq!(plan.fills, vec![0..5, 5..10, 10..11]);
        // Single-token options end where their prefix does: one leaf per task,
        // plus the sequence that carries the shared BOS to the next fill and
        // the padding's.
        assert_eq!(plan.n_seq_max, 7);
        assert_eq!(plan.n_ctx, 1792);
    }

    #[test]
    fn a_context_beyond_u32_is_refused_not_wrapped() {
        let tasks = [task(0, 10, &[1, 1])];
        let error = plan(&tasks, &settings(ContextSize::PerSequence(u32::MAX), Some(16))).unwrap_err();
        assert!(matches!(error, EngineError::ContextOverflow { n_ctx } if n_ctx > u64::from(u32::MAX)), "{error}");
    }

    #[test]
    fn micro_batches_are_the_rules_whatever_b_says() {
        let tasks = [task(0, 10, &[2, 2])];
        let mut s = settings(ContextSize::Auto, None);
        for n_batch in [1, 60, 512, 1 << 24] {
            s.n_batch = n_batch;
            let plan = plan(&tasks, &s).unwrap();
            assert_eq!((plan.n_batch, plan.n_ubatch), (MICRO_BATCH, MICRO_BATCH), "-b {n_batch}");
            // -b 2^31 panicked in llama-cpp-2, -b 3e8 spent minutes allocating.
            assert_eq!(plan.n_ctx, 256, "-b {n_batch}");
        }
    }

    #[test]
    fn the_contexts_batch_is_as_wide_as_a_fills_sequences() {
        // llama.cpp reserves a logits row per sequence within a batch, and
        // aborts when the batch is narrower.
        let tasks: Vec<_> = (0..100).map(|i| task(i, 2, &[2, 2])).collect();
        let mut s = settings(ContextSize::Auto, None);
        s.n_batch = 2048;
        let plan = plan(&tasks, &s).unwrap();
        assert!(plan.n_seq_max > MICRO_BATCH, "{plan:?}");
        assert_eq!((plan.n_batch, plan.n_ubatch), (plan.n_seq_max, MICRO_BATCH));
    }

    #[test]
    fn wide_tasks_do_not_need_a_wide_np() {
        let tasks = [task(0, 10, &[1; 6]), task(1, 10, &[1; 6])];
        let plan = plan(&tasks, &settings(ContextSize::PerSequence(512), Some(4))).unwrap();
        assert_eq!(plan.fills, vec![0..2]);
        assert_eq!(plan.n_seq_max, 4);
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
    fn the_task_limit_is_llama_perplexitys() {
        let limit = |c, np| settings(c, np).task_limit();
        assert_eq!(limit(ContextSize::PerSequence(512), Some(16)), Some(8192));
        assert_eq!(limit(ContextSize::PerSequence(100), Some(2)), Some(512), "-np raised to 4, 400 rounded up to 512");
        assert_eq!(limit(ContextSize::PerSequence(100), None), Some(512));
        assert_eq!(limit(ContextSize::Auto, Some(16)), None);
    }

    #[test]
    fn a_shared_stem_counts_once_toward_the_fill() {
        let plan = plan(&stem_tasks(48), &settings(ContextSize::Auto, None)).unwrap();
        // 300 + 21 × 10 = 510 tokens fit 512; unshared, one fill would hold one task.
        assert_eq!(plan.fills[0], 0..21);
    }

    #[test]
    fn a_long_shared_chain_is_reused_by_every_fill() {
        // Cached cells hold what any batch computes, so reuse has no limit.
        let plan = plan(&stem_tasks(250), &settings(ContextSize::Auto, None)).unwrap();
        assert_eq!(plan.fills.len(), 12);
        assert_eq!(plan.reused, [vec![0], vec![300; 11]].concat());
    }

    #[test]
    fn a_short_shared_chain_is_decoded_again_in_every_fill() {
        // Only BOS is shared: cheaper to decode again than to copy.
        let tasks: Vec<_> = (0..40).map(|i| task(i, 60, &[1, 1, 1, 1])).collect();
        let shared = plan(&tasks, &settings(ContextSize::PerSequence(512), Some(16))).unwrap();
        assert!(shared.fills.len() > 1);
        assert!(shared.reused.iter().all(|&r| r == 0), "{:?}", shared.reused);
    }
}
