//! What one checker found on one scenario: [`Report`] and its [`Found`]
//! violations, the judgement of a report (goals, nothing explored), and why
//! a search stopped early ([`Stopped`]), the row's [`Status`].
//!
//! Layer 0 (shared): imports only layer-0 files (`checker`, `goals`).

use super::checker::Checker;
use super::goals::GoalHit;
use crate::faults::Fault;
use crate::oracle::RuleId;
use lifecycle_sim::DfsStats;
use serde::Serialize;
use std::collections::BTreeMap;

/// One violation found, with the line that replays it.
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    /// What it breaks.
    pub rule: RuleId,
    /// What happened.
    pub message: String,
    /// The self-contained replay line.
    pub replay: String,
    /// The shrunk replay line (simulator failures).
    pub shrunk: Option<String>,
    /// Preemptions of the original and the shrunk run.
    pub preemptions: Option<(u32, u32)>,
}

/// What one checker found on one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: &'static str,
    /// The checker.
    pub checker: Checker,
    /// Fault switched on, if any.
    pub fault: Option<Fault>,
    /// Executions run.
    pub executions: u64,
    /// Invariant evaluations (invariants × executions).
    pub invariants_checked: u64,
    /// Whether it passed.
    pub status: Status,
    /// Violations (the first failing execution's).
    pub violations: Vec<Found>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Whether the space was exhausted (loom, sim-dfs).
    pub exhausted: bool,
    /// What bounded the search (seeds, preemption bound, reduction, shard).
    pub bound: Option<String>,
    /// The exhaustive search's counters (sim-dfs).
    pub dfs: Option<DfsStats>,
    /// How often each outcome label was reached.
    pub outcomes: BTreeMap<String, u64>,
    /// Distinct contract views reached (see `view`): comparable across
    /// checkers.
    pub distinct_outcomes: u64,
    /// The views, each with the replay line of an execution reaching it.
    #[serde(skip)]
    pub views: BTreeMap<String, String>,
    /// Hits of each of the scenario's reachability goals.
    pub goals: Vec<GoalHit>,
    /// Goals this checker had to reach and did not.
    pub unreached: Vec<&'static str>,
    /// Why the checker could not run, if it could not.
    pub error: Option<String>,
    /// Why the checker skipped this scenario (status `skip`).
    pub skipped: Option<String>,
    /// Why a search that was not exhausted stopped before its bound
    /// (`None`: it ran its whole bound).
    pub stopped: Option<Stopped>,
    /// The part of the search this row covers (`None`: all of it).
    pub shard: Option<String>,
    /// Whether the goals and "nothing explored" were judged. A shard's row
    /// and an interrupted row are judged on violations only: their goals
    /// are judged on the union, by `lifecycle merge`, or not at all.
    pub judged: bool,
    /// Why the checker itself failed, before any judgement (what
    /// `lifecycle merge` needs to judge the union again).
    #[serde(skip)]
    pub cause: Option<String>,
}

/// A row's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No violation, no error of the checker, every goal reached.
    Pass,
    /// A violation, an error of the checker, or a goal never reached.
    Fail,
    /// The checker does not run this scenario (with the reason).
    Skip,
}

impl Status {
    /// Every status.
    pub const ALL: [Status; 3] = [Status::Pass, Status::Fail, Status::Skip];

    /// Its name in tables and JSON: `pass`, `fail`, `skip`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }

    /// Look a status up by name.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.name() == s)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// [`Report::stopped`]: why a search that was not exhausted stopped before
/// its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Stopped {
    /// The budget (`--budget`, `--dfs-executions`) ran out.
    #[serde(rename = "budget")]
    Budget,
    /// The scenario's own execution cap ran out (loom).
    #[serde(rename = "cap")]
    Cap,
    /// The search stopped at its first failure.
    #[serde(rename = "first failure")]
    FirstFailure,
    /// Ctrl-C (see [`Stop`]).
    #[serde(rename = "interrupted")]
    Interrupted,
}

impl Stopped {
    /// Every reason.
    pub const ALL: [Stopped; 4] = [
        Stopped::Budget,
        Stopped::Cap,
        Stopped::FirstFailure,
        Stopped::Interrupted,
    ];

