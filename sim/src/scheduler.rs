//! Schedulers: who runs next.
//!
//! Design:
//! - The executor asks a [`Scheduler`] for every poll, even when only one task
//!   is ready, and records the returned index. The recorded indices are a
//!   complete description of the schedule, so replay is exact and trivial.
//! - A scheduler also owns the *value stream* behind
//!   [`random_u64`](crate::random_u64). The value stream is separate from the
//!   choices stream, so a replay that is given the same seed returns the same
//!   values as the original run.
//! - New strategies (depth-first enumeration, PCT priorities, ...) implement
//!   the trait; the executor needs nothing else. Hooks with default bodies
//!   ([`Scheduler::diverged_at`], [`Scheduler::finish`]) let a strategy report
//!   on itself.
//! - Randomness is `rand_pcg::Pcg64Mcg` seeded through
//!   `SeedableRng::seed_from_u64`: version-stable, never OS-seeded.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::task::TaskId;

/// Mixed into a seed to derive the value stream from the choices stream.
const VALUE_STREAM: u64 = 0x9E37_79B9_7F4A_7C15;

/// Picks which ready task runs next.
pub trait Scheduler {
    /// Picks a task among `ready` and returns its index in `ready`.
    ///
    /// `ready` is non-empty and sorted ascending by [`TaskId`]. `step` is the
    /// executor's step counter at this decision (it counts polls and time
    /// advances). An index out of range is treated as `0`.
    fn pick(&mut self, ready: &[TaskId], step: u64) -> usize;

    /// A deterministic random `u64` for the application (fault choices, ...),
    /// served to tasks through [`random_u64`](crate::random_u64).
    fn next_u64(&mut self) -> u64;

    /// The step at which this scheduler stopped following its plan, if it did
    /// (replay only; others return `None`).
    fn diverged_at(&self) -> Option<u64> {
        None
    }

    /// Called once when a run completes (every task finished) after `steps`
    /// steps. A replay uses it to notice unused recorded decisions.
    fn finish(&mut self, steps: u64) {
        let _ = steps;
    }

    /// Whether this scheduler reads footprints (the second argument of
    /// [`observe`](Self::observe)). The executor keeps them only for one
    /// that does, or while the trace is on: a seeded sampler turns the
    /// bookkeeping off (its runs are the same either way; only
    /// footprint-derived checks such as a section's reported access, see
    /// [`section_begin`](crate::section_begin), need them). The default is
    /// `true`.
    fn wants_footprints(&self) -> bool {
        true
    }

    /// Called after every poll with the task polled and its footprint: the
    /// sorted, deduplicated resources it touched (see [`touch`](crate::touch)).
    /// Depth-first search uses it for its sleep sets; others may ignore it.
    fn observe(&mut self, task: TaskId, footprint: &[u64]) {
        let _ = (task, footprint);
    }

    /// Called after every poll: whether task `task` stopped in the middle of
    /// its poll, at a scheduling point (`true`), or at the end of a poll
    /// (`false`: it returned `Pending`, a voluntary switch even when it
    /// woke itself). Switching away from a task that stopped mid-poll is a
    /// preemption; switching away after a `Pending` is not (as loom and
    /// CHESS count preemptions).
    fn suspended(&mut self, task: TaskId, mid_poll: bool) {
        let _ = (task, mid_poll);
    }

    /// Asked after every pick: `true` ends the run before the picked task is
    /// polled, with [`SimError::Abandoned`](crate::SimError::Abandoned) (a
    /// search that knows the rest of this run is redundant).
    fn should_stop(&self) -> bool {
        false
    }
}

/// Whether the pick `chosen` at a decision with `ready` tasks preempts
/// `last` (the task polled just before): `last` could have gone on and was
/// not chosen.
pub fn is_preemption(ready: &[TaskId], last: Option<TaskId>, chosen: TaskId) -> bool {
    matches!(last, Some(l) if l != chosen && ready.binary_search(&l).is_ok())
}

/// Maps a random `u64` uniformly enough onto `0..len` (multiply-shift,
/// version-stable).
pub(crate) fn bounded(x: u64, len: usize) -> usize {
    ((u128::from(x) * len as u128) >> 64) as usize
}

/// The value stream for a seed, shared by [`RandomScheduler`] and
/// [`ReplayScheduler`] so both serve the same `random_u64` sequence.
pub(crate) fn value_stream(seed: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ VALUE_STREAM)
}

/// Picks uniformly at random among ready tasks, from a seed.
#[derive(Debug, Clone)]
pub struct RandomScheduler {
    choices: Pcg64Mcg,
    values: Pcg64Mcg,
}

