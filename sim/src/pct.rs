//! PCT: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010).
//!
//! Design:
//! - Every task gets a random priority when it is first seen ready; the
//!   highest-priority ready task always runs.
//! - `depth - 1` *change points* are drawn uniformly among the first
//!   `expected` branching decisions (decisions with more than one task
//!   ready). At the `i`-th change point the task about to run drops to
//!   priority `i`, below every initial priority, and the pick is made again.
//! - A bug of depth `d` (one that needs `d` ordering constraints) is found
//!   with probability at least `1 / (n * k^(d-1))` per run, for `n` tasks and
//!   `k` steps; `expected` should be about the number of branching decisions
//!   of a run.
//! - Priorities, change points and the value stream all derive from one seed
//!   (`rand_pcg::Pcg64Mcg`), so a PCT run replays from its seed.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::scheduler::{bounded, value_stream, Scheduler};
use crate::task::TaskId;

/// The PCT scheduler; see the module docs.
#[derive(Debug, Clone)]
pub struct PctScheduler {
    rng: Pcg64Mcg,
    values: Pcg64Mcg,
    priorities: Vec<Option<u64>>,
    change_points: Vec<u64>,
    decisions: u64,
    depth: u32,
}

impl PctScheduler {
    /// A PCT scheduler of bug depth `depth` (at least 1) expecting about
    /// `expected` branching decisions per run.
    pub fn new(seed: u64, depth: u32, expected: u64) -> PctScheduler {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let depth = depth.max(1);
        let span = expected.max(1) as usize;
        let mut change_points: Vec<u64> = (1..depth)
            .map(|_| 1 + bounded(rng.next_u64(), span) as u64)
            .collect();
        change_points.sort_unstable();
        PctScheduler {
            rng,
            values: value_stream(seed),
            priorities: Vec::new(),
            change_points,
            decisions: 0,
            depth,
        }
    }

    /// The change points drawn (branching-decision numbers, ascending).
    pub fn change_points(&self) -> &[u64] {
        &self.change_points
    }

    fn priority(&mut self, task: TaskId) -> u64 {
        if self.priorities.len() <= task {
            self.priorities.resize(task + 1, None);
        }
        match self.priorities[task] {
            Some(p) => p,
            None => {
                // Initial priorities sit above every change-point priority.
                let p = u64::from(self.depth) + 1 + (self.rng.next_u64() >> 2);
                self.priorities[task] = Some(p);
                p
            }
        }
    }

    fn highest(&mut self, ready: &[TaskId]) -> usize {
        let mut best = 0;
        let mut best_p = 0;
        for (i, &t) in ready.iter().enumerate() {
            let p = self.priority(t);
            if i == 0 || p > best_p {
                best = i;
                best_p = p;
            }
        }
        best
    }
}

impl Scheduler for PctScheduler {
    fn wants_footprints(&self) -> bool {
        false
    }

    fn pick(&mut self, ready: &[TaskId], _step: u64) -> usize {
        if ready.len() <= 1 {
            if let Some(&t) = ready.first() {
                self.priority(t);
            }
            return 0;
        }
        self.decisions += 1;
        let mut i = self.highest(ready);
        for j in 0..self.change_points.len() {
            if self.change_points[j] == self.decisions {
                self.priorities[ready[i]] = Some(j as u64 + 1);
                i = self.highest(ready);
            }
        }
        i
    }

    fn next_u64(&mut self) -> u64 {
        self.values.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_one_never_switches_without_cause() {
        let mut p = PctScheduler::new(9, 1, 10);
        assert!(p.change_points().is_empty());
        let first = p.pick(&[0, 1, 2], 0);
        for step in 1..20 {
            assert_eq!(p.pick(&[0, 1, 2], step), first);
        }
    }

    #[test]
    fn change_point_demotes_the_running_task() {
        let mut p = PctScheduler::new(3, 2, 1);
        assert_eq!(p.change_points(), &[1]);
        let ready = [0, 1];
        // Priorities before the change point.
        let top = p.clone().highest(&ready);
        let picked = p.pick(&ready, 0);
        assert_ne!(picked, top, "the top task is demoted at the change point");
        assert_eq!(p.pick(&ready, 1), picked);
    }

    #[test]
    fn seeded() {
        let mut a = PctScheduler::new(5, 3, 50);
        let mut b = PctScheduler::new(5, 3, 50);
        for step in 0..100 {
            let ready: Vec<usize> = (0..(step % 4 + 1) as usize).collect();
            assert_eq!(a.pick(&ready, step), b.pick(&ready, step));
        }
    }
}
