//! [`RaceTest::loom`](super::RaceTest::loom): loom in the test's own
//! process, as `loom::model` runs it.
//!
//! The CLI runs loom in a worker process (`check::loom_check`): the
//! `lifecycle` binary explores many scenarios in one process, and a
//! deadlock aborts it (below). A downstream race test is a test binary of
//! its own, so here loom runs in place, on the test's thread. A panic that
//! unwinds out of an execution (an assertion of the closure, in any of its
//! tasks) is caught around the whole model: loom leaves the threads of that
//! execution unfinished, and the panic is a failure of rule `panic` at that
//! execution's index.
//!
//! A deadlock (every task waits, and none can wake another) is the one
//! failure this cannot catch: loom panics inside its scheduler, and the
//! unwinding drops lifecycle state whose destructors reach loom's torn-down
//! execution, a panic during a panic, which aborts the test process. A
//! panic hook prints the failure first, as a [`Failure`] (the rule of
//! `scenarios::deadlock_rule`, the waits still parked, the replay line),
//! and a replay of that line deadlocks and aborts the same way.
//!
//! Every execution runs on loom's model thread, whose stack is loom's fixed
//! 32 KiB: the execution's future is boxed (as `loom_check` does), and
//! whatever runs per execution besides it (the tally) is small; the replay
//! line's fingerprint, which runs the simulator, is computed before loom
//! starts.

use super::{Broken, Failure, RaceTest};
use crate::bus::panic_message;
use crate::check::loom_check::STOP;
use crate::check::replay::{LoomPayload, Payload};
use crate::check::{Checker, ReplayLine, Report, Stopped, Tally};
use crate::oracle::{RuleId, Violation};
use crate::rt::LoomRt;
use crate::scenarios::{self, Ctx, Outcome, Scenario};
use std::cell::RefCell;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The most threads a loom race test may run (`loom::MAX_THREADS`): the
/// closure's own, plus one per task `rt::spawn` starts, and every agent
/// the rig creates runs its loop as one. A closure that starts more fails
/// with rule `harness`.
pub const LOOM_MAX_THREADS: usize = loom::MAX_THREADS;

/// The panic loom raises when a model starts one thread too many (its
/// `thread::Set::new_thread`; `loom_refuses_more_threads_than_it_models`
/// in `tests/race_api.rs` checks that this loom version still words it so).
const THREAD_LIMIT: &str = "assertion failed: self.threads.len() < self.max()";

/// How a run of loom's model ended.
enum End {
    /// Every execution ran; `exhausted` unless the cap stopped it.
    Ran {
        /// Whether the bound's space was exhausted.
        exhausted: bool,
    },
    /// `visit` stopped it.
    Stopped,
    /// A panic unwound out of execution `exec`.
    Panicked {
        /// The execution's index in loom's order.
        exec: u64,
        /// The panic's message.
        message: String,
    },
}

/// The loom run in progress on this thread, for the deadlock hook.
struct Running {
    /// The test.
    test: &'static str,
    /// Its replay line, without the payload.
    template: ReplayLine,
    /// The preemption bound.
    pb: usize,
    /// Executions started.
    next: Arc<AtomicU64>,
    /// Whether a deadlock was reported (each `.loom` call chains one more
    /// hook).
    reported: bool,
}

/// The replay line of execution `exec` under bound `pb`.
fn line_of(template: &ReplayLine, exec: u64, pb: usize) -> String {
    template
        .with_payload(Payload::Loom(LoomPayload { exec, pb }))
        .to_string()
}

thread_local! {
    /// Set while loom's model runs on this thread. loom runs every thread
    /// of an execution on this one.
    static RUNNING: RefCell<Option<Running>> = const { RefCell::new(None) };
}

/// Chain a panic hook that prints a deadlock of a loom run on this thread
/// as a [`Failure`] (the process aborts right after, see the module doc),
/// then hands on to the hook in place. Installed at every run, not once:
/// `check::shuttle_check` puts back the hook of before its runs when they
/// end, dropping a hook installed meanwhile.
fn install_deadlock_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = panic_message(info.payload());
        let in_loom = info.location().is_some_and(|l| l.file().contains("/loom-"));
        if in_loom && crate::check::panics::is_deadlock(&message) {
            let _ = RUNNING.try_with(|r| {
                let Ok(mut running) = r.try_borrow_mut() else {
                    return;
                };
                let Some(run) = running.as_mut().filter(|run| !run.reported) else {
                    return;
                };
                run.reported = true;
                let first = message.lines().next().unwrap_or("");
                let parked = crate::rt::parked_waits();
                let message = format!(
                    "loom: {first} (waits parked: {})",
                    crate::rt::labels(&parked)
                );
                let exec = run.next.load(Ordering::SeqCst).saturating_sub(1);
                let failure = Failure {
                    test: run.test,
                    checker: Some(Checker::Loom),
                    rule: Broken::Rule(scenarios::deadlock_rule(parked)),
                    message,
                    replay: line_of(&run.template, exec, run.pb),
                };
                // Straight to the process's stderr: the test harness's
                // capture of `eprintln!` dies with the process.
                let _ = writeln!(
                    std::io::stderr(),
                    "{failure}\n(loom's unwinding from a deadlock aborts this process)"
                );
            });
        }
        previous(info);
    }));
}

