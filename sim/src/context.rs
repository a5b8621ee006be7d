//! The thread-local "current simulation" and the free functions tasks call.
//!
//! Design:
//! - A thread-local slot holds an `Rc` to the running simulation's shared
//!   state. [`Sim::run`](crate::Sim::run), [`Sim::step`](crate::Sim::step)
//!   and `Sim`'s destructor install it with a guard that restores the previous
//!   value when dropped, including during a panic, so sequential simulations
//!   on one thread never see each other.
//! - Free functions that need the executor ([`spawn`], [`now_ms`],
//!   [`random_u64`], [`sleep`](crate::sleep)) panic with
//!   `"lifecycle-sim: no simulation is running on this thread"` when called
//!   outside one. Functions that only observe or annotate degrade instead:
//!   [`is_running`] returns false, [`current_task`] returns `None`,
//!   [`note_wait`] does nothing. [`yield_now`] needs no executor at all.
//! - Spawning ([`spawn`]) and waking (every task's [`Waker`], and
//!   [`Unblock`] for a task blocked inside its poll) live here too: from
//!   inside a task, each is a scheduling point of the caller's, and orders
//!   the woken task's next poll after it.
//! - While a `Sim` is dropped, the context stays installed (with no current
//!   task), so destructors of unfinished tasks may still call these
//!   functions; whatever they spawn is dropped too.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crate::shared::Shared;
use crate::task::{lock, ReadySet, TaskFuture, TaskId, WaitNote};

/// The panic message of free functions called outside a simulation.
pub(crate) const NO_SIM: &str = "lifecycle-sim: no simulation is running on this thread";

thread_local! {
    static CURRENT: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
}

/// Restores the previously installed simulation when dropped.
pub(crate) struct EnterGuard {
    prev: Option<Rc<Shared>>,
}

/// Installs `shared` as this thread's current simulation until the guard
/// drops.
pub(crate) fn enter(shared: &Rc<Shared>) -> EnterGuard {
    let prev = CURRENT
        .try_with(|c| c.replace(Some(Rc::clone(shared))))
        .ok()
        .flatten();
    EnterGuard { prev }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        // The replaced value is dropped after the borrow ends.
        let ours = CURRENT.try_with(|c| c.replace(prev)).ok().flatten();
        drop(ours);
    }
}

/// The running simulation, if any.
pub(crate) fn try_current() -> Option<Rc<Shared>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// The running simulation.
///
/// # Panics
/// If none is running on this thread.
pub(crate) fn current() -> Rc<Shared> {
    match try_current() {
        Some(shared) => shared,
        None => panic!("{NO_SIM}"),
    }
}

/// Spawns a task in the running simulation and returns its id. The task is
/// ready immediately; it first runs when the scheduler picks it.
///
/// # Panics
/// If no simulation is running on this thread.
pub fn spawn<F: Future<Output = ()> + 'static>(name: &str, fut: F) -> TaskId {
    spawn_into(&current(), name, Box::pin(fut))
}

/// Registers a new task in `shared`, ready to run, and returns its id.
/// From inside a task, a spawn is a scheduling point and touches
/// [`SPAWN`](crate::resource::SPAWN) and the new task's
/// [`WAKE`](crate::resource::WAKE) resource.
pub(crate) fn spawn_into(shared: &Shared, name: &str, fut: TaskFuture) -> TaskId {
    // Task ids follow spawn order: spawns never commute.
    if shared.current.get().is_some() {
        schedule_point();
        shared.footprint.borrow_mut().push(crate::resource::SPAWN);
    }
    let id = {
        let mut ready = lock(&shared.ready);
        let id = ready.finished.len();
        ready.finished.push(false);
        ready.ready.insert(id);
        id
    };
    let waker = Waker::from(Arc::new(TaskWaker {
        id,
        ready: Arc::clone(&shared.ready),
    }));
    shared.tasks.borrow_mut().push(Some(fut));
    shared.names.borrow_mut().push(Rc::from(name));
    shared.wakers.borrow_mut().push(waker);
    shared.labels.borrow_mut().push(WaitNote::default());
    shared.coros.borrow_mut().push(None);
    shared.yielders.borrow_mut().push(std::ptr::null());
    if shared.current.get().is_some() {
        // The spawn enables the new task: its first poll comes after.
        shared
            .footprint
            .borrow_mut()
            .push(crate::resource::WAKE | id as u64);
    }
    shared.live.set(shared.live.get() + 1);
    id
}

