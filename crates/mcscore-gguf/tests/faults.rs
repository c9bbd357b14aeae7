//! Each fault, made from the valid reference file, gives exactly its variant
//! at the offset of the field at fault, with the key or tensor named.

mod common;

use common::{Built, Gguf, Tensor, F16, F32, V};
use mcscore_gguf::{parse, Fault};

fn fault(bytes: &[u8]) -> Fault {
    let fault = parse(bytes).expect_err("the file must be refused");
    // Plain English with numbers, never Rust's debug text.
    let message = fault.to_string();
    assert!(!message.contains("Some(") && !message.contains("None"), "{message}");
    assert!(message.starts_with(&format!("at byte {}: ", fault.offset())), "{message}");
    fault
}

fn valid() -> Built {
    Gguf::valid().build()
}

/// The reference file's tensors, by index.
const T0: &str = "token_embd.weight";
const T1: &str = "blk.0.attn_q.weight";
const T2: &str = "blk.0.attn_norm.weight";

#[test]
fn empty_and_three_bytes() {
    assert_eq!(fault(b""), Fault::Truncated { offset: 0, what: "the magic".into(), needed: 4, remaining: 0 });
    assert_eq!(fault(b"GGU"), Fault::Truncated { offset: 0, what: "the magic".into(), needed: 4, remaining: 3 });
}

#[test]
fn bad_magic() {
    let mut built = valid();
    built.bytes[..4].copy_from_slice(b"GGML");
    assert_eq!(fault(&built.bytes), Fault::BadMagic { offset: 0, found: *b"GGML" });
    assert_eq!(fault(&built.bytes).to_string(), "at byte 0: the file starts with \"GGML\", not the GGUF magic \"GGUF\"");
    built.bytes[..4].copy_from_slice(&[0x7f, b'E', b'L', b'F']);
    assert_eq!(fault(&built.bytes).to_string(), "at byte 0: the file starts with the bytes 7f 45 4c 46, not the GGUF magic \"GGUF\"");
}

#[test]
fn versions() {
    let at = valid().at("version");
    assert_eq!(at, 4);
    assert_eq!(fault(&valid().set_u32("version", 0).bytes), Fault::VersionZero { offset: 4 });
    assert_eq!(fault(&valid().set_u32("version", 1).bytes), Fault::VersionOne { offset: 4 });
    assert_eq!(fault(&valid().set_u32("version", 99).bytes), Fault::VersionTooNew { offset: 4, version: 99, max: 3 });
    assert_eq!(fault(&valid().set_u32("version", 4).bytes), Fault::VersionTooNew { offset: 4, version: 4, max: 3 });
    // A big-endian version 3.
    assert_eq!(fault(&valid().set_u32("version", 0x0300_0000).bytes), Fault::ByteSwappedVersion { offset: 4, version: 0x0300_0000 });
    assert_eq!(
        fault(&valid().set_u32("version", 99).bytes).to_string(),
        "at byte 4: GGUF version 99 is newer than the latest version llama.cpp reads, 3"
    );
}

#[test]
fn counts_that_cannot_fit() {
    let built = valid();
    let rest = built.bytes.len() as u64 - 24;
    let max = rest / 24;
    assert_eq!(fault(&valid().set_u64("n_tensors", 1 << 63).bytes), Fault::TensorCount { offset: 8, count: 1 << 63, max });
    assert_eq!(fault(&valid().set_u64("n_tensors", u64::MAX).bytes), Fault::TensorCount { offset: 8, count: u64::MAX, max });
    assert_eq!(fault(&valid().set_u64("n_tensors", max + 1).bytes), Fault::TensorCount { offset: 8, count: max + 1, max });
    let max = (rest - 4 * 24) / 14;
    assert_eq!(fault(&valid().set_u64("n_kv", 1 << 63).bytes), Fault::MetadataCount { offset: 16, count: 1 << 63, max });
    assert_eq!(fault(&valid().set_u64("n_kv", max + 1).bytes), Fault::MetadataCount { offset: 16, count: max + 1, max });
    // A count that fits the bytes but not the file's structure: the entries
    // run into the tensor infos and fail there.
    assert!(parse(&valid().set_u64("n_kv", 21).bytes).is_err());
}