/// Clears [`RUNNING`] when the run ends.
struct Ran;

impl Drop for Ran {
    fn drop(&mut self) {
        let _ = RUNNING.try_with(|r| r.borrow_mut().take());
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run loom's model of `scenario` under preemption bound `pb`, at most
/// `cap` executions, calling `visit` with each execution's index (from 0,
/// in loom's order) and outcome; `visit` returns `false` to stop.
fn each_execution(
    test: &'static str,
    template: &ReplayLine,
    pb: usize,
    cap: Option<u64>,
    visit: impl FnMut(u64, Outcome) -> bool + Send + 'static,
) -> End {
    crate::check::quiet_panics();
    install_deadlock_hook();
    let (scenario, faults) = (template.scenario.clone(), template.faults());
    let visit = Mutex::new(visit);
    let next = Arc::new(AtomicU64::new(0));
    let started = next.clone();
    RUNNING.with(|r| {
        *r.borrow_mut() = Some(Running {
            test,
            template: template.clone(),
            pb,
            next: next.clone(),
            reported: false,
        })
    });
    let _ran = Ran;
    // Only what the test asks for: loom's own variables (LOOM_MAX_*) would
    // change what a replay line's index means.
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(pb);
    b.max_branches = 100_000;
    b.max_duration = None;
    b.checkpoint_file = None;
    // loom counts its iterations from 1 and stops before iteration `max`,
    // checking it every `checkpoint_interval` iterations.
    b.max_permutations = cap.map(|c| usize::try_from(c).unwrap_or(usize::MAX - 1) + 1);
    b.checkpoint_interval = 1;
    let result = catch_unwind(AssertUnwindSafe(|| {
        b.check(move || {
            let index = next.fetch_add(1, Ordering::SeqCst);
            let ctx = Ctx::loom(faults);
            // Boxed: only a pointer to the execution's future lives on
            // loom's 32 KiB stack.
            let run = Box::pin(scenarios::run_ctx::<LoomRt>(&scenario, ctx));
            let outcome = loom::future::block_on(run);
            if !(lock(&visit))(index, outcome) {
                std::panic::panic_any(STOP);
            }
        })
    }));
    let ran = started.load(Ordering::SeqCst);
    match result {
        Ok(()) => End::Ran {
            exhausted: cap.is_none_or(|c| ran < c),
        },
        Err(payload) => match panic_message(payload.as_ref()) {
            m if m == STOP => End::Stopped,
            message => End::Panicked {
                exec: ran.saturating_sub(1),
                message,
            },
        },
    }
}

/// The violation a panic out of an execution stands for, or the `harness`
/// failure's message when it is loom's thread limit.
fn classify(message: &str) -> Result<Violation, String> {
    if message == THREAD_LIMIT {
        return Err(format!(
            "the closure runs more threads than loom models ({LOOM_MAX_THREADS}: its own, plus \
             one per task rt::spawn starts, and one per agent the rig creates); race fewer \
             tasks under loom, or use dfs or shuttle"
        ));
    }
    let first = message.lines().next().unwrap_or("");
    Ok(if crate::check::panics::is_deadlock(message) {
        Violation::new(
            scenarios::deadlock_rule(crate::rt::parked_waits()),
            format!("loom: {first}"),
        )
    } else if message.starts_with("Model exceeded") {
        Violation::new(RuleId::Loom, format!("loom: {first}"))
    } else {
        Violation::new(RuleId::Panic, message.to_string())
    })
}

/// The outcome of an execution that panicked.
fn panicked(v: Violation) -> Outcome {
    Outcome {
        violations: vec![v],
        label: "panic".into(),
        fact: None,
        invariants: 0,
        journal: Vec::new(),
        world: Vec::new(),
    }
}

fn harness(test: &RaceTest, message: String, replay: String) -> Failure {
    Failure {
        test: test.name,
        checker: Some(Checker::Loom),
        rule: Broken::Harness,
        message,
        replay,
    }
}

/// Counts the `task` spans `rt::spawn` and `run_ctx` open: one per loom
/// thread of an execution.
struct TaskSpans(Arc<AtomicU64>);

impl tracing::Subscriber for TaskSpans {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        // Decided per call (`enabled`), and nothing cached for other
        // subscribers.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.is_span() && metadata.name() == "task"
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(self.0.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// The threads of loom's first execution (the same under every bound) of
/// the closure of `template`'s test: its own and one per task it starts.
fn threads(test: &'static str, template: &ReplayLine) -> u64 {
    let spans = Arc::new(AtomicU64::new(0));
    let dispatch = tracing::Dispatch::new(TaskSpans(spans.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        each_execution(test, template, 0, Some(1), |_, _| true)
    });
    spans.load(Ordering::SeqCst).max(1)
}

/// The preemption bound for `threads` threads: the CLI's (`loom_bound`),
/// `base` for two threads and one less for each thread beyond two, at most
/// the PR tier's cap and at least 1.
fn bound(base: usize, threads: u64, scenario: &Scenario) -> usize {
    let beyond = usize::try_from(threads.saturating_sub(2)).unwrap_or(usize::MAX);
    base.saturating_sub(beyond)
        .min(scenario.bounds.loom_cap)
        .max(1)
}

/// Explore `scenario` (the test's closure) with loom, stopping at the
/// first failure.
pub(super) fn explore(test: &RaceTest, scenario: &Scenario) -> Result<Report, Failure> {
    let faults = test.faults;
    let mut tally = Tally::new(scenario, Checker::Loom, faults);
    // The line's fingerprint runs the simulator: made here, not on loom's
    // stack.
    let template = ReplayLine::new(
        scenario,
        Checker::Loom,
        faults,
        Payload::Loom(LoomPayload { exec: 0, pb: 0 }),
    );
    let threads = threads(test.name, &template);
    let pb = bound(test.budget.loom_preemptions, threads, scenario);
    let cap = test.budget.loom_executions;
    let line = {
        let template = template.clone();
        move |exec: u64| line_of(&template, exec, pb)
    };
    tally.bound(match cap {
        Some(m) => format!("preemptions <= {pb} ({threads} threads), at most {m} executions"),
        None => format!("preemptions <= {pb} ({threads} threads)"),
    });
    let shared = Arc::new(Mutex::new(tally));
    let (t, l) = (shared.clone(), line.clone());
    let end = each_execution(test.name, &template, pb, cap, move |exec, outcome| {
        !lock(&t).add(&outcome, || l(exec))
    });
    // The model's closure (and its clone of `shared`) may outlive a panic
    // in the threads loom left unfinished: take the tally out.
    let mut tally = std::mem::replace(
        &mut *lock(&shared),
        Tally::new(scenario, Checker::Loom, faults),
    );
    match end {
        End::Ran { exhausted: true } => tally.exhausted(),
        End::Ran { exhausted: false } => tally.stopped(Stopped::Budget),
        End::Stopped => tally.stopped(Stopped::FirstFailure),
        End::Panicked { exec, message } => match classify(&message) {
            Ok(v) => {
                tally.add(&panicked(v), || line(exec));
                tally.stopped(Stopped::FirstFailure);
            }
            Err(why) => return Err(harness(test, why, line(exec))),
        },
    }
    Ok(tally.finish())
}

/// The outcome of the execution a loom line names: loom's model run again
/// under the line's bound, up to that execution.
pub(super) fn replay(test: &RaceTest, parsed: &ReplayLine, line: &str) -> Result<Outcome, Failure> {
    let &Payload::Loom(LoomPayload { exec, pb }) = parsed.payload() else {
        return Err(test.bad_line(line, "not a loom line"));
    };
    let found = Arc::new(Mutex::new(None));
    let f = found.clone();
    let end = each_execution(test.name, parsed, pb, None, move |i, outcome| {
        if i < exec {
            return true;
        }
        *lock(&f) = Some(outcome);
        false
    });
    if let Some(outcome) = lock(&found).take() {
        return Ok(outcome);
    }
    match end {
        End::Panicked { exec: e, message } if e == exec => match classify(&message) {
            Ok(v) => Ok(panicked(v)),
            Err(why) => Err(harness(test, why, line.to_string())),
        },
        End::Panicked { exec: e, message } => Err(test.bad_line(
            line,
            &format!("loom failed at execution {e}, before {exec}: {message}"),
        )),
        End::Ran { .. } | End::Stopped => Err(test.bad_line(
            line,
            &format!("execution {exec} does not exist under pb={pb} (another build or closure?)"),
        )),
    }
}
