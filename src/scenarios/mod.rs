//! Named scenarios: each is one async body generic over the backend [`Rt`],
//! run unchanged by every checker, and checked after every execution by the
//! rule oracles (`crate::oracle`) plus its own named invariants.

mod cancel;
mod dispose;
mod identity;
mod idle;
pub mod rig;

use crate::faults::{Fault, Faults};
use crate::journal::Record;
use crate::oracle::{check_durable, check_journal, Violation, ORACLE_RULES};
use crate::rt::Rt;
use crate::session_log::Entry;
use crate::store::durable::Durable;
use serde::Serialize;
use std::sync::Arc;

/// Panic messages that scenarios raise on purpose (a panicking observer,
/// C9); the checkers keep them out of the output.
pub const EXPECTED_PANICS: [&str; 2] = [OBSERVER_PANIC, rig::LISTENER_PANIC];

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
    /// `concurrent-dispose`.
    ConcurrentDispose,
    /// `dispose-mid-turn`.
    DisposeMidTurn,
    /// `owner-unload-vs-handle-dispose`.
    OwnerUnloadVsHandleDispose,
    /// `provider-unload`.
    ProviderUnload,
    /// `same-id-create-race`.
    SameIdCreateRace,
    /// `create-during-owner-unload`.
    CreateDuringOwnerUnload,
    /// `id-reuse-after-detach`.
    IdReuseAfterDetach,
    /// `disposed-listener-panics`.
    DisposedListenerPanics,
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
    pub const ALL: [ScenarioId; 13] = [
        ScenarioId::CancelBeforeClaim,
        ScenarioId::IdleCancelThenPrompt,
        ScenarioId::CancelMidTurn,
        ScenarioId::ObserverQueuesDuringCancel,
        ScenarioId::WhenIdleWaiters,
        ScenarioId::ConcurrentDispose,
        ScenarioId::DisposeMidTurn,
        ScenarioId::OwnerUnloadVsHandleDispose,
        ScenarioId::ProviderUnload,
        ScenarioId::SameIdCreateRace,
        ScenarioId::CreateDuringOwnerUnload,
        ScenarioId::IdReuseAfterDetach,
        ScenarioId::DisposedListenerPanics,
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
            ScenarioId::ConcurrentDispose => (
                "concurrent-dispose",
                &["D1", "D2"],
                "two dispose() calls and the owner scope's unload while a flush is open",
                3,
            ),
            ScenarioId::DisposeMidTurn => (
                "dispose-mid-turn",
                &["D2", "D3", "D6"],
                "dispose while a turn awaits a step; reload the durable log",
                2,
            ),
            ScenarioId::OwnerUnloadVsHandleDispose => (
                "owner-unload-vs-handle-dispose",
                &["D1", "D3"],
                "the handle's dispose races the owner scope's unload",
                3,
            ),
            ScenarioId::ProviderUnload => (
                "provider-unload",
                &["D1", "D5", "D7"],
                "the provider unloads with config-created and handle-owned agents",
                4,
            ),
            ScenarioId::SameIdCreateRace => (
                "same-id-create-race",
                &["R1"],
                "three concurrent creates with one id",
                3,
            ),
            ScenarioId::CreateDuringOwnerUnload => (
                "create-during-owner-unload",
                &["R3"],
                "the owner unloads while a creation awaits setup",
                3,
            ),
            ScenarioId::IdReuseAfterDetach => (
                "id-reuse-after-detach",
                &["R2"],
                "a new agent takes the id of one being disposed; the stale detach must not remove it",
                4,
            ),
            ScenarioId::DisposedListenerPanics => (
                "disposed-listener-panics",
                &["D4", "D5"],
                "agent/disposed and session/disposed listeners panic",
                3,
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
            ScenarioId::ConcurrentDispose => &[Fault::M6],
            ScenarioId::DisposeMidTurn => &[Fault::M1],
            ScenarioId::OwnerUnloadVsHandleDispose => &[Fault::M1, Fault::M6],
            ScenarioId::ProviderUnload => &[],
            ScenarioId::SameIdCreateRace => &[Fault::M9],
            ScenarioId::CreateDuringOwnerUnload => &[],
            ScenarioId::IdReuseAfterDetach => &[],
            ScenarioId::DisposedListenerPanics => &[Fault::M10],
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
    /// The world journal (registry, store, scopes), rendered, for traces.
    pub world: Vec<String>,
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
            world: Vec::new(),
        }
    }
}

/// Run one execution of `id` on backend `R` (sessions on an in-memory disk).
pub async fn run<R: Rt>(id: ScenarioId, faults: Faults) -> Outcome {
    run_with::<R>(id, faults, None).await
}

/// Run one execution of `id` on backend `R`, with sessions on `durable`
/// (e.g. the file backend on tokio) when given.
pub async fn run_with<R: Rt>(
    id: ScenarioId,
    faults: Faults,
    durable: Option<Arc<dyn Durable>>,
) -> Outcome {
    let span = tracing::info_span!("task", name = "main");
    tracing::Instrument::instrument(body::<R>(id, faults, durable), span).await
}

async fn body<R: Rt>(id: ScenarioId, faults: Faults, durable: Option<Arc<dyn Durable>>) -> Outcome {
    match id {
        ScenarioId::CancelBeforeClaim => cancel::cancel_before_claim::<R>(faults).await,
        ScenarioId::IdleCancelThenPrompt => idle::idle_cancel_then_prompt::<R>(faults).await,
        ScenarioId::CancelMidTurn => cancel::cancel_mid_turn::<R>(faults).await,
        ScenarioId::ObserverQueuesDuringCancel => {
            cancel::observer_queues_during_cancel::<R>(faults).await
        }
        ScenarioId::WhenIdleWaiters => idle::when_idle_waiters::<R>(faults).await,
        ScenarioId::ConcurrentDispose => dispose::concurrent_dispose::<R>(faults, durable).await,
        ScenarioId::DisposeMidTurn => dispose::dispose_mid_turn::<R>(faults, durable).await,
        ScenarioId::OwnerUnloadVsHandleDispose => {
            dispose::owner_unload_vs_handle_dispose::<R>(faults, durable).await
        }
        ScenarioId::ProviderUnload => dispose::provider_unload::<R>(faults, durable).await,
        ScenarioId::SameIdCreateRace => identity::same_id_create_race::<R>(faults, durable).await,
        ScenarioId::CreateDuringOwnerUnload => {
            identity::create_during_owner_unload::<R>(faults, durable).await
        }
        ScenarioId::IdReuseAfterDetach => {
            identity::id_reuse_after_detach::<R>(faults, durable).await
        }
        ScenarioId::DisposedListenerPanics => {
            dispose::disposed_listener_panics::<R>(faults, durable).await
        }
    }
}