/// Virtual time of the running simulation, in milliseconds. A clock read
/// is a scheduling point.
///
/// # Panics
/// If no simulation is running on this thread.
pub fn now_ms() -> u64 {
    schedule_point();
    current().now.get()
}

/// Virtual time without a scheduling point, for observers that must not
/// change the schedule (log formatters, traces); `None` outside a
/// simulation.
pub fn peek_now_ms() -> Option<u64> {
    try_current().map(|s| s.now.get())
}

/// A scheduling point inside a poll: if another task could run now, the
/// running task is suspended here (on its own stack, mid-poll) and the
/// scheduler decides who goes next; the task later resumes right here.
///
/// Does nothing outside a task, inside [`atomic`], while the run is torn
/// down, in await-granularity mode ([`Sim::set_preemptive`]), or when no
/// other task is runnable (a decision with one choice is no decision).
/// With coarse points (the default, see
/// [`Sim::set_coarse_points`](crate::Sim::set_coarse_points)) it also does
/// nothing while the step has touched nothing shared since
/// the decision that chose the task (no [`touch`](crate::touch), spawn,
/// wake of another task or random draw; the same whether or not
/// footprints are recorded, so a replay with a trace makes the same
/// decisions): switching there
/// reaches only what that decision's other alternatives reach, so it is
/// no new decision, and a woken task's poll is not cut into an empty
/// step and the rest.
///
/// Put one before every access to shared state (a lock section, a wake, a
/// clock read): that is where a preemptive runtime may switch threads.
///
/// [`Sim::set_preemptive`]: crate::Sim::set_preemptive
pub fn schedule_point() {
    let Some(shared) = try_current() else {
        return;
    };
    let Some(task) = shared.current.get() else {
        return;
    };
    if shared.atomic.get() > 0
        || !shared.preemptive.get()
        || shared.tearing_down.get()
        || !shared.on_task_stack.get()
    {
        return;
    }
    if !lock(&shared.ready).others_runnable(task) {
        return;
    }
    if shared.coarse_points.get()
        && !shared.touched.get()
        && untouched(&shared.footprint.borrow(), task)
    {
        // Nothing shared was touched since the decision that chose this
        // task: switching here reaches what that decision's other
        // alternatives reach, so it is no new decision.
        return;
    }
    let Some(yielder) = yielder_of(&shared, task) else {
        return;
    };
    drop(shared);
    // SAFETY: the yielder lives on this task's coroutine stack, which is the
    // stack we are running on; it stays valid while the coroutine lives.
    let yielder = unsafe { &*yielder };
    let _ = yielder.suspend(crate::coro::Out::Point);
}

/// Whether a step's footprint so far holds nothing but the wake that
/// enabled `task` (see [`WAKE`](crate::resource::WAKE)).
fn untouched(footprint: &[u64], task: TaskId) -> bool {
    footprint
        .iter()
        .all(|&r| r == crate::resource::WAKE | task as u64)
}

/// A scheduling point before taking a lock, also inside an enclosing
/// [`atomic`] section: a task holding one lock may be preempted before it
/// takes the next (a nested lock section), as on a preemptive runtime.
/// The enclosing section's depth belongs to this task and is restored when
/// it resumes. Does nothing where [`schedule_point`] would, other than
/// inside `atomic`.
pub fn lock_point() {
    let Some(shared) = try_current() else {
        return;
    };
    let depth = shared.atomic.replace(0);
    drop(shared);
    schedule_point();
    if let Some(shared) = try_current() {
        shared.atomic.set(depth);
    }
}

