//! The loom checker's worker process: both ends of it. The parent starts
//! the `lifecycle` binary with a [`Job`] in [`JOB_ENV`]; the binary's
//! first act is [`serve_worker`], which runs the job with loom's one
//! driver ([`Model`]) and prints [`WorkerLine`]s, one JSON object per
//! line, which the parent reads into a row or a replay. Why a process:
//! see `explore::loom`.

use super::loom_model::{classify, line_of, panicked, Model, OnPanic, Panicked, LOOM_MAX_THREADS};
use crate::check::checker::Checker;
use crate::check::goals::GoalTally;
use crate::check::journal_tap::{AgentJournal, JournalTap};
use crate::check::replay_line::{LoomPayload, Payload, ReplayLine};
use crate::check::report::{Report, Stop, Stopped};
use crate::check::tally::Tally;
use crate::check::view::view_key;
use crate::faults::{Fault, Faults};
use crate::oracle::Violation;
use crate::scenarios::{self, Outcome, Scenario};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The variable that carries a worker's [`Job`], as JSON.
pub const JOB_ENV: &str = "LIFECYCLE_LOOM_JOB";

/// What a worker is asked to do.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Job {
    /// The scenario: a named one or a generated workload (`gen-…`).
    pub scenario: String,
    /// The faults switched on (`M1`…).
    pub faults: Vec<String>,
    /// The preemption bound.
    pub pb: usize,
    /// The most executions to run.
    pub cap: Option<u64>,
    /// Stop at the first failing execution.
    pub stop_at_first: bool,
    /// Replay this execution instead of exploring.
    pub replay: Option<u64>,
    /// The scenarios' width (`scenarios::width`) in the parent.
    pub width: usize,
}

/// One line of the worker's output.
#[derive(Serialize, Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WorkerLine {
    /// A failing execution.
    Fail {
        /// Its index.
        exec: u64,
        /// What it broke.
        violations: Vec<Violation>,
    },
    /// A panic out of loom's model (`explore::loom_model::classify`).
    Panicked {
        /// The execution's index.
        exec: u64,
        /// What it broke; `None` for loom's thread limit.
        violation: Option<Violation>,
    },
    /// A replayed execution.
    Replayed {
        /// Outcome label.
        label: String,
        /// What it broke.
        violations: Vec<Violation>,
        /// The journal, rendered.
        journal: Vec<String>,
        /// Every agent's journal in the replayed execution, from its
        /// trace events.
        journals: Vec<AgentJournal>,
    },
    /// The end of an exploration.
    Done {
        /// Executions run.
        executions: u64,
        /// Invariants evaluated.
        invariants: u64,
        /// Whether loom exhausted the space.
        exhausted: bool,
        /// Outcome label counts.
        outcomes: Vec<(String, u64)>,
        /// Reachability goal hits.
        goals: Vec<(String, u64)>,
        /// Contract views, each with the first execution reaching it.
        views: Vec<(String, u64)>,
    },
}

fn emit(line: &WorkerLine) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", serde_json::to_string(line).expect("json"));
    let _ = out.flush();
}

/// The line for a panic out of execution `exec`.
fn panic_line(exec: u64, message: &str) -> WorkerLine {
    let violation = match classify(message) {
        Panicked::ThreadLimit => None,
        Panicked::Broke(v) => Some(v),
    };
    WorkerLine::Panicked { exec, violation }
}

/// The worker's entry: `None` unless this process was started as a loom
/// worker ([`JOB_ENV`] set); else it runs the job and exits with the code
/// returned (2 for a job it cannot read).
pub fn serve_worker() -> Option<ExitCode> {
    let job = std::env::var_os(JOB_ENV)?;
    // Not handed on to anything this process starts. (At the start of
    // `main`, before any thread.)
    std::env::remove_var(JOB_ENV);
    let served = job
        .to_str()
        .ok_or_else(|| "not UTF-8".to_string())
        .and_then(|j| serde_json::from_str::<Job>(j).map_err(|e| e.to_string()))
        .and_then(|job| job.serve());
    Some(match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: loom worker: {e}");
            ExitCode::from(2)
        }
    })
}

/// What a worker counts over its executions.
struct Counts {
    executions: u64,
    invariants: u64,
    outcomes: BTreeMap<String, u64>,
    goals: GoalTally,
    views: BTreeMap<String, u64>,
}

