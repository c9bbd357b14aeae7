//! The scoring engine: llama-perplexity's multiple-choice semantics over
//! llama.cpp (through `llama-cpp-2`), without its n_ctx × n_vocab logits
//! buffer, its `-np` trap or its silent failures.
//!
//! Flow: [`Engine::load`] → [`Engine::prepare`] (tokenise, common prefixes,
//! up-front refusals) → [`plan`] (pack tasks into decodes) → [`Engine::score`].

#![warn(missing_docs)]

mod abort;
pub mod budget;
mod chat;
mod generate;
mod memory;
mod plan;
mod prepare;
pub mod project;
mod prompts;
mod quantize;
mod score;
mod subset;
mod trie;
mod vision;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::{LlamaModelParams, LlamaSplitMode};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use mcscore_format::Task;

pub use chat::{builtin_templates, BosSource};
pub use generate::{Finish, Generation, GenerationRequest};
pub use mcscore_gguf::{read_imatrix, Imatrix, ImatrixError};
pub use mcscore_metrics::OptionScore;
pub use memory::{available_memory, Buffer, BufferUse, MemoryReport, Mmap, Resident};
pub use plan::{
    plan, ContextSize, FlashAttention, GpuSplit, KvCache, KvType, Plan, Rope, RopeScaling, Settings, SplitMode, BATCH_RULE, MICRO_BATCH,
    OFFLOAD_BATCH_RULE,
};
pub use prepare::PreparedTask;
pub use prompts::{PromptRequest, RowScores, Session, SessionLimits};
pub use quantize::{quantize, QuantOptions, QuantType, TensorType};
pub use score::{rows_to_read, Completion, ScoreSummary, ScoreTimes, TaskScores, TokenCounts};
pub use subset::{hellaswag_order, select_tasks};
pub use vision::{check_image, image_size, ImageFault, IMAGE_MARKER, MAX_IMAGE_PIXELS};

