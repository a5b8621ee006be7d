//! `shuttle-pct`: shuttle's PCT scheduler at the budget's depth; a line
//! replays its recorded schedule.

use super::{shuttle_explore, shuttle_replay, Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, ShuttlePayload};
use crate::check::report::Report;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// shuttle's PCT scheduler.
pub struct ShuttlePct;

impl Explorer for ShuttlePct {
    type Payload = ShuttlePayload;

    fn checker(&self) -> Checker {
        Checker::ShuttlePct
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let bound = format!(
            "{} iterations, pct depth {}",
            run.budget.shuttle_iterations, run.budget.pct_depth
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
