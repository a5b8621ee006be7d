//! A simulated shell for the harness: scripted jobs on the backend's time.
//!
//! It also keeps each job's [history](SimShell::history): what the
//! simulated process went through as the shell saw it (exited on its own,
//! killed by `kill`, killed by a drain, forgotten). Oracles read it as the
//! receiving side of `kill` and `drain` (S7), not a flag the lifecycle sets
//! about itself.
//!
//! A timed background job runs on a task of its own, or, in loom's shape
//! ([`SimShell::new`] with `one_driver`), on one driver task that the
//! shell's timed jobs share: loom models five threads over a whole
//! execution, and a task per job would take a scenario that starts
//! several past it. The driver ends the jobs one at a time: it takes the
//! earliest deadline it sees (start order on a tie), sleeps until it and
//! ends that job (a job started meanwhile with an earlier deadline waits
//! for it), and ends itself when the shell is dropped and no timed job is
//! left. On loom, where a sleep is a yield and no time passes, a job so
//! ends at any point after it started, as with a task of its own, except
//! that two timed jobs end in that order; the guide argues why the
//! scenarios keep what they test.
//!
//! A request's working directory ([`ShellExecSpec::cwd`]) is accepted and
//! ignored: a simulated command runs nowhere, its script alone decides
//! what it prints. It keeps no output cap either (scripts print little).

use super::{DoneListener, ExecResult, JobId, JobStatus, ShellExecSpec, ShellExecutor};
use crate::rt::{self, BoxFuture, Monitor, Rt};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How a simulated command behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// How long it runs, in (virtual) milliseconds; [`Script::HELD`]: in
    /// the background, until [`SimShell::exit`], a kill or a drain ends it.
    pub duration_ms: u64,
    /// What it prints.
    pub output: String,
    /// Its exit code.
    pub exit: i32,
}

impl Script {
    /// The duration of a held command: no timer ends it.
    pub const HELD: u64 = u64::MAX;

    /// A command that runs in the background until the test ends it
    /// ([`SimShell::exit`], which prints `output`), or a kill or a drain
    /// does. Run in the foreground it runs until its caller gives up on
    /// it (a cancel kills a foreground command that way, C10).
    pub fn held(output: &str) -> Script {
        Script {
            duration_ms: Script::HELD,
            output: output.to_string(),
            exit: 0,
        }
    }
}

struct Job {
    owner: Option<String>,
    status: JobStatus,
    /// What it prints when it exits on its own.
    output: String,
}

/// One thing that happened to a simulated job, in the shell's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobFate {
    /// The process exited on its own with this code.
    Exited(i32),
    /// `kill` killed it while it ran.
    Killed,
    /// A drain of its owner killed it while it ran (S7).
    KilledByDrain,
    /// A drain forgot its record: it is unknown from now on (S7).
    Forgotten,
}

impl JobFate {
    /// Settled (exited or killed), then forgotten: what a drain leaves of
    /// a job's history (S7).
    pub fn drained(history: &[JobFate]) -> bool {
        matches!(history, [first, JobFate::Forgotten] if *first != JobFate::Forgotten)
    }
}

#[derive(Default)]
struct State {
    jobs: BTreeMap<u64, Job>,
    next_job: u64,
    scripts: BTreeMap<String, Script>,
    listeners: Vec<(u64, DoneListener)>,
    next_listener: u64,
    history: Vec<(u64, JobFate)>,
    /// Every background job started, with its owner token, in order.
    started: Vec<(u64, Option<String>)>,
    /// One driver for the timed jobs: their deadlines and exit codes, by
    /// (deadline, job); `None` where each job has a task of its own.
    timers: Option<BTreeMap<(u64, u64), i32>>,
    /// The driver task has been spawned.
    driving: bool,
    /// The shell was dropped: the driver ends once no timer is left.
    closed: bool,
}

/// The simulated executor. Unknown commands run 10 ms, print their own
/// text and exit 0.
pub struct SimShell<R: Rt> {
    state: Arc<Monitor<R, State>>,
    /// Its timed jobs share one driver task.
    one_driver: bool,
}

impl<R: Rt> Default for SimShell<R> {
    /// A task per timed job.
    fn default() -> Self {
        SimShell::new(false)
    }
}

