//! `sim`: the simulator's seeded portfolio (random walk and PCT), one
//! execution per seed; a line replays its recorded plan.

use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, SimPayload};
use crate::check::report::Report;
use crate::check::sim_check::{self, PortfolioOptions};
use crate::check::sim_run::run_plan;
use crate::faults::Faults;
use crate::scenarios::Scenario;

/// The seeded portfolio.
pub struct SimPortfolio;

impl Explorer for SimPortfolio {
    type Payload = SimPayload;

    fn checker(&self) -> Checker {
        Checker::Sim
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let budget = run.budget;
        sim_check::explore(
            run.scenario,
            run.faults,
            &PortfolioOptions {
                seeds: budget.sim_seeds,
                pct_depth: budget.pct_depth,
                shard: budget.shard,
                shrink: budget.shrink,
                stop_on: budget.stop_on,
                stop: budget.stop,
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

/// Run a simulator line's plan, keeping the trace: what `sim` and
/// `sim-dfs` lines replay alike.
pub(super) fn replay_plan(scenario: &Scenario, faults: Faults, payload: &SimPayload) -> Replayed {
    let SimPayload {
        seed,
        untimed,
        plan,
    } = payload;
    let run = run_plan(scenario, faults, *seed, *untimed, plan, true);
    let followed = match run.sim.diverged_at() {
        None => plan.len(),
        Some(step) => run
            .sim
            .trace()
            .iter()
            .filter(|t| t.step < step && t.ready > 1)
            .count()
            .min(plan.len()),
    };
    Replayed {
        trace: run.sim.trace().to_vec(),
        trace_hash: Some(run.sim.trace_hash()),
        diverged_at: run.sim.diverged_at(),
        plan_followed: Some((followed, plan.len())),
        ..Replayed::of(run.outcome)
    }
}
