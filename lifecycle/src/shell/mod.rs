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
//!
//! # A job's states (S7)
//! `running` → `finished` (exited on its own, or killed by `kill` or a
//! drain) → `forgotten` (only a drain forgets). A finished job keeps its
//! record, so its owner can still read it (S4); a forgotten one is unknown
//! to every call (`owner_of`, `job`, `kill`), which tool-bash answers
//! `unknown bash task "<job>"`. [`ShellExecutor::drain`] moves every job of
//! one owner to `forgotten`: the provider calls it in an agent's teardown,
//! after the agent's loop has exited and before its id is freed, so no job
//! of the old agent outlives it or reaches a later agent with its id.
//!
//! # Job numbers
//! Job ids are `job-N`. An executor numbers its jobs from a counter of its
//! own; a server that loads an old session log moves the real shell's
//! counter past the largest job its typed job-start records name
//! ([`real::RealShell::continue_after`]), so an id an old log's tool calls
//! show never names a new job. Log text (command output, prompts) is never
//! read for numbers (A11), and no log can use up the numbers.

pub mod real;
pub mod reaper;
pub mod sim;
pub mod tag;

use crate::rt::BoxFuture;
use std::path::PathBuf;
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
    /// The working directory to run the command in (a session's cwd);
    /// `None` runs it in the executor's own. The simulated shell ignores it.
    pub cwd: Option<PathBuf>,
}

/// A resolved request: the owner is always present, possibly `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellExecSpec {
    /// The command line.
    pub command: String,
    /// Background or foreground.
    pub background: bool,
    /// Owner token, required-but-nullable.
    pub owner: Option<String>,
    /// Working directory; `None` for the executor's own.
    pub cwd: Option<PathBuf>,
}

impl From<ShellExecRequest> for ShellExecSpec {
    fn from(r: ShellExecRequest) -> Self {
        ShellExecSpec {
            command: r.command,
            background: r.background,
            owner: r.owner,
            cwd: r.cwd,
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
    /// Owner drain (S7): kill every live job whose owner token is `owner`
    /// (the real shell kills the whole process group), await their
    /// settlement (each one's job-done signal has been delivered), then
    /// forget their records: `owner_of`, `job` and `kill` see them as
    /// unknown. Returns the jobs forgotten. Other owners' jobs are untouched.
    fn drain(&self, owner: &str) -> BoxFuture<Vec<JobId>>;
    /// Number new jobs after `n` (a loaded log named jobs up to it, A11);
    /// a shell whose ids cannot meet an old log's ignores it.
    fn continue_after(&self, _n: u64) {}
}

/// A drain hook for [`Provider::set_drain`](crate::provider::Provider::set_drain):
/// drains the disposed agent's id on `shell`.
pub fn drain_hook(shell: Arc<dyn ShellExecutor>) -> crate::provider::DrainHook {
    Arc::new(move |owner: &str| {
        let drained = shell.drain(owner);
        Box::pin(async move {
            drained.await;
        })
    })
}
