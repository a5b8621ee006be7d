//! Shallow first: a `sim-dfs` search after its first
//! failure runs its preemption bounds 0 and 1 before its own, so a fault
//! that needs one preemption is found among the first schedules instead of
//! where the depth-first order of the unbounded tree reaches it.

use lifecycle::rules::Rule;
use lifecycle_harness::check::explore::sim_dfs::explore_dfs;
use lifecycle_harness::check::{self, DfsOptions};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::scenarios;

fn to_first_failure(fault: Fault, shallow: bool) -> check::Report {
    check::quiet_panics();
    explore_dfs(
        &scenarios::cancel::CANCEL_BEFORE_CLAIM,
        Faults::none().with(fault),
        &DfsOptions {
            shallow,
            stop_on: fault.must_violate(),
            ..DfsOptions::exhaustive(100_000)
        },
        true,
        &|_| {},
    )
}

#[test]
fn a_one_preemption_fault_is_found_before_the_unbounded_order_reaches_it() {
    // M3 (no pre-run marker) needs one preemption between wake and claim.
    let deep = to_first_failure(Fault::M3, false);
    let shallow = to_first_failure(Fault::M3, true);
    for r in [&deep, &shallow] {
        assert!(
            r.violations.iter().any(|v| v.rule == Rule::C4),
            "{:?}",
            r.violations
        );
    }
    assert!(
        shallow.executions < deep.executions,
        "shallow first took {} schedules, the unbounded order {}",
        shallow.executions,
        deep.executions
    );
    // What it found needs at most the shallow bound, and its line replays it.
    let found = &shallow.violations[0];
    assert!(found.preemptions.is_some_and(|(p, _)| p <= 1), "{found:?}");
    let line = check::ReplayLine::parse(&found.replay).expect("a replay line");
    let again = check::replay::replay(&line).expect("it replays");
    assert!(
        again.outcome.violations.iter().any(|v| v.rule == Rule::C4),
        "{:?}",
        again.outcome.violations
    );
}

#[test]
fn a_clean_search_counts_its_shallow_passes_and_still_exhausts() {
    check::quiet_panics();
    let run = |shallow| {
        explore_dfs(
            &scenarios::idle::IDLE_CANCEL_THEN_PROMPT,
            Faults::none(),
            &DfsOptions {
                shallow,
                ..DfsOptions::exhaustive(100_000)
            },
            true,
            &|_| {},
        )
    };
    let (plain, shallow) = (run(false), run(true));
    assert!(plain.exhausted && shallow.exhausted);
    assert!(shallow.violations.is_empty(), "{:?}", shallow.violations);
    // The same views; the shallow passes' schedules are counted, not hidden.
    assert_eq!(
        shallow.views.keys().collect::<Vec<_>>(),
        plain.views.keys().collect::<Vec<_>>()
    );
    assert!(shallow.executions > plain.executions);
    assert_eq!(
        shallow.dfs.map(|d| d.executions),
        plain.dfs.map(|d| d.executions)
    );
}