/// Why scoring could not run or finish. Every variant names the task (index in
/// the file) or the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// llama.cpp's backend failed to initialise.
    #[error("llama.cpp's backend failed to initialise")]
    Backend {
        /// llama-cpp-2's error, shared by every later attempt: the backend
        /// is initialised once per process.
        #[source]
        source: std::sync::Arc<llama_cpp_2::LlamaCppError>,
    },

    /// A path that is no model file, found before llama.cpp reads it.
    #[error("{}: the model does not load: {message}", path.display())]
    ModelLoad {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// A file that is not a GGUF model llama.cpp would load, by mcscore's own
    /// check of its structure: the fault, its byte offset and its key or tensor.
    #[error("{}: the model does not load: {kind}", path.display())]
    ModelFile {
        /// The model file.
        path: PathBuf,
        /// What is wrong, and where.
        #[source]
        kind: Box<mcscore_gguf::GgufErrorKind>,
    },

    /// A file that passed mcscore's own GGUF check and that llama.cpp still
    /// refuses, with the reason its log gave.
    #[error("{}: the model does not load: {reason}", path.display())]
    ModelRefused {
        /// The model file.
        path: PathBuf,
        /// The reason llama.cpp's log gave.
        reason: String,
    },

    /// llama.cpp's quantizer failed.
    #[error("{}: quantizing to {quant}: {message}", input.display())]
    Quantize {
        /// The model being quantised.
        input: PathBuf,
        /// The type asked for, as llama-quantize names it.
        quant: &'static str,
        /// What the quantizer's log and the system said.
        message: String,
    },

    /// llama.cpp could not create a context.
    #[error("llama.cpp could not create a context")]
    Context {
        /// llama-cpp-2's error.
        #[source]
        source: llama_cpp_2::LlamaContextLoadError,
    },

    /// The thread that owns a server's context.
    #[error("the scoring thread {what}")]
    ScoringThread {
        /// What happened to it.
        what: &'static str,
        /// The system's error, where there is one.
        #[source]
        source: Option<std::io::Error>,
    },

    /// A context too large for llama.cpp to index.
    #[error("a context of {n_ctx} tokens is beyond llama.cpp's limit of {} tokens", u32::MAX)]
    ContextOverflow {
        /// The context, in tokens.
        n_ctx: u64,
    },

    /// A context whose KV cache would not fit in the memory available.
    #[error("a context of {n_ctx} tokens needs about {:.1} GiB for its KV cache ({per_token} bytes a token), but {:.1} GiB of memory is available", *needed as f64 / GIB, *available as f64 / GIB)]
    ContextTooLarge {
        /// The context, in tokens.
        n_ctx: u64,
        /// KV-cache bytes one token takes.
        per_token: u64,
        /// KV-cache bytes the context takes.
        needed: u64,
        /// Bytes of memory available.
        available: u64,
    },

    /// A model whose offloaded layers would not fit in the GPU's free memory,
    /// found before loading.
    #[error("{}: -ngl {n_gpu_layers} puts about {:.1} GiB of weights on {device}, which has {:.1} GiB free; lower -ngl to keep layers on the CPU", path.display(), *needed as f64 / GIB, *available as f64 / GIB)]
    ModelTooLargeForDevice {
        /// The model file.
        path: PathBuf,
        /// The device, by name and description.
        device: String,
        /// `-ngl`.
        n_gpu_layers: u32,
        /// Bytes of weights the offloaded layers hold (the file's share).
        needed: u64,
        /// The device's free memory, in bytes.
        available: u64,
    },

    /// `-mg` naming a GPU that is not there.
    #[error("-mg {main_gpu}: no such GPU; found {}", if found.is_empty() { "none".to_owned() } else { found.join(", ") })]
    NoSuchGpu {
        /// The index given.
        main_gpu: u32,
        /// The GPUs found, by index, name and description.
        found: Vec<String>,
    },

    /// A context whose KV cache, for the offloaded layers, would not fit in
    /// the GPU's free memory beside the weights.
    #[error("a context of {n_ctx} tokens needs about {:.1} GiB of KV cache on {device}, which has {:.1} GiB free beside the weights; lower -c, -b or -np, or -ngl", *needed as f64 / GIB, *available as f64 / GIB)]
    ContextTooLargeForDevice {
        /// The context, in tokens.
        n_ctx: u64,
        /// The device, by name and description.
        device: String,
        /// KV-cache bytes on the device.
        needed: u64,
        /// The device's free memory, in bytes.
        available: u64,
    },

    /// A model file whose size or modification time changed while it was loaded.
    #[error("{}: the model file changed while it was in use ({what}); the scores cannot be trusted", path.display())]
    ModelChanged {
        /// The model file.
        path: PathBuf,
        /// What changed.
        what: String,
    },

    /// Tasks longer than the context allows.
    #[error("{}", too_long_message(tasks, *n_ctx, ""))]
    TaskTooLong {
        /// Each such task, by its index in the file, with the tokens it needs.
        tasks: Vec<(usize, usize)>,
        /// The longest task the context allows, in tokens.
        n_ctx: usize,
    },

    /// Tasks refused by their bytes before tokenising ([`Engine::refuse_by_bytes`]):
    /// the token counts are lower bounds.
    #[error("{} (counted from their bytes, before tokenising)", too_long_message(tasks, *n_ctx, "at least "))]
    TaskTooLongByBytes {
        /// Each such task, by its index in the file, with the fewest tokens it can take.
        tasks: Vec<(usize, usize)>,
        /// The longest task allowed, in tokens.
        n_ctx: usize,
    },

    /// A task with more options than llama.cpp has sequences for.
    #[error("a task has {widest} options; llama.cpp allows at most {max} sequences")]
    TooManySequences {
        /// The widest task's option count.
        widest: usize,
        /// The most options a task may have.
        max: usize,
    },

    /// A task of one option: nothing to score it against.
    #[error("task {task}: one option; a task needs at least 2 options to be scored")]
    OneOption {
        /// The task, by its index in the file.
        task: usize,
    },

    /// An option whose tokens are a prefix of every other option's, which
    /// leaves it no token of its own to score.
    #[error("task {task}: option {option} ({text:?}) tokenises to a prefix of every other option, so it has no token of its own to score (llama-perplexity reads out of bounds here and scores it 0)")]
    PrefixOption {
        /// The task, by its index in the file.
        task: usize,
        /// The option, by its position.
        option: usize,
        /// Its text.
        text: String,
    },

    /// Options that share no leading token, where the model adds no BOS:
    /// no logits row predicts their first token.
    #[error("task {task}: the options share no leading token (the model adds no BOS), so the first option token cannot be scored")]
    NoCommonPrefix {
        /// The task, by its index in the file.
        task: usize,
    },

    /// An option whose text adds no token after the question's (lm-eval's
    /// tokenisation), which leaves nothing to score.
    #[error("task {task}: option {option} ({text:?}) adds no token after the question's tokens, so it has nothing to score")]
    NothingAfterContext {
        /// The task, by its index in the file.
        task: usize,
        /// The option, by its position.
        option: usize,
        /// Its text.
        text: String,
    },

    /// A Winogrande task without exactly two options.
    #[error("task {task}: {options} options; a Winogrande task has exactly 2")]
    NotTwoOptions {
        /// The task, by its index in the file.
        task: usize,
        /// How many options it has.
        options: usize,
    },

    /// A Winogrande sentence without a `_`.
    #[error("task {task}: the sentence has no `_` for the options to fill")]
    NoBlank {
        /// The task, by its index in the file.
        task: usize,
    },

    /// A Winogrande option after which no token is left to score.
    #[error("task {task}: with option {option} in the blank, no token follows it to score")]
    NothingAfterBlank {
        /// The task, by its index in the file.
        task: usize,
        /// The option, by its position.
        option: usize,
    },

    /// A Winogrande option whose tokens merge with the text after the blank.
    #[error("task {task}: option {option} ({text:?}) merges with the text after the blank into shared tokens, so the sentence after the blank cannot be scored on its own (llama-perplexity reads the wrong logits here)")]
    BlankBoundary {
        /// The task, by its index in the file.
        task: usize,
        /// The option, by its position.
        option: usize,
        /// Its text.
        text: String,
    },

    /// A vision projector that does not load, or that the engine cannot use.
    #[error("{}: the projector does not load: {reason}", path.display())]
    ProjectorRefused {
        /// The projector file.
        path: PathBuf,
        /// Why: llama.cpp's log, or what the engine does not do.
        reason: String,
    },

    /// A task with images (or markers) and no projector to decode them.
    #[error("task {task} has an image, and no projector is loaded to read it (give the model's --mmproj)")]
    NoProjector {
        /// The task, by its index in the file.
        task: usize,
    },

    /// A task whose markers and images differ in number.
    #[error("task {task}: {markers} image markers in its context, {images} images")]
    ImageCount {
        /// The task, by its index in the file.
        task: usize,
        /// The markers in its context.
        markers: usize,
        /// The images given.
        images: usize,
    },

    /// An image llama.cpp cannot decode (no image format it reads, or a
    /// corrupt or truncated file).
    #[error("task {task}: image {image} cannot be read (not a PNG, JPEG, BMP, GIF, TGA, PSD, HDR or PNM llama.cpp reads, or corrupt)")]
    ImageUnreadable {
        /// The task, by its index in the file.
        task: usize,
        /// The image, counted from 0 in marker order.
        image: usize,
    },

    /// An image with more pixels than llama.cpp may decode here.
    #[error("task {task}: image {image} is {width} x {height} pixels, more than the {} million mcscore decodes (llama.cpp holds an image whole before resizing it); downscale it", vision::MAX_IMAGE_PIXELS / 1_000_000)]
    ImageTooLarge {
        /// The task, by its index in the file.
        task: usize,
        /// The image, counted from 0 in marker order.
        image: usize,
        /// Its width, from its header.
        width: u64,
        /// Its height.
        height: u64,
    },

    /// A task whose context ends with an image (no text after it that
    /// every option shares), so no decoded row predicts an option's first token.
    #[error("task {task}: its context must go on after its last image (\"Answer:\", say), before the options")]
    NothingAfterImage {
        /// The task, by its index in the file.
        task: usize,
    },

    /// llama.cpp refused a step of a fill: `what` says which.
    #[error("{what} failed in the fill starting at task {task}")]
    Decode {
        /// The fill's first task, by its index in the file.
        task: usize,
        /// The step.
        what: &'static str,
        /// llama-cpp-2's error.
        #[source]
        source: LlamaCause,
    },

    /// An option whose log-probability is NaN or infinite.
    #[error("task {task}: option {option} got a non-finite log-probability ({value})")]
    NonFinite {
        /// The task, by its index in the file.
        task: usize,
        /// The option, by its position.
        option: usize,
        /// The log-probability.
        value: f64,
    },

    /// A prompt the engine refuses, or prompts and tasks of different counts.
    #[error("prompt {prompt}: {message}")]
    InvalidPrompt {
        /// The prompt, by its index (the prompts' count, where that is at fault).
        prompt: usize,
        /// What is wrong.
        message: String,
    },

    /// A text past [`MAX_TEXT_BYTES`], refused before the tokenizer sees it
    /// (llama.cpp's tokenizer needs many times a text's size in memory, and
    /// aborts the process when that fails).
    #[error("{}a text of {bytes} bytes; mcscore tokenises at most {} bytes (4 MiB) per text, more than any context holds", task.map_or(String::new(), |t| format!("task {t}: ")), MAX_TEXT_BYTES)]
    TextTooLong {
        /// The task the text belongs to, by its index in the file, where it is a task's.
        task: Option<usize>,
        /// The text's length in bytes.
        bytes: usize,
    },

    /// llama.cpp refused a step of scoring prompts: `what` says which.
    #[error("{what} failed")]
    DecodePrompts {
        /// The step.
        what: &'static str,
        /// llama-cpp-2's error.
        #[source]
        source: LlamaCause,
    },

    /// A logits row of a prompt with a NaN or infinite log-probability.
    #[error("prompt {prompt}: token {position} got a non-finite log-probability ({value})")]
    NonFinitePrompt {
        /// The prompt, by its index in the request.
        prompt: usize,
        /// The position the row predicts.
        position: usize,
        /// The log-probability.
        value: f64,
    },

    /// A chat template that could not be read or applied.
    #[error("chat template {name}: {message}")]
    ChatTemplate {
        /// The template: a built-in's name, or the model file's.
        name: String,
        /// What went wrong.
        message: String,
        /// llama.cpp's error, where it refused the template.
        #[source]
        source: Option<LlamaCause>,
    },

    /// A chat prompt with more than one BOS, or whose BOS comes from
    /// elsewhere than the first task's (see [`BosSource`]).
    #[error("task {task}: {message}; a chat prompt has exactly one BOS")]
    ChatBos {
        /// The task, by its index in the file.
        task: usize,
        /// What is wrong.
        message: String,
    },

    /// Inside a chat prompt, special-token text is read as the token: a task
    /// could close the user's turn or open another.
    #[error("task {task}: {what} holds the text of a special token (such as <end_of_turn> or <|im_end|>), which a chat prompt would read as that token")]
    SpecialText {
        /// The task, by its index in the file.
        task: usize,
        /// Which text: the question, or an option.
        what: String,
    },
}

