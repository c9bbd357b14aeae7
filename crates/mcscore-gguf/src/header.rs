//! A checked header: its numbers, and its metadata read in place.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::types::{gguf_type_name, GGUF_TYPE_STRING};

/// The header of a GGUF file that passed the check: the numbers llama.cpp
/// derives from it, and its metadata, read in place (no value is copied
/// until asked for).
///
/// `Header<'a>` from [`parse`](crate::parse) borrows the caller's bytes;
/// [`check_file`](crate::check_file) returns a `Header<'static>` holding a
/// copy of the header's bytes only (not the tensor data), so the file's
/// memory map is gone by the time it returns.
#[derive(Clone)]
pub struct Header<'a> {
    /// The file's bytes from its start; at least `header_len` of them.
    pub(crate) bytes: Cow<'a, [u8]>,
    /// Where the last tensor info ends (before the padding to the data).
    pub(crate) header_len: usize,
    pub(crate) version: u32,
    pub(crate) alignment: u32,
    pub(crate) tensor_count: u64,
    pub(crate) entries: Vec<Entry>,
    pub(crate) tensors: Vec<Tensor>,
    pub(crate) data_offset: u64,
    pub(crate) data_size: u64,
}

/// Where one checked metadata entry lies in the bytes.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) key: Range<usize>,
    pub(crate) kind: Kind,
    /// Where the value type is.
    pub(crate) type_at: usize,
    /// Where the value (for an array, its first element) starts.
    pub(crate) value_at: usize,
}

/// One checked tensor info: where its name lies in the header's bytes, its
/// shape and type, and where its data lies in the file.
#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    pub(crate) name: Range<usize>,
    pub(crate) shape: [i64; 4],
    pub(crate) ggml_type: i32,
    pub(crate) data: Range<u64>,
}

/// One tensor, as [`Header::tensors`] gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorView<'h> {
    /// Its name, as the file holds it.
    pub name: &'h [u8],
    /// Its dimensions, the unused ones 1.
    pub shape: [i64; 4],
    /// Its ggml type code (`0` is f32).
    pub ggml_type: i32,
    /// Where its bytes lie in the file: checked to lie within it.
    pub data: (u64, u64),
}

/// A metadata entry's GGUF type: a scalar (or string) type code, or an
/// array's element type code and length.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Scalar(i32),
    Array { element: i32, len: u64 },
}

/// One metadata value, as a lookup returns it: integers widened, strings
/// borrowed from the header.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value<'h> {
    /// A u8, u16, u32 or u64.
    Unsigned(u64),
    /// An i8, i16, i32 or i64.
    Signed(i64),
    /// An f32 or f64.
    Float(f64),
    /// A bool (any nonzero byte is true, as in gguf.cpp).
    Bool(bool),
    /// A string's bytes: gguf.cpp does not require UTF-8 (see
    /// [`Value::as_str`]).
    String(&'h [u8]),
    /// An array; its elements are not read.
    Array {
        /// The elements' GGUF type ("u32", "string", ...).
        element_type: &'static str,
        /// The number of elements.
        len: u64,
    },
}

impl<'h> Value<'h> {
    /// The string, if this is a string and valid UTF-8.
    pub fn as_str(&self) -> Option<&'h str> {
        match *self {
            Value::String(bytes) => std::str::from_utf8(bytes).ok(),
            _ => None,
        }
    }

    /// The integer, if this is an unsigned integer or a non-negative signed
    /// one (llama.cpp reads e.g. `{arch}.context_length` as either).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Unsigned(n) => Some(n),
            Value::Signed(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }
}

impl<'a> Header<'a> {
    /// The GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The data section's alignment: `general.alignment`, or 32 without it.
    pub fn alignment(&self) -> u32 {
        self.alignment
    }

    /// The number of tensors.
    pub fn tensor_count(&self) -> u64 {
        self.tensor_count
    }

    /// The number of metadata entries.
    pub fn metadata_count(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Where the data section starts in the file: the end of the header,
    /// rounded up to the alignment when there are tensors.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// The data section's size as gguf.cpp computes it: every tensor's size
    /// rounded up to the alignment. The padding after the last tensor may be
    /// missing from the file (llama.cpp does not need it), so
    /// `data_offset + data_size` can pass the file's end by less than the
    /// alignment.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// The tensors, in the file's order, with where each one's data lies.
    pub fn tensors(&self) -> impl Iterator<Item = TensorView<'_>> {
        self.tensors.iter().map(|t| TensorView {
            name: self.bytes.get(t.name.clone()).unwrap_or_default(),
            shape: t.shape,
            ggml_type: t.ggml_type,
            data: (t.data.start, t.data.end),
        })
    }

