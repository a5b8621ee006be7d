//! Scenarios about idleness: `idle-cancel-then-prompt`, `when-idle-waiters`,
//! `dropped-when-idle`.

use super::fate::{Fates, FromJournal, PromptFate};
use super::goals::*;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::agent::{Agent, CancelOutcome, Idle};
use crate::checker::Checker;
use crate::faults::Fault;
use crate::journal::{Cause, Event};
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;

/// A goal of [`IDLE_CANCEL_THEN_PROMPT`].
pub const IDLE_CANCEL: Goal = pred(
    "idle-cancel",
    "the cancel lands before B is accepted: no turn, an empty inbox, and it requests nothing",
    idle_cancel,
);

/// A goal of [`IDLE_CANCEL_THEN_PROMPT`].
pub const PROMPT_AFTER_IDLE_CANCEL: Goal = pred(
    "prompt-after-idle-cancel",
    "a prompt accepted after the idle cancel returned starts its turn",
    prompt_after_idle_cancel,
);

/// A goal of [`IDLE_CANCEL_THEN_PROMPT`].
pub const CANCEL_AFTER_B: Goal = pred(
    "cancel-after-b",
    "B is accepted first, and the cancel is effective: it clears B or stops B's turn",
    |o| {
        o.journal
            .iter()
            .any(|r| matches!(r.event, Event::CancelRequested { .. }))
    },
);

const IDLE_CANCEL_THEN_PROMPT_GOALS: &[Goal] =
    &[IDLE_CANCEL, PROMPT_AFTER_IDLE_CANCEL, CANCEL_AFTER_B];

/// `idle-cancel-then-prompt`, registered in [`super::ALL`].
pub static IDLE_CANCEL_THEN_PROMPT: Scenario = Scenario::new(
    "idle-cancel-then-prompt",
    "a turn completes; a cancel races a prompt from another task; if idle, it emits nothing and the prompt runs",
    bodies!(idle_cancel_then_prompt),
)
.rules(&[Rule::C6])
.goals(IDLE_CANCEL_THEN_PROMPT_GOALS)
.targets(&[Fault::M4])
// loom at bound 2 runs past the PR gate (three turns, each with its
// write-ahead flush, and the sender's thread); bound 1 stays within it.
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
});

/// `idle-cancel-then-prompt`: A completes, and the agent is idle. Then a
/// cancel races a prompt B that another task sends. If the cancel lands
/// first, there is no turn and an empty inbox: it emits nothing and sets
/// no marker, and B runs (C6). If B is accepted first, the cancel is
/// effective and clears B or stops its turn (C2, C4). C, accepted after
/// the cancel returned, runs either way (C5).
pub async fn idle_cancel_then_prompt<R: Rt>(_: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
    let agent = h.agent.clone();
    let a = agent.send(spec("A", 1)).expect("send A");
    agent.when_idle().await;
    let sender = agent.clone();
    let b = rt::spawn::<R, _>("sender", async move {
        sender.send(spec("B", 1)).expect("send B")
    });
    let cancelled = agent.cancel(Cause::User);
    let b = b.join().await;
    let c = agent.send(spec("C", 1)).expect("send C");
    agent.when_idle().await;
    h.stop().await;
    let journal = agent.journal();
    let idle = cancelled == CancelOutcome::Idle;
    let emitted = journal.iter().any(|r| {
        matches!(
            r.event,
            Event::CancelRequested { .. } | Event::Cleared { .. }
        )
    });
    let (b_fate, c_fate) = (PromptFate::of(&journal, b), PromptFate::of(&journal, c));
    let own = vec![
        (
            !idle || !emitted,
            Violation::new(Rule::C6, "an idle cancel emitted or cleared something"),
        ),
        (
            !idle || b_fate == PromptFate::COMPLETED,
            Violation::new(
                Rule::C6,
                format!("the prompt accepted after an idle cancel ended `{b_fate}`, not completed"),
            ),
        ),
        (
            c_fate == PromptFate::COMPLETED,
            Violation::new(
                Rule::C5,
                format!(
                    "the prompt accepted after the cancel returned ended `{c_fate}`, not completed"
                ),
            ),
        ),
    ];
    let said = Fates(vec![
        ("A", PromptFate::of(&journal, a)),
        ("B", b_fate),
        ("C", c_fate),
    ]);
    Outcome::checked(journal, &agent.durable_log(), said, own)
}

/// A goal of [`WHEN_IDLE_WAITERS`]: the window of C7's last clause. A
/// late waiter registered after B's turn had already ended would make it
/// hold by itself.
pub const LATE_WAITER_WHILE_B_PENDING: Goal = on!(
    "late-waiter-while-b-pending",
    "a waiter registered while the later prompt B is pending resolves only after B",
    |f: &LateWaiter| f.b_pending_at_register
        && f.fates.fate("B-at-late-idle") == Some(PromptFate::COMPLETED),
);

/// What one `when-idle-waiters` execution says: B's fate when the late
/// waiter resolved (the label), and whether B was still pending once the
/// late waiter had registered.
#[derive(Clone, Debug)]
pub struct LateWaiter {
    /// B's fate when the late waiter resolved.
    pub fates: Fates,
    /// B had not ended when it was read, just after the late waiter
    /// registered (so it was pending at the registration).
    pub b_pending_at_register: bool,
}

impl std::fmt::Display for LateWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fates.fmt(f)
    }
}

/// A goal of [`WHEN_IDLE_WAITERS`].
pub const WAITER_ACROSS_CANCEL: Goal = pred(
    "waiter-across-cancel",
    "a waiter registered before the effective cancel resolves at quiescence after it",
    waiter_across_cancel,
);

const WHEN_IDLE_WAITERS_GOALS: &[Goal] = &[LATE_WAITER_WHILE_B_PENDING, WAITER_ACROSS_CANCEL];

