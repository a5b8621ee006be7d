//! Race tests for downstream code, in the style of shuttle's
//! `check_random` and loom's `model`: one `#[test]` function hands a closure
//! over a ready-made [`Rig`] to a checker, and gets every execution checked
//! by the rule oracles, its own assertions, goals, shrinking and a replay
//! line that names the test.
//!
//! ```no_run
//! use lifecycle_harness::check::api::{RaceTest, Rig};
//! use lifecycle::rt::{self, SimRt};
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
//! granularity, source-DPOR), `loom` (every interleaving up to a preemption
//! bound), `shuttle` (shuttle's random scheduler) and `tokio`.
//!
//! `loom` runs in the test's own process, as `loom::model` does (the CLI
//! runs it in a worker process). It explores every interleaving up to the
//! PR tier's preemption bound ([`Budget::PR`]`.loom_preemptions`, 3) for a
//! closure of two threads, one less for each thread beyond two (at least
//! 1), as the CLI's loom rows do; the threads are the closure's own plus one
//! per task `rt::spawn` starts (every agent the rig creates runs its loop
//! as one), counted on loom's first execution. loom models at most
//! [`LOOM_MAX_THREADS`] (5) threads: a closure that starts more fails with
//! rule `harness`. A deadlock (every task waiting, none able to wake
//! another) aborts the test process: loom's unwinding from it reaches its
//! torn-down execution; the failure and its replay line are printed first.
//! loom runs the closure on a fixed 32 KiB stack, which unoptimised poll
//! frames overflow: build the test profile with `opt-level = 1` at least,
//! as this crate's `[profile.dev]` does.

pub use crate::scenarios::held::{HeldDurable, HeldSteps};
pub use crate::scenarios::rig::Rig;
pub use crate::scenarios::{Goal, Granularity, Outcome};

pub mod lincheck;
mod loom;

pub use loom::LOOM_MAX_THREADS;

use super::replay::ReplayLine;
use super::{Budget, Checker, Report};
use crate::backends::CheckedTokioRt;
use crate::backends::{LoomRt, ShuttleRt};
use crate::faults::Faults;
use crate::oracle::RuleId;
use crate::rt::{Backend, BoxFuture, Rt, SimRt};
use crate::rules::Rule;
use crate::scenarios::{Bodies, Closure, Ctx, Scenario};
use send_wrapper::SendWrapper;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// The environment variable that makes a race test replay one line.
pub const REPLAY_ENV: &str = "LIFECYCLE_REPLAY";

type Body<R> = Arc<dyn Fn(Arc<Rig<R>>) -> BoxFuture<()> + Send + Sync>;

/// A test's closure on one backend and the rig it runs over.
struct Entry<R: Rt> {
    body: Body<R>,
    rig: RigParts,
}

/// What a race test's rig holds beyond the provider, registry and store.
#[derive(Clone, Copy, Debug, Default)]
struct RigParts {
    bridge: bool,
    shell: bool,
    tool_bash: bool,
    held_steps: bool,
    held_flushes: bool,
}

/// One execution of a race test on `R`: a fresh rig, the test's closure,
/// then every shared check of the rig (`Rig::finish`).
async fn run_closure<R: Rt>(ctx: Ctx) -> Outcome {
    let entry = ctx
        .closure
        .clone()
        .and_then(|b| b.downcast::<Entry<R>>().ok());
    let parts = entry.as_ref().map(|e| e.rig).unwrap_or_default();
    let mut rig = Rig::<R>::builder().faults(ctx.faults);
    if let Some(d) = ctx.durable {
        rig = rig.durable(d);
    }
    if parts.bridge {
        rig = rig.bridge();
    }
    if parts.shell {
        rig = rig.sim_shell();
    }
    if parts.tool_bash {
        rig = rig.tool_bash();
    }
    if parts.held_steps {
        rig = rig.held_steps();
    }
    if parts.held_flushes {
        rig = rig.held_flushes();
    }
    let rig = Arc::new(rig.build());
    if let Some(entry) = entry {
        (*entry.body)(rig.clone()).await;
    }
    rig.finish("done", Vec::new())
}

