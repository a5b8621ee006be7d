//! Named scenarios: each is one async body generic over the backend [`Rt`],
//! run unchanged by every checker, and checked after every execution by the
//! rule oracles (`crate::oracle`) plus its own named invariants.

pub mod acp;
pub mod cancel;
pub mod crash;
pub mod dispose;
pub mod dispose_during_load;
pub mod dropped_create;
pub mod dropped_dispose;
pub mod dropped_unload;
pub mod fate;
mod goals;
pub mod held;
pub mod hung_step;
pub mod identity;
pub mod idle;
pub mod owner_drain;
pub mod rig;
mod scenario;
pub mod shell;
pub mod storage_error;

use crate::faults::Faults;
use crate::journal::Record;
use crate::oracle::{check_durable, check_journal, RuleId, Violation, ORACLE_RULES};
use crate::rt::{Rt, Wait};
use crate::session_log::Entry;
use crate::store::durable::Durable;
use std::any::Any;
use std::future::Future;
use std::sync::Arc;

pub use goals::Goal;
pub use scenario::{Bodies, BodyFn, Bounds, Closure, Ctx, Granularity, Scenario, Tasks};

/// How many racers the two scalable scenarios run: the disposers of
/// `concurrent-dispose` and the creators of `same-id-create-race`. It is 3
/// in every check, test and replay line; only `bench`'s growth table
/// changes it (and hands it to its loom workers in their job).
static WIDTH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(3);

/// Sets the racers of the scalable scenarios (2 to 5; others are clamped).
pub fn set_width(n: usize) {
    WIDTH.store(n.clamp(2, 5), std::sync::atomic::Ordering::Relaxed);
}

/// The racers of the scalable scenarios (see [`set_width`]).
pub fn width() -> usize {
    WIDTH.load(std::sync::atomic::Ordering::Relaxed)
}

/// Panic messages that scenarios raise on purpose (a panicking observer,
/// C9); the checkers keep them out of the output.
pub const EXPECTED_PANICS: [&str; 2] = [OBSERVER_PANIC, rig::LISTENER_PANIC];

/// The rule a deadlock breaks, from the waits still parked in it (see
/// [`Wait`]): C10, D8 or C7 when one of theirs is parked, else a
/// `progress` failure.
pub fn deadlock_rule(parked: impl IntoIterator<Item = Wait>) -> RuleId {
    deadlock_rule_of(parked.into_iter().filter_map(|w| w.breaks))
}

/// [`deadlock_rule`] from the rules of the waits still parked (what a
/// simulator stall report carries).
pub fn deadlock_rule_of(breaks: impl IntoIterator<Item = crate::rules::Rule>) -> RuleId {
    Wait::deadlock_breaks(breaks).map_or(RuleId::Progress, RuleId::from)
}

/// The message of the deliberately panicking observer.
pub const OBSERVER_PANIC: &str = "observer boom";

/// Every scenario of this build, in `list` order: one line registers one.
pub static ALL: &[&Scenario] = &[
    &cancel::CANCEL_BEFORE_CLAIM,
    &idle::IDLE_CANCEL_THEN_PROMPT,
    &cancel::CANCEL_MID_TURN,
    &cancel::OBSERVER_QUEUES_DURING_CANCEL,
    &idle::WHEN_IDLE_WAITERS,
    &dispose::CONCURRENT_DISPOSE,
    &dispose::DISPOSE_MID_TURN,
    &dispose::OWNER_UNLOAD_VS_HANDLE_DISPOSE,
    &dispose::PROVIDER_UNLOAD,
    &identity::SAME_ID_CREATE_RACE,
    &identity::CREATE_DURING_OWNER_UNLOAD,
    &identity::ID_REUSE_AFTER_DETACH,
    &dispose::DISPOSED_LISTENER_PANICS,
    &acp::DISCONNECT_RACING_NEW,
    &acp::DISCONNECT_DURING_LOAD,
    &acp::DISCONNECT_MID_PROMPT,
    &acp::SESSION_CANCEL_BEFORE_START,
    &acp::DUPLICATE_LOAD,
    &shell::TOOL_BASH_RELOAD,
    &shell::COMPLETION_NOTICE_ROUTING,
    &identity::SAME_ID_VS_TEARDOWN,
    &dispose::CANCEL_THEN_DISPOSE,
    &cancel::CANCEL_DROPS_STEERING,
    &dispose_during_load::DISPOSE_DURING_LOAD,
    &dropped_dispose::DROPPED_DISPOSE,
    &crash::CRASH_MID_TURN,
    &storage_error::STORAGE_ERROR_MID_TURN,
    &hung_step::HUNG_STEP,
    &dropped_create::DROPPED_CREATE,
    &owner_drain::DISPOSE_WITH_OWNED_JOB,
    &dropped_unload::DROPPED_UNLOAD,
    &idle::DROPPED_WHEN_IDLE,
];

