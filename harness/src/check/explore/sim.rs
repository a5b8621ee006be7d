//! `sim`: the simulator's seeded portfolio, one execution per seed. Even
//! seeds run the seeded random walk, odd seeds run PCT with depth cycling
//! through `1..=pct_depth`; PCT's change points are spread over the
//! scenario's usual number of branching decisions (measured once, from
//! seed 0).
//!
//! Both simulator checkers (this one and `sim-dfs`, `explore::sim_dfs`)
//! record a failing run as its *plan* (the task chosen at each decision
//! with more than one ready task) plus the seed of its value stream; that
//! is what the replay line carries, and a line of either replays its plan
//! here ([`replay_plan`]). A failure is replayed twice before it is
//! reported (determinism self-check) and then shrunk (`check::shrink`).
//! The simulator's run helpers (`check::sim_run`) are re-exported here.

pub use crate::check::sim_run::{
    expected_branches, portfolio_scheduler, run_plan, run_scheduled, sim_error_outcome, SimRun,
};

use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{ReplayError, ReplayLine, SimPayload};
use crate::check::report::{Report, Stop, Stopped};
use crate::check::shrink;
use crate::check::tally::Tally;
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::scenarios::Scenario;
use lifecycle_sim::Shard;

/// The seeded portfolio.
pub struct SimPortfolio;

impl Explorer for SimPortfolio {
    type Payload = SimPayload;

    fn checker(&self) -> Checker {
        Checker::Sim
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let budget = run.budget;
        explore(
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
pub fn replay_plan(scenario: &Scenario, faults: Faults, payload: &SimPayload) -> Replayed {
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

/// A failure found on the simulator (its line, its run), checked and
/// shrunk, ready to report.
pub(super) fn report_failure(tally: &mut Tally, line: ReplayLine, run: &SimRun, shrink_it: bool) {
    let (scenario, checker, faults) = (&line.scenario, line.checker, line.faults());
    let (seed, untimed, plan) = line.sim_payload().expect("a simulator line");
    let mut outcome = run.outcome.clone();
    if let Err(m) = shrink::self_check(scenario, faults, seed, untimed, &plan, run.sim.trace_hash())
    {
        outcome
            .violations
            .insert(0, Violation::new(RuleId::Determinism, m));
    }
    tally.replace_failure(&outcome, line.to_string());
    if shrink_it {
        let rule = tally.wanted_rule(&outcome);
        if let Some(rule) = rule.filter(|r| *r != RuleId::Determinism) {
            let s = shrink::shrink(scenario, faults, seed, untimed, &plan, rule);
            let minimal =
                ReplayLine::sim(scenario, checker, faults, seed, untimed, &s.minimal.plan);
            tally.set_shrunk(
                minimal.to_string(),
                s.original.preemptions,
                s.minimal.preemptions,
            );
        }
    }
}

/// Count one run; if it is the first failure (of the wanted rules), check
/// and shrink it (`line` builds its replay line, only when needed). Returns
/// whether the run failed in the way the search is after.
pub(super) fn count_run(
    tally: &mut Tally,
    run: &SimRun,
    shrink_it: bool,
    line: impl Fn() -> ReplayLine,
) -> bool {
    let fresh = tally.first_failure.is_none();
    let failed = tally.add(&run.outcome, || line().to_string());
    if failed && fresh {
        report_failure(tally, line(), run, shrink_it);
    }
    failed
}

/// Options of the portfolio.
#[derive(Clone, Debug)]
pub struct PortfolioOptions {
    /// Seeds to run.
    pub seeds: u64,
    /// Highest PCT depth.
    pub pct_depth: usize,
    /// The part of `0..seeds` this process runs.
    pub shard: Shard,
    /// Shrink the first failure.
    pub shrink: bool,
    /// Only failures of these rules count (empty: any).
    pub stop_on: &'static [crate::rules::Rule],
    /// A stop request from outside.
    pub stop: Stop,
}

/// The `sim` checker: the random + PCT portfolio over this shard's seeds.
pub fn explore(
    scenario: &Scenario,
    faults: Faults,
    opts: &PortfolioOptions,
    stop_at_first: bool,
    progress: &dyn Fn(u64),
) -> Report {
    let mut tally = Tally::new(scenario, Checker::Sim, faults);
    tally.want(opts.stop_on);
    tally.shard(opts.shard);
    let expected = expected_branches(scenario, faults);
    for seed in opts.shard.range(opts.seeds) {
        if opts.stop.requested() {
            tally.stopped(Stopped::Interrupted);
            break;
        }
        let (scheduler, untimed) = portfolio_scheduler(seed, opts.pct_depth, expected);
        let run = run_scheduled(scenario, faults, scheduler, untimed, false);
        let failed = count_run(&mut tally, &run, opts.shrink, || {
            ReplayLine::sim(
                scenario,
                Checker::Sim,
                faults,
                seed,
                untimed,
                run.sim.choices(),
            )
        });
        if tally.executions % 1024 == 0 {
            progress(tally.executions);
        }
        if failed && stop_at_first {
            tally.stopped(Stopped::FirstFailure);
            break;
        }
    }
    tally.bound(format!(
        "seeds 0..{}, pct depth 1..={}",
        opts.seeds, opts.pct_depth
    ));
    tally.finish()
}
