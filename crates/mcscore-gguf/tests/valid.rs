//! Valid files pass, and their header reads back what the writer wrote.

mod common;

use common::{Gguf, Tensor, F32, Q4_0, V};
use mcscore_gguf::{parse, Value};

#[test]
fn the_reference_file_passes_and_reads_back() {
    let built = Gguf::valid().build();
    let header = parse(&built.bytes).expect("the reference file is valid");
    assert_eq!(header.version(), 3);
    assert_eq!(header.alignment(), 64);
    assert_eq!(header.tensor_count(), 4);
    assert_eq!(header.metadata_count(), 20);
    assert_eq!(header.data_offset(), built.at("data"));
    assert_eq!(header.data_offset() % 64, 0);
    assert!(header.data_offset() > built.at("header_end"), "the writer's header must need padding for this test to mean much");
    // 204 (Q8_0 64x3), 36 (Q4_0 32x2), 20 (F32 5), 6 (F16 3), each padded to 64.
    assert_eq!(header.data_size(), 256 + 64 + 64 + 64);
    assert_eq!(header.data_offset() + header.data_size(), built.bytes.len() as u64);

    assert_eq!(header.get_str("general.architecture"), Some("gemma3"));
    assert_eq!(header.get_str("general.name"), Some("tiny test model"));
    assert_eq!(header.get_str("tokenizer.chat_template"), Some("{% for m in messages %}{{ m.content }}{% endfor %}"));
    assert_eq!(header.get_u64("gemma3.context_length"), Some(2048));
    assert_eq!(header.get_u64("gemma3.block_count"), Some(1));
    assert_eq!(header.get_u64("general.alignment"), Some(64));
    assert_eq!(header.get("test.u8"), Some(Value::Unsigned(200)));
    assert_eq!(header.get("test.i8"), Some(Value::Signed(-5)));
    assert_eq!(header.get("test.u16"), Some(Value::Unsigned(60000)));
    assert_eq!(header.get("test.i16"), Some(Value::Signed(-30000)));
    assert_eq!(header.get("test.i32"), Some(Value::Signed(-7)));
    assert_eq!(header.get("test.f32"), Some(Value::Float(0.5)));
    assert_eq!(header.get("test.bool"), Some(Value::Bool(true)));
    assert_eq!(header.get("test.i64"), Some(Value::Signed(-1 << 40)));
    assert_eq!(header.get("test.f64"), Some(Value::Float(-2.25)));
    assert_eq!(header.get_u64("test.i64"), None, "a negative integer is no u64");
    assert_eq!(header.get_u64("test.i8"), None);
    assert_eq!(header.get("test.bytes"), Some(Value::String(&[0xff, 0xfe, b'x'])));
    assert_eq!(header.get_str("test.bytes"), None, "not UTF-8");
    assert_eq!(header.get("tokenizer.ggml.tokens"), Some(Value::Array { element_type: "string", len: 4 }));
    assert_eq!(header.get("tokenizer.ggml.scores"), Some(Value::Array { element_type: "f32", len: 4 }));
    assert_eq!(header.get("tokenizer.ggml.token_type"), Some(Value::Array { element_type: "i32", len: 4 }));
    assert_eq!(header.get("test.empty_array"), Some(Value::Array { element_type: "u8", len: 0 }));
    assert_eq!(header.get_str("tokenizer.ggml.tokens"), None);
    assert_eq!(header.get_u64("general.architecture"), None);
    assert_eq!(header.get("no.such.key"), None);
    assert_eq!(header.get(""), None);
    assert_eq!(header.get("general"), None, "a prefix of a key is not the key");
}

#[test]
fn debug_shows_numbers_not_bytes() {
    let built = Gguf::valid().build();
    let shown = format!("{:?}", parse(&built.bytes).unwrap());
    assert_eq!(
        shown,
        format!(
            "Header {{ version: 3, alignment: 64, tensor_count: 4, metadata_count: 20, data_offset: {}, data_size: 448 }}",
            built.at("data")
        )
    );
}

#[test]
fn an_empty_file_and_version_2_pass() {
    let built = Gguf::empty().build();
    assert_eq!(built.bytes.len(), 24);
    let header = parse(&built.bytes).unwrap();
    assert_eq!((header.tensor_count(), header.metadata_count(), header.alignment()), (0, 0, 32));
    // No tensors: gguf.cpp does not pad, the data section is empty at the end.
    assert_eq!((header.data_offset(), header.data_size()), (24, 0));

    let built = Gguf { version: 2, ..Gguf::valid() }.build();
    assert_eq!(parse(&built.bytes).unwrap().version(), 2);
}

#[test]
fn metadata_without_tensors_is_not_padded() {
    let built = Gguf::empty().kv("general.architecture", V::str("llama")).build();
    let header = parse(&built.bytes).unwrap();
    assert_eq!(header.data_offset(), built.bytes.len() as u64);
    assert_ne!(header.data_offset() % 32, 0);
    assert_eq!(header.get_str("general.architecture"), Some("llama"));
}

#[test]
fn default_alignment_is_32() {
    let mut gguf = Gguf::valid();
    gguf.kvs.retain(|(k, _)| k != b"general.alignment");
    gguf.alignment = 32;
    let built = gguf.build();
    let header = parse(&built.bytes).unwrap();
    assert_eq!(header.alignment(), 32);
    assert_eq!(header.data_offset() % 32, 0);
    // 204 → 224, 36 → 64, 20 → 32, 6 → 32.
    assert_eq!(header.data_size(), 224 + 64 + 32 + 32);
}

#[test]
fn the_last_tensors_padding_may_be_missing() {
    let gguf = Gguf { pad_last: false, ..Gguf::valid() };
    let built = gguf.build();
    assert_eq!(built.bytes.len() as u64, built.at("t3.data_end"));
    let header = parse(&built.bytes).unwrap();
    assert!(header.data_offset() + header.data_size() > built.bytes.len() as u64);
}

#[test]
fn edge_values_gguf_cpp_accepts() {
    // Empty tensor (a zero dimension), zero dimensions (a scalar), a name of
    // 63 bytes, an empty name, a bool byte other than 0 and 1, alignment 1,
    // every version-3 value type in arrays.
    let mut gguf = Gguf::empty()
        .kv("general.alignment", V::U32(1))
        .kv("flag", V::Bool(true))
        .kv("ints", V::Arr(10, vec![V::U64(u64::MAX), V::U64(0)]))
        .kv("bools", V::Arr(7, vec![V::Bool(false), V::Bool(true)]))
        .tensor(Tensor::new("empty", Q4_0, &[0, 7]))
        .tensor(Tensor::new(&"n".repeat(63), F32, &[2, 2, 2, 2]))
        .tensor(Tensor::new("scalar", F32, &[]))
        .tensor(Tensor::new("", F32, &[1]));
    gguf.alignment = 1;
    let mut built = gguf.build();
    let at = built.at("kv1.value") as usize;
    built.bytes[at] = 7;
    let header = parse(&built.bytes).unwrap();
    assert_eq!(header.alignment(), 1);
    assert_eq!(header.get("flag"), Some(Value::Bool(true)));
    // 0 (empty), 64 (16 f32s), 4, 4: alignment 1 pads nothing.
    assert_eq!(header.data_size(), 64 + 4 + 4);
    assert_eq!(header.data_offset(), built.at("header_end"));
}