#[test]
fn string_lengths() {
    let b = valid();
    assert_eq!(
        fault(&valid().set_u64("kv2", 1 << 63).bytes),
        Fault::StringTooLong { offset: b.at("kv2"), what: "the key of metadata entry 2".into(), len: 1 << 63, max: 1 << 30 }
    );
    assert_eq!(
        fault(&valid().set_u64("kv0.value", (1 << 30) + 1).bytes),
        Fault::StringTooLong {
            offset: b.at("kv0.value"),
            what: "the value of metadata key 'general.architecture' (entry 0)".into(),
            len: (1 << 30) + 1,
            max: 1 << 30
        }
    );
    // Within the limit but past the end of the file.
    let remaining = b.bytes.len() as u64 - b.at("kv0.value") - 8;
    assert_eq!(
        fault(&valid().set_u64("kv0.value", remaining + 1).bytes),
        Fault::Truncated {
            offset: b.at("kv0.value") + 8,
            what: "the value of metadata key 'general.architecture' (entry 0)".into(),
            needed: remaining + 1,
            remaining
        }
    );
    assert_eq!(
        fault(&valid().set_u64("t1", 1 << 40).bytes),
        Fault::StringTooLong { offset: b.at("t1"), what: "the name of tensor 1".into(), len: 1 << 40, max: 1 << 30 }
    );
    // An element of a string array (entry 15, tokenizer.ggml.tokens).
    assert_eq!(
        fault(&valid().set_u64("kv15.value", 1 << 62).bytes),
        Fault::StringTooLong {
            offset: b.at("kv15.value"),
            what: "element 0 of metadata key 'tokenizer.ggml.tokens' (entry 15)".into(),
            len: 1 << 62,
            max: 1 << 30
        }
    );
}

#[test]
fn keys() {
    let built = Gguf::valid().kv("general.name", V::str("again")).build();
    assert_eq!(
        fault(&built.bytes),
        Fault::DuplicateKey { offset: built.at("kv20"), index: 20, key: "general.name".into(), first_index: 2 }
    );
    assert_eq!(
        fault(&built.bytes).to_string(),
        format!("at byte {}: metadata entry 20 repeats the key 'general.name' of entry 2", built.at("kv20"))
    );
    let built = Gguf::valid().kv("", V::U8(1)).build();
    assert_eq!(fault(&built.bytes), Fault::EmptyKey { offset: built.at("kv20"), index: 20 });
    // A key with control characters is shown escaped.
    let built = Gguf::valid().kv("a\nb", V::U8(1)).kv("a\nb", V::U8(1)).build();
    assert_eq!(fault(&built.bytes), Fault::DuplicateKey { offset: built.at("kv21"), index: 21, key: "a\\nb".into(), first_index: 20 });
}

#[test]
fn value_types() {
    let b = valid();
    let key = "gemma3.context_length".to_string();
    assert_eq!(
        fault(&valid().set_i32("kv3.type", 99).bytes),
        Fault::BadValueType { offset: b.at("kv3.type"), index: 3, key: key.clone(), value_type: 99 }
    );
    assert_eq!(
        fault(&valid().set_i32("kv3.type", -1).bytes),
        Fault::BadValueType { offset: b.at("kv3.type"), index: 3, key: key.clone(), value_type: -1 }
    );
    assert_eq!(
        fault(&valid().set_i32("kv3.type", 13).bytes),
        Fault::BadValueType { offset: b.at("kv3.type"), index: 3, key, value_type: 13 }
    );
    let key = "tokenizer.ggml.scores".to_string();
    assert_eq!(
        fault(&valid().set_i32("kv16.elem", 13).bytes),
        Fault::BadValueType { offset: b.at("kv16.elem"), index: 16, key: key.clone(), value_type: 13 }
    );
    assert_eq!(fault(&valid().set_i32("kv16.elem", 9).bytes), Fault::NestedArray { offset: b.at("kv16.elem"), index: 16, key });
}

#[test]
fn arrays() {
    let b = valid();
    let key = "tokenizer.ggml.scores".to_string();
    assert_eq!(
        fault(&valid().set_u64("kv16.count", 1 << 62).bytes),
        Fault::ArrayTooLong { offset: b.at("kv16.count"), index: 16, key: key.clone(), count: 1 << 62, max: 1 << 30 }
    );
    assert_eq!(
        fault(&valid().set_u64("kv16.count", (1 << 30) + 1).bytes),
        Fault::ArrayTooLong { offset: b.at("kv16.count"), index: 16, key: key.clone(), count: (1 << 30) + 1, max: 1 << 30 }
    );
    // Within the limit, but more f32s than the file holds.
    let remaining = b.bytes.len() as u64 - b.at("kv16.value");
    assert_eq!(
        fault(&valid().set_u64("kv16.count", 1 << 30).bytes),
        Fault::Truncated {
            offset: b.at("kv16.value"),
            what: format!("the {} elements of metadata key '{key}' (entry 16)", 1u64 << 30),
            needed: 4 << 30,
            remaining
        }
    );
    // Strings: 8 bytes each at least, checked before any is read.
    let remaining = b.bytes.len() as u64 - b.at("kv15.value");
    assert_eq!(
        fault(&valid().set_u64("kv15.count", remaining / 8 + 1).bytes),
        Fault::Truncated {
            offset: b.at("kv15.value"),
            what: format!("the {} elements of metadata key 'tokenizer.ggml.tokens' (entry 15)", remaining / 8 + 1),
            needed: (remaining / 8 + 1) * 8,
            remaining
        }
    );
}

