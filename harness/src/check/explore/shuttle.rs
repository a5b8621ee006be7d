//! shuttle, behind one explorer that takes its scheduler: random (a fixed
//! number of iterations from fixed seeds), PCT at the budget's depth, or
//! DFS (every schedule in shuttle's order, no reduction and no bound, up
//! to the budget's iterations). The checkers `shuttle-random`,
//! `shuttle-pct` and `shuttle-dfs` are this explorer with each scheduler;
//! a line of any of them replays its recorded schedule.
//!
//! Each scheduler is wrapped so the schedule of each execution is
//! recorded; a failing one is printed in shuttle's own encoding and
//! replayed with shuttle's `ReplayScheduler`. Shuttle's panic hook is in
//! place only while shuttle runs ([`with_shuttle_hook`]).

use super::{Exploration, Explorer, Replayed};
use crate::backends::ShuttleRt;
use crate::check::checker::Checker;
use crate::check::replay_line::{Payload, ReplayError, ReplayLine, ShuttlePayload};
use crate::check::report::{Report, Stop, Stopped};
use crate::check::tally::Tally;
use crate::faults::Faults;
use crate::scenarios::{self, Outcome, Scenario};
use shuttle::scheduler::{
    DfsScheduler, PctScheduler, RandomScheduler, ReplayScheduler, Schedule, Scheduler, Task, TaskId,
};
use shuttle::{Config, FailurePersistence, Runner};
use shuttle_engine::scheduler::serialization::{deserialize_schedule, serialize_schedule};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Which of shuttle's schedulers an exploration runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShuttleScheduler {
    /// shuttle's random scheduler.
    Random,
    /// shuttle's PCT scheduler.
    Pct,
    /// shuttle's DFS scheduler.
    Dfs,
}

/// shuttle, with one of its schedulers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shuttle(pub ShuttleScheduler);

impl Shuttle {
    /// The explorer of a shuttle checker; `None` for any other checker.
    pub fn of(checker: Checker) -> Option<Shuttle> {
        let scheduler = match checker {
            Checker::ShuttleRandom => ShuttleScheduler::Random,
            Checker::ShuttlePct => ShuttleScheduler::Pct,
            Checker::ShuttleDfs => ShuttleScheduler::Dfs,
            _ => return None,
        };
        Some(Shuttle(scheduler))
    }
}

impl Explorer for Shuttle {
    type Payload = ShuttlePayload;

    fn checker(&self) -> Checker {
        match self.0 {
            ShuttleScheduler::Random => Checker::ShuttleRandom,
            ShuttleScheduler::Pct => Checker::ShuttlePct,
            ShuttleScheduler::Dfs => Checker::ShuttleDfs,
        }
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let b = run.budget;
        let bound = match self.0 {
            ShuttleScheduler::Random => format!("{} iterations", b.shuttle_iterations),
            ShuttleScheduler::Pct => format!(
                "{} iterations, pct depth {}",
                b.shuttle_iterations, b.pct_depth
            ),
            ShuttleScheduler::Dfs => format!(
                "shuttle's DFS, no reduction, unbounded, at most {} iterations",
                b.shuttle_iterations
            ),
        };
        let mut report = explore(
            self.checker(),
            run.scenario,
            run.faults,
            b.shuttle_iterations,
            b.pct_depth,
            run.stop_at_first,
            b.stop,
        );
        report.bound.get_or_insert(bound);
        if run.stop_at_first && !report.violations.is_empty() {
            report.stopped = Some(Stopped::FirstFailure);
        }
        report
    }

    /// The recorded schedule, whichever scheduler recorded it.
    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &ShuttlePayload,
    ) -> Result<Replayed, ReplayError> {
        let outcome = replay(scenario, faults, &payload.schedule).map_err(ReplayError)?;
        Ok(Replayed::of(outcome))
    }
}

