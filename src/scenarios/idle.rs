//! Scenarios about idleness: `idle-cancel-then-prompt`, `when-idle-waiters`.

use super::cancel::fate;
use super::{spec, Outcome};
use crate::agent::{Agent, CancelOutcome, Idle};
use crate::faults::Faults;
use crate::journal::{Cause, Event};
use crate::oracle::Violation;
use crate::rt::{self, Rt};

/// `idle-cancel-then-prompt`: A completes; a cancel with no turn and an
/// empty inbox emits nothing and sets no marker; B then runs (C6).
pub async fn idle_cancel_then_prompt<R: Rt>(faults: Faults) -> Outcome {
    let h = Agent::<R>::spawn_with_faults("agent-1", faults);
    let agent = h.agent.clone();
    let a = agent.send(spec("A", 1)).expect("send A");
    agent.when_idle().await;
    let cancelled = agent.cancel(Cause::User);
    let b = agent.send(spec("B", 1)).expect("send B");
    agent.when_idle().await;
    h.stop().await;
    let journal = agent.journal();
    let emitted = journal.iter().any(|r| {
        matches!(
            r.event,
            Event::CancelRequested { .. } | Event::Cleared { .. }
        )
    });
    let b_fate = fate(&journal, b);
    let own = vec![
        (
            cancelled == CancelOutcome::Idle && !emitted,
            Violation::new("C6", "an idle cancel emitted or cleared something"),
        ),
        (
            b_fate == "completed",
            Violation::new(
                "C6",
                format!("the prompt after an idle cancel ended `{b_fate}`, not completed"),
            ),
        ),
    ];
    let label = format!("A:{} B:{b_fate}", fate(&journal, a));
    Outcome::checked(journal, &agent.durable_log(), label, own)
}

/// `when-idle-waiters`: a waiter registered before a cancel resolves; a
/// waiter registered after a later prompt B was accepted does not resolve
/// before B's turn has ended (C7).
pub async fn when_idle_waiters<R: Rt>(faults: Faults) -> Outcome {
    let h = Agent::<R>::spawn_with_faults("agent-1", faults);
    let agent = h.agent.clone();
    agent.send(spec("A", 1)).expect("send A");
    // Registered now, before the cancel.
    let early = agent.when_idle();
    agent.cancel(Cause::User);
    let b = agent.send(spec("B", 1)).expect("send B");
    let late = agent.when_idle();
    // The late waiter waits alone in its own task, so no other future of
    // its task can wake it by chance: a lost wake-up (M14) is a stall.
    let watcher = agent.clone();
    let late = rt::spawn::<R, _>("late-waiter", async move {
        let idle = late.await;
        (idle, fate(&watcher.journal(), b))
    });
    let early_result = early.await;
    let (late, b_done_at_late) = late.join().await;
    h.stop().await;
    let journal = agent.journal();
    let own = vec![
        (
            late == Idle::Quiescent && b_done_at_late == "completed",
            Violation::new(
                "C7",
                format!("when_idle registered after B resolved while B was `{b_done_at_late}`"),
            ),
        ),
        (
            early_result == Idle::Quiescent,
            Violation::new(
                "C7",
                "a waiter registered before the cancel resolved `done` before disposal",
            ),
        ),
    ];
    let label = format!("B-at-late-idle:{b_done_at_late}");
    Outcome::checked(journal, &agent.durable_log(), label, own)
}
