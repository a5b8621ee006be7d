//! `loom`: every interleaving up to a preemption bound, in a worker
//! process; a scenario that needs more threads than loom models is
//! skipped. A line replays execution `exec` of loom's order under bound
//! `pb`.

use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::loom_check::{self, loom_bound};
use crate::check::replay_line::{LoomPayload, ReplayError};
use crate::check::report::Report;
use crate::check::tally::Tally;
use crate::check::tasks::tasks;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// loom's model checker.
pub struct Loom;

impl Explorer for Loom {
    type Payload = LoomPayload;

    fn checker(&self) -> Checker {
        Checker::Loom
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let threads = tasks(run.scenario);
        if threads.loom > loom::MAX_THREADS {
            let mut tally = Tally::new(run.scenario, Checker::Loom, run.faults);
            tally.skip(format!(
                "needs {} threads; loom models at most {}",
                threads.loom,
                loom::MAX_THREADS
            ));
            return tally.finish();
        }
        loom_check::explore(
            run.scenario,
            run.faults,
            loom_bound(run.scenario, run.budget.loom_preemptions),
            run.budget.loom_executions,
            run.stop_at_first,
            run.budget.stop,
        )
    }

    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &LoomPayload,
    ) -> Result<Replayed, ReplayError> {
        let (outcome, journal, journals) =
            loom_check::replay(scenario, faults, payload.exec, payload.pb).map_err(ReplayError)?;
        Ok(Replayed {
            journal,
            journals,
            ..Replayed::of(outcome)
        })
    }
}
