//! A scenario as a value: everything about one race window, declared in one
//! place next to its body, and registered with one line in
//! [`super::ALL`].
//!
//! ```text
//! /// A goal of [`MY_RACE`]: one `pub const` per window, which the
//! /// clause table (`clauses::table`) names as `&my_race::LATE_WRITE`.
//! pub const LATE_WRITE: Goal = on!("late-write", "the write lands after the close", |f: &Write| f.late);
//!
//! pub static MY_RACE: Scenario = Scenario::new(
//!     "my-race",
//!     "what races, in one line",
//!     bodies!(my_race),          // the async body, once, generic over Rt
//! )
//! .rules(&[Rule::D1])
//! .goals(&[LATE_WRITE])          // the windows it must reach
//! .targets(&[Fault::M6])
//! .bounds(Bounds { loom_cap: 1, ..Bounds::PR });
//!
//! /// What the body says happened (`w:late`): its `Display` form is the
//! /// outcome's label; the body ends with `rig.finish(Write { late }, checks)`.
//! struct Write { late: bool }
//! ```
//!
//! Task counts are not declared: the simulator measures them
//! (`check::tasks`).

use super::goals::Goal;
use super::Outcome;
use crate::faults::{Fault, Faults};
use crate::rt::{Backend, BoxFuture, Rt};
use crate::rules::Rule;
use crate::store::durable::Durable;
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

/// The closure of a downstream race test, type-erased (`check::api` puts
/// one backend's closure in and its body takes the same one out). Carried
/// by the [`Scenario`] value the test builds and handed to each execution
/// in its [`Ctx`]: no process-global table.
pub type Closure = Arc<dyn Any + Send + Sync>;

/// What one execution of a body gets.
#[derive(Clone)]
pub struct Ctx {
    /// The scenario's name (set by `run_ctx`).
    pub name: &'static str,
    /// The faults switched on.
    pub faults: Faults,
    /// Where sessions persist (`None`: an in-memory disk).
    pub durable: Option<Arc<dyn Durable>>,
    /// Whether the body adds its *bystander* agents (independent work that
    /// checks isolation, C5/D5). loom explores every interleaving of every
    /// thread and runs without them: `concurrent-dispose` with its bystander
    /// runs for many minutes even at preemption bound 1, far longer than at
    /// bound 2 without it. Every other checker runs them.
    pub bystanders: bool,
    /// loom's shape (loom models at most five threads, main included,
    /// counted over the whole execution): a body's simulated shell runs
    /// its timed jobs on one driver task ([`SimShell::new`]), and a body's
    /// side callers join its main task ([`super::rig::beside`]) instead of
    /// taking a task each. Every other checker gives each its own task.
    ///
    /// [`SimShell::new`]: crate::shell::sim::SimShell::new
    pub few_threads: bool,
    /// The scenario's [`Closure`], if it is a downstream race test (set
    /// by `run_ctx`).
    pub closure: Option<Closure>,
}

impl Ctx {
    /// A context with `faults`, in-memory sessions and bystanders.
    pub fn new(faults: Faults) -> Ctx {
        Ctx {
            name: "",
            faults,
            durable: None,
            bystanders: true,
            few_threads: false,
            closure: None,
        }
    }

    /// loom's context: no bystanders, and [few threads](Ctx::few_threads).
    pub fn loom(faults: Faults) -> Ctx {
        Ctx {
            bystanders: false,
            few_threads: true,
            ..Ctx::new(faults)
        }
    }
}

/// A body instantiated for one backend.
pub type BodyFn = fn(Ctx) -> BoxFuture<Outcome>;

/// A body, instantiated once per backend (build it with `bodies!`).
#[derive(Clone, Copy)]
pub struct Bodies {
    /// On the simulator.
    pub sim: BodyFn,
    /// On tokio.
    pub tokio: BodyFn,
    /// Under loom.
    pub loom: BodyFn,
    /// Under shuttle.
    pub shuttle: BodyFn,
}

impl Bodies {
    /// The body for backend `R`.
    pub fn on<R: Rt>(&self) -> BodyFn {
        match R::BACKEND {
            Backend::Sim => self.sim,
            Backend::Tokio => self.tokio,
            Backend::Loom => self.loom,
            Backend::Shuttle => self.shuttle,
        }
    }
}

/// Instantiates a generic `async fn body<R: Rt>(ctx: Ctx) -> Outcome` for
/// every backend of this build.
macro_rules! bodies {
    ($f:ident) => {
        $crate::scenarios::Bodies {
            sim: |ctx| Box::pin($f::<$crate::rt::SimRt>(ctx)),
            tokio: |ctx| Box::pin($f::<$crate::backends::CheckedTokioRt>(ctx)),
            loom: |ctx| Box::pin($f::<$crate::backends::LoomRt>(ctx)),
            shuttle: |ctx| Box::pin($f::<$crate::backends::ShuttleRt>(ctx)),
        }
    };
}
pub(crate) use bodies;

/// How far each exploring checker goes on this scenario in the PR tier.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The highest loom preemption bound whose exhaustive run stays within
    /// the PR gate (a run of seconds, not minutes).
    pub loom_cap: usize,
    /// At most this many loom executions (`None`: until exhausted); a capped
    /// loom row says `sampled`.
    pub loom_max: Option<usize>,
    /// The simulator's exhaustive search is preemption-bounded at this in
    /// the PR tier (`None`: unbounded, the whole space). A scenario without
    /// a bound runs on the simulator with coarse points (a scheduling point
    /// before any access is no decision, see `Sim::set_coarse_points`) in
    /// every checker and replay; one with a bound keeps every point, the
    /// cut its bound was chosen on.
    pub dfs: Option<u32>,
}

