//! The dispose model's named properties: `always` for the safety rules
//! D1–D5 and R1–R3, `sometimes` for the race windows, and D7, D8 and R1
//! progress as `always` over the terminal states ([`at_every_end!`](crate::at_every_end)).

use super::{
    Attempt, CreatePhase, DisposeModel, DisposeState, EffectState, Entry, ScopeId, ScopeState,
};
use crate::checker::Prop;
use crate::PropertyId;
use lifecycle_spec::Rule;

/// The property that states D3 (the rule-clause table names it).
pub const D3_DURABLE: PropertyId = PropertyId::new(
    Rule::D3,
    "D3 every appended event is durable and every turn/end survives",
);

/// The property that states D8 (the rule-clause table names it).
pub const D8_DROPPED: PropertyId = PropertyId::new(
    Rule::D8,
    "D8 a dropped dispose caller wedges nothing: every chain finishes, every caller returns",
);

/// The property that states R1 (the rule-clause table names it).
pub const R1_ONE: PropertyId = PropertyId::new(
    Rule::R1,
    "R1 at most one live agent and one live session per id",
);

/// The property that states D1 (the rule-clause table names it).
pub const D1_AFTER_TEARDOWN: PropertyId = PropertyId::new(
    Rule::D1,
    "D1 every dispose caller resolves only after the whole teardown",
);

/// The property that states D2 (the rule-clause table names it).
pub const D2_ONCE_IN_ORDER: PropertyId =
    PropertyId::new(Rule::D2, "D2 teardown steps run once, in order 1..5");

/// The property that states D4 (the rule-clause table names it).
pub const D4_LISTENER_SKIPS_NOTHING: PropertyId = PropertyId::new(
    Rule::D4,
    "D4 a failing agent/disposed listener skips no later step",
);

/// The property that states D5 (the rule-clause table names it).
pub const D5_KEEPS_ENTRY: PropertyId = PropertyId::new(
    Rule::D5,
    "D5 an agent whose teardown has not begun keeps its entry and session",
);

/// The property that states D7 (the rule-clause table names it).
pub const D7_PROVIDER_UNLOAD: PropertyId = PropertyId::new(
    Rule::D7,
    "D7 unloading the provider disposes every agent it built",
);

/// The property that states R1 (the rule-clause table names it).
pub const R1_LOSER_FAILS: PropertyId =
    PropertyId::new(Rule::R1, "R1 a same-id loser fails with already exists");

/// The property that states R2 (the rule-clause table names it).
pub const R2_REUSE_ON_DETACH: PropertyId = PropertyId::new(
    Rule::R2,
    "R2 an id is reusable exactly when its registry entry detaches",
);

/// The property that states R3 (the rule-clause table names it).
pub const R3_FAILED_LEAVES_NOTHING: PropertyId =
    PropertyId::new(Rule::R3, "R3 a creation that failed left nothing published");

/// The property that states R3 (the rule-clause table names it).
pub const R3_NOTHING_AFTER_UNLOAD: PropertyId = PropertyId::new(
    Rule::R3,
    "R3 nothing is published once its owner or the provider began unloading",
);

type P = Prop<DisposeModel>;

impl DisposeModel {
    /// D8's obligation: no teardown chain is still running and every
    /// dispose caller returned.
    pub fn unwedged(s: &DisposeState) -> bool {
        s.attempts
            .iter()
            .all(|a| !matches!(a.effect, EffectState::Running(_)) && a.callers.iter().all(|c| c.1))
    }
}

/// Every property of the dispose model, in report order.
pub(super) fn all() -> Vec<P> {
    let mut out = dispose();
    out.extend(identity());
    out.extend(windows());
    out.extend(progress());
    out
}

/// D1–D5: one memoized teardown, its order, durability, a failing
/// listener, and the other agents.
fn dispose() -> Vec<P> {
    vec![
        P::always(D1_AFTER_TEARDOWN, |_, s| !s.broken.contains(&Rule::D1)),
        P::always(D2_ONCE_IN_ORDER, |_, s| {
            s.attempts.iter().all(|a| {
                a.steps_run
                    .iter()
                    .enumerate()
                    .all(|(k, &st)| st as usize == k + 1)
            })
        }),
        P::always(D3_DURABLE, |m, s| {
            !s.broken.contains(&Rule::D3)
                && s.attempts.iter().enumerate().all(|(i, a)| {
                    !m.effects_done(a)
                        || !a.turn
                        || a.lp.is_none()
                        || s.durable.contains(&(i as u8, Entry::TurnEnd))
                })
        }),
        P::always(D4_LISTENER_SKIPS_NOTHING, |m, s| {
            s.attempts.iter().all(|a| {
                a.effect != EffectState::Done || !m.effects_done(a) || a.steps_run.len() == 5
            })
        }),
        P::always(D5_KEEPS_ENTRY, |_, s| {
            s.attempts.iter().enumerate().all(|(i, a)| {
                let serial = i as u8;
                !(matches!(a.phase, CreatePhase::Ok | CreatePhase::Entered)
                    && a.effect == EffectState::Armed)
                    || (s.registry.contains(&(a.id, serial))
                        && s.sessions.iter().any(|x| x.1 == serial))
            })
        }),
    ]
}

