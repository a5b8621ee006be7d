//! The dispatcher: [`run`] one checker over one scenario under a
//! [`Budget`], whichever checker it is.
//!
//! Layer 4 (dispatch): with `replay`, the only files that import every
//! checker.

use super::budget::Budget;
use super::checker::Checker;
use super::loom_check::{self, loom_bound};
use super::panics::quiet_panics;
use super::report::{Report, Stopped};
use super::sim_check::{self, DfsOptions, PortfolioOptions};
use super::tally::Tally;
use super::tasks::tasks;
use super::{shuttle_check, tokio_check};
use crate::faults::Faults;
use crate::scenarios::Scenario;
use lifecycle_sim::DfsConfig;

/// Run `checker` on `scenario` with `faults` under `budget`. With
/// `stop_at_first`, exploration stops at the first failing execution.
pub fn run(
    checker: Checker,
    scenario: &Scenario,
    faults: Faults,
    budget: &Budget,
    stop_at_first: bool,
) -> Report {
    run_with_progress(checker, scenario, faults, budget, stop_at_first, &|_| {})
}

/// [`run`], calling `progress` with the executions so far now and then.
pub fn run_with_progress(
    checker: Checker,
    scenario: &Scenario,
    faults: Faults,
    budget: &Budget,
    stop_at_first: bool,
    progress: &dyn Fn(u64),
) -> Report {
    quiet_panics();
    match checker {
        Checker::Sim => sim_check::explore(
            scenario,
            faults,
            &PortfolioOptions {
                seeds: budget.sim_seeds,
                pct_depth: budget.pct_depth,
                shard: budget.shard,
                shrink: budget.shrink,
                stop_on: budget.stop_on,
                stop: budget.stop,
            },
            stop_at_first,
            progress,
        ),
        Checker::SimDfs => sim_check::explore_dfs(
            scenario,
            faults,
            &DfsOptions {
                config: DfsConfig {
                    preemption_bound: budget
                        .dfs_preemptions
                        .or(scenario.bounds.dfs.map(|b| b + budget.dfs_bound_extra)),
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
            },
            stop_at_first,
            progress,
        ),
        Checker::Loom if tasks(scenario).without_bystanders > loom::MAX_THREADS => {
            let mut tally = Tally::new(scenario, checker, faults);
            tally.skip(format!(
                "needs {} threads; loom models at most {}",
                tasks(scenario).all,
                loom::MAX_THREADS
            ));
            tally.finish()
        }
        Checker::Loom => loom_check::explore(
            scenario,
            faults,
            loom_bound(scenario, budget.loom_preemptions),
            budget.loom_executions,
            stop_at_first,
            budget.stop,
        ),
        Checker::ShuttleRandom | Checker::ShuttlePct | Checker::ShuttleDfs => {
            let mut report = shuttle_check::explore(
                checker,
                scenario,
                faults,
                budget.shuttle_iterations,
                budget.pct_depth,
                stop_at_first,
                budget.stop,
            );
            report.bound.get_or_insert_with(|| match checker {
                Checker::ShuttlePct => format!(
                    "{} iterations, pct depth {}",
                    budget.shuttle_iterations, budget.pct_depth
                ),
                Checker::ShuttleDfs => format!(
                    "shuttle's DFS, no reduction, unbounded, at most {} iterations",
                    budget.shuttle_iterations
                ),
                _ => format!("{} iterations", budget.shuttle_iterations),
            });
            if stop_at_first && !report.violations.is_empty() {
                report.stopped = Some(Stopped::FirstFailure);
            }
            report
        }
        Checker::Tokio => tokio_check::explore(
            scenario,
            faults,
            (budget.tokio_runs, budget.shard),
            stop_at_first,
            budget.stop,
        ),
    }
}
