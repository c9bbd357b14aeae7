//! The output projection of Q8_0 weights, outside llama.cpp's graph, to the
//! bit: the numbers llama.cpp's CPU backend gives (its activations quantised
//! by `quantize_row_q8_0`'s AVX path, the product by llamafile's
//! `tinyBLAS_Q0_AVX`), in fewer instructions.
//!
//! tinyBLAS computes each logit as eight f32 lanes, lane `L` accumulating
//! over the 32-value blocks in order `acc = fma(d_w · d_x, Σ₄ w·x, acc)`
//! (the four products of bytes `4L..4L+4`, an exact integer), then sums the
//! lanes as `((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7))`. Every step is
//! exact or one IEEE rounding, so any code that does the same steps gives
//! the same bits. The AVX-512 kernel here takes the integer sums as
//! `Σ (w+128)·x − 128·Σ x` (one `vpdpbusd` seeded with the second term,
//! which is the same integer) and holds two logits in a register, where
//! tinyBLAS spends two sign operations and a shuffle on each.
//!
//! A run (score.rs) hands llama.cpp an eval callback that copies the final
//! norm's rows (the rows read) and, once this projection has given
//! llama.cpp's bits on the run's first rows, stops the graph there. Only the
//! Q8_0 output matrices of models on the CPU, where the CPU has AVX-512 VNNI,
//! take this path; elsewhere llama.cpp's projection is as fast. llama.cpp
//! takes tinyBLAS for a product of 2 rows or more (one row goes to
//! `vec_dot`, which sums in another order): the batch rule reads at least 12.

use std::cell::UnsafeCell;
use std::ffi::{c_void, CStr};
use std::path::Path;

/// Values in a Q8_0 block.
pub const QK8_0: usize = 32;

/// Bytes of a Q8_0 block: an f16 scale, then 32 signed bytes.
pub const BLOCK_BYTES: usize = 34;

/// An f16's value (IEEE half precision, exactly, as F16C's `vcvtph2ps`
/// converts it).
pub fn f16_to_f32(h: u16) -> f32 {
    half::f16::from_bits(h).to_f32()
}

