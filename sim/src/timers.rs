//! Pending timers: a map keyed by `(deadline, registration sequence)`, so
//! timers with equal deadlines fire in registration order. The executor
//! pops the earliest when no task is ready (see [`crate::time`]).

use std::collections::BTreeMap;
use std::task::Waker;

/// Key of a pending timer: `(deadline_ms, registration sequence)`.
pub(crate) type TimerKey = (u64, u64);

/// Pending timers, ordered by deadline then registration.
#[derive(Default)]
pub(crate) struct Timers {
    map: BTreeMap<TimerKey, Waker>,
    next_seq: u64,
}

impl Timers {
    /// Registers a timer and returns its key.
    pub(crate) fn insert(&mut self, deadline: u64, waker: Waker) -> TimerKey {
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.map.insert(key, waker);
        key
    }

    /// Replaces the waker stored for `key`, if the timer is still pending.
    /// Returns false if the timer is gone (already fired).
    pub(crate) fn refresh(&mut self, key: TimerKey, waker: &Waker) -> bool {
        match self.map.get_mut(&key) {
            Some(stored) => {
                if !stored.will_wake(waker) {
                    stored.clone_from(waker);
                }
                true
            }
            None => false,
        }
    }

    /// Removes a timer; returns its waker so the caller can drop it outside
    /// any borrow.
    pub(crate) fn remove(&mut self, key: TimerKey) -> Option<Waker> {
        self.map.remove(&key)
    }

    /// Removes and returns the earliest timer.
    pub(crate) fn pop_earliest(&mut self) -> Option<(u64, Waker)> {
        self.map
            .pop_first()
            .map(|((deadline, _), waker)| (deadline, waker))
    }

    /// Number of pending timers.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Removes every timer, returning them so they drop outside the borrow.
    pub(crate) fn take_all(&mut self) -> BTreeMap<TimerKey, Waker> {
        std::mem::take(&mut self.map)
    }
}
