//! The world journal: lifecycle events of scopes, the registry, the session
//! store and the provider, in one shared, ordered list. Each event is
//! recorded by the task that caused it, under the journal's lock; events of
//! one task are in program order, so orders such as "every `dispose` caller
//! returned after its teardown finished" (D1) can be read off it.

use crate::rt::{Monitor, Rt};
use serde::Serialize;
use std::sync::Arc;

/// One lifecycle event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum WorldEvent {
    /// `create`/`resume` began (attempt numbers are per provider).
    CreateBegan {
        /// The id asked for.
        id: String,
        /// The attempt.
        attempt: u64,
    },
    /// Setup finished; whether the owner scope was still active (R3).
    CreateChecked {
        /// The id.
        id: String,
        /// The attempt.
        attempt: u64,
        /// Whether the owner could still take the agent.
        owner_active: bool,
    },
    /// The attempt failed and rolled back its private state.
    CreateFailed {
        /// The id.
        id: String,
        /// The attempt.
        attempt: u64,
        /// The error text.
        reason: String,
    },
    /// `SessionStore::enter` published a session.
    SessionEntered {
        /// The id.
        id: String,
        /// The session's serial (unique per store).
        serial: u64,
        /// Live sessions with this id right after entering (R1: 1).
        live_with_id: usize,
    },
    /// The registry published an agent.
    AgentRegistered {
        /// The id.
        id: String,
        /// The serial of its session.
        serial: u64,
        /// Registered agents with this id right after (R1: 1).
        registered_with_id: usize,
    },
    /// `dispose()` was called (by a handle, a scope unload, a provider unload).
    DisposeCalled {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
        /// Which caller (`handle`, `owner-unload`, `provider-unload`, ...).
        by: String,
    },
    /// A `dispose()` call returned.
    DisposeReturned {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
        /// Which caller.
        by: String,
    },
    /// The teardown chain started.
    TeardownBegan {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
    },
    /// One step of the teardown finished (D2: 1 stop loop, 2 await loop and
    /// flushes, 3 detach agent, 4 detach session, 5 unwind scope).
    TeardownStep {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
        /// The step (1–5).
        step: u8,
        /// `Err` text if the step failed (contained, D4).
        error: Option<String>,
    },
    /// The owner drain finished (S7): the agent's background jobs were
    /// killed, settled and forgotten. Between D2's steps 2 and 3.
    TeardownDrain {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
    },
    /// The teardown stopped before its last step (never, unless a fault).
    TeardownAborted {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
        /// The step that stopped it.
        at_step: u8,
    },
    /// The teardown chain finished.
    TeardownDone {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
    },
    /// An append reached a session whose publication hooks were gone: lost.
    AppendDropped {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
        /// What was lost.
        entry: String,
    },
    /// A write or sync of a session's durable log failed; the session
    /// refuses appends from now on (D10).
    StorageFailed {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
        /// The error.
        error: String,
    },
    /// A listener panicked; contained.
    ListenerPanicked {
        /// `agent/disposed` or `session/disposed`.
        on: String,
        /// The message.
        message: String,
    },
    /// tool-bash handled a job's completion notice (S6).
    Notice {
        /// The job.
        job: String,
        /// Its owner token.
        owner: Option<String>,
        /// The agent it went into (`None`: dropped).
        delivered_to: Option<String>,
    },
    /// A scope began to unload.
    ScopeUnloading {
        /// The scope's name.
        scope: String,
    },
    /// A scope finished unloading.
    ScopeUnloaded {
        /// The scope's name.
        scope: String,
    },
}

/// The shared, ordered world journal.
pub struct World<R: Rt> {
    events: Monitor<R, Vec<WorldEvent>>,
}

impl<R: Rt> World<R> {
    /// An empty journal that keeps every event (the harness's oracles read
    /// whole histories).
    pub fn new() -> Arc<Self> {
        Arc::new(World {
            events: Monitor::new(Vec::new()),
        })
    }

    /// Record `event`.
    pub fn record(&self, event: WorldEvent) {
        if tracing::enabled!(target: "world", tracing::Level::DEBUG) {
            let json = serde_json::to_string(&event).unwrap_or_default();
            tracing::debug!(target: "world", "{json}");
        }
        self.events.update(|e| e.push(event));
    }

    /// A copy of every event so far.
    pub fn events(&self) -> Vec<WorldEvent> {
        self.events.read(|e| e.clone())
    }

    /// Wait until some event satisfies `pred` for each of `keys` (e.g. a
    /// completion notice per job): a wake-up, not a polling loop.
    pub async fn until_all(
        &self,
        label: &'static str,
        keys: &[&str],
        pred: impl Fn(&WorldEvent, &str) -> bool,
    ) {
        self.events
            .wait_until(label, |events| {
                keys.iter()
                    .all(|k| events.iter().any(|e| pred(e, k)))
                    .then_some(())
            })
            .await;
    }
}
