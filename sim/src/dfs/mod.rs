//! Exhaustive depth-first search over scheduling decisions, with sleep-set
//! reduction, dynamic partial-order reduction (optimal without a bound), a
//! preemption bound, sharding and checkpoints.
//!
//! # How it works
//!
//! The search is stateless (like loom and CHESS): every execution re-runs the
//! program from the start under a [`DfsScheduler`] that replays the current
//! path's recorded choices, then extends the path with first choices. After
//! the run, [`Dfs::end_execution`] backtracks to the deepest decision with an
//! unexplored alternative. The search is exhausted when none is left.
//!
//! States of one decision node: *open* (its chosen task not yet polled),
//! *executed* (its footprint known), *backtracked* (the choice moved into
//! `done`, the next alternative or wakeup branch chosen) and *popped* (no
//! alternative left).
//!
//! # Reduction: sleep sets (Godefroid 1996)
//!
//! Each poll's *footprint* is the set of resources it touched, each read or
//! written (see [`touch`](crate::touch) and [`touch_read`](crate::touch_read));
//! two polls of different tasks commute unless one writes a resource the
//! other touches. A *stutter* (a failed await and nothing else, see
//! [`note_await`](crate::note_await)) commutes with every poll. When the search moves from a node to its next
//! alternative `t`, the alternatives already explored there (and the node's
//! own sleep set) are put to sleep in `t`'s subtree for as long as the polls
//! taken are independent of them: running them there would only reorder
//! commuting polls. A run in which every ready task sleeps is *blocked* and
//! pruned: it is finished without preemptions and not counted as explored
//! (finishing it lets the program run its own teardown). Every Mazurkiewicz
//! trace (every class of runs equal up to swapping adjacent independent
//! polls) keeps at least one complete run, so
//! the set of terminal states is the same with and without reduction;
//! `tests/dfs.rs` checks that on programs with known answers.
//!
//! # Dynamic partial-order reduction
//!
//! On top of the sleep sets, race analysis of each explored run (see
//! `race`: happens-before from footprints; a race is two dependent steps of
//! different tasks ordered by nothing else) decides what a decision still
//! has to explore (Abdulla, Aronis, Jonsson and Sagonas, "Optimal dynamic
//! partial order reduction", POPL 2014). A race is not reversed where its
//! second step's task was enabled (spawned or woken) by its first step and
//! by nothing else before it: that step cannot run earlier.
//!
//! - **With [`DfsConfig::optimal`] and no preemption bound: optimal
//!   DPOR.** Each decision keeps a
//!   *wakeup tree* (see `wakeup`): for each race, the whole sequence that
//!   reverses it (`notdep(e).e'`) is inserted at the first step's decision,
//!   unless a task asleep or explored there is a weak initial of it (that
//!   class is covered); the search follows a branch step by step and hands
//!   its subtree down. Where a task's next step is the same event in every
//!   run that reaches it, every class is explored once and no run ends
//!   *sleep-blocked* (every ready task asleep); see below for where the
//!   lifecycle's steps are not.
//! - **Otherwise: source sets.** A decision's *backtrack set* gets one
//!   *initial* of each reversal; runs where every ready task sleeps are
//!   counted as `blocked`.
//!
//! On programs whose steps are the same events in every run, optimal DPOR
//! explores one complete run per class and none sleep-blocked
//! (`tests/classes.rs` counts the classes independently). The lifecycle's
//! scenarios are not such programs, which is why `check` keeps source sets.
//! A failed await is a *stutter* (see `resource::note_await`): no event,
//! independent of everything for the sleep sets. A decision whose chosen
//! step stuttered (without a preemption) explores no other alternative:
//! the decision after it has the same state and the same other tasks
//! ready. Two things make it less
//! than a no-op, and are why optimal DPOR still meets blocked runs there:
//! the failed check registers the task as a waiter, so later writers wake
//! it (steps that exist only in runs with that await); and a step ends at
//! a lock only when another task could run, so one task's steps are cut
//! differently in different runs. A wakeup branch's step that passed an
//! await where the race was found can fail it where the branch runs (the
//! reversal moved it before the write it needed): the run goes on, and
//! `await_stalled` counts such steps. Where the run then ends with every
//! ready task asleep (the writer the branch was to run first sleeps, the
//! task of the failed check is parked), `blocked_after_stall` counts it:
//! on the lifecycle's scenarios that is the largest share of optimal
//! DPOR's sleep-blocked runs.
//!
//! # Bound
//!
//! A *preemption* is a decision that does not pick the task polled just
//! before although it is still ready. With a bound, choices that would exceed
//! it are not explored (then "exhausted" means "exhausted within the bound").
//! A race whose reversal would need one preemption too many is also
//! reversed at the latest earlier decision where switching is free, as loom
//! does (Coons et al., bounded partial-order reduction); a bounded search
//! with reduction is a heuristic, checked by differential coverage against
//! the other checkers.
//!
//! # Sharding
//!
//! With `shard = k/n`, each run is owned by one shard, chosen by a hash of its
//! choices at its first `split_depth` branching decisions (decisions with
//! more than one ready task). A shard still walks the shared top of the tree
//! (it needs the footprints there for its sleep sets) but prunes a run as
//! soon as the run's owner is known to be another shard, and counts only the
//! runs it owns. The n shards together count exactly the unsharded runs.
//!
//! # Checkpoints
//!
//! Between executions the whole search is its stack of nodes;
//! [`Dfs::checkpoint`] writes it as JSON and [`Dfs::resume`] continues it.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::race::{reversals, reversing_sequences, Event, Reversal};
use crate::resource::{independent, is_stutter_step};
use crate::scheduler::{is_preemption, value_stream, Scheduler};
use crate::task::TaskId;
use crate::wakeup::{self, Branch};

