//! Is the output projection, computed outside llama.cpp from the final
//! norm's hidden states, the same bits as llama.cpp's logits, and how fast?
//! Each timing starts after the caches were filled with other data, as the
//! rest of the model fills them in a run (docs/performance.md).
//!
//! `cargo run --release -p mcscore-engine --example projection -- MODEL [ROWS] [THREADS]`
//! (a model whose output matrix is Q8_0, as gemma-3-270m Q4_K_M's).

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use mcscore_engine::project::{project, project_reference, quantize_q8_0, OutputTensor};
use mcscore_engine::{rows_to_read, MICRO_BATCH};

type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: projection MODEL [ROWS] [THREADS]")?;
    let rows: usize = args.get(2).map_or(Ok(48), |s| s.parse())?;
    let threads: usize = args.get(3).map_or(Ok(2), |s| s.parse())?;
    let bytes = std::fs::read(path)?;
    let header = mcscore_gguf::parse(&bytes).map_err(|e| format!("{e:?}"))?;
    let OutputTensor { bytes: at, n, k } = OutputTensor::find(&header).ok_or("no Q8_0 output matrix the engine projects")?;
    let w = &bytes[at.start as usize..at.end as usize];
    println!("output matrix {n} × {k}, Q8_0, {} bytes", w.len());

    let backend = LlamaBackend::init()?;
    let model = LlamaModel::load_from_file(&backend, path, &LlamaModelParams::default().with_n_gpu_layers(0))?;
    let size = MICRO_BATCH as usize;
    // One micro-batch of the rule, on the CPU, with or without the final
    // norm's rows handed out as embeddings.
    let params = |embeddings: bool| {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(256))
            .with_n_batch(size as u32)
            .with_n_ubatch(size as u32)
            .with_n_seq_max(1)
            .with_op_offload(false)
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED)
            .with_n_threads(threads as i32)
            .with_n_threads_batch(threads as i32);
        if embeddings {
            params.with_embeddings(true).with_pooling_type(LlamaPoolingType::None)
        } else {
            params
        }
    };
    let mut ctx = model.new_context(&backend, params(true))?;
    let text = "The quick brown fox jumps over the lazy dog, and then it runs far away into the forest where the trees are tall and the rivers are cold, while the dog sleeps on.";
    let text = format!("{text} {text}");
    let tokens = model.vocab().tokenize(text.as_bytes(), true, false);
    let tokens = &tokens[..tokens.len().min(size)];
    let mut batch = LlamaBatch::new(size, 1);
    let decode = |ctx: &mut llama_cpp_2::context::LlamaContext<'_>, batch: &mut LlamaBatch, read: usize| -> Result<f64, Failure> {
        ctx.clear_kv_cache();
        batch.clear();
        let outputs = rows_to_read((0..tokens.len()).map(|i| i + read >= tokens.len()), size);
        for (i, &output) in outputs.iter().enumerate() {
            let token = tokens.get(i).copied().unwrap_or(tokens[0]);
            batch.add(token, i as i32, &[0], output)?;
        }
        let started = Instant::now();
        ctx.decode(batch)?;
        Ok(started.elapsed().as_secs_f64())
    };
    let rows = rows.min(tokens.len());
    decode(&mut ctx, &mut batch, rows)?;
    // The rows read are the last `rows` tokens' (rows_to_read may add some).
    let first = tokens.len() - rows;
    let mut x = Vec::new();
    for i in first..tokens.len() {
        quantize_q8_0(ctx.embeddings_ith(i as i32)?, &mut x);
    }
    let mut ours = vec![0f32; rows * n];
    let mut reference = vec![0f32; rows * n];
    project_reference(w, n, &x, rows.min(2), k, &mut reference);
    let mut differ = [0usize; 2];
    let started = Instant::now();
    project(w, n, &x, rows, k, &mut ours, threads);
    let kernel = started.elapsed().as_secs_f64();
    for (j, i) in (first..tokens.len()).enumerate() {
        let theirs = ctx.get_logits_ith(i as i32);
        differ[0] += theirs.iter().zip(&ours[j * n..(j + 1) * n]).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        if j < 2 {
            differ[1] += theirs.iter().zip(&reference[j * n..(j + 1) * n]).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        }
    }
    println!(
        "{rows} rows: logits differing from llama.cpp's: kernel {} of {}, reference {} of {}",
        differ[0],
        rows * n,
        differ[1],
        rows.min(2) * n
    );

    // Speed: llama.cpp's decode reading the rows against reading none (in a
    // context without embeddings, where every row would be read), and the kernel.
    drop(ctx);
    let mut ctx = model.new_context(&backend, params(false))?;
    let (mut with, mut without, mut ours_s) = (Vec::new(), Vec::new(), Vec::new());
    // Each timing starts with the caches holding something else, as in a run
    // (the rest of the model), not the output matrix of the last call.
    let mut other = vec![0u8; 512 << 20];
    let mut evict = |round: u8| other.iter_mut().step_by(64).for_each(|b| *b = b.wrapping_add(round));
    for round in 0..9u8 {
        evict(round);
        with.push(decode(&mut ctx, &mut batch, rows)?);
        evict(round);
        without.push(decode(&mut ctx, &mut batch, 0)?);
        evict(round);
        let started = Instant::now();
        project(w, n, &x, rows, k, &mut ours, threads);
        ours_s.push(started.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (with, without, ours_s) = (median(&mut with), median(&mut without), median(&mut ours_s));
    println!(
        "decode with {rows} rows {with:.4} s, with none {without:.4} s: the rows cost llama.cpp {:.4} s; the kernel {ours_s:.4} s (first call {kernel:.4} s): {:.2}×",
        with - without,
        (with - without) / ours_s
    );
    Ok(())
}