/// Records the schedule of the current execution of an inner scheduler.
/// A schedule is complete only when its execution has ended (teardown makes
/// decisions too), so a failing one is saved when the next execution starts.
struct Recording<S> {
    inner: S,
    current: Arc<Mutex<Schedule>>,
    /// Set by the body when the execution failed.
    failed: Arc<Mutex<bool>>,
    /// The failing execution's complete schedule.
    saved: Arc<Mutex<Option<Schedule>>>,
    /// Called with each execution's complete schedule.
    ended: Box<dyn FnMut(&Schedule) + Send>,
    /// Set by the body at the first failure with `stop_at_first`.
    stop: Arc<AtomicBool>,
    /// A stop request from outside.
    outside: Stop,
}

impl<S: Scheduler> Scheduler for Recording<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        {
            let done = self.current.lock().unwrap_or_else(|p| p.into_inner());
            (self.ended)(&done);
        }
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if std::mem::take(&mut *failed) {
            let done = self
                .current
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            self.saved
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(done);
        }
        drop(failed);
        // The one way a row stops early: a failure with `stop_at_first`,
        // or Ctrl-C. No further execution starts; the row reports what it
        // has.
        if self.stop.load(Ordering::SeqCst) || self.outside.requested() {
            return None;
        }
        let schedule = self.inner.new_execution()?;
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Schedule::new(schedule.seed);
        Some(schedule)
    }

    fn next_task(
        &mut self,
        runnable: &[&Task],
        current: Option<TaskId>,
        is_yielding: bool,
    ) -> Option<TaskId> {
        let next = self.inner.next_task(runnable, current, is_yielding)?;
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_task(next);
        Some(next)
    }

    fn next_u64(&mut self) -> u64 {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_random();
        self.inner.next_u64()
    }
}

fn config() -> Config {
    let mut config = Config::new();
    config.failure_persistence = FailurePersistence::None;
    config.silence_warnings = true;
    // Shuttle's default task stack (32 KiB) fits the release build; debug
    // poll frames overflow it (SIGSEGV), so debug builds get 1 MiB.
    if cfg!(debug_assertions) {
        config.stack_size = 1 << 20;
    }
    config
}

type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// The shuttle runs in progress, and shuttle's hook between them (see
/// [`with_shuttle_hook`]). Never locked by a panic hook, so a panic on
/// another thread cannot deadlock with an installation.
struct PanicHooks {
    /// Shuttle runs in progress (tests run several at once).
    depth: usize,
    /// Whether ours is the hook in place (it stays after a run that ended
    /// unwinding, until the next run ends).
    installed: bool,
    /// Shuttle's own hook, kept between runs. Shuttle installs it once per
    /// process, on its first execution, over [`delegate_to_outer`].
    shuttle: Option<Arc<Hook>>,
}

static HOOKS: Mutex<PanicHooks> = Mutex::new(PanicHooks {
    depth: 0,
    installed: false,
    shuttle: None,
});

/// The hook that was in place before the shuttle runs in progress started:
/// what shuttle's hook hands on to, and what is put back after the last.
static OUTER: std::sync::RwLock<Option<Arc<Hook>>> = std::sync::RwLock::new(None);

fn hooks() -> std::sync::MutexGuard<'static, PanicHooks> {
    HOOKS.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_outer(hook: Option<Arc<Hook>>) -> Option<Arc<Hook>> {
    let mut outer = OUTER.write().unwrap_or_else(|p| p.into_inner());
    std::mem::replace(&mut *outer, hook)
}

/// The hook shuttle's hook calls after its own output: the one that was in
/// place when the current shuttle runs started.
fn delegate_to_outer(info: &std::panic::PanicHookInfo<'_>) {
    let outer = OUTER.read().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(outer) = outer {
        outer(info);
    }
}

