//! Named scenarios: each is one async body generic over the backend [`Rt`],
//! run unchanged by every checker, and checked after every execution by the
//! rule oracles (`crate::oracle`) plus its own named invariants.

mod acp;
mod cancel;
mod dispose;
mod goals;
mod identity;
mod idle;
pub mod rig;
mod shell;

use crate::faults::{Fault, Faults};
use crate::journal::Record;
use crate::oracle::{check_durable, check_journal, Violation, ORACLE_RULES};
use crate::rt::Rt;
use crate::session_log::Entry;
use crate::store::durable::Durable;
use serde::Serialize;
use std::sync::Arc;

pub use goals::{Goal, Match};

/// How many racers the two scalable scenarios run: the disposers of
/// `concurrent-dispose` and the creators of `same-id-create-race`. It is 3
/// in every check, test and replay line; only `bench`'s growth table
/// changes it (and hands it to its loom workers as [`WIDTH_ENV`]).
static WIDTH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(3);

/// The environment variable that carries [`width`] to a loom worker.
pub const WIDTH_ENV: &str = "LIFECYCLE_SCENARIO_WIDTH";

/// Sets the racers of the scalable scenarios (2 to 4; others are clamped).
pub fn set_width(n: usize) {
    WIDTH.store(n.clamp(2, 4), std::sync::atomic::Ordering::Relaxed);
}

/// The racers of the scalable scenarios (see [`set_width`]).
pub fn width() -> usize {
    WIDTH.load(std::sync::atomic::Ordering::Relaxed)
}

/// Panic messages that scenarios raise on purpose (a panicking observer,
/// C9); the checkers keep them out of the output.
pub const EXPECTED_PANICS: [&str; 2] = [OBSERVER_PANIC, rig::LISTENER_PANIC];

/// The rule a deadlock breaks, from the waits still parked in it: a
/// `when_idle` that never resolves breaks C7; any other wait that never
/// ends is a `progress` failure.
pub fn deadlock_rule(message: &str) -> &'static str {
    if message.contains("when_idle") {
        "C7"
    } else {
        "progress"
    }
}

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
    /// `disconnect-racing-new`.
    DisconnectRacingNew,
    /// `disconnect-during-load`.
    DisconnectDuringLoad,
    /// `disconnect-mid-prompt`.
    DisconnectMidPrompt,
    /// `session-cancel-before-start`.
    SessionCancelBeforeStart,
    /// `duplicate-load`.
    DuplicateLoad,
    /// `tool-bash-reload`.
    ToolBashReload,
    /// `completion-notice-routing`.
    CompletionNoticeRouting,
    /// `same-id-vs-teardown`.
    SameIdVsTeardown,
    /// `cancel-then-dispose`.
    CancelThenDispose,
    /// `cancel-drops-steering`.
    CancelDropsSteering,
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
    /// Tasks it runs, bystanders included (see `Rt::BYSTANDERS`).
    pub tasks: usize,
    /// Tasks of bystander agents, which loom runs without.
    pub bystanders: usize,
    /// The highest loom preemption bound whose exhaustive run stays within
    /// the PR gate (about 30 s here).
    pub loom_cap: usize,
    /// The simulator's exhaustive search is preemption-bounded here in the
    /// PR tier (`None`: unbounded, the whole space).
    pub dfs_bound: Option<u32>,
    /// At most this many loom executions (`None`: until exhausted); a
    /// capped loom row says `sampled`.
    pub loom_max: Option<usize>,
}

impl ScenarioId {
    /// All scenarios, in `list` order.
    pub const ALL: [ScenarioId; 23] = [
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
        ScenarioId::DisconnectRacingNew,
        ScenarioId::DisconnectDuringLoad,
        ScenarioId::DisconnectMidPrompt,
        ScenarioId::SessionCancelBeforeStart,
        ScenarioId::DuplicateLoad,
        ScenarioId::ToolBashReload,
        ScenarioId::CompletionNoticeRouting,
        ScenarioId::SameIdVsTeardown,
        ScenarioId::CancelThenDispose,
        ScenarioId::CancelDropsSteering,
    ];

