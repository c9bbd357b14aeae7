//! The structural faults a GGUF file can have, one variant each, so that a
//! caller (and a test) can tell them apart without parsing a message.

/// A structural fault in a GGUF file: the first one found, in the order
/// llama.cpp's reader (`gguf.cpp`) would meet it.
///
/// Every variant carries `offset`, the byte offset in the file of the field
/// at fault (for a length-prefixed string, of its length); faults in a
/// metadata entry carry its `index` and `key`, faults in a tensor info its
/// `index` and `name`. Keys and names are shown lossily as UTF-8 with control
/// characters escaped, and cut at 200 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Fault {
    /// A field runs past the end of the file.
    #[error("at byte {offset}: {what}: {needed} bytes needed, but only {remaining} remain in the file")]
    Truncated {
        /// Where the field starts.
        offset: u64,
        /// The field, in words ("the key of metadata entry 3").
        what: String,
        /// The bytes the field takes.
        needed: u64,
        /// The bytes left in the file from `offset`.
        remaining: u64,
    },

    /// The file does not start with "GGUF".
    #[error("at byte {offset}: the file starts with {}, not the GGUF magic \"GGUF\"", show_magic(found))]
    BadMagic {
        /// Always 0.
        offset: u64,
        /// The first four bytes.
        found: [u8; 4],
    },

    /// Version 0, which no GGUF writer ever wrote.
    #[error("at byte {offset}: GGUF version 0 is not a valid version")]
    VersionZero {
        /// Where the version is (4).
        offset: u64,
    },

    /// A version whose low 16 bits are zero: a big-endian file read on a
    /// little-endian machine (or the reverse), which gguf.cpp refuses.
    #[error("at byte {offset}: GGUF version {version} is implausibly large; the file was probably written with the other byte order")]
    ByteSwappedVersion {
        /// Where the version is (4).
        offset: u64,
        /// The version as read, little-endian.
        version: u32,
    },

    /// Version 1, whose 32-bit counts llama.cpp no longer reads.
    #[error("at byte {offset}: GGUF version 1 is no longer supported by llama.cpp; convert the model again")]
    VersionOne {
        /// Where the version is (4).
        offset: u64,
    },

    /// A version newer than llama.cpp reads.
    #[error("at byte {offset}: GGUF version {version} is newer than the latest version llama.cpp reads, {max}")]
    VersionTooNew {
        /// Where the version is (4).
        offset: u64,
        /// The version as read.
        version: u32,
        /// The newest version llama.cpp reads (3).
        max: u32,
    },

    /// More tensor infos than the rest of the file could hold (each takes at
    /// least 24 bytes), including counts that are negative as gguf.cpp's
    /// signed 64-bit reading sees them.
    #[error("at byte {offset}: the tensor count {count} cannot fit in the file, whose remaining bytes hold at most {max} tensor infos")]
    TensorCount {
        /// Where the count is (8).
        offset: u64,
        /// The count as an unsigned 64-bit integer.
        count: u64,
        /// The most tensor infos the remaining bytes could hold.
        max: u64,
    },

    /// More metadata entries than the rest of the file could hold (each
    /// takes at least 14 bytes, after the tensor infos' minimum).
    #[error("at byte {offset}: the metadata count {count} cannot fit in the file, whose remaining bytes hold at most {max} entries")]
    MetadataCount {
        /// Where the count is (16).
        offset: u64,
        /// The count as an unsigned 64-bit integer.
        count: u64,
        /// The most entries the remaining bytes could hold.
        max: u64,
    },

    /// A string longer than gguf.cpp's limit of 1 GiB.
    #[error("at byte {offset}: {what} is a string of {len} bytes, longer than llama.cpp's limit of {max} bytes")]
    StringTooLong {
        /// Where the string's length is.
        offset: u64,
        /// The string, in words.
        what: String,
        /// The length as read.
        len: u64,
        /// The limit (2^30).
        max: u64,
    },

    /// A metadata key of length 0.
    #[error("at byte {offset}: metadata entry {index} has an empty key")]
    EmptyKey {
        /// Where the key's length is.
        offset: u64,
        /// The entry's index.
        index: u64,
    },

    /// A metadata key that an earlier entry already has.
    #[error("at byte {offset}: metadata entry {index} repeats the key '{key}' of entry {first_index}")]
    DuplicateKey {
        /// Where the repeated key's length is.
        offset: u64,
        /// The repeating entry's index.
        index: u64,
        /// The key.
        key: String,
        /// The index of the entry that had the key first.
        first_index: u64,
    },

    /// A value type (or array element type) outside GGUF's 0..=12.
    #[error("at byte {offset}: metadata key '{key}' (entry {index}) has value type {value_type}, not one of GGUF's types 0 to 12")]
    BadValueType {
        /// Where the type code is.
        offset: u64,
        /// The entry's index.
        index: u64,
        /// The entry's key.
        key: String,
        /// The type code as read.
        value_type: i32,
    },

    /// An array of arrays, which gguf.cpp does not read.
    #[error("at byte {offset}: metadata key '{key}' (entry {index}) is an array of arrays, which llama.cpp does not read")]
    NestedArray {
        /// Where the element type is.
        offset: u64,
        /// The entry's index.
        index: u64,
        /// The entry's key.
        key: String,
    },

    /// An array with more elements than gguf.cpp's limit of 2^30.
    #[error(
        "at byte {offset}: metadata key '{key}' (entry {index}) is an array of {count} elements, more than llama.cpp's limit of {max}"
    )]
    ArrayTooLong {
        /// Where the element count is.
        offset: u64,
        /// The entry's index.
        index: u64,
        /// The entry's key.
        key: String,
        /// The element count as read.
        count: u64,
        /// The limit (2^30).
        max: u64,
    },

    /// `general.alignment` of a type other than a single u32.
    #[error("at byte {offset}: general.alignment (entry {index}) must be a u32 but is {found}")]
    AlignmentType {
        /// Where the entry's value type is.
        offset: u64,
        /// The entry's index.
        index: u64,
        /// The type it has ("u64", "an array of u32").
        found: String,
    },

    /// `general.alignment` of 0 or not a power of two.
    #[error("at byte {offset}: general.alignment (entry {index}) is {alignment}, not a power of two")]
    AlignmentValue {
        /// Where the value is.
        offset: u64,
        /// The entry's index.
        index: u64,
        /// The value.
        alignment: u32,
    },

    /// A tensor name of 64 bytes or more (ggml keeps names in 64 bytes with
    /// their terminating NUL).
    #[error("at byte {offset}: the name of tensor {index}, '{name}', is {len} bytes long; ggml allows at most {max}")]
    TensorNameTooLong {
        /// Where the name's length is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The name.
        name: String,
        /// Its length in bytes.
        len: u64,
        /// The longest allowed (63).
        max: u64,
    },

    /// A tensor name an earlier tensor already has (compared, as llama.cpp's
    /// model loader does, up to a NUL byte).
    #[error("at byte {offset}: tensor {index} repeats the name '{name}' of tensor {first_index}")]
    DuplicateTensorName {
        /// Where the repeated name's length is.
        offset: u64,
        /// The repeating tensor's index.
        index: u64,
        /// The name.
        name: String,
        /// The index of the tensor that had the name first.
        first_index: u64,
    },

    /// More dimensions than ggml's 4.
    #[error("at byte {offset}: tensor '{name}' (tensor {index}) has {n_dims} dimensions; ggml allows at most {max}")]
    TooManyDimensions {
        /// Where the dimension count is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The count as read.
        n_dims: u32,
        /// The limit (4).
        max: u32,
    },

    /// A dimension that is negative as a signed 64-bit integer.
    #[error("at byte {offset}: dimension {dim} of tensor '{name}' (tensor {index}) is {value}, a negative number of elements")]
    NegativeDimension {
        /// Where the dimension is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// Which dimension (0 to 3).
        dim: u32,
        /// Its value.
        value: i64,
    },

    /// Dimensions whose product passes 2^63 - 1 elements.
    #[error("at byte {offset}: tensor '{name}' (tensor {index}) has shape {} x {} x {} x {}, more than 2^63 - 1 elements",
        shape[0], shape[1], shape[2], shape[3])]
    ElementCountOverflow {
        /// Where the dimension count is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The four dimensions (absent ones are 1).
        shape: [i64; 4],
    },

    /// A ggml type code this llama.cpp does not know.
    #[error("at byte {offset}: tensor '{name}' (tensor {index}) has ggml type {ggml_type}, outside the known types 0 to {}", max - 1)]
    UnknownType {
        /// Where the type code is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The type code as read.
        ggml_type: i32,
        /// `GGML_TYPE_COUNT`: codes must be below it.
        max: i32,
    },

    /// A ggml type that ggml once had and removed (Q4_2, Q4_3, the
    /// Q4_0_4_4 family, the IQ4_NL_4_4 family).
    #[error(
        "at byte {offset}: tensor '{name}' (tensor {index}) has ggml type {ggml_type} ({type_name}), which llama.cpp no longer supports"
    )]
    RemovedType {
        /// Where the type code is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The type code.
        ggml_type: i32,
        /// The removed type's name.
        type_name: &'static str,
    },

    /// A row length (dimension 0) that is not a whole number of the type's
    /// blocks.
    #[error("at byte {offset}: tensor '{name}' (tensor {index}) of type {type_name} has {row} elements per row, not a multiple of the type's block size {block}")]
    PartialBlock {
        /// Where the type code is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The type's name.
        type_name: &'static str,
        /// Dimension 0.
        row: i64,
        /// The type's block size.
        block: u64,
    },

    /// A tensor whose size in bytes (or the data section's, once the tensor
    /// is padded and added) does not fit in 64 bits.
    #[error("at byte {offset}: tensor '{name}' (tensor {index}) is too large: its size in bytes, padded and added to the data section's, overflows 64 bits")]
    SizeOverflow {
        /// Where the tensor's type code (for its own size) or data offset (for
        /// the running total) is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
    },

    /// A tensor data offset other than the end of the previous tensor's
    /// padded data: gguf.cpp requires the tensors in order, each aligned, with
    /// nothing between them.
    #[error("at byte {offset}: tensor '{name}' (tensor {index}) has data offset {found}, but llama.cpp requires {expected} (the previous tensors' padded sizes)")]
    TensorOffset {
        /// Where the data offset is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The offset as read.
        found: u64,
        /// The running padded size.
        expected: u64,
    },

    /// The data section would start (at the header's end rounded up to the
    /// alignment) past the end of the file.
    #[error(
        "at byte {offset}: the header ends here, so the data section would start at byte {data_offset}, past the file's end at {file_len}"
    )]
    DataStartPastEnd {
        /// Where the header ends.
        offset: u64,
        /// The aligned start of the data section.
        data_offset: u64,
        /// The file's length.
        file_len: u64,
    },

    /// A tensor's data runs past the end of the file: a truncated file.
    #[error("at byte {offset}: the data of tensor '{name}' (tensor {index}) ends at byte {end}, past the file's end at {file_len}; the file is truncated")]
    TensorDataPastEnd {
        /// Where the tensor's data offset is.
        offset: u64,
        /// The tensor's index.
        index: u64,
        /// The tensor's name.
        name: String,
        /// The byte just past the tensor's data.
        end: u128,
        /// The file's length.
        file_len: u64,
    },
}

