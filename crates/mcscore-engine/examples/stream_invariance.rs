//! The experiment behind docs/performance.md's "Larger micro-batches": can a
//! micro-batch grow past 60 tokens and keep every sequence's logits the bits
//! they are under the batch rule?
//!
//! Under the rule (`MICRO_BATCH`) a micro-batch stays below 64 query tokens
//! because the CPU's flash attention switches at 64 to a tiled kernel whose
//! sums follow the 64-cell tiles each visible cell falls in, which depends on
//! what else is in the cache. llama.cpp counts those query tokens per KV
//! stream: with `kv_unified = false` every sequence has a stream of its own,
//! so a micro-batch of S sequences × T tokens (T below 64) keeps the per-row
//! kernel while its weight products see S × T rows. Each stream also starts
//! at cell 0, so a sequence's cells never depend on its neighbours.
//!
//! This program decodes the same token sequences three ways and compares
//! every logits row read, bit for bit, with the rule's:
//! - `rule`: each sequence alone in 60-token micro-batches, padded by a
//!   scratch sequence, reading 0 or ≥ 12 rows in fours (what the engine's
//!   fills give, since under the rule a row depends only on its sequence);
//! - `streams S×T`: S sequences at once, one stream each, T of each one's
//!   tokens per micro-batch (a sequence that has fewer is padded with tokens
//!   of its own, at later positions, removed after the decode);
//! - `unified U`: sequences packed back to back in one unified cache,
//!   U-token micro-batches (the packed layout the rule replaced).
//!
//! It prints, per way, the micro-batch size, tokens decoded (padding apart),
//! seconds, tokens per second and how many rows equal the rule's.
//!
//! `cargo run --release -p mcscore-engine --example stream_invariance -- MODEL FILE.bin [SEQS] [THREADS] [ROWS]`
//! (`scripts/experiment-micro-batches` runs the matrix). SEQS: how many of the
//! file's tasks (first option after the question; 64); ROWS: `all` (every
//! token reads its row: the strictest comparison) or `last` (one row per
//! sequence, as a letter file reads).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use mcscore_engine::{rows_to_read, MICRO_BATCH};
use mcscore_format::TaskFile;

type Failure = Box<dyn std::error::Error>;

/// The longest sequence taken, so that 16 streams fit a small context.
const MAX_TOKENS: usize = 192;

fn row_hash(ctx: &LlamaContext<'_>, index: usize) -> u64 {
    let mut hasher = DefaultHasher::new();
    for value in ctx.get_logits_ith(index as i32) {
        value.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}

/// What every way decodes, and with what.
#[derive(Clone, Copy)]
struct Input<'a> {
    model: &'a LlamaModel,
    backend: &'a LlamaBackend,
    seqs: &'a [Vec<LlamaToken>],
    /// Per sequence, per token: whether its row is read.
    reads: &'a [Vec<bool>],
    threads: i32,
}

struct Way {
    label: String,
    micro_batch: usize,
    decodes: usize,
    padding: usize,
    seconds: f64,
    /// Per sequence, per token: the hash of the row read (None: not read).
    rows: Vec<Vec<Option<u64>>>,
}

impl Way {
    /// A way with `sequences` empty rows, filled as they are decoded.
    fn new(label: String, micro_batch: usize, sequences: usize) -> Way {
        Way { label, micro_batch, decodes: 0, padding: 0, seconds: 0.0, rows: vec![Vec::new(); sequences] }
    }
}

fn params(n_ctx: usize, n_batch: usize, n_seq_max: usize, unified: bool, threads: i32) -> LlamaContextParams {
    LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx.next_multiple_of(256) as u32))
        .with_n_batch(n_batch as u32)
        .with_n_ubatch(n_batch as u32)
        .with_n_seq_max(n_seq_max as u32)
        .with_kv_unified(unified)
        .with_op_offload(false)
        .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
}