/// The running task's id, if a task is running (no allocation, unlike
/// [`current_task`]).
pub fn current_task_id() -> Option<TaskId> {
    try_current()?.current.get()
}

/// Blocks the running task inside its poll (on a lock another task holds):
/// `register` gets its [`Unblock`]; the task is not
/// runnable until that is called (a wake meanwhile is kept for after the
/// poll), and then resumes right here. Returns `false`, without blocking,
/// where a task cannot suspend (outside a task, during teardown, off the
/// task's stack): the caller must not wait then.
///
/// `object` is the lock's: when the task's last access is to it (the
/// attempt that found the lock taken), that access is a failed wait in
/// the trace ([`TracedAccess::failed_wait`](crate::TracedAccess::failed_wait)):
/// the task makes it again once unblocked.
pub fn block_mid_poll(object: u64, register: impl FnOnce(Unblock)) -> bool {
    let Some(shared) = try_current() else {
        return false;
    };
    let Some(task) = shared.current.get() else {
        return false;
    };
    if shared.tearing_down.get() || !shared.on_task_stack.get() {
        return false;
    }
    let Some(yielder) = yielder_of(&shared, task) else {
        return false;
    };
    if shared.marks_on.get() {
        let footprint = shared.footprint.borrow();
        if footprint
            .last()
            .is_some_and(|&e| e != 0 && crate::resource::base(e) == object)
        {
            shared.awaits.borrow_mut().push(footprint.len() - 1);
        }
    }
    register(Unblock::new(Arc::clone(&shared.ready), task));
    let depth = shared.atomic.replace(0);
    drop(shared);
    // SAFETY: as in `schedule_point`: the yielder lives on this task's
    // coroutine stack, the stack we are running on.
    let yielder = unsafe { &*yielder };
    let _ = yielder.suspend(crate::coro::Out::Blocked);
    if let Some(shared) = try_current() {
        shared.atomic.set(depth);
    }
    true
}

/// The yielder of started task `task`, if its coroutine runs.
fn yielder_of(shared: &Shared, task: TaskId) -> Option<*const crate::coro::TaskYielder> {
    let yielder = shared.yielders.borrow().get(task).copied()?;
    (!yielder.is_null()).then_some(yielder)
}

/// Runs `f` with no scheduling point inside it: to other tasks it happens at
/// once (a lock section). Nested scheduling points are ignored.
pub fn atomic<O>(f: impl FnOnce() -> O) -> O {
    struct Exit(Option<Rc<Shared>>);
    impl Drop for Exit {
        fn drop(&mut self) {
            if let Some(shared) = &self.0 {
                shared.atomic.set(shared.atomic.get().saturating_sub(1));
            }
        }
    }
    let shared = try_current();
    if let Some(s) = &shared {
        s.atomic.set(s.atomic.get() + 1);
    }
    let _exit = Exit(shared);
    f()
}

/// Called by a task's waker before it marks the task ready: waking another
/// task from inside a task is a scheduling point, and both the waker's step
/// and the woken task's next poll touch the woken task's
/// [`WAKE`](crate::resource::WAKE) resource.
pub(crate) fn before_wake(target: TaskId) {
    let Some(shared) = try_current() else {
        return;
    };
    let Some(me) = shared.current.get() else {
        return;
    };
    if me == target {
        return;
    }
    drop(shared);
    schedule_point();
    if let Some(shared) = try_current() {
        if shared.current.get().is_some() {
            shared
                .footprint
                .borrow_mut()
                .push(crate::resource::WAKE | target as u64 | crate::resource::READ);
        }
    }
}

