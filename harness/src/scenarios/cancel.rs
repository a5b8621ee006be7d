//! Scenarios about `cancel`: `cancel-before-claim`, `cancel-mid-turn`,
//! `observer-queues-during-cancel`, `cancel-drops-steering`.

use super::fate::{Fates, FromJournal, PromptFate};
use super::goals::*;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::agent::{Agent, CancelOutcome};
use crate::bus::PublicEvent;
use crate::checker::Checker;
use crate::faults::Fault;
use crate::journal::{Cause, EndReason, Event, PromptId, Record};
use crate::oracle::Violation;
use crate::rt::{Mutex, Rt};
use crate::rules::Rule;
use std::sync::Arc;

/// A fate that may not exist, printed (`none`).
fn shown(fate: Option<PromptFate>) -> String {
    fate.map_or_else(|| "none".into(), |f| f.to_string())
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

/// A goal of [`CANCEL_BEFORE_CLAIM`].
pub const ABORT_BEFORE_FIRST_STEP: Goal = excused(
        pred(
            "abort-before-first-step",
            "the cancel lands between A's turn/start and its first step boundary: A ends aborted with no step",
            abort_before_first_step,
        ),
        &[(Checker::ShuttlePct,
            "not reached in the PR tier's iterations at depth 3, rarely in much longer runs: the cancel must land inside one lock section's gap of the loop",
        )],
    );

/// A goal of [`CANCEL_BEFORE_CLAIM`].
pub const WAKE_INSIDE_CANCEL: Goal = pred(
    "wake-inside-cancel",
    "the loop wakes for A while the cancel call is in progress",
    wake_inside_cancel,
);

/// A goal of [`CANCEL_BEFORE_CLAIM`].
pub const BETWEEN_WAKE_AND_CLAIM: Goal = on!(
        "between-wake-and-claim",
        "the cancel lands after the loop woke for A and before it claimed A (the pre-run marker skips A)",
        |f: &BeforeClaim| *f == BeforeClaim::A(PromptFate::SkippedAtClaim),
    );

/// A goal of [`CANCEL_BEFORE_CLAIM`].
pub const BEFORE_WAKE: Goal = on!(
    "before-wake",
    "the cancel lands while A is still queued and clears it",
    |f: &BeforeClaim| *f == BeforeClaim::A(PromptFate::ClearedInQueue),
);

/// A goal of [`CANCEL_BEFORE_CLAIM`].
pub const AFTER_CLAIM: Goal = on!(
    "after-claim",
    "A's turn started before the cancel",
    |f: &BeforeClaim| *f == BeforeClaim::RanBeforeCancel,
);

/// `cancel-before-claim`'s fact: A's turn started before the cancel, or
/// A's fate. Shown as `A:ran-before-cancel` or `A:skipped-at-claim`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BeforeClaim {
    RanBeforeCancel,
    A(PromptFate),
}

impl std::fmt::Display for BeforeClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BeforeClaim::RanBeforeCancel => write!(f, "A:ran-before-cancel"),
            BeforeClaim::A(fate) => write!(f, "A:{fate}"),
        }
    }
}

const CANCEL_BEFORE_CLAIM_GOALS: &[Goal] = &[
    ABORT_BEFORE_FIRST_STEP,
    WAKE_INSIDE_CANCEL,
    BETWEEN_WAKE_AND_CLAIM,
    BEFORE_WAKE,
    AFTER_CLAIM,
];

/// `cancel-before-claim`, registered in [`super::ALL`].
pub static CANCEL_BEFORE_CLAIM: Scenario = Scenario::new(
    "cancel-before-claim",
    "send A; cancel(user) races the loop's wake and claim; then send B; a bystander agent runs meanwhile",
    bodies!(cancel_before_claim),
)
.rules(&[Rule::C1, Rule::C2, Rule::C4, Rule::C5, Rule::C7])
.goals(CANCEL_BEFORE_CLAIM_GOALS)
.bounds(Bounds { dfs: None, ..Bounds::PR })
.targets(&[Fault::M3, Fault::M5]);