/// The rule: each sequence alone, 60-token micro-batches padded by sequence 1.
fn rule(input: Input<'_>) -> Result<Way, Failure> {
    let Input { model, backend, seqs, reads, threads } = input;
    let size = MICRO_BATCH as usize;
    let mut ctx = model.new_context(backend, params(MAX_TOKENS + size, size, 2, true, threads))?;
    let mut batch = LlamaBatch::new(size, 2);
    let mut way = Way::new(format!("rule (alone, {size})"), size, 0);
    let started = Instant::now();
    for (tokens, read) in seqs.iter().zip(reads) {
        ctx.clear_kv_cache();
        let mut rows = vec![None; tokens.len()];
        for (c, part) in tokens.chunks(size).enumerate() {
            let base = c * size;
            let outputs = rows_to_read(read[base..base + part.len()].iter().copied(), size);
            batch.clear();
            for (k, &output) in outputs.iter().enumerate() {
                let (token, pos, seq) = match part.get(k) {
                    Some(&token) => (token, (base + k) as i32, 0),
                    None => (LlamaToken(0), k as i32, 1),
                };
                batch.add(token, pos, &[seq], output)?;
            }
            way.padding += size - part.len();
            ctx.decode(&mut batch)?;
            way.decodes += 1;
            for k in 0..part.len() {
                if read[base + k] {
                    rows[base + k] = Some(row_hash(&ctx, k));
                }
            }
            ctx.clear_kv_cache_seq(Some(1), None, None)?;
        }
        way.rows.push(rows);
    }
    way.seconds = started.elapsed().as_secs_f64();
    Ok(way)
}

/// S sequences at a time, one KV stream each, T tokens of each per micro-batch.
fn streams(input: Input<'_>, s: usize, t: usize) -> Result<Way, Failure> {
    let Input { model, backend, seqs, reads, threads } = input;
    let size = s * t;
    let per_stream = (MAX_TOKENS + t).next_multiple_of(256);
    let mut ctx = model.new_context(backend, params(per_stream * s, size, s, false, threads))?;
    let mut batch = LlamaBatch::new(size, 1);
    let mut way = Way::new(format!("streams {s}×{t}"), size, seqs.len());
    let started = Instant::now();
    for first in (0..seqs.len()).step_by(s) {
        ctx.clear_kv_cache();
        let members: Vec<usize> = (first..seqs.len().min(first + s)).collect();
        for &i in &members {
            way.rows[i] = vec![None; seqs[i].len()];
        }
        let longest = members.iter().map(|&i| seqs[i].len()).max().unwrap_or(0);
        for base in (0..longest).step_by(t) {
            // Sequences in id order, each with exactly T tokens: llama.cpp's
            // split for separate streams takes equal counts in id order.
            let mut own = Vec::with_capacity(size);
            for &i in &members {
                let real = seqs[i].len().saturating_sub(base).min(t);
                own.extend((0..t).map(|k| k < real && reads[i][base + k]));
            }
            let outputs = rows_to_read(own.into_iter(), size);
            batch.clear();
            for (m, &i) in members.iter().enumerate() {
                // Padding follows the sequence's last token: a stream's
                // positions must stay consecutive.
                let real = seqs[i].len().saturating_sub(base).min(t);
                let padding_from = seqs[i].len().min(base) + real;
                for k in 0..t {
                    let (token, pos) = match seqs[i].get(base + k) {
                        Some(&token) => (token, base + k),
                        None => {
                            way.padding += 1;
                            (LlamaToken(0), padding_from + k - real)
                        }
                    };
                    batch.add(token, pos as i32, &[m as i32], outputs[m * t + k])?;
                }
            }
            ctx.decode(&mut batch)?;
            way.decodes += 1;
            for (m, &i) in members.iter().enumerate() {
                for k in 0..t.min(seqs[i].len().saturating_sub(base)) {
                    if reads[i][base + k] {
                        way.rows[i][base + k] = Some(row_hash(&ctx, m * t + k));
                    }
                }
                // The padding goes; the next tokens take its cells, in position order.
                let end = seqs[i].len().min(base + t) as u32;
                ctx.clear_kv_cache_seq(Some(m as u32), Some(end), None)?;
            }
        }
    }
    way.seconds = started.elapsed().as_secs_f64();
    Ok(way)
}