    /// Its description.
    pub fn info(self) -> ScenarioInfo {
        let (name, rules, about, tasks): (_, &'static [&'static str], _, _) = match self {
            ScenarioId::CancelBeforeClaim => (
                "cancel-before-claim",
                &["C1", "C2", "C4", "C5", "C7"],
                "send A; cancel(user) races the loop's wake and claim; then send B; a bystander agent runs meanwhile",
                3,
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
                3,
            ),
            ScenarioId::ConcurrentDispose => (
                "concurrent-dispose",
                &["D1", "D2"],
                "two dispose() calls and the owner scope's unload while a flush is open; a bystander agent runs meanwhile",
                4,
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
            ScenarioId::CancelThenDispose => (
                "cancel-then-dispose",
                &["C3", "D3"],
                "a running turn is cancelled, then its agent disposed, before or after the turn's step boundary",
                2,
            ),
            ScenarioId::CancelDropsSteering => (
                "cancel-drops-steering",
                &["C5", "C8"],
                "a turn with steering queued is cancelled; then a new prompt runs without that steering",
                2,
            ),
            ScenarioId::SameIdVsTeardown => (
                "same-id-vs-teardown",
                &["R1", "R2"],
                "a same-id create retrying on `already exists` races every step of a teardown; then a repeated detach",
                2,
            ),
            ScenarioId::DisposedListenerPanics => (
                "disposed-listener-panics",
                &["D4", "D5"],
                "agent/disposed and session/disposed listeners panic",
                3,
            ),
            ScenarioId::DisconnectRacingNew => (
                "disconnect-racing-new",
                &["A1", "A6", "A7"],
                "the client disconnects while session/new awaits creation; then disconnect races unload",
                4,
            ),
            ScenarioId::DisconnectDuringLoad => (
                "disconnect-during-load",
                &["A1"],
                "a session/load whose resume finishes after the disconnect",
                4,
            ),
            ScenarioId::DisconnectMidPrompt => (
                "disconnect-mid-prompt",
                &["A4", "A8", "D3"],
                "a disconnect while a prompt runs; a second prompt meanwhile",
                3,
            ),
            ScenarioId::SessionCancelBeforeStart => (
                "session-cancel-before-start",
                &["A2", "A3"],
                "session/cancel races a queued prompt; a later prompt runs",
                3,
            ),
            ScenarioId::DuplicateLoad => (
                "duplicate-load",
                &["A5"],
                "two concurrent loads of one id, and a load of a live id",
                5,
            ),
            ScenarioId::ToolBashReload => (
                "tool-bash-reload",
                &["S1", "S2", "S3", "S4", "S5"],
                "tool-bash reloads while two sessions race bash_output/bash_kill on each other's jobs",
                8,
            ),
            ScenarioId::CompletionNoticeRouting => (
                "completion-notice-routing",
                &["S6"],
                "owner disposed, id reused, a completion in the reload gap",
                8,
            ),
        };
        let loom_cap = match self {
            // 602,437 executions in 59 s at bound 3.
            ScenarioId::CancelDropsSteering => 2,
            // 1,417,716 executions in 294 s at bound 3.
            ScenarioId::SameIdVsTeardown => 1,
            // 280,631 executions in 23 s at bound 1; bound 2 ran >13 min.
            ScenarioId::DisconnectMidPrompt => 1,
            // 64,578 executions in 5.4 s at bound 1; bound 2 ran >4 min.
            ScenarioId::SessionCancelBeforeStart => 1,
            // 627,308 executions in 98 s at bound 2 once loom interleaves
            // joined futures.
            ScenarioId::ConcurrentDispose => 1,
            // 3 threads since the late waiter waits in its own task: bound 2
            // ran more than 7 minutes once loom interleaves joined futures.
            ScenarioId::WhenIdleWaiters => 1,
            _ => 3,
        };
        // At lock granularity with source-DPOR (measured on this machine,
        // 2 cores; a switch after `Pending` is no preemption): these
        // exhaust unbounded in under a second (dispose-mid-turn 6,400
        // schedules, create-during-owner-unload 4,938, disconnect-racing-new
        // 113, duplicate-load 6,368). The others do not finish 300,000
        // unbounded schedules or take 10-16 s, and are exhausted at bound 3
        // (at most 70,310 schedules, 3.6 s: when-idle-waiters; provider-unload
        // 51,984, 7.9 s), as loom and CHESS bound theirs.
        let dfs_bound = match self {
            ScenarioId::DisposeMidTurn
            | ScenarioId::CreateDuringOwnerUnload
            | ScenarioId::DisconnectRacingNew
            | ScenarioId::DuplicateLoad => None,
            // 25,472 schedules at bound 2 (2.8 s); bound 3 passed 100,000.
            ScenarioId::ConcurrentDispose => Some(2),
            // 8 tasks: bound 2 does not finish 100,000 (most sleep-blocked).
            ScenarioId::ToolBashReload => Some(1),
            // 5,040 schedules at bound 2 (0.7 s); 58,042 at bound 3 (8.8 s).
            ScenarioId::CompletionNoticeRouting => Some(2),
            _ => Some(3),
        };
        // 3 threads: bound 1 did not finish in 4 minutes.
        let loom_max = match self {
            ScenarioId::WhenIdleWaiters => Some(200_000),
            _ => None,
        };
        let bystanders = match self {
            ScenarioId::CancelBeforeClaim | ScenarioId::ConcurrentDispose => 1,
            _ => 0,
        };
        ScenarioInfo {
            id: self,
            name,
            rules,
            about,
            tasks,
            bystanders,
            loom_cap,
            dfs_bound,
            loom_max,
        }
    }

