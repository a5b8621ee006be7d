//! The bash seam: [`ShellExecutor`] (the service definition) and its
//! simulated implementation; the real one runs `bash -c` on tokio
//! ([`real::RealShell`]).
//!
//! Ownership lives on the job, in the executor: a request carries
//! `owner: Option<String>`, the resolved [`ShellExecSpec`] always carries it
//! (a forgotten owner is a visible `None`, never an absent field), and
//! [`ShellExecutor::owner_of`] is the ONE read path (a job's public status
//! has no owner field). The executor stores the token and never interprets
//! it; the access policy is the consumer's (tool-bash).

pub mod real;
pub mod sim;

use crate::rt::BoxFuture;
use std::sync::Arc;

/// A job id (`job-1`, `job-2`, ...).
pub type JobId = String;

/// The number in a job id; `None` if `job` is not one.
pub fn job_number(job: &str) -> Option<u64> {
    job.strip_prefix("job-")?.parse().ok()
}

/// What a caller asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellExecRequest {
    /// The command line (run with `bash -c`).
    pub command: String,
    /// Run in the background and return a job id.
    pub background: bool,
    /// The owner token to stamp on a background job.
    pub owner: Option<String>,
}

/// A resolved request: the owner is always present, possibly `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellExecSpec {
    /// The command line.
    pub command: String,
    /// Background or foreground.
    pub background: bool,
    /// Owner token, required-but-nullable.
    pub owner: Option<String>,
}

impl From<ShellExecRequest> for ShellExecSpec {
    fn from(r: ShellExecRequest) -> Self {
        ShellExecSpec {
            command: r.command,
            background: r.background,
            owner: r.owner,
        }
    }
}

/// What `exec` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecResult {
    /// A foreground command finished.
    Finished {
        /// Exit code.
        exit: i32,
        /// stdout and stderr.
        output: String,
    },
    /// A background job started.
    Started {
        /// Its id.
        job: JobId,
    },
}

/// A job's public status (deliberately without its owner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStatus {
    /// Still running.
    pub running: bool,
    /// Exit code once finished (`137` when killed).
    pub exit: Option<i32>,
    /// Output so far.
    pub output: String,
}

/// Told when a background job finishes.
pub type DoneListener = Arc<dyn Fn(&str) + Send + Sync>;

/// The bash capability.
pub trait ShellExecutor: Send + Sync + 'static {
    /// Run a command, foreground or background.
    fn exec(&self, spec: ShellExecSpec) -> BoxFuture<Result<ExecResult, String>>;
    /// The owner token of `job`: the one read path of ownership. `None` for
    /// an unowned job (and for an unknown one: check [`job`](Self::job)).
    fn owner_of(&self, job: &str) -> Option<String>;
    /// A job's status, `None` if there is no such job.
    fn job(&self, job: &str) -> Option<JobStatus>;
    /// Kill a running job; `false` if it is unknown or already finished.
    fn kill(&self, job: &str) -> bool;
    /// Subscribe to job-done signals; returns a key for [`off_done`](Self::off_done).
    fn on_done(&self, f: DoneListener) -> u64;
    /// Unsubscribe.
    fn off_done(&self, key: u64);
}
