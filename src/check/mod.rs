//! The checkers: how each backend explores a scenario, and the report they
//! share.
//!
//! | checker          | explores                                   | replay payload      |
//! | ---------------- | ------------------------------------------ | ------------------- |
//! | `sim`            | portfolio: seeded random walk + PCT        | `seed=N;plan=P`     |
//! | `sim-dfs`        | every schedule, sleep-set reduced          | `seed=0;plan=P`     |
//! | `loom`           | every interleaving (preemption-bounded)    | `exec=N,pb=B`       |
//! | `shuttle-random` | shuttle's random scheduler                 | `schedule=HEX`      |
//! | `shuttle-pct`    | shuttle's PCT scheduler (depth d)          | `schedule=HEX`      |
//! | `tokio`          | the production runtime, many runs          | `runs=N` (re-run)   |

pub mod api;
pub mod goals;
pub mod journal_tap;
pub mod loom_check;
pub mod replay;
pub mod shrink;
pub mod shuttle_check;
pub mod sim_check;
pub mod swimlane;
pub mod tokio_check;
pub mod view;

use crate::faults::{Fault, Faults};
use crate::oracle::{RuleId, Violation};
use crate::scenarios::{Outcome, Scenario};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

pub use goals::{GoalHit, GoalTally};
use lifecycle_sim::{DfsConfig, DfsStats, Shard};
pub use replay::ReplayLine;
pub use sim_check::{DfsOptions, PortfolioOptions, Saved};

/// A checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Checker {
    /// The seeded simulator: random walk and PCT portfolio.
    Sim,
    /// The simulator's exhaustive search (sleep sets).
    SimDfs,
    /// loom, exhaustive up to a preemption bound.
    Loom,
    /// shuttle, random scheduler.
    ShuttleRandom,
    /// shuttle, PCT scheduler.
    ShuttlePct,
    /// tokio multi-thread runtime (conformance of the production backend).
    Tokio,
}

impl Checker {
    /// Every checker, in table order.
    pub const ALL: [Checker; 6] = [
        Checker::Sim,
        Checker::SimDfs,
        Checker::Loom,
        Checker::ShuttleRandom,
        Checker::ShuttlePct,
        Checker::Tokio,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Checker::Sim => "sim",
            Checker::SimDfs => "sim-dfs",
            Checker::Loom => "loom",
            Checker::ShuttleRandom => "shuttle-random",
            Checker::ShuttlePct => "shuttle-pct",
            Checker::Tokio => "tokio",
        }
    }

    /// Look a checker up by name.
    pub fn parse(s: &str) -> Option<Checker> {
        Checker::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Whether this checker controls the schedule, so an unreached goal
    /// means it explored too little (tokio does not: the OS schedules it).
    pub fn requires_goals(self) -> bool {
        !matches!(self, Checker::Tokio)
    }

    /// Whether `--shard k/n` splits this checker's search (`sim`: seed
    /// ranges, `sim-dfs`: subtrees, `tokio`: runs). loom and shuttle
    /// explore in an order of their own that cannot be cut without running
    /// the part before the cut, so `check` gives each of their rows whole
    /// to one shard instead.
    pub fn splits(self) -> bool {
        matches!(self, Checker::Sim | Checker::SimDfs | Checker::Tokio)
    }
}

impl fmt::Display for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much each checker explores.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Seeds for the `sim` portfolio (0..n).
    pub sim_seeds: u64,
    /// Executions `sim-dfs` may run before it stops unexhausted.
    pub dfs_executions: u64,
    /// `sim-dfs` preemption bound for every scenario (`None`: each
    /// scenario's own, see `ScenarioInfo::dfs_bound`).
    pub dfs_preemptions: Option<u32>,
    /// Added to a scenario's own `sim-dfs` bound (deeper tiers).
    pub dfs_bound_extra: u32,
    /// Iterations for each shuttle scheduler.
    pub shuttle_iterations: usize,
    /// PCT depth (the `sim` portfolio cycles through 1..=depth).
    pub pct_depth: usize,
    /// loom's preemption bound.
    pub loom_preemptions: usize,
    /// loom executions before it stops unexhausted (`None`: only the
    /// scenario's own cap, `ScenarioInfo::loom_max`).
    pub loom_executions: Option<u64>,
    /// Runs on tokio.
    pub tokio_runs: u64,
    /// The part of the search this process runs.
    pub shard: Shard,
    /// Shrink failures found on the simulator.
    pub shrink: bool,
    /// Only failures breaking one of these rules stop a search (empty: any
    /// failure); `mutants` sets the fault's rules.
    pub stop_on: &'static [crate::rules::Rule],
}

