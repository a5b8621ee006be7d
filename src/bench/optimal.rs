//! Source sets against wakeup trees (optimal DPOR) on every scenario the PR
//! tier searches without a preemption bound: schedules, complete runs,
//! sleep-blocked runs, views and seconds of each, and whether the views
//! are the same. The lifecycle's steps are not the same events in every run
//! (see `lifecycle_sim`'s `dfs` module docs), so the table measures what
//! optimality buys there rather than assuming it.

use crate::check::explore::sim_dfs::{explore_dfs, DfsOptions};
use crate::faults::Faults;
use crate::scenarios::{self, Scenario};
use lifecycle_sim::DfsConfig;
use serde::Serialize;

/// One search of one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Search {
    /// Schedules run: complete plus sleep-blocked.
    pub schedules: u64,
    /// Complete runs.
    pub complete: u64,
    /// Sleep-blocked runs.
    pub blocked: u64,
    /// Distinct contract views.
    pub views: u64,
    /// Whether the search ended within its cap.
    pub exhausted: bool,
    /// Wall time.
    pub seconds: f64,
}

/// One scenario under both reductions.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Scenario name.
    pub scenario: &'static str,
    /// Source-DPOR with sleep sets.
    pub source: Search,
    /// Optimal DPOR: wakeup trees with sleep sets.
    pub optimal: Search,
    /// Whether both reached the same set of views.
    pub same_views: bool,
}

fn search(scenario: &'static Scenario, optimal: bool, cap: u64) -> (Search, Vec<String>) {
    let opts = DfsOptions {
        config: DfsConfig {
            optimal,
            ..DfsConfig::default()
        },
        shrink: false,
        ..DfsOptions::exhaustive(cap)
    };
    let r = explore_dfs(scenario, Faults::none(), &opts, false, &|_| {});
    let d = r.dfs.clone().unwrap_or_default();
    let s = Search {
        schedules: r.executions,
        complete: d.complete,
        blocked: d.blocked,
        views: r.views.len() as u64,
        exhausted: r.exhausted,
        seconds: r.seconds,
    };
    (s, r.views.keys().cloned().collect())
}

/// Measures every scenario without a PR-tier preemption bound, each search
/// capped at `cap` schedules.
pub fn measure(cap: u64) -> Vec<Row> {
    scenarios::ALL
        .iter()
        .filter(|s| s.bounds.dfs.is_none())
        .map(|&scenario| {
            eprintln!("bench: optimal {}", scenario.name);
            let (source, a) = search(scenario, false, cap);
            let (optimal, b) = search(scenario, true, cap);
            Row {
                scenario: scenario.name,
                source,
                optimal,
                same_views: a == b,
            }
        })
        .collect()
}

/// `schedules complete blocked views seconds` in one cell.
pub fn cell(s: &Search) -> String {
    let stopped = if s.exhausted { "" } else { " (cap)" };
    format!(
        "{}{stopped} {} {} {} {:.1}s",
        s.schedules, s.complete, s.blocked, s.views, s.seconds
    )
}
