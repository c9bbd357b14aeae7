//! What llama.cpp's model loader asserts about a structurally sound file.
//!
//! gguf.cpp accepts any well-formed header; llama.cpp's model and vocabulary
//! loaders then read the hyperparameters and the vocabulary, and some values
//! they meet stop the process (`GGML_ASSERT`, an abort with exit 134 and a
//! backtrace) rather than return an error: a block count of 0 or past 512, a
//! token string given twice, a negative norm epsilon (asserted when the first
//! batch is computed). Others they accept with a warning only: a special
//! token id past the vocabulary is replaced by the tokenizer's default, which
//! changes what is scored. Others make it compute NaN (a RoPE base of 0) or
//! loop for ever (an `rwkv` tokenizer over a vocabulary without a token for a
//! byte that begins another). These are checked here, with the byte offset of the
//! value at fault, so such a file gets a message instead of an abort or a
//! silent substitution. Values llama.cpp refuses with an error of its own
//! (a missing key, a key of the wrong type, a missing tensor) are left to it.

use std::collections::HashMap;

use crate::fault::shown;
use crate::header::{Header, Value};

/// `LLAMA_MAX_LAYERS` of the llama.cpp this workspace links.
pub(crate) const MAX_LAYERS: u64 = 512;

/// A value in a structurally sound GGUF file that llama.cpp's model loader
/// would abort on, or silently replace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFault {
    /// A file with no tensors: no model (llama.cpp would quantize it to
    /// another empty file, and fail later on loading it).
    #[error("at byte {offset}: the file holds no tensors, so no model")]
    NoTensors {
        /// Where the tensor count is (8).
        offset: u64,
    },

    /// `{arch}.block_count` of 0 or past `LLAMA_MAX_LAYERS`, which
    /// llama.cpp asserts against.
    #[error("at byte {offset}: {key} is {count}; llama.cpp loads models of 1 to {max} blocks")]
    BlockCount {
        /// Where the value is.
        offset: u64,
        /// The key.
        key: String,
        /// The value.
        count: u64,
        /// `LLAMA_MAX_LAYERS` (512).
        max: u64,
    },

    /// `{arch}.nextn_predict_layers` past the block count.
    #[error("at byte {offset}: {key} is {layers}, more than the model's {block_count} blocks")]
    NextnLayers {
        /// Where the value is.
        offset: u64,
        /// The key.
        key: String,
        /// The value.
        layers: u64,
        /// `{arch}.block_count`.
        block_count: u64,
    },

    /// A normalisation epsilon that is negative, NaN or infinite: ggml
    /// asserts `eps >= 0` when the first batch is computed.
    #[error("at byte {offset}: {key} is {value}; a norm's epsilon must be a finite number of at least 0")]
    Epsilon {
        /// Where the value is.
        offset: u64,
        /// The key.
        key: String,
        /// The value, as written.
        value: String,
    },

    /// A token string the vocabulary already holds: llama.cpp maps text to
    /// ids and asserts that no two ids share a text.
    #[error("at byte {offset}: token {index} of tokenizer.ggml.tokens, '{token}', repeats token {first_index}")]
    DuplicateToken {
        /// Where the repeated token's length is.
        offset: u64,
        /// Its index in the vocabulary.
        index: u64,
        /// The token's text.
        token: String,
        /// The index of the token that had the text first.
        first_index: u64,
    },

    /// A RoPE value that makes every logit NaN: a frequency base that is not
    /// a finite number above 0, or another RoPE float that is not finite.
    #[error("at byte {offset}: {key} is {value}; {rule}")]
    Rope {
        /// Where the value is.
        offset: u64,
        /// The key.
        key: String,
        /// The value, as written.
        value: String,
        /// What the key allows.
        rule: &'static str,
    },

    /// An `rwkv` tokenizer whose vocabulary has a token beginning with a
    /// byte that is not a token of its own: llama.cpp's RWKV tokenizer then
    /// loops for ever on text holding that byte, filling memory with tokens.
    #[error(
        "at byte {offset}: tokenizer.ggml.model is rwkv, and token {index} ('{token}') begins with byte 0x{byte:02x}, which is not a token of its own: llama.cpp's rwkv tokenizer would loop for ever, taking all memory, on text that holds it"
    )]
    RwkvByte {
        /// Where the token's length is.
        offset: u64,
        /// Its index in the vocabulary.
        index: u64,
        /// The token's text, as written (escaped).
        token: String,
        /// Its first byte once unescaped.
        byte: u8,
    },

    /// A special token id (`tokenizer.ggml.bos_token_id`, ...) past the
    /// vocabulary: llama.cpp warns and uses its tokenizer's default instead.
    #[error(
        "at byte {offset}: {key} is {id}, past the vocabulary's {vocab} tokens (llama.cpp would score with another token in its place)"
    )]
    SpecialTokenOutOfRange {
        /// Where the value is.
        offset: u64,
        /// The key.
        key: String,
        /// The id.
        id: u64,
        /// The number of tokens in `tokenizer.ggml.tokens`.
        vocab: u64,
    },
}