/// Sequences back to back in one unified cache, U-token micro-batches.
fn unified(input: Input<'_>, u: usize) -> Result<Way, Failure> {
    let Input { model, backend, seqs, reads, threads } = input;
    // Enough sequences per fill to fill a few micro-batches, one id each.
    let per_fill = 16;
    let n_ctx = per_fill * MAX_TOKENS + u;
    let mut ctx = model.new_context(backend, params(n_ctx, u, per_fill + 1, true, threads))?;
    let mut batch = LlamaBatch::new(u, 1);
    let mut way = Way::new(format!("unified {u}"), u, seqs.len());
    let started = Instant::now();
    for first in (0..seqs.len()).step_by(per_fill) {
        ctx.clear_kv_cache();
        let members: Vec<usize> = (first..seqs.len().min(first + per_fill)).collect();
        let entries: Vec<(usize, usize)> = members.iter().flat_map(|&i| (0..seqs[i].len()).map(move |k| (i, k))).collect();
        for &i in &members {
            way.rows[i] = vec![None; seqs[i].len()];
        }
        for part in entries.chunks(u) {
            let own: Vec<bool> = part.iter().map(|&(i, k)| reads[i][k]).collect();
            let outputs = rows_to_read(own.into_iter(), u);
            batch.clear();
            for (j, &output) in outputs.iter().enumerate() {
                match part.get(j) {
                    Some(&(i, k)) => batch.add(seqs[i][k], k as i32, &[(i - first) as i32], output)?,
                    None => {
                        way.padding += 1;
                        batch.add(LlamaToken(0), j as i32, &[per_fill as i32], output)?
                    }
                }
            }
            ctx.decode(&mut batch)?;
            way.decodes += 1;
            for (j, &(i, k)) in part.iter().enumerate() {
                if reads[i][k] {
                    way.rows[i][k] = Some(row_hash(&ctx, j));
                }
            }
            ctx.clear_kv_cache_seq(Some(per_fill as u32), None, None)?;
        }
    }
    way.seconds = started.elapsed().as_secs_f64();
    Ok(way)
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model_path, file, rest @ ..] = args.as_slice() else {
        return Err("usage: stream_invariance MODEL FILE.bin [SEQS] [THREADS] [all|last]".into());
    };
    let count: usize = rest.first().map_or(Ok(64), |s| s.parse())?;
    let threads: i32 = rest.get(1).map_or(Ok(2), |s| s.parse())?;
    let all_rows = match rest.get(2).map_or("all", String::as_str) {
        "all" => true,
        "last" => false,
        other => return Err(format!("ROWS is `all` or `last`, not `{other}`").into()),
    };
    let backend = LlamaBackend::init()?;
    let model = LlamaModel::load_from_file(&backend, model_path, &LlamaModelParams::default())?;
    let tasks = TaskFile::open(file)?;
    let vocab = model.vocab();
    let seqs: Vec<Vec<LlamaToken>> = tasks
        .tasks()
        .take(count)
        .map(|task| {
            let text = format!("{} {}", task.question, task.options().first().copied().unwrap_or(""));
            let mut tokens = vocab.tokenize(text.as_bytes(), true, false);
            tokens.truncate(MAX_TOKENS);
            tokens
        })
        .collect();
    let reads: Vec<Vec<bool>> = seqs.iter().map(|s| (0..s.len()).map(|k| all_rows || k + 1 == s.len()).collect()).collect();
    let tokens: usize = seqs.iter().map(Vec::len).sum();
    println!(
        "{} sequences, {tokens} tokens, rows read: {}, -t {threads}, {}",
        seqs.len(),
        if all_rows { "all" } else { "last" },
        std::path::Path::new(model_path).file_name().unwrap_or_default().to_string_lossy()
    );
    let input = Input { model: &model, backend: &backend, seqs: &seqs, reads: &reads, threads };
    let mut ways = vec![rule(input)?];
    for (s, t) in [(2, 60), (4, 32), (4, 60), (8, 32), (8, 60), (16, 30), (16, 60)] {
        ways.push(streams(input, s, t)?);
    }
    for u in [64, 128, 256, 512] {
        ways.push(unified(input, u)?);
    }
    println!(
        "{:<18} {:>11} {:>8} {:>9} {:>8} {:>9}  rows equal to the rule's",
        "way", "micro-batch", "decodes", "padding", "seconds", "tokens/s"
    );
    let reference = &ways[0].rows;
    for way in &ways {
        let (mut same, mut total) = (0, 0);
        for (mine, theirs) in way.rows.iter().zip(reference) {
            for (a, b) in mine.iter().zip(theirs) {
                if let (Some(a), Some(b)) = (a, b) {
                    total += 1;
                    same += usize::from(a == b);
                }
            }
        }
        println!(
            "{:<18} {:>11} {:>8} {:>9} {:>8.2} {:>9.0}  {same} of {total}",
            way.label,
            way.micro_batch,
            way.decodes,
            way.padding,
            way.seconds,
            tokens as f64 / way.seconds
        );
    }
    Ok(())
}