    /// Look a scenario up by name.
    pub fn parse(name: &str) -> Option<ScenarioId> {
        ScenarioId::ALL.into_iter().find(|s| s.info().name == name)
    }

    /// A measured gap in differential coverage: views other checkers reach
    /// that `sim-dfs` does not at this scenario's PR bound. `check` reports
    /// such misses instead of failing; every other scenario must be covered.
    pub fn coverage_gap(self) -> Option<&'static str> {
        match self {
            ScenarioId::CancelBeforeClaim => Some(
                "sim-dfs at bound 3 misses 15 views (10 reached by sim seeds, 4 by loom, 1 by shuttle-random) (check --tier pr, this machine)",
            ),
            ScenarioId::CancelMidTurn => Some(
                "sim-dfs at bound 3 misses 359 views (216 sim, 106 loom, 35 shuttle-random, 2 shuttle-pct): how many steps and steering inputs land before each cancel multiplies the views (check --tier pr, this machine)",
            ),
            ScenarioId::ObserverQueuesDuringCancel => Some(
                "sim-dfs at bound 3 misses 13 views (11 sim, 2 shuttle-random) (check --tier pr, this machine)",
            ),
            ScenarioId::WhenIdleWaiters => Some(
                "sim-dfs at bound 3 misses 95 views (82 sim, 12 shuttle-random, 1 shuttle-pct) (check --tier pr, this machine)",
            ),
            ScenarioId::ConcurrentDispose => Some(
                "sim-dfs at bound 2 misses 341 views of the other checkers (most from sim seeds); bound 3 does not finish 100,000 schedules (check --tier pr, this machine)",
            ),
            ScenarioId::OwnerUnloadVsHandleDispose => Some(
                "sim-dfs at bound 3 misses 95 views of the other checkers (most from sim seeds) (check --tier pr, this machine)",
            ),
            ScenarioId::ProviderUnload => Some(
                "sim-dfs at bound 3 misses 6 views, all reached by sim seeds (check --tier pr, this machine)",
            ),
            ScenarioId::SameIdCreateRace => Some(
                "sim-dfs at bound 3 misses 47 views of the other checkers (most from sim seeds) (check --tier pr, this machine)",
            ),
            ScenarioId::IdReuseAfterDetach => Some(
                "sim-dfs at bound 3 misses 469 views of the other checkers (most from sim seeds) (check --tier pr, this machine)",
            ),
            ScenarioId::SessionCancelBeforeStart => Some(
                "sim-dfs at bound 3 misses 5 views of the other checkers (check --tier pr, this machine)",
            ),
            ScenarioId::ToolBashReload => Some(
                "sim-dfs at bound 1 misses 1,183 views of the other checkers (most from sim seeds); bound 2 does not finish 100,000 schedules (check --tier pr, this machine)",
            ),
            ScenarioId::CompletionNoticeRouting => Some(
                "sim-dfs at bound 2 misses 104 views of the other checkers (most from sim seeds) (check --tier pr, this machine)",
            ),
            ScenarioId::CancelDropsSteering => Some(
                "sim-dfs at bound 3 misses 79 views of sim, shuttle and loom at bound 3; at bound 4 (288,988 schedules, 12.5 s) still 29 (check, this machine)",
            ),
            ScenarioId::SameIdVsTeardown => Some(
                "sim-dfs at bound 3 misses 2,576 views of the other checkers (check --tier pr), and even at bound 6 (101,630 schedules, 8,130 views, 8.3 s) 2,272 of those reached by sim, shuttle and tokio (check --dfs-preemptions 6, this machine)",
            ),
            _ => None,
        }
    }

    /// Ids and scope names of the scenario's bystander agents: their world
    /// events are left out of the contract view (loom runs without them).
    pub fn bystander_names(self) -> &'static [&'static str] {
        match self {
            ScenarioId::ConcurrentDispose => &["b", "keeper"],
            _ => &[],
        }
    }

    /// The faults this scenario is meant to kill (used by `mutants` to pick
    /// where to look first; every scenario still checks every rule).
    pub fn targets(self) -> &'static [Fault] {
        match self {
            ScenarioId::CancelBeforeClaim => &[Fault::M3, Fault::M5],
            ScenarioId::IdleCancelThenPrompt => &[Fault::M4],
            ScenarioId::CancelMidTurn => &[Fault::M14],
            ScenarioId::ObserverQueuesDuringCancel => &[Fault::M11],
            ScenarioId::WhenIdleWaiters => &[Fault::M12, Fault::M14],
            ScenarioId::ConcurrentDispose => &[Fault::M6],
            ScenarioId::DisposeMidTurn => &[Fault::M1],
            ScenarioId::OwnerUnloadVsHandleDispose => &[Fault::M1, Fault::M6],
            ScenarioId::ProviderUnload => &[],
            ScenarioId::SameIdCreateRace => &[Fault::M9],
            ScenarioId::CreateDuringOwnerUnload => &[Fault::M24],
            ScenarioId::IdReuseAfterDetach => &[],
            ScenarioId::DisposedListenerPanics => &[Fault::M10],
            ScenarioId::DisconnectRacingNew => &[Fault::M7],
            ScenarioId::DisconnectDuringLoad => &[Fault::M8],
            ScenarioId::DisconnectMidPrompt => &[],
            ScenarioId::SessionCancelBeforeStart => &[],
            ScenarioId::DuplicateLoad => &[Fault::M13],
            ScenarioId::ToolBashReload => &[Fault::M2, Fault::M21],
            ScenarioId::CompletionNoticeRouting => &[Fault::M21],
            ScenarioId::SameIdVsTeardown => &[Fault::M22],
            ScenarioId::CancelThenDispose => &[Fault::M23],
            ScenarioId::CancelDropsSteering => &[],
        }
    }
}

