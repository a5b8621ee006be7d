//! One test per dispose and identity rule (D1–D7, R1–R3), named after its
//! ID: the scenario that exercises it passes on the simulator, and the
//! fault that must break it is caught.

use lifecycle_testkit as common;

use common::{assert_killed, assert_pass, run};
use lifecycle::rules::Rule;
use lifecycle_harness::check::Checker;
use lifecycle_harness::faults::Fault;
use lifecycle_harness::scenarios;

#[test]
fn d1_dispose_is_memoized_and_every_caller_waits() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::dispose::CONCURRENT_DISPOSE,
        None,
    ));
    assert_pass(&run(
        Checker::Sim,
        &scenarios::dispose::OWNER_UNLOAD_VS_HANDLE_DISPOSE,
        None,
    ));
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::dispose::CONCURRENT_DISPOSE,
            Some(Fault::M6),
        ),
        Fault::M6,
    );
}

#[test]
fn d2_teardown_runs_its_five_steps_in_order() {
    let r = run(
        Checker::Sim,
        &scenarios::dispose::CONCURRENT_DISPOSE,
        Some(Fault::M1),
    );
    assert!(
        r.violations
            .iter()
            .any(|v| v.rule == Rule::D2 || v.rule == Rule::D3),
        "a sibling session effect must break the order or lose the closing turn/end: {:?}",
        r.violations
    );
    assert_pass(&run(
        Checker::ShuttlePct,
        &scenarios::dispose::CONCURRENT_DISPOSE,
        None,
    ));
}

#[test]
fn d3_closing_turn_end_is_durable_after_any_dispose_path() {
    for s in [
        &scenarios::dispose::DISPOSE_MID_TURN,
        &scenarios::dispose::OWNER_UNLOAD_VS_HANDLE_DISPOSE,
    ] {
        assert_pass(&run(Checker::Sim, s, None));
    }
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::dispose::DISPOSE_MID_TURN,
            Some(Fault::M1),
        ),
        Fault::M1,
    );
}

#[test]
fn d4_failing_disposed_listener_cannot_skip_a_step() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::dispose::DISPOSED_LISTENER_PANICS,
        None,
    ));
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::dispose::DISPOSED_LISTENER_PANICS,
            Some(Fault::M10),
        ),
        Fault::M10,
    );
}

#[test]
fn d5_disposing_one_agent_leaves_the_others_untouched() {
    let r = run(
        Checker::Sim,
        &scenarios::dispose::DISPOSED_LISTENER_PANICS,
        None,
    );
    assert_pass(&r);
    assert!(r.outcomes.contains_key("B:completed"), "{:?}", r.outcomes);
}

#[test]
fn d6_no_queued_prompt_starts_after_dispose_began() {
    let r = run(Checker::Sim, &scenarios::dispose::DISPOSE_MID_TURN, None);
    assert_pass(&r);
    assert!(
        r.outcomes
            .keys()
            .any(|k| k.ends_with("tail:cleared-by-dispose")),
        "{:?}",
        r.outcomes
    );
}

#[test]
fn d7_provider_unload_disposes_config_created_agents() {
    for checker in [Checker::Sim, Checker::Loom, Checker::ShuttleRandom] {
        assert_pass(&run(checker, &scenarios::dispose::PROVIDER_UNLOAD, None));
    }
}

#[test]
fn r1_one_of_concurrent_same_id_creates_publishes() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::identity::SAME_ID_CREATE_RACE,
        None,
    ));
    for checker in [Checker::Sim, Checker::Loom, Checker::ShuttlePct] {
        assert_killed(
            &run(
                checker,
                &scenarios::identity::SAME_ID_CREATE_RACE,
                Some(Fault::M9),
            ),
            Fault::M9,
        );
    }
}

#[test]
fn r2_stale_detach_never_removes_a_newer_entry() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::identity::ID_REUSE_AFTER_DETACH,
        None,
    ));
    assert_pass(&run(
        Checker::Loom,
        &scenarios::identity::ID_REUSE_AFTER_DETACH,
        None,
    ));
}

/// Both sides of the race are reached: the creation refused, and the
/// creation completed then disposed by the unload.
#[test]
fn r3_creation_whose_owner_unloads_publishes_nothing() {
    for checker in [Checker::Sim, Checker::Loom] {
        let r = run(
            checker,
            &scenarios::identity::CREATE_DURING_OWNER_UNLOAD,
            None,
        );
        assert_pass(&r);
        for want in ["refused", "created-then-disposed"] {
            assert!(
                r.outcomes.contains_key(want),
                "{checker} never reached {want}: {:?}",
                r.outcomes
            );
        }
    }
}
