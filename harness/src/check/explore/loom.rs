//! `loom`: every interleaving of a scenario up to a preemption bound, in
//! loom's deterministic order, so a line replays execution `exec` of that
//! order under bound `pb`.
//!
//! One driver runs loom's model on the caller's thread (`loom_model`), for
//! [`RaceTest::loom`](crate::check::api::RaceTest::loom) and for the
//! `loom` checker alike:
//! - a race test runs it in place, as `loom::model` does: it is a test
//!   binary of its own, and its closure is known only to that process;
//! - the checker ([`Loom`]) runs it in a worker process (`loom_worker`):
//!   the `lifecycle` binary started with a job in its environment, whose
//!   entry (`serve_worker`) runs before any command is parsed. `lifecycle`
//!   explores many scenarios in one process, and a deadlock would end it
//!   (below); the worker's lines carry what it found to the parent, which
//!   reports it as a row.
//!
//! Files: this one is the checker ([`Loom`]) and its bounds;
//! `loom_model` runs the model once on the caller's thread (the panic hook
//! included); `loom_worker` is the worker process and its lines.
//!
//! A deadlock (every task waits, and none can wake another) is loom's own
//! panic, raised inside its scheduler; the unwinding then drops lifecycle
//! state whose destructors reach loom's torn-down execution, a panic during
//! a panic, which aborts the process. So a panic hook reports it first (to
//! the run's `report`): a worker prints it as a line for its parent, a race
//! test prints the failure itself. Its rule is the rule of the waits still
//! parked (`scenarios::deadlock_rule`). Any other panic out of an execution
//! (an assertion of a race test's closure, loom's branch or thread limit)
//! unwinds cleanly and ends the model (`End::Panicked`).
//!
//! A scenario that needs more threads than loom models
//! (`LOOM_MAX_THREADS`) is skipped by the checker, and fails a race test
//! with rule `harness`.

use super::loom_model::LOOM_MAX_THREADS;
use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{LoomPayload, ReplayError};
use crate::check::report::Report;
use crate::check::tally::Tally;
use crate::check::tasks::tasks;
use crate::faults::Faults;
use crate::scenarios::Scenario;

use super::loom_worker as worker;

pub use worker::explore as explore_at;

/// loom's model checker, as the `loom` checker runs it: in a worker.
pub struct Loom;

impl Explorer for Loom {
    type Payload = LoomPayload;

    fn checker(&self) -> Checker {
        Checker::Loom
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let threads = tasks(run.scenario);
        if threads.loom > LOOM_MAX_THREADS {
            let mut tally = Tally::new(run.scenario, Checker::Loom, run.faults);
            tally.skip(format!(
                "needs {} threads; loom models at most {LOOM_MAX_THREADS}",
                threads.loom,
            ));
            return tally.finish();
        }
        worker::explore(
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
            worker::replay(scenario, faults, payload.exec, payload.pb).map_err(ReplayError)?;
        Ok(Replayed {
            journal,
            journals,
            ..Replayed::of(outcome)
        })
    }
}

/// loom's preemption bound for `scenario`: [`bound_for`] its loom threads.
/// Loom's space grows steeply with threads: `provider-unload` (4 tasks)
/// does not finish in two minutes at bound 2.
pub fn loom_bound(scenario: &Scenario, base: usize) -> usize {
    bound_for(base, tasks(scenario).loom as u64, scenario)
}

/// The preemption bound for `threads` threads: `base` for two threads and
/// one less for each thread beyond two, at most the scenario's `loom_cap`,
/// at least 1.
pub fn bound_for(base: usize, threads: u64, scenario: &Scenario) -> usize {
    let beyond = usize::try_from(threads.saturating_sub(2)).unwrap_or(usize::MAX);
    base.saturating_sub(beyond)
        .min(scenario.bounds.loom_cap)
        .max(1)
}