/// An f32 rounded to f16, to nearest even (F16C's `vcvtps2ph` with
/// rounding 0, as ggml stores a Q8_0 scale).
pub fn f32_to_f16(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// `x` (a multiple of 32 values) as Q8_0 blocks, as llama.cpp's CPU backend
/// quantises a matrix product's activations (`quantize_row_q8_0`'s AVX
/// path): scale `max|x| / 127` stored as f16, values `x · (127 / max|x|)`
/// rounded to nearest even.
pub fn quantize_q8_0(x: &[f32], out: &mut Vec<u8>) {
    for block in x.chunks_exact(QK8_0) {
        let max = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = max / 127.0;
        let id = if max != 0.0 { 127.0 / max } else { 0.0 };
        out.extend_from_slice(&f32_to_f16(d).to_le_bytes());
        // Saturating, as the packs that narrow the rounded values.
        out.extend(block.iter().map(|v| ((v * id).round_ties_even() as i32).clamp(-128, 127) as i8 as u8));
    }
}

/// tinyBLAS's sum of one logit's eight lanes.
fn lane_sum(l: &[f32; 8]) -> f32 {
    let y = [l[4] + l[0], l[5] + l[1], l[6] + l[2], l[7] + l[3]];
    (y[0] + y[2]) + (y[1] + y[3])
}

/// Logits of `rows` activation rows (each `k / 32` Q8_0 blocks, back to
/// back in `x`) against the weight matrix `w` (`n` rows of `k / 32` Q8_0
/// blocks): `out[j · n + r]`, as llama.cpp computes them. Plain Rust, one
/// logit at a time: the reference the fast kernel is held to.
pub fn project_reference(w: &[u8], n: usize, x: &[u8], rows: usize, k: usize, out: &mut [f32]) {
    let blocks = k / QK8_0;
    for j in 0..rows {
        let xr = &x[j * blocks * BLOCK_BYTES..(j + 1) * blocks * BLOCK_BYTES];
        for r in 0..n {
            let wr = &w[r * blocks * BLOCK_BYTES..(r + 1) * blocks * BLOCK_BYTES];
            let mut acc = [0.0f32; 8];
            for (wb, xb) in wr.chunks_exact(BLOCK_BYTES).zip(xr.chunks_exact(BLOCK_BYTES)) {
                let d = f16_to_f32(u16::from_le_bytes([wb[0], wb[1]])) * f16_to_f32(u16::from_le_bytes([xb[0], xb[1]]));
                for (lane, a) in acc.iter_mut().enumerate() {
                    let s: i32 = (0..4).map(|t| i32::from(wb[2 + 4 * lane + t] as i8) * i32::from(xb[2 + 4 * lane + t] as i8)).sum();
                    *a = d.mul_add(s as f32, *a);
                }
            }
            out[j * n + r] = lane_sum(&acc);
        }
    }
}

/// [`project_reference`]'s numbers on `threads` threads, by the AVX-512
/// kernel where the CPU has AVX-512 with VNNI (else by the reference).
pub fn project(w: &[u8], n: usize, x: &[u8], rows: usize, k: usize, out: &mut [f32], threads: usize) {
    #[cfg(target_arch = "x86_64")]
    if fast_kernel() {
        avx512::project(w, n, x, rows, k, out, threads);
        return;
    }
    let _ = threads;
    project_reference(w, n, x, rows, k, out)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use super::{f16_to_f32, BLOCK_BYTES, QK8_0};
    use std::arch::x86_64::*;

    /// Two activation rows' block, as the kernel reads it.
    #[derive(Clone, Copy)]
    struct Pair {
        /// The two blocks' 32 values, one row per 256-bit half.
        x: __m512i,
        /// Per lane, −128 × the sum of its four values.
        seed: __m512i,
        /// Each row's scale, over its half.
        d: __m512,
    }

    /// Logits of weight rows `r` and activation pairs in tiles of `RT` × `PT`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
    fn tile<const RT: usize, const PT: usize>(
        w: &[u8],
        r: usize,
        pairs: &[Pair],
        p: usize,
        blocks: usize,
        sums: &mut [[[f32; 2]; PT]; RT],
    ) {
        let flip = _mm512_set1_epi8(-128);
        let mut acc = [[_mm512_setzero_ps(); PT]; RT];
        for l in 0..blocks {
            let mut wu = [_mm512_setzero_si512(); RT];
            let mut halves = [0u16; 8];
            for i in 0..RT {
                let at = ((r + i) * blocks + l) * BLOCK_BYTES;
                let block = &w[at..at + BLOCK_BYTES];
                // SAFETY: `block` holds 34 bytes, of which the 32 from 2 are read.
                let v = unsafe { _mm256_loadu_si256(block[2..].as_ptr().cast()) };
                wu[i] = _mm512_xor_si512(_mm512_broadcast_i64x4(v), flip);
                halves[i] = u16::from_le_bytes([block[0], block[1]]);
            }
            // The scales by F16C, as tinyBLAS converts them (exactly).
            let mut scales = [0f32; 8];
            // SAFETY: 16 bytes read from `halves`, 32 written to `scales`.
            unsafe { _mm256_storeu_ps(scales.as_mut_ptr(), _mm256_cvtph_ps(_mm_loadu_si128(halves.as_ptr().cast()))) };
            let dw: [__m512; RT] = std::array::from_fn(|i| _mm512_set1_ps(scales[i]));
            for q in 0..PT {
                let pair = pairs[(p + q) * blocks + l];
                for i in 0..RT {
                    let d = _mm512_mul_ps(dw[i], pair.d);
                    let s = _mm512_dpbusd_epi32(pair.seed, wu[i], pair.x);
                    acc[i][q] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[i][q]);
                }
            }
        }
        for i in 0..RT {
            for q in 0..PT {
                // Each half's eight lanes summed in tinyBLAS's order (lane_sum):
                // l_k + l_{k+4}, then (k=0)+(k=2) and (k=1)+(k=3), then those
                // two; IEEE addition is commutative, so operands may swap.
                let x = acc[i][q];
                let y = _mm512_add_ps(x, _mm512_shuffle_f32x4::<0b10_11_00_01>(x, x));
                let z = _mm512_add_ps(y, _mm512_permute_ps::<0b11_10_11_10>(y));
                let sum = _mm512_add_ps(z, _mm512_movehdup_ps(z));
                let mut lanes = [0f32; 16];
                // SAFETY: 16 f32 are written to a 16-f32 array.
                unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), sum) };
                sums[i][q] = [lanes[0], lanes[8]];
            }
        }
    }

    /// The activation rows as pairs of blocks (a missing second row zero).
    fn pairs(x: &[u8], rows: usize, blocks: usize) -> Vec<Pair> {
        let row_bytes = blocks * BLOCK_BYTES;
        let n_pairs = rows.div_ceil(2);
        let mut out = Vec::with_capacity(n_pairs * blocks);
        for p in 0..n_pairs {
            for l in 0..blocks {
                let mut bytes = [0u8; 64];
                let mut seed = [0i32; 16];
                let mut d = [0f32; 16];
                for h in 0..2 {
                    let j = 2 * p + h;
                    if j >= rows {
                        continue;
                    }
                    let block = &x[j * row_bytes + l * BLOCK_BYTES..][..BLOCK_BYTES];
                    bytes[32 * h..32 * h + 32].copy_from_slice(&block[2..]);
                    for lane in 0..8 {
                        seed[8 * h + lane] = -128 * (0..4).map(|t| i32::from(block[2 + 4 * lane + t] as i8)).sum::<i32>();
                    }
                    d[8 * h..8 * h + 8].fill(f16_to_f32(u16::from_le_bytes([block[0], block[1]])));
                }
                // SAFETY: each load reads 64 bytes from a 64-byte array.
                let pair = unsafe {
                    Pair {
                        x: _mm512_loadu_si512(bytes.as_ptr().cast()),
                        seed: _mm512_loadu_si512(seed.as_ptr().cast()),
                        d: _mm512_loadu_ps(d.as_ptr()),
                    }
                };
                out.push(pair);
            }
        }
        out
    }

    /// A pointer to the logits, written by several threads at indices none shares.
    struct Out(*mut f32);
    // SAFETY: the threads write disjoint indices (their own weight rows).
    unsafe impl Send for Out {}
    unsafe impl Sync for Out {}

    /// One projection: the weights, the activations as pairs, the logits.
    struct Job<'a> {
        w: &'a [u8],
        pairs: Vec<Pair>,
        blocks: usize,
        rows: usize,
        n: usize,
        out: Out,
    }

    /// Every logit of weight rows `r..r + RT`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,f16c")]
    fn rows_of<const RT: usize>(job: &Job<'_>, r: usize) {
        // The weight rows two tiles on, into the cache while these compute:
        // in a run the matrix is not in the cache, and it is read once.
        let row_bytes = job.blocks * BLOCK_BYTES;
        let ahead = ((r + 8) * row_bytes).min(job.w.len());
        let until = ((r + 8 + RT) * row_bytes).min(job.w.len());
        for at in (ahead..until).step_by(64) {
            // SAFETY: `at` is within `w`; a prefetch reads nothing.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(job.w.as_ptr().add(at).cast()) };
        }
        let n_pairs = job.rows.div_ceil(2);
        let mut p = 0;
        while p < n_pairs {
            let pt = (n_pairs - p).min(3);
            let put = |j: usize, i: usize, logit: f32| {
                if j < job.rows {
                    // SAFETY: j < rows and r + i < n: within the rows × n logits;
                    // this thread alone writes weight row r + i.
                    unsafe { *job.out.0.add(j * job.n + r + i) = logit };
                }
            };
            macro_rules! run {
                ($pt:literal) => {{
                    let mut sums = [[[0f32; 2]; $pt]; RT];
                    tile::<RT, $pt>(job.w, r, &job.pairs, p, job.blocks, &mut sums);
                    for i in 0..RT {
                        for q in 0..$pt {
                            put(2 * (p + q), i, sums[i][q][0]);
                            put(2 * (p + q) + 1, i, sums[i][q][1]);
                        }
                    }
                }};
            }
            match pt {
                3 => run!(3),
                2 => run!(2),
                _ => run!(1),
            }
            p += pt;
        }
    }

    pub(super) fn project(w: &[u8], n: usize, x: &[u8], rows: usize, k: usize, out: &mut [f32], threads: usize) {
        let blocks = k / QK8_0;
        let size = |a: usize, b: usize| a.checked_mul(b).and_then(|v| v.checked_mul(BLOCK_BYTES));
        let fits = k > 0 && k.is_multiple_of(QK8_0) && rows.checked_mul(n).is_some_and(|c| out.len() >= c);
        assert!(fits && size(n, blocks).is_some_and(|c| w.len() >= c) && size(rows, blocks).is_some_and(|c| x.len() >= c), "shapes");
        let job = Job { w, pairs: pairs(x, rows, blocks), blocks, rows, n, out: Out(out.as_mut_ptr()) };
        let threads = threads.max(1);
        // Whole tiles of 4 weight rows per thread, the rest to the last.
        let per = (n / 4).div_ceil(threads) * 4;
        std::thread::scope(|scope| {
            for t in 0..threads {
                let start = (t * per).min(n);
                let end = if t + 1 == threads { n } else { ((t + 1) * per).min(n) };
                let job = &job;
                scope.spawn(move || {
                    let mut r = start;
                    // SAFETY: `project` runs this only where the CPU has AVX-512 F, BW and VNNI, and F16C.
                    unsafe {
                        while r + 4 <= end {
                            rows_of::<4>(job, r);
                            r += 4;
                        }
                        while r < end {
                            rows_of::<1>(job, r);
                            r += 1;
                        }
                    }
                });
            }
        });
    }
}

