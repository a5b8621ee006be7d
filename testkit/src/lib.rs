//! What the integration tests share, as a crate of its own (so that
//! every test file uses what it needs of it and nothing is dead code):
//! the checkers' small budget and verdict helpers, the ACP server driver
//! ([`acp`]), the conformance tests' steered simulator ([`conformance`])
//! and headless Chromium for tests of pages ([`browser`]).

pub mod acp;
pub mod browser;
pub mod conformance;

use lifecycle_harness::check::{self, Budget, Checker, Report};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::scenarios::Scenario;

/// A budget small enough for a debug build.
pub const TEST_BUDGET: Budget = Budget {
    sim_seeds: 2_000,
    dfs_executions: 20_000,
    dfs_preemptions: None,
    dfs_bound_extra: 0,
    shuttle_iterations: 1_000,
    pct_depth: 3,
    loom_preemptions: 2,
    // `check --tier pr` runs loom to the end; here it is a smoke run.
    loom_executions: Some(20_000),
    tokio_runs: 20,
    shard: lifecycle_sim::Shard::ALL,
    shrink: false,
    stop_on: &[],
    stop: check::Stop::NEVER,
    dfs_shallow: false,
};

/// The `lifecycle` binary cargo built beside the running test:
/// `target/<profile>/lifecycle` for a test at `target/<profile>/deps/`
/// (cargo builds a package's binaries before its integration tests).
pub fn lifecycle_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test binary under target/<profile>/deps");
    let bin = profile.join("lifecycle");
    assert!(
        bin.is_file(),
        "no lifecycle binary at {} (run the tests with cargo test)",
        bin.display()
    );
    bin
}

/// Point the loom checker at the built `lifecycle` binary.
pub fn setup() {
    check::explore::set_worker(lifecycle_bin());
}

/// Run one checker on one scenario.
pub fn run(checker: Checker, scenario: &'static Scenario, fault: Option<Fault>) -> Report {
    setup();
    // With a fault on, search on until one of the rules it must break is
    // found (as `mutants` does), not just the first violation.
    let budget = Budget {
        stop_on: fault.map_or(&[][..], |f| f.must_violate()),
        ..TEST_BUDGET.clone()
    };
    check::run(checker, scenario, Faults::from(fault), &budget, true)
}

/// Assert a clean pass, printing the failure otherwise. The test budget is
/// smaller than the PR tier, so a reachability goal may go unreached here
/// (`check --tier pr` requires them; `tests/exploration.rs` tests that).
pub fn assert_pass(r: &Report) {
    let goals_only = r.violations.is_empty()
        && r.error
            .as_deref()
            .is_some_and(|e| e.starts_with("reachability goals never hit"));
    assert!(
        (r.status == lifecycle_harness::check::Status::Pass || goals_only) && r.executions > 0,
        "{} on {}: {:?} {:?}",
        r.scenario,
        r.checker,
        r.violations,
        r.error
    );
}

/// Assert that `fault` is caught with one of its rules.
pub fn assert_killed(r: &Report, fault: Fault) {
    assert!(
        r.violations
            .iter()
            .any(|v| v.rule.is_in(fault.must_violate())),
        "{fault} not killed on {} by {}: {:?}",
        r.scenario,
        r.checker,
        r.violations
    );
}

/// The production runtime the tests run on: two workers, timers and I/O.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