impl EngineError {
    /// The task the error is about, where it is about one.
    pub fn task(&self) -> Option<usize> {
        match self {
            EngineError::PrefixOption { task, .. }
            | EngineError::OneOption { task }
            | EngineError::NoCommonPrefix { task }
            | EngineError::NothingAfterContext { task, .. }
            | EngineError::NotTwoOptions { task, .. }
            | EngineError::NoBlank { task }
            | EngineError::NothingAfterBlank { task, .. }
            | EngineError::BlankBoundary { task, .. }
            | EngineError::Decode { task, .. }
            | EngineError::NoProjector { task }
            | EngineError::ImageCount { task, .. }
            | EngineError::ImageUnreadable { task, .. }
            | EngineError::ImageTooLarge { task, .. }
            | EngineError::NothingAfterImage { task }
            | EngineError::NonFinite { task, .. }
            | EngineError::ChatBos { task, .. }
            | EngineError::SpecialText { task, .. } => Some(*task),
            EngineError::TextTooLong { task, .. } => *task,
            EngineError::TaskTooLong { tasks, .. } | EngineError::TaskTooLongByBytes { tasks, .. } => tasks.first().map(|t| t.0),
            _ => None,
        }
    }
}

/// One of llama-cpp-2's errors (decode, batch, KV cache, chat template),
/// kept as the cause.
pub type LlamaCause = Box<dyn std::error::Error + Send + Sync>;