impl Budget {
    /// The PR-gate tier.
    pub const PR: Budget = Budget {
        sim_seeds: 20_000,
        dfs_executions: 2_000_000,
        dfs_preemptions: None,
        dfs_bound_extra: 0,
        shuttle_iterations: 5_000,
        pct_depth: 3,
        loom_preemptions: 3,
        loom_executions: None,
        tokio_runs: 200,
        shard: Shard::ALL,
        shrink: true,
        stop_on: &[],
    };

    /// The nightly tier: 50x the sampling, loom one bound deeper.
    pub const NIGHTLY: Budget = Budget {
        sim_seeds: 1_000_000,
        dfs_executions: 50_000_000,
        dfs_preemptions: None,
        dfs_bound_extra: 2,
        shuttle_iterations: 250_000,
        pct_depth: 4,
        loom_preemptions: 4,
        loom_executions: None,
        tokio_runs: 5_000,
        shard: Shard::ALL,
        shrink: true,
        stop_on: &[],
    };

    /// A tier by name (`pr`, `nightly`).
    pub fn tier(name: &str) -> Option<Budget> {
        match name {
            "pr" => Some(Budget::PR),
            "nightly" => Some(Budget::NIGHTLY),
            _ => None,
        }
    }

    /// Every sampling checker's executions set to `n` (`--budget`).
    pub fn with_executions(mut self, n: u64) -> Budget {
        self.sim_seeds = n;
        self.dfs_executions = n;
        self.shuttle_iterations = n as usize;
        self.tokio_runs = n;
        self.loom_executions = Some(n);
        self
    }
}

/// loom's preemption bound for `scenario`: the budget's bound for two
/// tasks, one less for each task beyond two, at most the scenario's
/// `loom_cap`, at least 1. Loom's space grows
/// steeply with threads: `provider-unload` (4 tasks) does not finish in two
/// minutes at bound 2.
pub fn loom_bound(scenario: &'static Scenario, base: usize) -> usize {
    let threads = crate::check::sim_check::tasks(scenario).without_bystanders;
    base.saturating_sub(threads.saturating_sub(2))
        .min(scenario.bounds.loom_cap)
        .max(1)
}

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
    /// Checker name.
    pub checker: &'static str,
    /// Fault switched on, if any.
    pub fault: Option<Fault>,
    /// Executions run.
    pub executions: u64,
    /// Invariant evaluations (invariants × executions).
    pub invariants_checked: u64,
    /// `pass` or `fail`.
    pub status: &'static str,
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
    /// Why a search that was not exhausted stopped before its bound:
    /// [`STOPPED_BUDGET`], [`STOPPED_CAP`], [`STOPPED_FAILURE`] or
    /// [`STOPPED_INTERRUPT`] (`None`: it ran its whole bound).
    pub stopped: Option<&'static str>,
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

/// [`Report::stopped`]: the budget (`--budget`, `--dfs-executions`) ran out.
pub const STOPPED_BUDGET: &str = "budget";
/// [`Report::stopped`]: the scenario's own execution cap ran out (loom).
pub const STOPPED_CAP: &str = "cap";
/// [`Report::stopped`]: the search stopped at its first failure.
pub const STOPPED_FAILURE: &str = "first failure";
/// [`Report::stopped`]: Ctrl-C (see [`interrupted`]).
pub const STOPPED_INTERRUPT: &str = "interrupted";

/// Whether the command line was asked to stop (its first Ctrl-C): the
/// checkers then end their search at the next execution and report what
/// they have. Never set outside the `lifecycle` binary.
pub fn interrupted() -> bool {
    crate::cli::interrupt::requested()
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
        let requires = Checker::parse(self.checker).is_some_and(Checker::requires_goals);
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
        self.status = status(&self.skipped, &self.violations, &self.error);
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

fn status(skipped: &Option<String>, violations: &[Found], error: &Option<String>) -> &'static str {
    match (skipped, violations.is_empty() && error.is_none()) {
        (_, false) => "fail",
        (Some(_), true) => "skip",
        (None, true) => "pass",
    }
}

/// Accumulates executions into a [`Report`].
pub(crate) struct Tally {
    scenario: &'static Scenario,
    checker: Checker,
    faults: Faults,
    start: Instant,
    pub executions: u64,
    invariants: u64,
    outcomes: BTreeMap<String, u64>,
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
    stopped: Option<&'static str>,
    shard: Shard,
}

