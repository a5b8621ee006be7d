//! `shuttle-dfs`: shuttle's DFS scheduler, every schedule in shuttle's
//! order with no reduction and no bound, up to the budget's iterations; a
//! line replays its recorded schedule.

use super::{shuttle_explore, shuttle_replay, Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, ShuttlePayload};
use crate::check::report::Report;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// shuttle's DFS scheduler.
pub struct ShuttleDfs;

impl Explorer for ShuttleDfs {
    type Payload = ShuttlePayload;

    fn checker(&self) -> Checker {
        Checker::ShuttleDfs
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let bound = format!(
            "shuttle's DFS, no reduction, unbounded, at most {} iterations",
            run.budget.shuttle_iterations
        );
        shuttle_explore(self.checker(), run, bound)
    }

    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &ShuttlePayload,
    ) -> Result<Replayed, ReplayError> {
        shuttle_replay(scenario, faults, payload)
    }
}
