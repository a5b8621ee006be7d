//! ACP bridge scenarios: `disconnect-racing-new`, `disconnect-during-load`,
//! `disconnect-mid-prompt`, `session-cancel-before-start`, `duplicate-load`.

use super::goals::*;
use super::rig::Rig;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::acp::{AcpError, Bridge, StopReason};
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use std::sync::{Arc, PoisonError};

fn bridge<R: Rt>(rig: &Rig<R>) -> Arc<Bridge<R>> {
    Bridge::new(rig.provider.clone(), rig.owner("acp"))
}

fn a1(rig: &Rig<impl Rt>, owned: impl Fn(&str) -> bool) -> (bool, Violation) {
    let left = rig.leftovers(owned);
    (
        left.is_empty(),
        Violation::new(
            Rule::A1,
            format!("after close, bridge-owned sessions remain: {left:?}"),
        ),
    )
}

/// A goal of [`DISCONNECT_RACING_NEW`].
pub const CLOSE_BEFORE_NEW: Goal = on!(
    "close-before-new",
    "the close lands before session/new starts",
    |f: &Raced| f.answer == Err(AcpError::Disposed),
);

/// A goal of [`DISCONNECT_RACING_NEW`].
pub const CLOSE_BETWEEN_CREATION_AND_PUBLICATION: Goal = on!(
    "close-between-creation-and-publication",
    "the close lands while session/new awaits creation",
    |f: &Raced| f.answer == Err(AcpError::ClosedDuringNew),
);

/// A goal of [`DISCONNECT_RACING_NEW`].
pub const DISCONNECT_RACING_NEW_CLOSE_AFTER_PUBLICATION: Goal = excused(
    on!(
        "close-after-publication",
        "the close lands after session/new published its session",
        |f: &Raced| f.answer.is_ok(),
    ),
    &[SHUTTLE_RANDOM_WALK],
);

const DISCONNECT_RACING_NEW_GOALS: &[Goal] = &[
    CLOSE_BEFORE_NEW,
    CLOSE_BETWEEN_CREATION_AND_PUBLICATION,
    DISCONNECT_RACING_NEW_CLOSE_AFTER_PUBLICATION,
];

/// `disconnect-racing-new`, registered in [`super::ALL`].
pub static DISCONNECT_RACING_NEW: Scenario = Scenario::new(
    "disconnect-racing-new",
    "the client disconnects while session/new awaits creation; then disconnect races unload",
    bodies!(disconnect_racing_new),
)
.rules(&[Rule::A1, Rule::A6, Rule::A7])
.goals(DISCONNECT_RACING_NEW_GOALS)
.targets(&[Fault::M7])
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
});

/// `disconnect-racing-new`: the client disconnects while `session/new`
/// awaits creation; nothing of it survives (A1) and later `session/new`s
/// fail (A7). Then, on a second bridge with a session, a disconnect and the
/// bridge's unload race and share one teardown (A6).
pub async fn disconnect_racing_new<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let b = bridge(&rig);
    let b2 = b.clone();
    let creating = rt::spawn::<R, _>("session/new", async move { b2.new_session().await });
    R::yield_now().await;
    b.disconnect().await;
    let created = creating.join().await;
    // Checked before the bridge unloads: the disconnect alone must clean up.
    let mut own = vec![a1(&rig, |id| id.starts_with("sess-"))];
    let after = b.new_session().await;
    own.push((
        matches!(
            after,
            Err(AcpError::Disposed) | Err(AcpError::ClosedDuringNew)
        ),
        Violation::new(
            Rule::A7,
            format!("session/new after close answered {after:?}"),
        ),
    ));
    b.unload().await;
    let other = bridge(&rig);
    other.new_session().await.expect("session/new");
    futures::future::join(other.disconnect(), other.unload()).await;
    own.push((
        other.quiesce_runs() == 1,
        Violation::new(
            Rule::A6,
            format!("quiesce ran {} times", other.quiesce_runs()),
        ),
    ));
    own.push(a1(&rig, |id| id.starts_with("sess-")));
    let said = Raced {
        call: Call::New,
        answer: created.map(drop),
    };
    rig.finish(said, own)
}