impl<R: Rt> Drop for SimShell<R> {
    fn drop(&mut self) {
        // Only a driver waits for it (and a task per job takes no step).
        if self.one_driver {
            self.state.update(|s| s.closed = true);
        }
    }
}

impl<R: Rt> SimShell<R> {
    /// A shell whose timed jobs share one driver task (`one_driver`,
    /// loom's shape: [`crate::scenarios::Ctx::few_threads`]) or each run
    /// on a task of their own.
    pub fn new(one_driver: bool) -> Self {
        SimShell {
            state: Arc::new(Monitor::new(State {
                timers: one_driver.then(BTreeMap::new),
                ..State::default()
            })),
            one_driver,
        }
    }

    /// The shared driver: ends the timed jobs one at a time, each after
    /// its remaining time, earliest deadline first; returns when the shell
    /// is dropped and no timer is left.
    async fn drive(state: Arc<Monitor<R, State>>) {
        loop {
            let next = state
                .wait_until("sim shell: a timed job, or the shell dropped", |s| match s
                    .timers
                    .as_ref()
                    .and_then(|t| t.keys().next().copied())
                {
                    Some(key) => Some(Some(key)),
                    None => s.closed.then_some(None),
                })
                .await;
            let Some((deadline, id)) = next else {
                return;
            };
            R::sleep(deadline.saturating_sub(R::now_ms())).await;
            let exit = state.update(|s| s.timers.as_mut().and_then(|t| t.remove(&(deadline, id))));
            if let Some(exit) = exit {
                Self::finish(&state, id, JobFate::Exited(exit));
            }
        }
    }

    /// Wait until none of `jobs` is running (a job-done wait, no polling).
    pub async fn until_finished(&self, jobs: &[&str]) {
        let ids: Vec<u64> = jobs.iter().filter_map(|j| super::job_number(j)).collect();
        self.state
            .wait_until("sim shell: jobs finished", |s| {
                ids.iter()
                    .all(|id| s.jobs.get(id).is_none_or(|j| !j.status.running))
                    .then_some(())
            })
            .await;
    }

    /// Script `command`.
    pub fn script(&self, command: &str, script: Script) {
        self.state
            .update(|s| s.scripts.insert(command.to_string(), script));
    }

    /// Every background job started so far, with the owner token it was
    /// started with, in order: the shell's own account, which a drain does
    /// not erase.
    pub fn started(&self) -> Vec<(JobId, Option<String>)> {
        self.state.read(|s| {
            s.started
                .iter()
                .map(|(id, o)| (job_id(*id), o.clone()))
                .collect()
        })
    }

    /// What happened to `job` so far, in order (empty for a job never
    /// started).
    pub fn history(&self, job: &str) -> Vec<JobFate> {
        let Some(id) = super::job_number(job) else {
            return vec![];
        };
        self.state.read(|s| {
            s.history
                .iter()
                .filter(|(j, _)| *j == id)
                .map(|(_, f)| *f)
                .collect()
        })
    }

    /// The process of `job` exits on its own now, with its scripted output
    /// and `exit` (a test or scenario ends it at a chosen moment instead of
    /// waiting for its script's time). `false` if it was not running.
    pub fn exit(&self, job: &str, exit: i32) -> bool {
        super::job_number(job)
            .is_some_and(|id| Self::finish(&self.state, id, JobFate::Exited(exit)))
    }

    /// End job `id` as `fate` (an exit writes the job's output first), in
    /// one section; then signal job-done. `false` if it was not running.
    fn finish(state: &Monitor<R, State>, id: u64, fate: JobFate) -> bool {
        let listeners = state.update(|s| {
            let job = s.jobs.get_mut(&id)?;
            if !job.status.running {
                return None;
            }
            job.status.running = false;
            job.status.exit = Some(match fate {
                JobFate::Exited(code) => {
                    job.status.output = job.output.clone();
                    code
                }
                _ => 137,
            });
            s.history.push((id, fate));
            Some(
                s.listeners
                    .iter()
                    .map(|(_, l)| l.clone())
                    .collect::<Vec<_>>(),
            )
        });
        let Some(listeners) = listeners else {
            return false;
        };
        let job = format!("job-{id}");
        for l in listeners {
            l(&job);
        }
        true
    }
}

