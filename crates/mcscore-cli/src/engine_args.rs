//! The llama.cpp flags every scoring command shares (-c, -np, -b, -ub, -t,
//! -tb, -ngl, -sm, -mg, -fa, -ctk, -ctv, --rope-*), with llama.cpp's names and defaults.

use mcscore_engine::{ContextSize, FlashAttention, GpuSplit, KvCache, KvType, Mmap, Rope, RopeScaling, Settings, SplitMode};

use crate::numbers::End;

use crate::UsageError;

/// The largest -b and -ub: 2^24 tokens, far beyond any context, and far
/// below what llama.cpp's 32-bit batch counts or a batch's allocation break at.
const MAX_BATCH: u32 = 1 << 24;
/// -b below a micro-batch would mean nothing: fills are decoded in
/// micro-batches of this many tokens.
const MIN_BATCH: u32 = mcscore_engine::MICRO_BATCH;

/// The help section of llama.cpp's flags, with the multi-letter short forms
/// (rewritten before clap parses, so clap cannot list them by each flag).
const LLAMA_HEADING: &str = "llama.cpp's flags (--parallel, --ubatch-size, --threads-batch, --n-gpu-layers, --flash-attn, \
                             --cache-type-k, --cache-type-v, --split-mode, --main-gpu also as -np, -ub, -tb, -ngl, -fa, -ctk, -ctv, \
                             -sm, -mg)";

#[derive(clap::Args)]
pub(crate) struct EngineArgs {
    /// Context per sequence, as llama.cpp's -c: -np × -c is the longest task
    /// allowed, as in llama-perplexity; or `auto`: any task. The KV cache
    /// allocated is what the fills need (a fill of -b tokens, or the longest task, and up to 59 of padding).
    #[arg(help_heading = LLAMA_HEADING, short = 'c', long = "ctx-size", value_name = "N|auto", default_value = "auto", value_parser = parse_context)]
    ctx_size: ContextSize,
    /// Parallel sequences (-np): with -c, the limit is np × c. Sequences per decode
    /// follow from the data, so a task wider than -np does not stop the run.
    #[arg(help_heading = LLAMA_HEADING, long = "parallel", value_name = "N", value_parser = crate::numbers::whole(1u32, 256))]
    parallel: Option<u32>,
    #[command(flatten)]
    compute: ComputeArgs,
}

