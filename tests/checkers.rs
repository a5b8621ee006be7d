//! Every scenario under every checker (small budget), outcome sets, the
//! fault kill matrix, replay round-trips and determinism.

use lifecycle_testkit as common;

use common::{assert_killed, assert_pass, run};
use lifecycle::rules::Rule;
use lifecycle_harness::check::{self, Budget, Checker, ReplayLine, Status};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::scenarios;
use lifecycle_sim::Sim;

/// A smoke run: `check --tier pr` explores each scenario in full; here
/// every scenario runs on every checker at a budget a debug build gets
/// through in about a minute (32 scenarios x 6 checkers).
#[test]
fn every_scenario_passes_on_every_checker() {
    common::setup();
    let budget = Budget {
        sim_seeds: 1_000,
        dfs_executions: 5_000,
        shuttle_iterations: 500,
        loom_executions: Some(5_000),
        tokio_runs: 10,
        ..common::TEST_BUDGET
    };
    for scenario in scenarios::ALL {
        for checker in Checker::ALL {
            let r = check::run(checker, scenario, Faults::none(), &budget, true);
            // loom skips none: in its shape (`Ctx::loom`) every scenario
            // runs within its five threads.
            assert_ne!(r.status, Status::Skip, "{} on {checker}", scenario.name);
            assert_pass(&r);
        }
    }
}

#[test]
fn loom_exhausts_cancel_before_claim() {
    common::setup();
    let budget = Budget {
        loom_executions: None,
        ..common::TEST_BUDGET
    };
    let r = check::run(
        Checker::Loom,
        &scenarios::cancel::CANCEL_BEFORE_CLAIM,
        Faults::none(),
        &budget,
        true,
    );
    assert_pass(&r);
    assert!(r.exhausted, "loom did not exhaust the space");
}

/// Outcome sets: each checker that explores schedules reaches both sides of
/// the race of `cancel-before-claim` (A cancelled before its claim; A ran
/// before the cancel), and the marker path (cancel between wake and claim).
#[test]
fn cancel_before_claim_outcome_sets() {
    for checker in [Checker::Sim, Checker::Loom, Checker::ShuttleRandom] {
        let r = run(checker, &scenarios::cancel::CANCEL_BEFORE_CLAIM, None);
        let seen: Vec<&str> = r.outcomes.keys().map(String::as_str).collect();
        for want in [
            "A:cleared-in-queue",
            "A:skipped-at-claim",
            "A:ran-before-cancel",
        ] {
            assert!(
                seen.contains(&want),
                "{checker} never reached {want}: {seen:?}"
            );
        }
    }
}

#[test]
fn every_fault_is_killed_by_sim_and_shuttle_pct() {
    let plan = [
        (Fault::M1, &scenarios::dispose::DISPOSE_MID_TURN),
        (Fault::M6, &scenarios::dispose::CONCURRENT_DISPOSE),
        (Fault::M9, &scenarios::identity::SAME_ID_CREATE_RACE),
        (Fault::M10, &scenarios::dispose::DISPOSED_LISTENER_PANICS),
        (Fault::M3, &scenarios::cancel::CANCEL_BEFORE_CLAIM),
        (Fault::M4, &scenarios::idle::IDLE_CANCEL_THEN_PROMPT),
        (Fault::M5, &scenarios::cancel::CANCEL_BEFORE_CLAIM),
        (
            Fault::M11,
            &scenarios::cancel::OBSERVER_QUEUES_DURING_CANCEL,
        ),
        (Fault::M12, &scenarios::idle::WHEN_IDLE_WAITERS),
        (Fault::M13, &scenarios::acp::DUPLICATE_LOAD),
        (Fault::M16, &scenarios::crash::CRASH_MID_TURN),
        (Fault::M17, &scenarios::crash::CRASH_MID_TURN),
        (
            Fault::M18,
            &scenarios::storage_error::STORAGE_ERROR_MID_TURN,
        ),
        (Fault::M19, &scenarios::hung_step::HUNG_STEP),
    ];
    for (fault, scenario) in plan {
        for checker in [Checker::Sim, Checker::ShuttlePct, Checker::Loom] {
            // M19 is a stall, named from the waits parked in it (counted
            // per execution's thread, so the tests running beside this one
            // do not reset them).
            assert_killed(&run(checker, scenario, Some(fault)), fault);
        }
    }
}

