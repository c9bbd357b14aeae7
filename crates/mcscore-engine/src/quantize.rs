//! llama.cpp's own quantizer (what `llama-quantize` runs), already compiled
//! into our llama.cpp: real quants of a real model without building the
//! reference tools (about 15 minutes in CI).

use std::ffi::CString;
use std::path::Path;

use crate::EngineError;

/// The quantisation types `quantize` writes: llama.cpp's `llama_ftype`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantType {
    /// Dequantised to f32: the same weights with f32 arithmetic.
    F32,
    /// `F16`: half-precision floats.
    F16,
    /// `Q8_0`: 8-bit blocks.
    Q8_0,
    /// `Q6_K`: 6-bit k-quants.
    Q6K,
    /// `Q5_K_M`: 5-bit k-quants, medium mix.
    Q5KM,
    /// `Q4_K_M`: 4-bit k-quants, medium mix.
    Q4KM,
    /// `Q4_0`: 4-bit blocks.
    Q4_0,
    /// `Q3_K_S`: 3-bit k-quants, small mix.
    Q3KS,
    /// `Q2_K`: 2-bit k-quants.
    Q2K,
}

impl QuantType {
    /// Every type, widest first.
    pub const ALL: [QuantType; 9] = [
        QuantType::F32,
        QuantType::F16,
        QuantType::Q8_0,
        QuantType::Q6K,
        QuantType::Q5KM,
        QuantType::Q4KM,
        QuantType::Q4_0,
        QuantType::Q3KS,
        QuantType::Q2K,
    ];

    /// llama-quantize's name for the type (`Q5_K_M`).
    pub fn name(self) -> &'static str {
        match self {
            QuantType::F32 => "F32",
            QuantType::F16 => "F16",
            QuantType::Q8_0 => "Q8_0",
            QuantType::Q6K => "Q6_K",
            QuantType::Q5KM => "Q5_K_M",
            QuantType::Q4KM => "Q4_K_M",
            QuantType::Q4_0 => "Q4_0",
            QuantType::Q3KS => "Q3_K_S",
            QuantType::Q2K => "Q2_K",
        }
    }

    /// The type named `name` (any case), as llama-quantize spells it.
    pub fn parse(name: &str) -> Option<QuantType> {
        QuantType::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(name))
    }

    fn ftype(self) -> llama_cpp_sys_2::llama_ftype {
        use llama_cpp_sys_2 as sys;
        match self {
            QuantType::F32 => sys::LLAMA_FTYPE_ALL_F32,
            QuantType::F16 => sys::LLAMA_FTYPE_MOSTLY_F16,
            QuantType::Q8_0 => sys::LLAMA_FTYPE_MOSTLY_Q8_0,
            QuantType::Q6K => sys::LLAMA_FTYPE_MOSTLY_Q6_K,
            QuantType::Q5KM => sys::LLAMA_FTYPE_MOSTLY_Q5_K_M,
            QuantType::Q4KM => sys::LLAMA_FTYPE_MOSTLY_Q4_K_M,
            QuantType::Q4_0 => sys::LLAMA_FTYPE_MOSTLY_Q4_0,
            QuantType::Q3KS => sys::LLAMA_FTYPE_MOSTLY_Q3_K_S,
            QuantType::Q2K => sys::LLAMA_FTYPE_MOSTLY_Q2_K,
        }
    }
}

/// Quantises the GGUF model `input` to `quant` into `output`, which must be
/// a temporary path (the caller renames it into place): llama.cpp writes it
/// by name. Quantised inputs are requantised, as `llama-quantize
/// --allow-requantize` does; `threads` 0 means one per core.
pub fn quantize(input: &Path, output: &Path, quant: QuantType, threads: usize) -> Result<(), EngineError> {
    crate::backend()?;
    // As a load checks it: the quantizer reads the same header and
    // hyperparameters, and would copy a model of no tensors without a word.
    crate::check_model_file(input)?;
    let c_path = |p: &Path| {
        CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| EngineError::ModelLoad { path: p.to_owned(), message: "the path holds a NUL byte".to_owned() })
    };
    let (c_input, c_output) = (c_path(input)?, c_path(output)?);
    crate::memory::take_errors();
    // The quantizer maps the input and unmaps it tensor by tensor.
    let (code, os_error) = {
        let _mappings = crate::memory::mappings_lock();
        quantize_files(&c_input, &c_output, quant.ftype(), i32::try_from(threads).unwrap_or(0))
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

/// The errors of a failed write that the OS reports through errno: the
/// cause of a quantisation that failed while writing.
fn write_error(errno: i32) -> bool {
    [libc::ENOSPC, libc::EDQUOT, libc::EIO, libc::EFBIG, libc::EROFS, libc::EACCES, libc::EPERM].contains(&errno)
}

/// Runs the quantizer; its status and, where it failed writing, the OS's
/// error, read from errno on this thread right after the call (cleared before it).
#[allow(unsafe_code)]
fn quantize_files(input: &CString, output: &CString, ftype: llama_cpp_sys_2::llama_ftype, threads: i32) -> (u32, Option<std::io::Error>) {
    // SAFETY: llama_model_quantize_default_params returns a plain struct by
    // value; its pointer fields (imatrix, overrides) are null and stay null.
    let mut params = unsafe { llama_cpp_sys_2::llama_model_quantize_default_params() };
    params.ftype = ftype;
    params.nthread = threads;
    params.allow_requantize = true;
    #[cfg(target_os = "linux")]
    // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
    unsafe {
        *libc::__errno_location() = 0;
    }
    // SAFETY: both paths are NUL-terminated strings that outlive the call,
    // and `params` is a valid, initialised struct on this stack frame.
    // llama_model_quantize catches its own C++ exceptions and returns non-zero.
    let code = unsafe { llama_cpp_sys_2::llama_model_quantize(input.as_ptr(), output.as_ptr(), &params) };
    let errno = std::io::Error::last_os_error();
    let os_error = (cfg!(target_os = "linux") && code != 0 && errno.raw_os_error().is_some_and(write_error)).then_some(errno);
    (code, os_error)
}
