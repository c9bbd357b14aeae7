//! The checker: one pass over the header in the order gguf.cpp's
//! `gguf_init_from_reader` reads it, the same checks at the same points, then
//! the data-section checks gguf.cpp and llama.cpp's model loader make.
//!
//! Every read is bounded by the bytes left; every count is checked against
//! the bytes it needs before anything is done per element, and nothing is
//! allocated per element until that element's bytes have been read, so a
//! hostile count costs nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use crate::fault::{shown, Fault};
use crate::header::{Entry, Header, Kind};
use crate::types::{ggml_type, gguf_type_name, gguf_type_size, GGML_TYPE_COUNT, GGUF_TYPE_ARRAY, GGUF_TYPE_STRING, GGUF_TYPE_UINT32};

/// `GGUF_MAGIC`.
const MAGIC: &[u8; 4] = b"GGUF";
/// `GGUF_VERSION`: the newest version llama.cpp reads.
const MAX_VERSION: u32 = 3;
/// `GGUF_MAX_STRING_LENGTH`.
const MAX_STRING: u64 = 1 << 30;
/// `GGUF_MAX_ARRAY_ELEMENTS`.
const MAX_ARRAY: u64 = 1 << 30;
/// `GGUF_DEFAULT_ALIGNMENT`, used when `general.alignment` is absent.
const DEFAULT_ALIGNMENT: u32 = 32;
/// `GGUF_KEY_GENERAL_ALIGNMENT`.
const ALIGNMENT_KEY: &[u8] = b"general.alignment";
/// `GGML_MAX_NAME`: a name and its NUL must fit in this many bytes.
const MAX_NAME: u64 = 64;
/// `GGML_MAX_DIMS`.
const MAX_DIMS: u32 = 4;
/// The smallest tensor info: name length (8), an empty name, dimension
/// count (4), no dimensions, type (4), data offset (8).
const MIN_TENSOR_INFO: u64 = 8 + 4 + 4 + 8;
/// The smallest metadata entry: key length (8), a one-byte key (keys may not
/// be empty), type (4), a one-byte value.
const MIN_ENTRY: u64 = 8 + 1 + 4 + 1;

/// A cursor over the file's bytes. Every read checks the bytes left first.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn at(&self) -> u64 {
        self.pos as u64
    }

    /// The next `n` bytes, or `Truncated` naming the field (`what` is only
    /// formatted on failure).
    fn take(&mut self, n: u64, what: impl FnOnce() -> String) -> Result<&'a [u8], Fault> {
        let remaining = self.remaining();
        if n > remaining {
            return Err(Fault::Truncated { offset: self.at(), what: what(), needed: n, remaining });
        }
        // n <= remaining, which is a usize difference, so both casts hold.
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn array<const N: usize>(&mut self, what: impl FnOnce() -> String) -> Result<[u8; N], Fault> {
        let bytes = self.take(N as u64, what)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn u32(&mut self, what: impl FnOnce() -> String) -> Result<u32, Fault> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn i32(&mut self, what: impl FnOnce() -> String) -> Result<i32, Fault> {
        self.array(what).map(i32::from_le_bytes)
    }

    fn u64(&mut self, what: impl FnOnce() -> String) -> Result<u64, Fault> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn i64(&mut self, what: impl FnOnce() -> String) -> Result<i64, Fault> {
        self.array(what).map(i64::from_le_bytes)
    }

    /// A gguf string: a u64 length, at most 1 GiB and at most the bytes
    /// left, then that many bytes. gguf.cpp does not require UTF-8, so
    /// neither does this.
    fn string(&mut self, what: impl Fn() -> String) -> Result<&'a [u8], Fault> {
        let offset = self.at();
        let len = self.u64(|| format!("the length of {}", what()))?;
        if len > MAX_STRING {
            return Err(Fault::StringTooLong { offset, what: what(), len, max: MAX_STRING });
        }
        self.take(len, what)
    }
}

/// What the checker keeps of a tensor info until the data section is
/// checked.
struct TensorInfo<'a> {
    name: &'a [u8],
    /// Where its name is in the bytes.
    name_range: Range<usize>,
    /// Its dimensions (unused ones 1).
    shape: [i64; 4],
    /// Its ggml type code.
    ggml_type: i32,
    /// Where its data offset is in the file.
    offset_at: u64,
    /// Its data offset, relative to the data section.
    offset: u64,
    /// Its size in bytes (`ggml_nbytes`), unpadded.
    nbytes: u64,
}