/// The faults of the oracles that observe: each is killed from
/// what the receiving side saw, on at least two checkers, loom among them.
#[test]
fn observing_oracles_kill_m21_to_m24() {
    for (fault, scenario) in [
        (Fault::M21, &scenarios::shell::COMPLETION_NOTICE_ROUTING),
        (Fault::M22, &scenarios::identity::SAME_ID_VS_TEARDOWN),
        (Fault::M23, &scenarios::dispose::CANCEL_THEN_DISPOSE),
        (Fault::M24, &scenarios::identity::CREATE_DURING_OWNER_UNLOAD),
    ] {
        for checker in [
            Checker::Sim,
            Checker::SimDfs,
            Checker::ShuttlePct,
            Checker::Loom,
        ] {
            assert_killed(&run(checker, scenario, Some(fault)), fault);
        }
    }
}

/// Owner drain (S7): M20 leaves a disposed agent's job running and known,
/// seen from the shell's history and from what the new agent with the old
/// id gets back.
#[test]
fn s7_owner_drain_kills_m20() {
    let scenario = &scenarios::owner_drain::DISPOSE_WITH_OWNED_JOB;
    for checker in [
        Checker::Sim,
        Checker::SimDfs,
        Checker::ShuttleRandom,
        Checker::ShuttlePct,
        Checker::Loom,
    ] {
        assert_killed(&run(checker, scenario, Some(Fault::M20)), Fault::M20);
    }
}

/// Check-then-act faults (two lock sections with no await between them)
/// need a scheduler that preempts a task between the sections: the
/// simulator at lock granularity and loom find them. (Shuttle does not
/// find M14's lost wake-up in this scenario, even in long runs of either
/// scheduler.)
#[test]
fn check_then_act_faults_are_killed_at_lock_granularity() {
    for (fault, scenario) in [
        (Fault::M13, &scenarios::acp::DUPLICATE_LOAD),
        (Fault::M14, &scenarios::idle::WHEN_IDLE_WAITERS),
    ] {
        for checker in [Checker::Sim, Checker::SimDfs, Checker::Loom] {
            assert_killed(&run(checker, scenario, Some(fault)), fault);
        }
    }
}

/// A loom deadlock (M4 leaves the marker set, so `when_idle` never
/// resolves) is reported as a violation with a replay line, not a crash.
#[test]
fn loom_deadlock_is_reported_not_fatal() {
    let r = run(
        Checker::Loom,
        &scenarios::cancel::CANCEL_MID_TURN,
        Some(Fault::M4),
    );
    assert_eq!(r.status, Status::Fail);
    let v = r.violations.first().expect("a violation");
    assert!(
        v.replay.starts_with("v3:cancel-mid-turn:loom:M4:"),
        "{}",
        v.replay
    );
    let replayed =
        lifecycle_harness::check::replay::replay(&ReplayLine::parse(&v.replay).expect("parse"))
            .expect("replay");
    assert!(
        replayed.outcome.violations.iter().any(|x| x.rule == v.rule),
        "{} did not reproduce {}: {:?}",
        v.replay,
        v.rule,
        replayed.outcome.violations
    );
}

#[test]
fn replay_round_trip_sim() {
    let r = run(
        Checker::Sim,
        &scenarios::cancel::CANCEL_BEFORE_CLAIM,
        Some(Fault::M3),
    );
    let line = r.violations[0].replay.clone();
    let parsed = ReplayLine::parse(&line).expect("parse");
    assert_eq!(parsed.to_string(), line);
    let a = lifecycle_harness::check::replay::replay(&parsed).expect("replay");
    let b = lifecycle_harness::check::replay::replay(&parsed).expect("replay");
    assert_eq!(a.journal, b.journal, "replay is not deterministic");
    assert_eq!(a.trace_hash, b.trace_hash);
    let rules: Vec<_> = a.outcome.violations.iter().map(|v| v.rule).collect();
    assert!(
        rules.contains(&Rule::C4.into()),
        "replay did not reproduce C4: {rules:?}"
    );
}

