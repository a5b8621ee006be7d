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

/// One job's record: a monitor of its own, so that what happens to one
/// job (it ends, it is read, it is forgotten) is independent of what
/// happens to another in the simulator's reduction.
struct Job {
    owner: Option<String>,
    status: JobStatus,
    /// What it prints when it exits on its own.
    output: String,
    /// What happened to it so far, in order.
    history: Vec<JobFate>,
    /// A drain forgot it: unknown to every call.
    forgotten: bool,
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

/// The shell's objects, each a monitor of its own: what one operation
/// touches is independent of what another touches in the simulator's
/// reduction unless they share an object. A job's end writes its record
/// and reads the listeners; only a caller that names the job by its id
/// (`kill`, `exit`, the one driver, a query) reads the table first, which
/// starting a job changes.
struct Shared<R: Rt> {
    /// The table of jobs, the scripts and the driver's timers.
    table: Monitor<R, Table<R>>,
    /// The job-done listeners.
    listeners: Monitor<R, Listeners>,
}

/// The job-done listeners, by key, and the last key given.
#[derive(Default)]
struct Listeners {
    by_key: Vec<(u64, DoneListener)>,
    last: u64,
}

/// A job's record, shared by the table and the job's own task.
type Record<R> = Arc<Monitor<R, Job>>;

/// The shell's table: what starting a job and scripting a command
/// change. A job's record lives in its own monitor, which this table only
/// points to.
struct Table<R: Rt> {
    /// Every background job started, in order, with its owner token (the
    /// shell's own account, which a drain does not erase) and its record.
    jobs: BTreeMap<u64, (Option<String>, Record<R>)>,
    scripts: BTreeMap<String, Script>,
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
    shared: Arc<Shared<R>>,
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
            self.shared.table.update(|s| s.closed = true);
        }
    }
}

impl<R: Rt> SimShell<R> {
    /// A shell whose timed jobs share one driver task (`one_driver`,
    /// loom's shape: `lifecycle_harness::scenarios::Ctx::few_threads`) or each run
    /// on a task of their own.
    pub fn new(one_driver: bool) -> Self {
        SimShell {
            shared: Arc::new(Shared {
                table: Monitor::new(Table {
                    jobs: BTreeMap::new(),
                    scripts: BTreeMap::new(),
                    timers: one_driver.then(BTreeMap::new),
                    driving: false,
                    closed: false,
                }),
                listeners: Monitor::new(Listeners::default()),
            }),
            one_driver,
        }
    }

    /// The shared driver: ends the timed jobs one at a time, each after
    /// its remaining time, earliest deadline first; returns when the shell
    /// is dropped and no timer is left.
    async fn drive(shared: Arc<Shared<R>>) {
        let table = &shared.table;
        loop {
            let next = table
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
            let exit = table.update(|s| s.timers.as_mut().and_then(|t| t.remove(&(deadline, id))));
            if let Some(exit) = exit {
                Self::finish(&shared, id, JobFate::Exited(exit));
            }
        }
    }

    /// Wait until none of `jobs` is running (a job-done wait on each
    /// job's record in turn, no polling).
    pub async fn until_finished(&self, jobs: &[&str]) {
        for job in jobs {
            if let Some(record) = self.record(job) {
                record
                    .wait_until("sim shell: jobs finished", |j| {
                        (!j.status.running).then_some(())
                    })
                    .await;
            }
        }
    }

    /// The record of `job`, if it was ever started.
    fn record(&self, job: &str) -> Option<Record<R>> {
        let id = super::job_number(job)?;
        Self::record_of(&self.shared, id)
    }

    fn record_of(shared: &Shared<R>, id: u64) -> Option<Record<R>> {
        shared
            .table
            .read(|s| s.jobs.get(&id).map(|(_, r)| r.clone()))
    }

    /// Script `command`.
    pub fn script(&self, command: &str, script: Script) {
        self.shared
            .table
            .update(|s| s.scripts.insert(command.to_string(), script));
    }

    /// Every background job started so far, with the owner token it was
    /// started with, in order: the shell's own account, which a drain does
    /// not erase.
    pub fn started(&self) -> Vec<(JobId, Option<String>)> {
        self.shared.table.read(|s| {
            s.jobs
                .iter()
                .map(|(id, (o, _))| (job_id(*id), o.clone()))
                .collect()
        })
    }

    /// What happened to `job` so far, in order (empty for a job never
    /// started).
    pub fn history(&self, job: &str) -> Vec<JobFate> {
        self.record(job)
            .map(|r| r.read(|j| j.history.clone()))
            .unwrap_or_default()
    }

    /// The process of `job` exits on its own now, with its scripted output
    /// and `exit` (a test or scenario ends it at a chosen moment instead of
    /// waiting for its script's time). `false` if it was not running.
    pub fn exit(&self, job: &str, exit: i32) -> bool {
        super::job_number(job)
            .is_some_and(|id| Self::finish(&self.shared, id, JobFate::Exited(exit)))
    }

