//! The agent's transition journal: every decision of the core, in the order
//! the decisions were taken (recorded under the same lock as the transition,
//! so the order is the linearization order on every backend).
//!
//! The journal is what the rule oracles read (`crate::oracle`): a history in
//! the Jepsen sense. It is also what `replay` prints.

use serde::Serialize;
use std::fmt;

/// Who asked for a cancel (SPEC C1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cause {
    /// A user (ACP `session/cancel`). The default.
    User,
    /// A parent agent.
    Parent,
}

/// Why a turn ended (`turn/end {reason}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// Every step ran.
    Completed,
    /// Its token was requested by a cancel (C3).
    Aborted,
    /// Disposal stopped it (C3: overrides a cancel).
    Disposed,
    /// Its session log could not be written (D10).
    Failed,
    /// The process died during the turn; written by the next load (D9).
    Interrupted,
}

/// Identifies one accepted prompt (one turn).
pub type PromptId = u64;
/// Identifies one accepted steering input.
pub type SteerId = u64;
/// Identifies one `cancel` call.
pub type CallId = u64;

/// One transition of an agent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// `send` (or `steer` while not running) queued a prompt.
    Accepted {
        /// The prompt.
        prompt: PromptId,
    },
    /// `steer` queued an input for the running turn.
    SteerAccepted {
        /// The input.
        input: SteerId,
    },
    /// `send`/`steer` refused: the agent is disposed.
    Rejected,
    /// `cancel(cause)` entered (before anything else it does).
    CancelCalled {
        /// The call.
        call: CallId,
        /// Its cause.
        cause: Cause,
    },
    /// `agent/cancel-requested {cause}` is about to be delivered to observers.
    CancelRequested {
        /// The call.
        call: CallId,
        /// Its cause.
        cause: Cause,
    },
    /// The call cleared both FIFOs (C2), requested the turn token (C3) and
    /// possibly set the pre-run marker (C4).
    Cleared {
        /// The call.
        call: CallId,
        /// Prompts removed from `queued`.
        prompts: Vec<PromptId>,
        /// Inputs removed from `steering`.
        steering: Vec<SteerId>,
        /// Whether the pre-run marker was set.
        marker_set: bool,
        /// Whether an active turn's token was requested.
        token_requested: bool,
    },
    /// `cancel` returned.
    CancelReturned {
        /// The call.
        call: CallId,
    },
    /// The loop woke and took a prompt in hand (not yet claimed).
    Woke {
        /// The prompt.
        prompt: PromptId,
    },
    /// The loop consumed the pre-run marker and dropped the prompt in hand.
    Skipped {
        /// The prompt.
        prompt: PromptId,
    },
    /// `turn/start` (token installed, status `running`).
    TurnStart {
        /// The prompt the turn runs.
        prompt: PromptId,
    },
    /// A step boundary absorbed a steering input.
    SteeringAbsorbed {
        /// The turn's prompt.
        prompt: PromptId,
        /// The input.
        input: SteerId,
    },
    /// A step finished.
    Step {
        /// The turn's prompt.
        prompt: PromptId,
        /// Step number, from 0.
        step: u32,
    },
    /// A completed turn left a steering input unabsorbed: it was queued as
    /// a prompt of its own (never lost).
    SteeringRequeued {
        /// The input.
        input: SteerId,
        /// The prompt it became.
        prompt: PromptId,
    },
    /// `turn/end {reason}` (token cleared just before).
    TurnEnd {
        /// The turn's prompt.
        prompt: PromptId,
        /// Why it ended.
        reason: EndReason,
        /// The cause that stopped it, if a cancel did (first cause wins).
        cause: Option<Cause>,
    },
    /// The turn's closing flush completed; status back to `idle`.
    TurnClosed {
        /// The turn's prompt.
        prompt: PromptId,
    },
    /// A write or sync of the turn's session log failed (D10): the turn
    /// ends `{failed}` (or, if its `turn/end` was already decided, the
    /// closing flush lost it) and the session refuses further appends.
    StorageFailed {
        /// The turn's prompt.
        prompt: PromptId,
        /// The error.
        error: String,
    },
    /// A `when_idle` waiter was registered.
    IdleWaiting {
        /// The waiter.
        waiter: u64,
    },
    /// A `when_idle` waiter resolved.
    IdleResolved {
        /// The waiter.
        waiter: u64,
        /// `true` when it resolved with `done` (after disposal).
        done: bool,
    },
    /// An observer panicked; the panic was contained (C9).
    ObserverPanicked {
        /// What it was observing.
        on: &'static str,
        /// The panic message.
        message: String,
    },
    /// Disposal began: status `disposed`, token requested, inbox cleared.
    DisposeBegan {
        /// Prompts removed from `queued` (and the one in hand).
        prompts: Vec<PromptId>,
    },
    /// The loop exited.
    LoopExited,
}

/// A journal entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Record {
    /// Position in the journal, from 0.
    pub seq: u64,
    /// Time of the transition (virtual on the simulator).
    pub at_ms: u64,
    /// The transition.
    pub event: Event,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ev = serde_json::to_string(&self.event).unwrap_or_default();
        write!(f, "#{:<3} t={:>5}ms {}", self.seq, self.at_ms, ev)
    }
}

/// An append-only list of [`Record`]s.
#[derive(Debug, Default, Clone)]
pub struct Journal {
    records: Vec<Record>,
}

impl Journal {
    /// Append `event` at time `at_ms`.
    pub fn push(&mut self, at_ms: u64, event: Event) {
        let seq = self.records.len() as u64;
        if tracing::enabled!(target: "journal", tracing::Level::DEBUG) {
            let json = serde_json::to_string(&event).unwrap_or_default();
            tracing::debug!(target: "journal", seq, at_ms, "{json}");
        }
        self.records.push(Record { seq, at_ms, event });
    }

    /// All records, in order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }
}