/// Checks a whole GGUF file's structure, given all of its bytes, and returns
/// its header: the first fault found otherwise.
///
/// The bytes must be the entire file (the data section is checked to lie
/// within them). Accepts a file iff llama.cpp's reader would, as nearly as a
/// structural check can tell; see the crate's documentation for the rules.
/// Never panics and allocates only in proportion to the header's bytes.
pub fn parse(bytes: &[u8]) -> Result<Header<'_>, Fault> {
    let mut r = Reader { bytes, pos: 0 };
    let file_len = bytes.len() as u64;

    let magic: [u8; 4] = r.array(|| "the magic".into())?;
    if &magic != MAGIC {
        return Err(Fault::BadMagic { offset: 0, found: magic });
    }
    let offset = r.at();
    let version = r.u32(|| "the version".into())?;
    check_version(offset, version)?;

    // gguf.cpp reads the counts as signed; a count of 2^63 or more is
    // negative there and refused, and here it cannot fit in the file either.
    let tensors_at = r.at();
    let tensor_count = r.u64(|| "the tensor count".into())?;
    let entries_at = r.at();
    let entry_count = r.u64(|| "the metadata count".into())?;
    let max = r.remaining() / MIN_TENSOR_INFO;
    if tensor_count > max {
        return Err(Fault::TensorCount { offset: tensors_at, count: tensor_count, max });
    }
    let max = (r.remaining() - tensor_count * MIN_TENSOR_INFO) / MIN_ENTRY;
    if entry_count > max {
        return Err(Fault::MetadataCount { offset: entries_at, count: entry_count, max });
    }

    // Pushed one at a time, each after its bytes were read.
    let mut entries = Vec::new();
    let mut seen_keys: HashMap<&[u8], u64> = HashMap::new();
    for index in 0..entry_count {
        entries.push(read_entry(&mut r, index, &mut seen_keys)?);
    }
    let alignment = alignment(bytes, &entries)?;

    let mut tensors = Vec::new();
    let mut seen_names: HashMap<&[u8], u64> = HashMap::new();
    for index in 0..tensor_count {
        tensors.push(read_tensor_info(&mut r, index, &mut seen_names)?);
    }
    let header_len = r.pos;

    // gguf.cpp seeks to the aligned end of the header only when there are
    // tensors; with none, the data section starts right after the header.
    let header_end = r.at();
    let data_offset = if tensor_count > 0 { pad(header_end, alignment) } else { Some(header_end) };
    let data_offset = match data_offset {
        Some(start) if start <= file_len => start,
        _ => {
            return Err(Fault::DataStartPastEnd {
                offset: header_end,
                data_offset: pad(header_end, alignment).unwrap_or(u64::MAX),
                file_len,
            })
        }
    };

    // gguf.cpp: each tensor's offset must be the padded size of those before.
    let mut data_size: u64 = 0;
    for (index, t) in tensors.iter().enumerate() {
        let index = index as u64;
        if t.offset != data_size {
            return Err(Fault::TensorOffset { offset: t.offset_at, index, name: shown(t.name), found: t.offset, expected: data_size });
        }
        let overflow = || Fault::SizeOverflow { offset: t.offset_at, index, name: shown(t.name) };
        let padded = pad(t.nbytes, alignment).ok_or_else(overflow)?;
        data_size = data_size.checked_add(padded).ok_or_else(overflow)?;
    }

    // llama.cpp's model loader: each tensor's data must lie within the file
    // (the padding after the last tensor may be missing).
    for (index, t) in tensors.iter().enumerate() {
        let end = u128::from(data_offset) + u128::from(t.offset) + u128::from(t.nbytes);
        if end > u128::from(file_len) {
            return Err(Fault::TensorDataPastEnd { offset: t.offset_at, index: index as u64, name: shown(t.name), end, file_len });
        }
    }

    let tensors = tensors
        .into_iter()
        .map(|t| crate::header::Tensor {
            name: t.name_range,
            shape: t.shape,
            ggml_type: t.ggml_type,
            data: data_offset + t.offset..data_offset + t.offset + t.nbytes,
        })
        .collect();
    Ok(Header { bytes: Cow::Borrowed(bytes), header_len, version, alignment, tensor_count, entries, tensors, data_offset, data_size })
}

/// gguf.cpp's version checks, in its order.
fn check_version(offset: u64, version: u32) -> Result<(), Fault> {
    if version == 0 {
        Err(Fault::VersionZero { offset })
    } else if version & 0xFFFF == 0 {
        Err(Fault::ByteSwappedVersion { offset, version })
    } else if version == 1 {
        Err(Fault::VersionOne { offset })
    } else if version > MAX_VERSION {
        Err(Fault::VersionTooNew { offset, version, max: MAX_VERSION })
    } else {
        Ok(())
    }
}

