//! Reachability goals: the race windows each scenario exists to reach,
//! declared as "sometimes" properties. `check` counts each goal's hits per
//! checker, and an exploring checker that never hits a goal fails: it
//! explored too little for its pass to mean anything.
//!
//! A goal is matched against an execution's outcome label (the scenario
//! names what happened in it) or, where the label does not say, against the
//! journals.

use super::{Outcome, ScenarioId};
use crate::journal::Event;
use crate::world::WorldEvent;

/// How a goal recognises an execution that reached its window.
#[derive(Clone, Copy, Debug)]
pub enum Match {
    /// The outcome label contains this text.
    Label(&'static str),
    /// A predicate over the outcome.
    Pred(fn(&Outcome) -> bool),
}

/// One "sometimes" goal.
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    /// Short name, shown in the table.
    pub name: &'static str,
    /// The window, in words.
    pub about: &'static str,
    /// How an execution is recognised.
    pub matches: Match,
    /// Checkers not required to reach it, with the measurement that says
    /// why (their hits are still counted and shown).
    pub excused: &'static [(&'static str, &'static str)],
}

impl Goal {
    /// Whether `outcome` reached this goal's window.
    pub fn hit(&self, outcome: &Outcome) -> bool {
        match self.matches {
            Match::Label(text) => outcome.label.contains(text),
            Match::Pred(f) => f(outcome),
        }
    }
}

const fn label(name: &'static str, about: &'static str, text: &'static str) -> Goal {
    Goal {
        name,
        about,
        matches: Match::Label(text),
        excused: &[],
    }
}

/// Not reachable by shuttle's uniform random walk at any budget we could
/// measure: the late task must win every one of a long run of coin flips.
const SHUTTLE_RANDOM_WALK: (&str, &str) = (
    "shuttle-random",
    "0 hits in 50,000 iterations (3.5 s): the uniform random walk must pick the same task at every one of its scheduling points before the other task's next one",
);

const fn excused(mut goal: Goal, who: &'static [(&'static str, &'static str)]) -> Goal {
    goal.excused = who;
    goal
}

const fn pred(name: &'static str, about: &'static str, f: fn(&Outcome) -> bool) -> Goal {
    Goal {
        name,
        about,
        matches: Match::Pred(f),
        excused: &[],
    }
}

/// An idle cancel: a `cancel` call that requested nothing.
fn idle_cancel(o: &Outcome) -> bool {
    o.journal.iter().any(|r| match &r.event {
        Event::CancelCalled { call, .. } => !o
            .journal
            .iter()
            .any(|q| matches!(&q.event, Event::CancelRequested { call: c, .. } if c == call)),
        _ => false,
    })
}

/// Disposal began after prompt 0's `turn/end` and before its flush closed.
fn dispose_during_flush(o: &Outcome) -> bool {
    let pos = |f: &dyn Fn(&Event) -> bool| o.journal.iter().position(|r| f(&r.event));
    let end = pos(&|e| matches!(e, Event::TurnEnd { prompt: 0, .. }));
    let closed = pos(&|e| matches!(e, Event::TurnClosed { prompt: 0 }));
    let dispose = pos(&|e| matches!(e, Event::DisposeBegan { .. }));
    matches!((end, dispose, closed), (Some(e), Some(d), Some(c)) if e < d && d < c)
}

/// A turn that started and ended `aborted` with no step: the cancel landed
/// between `turn/start` and the first step boundary.
fn abort_before_first_step(o: &Outcome) -> bool {
    o.journal.iter().enumerate().any(|(i, r)| match r.event {
        Event::TurnStart { prompt } => o.journal[i + 1..]
            .iter()
            .take_while(|q| !matches!(q.event, Event::Step { prompt: p, .. } if p == prompt))
            .any(|q| {
                matches!(q.event, Event::TurnEnd { prompt: p, reason, .. }
                    if p == prompt && reason == crate::journal::EndReason::Aborted)
            }),
        _ => false,
    })
}

