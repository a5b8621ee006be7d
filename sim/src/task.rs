//! Task storage, the ready set and wakers.
//!
//! Design:
//! - A task is a `Pin<Box<dyn Future<Output = ()>>>`; it need not be `Send`.
//!   Tasks live in a `Vec` indexed by [`TaskId`], so ids are dense and follow
//!   spawn order.
//! - The executor takes a task's future *out* of its slot while polling it and
//!   puts it back afterwards. No `RefCell` borrow is held across a poll, so a
//!   task may spawn other tasks (which pushes new slots) while it runs.
//! - The ready set is a bit set of task ids ([`TaskSet`]) behind an
//!   `Arc<Mutex<_>>`, shared with every waker. Iterating by ascending id
//!   makes the `ready` slice given to the scheduler deterministic. It also records which tasks finished, so waking
//!   a finished task is a no-op and waking a ready task does not duplicate it.
//! - Each task owns one [`Waker`], built once at spawn time from an
//!   `Arc<TaskWaker>` through [`std::task::Wake`], and reused for every poll:
//!   polling allocates nothing. Wakers are `Send + Sync`; waking from another
//!   thread only marks the task ready.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Wake, Waker};

use crate::coro::{Coro, TaskYielder};
use crate::scheduler::Scheduler;
use crate::time::Timers;

/// Identifies a task: dense, in spawn order, `0` is the first task spawned.
pub type TaskId = usize;

/// A spawned task's future.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = ()>>>;

/// A set of task ids as a bit set: ids are dense, so membership, insert and
/// remove are one word operation and iteration is ascending by id.
#[derive(Default, Clone, Debug)]
pub(crate) struct TaskSet {
    words: Vec<u64>,
    len: usize,
}

impl TaskSet {
    /// Whether `id` is in the set.
    pub(crate) fn contains(&self, id: &TaskId) -> bool {
        self.words
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// Adds `id`; returns whether it was absent.
    pub(crate) fn insert(&mut self, id: TaskId) -> bool {
        let (w, bit) = (id / 64, 1u64 << (id % 64));
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.len += usize::from(fresh);
        fresh
    }

    /// Removes `id`; returns whether it was present.
    pub(crate) fn remove(&mut self, id: &TaskId) -> bool {
        let (w, bit) = (id / 64, 1u64 << (id % 64));
        let Some(word) = self.words.get_mut(w) else {
            return false;
        };
        let present = *word & bit != 0;
        *word &= !bit;
        self.len -= usize::from(present);
        present
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Which tasks are ready to be polled, and which have finished.
#[derive(Default)]
pub(crate) struct ReadySet {
    /// Ready tasks.
    pub(crate) ready: TaskSet,
    /// `finished[id]` is true once task `id` completed (or panicked).
    pub(crate) finished: Vec<bool>,
    /// Tasks suspended at a scheduling point inside a poll: runnable, and
    /// resumed where they stopped (see `coro`).
    pub(crate) midpoll: TaskSet,
    /// Tasks blocked inside a poll (`block_mid_poll`): not runnable, even
    /// if woken meanwhile (the wake is kept for after the poll), until
    /// unblocked ([`Unblock`]); then resumed where they stopped.
    pub(crate) blocked: TaskSet,
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
        crate::context::before_wake(self.id);
        let mut ready = lock(&self.ready);
        if ready.blocked.remove(&self.id) {
            ready.midpoll.insert(self.id);
        }
    }
}

impl ReadySet {
    /// Whether a task other than `me` could run now.
    pub(crate) fn others_runnable(&self, me: TaskId) -> bool {
        !self.midpoll.is_empty()
            || self.ready.len > 1
            || (!self.ready.contains(&me) && !self.ready.is_empty())
    }

    /// The runnable tasks (woken or mid-poll), ascending, into `out`.
    pub(crate) fn runnable_into(&self, out: &mut Vec<TaskId>) {
        out.clear();
        let n = self.ready.words.len().max(self.midpoll.words.len());
        for i in 0..n {
            let word = (self.ready.words.get(i).copied().unwrap_or(0)
                & !self.blocked.words.get(i).copied().unwrap_or(0))
                | self.midpoll.words.get(i).copied().unwrap_or(0);
            let mut rest = word;
            while rest != 0 {
                out.push(i * 64 + rest.trailing_zeros() as usize);
                rest &= rest - 1;
            }
        }
    }
}

impl ReadySet {
    /// Marks `id` ready unless it is unknown or finished.
    fn wake(&mut self, id: TaskId) {
        if matches!(self.finished.get(id), Some(false)) {
            self.ready.insert(id);
        }
    }
}

/// Locks the ready set, ignoring poisoning (the data stays consistent: every
/// critical section is a single insert/remove).
pub(crate) fn lock(ready: &Mutex<ReadySet>) -> MutexGuard<'_, ReadySet> {
    ready.lock().unwrap_or_else(PoisonError::into_inner)
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
        // task's next poll after this one (see `context::before_wake`).
        crate::context::before_wake(self.id);
        lock(&self.ready).wake(self.id);
    }
}

