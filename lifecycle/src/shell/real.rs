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
//! A descendant that leaves its command's group (`setsid`, a `set -m`
//! child), or lives on in it after the command exited (`cmd &` inside a
//! job), is found by its process tag ([`super::tag`]): every command
//! carries one in its environment, and a drain of its owner, a `kill` of
//! its job, the shell's shutdown or drop, and the orphan reaper each
//! sweep theirs.
//!
//! A job is settled when its watcher task is done: output read to the end,
//! exit reaped, job-done signal delivered. [`ShellExecutor::drain`] awaits
//! that (at most [`DRAIN_SETTLE_MS`] for all of the owner's jobs) before it
//! forgets the records.
//!
//! # Output cap (A10)
//! A job keeps at most [`OUTPUT_CAP_BYTES`] (1 MiB) of output: stdout and
//! stderr are read concurrently, chunk by chunk, into one bounded tail, in
//! the order the chunks arrive. When more arrived, the earliest bytes are
//! dropped and the output starts with one line saying so:
//! `[agent-lifecycle: 31457280 bytes of earlier output dropped; the last 1048576 are kept]`.
//! The bytes are decoded once, at the end, with `String::from_utf8_lossy`:
//! invalid UTF-8 becomes U+FFFD instead of losing the output (a character
//! cut by the cap shows as U+FFFD too). So a command that prints 30 MB
//! costs about the cap in memory, foreground or background, not 30 MB.
//! The finished jobs of one owner keep at most [`FINISHED_OUTPUT_CAP_BYTES`]
//! of output in all; the oldest lose theirs first ([`DISCARDED`]).
//!
//! A running background job's [`JobStatus::output`] is its tail so far
//! (decoded on each read); a finished one's is the final tail.
//!
//! # Job numbers
//! Jobs are `job-1`, `job-2`, ... from a counter of this executor;
//! [`RealShell::continue_after`] moves it forward (never back, and never
//! past [`LAST_CONTINUED`]), so a server started on an old sessions
//! directory does not reuse an id the old logs' job records name.

use super::{DoneListener, ExecResult, JobStatus, ShellExecSpec, ShellExecutor};
use crate::rt::BoxFuture;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

/// The most output bytes one job keeps (stdout and stderr together): the
/// last ones, after a notice of how many earlier ones were dropped.
pub const OUTPUT_CAP_BYTES: usize = 1 << 20;

/// The most output the finished jobs of one owner (a session) keep in
/// all (A10): past it, the oldest finished jobs' output is replaced by
/// [`DISCARDED`]. Their status and exit code stay readable.
pub const FINISHED_OUTPUT_CAP_BYTES: usize = 4 << 20;

/// The most finished jobs of one owner whose records are kept (A10):
/// past it, the oldest finished ones are forgotten (`unknown bash task`
/// from then on), so a session that runs jobs forever keeps a bounded
/// number of records. Running jobs are never forgotten; a drain still
/// sweeps what forgotten jobs left running (their process tags).
pub const FINISHED_JOBS_CAP: usize = 256;

/// What a finished job's output reads as once the owner's cap took it.
pub const DISCARDED: &str =
    "[output discarded: this session's finished jobs are over their output cap]\n";

/// Keep the finished jobs of `owner` within [`FINISHED_JOBS_CAP`] records
/// and [`FINISHED_OUTPUT_CAP_BYTES`] of output, forgetting and then
/// discarding the oldest first (job numbers rise with age).
fn trim_finished(st: &mut State, owner: Option<&str>) {
    let finished: Vec<u64> = st
        .jobs
        .iter()
        .filter(|(_, j)| !j.status.running && j.owner.as_deref() == owner)
        .map(|(id, _)| *id)
        .collect();
    let over = finished.len().saturating_sub(FINISHED_JOBS_CAP);
    for id in &finished[..over] {
        st.jobs.remove(id);
    }
    let mut finished: Vec<&mut Job> = st
        .jobs
        .values_mut()
        .filter(|j| !j.status.running && j.owner.as_deref() == owner)
        .collect();
    let mut total: usize = finished.iter().map(|j| j.status.output.len()).sum();
    for job in finished.iter_mut() {
        if total <= FINISHED_OUTPUT_CAP_BYTES {
            break;
        }
        if job.status.output.len() > DISCARDED.len() {
            total -= job.status.output.len() - DISCARDED.len();
            job.status.output = DISCARDED.to_string();
        }
    }
}