/// One metadata entry: key, type (and for an array its element type and
/// count), value.
fn read_entry<'a>(r: &mut Reader<'a>, index: u64, seen: &mut HashMap<&'a [u8], u64>) -> Result<Entry, Fault> {
    let key_at = r.at();
    let key = r.string(|| format!("the key of metadata entry {index}"))?;
    let key_range = range(r.pos - key.len(), key.len());
    if key.is_empty() {
        return Err(Fault::EmptyKey { offset: key_at, index });
    }
    if let Some(&first_index) = seen.get(key) {
        return Err(Fault::DuplicateKey { offset: key_at, index, key: shown(key), first_index });
    }
    seen.insert(key, index);
    let of = |what: &str| format!("{what} of metadata key '{}' (entry {index})", shown(key));

    let type_at = r.at();
    let value_type = r.i32(|| of("the value type"))?;
    // As gguf.cpp: for an array, read the element type and the count, then
    // check the element type.
    let (kind, element_at, count_at) = if value_type == GGUF_TYPE_ARRAY {
        let element_at = r.at();
        let element = r.i32(|| of("the array element type"))?;
        let count_at = r.at();
        let len = r.u64(|| of("the array length"))?;
        (Kind::Array { element, len }, element_at, count_at)
    } else {
        (Kind::Scalar(value_type), type_at, type_at)
    };
    let element = match kind {
        Kind::Scalar(t) | Kind::Array { element: t, .. } => t,
    };
    if element == GGUF_TYPE_ARRAY {
        return Err(Fault::NestedArray { offset: element_at, index, key: shown(key) });
    }
    if gguf_type_name(element).is_none() {
        return Err(Fault::BadValueType { offset: element_at, index, key: shown(key), value_type: element });
    }

    let value_at = r.pos;
    match kind {
        Kind::Array { len, .. } => {
            if len > MAX_ARRAY {
                return Err(Fault::ArrayTooLong { offset: count_at, index, key: shown(key), count: len, max: MAX_ARRAY });
            }
            // gguf.cpp checks the whole array's minimum size (8 bytes per
            // string) before reading any element; len <= 2^30, so no overflow.
            let size = if element == GGUF_TYPE_STRING { 8 } else { gguf_type_size(element) };
            let needed = len * size;
            if needed > r.remaining() {
                return Err(Fault::Truncated {
                    offset: r.at(),
                    what: of(&format!("the {len} elements")),
                    needed,
                    remaining: r.remaining(),
                });
            }
            if element == GGUF_TYPE_STRING {
                for i in 0..len {
                    r.string(|| of(&format!("element {i}")))?;
                }
            } else {
                r.take(needed, || of(&format!("the {len} elements")))?;
            }
        }
        Kind::Scalar(t) if t == GGUF_TYPE_STRING => {
            r.string(|| of("the value"))?;
        }
        Kind::Scalar(t) => {
            r.take(gguf_type_size(t), || of("the value"))?;
        }
    }
    Ok(Entry { key: key_range, kind, type_at: type_at as usize, value_at })
}

/// `general.alignment`: absent (32), or a u32 that is a nonzero power of 2.
fn alignment(bytes: &[u8], entries: &[Entry]) -> Result<u32, Fault> {
    let Some((index, entry)) = entries.iter().enumerate().find(|(_, e)| bytes.get(e.key.clone()) == Some(ALIGNMENT_KEY)) else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    let index = index as u64;
    let alignment = match entry.kind {
        Kind::Scalar(GGUF_TYPE_UINT32) => {
            bytes.get(entry.value_at..entry.value_at + 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes).unwrap_or(0)
        }
        // gguf.cpp sees an array's type as "array", never u32.
        Kind::Array { element, .. } => {
            let found = format!("an array of {}", gguf_type_name(element).unwrap_or("?"));
            return Err(Fault::AlignmentType { offset: entry.type_at as u64, index, found });
        }
        Kind::Scalar(t) => {
            let found = gguf_type_name(t).unwrap_or("?").to_string();
            return Err(Fault::AlignmentType { offset: entry.type_at as u64, index, found });
        }
    };
    if !alignment.is_power_of_two() {
        return Err(Fault::AlignmentValue { offset: entry.value_at as u64, index, alignment });
    }
    Ok(alignment)
}