/// The loop woke for a prompt while a cancel call was in progress (between
/// its `cancel-called` and `cancel-returned`): the `cancel_in_progress`
/// guard's path.
fn wake_inside_cancel(o: &Outcome) -> bool {
    let mut open = 0u32;
    for r in &o.journal {
        match r.event {
            Event::CancelCalled { .. } => open += 1,
            Event::CancelReturned { .. } => open = open.saturating_sub(1),
            Event::Woke { .. } if open > 0 => return true,
            _ => {}
        }
    }
    false
}

const CANCEL_BEFORE_CLAIM: &[Goal] = &[
    excused(
        pred(
            "abort-before-first-step",
            "the cancel lands between A's turn/start and its first step boundary: A ends aborted with no step",
            abort_before_first_step,
        ),
        &[(
            "shuttle-pct",
            "0 hits in the PR tier's 5,000 iterations, 11 in 50,000 (4.2 s) at depth 3: the cancel must land inside one lock section's gap of the loop",
        )],
    ),
    pred(
        "wake-inside-cancel",
        "the loop wakes for A while the cancel call is in progress",
        wake_inside_cancel,
    ),
    label(
        "between-wake-and-claim",
        "the cancel lands after the loop woke for A and before it claimed A (the pre-run marker skips A)",
        "A:skipped-at-claim",
    ),
    label(
        "before-wake",
        "the cancel lands while A is still queued and clears it",
        "A:cleared-in-queue",
    ),
    label(
        "after-claim",
        "A's turn started before the cancel",
        "A:ran-before-cancel",
    ),
];

const IDLE_CANCEL: &[Goal] = &[pred(
    "idle-cancel",
    "a cancel lands with no turn and an empty inbox and requests nothing",
    idle_cancel,
)];

const CANCEL_MID_TURN: &[Goal] = &[
    label(
        "cancel-during-step",
        "the cancel lands while the turn awaits a step; the turn ends aborted",
        "A:aborted",
    ),
    label(
        "second-cancel-idle",
        "the second cancel finds nothing left to stop",
        "second-cancel:Idle",
    ),
];

const OBSERVER_QUEUES: &[Goal] = &[label(
    "observer-queues-during-notification",
    "a cancel-requested observer queues a prompt that the same cancel clears",
    "observer-prompt:cleared-in-queue",
)];

const WHEN_IDLE: &[Goal] = &[label(
    "late-waiter-while-b-pending",
    "a waiter registered while the later prompt B is pending resolves only after B",
    "B-at-late-idle:completed",
)];

const CONCURRENT_DISPOSE: &[Goal] = &[
    label(
        "dispose-mid-turn",
        "the disposals land while the turn awaits a step",
        "A:disposed",
    ),
    excused(
        pred(
            "dispose-during-flush",
            "disposal begins after turn/end and before the turn's flush closed",
            dispose_during_flush,
        ),
        &[
            (
                "shuttle-pct",
                "0 hits in 50,000 iterations (4.5 s) at depth 3: the flush window needs the loop to keep its priority through the turn's end while three disposers wait",
            ),
            (
                "loom",
                "0 hits in 18,763 executions (4.4 s), exhaustive at loom's bound 1 for 3 threads (bound 2: 627,308 executions, 98 s)",
            ),
        ],
    ),
];

const DISPOSE_MID_TURN: &[Goal] = &[
    label(
        "dispose-during-step",
        "dispose lands while the turn awaits a step",
        "A:disposed",
    ),
    label(
        "tail-cleared",
        "dispose clears the queued tail before it starts",
        "tail:cleared-by-dispose",
    ),
];

const OWNER_VS_HANDLE: &[Goal] = &[label(
    "teardown-mid-turn",
    "the racing handle dispose and owner unload stop a running turn",
    "A:disposed",
)];

const PROVIDER_UNLOAD: &[Goal] = &[label(
    "all-disposed",
    "the provider's unload disposes config-created and handle-owned agents",
    "all-disposed",
)];