/// Whether this CPU runs the fast kernel; elsewhere llama.cpp's own
/// projection is as fast as the reference, and is kept.
pub fn fast_kernel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
            && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Where a model's output matrix lies: its bytes in the file, rows (the
/// vocabulary) and width (the hidden size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputTensor {
    /// Its bytes in the file.
    pub bytes: std::ops::Range<u64>,
    /// Rows: the vocabulary.
    pub n: usize,
    /// Values a row: the hidden size.
    pub k: usize,
}

impl OutputTensor {
    /// The output matrix of a checked header (`output.weight`, or the token
    /// embeddings where the model ties them), if it is a Q8_0 matrix.
    pub fn find(header: &mcscore_gguf::Header<'_>) -> Option<OutputTensor> {
        let find = |name: &[u8]| header.tensors().find(|t| t.name == name);
        let t = find(b"output.weight").or_else(|| find(b"token_embd.weight"))?;
        let [k, n, 1, 1] = t.shape else { return None };
        let (k, n) = (usize::try_from(k).ok()?, usize::try_from(n).ok()?);
        let size = (n.checked_mul(k)? / QK8_0).checked_mul(BLOCK_BYTES)? as u64;
        let fits = t.ggml_type == llama_cpp_sys_2::GGML_TYPE_Q8_0 as i32
            && k > 0
            && k % QK8_0 == 0
            && t.data.1.checked_sub(t.data.0) == Some(size);
        fits.then_some(OutputTensor { bytes: t.data.0..t.data.1, n, k })
    }
}

