//! The executor: [`Sim`].
//!
//! Design:
//! - One step = one of: poll the task the scheduler picks among the ready
//!   ones; or, when none is ready, fire the earliest timer (advancing virtual
//!   time); or report that everything finished; or report a stall.
//! - Every pick is recorded as an index into the ready slice (`decisions`),
//!   also when only one task was ready, so a replay just feeds the indices
//!   back. Every pick also updates the FNV-1a trace hash (step, time, chosen
//!   task, ready count, chosen index, ready ids); the full trace vector is
//!   optional ([`Sim::set_trace`]).
//! - Polls run under `catch_unwind`; a panic ends the run with
//!   [`SimError::TaskPanicked`].
//! - Hot path allocations: none per step beyond amortised growth of
//!   `decisions` (and of the trace, if enabled). The ready slice is copied
//!   into a reused buffer, each task's waker is built once at spawn.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use corosensei::CoroutineResult;

use crate::context::{enter, try_current};
use crate::coro::{self, Cmd, Done, Out, TaskYielder};
use crate::report::{
    BlockedTask, Fnv64, RunReport, SimError, StallReport, Step, TraceEntry, TracedAccess,
    UNLABELLED_WAIT,
};
use crate::scheduler::{RandomScheduler, ReplayScheduler, Scheduler};
use crate::shared::Shared;
use crate::task::{lock, TaskId};

/// The `tracing` target of the simulator's own events (a preemption).
pub const TRACE_TARGET: &str = "sim";

/// Default step limit of [`Sim::with_seed`] and [`Sim::replay`].
pub const DEFAULT_MAX_STEPS: u64 = 100_000;

/// Outcome of one internal step, without allocations.
enum Inner {
    Polled(TaskId),
    TimeAdvanced,
    Finished,
    Stalled(StallReport),
}

