//! [`RaceTest::loom`](super::RaceTest::loom): loom's one driver
//! (`explore::loom_model::Model`) in the test's own process, as `loom::model`
//! runs it: a downstream race test is a test binary of its own, and its
//! closure is known only to it (the `loom` checker runs the same driver in
//! a worker process). A panic that unwinds out of an execution (an
//! assertion of the closure, in any of its tasks) is a failure of rule
//! `panic` at that execution's index.
//!
//! A deadlock is the one failure this cannot return: loom's unwinding from
//! it aborts the test process (see `explore::loom`). The driver's panic
//! hook prints it first, here as a [`Failure`] (the rule of the waits still
//! parked, the replay line), and a replay of that line deadlocks and aborts
//! the same way.

use super::{Broken, Failure, RaceTest};
use crate::check::explore::loom::bound_for;
use crate::check::explore::loom_model::{classify, line_of, panicked, End, Model, Panicked};
use crate::check::replay::{LoomPayload, Payload};
use crate::check::{Checker, ReplayLine, Report, Stopped, Tally};
use crate::oracle::Violation;
use crate::scenarios::{Outcome, Scenario};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub use crate::check::explore::loom_model::LOOM_MAX_THREADS;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run `model` of `test`, whose lines are `template`'s: a deadlock is
/// printed as the test's [`Failure`] before loom's unwinding aborts.
fn run(
    test: &'static str,
    template: &ReplayLine,
    model: &Model<'_>,
    visit: impl FnMut(u64, Outcome) -> bool + Send + 'static,
) -> End {
    let (template, pb) = (template.clone(), model.pb);
    let report = Box::new(move |exec: u64, message: &str| {
        // Any other panic unwinds cleanly, and the run reports it.
        if !crate::check::panics::is_deadlock(message) {
            return;
        }
        let Panicked::Broke(v) = classify(message) else {
            return;
        };
        let failure = Failure {
            test,
            checker: Some(Checker::Loom),
            rule: Broken::Rule(v.rule),
            message: v.message,
            replay: line_of(&template, exec, pb),
        };
        // Straight to the process's stderr: the test harness's capture of
        // `eprintln!` dies with the process.
        let _ = writeln!(
            std::io::stderr(),
            "{failure}\n(loom's unwinding from a deadlock aborts this process)"
        );
    });
    model.run(report, visit)
}

/// The violation a panic out of an execution stands for, or the `harness`
/// failure's message when it is loom's thread limit.
fn violation(message: &str) -> Result<Violation, String> {
    match classify(message) {
        Panicked::Broke(v) => Ok(v),
        Panicked::ThreadLimit => Err(format!(
            "the closure runs more threads than loom models ({LOOM_MAX_THREADS}: its own, plus \
             one per task rt::spawn starts, and one per agent the rig creates); race fewer \
             tasks under loom, or use dfs or shuttle"
        )),
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
    let model = Model {
        scenario: &template.scenario,
        faults: template.faults(),
        pb: 0,
        cap: Some(1),
    };
    tracing::dispatcher::with_default(&dispatch, || run(test, template, &model, |_, _| true));
    spans.load(Ordering::SeqCst).max(1)
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
    let pb = bound_for(test.budget.loom_preemptions, threads, scenario);
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
    let model = Model {
        scenario,
        faults,
        pb,
        cap,
    };
    let end = run(test.name, &template, &model, move |exec, outcome| {
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
        End::Panicked { exec, message, .. } => match violation(&message) {
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
    let model = Model {
        scenario: &parsed.scenario,
        faults: parsed.faults(),
        pb,
        cap: None,
    };
    let end = run(test.name, parsed, &model, move |i, outcome| {
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
        End::Panicked {
            exec: e, message, ..
        } if e == exec => match violation(&message) {
            Ok(v) => Ok(panicked(v)),
            Err(why) => Err(harness(test, why, line.to_string())),
        },
        End::Panicked {
            exec: e, message, ..
        } => Err(test.bad_line(
            line,
            &format!("loom failed at execution {e}, before {exec}: {message}"),
        )),
        End::Ran { .. } | End::Stopped => Err(test.bad_line(
            line,
            &format!("execution {exec} does not exist under pb={pb} (another build or closure?)"),
        )),
    }
}
