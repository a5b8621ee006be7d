//! The loom checker: every interleaving of the scenario's mutex operations,
//! up to a preemption bound. Loom's exploration order is deterministic, so
//! an execution is replayed by its index under the same bound.
//!
//! Loom runs in a worker process (`lifecycle loom-worker`): when loom finds
//! a deadlock (a task that can never be woken, e.g. a `when_idle` that never
//! resolves) it panics from inside its scheduler, and the unwinding then
//! touches loom objects of a torn-down execution and aborts the process. The
//! worker reports the execution index from its panic hook before that
//! happens, so the parent reports the deadlock as a `progress` violation with
//! a replay line instead of dying with it.
//!
//! Layer 3 (checkers): imports only layers 0 and 1.

pub use super::panics::STOP;

use super::checker::Checker;
use super::goals::GoalTally;
use super::journal_tap::{AgentJournal, JournalTap};
use super::panics::is_deadlock;
use super::replay_line::{LoomPayload, Payload, ReplayLine};
use super::report::{Report, Stop, Stopped};
use super::tally::Tally;
use super::tasks::tasks;
use super::view::view_key;
use crate::bus::panic_message;
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::rt::LoomRt;
use crate::scenarios::{self, Outcome, Scenario};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The execution loom is running now (for the worker's panic hook).
static CURRENT: AtomicU64 = AtomicU64::new(0);

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
    /// Loom itself failed the execution (deadlock, leak, branch limit).
    LoomPanic {
        /// Its index.
        exec: u64,
        /// Loom's message.
        message: String,
        /// The rule it breaks (a deadlock: the rule of the waits still
        /// parked, judged in the worker where they are; else `loom`).
        rule: RuleId,
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
        #[serde(default)]
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
        #[serde(default)]
        goals: Vec<(String, u64)>,
        /// Contract views, each with the first execution reaching it.
        #[serde(default)]
        views: Vec<(String, u64)>,
    },
}

fn emit(line: &WorkerLine) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", serde_json::to_string(line).expect("json"));
    let _ = out.flush();
}

fn builder(preemptions: usize) -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.max_branches = 100_000;
    b
}

/// In the worker: visit every execution in loom's order; `visit` returns
/// `false` to stop. Returns whether the space was exhausted.
fn each_execution(
    scenario: &Scenario,
    faults: Faults,
    preemptions: usize,
    max: Option<usize>,
    visit: impl FnMut(u64, Outcome) -> bool + Send + 'static,
) -> bool {
    let visit = Arc::new(Mutex::new(visit));
    CURRENT.store(0, Ordering::SeqCst);
    let mut b = builder(preemptions);
    // The scenario's own cap and the budget's, whichever is lower.
    let cap = match (scenario.bounds.loom_max, max) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    // loom counts its iterations from 1 and stops before iteration `max`.
    b.max_permutations = cap.map(|c| c + 1);
    if cap.is_some() {
        // loom checks `max_permutations` only every `checkpoint_interval`
        // executions (20,000 by default): check it after every one.
        b.checkpoint_interval = 1;
    }
    let scenario = scenario.clone();
    let result = catch_unwind(AssertUnwindSafe(|| {
        b.check(move || {
            let index = CURRENT.load(Ordering::SeqCst);
            // Boxed: loom's main thread has a fixed 32 KiB stack, and
            // `block_on` would pin the whole scenario future on it (too big
            // in debug builds).
            let outcome = loom::future::block_on(Box::pin(scenarios::run_ctx::<LoomRt>(
                &scenario,
                // loom explores every interleaving of every thread and
                // runs in its own context: no bystanders, few threads.
                scenarios::Ctx::loom(faults),
            )));
            CURRENT.fetch_add(1, Ordering::SeqCst);
            let go_on = (visit.lock().unwrap_or_else(|p| p.into_inner()))(index, outcome);
            if !go_on {
                std::panic::panic_any(STOP);
            }
        })
    }));
    match result {
        // Stopped at the scenario's execution cap: not exhausted.
        Ok(()) => cap.is_none_or(|c| CURRENT.load(Ordering::SeqCst) < c as u64),
        Err(payload) if panic_message(payload.as_ref()) == STOP => false,
        Err(payload) => {
            // A loom failure that unwound cleanly.
            let message = panic_message(payload.as_ref());
            emit(&WorkerLine::LoomPanic {
                exec: CURRENT.load(Ordering::SeqCst),
                rule: panic_rule(&message),
                message,
            });
            false
        }
    }
}

