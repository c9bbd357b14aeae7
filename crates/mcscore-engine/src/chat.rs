//! What the engine knows of chat templates: the template a GGUF carries,
//! llama.cpp's built-in ones (rendered by `llama_chat_apply_template`), and
//! tasks tokenised behind a rendered prompt with exactly one BOS.

use std::ffi::CStr;

use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate};
use llama_cpp_2::token::LlamaToken;
use mcscore_format::Task;
use rayon::prelude::*;

use crate::prepare::{split_common_prefix, PreparedTask};
use crate::LlamaCause;
use crate::{Engine, EngineError};

/// Where a chat prompt's one BOS came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BosSource {
    /// The template wrote it (`{{ bos_token }}`); the tokenizer adds none.
    Template,
    /// The tokenizer added it: the template wrote none and the model wants one.
    Tokenizer,
    /// Neither: the model's tokenizer adds no BOS and the template writes none.
    Neither,
}

impl BosSource {
    /// Its name in logs and reports: `template`, `tokenizer` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            BosSource::Template => "template",
            BosSource::Tokenizer => "tokenizer",
            BosSource::Neither => "none",
        }
    }
}

/// The names of llama.cpp's built-in chat templates, sorted.
pub fn builtin_templates() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(read_builtin_templates)
}

fn read_builtin_templates() -> Vec<String> {
    #[allow(unsafe_code)]
    // SAFETY: llama_chat_builtin_templates writes at most `len` pointers to
    // static, NUL-terminated names (a map in llama.cpp's data, never freed)
    // and returns how many it has; a first call with len 0 writes nothing.
    let names = unsafe {
        let count = llama_cpp_sys_2::llama_chat_builtin_templates(std::ptr::null_mut(), 0).max(0) as usize;
        let mut names: Vec<*const std::ffi::c_char> = vec![std::ptr::null(); count];
        let written = llama_cpp_sys_2::llama_chat_builtin_templates(names.as_mut_ptr(), count).max(0) as usize;
        names.truncate(written.min(count));
        names.into_iter().filter(|p| !p.is_null()).map(|p| CStr::from_ptr(p).to_string_lossy().into_owned()).collect::<Vec<_>>()
    };
    let mut names = names;
    names.sort();
    names
}

impl Engine {
    /// The Jinja chat template the GGUF carries (`tokenizer.chat_template`), if any.
    pub fn chat_template(&self) -> Result<Option<String>, EngineError> {
        let Ok(template) = self.model.chat_template(None) else { return Ok(None) };
        let text = template.to_string().map_err(|e| EngineError::ChatTemplate {
            name: format!("{} (its tokenizer.chat_template)", self.path.display()),
            message: "not UTF-8".into(),
            source: Some(Box::new(e)),
        })?;
        Ok(Some(text).filter(|t| !t.is_empty()))
    }