/// What a task said it waits on: a label (empty: nothing said) and the
/// caller's tag, cleared each time the task is polled again.
#[derive(Default)]
pub(crate) struct WaitNote {
    pub(crate) label: String,
    pub(crate) tag: Option<u32>,
}

impl WaitNote {
    /// Says `label` (reusing the buffer: no allocation once warmed up).
    pub(crate) fn set(&mut self, label: &str, tag: Option<u32>) {
        self.label.clear();
        self.label.push_str(label);
        self.tag = tag;
    }

    /// Says nothing.
    pub(crate) fn clear(&mut self) {
        self.label.clear();
        self.tag = None;
    }
}

/// State shared between the [`Sim`](crate::Sim) and the free functions that
/// tasks call (through the thread-local context).
pub(crate) struct Shared {
    /// Ready set, shared with the wakers.
    pub(crate) ready: Arc<Mutex<ReadySet>>,
    /// Task futures; `None` while being polled or once finished.
    pub(crate) tasks: RefCell<Vec<Option<TaskFuture>>>,
    /// Task names, by id.
    pub(crate) names: RefCell<Vec<Rc<str>>>,
    /// One waker per task, by id.
    pub(crate) wakers: RefCell<Vec<Waker>>,
    /// What each task said it waits on (`note_wait`, `note_wait_tagged`).
    pub(crate) labels: RefCell<Vec<WaitNote>>,
    /// Number of spawned tasks that have not finished.
    pub(crate) live: Cell<usize>,
    /// The task being polled, if any.
    pub(crate) current: Cell<Option<TaskId>>,
    /// Virtual time, milliseconds.
    pub(crate) now: Cell<u64>,
    /// Pending timers.
    pub(crate) timers: RefCell<Timers>,
    /// The scheduler (also the source of `random_u64`).
    pub(crate) scheduler: RefCell<Box<dyn Scheduler>>,
    /// Resources touched by the current poll (see `resource`).
    pub(crate) footprint: RefCell<Vec<u64>>,
    /// Whether footprints are kept: for a scheduler that reads them
    /// ([`Scheduler::wants_footprints`]) or a traced run. Off, `touch`
    /// and the executor's per-poll bookkeeping do nothing (seeded
    /// sampling needs none of it).
    pub(crate) footprints_on: Cell<bool>,
    /// Whether the running step has touched an object (see
    /// [`touch`](crate::touch)), recorded even where footprints are not.
    pub(crate) touched: Cell<bool>,
    /// Whether a scheduling point before any access is skipped (see
    /// [`Sim::set_coarse_points`](crate::Sim::set_coarse_points)).
    pub(crate) coarse_points: Cell<bool>,
    /// The object the current poll's failed check read (`note_await`).
    pub(crate) awaited: Cell<Option<u64>>,
    /// Where in the running poll's footprint (before it is normalized)
    /// each failed wait is (the read of [`note_await`](crate::note_await),
    /// the attempt before [`block_mid_poll`](crate::block_mid_poll)):
    /// kept for the trace's [`TracedAccess`](crate::TracedAccess)es, in a
    /// traced run only.
    pub(crate) awaits: RefCell<Vec<usize>>,
    /// Whether the marks above are kept: a traced run only (nothing else
    /// reads them).
    pub(crate) marks_on: Cell<bool>,
    /// Where in the same footprint each access the task made inside its
    /// own lock section on the object, after the section's first access
    /// to it, is: kept for the trace, as [`TracedAccess::echo`](crate::TracedAccess::echo).
    pub(crate) echoes: RefCell<Vec<usize>>,
    /// Objects created so far, by creating task.
    pub(crate) created: RefCell<Vec<u32>>,
    /// Objects created outside any task.
    pub(crate) created_outside: Cell<u32>,
    /// What each object is (its creator's word for it, see
    /// [`name_object`](crate::name_object)): kept in a traced run only.
    pub(crate) object_names: RefCell<std::collections::BTreeMap<u64, &'static str>>,
    /// The executor's step counter at the current poll.
    pub(crate) step: Cell<u64>,
    /// Untimed mode: a sleep is one yield (an arbitrary delay).
    pub(crate) untimed: Cell<bool>,
    /// Started tasks' coroutines, by id; `None` while resumed, before the
    /// first poll and once finished.
    pub(crate) coros: RefCell<Vec<Option<Coro>>>,
    /// Each started task's yielder (valid while its coroutine lives).
    pub(crate) yielders: RefCell<Vec<*const TaskYielder>>,
    /// Depth of atomic sections of the running task: no scheduling point
    /// inside one (a lock section is atomic to other tasks).
    pub(crate) atomic: Cell<u32>,
    /// Whether scheduling points inside polls suspend the task (lock
    /// granularity) or are ignored (await granularity).
    pub(crate) preemptive: Cell<bool>,
    /// The run is being torn down: scheduling points do nothing.
    pub(crate) tearing_down: Cell<bool>,
    /// Whether the code running now is on the current task's coroutine
    /// stack (the executor's own code between resumes is not, even while
    /// `current` names the task).
    pub(crate) on_task_stack: Cell<bool>,
    /// Lock sections open now, `(task, object, touched)`: each must report
    /// an access to its object before it ends (see
    /// [`section_begin`](crate::section_begin)).
    pub(crate) sections: RefCell<Vec<(TaskId, u64, bool)>>,
    /// The first footprint error of the run (see
    /// [`footprint_error`](crate::footprint_error)): the executor ends the
    /// run with it after the poll that made it.
    pub(crate) footprint_error: RefCell<Option<String>>,
}