impl RandomScheduler {
    /// A scheduler whose choices and values are fully determined by `seed`.
    pub fn new(seed: u64) -> RandomScheduler {
        RandomScheduler {
            choices: Pcg64Mcg::seed_from_u64(seed),
            values: value_stream(seed),
        }
    }
}

impl Scheduler for RandomScheduler {
    fn pick(&mut self, ready: &[TaskId], _step: u64) -> usize {
        // A single ready task consumes no randomness.
        if ready.len() <= 1 {
            return 0;
        }
        bounded(self.choices.next_u64(), ready.len())
    }

    fn next_u64(&mut self) -> u64 {
        self.values.next_u64()
    }

    fn wants_footprints(&self) -> bool {
        false
    }
}

/// Replays recorded decisions (indices into the ready slice, one per poll).
///
/// If the log runs out, or a recorded index is out of range for the current
/// ready slice, it picks the first ready task and remembers the step where
/// that first happened ([`Scheduler::diverged_at`]). A run that completes
/// with recorded decisions left over also counts as diverged (at the final
/// step).
#[derive(Debug, Clone)]
pub struct ReplayScheduler {
    decisions: Vec<u32>,
    pos: usize,
    diverged_at: Option<u64>,
    values: Pcg64Mcg,
}

impl ReplayScheduler {
    /// Replays `decisions`; `random_u64` serves the value stream of seed 0.
    pub fn new(decisions: Vec<u32>) -> ReplayScheduler {
        ReplayScheduler::with_seed(decisions, 0)
    }

    /// Replays `decisions`; `random_u64` serves the same values a
    /// [`RandomScheduler::new(seed)`](RandomScheduler::new) would, so a run
    /// recorded with that seed replays exactly even if it drew random values.
    pub fn with_seed(decisions: Vec<u32>, seed: u64) -> ReplayScheduler {
        ReplayScheduler {
            decisions,
            pos: 0,
            diverged_at: None,
            values: value_stream(seed),
        }
    }

    /// How many recorded decisions have been consumed.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    fn diverge(&mut self, step: u64) {
        if self.diverged_at.is_none() {
            self.diverged_at = Some(step);
        }
    }
}

impl Scheduler for ReplayScheduler {
    fn pick(&mut self, ready: &[TaskId], step: u64) -> usize {
        match self.decisions.get(self.pos) {
            Some(&d) => {
                self.pos += 1;
                let d = d as usize;
                if d < ready.len() {
                    d
                } else {
                    self.diverge(step);
                    0
                }
            }
            None => {
                self.diverge(step);
                0
            }
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.values.next_u64()
    }

    fn diverged_at(&self) -> Option<u64> {
        self.diverged_at
    }

    fn finish(&mut self, steps: u64) {
        if self.pos < self.decisions.len() {
            self.diverge(steps);
        }
    }
}

/// Never preempts: keeps running the task polled last while it is ready,
/// otherwise picks the lowest ready id. Used to continue a run after a
/// shortened plan (shrinking), where every extra preemption counts against
/// the result.
#[derive(Debug, Clone, Default)]
pub struct NonPreemptiveScheduler {
    last: Option<TaskId>,
}

impl Scheduler for NonPreemptiveScheduler {
    fn wants_footprints(&self) -> bool {
        false
    }

    fn pick(&mut self, ready: &[TaskId], _step: u64) -> usize {
        self.last
            .and_then(|l| ready.binary_search(&l).ok())
            .unwrap_or(0)
    }

    fn next_u64(&mut self) -> u64 {
        0
    }

    fn observe(&mut self, task: TaskId, _footprint: &[u64]) {
        self.last = Some(task);
    }
}

/// Follows a *plan*: the task chosen at each decision where more than one
/// task was ready (a run's [`choices`](crate::Sim::choices)). Decisions with
/// one ready task consume nothing.
///
/// When the plan names a task that is not ready, the guided run has
/// *diverged* ([`Scheduler::diverged_at`]); from then on, and after the plan
/// runs out, the `fallback` scheduler decides. With `strict`, running out of
/// plan, or finishing with plan left over, also counts as divergence (a
/// replay); without it, a short plan is a prefix to be continued (shrinking).
/// `random_u64` serves the value stream of `seed`, as the original run did.
pub struct GuidedScheduler {
    plan: Vec<TaskId>,
    pos: usize,
    strict: bool,
    fallback: Box<dyn Scheduler>,
    diverged_at: Option<u64>,
    followed: usize,
    values: Pcg64Mcg,
}

impl std::fmt::Debug for GuidedScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuidedScheduler")
            .field("plan", &self.plan.len())
            .field("pos", &self.pos)
            .field("diverged_at", &self.diverged_at)
            .finish_non_exhaustive()
    }
}