/// Whether some creation attempt failed after passing setup (`at_enter`)
/// or before it.
fn create_failed(o: &Outcome, at_enter: bool) -> bool {
    o.world.iter().any(|f| match f {
        WorldEvent::CreateFailed { attempt, .. } => {
            let checked = o
                .world
                .iter()
                .any(|c| matches!(c, WorldEvent::CreateChecked { attempt: a, .. } if a == attempt));
            checked == at_enter
        }
        _ => false,
    })
}

fn refused_at_enter(o: &Outcome) -> bool {
    create_failed(o, true)
}

fn refused_at_prepare(o: &Outcome) -> bool {
    create_failed(o, false)
}

/// A completion notice was dropped (no live owner, or tool-bash unloaded).
fn notice_dropped(o: &Outcome) -> bool {
    o.world.iter().any(|e| {
        matches!(
            e,
            WorldEvent::Notice {
                delivered_to: None,
                ..
            }
        )
    })
}

/// A completion notice was delivered.
fn notice_delivered(o: &Outcome) -> bool {
    o.world.iter().any(|e| {
        matches!(
            e,
            WorldEvent::Notice {
                delivered_to: Some(_),
                ..
            }
        )
    })
}

const SAME_ID: &[Goal] = &[
    pred(
        "loser-refused-at-enter",
        "a losing create passed setup with the winner and is refused by enter's recheck",
        refused_at_enter,
    ),
    pred(
        "loser-refused-at-prepare",
        "a losing create is refused before setup",
        refused_at_prepare,
    ),
];

const CREATE_DURING_UNLOAD: &[Goal] = &[
    label(
        "unload-before-publication",
        "the owner unloads before the creation publishes: refused",
        "refused",
    ),
    label(
        "unload-after-publication",
        "the owner unloads after the creation published: created, then disposed",
        "created-then-disposed",
    ),
];

/// B's session (a second serial of id `x`) was entered before the first
/// serial's teardown finished: the id was reused mid-teardown.
fn reuse_during_teardown(o: &Outcome) -> bool {
    let first = o.world.iter().find_map(|e| match e {
        WorldEvent::SessionEntered { id, serial, .. } if id == "x" => Some(*serial),
        _ => None,
    });
    let Some(first) = first else { return false };
    for e in &o.world {
        match e {
            WorldEvent::TeardownDone { id, serial } if id == "x" && *serial == first => {
                return false
            }
            WorldEvent::SessionEntered { id, serial, .. } if id == "x" && *serial != first => {
                return true
            }
            _ => {}
        }
    }
    false
}

const ID_REUSE: &[Goal] = &[excused(
    pred(
        "reuse-during-teardown",
        "B's session with the reused id is entered before A's teardown finished",
        reuse_during_teardown,
    ),
    &[(
        "loom",
        "0 hits in 18,449 executions (4.2 s), exhaustive at loom's bound 1 for 4 threads: B's create must overtake two of A's teardown steps",
    )],
)];

/// B's create attempt ended (failed or entered its session) after A's
/// teardown step `after` (0: before step 1) and before step `after + 1`
/// (6: after A's teardown finished). A's serial is the first entered.
fn create_between(o: &Outcome, after: u8) -> bool {
    let mut a: Option<u64> = None;
    let mut step = 0u8;
    for e in &o.world {
        match e {
            WorldEvent::SessionEntered { id, serial, .. } if id == "x" && a.is_none() => {
                a = Some(*serial);
            }
            WorldEvent::TeardownStep {
                serial, step: n, ..
            } if Some(*serial) == a => step = *n,
            WorldEvent::TeardownDone { serial, .. } if Some(*serial) == a => step = 6,
            WorldEvent::CreateFailed { id, .. } if id == "x" && step == after => return true,
            WorldEvent::SessionEntered { id, serial, .. }
                if id == "x" && Some(*serial) != a && step == after =>
            {
                return true
            }
            _ => {}
        }
    }
    false
}

macro_rules! between {
    ($name:literal, $about:literal, $after:literal) => {
        pred($name, $about, |o| create_between(o, $after))
    };
}

