//! Resources and footprints: what each poll touches, for partial-order
//! reduction.
//!
//! Design:
//! - A *resource* is a `u64` naming a piece of shared state. The application
//!   names its shared objects with [`new_object`](crate::new_object) (once, when the object is
//!   created) and reports each access with [`touch`](crate::touch). The executor adds its own
//!   shared state: spawning (task ids are handed out in spawn order), the
//!   random value stream, and timers with one deadline (equal deadlines fire
//!   in registration order).
//! - A poll's *footprint* is the sorted, deduplicated set of resources it
//!   touched. Two polls of different tasks are *independent* when their
//!   footprints are disjoint: running them in either order reaches the same
//!   state. An access is a write unless it is reported as a read
//!   ([`touch_read`](crate::touch_read)): two reads of one object commute, a read and a write
//!   or two writes do not. A step that reads and writes one object holds
//!   it as a write.
//! - Object ids must mean the same object in every execution that shares a
//!   prefix, and in executions that differ only by swapping independent
//!   polls. A global counter would not do (swapping two creations would swap
//!   their ids), so an object id is `(creating task, n-th object that task
//!   created)`. Task ids are stable because every spawn touches [`SPAWN`].
//!
//! Nothing here affects a run: footprints are only read by schedulers that
//! ask for them ([`Scheduler::observe`](crate::Scheduler::observe)) and by
//! the trace.

use crate::task::TaskId;

/// Spawning a task (task ids are dense, in spawn order).
pub const SPAWN: u64 = 1 << 60;
/// Drawing from the random value stream.
pub const RANDOM: u64 = 2 << 60;
/// Registering a timer; the low bits hold the deadline.
pub const TIMER: u64 = 3 << 60;
/// An application object; the low bits hold `(creator << 32) | n`.
pub const OBJECT: u64 = 4 << 60;
/// Enabling a task (a wake or its spawn); the low bits hold the task id.
/// The woken task's next poll writes it (it takes the task off the ready
/// set), so the happens-before order the search derives from footprints
/// includes "woken before it runs". A spawn writes it too; a wake by
/// another task only reads it: a wake marks the task ready whether or not
/// it was, so two wakes of one task commute, while a wake and the task's
/// poll do not.
pub const WAKE: u64 = 5 << 60;
const KIND: u64 = 0xF << 60;
pub(crate) const LOW: u64 = !KIND & !READ & !STUTTER;
/// Flag of a footprint entry: the step only read the object (see
/// [`touch_read`](crate::touch_read)). Bit 59 is free in every kind's low bits.
pub const READ: u64 = 1 << 59;
/// Flag of a footprint entry: the read of a *stutter* step (see
/// [`note_await`](crate::note_await)). Set together with [`READ`].
pub const STUTTER: u64 = 1 << 58;
/// Creator id used for objects created outside any task.
pub(crate) const OUTSIDE: u64 = 0xFF_FFFF;

/// Whether a finished poll of `task` that returned `Pending` with this raw
/// (not yet normalized) footprint was a stutter (see [`note_await`](crate::note_await)).
pub(crate) fn is_stutter(raw: &[u64], task: usize, awaited: Option<u64>) -> bool {
    let Some(awaited) = awaited else {
        return false;
    };
    let own_wake = WAKE | task as u64;
    let mut others = raw.iter().filter(|&&e| e != own_wake);
    others.next() == Some(&awaited) && others.next().is_none()
}

/// The resource an entry names, without its access kind.
pub fn base(entry: u64) -> u64 {
    entry & !(READ | STUTTER)
}

/// Whether a normalized footprint is a stutter step's (see [`note_await`](crate::note_await)).
pub(crate) fn is_stutter_step(footprint: &[u64]) -> bool {
    footprint.iter().any(|&r| is_stutter_read(r))
}

/// Whether a footprint entry is the read of a stutter step.
pub fn is_stutter_read(entry: u64) -> bool {
    entry & STUTTER != 0
}

/// Whether a footprint entry is a read.
pub fn is_read(entry: u64) -> bool {
    entry & READ != 0
}

/// Sorts a footprint by resource and keeps one entry per resource: a write
/// if the step wrote it at all, else a read. Allocation-free.
pub fn normalize(fp: &mut Vec<u64>) {
    // Sorting by (base, read flag) puts a write before a read of the same
    // resource, so keeping the first entry of each resource keeps the write.
    fp.sort_unstable_by_key(|&e| (base(e), is_read(e)));
    fp.dedup_by_key(|e| base(*e));
}

