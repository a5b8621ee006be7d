//! How the cost of exhaustive search grows with the work: the two scalable
//! scenarios at 2, 3 and 4 racers (`scenarios::set_width`), each measured
//! as schedules and seconds for `sim-dfs` unbounded and at preemption
//! bound 2, and for loom at bound 2. A search that hits its cap says so
//! (`stopped at N`) instead of pretending to have finished.

use super::Space;
use crate::check::loom_check;
use crate::faults::Faults;
use crate::scenarios::{self, Scenario};
use serde::Serialize;

/// The scenarios that scale, and what their width counts.
pub const SCALABLE: [(&Scenario, &str); 2] = [
    (&scenarios::dispose::CONCURRENT_DISPOSE, "disposers"),
    (&scenarios::identity::SAME_ID_CREATE_RACE, "creators"),
];

/// One scenario at one width.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Scenario name.
    pub scenario: &'static str,
    /// What the width counts.
    pub racers: &'static str,
    /// The number of racers.
    pub width: usize,
    /// `sim-dfs` without a preemption bound.
    pub dfs_unbounded: Space,
    /// `sim-dfs` at preemption bound 2.
    pub dfs_pb2: Space,
    /// loom at preemption bound 2 (`None`: more threads than loom allows).
    pub loom_pb2: Option<Space>,
}

fn loom(scenario: &'static Scenario, cap: u64) -> Option<Space> {
    let r = loom_check::explore(scenario, Faults::none(), 2, Some(cap), false);
    r.error.is_none().then(|| Space {
        schedules: r.executions,
        exhausted: r.exhausted,
        seconds: r.seconds,
        bound: "preemptions <= 2".into(),
    })
}

/// Measures every scalable scenario at widths 2, 3 and 4; every search
/// stops after `cap` schedules. The width is restored to 3 afterwards.
pub fn measure(cap: u64, with_loom: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for (scenario, racers) in SCALABLE {
        for width in 2..=4 {
            scenarios::set_width(width);
            eprintln!("bench: growth {} x{width}", scenario.name);
            rows.push(Row {
                scenario: scenario.name,
                racers,
                width,
                dfs_unbounded: super::dfs_space(scenario, true, cap, None),
                dfs_pb2: super::dfs_space(scenario, true, cap, Some(2)),
                loom_pb2: if with_loom { loom(scenario, cap) } else { None },
            });
        }
    }
    scenarios::set_width(3);
    rows
}

/// `schedules (seconds)`, or `stopped at N (seconds)`.
pub fn cell(s: &Space) -> String {
    if s.exhausted {
        format!("{} ({:.1} s)", s.schedules, s.seconds)
    } else {
        format!("stopped at {} ({:.1} s)", s.schedules, s.seconds)
    }
}
