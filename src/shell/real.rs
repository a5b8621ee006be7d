//! The real shell: `bash -c` through `tokio::process`. Output is captured,
//! background jobs run as children the executor keeps, `kill` kills them,
//! and dropping the executor kills every job still running (no process is
//! left behind).
//!
//! Every command runs in its own process group (`process_group(0)`: the
//! group id is the shell's pid), and a job is killed with `killpg`, so the
//! children it started (`sleep 100 & sleep 100`) die with it. The group is
//! signalled only while the job's leader is not yet reaped: its pid (the
//! group id) cannot be reused before that.
//!
//! Every group is also listed with the process's orphan reaper
//! ([`super::reaper`]) while it may be alive, so a server killed with
//! SIGKILL still takes its commands with it (A10).
//!
//! A job is settled when its watcher task is done: output read to the end,
//! exit reaped, job-done signal delivered. [`ShellExecutor::drain`] awaits
//! that (at most [`DRAIN_SETTLE_MS`] for all of the owner's jobs) before it
//! forgets the records.

use super::{DoneListener, ExecResult, JobStatus, ShellExecSpec, ShellExecutor};
use crate::rt::BoxFuture;
use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

struct Job {
    owner: Option<String>,
    status: JobStatus,
    child: Option<Child>,
    /// The job's process group (its shell's pid).
    pgid: Option<u32>,
    /// The watcher task: done when the job is settled.
    watcher: Option<tokio::task::JoinHandle<()>>,
}

/// How long a drain waits for the owner's killed jobs to settle before it
/// forgets their records anyway (a grandchild that left the group with `setsid` can
/// hold the job's output pipe open).
pub const DRAIN_SETTLE_MS: u64 = 5_000;

/// A foreground command's process group, killed if its exec future is
/// dropped before the command ended.
struct ForegroundGroup(u32);

impl Drop for ForegroundGroup {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal; the leader (pid = group id)
        // is not yet reaped while this guard lives.
        unsafe {
            libc::killpg(self.0 as libc::pid_t, libc::SIGKILL);
        }
        super::reaper::reaped(self.0);
    }
}

impl Job {
    /// SIGKILL the job's whole process group, if its leader is not reaped.
    fn kill_group(&self) -> bool {
        match (self.status.running, self.pgid) {
            (true, Some(pgid)) => {
                // SAFETY: killpg only sends a signal; the group id is the
                // unreaped leader's pid, so it names this job's group.
                unsafe { libc::killpg(pgid as libc::pid_t, libc::SIGKILL) == 0 }
            }
            _ => false,
        }
    }
}

#[derive(Default)]
struct State {
    jobs: BTreeMap<u64, Job>,
    next_job: u64,
    listeners: Vec<(u64, DoneListener)>,
    next_listener: u64,
}

/// The tokio shell executor. Must be used inside a tokio runtime.
#[derive(Default)]
pub struct RealShell {
    state: Arc<Mutex<State>>,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn command(line: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(line)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    super::reaper::list_from_child(&mut c);
    c
}

impl RealShell {
    /// A new executor.
    pub fn new() -> Self {
        Self::default()
    }

    /// Process ids of jobs still running (for tests that check nothing is
    /// left behind).
    pub fn running_pids(&self) -> Vec<u32> {
        lock(&self.state)
            .jobs
            .values()
            .filter_map(|j| j.child.as_ref().and_then(|c| c.id()))
            .collect()
    }

