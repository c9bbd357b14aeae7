//! Tokenises tasks the way llama-perplexity does and finds each task's common
//! prefix, refusing up front the tasks it would mis-score.

use std::ops::Range;
use std::sync::Arc;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use mcscore_format::Task;
use rayon::prelude::*;

use crate::vision::{MediaPrefix, Projector};
use crate::EngineError;

/// One task, tokenised: the prefix every option shares, evaluated once, and
/// each option's tokens after it, each scored by its own sequence.
#[derive(Debug, Clone)]
pub struct PreparedTask {
    /// The task's index in its file.
    pub index: usize,
    pub(crate) prefix: Vec<LlamaToken>,
    pub(crate) continuations: Vec<Vec<LlamaToken>>,
    /// Per option: the continuation tokens that count towards its score
    /// (all of them, but for Winogrande's sentence after the blank).
    pub(crate) scored: Vec<Range<usize>>,
    /// Per option: whether its label is 1 (llama.cpp's notion of correct).
    pub labels: Vec<bool>,
    /// Per option: the characters of its text (Winogrande: of the sentence
    /// after the blank), for length-normalised scores.
    pub(crate) option_chars: Vec<u32>,
    /// Per option: the bytes of that text.
    pub(crate) option_bytes: Vec<u32>,
    /// The context up to the end of its last image, where it has images:
    /// decoded through the projector, its positions the prefix's first
    /// (which hold placeholders, never decoded as tokens).
    pub(crate) media: Option<Arc<MediaPrefix>>,
}

impl PreparedTask {
    /// Tokens one evaluation of this task decodes: the prefix, then each
    /// option's tokens but its last, which predicts nothing that is scored.
    pub fn required_tokens(&self) -> usize {
        // every continuation is non-empty: an option with nothing after the prefix was refused (PrefixOption)
        self.prefix.len() + self.continuations.iter().map(|c| c.len() - 1).sum::<usize>()
    }

    /// Tokens its longest sequence decodes: the prefix, then an option's
    /// tokens but its last. Its positions run from 0 to one less.
    pub fn longest_sequence(&self) -> usize {
        self.prefix.len() + self.continuations.iter().map(|c| c.len() - 1).max().unwrap_or(0)
    }

    /// How many options it has.
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
    let sequences = whole_sequences(model, index, task, true)?;
    split_common_prefix(index, task, sequences)
}

/// Each option's `question + " " + option`, tokenised with the model's BOS
/// rule (`special`: llama-perplexity's) and special text not parsed; a task
/// with one option or past the text limit is refused first.
fn whole_sequences(model: &LlamaModel, index: usize, task: &Task<'_>, special: bool) -> Result<Vec<Vec<LlamaToken>>, EngineError> {
    if task.options().len() < 2 {
        // The same rule as the task-file validator's (a lenient read lets it through).
        return Err(EngineError::OneOption { task: index });
    }
    let longest = task.options().iter().map(|o| o.len()).max().unwrap_or(0);
    crate::check_text_length(Some(index), task.question.len() + 1 + longest)?;
    let vocab = model.vocab();
    let mut text = String::new();
    Ok(task
        .options()
        .iter()
        .map(|option| {
            text.clear();
            text.push_str(task.question);
            text.push(' ');
            text.push_str(option);
            vocab.tokenize(text.as_bytes(), special, false)
        })
        .collect())
}

/// A task from each option's whole token sequence: the tokens all options
/// share become the prefix, decoded once; each option scores the rest.
pub(crate) fn split_common_prefix(index: usize, task: &Task<'_>, sequences: Vec<Vec<LlamaToken>>) -> Result<PreparedTask, EngineError> {
    let shortest = sequences.iter().map(Vec::len).min().unwrap_or(0);
    // i < shortest, the length of every sequence
    let common = (0..shortest).take_while(|&i| sequences.iter().all(|s| s[i] == sequences[0][i])).count();
    if let Some(option) = sequences.iter().position(|s| s.len() == common) {
        // llama-perplexity reads past the end of this option's tokens here.
        return Err(EngineError::PrefixOption { task: index, option, text: task.options()[option].to_owned() });
    }
    if common == 0 {
        return Err(EngineError::NoCommonPrefix { task: index });
    }
    let prefix = sequences[0][..common].to_vec();
    let continuations: Vec<Vec<LlamaToken>> = sequences.into_iter().map(|s| s[common..].to_vec()).collect();
    Ok(PreparedTask {
        index,
        prefix,
        scored: continuations.iter().map(|c| 0..c.len()).collect(),
        continuations,
        labels: (0..task.options().len()).map(|k| task.is_correct(k)).collect(),
        // every caller checked the texts against MAX_TEXT_BYTES (4 MiB), far below u32::MAX
        option_chars: task.options().iter().map(|o| o.chars().count() as u32).collect(),
        option_bytes: task.options().iter().map(|o| o.len() as u32).collect(),
        media: None,
    })
}