impl ModelFault {
    /// The byte offset in the file of the value at fault.
    pub fn offset(&self) -> u64 {
        match self {
            ModelFault::NoTensors { offset }
            | ModelFault::BlockCount { offset, .. }
            | ModelFault::NextnLayers { offset, .. }
            | ModelFault::Epsilon { offset, .. }
            | ModelFault::DuplicateToken { offset, .. }
            | ModelFault::Rope { offset, .. }
            | ModelFault::RwkvByte { offset, .. }
            | ModelFault::SpecialTokenOutOfRange { offset, .. } => *offset,
        }
    }
}

/// Checks the values of a structurally sound header that llama.cpp's model
/// loader would abort on or silently replace; the first fault found.
///
/// Keys llama.cpp requires but the file lacks, and keys of the wrong type,
/// are not faults here: llama.cpp refuses those itself, with its reason.
pub fn check_model(header: &Header<'_>) -> Result<(), ModelFault> {
    if header.tensor_count() == 0 {
        return Err(ModelFault::NoTensors { offset: 8 });
    }
    if let Some(arch) = c_str(header, "general.architecture") {
        check_blocks(header, arch)?;
    }
    check_epsilons(header)?;
    check_rope(header)?;
    check_vocabulary(header)?;
    check_rwkv(header)
}

/// A string value as llama.cpp's loader reads it: a C string, ending at its
/// first NUL ("rwkv\0" is "rwkv" to it).
fn c_str<'h>(header: &'h Header<'_>, key: &str) -> Option<&'h str> {
    header.get_str(key).map(|s| s.split('\0').next().unwrap_or(s))
}

/// `{arch}.block_count` within 1..=512, and the next-token-prediction
/// layers within it.
fn check_blocks(header: &Header<'_>, arch: &str) -> Result<(), ModelFault> {
    let key = format!("{arch}.block_count");
    let Some((offset, Some(count))) = header.located(&key).map(|(at, value)| (at, value.as_u64())) else {
        return Ok(());
    };
    if count == 0 || count > MAX_LAYERS {
        return Err(ModelFault::BlockCount { offset, key, count, max: MAX_LAYERS });
    }
    let key = format!("{arch}.nextn_predict_layers");
    if let Some((offset, Some(layers))) = header.located(&key).map(|(at, value)| (at, value.as_u64())) {
        if layers > count {
            return Err(ModelFault::NextnLayers { offset, key, layers, block_count: count });
        }
    }
    Ok(())
}

/// Every float whose key names an epsilon, finite and at least 0.
fn check_epsilons(header: &Header<'_>) -> Result<(), ModelFault> {
    for (key, offset, value) in header.values() {
        if !key.ends_with(b"epsilon") {
            continue;
        }
        if let Value::Float(value) = value {
            if !(value.is_finite() && value >= 0.0) {
                return Err(ModelFault::Epsilon { offset, key: shown(key), value: as_written(value) });
            }
        }
    }
    Ok(())
}

/// Every float under `.rope.` finite, and a frequency base above 0.
fn check_rope(header: &Header<'_>) -> Result<(), ModelFault> {
    for (key, offset, value) in header.values() {
        let Value::Float(value) = value else { continue };
        if !key.windows(6).any(|w| w == b".rope.") {
            continue;
        }
        // `{arch}.rope.freq_base`, and `freq_base_swa` for sliding-window layers.
        let base = key.ends_with(b"freq_base") || key.ends_with(b"freq_base_swa");
        let rule = match (value.is_finite(), base && value <= 0.0) {
            (false, _) => "a RoPE value must be a finite number",
            (true, true) => "a RoPE frequency base must be above 0",
            (true, false) => continue,
        };
        return Err(ModelFault::Rope { offset, key: shown(key), value: as_written(value), rule });
    }
    Ok(())
}

/// A float read from the file as it was written: an f32 (as llama.cpp's
/// converters write them) without f64's extra digits.
fn as_written(value: f64) -> String {
    if f64::from(value as f32) == value {
        (value as f32).to_string()
    } else {
        value.to_string()
    }
}