/// Run `f`, which runs shuttle, with shuttle's panic hook installed, and
/// put the previous hook back afterwards. Outside shuttle runs a panic
/// (a `println!` to a closed stdout, a bug in `sim`) never reaches
/// shuttle's hook, which would blame it on a shuttle task ("Task failed,
/// serializing schedule").
///
/// While shuttle runs, the chain is: panics scenarios raise on purpose
/// ([`scenarios::EXPECTED_PANICS`]) are dropped; then shuttle's hook (it
/// skips the panics of its own teardown, names the failing task); then the
/// previous hook. Runs on several threads at once share one installation:
/// the first to start installs it, the last to end restores. `f` should
/// not unwind (the hook cannot be set while a thread panics): the callers
/// catch shuttle's panics inside it.
pub fn with_shuttle_hook<T>(f: impl FnOnce() -> T) -> T {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            leave_shuttle_hook();
        }
    }
    enter_shuttle_hook();
    let _leave = Leave;
    f()
}

thread_local! {
    /// Set while [`replay`] runs on this thread: shuttle's panics there
    /// (a schedule that does not fit) are its error, reported in one line.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

fn enter_shuttle_hook() {
    let mut h = hooks();
    h.depth += 1;
    if h.installed {
        return;
    }
    h.installed = true;
    set_outer(Some(Arc::new(std::panic::take_hook())));
    let shuttle = match &h.shuttle {
        Some(hook) => hook.clone(),
        None => {
            // Shuttle's first execution in this process installs its hook
            // over the one in place: let it wrap the delegate, then keep it.
            std::panic::set_hook(Box::new(delegate_to_outer));
            Runner::new(RandomScheduler::new_from_seed(0, 1), config()).run(|| {});
            let hook: Arc<Hook> = Arc::new(std::panic::take_hook());
            h.shuttle = Some(hook.clone());
            hook
        }
    };
    std::panic::set_hook(Box::new(move |info| {
        let message = crate::bus::panic_message(info.payload());
        if scenarios::EXPECTED_PANICS.contains(&message.as_str()) || QUIET.with(Cell::get) {
            tracing::debug!(target: crate::trace::Target::PANIC, "{info}");
        } else {
            shuttle(info);
        }
    }));
}

fn leave_shuttle_hook() {
    let mut h = hooks();
    h.depth = h.depth.saturating_sub(1);
    if h.depth > 0 || std::thread::panicking() {
        // Still in use; or unwinding, when the hook cannot be set (the
        // next run then takes ours as the one to restore).
        return;
    }
    // Ours, over shuttle's (which `h.shuttle` keeps for the next run).
    h.installed = false;
    drop(std::panic::take_hook());
    let Some(outer) = set_outer(None) else {
        return;
    };
    match Arc::try_unwrap(outer) {
        Ok(outer) => std::panic::set_hook(outer),
        // A panic on another thread is in it right now.
        Err(shared) => std::panic::set_hook(Box::new(move |info| shared(info))),
    }
}

/// Explore `iterations` executions with shuttle's random or PCT scheduler.
pub fn explore(
    checker: Checker,
    scenario: &Scenario,
    faults: Faults,
    iterations: usize,
    pct_depth: usize,
    stop_at_first: bool,
    stop: Stop,
) -> Report {
    explore_seeded(
        checker,
        scenario,
        faults,
        (iterations, pct_depth, 0x5eed),
        &[],
        (stop_at_first, stop),
    )
}

/// Schedules shuttle's DFS scheduler runs to exhaust `scenario`, at most
/// `cap`: `(executions, exhausted, seconds)`.
pub fn dfs_count(scenario: &Scenario, cap: usize) -> (u64, bool, f64) {
    let start = std::time::Instant::now();
    let count = Arc::new(Mutex::new(0u64));
    let c = count.clone();
    let scenario = scenario.clone();
    let body = move || {
        let _ = shuttle::future::block_on(scenarios::run::<ShuttleRt>(&scenario, Faults::none()));
        *c.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    };
    let scheduler = shuttle::scheduler::DfsScheduler::new(Some(cap), false);
    let _ = with_shuttle_hook(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Runner::new(scheduler, config()).run(body)
        }))
    });
    let n = *count.lock().unwrap_or_else(|p| p.into_inner());
    (n, n < cap as u64, start.elapsed().as_secs_f64())
}