impl GuidedScheduler {
    /// Follows `plan`, then `fallback`; see the type's docs for `strict`.
    pub fn new(
        plan: Vec<TaskId>,
        seed: u64,
        strict: bool,
        fallback: Box<dyn Scheduler>,
    ) -> GuidedScheduler {
        GuidedScheduler {
            plan,
            pos: 0,
            strict,
            fallback,
            diverged_at: None,
            followed: 0,
            values: value_stream(seed),
        }
    }

    fn diverge(&mut self, step: u64) {
        if self.diverged_at.is_none() {
            self.diverged_at = Some(step);
        }
    }
}

impl Scheduler for GuidedScheduler {
    fn pick(&mut self, ready: &[TaskId], step: u64) -> usize {
        if ready.len() <= 1 {
            return 0;
        }
        if self.diverged_at.is_none() {
            if let Some(&task) = self.plan.get(self.pos) {
                self.pos += 1;
                if let Ok(i) = ready.binary_search(&task) {
                    self.followed += 1;
                    return i;
                }
                self.diverge(step);
            } else if self.strict {
                self.diverge(step);
            }
        }
        self.fallback.pick(ready, step)
    }

    fn next_u64(&mut self) -> u64 {
        self.values.next_u64()
    }

    fn diverged_at(&self) -> Option<u64> {
        self.diverged_at
    }

    fn finish(&mut self, steps: u64) {
        if self.strict && self.pos < self.plan.len() {
            self.diverge(steps);
        }
    }

    fn observe(&mut self, task: TaskId, footprint: &[u64]) {
        self.fallback.observe(task, footprint);
    }

    fn suspended(&mut self, task: TaskId, mid_poll: bool) {
        self.fallback.suspended(task, mid_poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_stays_in_range() {
        for len in 1..10 {
            assert!(bounded(u64::MAX, len) < len);
            assert_eq!(bounded(0, len), 0);
        }
    }

    #[test]
    fn random_is_seeded() {
        let ready = [0, 1, 2, 3, 4, 5, 6, 7];
        let mut a = RandomScheduler::new(3);
        let mut b = RandomScheduler::new(3);
        for step in 0..100 {
            assert_eq!(a.pick(&ready, step), b.pick(&ready, step));
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn replay_values_match_random_values() {
        let mut a = RandomScheduler::new(42);
        let mut b = ReplayScheduler::with_seed(vec![], 42);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn replay_diverges_on_bad_index_and_exhaustion() {
        let mut r = ReplayScheduler::new(vec![1, 5]);
        assert_eq!(r.pick(&[0, 1], 0), 1);
        assert_eq!(r.diverged_at(), None);
        assert_eq!(r.pick(&[0, 1], 1), 0);
        assert_eq!(r.diverged_at(), Some(1));
        assert_eq!(r.pick(&[0, 1], 2), 0);
        assert_eq!(r.diverged_at(), Some(1));
        let mut r = ReplayScheduler::new(vec![0]);
        r.pick(&[3], 0);
        r.pick(&[3], 1);
        assert_eq!(r.diverged_at(), Some(1));
    }

    #[test]
    fn replay_leftover_counts_as_divergence() {
        let mut r = ReplayScheduler::new(vec![0, 0]);
        r.pick(&[0], 0);
        r.finish(1);
        assert_eq!(r.diverged_at(), Some(1));
    }
}

#[cfg(test)]
mod guided_tests {
    use super::*;

    #[test]
    fn guided_follows_then_falls_back() {
        let mut g = GuidedScheduler::new(
            vec![2, 1],
            0,
            true,
            Box::new(NonPreemptiveScheduler::default()),
        );
        assert_eq!(g.pick(&[5], 0), 0, "a single ready task consumes no plan");
        assert_eq!(g.pick(&[1, 2], 1), 1);
        g.observe(2, &[]);
        assert_eq!(g.pick(&[1, 2, 3], 2), 0);
        assert_eq!(g.diverged_at(), None);
        g.observe(1, &[]);
        // Plan exhausted: strict diverges, the fallback keeps task 1.
        assert_eq!(g.pick(&[1, 3], 3), 0);
        assert_eq!(g.diverged_at(), Some(3));
    }

    #[test]
    fn guided_diverges_on_missing_task() {
        let mut g = GuidedScheduler::new(
            vec![7],
            0,
            false,
            Box::new(NonPreemptiveScheduler::default()),
        );
        assert_eq!(g.pick(&[1, 2], 4), 0);
        assert_eq!(g.diverged_at(), Some(4));
    }

    #[test]
    fn preemption_needs_last_ready() {
        assert!(is_preemption(&[1, 2], Some(1), 2));
        assert!(!is_preemption(&[1, 2], Some(1), 1));
        assert!(!is_preemption(&[2, 3], Some(1), 2));
        assert!(!is_preemption(&[2, 3], None, 2));
    }
}
