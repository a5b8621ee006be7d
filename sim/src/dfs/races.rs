//! Race analysis of an explored run: the reversals each decision still
//! has to explore (source sets, or wakeup sequences in optimal mode).

use super::*;

impl State {
    /// Source-DPOR: adds to each decision's backtrack set a task that
    /// reverses each race the run just explored has there (see `race`).
    ///
    /// With a preemption bound (as loom and CHESS do), a reversal that
    /// would need one preemption too many is also tried at the latest
    /// earlier decision where switching is free (the task before it could
    /// not go on), so that the race can still be reversed within the bound
    /// (Coons, Musuvathi and McKinley, "Bounded partial-order reduction").
    pub(super) fn analyse_races(&mut self) {
        if !self.config.reduction || !self.config.dpor {
            return;
        }
        if self.optimal() {
            self.insert_reversals();
            return;
        }
        let events = self.events();
        let (found, reversals) = reversals(&events, |at| {
            let n = &self.stack[at];
            n.ready.len() > 1 && self.dpor_at(n.branches)
        });
        drop(events);
        self.stats.races += found;
        let bound = self.config.preemption_bound;
        for Reversal { at, initials } in reversals {
            let added = self.add_backtrack(at, &initials);
            if bound.is_some() && !added.1 {
                let free = (0..at).rev().find(|&k| {
                    let n = &self.stack[k];
                    let switch_free = n.last.is_none_or(|l| n.ready.binary_search(&l).is_err());
                    switch_free && initials.iter().any(|q| n.ready.binary_search(q).is_ok())
                });
                if let Some(k) = free {
                    if self.dpor_at(self.stack[k].branches) {
                        self.add_backtrack(k, &initials);
                    }
                }
            }
        }
    }

    /// The run on the stack as race analysis reads it.
    fn events(&self) -> Vec<Event<'_>> {
        self.stack
            .iter()
            .map(|n| Event {
                task: n.chosen,
                footprint: n.footprint.as_deref().unwrap_or(&[]),
                ready: Some(&n.ready),
            })
            .collect()
    }

    /// Optimal DPOR: inserts into each decision's wakeup tree the sequence
    /// that reverses each race the run just explored has there, unless a
    /// task asleep or explored there is a weak initial of it (that class is
    /// covered) (see `wakeup`).
    fn insert_reversals(&mut self) {
        let events = self.events();
        let (found, reversing) = reversing_sequences(&events, |at| {
            let n = &self.stack[at];
            n.ready.len() > 1 && self.optimal_at(n.branches)
        });
        let sequences: Vec<(usize, wakeup::Sequence)> = reversing
            .into_iter()
            .map(|r| {
                let w = r
                    .sequence
                    .iter()
                    .map(|&k| (events[k].task, events[k].footprint.to_vec()))
                    .collect();
                (r.at, w)
            })
            .collect();
        drop(events);
        self.stats.races += found;
        for (at, w) in sequences {
            let node = &mut self.stack[at];
            let covered = node
                .sleep
                .iter()
                .chain(node.done.iter())
                .any(|(q, f)| wakeup::weak_initial(*q, f, &w).is_some());
            if !covered && wakeup::insert(&mut node.wakeup, w) {
                self.stats.backtracks += 1;
            }
        }
    }

    /// Adds one of `initials` (enabled at decision `at`; all enabled tasks
    /// if none is) to its backtrack set unless one is there already.
    /// Returns (whether one was added, whether the decision covers the race
    /// within the preemption bound).
    fn add_backtrack(&mut self, at: usize, initials: &[TaskId]) -> (bool, bool) {
        let bound = self.config.preemption_bound;
        let node = &mut self.stack[at];
        let mut usable: Vec<TaskId> = initials
            .iter()
            .copied()
            .filter(|q| node.ready.binary_search(q).is_ok())
            .collect();
        if usable.is_empty() {
            // Enabledness escaped the footprints: be conservative.
            usable.clone_from(&node.ready);
        }
        let within = |q: TaskId| {
            bound.is_none_or(|b| {
                node.preemptions + u32::from(is_preemption(&node.ready, node.last, q)) <= b
            })
        };
        let covered = usable.iter().any(|q| {
            node.backtrack.contains(q) || node.chosen == *q || node.done.iter().any(|(d, _)| d == q)
        });
        if covered {
            return (false, usable.iter().any(|&q| within(q)));
        }
        let asleep = |q: &TaskId| node.sleep.iter().any(|(s, _)| s == q);
        // Prefer a task that is awake and within the bound, then the one
        // that ran last (no preemption), then the lowest id.
        let good = |q: &TaskId| !asleep(q) && within(*q);
        let pick = usable
            .iter()
            .copied()
            .filter(good)
            .find(|q| Some(*q) == node.last)
            .or_else(|| usable.iter().copied().find(good))
            .unwrap_or(usable[0]);
        let ok = within(pick);
        node.backtrack.push(pick);
        self.stats.backtracks += 1;
        (true, ok)
    }
}
