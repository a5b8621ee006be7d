//! The exploration engine: exhaustive search with sleep-set
//! reduction, sharding, checkpoints, shrinking, the determinism self-check,
//! robust replay and reachability goals.

use lifecycle_testkit as common;

use lifecycle::rules::Rule;
use lifecycle_harness::check::explore::sim::{run_plan, run_scheduled};
use lifecycle_harness::check::explore::sim_dfs::explore_dfs;
use lifecycle_harness::check::shrink;
use lifecycle_harness::check::view::outcome_key;
use lifecycle_harness::check::{self, Budget, Checker, DfsOptions, ReplayLine};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::scenarios::{self, Scenario};
use lifecycle_sim::{Dfs, DfsConfig, ExecKind, Shard};
use lifecycle_tools::bench::pins::expected;
use std::collections::BTreeSet;

struct Search {
    executions: u64,
    complete: u64,
    outcomes: BTreeSet<String>,
    plans: BTreeSet<Vec<usize>>,
}

fn search(scenario: &'static Scenario, config: DfsConfig) -> Search {
    check::quiet_panics();
    let mut dfs = Dfs::new(config);
    let mut outcomes = BTreeSet::new();
    let mut plans = BTreeSet::new();
    while let Some(s) = dfs.next_scheduler() {
        let run = run_scheduled(scenario, Faults::none(), s, true, false);
        match dfs.end_execution() {
            ExecKind::Complete => {
                assert!(
                    run.outcome.violations.is_empty(),
                    "{:?}",
                    run.outcome.violations
                );
                outcomes.insert(outcome_key(&run.outcome));
                plans.insert(run.sim.choices().to_vec());
            }
            ExecKind::Nondeterministic(m) => panic!("nondeterministic: {m}"),
            ExecKind::Blocked | ExecKind::Foreign => {}
        }
    }
    assert!(dfs.exhausted());
    let stats = dfs.stats();
    Search {
        executions: stats.executions,
        complete: stats.complete,
        outcomes,
        plans,
    }
}

fn reduced(reduction: bool) -> DfsConfig {
    DfsConfig {
        reduction,
        ..DfsConfig::default()
    }
}

/// Source-DPOR explores no more schedules than sleep sets alone and
/// reaches exactly the same terminal outcomes (label, broken rules and both
/// journals), on scenarios small enough to exhaust unbounded at lock
/// granularity. The DPOR counts are pinned (`dpor.<scenario>.schedules` in
/// `pins.json`, measured by `lifecycle bench --pins`): a change to the
/// scenarios or to the simulator's scheduling points shows up here first.
#[test]
fn dpor_cuts_schedules_and_keeps_every_outcome() {
    for (scenario, pinned) in [
        (
            &scenarios::dispose::DISPOSE_MID_TURN,
            expected("dpor.dispose-mid-turn.schedules"),
        ),
        (
            &scenarios::identity::CREATE_DURING_OWNER_UNLOAD,
            expected("dpor.create-during-owner-unload.schedules"),
        ),
    ] {
        let d = search(scenario, reduced(true));
        let s = search(
            scenario,
            DfsConfig {
                dpor: false,
                ..reduced(true)
            },
        );
        let name = scenario.name;
        assert_eq!(d.executions, pinned, "{name}: DPOR schedules");
        assert!(
            d.executions <= s.executions,
            "{name}: DPOR explored {} > sleep sets {}",
            d.executions,
            s.executions
        );
        assert_eq!(d.outcomes, s.outcomes, "{name}: terminal outcomes differ");
        assert!(
            d.outcomes.len() >= 5,
            "{name}: {} outcomes",
            d.outcomes.len()
        );
    }
}

/// `--shard k/n`: the shards' runs are disjoint and their union is the whole
/// search, with and without reduction.
#[test]
fn shards_partition_a_scenario_search() {
    let scenario = &scenarios::acp::DISCONNECT_RACING_NEW;
    for reduction in [true, false] {
        // Bound 2 keeps it small, even without reduction; a
        // sharded DPOR search branches fully above the split depth, so the
        // whole search does too.
        let bound = Some(2);
        let whole = search(
            scenario,
            DfsConfig {
                preemption_bound: bound,
                full_top: true,
                ..reduced(reduction)
            },
        );
        let mut union = BTreeSet::new();
        let mut complete = 0;
        for index in 0..3 {
            let part = search(
                scenario,
                DfsConfig {
                    reduction,
                    preemption_bound: bound,
                    shard: Shard { index, count: 3 },
                    ..DfsConfig::default()
                },
            );
            assert!(part.plans.is_disjoint(&union), "shards overlap");
            union.extend(part.plans);
            complete += part.complete;
        }
        assert!(complete > 0, "the shards explored nothing");
        assert_eq!(union, whole.plans);
        assert_eq!(complete, whole.complete);
    }
}

