//! llama.cpp's own quantizer (what `llama-quantize` runs), already compiled
//! into our llama.cpp: real quants of a real model without building the
//! reference tools (about 15 minutes in CI).

use std::ffi::CString;
use std::path::Path;

use crate::EngineError;

/// A quantisation type `quantize` writes: one of llama-quantize's types
/// (a `llama_ftype`: the type of most matrices and the mix of the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantType {
    name: &'static str,
    ftype: llama_cpp_sys_2::llama_ftype,
    /// Whether llama.cpp's quantizer needs an importance matrix for it: the
    /// types whose matrices (some of them, for IQ3_XS) are IQ1, IQ2 or
    /// IQ3_XXS, and Q2_K_S.
    imatrix: bool,
}

macro_rules! quant_types {
    ($($konst:ident $name:literal $ftype:ident $imatrix:literal),* $(,)?) => {
        impl QuantType {
            $(
                #[doc = concat!("`", $name, "`.")]
                pub const $konst: QuantType = QuantType { name: $name, ftype: llama_cpp_sys_2::$ftype, imatrix: $imatrix };
            )*
            /// Every type llama-quantize offers, widest first (its aliases
            /// `Q3_K`, `Q4_K` and `Q5_K` are read by [`QuantType::parse`]).
            pub const ALL: &'static [QuantType] = &[$(QuantType::$konst),*];
        }
    };
}

quant_types! {
    F32 "F32" LLAMA_FTYPE_ALL_F32 false,
    F16 "F16" LLAMA_FTYPE_MOSTLY_F16 false,
    BF16 "BF16" LLAMA_FTYPE_MOSTLY_BF16 false,
    Q8_0 "Q8_0" LLAMA_FTYPE_MOSTLY_Q8_0 false,
    Q6_K "Q6_K" LLAMA_FTYPE_MOSTLY_Q6_K false,
    Q5_K_M "Q5_K_M" LLAMA_FTYPE_MOSTLY_Q5_K_M false,
    Q5_K_S "Q5_K_S" LLAMA_FTYPE_MOSTLY_Q5_K_S false,
    Q5_1 "Q5_1" LLAMA_FTYPE_MOSTLY_Q5_1 false,
    Q5_0 "Q5_0" LLAMA_FTYPE_MOSTLY_Q5_0 false,
    Q4_K_M "Q4_K_M" LLAMA_FTYPE_MOSTLY_Q4_K_M false,
    Q4_K_S "Q4_K_S" LLAMA_FTYPE_MOSTLY_Q4_K_S false,
    Q4_1 "Q4_1" LLAMA_FTYPE_MOSTLY_Q4_1 false,
    Q4_0 "Q4_0" LLAMA_FTYPE_MOSTLY_Q4_0 false,
    IQ4_NL "IQ4_NL" LLAMA_FTYPE_MOSTLY_IQ4_NL false,
    IQ4_XS "IQ4_XS" LLAMA_FTYPE_MOSTLY_IQ4_XS false,
    MXFP4_MOE "MXFP4_MOE" LLAMA_FTYPE_MOSTLY_MXFP4_MOE false,
    Q3_K_L "Q3_K_L" LLAMA_FTYPE_MOSTLY_Q3_K_L false,
    Q3_K_M "Q3_K_M" LLAMA_FTYPE_MOSTLY_Q3_K_M false,
    Q3_K_S "Q3_K_S" LLAMA_FTYPE_MOSTLY_Q3_K_S false,
    IQ3_M "IQ3_M" LLAMA_FTYPE_MOSTLY_IQ3_M false,
    IQ3_S "IQ3_S" LLAMA_FTYPE_MOSTLY_IQ3_S false,
    IQ3_XS "IQ3_XS" LLAMA_FTYPE_MOSTLY_IQ3_XS true,
    IQ3_XXS "IQ3_XXS" LLAMA_FTYPE_MOSTLY_IQ3_XXS true,
    Q2_K "Q2_K" LLAMA_FTYPE_MOSTLY_Q2_K false,
    Q2_K_S "Q2_K_S" LLAMA_FTYPE_MOSTLY_Q2_K_S true,
    IQ2_M "IQ2_M" LLAMA_FTYPE_MOSTLY_IQ2_M true,
    IQ2_S "IQ2_S" LLAMA_FTYPE_MOSTLY_IQ2_S true,
    IQ2_XS "IQ2_XS" LLAMA_FTYPE_MOSTLY_IQ2_XS true,
    IQ2_XXS "IQ2_XXS" LLAMA_FTYPE_MOSTLY_IQ2_XXS true,
    TQ2_0 "TQ2_0" LLAMA_FTYPE_MOSTLY_TQ2_0 false,
    Q2_0 "Q2_0" LLAMA_FTYPE_MOSTLY_Q2_0 false,
    IQ1_M "IQ1_M" LLAMA_FTYPE_MOSTLY_IQ1_M true,
    IQ1_S "IQ1_S" LLAMA_FTYPE_MOSTLY_IQ1_S true,
    TQ1_0 "TQ1_0" LLAMA_FTYPE_MOSTLY_TQ1_0 false,
    Q1_0 "Q1_0" LLAMA_FTYPE_MOSTLY_Q1_0 false,
}