/// `cancel-before-claim`: send A; `cancel(user)` races the loop's wake and
/// claim; then send B. A never runs unless it started before the cancel
/// (C4); B runs exactly once (C5); `when_idle` resolves at quiescence (C7).
/// A bystander agent runs a two-step prompt meanwhile: the cancel is
/// agent-1's alone, so the bystander's prompt, never cancelled, runs to
/// completion exactly once (C5). Its steps share nothing with agent-1, so
/// the exhaustive search's reduction explores its interleavings once.
pub async fn cancel_before_claim<R: Rt>(ctx: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
    let by = ctx.bystanders.then(|| Agent::<R>::spawn("bystander"));
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
    let mut x_fate = PromptFate::COMPLETED;
    let mut bystander = None;
    if let (Some(by), Some(x)) = (by, x) {
        by.agent.when_idle().await;
        by.stop().await;
        x_fate = PromptFate::of(&by.agent.journal(), x);
        bystander = Some((by.agent.journal(), by.agent.durable_log()));
    }
    let journal = agent.journal();
    let a_fate = PromptFate::of(&journal, a);
    let b_fate = PromptFate::of(&journal, b);
    let a_ran_first = started_before_cancel(&journal, a, 0);
    let own = vec![
        (
            b_fate == PromptFate::COMPLETED,
            Violation::new(
                Rule::C5,
                format!("prompt B accepted after cancel returned ended `{b_fate}`, not completed"),
            ),
        ),
        (
            x_fate == PromptFate::COMPLETED,
            Violation::new(
                Rule::C5,
                format!("the bystander's prompt, never cancelled, ended `{x_fate}`"),
            ),
        ),
        (
            a_ran_first || a_fate != PromptFate::COMPLETED,
            Violation::new(
                Rule::C4,
                format!("prompt A cancelled before its claim ended `{a_fate}`"),
            ),
        ),
        (
            cancelled == CancelOutcome::Effective || a_fate == PromptFate::COMPLETED,
            Violation::new(Rule::C1, "cancel with A pending was not effective"),
        ),
    ];
    let said = if a_ran_first {
        BeforeClaim::RanBeforeCancel
    } else {
        BeforeClaim::A(a_fate)
    };
    let mut out = Outcome::checked(journal, &agent.durable_log(), said, own);
    // The bystander's history goes through every journal rule too.
    if let Some((journal, durable)) = bystander {
        out.violations
            .extend(crate::oracle::check_journal(&journal));
        out.violations
            .extend(crate::oracle::check_durable(&journal, &durable));
        out.invariants += crate::oracle::ORACLE_RULES.len();
    }
    out
}

/// A goal of [`CANCEL_MID_TURN`].
pub const CANCEL_DURING_STEP: Goal = on!(
    "cancel-during-step",
    "the cancel lands while the turn awaits a step; the turn ends aborted",
    |f: &MidTurn| f.a == PromptFate::Ended(EndReason::Aborted),
);

/// A goal of [`CANCEL_MID_TURN`].
pub const SECOND_CANCEL_IDLE: Goal = on!(
    "second-cancel-idle",
    "the second cancel finds nothing left to stop",
    |f: &MidTurn| f.second == CancelOutcome::Idle,
);

/// `cancel-mid-turn`'s fact: A's fate and what the second cancel did.
/// Shown as `A:aborted second-cancel:Idle`.
struct MidTurn {
    a: PromptFate,
    second: CancelOutcome,
}

impl std::fmt::Display for MidTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "A:{} second-cancel:{:?}", self.a, self.second)
    }
}

/// A goal of [`CANCEL_MID_TURN`].
pub const TWO_CAUSES_ONE_TURN: Goal = pred(
        "two-causes-one-turn",
        "both cancels request the running turn's token: the first cause (parent) is the one its turn/end carries",
        two_causes_one_turn,
    );

const CANCEL_MID_TURN_GOALS: &[Goal] =
    &[CANCEL_DURING_STEP, SECOND_CANCEL_IDLE, TWO_CAUSES_ONE_TURN];

/// `cancel-mid-turn`, registered in [`super::ALL`].
pub static CANCEL_MID_TURN: Scenario = Scenario::new(
    "cancel-mid-turn",
    "running turn + queued tail + steering; cancel(parent) then cancel(user)",
    bodies!(cancel_mid_turn),
)
.rules(&[Rule::C3, Rule::C8])
.goals(CANCEL_MID_TURN_GOALS)
.targets(&[Fault::M14])
// sim-dfs: how many steps and steering inputs land before each cancel
// multiplies the schedules; it does not exhaust unbounded within the PR
// budget, and bound 6 is the lowest at which it misses no view of the
// other checkers.
.bounds(Bounds {
    dfs: Some(6),
    ..Bounds::PR
});

/// `cancel-mid-turn`: a running turn with a queued tail and a steering
/// input; `cancel(parent)` then `cancel(user)`. The first cause wins, the
/// tail is dropped, the steering input is never absorbed after the cancel,
/// the turn ends `{aborted}` (C3, C8).
pub async fn cancel_mid_turn<R: Rt>(_: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
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
    let a_fate = PromptFate::of(&journal, a);
    // On the model checkers a step is only a yield, so A may finish before
    // the cancel lands; the turn-specific checks apply when it did not.
    let active = active_at_call(&journal, a, 0);
    let own = vec![
        (
            !active || first == CancelOutcome::Effective,
            Violation::new(Rule::C1, "cancel(parent) during a running turn was not effective"),
        ),
        (
            !active || a_end == Some((EndReason::Aborted, Some(Cause::Parent))),
            Violation::new(Rule::C3, format!("turn A cancelled mid-turn ended {a_end:?}, expected aborted by the first cause (parent)")),
        ),
        (
            !active || PromptFate::of(&journal, tail) == PromptFate::ClearedInQueue,
            Violation::new(Rule::C2, format!("queued tail ended `{}`, expected cleared", PromptFate::of(&journal, tail))),
        ),
    ];
    let said = MidTurn { a: a_fate, second };
    Outcome::checked(journal, &agent.durable_log(), said, own)
}

