//! Scenarios about `cancel`: `cancel-before-claim`, `cancel-mid-turn`,
//! `observer-queues-during-cancel`, `cancel-drops-steering`.

use super::{spec, Outcome};
use crate::agent::{Agent, CancelOutcome};
use crate::bus::PublicEvent;
use crate::faults::Faults;
use crate::journal::{Cause, EndReason, Event, PromptId, Record};
use crate::oracle::Violation;
use crate::rt::{Mutex, Rt};
use std::sync::Arc;

/// What became of prompt `p`: `started`, `ended(reason)`, `skipped`,
/// `cleared` or `pending`.
pub(crate) fn fate(journal: &[Record], p: PromptId) -> String {
    let mut fate = "pending".to_string();
    for r in journal {
        match &r.event {
            Event::TurnStart { prompt } if *prompt == p => fate = "started".into(),
            Event::TurnEnd { prompt, reason, .. } if *prompt == p => {
                fate = format!("{reason:?}").to_lowercase()
            }
            Event::Skipped { prompt } if *prompt == p => fate = "skipped-at-claim".into(),
            Event::Cleared { prompts, .. } if prompts.contains(&p) => {
                fate = "cleared-in-queue".into()
            }
            Event::DisposeBegan { prompts } if prompts.contains(&p) => {
                fate = "cleared-by-dispose".into()
            }
            _ => {}
        }
    }
    fate
}

/// Whether `p`'s turn was active (started, not ended) when cancel call
/// `call` was entered.
pub(crate) fn active_at_call(journal: &[Record], p: PromptId, call: u64) -> bool {
    let mut active = false;
    for r in journal {
        match &r.event {
            Event::TurnStart { prompt } if *prompt == p => active = true,
            Event::TurnEnd { prompt, .. } if *prompt == p => active = false,
            Event::CancelCalled { call: c, .. } if *c == call => return active,
            _ => {}
        }
    }
    false
}

/// Whether `p`'s turn started before cancel call `call` was entered.
fn started_before_cancel(journal: &[Record], p: PromptId, call: u64) -> bool {
    for r in journal {
        match &r.event {
            Event::TurnStart { prompt } if *prompt == p => return true,
            Event::CancelCalled { call: c, .. } if *c == call => return false,
            _ => {}
        }
    }
    false
}

/// `cancel-before-claim`: send A; `cancel(user)` races the loop's wake and
/// claim; then send B. A never runs unless it started before the cancel
/// (C4); B runs exactly once (C5); `when_idle` resolves at quiescence (C7).
/// A bystander agent runs a two-step prompt meanwhile: the cancel is
/// agent-1's alone, so the bystander's prompt, never cancelled, runs to
/// completion exactly once (C5). Its steps share nothing with agent-1, so
/// the exhaustive search's reduction explores its interleavings once.
pub async fn cancel_before_claim<R: Rt>(faults: Faults) -> Outcome {
    let h = Agent::<R>::spawn_with_faults("agent-1", faults);
    let by = R::BYSTANDERS.then(|| Agent::<R>::spawn_with_faults("bystander", faults));
    let agent = h.agent.clone();
    let x = by
        .as_ref()
        .map(|by| by.agent.send(spec("X", 2)).expect("send X"));
    let a = agent.send(spec("A", 1)).expect("send A");
    R::yield_now().await;
    let cancelled = agent.cancel(Cause::User);
    let b = agent.send(spec("B", 1)).expect("send B");
    agent.when_idle().await;
    h.stop().await;
    let mut x_fate = "completed".to_string();
    if let (Some(by), Some(x)) = (by, x) {
        by.agent.when_idle().await;
        by.stop().await;
        x_fate = fate(&by.agent.journal(), x);
    }
    let journal = agent.journal();
    let a_fate = fate(&journal, a);
    let b_fate = fate(&journal, b);
    let a_ran_first = started_before_cancel(&journal, a, 0);
    let own = vec![
        (
            b_fate == "completed",
            Violation::new(
                "C5",
                format!("prompt B accepted after cancel returned ended `{b_fate}`, not completed"),
            ),
        ),
        (
            x_fate == "completed",
            Violation::new(
                "C5",
                format!("the bystander's prompt, never cancelled, ended `{x_fate}`"),
            ),
        ),
        (
            a_ran_first || !a_fate.starts_with("completed"),
            Violation::new(
                "C4",
                format!("prompt A cancelled before its claim ended `{a_fate}`"),
            ),
        ),
        (
            cancelled == CancelOutcome::Effective || a_fate == "completed",
            Violation::new("C1", "cancel with A pending was not effective"),
        ),
    ];
    let label = if a_ran_first {
        "A:ran-before-cancel".to_string()
    } else {
        format!("A:{a_fate}")
    };
    Outcome::checked(journal, &agent.durable_log(), label, own)
}