/// For an `rwkv` tokenizer, every byte that begins a token is a token of its
/// own. llama.cpp's RWKV tokenizer takes the longest token in a trie of the
/// unescaped texts; where the first byte has a child but no path from it
/// ends in a token, it pushes token 0 and starts again from the text's
/// first byte, for ever.
fn check_rwkv(header: &Header<'_>) -> Result<(), ModelFault> {
    if c_str(header, "tokenizer.ggml.model") != Some("rwkv") {
        return Ok(());
    }
    let Some(tokens) = header.strings("tokenizer.ggml.tokens") else {
        return Ok(());
    };
    let unescaped: Vec<(u64, &[u8], Vec<u8>)> =
        tokens.enumerate().map(|(index, (offset, text))| (offset, text, unescape_rwkv(&token_text(index, text)))).collect();
    let mut single = [false; 256];
    for (_, _, bytes) in &unescaped {
        if let [byte] = bytes[..] {
            single[usize::from(byte)] = true;
        }
    }
    for (index, (offset, text, bytes)) in unescaped.iter().enumerate() {
        if let Some(&byte) = bytes.first() {
            if !single[usize::from(byte)] {
                return Err(ModelFault::RwkvByte { offset: *offset, index: index as u64, token: shown(text), byte });
            }
        }
    }
    Ok(())
}

/// A token's text as llama.cpp's vocabulary holds it: read as a C string (up
/// to its first NUL), and an empty one named `[EMPTY_i]`.
fn token_text(index: usize, raw: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let text = raw.split(|&b| b == 0).next().unwrap_or_default();
    if text.is_empty() {
        format!("[EMPTY_{index}]").into_bytes().into()
    } else {
        text.into()
    }
}

/// llama.cpp's `llama_unescape_rwkv_token`, byte for byte: `\t`, `\n`,
/// `\r`, `\xHH` (hex digits read as it reads them, whatever they are, with
/// the platform's `char`: where it is signed, a byte from 0x80 counts as
/// below `a`) and `\c` for any other `c`.
fn unescape_rwkv(escaped: &[u8]) -> Vec<u8> {
    let mut output = Vec::with_capacity(escaped.len());
    let (mut escaping, mut hex_remaining, mut hex_acc) = (false, 0u8, 0u8);
    for &c in escaped {
        if hex_remaining != 0 {
            // `c >= 'a'` on a C `char`.
            let letter = std::ffi::c_char::from_ne_bytes([c]) >= b'a' as std::ffi::c_char;
            let value = if letter { c.wrapping_sub(b'a').wrapping_add(10) } else { c.wrapping_sub(b'0') };
            hex_acc = (hex_acc << 4).wrapping_add(value);
            hex_remaining -= 1;
            if hex_remaining == 0 {
                output.push(hex_acc);
                hex_acc = 0;
            }
        } else if escaping {
            match c {
                b't' => output.push(b'\t'),
                b'n' => output.push(b'\n'),
                b'r' => output.push(b'\r'),
                b'x' => hex_remaining = 2,
                _ => output.push(c),
            }
            escaping = false;
        } else if c == b'\\' {
            escaping = true;
        } else {
            output.push(c);
        }
    }
    output
}

/// No token text twice, as llama.cpp reads the texts ([`token_text`]), and
/// every special token id within the vocabulary.
fn check_vocabulary(header: &Header<'_>) -> Result<(), ModelFault> {
    let Some(tokens) = header.strings("tokenizer.ggml.tokens") else {
        return Ok(());
    };
    let mut vocab = 0u64;
    let mut seen: HashMap<std::borrow::Cow<'_, [u8]>, u64> = HashMap::new();
    for (index, (offset, text)) in tokens.enumerate() {
        let index = index as u64;
        vocab = index + 1;
        let text = token_text(index as usize, text);
        if let Some(&first_index) = seen.get(&text) {
            return Err(ModelFault::DuplicateToken { offset, index, token: shown(&text), first_index });
        }
        seen.insert(text, index);
    }
    for (key, offset, value) in header.values() {
        if !(key.starts_with(b"tokenizer.ggml.") && key.ends_with(b"_token_id")) {
            continue;
        }
        if let Value::Unsigned(id) = value {
            if id >= vocab {
                return Err(ModelFault::SpecialTokenOutOfRange { offset, key: shown(key), id, vocab });
            }
        }
    }
    Ok(())
}
