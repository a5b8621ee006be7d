//! Resources and footprints: what each poll touches, for partial-order
//! reduction.
//!
//! Design:
//! - A *resource* is a `u64` naming a piece of shared state. The application
//!   names its shared objects with [`new_object`] (once, when the object is
//!   created) and reports each access with [`touch`]. The executor adds its own
//!   shared state: spawning (task ids are handed out in spawn order), the
//!   random value stream, and timers with one deadline (equal deadlines fire
//!   in registration order).
//! - A poll's *footprint* is the sorted, deduplicated set of resources it
//!   touched. Two polls of different tasks are *independent* when their
//!   footprints are disjoint: running them in either order reaches the same
//!   state. Every access counts as a write (conservative).
//! - Object ids must mean the same object in every execution that shares a
//!   prefix, and in executions that differ only by swapping independent
//!   polls. A global counter would not do (swapping two creations would swap
//!   their ids), so an object id is `(creating task, n-th object that task
//!   created)`. Task ids are stable because every spawn touches [`SPAWN`].
//!
//! Nothing here affects a run: footprints are only read by schedulers that
//! ask for them ([`Scheduler::observe`](crate::Scheduler::observe)) and by
//! the trace.

use crate::context::try_current;

/// Spawning a task (task ids are dense, in spawn order).
pub const SPAWN: u64 = 1 << 60;
/// Drawing from the random value stream.
pub const RANDOM: u64 = 2 << 60;
/// Registering a timer; the low bits hold the deadline.
pub const TIMER: u64 = 3 << 60;
/// An application object; the low bits hold `(creator << 32) | n`.
pub const OBJECT: u64 = 4 << 60;
/// Enabling a task (a wake or its spawn); the low bits hold the task id.
/// The woken task's next poll touches it too, so the happens-before order
/// the search derives from footprints includes "woken before it runs".
pub const WAKE: u64 = 5 << 60;
const KIND: u64 = 0xF << 60;
const LOW: u64 = !KIND;
/// Creator id used for objects created outside any task.
const OUTSIDE: u64 = 0xFF_FFFF;

/// Names a new shared object and returns its resource id. Outside a
/// simulation it returns 0 (and [`touch`] of 0 does nothing).
pub fn new_object() -> u64 {
    let Some(shared) = try_current() else {
        return 0;
    };
    let creator = shared.current.get();
    let n = {
        let mut counters = shared.created.borrow_mut();
        match creator {
            Some(task) => {
                if counters.len() <= task {
                    counters.resize(task + 1, 0);
                }
                let n = counters[task];
                counters[task] += 1;
                n
            }
            None => {
                let n = shared.created_outside.get();
                shared.created_outside.set(n + 1);
                n
            }
        }
    };
    let creator = creator.map_or(OUTSIDE, |t| (t as u64) & OUTSIDE);
    OBJECT | ((creator << 32) & LOW) | u64::from(n)
}

/// Reports that the running task accessed `resource` (see [`new_object`]).
/// Does nothing outside a task, or for resource 0.
pub fn touch(resource: u64) {
    if resource == 0 {
        return;
    }
    let Some(shared) = try_current() else {
        return;
    };
    if shared.current.get().is_some() {
        shared.footprint.borrow_mut().push(resource);
    }
}

/// Whether two footprints (sorted, deduplicated) share no resource.
pub fn independent(a: &[u64], b: &[u64]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return false,
        }
    }
    true
}

/// A resource id in words, for traces: `spawn`, `random`, `timer@40ms`,
/// `obj 3.1` (the second object created by task 3).
pub fn describe(resource: u64) -> String {
    let low = resource & LOW;
    match resource & KIND {
        SPAWN => "spawn".to_string(),
        RANDOM => "random".to_string(),
        TIMER => format!("timer@{low}ms"),
        WAKE => format!("wake {low}"),
        OBJECT => {
            let creator = low >> 32;
            let n = low & 0xFFFF_FFFF;
            if creator == OUTSIDE {
                format!("obj -.{n}")
            } else {
                format!("obj {creator}.{n}")
            }
        }
        _ => format!("res {resource:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independence_is_disjointness() {
        assert!(independent(&[1, 3, 5], &[2, 4, 6]));
        assert!(!independent(&[1, 3, 5], &[5]));
        assert!(independent(&[], &[1]));
    }

    #[test]
    fn describe_names_kinds() {
        assert_eq!(describe(SPAWN), "spawn");
        assert_eq!(describe(TIMER | 40), "timer@40ms");
        assert_eq!(describe(OBJECT | (3 << 32) | 1), "obj 3.1");
    }
}
