//! Each value llama.cpp's model loader would abort on (or silently replace),
//! made from the valid reference file, gives exactly its variant at the
//! offset of the value at fault.

mod common;

use common::{Gguf, V};
use mcscore_gguf::{check_model, parse, ModelFault};

/// The model fault of a structurally sound file.
fn fault(gguf: &Gguf) -> (ModelFault, common::Built) {
    let built = gguf.build();
    let header = parse(&built.bytes).unwrap_or_else(|f| panic!("structurally sound: {f}"));
    let fault = check_model(&header).expect_err("the model must be refused");
    let message = fault.to_string();
    assert!(message.starts_with(&format!("at byte {}: ", fault.offset())), "{message}");
    (fault, built)
}

/// The reference file with `key`'s value replaced; its entry's index.
fn with(key: &str, value: V) -> (Gguf, usize) {
    let mut gguf = Gguf::valid();
    let index = gguf.kvs.iter().position(|(k, _)| k == key.as_bytes()).unwrap_or_else(|| {
        gguf.kvs.push((key.as_bytes().to_vec(), V::U8(0)));
        gguf.kvs.len() - 1
    });
    gguf.kvs[index].1 = value;
    (gguf, index)
}

#[test]
fn the_reference_file_is_a_model() {
    let built = Gguf::valid().build();
    check_model(&parse(&built.bytes).unwrap()).unwrap();
}

#[test]
fn no_tensors() {
    let mut gguf = Gguf::valid();
    gguf.tensors.clear();
    assert_eq!(fault(&gguf).0, ModelFault::NoTensors { offset: 8 });
}

#[test]
fn block_counts() {
    for count in [0, 513, u64::MAX] {
        let (gguf, i) = with("gemma3.block_count", V::U64(count));
        let (fault, built) = fault(&gguf);
        let offset = built.at(&format!("kv{i}.value"));
        assert_eq!(fault, ModelFault::BlockCount { offset, key: "gemma3.block_count".into(), count, max: 512 });
    }
    for count in [1, 512] {
        let (gguf, _) = with("gemma3.block_count", V::U32(count));
        check_model(&parse(&gguf.build().bytes).unwrap()).unwrap();
    }
    let (gguf, i) = with("gemma3.nextn_predict_layers", V::U32(2));
    let (fault, built) = fault(&gguf);
    let offset = built.at(&format!("kv{i}.value"));
    assert_eq!(fault, ModelFault::NextnLayers { offset, key: "gemma3.nextn_predict_layers".into(), layers: 2, block_count: 1 });
}

#[test]
fn epsilons() {
    let key = "gemma3.attention.layer_norm_rms_epsilon";
    for (value, shown) in [(V::F32(-1e-6), "-0.000001"), (V::F32(f32::NAN), "NaN"), (V::F64(f64::INFINITY), "inf"), (V::F64(-0.1), "-0.1")]
    {
        let (gguf, i) = with(key, value);
        let (fault, built) = fault(&gguf);
        let offset = built.at(&format!("kv{i}.value"));
        assert_eq!(fault, ModelFault::Epsilon { offset, key: key.into(), value: shown.into() });
    }
    for value in [V::F32(0.0), V::F32(1e-6), V::F64(1e-5)] {
        let (gguf, _) = with("gemma3.attention.layer_norm_epsilon", value);
        check_model(&parse(&gguf.build().bytes).unwrap()).unwrap();
    }
}

#[test]
fn tokens_given_twice() {
    // The second "a", and an empty token read as llama.cpp names it.
    for (tokens, index, first_index, token) in [(["<pad>", "a", "b", "a"], 3, 1, "a"), (["<pad>", "", "[EMPTY_1]", "x"], 2, 1, "[EMPTY_1]")]
    {
        let (gguf, i) = with("tokenizer.ggml.tokens", V::Arr(8, tokens.iter().map(|t| V::str(t)).collect()));
        let (fault, built) = fault(&gguf);
        let offset = built.at(&format!("kv{i}.value")) + tokens[..index].iter().map(|t| 8 + t.len() as u64).sum::<u64>();
        assert_eq!(fault, ModelFault::DuplicateToken { offset, index: index as u64, token: token.into(), first_index });
    }
}