impl Fault {
    /// The byte offset in the file of the field at fault.
    pub fn offset(&self) -> u64 {
        match self {
            Fault::Truncated { offset, .. }
            | Fault::BadMagic { offset, .. }
            | Fault::VersionZero { offset }
            | Fault::ByteSwappedVersion { offset, .. }
            | Fault::VersionOne { offset }
            | Fault::VersionTooNew { offset, .. }
            | Fault::TensorCount { offset, .. }
            | Fault::MetadataCount { offset, .. }
            | Fault::StringTooLong { offset, .. }
            | Fault::EmptyKey { offset, .. }
            | Fault::DuplicateKey { offset, .. }
            | Fault::BadValueType { offset, .. }
            | Fault::NestedArray { offset, .. }
            | Fault::ArrayTooLong { offset, .. }
            | Fault::AlignmentType { offset, .. }
            | Fault::AlignmentValue { offset, .. }
            | Fault::TensorNameTooLong { offset, .. }
            | Fault::DuplicateTensorName { offset, .. }
            | Fault::TooManyDimensions { offset, .. }
            | Fault::NegativeDimension { offset, .. }
            | Fault::ElementCountOverflow { offset, .. }
            | Fault::UnknownType { offset, .. }
            | Fault::RemovedType { offset, .. }
            | Fault::PartialBlock { offset, .. }
            | Fault::SizeOverflow { offset, .. }
            | Fault::TensorOffset { offset, .. }
            | Fault::DataStartPastEnd { offset, .. }
            | Fault::TensorDataPastEnd { offset, .. } => *offset,
        }
    }
}