impl Bounds {
    /// The PR tier's defaults: loom up to bound 3, `sim-dfs` at bound 3.
    pub const PR: Bounds = Bounds {
        loom_cap: 3,
        loom_max: None,
        dfs: Some(3),
    };
}

/// One named race window: what it checks and reaches, how far it is
/// explored, and its body. Cloning is cheap (references, one `Arc`).
#[derive(Clone)]
pub struct Scenario {
    /// Its name on the command line and in replay lines.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// The rules it checks (beyond the oracles', which run everywhere).
    pub rules: &'static [Rule],
    /// The windows it exists to reach ("sometimes" goals).
    pub goals: Cow<'static, [Goal]>,
    /// The faults it is meant to kill (`mutants` looks here first; every
    /// scenario still checks every rule).
    pub targets: &'static [Fault],
    /// Exploration bounds of the PR tier.
    pub bounds: Bounds,
    /// Ids and scope names of its bystander agents: their world events are
    /// left out of the contract view (loom runs without them).
    pub bystanders: &'static [&'static str],
    /// A measured gap in differential coverage: views other checkers reach
    /// that `sim-dfs` does not at the PR bound. `check` reports such misses
    /// instead of failing; every other scenario must be covered.
    pub coverage_gap: Option<&'static str>,
    /// Where the simulator's checkers may switch tasks.
    pub granularity: Granularity,
    /// The body, per backend.
    pub body: Bodies,
    /// A downstream race test's closure (`None` for every built-in).
    pub closure: Option<Closure>,
}

/// Where the simulator's checkers (`sim`, `sim-dfs`) may switch from one
/// task to another. loom and shuttle switch at their own operations and
/// tokio wherever its threads do, whatever the scenario says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Granularity {
    /// At every scheduling point inside a poll (lock sections, wakes,
    /// spawns, clock reads), as a preemptive multi-threaded runtime may:
    /// the default, and what every built-in scenario uses.
    #[default]
    Lock,
    /// Only where a poll returns `Pending`, as a single-threaded executor
    /// does: code between two awaits runs without interruption. Fewer
    /// schedules, and races between lock sections of one poll are not
    /// explored.
    Await,
}

impl Scenario {
    /// A scenario with no rules, goals or targets, at the PR bounds.
    pub const fn new(name: &'static str, about: &'static str, body: Bodies) -> Scenario {
        Scenario {
            name,
            about,
            rules: &[],
            goals: Cow::Borrowed(&[]),
            targets: &[],
            bounds: Bounds::PR,
            bystanders: &[],
            coverage_gap: None,
            granularity: Granularity::Lock,
            body,
            closure: None,
        }
    }

    /// With the simulator switching tasks at `granularity`.
    pub const fn granularity(mut self, granularity: Granularity) -> Scenario {
        self.granularity = granularity;
        self
    }

    /// With these rules.
    pub const fn rules(mut self, rules: &'static [Rule]) -> Scenario {
        self.rules = rules;
        self
    }

    /// With these goals.
    pub const fn goals(mut self, goals: &'static [Goal]) -> Scenario {
        // The old value is a borrowed slice (no drop to run); `replace`
        // and `forget` keep the assignment const.
        std::mem::forget(std::mem::replace(&mut self.goals, Cow::Borrowed(goals)));
        self
    }

    /// Meant to kill these faults.
    pub const fn targets(mut self, targets: &'static [Fault]) -> Scenario {
        self.targets = targets;
        self
    }

    /// Explored to these bounds.
    pub const fn bounds(mut self, bounds: Bounds) -> Scenario {
        self.bounds = bounds;
        self
    }

    /// With these bystander ids and scope names.
    pub const fn bystanders(mut self, names: &'static [&'static str]) -> Scenario {
        self.bystanders = names;
        self
    }

    /// With a measured coverage gap.
    pub const fn coverage_gap(mut self, gap: &'static str) -> Scenario {
        self.coverage_gap = Some(gap);
        self
    }

    /// Look a built-in scenario up by name (one of [`super::ALL`]).
    pub fn parse(name: &str) -> Option<&'static Scenario> {
        super::ALL.iter().copied().find(|s| s.name == name)
    }

    /// Its place in [`super::ALL`] (`list` order).
    pub fn index(&self) -> usize {
        super::ALL
            .iter()
            .position(|s| s.name == self.name)
            .unwrap_or(usize::MAX)
    }
}

/// Task counts of a scenario, measured by the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tasks {
    /// With its bystander agents.
    pub all: usize,
    /// Without them.
    pub without_bystanders: usize,
    /// In loom's context ([`Ctx::loom`]: no bystanders, few threads): the
    /// threads loom runs.
    pub loom: usize,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Scenario {
    fn eq(&self, other: &Scenario) -> bool {
        self.name == other.name
    }
}

impl Eq for Scenario {}

impl PartialOrd for Scenario {
    fn partial_cmp(&self, other: &Scenario) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scenario {
    fn cmp(&self, other: &Scenario) -> std::cmp::Ordering {
        (self.index(), self.name).cmp(&(other.index(), other.name))
    }
}

impl serde::Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}
