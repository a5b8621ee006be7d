//! Named scenarios: each is one async body generic over the backend [`Rt`],
//! run unchanged by every checker, and checked after every execution by the
//! rule oracles (`crate::oracle`) plus its own named invariants.

mod cancel;
mod idle;

use crate::faults::{Fault, Faults};
use crate::journal::Record;
use crate::oracle::{check_durable, check_journal, Violation, ORACLE_RULES};
use crate::rt::Rt;
use crate::session_log::Entry;
use serde::Serialize;

/// Panic messages that scenarios raise on purpose (a panicking observer,
/// C9); the checkers keep them out of the output.
pub const EXPECTED_PANICS: [&str; 1] = [OBSERVER_PANIC];

/// The message of the deliberately panicking observer.
pub const OBSERVER_PANIC: &str = "observer boom";

/// Every scenario of this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum ScenarioId {
    /// `cancel-before-claim`.
    CancelBeforeClaim,
    /// `idle-cancel-then-prompt`.
    IdleCancelThenPrompt,
    /// `cancel-mid-turn`.
    CancelMidTurn,
    /// `observer-queues-during-cancel`.
    ObserverQueuesDuringCancel,
    /// `when-idle-waiters`.
    WhenIdleWaiters,
}

/// What a scenario is.
#[derive(Clone, Copy, Debug)]
pub struct ScenarioInfo {
    /// The scenario.
    pub id: ScenarioId,
    /// Its name on the command line.
    pub name: &'static str,
    /// The rules it checks (beyond the oracle's, which run everywhere).
    pub rules: &'static [&'static str],
    /// One line on what it does.
    pub about: &'static str,
    /// Tasks it runs (loom needs a preemption bound above 3).
    pub tasks: usize,
}

impl ScenarioId {
    /// All scenarios, in `list` order.
    pub const ALL: [ScenarioId; 5] = [
        ScenarioId::CancelBeforeClaim,
        ScenarioId::IdleCancelThenPrompt,
        ScenarioId::CancelMidTurn,
        ScenarioId::ObserverQueuesDuringCancel,
        ScenarioId::WhenIdleWaiters,
    ];

    /// Its description.
    pub fn info(self) -> ScenarioInfo {
        let (name, rules, about, tasks): (_, &'static [&'static str], _, _) = match self {
            ScenarioId::CancelBeforeClaim => (
                "cancel-before-claim",
                &["C1", "C2", "C4", "C5", "C7"],
                "send A; cancel(user) races the loop's wake and claim; then send B",
                2,
            ),
            ScenarioId::IdleCancelThenPrompt => (
                "idle-cancel-then-prompt",
                &["C6"],
                "a turn completes; an idle cancel; the next prompt runs",
                2,
            ),
            ScenarioId::CancelMidTurn => (
                "cancel-mid-turn",
                &["C3", "C8"],
                "running turn + queued tail + steering; cancel(parent) then cancel(user)",
                2,
            ),
            ScenarioId::ObserverQueuesDuringCancel => (
                "observer-queues-during-cancel",
                &["C2", "C9"],
                "a cancel-requested observer sends a prompt, another panics",
                2,
            ),
            ScenarioId::WhenIdleWaiters => (
                "when-idle-waiters",
                &["C7"],
                "waiters before a cancel resolve; none resolves while a later prompt is pending",
                2,
            ),
        };
        ScenarioInfo {
            id: self,
            name,
            rules,
            about,
            tasks,
        }
    }

    /// Look a scenario up by name.
    pub fn parse(name: &str) -> Option<ScenarioId> {
        ScenarioId::ALL.into_iter().find(|s| s.info().name == name)
    }

    /// The faults this scenario is meant to kill (used by `mutants` to pick
    /// where to look first; every scenario still checks every rule).
    pub fn targets(self) -> &'static [Fault] {
        match self {
            ScenarioId::CancelBeforeClaim => &[Fault::M3, Fault::M5],
            ScenarioId::IdleCancelThenPrompt => &[Fault::M4],
            ScenarioId::CancelMidTurn => &[],
            ScenarioId::ObserverQueuesDuringCancel => &[Fault::M11],
            ScenarioId::WhenIdleWaiters => &[Fault::M12],
        }
    }
}

/// The result of one execution of a scenario.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Broken rules (empty: pass).
    pub violations: Vec<Violation>,
    /// A short label of what happened (for outcome-set tests), e.g.
    /// `A:skipped-at-claim`.
    pub label: String,
    /// Invariants evaluated.
    pub invariants: usize,
    /// The agent's journal, for traces.
    pub journal: Vec<Record>,
}

impl Outcome {
    /// Run the oracles over an agent's history and add scenario checks.
    pub fn checked(
        journal: Vec<Record>,
        durable: &[Entry],
        label: String,
        own: Vec<(bool, Violation)>,
    ) -> Outcome {
        let mut violations = check_journal(&journal);
        violations.extend(check_durable(&journal, durable));
        let invariants = ORACLE_RULES.len() + own.len();
        violations.extend(own.into_iter().filter(|(ok, _)| !ok).map(|(_, v)| v));
        Outcome {
            violations,
            label,
            invariants,
            journal,
        }
    }
}

/// Run one execution of `id` on backend `R`.
pub async fn run<R: Rt>(id: ScenarioId, faults: Faults) -> Outcome {
    let span = tracing::info_span!("task", name = "main");
    tracing::Instrument::instrument(body::<R>(id, faults), span).await
}

async fn body<R: Rt>(id: ScenarioId, faults: Faults) -> Outcome {
    match id {
        ScenarioId::CancelBeforeClaim => cancel::cancel_before_claim::<R>(faults).await,
        ScenarioId::IdleCancelThenPrompt => idle::idle_cancel_then_prompt::<R>(faults).await,
        ScenarioId::CancelMidTurn => cancel::cancel_mid_turn::<R>(faults).await,
        ScenarioId::ObserverQueuesDuringCancel => {
            cancel::observer_queues_during_cancel::<R>(faults).await
        }
        ScenarioId::WhenIdleWaiters => idle::when_idle_waiters::<R>(faults).await,
    }
}
