//! Reachability goals: the race windows each scenario exists to reach,
//! declared as "sometimes" properties. `check` counts each goal's hits per
//! checker, and an exploring checker that never hits a goal fails: it
//! explored too little for its pass to mean anything.
//!
//! A goal is a predicate over an execution's outcome: over the scenario's
//! typed fact (what its body says happened, `Outcome::fact`, declared with
//! [`on!`]) or, where the fact does not say, over the journals. No goal
//! reads the label: the label is only the fact's `Display` form, the key
//! of the outcome's view.

use super::Outcome;
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::journal::Event;

/// One "sometimes" goal.
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    /// Short name, shown in the table.
    pub name: &'static str,
    /// The window, in words.
    pub about: &'static str,
    /// Whether an execution reached the window.
    pub reached: fn(&Outcome) -> bool,
    /// Checkers not required to reach it, with the measurement that says
    /// why (their hits are still counted and shown).
    pub excused: &'static [(Checker, &'static str)],
}

/// A goal is named once, by its `pub const`; within its scenario the name
/// is its id, so two goals are the same goal when their names are.
impl PartialEq for Goal {
    fn eq(&self, other: &Goal) -> bool {
        self.name == other.name
    }
}

impl Eq for Goal {}

impl Goal {
    /// Whether `outcome` reached this goal's window.
    pub fn hit(&self, outcome: &Outcome) -> bool {
        (self.reached)(outcome)
    }
}

/// A goal over the scenario's fact of type `T`:
/// `on!("name", "about", |f: &T| f.first == First::Dropped)`; an outcome
/// whose fact is not a `T` (a panic, another scenario's) does not reach it.
macro_rules! on {
    ($name:expr, $about:expr, |$f:ident: &$t:ty| $body:expr $(,)?) => {
        $crate::scenarios::goals::pred($name, $about, |o| {
            o.fact::<$t>().is_some_and(|$f: &$t| $body)
        })
    };
}
pub(super) use on;

/// Not reachable by shuttle's uniform random walk at any budget we could
/// measure: the late task must win every one of a long run of coin flips.
pub(super) const SHUTTLE_RANDOM_WALK: (Checker, &str) = (
    Checker::ShuttleRandom,
    "not reached in runs far past the PR budget: the uniform random walk must pick the same task at every one of its scheduling points before the other task's next one",
);

pub(super) const fn excused(mut goal: Goal, who: &'static [(Checker, &'static str)]) -> Goal {
    goal.excused = who;
    goal
}

pub(super) const fn pred(name: &'static str, about: &'static str, f: fn(&Outcome) -> bool) -> Goal {
    Goal {
        name,
        about,
        reached: f,
        excused: &[],
    }
}

/// An idle cancel: a `cancel` call that requested nothing.
pub(super) fn idle_cancel(o: &Outcome) -> bool {
    o.journal.iter().any(|r| match &r.event {
        Event::CancelCalled { call, .. } => !o
            .journal
            .iter()
            .any(|q| matches!(&q.event, Event::CancelRequested { call: c, .. } if c == call)),
        _ => false,
    })
}

/// Disposal began after prompt 0's `turn/end` and before its flush closed.
pub(super) fn dispose_during_flush(o: &Outcome) -> bool {
    let pos = |f: &dyn Fn(&Event) -> bool| o.journal.iter().position(|r| f(&r.event));
    let end = pos(&|e| matches!(e, Event::TurnEnd { prompt: 0, .. }));
    let closed = pos(&|e| matches!(e, Event::TurnClosed { prompt: 0 }));
    let dispose = pos(&|e| matches!(e, Event::DisposeBegan { .. }));
    matches!((end, dispose, closed), (Some(e), Some(d), Some(c)) if e < d && d < c)
}

