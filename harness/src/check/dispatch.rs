//! The dispatcher: [`run`] one checker over one scenario under a
//! [`Budget`], whichever checker it is, through its [`Explorer`].
//!
//! Layer 4 (dispatch).

use super::budget::Budget;
use super::checker::Checker;
use super::explore::{
    Exploration, Explorer, Loom, Shuttle, ShuttleScheduler, SimDfs, SimPortfolio, Tokio,
};
use super::panics::quiet_panics;
use super::report::Report;
use crate::faults::Faults;
use crate::scenarios::Scenario;

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
    let run = Exploration {
        scenario,
        faults,
        budget,
        stop_at_first,
        progress,
    };
    match checker {
        Checker::Sim => SimPortfolio.explore(&run),
        Checker::SimDfs => SimDfs.explore(&run),
        Checker::Loom => Loom.explore(&run),
        Checker::ShuttleRandom => Shuttle(ShuttleScheduler::Random).explore(&run),
        Checker::ShuttlePct => Shuttle(ShuttleScheduler::Pct).explore(&run),
        Checker::ShuttleDfs => Shuttle(ShuttleScheduler::Dfs).explore(&run),
        Checker::Tokio => Tokio.explore(&run),
    }
}
