//! shuttle, behind one explorer that takes its scheduler: random (a fixed
//! number of iterations from fixed seeds), PCT at the budget's depth, or
//! DFS (every schedule in shuttle's order, no reduction and no bound, up
//! to the budget's iterations). The checkers `shuttle-random`,
//! `shuttle-pct` and `shuttle-dfs` are this explorer with each scheduler;
//! a line of any of them replays its recorded schedule.

use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, ShuttlePayload};
use crate::check::report::{Report, Stopped};
use crate::check::shuttle_check;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// Which of shuttle's schedulers an exploration runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShuttleScheduler {
    /// shuttle's random scheduler.
    Random,
    /// shuttle's PCT scheduler.
    Pct,
    /// shuttle's DFS scheduler.
    Dfs,
}

/// shuttle, with one of its schedulers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shuttle(pub ShuttleScheduler);

impl Shuttle {
    /// The explorer of a shuttle checker; `None` for any other checker.
    pub fn of(checker: Checker) -> Option<Shuttle> {
        let scheduler = match checker {
            Checker::ShuttleRandom => ShuttleScheduler::Random,
            Checker::ShuttlePct => ShuttleScheduler::Pct,
            Checker::ShuttleDfs => ShuttleScheduler::Dfs,
            _ => return None,
        };
        Some(Shuttle(scheduler))
    }
}

impl Explorer for Shuttle {
    type Payload = ShuttlePayload;

    fn checker(&self) -> Checker {
        match self.0 {
            ShuttleScheduler::Random => Checker::ShuttleRandom,
            ShuttleScheduler::Pct => Checker::ShuttlePct,
            ShuttleScheduler::Dfs => Checker::ShuttleDfs,
        }
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let b = run.budget;
        let bound = match self.0 {
            ShuttleScheduler::Random => format!("{} iterations", b.shuttle_iterations),
            ShuttleScheduler::Pct => format!(
                "{} iterations, pct depth {}",
                b.shuttle_iterations, b.pct_depth
            ),
            ShuttleScheduler::Dfs => format!(
                "shuttle's DFS, no reduction, unbounded, at most {} iterations",
                b.shuttle_iterations
            ),
        };
        let mut report = shuttle_check::explore(
            self.checker(),
            run.scenario,
            run.faults,
            b.shuttle_iterations,
            b.pct_depth,
            run.stop_at_first,
            b.stop,
        );
        report.bound.get_or_insert(bound);
        if run.stop_at_first && !report.violations.is_empty() {
            report.stopped = Some(Stopped::FirstFailure);
        }
        report
    }

    /// The recorded schedule, whichever scheduler recorded it.
    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &ShuttlePayload,
    ) -> Result<Replayed, ReplayError> {
        let outcome =
            shuttle_check::replay(scenario, faults, &payload.schedule).map_err(ReplayError)?;
        Ok(Replayed::of(outcome))
    }
}
