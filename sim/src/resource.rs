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
//!   state. An access is a write unless it is reported as a read
//!   ([`touch_read`]): two reads of one object commute, a read and a write
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
/// The woken task's next poll writes it (it takes the task off the ready
/// set), so the happens-before order the search derives from footprints
/// includes "woken before it runs". A spawn writes it too; a wake by
/// another task only reads it: a wake marks the task ready whether or not
/// it was, so two wakes of one task commute, while a wake and the task's
/// poll do not.
pub const WAKE: u64 = 5 << 60;
const KIND: u64 = 0xF << 60;
const LOW: u64 = !KIND & !READ & !STUTTER;
/// Flag of a footprint entry: the step only read the object (see
/// [`touch_read`]). Bit 59 is free in every kind's low bits.
pub const READ: u64 = 1 << 59;
/// Flag of a footprint entry: the read of a *stutter* step (see
/// [`note_await`]). Set together with [`READ`].
pub const STUTTER: u64 = 1 << 58;
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

/// Says what object `resource` is (a type name, say), for traces and
/// diagnostics: kept in a traced run only (see
/// [`Sim::object_name`](crate::Sim::object_name)), and nothing in a run
/// depends on it.
pub fn name_object(resource: u64, name: &'static str) {
    let Some(shared) = try_current() else {
        return;
    };
    if shared.marks_on.get() {
        shared.object_names.borrow_mut().insert(resource, name);
    }
}

/// Reports that the running task accessed `resource` (see [`new_object`]).
/// Does nothing outside a task, for resource 0, or where no one reads
/// footprints (see [`Scheduler::wants_footprints`](crate::Scheduler::wants_footprints)).
pub fn touch(resource: u64) {
    if resource == 0 {
        return;
    }
    let Some(shared) = try_current() else {
        return;
    };
    if shared.current.get().is_some() {
        shared.touched.set(true);
    }
    if !shared.footprints_on.get() {
        return;
    }
    if let Some(task) = shared.current.get() {
        let mut footprint = shared.footprint.borrow_mut();
        footprint.push(resource);
        let mut sections = shared.sections.borrow_mut();
        let mut echo = false;
        for open in sections.iter_mut() {
            if open.0 == task && open.1 == base(resource) {
                echo |= open.2;
                open.2 = true;
            }
        }
        if echo && shared.marks_on.get() {
            shared.echoes.borrow_mut().push(footprint.len() - 1);
        }
    }
}

/// A lock section of the running task on `object` begins (the lock
/// reports it when it is taken). Before [`section_end`], the section must
/// report an access to `object` ([`touch`], [`touch_read`] or
/// [`note_await`]), else the run ends with
/// [`SimError::Footprint`](crate::SimError::Footprint): a section whose
/// footprint leaves out the object it locked would make the reduction
/// treat it as independent of the object's writers. The section may span
/// several polls (a nested lock is a scheduling point). Does nothing
/// outside a task or for object 0.
pub fn section_begin(object: u64) {
    if object == 0 {
        return;
    }
    let Some(shared) = try_current() else {
        return;
    };
    if !shared.footprints_on.get() {
        return;
    }
    if let Some(task) = shared.current.get() {
        shared.sections.borrow_mut().push((task, object, false));
    }
}

/// The running task's lock section on `object` ends (see
/// [`section_begin`]).
pub fn section_end(object: u64) {
    if object == 0 {
        return;
    }
    let Some(shared) = try_current() else {
        return;
    };
    let Some(task) = shared.current.get() else {
        return;
    };
    let open = {
        let mut sections = shared.sections.borrow_mut();
        let at = sections
            .iter()
            .rposition(|&(t, o, _)| t == task && o == object);
        at.map(|i| sections.swap_remove(i))
    };
    if let Some((_, _, false)) = open {
        drop(shared);
        footprint_error(format!(
            "a lock section on {} reported no access to its object",
            describe(object)
        ));
    }
}

/// Ends the run, after the running poll, with
/// [`SimError::Footprint`](crate::SimError::Footprint): the step did
/// something its footprint does not say (a primitive that derives its
/// access from what it did found a mismatch with what it reported). The
/// first error of a run is kept. Does nothing outside a simulation.
pub fn footprint_error(message: impl Into<String>) {
    let Some(shared) = try_current() else {
        return;
    };
    let mut slot = shared.footprint_error.borrow_mut();
    if slot.is_none() {
        *slot = Some(message.into());
    }
}

/// Reports that the running task read `resource` without changing it (see
/// [`touch`]): reads of one object by different steps commute.
pub fn touch_read(resource: u64) {
    if resource != 0 {
        touch(resource | READ);
    }
}

/// Reports that the running task read `resource`, found it must wait, and
/// parked until the next write of `resource`, after which it runs the same
/// check again (a monitor's failed `wait_until` check).
///
/// If that read is all the task's step did before it returned `Pending`
/// and the task is not ready again (nothing woke it, not even itself: a
/// task that passed a `yield_now` on the way goes on from a new place),
/// the step is a *stutter*: it changed no shared state and kept nothing it
/// read, so running it or not reaches the same states (the task is woken by
/// the next write and checks again). The executor then marks its read
/// `STUTTER`:
/// - sleep sets treat it as independent of every step: a stutter before a
///   write `w` is equivalent to no stutter, and the task's check after `w`
///   is explored where `w` wakes it;
/// - race analysis still reverses it with the write it read (the check
///   run before that write might succeed), but gives it no happens-before
///   edge to anything later.
///
/// This is how stateless model checkers treat a blocking await: a failed
/// await is not an event, yet the writes it saw are revisited. Any other
/// access in the same step makes it an ordinary read.
///
/// A poll that touched nothing but the wake that enabled it and parked the
/// task again (a wake that did not satisfy what it waits for, such as a
/// join on an unfinished task) is a stutter too, a read of its own
/// [`WAKE`]. The search gives a decision whose step stuttered no other
/// alternative, and race analysis does not reverse a failed check onto
/// the write the same task's previous failed check read.
pub fn note_await(resource: u64) {
    if resource == 0 {
        return;
    }
    touch_read(resource);
    if let Some(shared) = try_current() {
        if shared.current.get().is_some() {
            shared.awaited.set(Some(resource | READ));
            if shared.marks_on.get() {
                let at = shared.footprint.borrow().len().saturating_sub(1);
                shared.awaits.borrow_mut().push(at);
            }
        }
    }
}

/// Whether a finished poll of `task` that returned `Pending` with this raw
/// (not yet normalized) footprint was a stutter (see [`note_await`]).
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

/// Whether a normalized footprint is a stutter step's (see [`note_await`]).
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
/// see [`note_await`]).
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

/// The task that created object `resource` (see [`new_object`]); `None`
/// for an object made outside any task, or a resource that is no object.
pub fn object_creator(resource: u64) -> Option<crate::TaskId> {
    let creator = (resource & LOW) >> 32;
    (resource & KIND == OBJECT && creator != OUTSIDE).then_some(creator as crate::TaskId)
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
