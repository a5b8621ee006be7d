//! The sans-IO core: decisions pinned transition by transition, and the
//! oracle shown to fail on bad histories (so a passing check means
//! something).

use lifecycle::agent::core::{
    Accept, AgentCore, Boundary, CancelStart, Claim, PromptSpec, Status, Wake,
};
use lifecycle::journal::{Cause, EndReason, Event};
use lifecycle::rt::context::fault_on;
use lifecycle::rules::Rule;
use lifecycle_harness::context::{self, Context};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::oracle::check_journal;

fn spec(text: &str) -> PromptSpec {
    PromptSpec::from(text)
}

fn cancel(core: &mut AgentCore, cause: Cause) -> CancelStart {
    let (call, start) = core.begin_cancel(0, cause);
    if start == CancelStart::Effective {
        core.cancel_requested(0, call, cause);
        core.finish_cancel(0, call, cause);
        core.cancel_returned(0, call);
    }
    start
}

#[test]
fn c4_marker_skips_the_prompt_in_hand() {
    let mut core = AgentCore::new(fault_on);
    assert_eq!(core.accept(0, spec("A")), Accept::Queued(0));
    assert_eq!(core.try_wake(0), Some(Wake::Woke(0)));
    assert_eq!(cancel(&mut core, Cause::User), CancelStart::Effective);
    assert_eq!(core.claim(0), Claim::Skip(0));
    assert_eq!(core.accept(0, spec("B")), Accept::Queued(1));
    assert_eq!(core.try_wake(0), Some(Wake::Woke(1)));
    assert!(matches!(core.claim(0), Claim::Run(p) if p.id == 1));
    // A history that stops mid-turn breaks D3 (no turn/end) ...
    let v = check_journal(core.journal().records());
    assert_eq!(v.first().map(|v| v.rule), Some(Rule::D3.into()), "{v:?}");
    // ... and is clean once the turn ends.
    assert_eq!(core.end_turn(0), (1, EndReason::Completed));
    core.close_turn(0);
    assert!(check_journal(core.journal().records()).is_empty());
}

#[test]
fn c5_cancel_of_a_queued_prompt_sets_no_marker() {
    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    assert_eq!(cancel(&mut core, Cause::User), CancelStart::Effective);
    assert_eq!(core.try_wake(0), None, "A was cleared");
    let _ = core.accept(0, spec("B"));
    assert_eq!(core.try_wake(0), Some(Wake::Woke(1)));
    assert!(matches!(core.claim(0), Claim::Run(p) if p.id == 1));
}

#[test]
fn m5_marker_swallows_the_next_prompt_and_the_oracle_says_c5() {
    // The core asks the execution's context for its faults (`fault!`).
    context::enter(Context::new(Faults::none().with(Fault::M5)));
    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    let _ = cancel(&mut core, Cause::User);
    let _ = core.accept(0, spec("B"));
    let _ = core.try_wake(0);
    assert_eq!(core.claim(0), Claim::Skip(1));
    let v = check_journal(core.journal().records());
    assert_eq!(v.first().map(|v| v.rule), Some(Rule::C5.into()), "{v:?}");
}

#[test]
fn c6_idle_cancel_is_idle_and_journals_no_request() {
    let mut core = AgentCore::new(fault_on);
    assert_eq!(cancel(&mut core, Cause::User), CancelStart::Idle);
    assert!(!core
        .journal()
        .records()
        .iter()
        .any(|r| matches!(r.event, Event::CancelRequested { .. })));
}

#[test]
fn c3_first_cause_wins_and_disposal_overrides() {
    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    let _ = core.try_wake(0);
    let _ = core.claim(0);
    assert_eq!(core.status(), Status::Running);
    let _ = cancel(&mut core, Cause::Parent);
    let _ = cancel(&mut core, Cause::User);
    assert_eq!(core.step_boundary(0), Boundary::Stop);
    assert_eq!(core.end_turn(0), (0, EndReason::Aborted));
    let cause = core.journal().records().iter().find_map(|r| match r.event {
        Event::TurnEnd { cause, .. } => cause,
        _ => None,
    });
    assert_eq!(cause, Some(Cause::Parent));

    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    let _ = core.try_wake(0);
    let _ = core.claim(0);
    let _ = cancel(&mut core, Cause::User);
    assert!(core.begin_dispose(0));
    assert_eq!(core.end_turn(0), (0, EndReason::Disposed));
}