/// A deterministic single-threaded executor with virtual time.
///
/// See the [crate documentation](crate) for an overview and an example.
pub struct Sim {
    shared: Rc<Shared>,
    steps: u64,
    max_steps: u64,
    decisions: Vec<u32>,
    trace_on: bool,
    trace: Vec<TraceEntry>,
    hash: Fnv64,
    ready_buf: Vec<TaskId>,
    choices: Vec<TaskId>,
    last: Option<TaskId>,
    preemptions: u32,
}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("steps", &self.steps)
            .field("max_steps", &self.max_steps)
            .field("now_ms", &self.now_ms())
            .field("tasks", &self.shared.task_count())
            .field("unfinished", &self.shared.live.get())
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// A simulation driven by `scheduler`, failing with
    /// [`SimError::StepLimit`] after `max_steps` steps. The trace is on.
    pub fn new(scheduler: Box<dyn Scheduler>, max_steps: u64) -> Sim {
        Sim {
            shared: Rc::new(Shared::new(scheduler)),
            steps: 0,
            max_steps,
            // Sized for a typical scenario run, so the hot path does not
            // regrow them step by step.
            decisions: Vec::with_capacity(512),
            trace_on: true,
            trace: Vec::new(),
            hash: Fnv64::new(),
            ready_buf: Vec::with_capacity(16),
            choices: Vec::with_capacity(256),
            last: None,
            preemptions: 0,
        }
    }

    /// A simulation with a [`RandomScheduler`] seeded by `seed` and
    /// [`DEFAULT_MAX_STEPS`].
    pub fn with_seed(seed: u64) -> Sim {
        Sim::new(Box::new(RandomScheduler::new(seed)), DEFAULT_MAX_STEPS)
    }

    /// A simulation replaying recorded `decisions` (see [`ReplayScheduler`]),
    /// with [`DEFAULT_MAX_STEPS`]. `random_u64` serves seed 0's values; use
    /// [`Sim::replay_with_seed`] if the program draws random values.
    pub fn replay(decisions: Vec<u32>) -> Sim {
        Sim::new(Box::new(ReplayScheduler::new(decisions)), DEFAULT_MAX_STEPS)
    }

    /// Like [`Sim::replay`], but `random_u64` serves the same values as
    /// [`Sim::with_seed(seed)`](Sim::with_seed) did when `decisions` were
    /// recorded.
    pub fn replay_with_seed(seed: u64, decisions: Vec<u32>) -> Sim {
        Sim::new(
            Box::new(ReplayScheduler::with_seed(decisions, seed)),
            DEFAULT_MAX_STEPS,
        )
    }

    /// Changes the step limit.
    pub fn set_max_steps(&mut self, max_steps: u64) {
        self.max_steps = max_steps;
    }

    /// Untimed mode: every [`sleep`](crate::sleep) is a single scheduling
    /// point instead of a timer, so a sleeping task may resume before or
    /// after any other work (an arbitrary delay, as under loom or shuttle)
    /// and virtual time stays 0. Exhaustive search uses it: with exact
    /// virtual time most orders are ruled out by the clock, without it every
    /// order of the program's awaits is explored.
    pub fn set_untimed(&mut self, untimed: bool) {
        self.shared.untimed.set(untimed);
    }

    /// Lock granularity (the default): every scheduling point inside a poll
    /// ([`schedule_point`](crate::schedule_point): lock sections, wakes,
    /// spawns, clock reads) may suspend the task there and run another, as
    /// a preemptive multi-threaded runtime does. Off: tasks switch only
    /// where a poll returns `Pending` (await granularity).
    pub fn set_preemptive(&mut self, on: bool) {
        self.shared.preemptive.set(on);
    }

    /// Coarse points (on by default): a [`schedule_point`](crate::schedule_point)
    /// reached before the step touched anything shared is no decision.
    /// Off, every point where another task could run is one: the finer cut
    /// a preemption-bounded search was calibrated on (with coarse points a
    /// bound admits more runs, since the empty steps no longer keep their
    /// tasks asleep in sibling subtrees). Set it the same way for a run and
    /// its replay.
    pub fn set_coarse_points(&mut self, on: bool) {
        self.shared.coarse_points.set(on);
    }

    /// Turns the trace vector on or off (on by default). Decisions and the
    /// trace hash are always recorded.
    pub fn set_trace(&mut self, on: bool) {
        self.trace_on = on;
        self.shared.marks_on.set(on);
        let wanted = self.shared.scheduler.borrow().wants_footprints();
        self.shared.footprints_on.set(on || wanted);
    }

    /// Spawns a top-level task and returns its id. Works before [`Sim::run`]
    /// and between steps; inside a task use the free function
    /// [`spawn`](crate::spawn).
    pub fn spawn<F: Future<Output = ()> + 'static>(&self, name: &str, fut: F) -> TaskId {
        crate::context::spawn_into(&self.shared, name, Box::pin(fut))
    }

    /// Runs one step (see [`Step`]). Does not enforce the step limit.
    pub fn step(&mut self) -> Step {
        let _guard = enter(&self.shared);
        match self.step_inner() {
            Ok(Inner::Polled(task)) => Step::Polled {
                task,
                name: self.shared.name(task).to_string(),
            },
            Ok(Inner::TimeAdvanced) => Step::TimeAdvanced {
                now_ms: self.now_ms(),
            },
            Ok(Inner::Finished) => Step::Finished,
            Ok(Inner::Stalled(report)) => Step::Stalled(report),
            Err(SimError::TaskPanicked {
                task,
                name,
                message,
            }) => Step::Panicked {
                task,
                name,
                message,
            },
            Err(SimError::Footprint {
                task,
                name,
                message,
            }) => Step::Footprint {
                task,
                name,
                message,
            },
            Err(SimError::Stalled(report)) => Step::Stalled(report),
            Err(SimError::Abandoned { .. }) => Step::Abandoned,
            Err(SimError::StepLimit { .. }) => unreachable!("step_inner has no step limit"),
        }
    }

    /// Steps until every task finished.
    ///
    /// # Errors
    /// [`SimError::Stalled`] if unfinished tasks are all blocked with no timer
    /// pending, [`SimError::StepLimit`] after `max_steps` steps,
    /// [`SimError::TaskPanicked`] if a task panics,
    /// [`SimError::Footprint`] if a step did something its footprint does
    /// not say.
    pub fn run(&mut self) -> Result<RunReport, SimError> {
        let _guard = enter(&self.shared);
        loop {
            if self.steps >= self.max_steps && self.shared.live.get() > 0 {
                return Err(SimError::StepLimit { steps: self.steps });
            }
            match self.step_inner()? {
                Inner::Polled(_) | Inner::TimeAdvanced => {}
                Inner::Finished => break,
                Inner::Stalled(report) => return Err(SimError::Stalled(report)),
            }
        }
        self.shared.scheduler.borrow_mut().finish(self.steps);
        Ok(self.report())
    }

    /// Spawns `fut` as task `"main"`, runs until **every** task finished and
    /// returns `fut`'s output.
    ///
    /// # Errors
    /// As [`Sim::run`].
    pub fn block_on<T: 'static, F: Future<Output = T> + 'static>(
        &mut self,
        fut: F,
    ) -> Result<T, SimError> {
        let slot: Rc<RefCell<Option<T>>> = Rc::new(RefCell::new(None));
        let out = Rc::clone(&slot);
        self.spawn("main", async move {
            let value = fut.await;
            *out.borrow_mut() = Some(value);
        });
        self.run()?;
        let value = slot.borrow_mut().take();
        Ok(value.expect("lifecycle-sim: main finished without an output"))
    }

    /// A report of the run so far.
    pub fn report(&self) -> RunReport {
        RunReport {
            steps: self.steps,
            now_ms: self.now_ms(),
            tasks: self.shared.task_count(),
            decisions: self.decisions.clone(),
            trace_hash: self.trace_hash(),
            diverged_at: self.diverged_at(),
        }
    }

    /// Every scheduling decision so far: one index into the ready slice per
    /// poll.
    pub fn decisions(&self) -> &[u32] {
        &self.decisions
    }

    /// The task chosen at every decision where more than one task was ready:
    /// the run's *plan*, replayable with a
    /// [`GuidedScheduler`](crate::GuidedScheduler). Shorter than
    /// [`Sim::decisions`] and meaningful across builds that keep task ids.
    pub fn choices(&self) -> &[TaskId] {
        &self.choices
    }

    /// Preemptions so far: decisions that did not pick the task polled just
    /// before although it was still ready.
    pub fn preemptions(&self) -> u32 {
        self.preemptions
    }

    /// What object `resource` is, as its creator named it
    /// ([`name_object`](crate::name_object)); `None` if unnamed, or if
    /// names were not kept: they are kept only after
    /// [`Sim::set_trace`]`(true)`.
    pub fn object_name(&self, resource: u64) -> Option<&'static str> {
        self.shared.object_names.borrow().get(&resource).copied()
    }

    /// The trace so far (empty if turned off with [`Sim::set_trace`]).
    pub fn trace(&self) -> &[TraceEntry] {
        &self.trace
    }

    /// FNV-1a 64 over every poll so far: step, time, task, ready count,
    /// chosen index and the ready ids. Independent of [`Sim::set_trace`].
    pub fn trace_hash(&self) -> u64 {
        self.hash.finish()
    }

    /// Virtual time in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.shared.now.get()
    }

    /// Steps taken so far (polls plus time advances).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Tasks spawned so far.
    pub fn task_count(&self) -> usize {
        self.shared.task_count()
    }

    /// Tasks spawned and not yet finished.
    pub fn unfinished(&self) -> usize {
        self.shared.live.get()
    }

    /// Pending timers.
    pub fn pending_timers(&self) -> usize {
        self.shared.timers.borrow().len()
    }

    /// Where a replay diverged from its log, if it did.
    pub fn diverged_at(&self) -> Option<u64> {
        self.shared.scheduler.borrow().diverged_at()
    }

    /// One step; the thread-local context must already be installed.
    fn step_inner(&mut self) -> Result<Inner, SimError> {
        let shared = Rc::clone(&self.shared);
        if shared.live.get() == 0 {
            return Ok(Inner::Finished);
        }
        lock(&shared.ready).runnable_into(&mut self.ready_buf);
        if self.ready_buf.is_empty() {
            let fired = shared.timers.borrow_mut().pop_earliest();
            return match fired {
                Some((deadline, waker)) => {
                    if deadline > shared.now.get() {
                        shared.now.set(deadline);
                    }
                    self.steps += 1;
                    waker.wake();
                    Ok(Inner::TimeAdvanced)
                }
                None => Ok(Inner::Stalled(self.stall_report())),
            };
        }

        let step = self.steps;
        let picked = shared.scheduler.borrow_mut().pick(&self.ready_buf, step);
        let chosen = if picked < self.ready_buf.len() {
            picked
        } else {
            0
        };
        if shared.scheduler.borrow().should_stop() {
            return Err(SimError::Abandoned { steps: self.steps });
        }
        let task = self.ready_buf[chosen];
        // Only a task stopped mid-poll is preempted; one that returned
        // `Pending` (a yield) gave way voluntarily.
        let preempted = match self.last {
            Some(l) if l != task && lock(&shared.ready).midpoll.contains(&l) => Some(l),
            _ => None,
        };
        if preempted.is_some() {
            self.preemptions += 1;
        }
        if self.ready_buf.len() > 1 {
            self.choices.push(task);
        }
        self.record(step, task, chosen, preempted);
        self.steps += 1;
        self.last = Some(task);

        let resumed = {
            let mut ready = lock(&shared.ready);
            if ready.midpoll.remove(&task) {
                true
            } else {
                ready.ready.remove(&task);
                false
            }
        };
        let coro = shared
            .coros
            .borrow_mut()
            .get_mut(task)
            .and_then(Option::take);
        let mut coro = match coro {
            Some(c) => c,
            None => {
                let taken = shared
                    .tasks
                    .borrow_mut()
                    .get_mut(task)
                    .and_then(Option::take);
                let Some(fut) = taken else {
                    // A finished task cannot be ready; be defensive anyway.
                    return Ok(Inner::Polled(task));
                };
                let waker = shared.wakers.borrow()[task].clone();
                coro::start(fut, waker, task, register_yielder)
            }
        };
        if !resumed {
            if let Some(label) = shared.labels.borrow_mut().get_mut(task) {
                label.clear();
            }
        }

        shared.current.set(Some(task));
        shared.step.set(step);
        shared.awaited.set(None);
        shared.touched.set(false);
        let footprints_on = shared.footprints_on.get();
        {
            let mut fp = shared.footprint.borrow_mut();
            fp.clear();
            if self.trace_on {
                shared.awaits.borrow_mut().clear();
                shared.echoes.borrow_mut().clear();
            }
            if !resumed && footprints_on {
                // A new poll follows the wake (or spawn) that enabled it.
                fp.push(crate::resource::WAKE | task as u64);
            }
        }
        let span = self.trace_on.then(|| {
            tracing::info_span!(
                "step",
                n = step,
                t_ms = shared.now.get(),
                task = %self.shared.name(task)
            )
        });
        let entered = span.as_ref().map(|s| s.enter());
        if let (Some(l), true) = (preempted, self.trace_on) {
            tracing::info!(target: TRACE_TARGET, "preempts task {l} `{}`", self.shared.name(l));
        }
        shared.on_task_stack.set(true);
        let outcome = coro.resume(Cmd::Run);
        shared.on_task_stack.set(false);
        drop(entered);
        if !footprints_on {
            // Seeded sampling: nothing reads footprints (`wants_footprints`).
            shared.scheduler.borrow_mut().observe(task, &[]);
        } else {
            let mut fp = shared.footprint.borrow_mut();
            if self.trace_on {
                // The poll's accesses in order, before the stutter
                // rewriting and normalization below.
                let awaits = shared.awaits.borrow();
                let echoes = shared.echoes.borrow();
                let accesses = fp
                    .iter()
                    .enumerate()
                    .map(|(i, &resource)| TracedAccess {
                        resource,
                        failed_wait: awaits.contains(&i),
                        echo: echoes.contains(&i),
                    })
                    .collect();
                if let Some(entry) = self.trace.last_mut() {
                    entry.accesses = accesses;
                }
            }
            if matches!(outcome, CoroutineResult::Yield(Out::Pending))
                && !lock(&shared.ready).ready.contains(&task)
            {
                use crate::resource::{READ, STUTTER, WAKE};
                let own_wake = WAKE | task as u64;
                if crate::resource::is_stutter(&fp, task, shared.awaited.get()) {
                    fp.retain(|&e| e & READ != 0);
                    for e in fp.iter_mut() {
                        *e |= STUTTER;
                    }
                } else if fp.iter().all(|&e| e == own_wake) {
                    // Woken, touched nothing and parked again: a stutter
                    // too, on its own wake (see `resource::note_await`).
                    fp.clear();
                    fp.push(own_wake | READ | STUTTER);
                }
            }
            crate::resource::normalize(&mut fp);
            if self.trace_on {
                if let Some(entry) = self.trace.last_mut() {
                    entry.footprint.clone_from(&fp);
                }
            }
            shared.scheduler.borrow_mut().observe(task, &fp);
        }
        shared
            .scheduler
            .borrow_mut()
            .suspended(task, matches!(outcome, CoroutineResult::Yield(Out::Point)));
        let result = match outcome {
            CoroutineResult::Yield(Out::Point) => {
                lock(&shared.ready).midpoll.insert(task);
                shared.coros.borrow_mut()[task] = Some(coro);
                Ok(Inner::Polled(task))
            }
            CoroutineResult::Yield(Out::Pending) => {
                shared.coros.borrow_mut()[task] = Some(coro);
                Ok(Inner::Polled(task))
            }
            CoroutineResult::Yield(Out::Blocked) => {
                lock(&shared.ready).blocked.insert(task);
                shared.coros.borrow_mut()[task] = Some(coro);
                Ok(Inner::Polled(task))
            }
            CoroutineResult::Return(done) => {
                shared.finish(task);
                shared.yielders.borrow_mut()[task] = std::ptr::null();
                coro::recycle(coro);
                match done {
                    Done::Ready | Done::Dropped => Ok(Inner::Polled(task)),
                    Done::Panicked(payload) => Err(self.panicked(task, payload)),
                }
            }
        };
        shared.current.set(None);
        if result.is_ok() {
            if let Some(message) = shared.footprint_error.borrow_mut().take() {
                return Err(SimError::Footprint {
                    task,
                    name: self.shared.name(task).to_string(),
                    message,
                });
            }
        }
        result
    }

    /// Records one pick: decision, hash, and (optionally) the trace.
    fn record(&mut self, step: u64, task: TaskId, chosen: usize, preempted: Option<TaskId>) {
        let now = self.shared.now.get();
        let ready = self.ready_buf.len();
        self.decisions.push(chosen as u32);
        let h = &mut self.hash;
        h.write_u64(step);
        h.write_u64(now);
        h.write_u64(task as u64);
        h.write_u64(ready as u64);
        h.write_u64(chosen as u64);
        for &id in &self.ready_buf {
            h.write_u64(id as u64);
        }
        if self.trace_on {
            self.trace.push(TraceEntry {
                step,
                now_ms: now,
                task,
                name: self.shared.name(task),
                ready,
                chosen: chosen as u32,
                ready_ids: self.ready_buf.clone(),
                preempted,
                footprint: Vec::new(),
                accesses: Vec::new(),
            });
        }
    }

    fn panicked(&self, task: TaskId, payload: Box<dyn Any + Send>) -> SimError {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        };
        // The payload's own destructor could panic; don't let it escape.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
        SimError::TaskPanicked {
            task,
            name: self.shared.name(task).to_string(),
            message,
        }
    }

    fn stall_report(&self) -> StallReport {
        let finished = lock(&self.shared.ready).finished.clone();
        let names = self.shared.names.borrow();
        let labels = self.shared.labels.borrow();
        let blocked = finished
            .iter()
            .enumerate()
            .filter(|(_, done)| !**done)
            .map(|(id, _)| BlockedTask {
                id,
                name: names[id].to_string(),
                waits_on: if labels[id].label.is_empty() {
                    UNLABELLED_WAIT.to_string()
                } else {
                    labels[id].label.clone()
                },
                tag: labels[id].tag,
            })
            .collect();
        StallReport { blocked }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Keep the context installed so destructors of unfinished tasks may
        // still call the free functions; no task is current and no
        // scheduling point suspends.
        let _guard = enter(&self.shared);
        self.shared.current.set(None);
        self.shared.tearing_down.set(true);
        // Started tasks: drop their futures on their own stacks. A task
        // between polls drops its future when told to; one suspended
        // mid-poll is unwound.
        let coros = std::mem::take(&mut *self.shared.coros.borrow_mut());
        for (task, coro) in coros.into_iter().enumerate() {
            let Some(mut coro) = coro else { continue };
            let midpoll = {
                let ready = lock(&self.shared.ready);
                ready.midpoll.contains(&task) || ready.blocked.contains(&task)
            };
            self.shared.current.set(Some(task));
            let _ = catch_unwind(AssertUnwindSafe(|| {
                if midpoll {
                    coro.force_unwind();
                } else {
                    let _ = coro.resume(Cmd::Drop);
                }
            }));
            self.shared.current.set(None);
            if coro.done() {
                coro::recycle(coro);
            } else {
                // Could not be unwound: leak it rather than run its frames.
                std::mem::forget(coro);
            }
        }
        // Destructors may spawn; whatever they spawn is dropped in the next
        // round. Bounded in case destructors keep spawning forever.
        for _ in 0..1_000 {
            let tasks = std::mem::take(&mut *self.shared.tasks.borrow_mut());
            if tasks.is_empty() {
                break;
            }
            for fut in tasks.into_iter().flatten() {
                let _ = catch_unwind(AssertUnwindSafe(move || drop(fut)));
            }
        }
        let timers = self.shared.timers.borrow_mut().take_all();
        drop(timers);
    }
}

/// Records a task's yielder when its coroutine first runs.
fn register_yielder(task: TaskId, yielder: *const TaskYielder) {
    if let Some(shared) = try_current() {
        if let Some(slot) = shared.yielders.borrow_mut().get_mut(task) {
            *slot = yielder;
        }
    }
}