#[test]
fn replay_round_trip_loom_and_shuttle() {
    common::setup();
    for checker in [Checker::Loom, Checker::ShuttleRandom, Checker::ShuttlePct] {
        let r = run(
            checker,
            &scenarios::cancel::CANCEL_BEFORE_CLAIM,
            Some(Fault::M3),
        );
        let line = &r.violations.first().expect("killed").replay;
        let replayed =
            lifecycle_harness::check::replay::replay(&ReplayLine::parse(line).expect("parse"))
                .expect("replay");
        assert!(
            replayed
                .outcome
                .violations
                .iter()
                .any(|v| v.rule == Rule::C4),
            "{checker}: {line} did not reproduce: {:?}",
            replayed.outcome.violations
        );
    }
}

#[test]
fn determinism_same_seed_same_trace_hash() {
    use lifecycle_harness::check::explore::sim::{portfolio_scheduler, run_scheduled};
    use lifecycle_harness::faults::Faults;
    let mut hashes = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let run = |seed| {
            let (s, untimed) = portfolio_scheduler(seed, 3, [10, 20]);
            run_scheduled(
                &scenarios::cancel::CANCEL_MID_TURN,
                Faults::none(),
                s,
                untimed,
                false,
            )
        };
        let (r1, r2) = (run(seed), run(seed));
        assert_eq!(r1.sim.trace_hash(), r2.sim.trace_hash(), "seed {seed}");
        assert_eq!(r1.outcome.journal, r2.outcome.journal, "seed {seed}");
        hashes.insert(r1.sim.trace_hash());
    }
    assert!(
        hashes.len() > 1,
        "20 seeds gave one schedule: the scheduler is not exploring"
    );
}

#[test]
fn sim_decisions_replay_identically() {
    let mut sim = Sim::with_seed(7);
    let report = sim
        .block_on(lifecycle_harness::scenarios::run::<lifecycle::rt::SimRt>(
            &scenarios::cancel::CANCEL_BEFORE_CLAIM,
            Default::default(),
        ))
        .expect("run");
    let mut again = Sim::replay(sim.decisions().to_vec());
    let report2 = again
        .block_on(lifecycle_harness::scenarios::run::<lifecycle::rt::SimRt>(
            &scenarios::cancel::CANCEL_BEFORE_CLAIM,
            Default::default(),
        ))
        .expect("replay");
    assert_eq!(report.journal, report2.journal);
    assert_eq!(sim.trace_hash(), again.trace_hash());
    assert_eq!(again.diverged_at(), None);
}

#[test]
#[should_panic(expected = "malformed replay line")]
fn malformed_replay_line_is_an_error() {
    ReplayLine::parse("cancel-before-claim")
        .map_err(|e| e.0)
        .unwrap();
}

#[test]
fn bad_replay_lines_are_rejected() {
    for bad in [
        "v1:cancel-before-claim:sim:none:seed=1",
        "v3:cancel-before-claim:sim:none:seed=1;time=free;plan=",
        "v3:nope:sim:none:00000000:seed=1;time=free;plan=",
        "v3:cancel-before-claim:nope:none:00000000:seed=1;time=free;plan=",
        "v3:cancel-before-claim:sim:M99:00000000:seed=1;time=free;plan=",
        "v3:cancel-before-claim:sim:none:0000000g:seed=1;time=free;plan=",
        "v3:cancel-before-claim:sim:none:00000000:seed=x;time=free;plan=",
        "v3:cancel-before-claim:sim:none:00000000:seed=1;time=slow;plan=",
        "v3:cancel-before-claim:sim:none:00000000:seed=1;time=free;plan=A",
        "v3:cancel-before-claim:sim:none:00000000:seed=1;time=free;plan={9",
        "v3:cancel-before-claim:loom:none:00000000:exec=1",
        "v3:cancel-before-claim:shuttle-pct:none:00000000:schedule=zz",
    ] {
        assert!(ReplayLine::parse(bad).is_err(), "accepted {bad}");
    }
}
