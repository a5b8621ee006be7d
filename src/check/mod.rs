//! The checkers: how each backend explores a scenario, and the report they
//! share.
//!
//! | checker          | explores                                   | replay payload      |
//! | ---------------- | ------------------------------------------ | ------------------- |
//! | `sim`            | one seeded random schedule per seed        | `seed=N`            |
//! | `loom`           | every interleaving (preemption-bounded)    | `exec=N,pb=B`       |
//! | `shuttle-random` | shuttle's random scheduler                 | `schedule=HEX`      |
//! | `shuttle-pct`    | shuttle's PCT scheduler (depth d)          | `schedule=HEX`      |
//! | `tokio`          | the production runtime, many runs          | `runs=N` (re-run)   |

pub mod loom_check;
pub mod replay;
pub mod shuttle_check;
pub mod sim_check;
pub mod tokio_check;

use crate::faults::{Fault, Faults};
use crate::oracle::Violation;
use crate::scenarios::{Outcome, ScenarioId};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

pub use replay::ReplayLine;

/// A checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Checker {
    /// The seeded simulator, random scheduler.
    Sim,
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
    pub const ALL: [Checker; 5] = [
        Checker::Sim,
        Checker::Loom,
        Checker::ShuttleRandom,
        Checker::ShuttlePct,
        Checker::Tokio,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Checker::Sim => "sim",
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
}

impl fmt::Display for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much each checker explores.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Seeds for `sim` (0..n).
    pub sim_seeds: u64,
    /// Iterations for each shuttle scheduler.
    pub shuttle_iterations: usize,
    /// PCT depth.
    pub pct_depth: usize,
    /// loom's preemption bound.
    pub loom_preemptions: usize,
    /// Runs on tokio.
    pub tokio_runs: u64,
}

impl Budget {
    /// The PR-gate budget.
    pub const PR: Budget = Budget {
        sim_seeds: 20_000,
        shuttle_iterations: 5_000,
        pct_depth: 3,
        loom_preemptions: 3,
        tokio_runs: 200,
    };
}

/// loom's preemption bound for `scenario`: the budget's bound for two
/// tasks, one less for each task beyond two, at most the scenario's
/// `loom_cap`, at least 1. Loom's space grows
/// steeply with threads: `provider-unload` (4 tasks) does not finish in two
/// minutes at bound 2.
pub fn loom_bound(scenario: ScenarioId, base: usize) -> usize {
    let info = scenario.info();
    base.saturating_sub(info.tasks.saturating_sub(2))
        .min(info.loom_cap)
        .max(1)
}

/// One violation found, with the line that replays it.
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    /// Rule ID.
    pub rule: &'static str,
    /// What happened.
    pub message: String,
    /// The self-contained replay line.
    pub replay: String,
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
    /// Whether the space was exhausted (loom only).
    pub exhausted: bool,
    /// How often each outcome label was reached.
    pub outcomes: BTreeMap<String, u64>,
    /// Why the checker could not run, if it could not.
    pub error: Option<String>,
    /// Why the checker skipped this scenario (status `skip`).
    pub skipped: Option<String>,
}

/// Accumulates executions into a [`Report`].
pub(crate) struct Tally {
    scenario: ScenarioId,
    checker: Checker,
    faults: Faults,
    start: Instant,
    pub executions: u64,
    invariants: u64,
    outcomes: BTreeMap<String, u64>,
    pub first_failure: Option<(Vec<Violation>, String)>,
    exhausted: bool,
    error: Option<String>,
    skipped: Option<String>,
}

impl Tally {
    pub fn new(scenario: ScenarioId, checker: Checker, faults: Faults) -> Self {
        Tally {
            scenario,
            checker,
            faults,
            start: Instant::now(),
            executions: 0,
            invariants: 0,
            outcomes: BTreeMap::new(),
            first_failure: None,
            exhausted: false,
            error: None,
            skipped: None,
        }
    }

    /// Record one execution; returns `true` if it failed.
    pub fn add(&mut self, outcome: &Outcome, replay: impl FnOnce() -> String) -> bool {
        self.executions += 1;
        self.invariants += outcome.invariants as u64;
        *self.outcomes.entry(outcome.label.clone()).or_default() += 1;
        if outcome.violations.is_empty() {
            return false;
        }
        if self.first_failure.is_none() {
            self.first_failure = Some((outcome.violations.clone(), replay()));
        }
        true
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

    /// This checker cannot run this scenario.
    pub fn skip(&mut self, why: String) {
        self.skipped = Some(why);
    }

    pub fn exhausted(&mut self) {
        self.exhausted = true;
    }

    pub fn error(&mut self, e: String) {
        self.error = Some(e);
    }

    pub fn finish(self) -> Report {
        let violations = match &self.first_failure {
            Some((vs, replay)) => vs
                .iter()
                .map(|v| Found {
                    rule: v.rule,
                    message: v.message.clone(),
                    replay: replay.clone(),
                })
                .collect(),
            None => Vec::new(),
        };
        let error = match (&self.error, self.executions, &self.skipped) {
            (None, 0, None) => Some("nothing was explored (0 executions)".to_string()),
            (e, _, _) => e.clone(),
        };
        let status = if self.skipped.is_some() && violations.is_empty() && error.is_none() {
            "skip"
        } else if violations.is_empty() && error.is_none() {
            "pass"
        } else {
            "fail"
        };
        Report {
            scenario: self.scenario.info().name,
            checker: self.checker.name(),
            fault: self.faults.iter().next(),
            executions: self.executions,
            invariants_checked: self.invariants,
            status,
            violations,
            seconds: self.start.elapsed().as_secs_f64(),
            exhausted: self.exhausted,
            outcomes: self.outcomes,
            error,
            skipped: self.skipped,
        }
    }
}

/// Run `checker` on `scenario` with `faults` under `budget`. With
/// `stop_at_first`, exploration stops at the first failing execution.
pub fn run(
    checker: Checker,
    scenario: ScenarioId,
    faults: Faults,
    budget: &Budget,
    stop_at_first: bool,
) -> Report {
    quiet_panics();
    match checker {
        Checker::Sim => sim_check::explore(scenario, faults, budget.sim_seeds, stop_at_first),
        Checker::Loom if scenario.info().tasks > loom::MAX_THREADS => {
            let mut tally = Tally::new(scenario, checker, faults);
            tally.skip(format!(
                "needs {} threads; loom models at most {}",
                scenario.info().tasks,
                loom::MAX_THREADS
            ));
            tally.finish()
        }
        Checker::Loom => loom_check::explore(
            scenario,
            faults,
            loom_bound(scenario, budget.loom_preemptions),
            stop_at_first,
        ),
        Checker::ShuttleRandom | Checker::ShuttlePct => shuttle_check::explore(
            checker,
            scenario,
            faults,
            budget.shuttle_iterations,
            budget.pct_depth,
            stop_at_first,
        ),
        Checker::Tokio => tokio_check::explore(scenario, faults, budget.tokio_runs, stop_at_first),
    }
}

/// Panics that are part of the scenarios (the panicking observer of C9) or
/// of the checkers' control flow (stopping loom at a violation) are caught,
/// contained and reported, so the default hook's output for them would only
/// be noise; every other panic still goes to the previous hook. Shuttle
/// installs its own hook once, on its first run; it is run first so that it
/// sits under ours.
pub fn quiet_panics() {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        shuttle_check::warm_up();
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
