//! Footprints checked at the source: the simulator's
//! reduction is only as sound as the accesses `Rt` reports, so the
//! primitives derive them from what they did and the engine reports a
//! mismatch as a harness error (rule `footprint`) at the step that made
//! it. Each planted mislabel is found by `sim-dfs` alone, with no sampling
//! checker to compare with.

use lifecycle::rt::{self, plant, Mislabel, Monitor, SimRt};
use lifecycle_harness::check::api::{Broken, RaceTest, Rig};
use lifecycle_harness::check::explore::sim::run_plan;
use lifecycle_harness::check::explore::sim_dfs::explore_dfs;
use lifecycle_harness::check::{self, DfsOptions, ReplayLine};
use lifecycle_harness::faults::Faults;
use lifecycle_harness::oracle::RuleId;
use lifecycle_harness::scenarios::{self, Scenario};
use lifecycle_sim::DfsConfig;
use std::collections::BTreeSet;
use std::sync::Arc;

/// `sim-dfs` on `scenario` with `mislabel` planted on this thread (the
/// search runs every execution here), stopping at the first failure.
fn first_failure(scenario: &'static Scenario, mislabel: Mislabel) -> check::Report {
    check::quiet_panics();
    let _planted = plant(mislabel);
    explore_dfs(
        scenario,
        Faults::none(),
        &DfsOptions::exhaustive(5_000),
        true,
        &|_| {},
    )
}

/// The failure is the harness's own rule, names the mislabel, and its
/// replay line reproduces it while the plant stands (and not without it).
fn assert_harness_error(report: &check::Report, mislabel: Mislabel, says: &str) {
    let found = report
        .violations
        .iter()
        .find(|v| v.rule == RuleId::Footprint)
        .unwrap_or_else(|| {
            panic!(
                "{}: no footprint error under {mislabel:?} in {} executions: {:?}",
                report.scenario, report.executions, report.violations
            )
        });
    assert!(found.message.contains("harness error"), "{}", found.message);
    assert!(found.message.contains(says), "{}", found.message);
    let line = ReplayLine::parse(&found.replay).expect("a replay line");
    let lifecycle_harness::check::replay::Payload::Sim(p) = line.payload() else {
        panic!("not a simulator line: {}", found.replay);
    };
    let again = |planted: bool| {
        let _planted = planted.then(|| plant(mislabel));
        run_plan(
            &line.scenario,
            line.faults(),
            p.seed,
            p.untimed,
            &p.plan,
            false,
        )
        .outcome
        .violations
        .iter()
        .any(|v| v.rule == RuleId::Footprint)
    };
    assert!(again(true), "the replay line does not reproduce it");
    assert!(!again(false), "without the plant the same schedule passes");
}

#[test]
fn a_lock_read_left_out_of_the_footprint_is_a_harness_error() {
    // The registry's lookups are lock reads (`Mutex::read`).
    let report = first_failure(
        &scenarios::identity::SAME_ID_CREATE_RACE,
        Mislabel::LockReadsUnreported,
    );
    assert_harness_error(
        &report,
        Mislabel::LockReadsUnreported,
        "reported no access to its object",
    );
}

#[test]
fn a_monitor_check_that_parks_after_writing_is_a_harness_error() {
    let report = first_failure(
        &scenarios::idle::WHEN_IDLE_WAITERS,
        Mislabel::ReadThatWrites,
    );
    assert_harness_error(&report, Mislabel::ReadThatWrites, "a read that writes");
}

#[test]
fn the_scenarios_pass_the_footprint_checks_unplanted() {
    // The checks hold on main: the two scenarios above, searched whole.
    check::quiet_panics();
    for scenario in [
        &scenarios::identity::SAME_ID_CREATE_RACE,
        &scenarios::idle::WHEN_IDLE_WAITERS,
    ] {
        let report = explore_dfs(
            scenario,
            Faults::none(),
            &DfsOptions::exhaustive(200_000),
            false,
            &|_| {},
        );
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert!(report.exhausted, "{} not exhausted", scenario.name);
    }
}

/// A downstream monitor whose check counts its own failed tries: a write
/// on the path that parks, which the search would otherwise move freely
/// past the monitor's writers.
async fn a_check_that_counts_its_tries(_rig: Arc<Rig<SimRt>>) {
    struct State {
        ready: bool,
        tries: u32,
    }
    let m = Arc::new(Monitor::<SimRt, State>::new(State {
        ready: false,
        tries: 0,
    }));
    let setter = m.clone();
    let t = rt::spawn::<SimRt, _>("setter", async move {
        setter.update(|s| s.ready = true);
    });
    m.wait_until("ready", |s| {
        if s.ready {
            Some(s.tries)
        } else {
            s.tries += 1;
            None
        }
    })
    .await;
    t.join().await;
}

#[test]
fn a_downstream_read_that_writes_fails_its_race_test_with_a_replay_line() {
    let t = RaceTest::new("a_downstream_read_that_writes_fails_its_race_test_with_a_replay_line");
    let failure = t
        .dfs(a_check_that_counts_its_tries)
        .expect_err("the mislabelled check is a harness error");
    assert_eq!(failure.rule, Broken::Rule(RuleId::Footprint), "{failure}");
    assert!(failure.message.contains("wait `ready`"), "{failure}");
    assert!(failure.replay.contains(":sim-dfs:"), "{failure}");
}

/// The views a `sim-dfs` search of `scenario` reaches, exhausted.
fn views(scenario: &'static Scenario, config: DfsConfig) -> BTreeSet<String> {
    check::quiet_panics();
    let report = explore_dfs(
        scenario,
        Faults::none(),
        &DfsOptions {
            config,
            ..DfsOptions::exhaustive(400_000)
        },
        false,
        &|_| {},
    );
    assert!(report.exhausted, "{} not exhausted", scenario.name);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    report.views.into_keys().collect()
}

#[test]
fn the_reduced_search_reaches_every_view_the_unreduced_one_does() {
    // The reduction's soundness, checked on real scenarios with no other
    // checker: every view of the unreduced search (every schedule, at a
    // preemption bound it exhausts) is a view of the reduced, unbounded
    // one. A footprint that says less than a step did shows here as a view
    // the reduced search lost.
    for (scenario, bound) in [
        (&scenarios::acp::DISCONNECT_RACING_NEW, 2),
        (&scenarios::identity::CREATE_DURING_OWNER_UNLOAD, 2),
        (&scenarios::acp::DISCONNECT_DURING_LOAD, 1),
        (&scenarios::dropped_create::DROPPED_CREATE, 1),
    ] {
        let unreduced = views(
            scenario,
            DfsConfig {
                reduction: false,
                preemption_bound: Some(bound),
                ..DfsConfig::default()
            },
        );
        let reduced = views(scenario, DfsConfig::default());
        let lost: Vec<_> = unreduced.difference(&reduced).collect();
        assert!(
            lost.is_empty(),
            "{}: the reduced search lost {} of the {} views of the unreduced one at bound {bound}: {lost:?}",
            scenario.name,
            lost.len(),
            unreduced.len()
        );
        assert!(
            unreduced.len() > 1,
            "{}: a single view proves nothing",
            scenario.name
        );
    }
}