/// A search stopped early, saved and resumed ends where an uninterrupted one
/// does; a checkpoint of another scenario is refused.
#[test]
fn checkpoint_and_resume() {
    check::quiet_panics();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.json");
    let scenario = &scenarios::dispose::DISPOSE_MID_TURN;
    let opts = |max, resume| DfsOptions {
        max_executions: max,
        checkpoint: Some(path.clone()),
        resume,
        ..DfsOptions::exhaustive(max)
    };
    let whole = explore_dfs(
        scenario,
        Faults::none(),
        &DfsOptions::exhaustive(u64::MAX),
        false,
        &|_| {},
    );
    assert!(whole.exhausted);
    let first = explore_dfs(
        scenario,
        Faults::none(),
        &opts(1_000, false),
        false,
        &|_| {},
    );
    assert!(!first.exhausted);
    assert!(path.exists(), "no checkpoint written");
    let rest = explore_dfs(
        scenario,
        Faults::none(),
        &opts(u64::MAX, true),
        false,
        &|_| {},
    );
    assert!(rest.exhausted, "{:?}", rest.error);
    assert_eq!(rest.executions, whole.executions);
    assert_eq!(rest.distinct_outcomes, whole.distinct_outcomes);
    assert_eq!(rest.outcomes, whole.outcomes);
    let wrong = explore_dfs(
        &scenarios::cancel::CANCEL_BEFORE_CLAIM,
        Faults::none(),
        &opts(10, true),
        false,
        &|_| {},
    );
    assert!(
        wrong
            .error
            .as_deref()
            .is_some_and(|e| e.contains("is for dispose-mid-turn")),
        "{:?}",
        wrong.error
    );
}

/// For every fault: the exhaustive search finds it, the found run replays
/// deterministically, and its shrunk run has no more preemptions (and no
/// more than the lowest preemption bound at which sim-dfs finds it), breaks
/// the same rule and replays exactly.
#[test]
fn every_fault_is_found_shrunk_and_reproduced() {
    check::quiet_panics();
    // M27 and M28 have no scenario: the generated workloads find them
    // (tests/generated.rs finds, shrinks and replays each).
    let named = Fault::ALL
        .into_iter()
        .filter(|f| !lifecycle_harness::generate::TARGETS.contains(f));
    for fault in named {
        let scenario = *scenarios::ALL
            .iter()
            .find(|s| s.targets.contains(&fault))
            .expect("a target scenario");
        let faults = Faults::none().with(fault);
        let mut opts = DfsOptions {
            stop_on: fault.must_violate(),
            ..DfsOptions::exhaustive(u64::MAX)
        };
        opts.config.preemption_bound = scenario.bounds.dfs;
        let report = explore_dfs(scenario, faults, &opts, true, &|_| {});
        let v = report
            .violations
            .iter()
            .find(|v| v.rule.is_in(fault.must_violate()))
            .unwrap_or_else(|| panic!("{fault} not found: {:?}", report.violations));
        let line = ReplayLine::parse(&v.replay).expect("parse");
        assert_eq!(line.to_string(), v.replay, "round trip");
        let (seed, untimed, plan) = line.sim_payload().expect("a simulator line");
        let found = run_plan(scenario, faults, seed, untimed, &plan, false);
        shrink::self_check(
            scenario,
            faults,
            seed,
            untimed,
            &plan,
            found.sim.trace_hash(),
        )
        .expect("deterministic");
        let s = shrink::shrink(scenario, faults, seed, untimed, &plan, v.rule);
        assert!(
            s.minimal.preemptions <= s.original.preemptions,
            "{fault}: {} > {}",
            s.minimal.preemptions,
            s.original.preemptions
        );
        // No more preemptions than the lowest bound at which sim-dfs, with
        // the shrinker's budget per bound, finds the fault.
        let lowest = (0..=shrink::BOUNDED_MAX).find(|&b| {
            let mut o = DfsOptions {
                stop_on: fault.must_violate(),
                ..DfsOptions::exhaustive(shrink::BOUNDED_BUDGET)
            };
            o.config.preemption_bound = Some(b);
            let r = explore_dfs(scenario, faults, &o, false, &|_| {});
            r.violations.iter().any(|x| x.rule == v.rule)
        });
        if let Some(lowest) = lowest {
            assert!(
                s.minimal.preemptions <= lowest,
                "{fault}: shrunk to {} preemptions, sim-dfs finds it at bound {lowest}",
                s.minimal.preemptions
            );
        }
        let again = run_plan(scenario, faults, seed, untimed, &s.minimal.plan, false);
        assert_eq!(
            again.sim.diverged_at(),
            None,
            "{fault}: shrunk plan diverged"
        );
        assert!(
            again.outcome.violations.iter().any(|x| x.rule == v.rule),
            "{fault}: shrunk run does not break {}",
            v.rule
        );
        // The report carries the shrunk line too.
        assert!(v.shrunk.is_some(), "{fault}: no shrunk line");
    }
}

