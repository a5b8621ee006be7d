//! [`Tally`]: accumulates one checker's executions (outcome labels, views,
//! goal hits, the first failure) into a [`Report`]; and [`Saved`], what a
//! `sim-dfs` checkpoint keeps of a tally.
//!
//! Layer 0 (shared): imports only layer-0 files (`checker`, `goals`,
//! `report`, `view`).

use super::checker::Checker;
use super::goals::GoalTally;
use super::report::{Found, Report, Status, Stopped};
use super::view;
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::scenarios::{Outcome, Scenario};
use lifecycle_sim::{DfsStats, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Accumulates executions into a [`Report`].
pub struct Tally {
    scenario: Scenario,
    checker: Checker,
    faults: Faults,
    start: Instant,
    /// Executions counted so far.
    pub executions: u64,
    invariants: u64,
    outcomes: BTreeMap<String, u64>,
    /// The first failing execution's violations and replay line.
    pub first_failure: Option<(Vec<Violation>, String)>,
    other_failure: Option<(Vec<Violation>, String)>,
    want: &'static [crate::rules::Rule],
    shrunk: Option<(String, u32, u32)>,
    exhausted: bool,
    bound: Option<String>,
    dfs: Option<DfsStats>,
    /// Contract views reached (see `view`), each with the replay line of
    /// its first execution (empty until known).
    views: BTreeMap<String, String>,
    /// A view first reached by the last execution whose line is not known
    /// yet (shuttle knows a schedule only once its execution ended).
    pending_view: Option<String>,
    goals: GoalTally,
    error: Option<String>,
    skipped: Option<String>,
    stopped: Option<Stopped>,
    shard: Shard,
}

impl Tally {
    /// Nothing counted yet, for `scenario` under `checker` with `faults` on.
    pub fn new(scenario: &Scenario, checker: Checker, faults: Faults) -> Self {
        Tally {
            scenario: scenario.clone(),
            checker,
            faults,
            start: Instant::now(),
            executions: 0,
            invariants: 0,
            outcomes: BTreeMap::new(),
            first_failure: None,
            other_failure: None,
            want: &[],
            shrunk: None,
            exhausted: false,
            bound: None,
            dfs: None,
            views: BTreeMap::new(),
            pending_view: None,
            goals: GoalTally::new(scenario, checker),
            error: None,
            skipped: None,
            stopped: None,
            shard: Shard::ALL,
        }
    }

    /// Record one execution; returns `true` if it failed.
    pub fn add(&mut self, outcome: &Outcome, replay: impl FnOnce() -> String) -> bool {
        self.executions += 1;
        self.goals.add(outcome);
        let mut replay = Some(replay);
        let mut line: Option<String> = None;
        let mut line_of = move || {
            line.get_or_insert_with(|| replay.take().map(|f| f()).unwrap_or_default())
                .clone()
        };
        let key = view::view_key(&self.scenario, outcome);
        if !self.views.contains_key(&key) {
            let l = line_of();
            if l.is_empty() {
                self.pending_view = Some(key.clone());
            }
            self.views.insert(key, l);
        }
        self.invariants += outcome.invariants as u64;
        *self.outcomes.entry(outcome.label.clone()).or_default() += 1;
        if outcome.violations.is_empty() {
            return false;
        }
        let wanted = self.want.is_empty() || outcome.violations.iter().any(|v| self.wants(v.rule));
        if !wanted {
            if self.other_failure.is_none() {
                self.other_failure = Some((outcome.violations.clone(), line_of()));
            }
            return false;
        }
        if self.first_failure.is_none() {
            self.first_failure = Some((outcome.violations.clone(), line_of()));
        }
        true
    }

    /// The rule of `outcome` a search was after: the first wanted one.
    pub fn wanted_rule(&self, outcome: &Outcome) -> Option<RuleId> {
        outcome
            .violations
            .iter()
            .find(|v| self.wants(v.rule))
            .or(outcome.violations.first())
            .map(|v| v.rule)
    }

    /// Whether `outcome` is a failure this search is after (one that
    /// [`add`](Self::add) would count as *the* failure).
    pub fn is_wanted_failure(&self, outcome: &Outcome) -> bool {
        !outcome.violations.is_empty()
            && (self.want.is_empty() || outcome.violations.iter().any(|v| self.wants(v.rule)))
    }

    fn wants(&self, rule: RuleId) -> bool {
        rule.is_in(self.want)
    }

    /// Only failures breaking one of `rules` count as *the* failure (and
    /// stop a `stop_at_first` run); others are kept in case none does.
    pub fn want(&mut self, rules: &'static [crate::rules::Rule]) {
        self.want = rules;
    }

    /// Replace the first failure (once its line and checks are known).
    pub fn replace_failure(&mut self, outcome: &Outcome, replay: String) {
        self.first_failure = Some((outcome.violations.clone(), replay));
    }

    /// Record a failure found elsewhere (a worker process).
    pub fn record_failure(&mut self, outcome: &Outcome, replay: String) {
        if self.first_failure.is_none() {
            self.first_failure = Some((outcome.violations.clone(), replay));
        }
    }

    /// Set the replay line of the first failure (known only later).
    pub fn set_replay(&mut self, replay: String) {
        if let Some((_, r)) = self.first_failure.as_mut() {
            *r = replay;
        }
    }

    /// Add counts measured elsewhere (a worker process).
    pub fn merge(&mut self, executions: u64, invariants: u64, outcomes: Vec<(String, u64)>) {
        self.executions += executions;
        self.invariants += invariants;
        for (k, n) in outcomes {
            *self.outcomes.entry(k).or_default() += n;
        }
    }

    /// The shrunk line of the first failure and the preemptions before and
    /// after.
    pub fn set_shrunk(&mut self, line: String, before: u32, after: u32) {
        self.shrunk = Some((line, before, after));
    }

    /// Add goal hits and views counted elsewhere (a worker).
    pub fn merge_goals(&mut self, goals: &[(String, u64)], views: Vec<(String, String)>) {
        for (name, hits) in goals {
            self.goals.merge(name, *hits);
        }
        for (view, line) in views {
            self.views.entry(view).or_insert(line);
        }
    }

    /// The replay line of the view the last execution reached first, once
    /// its schedule is known (shuttle).
    pub fn resolve_pending_view(&mut self, line: impl FnOnce() -> String) {
        if let Some(key) = self.pending_view.take() {
            self.views.insert(key, line());
        }
    }

    /// Start from the counts of a resumed search: its outcome labels,
    /// views, goal hits, invariants evaluated and first failure.
    pub fn resume_counts(&mut self, saved: Saved) {
        self.outcomes = saved.outcomes;
        self.views = saved.views;
        self.invariants = saved.invariants;
        self.goals = GoalTally::new(&self.scenario, self.checker);
        for (name, hits) in &saved.goals {
            self.goals.merge(name, *hits);
        }
        self.first_failure = saved.failure;
        self.shrunk = saved.shrunk;
    }

    /// What a checkpoint keeps of this tally (see [`Tally::resume_counts`]).
    pub fn saved(&self) -> Saved {
        Saved {
            outcomes: self.outcomes.clone(),
            views: self.views.clone(),
            invariants: self.invariants,
            goals: self
                .goals
                .hits()
                .into_iter()
                .map(|g| (g.goal.to_string(), g.hits))
                .collect(),
            failure: self.first_failure.clone(),
            shrunk: self.shrunk.clone(),
        }
    }

    /// What bounded the search.
    pub fn bound(&mut self, bound: String) {
        self.bound = Some(bound);
    }

    /// The exhaustive search's counters.
    pub fn dfs(&mut self, stats: DfsStats) {
        self.dfs = Some(stats);
    }

    /// This checker cannot run this scenario.
    pub fn skip(&mut self, why: String) {
        self.skipped = Some(why);
    }

    /// Why the search stopped before its bound (see [`Report::stopped`]).
    pub fn stopped(&mut self, why: Stopped) {
        self.stopped = Some(why);
    }

    /// The part of the search this tally covers.
    pub fn shard(&mut self, shard: Shard) {
        self.shard = shard;
    }

    /// The search ended: every schedule of its bound was explored.
    pub fn exhausted(&mut self) {
        self.exhausted = true;
    }

    /// The checker itself failed (see [`Report::cause`]).
    pub fn error(&mut self, e: String) {
        self.error = Some(e);
    }

    /// The report. A whole, uninterrupted run is judged on its goals too
    /// ([`Report::judge`]); a shard or an interrupted run on its
    /// violations only.
    pub fn finish(mut self) -> Report {
        if self.first_failure.is_none() {
            self.first_failure = self.other_failure.take();
            self.shrunk = None;
        }
        let violations = match &self.first_failure {
            Some((vs, replay)) => vs
                .iter()
                .map(|v| Found {
                    rule: v.rule,
                    message: v.message.clone(),
                    replay: replay.clone(),
                    shrunk: self.shrunk.as_ref().map(|s| s.0.clone()),
                    preemptions: self.shrunk.as_ref().map(|s| (s.1, s.2)),
                })
                .collect(),
            None => Vec::new(),
        };
        let whole = self.shard.count == 1 && self.stopped != Some(Stopped::Interrupted);
        let mut report = Report {
            scenario: self.scenario.name,
            checker: self.checker,
            fault: self.faults.iter().next(),
            executions: self.executions,
            invariants_checked: self.invariants,
            status: Status::Pass,
            violations,
            seconds: self.start.elapsed().as_secs_f64(),
            exhausted: self.exhausted,
            bound: self.bound,
            dfs: self.dfs,
            distinct_outcomes: self.views.len() as u64,
            views: self.views,
            goals: self.goals.hits(),
            unreached: Vec::new(),
            outcomes: self.outcomes,
            error: None,
            skipped: self.skipped,
            stopped: if self.exhausted { None } else { self.stopped },
            shard: (self.shard.count > 1).then(|| self.shard.to_string()),
            judged: false,
            cause: self.error,
        };
        if whole {
            report.judge();
        } else {
            report.judge_violations();
        }
        report
    }
}

/// What a `sim-dfs` checkpoint keeps of a `Tally`, so a resumed search
/// reports the whole search, not the part after the checkpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Saved {
    /// Outcome label counts.
    pub outcomes: BTreeMap<String, u64>,
    /// Views reached, with their replay lines.
    pub views: BTreeMap<String, String>,
    /// Invariants evaluated.
    pub invariants: u64,
    /// Hits per goal, by name.
    pub goals: Vec<(String, u64)>,
    /// The first failure: what it broke (each rule typed) and its replay
    /// line.
    pub failure: Option<(Vec<Violation>, String)>,
    /// Its shrunk line and preemptions before and after.
    pub shrunk: Option<(String, u32, u32)>,
}
