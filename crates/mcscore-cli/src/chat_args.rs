//! The chat-template flags of the scoring commands (`score`, `sweep`,
//! `compare --until-decided`): --chat-template, --system, --shots-as-turns.

use std::path::Path;

use mcscore_eval::chat::{ChatSpec, TemplateChoice};

use crate::UsageError;

#[derive(clap::Args, Clone)]
pub(crate) struct ChatArgs {
    /// Score inside a chat template: the question is the user's turn, the
    /// template's generation prompt opens the assistant's, and each option starts
    /// the answer (only its tokens are scored). `none` (default): no template, as
    /// llama-perplexity; `auto`: the GGUF's tokenizer.chat_template; a name of
    /// llama.cpp's built-in templates (chatml, gemma, llama3, ...: rendered by
    /// llama.cpp); or a Jinja file (`./NAME` for a file named like a built-in one).
    /// Jinja is rendered as Hugging Face's apply_chat_template renders it, with
    /// thinking off; exactly one BOS is kept. The log header and --json (sweep:
    /// its saved JSON) record the template's sha256, the first rendered prompt
    /// and every guard.
    #[arg(long, value_name = "auto|none|NAME|FILE", default_value = "none", value_parser = TemplateChoice::parse)]
    chat_template: TemplateChoice,
    /// A system turn before each question (needs --chat-template; some templates
    /// refuse one, Gemma's Jinja among them; llama.cpp's built-in gemma puts it in
    /// the user's turn).
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Score a k-shot file's solved examples as turns (each a user question and the
    /// assistant's answer) rather than inside the user's turn. K: the examples per
    /// question; without it, the count the file's manifest records (a manifest.json
    /// beside the file or in a folder above it, in the current folder, or mcscore's
    /// bundled one, matched by the file's sha256).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "manifest")]
    shots_as_turns: Option<String>,
}

impl ChatArgs {
    /// The chat spec for the task file `file` (whose sha256 finds its shots in the manifest).
    pub(crate) fn spec(&self, file: &Path) -> anyhow::Result<ChatSpec> {
        let none = self.chat_template == TemplateChoice::None;
        if none && self.system.is_some() {
            return Err(UsageError("--system needs --chat-template (without a template there is no system turn)".into()).into());
        }
        if none && self.shots_as_turns.is_some() {
            return Err(UsageError("--shots-as-turns needs --chat-template (without a template there are no turns)".into()).into());
        }
        let shots = match self.shots_as_turns.as_deref() {
            None => None,
            Some("manifest") => Some(manifest_shots(file)?),
            Some(k) => match k.parse::<usize>() {
                Ok(k) if k >= 1 => Some(k),
                _ => {
                    return Err(UsageError(format!(
                        "--shots-as-turns {k:?}: a number of examples, 1 or more (or no value: the manifest's)"
                    ))
                    .into())
                }
            },
        };
        let mut spec = ChatSpec::new(self.chat_template.clone());
        spec.system = self.system.clone();
        spec.shots = shots;
        Ok(spec)
    }

    /// Whether any chat flag was given.
    pub(crate) fn given(&self) -> bool {
        self.chat_template != TemplateChoice::None || self.system.is_some() || self.shots_as_turns.is_some()
    }

    /// The chat spec of a command whose prompts hold no shots (`why`).
    pub(crate) fn spec_without_shots(&self, why: &str) -> anyhow::Result<ChatSpec> {
        if self.shots_as_turns.is_some() {
            return Err(UsageError(format!("--shots-as-turns does not apply to {why}")).into());
        }
        self.spec(Path::new(""))
    }
}

/// The shots the manifest found for the task file `file` (beside it or
/// above it, in the working directory, or the bundled one) records.
fn manifest_shots(file: &Path) -> anyhow::Result<usize> {
    let sha256 = mcscore_format::sha256_file(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    mcscore_eval::chat::found_shots(file, &sha256).ok_or_else(|| {
        UsageError(format!(
            "--shots-as-turns: no manifest records shots for {} (it is not a k-shot file `mcscore build` wrote); give the count: --shots-as-turns K",
            file.display()
        ))
        .into()
    })
}
