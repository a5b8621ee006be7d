//! The executor's state, shared between the [`Sim`](crate::Sim) and the
//! free functions that tasks call (found through the thread-local context,
//! [`crate::context`]): tasks and their coroutines, the ready set, the
//! clock and its timers, the scheduler, and the running poll's footprint
//! and marks. Plain data: spawning, waking and scheduling points are the
//! context's.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::Waker;

use crate::coro::{Coro, TaskYielder};
use crate::scheduler::Scheduler;
use crate::task::{lock, ReadySet, TaskFuture, TaskId, WaitNote};
use crate::timers::Timers;

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
