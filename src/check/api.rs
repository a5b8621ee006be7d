//! Race tests for downstream code, in the style of shuttle's
//! `check_random` and loom's `model`: one `#[test]` function hands a closure
//! over a ready-made [`Rig`] to a checker, and gets every execution checked
//! by the rule oracles, its own assertions, goals, shrinking and a replay
//! line that names the test.
//!
//! ```no_run
//! use agent_lifecycle::check::api::{RaceTest, Rig};
//! use agent_lifecycle::rt::{self, SimRt};
//! use std::sync::Arc;
//!
//! #[test]
//! fn two_creates_one_winner() {
//!     RaceTest::new("two_creates_one_winner").dfs(|rig: Arc<Rig<SimRt>>| async move {
//!         let owner = rig.owner("owner");
//!         let (p, o) = (rig.provider.clone(), owner.clone());
//!         let other = rt::spawn::<SimRt, _>("create", async move { p.create("x", &o).await });
//!         let mine = rig.provider.create("x", &owner).await;
//!         let theirs = other.join().await;
//!         assert_eq!(mine.is_ok() as u8 + theirs.is_ok() as u8, 1, "R1: one winner");
//!         owner.unload().await;
//!     })
//!     .unwrap();
//! }
//! ```
//!
//! A failure is a [`Failure`] whose `Display` names the rule, the test and
//! the replay line. Setting `LIFECYCLE_REPLAY` to that line makes the same
//! test replay exactly that execution instead of exploring (as
//! `PROPTEST_`/shuttle's replay variables do); [`RaceTest::replay`] does the
//! same from code.
//!
//! Checkers offered: `sim` (seeded portfolio), `dfs` (exhaustive at lock
//! granularity, source-DPOR), `shuttle` (shuttle's random scheduler) and
//! `tokio`. loom is not offered here: it runs in a worker process
//! (`lifecycle loom-worker`) that only knows the built-in scenarios.

pub use crate::scenarios::rig::Rig;
pub use crate::scenarios::{Goal, Match, Outcome};

use super::replay::ReplayLine;
use super::{Budget, Checker, Report};
use crate::faults::Faults;
use crate::rt::{Backend, BoxFuture, Rt, ShuttleRt, SimRt, TokioRt};
use crate::scenarios::{self, Bodies, Ctx, Scenario};
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// The environment variable that makes a race test replay one line.
pub const REPLAY_ENV: &str = "LIFECYCLE_REPLAY";

type Body<R> = Arc<dyn Fn(Arc<Rig<R>>) -> BoxFuture<()> + Send + Sync>;

/// A [`Body`] of some backend, by test name and backend.
type Closures = BTreeMap<(&'static str, u8), Arc<dyn Any + Send + Sync>>;

/// The closures of the race tests of this process.
fn closures() -> std::sync::MutexGuard<'static, Closures> {
    static CLOSURES: Mutex<Closures> = Mutex::new(BTreeMap::new());
    CLOSURES.lock().unwrap_or_else(|p| p.into_inner())
}

fn backend_key(b: Backend) -> u8 {
    b as u8
}

/// One execution of a race test on `R`: a fresh rig, the test's closure,
/// then every shared check of the rig (`Rig::finish`).
async fn run_closure<R: Rt>(ctx: Ctx) -> Outcome {
    let body = closures()
        .get(&(ctx.name, backend_key(R::BACKEND)))
        .and_then(|b| b.clone().downcast::<Body<R>>().ok());
    let rig = Arc::new(Rig::<R>::new(ctx.faults, ctx.durable));
    if let Some(body) = body {
        (*body)(rig.clone()).await;
    }
    rig.finish("done".into(), Vec::new())
}

const BODIES: Bodies = Bodies {
    sim: |ctx| Box::pin(run_closure::<SimRt>(ctx)),
    tokio: |ctx| Box::pin(run_closure::<TokioRt>(ctx)),
    loom: |ctx| Box::pin(run_closure::<crate::rt::LoomRt>(ctx)),
    shuttle: |ctx| Box::pin(run_closure::<ShuttleRt>(ctx)),
};

/// A broken rule found by a race test.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The test.
    pub test: &'static str,
    /// The checker that found it.
    pub checker: &'static str,
    /// The rule (`panic` for a failed assertion of the test itself).
    pub rule: &'static str,
    /// What happened.
    pub message: String,
    /// The replay line (the shrunk one for simulator failures).
    pub replay: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rule {} broken in race test {} ({}): {}\nreplay: {REPLAY_ENV}='{}' cargo test {}",
            self.rule, self.test, self.checker, self.message, self.replay, self.test
        )
    }
}

impl std::error::Error for Failure {}

/// A race test: a name (the test function's), faults, a budget and goals.
#[derive(Clone, Debug)]
pub struct RaceTest {
    name: &'static str,
    faults: Faults,
    budget: Budget,
    goals: Vec<Goal>,
}

impl RaceTest {
    /// A race test named `name` (use the test function's name: replay lines
    /// and failure messages carry it). PR-tier budget, no faults, no goals.
    pub fn new(name: &'static str) -> RaceTest {
        RaceTest {
            name,
            faults: Faults::none(),
            budget: Budget::PR,
            goals: Vec::new(),
        }
    }