/// loom at the PR bound (1) on `same-id-vs-teardown`'s late windows.
const LOOM_PB1_LATE_STEPS: &[(&str, &str)] = &[(
    "loom",
    "0 hits in 4,841 executions (0.9 s), exhaustive at loom's bound 1; at bound 3 loom reaches every window (1,417,716 executions, 294 s)",
)];

const SAME_ID_VS_TEARDOWN: &[Goal] = &[
    between!(
        "create-before-step-1",
        "a create of x ends before A's teardown stopped its loop",
        0
    ),
    between!(
        "create-between-1-2",
        "a create of x ends between A's teardown steps 1 and 2",
        1
    ),
    between!(
        "create-between-2-3",
        "a create of x ends between A's teardown steps 2 and 3",
        2
    ),
    excused(
        between!(
            "create-between-3-4",
            "a create of x ends between A's teardown steps 3 and 4",
            3
        ),
        LOOM_PB1_LATE_STEPS,
    ),
    excused(
        between!(
            "create-between-4-5",
            "a create of x ends between A's teardown steps 4 and 5",
            4
        ),
        LOOM_PB1_LATE_STEPS,
    ),
    excused(
        between!(
            "create-after-step-5",
            "a create of x ends after step 5, before A's teardown is done",
            5
        ),
        LOOM_PB1_LATE_STEPS,
    ),
];

/// Positions in the journal of the first `dispose-began` and of the first
/// `turn/end`.
fn dispose_and_end(o: &Outcome) -> (Option<usize>, Option<usize>) {
    let at = |f: fn(&Event) -> bool| o.journal.iter().position(|r| f(&r.event));
    (
        at(|e| matches!(e, Event::DisposeBegan { .. })),
        at(|e| matches!(e, Event::TurnEnd { .. })),
    )
}

const CANCEL_THEN_DISPOSE: &[Goal] = &[
    pred(
        "dispose-before-turn-end",
        "disposal begins after the cancel and before the cancelled turn's turn/end",
        |o| matches!(dispose_and_end(o), (Some(d), Some(t)) if d < t),
    ),
    pred(
        "turn-end-before-dispose",
        "the cancelled turn ends before disposal begins",
        |o| matches!(dispose_and_end(o), (Some(d), Some(t)) if t < d),
    ),
];

/// The cancel cleared a steering input, and a later prompt started a turn.
fn steering_cleared_then_turn(o: &Outcome) -> bool {
    let cleared = o
        .journal
        .iter()
        .position(|r| matches!(&r.event, Event::Cleared { steering, .. } if !steering.is_empty()));
    cleared.is_some_and(|c| {
        o.journal[c..]
            .iter()
            .any(|r| matches!(r.event, Event::TurnStart { .. }))
    })
}

const CANCEL_DROPS_STEERING: &[Goal] = &[pred(
    "prompt-after-dropped-steering",
    "a cancel clears a queued steering input, then the next prompt's turn starts",
    steering_cleared_then_turn,
)];

const LISTENER_PANICS: &[Goal] = &[label(
    "chain-survives",
    "both disposed listeners panic and the next agent still works",
    "B:completed",
)];

const RACING_NEW: &[Goal] = &[
    label(
        "close-before-new",
        "the close lands before session/new starts",
        "new:bridge has been disposed",
    ),
    label(
        "close-between-creation-and-publication",
        "the close lands while session/new awaits creation",
        "new:connection closed during session/new",
    ),
    excused(
        label(
            "close-after-publication",
            "the close lands after session/new published its session",
            "new:won-before-close",
        ),
        &[SHUTTLE_RANDOM_WALK],
    ),
];

const DURING_LOAD: &[Goal] = &[
    label(
        "close-before-load",
        "the close lands before session/load starts",
        "load:bridge has been disposed",
    ),
    label(
        "close-during-resume",
        "the close lands while session/load awaits the resume",
        "load:connection closed during session/load",
    ),
    excused(
        label(
            "close-after-publication",
            "the close lands after session/load published the session",
            "load:won-before-close",
        ),
        &[SHUTTLE_RANDOM_WALK],
    ),
];