/// The flags that say how llama.cpp computes (-b, -ub, -t, -tb, -ngl, -fa),
/// shared by the scoring commands and `serve`.
#[derive(clap::Args)]
pub(crate) struct ComputeArgs {
    /// Tokens one KV-cache fill decodes at most (-b), 60 to 16,777,216: the tasks
    /// of a fill share their common tokens. Every fill is decoded in micro-batches
    /// of exactly 60 tokens, the last one padded (the batch rule: a task's scores
    /// never depend on what it is batched with), so -b changes speed and memory,
    /// never a score.
    #[arg(help_heading = LLAMA_HEADING, short = 'b', long = "batch-size", value_name = "N", default_value_t = 2048, value_parser = crate::numbers::whole(MIN_BATCH, MAX_BATCH))]
    batch_size: u32,
    /// Accepted as llama.cpp's micro-batch size (-ub), 1 to 16,777,216, and
    /// changes nothing: micro-batches are always 60 tokens (see -b).
    #[arg(help_heading = LLAMA_HEADING, long = "ubatch-size", value_name = "N", default_value_t = 512, value_parser = crate::numbers::whole(1u32, MAX_BATCH))]
    // Read by no one: pipelines written for llama.cpp pass it.
    #[allow(dead_code)]
    ubatch_size: u32,
    /// Threads (-t); default and maximum: the number of cores.
    #[arg(help_heading = LLAMA_HEADING, short = 't', long = "threads", value_name = "N", value_parser = crate::numbers::at_least(1i32))]
    threads: Option<i32>,
    /// Threads for batch processing (-tb); default: --threads.
    #[arg(help_heading = LLAMA_HEADING, long = "threads-batch", value_name = "N", value_parser = crate::numbers::at_least(1i32))]
    threads_batch: Option<i32>,
    /// Layers to offload to the GPU (-ngl); default: every layer, where this build has a GPU backend (scripts/build-vulkan,
    /// scripts/build-cuda) and it finds a GPU. With layers on a GPU every task is decoded alone (docs/gpu.md).
    #[arg(help_heading = LLAMA_HEADING, long = "n-gpu-layers", visible_alias = "gpu-layers", value_name = "N", value_parser = crate::numbers::at_least(0u32))]
    n_gpu_layers: Option<u32>,
    /// How offloaded layers are spread over several GPUs (-sm), as llama.cpp: none (only the GPU --main-gpu names),
    /// layer (whole layers to each; the default), row (each matrix's rows across them) or tensor (llama.cpp: experimental).
    /// Another than layer is recorded in a run's settings when layers are offloaded.
    #[arg(help_heading = LLAMA_HEADING, long = "split-mode", value_name = "none|layer|row|tensor", default_value = "layer",
          value_parser = parse_split_mode)]
    split_mode: SplitMode,
    /// The GPU (-mg), counted from 0, that holds the model with --split-mode none, or what is not split with row;
    /// ignored by layer and tensor, as llama.cpp ignores it. `mcscore score --timings` names the GPUs found.
    #[arg(help_heading = LLAMA_HEADING, long = "main-gpu", value_name = "N", default_value_t = 0,
          value_parser = crate::numbers::whole(0u32, 255))]
    main_gpu: u32,
    /// Flash attention (-fa), as llama.cpp: on, off, or auto (on where supported).
    #[arg(help_heading = LLAMA_HEADING, long = "flash-attn", value_name = "on|off|auto", default_value = "auto", value_parser = parse_flash_attention)]
    flash_attn: FlashAttention,
    /// The KV cache's type for keys (-ctk), as llama.cpp: f32, f16 (its default), bf16,
    /// q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1. Another type than f16 changes the scores
    /// (a log records it); scores stay batch-invariant.
    #[arg(help_heading = LLAMA_HEADING, long = "cache-type-k", value_name = "TYPE", default_value = "f16", value_parser = parse_kv_type)]
    cache_type_k: KvType,
    /// The KV cache's type for values (-ctv), as --cache-type-k; a quantised type needs
    /// flash attention (not -fa off).
    #[arg(help_heading = LLAMA_HEADING, long = "cache-type-v", value_name = "TYPE", default_value = "f16", value_parser = parse_kv_type)]
    cache_type_v: KvType,
    /// RoPE's frequency scaling (--rope-scaling), as llama.cpp: none, linear or yarn;
    /// default: the model's. This and the other RoPE and YaRN overrides change the
    /// scores (a log records them); scores stay batch-invariant.
    #[arg(help_heading = LLAMA_HEADING, long = "rope-scaling", value_name = "none|linear|yarn", value_parser = parse_rope_scaling)]
    rope_scaling: Option<RopeScaling>,
    /// RoPE's context scaling factor (--rope-scale N): the frequency scale 1/N.
    #[arg(help_heading = LLAMA_HEADING, long = "rope-scale", value_name = "N", value_parser = rope_value(End::Open(0.0)),
          conflicts_with = "rope_freq_scale")]
    rope_scale: Option<f32>,
    /// RoPE's base frequency (--rope-freq-base); default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "rope-freq-base", value_name = "N", value_parser = rope_value(End::Open(0.0)))]
    rope_freq_base: Option<f32>,
    /// RoPE's frequency scale (--rope-freq-scale): positions are multiplied by it; default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "rope-freq-scale", value_name = "N", value_parser = rope_value(End::Open(0.0)))]
    rope_freq_scale: Option<f32>,
    /// YaRN: the context the model was trained on (--yarn-orig-ctx), in tokens; default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "yarn-orig-ctx", value_name = "N", value_parser = crate::numbers::whole(1u32, u32::MAX))]
    yarn_orig_ctx: Option<u32>,
    /// YaRN: the extrapolation mix factor (--yarn-ext-factor), 0 (full interpolation) or more; default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "yarn-ext-factor", value_name = "N", value_parser = rope_value(End::Closed(0.0)))]
    yarn_ext_factor: Option<f32>,
    /// YaRN: the attention magnitude scale (--yarn-attn-factor); default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "yarn-attn-factor", value_name = "N", value_parser = rope_value(End::Open(0.0)))]
    yarn_attn_factor: Option<f32>,
    /// YaRN: the low correction dimension (--yarn-beta-slow); default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "yarn-beta-slow", value_name = "N", value_parser = rope_value(End::Open(0.0)))]
    yarn_beta_slow: Option<f32>,
    /// YaRN: the high correction dimension (--yarn-beta-fast); default: the model's.
    #[arg(help_heading = LLAMA_HEADING, long = "yarn-beta-fast", value_name = "N", value_parser = rope_value(End::Open(0.0)))]
    yarn_beta_fast: Option<f32>,
    /// How the weights are read: auto (mapped, and the pages llama.cpp copies
    /// out of the mapping released as it loads), on (mapped, every page read
    /// kept resident: llama.cpp's way) or off (read into memory). On a CPU,
    /// llama.cpp copies most quantised weights into repacked buffers, so with
    /// `on` a model takes about twice its file's size; never changes a score
    /// (docs/performance.md, "Memory").
    #[arg(help_heading = LLAMA_HEADING, long = "mmap", value_name = "on|off|auto", default_value = "auto", value_parser = Mmap::parse,
          overrides_with = "mmap")]
    mmap: Mmap,
    /// llama.cpp's spelling of --mmap off.
    #[arg(help_heading = LLAMA_HEADING, long = "no-mmap", conflicts_with = "mmap")]
    no_mmap: bool,
    /// Removed: every run is batch-invariant now.
    #[arg(long, hide = true)]
    deterministic: bool,
}