/// A model's Q8_0 output matrix, read where llama.cpp maps the model file
/// (so that its pages are resident once), or from a mapping of its own
/// where llama.cpp read the weights into memory (`--mmap off`).
pub(crate) struct OutputMatrix {
    bytes: Bytes,
    tensor: OutputTensor,
}

/// Where an output matrix's bytes are.
enum Bytes {
    /// In llama.cpp's mapping of the model file, at this address.
    Llama(*const u8),
    /// In a mapping of the engine's own.
    Own(memmap2::Mmap),
}

// SAFETY: the bytes are a read-only mapping of the model file, which nothing
// writes, valid while the model is loaded (see `OutputMatrix::map`).
#[allow(unsafe_code)]
unsafe impl Send for Bytes {}
#[allow(unsafe_code)]
unsafe impl Sync for Bytes {}

impl OutputMatrix {
    /// The output matrix `tensor` of the model file at `path`, in one of
    /// `llama_mappings` (the mappings llama.cpp made as it loaded the model),
    /// else in a mapping of its own; `None` if it cannot be read. The engine
    /// keeps it beside the model and drops it before the model.
    #[allow(unsafe_code)]
    pub(crate) fn map(path: &Path, tensor: OutputTensor, llama_mappings: &[(usize, usize, u64)]) -> Option<OutputMatrix> {
        if let Some(at) = crate::memory::mapped_at(llama_mappings, &tensor.bytes) {
            return Some(OutputMatrix { bytes: Bytes::Llama(at as *const u8), tensor });
        }
        let file = std::fs::File::open(path).ok()?;
        // SAFETY: the file is the model llama.cpp reads too; the engine checks
        // at a run's end that it was not changed (Engine::check_unchanged), as
        // a file rewritten under llama.cpp's own mapping would be. Private, so
        // that it is none of the shared mappings PageRelease advises on.
        let map = unsafe { memmap2::MmapOptions::new().map_copy_read_only(&file) }.ok()?;
        (tensor.bytes.end <= map.len() as u64).then_some(OutputMatrix { bytes: Bytes::Own(map), tensor })
    }