/// The first four bytes, as text when they are printable ASCII, else in hex.
fn show_magic(found: &[u8; 4]) -> String {
    if found.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("\"{}\"", found.iter().map(|&b| char::from(b)).collect::<String>())
    } else {
        format!("the bytes {:02x} {:02x} {:02x} {:02x}", found[0], found[1], found[2], found[3])
    }
}

/// The longest key or name a fault shows, in characters: a key may be up to
/// 1 GiB, which no message should copy.
const SHOWN_CHARS: usize = 200;

/// A key or tensor name for a message: lossy UTF-8, control characters
/// escaped (a name must not move the terminal's cursor), cut at 200 chars.
pub(crate) fn shown(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(SHOWN_CHARS * 4)];
    let text = String::from_utf8_lossy(head);
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == SHOWN_CHARS {
            out.push('…');
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if head.len() < bytes.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_escapes_and_cuts() {
        assert_eq!(shown(b"blk.0.attn_q.weight"), "blk.0.attn_q.weight");
        assert_eq!(shown(b"a\nb\x1b"), "a\\nb\\u{1b}");
        assert_eq!(shown(b"\xff"), "\u{fffd}");
        assert_eq!(shown(&[b'x'; 300]).chars().count(), SHOWN_CHARS + 1);
        assert_eq!(shown(&[b'x'; 2000]).chars().count(), SHOWN_CHARS + 1);
    }

    #[test]
    fn magic_is_shown_plainly() {
        assert_eq!(show_magic(b"GGML"), "\"GGML\"");
        assert_eq!(show_magic(&[0, 1, 0xff, b'A']), "the bytes 00 01 ff 41");
    }
}
