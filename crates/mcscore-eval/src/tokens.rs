//! Does each option ID survive tokenisation as a token of its own, in the
//! context the letter scaffold puts it? A tokenizer that fuses `(A` or `A.`
//! hides the ID the model is asked to produce.

use std::path::Path;

use mcscore_datasets::formats::{Delimiter, PromptFormat, Separator};
use mcscore_datasets::Item;
use mcscore_engine::Engine;
use mcscore_format::IdSet;
use serde::Serialize;

use crate::EvalError;

/// One option-ID × delimiter pair, audited.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct Pair {
    /// The prompt format's name without its separator, IDs then delimiter
    /// (e.g. `upper.parens`).
    pub format: String,
    /// Tokens covering each option's label (e.g. `(A)`), per option.
    pub label_tokens: Vec<usize>,
    /// Per option: whether the bare ID is exactly one token.
    pub id_is_a_token: Vec<bool>,
    /// Some option's bare ID is not a token of its own (any of
    /// `id_is_a_token` false).
    pub flagged: bool,
}

/// Byte spans of the tokens, if their pieces spell `text` exactly.
fn spans(pieces: &[Vec<u8>], text: &str) -> Option<Vec<(usize, usize)>> {
    let mut at = 0;
    let mut out = Vec::with_capacity(pieces.len());
    for piece in pieces {
        out.push((at, at + piece.len()));
        at += piece.len();
    }
    (pieces.concat() == text.as_bytes()).then_some(out)
}

/// Per option: tokens covering its label, and whether its bare ID is exactly
/// one token; `None` if the pieces do not spell the prompt.
fn audit(prompt: &str, pieces: &[Vec<u8>], delimiter: Delimiter, ids: &[String], item: &Item) -> Option<(Vec<usize>, Vec<bool>)> {
    let spans = spans(pieces, prompt)?;
    let mut label_tokens = Vec::new();
    let mut id_is_a_token = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        let label = delimiter.label(id);
        let start = prompt.find(&format!("\n{label} {}", item.options[k]))? + 1;
        let end = start + label.len();
        let id_start = start + label.find(id.as_str())?;
        label_tokens.push(spans.iter().filter(|&&(a, b)| a < end && b > start).count());
        id_is_a_token.push(spans.contains(&(id_start, id_start + id.len())));
    }
    Some((label_tokens, id_is_a_token))
}

/// Where the audited prompt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A task file's prompt, the text the model reads from its start.
    Text,
    /// A VQA item's prompt as `sweep` renders it: after an image (and the
    /// text of each image's line), tokenised from where the image ends, as
    /// the engine reads a task with images.
    AfterImage,
}

/// The 16 option-ID × delimiter pairs of the letter scaffold in `layout`,
/// audited with `model`'s tokenizer.
pub fn audit_ids(model: &Path, layout: Layout) -> Result<Vec<Pair>, EvalError> {
    let engine = Engine::load(model, &mcscore_engine::Settings::on_cpu()).map_err(EvalError::Load)?;
    let item =
        Item { passage: None, stem: "Which one?".into(), options: ["red", "green", "blue", "yellow"].map(String::from).to_vec(), gold: 0 };
    let mut pairs = Vec::new();
    for ids in IdSet::ALL {
        for delimiter in Delimiter::ALL {
            let format = PromptFormat { ids, delimiter, separator: Separator::Newline };
            let (mut prompt, option_ids, _) = format.render(&item, 0, false).expect("4 options have IDs in every set");
            if layout == Layout::AfterImage {
                prompt.insert_str(0, &mcscore_datasets::vqa::preamble(1, None));
            }
            let (text, pieces) = engine.context_pieces(&prompt);
            let (label_tokens, id_is_a_token) =
                audit(text, &pieces, delimiter, &option_ids, &item).ok_or_else(|| EvalError::Unauditable { path: model.to_owned() })?;
            let flagged = id_is_a_token.iter().any(|&ok| !ok);
            pairs.push(Pair { format: format.name().trim_end_matches(".newline").to_owned(), label_tokens, id_is_a_token, flagged });
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(parts: &[&str]) -> Vec<Vec<u8>> {
        parts.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_fused_id_is_flagged() {
        let item = Item { passage: None, stem: "Q".into(), options: vec!["x".into(), "y".into()], gold: 0 };
        let ids = vec!["A".to_owned(), "B".to_owned()];
        let prompt = "Question: Q\n(A) x\n(B) y\nAnswer:";
        // "(A" fused into one token; "B" on its own.
        let fused = pieces(&["Question", ":", " Q", "\n", "(A", ")", " x", "\n", "(", "B", ")", " y", "\n", "Answer", ":"]);
        let (labels, atomic) = audit(prompt, &fused, Delimiter::Parens, &ids, &item).unwrap();
        assert_eq!(labels, [2, 3]);
        assert_eq!(atomic, [false, true]);
        // Pieces that do not spell the prompt cannot be audited.
        assert!(audit(prompt, &pieces(&["Question"]), Delimiter::Parens, &ids, &item).is_none());
    }
}