impl Job {
    /// Run the job in this process, printing its lines.
    fn serve(&self) -> Result<(), String> {
        let scenario = Scenario::parse(&self.scenario)
            .or_else(|| crate::generate::name::scenario_named(&self.scenario))
            .ok_or_else(|| format!("unknown scenario {:?}", self.scenario))?;
        let mut faults = Faults::none();
        for f in &self.faults {
            faults = faults.with(Fault::parse(f).ok_or_else(|| format!("unknown fault {f:?}"))?);
        }
        scenarios::set_width(self.width);
        let model = Model {
            scenario,
            faults,
            pb: self.pb,
            cap: self.cap,
        };
        let report: OnPanic = Box::new(|exec, message| emit(&panic_line(exec, message)));
        let end = match self.replay {
            Some(target) => {
                // loom runs every thread of an execution on this one, so
                // the tap sees every agent's journal; it is cleared after
                // each execution before the replayed one.
                let tap = JournalTap::new();
                let dispatch = tap.dispatch();
                tracing::dispatcher::with_default(&dispatch, || {
                    model.run(report, move |i, outcome| {
                        if i < target {
                            tap.clear();
                            return true;
                        }
                        emit(&WorkerLine::Replayed {
                            label: outcome.label.clone(),
                            violations: outcome.violations.clone(),
                            journal: outcome.journal.iter().map(|r| r.to_string()).collect(),
                            journals: tap.journals(),
                        });
                        false
                    })
                })
            }
            None => {
                let counts = Arc::new(Mutex::new(Counts {
                    executions: 0,
                    invariants: 0,
                    outcomes: BTreeMap::new(),
                    goals: GoalTally::new(scenario, Checker::Loom),
                    views: BTreeMap::new(),
                }));
                let (c, stop_at_first) = (counts.clone(), self.stop_at_first);
                let end = model.run(report, move |i, outcome| {
                    let mut c = c.lock().unwrap_or_else(|p| p.into_inner());
                    c.executions += 1;
                    c.invariants += outcome.invariants as u64;
                    *c.outcomes.entry(outcome.label.clone()).or_default() += 1;
                    c.goals.add(&outcome);
                    c.views.entry(view_key(scenario, &outcome)).or_insert(i);
                    if outcome.violations.is_empty() {
                        return true;
                    }
                    emit(&WorkerLine::Fail {
                        exec: i,
                        violations: outcome.violations.clone(),
                    });
                    !stop_at_first
                });
                let c = counts.lock().unwrap_or_else(|p| p.into_inner());
                emit(&WorkerLine::Done {
                    executions: c.executions,
                    invariants: c.invariants,
                    exhausted: matches!(end, super::loom_model::End::Ran { exhausted: true }),
                    outcomes: c.outcomes.clone().into_iter().collect(),
                    goals: (c.goals.hits().into_iter())
                        .map(|g| (g.goal.to_string(), g.hits))
                        .collect(),
                    views: c.views.clone().into_iter().collect(),
                });
                end
            }
        };
        // A panic that unwound cleanly, which the hook did not report.
        if let super::loom_model::End::Panicked {
            exec,
            message,
            reported: false,
        } = end
        {
            emit(&panic_line(exec, &message));
        }
        Ok(())
    }
}

static WORKER: OnceLock<PathBuf> = OnceLock::new();

/// Use `path` as the `lifecycle` binary that runs loom workers (tests set it
/// to `env!("CARGO_BIN_EXE_lifecycle")`).
pub fn set_worker(path: PathBuf) {
    let _ = WORKER.set(path);
}

fn worker() -> PathBuf {
    if let Some(p) = WORKER.get() {
        return p.clone();
    }
    let exe = std::env::current_exe().expect("current exe");
    if exe.file_stem().is_some_and(|s| s == "lifecycle") {
        return exe;
    }
    // A test binary in target/<profile>/deps: the bin is one level up.
    let sibling = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("lifecycle"));
    sibling.unwrap_or(exe)
}