    /// Kill every running job (its whole process group) and wait (up to
    /// 5 s) until they are reaped.
    pub async fn shutdown(&self) {
        for job in lock(&self.state).jobs.values() {
            job.kill_group();
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while !self.running_pids().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    async fn watch(state: Arc<Mutex<State>>, id: u64, mut child: Child) {
        let mut out = child.stdout.take();
        let mut err = child.stderr.take();
        let read_out = async {
            let mut s = String::new();
            if let Some(o) = out.as_mut() {
                let _ = o.read_to_string(&mut s).await;
            }
            s
        };
        let read_err = async {
            let mut s = String::new();
            if let Some(e) = err.as_mut() {
                let _ = e.read_to_string(&mut s).await;
            }
            s
        };
        // The child is parked in the state so `kill` and `Drop` reach it.
        match lock(&state).jobs.get_mut(&id) {
            Some(job) => job.child = Some(child),
            // Forgotten by a drain that gave up on it: the child is
            // dropped, which kills it.
            None => return,
        }
        let (o, e) = futures::future::join(read_out, read_err).await;
        let status = loop {
            let polled = {
                let mut st = lock(&state);
                match st.jobs.get_mut(&id).and_then(|j| j.child.as_mut()) {
                    Some(c) => c.try_wait(),
                    None => break None,
                }
            };
            match polled {
                Ok(Some(s)) => break Some(s),
                Ok(None) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
                Err(_) => break None,
            }
        };
        let exit = status.and_then(|s| s.code()).unwrap_or(137);
        let listeners = {
            let mut st = lock(&state);
            if let Some(j) = st.jobs.get_mut(&id) {
                if let (Some(pgid), Some(_)) = (j.pgid, status) {
                    super::reaper::reaped(pgid);
                }
                j.child = None;
                j.status = JobStatus {
                    running: false,
                    exit: Some(exit),
                    output: format!("{o}{e}"),
                };
            }
            st.listeners
                .iter()
                .map(|(_, l)| l.clone())
                .collect::<Vec<_>>()
        };
        for l in listeners {
            l(&format!("job-{id}"));
        }
    }
}

impl ShellExecutor for RealShell {
    fn exec(&self, spec: ShellExecSpec) -> BoxFuture<Result<ExecResult, String>> {
        let state = self.state.clone();
        Box::pin(async move {
            if !spec.background {
                let child = command(&spec.command)
                    .spawn()
                    .map_err(|e| format!("cannot run bash: {e}"))?;
                // Dropping this future (a cancelled step, C10) kills the
                // command's whole process group: the leader is not reaped
                // until the output below completes, so its pid still names
                // the group.
                let pgid = child.id();
                let _group = pgid.map(ForegroundGroup);
                let out = child
                    .wait_with_output()
                    .await
                    .map_err(|e| format!("cannot run bash: {e}"))?;
                std::mem::forget(_group);
                if let Some(pgid) = pgid {
                    super::reaper::reaped(pgid);
                }
                let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
                output.push_str(&String::from_utf8_lossy(&out.stderr));
                return Ok(ExecResult::Finished {
                    exit: out.status.code().unwrap_or(137),
                    output,
                });
            }
            let child = command(&spec.command)
                .spawn()
                .map_err(|e| format!("cannot run bash: {e}"))?;
            let id = {
                let mut st = lock(&state);
                st.next_job += 1;
                let id = st.next_job;
                let pgid = child.id();
                // Spawned under the lock: the watcher parks the child only
                // after the record (with its handle) is in place.
                let watcher = tokio::spawn(Self::watch(state.clone(), id, child));
                st.jobs.insert(
                    id,
                    Job {
                        owner: spec.owner.clone(),
                        status: JobStatus {
                            running: true,
                            exit: None,
                            output: String::new(),
                        },
                        child: None,
                        pgid,
                        watcher: Some(watcher),
                    },
                );
                id
            };
            Ok(ExecResult::Started {
                job: format!("job-{id}"),
            })
        })
    }

    fn owner_of(&self, job: &str) -> Option<String> {
        let id = super::job_number(job)?;
        lock(&self.state)
            .jobs
            .get(&id)
            .and_then(|j| j.owner.clone())
    }

    fn job(&self, job: &str) -> Option<JobStatus> {
        let id = super::job_number(job)?;
        lock(&self.state).jobs.get(&id).map(|j| j.status.clone())
    }

    fn kill(&self, job: &str) -> bool {
        let Some(id) = super::job_number(job) else {
            return false;
        };
        lock(&self.state)
            .jobs
            .get(&id)
            .is_some_and(|j| j.kill_group())
    }

    fn on_done(&self, f: DoneListener) -> u64 {
        let mut st = lock(&self.state);
        st.next_listener += 1;
        let key = st.next_listener;
        st.listeners.push((key, f));
        key
    }

    fn off_done(&self, key: u64) {
        lock(&self.state).listeners.retain(|(k, _)| *k != key);
    }

    fn drain(&self, owner: &str) -> BoxFuture<Vec<super::JobId>> {
        let state = self.state.clone();
        let owner = owner.to_string();
        Box::pin(async move {
            // Kill every live group of the owner and take the watchers.
            let (ids, watchers): (Vec<u64>, Vec<_>) = {
                let mut st = lock(&state);
                st.jobs
                    .iter_mut()
                    .filter(|(_, j)| j.owner.as_deref() == Some(owner.as_str()))
                    .map(|(id, j)| {
                        j.kill_group();
                        (*id, j.watcher.take())
                    })
                    .unzip()
            };
            // Settlement: each watcher read the output, reaped the exit and
            // delivered the job-done signal. One deadline for all of them.
            let limit = std::time::Duration::from_millis(DRAIN_SETTLE_MS);
            let settled = futures::future::join_all(watchers.into_iter().flatten());
            if tokio::time::timeout(limit, settled).await.is_err() {
                tracing::warn!(owner = %owner, "drain: a job did not settle; forgotten anyway");
            }
            let mut st = lock(&state);
            for id in &ids {
                if let Some(mut job) = st.jobs.remove(id) {
                    // An unsettled job: its leader dies with the record.
                    if let Some(c) = job.child.as_mut() {
                        let _ = c.start_kill();
                    }
                }
            }
            ids.into_iter().map(|id| format!("job-{id}")).collect()
        })
    }
}

impl Drop for RealShell {
    fn drop(&mut self) {
        for job in lock(&self.state).jobs.values() {
            job.kill_group();
        }
    }
}
