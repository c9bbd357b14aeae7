//! Where a run's memory goes: the process's resident pages, as Linux counts
//! them, and the buffers llama.cpp allocates for weights, KV cache and
//! compute. llama.cpp reports its buffers only in its log, so the engine
//! reads them there: its log callback keeps the "buffer size" lines of the
//! thread that loads a model or creates a context.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// How the model's weights are read (`--mmap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mmap {
    /// Mapped from the file, every page llama.cpp read kept resident (llama.cpp's way).
    On,
    /// Read into memory the process owns.
    Off,
    /// Mapped, and the resident pages of the model's mapping released as
    /// loading goes: a tensor llama.cpp copies out (repacked, or to a GPU)
    /// costs its copy only, one used in place is paged in as it is read.
    #[default]
    Auto,
}

impl Mmap {
    /// Parses `on`, `off` or `auto`.
    pub fn parse(text: &str) -> Result<Mmap, String> {
        match text {
            "on" => Ok(Mmap::On),
            "off" => Ok(Mmap::Off),
            "auto" => Ok(Mmap::Auto),
            _ => Err(format!("expected on, off or auto, got {text:?}")),
        }
    }
}

/// Held while the engine maps or unmaps a model file (loading, freeing,
/// quantizing), so that [`PageRelease`] reads this process's mappings and
/// advises on them with no mapping of a model file changing in between.
static MAPPINGS: Mutex<()> = Mutex::new(());

/// [`MAPPINGS`], held until the guard drops; a panic elsewhere while it was
/// held leaves nothing to repair.
pub(crate) fn mappings_lock() -> MutexGuard<'static, ()> {
    MAPPINGS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Releases the resident pages of a model file's mappings while llama.cpp
/// loads it (`--mmap auto`); call it with [`mappings_lock`] held. On a CPU, llama.cpp copies most quantised
/// weights out of the mapping into repacked buffers (on a GPU, into its
/// memory), and the pages it read stay resident beside the copy: a mapped
/// model costs about twice its size. Released, a copied tensor costs its
/// copy only, and a tensor used in place is paged in again from the page
/// cache when a decode reads it (docs/performance.md, "Memory").
#[derive(Clone)]
pub(crate) struct PageRelease {
    /// The file as /proc/self/maps names it, and its inode.
    path: std::path::PathBuf,
    inode: u64,
    /// Loading progress at the last release.
    last: f32,
    /// Whether a release found a mapping of the file.
    found: Arc<AtomicBool>,
}

impl PageRelease {
    #[cfg(target_os = "linux")]
    pub(crate) fn new(path: &std::path::Path) -> Option<PageRelease> {
        let (path, inode) = maps_name(path)?;
        Some(PageRelease { path, inode, last: -1.0, found: Arc::new(AtomicBool::new(false)) })
    }

    /// Only Linux lists a process's mappings where this reads them.
    #[cfg(not(target_os = "linux"))]
    pub fn new(_path: &std::path::Path) -> Option<PageRelease> {
        None
    }

    /// Whether any release found a mapping of the file to release.
    pub(crate) fn found(&self) -> bool {
        self.found.load(Ordering::Relaxed)
    }

    /// Called with llama.cpp's loading progress (before each tensor): releases
    /// the pages read since the last release, every 1/256 of the model.
    pub(crate) fn progress(&mut self, progress: f32) {
        if progress - self.last >= 1.0 / 256.0 || progress >= 1.0 {
            self.release();
            self.last = progress;
        }
    }

