//! One test per rule of this part (C1–C9), named after its ID: each runs
//! the scenario that exercises the rule on the simulator, clean, and with the
//! fault that must break it.

use lifecycle_testkit as common;

use common::{assert_killed, assert_pass, run};
use lifecycle::rules::Rule;
use lifecycle_harness::check::Checker;
use lifecycle_harness::faults::Fault;
use lifecycle_harness::scenarios;

#[test]
fn c1_cancel_requested_emitted_once_before_clearing() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::cancel::OBSERVER_QUEUES_DURING_CANCEL,
        None,
    ));
    let r = run(
        Checker::Sim,
        &scenarios::cancel::OBSERVER_QUEUES_DURING_CANCEL,
        Some(Fault::M11),
    );
    assert!(
        r.violations.iter().any(|v| v.rule == Rule::C1),
        "{:?}",
        r.violations
    );
}

#[test]
fn c2_observer_queued_work_is_cleared_too() {
    let r = run(
        Checker::Sim,
        &scenarios::cancel::OBSERVER_QUEUES_DURING_CANCEL,
        Some(Fault::M11),
    );
    assert!(
        r.violations.iter().any(|v| v.rule == Rule::C2),
        "M11 lets the observer's prompt survive: {:?}",
        r.violations
    );
}

#[test]
fn c3_first_cause_wins_and_turn_ends_aborted() {
    // With virtual time the cancel always lands mid-turn; the portfolio's
    // untimed runs also let the turn finish first (then nothing is aborted,
    // and the oracle still checks C3 on every execution).
    let r = run(Checker::Sim, &scenarios::cancel::CANCEL_MID_TURN, None);
    assert_pass(&r);
    assert!(
        r.outcomes.keys().any(|k| k.starts_with("A:aborted")),
        "{:?}",
        r.outcomes
    );
}

#[test]
fn c4_prompt_cancelled_before_claim_never_runs() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::cancel::CANCEL_BEFORE_CLAIM,
        None,
    ));
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::cancel::CANCEL_BEFORE_CLAIM,
            Some(Fault::M3),
        ),
        Fault::M3,
    );
}

#[test]
fn c5_prompt_after_cancel_runs_exactly_once() {
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::cancel::CANCEL_BEFORE_CLAIM,
            Some(Fault::M5),
        ),
        Fault::M5,
    );
}

#[test]
fn c6_idle_cancel_emits_nothing_and_strands_nothing() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::idle::IDLE_CANCEL_THEN_PROMPT,
        None,
    ));
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::idle::IDLE_CANCEL_THEN_PROMPT,
            Some(Fault::M4),
        ),
        Fault::M4,
    );
}

#[test]
fn c7_when_idle_resolves_only_at_quiescence() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::idle::WHEN_IDLE_WAITERS,
        None,
    ));
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::idle::WHEN_IDLE_WAITERS,
            Some(Fault::M12),
        ),
        Fault::M12,
    );
}

#[test]
fn c8_steering_of_cancelled_turn_never_absorbed() {
    for checker in [Checker::Sim, Checker::ShuttleRandom] {
        assert_pass(&run(checker, &scenarios::cancel::CANCEL_MID_TURN, None));
    }
}

#[test]
fn c9_panicking_observer_cannot_veto_cancel() {
    let r = run(
        Checker::Sim,
        &scenarios::cancel::OBSERVER_QUEUES_DURING_CANCEL,
        None,
    );
    assert_pass(&r);
    assert!(
        r.outcomes
            .keys()
            .any(|k| k.contains("observer-prompt:cleared-in-queue")),
        "{:?}",
        r.outcomes
    );
}