const GIB: f64 = (1u64 << 30) as f64;

/// The longest text (in UTF-8 bytes) handed to the tokenizer: the task
/// file's rule, so a file mcscore calls valid is one it tokenises.
pub use mcscore_format::MAX_TEXT_BYTES;

/// Refuses a text past [`MAX_TEXT_BYTES`] before it is tokenised.
pub(crate) fn check_text_length(task: Option<usize>, bytes: usize) -> Result<(), EngineError> {
    if bytes > MAX_TEXT_BYTES {
        return Err(EngineError::TextTooLong { task, bytes });
    }
    Ok(())
}

fn too_long_message(tasks: &[(usize, usize)], n_ctx: usize, bound: &str) -> String {
    let listed: Vec<String> = tasks.iter().take(5).map(|(i, t)| format!("task {i} needs {bound}{t} tokens")).collect();
    let more = if tasks.len() > 5 { format!(" and {} more", tasks.len() - 5) } else { String::new() };
    format!(
        "{} task{} do not fit the {n_ctx}-token context: {}{more}",
        tasks.len(),
        if tasks.len() == 1 { "" } else { "s" },
        listed.join(", ")
    )
}

/// mcscore's check of a model file, before llama.cpp opens it: a FIFO would
/// block its open, a malformed file would get only "null result" from it,
/// and some values would abort it.
/// Checks a model file, and returns its weights' bytes and its layers
/// (`{arch}.block_count`, where it says).
/// Also where its output matrix lies, if it is one mcscore can project.
fn check_model_file(path: &Path) -> Result<(u64, Option<u64>, Option<project::OutputTensor>), EngineError> {
    let header = model_header(path)?;
    let arch = header.get_str("general.architecture").map(|a| a.split('\0').next().unwrap_or(a).to_owned());
    let layers = arch.and_then(|a| header.get_u64(&format!("{a}.block_count")));
    Ok((header.data_size(), layers, project::OutputTensor::find(&header)))
}

/// The checked header of the model file at `path` ([`mcscore_gguf::check_model_file`]).
pub(crate) fn model_header(path: &Path) -> Result<mcscore_gguf::Header<'static>, EngineError> {
    mcscore_gguf::check_model_file(path).map_err(|e| EngineError::ModelFile { path: path.to_owned(), kind: Box::new(e.kind) })
}

/// A GPU that llama.cpp's backend found: where `-ngl` puts layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDevice {
    /// The backend's name for it (`Vulkan0`, `CUDA0`): its buffers' name.
    pub name: String,
    /// What the driver calls it (`NVIDIA H200`, `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub description: String,
    /// Its memory, in bytes.
    pub memory_total: u64,
    /// Its memory free now, in bytes.
    pub memory_free: u64,
}

/// The GPUs this build's backends found (none on a CPU build). Vulkan lists
/// a software device (Mesa's lavapipe) only when `GGML_VK_VISIBLE_DEVICES`
/// names it, as llama.cpp does.
pub fn gpu_devices() -> Result<Vec<GpuDevice>, EngineError> {
    use llama_cpp_2::LlamaBackendDeviceType;
    backend()?;
    // As llama.cpp takes them for a model: the discrete GPUs, or the
    // integrated ones where there is none (so that `-mg N` counts as it does).
    let devices = llama_cpp_2::list_llama_ggml_backend_devices();
    let discrete = devices.iter().any(|d| matches!(d.device_type, LlamaBackendDeviceType::Gpu));
    let kind = if discrete { LlamaBackendDeviceType::Gpu } else { LlamaBackendDeviceType::IntegratedGpu };
    Ok(devices
        .into_iter()
        .filter(|d| d.device_type == kind)
        .map(|d| GpuDevice {
            name: d.name,
            description: d.description,
            memory_total: d.memory_total as u64,
            memory_free: d.memory_free as u64,
        })
        .collect())
}

