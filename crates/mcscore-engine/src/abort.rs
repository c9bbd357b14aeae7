//! What the process says when llama.cpp stops it.
//!
//! ggml ends the process on a failed internal check (`GGML_ASSERT`, an
//! unsupported operation): it prints the check, forks a debugger to print a
//! backtrace (which a hostile pass saw hang `serve` for good), and aborts. mcscore checks the model
//! file and its settings before llama.cpp sees them, so an abort means a
//! check mcscore does not yet make; the user is owed the reason, not a
//! backtrace, and no output being written should stay behind.

// The hook is a C callback: each unsafe use carries its SAFETY note.
#![allow(unsafe_code)]

use std::ffi::{c_char, CStr};
use std::io::Write;

/// The exit status of an abort (128 + SIGABRT), as a shell reports one.
pub(crate) const ABORT_EXIT: i32 = 134;

/// ggml's abort hook: says the failed check on one line of stderr, removes
/// every output still being written, and exits with [`ABORT_EXIT`] without a
/// backtrace or a core file.
unsafe extern "C" fn on_abort(message: *const c_char) {
    let check = if message.is_null() {
        "(no message)".into()
    } else {
        // SAFETY: ggml passes its NUL-terminated message buffer, alive for the call.
        unsafe { CStr::from_ptr(message) }.to_string_lossy()
    };
    // The build's path to llama.cpp's sources says nothing to a user.
    let check = check.rsplit_once("llama.cpp/").map_or(&*check, |(_, within)| within);
    let _ = std::io::stdout().flush();
    let _ = writeln!(
        std::io::stderr(),
        "mcscore: error: llama.cpp stopped the process on one of its internal checks: {}\n  \
         (the model file or a setting breaks an assumption mcscore does not check yet; outputs being written were removed)",
        check.trim()
    );
    mcscore_format::remove_partial_files();
    // SAFETY: _exit ends the process at once; nothing after it runs, and the
    // stderr line above is unbuffered.
    unsafe { libc::_exit(ABORT_EXIT) }
}

/// Routes ggml's aborts through [`on_abort`]; called once, with the backend.
pub(crate) fn install() {
    // SAFETY: the hook is a plain function that lives for the process.
    unsafe {
        llama_cpp_sys_2::ggml_set_abort_callback(Some(on_abort));
    }
}
