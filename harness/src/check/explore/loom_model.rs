//! One run of loom's model on the caller's thread ([`Model`]), shared by
//! the `loom` checker's worker (`loom_worker`) and a race test
//! (`check::api::loom`): the model's builder, the panic hook that reports
//! a deadlock before the unwinding can abort the process, and what a
//! panic out of the model stands for ([`classify`]). See `explore::loom`
//! for why a deadlock needs the hook.

use crate::backends::LoomRt;
use crate::bus::panic_message;
use crate::check::panics::{is_deadlock, quiet_panics, STOP};
use crate::check::replay_line::{LoomPayload, Payload, ReplayLine};
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::scenarios::{self, Ctx, Outcome, Scenario};
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The most threads loom models (`loom::MAX_THREADS`): an execution's own,
/// plus one per task `rt::spawn` starts, and one per agent's loop.
pub const LOOM_MAX_THREADS: usize = loom::MAX_THREADS;

/// The panic loom raises when a model starts one thread too many (its
/// `thread::Set::new_thread`; `loom_refuses_more_threads_than_it_models`
/// in `tests/race_api.rs` checks that this loom version still words it so).
const THREAD_LIMIT: &str = "self.threads.len() < self.max()";

/// The replay line of execution `exec` under bound `pb`, from a line of
/// the same run (`template`'s payload is replaced).
pub fn line_of(template: &ReplayLine, exec: u64, pb: usize) -> String {
    template
        .with_payload(Payload::Loom(LoomPayload { exec, pb }))
        .to_string()
}

/// One run of loom's model: the scenario, its faults, the preemption bound
/// and at most `cap` executions.
pub struct Model<'a> {
    /// The scenario (a race test's closure or a named one).
    pub scenario: &'a Scenario,
    /// The faults switched on.
    pub faults: Faults,
    /// The preemption bound.
    pub pb: usize,
    /// The most executions to run.
    pub cap: Option<u64>,
}

/// How a run of loom's model ended.
#[derive(Debug)]
pub enum End {
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
        /// Whether the run's `report` was told of it already.
        reported: bool,
    },
}

/// What a panic out of loom's model stands for.
#[derive(Clone, Debug)]
pub enum Panicked {
    /// loom's thread limit: the execution needs more threads than loom
    /// models. Not the scenario's fault.
    ThreadLimit,
    /// A broken rule: a deadlock (the rule of the waits still parked),
    /// loom's own limit (`loom`), or the closure's panic (`panic`).
    Broke(Violation),
}

/// What `message`, a panic out of loom's model on this thread, stands for
/// (a deadlock's waits are read on the thread where they are parked).
pub fn classify(message: &str) -> Panicked {
    if message.contains(THREAD_LIMIT) {
        return Panicked::ThreadLimit;
    }
    let first = message.lines().next().unwrap_or("");
    Panicked::Broke(if is_deadlock(message) {
        let parked = crate::context::parked_waits();
        Violation::new(
            scenarios::deadlock_rule(parked.clone()),
            format!(
                "loom: {first} (waits parked: {})",
                crate::rt::labels(&parked)
            ),
        )
    } else if message.starts_with("Model exceeded") {
        Violation::new(RuleId::Loom, format!("loom: {first}"))
    } else {
        Violation::new(RuleId::Panic, message.to_string())
    })
}

/// The outcome of an execution that broke `v` by panicking.
pub fn panicked(v: Violation) -> Outcome {
    Outcome {
        violations: vec![v],
        label: "panic".into(),
        fact: None,
        invariants: 0,
        journal: Vec::new(),
        world: Vec::new(),
    }
}

/// Told of a panic raised in loom's own code (a deadlock among them) or of
/// a deadlock, with the execution's index and the panic's message, before
/// the unwinding can abort the process.
pub type OnPanic = Box<dyn Fn(u64, &str)>;

/// The loom run in progress on this thread, for the panic hook.
struct Running {
    /// Executions started.
    next: Arc<AtomicU64>,
    /// Who is told of loom's panics.
    report: OnPanic,
    /// Whether `report` was told (once per run).
    reported: bool,
}

