//! `mcscore tokens`: does each option ID survive tokenisation as a token of
//! its own, in the context the letter scaffold puts it? A tokenizer that fuses
//! `(A` or `A.` hides the ID the model is asked to produce (docs/methods.md).

use std::path::PathBuf;

use mcscore_eval::tokens::{audit_ids, Layout};

use crate::{defaults, Outcome};

/// For the 16 option-ID × delimiter pairs, in the context the letter scaffold
/// puts them: how many tokens each `ID + delimiter` label takes, and whether
/// the bare ID is a token of its own. Pairs that break it are flagged.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// GGUF model; default: the default model.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    model: Option<PathBuf>,
    /// Audit the IDs as `sweep --mmproj` places them in a VQA item's prompts: after
    /// the image's line, tokenised from where the image ends, as the engine reads it.
    #[arg(long)]
    image: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let model = match args.model {
        Some(m) => m,
        None => defaults::model()?,
    };
    let layout = if args.image { Layout::AfterImage } else { Layout::Text };
    let pairs = audit_ids(&model, layout)?;
    if args.json {
        crate::print_json(&pairs)?;
    } else {
        let after =
            if args.image { format!(" after an image (\"{}\\nQuestion: …\")", mcscore_format::IMAGE_MARKER) } else { String::new() };
        outln!("{}: option IDs in the letter scaffold (\"Question: …\\n<ID><delim> text\\n…\\nAnswer:\"){after}", model.display())?;
        outln!("  {:<14} {:<16} {}", "ID.delimiter", "label tokens", "ID is its own token")?;
        for p in &pairs {
            let counts: Vec<String> = p.label_tokens.iter().map(usize::to_string).collect();
            let ids: Vec<&str> = p.id_is_a_token.iter().map(|&ok| if ok { "yes" } else { "NO" }).collect();
            outln!(
                "  {:<14} {:<16} {}{}",
                p.format,
                counts.join(" "),
                ids.join(" "),
                if p.flagged { "   <- breaks atomic IDs" } else { "" }
            )?;
        }
    }
    Ok(Outcome::Ok)
}