const MID_PROMPT: &[Goal] = &[
    label(
        "disconnect-during-prompt",
        "the disconnect lands while the prompt runs; it answers cancelled",
        "first:Ok(Cancelled)",
    ),
    excused(
        label(
            "prompt-ends-first",
            "the prompt ends before the disconnect",
            "first:Ok(EndTurn)",
        ),
        &[(
            "shuttle-pct",
            "0 hits in 50,000 iterations (2.5 s) at depth 3: the prompt's turn must outrun the disconnect through all its steps",
        )],
    ),
];

const CANCEL_BEFORE_START: &[Goal] = &[
    label(
        "cancel-before-start",
        "session/cancel lands while the prompt is queued: it never runs",
        "A:never-ran",
    ),
    label(
        "cancel-during-turn",
        "session/cancel lands while the prompt runs: aborted",
        "A:aborted",
    ),
    label(
        "cancel-after-turn",
        "session/cancel lands after the prompt ended",
        "A:end-turn",
    ),
];

const DUPLICATE_LOAD: &[Goal] = &[label(
    "one-load-wins",
    "two concurrent loads of one id: exactly one succeeds",
    "loads-ok:1",
)];

const TOOL_BASH_RELOAD: &[Goal] = &[
    label(
        "reload-between-checks",
        "tool-bash reloads between two fence checks: the original instance serves the first, the reloaded one the second",
        "gens:1-2",
    ),
    label(
        "reload-after-checks",
        "both fence checks run on the original instance",
        "gens:1-1",
    ),
];

const NOTICE_ROUTING: &[Goal] = &[
    pred(
        "notice-dropped",
        "a completion finds no live owner (or tool-bash unloaded) and is dropped",
        notice_dropped,
    ),
    pred(
        "notice-delivered",
        "a completion is delivered to the live agent with the owner's id",
        notice_delivered,
    ),
];

impl ScenarioId {
    /// This scenario's race windows.
    pub fn goals(self) -> &'static [Goal] {
        match self {
            ScenarioId::CancelBeforeClaim => CANCEL_BEFORE_CLAIM,
            ScenarioId::IdleCancelThenPrompt => IDLE_CANCEL,
            ScenarioId::CancelMidTurn => CANCEL_MID_TURN,
            ScenarioId::ObserverQueuesDuringCancel => OBSERVER_QUEUES,
            ScenarioId::WhenIdleWaiters => WHEN_IDLE,
            ScenarioId::ConcurrentDispose => CONCURRENT_DISPOSE,
            ScenarioId::DisposeMidTurn => DISPOSE_MID_TURN,
            ScenarioId::OwnerUnloadVsHandleDispose => OWNER_VS_HANDLE,
            ScenarioId::ProviderUnload => PROVIDER_UNLOAD,
            ScenarioId::SameIdCreateRace => SAME_ID,
            ScenarioId::CreateDuringOwnerUnload => CREATE_DURING_UNLOAD,
            ScenarioId::IdReuseAfterDetach => ID_REUSE,
            ScenarioId::SameIdVsTeardown => SAME_ID_VS_TEARDOWN,
            ScenarioId::CancelThenDispose => CANCEL_THEN_DISPOSE,
            ScenarioId::CancelDropsSteering => CANCEL_DROPS_STEERING,
            ScenarioId::DisposedListenerPanics => LISTENER_PANICS,
            ScenarioId::DisconnectRacingNew => RACING_NEW,
            ScenarioId::DisconnectDuringLoad => DURING_LOAD,
            ScenarioId::DisconnectMidPrompt => MID_PROMPT,
            ScenarioId::SessionCancelBeforeStart => CANCEL_BEFORE_START,
            ScenarioId::DuplicateLoad => DUPLICATE_LOAD,
            ScenarioId::ToolBashReload => TOOL_BASH_RELOAD,
            ScenarioId::CompletionNoticeRouting => NOTICE_ROUTING,
        }
    }
}