    /// Drops every resident page of the file's mappings in this process.
    #[cfg(target_os = "linux")]
    pub(crate) fn release(&self) {
        for (start, end, _) in mappings_now(&self.path, self.inode) {
            self.found.store(true, Ordering::Relaxed);
            // SAFETY: [start, end) is a shared, read-only mapping of the model
            // file, listed in this process's own maps, and no mapping of a
            // model file changes while the caller holds `mappings_lock` (the
            // engine maps and unmaps them only under it). llama.cpp never
            // writes it, so MADV_DONTNEED only unmaps pages whose content is
            // the file's: a later read faults the same bytes back from the
            // page cache, and no pointer into the mapping changes.
            unsafe {
                libc::madvise(start as *mut c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn release(&self) {}
}

/// The address ranges of the shared read-only mappings (llama.cpp's) of the
/// file at `path` (inode `inode`) in a /proc/PID/maps text, each with the
/// file offset it starts at. The path is the
/// rest of a line after its fifth field, as bytes (a path need not be UTF-8).
#[cfg(any(target_os = "linux", test))]
fn mappings_of(maps: &[u8], path: &std::path::Path, inode: u64) -> Vec<(usize, usize, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let field = |s: &[u8]| std::str::from_utf8(s).ok().map(str::to_owned);
    maps.split(|&b| b == b'\n')
        .filter_map(|line| {
            let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
            let (range, perms, offset, _dev, line_inode) =
                (field(fields.next()?)?, fields.next()?, fields.next()?, fields.next()?, field(fields.next()?)?);
            let named = &line[line.iter().position(|&b| b == b'/')?..];
            if perms != b"r--s" || line_inode.parse::<u64>().ok()? != inode || std::ffi::OsStr::from_bytes(named) != path.as_os_str() {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
            let offset = u64::from_str_radix(std::str::from_utf8(offset).ok()?, 16).ok()?;
            (end > start).then_some((start, end, offset))
        })
        .collect()
}

/// The shared read-only mappings of the model file at `path` in this
/// process (start, end, file offset): compared before and after llama.cpp
/// loads it, under [`mappings_lock`], they tell which one is this load's.
#[cfg(target_os = "linux")]
pub(crate) fn file_mappings(path: &std::path::Path) -> Vec<(usize, usize, u64)> {
    maps_name(path).map(|(path, inode)| mappings_now(&path, inode)).unwrap_or_default()
}

/// The file at `path` as /proc/self/maps names it (its canonical path), and its inode.
#[cfg(target_os = "linux")]
fn maps_name(path: &std::path::Path) -> Option<(std::path::PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let path = std::fs::canonicalize(path).ok()?;
    let inode = std::fs::metadata(&path).ok()?.ino();
    Some((path, inode))
}

/// [`mappings_of`] this process's maps now; none where they cannot be read.
#[cfg(target_os = "linux")]
fn mappings_now(path: &std::path::Path, inode: u64) -> Vec<(usize, usize, u64)> {
    std::fs::read("/proc/self/maps").map(|maps| mappings_of(&maps, path, inode)).unwrap_or_default()
}

/// Only Linux lists a process's mappings where this reads them.
#[cfg(not(target_os = "linux"))]
pub(crate) fn file_mappings(_path: &std::path::Path) -> Vec<(usize, usize, u64)> {
    Vec::new()
}

/// Where one of `mappings` holds bytes `bytes` of its file: the address of the first.
pub(crate) fn mapped_at(mappings: &[(usize, usize, u64)], bytes: &std::ops::Range<u64>) -> Option<usize> {
    mappings.iter().find_map(|&(start, end, offset)| {
        let within = bytes.start >= offset && bytes.end - offset <= (end - start) as u64;
        within.then(|| start + (bytes.start - offset) as usize)
    })
}

/// What a buffer llama.cpp allocated holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferUse {
    /// The model's weights (`CPU_Mapped`: the mapped file; `CPU_REPACK`,
    /// `AMX`: copies laid out for the CPU's kernels; `CPU`: read into memory).
    Weights,
    /// The KV cache.
    Kv,
    /// The graph's intermediate tensors.
    Compute,
    /// The logits rows a decode returns.
    Output,
}

/// One buffer llama.cpp reported, by its buffer type's name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Buffer {
    /// Its buffer type's name (`CPU`, `CPU_REPACK`, `CUDA0`).
    pub name: String,
    /// What it holds.
    #[serde(rename = "use")]
    pub holds: BufferUse,
    /// Its size in bytes, from the MiB (two decimals) that the log gives.
    pub bytes: u64,
}

thread_local! {
    /// The buffer lines llama.cpp logged on this thread since the last [`take_buffers`].
    static BUFFERS: RefCell<Vec<Buffer>> = const { RefCell::new(Vec::new()) };
}

/// Buffer lines kept per thread between two [`take_buffers`]: a model load
/// and a context log a dozen.
const MAX_KEPT: usize = 256;

thread_local! {
    /// The error lines llama.cpp logged on this thread since the last [`take_errors`]:
    /// its reason for refusing a model or failing a quantisation, which its
    /// C API answers only with a null pointer or a status code.
    static ERRORS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Error lines kept per thread: the latest, each cut to [`MAX_ERROR_CHARS`].
const MAX_ERRORS: usize = 4;
const MAX_ERROR_CHARS: usize = 400;

/// Whether llama.cpp's whole log goes to stderr (`MCSCORE_LLAMA_LOG`).
fn echo_log() -> bool {
    static ECHO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ECHO.get_or_init(|| std::env::var_os("MCSCORE_LLAMA_LOG").is_some())
}

/// llama.cpp's (and ggml's) log callback: keeps the buffer lines, and echoes
/// everything where `MCSCORE_LLAMA_LOG` is set.
unsafe extern "C" fn log_callback(level: llama_cpp_sys_2::ggml_log_level, text: *const c_char, _user: *mut c_void) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string that lives for the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    if echo_log() {
        // Never a panic across the C boundary: a closed stderr loses the line.
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
    if level == llama_cpp_sys_2::GGML_LOG_LEVEL_ERROR {
        let line: String = text.trim().chars().take(MAX_ERROR_CHARS).collect();
        let _ = ERRORS.try_with(|e| {
            let mut errors = e.borrow_mut();
            if errors.len() >= MAX_ERRORS {
                errors.remove(0);
            }
            errors.push(line)
        });
    }
    if let Some(buffer) = parse_buffer_line(&text) {
        // A thread being torn down has no buffers left to keep.
        let _ = BUFFERS.try_with(|b| {
            let mut buffers = b.borrow_mut();
            // A thread that creates contexts and never asks (a server's
            // worker) keeps only its latest lines.
            if buffers.len() >= MAX_KEPT {
                buffers.clear();
            }
            buffers.push(buffer)
        });
    }
}

/// Routes llama.cpp's log (and mtmd's) through [`log_callback`]; called once, with the backend.
pub(crate) fn install_log() {
    // SAFETY: the callback is a plain function that lives for the process and
    // takes no user data.
    unsafe { llama_cpp_sys_2::llama_log_set(Some(log_callback), std::ptr::null_mut()) }
    // mtmd (the vision projector) and its helpers log on their own (this
    // sets both).
    // SAFETY: as above.
    unsafe { llama_cpp_sys_2::mtmd_helper_log_set(Some(log_callback), std::ptr::null_mut()) }
}

/// What llama.cpp's error lines on this thread since the last call say, as
/// one line ("; " between them); `None` where it logged no error.
pub(crate) fn take_errors() -> Option<String> {
    let errors = ERRORS.try_with(|e| std::mem::take(&mut *e.borrow_mut())).unwrap_or_default();
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// The buffers logged on this thread since the last call.
pub(crate) fn take_buffers() -> Vec<Buffer> {
    BUFFERS.try_with(|b| std::mem::take(&mut *b.borrow_mut())).unwrap_or_default()
}

/// Reads llama.cpp's `NAME model buffer size = X MiB` lines (and the KV,
/// compute and output ones), and the line where a projector's loader (mtmd's
/// `clip`) gives its weights' size: it reads them into one CPU buffer and
/// logs no buffer line for it.
fn parse_buffer_line(text: &str) -> Option<Buffer> {
    if let Some(after) = text.strip_prefix("load_hparams: model size:") {
        return Some(Buffer { name: "CPU".into(), holds: BufferUse::Weights, bytes: mib(after)? });
    }
    let (before, after) = text.split_once(" buffer size = ")?;
    let bytes = mib(after)?;
    let mut words = before.split_whitespace().rev();
    let holds = match words.next()? {
        "model" => BufferUse::Weights,
        "KV" => BufferUse::Kv,
        "compute" => BufferUse::Compute,
        "output" => BufferUse::Output,
        _ => return None,
    };
    let name = words.next()?.to_owned();
    Some(Buffer { name, holds, bytes })
}

/// `X MiB` (two decimals, as llama.cpp logs sizes) in bytes.
fn mib(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    let mib: f64 = words.next()?.parse().ok()?;
    (words.next() == Some("MiB") && mib.is_finite() && mib >= 0.0).then(|| (mib * 1024.0 * 1024.0).round() as u64)
}

/// The process's resident memory (Linux's `/proc/self/status`), in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Resident {
    /// Anonymous pages: memory the process allocated.
    pub anonymous: u64,
    /// File-backed pages: mapped files (the model, where mapped; the binary).
    pub file: u64,
    /// Shared memory.
    pub shared: u64,
}

impl Resident {
    /// The process's resident pages now, where the system says.
    pub fn now() -> Option<Resident> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        Some(Resident {
            anonymous: kib_field(&status, "RssAnon:")?,
            file: kib_field(&status, "RssFile:")?,
            shared: kib_field(&status, "RssShmem:")?,
        })
    }

    /// Every resident page, in bytes.
    pub fn total(&self) -> u64 {
        self.anonymous + self.file + self.shared
    }

    /// The larger of two samples, by total.
    pub fn max(self, other: Resident) -> Resident {
        if other.total() > self.total() {
            other
        } else {
            self
        }
    }
}

/// Where a run's memory went: `score --timings`, and "memory" in its JSON.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct MemoryReport {
    /// The model file's size.
    pub model_file: u64,
    /// The vision projector's file size, where one is attached (`--mmproj`);
    /// its buffers are among `buffers`, named `mmproj CPU`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projector_file: Option<u64>,
    /// How the weights were read (`--mmap`).
    pub mmap: Mmap,
    /// Whether `--mmap auto` found the file's mappings and released their pages.
    pub pages_released: bool,
    /// llama.cpp's buffers: the weights', then the largest context's (a run
    /// with --pmi, or scored in parts, creates several).
    pub buffers: Vec<Buffer>,
    /// The process's peak resident memory (`VmHWM`): the whole process's,
    /// so with several engines loaded (a library caller, `compare
    /// --until-decided`) it counts them all; so do the samples.
    pub peak: Option<u64>,
    /// The largest of the samples taken after loading and at the end of each
    /// scoring pass (its context still allocated), split by kind of page.
    pub largest_sample: Option<Resident>,
}

impl MemoryReport {
    /// The peak resident memory per byte of the model file (and the
    /// projector's, where one is attached): how far above the weights a run
    /// went (where the peak is known).
    pub fn peak_per_model_byte(&self) -> Option<f64> {
        let files = self.model_file + self.projector_file.unwrap_or(0);
        self.peak.map(|peak| peak as f64 / files.max(1) as f64)
    }

    /// Bytes of the buffers that hold `what`.
    pub fn bytes(&self, what: BufferUse) -> u64 {
        self.buffers.iter().filter(|b| b.holds == what).map(|b| b.bytes).sum()
    }
}

/// The process's peak resident memory so far (`VmHWM`), in bytes.
pub(crate) fn peak_resident() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmHWM:")
}

/// Bytes of memory available to a new allocation (Linux's MemAvailable), if known.
pub fn available_memory() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable:")
}