/// A goal of [`DISCONNECT_DURING_LOAD`].
pub const CLOSE_BEFORE_LOAD: Goal = on!(
    "close-before-load",
    "the close lands before session/load starts",
    |f: &Raced| f.answer == Err(AcpError::Disposed),
);

/// A goal of [`DISCONNECT_DURING_LOAD`].
pub const CLOSE_DURING_RESUME: Goal = on!(
    "close-during-resume",
    "the close lands while session/load awaits the resume",
    |f: &Raced| f.answer == Err(AcpError::ClosedDuringLoad),
);

/// A goal of [`DISCONNECT_DURING_LOAD`].
pub const DISCONNECT_DURING_LOAD_CLOSE_AFTER_PUBLICATION: Goal = excused(
    on!(
        "close-after-publication",
        "the close lands after session/load published the session",
        |f: &Raced| f.answer.is_ok(),
    ),
    &[SHUTTLE_RANDOM_WALK],
);

const DISCONNECT_DURING_LOAD_GOALS: &[Goal] = &[
    CLOSE_BEFORE_LOAD,
    CLOSE_DURING_RESUME,
    DISCONNECT_DURING_LOAD_CLOSE_AFTER_PUBLICATION,
];

/// `disconnect-during-load`, registered in [`super::ALL`].
pub static DISCONNECT_DURING_LOAD: Scenario = Scenario::new(
    "disconnect-during-load",
    "a session/load whose resume finishes after the disconnect",
    bodies!(disconnect_during_load),
)
.rules(&[Rule::A1])
.goals(DISCONNECT_DURING_LOAD_GOALS)
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
})
.targets(&[Fault::M8]);

/// `disconnect-during-load`: a `session/load` whose resume finishes after
/// the disconnect disposes what it resumed (A1).
pub async fn disconnect_during_load<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let setup = rig.owner("setup");
    let old = rig
        .provider
        .create("old", &setup)
        .await
        .expect("create old");
    old.agent.send(spec("history", 1)).expect("send");
    old.agent.when_idle().await;
    old.dispose().await;
    let b = bridge(&rig);
    let b2 = b.clone();
    let loading = rt::spawn::<R, _>("session/load", async move { b2.load_session("old").await });
    R::yield_now().await;
    b.disconnect().await;
    let loaded = loading.join().await;
    let own = vec![a1(&rig, |id| id == "old")];
    b.unload().await;
    setup.unload().await;
    let said = Raced {
        call: Call::Load,
        answer: loaded.map(drop),
    };
    rig.finish(said, own)
}

/// A goal of [`DISCONNECT_MID_PROMPT`].
pub const DISCONNECT_DURING_PROMPT: Goal = on!(
    "disconnect-during-prompt",
    "the disconnect lands while the prompt runs; it answers cancelled",
    |f: &First| f.0 == Ok(StopReason::Cancelled),
);

/// A goal of [`DISCONNECT_MID_PROMPT`].
pub const PROMPT_ENDS_FIRST: Goal = excused(
        on!(
            "prompt-ends-first",
            "the prompt ends before the disconnect",
            |f: &First| f.0 == Ok(StopReason::EndTurn),
        ),
        &[(Checker::ShuttlePct,
            "not reached in runs far past the PR budget at depth 3: the prompt's turn must outrun the disconnect through all its steps",
        )],
    );

const DISCONNECT_MID_PROMPT_GOALS: &[Goal] = &[DISCONNECT_DURING_PROMPT, PROMPT_ENDS_FIRST];

/// `disconnect-mid-prompt`, registered in [`super::ALL`].
pub static DISCONNECT_MID_PROMPT: Scenario = Scenario::new(
    "disconnect-mid-prompt",
    "a disconnect while a prompt runs; a second prompt meanwhile",
    bodies!(disconnect_mid_prompt),
)
.rules(&[Rule::A4, Rule::A8, Rule::D3])
.goals(DISCONNECT_MID_PROMPT_GOALS)
// loom at bound 1 does not exhaust within the PR gate, because each turn
// flushes ahead of its first step; the PR tier stops at `loom_max`
// executions, which reach both goals. Bound 2 takes many minutes.
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    loom_max: Some(50_000),
});