impl EngineArgs {
    /// The threads -t asks for, for work beside scoring (quantizing); `None`: one per core.
    pub(crate) fn threads(&self) -> Option<usize> {
        self.compute.threads()
    }

    /// The settings to score with. Says so where `-c` and `-np` allow longer
    /// tasks than their product, as llama-perplexity's rule makes them.
    pub(crate) fn settings(&self) -> Result<Settings, UsageError> {
        let settings = self.compute.settings(self.ctx_size, self.parallel)?;
        if let (ContextSize::PerSequence(c), Some(limit)) = (self.ctx_size, settings.task_limit()) {
            let np = self.parallel.unwrap_or(4);
            if limit != np as usize * c as usize {
                eprintln!(
                    "mcscore: note: tasks may be up to {limit} tokens long: -np {np} × -c {c}, with -np raised to at least 4 and the \
                     product rounded up to a multiple of 256, as llama-perplexity does"
                );
            }
        }
        Ok(settings)
    }

    pub(crate) fn refuse_removed(&self) -> Result<(), UsageError> {
        self.compute.refuse_removed()
    }
}

impl ComputeArgs {
    /// Refuses flags clap still parses but that were removed.
    pub(crate) fn refuse_removed(&self) -> Result<(), UsageError> {
        if self.deterministic {
            return Err(UsageError(
                "--deterministic was removed: every run is batch-invariant now, so a task's scores never depend on -np, -b, -ub, -t, \
                 the shards or a resume (docs/performance.md, \"Batch invariance\"); drop the flag"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The threads -t asks for, for work beside scoring (quantizing); `None`: one per core.
    pub(crate) fn threads(&self) -> Option<usize> {
        self.threads.and_then(|n| usize::try_from(n).ok())
    }

    /// The settings to score with, given the context flags. More threads
    /// than cores only slows llama.cpp down (3–15× here), so -t and -tb are
    /// capped at the core count, with a warning.
    pub(crate) fn settings(&self, context: ContextSize, parallel: Option<u32>) -> Result<Settings, UsageError> {
        self.refuse_removed()?;
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get() as i32);
        let cap = |flag: &str, n: i32| {
            if n > cores {
                eprintln!(
                    "mcscore: warning: {flag} {n} is more threads than the {cores} cores here, which slows llama.cpp down; using {cores}"
                );
            }
            n.min(cores)
        };
        let threads = cap("-t", self.threads.unwrap_or(cores));
        Ok(Settings {
            context,
            parallel,
            n_batch: self.batch_size,
            threads,
            threads_batch: self.threads_batch.map_or(threads, |n| cap("-tb", n)),
            n_gpu_layers: self.gpu_layers()?,
            flash_attention: self.flash_attn,
            kv_cache: self.kv_cache()?,
            rope: Rope {
                scaling: self.rope_scaling,
                freq_base: self.rope_freq_base,
                freq_scale: self.rope_freq_scale.or(self.rope_scale.map(|n| 1.0 / n)),
                yarn_orig_ctx: self.yarn_orig_ctx,
                yarn_ext_factor: self.yarn_ext_factor,
                yarn_attn_factor: self.yarn_attn_factor,
                yarn_beta_slow: self.yarn_beta_slow,
                yarn_beta_fast: self.yarn_beta_fast,
            },
            gpu_split: self.gpu_split()?,
            mmap: if self.no_mmap { Mmap::Off } else { self.mmap },
        })
        .inspect(|settings: &Settings| {
            if settings.batch_rule() == "none" {
                eprintln!(
                    "mcscore: warning: without flash attention (-fa off) on the CPU scores are not known to be batch-invariant: \
                     they may move with -b, the shards and a resume point (docs/performance.md)"
                );
            }
        })
    }

    /// `-ctk` and `-ctv`; llama.cpp cannot quantise the V cache without flash attention.
    fn kv_cache(&self) -> Result<KvCache, UsageError> {
        if self.cache_type_v.quantised() && self.flash_attn == FlashAttention::Off {
            return Err(UsageError(format!(
                "-ctv {} with -fa off: llama.cpp quantises the V cache only with flash attention; use -fa on or auto, or -ctv f16",
                self.cache_type_v.name()
            )));
        }
        Ok(KvCache { k: self.cache_type_k, v: self.cache_type_v })
    }

    /// `-sm` and `-mg`. Where they change nothing, a note says so (as
    /// llama.cpp warns); a `-mg` naming no GPU found is refused.
    fn gpu_split(&self) -> Result<GpuSplit, UsageError> {
        let split = GpuSplit { mode: self.split_mode, main_gpu: self.main_gpu };
        if self.main_gpu != 0 && !split.mode.uses_main_gpu() {
            eprintln!("mcscore: note: -mg {}: llama.cpp reads it only with -sm none or row, not {}", self.main_gpu, split.mode.name());
        }
        if split.is_default() {
            return Ok(split);
        }
        let devices = mcscore_engine::gpu_devices().map_err(|e| UsageError(format!("-sm: {}", crate::with_causes(&e))))?;
        if devices.is_empty() {
            eprintln!("mcscore: note: -sm {} -mg {}: no GPU is found, so they change nothing", split.mode.name(), split.main_gpu);
        } else if split.mode.uses_main_gpu() && split.main_gpu as usize >= devices.len() {
            let found: Vec<String> = devices.iter().enumerate().map(|(i, d)| format!("{i}: {} ({})", d.name, d.description)).collect();
            return Err(UsageError(format!(
                "-mg {}: no such GPU; give 0 to {} (found {})",
                split.main_gpu,
                devices.len() - 1,
                found.join(", ")
            )));
        }
        Ok(split)
    }

    /// `-ngl`, as llama.cpp takes it: every layer by default, and none, with
    /// a warning that says why and what to do, where no GPU can take them
    /// (llama-perplexity runs on the CPU then too, so its command lines do).
    fn gpu_layers(&self) -> Result<u32, UsageError> {
        let devices = mcscore_engine::gpu_devices().map_err(|e| UsageError(format!("-ngl: {}", crate::with_causes(&e))))?;
        if !devices.is_empty() {
            return Ok(self.n_gpu_layers.unwrap_or(999));
        }
        if let Some(n) = self.n_gpu_layers.filter(|&n| n > 0) {
            let why = if mcscore_engine::VULKAN_BACKEND {
                "no GPU was found (a software Vulkan device counts only when GGML_VK_VISIBLE_DEVICES names it: \
                 GGML_VK_VISIBLE_DEVICES=0)"
            } else if mcscore_engine::GPU_BACKEND {
                "no GPU was found by this build's GPU backend (is its driver installed?)"
            } else {
                "this mcscore has no GPU backend (build one with scripts/build-vulkan or scripts/build-cuda)"
            };
            eprintln!("mcscore: warning: -ngl {n}: {why}; every layer runs on the CPU");
        }
        Ok(0)
    }
}

fn parse_flash_attention(text: &str) -> Result<FlashAttention, String> {
    match text {
        "on" | "1" | "true" => Ok(FlashAttention::On),
        "off" | "0" | "false" => Ok(FlashAttention::Off),
        "auto" => Ok(FlashAttention::Auto),
        _ => Err(format!("expected on, off or auto, got {text:?}")),
    }
}

fn parse_split_mode(text: &str) -> Result<SplitMode, String> {
    SplitMode::parse(text).ok_or_else(|| format!("expected none, layer, row or tensor, got {text:?}"))
}

fn parse_rope_scaling(text: &str) -> Result<RopeScaling, String> {
    RopeScaling::parse(text).ok_or_else(|| format!("expected none, linear or yarn, got {text:?}"))
}

/// A RoPE or YaRN value: a finite number above `low`, at most 10^12 (an f32, llama.cpp's type, holds it).
fn rope_value(low: End) -> impl Fn(&str) -> Result<f32, String> + Clone + Send + Sync + 'static {
    let real = crate::numbers::real("a number", low, End::Closed(1e12), "10000");
    move |text| real(text).map(|x| x as f32)
}

fn parse_kv_type(text: &str) -> Result<KvType, String> {
    KvType::parse(text).ok_or_else(|| {
        let names: Vec<&str> = KvType::ALL.iter().map(|t| t.name()).collect();
        format!("expected one of {}, as llama.cpp names them", names.join(", "))
    })
}

fn parse_context(text: &str) -> Result<ContextSize, String> {
    if text == "auto" {
        return Ok(ContextSize::Auto);
    }
    crate::numbers::whole(1u32, u32::MAX)(text)
        .map(ContextSize::PerSequence)
        .map_err(|words| words.replacen("expected a whole number", "expected `auto` or a whole number of tokens", 1))
}