impl QuantType {
    /// llama-quantize's name for the type (`Q5_K_M`).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The type named `name` (any case), as llama-quantize spells it,
    /// its aliases `Q3_K`, `Q4_K` and `Q5_K` (the medium mixes) included.
    pub fn parse(name: &str) -> Option<QuantType> {
        let name = match name.to_ascii_uppercase().as_str() {
            "Q3_K" => "Q3_K_M",
            "Q4_K" => "Q4_K_M",
            "Q5_K" => "Q5_K_M",
            _ => name,
        };
        QuantType::ALL.iter().copied().find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// Whether llama.cpp's quantizer needs an importance matrix for this type.
    pub fn needs_imatrix(self) -> bool {
        self.imatrix
    }
}

/// A tensor type as ggml names it (`q8_0`, `f16`), for the output and
/// token-embedding overrides; any case, as llama-quantize reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorType(llama_cpp_sys_2::ggml_type);

impl TensorType {
    /// Every type ggml can hold a weight matrix in, by its name.
    pub fn all() -> Vec<(String, TensorType)> {
        (0..llama_cpp_sys_2::GGML_TYPE_COUNT)
            .filter_map(|t| {
                // SAFETY: ggml_type_name takes any type below GGML_TYPE_COUNT and
                // returns a static NUL-terminated name, or null for a removed one.
                #[allow(unsafe_code)]
                let name = unsafe { llama_cpp_sys_2::ggml_type_name(t) };
                if name.is_null() {
                    return None;
                }
                // SAFETY: checked non-null; ggml's names are static C strings.
                #[allow(unsafe_code)]
                let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_str().ok()?.to_owned();
                // Removed types keep DEPRECATED or a sentence for a name; the
                // integer types and the dot-product-only q8_1 and q8_K hold no weights.
                let removed = name.is_empty() || name.contains(' ') || name == "DEPRECATED";
                let no_weights = (name.starts_with('i') && !name.starts_with("iq")) || ["f64", "q8_1", "q8_K"].contains(&name.as_str());
                (!removed && !no_weights).then_some((name, TensorType(t)))
            })
            .collect()
    }

    /// The type ggml calls `name` (any case).
    pub fn parse(name: &str) -> Option<TensorType> {
        TensorType::all().into_iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, t)| t)
    }

    /// ggml's name for the type.
    pub fn name(self) -> String {
        TensorType::all().into_iter().find(|(_, t)| *t == self).map_or_else(|| format!("type {}", self.0), |(n, _)| n)
    }

    /// Values in one of its blocks: a row must hold whole blocks.
    #[allow(unsafe_code)]
    fn block(self) -> i64 {
        // SAFETY: the type is one ggml named (see `all`); ggml_blck_size reads a static table.
        unsafe { llama_cpp_sys_2::ggml_blck_size(self.0) }
    }

    /// Whether ggml quantizes to it only with an importance matrix.
    #[allow(unsafe_code)]
    fn needs_imatrix(self) -> bool {
        // SAFETY: as in `block`: a pure function of a valid type.
        unsafe { llama_cpp_sys_2::ggml_quantize_requires_imatrix(self.0) }
    }
}

