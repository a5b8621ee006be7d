//! The checkers' names: [`Checker`], one per way of exploring a scenario,
//! with its command-line name and what `check` asks of it (goals, shards).
//!
//! Layer 0 (shared): imports nothing from `check`.

use serde::Serialize;
use std::fmt;

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