/// Tokenises tasks as [`prepare`] does, each with its images (`images[i]`:
/// those of `tasks[i]`, in the order of its context's markers) decoded
/// through `projector`: the context up to the end of its last image is the
/// task's media prefix, and what follows it, then each option, is tokenised
/// without a BOS and split into the shared prefix and the options as
/// llama-perplexity splits them. A task without markers and images is
/// prepared as [`prepare`] does.
pub(crate) fn prepare_images(
    model: &LlamaModel,
    projector: &Projector,
    tasks: &[(usize, Task<'_>)],
    images: &[Vec<Arc<[u8]>>],
) -> Result<Vec<PreparedTask>, EngineError> {
    tasks
        .par_iter()
        .zip(images)
        .map(|((index, task), images)| {
            let Some((media, end)) = projector.media_prefix(*index, task.question, images)? else {
                return prepare_one(model, *index, task);
            };
            if task.options().len() < 2 {
                return Err(EngineError::OneOption { task: *index });
            }
            let longest = task.options().iter().map(|o| o.len()).max().unwrap_or(0);
            crate::check_text_length(Some(*index), task.question.len() + 1 + longest)?;
            let rest = &task.question[end..];
            let vocab = model.vocab();
            let sequences: Vec<Vec<LlamaToken>> =
                task.options().iter().map(|o| vocab.tokenize(format!("{rest} {o}").as_bytes(), false, false)).collect();
            // The first option token is read from the row of the token before
            // it, which a fill decodes: text (at least a shared token) must
            // follow the last image.
            let first = sequences.first().and_then(|s| s.first());
            if first.is_none() || sequences.iter().any(|s| s.first() != first) {
                return Err(EngineError::NothingAfterImage { task: *index });
            }
            let mut prepared = split_common_prefix(*index, task, sequences)?;
            prepared.prefix.splice(0..0, std::iter::repeat_n(PLACEHOLDER, media.positions));
            prepared.media = Some(Arc::new(media));
            Ok(prepared)
        })
        .collect()
}

/// What a media prefix's positions hold in a prepared task: never decoded
/// (the projector decodes them), and no token's id.
const PLACEHOLDER: LlamaToken = LlamaToken(-1);

/// Tokenises tasks as lm-evaluation-harness tokenises its requests
/// (`_encode_pair`): the question alone and the whole text `question + " " +
/// option`, each with the model's BOS rule; the model reads the question's
/// own tokens and then each option's tokens of the whole after the
/// question's count, and all of those are scored, whatever the options
/// share. So a first word every option has counts, as in lm-eval, where
/// llama-perplexity's rule leaves it out. An empty question (acc_mutual_info's
/// unconditional requests) is lm-eval's prefix token: the BOS, else the EOS.
pub(crate) fn prepare_contexts(model: &LlamaModel, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
    tasks.par_iter().map(|(index, task)| prepare_context(model, *index, task)).collect()
}

fn prepare_context(model: &LlamaModel, index: usize, task: &Task<'_>) -> Result<PreparedTask, EngineError> {
    let vocab = model.vocab();
    let mut context = vocab.tokenize(task.question.as_bytes(), true, false);
    let continuations: Vec<Vec<LlamaToken>> = if context.is_empty() {
        // A model without a BOS: lm-eval conditions on its prefix token, then
        // reads the whole continuation.
        let bos = vocab.bos();
        context.push(if bos.0 >= 0 { bos } else { vocab.eos() });
        whole_sequences(model, index, task, false)?
    } else {
        let n = context.len();
        let wholes = whole_sequences(model, index, task, true)?;
        if let Some(option) = wholes.iter().position(|s| s.len() <= n) {
            return Err(EngineError::NothingAfterContext { task: index, option, text: task.options()[option].to_owned() });
        }
        // every whole is longer than the context (checked above)
        wholes.into_iter().map(|s| s[n..].to_vec()).collect()
    };
    if let Some(option) = continuations.iter().position(Vec::is_empty) {
        return Err(EngineError::NothingAfterContext { task: index, option, text: task.options()[option].to_owned() });
    }
    Ok(PreparedTask {
        index,
        prefix: context,
        scored: continuations.iter().map(|c| 0..c.len()).collect(),
        continuations,
        labels: (0..task.options().len()).map(|k| task.is_correct(k)).collect(),
        // checked against MAX_TEXT_BYTES (4 MiB) by whole_sequences, far below u32::MAX
        option_chars: task.options().iter().map(|o| o.chars().count() as u32).collect(),
        option_bytes: task.options().iter().map(|o| o.len() as u32).collect(),
        media: None,
    })
}

/// Llama-perplexity's Winogrande rule: below this many tokens after the shared
/// prefix, the option's own tokens are scored too.
const MIN_TRAILING_TOKENS: usize = 3;

/// Tokenises Winogrande tasks as llama-perplexity does: each option fills the
/// question's first `_`, and what is scored is the sentence after it (the
/// partial scoring of Trinh & Le), without its last token (the full stop).
/// Where either sentence has at most three tokens after the shared prefix, the
/// option's own tokens are scored as well.
pub(crate) fn prepare_blanks(model: &LlamaModel, tasks: &[(usize, Task<'_>)]) -> Result<Vec<PreparedTask>, EngineError> {
    tasks.par_iter().map(|(index, task)| prepare_blank(model, *index, task)).collect()
}

fn prepare_blank(model: &LlamaModel, index: usize, task: &Task<'_>) -> Result<PreparedTask, EngineError> {
    let options = task.options();
    if options.len() != 2 {
        return Err(EngineError::NotTwoOptions { task: index, options: options.len() });
    }
    let (first, second) = task.question.split_once('_').ok_or(EngineError::NoBlank { task: index })?;
    let longest = options.iter().map(|o| o.len()).max().unwrap_or(0);
    crate::check_text_length(Some(index), task.question.len() + longest)?;
    let vocab = model.vocab();
    let tokenize = |text: String| vocab.tokenize(text.as_bytes(), true, false);
    let sequences: Vec<Vec<LlamaToken>> = options.iter().map(|o| tokenize(format!("{first}{o}{second}"))).collect();
    let bases: Vec<usize> = options.iter().map(|o| tokenize(format!("{first}{o}")).len()).collect();
    let shortest = sequences.iter().map(Vec::len).min().unwrap_or(0);
    // two options (checked above), and i < shortest, the length of both
    let common = (0..shortest).take_while(|&i| sequences[0][i] == sequences[1][i]).count();
    if let Some(option) = sequences.iter().position(|s| s.len() == common) {
        return Err(EngineError::PrefixOption { task: index, option, text: options[option].to_owned() });
    }
    if common == 0 {
        return Err(EngineError::NoCommonPrefix { task: index });
    }
    // no sequence is common long (PrefixOption above), so each is longer
    let skip_option = sequences.iter().all(|s| s.len() - common > MIN_TRAILING_TOKENS);
    let mut scored = Vec::with_capacity(2);
    for (option, (sequence, &base)) in sequences.iter().zip(&bases).enumerate() {
        let start = if skip_option { base } else { common };
        if start >= sequence.len() {
            return Err(EngineError::NothingAfterBlank { task: index, option });
        }
        if start < common {
            // The option's tokens merge with the text after the blank, so
            // there is no token boundary where the blank ends.
            return Err(EngineError::BlankBoundary { task: index, option, text: options[option].to_owned() });
        }
        // common <= start < sequence.len() (both checked above), and end >= start
        let end = if sequence.len() - start > 1 { sequence.len() - 1 } else { sequence.len() };
        scored.push(start - common..end - common);
    }
    // second is part of the question, checked against MAX_TEXT_BYTES (4 MiB) with its len below
    let suffix_chars = second.chars().count() as u32;
    Ok(PreparedTask {
        index,
        prefix: sequences[0][..common].to_vec(),
        continuations: sequences.iter().map(|s| s[common..].to_vec()).collect(),
        scored,
        labels: (0..2).map(|k| task.is_correct(k)).collect(),
        option_chars: vec![suffix_chars; 2],
        option_bytes: vec![second.len() as u32; 2],
        media: None,
    })
}
