//! The checkers' names: [`Checker`], one per way of exploring a scenario,
//! with its command-line name and what `check` asks of it (goals, shards).
//! Defined here, in the harness beside its faults, so that scenario goals
//! (which name the checkers excused from them) and reports share one type.
//! The specification crate names none: checkers are how the harness
//! proves the rules, not part of them.

use serde::Serialize;
use std::fmt;

/// A checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
    /// shuttle, DFS scheduler: every schedule in shuttle's order, no
    /// reduction and no bound, up to a budget (exhausted where it ends
    /// before it).
    ShuttleDfs,
    /// tokio multi-thread runtime (conformance of the production backend).
    Tokio,
}

impl Checker {
    /// Every checker, in table order.
    pub const ALL: [Checker; 7] = [
        Checker::Sim,
        Checker::SimDfs,
        Checker::Loom,
        Checker::ShuttleRandom,
        Checker::ShuttlePct,
        Checker::ShuttleDfs,
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
            Checker::ShuttleDfs => "shuttle-dfs",
            Checker::Tokio => "tokio",
        }
    }

    /// Look a checker up by name.
    pub fn parse(s: &str) -> Option<Checker> {
        Checker::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Whether this checker controls the schedule, so an unreached goal
    /// means it explored too little (tokio does not: the OS schedules it).
    /// Nor does shuttle's DFS demand them: with no reduction, a budget
    /// stops it in one corner of the tree (the first choices fixed), so a
    /// goal it misses says where it stopped, not that it failed.
    pub fn requires_goals(self) -> bool {
        !matches!(self, Checker::Tokio | Checker::ShuttleDfs)
    }

    /// Whether this checker runs on shuttle (its lines carry a shuttle
    /// schedule).
    pub fn on_shuttle(self) -> bool {
        matches!(
            self,
            Checker::ShuttleRandom | Checker::ShuttlePct | Checker::ShuttleDfs
        )
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

/// Serialized as its command-line name (`sim-dfs`).
impl Serialize for Checker {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl fmt::Display for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
