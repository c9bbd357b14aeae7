//! The two type tables a GGUF header refers to: GGUF's own value types (for
//! metadata) and ggml's tensor types, copied from the llama.cpp this workspace
//! links (`ggml/src/gguf.cpp`'s `GGUF_TYPE_SIZE`, `ggml/include/ggml.h`'s
//! `enum ggml_type` and `ggml/src/ggml.c`'s `type_traits`, block sizes from
//! `ggml-common.h`). When llama-cpp-sys-2 is bumped, compare these tables with
//! the new sources: a type llama.cpp adds is refused here until it is listed.

/// GGUF value type codes (`enum gguf_type`).
pub(crate) const GGUF_TYPE_STRING: i32 = 8;
pub(crate) const GGUF_TYPE_ARRAY: i32 = 9;
pub(crate) const GGUF_TYPE_UINT32: i32 = 4;

/// Name and byte size of each GGUF value type, by code 0..=12; strings and
/// arrays have no fixed size (0).
const GGUF_TYPES: [(&str, u64); 13] = [
    ("u8", 1),
    ("i8", 1),
    ("u16", 2),
    ("i16", 2),
    ("u32", 4),
    ("i32", 4),
    ("f32", 4),
    ("bool", 1),
    ("string", 0),
    ("array", 0),
    ("u64", 8),
    ("i64", 8),
    ("f64", 8),
];

/// The name of a GGUF value type code, if it is one.
pub(crate) fn gguf_type_name(code: i32) -> Option<&'static str> {
    usize::try_from(code).ok().and_then(|i| GGUF_TYPES.get(i)).map(|&(name, _)| name)
}

/// The byte size of a fixed-size GGUF value type (0 for strings and arrays).
pub(crate) fn gguf_type_size(code: i32) -> u64 {
    usize::try_from(code).ok().and_then(|i| GGUF_TYPES.get(i)).map_or(0, |&(_, size)| size)
}

/// One ggml tensor type: its name as ggml spells it, the number of elements
/// in one block and the bytes one block takes. Removed types keep their slot
/// with a block size of 0, as in ggml.c, which is how gguf.cpp refuses them.
#[derive(Clone, Copy)]
pub(crate) struct GgmlType {
    pub(crate) name: &'static str,
    pub(crate) block: u64,
    pub(crate) size: u64,
}

const fn t(name: &'static str, block: u64, size: u64) -> GgmlType {
    GgmlType { name, block, size }
}

/// `GGML_TYPE_COUNT` entries, indexed by `enum ggml_type`.
const GGML_TYPES: [GgmlType; 43] = [
    t("f32", 1, 4),
    t("f16", 1, 2),
    t("q4_0", 32, 18),
    t("q4_1", 32, 20),
    t("q4_2", 0, 0),
    t("q4_3", 0, 0),
    t("q5_0", 32, 22),
    t("q5_1", 32, 24),
    t("q8_0", 32, 34),
    t("q8_1", 32, 36),
    t("q2_K", 256, 84),
    t("q3_K", 256, 110),
    t("q4_K", 256, 144),
    t("q5_K", 256, 176),
    t("q6_K", 256, 210),
    t("q8_K", 256, 292),
    t("iq2_xxs", 256, 66),
    t("iq2_xs", 256, 74),
    t("iq3_xxs", 256, 98),
    t("iq1_s", 256, 50),
    t("iq4_nl", 32, 18),
    t("iq3_s", 256, 110),
    t("iq2_s", 256, 82),
    t("iq4_xs", 256, 136),
    t("i8", 1, 1),
    t("i16", 1, 2),
    t("i32", 1, 4),
    t("i64", 1, 8),
    t("f64", 1, 8),
    t("iq1_m", 256, 56),
    t("bf16", 1, 2),
    t("q4_0_4_4", 0, 0),
    t("q4_0_4_8", 0, 0),
    t("q4_0_8_8", 0, 0),
    t("tq1_0", 256, 54),
    t("tq2_0", 256, 66),
    t("iq4_nl_4_4", 0, 0),
    t("iq4_nl_4_8", 0, 0),
    t("iq4_nl_8_8", 0, 0),
    t("mxfp4", 32, 17),
    t("nvfp4", 64, 36),
    t("q1_0", 128, 18),
    t("q2_0", 64, 18),
];

/// `GGML_TYPE_COUNT`: codes at or past it are unknown to this llama.cpp.
pub(crate) const GGML_TYPE_COUNT: i32 = GGML_TYPES.len() as i32;

/// The ggml type with this code, if the code is in `[0, GGML_TYPE_COUNT)`.
pub(crate) fn ggml_type(code: i32) -> Option<GgmlType> {
    usize::try_from(code).ok().and_then(|i| GGML_TYPES.get(i)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_types_are_exactly_the_ones_ggml_removed() {
        let removed: Vec<i32> = (0..GGML_TYPE_COUNT).filter(|&c| ggml_type(c).is_some_and(|t| t.block == 0)).collect();
        assert_eq!(removed, [4, 5, 31, 32, 33, 36, 37, 38]);
        assert!(ggml_type(-1).is_none() && ggml_type(GGML_TYPE_COUNT).is_none());
        assert!(GGML_TYPES.iter().all(|t| (t.block == 0) == (t.size == 0)));
    }

    #[test]
    fn gguf_type_codes() {
        assert_eq!(gguf_type_name(GGUF_TYPE_STRING), Some("string"));
        assert_eq!(gguf_type_name(GGUF_TYPE_ARRAY), Some("array"));
        assert_eq!(gguf_type_name(GGUF_TYPE_UINT32), Some("u32"));
        assert_eq!(gguf_type_name(13), None);
        assert_eq!(gguf_type_name(-1), None);
        assert_eq!(gguf_type_size(12), 8);
    }
}