/// `disconnect-mid-prompt`: a second prompt fails (A8); the disconnect
/// answers the running prompt `cancelled` and disposes the session, whose
/// `turn/end` is durable (A4, D3).
pub async fn disconnect_mid_prompt<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let b = bridge(&rig);
    let sid = b.new_session().await.expect("session/new");
    let agent = rig.registry.get(&sid).expect("registered");
    rig.track(&agent, rig.registry.entries()[0].1);
    let (b2, s2) = (b.clone(), sid.clone());
    let prompting = rt::spawn::<R, _>("session/prompt", async move {
        b2.prompt(&s2, spec("long", 3)).await
    });
    agent.started(0).await;
    let second = b.prompt(&sid, spec("second", 1)).await;
    b.disconnect().await;
    let first = prompting.join().await;
    // On the model checkers a step is a yield: the long prompt may finish
    // before the disconnect; A4/A8 apply when it was still in flight.
    let completed = agent.journal().iter().any(|r| {
        matches!(
            r.event,
            crate::journal::Event::TurnEnd {
                prompt: 0,
                reason: crate::journal::EndReason::Completed,
                ..
            }
        )
    });
    let own = vec![
        (
            completed
                || matches!(&second, Err(e @ AcpError::PromptInFlight(_)) if e.to_string().contains("in flight")),
            Violation::new(
                Rule::A8,
                format!("a second prompt in flight answered {second:?}"),
            ),
        ),
        (
            first
                == Ok(if completed {
                    StopReason::EndTurn
                } else {
                    StopReason::Cancelled
                }),
            Violation::new(
                Rule::A4,
                format!("the prompt cut by the disconnect answered {first:?}"),
            ),
        ),
        a1(&rig, |id| id.starts_with("sess-")),
    ];
    b.unload().await;
    rig.finish(First(first), own)
}

/// A goal of [`SESSION_CANCEL_BEFORE_START`].
pub const CANCEL_BEFORE_START: Goal = excused(
        on!(
            "cancel-before-start",
            "session/cancel lands while the prompt is queued: it never runs",
            |f: &PromptA| *f == PromptA::NeverRan,
        ),
        &[(Checker::Loom,
            "not reached within the PR tier's executions: loom's depth-first order varies the later prompt B first; the whole space at bound 1, far past the PR gate, reaches it",
        )],
    );

/// A goal of [`SESSION_CANCEL_BEFORE_START`].
pub const CANCEL_DURING_TURN: Goal = on!(
    "cancel-during-turn",
    "session/cancel lands while the prompt runs: aborted",
    |f: &PromptA| *f == PromptA::Aborted,
);

/// A goal of [`SESSION_CANCEL_BEFORE_START`].
pub const CANCEL_AFTER_TURN: Goal = on!(
    "cancel-after-turn",
    "session/cancel lands after the prompt ended",
    |f: &PromptA| *f == PromptA::EndTurn,
);

const SESSION_CANCEL_BEFORE_START_GOALS: &[Goal] =
    &[CANCEL_BEFORE_START, CANCEL_DURING_TURN, CANCEL_AFTER_TURN];

/// `session-cancel-before-start`, registered in [`super::ALL`].
pub static SESSION_CANCEL_BEFORE_START: Scenario = Scenario::new(
    "session-cancel-before-start",
    "session/cancel races a queued prompt; a later prompt runs",
    bodies!(session_cancel_before_start),
)
.rules(&[Rule::A2, Rule::A3])
.goals(SESSION_CANCEL_BEFORE_START_GOALS)
// loom at bound 1 does not exhaust within the PR gate, because each turn
// flushes ahead of its first step; the PR tier stops at `loom_max`
// executions. Bound 2 takes minutes.
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    loom_max: Some(50_000),
});