/// One tensor info: name, dimensions, type, data offset; with gguf.cpp's
/// checks on each as it is read.
fn read_tensor_info<'a>(r: &mut Reader<'a>, index: u64, seen: &mut HashMap<&'a [u8], u64>) -> Result<TensorInfo<'a>, Fault> {
    let name_at = r.at();
    let name = r.string(|| format!("the name of tensor {index}"))?;
    let name_range = range(r.pos - name.len(), name.len());
    let len = name.len() as u64;
    if len >= MAX_NAME {
        return Err(Fault::TensorNameTooLong { offset: name_at, index, name: shown(name), len, max: MAX_NAME - 1 });
    }
    // gguf.cpp compares whole names; llama.cpp's model loader compares the
    // names ggml keeps, which end at a NUL. Comparing the latter refuses both.
    let kept = name.split(|&b| b == 0).next().unwrap_or(name);
    if let Some(&first_index) = seen.get(kept) {
        return Err(Fault::DuplicateTensorName { offset: name_at, index, name: shown(name), first_index });
    }
    seen.insert(kept, index);
    let of = |what: &str| format!("{what} of tensor '{}' (tensor {index})", shown(name));

    let dims_at = r.at();
    let n_dims = r.u32(|| of("the dimension count"))?;
    if n_dims > MAX_DIMS {
        return Err(Fault::TooManyDimensions { offset: dims_at, index, name: shown(name), n_dims, max: MAX_DIMS });
    }
    let mut shape = [1i64; 4];
    for (dim, ne) in (0..n_dims).zip(shape.iter_mut()) {
        let at = r.at();
        *ne = r.i64(|| of(&format!("dimension {dim}")))?;
        if *ne < 0 {
            return Err(Fault::NegativeDimension { offset: at, index, name: shown(name), dim, value: *ne });
        }
    }
    // gguf.cpp: the element count must not pass INT64_MAX.
    let elements = shape.iter().try_fold(1i64, |n, &ne| n.checked_mul(ne));
    let Some(elements) = elements else {
        return Err(Fault::ElementCountOverflow { offset: dims_at, index, name: shown(name), shape });
    };

    let type_at = r.at();
    let code = r.i32(|| of("the ggml type"))?;
    let Some(ty) = ggml_type(code) else {
        return Err(Fault::UnknownType { offset: type_at, index, name: shown(name), ggml_type: code, max: GGML_TYPE_COUNT });
    };
    if ty.block == 0 {
        return Err(Fault::RemovedType { offset: type_at, index, name: shown(name), ggml_type: code, type_name: ty.name });
    }
    // shape[0] >= 0 and block > 0 (and < 2^63), so the casts hold.
    if !(shape[0] as u64).is_multiple_of(ty.block) {
        return Err(Fault::PartialBlock { offset: type_at, index, name: shown(name), type_name: ty.name, row: shape[0], block: ty.block });
    }
    // gguf.cpp: the size in bytes must be representable. It is the element
    // count over the block size times the block's bytes (`ggml_nbytes`, 0 for
    // an empty tensor).
    let nbytes = (elements as u64 / ty.block).checked_mul(ty.size).ok_or_else(|| Fault::SizeOverflow {
        offset: type_at,
        index,
        name: shown(name),
    })?;

    let offset_at = r.at();
    let offset = r.u64(|| of("the data offset"))?;
    Ok(TensorInfo { name, name_range, shape, ggml_type: code, offset_at, offset, nbytes })
}

/// `GGML_PAD`: `x` rounded up to a multiple of `alignment` (a power of 2),
/// or `None` on overflow.
fn pad(x: u64, alignment: u32) -> Option<u64> {
    let mask = u64::from(alignment) - 1;
    x.checked_add(mask).map(|x| x & !mask)
}

fn range(start: usize, len: usize) -> Range<usize> {
    start..start + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_rounds_up_and_reports_overflow() {
        assert_eq!(pad(0, 32), Some(0));
        assert_eq!(pad(1, 32), Some(32));
        assert_eq!(pad(32, 32), Some(32));
        assert_eq!(pad(33, 1), Some(33));
        assert_eq!(pad(u64::MAX - 3, 32), None);
        assert_eq!(pad(u64::MAX, 1), Some(u64::MAX));
    }

    #[test]
    fn versions() {
        assert_eq!(check_version(4, 0), Err(Fault::VersionZero { offset: 4 }));
        assert_eq!(check_version(4, 0x0300_0000), Err(Fault::ByteSwappedVersion { offset: 4, version: 0x0300_0000 }));
        assert_eq!(check_version(4, 1), Err(Fault::VersionOne { offset: 4 }));
        assert!(check_version(4, 2).is_ok() && check_version(4, 3).is_ok());
        assert_eq!(check_version(4, 4), Err(Fault::VersionTooNew { offset: 4, version: 4, max: 3 }));
    }

    #[test]
    fn empty_and_short_inputs_are_truncated() {
        assert_eq!(parse(b"").unwrap_err(), Fault::Truncated { offset: 0, what: "the magic".into(), needed: 4, remaining: 0 });
        assert_eq!(
            parse(b"GGUF\x03\0\0\0\0").unwrap_err(),
            Fault::Truncated { offset: 8, what: "the tensor count".into(), needed: 8, remaining: 1 }
        );
    }
}
