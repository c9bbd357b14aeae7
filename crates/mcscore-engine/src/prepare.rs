//! Tokenises tasks the way llama-perplexity does and finds each task's common
//! prefix, refusing up front the tasks it would mis-score.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use mcscore_format::Task;
use rayon::prelude::*;

use crate::EngineError;

/// One task, tokenised: the prefix every option shares, evaluated once, and
/// each option's tokens after it, each scored by its own sequence.
#[derive(Debug, Clone)]
pub struct PreparedTask {
    /// The task's index in its file.
    pub index: usize,
    pub(crate) prefix: Vec<LlamaToken>,
    pub(crate) continuations: Vec<Vec<LlamaToken>>,
    /// Per option: whether its label is 1 (llama.cpp's notion of correct).
    pub correct: Vec<bool>,
    pub option_chars: Vec<u32>,
    pub option_bytes: Vec<u32>,
}

impl PreparedTask {
    /// Tokens one evaluation of this task decodes: the prefix, then each
    /// option's tokens but its last, which predicts nothing that is scored.
    pub fn required_tokens(&self) -> usize {
        self.prefix.len() + self.continuations.iter().map(|c| c.len() - 1).sum::<usize>()
    }

    pub fn n_options(&self) -> usize {
        self.continuations.len()
    }
}

/// Tokenises `question + " " + option` for every option, with the model's BOS
/// rule and special text not parsed, exactly as llama-perplexity does.
pub(crate) fn prepare(model: &LlamaModel, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
    tasks.par_iter().map(|(index, task)| prepare_one(model, *index, task)).collect()
}

fn prepare_one(model: &LlamaModel, index: usize, task: &Task<'_>) -> Result<PreparedTask, EngineError> {
    if task.options().len() < 2 {
        // The same rule as the task-file validator's (a lenient read lets it through).
        return Err(EngineError::OneOption { task: index });
    }
    let vocab = model.vocab();
    let mut text = String::new();
    let sequences: Vec<Vec<LlamaToken>> = task
        .options()
        .iter()
        .map(|option| {
            text.clear();
            text.push_str(task.question);
            text.push(' ');
            text.push_str(option);
            vocab.tokenize(text.as_bytes(), true, false)
        })
        .collect();
    let shortest = sequences.iter().map(Vec::len).min().unwrap_or(0);
    let common = (0..shortest).take_while(|&i| sequences.iter().all(|s| s[i] == sequences[0][i])).count();
    if let Some(option) = sequences.iter().position(|s| s.len() == common) {
        // llama-perplexity reads past the end of this option's tokens here.
        return Err(EngineError::PrefixOption { task: index, option, text: task.options()[option].to_owned() });
    }
    if common == 0 {
        return Err(EngineError::NoCommonPrefix { task: index });
    }
    let prefix = sequences[0][..common].to_vec();
    let continuations = sequences.into_iter().map(|s| s[common..].to_vec()).collect();
    Ok(PreparedTask {
        index,
        prefix,
        continuations,
        correct: (0..task.options().len()).map(|k| task.is_correct(k)).collect(),
        option_chars: task.options().iter().map(|o| o.chars().count() as u32).collect(),
        option_bytes: task.options().iter().map(|o| o.len() as u32).collect(),
    })
}
