//! Checks a GGUF model file's structure in Rust before llama.cpp opens it,
//! as safetensors checks its header: a malformed file gets an error that
//! names the fault, its byte offset and the key or tensor at fault, where
//! llama.cpp would print to its log and hand back a null model.
//!
//! The rules are those of the llama.cpp this workspace links
//! (`ggml/src/gguf.cpp`'s `gguf_init_from_reader`, in its order), so that a
//! file passes iff llama.cpp's reader accepts its structure:
//!
//! - the magic "GGUF"; version 2 or 3 (0, 1, byte-swapped and newer refused);
//! - tensor and metadata counts that the rest of the file could hold;
//! - strings (keys, values, tensor names) of at most 1 GiB within the file,
//!   not necessarily UTF-8; keys non-empty and unique;
//! - value types 0 to 12, arrays not nested and of at most 2^30 elements;
//! - `general.alignment`, if present, a u32 power of two;
//! - tensor names under 64 bytes and unique (up to a NUL, as llama.cpp's
//!   model loader compares them); at most 4 dimensions, none negative, with
//!   at most 2^63 - 1 elements; a known, not removed ggml type whose block
//!   size divides the row; a size in bytes within 64 bits;
//! - each tensor's data offset equal to the padded sizes of those before it;
//!   the data section starting at the aligned end of the header; and each
//!   tensor's data within the file (llama.cpp's model loader's check).
//!
//! [`check_model`] then checks the values llama.cpp's model loader would
//! abort on (a block count of 0, a token given twice, a negative epsilon) or
//! silently replace (a special token id past the vocabulary);
//! [`check_model_file`] does both. [`read_imatrix`] reads the importance
//! matrices llama-quantize takes, in either of llama.cpp's layouts.
//!
//! Differences from gguf.cpp: a count too large for the file is refused at
//! the count, where gguf.cpp would allocate for it and fail on a later read
//! (same verdict, earlier); and tensor names are compared for duplicates up
//! to a NUL byte, as llama.cpp's model loader compares them after gguf.cpp.

#![warn(missing_docs)]

mod fault;
mod file;
mod header;
mod imatrix;
mod model;
mod parse;
mod types;

pub use fault::Fault;
pub use file::{check_file, check_model_file, GgufError, GgufErrorKind};
pub use header::{Header, TensorView, Value};
pub use imatrix::{read_imatrix, Imatrix, ImatrixError};
pub use model::{check_model, ModelFault};
pub use parse::parse;