impl Shared {
    /// Creates empty state around `scheduler`.
    pub(crate) fn new(scheduler: Box<dyn Scheduler>) -> Shared {
        Shared {
            ready: Arc::new(Mutex::new(ReadySet::default())),
            tasks: RefCell::new(Vec::new()),
            names: RefCell::new(Vec::new()),
            wakers: RefCell::new(Vec::new()),
            labels: RefCell::new(Vec::new()),
            live: Cell::new(0),
            current: Cell::new(None),
            now: Cell::new(0),
            timers: RefCell::new(Timers::default()),
            scheduler: RefCell::new(scheduler),
            footprint: RefCell::new(Vec::with_capacity(32)),
            footprints_on: Cell::new(true),
            touched: Cell::new(false),
            coarse_points: Cell::new(true),
            awaited: Cell::new(None),
            awaits: RefCell::new(Vec::new()),
            marks_on: Cell::new(false),
            echoes: RefCell::new(Vec::new()),
            created: RefCell::new(Vec::new()),
            created_outside: Cell::new(0),
            object_names: RefCell::new(std::collections::BTreeMap::new()),
            step: Cell::new(0),
            untimed: Cell::new(false),
            coros: RefCell::new(Vec::new()),
            yielders: RefCell::new(Vec::new()),
            atomic: Cell::new(0),
            preemptive: Cell::new(true),
            tearing_down: Cell::new(false),
            on_task_stack: Cell::new(false),
            sections: RefCell::new(Vec::with_capacity(4)),
            footprint_error: RefCell::new(None),
        }
    }

    /// Registers a new task, ready to run, and returns its id.
    pub(crate) fn spawn(&self, name: &str, fut: TaskFuture) -> TaskId {
        // Task ids follow spawn order: spawns never commute.
        if self.current.get().is_some() {
            crate::context::schedule_point();
            self.footprint.borrow_mut().push(crate::resource::SPAWN);
        }
        let id = {
            let mut ready = lock(&self.ready);
            let id = ready.finished.len();
            ready.finished.push(false);
            ready.ready.insert(id);
            id
        };
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            ready: Arc::clone(&self.ready),
        }));
        self.tasks.borrow_mut().push(Some(fut));
        self.names.borrow_mut().push(Rc::from(name));
        self.wakers.borrow_mut().push(waker);
        self.labels.borrow_mut().push(WaitNote::default());
        self.coros.borrow_mut().push(None);
        self.yielders.borrow_mut().push(std::ptr::null());
        if self.current.get().is_some() {
            // The spawn enables the new task: its first poll comes after.
            self.footprint
                .borrow_mut()
                .push(crate::resource::WAKE | id as u64);
        }
        self.live.set(self.live.get() + 1);
        id
    }

    /// Marks `id` finished: it leaves the ready set and later wakes are no-ops.
    pub(crate) fn finish(&self, id: TaskId) {
        {
            let mut ready = lock(&self.ready);
            if let Some(done) = ready.finished.get_mut(id) {
                if *done {
                    return;
                }
                *done = true;
            }
            ready.ready.remove(&id);
            ready.midpoll.remove(&id);
        }
        if let Some(label) = self.labels.borrow_mut().get_mut(id) {
            label.clear();
        }
        self.live.set(self.live.get().saturating_sub(1));
    }

    /// Number of tasks ever spawned.
    pub(crate) fn task_count(&self) -> usize {
        lock(&self.ready).finished.len()
    }

    /// The name of task `id` (empty if unknown).
    pub(crate) fn name(&self, id: TaskId) -> Rc<str> {
        self.names
            .borrow()
            .get(id)
            .cloned()
            .unwrap_or_else(|| Rc::from(""))
    }
}
