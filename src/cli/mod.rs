//! The command line: `acp` always; with the `harness` feature also
//! `check`, `mutants`, `explore`, `replay`, `shrink`, `model`, `bench`,
//! `list` (see `harness.rs`).
//!
//! Exit codes: 0 pass, 1 a violation (or a fault not killed, or a goal not
//! reached), 2 bad input.

#[cfg(feature = "harness")]
mod harness;

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
    /// `agent_lifecycle::acp::server`).
    Acp {
        /// Keep session logs as JSON-lines files here (default: in memory).
        #[arg(long)]
        sessions: Option<std::path::PathBuf>,
    },
    /// The orphan reaper `acp` spawns for itself (internal; see
    /// `agent_lifecycle::shell::reaper`).
    #[command(hide = true)]
    Reaper,
}

/// Parse the arguments and run; the process exit code.
pub fn main() -> ExitCode {
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
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