/// R1–R3: one live agent per id, exact detaches, creations whose owner
/// unloads.
fn identity() -> Vec<P> {
    vec![
        P::always(R1_ONE, |_, s| {
            (0..2u8).all(|id| {
                s.registry.iter().filter(|e| e.0 == id).count() <= 1
                    && DisposeModel::live_with_id(s, id) <= 1
            })
        }),
        // An agent's entry leaves the registry only through its own
        // teardown's step 3: its agent registered it (`lp` is set on
        // entry) and keeps it until that step ran.
        P::always(
            PropertyId::new(
                Rule::R2,
                "R2 a stale or repeated detach never removes a newer entry with the same id",
            ),
            |_, s| {
                s.attempts.iter().enumerate().all(|(i, a)| {
                    a.lp.is_none()
                        || a.steps_run.contains(&3)
                        || s.registry.contains(&(a.id, i as u8))
                })
            },
        ),
        // Reusable: a creation's prepare and enter find no live session
        // with the id.
        P::always(R2_REUSE_ON_DETACH, |_, s| {
            (0..2u8).all(|id| {
                s.registry.iter().any(|e| e.0 == id) == (DisposeModel::live_with_id(s, id) > 0)
            })
        }),
        P::always(R3_NOTHING_AFTER_UNLOAD, |_, s| {
            !s.broken.contains(&Rule::R3)
        }),
        P::always(R3_FAILED_LEAVES_NOTHING, |_, s| {
            s.attempts.iter().enumerate().all(|(i, a)| {
                !matches!(a.phase, CreatePhase::Failed(_))
                    || (!s.registry.iter().any(|e| e.1 == i as u8)
                        && !s.sessions.iter().any(|x| x.1 == i as u8))
            })
        }),
    ]
}

/// The race windows the safety rules are about: each must be reachable.
fn windows() -> Vec<P> {
    vec![
        P::sometimes(
            PropertyId::new(
                Rule::R1,
                "R1 window: two same-id creations both pass their prepare",
            ),
            |_, s| {
                let same: Vec<&Attempt> = s.attempts.iter().filter(|a| a.id == 0).collect();
                same.len() >= 2
                    && same.iter().all(|a| {
                        a.phase != CreatePhase::Idle && !matches!(a.phase, CreatePhase::Failed(_))
                    })
            },
        ),
        // The state a stale detach of the old serial would hit (M22).
        P::sometimes(
            PropertyId::new(
                Rule::R2,
                "R2 window: an id is reused after its entry detached",
            ),
            |_, s| s.attempts[0].steps_run.len() >= 3 && s.registry.contains(&(0, 1)),
        ),
        P::sometimes(
            PropertyId::new(
                Rule::R3,
                "R3 window: the owner unloads while a creation awaits its setup",
            ),
            |_, s| {
                s.attempts.iter().any(|a| {
                    matches!(a.phase, CreatePhase::Prepared | CreatePhase::Checked)
                        && s.scopes[a.owner as usize] != ScopeState::Active
                })
            },
        ),
        P::sometimes(
            PropertyId::new(Rule::D1, "D1 window: three callers share one teardown"),
            |_, s| s.attempts.iter().any(|a| a.callers.len() >= 3),
        ),
        P::sometimes(
            PropertyId::new(
                Rule::D8,
                "D8 window: every caller of a running chain dropped it, and no call comes",
            ),
            |_, s| s.quiet,
        ),
        P::sometimes(
            PropertyId::new(
                Rule::D8,
                "D8 window: a scope's unload was dropped while a chain it waits on runs",
            ),
            |_, s| {
                s.attempts.iter().any(|a| {
                    matches!(a.effect, EffectState::Running(_))
                        && a.callers
                            .iter()
                            .any(|&(c, gone)| matches!(c, super::Caller::Scope(_)) && gone)
                })
            },
        ),
        P::sometimes(
            PropertyId::new(
                Rule::D8,
                "D8 window: the handle dropped its dispose mid-chain, another caller waits",
            ),
            |_, s| {
                s.attempts.iter().any(|a| {
                    matches!(a.effect, EffectState::Running(_))
                        && a.callers.iter().any(|c| c.1)
                        && a.callers.iter().any(|c| !c.1)
                })
            },
        ),
    ]
}

/// Progress, on every complete run.
fn progress() -> Vec<P> {
    vec![
        crate::at_every_end!(DisposeModel, D8_DROPPED, |_, s| DisposeModel::unwedged(s),),
        crate::at_every_end!(DisposeModel, D7_PROVIDER_UNLOAD, |m, s: &DisposeState| {
            s.scopes[ScopeId::Provider as usize] != ScopeState::Unloaded
                || s.attempts
                    .iter()
                    .all(|a| a.lp.is_none() || m.effects_done(a))
        },),
        crate::at_every_end!(DisposeModel, R1_LOSER_FAILS, |_, s| {
            let ok = |i: usize| {
                s.attempts
                    .get(i)
                    .is_some_and(|a| a.id == 0 && a.phase == CreatePhase::Ok)
            };
            // A quiet run makes no further call, so it may end before the
            // unload that would dispose the first.
            s.quiet || !(ok(0) && ok(1)) || s.attempts[0].steps_run.len() >= 3
        }),
    ]
}
