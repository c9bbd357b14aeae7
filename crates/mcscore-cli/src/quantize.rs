//! `mcscore quantize`: llama.cpp's own quantizer, for real quants of a
//! model to `compare`.

use std::path::PathBuf;
use std::time::Instant;

use mcscore_engine::{QuantOptions, QuantType, TensorType};
use mcscore_format::AtomicFile;

use crate::output::{check_file, Target};
use crate::Outcome;

/// Quantize a GGUF model with llama.cpp's quantizer (the code of `llama-quantize`, built in)
///
/// A quantized model is
/// requantized (`--allow-requantize`); F32 dequantizes it: the same weights
/// with f32 arithmetic. The output is written under a temporary name and
/// renamed into place when complete (a signal removes it); the same input and
/// type give the same bytes.
#[derive(clap::Args)]
#[command(after_help = "Example: mcscore quantize gemma-3-270m-q4_k_m.gguf gemma-3-270m-q2_k.gguf --type Q2_K")]
pub(crate) struct Args {
    /// The model to quantize.
    #[arg(value_name = "IN.gguf")]
    input: PathBuf,
    /// Where to write the quantized model.
    #[arg(value_name = "OUT.gguf")]
    output: PathBuf,
    /// The type, as llama-quantize names it (any case): F32, F16, BF16, Q8_0, Q6_K,
    /// Q5_K_M, Q5_K_S, Q5_1, Q5_0, Q4_K_M, Q4_K_S, Q4_1, Q4_0, IQ4_NL, IQ4_XS,
    /// MXFP4_MOE, Q3_K_L, Q3_K_M, Q3_K_S, IQ3_M, IQ3_S, Q2_K, TQ2_0, Q2_0, TQ1_0 or
    /// Q1_0 (Q3_K, Q4_K, Q5_K: the medium mixes); with an importance matrix (--imatrix)
    /// also IQ3_XS, IQ3_XXS, Q2_K_S, IQ2_M, IQ2_S, IQ2_XS, IQ2_XXS, IQ1_M and IQ1_S.
    #[arg(long = "type", value_name = "TYPE", value_parser = parse_type)]
    quant: QuantType,
    /// Threads, 1 to 1024 (default: one per core).
    #[arg(short = 't', long, value_name = "N", value_parser = crate::numbers::whole(1u16, 1024))]
    threads: Option<u16>,
    /// The output matrix's type, as ggml names it (q8_0, f16, ...), whatever --type
    /// gives it.
    #[arg(long, value_name = "GGML_TYPE", value_parser = parse_tensor_type)]
    output_tensor_type: Option<TensorType>,
    /// The token embeddings' type, as ggml names it.
    #[arg(long, value_name = "GGML_TYPE", value_parser = parse_tensor_type)]
    token_embedding_type: Option<TensorType>,
    /// Leave the output matrix as it is (llama-quantize's --leave-output-tensor).
    #[arg(long, conflicts_with = "output_tensor_type")]
    leave_output_tensor: bool,
    /// Every matrix in --type, without the type's mix of wider ones (llama-quantize's --pure).
    #[arg(long)]
    pure: bool,
    /// An importance matrix, as llama-imatrix writes it (GGUF, or the legacy .dat):
    /// needed for the IQ1, IQ2 and IQ3_XS/XXS types and Q2_K_S, used by every type
    /// to weigh its rounding (llama-quantize's --imatrix).
    #[arg(long, value_name = "FILE")]
    imatrix: Option<PathBuf>,
    /// Replace OUT if it exists.
    #[arg(long)]
    force: bool,
}

pub(crate) fn parse_type(text: &str) -> Result<QuantType, String> {
    QuantType::parse(text).ok_or_else(|| {
        let names: Vec<&str> = QuantType::ALL.iter().map(|t| t.name()).collect();
        format!("expected one of {}; got {text:?}", names.join(", "))
    })
}

fn parse_tensor_type(text: &str) -> Result<TensorType, String> {
    TensorType::parse(text).ok_or_else(|| {
        let names: Vec<String> = TensorType::all().into_iter().map(|(n, _)| n).collect();
        format!("expected a ggml type: {}; got {text:?}", names.join(", "))
    })
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    mcscore_format::check_input(&args.input)?;
    if args.input.is_dir() {
        anyhow::bail!("{}: IN.gguf names a directory; give a model file", args.input.display());
    }
    if !args.input.is_file() {
        anyhow::bail!("{}: IN.gguf: no model file there", args.input.display());
    }
    let target = Target::new(&args.output, "OUT.gguf", args.force);
    let inputs: Vec<&std::path::Path> = std::iter::once(args.input.as_path()).chain(args.imatrix.as_deref()).collect();
    check_file(&target, &inputs)?;
    let imatrix = args.imatrix.as_deref().map(mcscore_engine::read_imatrix).transpose()?;
    if let (Some(path), Some(m)) = (&args.imatrix, &imatrix) {
        let on = match (m.chunks, m.datasets.as_slice()) {
            (Some(chunks), [first, ..]) => format!(", computed on {chunks} chunks of {first}"),
            (Some(chunks), []) => format!(", computed on {chunks} chunks"),
            (None, _) => String::new(),
        };
        eprintln!("mcscore: importance matrix: {} matrices from {}{on}", m.entries.len(), path.display());
    }
    let options = QuantOptions {
        threads: args.threads.map_or(0, usize::from),
        output_tensor_type: args.output_tensor_type,
        token_embedding_type: args.token_embedding_type,
        leave_output_tensor: args.leave_output_tensor,
        pure: args.pure,
        imatrix,
    };
    write(&args.input, &args.output, target.existing, args.quant, &options)?;
    Ok(Outcome::Ok)
}

/// Quantizes `input` into `output` (under a temporary name until complete)
/// and says what it wrote.
pub(crate) fn write(
    input: &std::path::Path,
    output: &std::path::Path,
    existing: mcscore_format::Existing,
    quant: QuantType,
    options: &QuantOptions,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let file = AtomicFile::with(output, existing)?;
    // llama.cpp cannot be stopped mid-quantisation: a signal ends the process
    // and removes the partial file, as large as the model (signals.rs).
    mcscore_engine::quantize(input, file.temp_path(), quant, options)?;
    file.commit()?;
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6);
    eprintln!(
        "mcscore: quantized {} ({:.1} MB) to {} as {} ({:.1} MB) in {:.1} s",
        input.display(),
        size(input),
        output.display(),
        quant.name(),
        size(output),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
