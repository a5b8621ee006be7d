//! `shuttle-random`: shuttle's random scheduler, a fixed number of
//! iterations from fixed seeds; a line replays its recorded schedule.

use super::{shuttle_explore, shuttle_replay, Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, ShuttlePayload};
use crate::check::report::Report;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// shuttle's random scheduler.
pub struct ShuttleRandom;

impl Explorer for ShuttleRandom {
    type Payload = ShuttlePayload;

    fn checker(&self) -> Checker {
        Checker::ShuttleRandom
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let bound = format!("{} iterations", run.budget.shuttle_iterations);
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