/// How to quantise besides the type: llama-quantize's options.
#[derive(Debug, Clone, Default)]
pub struct QuantOptions {
    /// Threads; 0: one per core.
    pub threads: usize,
    /// The output matrix's type (`--output-tensor-type`).
    pub output_tensor_type: Option<TensorType>,
    /// The token embeddings' type (`--token-embedding-type`).
    pub token_embedding_type: Option<TensorType>,
    /// Leave the output matrix as it is (`--leave-output-tensor`).
    pub leave_output_tensor: bool,
    /// Every matrix in the type, no mix (`--pure`).
    pub pure: bool,
    /// An importance matrix (`--imatrix`), which the types of
    /// [`QuantType::needs_imatrix`] need and the others use to weigh their
    /// rounding.
    pub imatrix: Option<mcscore_gguf::Imatrix>,
}

/// Quantises the GGUF model `input` to `quant` into `output`, which must be
/// a temporary path (the caller renames it into place): llama.cpp writes it
/// by name. Quantised inputs are requantised, as `llama-quantize
/// --allow-requantize` does, with llama-quantize's `options`. A type that
/// needs an importance matrix is refused before anything is read.
pub fn quantize(input: &Path, output: &Path, quant: QuantType, options: &QuantOptions) -> Result<(), EngineError> {
    if quant.needs_imatrix() && options.imatrix.is_none() {
        return Err(EngineError::Quantize {
            input: input.to_owned(),
            quant: quant.name(),
            message: "llama.cpp's quantizer needs an importance matrix for this type: give llama-imatrix's output with \
                      --imatrix FILE (its GGUF or legacy .dat), or choose a type that needs none"
                .to_owned(),
        });
    }
    crate::backend()?;
    // As a load checks it: the quantizer reads the same header and
    // hyperparameters, and would copy a model of no tensors without a word.
    let header = crate::model_header(input)?;
    check_inputs(input, &header, quant, options)?;
    let c_path = |p: &Path| {
        CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| EngineError::ModelLoad { path: p.to_owned(), message: "the path holds a NUL byte".to_owned() })
    };
    let (c_input, c_output) = (c_path(input)?, c_path(output)?);
    crate::memory::take_errors();
    // The quantizer maps the input and unmaps it tensor by tensor.
    let (code, os_error) = {
        let _mappings = crate::memory::mappings_lock();
        quantize_files(&c_input, &c_output, quant, options)
    };
    if code == 0 {
        return Ok(());
    }
    // Its log gives what failed ("basic_ios::clear: iostream error" for a
    // failed write); the OS's errno, why ("No space left on device").
    let mut message = match crate::memory::take_errors() {
        Some(reason) => format!("llama.cpp's quantizer failed: {reason}"),
        None => "llama.cpp's quantizer failed (run with MCSCORE_LLAMA_LOG=1 for its log)".to_owned(),
    };
    if let Some(os_error) = os_error {
        // The output is a temporary name; its folder is the user's.
        let folder = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        message.push_str(&format!(": {os_error}, writing into {}", folder.display()));
    }
    Err(EngineError::Quantize { input: input.to_owned(), quant: quant.name(), message })
}

/// Refuses what llama.cpp's quantizer would abort on or pass over in
/// silence. It gives the token embeddings and the output matrix the type an
/// override asks for without the checks its own choices get, so a type whose
/// blocks do not divide the matrix's rows, or one ggml quantizes only with
/// an importance matrix that has no entry for it (the embeddings never have
/// one), would stop the process inside ggml. And it only logs an importance
/// matrix none of whose names is one of the model's (another model's).
fn check_inputs(input: &Path, header: &mcscore_gguf::Header<'_>, quant: QuantType, options: &QuantOptions) -> Result<(), EngineError> {
    const EMBEDDINGS: &str = "token_embd.weight";
    let overrides = [
        ("--token-embedding-type", options.token_embedding_type, EMBEDDINGS),
        ("--output-tensor-type", options.output_tensor_type, "output.weight"),
    ];
    if let Some(matrix) = &options.imatrix {
        if !matrix.entries.iter().any(|(name, _)| header.tensors().any(|t| t.name == name.as_bytes())) {
            return Err(EngineError::Quantize {
                input: input.to_owned(),
                quant: quant.name(),
                message: format!(
                    "--imatrix: none of its {} matrices is one of this model's (is it another model's?)",
                    matrix.entries.len()
                ),
            });
        }
    }
    // Without an output matrix the token embeddings compute the output,
    // and llama.cpp gives them the output's type.
    let has_output = header.tensors().any(|t| t.name == b"output.weight");
    for (flag, kind, name) in overrides {
        let Some(kind) = kind else { continue };
        let name = if name == EMBEDDINGS || has_output { name } else { EMBEDDINGS };
        let Some(tensor) = header.tensors().find(|t| t.name == name.as_bytes()) else { continue };
        let refuse = |why: String| EngineError::Quantize {
            input: input.to_owned(),
            quant: quant.name(),
            message: format!("{flag} {}: {why}", kind.name()),
        };
        let block = kind.block();
        if block <= 0 || tensor.shape[0] % block != 0 {
            return Err(refuse(format!("{name}'s rows hold {} values, which its blocks of {block} do not divide", tensor.shape[0])));
        }
        let matrix_has_it = options.imatrix.as_ref().is_some_and(|m| m.entries.iter().any(|(n, _)| n == name));
        if kind.needs_imatrix() && !matrix_has_it {
            return Err(refuse(format!(
                "ggml quantizes it only with an importance matrix, and {} has none for {name}",
                if options.imatrix.is_some() { "--imatrix" } else { "no --imatrix is given, so it" }
            )));
        }
    }
    Ok(())
}