/// The GPUs llama.cpp puts offloaded layers on (every one found, unless
/// `-sm none` names one), by name, and their free memory together; `None`
/// where none is found.
fn gpu_memory(split: GpuSplit) -> Result<Option<(String, u64)>, EngineError> {
    let mut devices = gpu_devices()?;
    if split.mode == SplitMode::None && !devices.is_empty() {
        devices = vec![check_main_gpu(devices, split.main_gpu)?];
    }
    let names: Vec<String> = devices.iter().map(|d| format!("{} ({})", d.name, d.description)).collect();
    Ok((!devices.is_empty()).then(|| (names.join(" + "), devices.iter().map(|d| d.memory_free).fold(0u64, u64::saturating_add))))
}

/// The GPU `-mg` names among those found, or why there is none (llama.cpp
/// would only log it and fail to load).
fn check_main_gpu(mut devices: Vec<GpuDevice>, main_gpu: u32) -> Result<GpuDevice, EngineError> {
    let found = devices.iter().enumerate().map(|(i, d)| format!("{i}: {} ({})", d.name, d.description)).collect();
    match usize::try_from(main_gpu).ok().filter(|&i| i < devices.len()) {
        Some(i) => Ok(devices.swap_remove(i)),
        None => Err(EngineError::NoSuchGpu { main_gpu, found }),
    }
}

/// The share of `bytes` spread equally over `parts` layers that the first
/// `n_gpu_layers` of them hold (all of it from `parts` on).
fn offloaded_share(bytes: u64, parts: u64, n_gpu_layers: u32) -> u64 {
    let parts = u128::from(parts.max(1));
    (u128::from(bytes) * u128::from(n_gpu_layers).min(parts) / parts) as u64
}

/// The bytes of weights `n_gpu_layers` put on a GPU: each of the model's
/// `layers` blocks and its output layer (llama.cpp offloads the output
/// last) take an equal share of the file's weights; all of them where the
/// file does not say its blocks. An estimate, from the file alone, made
/// before anything is loaded.
pub(crate) fn offloaded_bytes(weights: u64, layers: Option<u64>, n_gpu_layers: u32) -> u64 {
    layers.map_or(weights, |layers| offloaded_share(weights, layers.saturating_add(1), n_gpu_layers))
}

/// llama.cpp's backend may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, EngineError> {
    static BACKEND: OnceLock<Result<LlamaBackend, std::sync::Arc<llama_cpp_2::LlamaCppError>>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let backend = LlamaBackend::init()?;
            memory::install_log();
            abort::install();
            Ok(backend)
        })
        .as_ref()
        .map_err(|source| EngineError::Backend { source: source.clone() })
}

/// A loaded model, ready to score.
pub struct Engine {
    backend: &'static LlamaBackend,
    /// Freed in [`Drop`], under the mappings lock (see `memory::PageRelease`).
    model: std::mem::ManuallyDrop<LlamaModel>,
    path: PathBuf,
    /// Size and modification time at load: llama.cpp maps the file, so a
    /// model rewritten under a run changes its scores (or crashes it).
    stamp: (u64, Option<std::time::SystemTime>),
    /// How the weights were read, and whether `--mmap auto` found the
    /// file's mappings to release.
    mmap: Mmap,
    pages_released: bool,
    /// The buffers llama.cpp allocated for the weights.
    weights: Vec<Buffer>,
    /// The vocabulary's longest token text, in bytes, once asked for.
    longest_token: OnceLock<usize>,
    /// A vision projector (`--mmproj`), where one is attached: it points
    /// into the model, so it is freed first.
    projector: Option<vision::Projector>,
    /// The output matrix, where the engine may compute the projection of
    /// the rows it reads itself (on the CPU, where the fast kernel runs).
    output: Option<project::OutputMatrix>,
}

impl Drop for Engine {
    /// llama.cpp unmaps the model file as it frees the model: under the
    /// mappings lock, so that no release on another thread advises on an
    /// address range that stops being the file's.
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        self.projector = None;
        // It may point into the model's mapping.
        self.output = None;
        let _mappings = memory::mappings_lock();
        // SAFETY: the model is dropped once, here, and never used after.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.model) }
    }
}

fn stamp(path: &Path) -> std::io::Result<(u64, Option<std::time::SystemTime>)> {
    let metadata = std::fs::metadata(path)?;
    Ok((metadata.len(), metadata.modified().ok()))
}

/// Whether llama.cpp's Vulkan backend is compiled in (which finds a
/// software device only when `GGML_VK_VISIBLE_DEVICES` names it).
pub const VULKAN_BACKEND: bool = cfg!(feature = "vulkan");

/// Whether a GPU backend (CUDA, Vulkan, Metal) is compiled in: what `-ngl`
/// offloads to, where a device is found ([`gpu_devices`]).
pub const GPU_BACKEND: bool = cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal"));

/// Whether host memory bounds a run with `n_gpu_layers` offloaded: every
/// layer on the CPU, or no GPU backend compiled in.
pub fn host_memory_bounds(n_gpu_layers: u32) -> bool {
    !GPU_BACKEND || n_gpu_layers == 0
}

