//! The scoring engine: llama-perplexity's multiple-choice semantics over
//! llama.cpp (through `llama-cpp-2`), without its n_ctx × n_vocab logits
//! buffer, its `-np` trap or its silent failures.
//!
//! Flow: [`Engine::load`] → [`Engine::prepare`] (tokenise, common prefixes,
//! up-front refusals) → [`plan`] (pack tasks into decodes) → [`Engine::score`].

mod plan;
mod prepare;
mod score;
mod subset;
mod trie;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use mcscore_format::Task;

pub use plan::{plan, ContextSize, FlashAttention, Plan, Settings};
pub use prepare::PreparedTask;
pub use mcscore_metrics::OptionScore;
pub use score::{Completion, Run, TaskScores, TokenCounts};
pub use subset::select_tasks;

/// Why scoring could not run or finish. Every variant names the task (index in
/// the file) or the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("llama.cpp backend failed to initialise: {0}")]
    Backend(String),

    #[error("{}: the model does not load: {message}", path.display())]
    ModelLoad { path: PathBuf, message: String },

    #[error("llama.cpp could not create a context: {0}")]
    Context(String),

    #[error("{}", too_long_message(tasks, *n_ctx))]
    TaskTooLong { tasks: Vec<(usize, usize)>, n_ctx: usize },

    #[error("a task has {widest} options; llama.cpp allows at most {max} sequences")]
    TooManySequences { widest: usize, max: usize },

    #[error("task {task}: option {option} ({text:?}) tokenises to a prefix of every other option, so it has no token of its own to score (llama-perplexity reads out of bounds here and scores it 0)")]
    PrefixOption { task: usize, option: usize, text: String },

    #[error("task {task}: the options share no leading token (the model adds no BOS), so the first option token cannot be scored")]
    NoCommonPrefix { task: usize },

    #[error("decode failed in the batch starting at task {task}: {message}")]
    Decode { task: usize, message: String },

    #[error("task {task}: option {option} got a non-finite log-probability ({value})")]
    NonFinite { task: usize, option: usize, value: f64 },
}

impl EngineError {
    /// The task the error is about, where it is about one.
    pub fn task(&self) -> Option<usize> {
        match self {
            EngineError::PrefixOption { task, .. }
            | EngineError::NoCommonPrefix { task }
            | EngineError::Decode { task, .. }
            | EngineError::NonFinite { task, .. } => Some(*task),
            EngineError::TaskTooLong { tasks, .. } => tasks.first().map(|t| t.0),
            _ => None,
        }
    }
}

fn too_long_message(tasks: &[(usize, usize)], n_ctx: usize) -> String {
    let listed: Vec<String> = tasks.iter().take(5).map(|(i, t)| format!("task {i} needs {t} tokens")).collect();
    let more = if tasks.len() > 5 { format!(" and {} more", tasks.len() - 5) } else { String::new() };
    format!(
        "{} task{} do not fit the {n_ctx}-token context: {}{more}; raise -c, or pass -c auto to size the context to the longest task",
        tasks.len(),
        if tasks.len() == 1 { "" } else { "s" },
        listed.join(", ")
    )
}

/// llama.cpp's backend may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, EngineError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            if std::env::var_os("MCSCORE_LLAMA_LOG").is_none() {
                backend.void_logs();
            }
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| EngineError::Backend(e.clone()))
}

/// A loaded model, ready to score.
pub struct Engine {
    backend: &'static LlamaBackend,
    model: LlamaModel,
}

impl Engine {
    /// Loads a GGUF model, offloading `n_gpu_layers` layers where a GPU backend
    /// was compiled in.
    pub fn load(path: &Path, n_gpu_layers: u32) -> Result<Engine, EngineError> {
        let backend = backend()?;
        let load_error = |message: String| EngineError::ModelLoad { path: path.to_owned(), message };
        if !path.is_file() {
            return Err(load_error("no such file".into()));
        }
        let params = LlamaModelParams::default().with_n_gpu_layers(n_gpu_layers);
        let model = LlamaModel::load_from_file(backend, path, &params)
            .map_err(|e| load_error(format!("{e} (set MCSCORE_LLAMA_LOG=1 to see llama.cpp's log)")))?;
        Ok(Engine { backend, model })
    }

    /// The text of each token of `text` as the model splits it (no BOS,
    /// special text not parsed), for tokenisation audits.
    pub fn token_pieces(&self, text: &str) -> Vec<Vec<u8>> {
        let vocab = self.model.vocab();
        vocab.tokenize(text.as_bytes(), false, false).into_iter().map(|t| vocab.token_to_piece(t, false, None)).collect()
    }

    /// Tokenises tasks (given with their file indices) and refuses any that
    /// llama-perplexity would mis-score.
    pub fn prepare(&self, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
        prepare::prepare(&self.model, tasks)
    }
}