/// [`explore`] with `(iterations, pct_depth, seed)`, counting as *the*
/// failure only one that breaks a rule of `want` (empty: any).
pub fn explore_seeded(
    checker: Checker,
    scenario: &Scenario,
    faults: Faults,
    (iterations, pct_depth, seed): (usize, usize, u64),
    want: &'static [crate::rules::Rule],
    (stop_at_first, outside): (bool, Stop),
) -> Report {
    let current = Arc::new(Mutex::new(Schedule::new(0)));
    let failed = Arc::new(Mutex::new(false));
    let saved: Arc<Mutex<Option<Schedule>>> = Arc::new(Mutex::new(None));
    let mut fresh = Tally::new(scenario, checker, faults);
    fresh.want(want);
    let tally = Arc::new(Mutex::new(fresh));
    let stop = Arc::new(AtomicBool::new(false));
    let (t, fl, st) = (tally.clone(), failed.clone(), stop.clone());
    let (body_scenario, line_scenario) = (scenario.clone(), scenario.clone());
    let body = move || {
        let outcome: Outcome =
            shuttle::future::block_on(scenarios::run::<ShuttleRt>(&body_scenario, faults));
        let mut tally = t.lock().unwrap_or_else(|p| p.into_inner());
        let first = tally.first_failure.is_none();
        // The replay line is filled in once the schedule is complete.
        let failed_now = tally.add(&outcome, String::new);
        if failed_now && first {
            *fl.lock().unwrap_or_else(|p| p.into_inner()) = true;
        }
        if failed_now && stop_at_first {
            st.store(true, Ordering::SeqCst);
        }
    };
    let line = Arc::new(move |schedule: &Schedule| {
        let hex: String = serialize_schedule(schedule).split_whitespace().collect();
        let payload = Payload::Shuttle(ShuttlePayload { schedule: hex });
        ReplayLine::new(&line_scenario, checker, faults, payload).to_string()
    });
    let recording = |inner| {
        let tally = tally.clone();
        let line = line.clone();
        Recording {
            inner,
            current: current.clone(),
            failed: failed.clone(),
            saved: saved.clone(),
            stop: stop.clone(),
            outside,
            // A view first reached gets its line once the schedule is whole.
            ended: Box::new(move |schedule: &Schedule| {
                tally
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .resolve_pending_view(|| line(schedule));
            }),
        }
    };
    // Seeds are fixed so a run is reproducible as a whole; each failing
    // execution is replayable on its own from its recorded schedule.
    let result = with_shuttle_hook(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match checker {
            Checker::ShuttlePct => Runner::new(
                recording(
                    Box::new(PctScheduler::new_from_seed(seed, pct_depth, iterations))
                        as Box<dyn Scheduler + Send>,
                ),
                config(),
            )
            .run(body),
            Checker::ShuttleDfs => Runner::new(
                recording(Box::new(DfsScheduler::new(Some(iterations), false))
                    as Box<dyn Scheduler + Send>),
                config(),
            )
            .run(body),
            _ => Runner::new(
                recording(Box::new(RandomScheduler::new_from_seed(seed, iterations))),
                config(),
            )
            .run(body),
        }))
    });
    // The failing execution may have been the last one.
    if std::mem::take(&mut *failed.lock().unwrap_or_else(|p| p.into_inner())) {
        let done = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(done);
    }
    // Shuttle may still hold the body (and so the tally) after a failure it
    // raised itself: take the tally out instead of unwrapping the Arc.
    let mut tally = std::mem::replace(
        &mut *tally.lock().unwrap_or_else(|p| p.into_inner()),
        Tally::new(scenario, checker, faults),
    );
    {
        // The last execution's view, if it was new.
        let done = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        tally.resolve_pending_view(|| line(&done));
    }
    if let Some(schedule) = saved.lock().unwrap_or_else(|p| p.into_inner()).take() {
        tally.set_replay(line(&schedule));
    }
    let ended_cleanly = result.is_ok();
    if let Err(payload) = result {
        let message = crate::bus::panic_message(payload.as_ref());
        // A deadlock or a panic of the body is a failure of the execution
        // that was running: a violation with its replay line, not a crash
        // of the run.
        let outcome = shuttle_failure(&message);
        let schedule = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        tally.add(&outcome, || line(&schedule));
    }
    if outside.requested() {
        tally.stopped(Stopped::Interrupted);
    } else if checker == Checker::ShuttleDfs
        && ended_cleanly
        && !stop.load(Ordering::SeqCst)
        && tally.executions < iterations as u64
    {
        // shuttle's DFS ended before its budget: every schedule was run.
        tally.exhausted();
    } else if checker == Checker::ShuttleDfs && ended_cleanly && !stop.load(Ordering::SeqCst) {
        tally.stopped(Stopped::Budget);
    }
    tally.finish()
}