mod config;
mod races;

pub use config::{DfsConfig, DfsStats, ExecKind, Shard};

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Node {
    ready: Vec<TaskId>,
    last: Option<TaskId>,
    chosen: TaskId,
    footprint: Option<Vec<u64>>,
    done: Vec<(TaskId, Vec<u64>)>,
    sleep: Vec<(TaskId, Vec<u64>)>,
    /// The alternatives to explore here: every one (no DPOR), or the first
    /// choice plus those race analysis added.
    #[serde(default)]
    backtrack: Vec<TaskId>,
    /// Whether the chosen task's step ended mid-poll (switching away from
    /// it next is a preemption) rather than with `Pending`.
    #[serde(default)]
    mid_poll: Option<bool>,
    /// Optimal DPOR: the branches still owed here (the wakeup tree
    /// without the branch being explored), and the subtree of the branch
    /// being explored, which the next decision inherits.
    #[serde(default)]
    wakeup: Vec<Branch>,
    #[serde(default)]
    below: Vec<Branch>,
    /// Optimal DPOR: the footprint the wakeup branch chosen here recorded
    /// for its step (`None`: not chosen from a wakeup branch).
    #[serde(default)]
    expected: Option<Vec<u64>>,
    /// Preemptions before this decision.
    preemptions: u32,
    /// Branching decisions before this one.
    branches: u32,
    /// Hash of the choices at the branching decisions before this one (up
    /// to `split_depth`).
    key: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Stop {
    Blocked,
    Foreign,
    Nondeterministic(String),
}

#[derive(Debug, Serialize, Deserialize)]
struct State {
    config: DfsConfig,
    stack: Vec<Node>,
    stats: DfsStats,
    exhausted: bool,
    #[serde(skip)]
    pos: usize,
    #[serde(skip)]
    stop: Option<Stop>,
    #[serde(skip)]
    last: Option<TaskId>,
    /// The recorded footprint of the wakeup branch the new decision
    /// follows, between `owed` and the decision's push.
    #[serde(skip)]
    expected_next: Option<Vec<u64>>,
    /// Whether a wakeup-branch step of the current run failed its await.
    #[serde(skip)]
    stalled: bool,
}

const KEY_SEED: u64 = 0xcbf2_9ce4_8422_2325;

fn mix(key: u64, task: TaskId) -> u64 {
    let mut h = key;
    for b in (task as u64).to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The alternatives at a decision, in exploration order: the task polled
/// last first (no preemption), then the others ascending; minus `excluded`
/// and minus preempting choices once the bound is reached.
fn alternatives(
    ready: &[TaskId],
    last: Option<TaskId>,
    preemptions: u32,
    bound: Option<u32>,
    excluded: impl Fn(TaskId) -> bool,
) -> Vec<TaskId> {
    let mut out = Vec::new();
    let last_ready = matches!(last, Some(l) if ready.binary_search(&l).is_ok());
    if last_ready {
        let l = last.expect("last_ready");
        if !excluded(l) {
            out.push(l);
        }
    }
    let may_preempt = bound.is_none_or(|b| preemptions < b);
    if last_ready && !may_preempt {
        return out;
    }
    out.extend(
        ready
            .iter()
            .copied()
            .filter(|&t| Some(t) != last || !last_ready)
            .filter(|&t| !excluded(t)),
    );
    out
}

impl State {
    /// Whether decisions after `branches` branching decisions use DPOR.
    fn dpor_at(&self, branches: u32) -> bool {
        let c = &self.config;
        let full_top = c.full_top || c.shard.count > 1;
        c.reduction && c.dpor && !(full_top && branches < c.split_depth)
    }

    /// Whether decisions after `branches` branching decisions use wakeup
    /// trees (optimal DPOR): DPOR without a preemption bound.
    fn optimal_at(&self, branches: u32) -> bool {
        self.optimal() && self.dpor_at(branches)
    }

    /// Whether the search uses wakeup trees at all: optimal DPOR asked
    /// for, and no preemption bound.
    fn optimal(&self) -> bool {
        self.config.optimal && self.config.preemption_bound.is_none()
    }

    /// Whether this shard owns the subtree of `key`. The key is a
    /// byte-wise FNV hash of the choices, whose low bits follow the low bits
    /// of the task ids; a splitmix64 finaliser spreads it first, so the
    /// shards get balanced parts (the union is the same either way).
    fn owner(&self, key: u64) -> bool {
        let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        self.config.shard.count <= 1
            || (z % u64::from(self.config.shard.count)) == u64::from(self.config.shard.index)
    }

    /// The key of the current path including the last node's own choice.
    fn path_key(&self) -> u64 {
        match self.stack[..self.pos.min(self.stack.len())].last() {
            None => KEY_SEED,
            Some(n) => self.child_key(n),
        }
    }

    fn child_key(&self, n: &Node) -> u64 {
        if n.ready.len() > 1 && n.branches < self.config.split_depth {
            mix(n.key, n.chosen)
        } else {
            n.key
        }
    }

    fn pick(&mut self, ready: &[TaskId], step: u64) -> usize {
        if self.stop.is_some() {
            // A pruned run is finished without preemptions and without
            // recording anything: abandoning it mid-way would drop tasks
            // whose teardown never ran (reference cycles the program only
            // breaks by finishing).
            return self
                .last
                .and_then(|l| ready.binary_search(&l).ok())
                .unwrap_or(0);
        }
        if self.pos < self.stack.len() {
            let node = &self.stack[self.pos];
            if node.ready != ready {
                self.stop = Some(Stop::Nondeterministic(format!(
                    "decision {} (step {step}): ready tasks {ready:?}, recorded {:?}",
                    self.pos, node.ready
                )));
                return 0;
            }
            self.pos += 1;
            return ready.binary_search(&node.chosen).unwrap_or(0);
        }
        // A new decision.
        let inherited = self
            .stack
            .last_mut()
            .map(|p| std::mem::take(&mut p.below))
            .unwrap_or_default();
        let (last, preemptions, branches, key, sleep) = match self.stack.last() {
            None => (None, 0, 0, KEY_SEED, Vec::new()),
            Some(p) => {
                let fp = p.footprint.as_deref().unwrap_or(&[]);
                let sleep = if self.config.reduction {
                    p.sleep
                        .iter()
                        .chain(p.done.iter())
                        .filter(|(t, f)| {
                            *t != p.chosen && ready.binary_search(t).is_ok() && independent(f, fp)
                        })
                        .cloned()
                        .collect()
                } else {
                    Vec::new()
                };
                let pre = p.preemptions + u32::from(is_preemption(&p.ready, p.last, p.chosen));
                let branches = p.branches + u32::from(p.ready.len() > 1);
                // After a `Pending` the task gave way: no task is "last",
                // so no choice here is a preemption.
                let last = (p.mid_poll != Some(false)).then_some(p.chosen);
                (last, pre, branches, self.child_key(p), sleep)
            }
        };
        if branches >= self.config.split_depth && !self.owner(key) {
            self.stop = Some(Stop::Foreign);
            return 0;
        }
        let (mut wakeup, below, owed) = self.owed(ready, inherited, branches);
        let mut alts = match owed {
            Some(t) => vec![t],
            None => alternatives(
                ready,
                last,
                preemptions,
                self.config.preemption_bound,
                |t| sleep.iter().any(|(s, _)| *s == t),
            ),
        };
        let last_ready = last.filter(|l| ready.binary_search(l).is_ok());
        if let (true, Some(l), Some(_)) =
            (alts.is_empty(), last_ready, self.config.preemption_bound)
        {
            // Every awake task would need one preemption too many: go on
            // with the task that ran last (asleep, but free to continue)
            // rather than waste the run. Sleep sets and a bound are both
            // heuristics together; this keeps the run within the bound.
            alts.push(l);
            self.stats.woken_in_bound += 1;
        }
        let Some(&chosen) = alts.first() else {
            self.stop = Some(Stop::Blocked);
            return 0;
        };
        let backtrack = if self.dpor_at(branches) {
            vec![chosen]
        } else {
            alts
        };
        self.stack.push(Node {
            ready: ready.to_vec(),
            last,
            chosen,
            footprint: None,
            done: Vec::new(),
            sleep,
            backtrack,
            wakeup: std::mem::take(&mut wakeup),
            below,
            expected: self.expected_next.take(),
            mid_poll: None,
            preemptions,
            branches,
            key,
        });
        self.pos += 1;
        self.stats.max_depth = self.stats.max_depth.max(self.pos as u64);
        ready.binary_search(&chosen).unwrap_or(0)
    }

    /// Optimal DPOR at a new decision: the wakeup tree it inherited, split
    /// into the branches still owed here, the subtree below the first
    /// branch whose task is ready, and that task (`None`: nothing owed, or
    /// not an optimal decision).
    fn owed(
        &mut self,
        ready: &[TaskId],
        inherited: Vec<Branch>,
        branches: u32,
    ) -> (Vec<Branch>, Vec<Branch>, Option<TaskId>) {
        if !self.optimal_at(branches) {
            return (Vec::new(), Vec::new(), None);
        }
        let mut owed = inherited.into_iter();
        for b in owed.by_ref() {
            if ready.binary_search(&b.task).is_ok() {
                self.expected_next = Some(b.footprint);
                return (owed.collect(), b.children, Some(b.task));
            }
            self.stats.wakeup_dropped += 1;
        }
        (Vec::new(), Vec::new(), None)
    }

    fn suspended(&mut self, task: TaskId, mid_poll: bool) {
        if self.stop.is_some() || self.pos == 0 {
            return;
        }
        let node = &mut self.stack[self.pos - 1];
        if node.chosen == task {
            node.mid_poll = Some(mid_poll);
        }
    }

    fn observe(&mut self, task: TaskId, footprint: &[u64]) {
        self.last = Some(task);
        if self.stop.is_some() || self.pos == 0 {
            return;
        }
        let pos = self.pos - 1;
        let node = &mut self.stack[pos];
        if node.chosen != task {
            return;
        }
        match &node.footprint {
            None => {
                node.footprint = Some(footprint.to_vec());
                // A wakeup branch's step that was a real step where the race
                // was found and is a failed await here: the reversal ran it
                // before the write it needed. The run goes on (it is a class
                // of its own: the await registered its task as a waiter),
                // and is counted.
                if node
                    .expected
                    .as_deref()
                    .is_some_and(|e| is_stutter_step(footprint) && !is_stutter_step(e))
                {
                    self.stats.await_stalled += 1;
                    self.stalled = true;
                }
            }
            Some(f) if f.as_slice() != footprint => {
                self.stop = Some(Stop::Nondeterministic(format!(
                    "decision {pos}: task {task} touched {footprint:?}, recorded {f:?}"
                )));
            }
            Some(_) => {}
        }
    }

    fn end_execution(&mut self) -> ExecKind {
        let kind = match self.stop.take() {
            Some(Stop::Nondeterministic(m)) => ExecKind::Nondeterministic(m),
            Some(Stop::Foreign) => ExecKind::Foreign,
            Some(Stop::Blocked) if self.owner(self.path_key()) => ExecKind::Blocked,
            None if self.owner(self.path_key()) => ExecKind::Complete,
            Some(Stop::Blocked) | None => ExecKind::Foreign,
        };
        match kind {
            ExecKind::Complete => {
                self.stats.executions += 1;
                self.stats.complete += 1;
                let pre = self.stack[..self.pos]
                    .iter()
                    .filter(|n| is_preemption(&n.ready, n.last, n.chosen))
                    .count() as u32;
                self.stats.max_preemptions = self.stats.max_preemptions.max(pre);
            }
            ExecKind::Blocked => {
                self.stats.executions += 1;
                self.stats.blocked += 1;
                self.stats.blocked_after_stall += u64::from(self.stalled);
            }
            ExecKind::Foreign => self.stats.foreign += 1,
            ExecKind::Nondeterministic(_) => {}
        }
        // Nodes past the end of this run (a shorter run than recorded) are
        // dropped; the last executed node backtracks.
        self.stack.truncate(self.pos);
        if !matches!(kind, ExecKind::Nondeterministic(_)) {
            self.analyse_races();
        }
        self.backtrack();
        self.pos = 0;
        self.last = None;
        self.stalled = false;
        kind
    }

    fn backtrack(&mut self) {
        let bound = self.config.preemption_bound;
        let reduction = self.config.reduction;
        let optimal = self.optimal();
        while let Some(node) = self.stack.last_mut() {
            let fp = node.footprint.take().unwrap_or_default();
            let free = bound.is_none() || !is_preemption(&node.ready, node.last, node.chosen);
            if free && is_stutter_step(&fp) {
                // The chosen task failed an await and did nothing else: the
                // decision after it has this one's state, every other task
                // still ready and no preemption spent, so its subtree holds
                // every alternative here (the stutter is no event).
                self.stack.pop();
                continue;
            }
            node.done.push((node.chosen, fp));
            if optimal && !node.wakeup.is_empty() {
                // The next owed branch whose task is ready (and not explored
                // here already, which insertion rules out).
                let owed = std::mem::take(&mut node.wakeup);
                let mut owed = owed.into_iter();
                let mut next = None;
                for b in owed.by_ref() {
                    let explored = node.done.iter().any(|(d, _)| *d == b.task);
                    if node.ready.binary_search(&b.task).is_ok() && !explored {
                        next = Some(b);
                        break;
                    }
                    self.stats.wakeup_dropped += 1;
                }
                node.wakeup = owed.collect();
                if let Some(b) = next {
                    node.chosen = b.task;
                    node.below = b.children;
                    node.expected = Some(b.footprint);
                    return;
                }
                self.stack.pop();
                continue;
            }
            let excluded = |t: TaskId| {
                node.done.iter().any(|(d, _)| *d == t)
                    || (reduction && node.sleep.iter().any(|(s, _)| *s == t))
                    || !node.backtrack.contains(&t)
            };
            let next = alternatives(&node.ready, node.last, node.preemptions, bound, excluded)
                .first()
                .copied();
            if let Some(next) = next {
                node.chosen = next;
                return;
            }
            self.stack.pop();
        }
        self.exhausted = true;
    }
}

/// An exhaustive search; see the module docs. Drive it with
/// [`Dfs::next_scheduler`] and [`Dfs::end_execution`]:
///
/// ```
/// use lifecycle_sim::{yield_now, Dfs, DfsConfig, ExecKind, Sim};
///
/// let mut dfs = Dfs::new(DfsConfig::default());
/// let mut complete = 0;
/// while let Some(scheduler) = dfs.next_scheduler() {
///     let mut sim = Sim::new(scheduler, 1_000);
///     let _ = sim.block_on(async {
///         lifecycle_sim::spawn("a", async { yield_now().await });
///         yield_now().await;
///     });
///     if dfs.end_execution() == ExecKind::Complete {
///         complete += 1;
///     }
/// }
/// assert!(dfs.exhausted());
/// assert_eq!(complete, dfs.stats().complete);
/// ```
#[derive(Debug)]
pub struct Dfs {
    state: Rc<RefCell<State>>,
}

impl Dfs {
    /// A new search.
    pub fn new(config: DfsConfig) -> Dfs {
        Dfs {
            state: Rc::new(RefCell::new(State {
                config,
                stack: Vec::new(),
                stats: DfsStats::default(),
                exhausted: false,
                pos: 0,
                stop: None,
                last: None,
                expected_next: None,
                stalled: false,
            })),
        }
    }

    /// The scheduler for the next execution, or `None` once exhausted.
    pub fn next_scheduler(&mut self) -> Option<Box<dyn Scheduler>> {
        if self.exhausted() {
            return None;
        }
        Some(Box::new(DfsScheduler {
            state: Rc::clone(&self.state),
            values: value_stream(0),
        }))
    }

    /// Ends the current execution (after its `Sim` returned) and moves the
    /// search to the next path. Returns what the execution was.
    pub fn end_execution(&mut self) -> ExecKind {
        self.state.borrow_mut().end_execution()
    }

    /// Whether every path has been explored.
    pub fn exhausted(&self) -> bool {
        self.state.borrow().exhausted
    }

    /// The counters so far.
    pub fn stats(&self) -> DfsStats {
        self.state.borrow().stats.clone()
    }

    /// The configuration.
    pub fn config(&self) -> DfsConfig {
        self.state.borrow().config.clone()
    }

    /// The search so far, as JSON (call between executions).
    pub fn checkpoint(&self) -> String {
        serde_json::to_string(&*self.state.borrow()).expect("a search serializes")
    }

    /// Continues a search from [`Dfs::checkpoint`]'s output.
    ///
    /// # Errors
    /// If `json` is not a checkpoint.
    pub fn resume(json: &str) -> Result<Dfs, String> {
        let state: State =
            serde_json::from_str(json).map_err(|e| format!("malformed checkpoint: {e}"))?;
        Ok(Dfs {
            state: Rc::new(RefCell::new(state)),
        })
    }
}

/// The scheduler of one execution of a [`Dfs`].
struct DfsScheduler {
    state: Rc<RefCell<State>>,
    values: rand_pcg::Pcg64Mcg,
}

impl Scheduler for DfsScheduler {
    fn pick(&mut self, ready: &[TaskId], step: u64) -> usize {
        self.state.borrow_mut().pick(ready, step)
    }

    fn next_u64(&mut self) -> u64 {
        rand_core::RngCore::next_u64(&mut self.values)
    }

    fn observe(&mut self, task: TaskId, footprint: &[u64]) {
        self.state.borrow_mut().observe(task, footprint);
    }

    fn suspended(&mut self, task: TaskId, mid_poll: bool) {
        self.state.borrow_mut().suspended(task, mid_poll);
    }

    fn should_stop(&self) -> bool {
        // Only a program that does not repeat itself is stopped at once;
        // pruned runs are finished (see `State::pick`).
        matches!(self.state.borrow().stop, Some(Stop::Nondeterministic(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_parse_and_ranges() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 1, count: 4 });
        assert!(Shard::parse("0/4").is_err());
        assert!(Shard::parse("5/4").is_err());
        assert!(Shard::parse("x").is_err());
        let parts: Vec<_> = (0..3)
            .map(|i| Shard { index: i, count: 3 }.range(10))
            .collect();
        assert_eq!(parts, vec![0..3, 3..6, 6..10]);
    }

    #[test]
    fn alternatives_respect_bound_and_order() {
        assert_eq!(
            alternatives(&[1, 2, 3], Some(2), 0, None, |_| false),
            vec![2, 1, 3]
        );
        assert_eq!(
            alternatives(&[1, 2, 3], Some(2), 1, Some(1), |_| false),
            vec![2]
        );
        assert_eq!(
            alternatives(&[1, 3], Some(2), 1, Some(1), |_| false),
            vec![1, 3]
        );
        assert_eq!(
            alternatives(&[1, 2, 3], Some(2), 0, None, |t| t == 2),
            vec![1, 3]
        );
    }
}
