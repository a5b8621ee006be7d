//! How the cost of exhaustive search grows with the work: the two scalable
//! scenarios (`scenarios::set_width`), `same-id-create-race` at 2 to 5
//! creators and `concurrent-dispose` at 2 to 4 disposers, each measured as
//! schedules and seconds for `sim-dfs` unbounded and at preemption bound 2,
//! and for loom at bound 2 (the equal bound). A search that hits its cap
//! says so (`stopped at N`) instead of pretending to have finished. Each
//! column's growth per added racer is fitted over the widths it exhausted:
//! `exp` of the least-squares slope of `ln(schedules)` on the width.

use super::Space;
use crate::check::explore::loom::explore_at;
use crate::check::Stop;
use crate::faults::Faults;
use crate::scenarios::{self, Scenario};
use serde::Serialize;

/// The scenarios that scale, what their width counts, and the widths
/// measured.
pub const SCALABLE: [(&Scenario, &str, std::ops::RangeInclusive<usize>); 2] = [
    (&scenarios::dispose::CONCURRENT_DISPOSE, "disposers", 2..=4),
    (&scenarios::identity::SAME_ID_CREATE_RACE, "creators", 2..=5),
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
    let r = explore_at(scenario, Faults::none(), 2, Some(cap), false, Stop::NEVER);
    r.error.is_none().then(|| Space {
        schedules: r.executions,
        exhausted: r.exhausted,
        seconds: r.seconds,
        bound: "preemptions <= 2".into(),
    })
}

/// Measures every scalable scenario at its widths; every search stops
/// after `cap` schedules. The width is restored to 3 afterwards.
pub fn measure(cap: u64, with_loom: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for (scenario, racers, widths) in SCALABLE {
        for width in widths {
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

/// The fitted growth per added racer of one column over `rows` (one
/// scenario's widths): `exp` of the least-squares slope of `ln(schedules)`
/// on the width, over the widths whose search exhausted. `None` with fewer
/// than two.
pub fn fitted(rows: &[&Row], column: impl Fn(&Row) -> Option<&Space>) -> Option<f64> {
    let points: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| {
            let s = column(r)?;
            (s.exhausted && s.schedules > 0).then(|| (r.width as f64, (s.schedules as f64).ln()))
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    Some((sxy / sxx).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(width: usize, unbounded: u64, exhausted: bool) -> Row {
        let space = |schedules| Space {
            schedules,
            exhausted,
            seconds: 0.0,
            bound: String::new(),
        };
        Row {
            scenario: "s",
            racers: "r",
            width,
            dfs_unbounded: space(unbounded),
            dfs_pb2: space(1),
            loom_pb2: None,
        }
    }

    #[test]
    fn growth_is_fitted_over_the_exhausted_widths() {
        let rows = [row(2, 10, true), row(3, 100, true), row(4, 1000, true)];
        let refs: Vec<&Row> = rows.iter().collect();
        let g = fitted(&refs, |r| Some(&r.dfs_unbounded)).expect("three points");
        assert!((g - 10.0).abs() < 1e-9, "{g}");
        // A search stopped at its cap is no point; one point fits nothing.
        let rows = [row(2, 10, true), row(3, 300_000, false)];
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(fitted(&refs, |r| Some(&r.dfs_unbounded)), None);
        assert_eq!(fitted(&refs, |r| r.loom_pb2.as_ref()), None);
    }
}
