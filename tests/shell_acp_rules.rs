//! One test per shell-ownership and ACP rule (S1–S6, A1–A8), named after
//! its ID, on the scenarios that exercise them; faults M2, M7, M8 caught.

use lifecycle_testkit as common;

use common::{assert_killed, assert_pass, run};
use lifecycle_harness::check::api::LOOM_MAX_THREADS;
use lifecycle_harness::check::Checker;
use lifecycle_harness::faults::Fault;
use lifecycle_harness::scenarios;

#[test]
fn s1_s2_s3_s4_fences_hold_on_every_call() {
    for checker in [Checker::Sim, Checker::ShuttleRandom, Checker::ShuttlePct] {
        assert_pass(&run(checker, &scenarios::shell::TOOL_BASH_RELOAD, None));
    }
}

#[test]
fn s5_reload_does_not_change_ownership() {
    for checker in [Checker::Sim, Checker::ShuttlePct] {
        assert_killed(
            &run(
                checker,
                &scenarios::shell::TOOL_BASH_RELOAD,
                Some(Fault::M2),
            ),
            Fault::M2,
        );
    }
}

#[test]
fn s6_notice_reaches_only_the_live_owner() {
    for checker in [Checker::Sim, Checker::ShuttleRandom] {
        assert_pass(&run(
            checker,
            &scenarios::shell::COMPLETION_NOTICE_ROUTING,
            None,
        ));
    }
}

/// loom skips none: in its shape (`Ctx::loom`) a simulated shell's timed
/// jobs share one driver task and a side caller joins the main task, so
/// the scenarios with several jobs fit loom's five threads, which a task
/// per job took them past; loom then kills their faults.
#[test]
fn loom_runs_the_shell_scenarios_in_its_shape_and_kills_their_faults() {
    for (scenario, fault) in [
        (&scenarios::shell::TOOL_BASH_RELOAD, Fault::M2),
        (&scenarios::shell::COMPLETION_NOTICE_ROUTING, Fault::M21),
        (&scenarios::owner_drain::DISPOSE_WITH_OWNED_JOB, Fault::M20),
    ] {
        let tasks = lifecycle_harness::check::tasks(scenario);
        assert!(
            tasks.without_bystanders > LOOM_MAX_THREADS && tasks.loom <= LOOM_MAX_THREADS,
            "{}: {tasks:?}",
            scenario.name
        );
        let r = run(Checker::Loom, scenario, None);
        assert_ne!(
            r.status,
            lifecycle_harness::check::Status::Skip,
            "{}",
            scenario.name
        );
        assert_pass(&r);
        assert_killed(&run(Checker::Loom, scenario, Some(fault)), fault);
    }
}

#[test]
fn a1_a7_nothing_survives_a_close_racing_session_new() {
    for checker in [Checker::Sim, Checker::Loom] {
        assert_pass(&run(checker, &scenarios::acp::DISCONNECT_RACING_NEW, None));
    }
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::acp::DISCONNECT_RACING_NEW,
            Some(Fault::M7),
        ),
        Fault::M7,
    );
}

#[test]
fn a1_nothing_survives_a_close_during_session_load() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::acp::DISCONNECT_DURING_LOAD,
        None,
    ));
    assert_killed(
        &run(
            Checker::Sim,
            &scenarios::acp::DISCONNECT_DURING_LOAD,
            Some(Fault::M8),
        ),
        Fault::M8,
    );
}

#[test]
fn a2_a3_cancel_before_start_and_unknown_session() {
    let r = run(
        Checker::Sim,
        &scenarios::acp::SESSION_CANCEL_BEFORE_START,
        None,
    );
    assert_pass(&r);
    assert!(r.outcomes.contains_key("A:never-ran"), "{:?}", r.outcomes);
}

#[test]
fn a4_a8_disconnect_mid_prompt() {
    assert_pass(&run(
        Checker::Sim,
        &scenarios::acp::DISCONNECT_MID_PROMPT,
        None,
    ));
}

#[test]
fn a5_duplicate_load_fails_already_loaded() {
    for checker in [Checker::Sim, Checker::Loom, Checker::ShuttleRandom] {
        assert_pass(&run(checker, &scenarios::acp::DUPLICATE_LOAD, None));
    }
}

#[test]
fn a6_disconnect_and_unload_share_one_teardown() {
    assert_pass(&run(
        Checker::ShuttlePct,
        &scenarios::acp::DISCONNECT_RACING_NEW,
        None,
    ));
}
