//! `tokio`: the production runtime, multi-threaded, the scenario run
//! again and again (the OS schedules it); a line reruns up to `runs`
//! times, stopping at the first that fails.

use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, TokioPayload};
use crate::check::report::Report;
use crate::check::tokio_check;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// tokio's multi-thread runtime.
pub struct Tokio;

impl Explorer for Tokio {
    type Payload = TokioPayload;

    fn checker(&self) -> Checker {
        Checker::Tokio
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        tokio_check::explore(
            run.scenario,
            run.faults,
            (run.budget.tokio_runs, run.budget.shard),
            run.stop_at_first,
            run.budget.stop,
        )
    }

    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &TokioPayload,
    ) -> Result<Replayed, ReplayError> {
        let (outcome, journals) = tokio_check::rerun(scenario, faults, payload.runs);
        Ok(Replayed {
            journals,
            ..Replayed::of(outcome)
        })
    }
}