/// A goal of [`OBSERVER_QUEUES_DURING_CANCEL`].
pub const OBSERVER_QUEUES_DURING_NOTIFICATION: Goal = on!(
    "observer-queues-during-notification",
    "a cancel-requested observer queues a prompt that the same cancel clears",
    |f: &Observed| matches!(
        f,
        Observed::Effective {
            observer: Some(PromptFate::ClearedInQueue),
            ..
        }
    ),
);

/// `observer-queues-during-cancel`'s fact: the cancel found A and the tail
/// both finished (vacuous), or A's fate and the fate of the prompt the
/// observer queued, if it queued one. Shown as
/// `A:aborted observer-prompt:cleared-in-queue`.
enum Observed {
    Vacuous,
    Effective {
        a: PromptFate,
        observer: Option<PromptFate>,
    },
}

impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Observed::Vacuous => write!(f, "vacuous:all-done-before-cancel"),
            Observed::Effective { a, observer } => {
                write!(f, "A:{a} observer-prompt:{}", shown(*observer))
            }
        }
    }
}

const OBSERVER_QUEUES_DURING_CANCEL_GOALS: &[Goal] = &[OBSERVER_QUEUES_DURING_NOTIFICATION];

/// `observer-queues-during-cancel`, registered in [`super::ALL`].
pub static OBSERVER_QUEUES_DURING_CANCEL: Scenario = Scenario::new(
    "observer-queues-during-cancel",
    "a cancel-requested observer sends a prompt, another panics",
    bodies!(observer_queues_during_cancel),
)
.rules(&[Rule::C2, Rule::C9])
.goals(OBSERVER_QUEUES_DURING_CANCEL_GOALS)
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
})
.targets(&[Fault::M11]);

/// `observer-queues-during-cancel`: one `cancel-requested` observer sends a
/// prompt, another panics. The observer's prompt is cleared too (C2); the
/// panic neither vetoes nor skips the cancel (C9).
pub async fn observer_queues_during_cancel<R: Rt>(_: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
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
    let obs_fate = obs.map(|p| PromptFate::of(&journal, p));
    let panicked = journal
        .iter()
        .any(|r| matches!(&r.event, Event::ObserverPanicked { message, .. } if message == super::OBSERVER_PANIC));
    // The cancel is vacuous if A and the tail both finished before it (a
    // step is only a yield on the model checkers).
    let effective = cancelled == CancelOutcome::Effective;
    let own = vec![
        (
            !effective || obs.is_some(),
            Violation::new(Rule::C1, "the cancel-requested observer never ran"),
        ),
        (
            obs_fate.is_none_or(|f| f == PromptFate::ClearedInQueue),
            Violation::new(
                Rule::C2,
                format!(
                    "prompt queued by a cancel-requested observer ended `{}`, expected cleared",
                    shown(obs_fate)
                ),
            ),
        ),
        (
            !effective || panicked,
            Violation::new(
                Rule::C9,
                "the panicking observer was not contained and journaled",
            ),
        ),
    ];
    let said = if effective {
        Observed::Effective {
            a: PromptFate::of(&journal, a),
            observer: obs_fate,
        }
    } else {
        Observed::Vacuous
    };
    Outcome::checked(journal, &agent.durable_log(), said, own)
}

/// A goal of [`CANCEL_DROPS_STEERING`].
pub const PROMPT_AFTER_DROPPED_STEERING: Goal = pred(
    "prompt-after-dropped-steering",
    "a cancel clears a queued steering input, then the next prompt's turn starts",
    steering_cleared_then_turn,
);

const CANCEL_DROPS_STEERING_GOALS: &[Goal] = &[PROMPT_AFTER_DROPPED_STEERING];

/// `cancel-drops-steering`, registered in [`super::ALL`].
pub static CANCEL_DROPS_STEERING: Scenario = Scenario::new(
    "cancel-drops-steering",
    "a turn with steering queued is cancelled; then a new prompt runs without that steering",
    bodies!(cancel_drops_steering),
)
.rules(&[Rule::C5, Rule::C8])
.goals(CANCEL_DROPS_STEERING_GOALS)
// loom at bound 3 runs past the PR gate; bound 2 stays within it.
.bounds(Bounds {
    dfs: None,
    loom_cap: 2,
    ..Bounds::PR
});

/// `cancel-drops-steering`: a running turn has a steering input queued; it
/// is cancelled, and once the cancel returned a new prompt B is sent. The
/// cancelled turn's steering is never absorbed nor logged, by A or by B
/// (C8); B runs exactly once (C5).
pub async fn cancel_drops_steering<R: Rt>(_: Ctx) -> Outcome {
    let h = Agent::<R>::spawn("agent-1");
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
    let said = Fates::of(&journal, &[("A", a), ("B", b)]);
    Outcome::checked(journal, &agent.durable_log(), said, Vec::new())
}
