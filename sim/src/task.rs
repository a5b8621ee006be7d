//! Task identities, the ready set and what a task says it waits on.
//!
//! Design:
//! - A task is a `Pin<Box<dyn Future<Output = ()>>>` ([`TaskFuture`]); it
//!   need not be `Send`. Tasks live in `Vec`s indexed by [`TaskId`] (see
//!   [`crate::shared`]), so ids are dense and follow spawn order.
//! - The ready set is a bit set of task ids ([`TaskSet`]) behind an
//!   `Arc<Mutex<_>>`, shared with every waker. Iterating by ascending id
//!   makes the `ready` slice given to the scheduler deterministic. It also
//!   records which tasks finished, so waking a finished task is a no-op and
//!   waking a ready task does not duplicate it.
//! - The wakers that mark tasks ready are the context's
//!   ([`crate::context`]): a wake from inside a task is a scheduling point.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};

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
    /// unblocked ([`Unblock`](crate::Unblock)); then resumed where they stopped.
    pub(crate) blocked: TaskSet,
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
    pub(crate) fn wake(&mut self, id: TaskId) {
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
