//! The independent class counter (`check::classes`) on real scenarios:
//! every class of execution that a naive search reaches, the `sim-dfs`
//! search of `check --tier pr` runs, and the census's figures are the
//! pinned ones (`classes.<scenario>.*`).
//!
//! The naive search enumerates every schedule with at most
//! `NAIVE_BOUND` preemption, unreduced; the counter reduces each
//! execution to its class by reading the trace's accesses itself (failed
//! waits, wakes and a section's echoes are not events). It shares no code
//! with the search's reduction, so a class it finds that `sim-dfs` never
//! ran is a schedule the reduction lost.

use lifecycle_harness::check::classes::{census, naive, Census, CAP, COUNTED, NAIVE_BOUND};
use lifecycle_harness::check::explore::sim_dfs::search_config;
use lifecycle_harness::check::{quiet_panics, Budget};
use lifecycle_harness::faults::Faults;
use lifecycle_harness::scenarios::Scenario;
use lifecycle_sim::DfsConfig;
use lifecycle_tools::bench::pins::expected;

fn count(scenario: &Scenario, config: DfsConfig) -> Census {
    let c = census(scenario, Faults::none(), config, CAP).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        c.exhausted,
        "{}: the census reached its cap of {CAP}",
        scenario.name
    );
    c
}

/// The classes of `naive` that `searched` never ran, as one line each
/// with the replay line of the naive execution that reached it.
fn lost(scenario: &Scenario, naive: &Census, searched: &Census) -> Vec<String> {
    naive
        .missing_from(searched)
        .into_iter()
        .map(|(_, class)| {
            format!(
                "lifecycle replay '{}'",
                class.replay_line(scenario, Faults::none())
            )
        })
        .collect()
}

#[test]
fn sim_dfs_runs_every_class_the_naive_search_reaches() {
    quiet_panics();
    for scenario in COUNTED {
        let name = scenario.name;
        let naive = count(scenario, naive(Some(NAIVE_BOUND)));
        let searched = count(scenario, search_config(scenario, &Budget::PR));
        let lost = lost(scenario, &naive, &searched);
        assert!(
            lost.is_empty(),
            "{name}: sim-dfs (as `check --tier pr` runs it) never ran {} of the {} classes \
             the naive search reaches with at most {NAIVE_BOUND} preemption; each replays with:\n  {}",
            lost.len(),
            naive.classes.len(),
            lost.join("\n  ")
        );
        // The census ran the search `check` runs: the same schedules.
        assert_eq!(
            searched.schedules(),
            expected(&format!("sim-dfs.{name}.schedules")),
            "{name}: the census's sim-dfs schedules"
        );
        for (key, value) in [
            ("naive-schedules", naive.schedules()),
            ("naive-classes", naive.classes.len() as u64),
            ("sim-dfs-complete", searched.complete),
            ("sim-dfs-classes", searched.classes.len() as u64),
        ] {
            assert_eq!(
                value,
                expected(&format!("classes.{name}.{key}")),
                "{name}: pin classes.{name}.{key}"
            );
        }
    }
}

/// The comparison can fail: `sim-dfs` held to no preemption at all never
/// runs the classes that need one, and the census names them.
#[test]
fn a_search_that_loses_classes_is_caught() {
    quiet_panics();
    let scenario = COUNTED[2];
    let naive = count(scenario, naive(Some(NAIVE_BOUND)));
    let held = count(
        scenario,
        DfsConfig {
            preemption_bound: Some(0),
            ..search_config(scenario, &Budget::PR)
        },
    );
    let lost = lost(scenario, &naive, &held);
    assert!(
        !lost.is_empty(),
        "{}: sim-dfs at bound 0 reached all {} naive classes: the census cannot tell a lossy search",
        scenario.name,
        naive.classes.len()
    );
    assert!(lost[0].starts_with("lifecycle replay 'v"), "{}", lost[0]);
}
