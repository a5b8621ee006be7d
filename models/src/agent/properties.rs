//! The Agent model's named properties: `always` for the safety rules
//! C1–C8 and D6, `sometimes` for the race windows, `at_every_end!` for C5,
//! C7 and C10 progress. C5 and C7 progress is owed on every run except
//! one where a hung step is never signalled (the agent stays busy, which
//! no rule forbids).

use super::{AgentModel, AgentState, EndReason, LoopPos, Origin, PromptFate, Status};
use crate::checker::Prop;
use crate::PropertyId;
use lifecycle_spec::Rule;

/// The property that states C1 (the rule-clause table names it).
pub const C1_EMITTED: PropertyId = PropertyId::new(
    Rule::C1,
    "C1 cancel-requested is emitted before anything is cleared",
);

/// The property that states C3 (the rule-clause table names it).
pub const C3_ENDS: PropertyId = PropertyId::new(
    Rule::C3,
    "C3 a cancelled turn ends aborted, a disposed one disposed",
);

/// The property that states C4 (the rule-clause table names it).
pub const C4_NEVER: PropertyId = PropertyId::new(
    Rule::C4,
    "C4 a prompt accepted before an effective cancel never starts",
);

/// The property that states C7 (the rule-clause table names it).
pub const C7_ONLY: PropertyId = PropertyId::new(
    Rule::C7,
    "C7 when_idle resolves only at quiescence or with done",
);

/// The property that states C2 (the rule-clause table names it).
pub const C2_QUEUED_BY_OBSERVER: PropertyId = PropertyId::new(
    Rule::C2,
    "C2 a prompt queued by a cancel-requested observer never starts",
);

/// The property that states C5 (the rule-clause table names it).
pub const C5_NEVER_SKIPPED: PropertyId = PropertyId::new(
    Rule::C5,
    "C5 a prompt accepted after cancel returned is never skipped",
);

/// The property that states C6 (the rule-clause table names it).
pub const C6_IDLE_CANCEL: PropertyId =
    PropertyId::new(Rule::C6, "C6 an idle cancel leaves the next prompt to run");

/// The property that states C7 (the rule-clause table names it).
pub const C7_EVERY_WAITER: PropertyId =
    PropertyId::new(Rule::C7, "C7 every when_idle waiter resolves");

/// The property that states C8 (the rule-clause table names it).
pub const C8_NO_STEERING: PropertyId =
    PropertyId::new(Rule::C8, "C8 a cancelled turn absorbs no steering");

/// The property that states D6 (the rule-clause table names it).
pub const D6_NO_PROMPT_STARTS: PropertyId =
    PropertyId::new(Rule::D6, "D6 after dispose began no prompt starts");

/// Queries on a state, for the properties and for conformance drivers.
impl AgentModel {
    /// Whether the agent is busy for good: its step hangs and nothing
    /// requested the turn's token, so no signal will end it. No rule
    /// forbids that; progress rules are owed only on the other runs.
    pub fn busy_for_good(s: &AgentState) -> bool {
        s.turn.as_ref().is_some_and(|t| t.hung && !t.stopped())
    }

    /// Whether a transition broke `rule` so far.
    pub fn broke(s: &AgentState, rule: Rule) -> bool {
        s.broken.contains(&rule)
    }

    /// The reason of the turn that ran prompt `p`, if it ended.
    pub fn ended(s: &AgentState, p: u8) -> Option<EndReason> {
        match s.prompts.get(p as usize)?.fate {
            PromptFate::Ended(r) => Some(r),
            _ => None,
        }
    }
}