#[test]
fn alignment() {
    let b = valid();
    for bad in [0, 3, 48, u32::MAX] {
        assert_eq!(
            fault(&valid().set_u32("kv1.value", bad).bytes),
            Fault::AlignmentValue { offset: b.at("kv1.value"), index: 1, alignment: bad }
        );
    }
    let mut gguf = Gguf::valid();
    gguf.kvs[1].1 = V::U64(64);
    let built = gguf.build();
    assert_eq!(fault(&built.bytes), Fault::AlignmentType { offset: built.at("kv1.type"), index: 1, found: "u64".into() });
    gguf.kvs[1].1 = V::Arr(4, vec![V::U32(64)]);
    let built = gguf.build();
    assert_eq!(fault(&built.bytes), Fault::AlignmentType { offset: built.at("kv1.type"), index: 1, found: "an array of u32".into() });
    assert_eq!(
        fault(&built.bytes).to_string(),
        format!("at byte {}: general.alignment (entry 1) must be a u32 but is an array of u32", built.at("kv1.type"))
    );
}

#[test]
fn tensor_names() {
    let long = "x".repeat(64);
    let built = Gguf::valid().tensor(Tensor::new(&long, F32, &[1])).build();
    assert_eq!(fault(&built.bytes), Fault::TensorNameTooLong { offset: built.at("t4"), index: 4, name: long, len: 64, max: 63 });
    let built = Gguf::valid().tensor(Tensor::new(T1, F32, &[1])).build();
    assert_eq!(fault(&built.bytes), Fault::DuplicateTensorName { offset: built.at("t4"), index: 4, name: T1.into(), first_index: 1 });
    // ggml keeps a name up to its NUL; llama.cpp's loader then sees two.
    let built = Gguf::valid().tensor(Tensor::new(&format!("{T2}\0b"), F32, &[1])).build();
    assert_eq!(
        fault(&built.bytes),
        Fault::DuplicateTensorName { offset: built.at("t4"), index: 4, name: format!("{T2}\\u{{0}}b"), first_index: 2 }
    );
}

#[test]
fn dimensions() {
    let b = valid();
    assert_eq!(
        fault(&valid().set_u32("t1.ndims", 5).bytes),
        Fault::TooManyDimensions { offset: b.at("t1.ndims"), index: 1, name: T1.into(), n_dims: 5, max: 4 }
    );
    assert_eq!(
        fault(&valid().set_i64("t0.dim1", -1).bytes),
        Fault::NegativeDimension { offset: b.at("t0.dim1"), index: 0, name: T0.into(), dim: 1, value: -1 }
    );
    assert_eq!(
        fault(&valid().set_u64("t0.dim0", 1 << 63).bytes),
        Fault::NegativeDimension { offset: b.at("t0.dim0"), index: 0, name: T0.into(), dim: 0, value: i64::MIN }
    );
    assert_eq!(
        fault(&valid().set_i64("t0.dim1", i64::MAX).bytes),
        Fault::ElementCountOverflow { offset: b.at("t0.ndims"), index: 0, name: T0.into(), shape: [64, i64::MAX, 1, 1] }
    );
    let built = Gguf::valid().tensor(Tensor::new("big", F32, &[1 << 32, 1 << 31, 1, 1])).build();
    assert_eq!(
        fault(&built.bytes),
        Fault::ElementCountOverflow { offset: built.at("t4.ndims"), index: 4, name: "big".into(), shape: [1 << 32, 1 << 31, 1, 1] }
    );
    assert_eq!(
        fault(&built.bytes).to_string(),
        format!(
            "at byte {}: tensor 'big' (tensor 4) has shape 4294967296 x 2147483648 x 1 x 1, more than 2^63 - 1 elements",
            built.at("t4.ndims")
        )
    );
    // 2^62 x 1 x 0: an empty tensor, whatever its other dimensions.
    let mut gguf = Gguf::valid();
    gguf.tensors.push(Tensor::new("empty", F16, &[1 << 62, 0, 1 << 62]));
    let built = gguf.build();
    assert!(parse(&built.bytes).is_ok());
}

