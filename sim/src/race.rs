//! Race analysis of one explored run, for dynamic partial-order reduction
//! (source-DPOR, Abdulla, Aronis, Jonsson and Sagonas, POPL 2014).
//!
//! A run is a sequence of *events*: one per decision, the step the chosen
//! task took, with its footprint (the resources it touched, each read or
//! written, see [`READ`](crate::resource::READ)). From it:
//!
//! - **happens-before** is program order, plus an edge from every write of a
//!   resource to the later accesses up to the next write, and from every
//!   read to the next write. Spawns and wakes touch a
//!   [`WAKE`] resource of the enabled task, which that task's
//!   next poll touches too, so "enabled before it ran" is an edge as well.
//!   It is kept as one vector clock per event.
//! - a **race** is a pair `j < i` of events of different tasks that touch a
//!   common resource, at least one of them writing it, and are ordered by
//!   nothing but that direct conflict: `j` is a direct predecessor of `i`
//!   (the last write of a resource `i` touches, or, when `i` writes it,
//!   a read since that write), and it races with `i` unless it already
//!   happens before `i`'s previous event or another of `i`'s direct
//!   predecessors. Two reads never race.
//! - for each race, the **initials** of `v = notdep(j).i` (the events after
//!   `j` that do not happen after it, then `i`): the tasks whose first event
//!   in `v` has no predecessor in `v`. Running one of them at `j`'s decision
//!   reverses the race; source-DPOR adds one to that decision's backtrack
//!   set unless it already holds one.

use std::collections::BTreeMap;

use crate::resource::{base, is_read, is_stutter_step, WAKE};
use crate::task::TaskId;

/// The accesses to one resource so far: the last write, the write before
/// it, and the reads since the last.
#[derive(Default)]
struct Accesses {
    write: Option<usize>,
    before: Option<usize>,
    reads: Vec<usize>,
}

/// One step of an explored run.
pub(crate) struct Event<'a> {
    /// The task that took the step.
    pub(crate) task: TaskId,
    /// The resources it touched (sorted, deduplicated).
    pub(crate) footprint: &'a [u64],
    /// The tasks ready at its decision (`None`: not known, every task).
    pub(crate) ready: Option<&'a [TaskId]>,
}

impl Event<'_> {
    /// Whether this step touched `resource` (read or written).
    fn touches(&self, resource: u64) -> bool {
        self.footprint.iter().any(|&r| base(r) == resource)
    }

    /// Whether this step spawned or woke `task` while `task` was not ready.
    fn enabled(&self, task: TaskId) -> bool {
        self.touches(WAKE | task as u64)
            && self.ready.is_some_and(|r| r.binary_search(&task).is_err())
    }
}

/// Whether the race `(j, i)` can be reversed by running `v` (the events of
/// the reversal, `i` last) at `j`'s decision: not when `j` enabled `i`'s
/// task and nothing in `v` before `i` enables it too (wakes or spawns it),
/// for a step cannot run before the only thing that enables it.
fn feasible(events: &[Event<'_>], j: usize, i: usize, v: impl Iterator<Item = usize>) -> bool {
    let ti = events[i].task;
    if !events[j].enabled(ti) {
        return true;
    }
    let wake = WAKE | ti as u64;
    v.take_while(|&k| k != i)
        .any(|k| events[k].task != ti && events[k].touches(wake))
}

/// A race to reverse: at decision `at`, one of `initials` must be explored.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reversal {
    /// The decision whose step is the first event of the race.
    pub(crate) at: usize,
    /// Tasks that, run at `at`, start a run reversing the race.
    pub(crate) initials: Vec<TaskId>,
}

/// Vector clocks of a run: `tasks` counters per event.
struct Clocks {
    tasks: usize,
    vc: Vec<u32>,
    /// 1-based position of each event within its task.
    local: Vec<u32>,
}

impl Clocks {
    fn of(&self, e: usize) -> &[u32] {
        &self.vc[e * self.tasks..(e + 1) * self.tasks]
    }

    /// Whether event `a` happens before (or is) event `b`.
    fn hb(&self, a: usize, task_a: TaskId, b: usize) -> bool {
        self.of(b)[task_a] >= self.local[a]
    }
}