/// A prompt of `steps` steps of 10 ms each.
pub(crate) fn spec(text: &str, steps: u32) -> crate::agent::core::PromptSpec {
    crate::agent::core::PromptSpec {
        text: text.into(),
        steps,
        step_ms: 10,
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
    /// The world journal (registry, store, scopes, tool-bash).
    pub world: Vec<crate::world::WorldEvent>,
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
    if R::COUNTS_PARKED {
        crate::rt::reset_parked_waits();
    }
    let span = tracing::info_span!(parent: None, "task", name = "main");
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
        ScenarioId::DisconnectRacingNew => acp::disconnect_racing_new::<R>(faults, durable).await,
        ScenarioId::DisconnectDuringLoad => acp::disconnect_during_load::<R>(faults, durable).await,
        ScenarioId::DisconnectMidPrompt => acp::disconnect_mid_prompt::<R>(faults, durable).await,
        ScenarioId::SessionCancelBeforeStart => {
            acp::session_cancel_before_start::<R>(faults, durable).await
        }
        ScenarioId::DuplicateLoad => acp::duplicate_load::<R>(faults, durable).await,
        ScenarioId::ToolBashReload => shell::tool_bash_reload::<R>(faults, durable).await,
        ScenarioId::CompletionNoticeRouting => {
            shell::completion_notice_routing::<R>(faults, durable).await
        }
        ScenarioId::SameIdVsTeardown => identity::same_id_vs_teardown::<R>(faults, durable).await,
        ScenarioId::CancelThenDispose => dispose::cancel_then_dispose::<R>(faults, durable).await,
        ScenarioId::CancelDropsSteering => cancel::cancel_drops_steering::<R>(faults).await,
    }
}
