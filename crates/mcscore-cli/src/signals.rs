//! SIGINT, SIGTERM and SIGHUP, handled alike by every command but `serve`
//! (which drains its requests on its own): Ctrl-C at a terminal, the SIGTERM
//! that Slurm and Kubernetes send before they kill a job, and the SIGHUP of a
//! closed terminal.
//!
//! A command that can stop between two steps and save what it has (`score`,
//! `sweep`, `compare --until-decided`) registers its [`Cancel`]: the first
//! signal cancels it and the command ends as interrupted, exiting 128 + the
//! signal's number. Any other command, or a second signal, ends the process
//! at once, after removing the outputs still being written beside their
//! targets: what was already renamed into place is complete and stays, and no
//! partial file is left behind (a process killed by a signal runs no
//! destructor, so the temporary files would otherwise stay).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use mcscore_eval::Cancel;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The first signal received; 0 before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// The running job that the first signal cancels, where one is registered.
static JOB: Mutex<Option<Cancel>> = Mutex::new(None);

/// Starts the thread that answers the three signals.
pub(crate) fn install() -> anyhow::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| anyhow::anyhow!("installing the signal handlers: {e}"))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let first = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok();
                let job = JOB.lock().unwrap_or_else(PoisonError::into_inner).clone();
                match job {
                    Some(cancel) if first => cancel.cancel(),
                    _ => exit_now(signal),
                }
            }
        })
        .map_err(|e| anyhow::anyhow!("starting the signal thread: {e}"))?;
    Ok(())
}

/// A cancellation the first signal triggers: the job stops before its next
/// micro-batch and saves what it has.
pub(crate) fn cancel_on_signal() -> Cancel {
    let cancel = Cancel::new();
    *JOB.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
    cancel
}

/// The exit status of a command that a signal interrupted: 130 for SIGINT,
/// 143 for SIGTERM, 129 for SIGHUP, as a shell reports a process the signal ended.
pub(crate) fn exit_status() -> u8 {
    let signal = match RECEIVED.load(Ordering::SeqCst) {
        0 => SIGINT,
        signal => signal,
    };
    u8::try_from(128 + signal).unwrap_or(130)
}

/// What interrupted the command, for its last line: "interrupted by SIGTERM".
pub(crate) fn interrupted() -> String {
    format!("interrupted by {}", name(RECEIVED.load(Ordering::SeqCst)))
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "Ctrl-C (SIGINT)",
    }
}

/// Removes the outputs being written and ends the process with the signal's status.
fn exit_now(signal: i32) -> ! {
    let removed = mcscore_format::remove_partial_files();
    let what = match removed {
        0 => String::new(),
        1 => "; the output being written was removed (outputs already complete are kept)".to_owned(),
        n => format!("; the {n} outputs being written were removed (outputs already complete are kept)"),
    };
    eprintln!("mcscore: stopped by {}{what}", name(signal));
    // SAFETY: _exit ends the process without running C++ static destructors
    // or atexit handlers, which could race with llama.cpp's threads still
    // running (a quantisation cannot be stopped from outside); nothing in
    // this process is left to flush: stderr is unbuffered, and the outputs
    // that matter are complete files or removed above.
    #[allow(unsafe_code)]
    unsafe {
        libc::_exit(128 + signal)
    }
}