const BODIES: Bodies = Bodies {
    sim: |ctx| Box::pin(run_closure::<SimRt>(ctx)),
    tokio: |ctx| Box::pin(run_closure::<CheckedTokioRt>(ctx)),
    loom: |ctx| Box::pin(run_closure::<LoomRt>(ctx)),
    shuttle: |ctx| Box::pin(run_closure::<ShuttleRt>(ctx)),
};

/// What a race test's failure broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// A rule of SPEC §2 or one of the harness's own failure kinds
    /// ([`RuleId::Panic`] for a failed assertion of the test itself).
    Rule(RuleId),
    /// An exploring checker never reached one of the test's goals.
    Goal,
    /// The replay line handed in cannot be replayed by this test.
    Input,
    /// The checker could not run the test (loom's thread limit).
    Harness,
}

impl Broken {
    /// Its name: `R1`, `panic`, `goal`, `input`, `harness`.
    pub fn name(self) -> &'static str {
        match self {
            Broken::Rule(r) => r.name(),
            Broken::Goal => "goal",
            Broken::Input => "input",
            Broken::Harness => "harness",
        }
    }
}

impl From<Rule> for Broken {
    fn from(rule: Rule) -> Broken {
        Broken::Rule(rule.into())
    }
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A broken rule found by a race test.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The test.
    pub test: &'static str,
    /// The checker that found it (`None`: the replay line handed in was
    /// refused before any checker ran).
    pub checker: Option<Checker>,
    /// What it broke.
    pub rule: Broken,
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
            self.rule,
            self.test,
            self.checker.map_or("replay", Checker::name),
            self.message,
            self.replay,
            self.test
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
    rig: RigParts,
    granularity: Granularity,
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
            rig: RigParts::default(),
            granularity: Granularity::Lock,
        }
    }

    /// With an ACP bridge in the rig ([`Rig::bridge`]: over the provider,
    /// owned by scope `acp`).
    pub fn bridge(mut self) -> RaceTest {
        self.rig.bridge = true;
        self
    }

    /// With a simulated shell in the rig ([`Rig::shell`]): the body scripts
    /// a command ([`SimShell::script`](crate::shell::sim::SimShell::script),
    /// [`Script::held`](crate::shell::sim::Script::held) for one that runs
    /// until ended), starts it as an agent ([`Rig::start_job`]) and ends it
    /// at a chosen moment ([`SimShell::exit`](crate::shell::sim::SimShell::exit)).
    /// Every agent's teardown drains its jobs, and each execution's end
    /// checks S7 on the shell's side: a job of a torn-down owner was
    /// settled and then forgotten. With [`tool_bash`](Self::tool_bash)
    /// too, jobs start through tool-bash and their completion notices are
    /// checked (S6).
    pub fn shell(mut self) -> RaceTest {
        self.rig.shell = true;
        self
    }

    /// With tool-bash in the rig ([`Rig::tool_bash`]), over a simulated
    /// shell ([`Rig::shell`]) whose jobs every agent's teardown drains (S7).
    pub fn tool_bash(mut self) -> RaceTest {
        self.rig.tool_bash = true;
        self
    }

    /// With held steps in the rig ([`Rig::steps`]): every step of every
    /// agent says it runs ([`HeldSteps::running`]) and waits until the
    /// body lets it go ([`HeldSteps::release`]) or its turn's signal fires.
    pub fn held_steps(mut self) -> RaceTest {
        self.rig.held_steps = true;
        self
    }

    /// With held flushes in the rig ([`Rig::flushes`]): every session
    /// flush waits at its I/O point, written and not yet synced
    /// ([`HeldDurable::flushing`]), until the body lets it go
    /// ([`HeldDurable::release`]). Replaces the checker's durable backend.
    pub fn held_flushes(mut self) -> RaceTest {
        self.rig.held_flushes = true;
        self
    }

    /// Where the simulator's checkers ([`sim`](Self::sim),
    /// [`dfs`](Self::dfs) and their `_local` forms) may switch tasks. The
    /// default is [`Granularity::Lock`]: at every lock section, wake, spawn
    /// and clock read, as a multi-threaded runtime may. [`Granularity::Await`]
    /// switches only at awaits. Replay lines of the test replay at the
    /// same granularity. loom and shuttle ignore it.
    pub fn granularity(mut self, granularity: Granularity) -> RaceTest {
        self.granularity = granularity;
        self
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
            reached: hit,
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

    /// [`sim`](Self::sim) for a body whose future is not `Send` (it may
    /// hold an `Rc` or a `RefCell` borrow across an await): the simulator
    /// runs every execution on the calling thread. Tasks the body spawns
    /// with `rt::spawn` are still `Send`.
    pub fn sim_local<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<SimRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.check::<SimRt, _, _>(Checker::Sim, local(body))
    }

    /// [`dfs`](Self::dfs) for a body whose future is not `Send` (see
    /// [`sim_local`](Self::sim_local)).
    pub fn dfs_local<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<SimRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.check::<SimRt, _, _>(Checker::SimDfs, local(body))
    }

    /// Explore every interleaving up to a preemption bound with loom, in
    /// this process (see the module doc for the bound, the thread limit
    /// and deadlocks). Every execution runs the rig's oracles and the closure's own
    /// assertions; a panic of the closure is a failure of rule `panic` at
    /// that execution, and its replay line (`exec=N,pb=B`) runs loom again
    /// under the same bound up to execution `N` (loom's order is
    /// deterministic for the same body and bound). `.executions(n)` stops
    /// the search after `n` executions; the report says whether it was
    /// exhausted, and its bound.
    pub fn loom<F, Fut>(&self, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<LoomRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let scenario = self.scenario::<LoomRt, _, _>(body);
        if let Some(line) = self.env_line(Checker::Loom) {
            return self.replay_env(&scenario, Checker::Loom, line);
        }
        let report = loom::explore(self, &scenario)?;
        self.verdict(Checker::Loom, report)
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
        F: Fn(Arc<Rig<CheckedTokioRt>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check::<CheckedTokioRt, _, _>(Checker::Tokio, body)
    }

    /// Replay one line this test printed, with the same closure (a `loom`
    /// line needs the closure on [`LoomRt`]).
    pub fn replay<R: Rt, F, Fut>(&self, line: &str, body: F) -> Result<(), Failure>
    where
        F: Fn(Arc<Rig<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let scenario = self.scenario::<R, _, _>(body);
        let parsed =
            ReplayLine::parse_for(line, Some(&scenario)).map_err(|e| self.bad_line(line, &e.0))?;
        if parsed.scenario.name != scenario.name {
            return Err(self.bad_line(line, "it names another test"));
        }
        match (parsed.checker == Checker::Loom, R::BACKEND == Backend::Loom) {
            (true, false) => {
                return Err(self.bad_line(line, "a loom line needs a closure on LoomRt"))
            }
            (false, true) => {
                return Err(self.bad_line(line, "a closure on LoomRt replays loom lines only"))
            }
            _ => {}
        }
        let outcome = self.replayed(&parsed, line)?;
        match outcome.violations.first() {
            None => Ok(()),
            Some(v) => Err(Failure {
                test: self.name,
                checker: Some(parsed.checker),
                rule: Broken::Rule(v.rule),
                message: v.message.clone(),
                replay: line.to_string(),
            }),
        }
    }

    /// The outcome of the one execution `parsed` names: loom's in this
    /// process (the `replay` command's worker knows only the built-in
    /// scenarios), the others' as `lifecycle replay` runs them.
    fn replayed(&self, parsed: &ReplayLine, line: &str) -> Result<Outcome, Failure> {
        if parsed.checker == Checker::Loom {
            return loom::replay(self, parsed, line);
        }
        let replayed = super::replay::replay(parsed).map_err(|e| self.bad_line(line, &e.0))?;
        Ok(replayed.outcome)
    }

    /// The line of [`REPLAY_ENV`], if it names this test and `checker`.
    fn env_line(&self, checker: Checker) -> Option<String> {
        let line = std::env::var(REPLAY_ENV).ok()?;
        line.contains(&format!(":{}:{checker}:", self.name))
            .then_some(line)
    }

    /// Replay the line of [`REPLAY_ENV`]: the one execution it names, and
    /// nothing else.
    fn replay_env(
        &self,
        scenario: &Scenario,
        checker: Checker,
        line: String,
    ) -> Result<Report, Failure> {
        let parsed =
            ReplayLine::parse_for(&line, Some(scenario)).map_err(|e| self.bad_line(&line, &e.0))?;
        let outcome = self.replayed(&parsed, &line)?;
        if let Some(v) = outcome.violations.first() {
            return Err(Failure {
                test: self.name,
                checker: Some(checker),
                rule: Broken::Rule(v.rule),
                message: v.message.clone(),
                replay: line,
            });
        }
        let mut tally = super::Tally::new(scenario, checker, self.faults);
        tally.add(&outcome, || line.clone());
        Ok(tally.finish())
    }

    fn bad_line(&self, line: &str, why: &str) -> Failure {
        Failure {
            test: self.name,
            checker: None,
            rule: Broken::Input,
            message: format!("cannot replay {line:?}: {why}"),
            replay: line.to_string(),
        }
    }

    /// The test as a scenario value that carries the closure for `R`: the
    /// checkers hand it to each execution (no global table, nothing
    /// leaked; it lives as long as this call).
    fn scenario<R: Rt, F, Fut>(&self, body: F) -> Scenario
    where
        F: Fn(Arc<Rig<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let entry = Entry::<R> {
            body: Arc::new(move |rig| Box::pin(body(rig))),
            rig: self.rig,
        };
        let mut scenario = Scenario::new(self.name, "a downstream race test", BODIES)
            .granularity(self.granularity);
        scenario.goals = Cow::Owned(self.goals.clone());
        scenario.closure = Some(Arc::new(entry) as Closure);
        scenario
    }

    fn check<R: Rt, F, Fut>(&self, checker: Checker, body: F) -> Result<Report, Failure>
    where
        F: Fn(Arc<Rig<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let scenario = self.scenario::<R, _, _>(body);
        if let Some(line) = self.env_line(checker) {
            return self.replay_env(&scenario, checker, line);
        }
        let report = super::run(checker, &scenario, self.faults, &self.budget, true);
        self.verdict(checker, report)
    }

    /// A checker's report as the test's result: its first violation, its
    /// own error, or goals it never reached are a [`Failure`].
    fn verdict(&self, checker: Checker, report: Report) -> Result<Report, Failure> {
        if let Some(found) = report.violations.first() {
            return Err(Failure {
                test: self.name,
                checker: Some(checker),
                rule: Broken::Rule(found.rule),
                message: found.message.clone(),
                replay: found.shrunk.clone().unwrap_or_else(|| found.replay.clone()),
            });
        }
        // `judge` words unreached goals as the report's error too: they are
        // rule `goal` unless the checker itself failed or ran nothing.
        let explored = report.cause.is_none() && report.executions > 0;
        if !report.unreached.is_empty() && explored && checker.requires_goals() {
            return Err(Failure {
                test: self.name,
                checker: Some(checker),
                rule: Broken::Goal,
                message: format!(
                    "goals never reached in {} executions: {}",
                    report.executions,
                    report.unreached.join(", ")
                ),
                replay: String::new(),
            });
        }
        let vacuous = report.vacuous_goals();
        if !vacuous.is_empty() {
            return Err(Failure {
                test: self.name,
                checker: Some(checker),
                rule: Broken::Goal,
                message: format!(
                    "goals hit by every complete execution of an exhausted search: {} (a goal \
                     names a window some executions miss)",
                    vacuous.join(", ")
                ),
                replay: String::new(),
            });
        }
        if let Some(e) = &report.error {
            return Err(Failure {
                test: self.name,
                checker: Some(checker),
                rule: Broken::Harness,
                message: e.clone(),
                replay: String::new(),
            });
        }
        Ok(report)
    }
}

/// `body` with its future made `Send` for the simulator's single thread:
/// [`SendWrapper`] panics if the future is polled or dropped on any thread
/// but the one that made it, which the simulator never does.
fn local<F, Fut>(body: F) -> impl Fn(Arc<Rig<SimRt>>) -> SendWrapper<Fut> + Send + Sync + 'static
where
    F: Fn(Arc<Rig<SimRt>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    move |rig| SendWrapper::new(body(rig))
}
