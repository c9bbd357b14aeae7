//! Model files checked before llama.cpp opens them: every malformed GGUF
//! (crafted from the real model's bytes) exits 1 naming the file, the fault
//! and its byte offset, never llama.cpp's "null result"; a FIFO, a device or
//! a directory is refused by kind at once; random byte flips in the header
//! never crash; values that would make llama.cpp abort (or score with
//! another token) are refused by key and offset, by score and quantize
//! alike. docs/reliability.md lists the cases.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The real model's bytes with `edit` applied, written as DIR/NAME.gguf.
fn crafted(dir: &Path, name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(model()).unwrap();
    edit(&mut bytes);
    let path = dir.join(format!("{name}.gguf"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn score_with(model: &str) -> std::process::Output {
    run(&["score", "-m", model, "-bf", &repo("datasets/arc-easy-validation.bin"), "--limit", "2"])
}

#[test]
fn malformed_gguf_files_are_refused_by_fault_and_offset() {
    let dir = tempdir();
    let d = dir.path();
    let u64_at = |at: usize, value: u64| move |b: &mut Vec<u8>| b[at..at + 8].copy_from_slice(&value.to_le_bytes());
    let cases: Vec<(PathBuf, &str)> = vec![
        (crafted(d, "empty", |b| b.clear()), "the file is empty (0 bytes), not a GGUF model"),
        (crafted(d, "short", |b| b.truncate(3)), "the file is only 3 bytes long"),
        (crafted(d, "magic", |b| b[..4].copy_from_slice(b"GGML")), "at byte 0: the file starts with"),
        (
            crafted(d, "v99", |b| b[4..8].copy_from_slice(&99u32.to_le_bytes())),
            "at byte 4: GGUF version 99 is newer than the latest version llama.cpp reads, 3",
        ),
        (crafted(d, "v1", |b| b[4..8].copy_from_slice(&1u32.to_le_bytes())), "at byte 4: GGUF version 1 is no longer supported"),
        (crafted(d, "tensors", u64_at(8, 1 << 63)), "at byte 8: the tensor count 9223372036854775808 cannot fit in the file"),
        (crafted(d, "metadata", u64_at(16, 1 << 63)), "at byte 16: the metadata count 9223372036854775808 cannot fit in the file"),
        (crafted(d, "key", u64_at(24, 1 << 63)), "at byte 24: the key of metadata entry 0 is a string of 9223372036854775808 bytes"),
        (crafted(d, "truncated", |b| b.truncate(1_000_000)), "metadata key 'tokenizer.ggml.tokens' (entry 20)"),
        (crafted(d, "no-data", |b| b.truncate(b.len() - 4096)), "the file is truncated"),
    ];
    for (path, needle) in &cases {
        let out = score_with(path_str(path));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", path.display());
        assert!(err.contains(&format!("{}: the model does not load: ", path.display())) && err.contains(needle), "{needle:?} not in {err}");
        assert!(!err.contains("null result"), "{err}");
    }
}

/// Where the value of the metadata key `key` starts in the real model: after
/// the key's bytes and its 4-byte type.
fn value_at(key: &str) -> usize {
    let bytes = std::fs::read(model()).unwrap();
    let mut prefixed = (key.len() as u64).to_le_bytes().to_vec();
    prefixed.extend_from_slice(key.as_bytes());
    let at = bytes.windows(prefixed.len()).position(|w| w == prefixed).unwrap_or_else(|| panic!("{key} is not in the model"));
    at + prefixed.len() + 4
}

#[test]
fn values_llama_cpp_would_abort_on_are_refused_by_key_and_offset() {
    let dir = tempdir();
    let d = dir.path();
    let blocks = value_at("gemma3.block_count");
    let eps = value_at("gemma3.attention.layer_norm_rms_epsilon");
    let bos = value_at("tokenizer.ggml.bos_token_id");
    let rope = value_at("gemma3.rope.freq_base");
    let tokenizer = value_at("tokenizer.ggml.model");
    let u32_at = |at: usize, value: u32| move |b: &mut Vec<u8>| b[at..at + 4].copy_from_slice(&value.to_le_bytes());
    let f32_at = |at: usize, value: f32| move |b: &mut Vec<u8>| b[at..at + 4].copy_from_slice(&value.to_le_bytes());
    // The vocabulary's "<bos>" written as "<eos>", the token before it.
    let token = |b: &[u8], text: &[u8]| {
        let mut prefixed = (text.len() as u64).to_le_bytes().to_vec();
        prefixed.extend_from_slice(text);
        b.windows(prefixed.len()).position(|w| w == prefixed).unwrap()
    };
    let model_bytes = std::fs::read(model()).unwrap();
    let bos_token = token(&model_bytes, b"<bos>");
    let cases: Vec<(PathBuf, String)> = vec![
        (crafted(d, "blocks0", u32_at(blocks, 0)), format!("at byte {blocks}: gemma3.block_count is 0; llama.cpp loads models of 1 to 512 blocks")),
        (crafted(d, "blocks513", u32_at(blocks, 513)), format!("at byte {blocks}: gemma3.block_count is 513")),
        (
            crafted(d, "eps", f32_at(eps, -1e-6)),
            format!("at byte {eps}: gemma3.attention.layer_norm_rms_epsilon is -0.000001; a norm's epsilon must be a finite number of at least 0"),
        ),
        (crafted(d, "eps-nan", f32_at(eps, f32::NAN)), format!("at byte {eps}: gemma3.attention.layer_norm_rms_epsilon is NaN")),
        (
            crafted(d, "duplicate", |b| b[bos_token + 8..bos_token + 13].copy_from_slice(b"<eos>")),
            format!("at byte {bos_token}: token 2 of tokenizer.ggml.tokens, '<eos>', repeats token 1"),
        ),
        (
            crafted(d, "bos", u32_at(bos, 1_000_000)),
            format!("at byte {bos}: tokenizer.ggml.bos_token_id is 1000000, past the vocabulary's 262144 tokens"),
        ),
        (
            crafted(d, "rope", f32_at(rope, 0.0)),
            format!("at byte {rope}: gemma3.rope.freq_base is 0; a RoPE frequency base must be above 0"),
        ),
        (crafted(d, "no-tensors", |b| b[8..16].copy_from_slice(&0u64.to_le_bytes())), "at byte 8: the file holds no tensors".to_owned()),
    ];
    for (path, needle) in &cases {
        let prefix = format!("{}: the model does not load: {needle}", path.display());
        let out = score_with(path_str(path));
        assert_eq!(out.status.code(), Some(1), "{}: {}", path.display(), stderr(&out));
        assert!(stderr(&out).contains(&prefix), "{prefix:?} not in {}", stderr(&out));
        // The quantizer reads the same values: refused before it writes.
        let quantized = d.join("quantized.gguf");
        let out = run(&["quantize", path_str(path), path_str(&quantized), "--type", "Q8_0"]);
        assert_eq!(out.status.code(), Some(1), "quantize {}: {}", path.display(), stderr(&out));
        assert!(stderr(&out).contains(needle.as_str()), "quantize: {needle:?} not in {}", stderr(&out));
        let left: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| !n.to_string_lossy().ends_with(".gguf") || n == "quantized.gguf")
            .collect();
        assert!(left.is_empty(), "quantize left {left:?}");
    }
    // Read as "rwkv" by llama.cpp, whose tokenizer then loops for ever on
    // gemma's vocabulary (24 GB in 77 s, then the OOM killer).
    let rwkv = crafted(d, "rwkv", |b| b[tokenizer + 8..tokenizer + 13].copy_from_slice(b"rwkv\0"));
    for out in [score_with(path_str(&rwkv)), run(&["quantize", path_str(&rwkv), path_str(&d.join("q.gguf")), "--type", "Q8_0"])] {
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let message = stderr(&out);
        assert!(message.contains("rwkv.gguf: the model does not load: at byte "), "{message}");
        assert!(message.contains(": tokenizer.ggml.model is rwkv, and token ") && message.contains("would loop for ever"), "{message}");
    }
    let out = run(&["quantize", path_str(d), path_str(&d.join("q.gguf")), "--type", "Q8_0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("IN.gguf names a directory; give a model file"), "{}", stderr(&out));
}

#[test]
fn an_abort_inside_llama_cpp_says_its_check_and_ends_score_and_serve() {
    // "llama" (SentencePiece) read as "bert" (WordPiece): a vocabulary whose
    // byte tokens WordPiece cannot read, which llama.cpp aborts on while
    // loading it. Not checked by mcscore: the test of its abort hook.
    let dir = tempdir();
    let bert = crafted(dir.path(), "bert", |b| {
        let at = b.windows(13).position(|w| w == b"\x05\0\0\0\0\0\0\0llama").unwrap() + 8;
        b[at..at + 5].copy_from_slice(b"bert\0");
    });
    let check = "mcscore: error: llama.cpp stopped the process on one of its internal checks: src/llama-vocab.cpp:";
    let out = score_with(path_str(&bert));
    assert_eq!(out.status.code(), Some(134), "{}", stderr(&out));
    assert!(stderr(&out).contains(check), "{}", stderr(&out));
    // No backtrace (ggml would fork a debugger for one) and nothing on stdout.
    assert_eq!(stderr(&out).lines().count(), 2, "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    // A hostile pass saw serve hang for good after such an abort.
    let started = Instant::now();
    let out = mcscore().args(["serve", "-m", path_str(&bert), "--port", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(134), "{}", stderr(&out));
    assert!(stderr(&out).contains(check), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

#[test]
fn special_files_are_refused_by_kind_without_blocking() {
    let dir = tempdir();
    let fifo = dir.path().join("model.gguf");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let started = Instant::now();
    for (path, kind) in [(path_str(&fifo), "a FIFO"), ("/dev/zero", "a character device"), (path_str(dir.path()), "a directory")] {
        let out = score_with(path);
        assert_eq!(out.status.code(), Some(1), "{path}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("{path}: the model does not load: {kind}, not a regular file")), "{}", stderr(&out));
    }
    // A FIFO opened for reading would wait for a writer for ever.
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}

#[test]
fn byte_flips_in_the_header_never_crash() {
    let dir = tempdir();
    // A seeded walk over the first 64 KiB (the metadata's start, where every
    // count and length lives): each flip is refused with a message or loads.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..12 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let at = (state >> 33) as usize % 65536;
        let bit = (state >> 20) as u8 % 8;
        let path = crafted(dir.path(), &format!("flip{i}"), |b| b[at] ^= 1 << bit);
        let out = score_with(path_str(&path));
        let code = out.status.code();
        assert!(code == Some(0) || code == Some(1), "byte {at} bit {bit}: {code:?} (a signal?): {}", stderr(&out));
        if code == Some(1) {
            assert!(stderr(&out).contains(path_str(&path)) && !stderr(&out).contains("null result"), "byte {at}: {}", stderr(&out));
        }
    }
}

/// `quantize` writes every type llama-quantize offers, and each result
/// loads and scores; the types that need an importance matrix are refused
/// saying so; the output, token-embedding and --pure options change what
/// is written. (A random Llama 256 wide, whose rows fit K-quant blocks.)
#[test]
fn every_quantizer_type_writes_a_model_that_loads() {
    let dir = tempdir();
    let args = ["--dim", "256", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ff", "512", "--type", "f16", "--vocab", "llama-spm"];
    let model = random_model(dir.path(), "f16", &args);
    let out = run(&["quantize", "--help"]);
    let help = stdout(&out);
    let listed = help.split("The type, as llama-quantize names it (any case):").nth(1).unwrap().split("(Q3_K").next().unwrap();
    let types: Vec<String> = listed
        .split([',', ' ', '\n'])
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| w.len() > 1 && w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect();
    assert!(types.len() >= 26, "{types:?}");
    let needs: Vec<&str> = help
        .split("with an importance matrix (--imatrix) also")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .split([',', ' ', '\n'])
        .filter(|w| w.len() > 2 && *w != "and")
        .collect();
    assert_eq!(needs, ["IQ3_XS", "IQ3_XXS", "Q2_K_S", "IQ2_M", "IQ2_S", "IQ2_XS", "IQ2_XXS", "IQ1_M", "IQ1_S"]);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    for kind in types.iter().map(String::as_str).chain(["q4_k", "Q3_K"]) {
        let quant = dir.path().join(format!("{kind}.gguf"));
        let out = run(&["quantize", path_str(&model), path_str(&quant), "--type", kind, "-t", "2"]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let scored = run(&["score", "-m", path_str(&quant), "-bf", "arc-easy-validation", "--limit-total", "1", "-t", "2", "--json"]);
        assert!(scored.status.success(), "{kind}: {}", stderr(&scored));
        assert!(size(&quant) < size(&model) || ["F32", "F16", "BF16"].contains(&kind), "{kind}");
    }
    // An importance matrix in llama-imatrix's legacy layout for this
    // model's matrices (their input widths: 256, and 512 into ffn_down).
    let imatrix = dir.path().join("imatrix.dat");
    let matrices = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"];
    let widths = matrices.iter().map(|m| (format!("blk.0.{m}.weight"), if *m == "ffn_down" { 512 } else { 256 }));
    let mut dat = (matrices.len() as i32 + 1).to_le_bytes().to_vec();
    for (name, width) in widths.chain([("output.weight".to_owned(), 256i32)]) {
        dat.extend((name.len() as i32).to_le_bytes());
        dat.extend(name.as_bytes());
        dat.extend(10i32.to_le_bytes());
        dat.extend(width.to_le_bytes());
        (0..width).for_each(|i| dat.extend((10.0f32 * (1.0 + (i % 7) as f32)).to_le_bytes()));
    }
    dat.extend(5i32.to_le_bytes());
    dat.extend(9i32.to_le_bytes());
    dat.extend(b"wiki.test");
    std::fs::write(&imatrix, &dat).unwrap();
    for kind in needs {
        let quant = dir.path().join(format!("{kind}.gguf"));
        let out = run(&["quantize", path_str(&model), path_str(&quant), "--type", kind]);
        assert_eq!(out.status.code(), Some(1), "{kind}");
        assert!(
            stderr(&out).contains(&format!("quantizing to {kind}: llama.cpp's quantizer needs an importance matrix")),
            "{}",
            stderr(&out)
        );
        assert!(!quant.exists(), "{kind}");
        let out = run(&["quantize", path_str(&model), path_str(&quant), "--type", kind, "--imatrix", path_str(&imatrix), "-t", "2"]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(said.contains("importance matrix: 8 matrices from") && said.contains("computed on 5 chunks of wiki.test"), "{said}");
        let scored = run(&["score", "-m", path_str(&quant), "-bf", "arc-easy-validation", "--limit-total", "1", "-t", "2"]);
        assert!(scored.status.success(), "{kind}: {}", stderr(&scored));
    }
    // A type that needs none still uses it.
    let weighed = dir.path().join("IQ4_XS-imatrix.gguf");
    assert!(run(&["quantize", path_str(&model), path_str(&weighed), "--type", "IQ4_XS", "--imatrix", path_str(&imatrix)]).status.success());
    assert_ne!(std::fs::read(&weighed).unwrap(), std::fs::read(dir.path().join("IQ4_XS.gguf")).unwrap());
    // A cut one is refused by file and byte, before anything is written.
    std::fs::write(&imatrix, &dat[..100]).unwrap();
    let args = ["quantize", path_str(&model), path_str(&weighed), "--type", "IQ2_XS", "--imatrix", path_str(&imatrix), "--force"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("{}: byte 35: entry 0's values", imatrix.display())), "{}", stderr(&out));
    // The options: each changes the file written.
    let plain = dir.path().join("Q4_0.gguf");
    for (name, extra) in [
        ("output-f16", &["--output-tensor-type", "f16"][..]),
        ("embedding-q8", &["--token-embedding-type", "Q8_0"]),
        ("leave-output", &["--leave-output-tensor"]),
    ] {
        let quant = dir.path().join(format!("{name}.gguf"));
        let out = run(&[&["quantize", path_str(&model), path_str(&quant), "--type", "Q4_0"], extra].concat());
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert!(size(&quant) > size(&plain), "{name}: {} not above Q4_0's {}", size(&quant), size(&plain));
    }
    let pure = dir.path().join("pure.gguf");
    assert!(run(&["quantize", path_str(&model), path_str(&pure), "--type", "Q4_K_M", "--pure"]).status.success());
    assert_ne!(size(&pure), size(&dir.path().join("Q4_K_M.gguf")), "--pure wrote the Q4_K_M mix");
    // Overrides llama.cpp would abort on are refused first: blocks that do not
    // divide the rows (gemma's are 640 wide), a type that needs an importance
    // matrix for the embeddings (never in one).
    let bundled = dir.path().join("gemma-q4_k.gguf");
    let out = run(&["quantize", &common::model(), path_str(&bundled), "--type", "Q4_0", "--token-embedding-type", "q4_K"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("--token-embedding-type q4_K: token_embd.weight's rows hold 640 values, which its blocks of 256 do not divide"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&imatrix, &dat).unwrap();
    let out = run(&[
        "quantize",
        path_str(&model),
        path_str(&bundled),
        "--type",
        "Q4_0",
        "--token-embedding-type",
        "iq2_xxs",
        "--imatrix",
        path_str(&imatrix),
    ]);
    assert!(stderr(&out).contains("--token-embedding-type iq2_xxs: ggml quantizes it only with an importance matrix, and --imatrix has none for token_embd.weight"), "{}", stderr(&out));
    assert!(!bundled.exists());
    // An importance matrix none of whose names is the model's.
    let foreign = dir.path().join("foreign.dat");
    let name = b"model.layers.0.self_attn.q_proj";
    let mut dat = 1i32.to_le_bytes().to_vec();
    dat.extend((name.len() as i32).to_le_bytes());
    dat.extend(name);
    dat.extend([1i32, 1].iter().flat_map(|n| n.to_le_bytes()));
    dat.extend(1.0f32.to_le_bytes());
    std::fs::write(&foreign, dat).unwrap();
    let out = run(&["quantize", path_str(&model), path_str(&bundled), "--type", "IQ2_XS", "--imatrix", path_str(&foreign)]);
    assert!(stderr(&out).contains("--imatrix: none of its 1 matrices is one of this model's"), "{}", stderr(&out));
    let out = run(&["quantize", path_str(&model), path_str(&pure), "--type", "Q4_0", "--output-tensor-type", "q9", "--force"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected a ggml type: f32, f16, q4_0"), "{}", stderr(&out));
}