impl Engine {
    /// Loads a GGUF model as `settings` say: `n_gpu_layers` layers offloaded
    /// (spread over the GPUs as `gpu_split` says) where a GPU backend was
    /// compiled in, its weights mapped from the file or read as `mmap` says.
    pub fn load(path: &Path, settings: &Settings) -> Result<Engine, EngineError> {
        let (n_gpu_layers, split, mmap) = (settings.n_gpu_layers, settings.gpu_split, settings.mmap);
        let backend = backend()?;
        let load_error = |message: String| EngineError::ModelLoad { path: path.to_owned(), message };
        if !path.exists() {
            return Err(load_error("no such file".into()));
        }
        let (weights, layers, output) = check_model_file(path)?;
        // llama.cpp checks -mg (whatever -ngl) only by failing to load.
        if GPU_BACKEND && split.mode.uses_main_gpu() {
            let devices = gpu_devices()?;
            if !devices.is_empty() {
                check_main_gpu(devices, split.main_gpu)?;
            }
        }
        if GPU_BACKEND && n_gpu_layers > 0 {
            let needed = offloaded_bytes(weights, layers, n_gpu_layers);
            if let Some((device, available)) = gpu_memory(split)?.filter(|&(_, free)| needed > free) {
                return Err(EngineError::ModelTooLargeForDevice { path: path.to_owned(), device, n_gpu_layers, needed, available });
            }
        }
        let stamp = stamp(path).map_err(|e| load_error(e.to_string()))?;
        let mut params = LlamaModelParams::default().with_n_gpu_layers(n_gpu_layers).with_split_mode(match split.mode {
            SplitMode::None => LlamaSplitMode::None,
            SplitMode::Layer => LlamaSplitMode::Layer,
            SplitMode::Row => LlamaSplitMode::Row,
            SplitMode::Tensor => LlamaSplitMode::Tensor,
        });
        // Checked above where llama.cpp reads it.
        params = params.with_main_gpu(i32::try_from(split.main_gpu).unwrap_or(i32::MAX));
        if mmap == Mmap::Off {
            params = params.with_use_mmap(false);
        }
        // Otherwise llama.cpp's own choice: mapped, unless a device cannot map.
        let release = (mmap == Mmap::Auto).then(|| memory::PageRelease::new(path)).flatten();
        if let Some(mut during) = release.clone() {
            params = params.with_progress_callback(move |progress| {
                during.progress(progress);
                true
            });
        }
        memory::take_buffers();
        memory::take_errors();
        let refusal = || memory::take_errors().unwrap_or_else(|| "llama.cpp refused it and logged no reason".to_owned());
        // This load's own mappings of the file (another engine of the same
        // file has its own, freed with it): those that were not there before.
        let (model, own_mappings) = {
            let _mappings = memory::mappings_lock();
            let before = memory::file_mappings(path);
            // llama-cpp-2's error says only "null result from llama cpp".
            let model = LlamaModel::load_from_file(backend, path, &params)
                .map_err(|_| EngineError::ModelRefused { path: path.to_owned(), reason: refusal() })?;
            // The last tensor's pages, read after the last progress call.
            if let Some(release) = &release {
                release.release();
            }
            let mut own = memory::file_mappings(path);
            own.retain(|m| !before.contains(m));
            (model, own)
        };
        let weights = memory::take_buffers().into_iter().filter(|b| b.holds == BufferUse::Weights).collect();
        let pages_released = release.is_some_and(|r| r.found());
        // On the CPU, where the fast kernel runs, the engine may project the
        // rows it reads itself (score.rs checks it gives llama.cpp's bits).
        // Not for recurrent or hybrid models, whose caches may split a
        // decode into micro-batches of their own order.
        let on_cpu = !GPU_BACKEND || n_gpu_layers == 0;
        let plain = !model.is_recurrent() && !model.is_hybrid();
        let output =
            output.filter(|_| on_cpu && plain && project::fast_kernel()).and_then(|t| project::OutputMatrix::map(path, t, &own_mappings));
        Ok(Engine {
            backend,
            model: std::mem::ManuallyDrop::new(model),
            path: path.to_owned(),
            stamp,
            mmap,
            pages_released,
            weights,
            longest_token: OnceLock::new(),
            projector: None,
            output,
        })
    }

    /// Leaves the output projection of the rows read to llama.cpp, where the
    /// engine would compute it itself (project.rs): for comparing the two.
    /// Every run compares them on its first micro-batch that reads rows, and
    /// keeps llama.cpp's where a logit differs.
    pub fn leave_projection_to_llama(&mut self) {
        self.output = None;
    }

    /// Where memory went: the weights' buffers, a context's (`context`,
    /// from [`ScoreSummary::context_buffers`]), and the largest resident `sample`.
    pub fn memory_report(&self, context: &[Buffer], sample: Option<Resident>) -> MemoryReport {
        MemoryReport {
            model_file: self.model_bytes(),
            projector_file: self.projector.as_ref().map(vision::Projector::bytes),
            mmap: self.mmap,
            pages_released: self.pages_released,
            buffers: self
                .weights
                .iter()
                .chain(self.projector.iter().flat_map(vision::Projector::buffers))
                .chain(context)
                .cloned()
                .collect(),
            peak: memory::peak_resident(),
            largest_sample: sample,
        }
    }

    /// The model file this engine loaded.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model file's size at load.
    pub fn model_bytes(&self) -> u64 {
        self.stamp.0
    }