/// `cancel-mid-turn`: a running turn with a queued tail and a steering
/// input; `cancel(parent)` then `cancel(user)`. The first cause wins, the
/// tail is dropped, the steering input is never absorbed after the cancel,
/// the turn ends `{aborted}` (C3, C8).
pub async fn cancel_mid_turn<R: Rt>(faults: Faults) -> Outcome {
    let h = Agent::<R>::spawn_with_faults("agent-1", faults);
    let agent = h.agent.clone();
    let a = agent.send(spec("A", 3)).expect("send A");
    let tail = agent.send(spec("tail", 1)).expect("send tail");
    agent.started(a).await;
    // Absorbed, or queued if A already ended; the oracle follows its fate (C8).
    let _steering = agent.steer(spec("steer", 1)).expect("steer");
    R::yield_now().await;
    let first = agent.cancel(Cause::Parent);
    let second = agent.cancel(Cause::User);
    agent.when_idle().await;
    h.stop().await;
    let journal = agent.journal();
    let a_end = journal.iter().find_map(|r| match &r.event {
        Event::TurnEnd {
            prompt,
            reason,
            cause,
        } if *prompt == a => Some((*reason, *cause)),
        _ => None,
    });
    let a_fate = fate(&journal, a);
    // On the model checkers a step is only a yield, so A may finish before
    // the cancel lands; the turn-specific checks apply when it did not.
    let active = active_at_call(&journal, a, 0);
    let own = vec![
        (
            !active || first == CancelOutcome::Effective,
            Violation::new("C1", "cancel(parent) during a running turn was not effective"),
        ),
        (
            !active || a_end == Some((EndReason::Aborted, Some(Cause::Parent))),
            Violation::new("C3", format!("turn A cancelled mid-turn ended {a_end:?}, expected aborted by the first cause (parent)")),
        ),
        (
            !active || fate(&journal, tail) == "cleared-in-queue",
            Violation::new("C2", format!("queued tail ended `{}`, expected cleared", fate(&journal, tail))),
        ),
    ];
    let label = format!("A:{a_fate} second-cancel:{second:?}");
    Outcome::checked(journal, &agent.durable_log(), label, own)
}

/// `observer-queues-during-cancel`: one `cancel-requested` observer sends a
/// prompt, another panics. The observer's prompt is cleared too (C2); the
/// panic neither vetoes nor skips the cancel (C9).
pub async fn observer_queues_during_cancel<R: Rt>(faults: Faults) -> Outcome {
    let h = Agent::<R>::spawn_with_faults("agent-1", faults);
    let agent = h.agent.clone();
    let queued_by_observer: Arc<Mutex<R, Option<PromptId>>> = Arc::new(Mutex::new(None));
    let slot = queued_by_observer.clone();
    agent.observe(move |agent, ev| {
        if matches!(ev, PublicEvent::CancelRequested(_)) {
            let id = agent.send(spec("from-observer", 1)).ok();
            slot.with(|s| *s = id);
        }
    });
    agent.observe(|_, _| std::panic::panic_any(super::OBSERVER_PANIC));
    let a = agent.send(spec("A", 2)).expect("send A");
    agent.send(spec("tail", 1)).expect("send tail");
    agent.started(a).await;
    let cancelled = agent.cancel(Cause::User);
    agent.when_idle().await;
    h.stop().await;
    let journal = agent.journal();
    let obs = queued_by_observer.with(|s| *s);
    let obs_fate = obs
        .map(|p| fate(&journal, p))
        .unwrap_or_else(|| "none".into());
    let panicked = journal
        .iter()
        .any(|r| matches!(&r.event, Event::ObserverPanicked { message, .. } if message == super::OBSERVER_PANIC));
    // The cancel is vacuous if A and the tail both finished before it (a
    // step is only a yield on the model checkers).
    let effective = cancelled == CancelOutcome::Effective;
    let own = vec![
        (
            !effective || obs.is_some(),
            Violation::new("C1", "the cancel-requested observer never ran"),
        ),
        (
            obs.is_none() || obs_fate == "cleared-in-queue",
            Violation::new("C2", format!("prompt queued by a cancel-requested observer ended `{obs_fate}`, expected cleared")),
        ),
        (
            !effective || panicked,
            Violation::new("C9", "the panicking observer was not contained and journaled"),
        ),
    ];
    let label = if effective {
        format!("A:{} observer-prompt:{obs_fate}", fate(&journal, a))
    } else {
        "vacuous:all-done-before-cancel".to_string()
    };
    Outcome::checked(journal, &agent.durable_log(), label, own)
}

/// `cancel-drops-steering`: a running turn has a steering input queued; it
/// is cancelled, and once the cancel returned a new prompt B is sent. The
/// cancelled turn's steering is never absorbed nor logged, by A or by B
/// (C8); B runs exactly once (C5).
pub async fn cancel_drops_steering<R: Rt>(faults: Faults) -> Outcome {
    let h = Agent::<R>::spawn_with_faults("agent-1", faults);
    let agent = h.agent.clone();
    let a = agent.send(spec("A", 3)).expect("send A");
    agent.started(a).await;
    // Steering of the running A, or a queued prompt if A already ended.
    let _steering = agent.steer(spec("steer", 1)).expect("steer");
    let _ = agent.cancel(Cause::User);
    let b = agent.send(spec("B", 2)).expect("send B");
    agent.when_idle().await;
    h.stop().await;
    let journal = agent.journal();
    let label = format!("A:{} B:{}", fate(&journal, a), fate(&journal, b));
    Outcome::checked(journal, &agent.durable_log(), label, Vec::new())
}
