//! `sim-dfs`: the simulator's exhaustive search (source-DPOR and sleep
//! sets) up to the scenario's preemption bound; a line replays its plan
//! as a `sim` line does.

use super::{sim::replay_plan, Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, SimPayload};
use crate::check::report::Report;
use crate::check::sim_check::{self, DfsOptions};
use crate::faults::Faults;
use crate::scenarios::Scenario;
use lifecycle_sim::DfsConfig;

/// The exhaustive search.
pub struct SimDfs;

impl Explorer for SimDfs {
    type Payload = SimPayload;

    fn checker(&self) -> Checker {
        Checker::SimDfs
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let budget = run.budget;
        sim_check::explore_dfs(
            run.scenario,
            run.faults,
            &DfsOptions {
                config: DfsConfig {
                    preemption_bound: budget.dfs_preemptions.or(run
                        .scenario
                        .bounds
                        .dfs
                        .map(|b| b + budget.dfs_bound_extra)),
                    shard: budget.shard,
                    // Every alternative above the split depth, sharded or
                    // not: the union of `--shard k/n` runs is then this very
                    // search, schedule for schedule.
                    full_top: true,
                    ..DfsConfig::default()
                },
                max_executions: budget.dfs_executions,
                checkpoint: None,
                resume: false,
                shrink: budget.shrink,
                stop_on: budget.stop_on,
                stop: budget.stop,
                shallow: budget.dfs_shallow,
            },
            run.stop_at_first,
            run.progress,
        )
    }

    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &SimPayload,
    ) -> Result<Replayed, ReplayError> {
        Ok(replay_plan(scenario, faults, payload))
    }
}