/// Happens-before and the races of one run.
struct Analysis {
    clocks: Clocks,
    /// Races `(j, i)`, `j < i`, sorted.
    races: Vec<(usize, usize)>,
    /// Whether each event is a stutter (see `resource::note_await`).
    stutter: Vec<bool>,
}

fn analyse(events: &[Event<'_>]) -> Analysis {
    let n = events.len();
    let tasks = events.iter().map(|e| e.task + 1).max().unwrap_or(0);
    let mut clocks = Clocks {
        tasks,
        vc: vec![0; n * tasks],
        local: vec![0; n],
    };
    let mut count = vec![0u32; tasks];
    let mut task_last: Vec<Option<usize>> = vec![None; tasks];
    let mut objects: BTreeMap<u64, Accesses> = BTreeMap::new();
    let mut races: Vec<(usize, usize)> = Vec::new();
    let mut stutters = vec![false; n];
    // Per task: the resource and write its last step (a stutter) read.
    let mut failed: Vec<Option<(u64, Option<usize>)>> = vec![None; tasks];
    // The events `i` directly depends on through a resource.
    let mut preds: Vec<usize> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let p = e.task;
        count[p] += 1;
        clocks.local[i] = count[p];
        preds.clear();
        for &r in e.footprint {
            let Some(acc) = objects.get(&base(r)) else {
                continue;
            };
            // A read depends on the last write; a write on the last write
            // and on every read since.
            preds.extend(acc.write);
            if !is_read(r) {
                preds.extend(acc.reads.iter().copied());
            }
        }
        preds.sort_unstable();
        preds.dedup();
        // A stutter (a failed await, see `resource::note_await`) races with
        // the write it read, and is otherwise no event: no edge leaves it.
        let stutter = is_stutter_step(e.footprint);
        stutters[i] = stutter;
        // The write a stutter read, and the one before it: reversing the
        // race would make the check read the earlier one, and if this
        // task's last step was the same check failing on that very write,
        // the reversal can only fail again (a stutter changes nothing, so
        // the task's own state is the same too).
        let awaited = stutter
            .then(|| e.footprint.first().map(|&r| base(r)))
            .flatten();
        let (read, before) = awaited
            .and_then(|x| objects.get(&x))
            .map_or((None, None), |a| (a.write, a.before));
        let known_fail = awaited.is_some() && failed[p] == awaited.map(|x| (x, before));
        failed[p] = awaited.map(|x| (x, read));
        for &j in &preds {
            let tj = events[j].task;
            if tj == p || known_fail {
                continue;
            }
            let via_program = task_last[p].is_some_and(|k| clocks.hb(j, tj, k));
            let via_other = preds.iter().any(|&m| m != j && clocks.hb(j, tj, m));
            if !via_program && !via_other {
                races.push((j, i));
            }
        }
        let mut c = match task_last[p] {
            Some(k) => clocks.of(k).to_vec(),
            None => vec![0; tasks],
        };
        for &j in &preds {
            for (x, y) in c.iter_mut().zip(clocks.of(j)) {
                *x = (*x).max(*y);
            }
        }
        c[p] = clocks.local[i];
        clocks.vc[i * tasks..(i + 1) * tasks].copy_from_slice(&c);
        if stutter {
            continue;
        }
        task_last[p] = Some(i);
        for &r in e.footprint {
            let acc = objects.entry(base(r)).or_default();
            if is_read(r) {
                acc.reads.push(i);
            } else {
                acc.before = acc.write;
                acc.write = Some(i);
                acc.reads.clear();
            }
        }
    }
    races.sort_unstable();
    Analysis {
        clocks,
        races,
        stutter: stutters,
    }
}