    /// Renders `messages` (role, content) with llama.cpp's built-in template
    /// `name` (one of [`builtin_templates`]), opening the assistant's turn
    /// with `add_assistant`.
    pub fn apply_builtin_template(&self, name: &str, messages: &[(&str, &str)], add_assistant: bool) -> Result<String, EngineError> {
        let fail = |message: &str, source: Option<LlamaCause>| EngineError::ChatTemplate {
            name: name.to_owned(),
            message: message.to_owned(),
            source,
        };
        if !builtin_templates().iter().any(|n| n == name) {
            return Err(fail("not one of llama.cpp's built-in templates", None));
        }
        // llama.cpp renders into a buffer of twice the messages' bytes, which
        // llama-cpp-2 requires to fit an i32: bound their sum, not each.
        crate::check_text_length(None, messages.iter().map(|(role, content)| role.len() + content.len()).sum())?;
        let template = LlamaChatTemplate::new(name).map_err(|e| fail("llama.cpp refused its name", Some(Box::new(e))))?;
        let messages: Vec<LlamaChatMessage> = messages
            .iter()
            .map(|(role, content)| LlamaChatMessage::new((*role).to_owned(), (*content).to_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| fail("a NUL byte in a message", Some(Box::new(e))))?;
        if messages.is_empty() {
            return Err(fail("no messages", None));
        }
        self.model
            .apply_chat_template(&template, &messages, add_assistant)
            .map_err(|e| fail("llama.cpp could not apply it", Some(Box::new(e))))
    }

    /// The text of the model's BOS and EOS tokens (`None` where it has
    /// none): a template's `bos_token` and `eos_token`, a server's tokenizer info.
    pub fn special_texts(&self) -> (Option<String>, Option<String>) {
        let (bos, eos) = self.special_tokens();
        let text = |t: Option<u32>| t.map(|t| String::from_utf8_lossy(&self.piece(t)).into_owned());
        (text(bos), text(eos))
    }

    /// Whether `text` holds the text of a special token (`<start_of_turn>`,
    /// `<|im_end|>`): inside a chat prompt it would be read as that token.
    pub fn has_special_text(&self, text: &str) -> Result<bool, EngineError> {
        crate::check_text_length(None, text.len())?;
        let vocab = self.model.vocab();
        Ok(vocab.tokenize(text.as_bytes(), false, true) != vocab.tokenize(text.as_bytes(), false, false))
    }

    /// Tokenises each task behind its rendered chat prompt: `prompts[i] +
    /// option` for every option of `tasks[i]`, special text of the template
    /// read as special tokens, and exactly one BOS (see [`BosSource`]). The
    /// task's own text must hold no special-token text ([`Engine::has_special_text`]).
    pub fn prepare_chat(&self, tasks: &[(usize, Task<'_>)], prompts: &[String]) -> Result<(Vec<PreparedTask>, BosSource), EngineError> {
        if tasks.len() != prompts.len() {
            return Err(EngineError::InvalidPrompt {
                prompt: prompts.len(),
                message: format!("{} prompts for {} tasks: one per task", prompts.len(), tasks.len()),
            });
        }
        let prepared: Vec<(PreparedTask, BosSource)> = tasks
            .par_iter()
            .zip(prompts.par_iter())
            .map(|((index, task), prompt)| prepare_one(self, *index, task, prompt))
            .collect::<Result<_, _>>()?;
        let bos = prepared.first().map_or(BosSource::Neither, |p| p.1);
        if let Some((task, other)) = prepared.iter().find(|p| p.1 != bos) {
            return Err(EngineError::ChatBos {
                task: task.index,
                message: format!("its BOS comes from {:?}, the first task's from {bos:?}", other),
            });
        }
        Ok((prepared.into_iter().map(|p| p.0).collect(), bos))
    }
}

impl Engine {
    /// The tokens of a line break as the model writes one: its newline
    /// token (a SentencePiece vocabulary would otherwise tokenise "\n"
    /// alone with a leading space), or the tokenizer's where it has none.
    pub fn newline(&self) -> Vec<u32> {
        let vocab = self.model.vocab();
        match u32::try_from(vocab.nl().0).ok().filter(|&t| t < self.n_vocab()) {
            Some(token) => vec![token],
            None => vocab.tokenize(b"\n", false, false).into_iter().map(|t| t.0 as u32).collect(),
        }
    }

    /// Tokenises a whole prompt to generate after: special-token text read
    /// as the tokens where `special` (a rendered chat prompt), and exactly
    /// one BOS, the text's own or the tokenizer's, as [`Engine::prepare_chat`] gives.
    pub fn tokenize_prompt(&self, text: &str, special: bool) -> Result<Vec<u32>, EngineError> {
        crate::check_text_length(None, text.len())?;
        let mut tokens = self.model.vocab().tokenize(text.as_bytes(), false, special);
        let bos = self.special_tokens().0.map(|b| LlamaToken(b as i32));
        let leading = tokens.iter().take_while(|&&t| Some(t) == bos).count();
        let written = bos.is_some_and(|b| tokens.contains(&b));
        match (leading, self.bos()) {
            (0, Some(added)) if !written => tokens.insert(0, LlamaToken(added as i32)),
            (0 | 1, _) => {}
            (n, _) => {
                return Err(EngineError::InvalidPrompt { prompt: 0, message: format!("the rendered prompt begins with {n} BOS tokens") })
            }
        }
        Ok(tokens.into_iter().map(|t| t.0 as u32).collect())
    }
}

fn prepare_one(engine: &Engine, index: usize, task: &Task<'_>, prompt: &str) -> Result<(PreparedTask, BosSource), EngineError> {
    if task.options().len() < 2 {
        return Err(EngineError::OneOption { task: index });
    }
    let longest = task.options().iter().map(|o| o.len()).max().unwrap_or(0);
    crate::check_text_length(Some(index), prompt.len() + longest)?;
    if engine.has_special_text(task.question)? {
        return Err(EngineError::SpecialText { task: index, what: "the question".into() });
    }
    for (option, text) in task.options().iter().enumerate() {
        if engine.has_special_text(text)? {
            return Err(EngineError::SpecialText { task: index, what: format!("option {option}") });
        }
    }
    let vocab = engine.model.vocab();
    // The model's BOS, and whether its tokenizer adds one.
    let bos = engine.special_tokens().0.map(|b| LlamaToken(b as i32));
    let added = engine.bos().map(|b| LlamaToken(b as i32));
    let mut source = BosSource::Neither;
    let mut text = String::new();
    let mut sequences: Vec<Vec<LlamaToken>> = Vec::with_capacity(task.options().len());
    for option in task.options() {
        text.clear();
        text.push_str(prompt);
        text.push_str(option);
        let mut tokens = vocab.tokenize(text.as_bytes(), false, true);
        let leading = tokens.iter().take_while(|&&t| Some(t) == bos).count();
        // A BOS the template writes later (after a newline, or Llama 2's one
        // per turn) is its own: the tokenizer's would be a second.
        let written = bos.is_some_and(|b| tokens.contains(&b));
        source = match (leading, added) {
            (0, _) if written => BosSource::Template,
            (0, Some(added)) => {
                tokens.insert(0, added);
                BosSource::Tokenizer
            }
            (0, None) => BosSource::Neither,
            (1, _) => BosSource::Template,
            (n, _) => return Err(EngineError::ChatBos { task: index, message: format!("the rendered prompt begins with {n} BOS tokens") }),
        };
        sequences.push(tokens);
    }
    Ok((split_common_prefix(index, task, sequences)?, source))
}
