//! The fast harness gate that cargo-mutants runs for every mutant of the
//! lifecycle code (`.cargo/mutants.toml`): every scenario under `sim`,
//! `sim-dfs` (at its PR bound, capped) and shuttle-pct at small budgets.
//! A mutant survives only if all of them pass.
//!
//! Plain `cargo test` skips it (`#[ignore]`): the full suite covers the
//! same ground with larger budgets. cargo-mutants passes
//! `--include-ignored`; by hand: `cargo test --test harness_gate --
//! --include-ignored`.

mod common;

use agent_lifecycle::check::{self, Budget, Checker};
use agent_lifecycle::faults::Faults;
use agent_lifecycle::scenarios;

const GATE: Budget = Budget {
    sim_seeds: 300,
    dfs_executions: 2_000,
    shuttle_iterations: 200,
    ..common::TEST_BUDGET
};

#[test]
#[ignore = "the cargo-mutants gate; the full suite covers it with larger budgets"]
fn every_scenario_passes_the_gate() {
    common::setup();
    let mut failed = Vec::new();
    for scenario in scenarios::ALL {
        for checker in [Checker::Sim, Checker::SimDfs, Checker::ShuttlePct] {
            let r = check::run(checker, scenario, Faults::none(), &GATE, true);
            if !r.violations.is_empty() {
                failed.push(format!(
                    "{} on {}: {} ({})",
                    r.scenario, r.checker, r.violations[0].rule, r.violations[0].message
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