    /// The matrix's bytes.
    #[allow(unsafe_code)]
    fn weights(&self) -> &[u8] {
        let len = (self.tensor.bytes.end - self.tensor.bytes.start) as usize;
        match &self.bytes {
            // SAFETY: `map` found these bytes in a read-only mapping that
            // llama.cpp made as it loaded this engine's model, which stays
            // mapped while that model is loaded; the engine drops this first.
            Bytes::Llama(at) => unsafe { std::slice::from_raw_parts(*at, len) },
            Bytes::Own(map) => &map[self.tensor.bytes.start as usize..self.tensor.bytes.end as usize],
        }
    }

    /// Rows: the vocabulary.
    pub(crate) fn n(&self) -> usize {
        self.tensor.n
    }

    /// Logits of `hidden` (rows of the final norm, `k` values each) into
    /// `out` (`n` per row), as llama.cpp computes them.
    pub(crate) fn project(&self, hidden: &[f32], out: &mut Vec<f32>, threads: usize, scratch: &mut Vec<u8>) {
        let k = self.tensor.k;
        let rows = hidden.len() / k;
        scratch.clear();
        for row in hidden.chunks_exact(k) {
            quantize_q8_0(row, scratch);
        }
        out.clear();
        out.resize(rows * self.tensor.n, 0.0);
        project(self.weights(), self.tensor.n, scratch, rows, k, out, threads);
    }
}

/// What the eval callback keeps of a decode: the final norm's rows.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    /// Whether to ask for the final norm at all.
    pub(crate) active: bool,
    /// Whether to stop the graph once it has the final norm (the output
    /// projection then left to [`OutputMatrix::project`]).
    pub(crate) stop: bool,
    /// The final norm's rows of the last decode, `width` values each, in
    /// output order.
    pub(crate) hidden: Vec<f32>,
    pub(crate) width: usize,
    /// How often the final norm was copied since the last reset: once per
    /// decode of one micro-batch.
    pub(crate) hits: usize,
}

/// A [`Capture`] at an address that stays put while a context points to it.
pub(crate) struct CaptureSlot(Box<UnsafeCell<Capture>>);

impl CaptureSlot {
    pub(crate) fn new(capture: Capture) -> CaptureSlot {
        CaptureSlot(Box::new(UnsafeCell::new(capture)))
    }

    /// The pointer llama.cpp hands [`capture_norm`].
    pub(crate) fn user_data(&self) -> *mut c_void {
        self.0.get().cast()
    }

    /// The capture, between decodes.
    #[allow(unsafe_code)]
    pub(crate) fn get(&mut self) -> &mut Capture {
        // SAFETY: llama.cpp calls capture_norm only within llama_decode, on
        // the thread that called it; `&mut self` is not held across one.
        unsafe { &mut *self.0.get() }
    }
}

/// llama.cpp's eval callback: asks for the node `result_norm` (the final
/// norm, the output projection's input) and copies its rows; stops the graph
/// there when the capture says so.
///
/// # Safety
/// `user_data` is a [`CaptureSlot`]'s pointer, and `t` a graph node that
/// ggml computed on the CPU when `ask` is false.
#[allow(unsafe_code)]
pub(crate) unsafe extern "C" fn capture_norm(t: *mut llama_cpp_sys_2::ggml_tensor, ask: bool, user_data: *mut c_void) -> bool {
    // SAFETY: see the function's contract; ggml names are NUL-terminated.
    let (capture, t) = unsafe { (&mut *user_data.cast::<Capture>(), &*t) };
    let name: &[u8] = unsafe { std::slice::from_raw_parts(t.name.as_ptr().cast(), t.name.len()) };
    let is_norm = CStr::from_bytes_until_nul(name).is_ok_and(|n| n.to_bytes() == b"result_norm");
    if ask {
        return capture.active && is_norm;
    }
    if !is_norm {
        return true;
    }
    let [width, rows, 1, 1] = t.ne else { return true };
    let (width, rows) = (width as usize, rows as usize);
    // SAFETY: a node's buffer, where it has one, is a live ggml buffer.
    let host = !t.buffer.is_null() && unsafe { llama_cpp_sys_2::ggml_backend_buffer_is_host(t.buffer) };
    let contiguous = t.type_ == llama_cpp_sys_2::GGML_TYPE_F32 && t.nb[0] == 4 && t.nb[1] == 4 * width && !t.data.is_null();
    if !(host && contiguous) {
        return true;
    }
    capture.hidden.clear();
    // SAFETY: a contiguous f32 tensor of width × rows values in host memory.
    capture.hidden.extend_from_slice(unsafe { std::slice::from_raw_parts(t.data.cast::<f32>(), width * rows) });
    capture.width = width;
    capture.hits += 1;
    !capture.stop
}