/// A prompt of `steps` steps of 10 ms each.
pub(crate) fn spec(text: &str, steps: u32) -> crate::agent::core::PromptSpec {
    crate::agent::core::PromptSpec {
        text: text.into(),
        steps,
        step_ms: 10,
        origin: crate::session_log::Origin::User,
    }
}

/// The result of one execution of a scenario.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Broken rules (empty: pass).
    pub violations: Vec<Violation>,
    /// What happened, in words: the [`Fact`]'s `Display` form (the key of
    /// the outcome's view and of the outcome counts), e.g.
    /// `A:skipped-at-claim`.
    pub label: String,
    /// What happened, typed: the scenario's own fact, read by its goals
    /// through [`Outcome::fact`] (none on outcomes the checkers make up: a
    /// panic, a worker's replayed line).
    pub fact: Option<Arc<dyn Any + Send + Sync>>,
    /// Invariants evaluated.
    pub invariants: usize,
    /// The agent's journal, for traces.
    pub journal: Vec<Record>,
    /// The world journal (registry, store, scopes, tool-bash).
    pub world: Vec<crate::events::LifecycleEvent>,
}

/// What a scenario's body says happened in one execution: a value of the
/// scenario's own type, whose `Display` form is the outcome's label.
pub trait Fact: std::fmt::Display + Any + Send + Sync {}

impl<T: std::fmt::Display + Any + Send + Sync> Fact for T {}

impl Outcome {
    /// The scenario's fact, if it is a `T`.
    pub fn fact<T: Any>(&self) -> Option<&T> {
        self.fact.as_deref()?.downcast_ref()
    }

    /// `fact`'s label and the fact, for an outcome's two fields.
    pub fn said(fact: impl Fact) -> (String, Option<Arc<dyn Any + Send + Sync>>) {
        (fact.to_string(), Some(Arc::new(fact)))
    }

    /// Run the oracles over an agent's history and add scenario checks.
    pub fn checked(
        journal: Vec<Record>,
        durable: &[Entry],
        fact: impl Fact,
        own: Vec<(bool, Violation)>,
    ) -> Outcome {
        let (label, fact) = Outcome::said(fact);
        let mut violations = check_journal(&journal);
        violations.extend(check_durable(&journal, durable));
        let invariants = ORACLE_RULES.len() + own.len();
        violations.extend(own.into_iter().filter(|(ok, _)| !ok).map(|(_, v)| v));
        Outcome {
            violations,
            label,
            fact,
            invariants,
            journal,
            world: Vec::new(),
        }
    }
}

/// Run one execution of `scenario` on backend `R` (sessions on an
/// in-memory disk, bystanders on).
pub fn run<R: Rt>(scenario: &Scenario, faults: Faults) -> impl Future<Output = Outcome> + 'static {
    run_ctx::<R>(scenario, Ctx::new(faults))
}

/// Run one execution of `scenario` on backend `R`, with sessions on
/// `durable` (e.g. the file backend on tokio) when given.
pub fn run_with<R: Rt>(
    scenario: &Scenario,
    faults: Faults,
    durable: Option<Arc<dyn Durable>>,
) -> impl Future<Output = Outcome> + 'static {
    run_ctx::<R>(
        scenario,
        Ctx {
            durable,
            ..Ctx::new(faults)
        },
    )
}

/// Run one execution of `scenario` on backend `R` in `ctx`. The future
/// owns what it needs (the body and the closure of `scenario`), so it
/// outlives the borrow.
pub fn run_ctx<R: Rt>(
    scenario: &Scenario,
    mut ctx: Ctx,
) -> impl Future<Output = Outcome> + 'static {
    const {
        assert!(
            R::CONTEXT,
            "a scenario runs on a backend with a harness context (CheckedTokioRt, not TokioRt)"
        )
    };
    ctx.name = scenario.name;
    ctx.closure = scenario.closure.clone();
    let body = scenario.body.on::<R>();
    async move {
        // This execution's faults (`fault!`) and its count of parked
        // waits, from none; a rig adds its journal.
        crate::context::enter(crate::context::Context::new(ctx.faults));
        let span = tracing::info_span!(parent: None, "task", name = "main");
        tracing::Instrument::instrument(body(ctx), span).await
    }
}