/// Whether two footprints (normalized) commute: no resource that both
/// touch and at least one writes (a stutter's read commutes with a write,
/// see [`note_await`](crate::note_await)).
pub fn independent(a: &[u64], b: &[u64]) -> bool {
    !clash(a, b, |x, y| {
        is_stutter_read(x) || is_stutter_read(y) || (is_read(x) && is_read(y))
    })
}

/// Whether two normalized footprints touch a resource whose two entries
/// do not `commute` (a merge walk over both, allocation-free).
pub(crate) fn clash(a: &[u64], b: &[u64], commute: impl Fn(u64, u64) -> bool) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match base(a[i]).cmp(&base(b[j])) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if !commute(a[i], b[j]) {
                    return true;
                }
                i += 1;
                j += 1;
            }
        }
    }
    false
}

/// The task that created object `resource` (see [`new_object`](crate::new_object)); `None`
/// for an object made outside any task, or a resource that is no object.
pub fn object_creator(resource: u64) -> Option<TaskId> {
    let creator = (resource & LOW) >> 32;
    (resource & KIND == OBJECT && creator != OUTSIDE).then_some(creator as TaskId)
}

/// A resource id in words, for traces: `spawn`, `random`, `timer@40ms`,
/// `obj 3.1` (the second object created by task 3).
pub fn describe(resource: u64) -> String {
    if is_stutter_read(resource) {
        return format!("await {}", describe(base(resource)));
    }
    if is_read(resource) {
        return format!("read {}", describe(base(resource)));
    }
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
    fn an_objects_creator_is_read_back_from_its_id() {
        assert_eq!(object_creator(OBJECT | (3 << 32) | 4), Some(3));
        assert_eq!(object_creator(OBJECT | (3 << 32) | 4 | READ), Some(3));
        assert_eq!(object_creator(OBJECT | (OUTSIDE << 32)), None);
        assert_eq!(object_creator(WAKE | 3), None);
        assert_eq!(object_creator(SPAWN), None);
    }

    #[test]
    fn independence_is_disjointness() {
        assert!(independent(&[1, 3, 5], &[2, 4, 6]));
        assert!(!independent(&[1, 3, 5], &[5]));
        assert!(independent(&[], &[1]));
    }

    #[test]
    fn reads_commute_and_a_write_wins_in_one_step() {
        let x = OBJECT | 7;
        let y = OBJECT | 9;
        assert!(independent(&[x | READ], &[x | READ]));
        assert!(!independent(&[x | READ], &[x]));
        assert!(!independent(&[x], &[x | READ]));
        assert!(!independent(&[x | READ, y], &[x | READ, y | READ]));
        let mut fp = vec![y | READ, x | READ, x, y | READ];
        normalize(&mut fp);
        assert_eq!(fp, vec![x, y | READ]);
        assert_eq!(describe(x | READ), format!("read {}", describe(x)));
    }

    #[test]
    fn a_stutter_is_one_failed_check_and_nothing_else() {
        let x = OBJECT | 7;
        let aw = Some(x | READ);
        assert!(is_stutter(&[WAKE | 2, x | READ], 2, aw));
        assert!(is_stutter(&[x | READ], 2, aw));
        // Another access, a wake of another task, or two sections: no.
        assert!(!is_stutter(&[x | READ, x | READ], 2, aw));
        assert!(!is_stutter(&[WAKE | 3, x | READ], 2, aw));
        assert!(!is_stutter(&[OBJECT | 1, x | READ], 2, aw));
        assert!(!is_stutter(&[x | READ], 2, None));
        // A stutter's read commutes with everything in sleep sets.
        assert!(independent(&[x | READ | STUTTER], &[x]));
        assert_eq!(
            describe(x | READ | STUTTER),
            format!("await {}", describe(x))
        );
    }

    #[test]
    fn describe_names_kinds() {
        assert_eq!(describe(SPAWN), "spawn");
        assert_eq!(describe(TIMER | 40), "timer@40ms");
        assert_eq!(describe(OBJECT | (3 << 32) | 1), "obj 3.1");
    }
}