#[test]
fn special_token_ids_past_the_vocabulary() {
    for key in ["tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.fim_pre_token_id"] {
        let (gguf, i) = with(key, V::U32(4));
        let (fault, built) = fault(&gguf);
        let offset = built.at(&format!("kv{i}.value"));
        assert_eq!(fault, ModelFault::SpecialTokenOutOfRange { offset, key: key.into(), id: 4, vocab: 4 });
        let (gguf, _) = with(key, V::U32(3));
        check_model(&parse(&gguf.build().bytes).unwrap()).unwrap();
    }
}

#[test]
fn rope_values_that_make_every_logit_nan() {
    let base = "gemma3.rope.freq_base";
    for (key, value, shown, rule) in [
        (base, V::F32(0.0), "0", "a RoPE frequency base must be above 0"),
        (base, V::F32(-10000.0), "-10000", "a RoPE frequency base must be above 0"),
        (base, V::F32(f32::NAN), "NaN", "a RoPE value must be a finite number"),
        ("gemma3.rope.freq_base_swa", V::F32(0.0), "0", "a RoPE frequency base must be above 0"),
        ("gemma3.rope.scaling.factor", V::F64(f64::INFINITY), "inf", "a RoPE value must be a finite number"),
    ] {
        let (gguf, i) = with(key, value);
        let (fault, built) = fault(&gguf);
        let offset = built.at(&format!("kv{i}.value"));
        assert_eq!(fault, ModelFault::Rope { offset, key: key.into(), value: shown.into(), rule });
    }
    for (key, value) in [(base, V::F32(10000.0)), ("gemma3.rope.scaling.factor", V::F32(0.0)), ("gemma3.rope.scaling.factor", V::F32(8.0))]
    {
        let (gguf, _) = with(key, value);
        check_model(&parse(&gguf.build().bytes).unwrap()).unwrap();
    }
}

/// llama.cpp's RWKV tokenizer loops for ever where a byte begins a token but
/// is not a token of its own; RWKV's own vocabularies hold every byte.
#[test]
fn an_rwkv_vocabulary_without_a_byte_that_begins_a_token() {
    let rwkv = |tokens: &[&str]| {
        let (mut gguf, i) = with("tokenizer.ggml.tokens", V::Arr(8, tokens.iter().map(|t| V::str(t)).collect()));
        gguf.kvs.push((b"tokenizer.ggml.model".to_vec(), V::str("rwkv")));
        (gguf, i)
    };
    // "ab" begins with a, which is no token; `\x61` is "a" escaped.
    let tokens = ["<", "b", "ab", "\\x62c"];
    let (gguf, i) = rwkv(&tokens);
    let (fault, built) = fault(&gguf);
    let offset = built.at(&format!("kv{i}.value")) + tokens[..2].iter().map(|t| 8 + t.len() as u64).sum::<u64>();
    assert_eq!(fault, ModelFault::RwkvByte { offset, index: 2, token: "ab".into(), byte: b'a' });
    // Every first byte a token (one of them escaped): accepted.
    let (gguf, _) = rwkv(&["<", "s", "<s>", "\\x61", "ab", "\\tx", "\\t"]);
    check_model(&parse(&gguf.build().bytes).unwrap()).unwrap();
    // Texts as llama.cpp reads them: an empty token is "[EMPTY_1]", which
    // begins with "[", and "b\0c" is "b".
    let tokens = ["b", "", "a"];
    let (gguf, i) = rwkv(&tokens);
    let (empty, built) = self::fault(&gguf);
    let offset = built.at(&format!("kv{i}.value")) + 9;
    assert_eq!(empty, ModelFault::RwkvByte { offset, index: 1, token: "".into(), byte: b'[' });
    let (gguf, _) = rwkv(&["b\0c", "c"]);
    check_model(&parse(&gguf.build().bytes).unwrap()).unwrap();
}
