//! The Agent model's named properties: `always` for the safety rules
//! C1–C8 and D6, `sometimes` for the race windows, `eventually` for C5 and
//! C7 progress.

use super::{AgentModel, EndReason, Fate, LoopPos, Origin, Status};
use crate::model::Property;

/// Every property, in report order.
pub(super) fn all() -> Vec<Property<AgentModel>> {
    vec![
        Property::<AgentModel>::always(
            "C1 cancel-requested is emitted before anything is cleared",
            |_, s| !AgentModel::broke(s, "C1"),
        ),
        Property::<AgentModel>::always(
            "C2 a prompt queued by a cancel-requested observer never starts",
            |_, s| !AgentModel::broke(s, "C2"),
        ),
        Property::<AgentModel>::always(
            "C3 a cancelled turn ends aborted, a disposed one disposed",
            |_, s| {
                s.prompts.iter().enumerate().all(|(i, p)| match p.fate {
                    Fate::Ended(r) => s.turn.as_ref().is_none_or(|t| {
                        t.prompt as usize != i
                            || match r {
                                EndReason::Disposed => t.disposed,
                                EndReason::Aborted => !t.disposed && t.cause.is_some(),
                                EndReason::Completed => !t.disposed && t.cause.is_none(),
                            }
                    }),
                    _ => true,
                })
            },
        ),
        Property::<AgentModel>::always(
            "C4 a prompt accepted before an effective cancel never starts",
            |_, s| !AgentModel::broke(s, "C4"),
        ),
        Property::<AgentModel>::always(
            "C5 a prompt accepted after cancel returned is never skipped",
            |_, s| !AgentModel::broke(s, "C5"),
        ),
        Property::<AgentModel>::always(
            "C6 an idle cancel leaves the next prompt to run",
            |_, s| !AgentModel::broke(s, "C6"),
        ),
        Property::<AgentModel>::always(
            "C7 when_idle resolves only at quiescence or with done",
            |_, s| !AgentModel::broke(s, "C7"),
        ),
        Property::<AgentModel>::always("C8 a cancelled turn absorbs no steering", |_, s| {
            // Steering is only kept while the turn's token is unrequested.
            s.steering.is_empty()
                || s.turn
                    .as_ref()
                    .is_some_and(|t| t.token_live() && !t.stopped())
        }),
        Property::<AgentModel>::always("D6 after dispose began no prompt starts", |_, s| {
            s.status != Status::Disposed
                || s.turn
                    .as_ref()
                    .is_none_or(|t| t.disposed || !t.token_live())
        }),
        Property::<AgentModel>::sometimes(
            "C4 window: a cancel lands between wake and claim",
            |_, s| s.pos == LoopPos::Claiming && s.marker,
        ),
        Property::<AgentModel>::sometimes(
            "C2 window: an observer queues work during a cancel",
            |_, s| s.cancel.as_ref().is_some_and(|c| c.observer_sent),
        ),
        Property::<AgentModel>::sometimes(
            "C3 window: disposal overrides a cancel of a running turn",
            |_, s| {
                s.turn
                    .as_ref()
                    .is_some_and(|t| t.cause.is_some() && t.disposed)
            },
        ),
        Property::<AgentModel>::sometimes(
            "C7 window: a waiter waits while a prompt accepted after cancel is pending",
            |_, s| {
                s.waiters.contains(&None)
                    && s.prompts.iter().any(|p| {
                        p.origin == Origin::AfterCancel
                            && matches!(p.fate, Fate::Queued | Fate::InHand | Fate::Running)
                    })
            },
        ),
        Property::<AgentModel>::eventually(
            "C5 a prompt accepted after cancel returned runs unless cancelled again",
            |_, s| {
                s.prompts.iter().all(|p| {
                    !matches!(p.origin, Origin::AfterCancel | Origin::AfterIdleCancel)
                        || p.doomed
                        || !matches!(p.fate, Fate::Skipped | Fate::Queued | Fate::InHand)
                })
            },
        ),
        Property::<AgentModel>::eventually("C7 every when_idle waiter resolves", |_, s| {
            s.waiters.iter().all(Option::is_some)
        }),
    ]
}