#[test]
fn c8_steering_is_absorbed_only_by_a_live_turn() {
    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    let _ = core.try_wake(0);
    let _ = core.claim(0);
    assert_eq!(core.steer(0, spec("s")), Accept::Steering(0));
    let _ = cancel(&mut core, Cause::User);
    assert_eq!(core.step_boundary(0), Boundary::Stop);
    // Steering after the cancel is a prompt of its own (C5), not absorbed.
    assert_eq!(core.steer(0, spec("s2")), Accept::Queued(1));
}

#[test]
fn c7_idle_only_at_quiescence_m12_on_the_flip() {
    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    let w = core.idle_waiter(0);
    assert_eq!(core.idle_ready(0, w), None, "A is queued");
    context::enter(Context::new(Faults::none().with(Fault::M12)));
    let mut m12 = AgentCore::new(fault_on);
    let _ = m12.accept(0, spec("A"));
    let w = m12.idle_waiter(0);
    assert_eq!(m12.idle_ready(0, w), Some(false));
    let v = check_journal(m12.journal().records());
    assert_eq!(v.first().map(|v| v.rule), Some(Rule::C7.into()), "{v:?}");
}

#[test]
fn m11_order_is_caught_as_c1() {
    let mut core = AgentCore::new(fault_on);
    let _ = core.accept(0, spec("A"));
    let (call, _) = core.begin_cancel(0, Cause::User);
    core.finish_cancel(0, call, Cause::User);
    core.cancel_requested(0, call, Cause::User);
    core.cancel_returned(0, call);
    let v = check_journal(core.journal().records());
    assert!(v.iter().any(|v| v.rule == Rule::C1), "{v:?}");
}

/// Every cancel call has an id of its own, in call order, idle or
/// effective: the journal pairs each `cancel/called` with its return by it
/// (C1: one `cancel-requested` per effective call), so two calls sharing
/// one could hide a call that never returned or one that emitted twice.
#[test]
fn each_cancel_call_has_its_own_id() {
    let mut core = AgentCore::new(fault_on);
    let (idle, start) = core.begin_cancel(0, Cause::User);
    assert_eq!(start, CancelStart::Idle);
    assert_eq!(core.accept(0, spec("A")), Accept::Queued(0));
    let (first, start) = core.begin_cancel(0, Cause::User);
    assert_eq!(start, CancelStart::Effective);
    let (second, _) = core.begin_cancel(0, Cause::Parent);
    assert_eq!([idle, first, second], [0, 1, 2]);
    let called: Vec<_> = core
        .journal()
        .records()
        .iter()
        .filter_map(|r| match r.event {
            Event::CancelCalled { call, .. } => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(called, [0, 1, 2]);
}

/// A finished step is journaled as `step {prompt, step}` of the running
/// turn, in order; with no turn running there is nothing to record it for.
#[test]
fn a_finished_step_is_journaled_for_its_turn() {
    let mut core = AgentCore::new(fault_on);
    core.step_done(0, 9);
    assert_eq!(core.accept(0, spec("A")), Accept::Queued(0));
    assert_eq!(core.try_wake(0), Some(Wake::Woke(0)));
    assert!(matches!(core.claim(0), Claim::Run(p) if p.id == 0));
    core.step_done(0, 0);
    core.step_done(0, 1);
    assert_eq!(core.end_turn(0), (0, EndReason::Completed));
    core.close_turn(0);
    core.step_done(0, 2);
    let steps: Vec<_> = core
        .journal()
        .records()
        .iter()
        .filter_map(|r| match r.event {
            Event::Step { prompt, step } => Some((prompt, step)),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [(0, 0), (0, 1)]);
    assert!(check_journal(core.journal().records()).is_empty());
}