/// Whether the engine's projection gave llama.cpp's bits on a run's first rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// No rows compared yet: llama.cpp computes its projection too.
    Pending,
    /// Every logit the same: llama.cpp's graph stops at the final norm.
    Same,
    /// Some differed (a model whose logits are not the plain product, such
    /// as one with soft-capped logits), or the final norm was not found:
    /// llama.cpp's logits are read, and the callback asks for nothing.
    Differs,
}

/// A run's projection of the rows it reads: compared with llama.cpp's on
/// the first micro-batch that reads rows, then used instead of it.
pub(crate) struct Projection<'e> {
    matrix: &'e OutputMatrix,
    slot: CaptureSlot,
    check: Check,
    threads: usize,
    hidden: Vec<f32>,
    scratch: Vec<u8>,
    logits: Vec<f32>,
    /// Seconds spent projecting rows that the run then used.
    pub(crate) seconds: f64,
}

impl<'e> Projection<'e> {
    pub(crate) fn new(matrix: &'e OutputMatrix, threads: usize) -> Projection<'e> {
        let capture = Capture { active: true, ..Capture::default() };
        Projection {
            matrix,
            slot: CaptureSlot::new(capture),
            check: Check::Pending,
            threads: threads.max(1),
            hidden: Vec::new(),
            scratch: Vec::new(),
            logits: Vec::new(),
            seconds: 0.0,
        }
    }

    /// Context parameters that hand the final norm's rows to this projection.
    #[allow(unsafe_code)]
    pub(crate) fn params(
        &self,
        params: llama_cpp_2::context::params::LlamaContextParams,
    ) -> llama_cpp_2::context::params::LlamaContextParams {
        // SAFETY: capture_norm takes a CaptureSlot's pointer, as given; the
        // caller keeps this projection until every context made with these
        // parameters is dropped (score.rs declares it before the context),
        // and llama.cpp calls the callback only within llama_decode, on the
        // calling thread, for nodes on the CPU (Engine::load's condition).
        unsafe { params.with_cb_eval(Some(capture_norm), self.slot.user_data()) }
    }

    /// The logits rows of the decode just made at its tokens `entries`
    /// (distinct, ascending; `outputs` says which tokens had rows), `n` per
    /// entry, or `None` where llama.cpp's own are to be read. Once the
    /// engine's projection has replaced llama.cpp's, a decode whose final
    /// norm was not copied whole is an error: llama.cpp computed no logits.
    pub(crate) fn rows(
        &mut self,
        ctx: &llama_cpp_2::context::LlamaContext<'_>,
        entries: &[usize],
        outputs: &[bool],
    ) -> Result<Option<&[f32]>, &'static str> {
        if self.check == Check::Differs {
            return Ok(None);
        }
        let started = std::time::Instant::now();
        let (k, n) = (self.matrix.tensor.k, self.matrix.n());
        let capture = self.slot.get();
        let (hits, width) = (std::mem::take(&mut capture.hits), capture.width);
        // One copy of the final norm, a row for every output of the micro-batch.
        let whole = hits == 1 && width == k && capture.hidden.len() == outputs.iter().filter(|&&o| o).count() * k;
        if !whole {
            if self.check == Check::Same {
                return Err("copying the final norm's rows");
            }
            self.differs();
            return Ok(None);
        }
        self.hidden.clear();
        for &entry in entries {
            let row = outputs[..entry].iter().filter(|&&o| o).count();
            self.hidden.extend_from_slice(&capture.hidden[row * k..(row + 1) * k]);
        }
        self.matrix.project(&self.hidden, &mut self.logits, self.threads, &mut self.scratch);
        if self.check == Check::Pending {
            let same = self.logits.len() == entries.len() * n
                && entries.iter().zip(self.logits.chunks_exact(n)).all(|(&entry, ours)| {
                    let theirs = ctx.get_logits_ith(entry as i32);
                    theirs.len() == n && theirs.iter().zip(ours).all(|(a, b)| a.to_bits() == b.to_bits())
                });
            if !same {
                self.differs();
                return Ok(None);
            }
            self.check = Check::Same;
            self.slot.get().stop = true;
        }
        self.seconds += started.elapsed().as_secs_f64();
        Ok(Some(&self.logits))
    }

