//! The fuzz target's seeds (fuzz/seeds/read_gguf/): small valid files from
//! the test writer. `cargo test -p mcscore-gguf --test seeds -- --ignored`
//! writes them again; the committed ones must pass the check.

mod common;

use std::path::PathBuf;

use common::{Gguf, Tensor, F16, F32, Q4_0, Q8_0, V};

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/read_gguf")
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let metadata = Gguf::empty()
        .kv("general.architecture", V::str("llama"))
        .kv("general.alignment", V::U32(8))
        .kv("a.u8", V::U8(1))
        .kv("a.i8", V::I8(-1))
        .kv("a.u16", V::U16(2))
        .kv("a.i16", V::I16(-2))
        .kv("a.u32", V::U32(3))
        .kv("a.i32", V::I32(-3))
        .kv("a.f32", V::F32(0.5))
        .kv("a.bool", V::Bool(true))
        .kv("a.u64", V::U64(4))
        .kv("a.i64", V::I64(-4))
        .kv("a.f64", V::F64(0.25))
        .kv("a.strs", V::Arr(8, vec![V::str("x"), V::str("")]))
        .kv("a.u8s", V::Arr(0, vec![V::U8(1), V::U8(2), V::U8(3)]))
        .kv("a.none", V::Arr(12, vec![]));
    let mut tensors = Gguf::empty()
        .kv("general.architecture", V::str("llama"))
        .kv("general.alignment", V::U32(8))
        .tensor(Tensor::new("f32", F32, &[2]))
        .tensor(Tensor::new("f16", F16, &[2, 2]))
        .tensor(Tensor::new("q4_0", Q4_0, &[32]))
        .tensor(Tensor::new("q8_0", Q8_0, &[32, 1]));
    tensors.alignment = 8;
    let v2 = Gguf { version: 2, ..Gguf::empty() }.kv("general.architecture", V::str("gemma3")).tensor(Tensor::new("w", F32, &[3]));
    vec![
        ("empty.gguf", Gguf::empty().build().bytes),
        ("metadata.gguf", metadata.build().bytes),
        ("tensors.gguf", tensors.build().bytes),
        ("v2-default-alignment.gguf", v2.build().bytes),
    ]
}

#[test]
fn committed_seeds_pass_and_are_current() {
    for (name, bytes) in seeds() {
        let path = seeds_dir().join(name);
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(mcscore_gguf::parse(&committed).is_ok(), "{name}");
        assert_eq!(committed, bytes, "{name} differs from the writer's: run this file's ignored test to rewrite it");
        assert!(bytes.len() < 1024, "{name}: seeds stay small");
    }
}

#[test]
#[ignore = "rewrites fuzz/seeds/read_gguf/"]
fn write_fuzz_seeds() {
    std::fs::create_dir_all(seeds_dir()).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(seeds_dir().join(name), bytes).unwrap();
    }
}