thread_local! {
    /// Set while loom's model runs on this thread: loom runs every thread
    /// of an execution on this one.
    static RUNNING: RefCell<Option<Running>> = const { RefCell::new(None) };
}

/// Chain a panic hook that tells this thread's loom run of a panic of
/// loom's own (the process may abort right after, see the module doc),
/// then hands on to the hook in place. Installed at every run, not once:
/// `explore::shuttle` puts back the hook of before its runs when they
/// end, dropping a hook installed meanwhile.
fn install_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = panic_message(info.payload());
        let in_loom = info.location().is_some_and(|l| l.file().contains("/loom-"));
        if message != STOP && (in_loom || is_deadlock(&message)) {
            let _ = RUNNING.try_with(|r| {
                let Ok(mut running) = r.try_borrow_mut() else {
                    return;
                };
                let Some(run) = running.as_mut().filter(|run| !run.reported) else {
                    return;
                };
                run.reported = true;
                let exec = run.next.load(Ordering::SeqCst).saturating_sub(1);
                (run.report)(exec, &message);
            });
        }
        previous(info);
    }));
}

/// Clears [`RUNNING`] when the run ends, saying whether it reported.
struct Ran;

impl Ran {
    fn reported(&self) -> bool {
        RUNNING
            .try_with(|r| r.borrow().as_ref().is_some_and(|run| run.reported))
            .unwrap_or(false)
    }
}

impl Drop for Ran {
    fn drop(&mut self) {
        let _ = RUNNING.try_with(|r| r.borrow_mut().take());
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Model<'_> {
    /// Run the model on this thread, calling `visit` with each execution's
    /// index (from 0, in loom's order) and outcome; `visit` returns `false`
    /// to stop. A panic of loom's own goes to `report` first.
    ///
    /// Every execution runs on loom's model thread, whose stack is loom's
    /// fixed 32 KiB: the execution's future is boxed, so only a pointer to
    /// it lives there, and whatever `visit` does per execution must be
    /// small (a replay line's fingerprint, which runs the simulator, is
    /// made before the model starts).
    pub fn run(
        &self,
        report: OnPanic,
        visit: impl FnMut(u64, Outcome) -> bool + Send + 'static,
    ) -> End {
        quiet_panics();
        install_hook();
        let (scenario, faults) = (self.scenario.clone(), self.faults);
        let visit = Mutex::new(visit);
        let next = Arc::new(AtomicU64::new(0));
        let started = next.clone();
        RUNNING.with(|r| {
            *r.borrow_mut() = Some(Running {
                next: next.clone(),
                report,
                reported: false,
            })
        });
        let ran = Ran;
        // Only what is asked for: loom's own variables (LOOM_MAX_*) would
        // change what a replay line's index means.
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(self.pb);
        b.max_branches = 100_000;
        b.max_duration = None;
        b.checkpoint_file = None;
        // loom counts its iterations from 1 and stops before iteration
        // `max`, checking it every `checkpoint_interval` iterations.
        b.max_permutations = self
            .cap
            .map(|c| usize::try_from(c).unwrap_or(usize::MAX - 1) + 1);
        b.checkpoint_interval = 1;
        let result = catch_unwind(AssertUnwindSafe(|| {
            b.check(move || {
                let index = next.fetch_add(1, Ordering::SeqCst);
                // loom explores every interleaving of every thread and runs
                // in its own context: no bystanders, few threads.
                let run = Box::pin(scenarios::run_ctx::<LoomRt>(&scenario, Ctx::loom(faults)));
                let outcome = loom::future::block_on(run);
                if !(lock(&visit))(index, outcome) {
                    std::panic::panic_any(STOP);
                }
            })
        }));
        let started = started.load(Ordering::SeqCst);
        match result {
            Ok(()) => End::Ran {
                exhausted: self.cap.is_none_or(|c| started < c),
            },
            Err(payload) => match panic_message(payload.as_ref()) {
                m if m == STOP => End::Stopped,
                message => End::Panicked {
                    exec: started.saturating_sub(1),
                    message,
                    reported: ran.reported(),
                },
            },
        }
    }
}