/// A turn that started and ended `aborted` with no step: the cancel landed
/// between `turn/start` and the first step boundary.
pub(super) fn abort_before_first_step(o: &Outcome) -> bool {
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
pub(super) fn wake_inside_cancel(o: &Outcome) -> bool {
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

/// Whether some creation attempt failed after passing setup (`at_enter`)
/// or before it.
pub(super) fn create_failed(o: &Outcome, at_enter: bool) -> bool {
    o.world.iter().any(|f| match f {
        LifecycleEvent::CreateFailed { attempt, .. } => {
            let checked = o.world.iter().any(
                |c| matches!(c, LifecycleEvent::CreateChecked { attempt: a, .. } if a == attempt),
            );
            checked == at_enter
        }
        _ => false,
    })
}

pub(super) fn refused_at_enter(o: &Outcome) -> bool {
    create_failed(o, true)
}

pub(super) fn refused_at_prepare(o: &Outcome) -> bool {
    create_failed(o, false)
}

/// B's session (a second serial of id `x`) was entered before the first
/// serial's teardown finished: the id was reused mid-teardown.
pub(super) fn reuse_during_teardown(o: &Outcome) -> bool {
    let first = o.world.iter().find_map(|e| match e {
        LifecycleEvent::SessionEntered { id, serial, .. } if id == "x" => Some(*serial),
        _ => None,
    });
    let Some(first) = first else { return false };
    for e in &o.world {
        match e {
            LifecycleEvent::TeardownDone { id, serial } if id == "x" && *serial == first => {
                return false
            }
            LifecycleEvent::SessionEntered { id, serial, .. } if id == "x" && *serial != first => {
                return true
            }
            _ => {}
        }
    }
    false
}

/// B's create attempt ended (failed or entered its session) after A's
/// teardown step `after` (0: before step 1) and before step `after + 1`
/// (6: after A's teardown finished). A's serial is the first entered.
pub(super) fn create_between(o: &Outcome, after: u8) -> bool {
    let mut a: Option<u64> = None;
    let mut step = 0u8;
    for e in &o.world {
        match e {
            LifecycleEvent::SessionEntered { id, serial, .. } if id == "x" && a.is_none() => {
                a = Some(*serial);
            }
            LifecycleEvent::TeardownStep {
                serial, step: n, ..
            } if Some(*serial) == a => step = *n,
            LifecycleEvent::TeardownDone { serial, .. } if Some(*serial) == a => step = 6,
            LifecycleEvent::CreateFailed { id, .. } if id == "x" && step == after => return true,
            LifecycleEvent::SessionEntered { id, serial, .. }
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
pub(super) use between;

/// loom sampling `loom_max` executions of a five-thread scenario in its
/// shape (`Ctx::loom`) on a window that an early choice opens.
pub(super) const LOOM_SAMPLED_EARLY_WINDOW: &[(Checker, &str)] = &[(Checker::Loom,
    "not reached within ten times the PR tier's loom executions (`loom_max`): loom's depth-first order varies the late choices first, and this window needs an early one",
)];

/// loom at the PR bound (1) on `same-id-vs-teardown`'s late windows.
pub(super) const LOOM_PB1_LATE_STEPS: &[(Checker, &str)] = &[(Checker::Loom,
    "not reached in the whole space at loom's bound 1; at bound 3, minutes past the PR gate, loom reaches every window",
)];

/// Positions in the journal of the first `dispose-began` and of the first
/// `turn/end`.
pub(super) fn dispose_and_end(o: &Outcome) -> (Option<usize>, Option<usize>) {
    let at = |f: fn(&Event) -> bool| o.journal.iter().position(|r| f(&r.event));
    (
        at(|e| matches!(e, Event::DisposeBegan { .. })),
        at(|e| matches!(e, Event::TurnEnd { .. })),
    )
}

/// The cancel cleared a steering input, and a later prompt started a turn.
pub(super) fn steering_cleared_then_turn(o: &Outcome) -> bool {
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

/// Two cancels requested one running turn's token (C3: the first cause
/// is the one its `turn/end` carries).
pub(super) fn two_causes_one_turn(o: &Outcome) -> bool {
    o.journal.iter().enumerate().any(|(i, r)| match r.event {
        Event::TurnStart { prompt } => {
            o.journal[i + 1..]
                .iter()
                .take_while(|q| !matches!(q.event, Event::TurnEnd { prompt: p, .. } if p == prompt))
                .filter(|q| {
                    matches!(
                        q.event,
                        Event::Cleared {
                            token_requested: true,
                            ..
                        }
                    )
                })
                .count()
                >= 2
        }
        _ => false,
    })
}

/// After an idle cancel returned, a prompt accepted later started its turn
/// (C6: the idle cancel left no marker behind).
pub(super) fn prompt_after_idle_cancel(o: &Outcome) -> bool {
    let j = &o.journal;
    j.iter().enumerate().any(|(i, r)| match &r.event {
        Event::CancelReturned { call }
            if !j.iter().any(
                |q| matches!(&q.event, Event::CancelRequested { call: c, .. } if c == call),
            ) =>
        {
            let later = &j[i + 1..];
            later.iter().any(|q| match q.event {
                Event::TurnStart { prompt } => later
                    .iter()
                    .any(|a| matches!(a.event, Event::Accepted { prompt: p } if p == prompt)),
                _ => false,
            })
        }
        _ => false,
    })
}

/// A `when_idle` waiter registered before an effective cancel resolved at
/// quiescence after it (C7).
pub(super) fn waiter_across_cancel(o: &Outcome) -> bool {
    let j = &o.journal;
    j.iter().enumerate().any(|(i, r)| match r.event {
        Event::IdleWaiting { waiter } => j[i + 1..]
            .iter()
            .position(|q| matches!(q.event, Event::CancelRequested { .. }))
            .is_some_and(|c| {
                j[i + 1 + c..].iter().any(|q| {
                    matches!(q.event, Event::IdleResolved { waiter: w, done: false } if w == waiter)
                })
            }),
        _ => false,
    })
}

/// A job's completion notice was lost: no notice at all for a job that
/// started before a job whose notice was handled (S6: a completion that
/// landed while tool-bash was unloaded).
pub(super) fn notice_lost(o: &Outcome) -> bool {
    let noticed: Vec<u64> = o
        .world
        .iter()
        .filter_map(|e| match e {
            LifecycleEvent::Notice { job, .. } => crate::shell::job_number(job),
            _ => None,
        })
        .collect();
    let last = noticed.iter().copied().max().unwrap_or(0);
    (1..last).any(|n| !noticed.contains(&n))
}