/// Makes a task blocked inside its poll runnable again, resumed where it
/// stopped (see `block_mid_poll`). Sendable: a lock keeps it until its
/// release.
pub struct Unblock {
    ready: Arc<Mutex<ReadySet>>,
    id: TaskId,
}

impl Unblock {
    pub(crate) fn new(ready: Arc<Mutex<ReadySet>>, id: TaskId) -> Unblock {
        Unblock { ready, id }
    }

    /// Unblocks the task; it runs next when the scheduler picks it. Like a
    /// wake, a scheduling point of the caller's, and ordered before the
    /// task's next step.
    pub fn unblock(self) {
        before_wake(self.id);
        let mut ready = lock(&self.ready);
        if ready.blocked.remove(&self.id) {
            ready.midpoll.insert(self.id);
        }
    }
}

/// The waker behind every task's [`Waker`].
struct TaskWaker {
    id: TaskId,
    ready: Arc<Mutex<ReadySet>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Waking another task is a scheduling point, and orders the woken
        // task's next poll after this one (see [`before_wake`]).
        before_wake(self.id);
        lock(&self.ready).wake(self.id);
    }
}

/// A deterministic random `u64` from the scheduler's value stream (see
/// [`Scheduler::next_u64`](crate::Scheduler::next_u64)). Use it for
/// application-level choices such as fault injection.
///
/// # Panics
/// If no simulation is running on this thread.
pub fn random_u64() -> u64 {
    let shared = current();
    if shared.current.get().is_some() {
        shared.footprint.borrow_mut().push(crate::resource::RANDOM);
    }
    let mut scheduler = shared.scheduler.borrow_mut();
    scheduler.next_u64()
}

/// The executor's step counter at the current poll (`None` outside a
/// task); it matches [`TraceEntry::step`](crate::TraceEntry::step).
pub fn current_step() -> Option<u64> {
    let shared = try_current()?;
    shared.current.get()?;
    Some(shared.step.get())
}

/// Whether a simulation is running (or being torn down) on this thread.
pub fn is_running() -> bool {
    try_current().is_some()
}

/// Whether a task may be spawned now: a simulation is running on this
/// thread and is not being torn down (a destructor that runs while the
/// simulator drops its unfinished tasks must not start new work).
pub fn can_spawn() -> bool {
    try_current().is_some_and(|s| !s.tearing_down.get())
}

/// The id and name of the task being polled, or `None` outside a task.
pub fn current_task() -> Option<(TaskId, String)> {
    let shared = try_current()?;
    let id = shared.current.get()?;
    Some((id, shared.name(id).to_string()))
}

/// Labels what the current task is about to wait on. If the run stalls while
/// the task is still blocked, the label appears in the
/// [`StallReport`](crate::StallReport). The label is cleared each time the
/// task is polled again, so call this right before the `.await` that may
/// block. Does nothing outside a task.
pub fn note_wait(what: &str) {
    note(what, None);
}

/// [`note_wait`] with a tag: a number of the caller's own that the
/// [`StallReport`](crate::StallReport) carries with the label
/// ([`BlockedTask::tag`](crate::BlockedTask::tag)), so a stall can be
/// classified (by the rule its wait breaks, say) without reading the label
/// back as text.
pub fn note_wait_tagged(what: &str, tag: u32) {
    note(what, Some(tag));
}

fn note(what: &str, tag: Option<u32>) {
    let Some(shared) = try_current() else {
        return;
    };
    let Some(id) = shared.current.get() else {
        return;
    };
    if let Some(note) = shared.labels.borrow_mut().get_mut(id) {
        note.set(what, tag);
    };
}

/// Yields to the scheduler once: the returned future is `Pending` on its first
/// poll (after waking its own task), then `Ready`. Every `yield_now().await`
/// is a scheduling point where another ready task may run. Works under any
/// executor.
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// Future returned by [`yield_now`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            Poll::Ready(())
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}
