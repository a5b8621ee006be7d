//! How much each checker explores: [`Budget`] and its tiers (`pr`,
//! `nightly`).
//!
//! Layer 0 (shared): imports nothing from `check`.

use super::Stop;
use lifecycle_sim::Shard;

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
    /// A stop request from outside (the command line's Ctrl-C).
    pub stop: Stop,
    /// `sim-dfs` after its first failure runs shallow passes first
    /// (preemption bounds 0 and 1, `explore::sim_dfs::SHALLOW_PASSES`). Off in
    /// the tiers (a `check` row is the search itself, as pinned); a hunt
    /// for a fault (`mutants`) switches it on.
    pub dfs_shallow: bool,
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
        stop: Stop::NEVER,
        dfs_shallow: false,
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
        stop: Stop::NEVER,
        dfs_shallow: false,
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
