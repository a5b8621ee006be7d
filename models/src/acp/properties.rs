//! The ACP bridge model's named properties: `always` for A1, A2, A4–A9,
//! `sometimes` for the race windows, and A1 at every terminal state
//! ([`at_every_end!`](crate::at_every_end)).

use super::{AcpError, AcpModel, Call, PromptState};
use crate::checker::{Identified, Prop};
use crate::PropertyId;
use lifecycle_spec::Rule;

/// The property that states A1 (the rule-clause table names it).
pub const A1_NONE: PropertyId = PropertyId::new(
    Rule::A1,
    "A1 after close no bridge-owned agent outlives the quiesce",
);

/// The property that states A2 (the rule-clause table names it).
pub const A2_CANCELLED_NEVER_RUNS: PropertyId = PropertyId::new(
    Rule::A2,
    "A2 a prompt cancelled before its turn (queued or waiting) never runs",
);

/// The property that states A4 (the rule-clause table names it).
pub const A4_DISPOSED_ANSWERS_CANCELLED: PropertyId = PropertyId::new(
    Rule::A4,
    "A4 a prompt of a disposed session answers cancelled",
);

/// The property that states A5 (the rule-clause table names it).
pub const A5_NEVER_LOADED_TWICE: PropertyId =
    PropertyId::new(Rule::A5, "A5 a session is never loaded twice");

/// The property that states A6 (the rule-clause table names it).
pub const A6_ONE_QUIESCE: PropertyId =
    PropertyId::new(Rule::A6, "A6 disconnect and unload share one quiesce");

/// The property that states A7 (the rule-clause table names it).
pub const A7_NEW_AFTER_CLOSE: PropertyId =
    PropertyId::new(Rule::A7, "A7 after close session/new creates nothing");

/// The property that states A8 (the rule-clause table names it).
pub const A8_ONE_IN_FLIGHT: PropertyId =
    PropertyId::new(Rule::A8, "A8 one prompt in flight per session");

impl Identified for AcpModel {
    fn identified(&self) -> Vec<Prop<Self>> {
        vec![
            Prop::<Self>::always(A1_NONE, |_, s| {
                !(s.quiesced && AcpModel::settled(s)) || s.agents.iter().all(|&(_, gone)| gone)
            }),
            Prop::<Self>::always(A2_CANCELLED_NEVER_RUNS, |_, s| {
                !s.broken.contains(&Rule::A2)
            }),
            Prop::<Self>::always(A4_DISPOSED_ANSWERS_CANCELLED, |_, s| {
                s.prompts.iter().all(|p| {
                    AcpModel::live(s, p.session)
                        || !p.state.pending()
                        || p.state == PromptState::AwaitLoad
                })
            }),
            Prop::<Self>::always(
                PropertyId::new(Rule::A4, "A4 no turn starts in a session being closed"),
                |_, s| !s.broken.contains(&Rule::A4),
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::A4, "A4 window: a close lands during a running prompt"),
                |_, s| {
                    s.prompts.iter().any(|p| {
                        s.closing.contains(&p.session) && p.state == PromptState::Cancelling
                    })
                },
            ),
            Prop::<Self>::always(A5_NEVER_LOADED_TWICE, |_, s| !s.broken.contains(&Rule::A5)),
            Prop::<Self>::always(A6_ONE_QUIESCE, |_, s| s.quiesces <= 1),
            Prop::<Self>::always(A7_NEW_AFTER_CLOSE, |_, s| {
                !matches!(s.new_call, Call::Done(Ok(_))) || !s.closed || s.quiesces == 1
            }),
            Prop::<Self>::always(A8_ONE_IN_FLIGHT, |_, s| {
                (0..2u8).all(|x| AcpModel::pending(s, x).filter(|p| p.in_flight()).count() <= 1)
            }),
            Prop::<Self>::always(
                PropertyId::new(
                    Rule::A8,
                    "A8 a prompt waits only behind a cancelled one still in its turn",
                ),
                |_, s| {
                    (0..2u8).all(|x| {
                        !AcpModel::pending(s, x).any(|p| p == PromptState::Waiting)
                            || AcpModel::pending(s, x).any(|p| p == PromptState::Cancelling)
                    })
                },
            ),
            Prop::<Self>::always(
                PropertyId::new(
                    Rule::A9,
                    "A9 no turn of a session runs before its load has answered",
                ),
                |_, s| !s.broken.contains(&Rule::A9),
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(
                    Rule::A1,
                    "A1 window: the connection closes while session/new awaits creation",
                ),
                |_, s| s.closed && s.new_call == Call::InFlight,
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(
                    Rule::A1,
                    "A1 window: the connection closes while session/load awaits resume",
                ),
                |_, s| s.closed && s.loads.contains(&Call::InFlight),
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(
                    Rule::A4,
                    "A4 window: a disconnect lands during a running prompt",
                ),
                |_, s| s.closed && s.prompts.iter().any(|p| p.state == PromptState::Running),
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::A5, "A5 window: a second load is refused"),
                |_, s| s.loads.contains(&Call::Done(Err(AcpError::AlreadyLoaded))),
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(
                    Rule::A8,
                    "A8 window: a cancel arrives while a prompt waits behind a cancelled one",
                ),
                |_, s| s.cancelled_waiting,
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(
                    Rule::A9,
                    "A9 window: a prompt arrives while its session's load replays",
                ),
                |_, s| {
                    s.loads.contains(&Call::Replaying)
                        && s.prompts
                            .iter()
                            .any(|p| p.session == 0 && p.state.pending())
                },
            ),
            crate::at_every_end!(
                Self,
                PropertyId::new(
                    Rule::A1,
                    "A1 after close every bridge-owned agent is disposed"
                ),
                |_, s| !s.closed || s.agents.iter().all(|&(_, gone)| gone),
            ),
        ]
    }
}