/// Every race of the run and its reversal. `wanted(at)` says whether the
/// decision `at` is interested (it uses DPOR and has a choice); others are
/// skipped before their initials are computed. Returns the race count too.
pub(crate) fn reversals(
    events: &[Event<'_>],
    wanted: impl Fn(usize) -> bool,
) -> (u64, Vec<Reversal>) {
    let Analysis { clocks, races, .. } = analyse(events);
    let found = races.len() as u64;
    let mut out = Vec::new();
    let mut first_in_v: Vec<Option<usize>> = vec![None; clocks.tasks];
    for (j, i) in races {
        if !wanted(j) {
            continue;
        }
        let tj = events[j].task;
        first_in_v.iter_mut().for_each(|f| *f = None);
        let mut initials = Vec::new();
        for k in (j + 1..i).chain(std::iter::once(i)) {
            if k != i && clocks.hb(j, tj, k) {
                continue;
            }
            let q = events[k].task;
            if first_in_v[q].is_some() {
                continue;
            }
            let ck = clocks.of(k);
            let initial = first_in_v
                .iter()
                .enumerate()
                .all(|(r, m)| r == q || m.is_none_or(|m| ck[r] < clocks.local[m]));
            first_in_v[q] = Some(k);
            if initial {
                initials.push(q);
            }
        }
        let v = (j + 1..=i).filter(|&k| k == i || !clocks.hb(j, tj, k));
        if feasible(events, j, i, v) {
            out.push(Reversal { at: j, initials });
        }
    }
    (found, out)
}

/// A race to reverse by a whole sequence (optimal DPOR's wakeup trees).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reversing {
    /// The decision whose step is the first event of the race.
    pub(crate) at: usize,
    /// `v = notdep(at).i`: the events of the run after `at` that do not
    /// happen after it, then the race's second event `i` (indices into the
    /// run; an event after `i` in `notdep` does not happen after `i`
    /// either, so moving `i` last only reorders commuting steps). Other
    /// stutters are left out: they change nothing, and the await they
    /// failed is revisited where the write it waits for wakes it.
    pub(crate) sequence: Vec<usize>,
}

