//! tool-bash, the consumer of the bash seam: tools `bash`, `bash_output`
//! and `bash_kill`, and completion notices.
//!
//! It holds NO ownership state: the owner of a job is the caller's agent id,
//! stamped on the request at start and read back through
//! [`ShellExecutor::owner_of`]. So it can be unloaded and loaded again (a
//! reload) at any moment without changing who may read or kill a job (S5).
//! Only its job-done listener is tied to a load: a completion that lands
//! while it is unloaded loses that one notice (S6, allowed).
//!
//! Fence (S2–S4): an unknown job fails `unknown bash task "<job>"`; an
//! unowned job (`None`) is open to everyone; an owned job (an empty string
//! is a real owner) is open only to the caller whose token equals the owner,
//! finished or not; anyone else fails `task <job> belongs to another
//! session` and nothing is read or killed.
//!
//! Owner drain (S7): when an agent is disposed, the provider has the
//! executor drain its jobs (killed, settled, forgotten); from then on every
//! caller, a later agent with the same id included, gets `unknown bash
//! task`. tool-bash takes no part: it keeps no state to clean up.

use crate::agent::core::{Origin, PromptSpec};
use crate::events::LifecycleEvent;
use crate::registry::Registry;
use crate::rt::context::{fault, observe};
use crate::rt::{Mutex, Rt};
use crate::shell::{ExecResult, JobId, ShellExecRequest, ShellExecutor};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One loaded instance of tool-bash.
pub struct ToolBash<R: Rt> {
    shell: Arc<dyn ShellExecutor>,
    listener: Mutex<R, Option<u64>>,
    /// Fault M2 only: the rejected design, ownership in a plugin-local map.
    local_owners: Mutex<R, BTreeMap<JobId, String>>,
}

impl<R: Rt> ToolBash<R> {
    /// Load tool-bash: subscribe to job-done signals; a notice for a
    /// finished job goes to the live agent whose id equals the job's owner.
    pub fn load(shell: Arc<dyn ShellExecutor>, registry: Arc<Registry<R>>) -> Arc<Self> {
        let s = shell.clone();
        let key = shell.on_done(Arc::new(move |job: &str| {
            deliver(&*s, &registry, job);
        }));
        Arc::new(ToolBash {
            shell,
            listener: Mutex::new(Some(key)),
            local_owners: Mutex::new(BTreeMap::new()),
        })
    }

    /// Unload: unsubscribe. Jobs and their owners stay in the executor.
    pub fn unload(&self) {
        if let Some(key) = self.listener.with(|l| l.take()) {
            self.shell.off_done(key);
        }
    }

    /// Tool `bash`: run `command` in the executor's own working directory;
    /// in the background, stamp the caller's agent id as the job's owner
    /// (S1). Same as [`bash_in`](Self::bash_in) with no cwd.
    pub async fn bash(
        &self,
        caller: Option<&str>,
        command: &str,
        background: bool,
    ) -> Result<ExecResult, String> {
        self.bash_in(caller, command, background, None).await
    }

    /// Tool `bash` in a session's working directory `cwd` (`None`: the
    /// executor's own); in the background, stamp the caller's agent id as
    /// the job's owner (S1).
    pub async fn bash_in(
        &self,
        caller: Option<&str>,
        command: &str,
        background: bool,
        cwd: Option<&Path>,
    ) -> Result<ExecResult, String> {
        let request = ShellExecRequest {
            command: command.to_string(),
            background,
            owner: caller.map(str::to_string),
            cwd: cwd.map(Path::to_path_buf),
        };
        let result = self.shell.exec(request.into()).await?;
        if let (ExecResult::Started { job }, Some(c), true) = (&result, caller, fault!(M2)) {
            self.local_owners
                .with(|m| m.insert(job.clone(), c.to_string()));
        }
        Ok(result)
    }

    fn fence(&self, caller: Option<&str>, job: &str) -> Result<(), String> {
        if self.shell.job(job).is_none() {
            return Err(format!("unknown bash task \"{job}\""));
        }
        let owner = if fault!(M2) {
            // M2: this instance's map; empty again after a reload.
            self.local_owners.with(|m| m.get(job).cloned())
        } else {
            self.shell.owner_of(job)
        };
        match owner {
            None => Ok(()),
            Some(owner) if caller == Some(owner.as_str()) => Ok(()),
            Some(_) => Err(format!("task {job} belongs to another session")),
        }
    }

    /// Tool `bash_output`: the job's output so far.
    pub fn bash_output(&self, caller: Option<&str>, job: &str) -> Result<String, String> {
        self.fence(caller, job)?;
        Ok(self.shell.job(job).map(|s| s.output).unwrap_or_default())
    }

    /// Tool `bash_kill`: kill the job; `Ok(false)` if it had finished.
    pub fn bash_kill(&self, caller: Option<&str>, job: &str) -> Result<bool, String> {
        self.fence(caller, job)?;
        Ok(self.shell.kill(job))
    }
}

/// Deliver the completion notice of `job` into the live agent whose id
/// equals its owner; drop it if there is none (S6).
fn deliver<R: Rt>(shell: &dyn ShellExecutor, registry: &Registry<R>, job: &str) {
    let owner = shell.owner_of(job);
    let exit = shell.job(job).and_then(|s| s.exit).unwrap_or(-1);
    // Every registered agent with the owner's id, in publication order: one
    // being disposed refuses the notice, a newer one with the id takes it.
    let delivered_to = owner.as_deref().and_then(|o| {
        registry
            .list()
            .into_iter()
            .filter(|a| match fault!(M21) {
                true => a.id().starts_with(o),
                false => a.id() == o,
            })
            .find_map(|agent| {
                let notice = PromptSpec {
                    text: format!("[bash] {job} finished with exit {exit}"),
                    steps: 1,
                    step_ms: 1,
                    origin: Origin::JobDone {
                        job: job.to_string(),
                        exit,
                    },
                };
                agent.send(notice).ok().map(|_| o.to_string())
            })
    });
    observe::<R>(|| LifecycleEvent::Notice {
        job: job.to_string(),
        owner,
        delivered_to,
    });
}