/// `session-cancel-before-start`: `session/cancel` of an unknown session is
/// a no-op (A3); sent before a queued prompt starts, that prompt never runs
/// and answers `cancelled`; a later prompt runs (A2).
pub async fn session_cancel_before_start<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let b = bridge(&rig);
    b.cancel("no-such-session");
    let sid = b.new_session().await.expect("session/new");
    let agent = rig.registry.get(&sid).expect("registered");
    rig.track(&agent, rig.registry.entries()[0].1);
    let (b2, s2) = (b.clone(), sid.clone());
    let prompting = rt::spawn::<R, _>("session/prompt A", async move {
        b2.prompt(&s2, spec("A", 1)).await
    });
    R::yield_now().await;
    b.cancel(&sid);
    let a = prompting.join().await;
    let b_stop = b.prompt(&sid, spec("B", 1)).await;
    let journal = agent.journal();
    let a_started = journal
        .iter()
        .any(|r| matches!(r.event, crate::journal::Event::TurnStart { prompt: 0 }));
    let own = vec![
        (
            a == Ok(StopReason::EndTurn) || a == Ok(StopReason::Cancelled),
            Violation::new(Rule::A2, format!("prompt A answered {a:?}")),
        ),
        (
            a != Ok(StopReason::EndTurn) || a_started,
            Violation::new(Rule::A2, "prompt A answered end_turn without running"),
        ),
        (
            b_stop == Ok(StopReason::EndTurn),
            Violation::new(Rule::A2, format!("the later prompt B answered {b_stop:?}")),
        ),
    ];
    b.unload().await;
    let said = match a {
        Ok(StopReason::EndTurn) => PromptA::EndTurn,
        Ok(StopReason::Cancelled) if a_started => PromptA::Aborted,
        Ok(StopReason::Cancelled) => PromptA::NeverRan,
        Err(_) => PromptA::Error,
    };
    rig.finish(said, own)
}

/// A goal of [`DUPLICATE_LOAD`].
pub const REFUSED_WHILE_LOADING: Goal = on!(
    "refused-while-loading",
    "two concurrent loads of one id: one succeeds, the other is refused while the winner is still loading",
    |f: &LoadsOk| f.ok == 1 && f.refused_first,
);

/// A goal of [`DUPLICATE_LOAD`].
pub const REFUSED_ONCE_LIVE: Goal = excused(
    on!(
        "refused-once-live",
        "two concurrent loads of one id: the loser is refused after the winner answered, its session live",
        |f: &LoadsOk| f.ok == 1 && !f.refused_first,
    ),
    &[(
        Checker::ShuttleRandom,
        "not reached in runs far past the PR budget: the loser must be held back for the whole of the winner's load, which a uniformly random scheduler does with a probability halved at each step",
    )],
);

const DUPLICATE_LOAD_GOALS: &[Goal] = &[REFUSED_WHILE_LOADING, REFUSED_ONCE_LIVE];

/// `duplicate-load`, registered in [`super::ALL`].
pub static DUPLICATE_LOAD: Scenario = Scenario::new(
    "duplicate-load",
    "two concurrent loads of one id, and a load of a live id",
    bodies!(duplicate_load),
)
.rules(&[Rule::A5])
.goals(DUPLICATE_LOAD_GOALS)
.targets(&[Fault::M13])
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
});