fn install_worker_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = panic_message(info.payload());
        let in_loom = info.location().is_some_and(|l| l.file().contains("/loom-"));
        if message != STOP && (message.contains("deadlock") || in_loom) {
            let mut first = message.lines().next().unwrap_or("").to_string();
            if is_deadlock(&message) {
                first.push_str(&format!(
                    " (waits parked: {})",
                    crate::rt::labels(&crate::rt::parked_waits())
                ));
            }
            emit(&WorkerLine::LoomPanic {
                exec: CURRENT.load(Ordering::SeqCst),
                rule: panic_rule(&message),
                message: first,
            });
        }
    }));
}

/// The rule a panic of loom's own breaks, in the worker: a deadlock breaks
/// the rule of the waits still parked, anything else is `loom`'s.
fn panic_rule(message: &str) -> RuleId {
    if is_deadlock(message) {
        scenarios::deadlock_rule(crate::rt::parked_waits())
    } else {
        RuleId::Loom
    }
}

/// Worker entry: explore (or replay execution `replay_exec`) and print
/// [`WorkerLine`]s on stdout.
pub fn worker_main(
    scenario: &Scenario,
    faults: Faults,
    preemptions: usize,
    max: Option<usize>,
    stop_at_first: bool,
    replay_exec: Option<u64>,
) {
    install_worker_hook();
    if let Some(n) = std::env::var(crate::scenarios::WIDTH_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        crate::scenarios::set_width(n);
    }
    if let Some(target) = replay_exec {
        // loom runs every thread of an execution on this one, so the tap
        // sees every agent's journal; it is cleared after each execution
        // before the replayed one.
        let tap = JournalTap::new();
        let dispatch = tap.dispatch();
        tracing::dispatcher::with_default(&dispatch, || {
            each_execution(scenario, faults, preemptions, None, move |i, outcome| {
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
        });
        return;
    }
    let stats = Arc::new(Mutex::new((
        0u64,
        0u64,
        std::collections::BTreeMap::<String, u64>::new(),
        GoalTally::new(scenario, Checker::Loom),
        std::collections::BTreeMap::<String, u64>::new(),
    )));
    let s = stats.clone();
    let viewed = scenario.clone();
    let exhausted = each_execution(scenario, faults, preemptions, max, move |i, outcome| {
        let mut st = s.lock().unwrap_or_else(|p| p.into_inner());
        st.0 += 1;
        st.1 += outcome.invariants as u64;
        *st.2.entry(outcome.label.clone()).or_default() += 1;
        st.3.add(&outcome);
        let view = view_key(&viewed, &outcome);
        st.4.entry(view).or_insert(i);
        if outcome.violations.is_empty() {
            return true;
        }
        emit(&WorkerLine::Fail {
            exec: i,
            violations: outcome.violations.clone(),
        });
        !stop_at_first
    });
    let st = stats.lock().unwrap_or_else(|p| p.into_inner());
    emit(&WorkerLine::Done {
        executions: st.0,
        invariants: st.1,
        exhausted,
        outcomes: st.2.clone().into_iter().collect(),
        goals: st
            .3
            .hits()
            .into_iter()
            .map(|g| (g.goal.to_string(), g.hits))
            .collect(),
        views: st.4.clone().into_iter().collect(),
    });
}

/// Run a loom worker and read its lines. With `interruptible`, a Ctrl-C
/// (`stop`) kills the worker at once: `Ok(None)`.
fn run_worker(
    scenario: &Scenario,
    faults: Faults,
    preemptions: usize,
    extra: &[String],
    stop: Stop,
) -> Result<Option<Vec<WorkerLine>>, String> {
    let mut cmd = Command::new(worker());
    cmd.arg("loom-worker")
        .arg(scenario.name)
        .arg("--pb")
        .arg(preemptions.to_string());
    if let Some(f) = faults.iter().next() {
        cmd.arg("--fault").arg(f.to_string());
    }
    cmd.args(extra)
        .env(
            crate::scenarios::WIDTH_ENV,
            crate::scenarios::width().to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
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

/// Explore exhaustively up to `preemptions`, or stop after `max`
/// executions (then the row is stopped at budget, not exhausted). Ctrl-C
/// (`stop`) kills the worker and reports the row interrupted, with no
/// counts.
pub fn explore(
    scenario: &Scenario,
    faults: Faults,
    preemptions: usize,
    max: Option<u64>,
    stop_at_first: bool,
    stop: Stop,
) -> Report {
    let mut tally = Tally::new(scenario, Checker::Loom, faults);
    let cap = scenario.bounds.loom_max.map(|c| c as u64);
    tally.bound(match (max, cap) {
        (Some(m), None) => format!("preemptions <= {preemptions}, at most {m} executions"),
        (Some(m), Some(c)) if m <= c => {
            format!("preemptions <= {preemptions}, at most {m} executions")
        }
        (_, Some(c)) => format!("preemptions <= {preemptions}, capped at {c} executions"),
        (None, None) => format!("preemptions <= {preemptions}"),
    });
    let mut extra = Vec::new();
    if stop_at_first {
        extra.push("--stop-at-first".to_string());
    }
    if let Some(max) = max {
        extra.extend(["--max".to_string(), max.to_string()]);
    }
    let replay = |exec: u64| {
        let payload = Payload::Loom(LoomPayload {
            exec,
            pb: preemptions,
        });
        ReplayLine::new(scenario, Checker::Loom, faults, payload).to_string()
    };
    let lines = match run_worker(scenario, faults, preemptions, &extra, stop) {
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
            WorkerLine::Fail {
                exec,
                violations: vs,
            } => {
                let outcome = Outcome {
                    violations: vs,
                    label: "fail".into(),
                    fact: None,
                    invariants: 0,
                    journal: Vec::new(),
                    world: Vec::new(),
                };
                tally.record_failure(&outcome, replay(exec));
            }
            // loom's own limit, not the scenario's fault: an execution
            // started more threads than loom models (the simulator's count
            // over a few seeds said it would fit): the scenario is skipped.
            WorkerLine::LoomPanic { exec, message, .. } if beyond_loom_threads(&message) => {
                tally.skip(format!(
                    "execution {exec} needs more threads than loom models ({})",
                    loom::MAX_THREADS
                ));
                return tally.finish();
            }
            WorkerLine::LoomPanic {
                exec,
                message,
                rule,
            } => {
                let outcome = Outcome {
                    violations: vec![Violation::new(rule, format!("loom: {message}"))],
                    label: "loom-panic".into(),
                    fact: None,
                    invariants: 0,
                    journal: Vec::new(),
                    world: Vec::new(),
                };
                tally.record_failure(&outcome, replay(exec));
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

/// Whether a loom panic is loom's thread limit (`loom::MAX_THREADS`),
/// which its thread table asserts as it spawns.
fn beyond_loom_threads(message: &str) -> bool {
    message.contains("self.threads.len() < self.max()")
}

/// Replay execution `index` under bound `preemptions` (in a worker): its
/// outcome, the outcome agent's journal rendered, and every agent's journal.
pub fn replay(
    scenario: &Scenario,
    faults: Faults,
    index: u64,
    preemptions: usize,
) -> Result<(Outcome, Vec<String>, Vec<AgentJournal>), String> {
    let extra = vec!["--replay-exec".to_string(), index.to_string()];
    let lines = run_worker(scenario, faults, preemptions, &extra, Stop::NEVER)?.unwrap_or_default();
    for line in lines {
        match line {
            WorkerLine::Replayed {
                label,
                violations: vs,
                journal,
                journals,
            } => {
                let outcome = Outcome {
                    violations: vs,
                    label,
                    fact: None,
                    invariants: 0,
                    journal: Vec::new(),
                    world: Vec::new(),
                };
                return Ok((outcome, journal, journals));
            }
            WorkerLine::LoomPanic {
                exec,
                message,
                rule,
            } if exec == index => {
                let outcome = Outcome {
                    violations: vec![Violation::new(rule, format!("loom: {message}"))],
                    label: "loom-panic".into(),
                    fact: None,
                    invariants: 0,
                    journal: Vec::new(),
                    world: Vec::new(),
                };
                return Ok((outcome, Vec::new(), Vec::new()));
            }
            WorkerLine::LoomPanic { exec, message, .. } => {
                return Err(format!(
                    "loom failed at execution {exec} before reaching {index}: {message}"
                ))
            }
            _ => {}
        }
    }
    Err(format!(
        "execution {index} does not exist under pb={preemptions} (recorded by another build?)"
    ))
}

/// loom's preemption bound for `scenario`: the budget's bound for two
/// tasks, one less for each task beyond two, at most the scenario's
/// `loom_cap`, at least 1. Loom's space grows
/// steeply with threads: `provider-unload` (4 tasks) does not finish in two
/// minutes at bound 2.
pub fn loom_bound(scenario: &Scenario, base: usize) -> usize {
    let threads = tasks(scenario).loom;
    base.saturating_sub(threads.saturating_sub(2))
        .min(scenario.bounds.loom_cap)
        .max(1)
}