    /// The value of a metadata key, if the header has it.
    pub fn get(&self, key: &str) -> Option<Value<'_>> {
        self.located(key).map(|(_, value)| value)
    }

    /// The entry holding `key`.
    fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| self.bytes.get(e.key.clone()) == Some(key.as_bytes()))
    }

    /// The value of a metadata key and its byte offset in the file.
    pub(crate) fn located(&self, key: &str) -> Option<(u64, Value<'_>)> {
        let entry = self.entry(key)?;
        Some((entry.value_at as u64, self.value(entry)?))
    }

    /// Every entry's key, the byte offset of its value, and the value.
    pub(crate) fn values(&self) -> impl Iterator<Item = (&[u8], u64, Value<'_>)> {
        self.entries.iter().filter_map(|e| Some((self.bytes.get(e.key.clone())?, e.value_at as u64, self.value(e)?)))
    }

    /// The elements of an array of strings, each with the byte offset of
    /// its length; `None` unless `key` holds an array of strings.
    pub(crate) fn strings(&self, key: &str) -> Option<impl Iterator<Item = (u64, &[u8])>> {
        let entry = self.entry(key)?;
        let Kind::Array { element: GGUF_TYPE_STRING, len } = entry.kind else {
            return None;
        };
        let mut at = entry.value_at;
        Some((0..len).map_while(move |_| {
            let offset = at;
            let n = usize::try_from(u64::from_le_bytes(self.fixed(at)?)).ok()?;
            let start = at.checked_add(8)?;
            at = start.checked_add(n)?;
            Some((offset as u64, self.bytes.get(start..at)?))
        }))
    }

    /// An entry's value: integers widened, strings borrowed.
    fn value(&self, entry: &Entry) -> Option<Value<'_>> {
        let at = entry.value_at;
        let code = match entry.kind {
            Kind::Array { element, len } => return Some(Value::Array { element_type: gguf_type_name(element)?, len }),
            Kind::Scalar(code) => code,
        };
        if code == GGUF_TYPE_STRING {
            let len = usize::try_from(u64::from_le_bytes(self.fixed(at)?)).ok()?;
            let start = at.checked_add(8)?;
            return self.bytes.get(start..start.checked_add(len)?).map(Value::String);
        }
        Some(match code {
            0 => Value::Unsigned(u8::from_le_bytes(self.fixed(at)?).into()),
            1 => Value::Signed(i8::from_le_bytes(self.fixed(at)?).into()),
            2 => Value::Unsigned(u16::from_le_bytes(self.fixed(at)?).into()),
            3 => Value::Signed(i16::from_le_bytes(self.fixed(at)?).into()),
            4 => Value::Unsigned(u32::from_le_bytes(self.fixed(at)?).into()),
            5 => Value::Signed(i32::from_le_bytes(self.fixed(at)?).into()),
            6 => Value::Float(f32::from_le_bytes(self.fixed(at)?).into()),
            7 => Value::Bool(self.fixed::<1>(at)? != [0]),
            10 => Value::Unsigned(u64::from_le_bytes(self.fixed(at)?)),
            11 => Value::Signed(i64::from_le_bytes(self.fixed(at)?)),
            12 => Value::Float(f64::from_le_bytes(self.fixed(at)?)),
            _ => return None,
        })
    }

    /// A string value (`general.architecture`, `tokenizer.chat_template`), if
    /// the key is present, a string, and valid UTF-8.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// An integer value (`{arch}.context_length`), if the key is present and
    /// an unsigned or non-negative signed integer.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key)?.as_u64()
    }

    /// `N` bytes at `at`; the checker has seen them, so this is `None` only
    /// if the header's bookkeeping were wrong.
    fn fixed<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.bytes.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    /// The same header holding a copy of its own bytes only (those before
    /// the data section), free of the borrowed buffer.
    pub(crate) fn into_owned(self) -> Header<'static> {
        let bytes = self.bytes.get(..self.header_len).unwrap_or_default().to_vec();
        Header {
            bytes: Cow::Owned(bytes),
            header_len: self.header_len,
            version: self.version,
            alignment: self.alignment,
            tensor_count: self.tensor_count,
            entries: self.entries,
            tensors: self.tensors,
            data_offset: self.data_offset,
            data_size: self.data_size,
        }
    }
}

impl fmt::Debug for Header<'_> {
    /// The numbers only: the bytes may be megabytes of vocabulary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field("version", &self.version)
            .field("alignment", &self.alignment)
            .field("tensor_count", &self.tensor_count)
            .field("metadata_count", &self.entries.len())
            .field("data_offset", &self.data_offset)
            .field("data_size", &self.data_size)
            .finish()
    }
}