#[test]
fn ggml_types() {
    let b = valid();
    for code in [43, 1000, -1, i32::MIN] {
        assert_eq!(
            fault(&valid().set_i32("t2.type", code).bytes),
            Fault::UnknownType { offset: b.at("t2.type"), index: 2, name: T2.into(), ggml_type: code, max: 43 }
        );
    }
    for (code, type_name) in [(4, "q4_2"), (5, "q4_3"), (31, "q4_0_4_4"), (33, "q4_0_8_8"), (36, "iq4_nl_4_4"), (38, "iq4_nl_8_8")] {
        assert_eq!(
            fault(&valid().set_i32("t2.type", code).bytes),
            Fault::RemovedType { offset: b.at("t2.type"), index: 2, name: T2.into(), ggml_type: code, type_name }
        );
    }
    // Q4_0 rows come in blocks of 32.
    assert_eq!(
        fault(&valid().set_i64("t1.dim0", 33).bytes),
        Fault::PartialBlock { offset: b.at("t1.type"), index: 1, name: T1.into(), type_name: "q4_0", row: 33, block: 32 }
    );
    // The F32 tensor as Q4_K: 5 elements per row, blocks of 256.
    assert_eq!(
        fault(&valid().set_i32("t2.type", 12).bytes),
        Fault::PartialBlock { offset: b.at("t2.type"), index: 2, name: T2.into(), type_name: "q4_K", row: 5, block: 256 }
    );
}

#[test]
fn sizes_that_overflow() {
    let b = valid();
    // 2^62 f32s: 2^64 bytes.
    assert_eq!(
        fault(&valid().set_i64("t2.dim0", 1 << 62).bytes),
        Fault::SizeOverflow { offset: b.at("t2.type"), index: 2, name: T2.into() }
    );
    // Each fits (2^62 f16s, 2^63 bytes); their padded sum does not.
    let mut gguf = Gguf::valid();
    gguf.tensors = vec![Tensor::new("a", F16, &[1 << 62]), Tensor::new("b", F16, &[1 << 62])];
    let mut built = gguf.build();
    built.set_u64("t1.offset", 1 << 63);
    assert_eq!(fault(&built.bytes), Fault::SizeOverflow { offset: built.at("t1.offset"), index: 1, name: "b".into() });
}

#[test]
fn tensor_offsets() {
    let b = valid();
    let expected = b.at("t1.data") - b.at("data");
    assert_eq!(expected, 256);
    assert_eq!(
        fault(&valid().set_u64("t1.offset", expected + 64).bytes),
        Fault::TensorOffset { offset: b.at("t1.offset"), index: 1, name: T1.into(), found: expected + 64, expected }
    );
    // Aligned to 32 but not to the file's 64, and unpadded: both refused.
    for found in [expected - 32, 204, 0] {
        assert_eq!(
            fault(&valid().set_u64("t1.offset", found).bytes),
            Fault::TensorOffset { offset: b.at("t1.offset"), index: 1, name: T1.into(), found, expected }
        );
    }
    assert_eq!(
        fault(&valid().set_u64("t0.offset", 64).bytes),
        Fault::TensorOffset { offset: b.at("t0.offset"), index: 0, name: T0.into(), found: 64, expected: 0 }
    );
}

#[test]
fn truncated_files() {
    let b = valid();
    assert!(b.at("data") > b.at("header_end") + 1, "the header must need padding");
    // Into the last tensor's data.
    let cut = &b.bytes[..b.at("t3.data_end") as usize - 1];
    assert_eq!(
        fault(cut),
        Fault::TensorDataPastEnd {
            offset: b.at("t3.offset"),
            index: 3,
            name: "output_norm.weight".into(),
            end: b.at("t3.data_end").into(),
            file_len: cut.len() as u64
        }
    );
    // Into the first: it is the first reported.
    let cut = &b.bytes[..b.at("t0.data") as usize + 10];
    assert_eq!(
        fault(cut),
        Fault::TensorDataPastEnd {
            offset: b.at("t0.offset"),
            index: 0,
            name: T0.into(),
            end: b.at("t0.data_end").into(),
            file_len: cut.len() as u64
        }
    );
    // Into the padding before the data section.
    let cut = &b.bytes[..b.at("header_end") as usize + 1];
    assert_eq!(fault(cut), Fault::DataStartPastEnd { offset: b.at("header_end"), data_offset: b.at("data"), file_len: cut.len() as u64 });
    // Exactly at the end of the header: no data section at all.
    let cut = &b.bytes[..b.at("header_end") as usize];
    assert!(matches!(fault(cut), Fault::DataStartPastEnd { .. }));
    // Into a tensor info's type.
    let cut = &b.bytes[..b.at("t1.type") as usize + 2];
    assert_eq!(
        fault(cut),
        Fault::Truncated { offset: b.at("t1.type"), what: format!("the ggml type of tensor '{T1}' (tensor 1)"), needed: 4, remaining: 2 }
    );
}

#[test]
fn every_truncation_of_the_data_is_refused_until_the_last_byte() {
    let b = valid();
    let last = b.at("t3.data_end") as usize;
    for len in 0..b.bytes.len() {
        let result = parse(&b.bytes[..len]);
        assert_eq!(result.is_ok(), len >= last, "length {len}");
    }
}