    /// The context the model was trained on (its GGUF's `ARCH.context_length`),
    /// where the metadata gives one: positions past it are extrapolated.
    pub fn training_context(&self) -> Option<usize> {
        let arch = self.model.meta_val_str("general.architecture").ok()?;
        // Not n_ctx_train(), which panics on a length past i32; 0 says nothing.
        self.model.meta_val_str(&format!("{arch}.context_length")).ok()?.parse().ok().filter(|&n| n > 0)
    }

    /// Bytes of KV cache `plan`'s context takes in the types of `kv` (see
    /// [`Engine::kv_bytes_per_token`]).
    pub fn kv_bytes(&self, plan: &Plan, kv: KvCache) -> u64 {
        plan.n_ctx.saturating_mul(self.kv_bytes_per_token(kv))
    }

    /// Fails if the model file's size or modification time differ from when
    /// it was loaded: call it when a run ends, before reporting its results.
    pub fn check_unchanged(&self) -> Result<(), EngineError> {
        let changed = |what: String| EngineError::ModelChanged { path: self.path.clone(), what };
        let now = stamp(&self.path).map_err(|e| changed(e.to_string()))?;
        if now.0 != self.stamp.0 {
            return Err(changed(format!("{} bytes at load, {} now", self.stamp.0, now.0)));
        }
        if now.1 != self.stamp.1 {
            return Err(changed("its modification time moved".into()));
        }
        Ok(())
    }

    /// Bytes of KV cache one token takes in the types of `kv`, every layer:
    /// an upper bound, since sliding-window layers keep fewer cells and a
    /// quantised type is counted as f16.
    pub fn kv_bytes_per_token(&self, kv: KvCache) -> u64 {
        let model = &self.model;
        let arch = model.meta_val_str("general.architecture").unwrap_or_default();
        let head = u64::from(model.n_embd().max(1) as u32) / u64::from(model.n_head().max(1));
        let length =
            |key: &str| model.meta_val_str(&format!("{arch}.attention.{key}")).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(head);
        // Saturating: absurd metadata must give a huge estimate, not wrap to a small one.
        let values = length("key_length")
            .saturating_mul(kv.k.bytes_bound())
            .saturating_add(length("value_length").saturating_mul(kv.v.bytes_bound()));
        u64::from(model.n_layer()).saturating_mul(u64::from(model.n_head_kv())).saturating_mul(values)
    }

    /// Refuses a plan whose context llama.cpp cannot index, or whose KV cache
    /// would not fit in the memory available (checked where every layer is
    /// on the CPU), before anything is allocated.
    pub fn check_memory(&self, plan: &Plan, settings: &Settings) -> Result<(), EngineError> {
        let (n_ctx, n_gpu_layers) = (plan.n_ctx, settings.n_gpu_layers);
        let per_token = self.kv_bytes_per_token(settings.kv_cache);
        let needed = self.kv_bytes(plan, settings.kv_cache);
        if host_memory_bounds(n_gpu_layers) {
            if let Some(available) = available_memory().filter(|&a| needed > a) {
                return Err(EngineError::ContextTooLarge { n_ctx, per_token, needed, available });
            }
        } else if let Some((device, available)) = gpu_memory(settings.gpu_split)? {
            // The KV cache of offloaded layers lives on the devices, beside
            // the weights already there (which their free memory has lost).
            let on_device = offloaded_share(needed, u64::from(self.model.n_layer()), n_gpu_layers);
            if on_device > available {
                return Err(EngineError::ContextTooLargeForDevice { n_ctx, device, needed: on_device, available });
            }
        }
        Ok(())
    }

    /// The text of each token of `text` as the model splits it (no BOS,
    /// special text not parsed), for tokenisation audits.
    fn token_pieces(&self, text: &str) -> Vec<Vec<u8>> {
        let vocab = self.model.vocab();
        vocab.tokenize(text.as_bytes(), false, false).into_iter().map(|t| vocab.token_to_piece(t, false, None)).collect()
    }