/// Every race of the run with the sequence that reverses it, for the
/// decisions `wanted` accepts; and the race count.
pub(crate) fn reversing_sequences(
    events: &[Event<'_>],
    wanted: impl Fn(usize) -> bool,
) -> (u64, Vec<Reversing>) {
    let Analysis {
        clocks,
        races,
        stutter,
    } = analyse(events);
    let found = races.len() as u64;
    let out = races
        .into_iter()
        .filter(|&(j, _)| wanted(j))
        .filter_map(|(j, i)| {
            let tj = events[j].task;
            let mut sequence: Vec<usize> = (j + 1..events.len())
                .filter(|&k| k != i && !stutter[k] && !clocks.hb(j, tj, k))
                .collect();
            sequence.push(i);
            let before_i = sequence.iter().copied().filter(|&k| k < i).chain([i]);
            feasible(events, j, i, before_i).then_some(Reversing { at: j, sequence })
        })
        .collect();
    (found, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(task: TaskId, footprint: &[u64]) -> Event<'_> {
        Event {
            task,
            footprint,
            ready: None,
        }
    }

    #[test]
    fn a_failed_check_is_not_reversed_onto_the_write_it_already_failed_on() {
        use crate::resource::{READ, STUTTER};
        let (x, w) = (1, 1 << 40);
        let (wx, ww, ck) = ([x], [w], [x | READ | STUTTER]);
        // Task 1 fails on the write of event 0, task 0 writes again, task 1
        // fails again: run before event 2, its check would read event 0's
        // write once more, so that race is not reversed.
        let again = [ev(0, &wx), ev(1, &ck), ev(0, &wx), ev(1, &ck)];
        let (_, r) = reversals(&again, |_| true);
        assert!(r.iter().all(|r| r.at != 2), "{r:?}");
        // Without the earlier failure (task 1 did something else in
        // between), it is reversed.
        let fresh = [ev(0, &wx), ev(1, &ck), ev(1, &ww), ev(0, &wx), ev(1, &ck)];
        let (_, r) = reversals(&fresh, |_| true);
        assert!(r.iter().any(|r| r.at == 3), "{r:?}");
    }

    #[test]
    fn two_writes_race_and_reverse_at_the_first() {
        let (n, r) = reversals(&[ev(0, &[1]), ev(1, &[1])], |_| true);
        assert_eq!(n, 1);
        assert_eq!(
            r,
            vec![Reversal {
                at: 0,
                initials: vec![1]
            }]
        );
    }

    #[test]
    fn disjoint_steps_do_not_race() {
        let (n, r) = reversals(&[ev(0, &[1]), ev(1, &[2])], |_| true);
        assert_eq!(n, 0);
        assert!(r.is_empty());
    }

    #[test]
    fn a_race_ordered_through_a_third_event_is_not_direct() {
        // 0 writes x; 2 reads x then writes y; 1 writes x and y: 0 -> 1 is
        // ordered through 2 (x then y), so only (2, 1) is a direct race on
        // both x and y... and 0 -> 2 on x.
        let (_, r) = reversals(&[ev(0, &[1]), ev(2, &[1, 2]), ev(1, &[1, 2])], |_| true);
        let ats: Vec<usize> = r.iter().map(|x| x.at).collect();
        assert_eq!(ats, vec![0, 1]);
    }

    #[test]
    fn two_reads_do_not_race_but_a_later_write_races_with_both() {
        use crate::resource::READ;
        let x = 1u64;
        let (n, r) = reversals(
            &[ev(0, &[x | READ]), ev(1, &[x | READ]), ev(2, &[x])],
            |_| true,
        );
        assert_eq!(n, 2);
        let ats: Vec<usize> = r.iter().map(|x| x.at).collect();
        assert_eq!(ats, vec![0, 1]);
        // A read after a write races with it; ordered through a read of
        // the same task, the write does not race with the later write.
        let (n, _) = reversals(&[ev(0, &[x]), ev(1, &[x | READ]), ev(1, &[x])], |_| true);
        assert_eq!(n, 1);
    }

    #[test]
    fn a_step_is_not_reversed_with_the_only_step_that_enabled_it() {
        // Task 0 spawns task 1 (1 not ready at that decision); 1's first
        // step touches its wake resource: dependent, but not reversible.
        let wake1 = WAKE | 1;
        let ready0: &[TaskId] = &[0];
        let spawn = Event {
            task: 0,
            footprint: &[wake1],
            ready: Some(ready0),
        };
        let (n, r) = reversals(&[spawn, ev(1, &[wake1])], |_| true);
        assert_eq!(n, 1, "they race");
        assert!(r.is_empty(), "{r:?}");
        let (_, r) = reversing_sequences(
            &[
                Event {
                    task: 0,
                    footprint: &[wake1],
                    ready: Some(ready0),
                },
                ev(1, &[wake1]),
            ],
            |_| true,
        );
        assert!(r.is_empty(), "{r:?}");
        // Another task that wakes 1 too, before 1 runs and independently of
        // task 0: 1 can run before task 0's wake.
        let ready02: &[TaskId] = &[0, 2];
        let (_, r) = reversing_sequences(
            &[
                Event {
                    task: 0,
                    footprint: &[wake1],
                    ready: Some(ready02),
                },
                Event {
                    task: 2,
                    footprint: &[wake1],
                    ready: Some(ready02),
                },
                ev(1, &[wake1]),
            ],
            |_| true,
        );
        assert!(r.iter().any(|x| x.at == 0), "{r:?}");
    }

    #[test]
    fn a_reversing_sequence_keeps_what_does_not_depend_on_the_first_step() {
        // 0 writes x; 1 writes y; 0 writes y (after 1: program order and y);
        // 2 reads x. The race (0, 2) on x: v = [1, 2] (task 0's second step
        // happens after the first), and the stutter-free rest in order.
        let (_, r) = reversing_sequences(
            &[
                ev(0, &[1]),
                ev(1, &[2]),
                ev(0, &[2]),
                ev(2, &[1 | crate::resource::READ]),
            ],
            |_| true,
        );
        let race = r.iter().find(|x| x.at == 0).expect("race on x");
        assert_eq!(race.sequence, vec![1, 3]);
    }

    #[test]
    fn initials_skip_events_that_depend_on_an_earlier_one_in_v() {
        // j = task 0 on x. Then task 1 writes y, task 2 reads y and x: the
        // race (0, 2) has v = [1:y, 2:x+y]; task 2's event follows task 1's,
        // so only task 1 is an initial.
        let (_, r) = reversals(&[ev(0, &[1]), ev(1, &[2]), ev(2, &[1, 2])], |_| true);
        let race = r.iter().find(|x| x.at == 0).expect("race on x");
        assert_eq!(race.initials, vec![1]);
    }
}