    /// End job `id` as `fate` (an exit writes the job's output first);
    /// then signal job-done to the listeners subscribed when it ended.
    /// `false` if it was not running.
    fn finish(shared: &Shared<R>, id: u64, fate: JobFate) -> bool {
        Self::record_of(shared, id).is_some_and(|record| Self::end(shared, id, &record, fate))
    }

    /// [`finish`](Self::finish) for a caller that holds the job's record.
    fn end(shared: &Shared<R>, id: u64, record: &Monitor<R, Job>, fate: JobFate) -> bool {
        // The job's section takes the shell's listeners inside it, as the
        // real shell's reaper records an exit and reads its listeners under
        // one lock: nobody sees the job ended before the listeners it
        // signals are fixed, so the end is atomic with the snapshot (a
        // listener removed before it misses the signal, S6; one removed
        // after it receives it). No section takes them in the other order.
        let listeners = record.update(|job| {
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
            job.history.push(fate);
            Some(
                shared
                    .listeners
                    .read(|l| l.by_key.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>()),
            )
        });
        let Some(listeners) = listeners else {
            return false;
        };
        let job = job_id(id);
        for l in listeners {
            l(&job);
        }
        true
    }

    /// Read job `job`'s record as `f` says, unless it is unknown (never
    /// started, or forgotten by a drain).
    fn known<O>(&self, job: &str, f: impl FnOnce(&Job) -> O) -> Option<O> {
        self.record(job)?.read(|j| (!j.forgotten).then(|| f(j)))
    }
}

impl<R: Rt> ShellExecutor for SimShell<R> {
    fn exec(&self, spec: ShellExecSpec) -> BoxFuture<Result<ExecResult, String>> {
        let (shared, one_driver) = (self.shared.clone(), self.one_driver);
        Box::pin(async move {
            let script = shared
                .table
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
            let record = Arc::new(Monitor::new(Job {
                owner: spec.owner.clone(),
                status: JobStatus {
                    running: true,
                    exit: None,
                    output: String::new(),
                },
                output: script.output.clone(),
                history: Vec::new(),
                forgotten: false,
            }));
            // One section: the job, and with one driver its timer too.
            let (id, start_driver) = shared.table.update(|s| {
                // Jobs are numbered from 1 and never leave the table.
                let id = s.jobs.len() as u64 + 1;
                s.jobs.insert(id, (spec.owner.clone(), record.clone()));
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
                    Self::drive(shared.clone()),
                ));
            } else if timed && !one_driver {
                let st = shared.clone();
                drop(rt::spawn::<R, ()>(&format!("job-{id}"), async move {
                    R::sleep(script.duration_ms).await;
                    Self::end(&st, id, &record, JobFate::Exited(script.exit));
                }));
            }
            Ok(ExecResult::Started { job: job_id(id) })
        })
    }

    fn owner_of(&self, job: &str) -> Option<String> {
        self.known(job, |j| j.owner.clone()).flatten()
    }

    fn job(&self, job: &str) -> Option<JobStatus> {
        self.known(job, |j| j.status.clone())
    }

    fn kill(&self, job: &str) -> bool {
        super::job_number(job).is_some_and(|id| Self::finish(&self.shared, id, JobFate::Killed))
    }

    fn on_done(&self, f: DoneListener) -> u64 {
        self.shared.listeners.update(|l| {
            l.last += 1;
            l.by_key.push((l.last, f));
            l.last
        })
    }

    fn off_done(&self, key: u64) {
        self.shared
            .listeners
            .update(|l| l.by_key.retain(|(k, _)| *k != key));
    }

    fn drain(&self, owner: &str) -> BoxFuture<Vec<JobId>> {
        let shared = self.shared.clone();
        let owner = owner.to_string();
        Box::pin(async move {
            // The owner's jobs, by the shell's account; then those a drain
            // has not forgotten yet, each by its own record.
            let records: Vec<(u64, Record<R>)> = shared.table.read(|s| {
                s.jobs
                    .iter()
                    .filter(|(_, (o, _))| o.as_deref() == Some(owner.as_str()))
                    .map(|(id, (_, r))| (*id, r.clone()))
                    .collect()
            });
            let records: Vec<_> = records
                .into_iter()
                .filter(|(_, r)| r.read(|j| !j.forgotten))
                .collect();
            // Kill the live ones; their job-done signals go out now.
            for (id, record) in &records {
                Self::end(&shared, *id, record, JobFate::KilledByDrain);
            }
            // Settlement: the killed processes are reaped on a later turn,
            // a window in which the finished records are still readable.
            R::yield_now().await;
            records
                .into_iter()
                .map(|(id, record)| {
                    // Another drain of the same owner may have forgotten it
                    // meanwhile: its history says so once.
                    record.update(|j| {
                        if !std::mem::replace(&mut j.forgotten, true) {
                            j.history.push(JobFate::Forgotten);
                        }
                    });
                    job_id(id)
                })
                .collect()
        })
    }
}

/// The id of a job, for callers that build one.
pub fn job_id(n: u64) -> JobId {
    format!("job-{n}")
}