/// Run `job` in a worker and read its lines. A Ctrl-C (`stop`) kills the
/// worker at once: `Ok(None)`.
fn run_worker(job: &Job, stop: Stop) -> Result<Option<Vec<WorkerLine>>, String> {
    let mut child = Command::new(worker())
        .env(JOB_ENV, serde_json::to_string(job).expect("json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the loom worker {}: {e}", worker().display()))?;
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out);
        }
        let _ = done_tx.send(());
        out
    });
    let errors = std::thread::spawn(move || {
        let mut err = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut err);
        }
        err
    });
    // Wait for the worker to close its stdout, looking at the Ctrl-C flag
    // ten times a second.
    while let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(Duration::from_millis(100)) {
        if stop.requested() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = reader.join();
            let _ = errors.join();
            return Ok(None);
        }
    }
    let status = child.wait().map_err(|e| format!("loom worker: {e}"))?;
    let stdout = reader.join().unwrap_or_default();
    let stderr = errors.join().unwrap_or_default();
    let lines: Vec<WorkerLine> = String::from_utf8_lossy(&stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if lines.is_empty() {
        if stop.requested() {
            // The terminal's SIGINT reached the worker too.
            return Ok(None);
        }
        return Err(format!(
            "the loom worker printed nothing ({status}): {}",
            String::from_utf8_lossy(&stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    Ok(Some(lines))
}

/// A worker's job on `scenario`.
fn job(scenario: &Scenario, faults: Faults, pb: usize) -> Job {
    Job {
        scenario: scenario.name.to_string(),
        faults: faults.iter().map(|f| f.to_string()).collect(),
        pb,
        cap: None,
        stop_at_first: false,
        replay: None,
        width: scenarios::width(),
    }
}

/// An outcome that broke `violations`, as a worker reports it.
fn failed(violations: Vec<Violation>) -> Outcome {
    Outcome {
        violations,
        label: "fail".into(),
        ..Outcome::default()
    }
}

/// Explore `scenario` in a worker exhaustively up to `pb`, or stop after
/// `max` executions (then the row is stopped at budget, not exhausted);
/// Ctrl-C (`stop`) kills the worker and reports the row interrupted, with
/// no counts. Named `explore::loom::explore_at` outside.
pub fn explore(
    scenario: &Scenario,
    faults: Faults,
    pb: usize,
    max: Option<u64>,
    stop_at_first: bool,
    stop: Stop,
) -> Report {
    let mut tally = Tally::new(scenario, Checker::Loom, faults);
    let cap = scenario.bounds.loom_max.map(|c| c as u64);
    tally.bound(match (max, cap) {
        (Some(m), None) => format!("preemptions <= {pb}, at most {m} executions"),
        (Some(m), Some(c)) if m <= c => format!("preemptions <= {pb}, at most {m} executions"),
        (_, Some(c)) => format!("preemptions <= {pb}, capped at {c} executions"),
        (None, None) => format!("preemptions <= {pb}"),
    });
    let job = Job {
        // The scenario's own cap and the budget's, whichever is lower.
        cap: match (cap, max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        },
        stop_at_first,
        ..job(scenario, faults, pb)
    };
    let template = ReplayLine::new(
        scenario,
        Checker::Loom,
        faults,
        Payload::Loom(LoomPayload { exec: 0, pb }),
    );
    let replay = |exec: u64| line_of(&template, exec, pb);
    let lines = match run_worker(&job, stop) {
        Ok(Some(lines)) => lines,
        Ok(None) => {
            tally.stopped(Stopped::Interrupted);
            return tally.finish();
        }
        Err(e) => {
            tally.error(e);
            return tally.finish();
        }
    };
    let mut done = None;
    for line in lines {
        match line {
            WorkerLine::Fail { exec, violations } => {
                tally.record_failure(&failed(violations), replay(exec));
            }
            // loom's own limit, not the scenario's fault: an execution
            // started more threads than loom models (the simulator's count
            // over a few seeds said it would fit): the scenario is skipped.
            WorkerLine::Panicked {
                exec,
                violation: None,
            } => {
                tally.skip(format!(
                    "execution {exec} needs more threads than loom models ({LOOM_MAX_THREADS})"
                ));
                return tally.finish();
            }
            WorkerLine::Panicked {
                exec,
                violation: Some(v),
            } => {
                tally.record_failure(&panicked(v), replay(exec));
                tally.executions = tally.executions.max(exec + 1);
            }
            WorkerLine::Done {
                executions,
                invariants,
                exhausted,
                outcomes,
                goals,
                views,
            } => {
                let views = views.into_iter().map(|(v, e)| (v, replay(e))).collect();
                tally.merge_goals(&goals, views);
                done = Some((executions, invariants, exhausted, outcomes));
            }
            WorkerLine::Replayed { .. } => {}
        }
    }
    if let Some((executions, invariants, exhausted, outcomes)) = done {
        tally.merge(executions, invariants, outcomes);
        if exhausted {
            tally.exhausted();
        } else if stop_at_first && tally.first_failure.is_some() {
            tally.stopped(Stopped::FirstFailure);
        } else if max.is_some_and(|m| cap.is_none_or(|c| m <= c)) {
            tally.stopped(Stopped::Budget);
        } else if cap.is_some() {
            tally.stopped(Stopped::Cap);
        }
    }
    tally.finish()
}

/// Replay execution `index` under bound `pb` in a worker: its outcome, the
/// outcome agent's journal rendered, and every agent's journal.
pub(super) fn replay(
    scenario: &Scenario,
    faults: Faults,
    index: u64,
    pb: usize,
) -> Result<(Outcome, Vec<String>, Vec<AgentJournal>), String> {
    let job = Job {
        replay: Some(index),
        ..job(scenario, faults, pb)
    };
    for line in run_worker(&job, Stop::NEVER)?.unwrap_or_default() {
        match line {
            WorkerLine::Replayed {
                label,
                violations,
                journal,
                journals,
            } => {
                let outcome = Outcome {
                    label,
                    ..failed(violations)
                };
                return Ok((outcome, journal, journals));
            }
            WorkerLine::Panicked {
                exec,
                violation: Some(v),
            } if exec == index => return Ok((panicked(v), Vec::new(), Vec::new())),
            WorkerLine::Panicked { exec, violation } => {
                let what = violation.map_or_else(
                    || format!("needs more threads than loom models ({LOOM_MAX_THREADS})"),
                    |v| v.message,
                );
                return Err(format!(
                    "loom failed at execution {exec}, replaying {index}: {what}"
                ));
            }
            _ => {}
        }
    }
    Err(format!(
        "execution {index} does not exist under pb={pb} (recorded by another build?)"
    ))
}
