//! What a task reports it touched: the objects it creates, the accesses
//! it makes, its lock sections and its failed checks (see [`crate::resource`]
//! for how a resource is encoded and when two footprints commute).
//!
//! Each report goes to the running simulation through the thread-local
//! context and lands in the running poll's footprint; outside a task, or
//! where no one reads footprints, it does nothing.

use crate::context::try_current;
use crate::resource::{base, describe, LOW, OBJECT, OUTSIDE, READ};

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
/// [`WAKE`](crate::resource::WAKE). The search gives a decision whose step stuttered no other
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