/// How much one read of a job's pipe takes at most.
const READ_CHUNK_BYTES: usize = 32 * 1024;

/// The last bytes of a job's output, at most `cap`, and how many earlier
/// ones were dropped. Plain data: the readers push, a status read renders.
struct OutputTail {
    kept: VecDeque<u8>,
    cap: usize,
    dropped: u64,
}

impl OutputTail {
    fn new(cap: usize) -> Self {
        OutputTail {
            kept: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    /// Append `bytes`, dropping the earliest ones beyond the cap (before
    /// growing, so the buffer never holds more than the cap).
    fn push(&mut self, bytes: &[u8]) {
        let bytes = match bytes.len().checked_sub(self.cap) {
            Some(skip) => {
                self.dropped += (self.kept.len() + skip) as u64;
                self.kept.clear();
                &bytes[skip..]
            }
            None => bytes,
        };
        let excess = (self.kept.len() + bytes.len()).saturating_sub(self.cap);
        self.kept.drain(..excess);
        self.dropped += excess as u64;
        self.kept.extend(bytes);
    }

    /// The output as text: the drop notice (if any) and the kept bytes,
    /// decoded lossily.
    fn render(&self) -> String {
        let mut bytes = match self.dropped {
            0 => Vec::with_capacity(self.kept.len()),
            dropped => format!(
                "[agent-lifecycle: {dropped} bytes of earlier output dropped; the last {} are kept]\n",
                self.kept.len()
            )
            .into_bytes(),
        };
        let (front, back) = self.kept.as_slices();
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        // Valid UTF-8 (the usual case) is taken without a copy.
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

fn lock_tail(tail: &Mutex<OutputTail>) -> std::sync::MutexGuard<'_, OutputTail> {
    tail.lock().unwrap_or_else(|p| p.into_inner())
}

/// Read `reader` to its end (or its first error) into `tail`, chunk by
/// chunk.
async fn pump(reader: Option<impl AsyncRead + Unpin>, tail: &Mutex<OutputTail>) {
    let Some(mut reader) = reader else { return };
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => lock_tail(tail).push(&chunk[..n]),
        }
    }
}

/// Read a child's stdout and stderr concurrently into `tail`, in arrival
/// order, until both end.
async fn read_output(child: &mut Child, tail: &Mutex<OutputTail>) {
    let (out, err) = (child.stdout.take(), child.stderr.take());
    futures::future::join(pump(out, tail), pump(err, tail)).await;
}

struct Job {
    owner: Option<String>,
    status: JobStatus,
    child: Option<Child>,
    /// The job's process group (its shell's pid).
    pgid: Option<u32>,
    /// The watcher task: done when the job is settled.
    watcher: Option<tokio::task::JoinHandle<()>>,
    /// The output read so far, while the job runs; `None` once the final
    /// output is in `status`.
    tail: Option<Arc<Mutex<OutputTail>>>,
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
    /// Owners that started a command since their last drain: only their
    /// drain sweeps for tags.
    swept_at_drain: std::collections::BTreeSet<String>,
}

/// The tokio shell executor. Must be used inside a tokio runtime.
#[derive(Default)]
pub struct RealShell {
    state: Arc<Mutex<State>>,
    tags: super::tag::Tags,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn command(line: &str, cwd: Option<&Path>, tag: &str) -> Command {
    let mut c = Command::new("bash");
    if let Some(dir) = cwd {
        c.current_dir(dir);
    }
    c.arg("-c")
        .arg(line)
        .env(super::tag::TAG_VAR, tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: runs between fork and exec; `signal` is async-signal-safe.
    // The server ignores SIGXFSZ (a file-size limit is a storage error to
    // it, D10); its commands get the default action back.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
    super::reaper::list_from_child(&mut c);
    c
}

/// Start `spec`'s command (in its cwd, if it has one), tagged `tag`.
fn spawn(spec: &ShellExecSpec, tag: &str) -> Result<Child, String> {
    command(&spec.command, spec.cwd.as_deref(), tag)
        .spawn()
        .map_err(|e| match &spec.cwd {
            Some(dir) => format!("cannot run bash in {}: {e}", dir.display()),
            None => format!("cannot run bash: {e}"),
        })
}

/// The furthest [`RealShell::continue_after`] moves the job counter.
pub const LAST_CONTINUED: u64 = u64::MAX - u32::MAX as u64;

impl RealShell {
    /// A new executor.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number jobs after `n` from now on: the next job is `job-{n+1}` or
    /// later. The counter never moves back (a smaller `n` does nothing),
    /// and never past [`LAST_CONTINUED`], so whatever a log names, 2^32 - 1
    /// numbers are left (A11: no log can disable background jobs).
    pub fn continue_after(&self, n: u64) {
        let mut st = lock(&self.state);
        st.next_job = st.next_job.max(n.min(LAST_CONTINUED));
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

    /// Kill every running job (its whole process group) and every process
    /// carrying one of this shell's tags, and wait (up to 5 s) until the
    /// jobs are reaped.
    pub async fn shutdown(&self) {
        for job in lock(&self.state).jobs.values() {
            job.kill_group();
        }
        let shell = self.tags.shell_prefix().to_string();
        super::tag::sweep(|t| t.starts_with(&shell));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while !self.running_pids().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    async fn watch(
        state: Arc<Mutex<State>>,
        id: u64,
        mut child: Child,
        tail: Arc<Mutex<OutputTail>>,
    ) {
        let (out, err) = (child.stdout.take(), child.stderr.take());
        // The child is parked in the state so `kill` and `Drop` reach it.
        match lock(&state).jobs.get_mut(&id) {
            Some(job) => job.child = Some(child),
            // Forgotten by a drain that gave up on it: the child is
            // dropped, which kills it.
            None => return,
        }
        futures::future::join(pump(out, &tail), pump(err, &tail)).await;
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
        let output = lock_tail(&tail).render();
        drop(tail);
        let listeners = {
            let mut st = lock(&state);
            if let Some(j) = st.jobs.get_mut(&id) {
                if let (Some(pgid), Some(_)) = (j.pgid, status) {
                    super::reaper::reaped(pgid);
                }
                j.child = None;
                j.tail = None;
                j.status = JobStatus {
                    running: false,
                    exit: Some(exit),
                    output,
                };
                let owner = j.owner.clone();
                trim_finished(&mut st, owner.as_deref());
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
    fn continue_after(&self, n: u64) {
        RealShell::continue_after(self, n);
    }

    fn exec(&self, spec: ShellExecSpec) -> BoxFuture<Result<ExecResult, String>> {
        let (state, tags) = (self.state.clone(), self.tags.clone());
        if let Some(owner) = &spec.owner {
            lock(&state).swept_at_drain.insert(owner.clone());
        }
        Box::pin(async move {
            if !spec.background {
                let mut child = spawn(&spec, &tags.tag(spec.owner.as_deref(), "fg"))?;
                // Dropping this future (a cancelled step, C10) kills the
                // command's whole process group: the leader is not reaped
                // until the wait below completes, so its pid still names
                // the group.
                let pgid = child.id();
                let _group = pgid.map(ForegroundGroup);
                let tail = Mutex::new(OutputTail::new(OUTPUT_CAP_BYTES));
                read_output(&mut child, &tail).await;
                let status = child
                    .wait()
                    .await
                    .map_err(|e| format!("cannot run bash: {e}"))?;
                std::mem::forget(_group);
                if let Some(pgid) = pgid {
                    super::reaper::reaped(pgid);
                }
                let output = lock_tail(&tail).render();
                return Ok(ExecResult::Finished {
                    exit: status.code().unwrap_or(137),
                    output,
                });
            }
            // The number first (a start that fails below uses it up): no
            // process is started that could not be numbered.
            let id = {
                let mut st = lock(&state);
                st.next_job = st
                    .next_job
                    .checked_add(1)
                    .ok_or("no job number left (continued past the largest)")?;
                st.next_job
            };
            let child = spawn(
                &spec,
                &tags.tag(spec.owner.as_deref(), &format!("job-{id}")),
            )?;
            let tail = Arc::new(Mutex::new(OutputTail::new(OUTPUT_CAP_BYTES)));
            {
                let mut st = lock(&state);
                let pgid = child.id();
                // Spawned under the lock: the watcher parks the child only
                // after the record (with its handle) is in place.
                let watcher = tokio::spawn(Self::watch(state.clone(), id, child, tail.clone()));
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
                        tail: Some(tail),
                    },
                );
            }
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
        let (mut status, tail) = {
            let st = lock(&self.state);
            let j = st.jobs.get(&id)?;
            (j.status.clone(), j.tail.clone())
        };
        // A running job: its output so far, rendered outside the state lock.
        if let Some(tail) = tail {
            status.output = lock_tail(&tail).render();
        }
        Some(status)
    }

    fn kill(&self, job: &str) -> bool {
        let Some(id) = super::job_number(job) else {
            return false;
        };
        let (killed, owner) = match lock(&self.state).jobs.get(&id) {
            Some(j) => (j.kill_group(), j.owner.clone()),
            None => return false,
        };
        // What the job started and left its group, or outlived its leader.
        let tag = self.tags.tag(owner.as_deref(), &format!("job-{id}"));
        super::tag::sweep(|t| t == tag);
        killed
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
        let prefix = self.tags.owner_prefix(Some(&owner));
        Box::pin(async move {
            // Kill every live group of the owner and take the watchers.
            let (ids, watchers, ran): (Vec<u64>, Vec<_>, bool) = {
                let mut st = lock(&state);
                let (ids, watchers) = st
                    .jobs
                    .iter_mut()
                    .filter(|(_, j)| j.owner.as_deref() == Some(owner.as_str()))
                    .map(|(id, j)| {
                        j.kill_group();
                        (*id, j.watcher.take())
                    })
                    .unzip();
                (ids, watchers, st.swept_at_drain.remove(&owner))
            };
            // Then every process the owner's commands left behind, in or
            // out of their groups (S7, A10): before the settlement, which
            // an escaped child holding a job's output pipe would delay.
            if ran {
                super::tag::sweep(|t| t.starts_with(&prefix));
            }
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
        let shell = self.tags.shell_prefix().to_string();
        super::tag::sweep(|t| t.starts_with(&shell));
    }
}

#[cfg(test)]
mod tests {
    use super::OutputTail;

    fn notice(dropped: u64, kept: usize) -> String {
        format!(
            "[agent-lifecycle: {dropped} bytes of earlier output dropped; the last {kept} are kept]\n"
        )
    }

    #[test]
    fn a10_tail_under_the_cap_is_kept_whole_without_notice() {
        let mut t = OutputTail::new(8);
        t.push(b"abc");
        t.push(b"defgh");
        assert_eq!(t.render(), "abcdefgh");
    }

    #[test]
    fn a10_tail_over_the_cap_keeps_the_last_bytes_and_counts_the_rest() {
        let mut t = OutputTail::new(4);
        t.push(b"abc");
        t.push(b"def");
        assert_eq!(t.render(), format!("{}cdef", notice(2, 4)));
        t.push(b"0123456789");
        assert_eq!(t.render(), format!("{}6789", notice(12, 4)));
        t.push(b"");
        t.push(b"x");
        assert_eq!(t.render(), format!("{}789x", notice(13, 4)));
        assert!(t.kept.len() <= 4);
    }

    #[test]
    fn a10_tail_decodes_invalid_utf8_lossily() {
        let mut t = OutputTail::new(16);
        t.push(b"ok \xff\xfe end");
        assert_eq!(t.render(), "ok \u{fffd}\u{fffd} end");
    }
}