    /// With these faults switched on (to see a test fail on purpose).
    pub fn faults(mut self, faults: Faults) -> RaceTest {
        self.faults = faults;
        self
    }

    /// At most `n` executions per checker.
    pub fn executions(mut self, n: u64) -> RaceTest {
        self.budget = self.budget.with_executions(n);
        self
    }

    /// A window the test must reach: an exploring checker that never hits
    /// it fails the test (it explored too little for its pass to count).
    pub fn goal(
        mut self,
        name: &'static str,
        about: &'static str,
        hit: fn(&Outcome) -> bool,
    ) -> RaceTest {
        self.goals.push(Goal {
            name,
            about,
            matches: Match::Pred(hit),
            excused: &[],
        });
        self
    }

    /// Explore with the simulator's seeded portfolio.
    pub fn sim<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<SimRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check::<SimRt, _, _>(Checker::Sim, body)
    }

    /// Explore every schedule at lock granularity (source-DPOR, the
    /// simulator's exhaustive search; PR-tier preemption bound 3).
    pub fn dfs<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<SimRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check::<SimRt, _, _>(Checker::SimDfs, body)
    }

    /// Explore with shuttle's random scheduler.
    pub fn shuttle<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<ShuttleRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check::<ShuttleRt, _, _>(Checker::ShuttleRandom, body)
    }

    /// Run on tokio's multi-thread runtime, repeatedly.
    pub fn tokio<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<TokioRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check::<TokioRt, _, _>(Checker::Tokio, body)
    }

    /// Replay one line this test printed, with the same closure.
    pub fn replay<R: Rt, F, Fut>(&self, line: &str, body: F) -> Result<(), Failure>
    where
        F: Fn(Arc<Rig<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let scenario = self.install::<R, _, _>(body);
        let parsed = ReplayLine::parse(line).map_err(|e| self.bad_line(line, &e.0))?;
        if parsed.scenario.name != scenario.name {
            return Err(self.bad_line(line, "it names another test"));
        }
        let replayed = parsed.replay().map_err(|e| self.bad_line(line, &e.0))?;
        match replayed.outcome.violations.first() {
            None => Ok(()),
            Some(v) => Err(Failure {
                test: self.name,
                checker: parsed.checker.name(),
                rule: v.rule.name(),
                message: v.message.clone(),
                replay: line.to_string(),
            }),
        }
    }

    fn bad_line(&self, line: &str, why: &str) -> Failure {
        Failure {
            test: self.name,
            checker: "replay",
            rule: "input",
            message: format!("cannot replay {line:?}: {why}"),
            replay: line.to_string(),
        }
    }

    /// Register the closure for `R` and the test as a scenario.
    fn install<R: Rt, F, Fut>(&self, body: F) -> &'static Scenario
    where
        F: Fn(Arc<Rig<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let boxed: Body<R> = Arc::new(move |rig| Box::pin(body(rig)));
        closures().insert(
            (self.name, backend_key(R::BACKEND)),
            Arc::new(boxed) as Arc<dyn Any + Send + Sync>,
        );
        let goals: &'static [Goal] = Box::leak(self.goals.clone().into_boxed_slice());
        scenarios::register(Scenario::new(self.name, "a downstream race test", BODIES).goals(goals))
    }

    fn check<R: Rt, F, Fut>(&self, checker: Checker, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let scenario = self.install::<R, _, _>(body);
        if let Ok(line) = std::env::var(REPLAY_ENV) {
            if line.contains(&format!(":{}:{checker}:", self.name)) {
                let parsed = ReplayLine::parse(&line).map_err(|e| self.bad_line(&line, &e.0))?;
                let replayed = parsed.replay().map_err(|e| self.bad_line(&line, &e.0))?;
                if let Some(v) = replayed.outcome.violations.first() {
                    return Err(Failure {
                        test: self.name,
                        checker: checker.name(),
                        rule: v.rule.name(),
                        message: v.message.clone(),
                        replay: line,
                    });
                }
                // The one execution the line names, and nothing else.
                let mut tally = super::Tally::new(scenario, checker, self.faults);
                tally.add(&replayed.outcome, || line.clone());
                return Ok(tally.finish());
            }
        }
        let report = super::run(checker, scenario, self.faults, &self.budget, true);
        if let Some(found) = report.violations.first() {
            return Err(Failure {
                test: self.name,
                checker: checker.name(),
                rule: found.rule.name(),
                message: found.message.clone(),
                replay: found.shrunk.clone().unwrap_or_else(|| found.replay.clone()),
            });
        }
        if let Some(e) = &report.error {
            return Err(Failure {
                test: self.name,
                checker: checker.name(),
                rule: "harness",
                message: e.clone(),
                replay: String::new(),
            });
        }
        if !report.unreached.is_empty() && checker.requires_goals() {
            return Err(Failure {
                test: self.name,
                checker: checker.name(),
                rule: "goal",
                message: format!(
                    "goals never reached in {} executions: {}",
                    report.executions,
                    report.unreached.join(", ")
                ),
                replay: String::new(),
            });
        }
        Ok(report)
    }
}
