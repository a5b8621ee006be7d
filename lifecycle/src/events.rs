//! What the lifecycle tells the outside world: one [`LifecycleEvent`] per
//! thing that happened in a scope, the registry, the session store, the
//! provider, tool-bash or the ACP bridge. Production only *emits*; who
//! listens is decided by the harness: the execution's context
//! ([`crate::rt::context`]) hands each event to the world journal its
//! oracles read. The events carry what happened, never a verdict: the
//! oracles recompute the rules from them.
//!
//! In production nobody listens: no context is entered, so `observe`
//! builds no event and `fault!` is false. The journal and the oracles are
//! the harness crate's, which the server does not link.

use serde::Serialize;

/// One lifecycle event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum LifecycleEvent {
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
    },
    /// `SessionStore::retire` freed the session's id: from here on the
    /// session is no longer live (it still takes its closing appends).
    /// Journaled inside the store's lock, so it precedes any entry that
    /// reuses the id.
    SessionRetired {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
    },
    /// The registry published an agent.
    AgentRegistered {
        /// The id.
        id: String,
        /// The serial of its session.
        serial: u64,
    },
    /// The registry removed the entry `(id, serial)` (journaled inside
    /// its lock, once per entry removed).
    AgentDetached {
        /// The id.
        id: String,
        /// The serial.
        serial: u64,
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