/// The portfolio's PCT and random runs are replayable lines as well.
#[test]
fn portfolio_failures_replay() {
    common::setup();
    let budget = Budget {
        shrink: true,
        ..common::TEST_BUDGET
    };
    let r = check::run(
        Checker::Sim,
        &scenarios::cancel::CANCEL_BEFORE_CLAIM,
        Faults::none().with(Fault::M3),
        &budget,
        true,
    );
    let v = r.violations.first().expect("M3 found");
    let replayed =
        lifecycle_harness::check::replay::replay(&ReplayLine::parse(&v.replay).expect("parse"))
            .expect("replay");
    assert!(replayed
        .outcome
        .violations
        .iter()
        .any(|x| x.rule == Rule::C4));
    assert_eq!(replayed.diverged_at, None);
    let (before, after) = v.preemptions.expect("shrunk");
    assert!(after <= before);
}

/// A line from another build: the plan is followed as far as it fits, the
/// seeded scheduler continues, and the divergence is reported.
#[test]
fn replay_follows_the_longest_valid_prefix() {
    check::quiet_panics();
    let scenario = &scenarios::cancel::CANCEL_BEFORE_CLAIM;
    // A plan naming a task that never exists diverges at its first entry.
    let line = ReplayLine::sim(
        scenario,
        Checker::SimDfs,
        Faults::none(),
        3,
        true,
        &[0, 99, 1],
    );
    let replayed = lifecycle_harness::check::replay::replay(&line).expect("replay");
    assert!(replayed.diverged_at.is_some());
    let (followed, total) = replayed.plan_followed.expect("sim");
    assert_eq!(total, 3);
    assert!(followed < total);
    assert!(
        replayed.outcome.violations.is_empty(),
        "continued run is a normal run"
    );
    // Same line, other build: still parsed, flagged as foreign.
    let mut other = line.clone();
    other.fingerprint = "00000000".into();
    let reparsed = ReplayLine::parse(&other.to_string()).expect("parse");
    assert!(!reparsed.same_build());
    assert!(line.same_build());
}

/// An exploring checker that never reaches a declared race window fails.
#[test]
fn an_unreached_goal_fails_the_check() {
    common::setup();
    let budget = Budget {
        sim_seeds: 1,
        ..Budget::PR
    };
    let r = check::run(
        Checker::Sim,
        &scenarios::acp::SESSION_CANCEL_BEFORE_START,
        Faults::none(),
        &budget,
        true,
    );
    assert_eq!(r.status, lifecycle_harness::check::Status::Fail);
    assert!(!r.unreached.is_empty());
    assert!(
        r.error
            .as_deref()
            .is_some_and(|e| e.contains("reachability goals never hit")),
        "{:?}",
        r.error
    );
    let full = check::run(
        Checker::SimDfs,
        &scenarios::acp::SESSION_CANCEL_BEFORE_START,
        Faults::none(),
        &Budget::PR,
        true,
    );
    assert_eq!(
        full.status,
        lifecycle_harness::check::Status::Pass,
        "{:?}",
        full.error
    );
    assert!(full.exhausted);
    assert!(full.goals.iter().all(|g| g.hits > 0));
}

/// Every scenario names at least one race window, and every excuse (its
/// checker a [`Checker`], so one that exists) says why, and excuses a
/// checker that `check` would otherwise hold to the goal.
#[test]
fn every_scenario_declares_goals() {
    for s in scenarios::ALL {
        assert!(!s.goals.is_empty(), "{} declares no goal", s.name);
        for g in s.goals.iter() {
            for (checker, why) in g.excused {
                assert!(checker.requires_goals(), "{}: {checker}", g.name);
                assert!(
                    why.contains("not reached") && why.len() > "not reached".len() + 10,
                    "{}: an excuse must say where the checker did not reach it, and why",
                    g.name
                );
            }
        }
    }
}

/// Goals are predicates over typed facts and journals, never over the
/// outcome's label: on 40 portfolio runs of every scenario,
/// each outcome carries its scenario's fact, and every goal answers the
/// same once the label is blanked. A goal that matched label text would
/// stop hitting here on the first outcome it hits.
#[test]
fn goals_read_facts_not_labels() {
    use lifecycle_harness::check::explore::sim::{expected_branches, portfolio_scheduler};
    check::quiet_panics();
    for s in scenarios::ALL {
        let expected = expected_branches(s, Faults::none());
        let mut hits = vec![0u32; s.goals.len()];
        for seed in 0..40 {
            let (scheduler, untimed) = portfolio_scheduler(seed, 3, expected);
            let outcome = run_scheduled(s, Faults::none(), scheduler, untimed, false).outcome;
            assert!(
                outcome.fact.is_some(),
                "{} (seed {seed}) said {:?} with no typed fact",
                s.name,
                outcome.label
            );
            let mut blanked = outcome.clone();
            blanked.label = String::new();
            for (g, n) in s.goals.iter().zip(&mut hits) {
                let hit = g.hit(&outcome);
                assert_eq!(
                    hit,
                    g.hit(&blanked),
                    "{}: goal {} reads the label",
                    s.name,
                    g.name
                );
                *n += u32::from(hit);
            }
        }
        assert!(
            hits.iter().any(|&n| n > 0),
            "{}: no goal hit in 40 runs, so this test checked none of them",
            s.name
        );
    }
}
