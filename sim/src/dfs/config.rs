//! The search's settings ([`DfsConfig`], [`Shard`]) and what it reports
//! ([`DfsStats`], [`ExecKind`]).

use serde::{Deserialize, Serialize};

/// Which part of a sharded search to run: shard `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 0-based index, `< count`.
    pub index: u32,
    /// Number of shards, at least 1.
    pub count: u32,
}

impl Shard {
    /// The whole search.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `k/n` with 1-based `k` (as a CI matrix counts): `1/2`, `2/2`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("malformed shard {s:?}: expected k/n, e.g. 1/4"))?;
        let k: u32 = k
            .parse()
            .map_err(|_| format!("malformed shard {s:?}: k is not a number"))?;
        let n: u32 = n
            .parse()
            .map_err(|_| format!("malformed shard {s:?}: n is not a number"))?;
        if n == 0 || k == 0 || k > n {
            return Err(format!("malformed shard {s:?}: need 1 <= k <= n"));
        }
        Ok(Shard {
            index: k - 1,
            count: n,
        })
    }

    /// The `i`-th of `n` equal parts of `0..total` (for seed ranges).
    pub fn range(self, total: u64) -> std::ops::Range<u64> {
        let n = u64::from(self.count);
        let k = u64::from(self.index);
        (total * k / n)..(total * (k + 1) / n)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// What to search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DfsConfig {
    /// Sleep-set reduction on or off.
    pub reduction: bool,
    /// At most this many preemptions per run (`None`: unbounded).
    pub preemption_bound: Option<u32>,
    /// The part of the search to run.
    pub shard: Shard,
    /// Branching decisions that decide a run's shard.
    pub split_depth: u32,
    /// Dynamic partial-order reduction (source sets) on top of the sleep
    /// sets: a decision explores only the alternatives that reverse a race
    /// found in an explored run. Off: every alternative that is not asleep.
    /// Used only with `reduction`.
    #[serde(default = "yes")]
    pub dpor: bool,
    /// Explore every alternative at the first `split_depth` branching
    /// decisions even with `dpor` (as a sharded search must: a shard never
    /// sees the races in the other shards' subtrees). Implied by a shard
    /// count above 1; set it to compare an unsharded search with the union
    /// of its shards.
    #[serde(default)]
    pub full_top: bool,
    /// Optimal DPOR (wakeup trees) where the search is unbounded: a
    /// decision explores the sequences that reverse races, not single
    /// tasks (see `wakeup`). Off, or with a preemption bound: source sets.
    /// Used only with `dpor`. Off by default: see the module docs for what
    /// it does to the lifecycle's scenarios.
    #[serde(default)]
    pub optimal: bool,
}

fn yes() -> bool {
    true
}

impl Default for DfsConfig {
    fn default() -> Self {
        DfsConfig {
            reduction: true,
            preemption_bound: None,
            shard: Shard::ALL,
            split_depth: 6,
            dpor: true,
            full_top: false,
            optimal: false,
        }
    }
}

/// Counters of a search.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DfsStats {
    /// Runs owned by this shard: complete plus blocked.
    pub executions: u64,
    /// Runs that reached their end (every task finished, or an error).
    pub complete: u64,
    /// Runs pruned because every ready task was asleep, or the bound
    /// allowed no choice.
    pub blocked: u64,
    /// Runs pruned because another shard owns them.
    pub foreign: u64,
    /// Most decisions in one run.
    pub max_depth: u64,
    /// Most preemptions in one complete run.
    pub max_preemptions: u32,
    /// Races found (pairs of dependent steps of different tasks, unordered
    /// by happens-before), over every explored run.
    #[serde(default)]
    pub races: u64,
    /// Alternatives that race analysis added to a decision.
    #[serde(default)]
    pub backtracks: u64,
    /// Decisions where every awake task would have exceeded the preemption
    /// bound and the sleeping last task went on instead of blocking.
    #[serde(default)]
    pub woken_in_bound: u64,
    /// Optimal DPOR: wakeup-branch steps that passed an await in the run
    /// where their race was found and failed it when the branch ran (the
    /// reversal moved the await before the write it needed).
    #[serde(default)]
    pub await_stalled: u64,
    /// Optimal DPOR: sleep-blocked runs (counted in `blocked`) in which a
    /// wakeup-branch step failed its await (`await_stalled`): the reversal
    /// moved a check before the write it needed, and the run then ended
    /// with every ready task asleep.
    #[serde(default)]
    pub blocked_after_stall: u64,
    /// Wakeup-tree branches dropped because their task was not ready at
    /// the decision (its enabling escaped the footprints).
    #[serde(default)]
    pub wakeup_dropped: u64,
}

/// How one execution of the search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecKind {
    /// A complete run owned by this shard: check its outcome.
    Complete,
    /// Pruned: every ready task was asleep (or the bound allowed none).
    Blocked,
    /// Pruned or not counted: another shard owns it.
    Foreign,
    /// The program did not repeat itself on the recorded prefix.
    Nondeterministic(String),
}
