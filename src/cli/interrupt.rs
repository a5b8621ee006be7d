//! Ctrl-C for the long commands (`check`, `explore`, `mutants`).
//!
//! The first SIGINT only raises a flag, handed down to the checkers as
//! [`STOP`] in their budget: they look at it between executions, end
//! their search there, and the
//! command prints what it has (the partial table and summary), writes the
//! checkpoint it was asked for, and exits 130 as a shell does for a process
//! killed by SIGINT. The handler is installed with `SA_RESETHAND`, so the
//! second SIGINT finds the default action again and kills the process at
//! once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Raised by the first SIGINT.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The stop request handed down to the checkers with their budget: the
/// first Ctrl-C.
pub const STOP: crate::check::Stop = crate::check::Stop::on(&REQUESTED);

/// The exit code of a command stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

extern "C" fn on_sigint(_: libc::c_int) {
    // Async-signal-safe: one atomic store.
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Install the SIGINT handler (once per process is enough; again is
/// harmless). Returns an error if the handler cannot be installed, in
/// which case Ctrl-C keeps its default action.
pub fn install() -> std::io::Result<()> {
    // SAFETY: `sigaction` with a zeroed struct, an empty mask and a handler
    // that only stores to an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether Ctrl-C was pressed since [`install`].
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