    /// Its name in JSON: `budget`, `cap`, `first failure`, `interrupted`.
    pub fn name(self) -> &'static str {
        match self {
            Stopped::Budget => "budget",
            Stopped::Cap => "cap",
            Stopped::FirstFailure => "first failure",
            Stopped::Interrupted => "interrupted",
        }
    }

    /// How a table says it: `stopped at budget`, ..., `interrupted`.
    pub fn shown(self) -> &'static str {
        match self {
            Stopped::Budget => "stopped at budget",
            Stopped::Cap => "stopped at cap",
            Stopped::FirstFailure => "stopped at failure",
            Stopped::Interrupted => "interrupted",
        }
    }

    /// Look a reason up by name.
    pub fn parse(s: &str) -> Option<Stopped> {
        Stopped::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// A stop request handed down to a search with its [`Budget`]: the
/// checkers look at it between executions, end their search there and
/// report what they have ([`Stopped::Interrupted`]). The command line hands
/// down its Ctrl-C flag (`cli::interrupt`); a search given
/// [`Stop::NEVER`] runs to its budget.
///
/// [`Budget`]: super::Budget
#[derive(Clone, Copy, Debug, Default)]
pub struct Stop(Option<&'static std::sync::atomic::AtomicBool>);

impl Stop {
    /// No stop can be requested.
    pub const NEVER: Stop = Stop(None);

    /// A stop requested when `flag` is raised.
    pub const fn on(flag: &'static std::sync::atomic::AtomicBool) -> Stop {
        Stop(Some(flag))
    }

    /// Whether a stop was requested.
    pub fn requested(self) -> bool {
        self.0
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl Report {
    /// Judge the run from its counts: a run that explored nothing fails,
    /// and so does an exploring checker that never hit one of its goals
    /// (`unreached`). Sets `error`, `unreached`, `status` and `judged`.
    pub fn judge(&mut self) {
        self.judged = true;
        let error = match (&self.cause, self.executions, &self.skipped) {
            (None, 0, None) => Some("nothing was explored (0 executions)".to_string()),
            (e, _, _) => e.clone(),
        };
        let requires = self.checker.requires_goals();
        self.unreached = if requires && self.skipped.is_none() && self.fault.is_none() {
            self.goals
                .iter()
                .filter(|g| g.hits == 0 && g.excused.is_none())
                .map(|g| g.goal)
                .collect()
        } else {
            Vec::new()
        };
        self.error = match (error, self.unreached.is_empty()) {
            (None, false) => Some(format!(
                "reachability goals never hit: {} (explored too little to pass)",
                self.unreached.join(", ")
            )),
            (e, _) => e,
        };
        let vacuous = self.vacuous_goals();
        if self.error.is_none() && !vacuous.is_empty() {
            self.error = Some(format!(
                "goals hit by every execution of an exhausted search: {} (a goal names a \
                 window that some executions miss; one that all of them hit proves nothing)",
                vacuous.join(", ")
            ));
        }
        self.status = status(&self.skipped, &self.violations, &self.error);
    }

    /// The goals that every complete execution of an exhausted `sim-dfs`
    /// search hit, with no fault on: the search saw every class of the
    /// scenario's executions (within its bound), and none missed them, so
    /// they are no window of a race but what the scenario always does.
    pub fn vacuous_goals(&self) -> Vec<&'static str> {
        let complete = match &self.dfs {
            Some(d) if self.checker == Checker::SimDfs && self.exhausted => d.complete,
            _ => return Vec::new(),
        };
        if complete == 0 || self.fault.is_some() || self.skipped.is_some() {
            return Vec::new();
        }
        (self.goals.iter())
            .filter(|g| g.hits == complete)
            .map(|g| g.goal)
            .collect()
    }

    /// Judge violations and the checker's own errors only (a shard, an
    /// interrupted run).
    pub fn judge_violations(&mut self) {
        self.judged = false;
        self.unreached = Vec::new();
        self.error = self.cause.clone();
        self.status = status(&self.skipped, &self.violations, &self.error);
    }
}

fn status(skipped: &Option<String>, violations: &[Found], error: &Option<String>) -> Status {
    match (skipped, violations.is_empty() && error.is_none()) {
        (_, false) => Status::Fail,
        (Some(_), true) => Status::Skip,
        (None, true) => Status::Pass,
    }
}