/// Every property, in report order.
pub(super) fn all() -> Vec<Prop<AgentModel>> {
    vec![
        Prop::<AgentModel>::always(C1_EMITTED, |_, s| !AgentModel::broke(s, Rule::C1)),
        Prop::<AgentModel>::always(C2_QUEUED_BY_OBSERVER, |_, s| {
            !AgentModel::broke(s, Rule::C2)
        }),
        Prop::<AgentModel>::always(C3_ENDS, |_, s| {
            s.prompts.iter().enumerate().all(|(i, p)| match p.fate {
                PromptFate::Ended(r) => s.turn.as_ref().is_none_or(|t| {
                    t.prompt as usize != i
                        || match r {
                            EndReason::Disposed => t.disposed,
                            EndReason::Aborted => !t.disposed && t.cause.is_some(),
                            EndReason::Completed => !t.disposed && t.cause.is_none(),
                            // Storage and crashes are the durability model's.
                            EndReason::Failed | EndReason::Interrupted => false,
                        }
                }),
                _ => true,
            })
        }),
        Prop::<AgentModel>::always(C4_NEVER, |_, s| !AgentModel::broke(s, Rule::C4)),
        Prop::<AgentModel>::always(C5_NEVER_SKIPPED, |_, s| !AgentModel::broke(s, Rule::C5)),
        Prop::<AgentModel>::always(C6_IDLE_CANCEL, |_, s| !AgentModel::broke(s, Rule::C6)),
        Prop::<AgentModel>::always(C7_ONLY, |_, s| !AgentModel::broke(s, Rule::C7)),
        Prop::<AgentModel>::always(C8_NO_STEERING, |_, s| {
            // Steering is only kept while the turn's token is unrequested.
            s.steering.is_empty()
                || s.turn
                    .as_ref()
                    .is_some_and(|t| t.token_live() && !t.stopped())
        }),
        Prop::<AgentModel>::always(D6_NO_PROMPT_STARTS, |_, s| {
            s.status != Status::Disposed
                || s.turn
                    .as_ref()
                    .is_none_or(|t| t.disposed || !t.token_live())
        }),
        Prop::<AgentModel>::sometimes(
            PropertyId::new(Rule::C4, "C4 window: a cancel lands between wake and claim"),
            |_, s| s.pos == LoopPos::Claiming && s.marker,
        ),
        Prop::<AgentModel>::sometimes(
            PropertyId::new(
                Rule::C2,
                "C2 window: an observer queues work during a cancel",
            ),
            |_, s| s.cancel.as_ref().is_some_and(|c| c.observer_sent),
        ),
        Prop::<AgentModel>::sometimes(
            PropertyId::new(
                Rule::C3,
                "C3 window: disposal overrides a cancel of a running turn",
            ),
            |_, s| {
                s.turn
                    .as_ref()
                    .is_some_and(|t| t.cause.is_some() && t.disposed)
            },
        ),
        Prop::<AgentModel>::sometimes(
            PropertyId::new(
                Rule::C7,
                "C7 window: a waiter waits while a prompt accepted after cancel is pending",
            ),
            |_, s| {
                s.waiters.contains(&None)
                    && s.prompts.iter().any(|p| {
                        p.origin == Origin::AfterCancel
                            && matches!(p.fate, PromptFate::Pending { .. } | PromptFate::Started)
                    })
            },
        ),
        Prop::<AgentModel>::sometimes(
            PropertyId::new(
                Rule::C10,
                "C10 window: a cancel or disposal fires the signal while the step hangs",
            ),
            |_, s| s.turn.as_ref().is_some_and(|t| t.hung && t.stopped()),
        ),
        crate::at_every_end!(
            AgentModel,
            PropertyId::new(
                Rule::C5,
                "C5 a prompt accepted after cancel returned runs unless cancelled again"
            ),
            |_, s| {
                AgentModel::busy_for_good(s)
                    || s.prompts.iter().all(|p| {
                        !matches!(p.origin, Origin::AfterCancel | Origin::AfterIdleCancel)
                            || p.doomed
                            || !matches!(
                                p.fate,
                                PromptFate::SkippedAtClaim | PromptFate::Pending { .. }
                            )
                    })
            },
        ),
        crate::at_every_end!(AgentModel, C7_EVERY_WAITER, |_, s| {
            AgentModel::busy_for_good(s) || s.waiters.iter().all(Option::is_some)
        }),
        crate::at_every_end!(
            AgentModel,
            PropertyId::new(
                Rule::C10,
                "C10 a cancelled or disposed turn ends: its hung step settles on the signal"
            ),
            |_, s| s.turn.as_ref().is_none_or(|t| !t.stopped()),
        ),
    ]
}
