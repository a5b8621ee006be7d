//! The command line: `acp` always; with the `harness` feature also
//! `check`, `mutants`, `explore`, `replay`, `shrink`, `model`, `bench`,
//! `list` (see `harness.rs`).
//!
//! Exit codes: 0 pass, 1 a violation (or a fault not killed, or a goal not
//! reached), 2 bad input. A closed stdout ends every command but `acp` (and
//! the hidden `reaper`) quietly, by SIGPIPE: exit status 141 in a shell.

#[cfg(feature = "harness")]
mod harness;
#[cfg(feature = "harness")]
pub mod interrupt;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Agent lifecycle contracts and the harness that checks them.
#[derive(Parser, Debug)]
#[command(name = "lifecycle", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The harness: checkers, scenarios, models, benchmarks.
    #[cfg(feature = "harness")]
    #[command(flatten)]
    Harness(Box<harness::HarnessCommand>),
    /// Serve the Agent Client Protocol on stdio (a scripted agent; see
    /// `lifecycle::acp::server`).
    Acp {
        /// Keep session logs as JSON-lines files here (default: in memory).
        #[arg(long)]
        sessions: Option<std::path::PathBuf>,
    },
    /// The orphan reaper `acp` spawns for itself (internal; see
    /// `lifecycle::shell::reaper`).
    #[command(hide = true)]
    Reaper,
}

/// Restore the default action of SIGPIPE: a write to a closed pipe ends
/// the process at once, silently, as it does for every Unix filter
/// (`lifecycle list | head -1` exits 141 in the shell, with nothing on
/// stderr). Rust's runtime ignores SIGPIPE before `main`, which turns such
/// a write into an `EPIPE` error, and `println!` panics on it (exit 101 and
/// a panic message). The harness only writes reports, so dying quietly is
/// the right end; it never writes to a pipe whose reader may legitimately
/// go away (its loom workers write to it, not the other way round).
///
/// Not for `acp` and `reaper`: the server writes to its client and to its
/// reaper through pipes, and a client or reaper that goes away must be an
/// `EPIPE` it handles (dispose every session, kill every command, exit 0),
/// not a signal that kills it before that. Their children are unaffected
/// either way: `std::process::Command` resets SIGPIPE to the default in
/// every child it starts.
fn die_quietly_on_closed_pipe() {
    // SAFETY: `signal` with `SIG_DFL` only resets a disposition; it is
    // called on the main thread before any other thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Whether `error` is a write to a closed pipe (`EPIPE`), as the ACP
/// server reports it when its client closed its stdout: the server's
/// error carries the `std::io::Error`'s text, which ends in
/// `(os error 32)` on Linux.
fn wrote_to_closed_pipe(error: &impl std::fmt::Display) -> bool {
    error
        .to_string()
        .contains(&format!("(os error {})", libc::EPIPE))
}

/// Parse the arguments and run; the process exit code.
pub fn main() -> ExitCode {
    // A loom worker of this binary (`check::explore::loom`) serves its job
    // and parses no command.
    #[cfg(feature = "harness")]
    if let Some(code) = crate::check::explore::serve_worker() {
        return code;
    }
    // Decided from the raw arguments, before anything can write (clap's
    // `--help` included): every command but `acp` and `reaper` dies
    // quietly on a closed stdout (see [`die_quietly_on_closed_pipe`]).
    let serves = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "acp" || a == "reaper");
    if !serves {
        die_quietly_on_closed_pipe();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    match cli.command {
        #[cfg(feature = "harness")]
        Command::Harness(command) => harness::run(*command),
        Command::Reaper => {
            crate::shell::reaper::run(std::io::stdin().lock());
            ExitCode::SUCCESS
        }
        Command::Acp { sessions } => {
            // A10: the commands' process groups die with this process,
            // even if it is killed with SIGKILL.
            let installed =
                std::env::current_exe().and_then(|exe| crate::shell::reaper::install(&exe));
            if let Err(e) = installed {
                eprintln!("warning: no orphan reaper ({e}); a SIGKILL of this process would leave its commands running");
            }
            // A10: large buffers go back to the kernel when freed.
            crate::acp::large_buffers::return_large_buffers();
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start tokio: {e}");
                    return ExitCode::from(2);
                }
            };
            let served = rt.block_on(crate::acp::server::serve_stdio(sessions));
            // A10: a task or blocking call still hung after the grace
            // period does not hold the exit.
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
            match served {
                Ok(()) => ExitCode::SUCCESS,
                // The client closed our stdout: as much a disconnect as a
                // closed stdin, and the server has disposed every session
                // by then.
                Err(e) if wrote_to_closed_pipe(&e) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