    /// A decode that read no rows: its copy of the final norm is not needed.
    pub(crate) fn skip(&mut self) {
        self.slot.get().hits = 0;
    }

    fn differs(&mut self) {
        self.check = Check::Differs;
        let capture = self.slot.get();
        capture.active = false;
        capture.stop = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_mt::Mt64;

    #[test]
    fn halves_convert_as_f16c_does() {
        // Every finite half survives the round trip; NaNs stay NaN.
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            if x.is_nan() {
                assert!(f16_to_f32(f32_to_f16(x)).is_nan(), "{h:#x}");
            } else {
                assert_eq!(f32_to_f16(x), h, "{h:#x} ({x})");
            }
        }
        // Ties go to even; beyond the largest half, infinity; below the smallest, zero.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(2f32.powi(-26)), 0);
        assert_eq!(f32_to_f16(-2f32.powi(-24)), 0x8001);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }

    #[test]
    fn activations_quantise_as_ggmls_avx_path() {
        let x: Vec<f32> = (0..32).map(|i| (i as f32 - 15.5) / 4.0).collect();
        let mut q = Vec::new();
        quantize_q8_0(&x, &mut q);
        assert_eq!(q.len(), BLOCK_BYTES);
        // max |x| 3.875: scale 3.875/127 in f16, values x · 127/3.875.
        assert_eq!(u16::from_le_bytes([q[0], q[1]]), f32_to_f16(3.875 / 127.0));
        assert_eq!((q[2] as i8, q[33] as i8, q[2 + 17] as i8), (-127, 127, 12));
        // With max 127 the multiplier is 1: halves go to even (roundf would
        // take 3 and −3), as _mm256_round_ps does.
        let mut x = [0.0f32; 32];
        x[..4].copy_from_slice(&[127.0, 2.5, 3.5, -2.5]);
        q.clear();
        quantize_q8_0(&x, &mut q);
        assert_eq!(u16::from_le_bytes([q[0], q[1]]), 0x3c00);
        assert_eq!(q[2..6].iter().map(|&b| b as i8).collect::<Vec<_>>(), [127, 2, 4, -2]);
        // An all-zero block has scale 0.
        q.clear();
        quantize_q8_0(&[0.0; 32], &mut q);
        assert!(q.iter().all(|&b| b == 0));
    }

    /// `rows` random activation rows and `n` random weight rows of width `k`, as Q8_0.
    fn random(n: usize, rows: usize, k: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
        let mut rng = Mt64::new(seed);
        let mut values = |count: usize| -> Vec<f32> { (0..count).map(|_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).collect() };
        let (mut w, mut x) = (Vec::new(), Vec::new());
        quantize_q8_0(&values(n * k), &mut w);
        quantize_q8_0(&values(rows * k), &mut x);
        (w, x)
    }

    #[test]
    fn the_fast_kernel_gives_the_references_bits() {
        if !fast_kernel() {
            eprintln!("this CPU has no AVX-512 VNNI: the engine leaves the projection to llama.cpp, and only the reference is tested");
        }
        // Weight rows not a multiple of the 4-row tile, odd and even activation
        // rows (pairs, tiles of 3 pairs and their rests), 1 to 3 threads.
        for (n, rows, k, threads) in [(37, 1, 64, 1), (40, 7, 640, 2), (103, 12, 96, 3), (8, 2, 32, 2), (5, 13, 640, 1)] {
            let (w, x) = random(n, rows, k, (n * 1000 + rows) as u64);
            let (mut fast, mut reference) = (vec![f32::NAN; rows * n], vec![f32::NAN; rows * n]);
            project(&w, n, &x, rows, k, &mut fast, threads);
            project_reference(&w, n, &x, rows, k, &mut reference);
            let same = fast.iter().zip(&reference).filter(|(a, b)| a.to_bits() == b.to_bits()).count();
            assert_eq!(same, rows * n, "{n} × {k} weights, {rows} rows, {threads} threads");
        }
    }
}