    /// A task context's text as the engine tokenises it, and its tokens'
    /// text, for tokenisation audits: after its last image marker where it
    /// has one (what precedes is its media prefix, tokenised by mtmd), else
    /// all of it (no BOS, special text not parsed).
    pub fn context_pieces<'t>(&self, context: &'t str) -> (&'t str, Vec<Vec<u8>>) {
        let text = &context[vision::media_end(context).unwrap_or(0)..];
        (text, self.token_pieces(text))
    }

    /// Tokenises text as a server does (llama-server, llama-cpp-python):
    /// special tokens written out in the text (`<bos>`) are read as such; no
    /// BOS is added (see [`Engine::bos`]).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        check_text_length(None, text.len())?;
        Ok(self.model.vocab().tokenize(text.as_bytes(), false, true).into_iter().map(|t| t.0 as u32).collect())
    }

    /// The text of tokens, special tokens written out; every id must be
    /// below [`Engine::n_vocab`].
    pub fn detokenize(&self, tokens: &[u32]) -> Vec<u8> {
        let tokens: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t as i32)).collect();
        self.model.vocab().detokenize(&tokens, false, true)
    }

    /// Refuses, before they are tokenised, the texts (task index, bytes) that
    /// cannot fit `limit` tokens however they tokenise: a text of B bytes is at
    /// least B / (2 L) tokens, L the vocabulary's longest token in bytes (the 2
    /// leaves room for a normaliser that maps more input to less token text).
    /// A prompt of megabytes is refused here in microseconds, where
    /// tokenising it would take seconds and gigabytes first.
    pub fn refuse_by_bytes(&self, texts: impl IntoIterator<Item = (usize, usize)>, limit: usize) -> Result<(), EngineError> {
        let per_token = 2 * *self.longest_token.get_or_init(|| (0..self.n_vocab()).map(|t| self.piece(t).len()).max().unwrap_or(1).max(1));
        let too_long: Vec<(usize, usize)> =
            texts.into_iter().map(|(task, bytes)| (task, bytes.div_ceil(per_token))).filter(|&(_, tokens)| tokens > limit).collect();
        if too_long.is_empty() {
            return Ok(());
        }
        Err(EngineError::TaskTooLongByBytes { tasks: too_long, n_ctx: limit })
    }

    /// One token's text, special tokens written out; `token` must be below
    /// [`Engine::n_vocab`].
    pub fn piece(&self, token: u32) -> Vec<u8> {
        self.model.vocab().token_to_piece(LlamaToken(token as i32), true, None)
    }

    /// The BOS token, where the model's tokenizer adds one to every text.
    pub fn bos(&self) -> Option<u32> {
        let vocab = self.model.vocab();
        (vocab.should_add_bos() && vocab.bos().0 >= 0).then(|| vocab.bos().0 as u32)
    }

    /// The model's BOS and EOS tokens, added or not (`None` where it has none).
    pub fn special_tokens(&self) -> (Option<u32>, Option<u32>) {
        let vocab = self.model.vocab();
        let id = |t: LlamaToken| u32::try_from(t.0).ok().filter(|&t| t < self.n_vocab());
        (id(vocab.bos()), id(vocab.eos()))
    }

    /// Whether a token ends generation (EOS, EOT and the like).
    pub fn is_end_of_generation(&self, token: u32) -> bool {
        self.model.vocab().is_eog(LlamaToken(token as i32))
    }

    /// Tokenises tasks (given with their file indices) and refuses any that
    /// llama-perplexity would mis-score.
    pub fn prepare(&self, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
        prepare::prepare(&self.model, tasks)
    }

    /// Loads a vision projector (`--mmproj`, llama.cpp's mtmd format) for this
    /// model, with `threads` for its image encoder: tasks prepared with
    /// [`Engine::prepare_images`] may then hold images.
    pub fn attach_projector(&mut self, path: &Path, threads: i32) -> Result<(), EngineError> {
        self.projector = Some(vision::Projector::load(&self.model, path, threads)?);
        Ok(())
    }

    /// The projector attached, by its file.
    pub fn projector(&self) -> Option<&Path> {
        self.projector.as_ref().map(vision::Projector::path)
    }

    /// Tokenises tasks as [`Engine::prepare`] does, with their images:
    /// `images[i]` are the file bytes (PNG, JPEG, BMP, GIF and the other
    /// formats llama.cpp reads) of the images at `tasks[i]`'s
    /// [`IMAGE_MARKER`]s, in order. Needs a projector
    /// ([`Engine::attach_projector`]) where any task has an image.
    pub fn prepare_images(
        &self,
        tasks: &[(usize, Task<'_>)],
        images: &[Vec<std::sync::Arc<[u8]>>],
    ) -> Result<Vec<PreparedTask>, EngineError> {
        assert_eq!(tasks.len(), images.len(), "one list of images per task");
        match &self.projector {
            Some(projector) => prepare::prepare_images(&self.model, projector, tasks, images),
            None => match tasks.iter().zip(images).find(|((_, t), i)| !i.is_empty() || t.question.contains(IMAGE_MARKER)) {
                Some(((task, _), _)) => Err(EngineError::NoProjector { task: *task }),
                None => self.prepare(tasks),
            },
        }
    }

    /// Tokenises tasks as lm-evaluation-harness does its requests: each option
    /// scores the tokens of `question + " " + option` after the question's.
    pub fn prepare_contexts(&self, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
        prepare::prepare_contexts(&self.model, tasks)
    }

    /// Tokenises Winogrande tasks: the question is a sentence with a `_`
    /// that each of the two options fills; the sentence after it is scored.
    pub fn prepare_blanks(&self, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
        prepare::prepare_blanks(&self.model, tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::offloaded_bytes;

    #[test]
    fn offloaded_weights_are_the_files_share_by_layer() {
        // 18 blocks and the output: 19 equal shares of 1,900 bytes.
        assert_eq!(offloaded_bytes(1_900, Some(18), 0), 0);
        assert_eq!(offloaded_bytes(1_900, Some(18), 9), 900);
        assert_eq!(offloaded_bytes(1_900, Some(18), 18), 1_800);
        // The output layer too, and any -ngl past it.
        assert_eq!(offloaded_bytes(1_900, Some(18), 19), 1_900);
        assert_eq!(offloaded_bytes(1_900, Some(18), 999), 1_900);
        // A model that does not say its blocks: all of it, the safe side.
        assert_eq!(offloaded_bytes(1_900, None, 1), 1_900);
        // No overflow at the largest sizes.
        assert_eq!(offloaded_bytes(u64::MAX, Some(1), 1), u64::MAX / 2);
    }
}