/// What shuttle's replay scheduler panics with when a schedule does not
/// fit the code it replays (another build or scenario).
const DIVERGED: [&str; 4] = [
    "schedule ended early",
    "expected context switch",
    "expected random choice",
    "scheduled task is not runnable",
];

/// The outcome of an execution that panicked under shuttle: a deadlock
/// (every task blocked) breaks the rule of the waits still parked; any
/// other panic of the body is a [`RuleId::Panic`](crate::oracle::RuleId).
fn shuttle_failure(message: &str) -> Outcome {
    let deadlock = crate::check::panics::is_deadlock(message);
    let violation = if deadlock {
        let parked = crate::context::parked_waits();
        crate::oracle::Violation::new(
            scenarios::deadlock_rule(parked.iter().copied()),
            format!(
                "shuttle: {message} (waits parked: {})",
                crate::rt::labels(&parked)
            ),
        )
    } else {
        crate::oracle::Violation::new(
            crate::oracle::RuleId::Panic,
            format!("a task panicked: {message}"),
        )
    };
    Outcome {
        violations: vec![violation],
        label: if deadlock { "deadlock" } else { "error" }.into(),
        fact: None,
        invariants: 1,
        journal: Vec::new(),
        world: Vec::new(),
    }
}

/// Replay one execution from its encoded schedule.
pub fn replay(scenario: &Scenario, faults: Faults, encoded: &str) -> Result<Outcome, String> {
    let schedule =
        deserialize_schedule(encoded).ok_or_else(|| "malformed shuttle schedule".to_string())?;
    let found: Arc<Mutex<Option<Outcome>>> = Arc::new(Mutex::new(None));
    let f = found.clone();
    let scenario = scenario.clone();
    // Quiet: a failed replay's panic message is in the error it returns.
    QUIET.with(|q| q.set(true));
    let result = with_shuttle_hook(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Runner::new(ReplayScheduler::new_from_schedule(schedule), config()).run(move || {
                let outcome =
                    shuttle::future::block_on(scenarios::run::<ShuttleRt>(&scenario, faults));
                *f.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
            })
        }))
    });
    QUIET.with(|q| q.set(false));
    if let Err(payload) = result {
        let message = crate::bus::panic_message(payload.as_ref());
        if !DIVERGED.iter().any(|d| message.starts_with(d)) {
            return Ok(shuttle_failure(&message));
        }
        return Err(format!(
            "shuttle could not replay the schedule (recorded by another build or scenario?): {message}"
        ));
    }
    let outcome = found.lock().unwrap_or_else(|p| p.into_inner()).take();
    outcome.ok_or_else(|| "shuttle replay ran no execution".to_string())
}
