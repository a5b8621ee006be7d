//! The fast harness gate that cargo-mutants runs for every mutant of the
//! lifecycle code (`.cargo/mutants.toml`): every scenario under `sim`,
//! `sim-dfs` (at its PR bound, capped) and shuttle-pct at small budgets.
//! A mutant survives only if all of them pass.
//!
//! The runs are spread over one worker thread per core, and the gate stops
//! at the first failure: a mutant is caught by one violation, and the rest
//! of the runs would only cost time. The failure names the rule, the
//! scenario, the checker and the replay line.
//!
//! Goals are judged on each scenario's union of the three checkers (these
//! budgets are too small for every checker to reach every goal alone): a
//! goal no checker reached fails the gate, so a mutant that closes a
//! window (a job that never exits on its own, a race that never opens) is
//! caught even when every run passes its rules.
//!
//! Plain `cargo test` skips it (`#[ignore]`): the full suite covers the
//! same ground with larger budgets. cargo-mutants passes
//! `--include-ignored`; by hand: `cargo test --test harness_gate --
//! --include-ignored`.

use lifecycle_testkit as common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use lifecycle_harness::check::{self, Budget, Checker, Report};
use lifecycle_harness::faults::Faults;
use lifecycle_harness::scenarios;

const GATE: Budget = Budget {
    sim_seeds: 300,
    dfs_executions: 2_000,
    shuttle_iterations: 200,
    ..common::TEST_BUDGET
};

const CHECKERS: [Checker; 3] = [Checker::Sim, Checker::SimDfs, Checker::ShuttlePct];

#[test]
#[ignore = "the cargo-mutants gate; the full suite covers it with larger budgets"]
fn every_scenario_passes_the_gate() {
    common::setup();
    let jobs: Vec<_> = scenarios::ALL
        .iter()
        .flat_map(|s| CHECKERS.map(|c| (c, *s)))
        .collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failed = Mutex::new(Vec::new());
    // scenario -> goal -> (hits, checkers that had to reach it)
    let goals = Mutex::new(BTreeMap::<&str, BTreeMap<&str, (u64, u32)>>::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&(checker, scenario)) = jobs.get(next.fetch_add(1, Ordering::Relaxed))
                    else {
                        break;
                    };
                    let r = check::run(checker, scenario, Faults::none(), &GATE, true);
                    // A violation, or the checker's own error (nothing
                    // explored, a crash). Goals are not judged: these
                    // budgets are too small to reach all of them.
                    if !r.violations.is_empty() || (r.error.is_some() && r.unreached.is_empty()) {
                        stop.store(true, Ordering::Relaxed);
                        failed.lock().unwrap().push(failure(&r));
                    }
                    let mut goals = goals.lock().unwrap();
                    let of = goals.entry(r.scenario).or_default();
                    for g in &r.goals {
                        let e = of.entry(g.goal).or_default();
                        e.0 += g.hits;
                        e.1 += u32::from(g.excused.is_none());
                    }
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap();
    if failed.is_empty() {
        for (scenario, of) in goals.into_inner().unwrap() {
            for (goal, (hits, required)) in of {
                if hits == 0 && required > 0 {
                    failed.push(format!(
                        "{scenario}: goal {goal} reached by none of sim, sim-dfs and shuttle-pct"
                    ));
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "the harness gate stopped at its first failure:\n{}",
        failed.join("\n")
    );
}

/// One line: the rule (or the checker's error), the scenario, the checker
/// and the replay line.
fn failure(r: &Report) -> String {
    match r.violations.first() {
        Some(v) => format!(
            "{} on {}: {} ({}); replay: {}",
            r.scenario, r.checker, v.rule, v.message, v.replay
        ),
        None => format!(
            "{} on {}: {}",
            r.scenario,
            r.checker,
            r.error.as_deref().unwrap_or("failed")
        ),
    }
}