impl<R: Rt> ShellExecutor for SimShell<R> {
    fn exec(&self, spec: ShellExecSpec) -> BoxFuture<Result<ExecResult, String>> {
        let (state, one_driver) = (self.state.clone(), self.one_driver);
        Box::pin(async move {
            let script = state
                .read(|s| s.scripts.get(&spec.command).cloned())
                .unwrap_or(Script {
                    duration_ms: 10,
                    output: spec.command.clone(),
                    exit: 0,
                });
            if !spec.background {
                if script.duration_ms == Script::HELD {
                    return std::future::pending().await;
                }
                R::sleep(script.duration_ms).await;
                return Ok(ExecResult::Finished {
                    exit: script.exit,
                    output: script.output,
                });
            }
            let timed = script.duration_ms != Script::HELD;
            // One section: the job, and with one driver its timer too.
            let (id, start_driver) = state.update(|s| {
                s.next_job += 1;
                let id = s.next_job;
                s.started.push((id, spec.owner.clone()));
                s.jobs.insert(
                    id,
                    Job {
                        owner: spec.owner.clone(),
                        status: JobStatus {
                            running: true,
                            exit: None,
                            output: String::new(),
                        },
                        output: script.output.clone(),
                    },
                );
                let start_driver = match s.timers.as_mut() {
                    Some(timers) if timed => {
                        let deadline = R::now_ms().saturating_add(script.duration_ms);
                        timers.insert((deadline, id), script.exit);
                        !std::mem::replace(&mut s.driving, true)
                    }
                    _ => false,
                };
                (id, start_driver)
            });
            if start_driver {
                drop(rt::spawn::<R, ()>(
                    "sim shell: jobs",
                    Self::drive(state.clone()),
                ));
            } else if timed && !one_driver {
                let st = state.clone();
                drop(rt::spawn::<R, ()>(&format!("job-{id}"), async move {
                    R::sleep(script.duration_ms).await;
                    Self::finish(&st, id, JobFate::Exited(script.exit));
                }));
            }
            Ok(ExecResult::Started {
                job: format!("job-{id}"),
            })
        })
    }

    fn owner_of(&self, job: &str) -> Option<String> {
        let id = super::job_number(job)?;
        self.state
            .read(|s| s.jobs.get(&id).and_then(|j| j.owner.clone()))
    }

    fn job(&self, job: &str) -> Option<JobStatus> {
        let id = super::job_number(job)?;
        self.state
            .read(|s| s.jobs.get(&id).map(|j| j.status.clone()))
    }

    fn kill(&self, job: &str) -> bool {
        super::job_number(job).is_some_and(|id| Self::finish(&self.state, id, JobFate::Killed))
    }

    fn on_done(&self, f: DoneListener) -> u64 {
        self.state.update(|s| {
            s.next_listener += 1;
            s.listeners.push((s.next_listener, f));
            s.next_listener
        })
    }

    fn off_done(&self, key: u64) {
        self.state
            .update(|s| s.listeners.retain(|(k, _)| *k != key));
    }

    fn drain(&self, owner: &str) -> BoxFuture<Vec<JobId>> {
        let state = self.state.clone();
        let owner = owner.to_string();
        Box::pin(async move {
            let ids: Vec<u64> = state.read(|s| {
                s.jobs
                    .iter()
                    .filter(|(_, j)| j.owner.as_deref() == Some(owner.as_str()))
                    .map(|(id, _)| *id)
                    .collect()
            });
            // Kill the live ones; their job-done signals go out now.
            for id in &ids {
                Self::finish(&state, *id, JobFate::KilledByDrain);
            }
            // Settlement: the killed processes are reaped on a later turn,
            // a window in which the finished records are still readable.
            R::yield_now().await;
            state.update(|s| {
                for id in &ids {
                    if s.jobs.remove(id).is_some() {
                        s.history.push((*id, JobFate::Forgotten));
                    }
                }
            });
            ids.into_iter().map(job_id).collect()
        })
    }
}

/// The id of a job, for callers that build one.
pub fn job_id(n: u64) -> JobId {
    format!("job-{n}")
}