/// The value of a `KEY: N kB` line of /proc/self/status or /proc/meminfo, in bytes.
fn kib_field(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_buffer_lines_are_read() {
        let line = |text: &str| parse_buffer_line(text).map(|b| (b.name, b.holds, b.bytes));
        assert_eq!(
            line("load_tensors:   CPU_REPACK model buffer size =   180.50 MiB\n"),
            Some(("CPU_REPACK".into(), BufferUse::Weights, 189_267_968))
        );
        assert_eq!(line("llama_kv_cache:        CPU KV buffer size =    24.00 MiB\n"), Some(("CPU".into(), BufferUse::Kv, 25_165_824)));
        assert_eq!(line("sched_reserve:        CPU compute buffer size =     2.25 MiB\n").map(|b| b.1), Some(BufferUse::Compute));
        assert_eq!(line("llama_context:        CPU  output buffer size =     1.00 MiB\n").map(|b| b.1), Some(BufferUse::Output));
        assert_eq!(line("llama_adapter:  CPU LoRA buffer size = 1.00 MiB\n"), None);
        assert_eq!(line("model buffer size = NaN MiB"), None);
        assert_eq!(line("load: printing all EOG tokens:\n"), None);
        // A projector's weights, which mtmd reads into memory, and its compute buffer.
        assert_eq!(line("load_hparams: model size:         0.25 MiB\n"), Some(("CPU".into(), BufferUse::Weights, 262_144)));
        assert_eq!(line("load_hparams: metadata size:      0.01 MiB\n"), None);
        assert_eq!(line("reserve_compute_meta:        CPU compute buffer size =     0.05 MiB\n").map(|b| b.1), Some(BufferUse::Compute));
    }

    #[test]
    fn the_model_file_is_found_in_the_maps() {
        let maps = b"7f0000000000-7f0000400000 r--s 00000000 fd:01 1234     /models/a model.gguf\n\
                    7f0000400000-7f0000800000 r--s 00400000 fd:01 1234 /models/a model.gguf\n\
                    7f0000800000-7f0000900000 r--s 00000000 fd:01 99 /models/a model.gguf\n\
                    7f0000900000-7f0000a00000 r--s 00000000 fd:01 1234 /models/other.gguf\n\
                    7f0000a00000-7f0000b00000 rw-p 00000000 fd:01 1234 /models/a model.gguf\n\
                    7f0000b00000-7f0000c00000 r--s 00000000 fd:01 1234 /models/\xff.gguf\n\
                    7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0  [stack]\n";
        let path = std::path::Path::new("/models/a model.gguf");
        assert_eq!(mappings_of(maps, path, 1234), [(0x7f0000000000, 0x7f0000400000, 0), (0x7f0000400000, 0x7f0000800000, 0x400000)]);
        assert!(mappings_of(maps, path, 7).is_empty());
        // A path need not be UTF-8.
        use std::os::unix::ffi::OsStrExt;
        let odd = std::path::Path::new(std::ffi::OsStr::from_bytes(b"/models/\xff.gguf"));
        assert_eq!(mappings_of(maps, odd, 1234), [(0x7f0000b00000, 0x7f0000c00000, 0)]);
    }

    #[test]
    fn this_process_has_resident_memory() {
        let now = Resident::now().unwrap();
        assert!(now.anonymous > 0 && now.file > 0);
        // The peak never falls, so read after the sample it is at least that sample.
        assert!(peak_resident().unwrap() >= now.total());
        assert!(available_memory().unwrap() > 0);
        assert_eq!(kib_field("MemTotal:  100 kB\nMemAvailable:    24 kB\n", "MemAvailable:"), Some(24 * 1024));
    }
}