/// `when-idle-waiters`, registered in [`super::ALL`].
pub static WHEN_IDLE_WAITERS: Scenario = Scenario::new(
    "when-idle-waiters",
    "waiters before a cancel resolve; none resolves while a later prompt is pending",
    bodies!(when_idle_waiters),
)
.rules(&[Rule::C7])
.goals(WHEN_IDLE_WAITERS_GOALS)
.targets(&[Fault::M12, Fault::M14])
// loom: the late waiter waits in its own task, a thread of its own
// (`tasks.when-idle-waiters.without-bystanders`); bound 2 takes minutes
// because loom interleaves joined futures.
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    loom_max: Some(50_000),
});

/// `when-idle-waiters`: a waiter registered before a cancel resolves; a
/// waiter registered after a later prompt B was accepted does not resolve
/// before B's turn has ended (C7).
pub async fn when_idle_waiters<R: Rt>(_: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
    let agent = h.agent.clone();
    agent.send(spec("A", 1)).expect("send A");
    // Registered now, before the cancel.
    let early = agent.when_idle();
    agent.cancel(Cause::User);
    let b = agent.send(spec("B", 1)).expect("send B");
    let late = agent.when_idle();
    // Read after the registration: B not ended now was pending then.
    let b_pending_at_register = matches!(
        PromptFate::of(&agent.journal(), b),
        PromptFate::Pending { .. } | PromptFate::Started
    );
    // The late waiter waits alone in its own task, so no other future of
    // its task can wake it by chance: a lost wake-up (M14) is a stall.
    let watcher = agent.clone();
    let late = rt::spawn::<R, _>("late-waiter", async move {
        let idle = late.await;
        (idle, PromptFate::of(&watcher.journal(), b))
    });
    let early_result = early.await;
    let (late, b_done_at_late) = late.join().await;
    h.stop().await;
    let journal = agent.journal();
    let own = vec![
        (
            late == Idle::Quiescent && b_done_at_late == PromptFate::COMPLETED,
            Violation::new(
                Rule::C7,
                format!("when_idle registered after B resolved while B was `{b_done_at_late}`"),
            ),
        ),
        (
            early_result == Idle::Quiescent,
            Violation::new(
                Rule::C7,
                "a waiter registered before the cancel resolved `done` before disposal",
            ),
        ),
    ];
    let said = LateWaiter {
        fates: Fates(vec![("B-at-late-idle", b_done_at_late)]),
        b_pending_at_register,
    };
    Outcome::checked(journal, &agent.durable_log(), said, own)
}

/// A goal of [`DROPPED_WHEN_IDLE`].
pub const WAITER_DROPPED_MID_TURN: Goal = on!(
    "waiter-dropped-mid-turn",
    "the caller gives up on when_idle while the turn runs",
    |f: &DroppedWaiter| !f.resolved,
);

/// A goal of [`DROPPED_WHEN_IDLE`].
pub const WAITER_RESOLVED_FIRST: Goal = excused(
        on!(
            "waiter-resolved-first",
            "when_idle resolves before the caller's timeout fires",
            |f: &DroppedWaiter| f.resolved,
        ),
        &[
            (Checker::ShuttleRandom,
                "not reached in runs far past the PR budget: the timer is ready from the start, and the walk must pass it over at each scheduling point of the whole turn",
            ),
            (Checker::ShuttlePct,
                "not reached in runs far past the PR budget at depth 3: the turn's flushes yield, and shuttle's PCT drops a yielding task below every other, so the timer fires first",
            ),
        ],
    );

const DROPPED_WHEN_IDLE_GOALS: &[Goal] = &[WAITER_DROPPED_MID_TURN, WAITER_RESOLVED_FIRST];

/// `dropped-when-idle`, registered in [`super::ALL`].
pub static DROPPED_WHEN_IDLE: Scenario = Scenario::new(
    "dropped-when-idle",
    "a when_idle() caller gives up mid-turn; a later waiter follows",
    bodies!(dropped_when_idle),
)
.rules(&[Rule::C7, Rule::D8])
.goals(DROPPED_WHEN_IDLE_GOALS)
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
});

/// `dropped-when-idle`: a timer task races a `when_idle` while A runs
/// (`rig::give_up`), so its future is dropped at each of its suspension
/// points or resolves first. The waiter it registered must hold up
/// nothing: a later waiter resolves at quiescence after A (C7, checked by
/// the journal oracle too), and the agent still stops (D8).
pub async fn dropped_when_idle<R: Rt>(_: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
    let agent = h.agent.clone();
    let a = agent.send(spec("A", 1)).expect("send A");
    let resolved = super::rig::give_up::<R, _>(agent.when_idle())
        .await
        .is_some();
    let late = agent.when_idle().await;
    let a_fate = PromptFate::of(&agent.journal(), a);
    h.stop().await;
    let journal = agent.journal();
    let own = vec![(
        late == Idle::Quiescent && a_fate == PromptFate::COMPLETED,
        Violation::new(
            Rule::C7,
            format!("after a dropped when_idle, the next one resolved {late:?} with A {a_fate}"),
        ),
    )];
    let said = DroppedWaiter {
        resolved,
        a: a_fate,
    };
    Outcome::checked(journal, &agent.durable_log(), said, own)
}

/// `dropped-when-idle`'s fact: whether the first `when_idle` resolved
/// before its caller gave up, and A's fate. Shown as
/// `first:dropped A:completed`.
struct DroppedWaiter {
    resolved: bool,
    a: PromptFate,
}

impl std::fmt::Display for DroppedWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = if self.resolved { "resolved" } else { "dropped" };
        write!(f, "first:{first} A:{}", self.a)
    }
}