impl Tally {
    pub fn new(scenario: &'static Scenario, checker: Checker, faults: Faults) -> Self {
        Tally {
            scenario,
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
            goals: GoalTally::new(scenario, checker.name()),
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
        let key = view::view_key(self.scenario, outcome);
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
        self.goals = GoalTally::new(self.scenario, self.checker.name());
        for (name, hits) in &saved.goals {
            self.goals.merge(name, *hits);
        }
        self.first_failure = saved.failure.map(|(vs, line)| {
            let vs = vs
                .into_iter()
                .map(|(rule, message)| Violation::new(crate::oracle::RuleId::read(&rule), message))
                .collect();
            (vs, line)
        });
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
            failure: self.first_failure.as_ref().map(|(vs, line)| {
                let vs = vs
                    .iter()
                    .map(|v| (v.rule.to_string(), v.message.clone()))
                    .collect();
                (vs, line.clone())
            }),
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
    pub fn stopped(&mut self, why: &'static str) {
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
        let whole = self.shard.count == 1 && self.stopped != Some(STOPPED_INTERRUPT);
        let mut report = Report {
            scenario: self.scenario.name,
            checker: self.checker.name(),
            fault: self.faults.iter().next(),
            executions: self.executions,
            invariants_checked: self.invariants,
            status: "pass",
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

/// Run `checker` on `scenario` with `faults` under `budget`. With
/// `stop_at_first`, exploration stops at the first failing execution.
pub fn run(
    checker: Checker,
    scenario: &'static Scenario,
    faults: Faults,
    budget: &Budget,
    stop_at_first: bool,
) -> Report {
    run_with_progress(checker, scenario, faults, budget, stop_at_first, &|_| {})
}

/// [`run`], calling `progress` with the executions so far now and then.
pub fn run_with_progress(
    checker: Checker,
    scenario: &'static Scenario,
    faults: Faults,
    budget: &Budget,
    stop_at_first: bool,
    progress: &dyn Fn(u64),
) -> Report {
    quiet_panics();
    match checker {
        Checker::Sim => sim_check::explore(
            scenario,
            faults,
            &PortfolioOptions {
                seeds: budget.sim_seeds,
                pct_depth: budget.pct_depth,
                shard: budget.shard,
                shrink: budget.shrink,
                stop_on: budget.stop_on,
            },
            stop_at_first,
            progress,
        ),
        Checker::SimDfs => sim_check::explore_dfs(
            scenario,
            faults,
            &DfsOptions {
                config: DfsConfig {
                    preemption_bound: budget
                        .dfs_preemptions
                        .or(scenario.bounds.dfs.map(|b| b + budget.dfs_bound_extra)),
                    shard: budget.shard,
                    // Every alternative above the split depth, sharded or
                    // not: the union of `--shard k/n` runs is then this very
                    // search, schedule for schedule (issue 16).
                    full_top: true,
                    ..DfsConfig::default()
                },
                max_executions: budget.dfs_executions,
                checkpoint: None,
                resume: false,
                shrink: budget.shrink,
                stop_on: budget.stop_on,
            },
            stop_at_first,
            progress,
        ),
        Checker::Loom
            if crate::check::sim_check::tasks(scenario).without_bystanders > loom::MAX_THREADS =>
        {
            let mut tally = Tally::new(scenario, checker, faults);
            tally.skip(format!(
                "needs {} threads; loom models at most {}",
                crate::check::sim_check::tasks(scenario).all,
                loom::MAX_THREADS
            ));
            tally.finish()
        }
        Checker::Loom => loom_check::explore(
            scenario,
            faults,
            loom_bound(scenario, budget.loom_preemptions),
            budget.loom_executions,
            stop_at_first,
        ),
        Checker::ShuttleRandom | Checker::ShuttlePct => {
            let mut report = shuttle_check::explore(
                checker,
                scenario,
                faults,
                budget.shuttle_iterations,
                budget.pct_depth,
                stop_at_first,
            );
            report.bound.get_or_insert_with(|| match checker {
                Checker::ShuttlePct => format!(
                    "{} iterations, pct depth {}",
                    budget.shuttle_iterations, budget.pct_depth
                ),
                _ => format!("{} iterations", budget.shuttle_iterations),
            });
            if stop_at_first && !report.violations.is_empty() {
                report.stopped = Some(STOPPED_FAILURE);
            }
            report
        }
        Checker::Tokio => tokio_check::explore(
            scenario,
            faults,
            (budget.tokio_runs, budget.shard),
            stop_at_first,
        ),
    }
}

/// Panics that are part of the scenarios (the panicking observer of C9) or
/// of the checkers' control flow (stopping loom at a violation) are caught,
/// contained and reported, so the default hook's output for them would only
/// be noise; every other panic still goes to the previous hook. Shuttle's
/// own hook is installed only around shuttle's runs
/// (`shuttle_check::with_shuttle_hook`).
pub fn quiet_panics() {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = crate::bus::panic_message(info.payload());
            if crate::scenarios::EXPECTED_PANICS.contains(&message.as_str())
                || message == loom_check::STOP
            {
                tracing::debug!(target: "panic", "{info}");
            } else {
                previous(info);
            }
        }));
    });
}