/// `duplicate-load`: `session/load` of an id that is live or being loaded
/// fails `already loaded` (A5).
pub async fn duplicate_load<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let setup = rig.owner("setup");
    let old = rig
        .provider
        .create("old", &setup)
        .await
        .expect("create old");
    old.dispose().await;
    let b = bridge(&rig);
    let live = b.new_session().await.expect("session/new");
    // The order the two loads answer in (a std mutex: no scheduling point).
    let answered = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (b2, a2) = (b.clone(), answered.clone());
    let first = rt::spawn::<R, _>("session/load 1", async move {
        let r = b2.load_session("old").await;
        a2.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(r.is_ok());
        r
    });
    let second = b.load_session("old").await;
    answered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(second.is_ok());
    let first = first.join().await;
    let refused_first = answered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .first()
        == Some(&false);
    let of_live = b.load_session(&live).await;
    let oks = [&first, &second].iter().filter(|r| r.is_ok()).count();
    let overlap = overlapping_attempts(&rig.world.events(), "old");
    let loser_ok = [&first, &second]
        .iter()
        .filter_map(|r| r.as_ref().err())
        .all(|e| e.to_string().contains("already loaded"));
    let own = vec![
        (
            oks == 1 && loser_ok,
            Violation::new(
                Rule::A5,
                format!("two concurrent loads answered {first:?} and {second:?}"),
            ),
        ),
        (
            matches!(&of_live, Err(e) if e.to_string().contains("already loaded")),
            Violation::new(
                Rule::A5,
                format!("load of a live session answered {of_live:?}"),
            ),
        ),
        (
            overlap < 2,
            Violation::new(
                Rule::A5,
                format!(
                    "a load of `old` reached the provider while another was being loaded \
                     ({overlap} resumes in flight at once)"
                ),
            ),
        ),
    ];
    b.unload().await;
    setup.unload().await;
    let own2 = own;
    let mut out = rig.finish(
        LoadsOk {
            ok: oks,
            refused_first,
        },
        own2,
    );
    let left = rig.leftovers(|id| id == "old" || id.starts_with("sess-"));
    if !left.is_empty() {
        out.violations.push(Violation::new(
            Rule::A1,
            format!("after unload, sessions remain: {left:?}"),
        ));
    }
    out
}

/// The most creations or resumes of `id` the provider had in flight at once
/// (began, and neither failed nor registered yet): what the provider, the
/// receiving side of the bridge's `session/load`, saw (A5 allows one).
fn overlapping_attempts(events: &[LifecycleEvent], id: &str) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for ev in events {
        match ev {
            LifecycleEvent::CreateBegan { id: i, .. } if i == id => {
                now += 1;
                most = most.max(now);
            }
            LifecycleEvent::CreateFailed { id: i, .. }
            | LifecycleEvent::AgentRegistered { id: i, .. }
                if i == id =>
            {
                now = now.saturating_sub(1);
            }
            _ => {}
        }
    }
    most
}

/// The call that raced the close.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Call {
    New,
    Load,
}

/// What the call racing the connection's close answered. Shown as
/// `new:won-before-close` or `load:` and the error.
struct Raced {
    call: Call,
    answer: Result<(), AcpError>,
}

impl std::fmt::Display for Raced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let call = match self.call {
            Call::New => "new",
            Call::Load => "load",
        };
        match &self.answer {
            Ok(()) => write!(f, "{call}:won-before-close"),
            Err(e) => write!(f, "{call}:{e}"),
        }
    }
}

/// What the prompt cut by the disconnect answered. Shown as
/// `first:Ok(Cancelled)`.
struct First(Result<StopReason, AcpError>);

impl std::fmt::Display for First {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "first:{:?}", self.0)
    }
}

/// What became of prompt A, raced by `session/cancel`. Shown as
/// `A:end-turn`, `A:aborted`, `A:never-ran` or `A:error`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PromptA {
    EndTurn,
    Aborted,
    NeverRan,
    Error,
}

impl std::fmt::Display for PromptA {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PromptA::EndTurn => "A:end-turn",
            PromptA::Aborted => "A:aborted",
            PromptA::NeverRan => "A:never-ran",
            PromptA::Error => "A:error",
        })
    }
}

/// How many of the two concurrent loads succeeded, and whether a refusal
/// was answered before the winner's answer (the loser came while the
/// winner was loading; else the winner's session was live). Shown as
/// `loads-ok:1` either way: A5 allows both.
struct LoadsOk {
    ok: usize,
    refused_first: bool,
}

impl std::fmt::Display for LoadsOk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "loads-ok:{}", self.ok)
    }
}