/// The errors of a failed write that the OS reports through errno: the
/// cause of a quantisation that failed while writing.
fn write_error(errno: i32) -> bool {
    [libc::ENOSPC, libc::EDQUOT, libc::EIO, libc::EFBIG, libc::EROFS, libc::EACCES, libc::EPERM].contains(&errno)
}

/// Runs the quantizer; its status and, where it failed writing, the OS's
/// error, read from errno on this thread right after the call (cleared before it).
#[allow(unsafe_code)]
fn quantize_files(input: &CString, output: &CString, quant: QuantType, options: &QuantOptions) -> (u32, Option<std::io::Error>) {
    // SAFETY: llama_model_quantize_default_params returns a plain struct by
    // value; its pointer fields are null, and only `imatrix` is set (below).
    let mut params = unsafe { llama_cpp_sys_2::llama_model_quantize_default_params() };
    params.ftype = quant.ftype;
    params.nthread = i32::try_from(options.threads).unwrap_or(0);
    params.allow_requantize = true;
    params.quantize_output_tensor = !options.leave_output_tensor;
    params.pure_ = options.pure;
    if let Some(TensorType(t)) = options.output_tensor_type {
        params.output_tensor_type = t;
    }
    if let Some(TensorType(t)) = options.token_embedding_type {
        params.token_embedding_type = t;
    }
    // The importance matrix as llama.cpp's C struct: entries of name, values
    // and count, ended by one with a null name. `names` and the values are
    // held until the call returns.
    let names: Vec<CString> =
        options.imatrix.iter().flat_map(|m| &m.entries).map(|(name, _)| CString::new(name.replace('\0', "")).unwrap_or_default()).collect();
    let imatrix: Vec<llama_cpp_sys_2::llama_model_imatrix_data> = options
        .imatrix
        .iter()
        .flat_map(|m| &m.entries)
        .zip(&names)
        .map(|((_, values), name)| llama_cpp_sys_2::llama_model_imatrix_data {
            name: name.as_ptr(),
            data: values.as_ptr(),
            size: values.len(),
        })
        .chain(std::iter::once(llama_cpp_sys_2::llama_model_imatrix_data { name: std::ptr::null(), data: std::ptr::null(), size: 0 }))
        .collect();
    if options.imatrix.is_some() {
        params.imatrix = imatrix.as_ptr();
    }
    #[cfg(target_os = "linux")]
    // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
    unsafe {
        *libc::__errno_location() = 0;
    }
    // SAFETY: both paths are NUL-terminated strings that outlive the call,
    // and `params` is a valid, initialised struct on this stack frame; its
    // imatrix, where set, points into `imatrix`, whose entries point into
    // `names` and the options' values, all alive until this function returns
    // and ended by an entry with a null name, as llama.cpp reads them.
    // llama_model_quantize catches its own C++ exceptions and returns non-zero.
    let code = unsafe { llama_cpp_sys_2::llama_model_quantize(input.as_ptr(), output.as_ptr(), &params) };
    let errno = std::io::Error::last_os_error();
    let os_error = (cfg!(target_os = "linux") && code != 0 && errno.raw_os_error().is_some_and(write_error)).then_some(errno);
    (code, os_error)
}
