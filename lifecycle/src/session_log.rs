//! The seam the agent loop writes its session to ([`SessionSink`]), and a
//! small standalone implementation ([`SessionLog`]) for agents that live
//! outside a `SessionStore`: turns append to it, and a flush makes what was
//! appended durable.
//!
//! States of one entry: `appended` → (flush) → `durable`. A flush awaits (it
//! is an I/O point and a scheduling point).

use crate::journal::{EndReason, PromptId, SteerId};
use crate::rt::{BoxFuture, Mutex, Rt};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A write, sync or truncate of the session's durable log failed, or the
/// session refuses appends after such a failure (D10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageError(pub String);

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session storage failed: {}", self.0)
    }
}

impl std::error::Error for StorageError {}

/// Where an agent's turns go: appended, then flushed.
pub trait SessionSink: Send + Sync + 'static {
    /// Append an entry (not yet durable). Refused after a storage failure
    /// (D10).
    fn append(&self, entry: Entry) -> Result<(), StorageError>;
    /// Make every appended entry durable; an I/O failure is returned (D10).
    fn flush(self: Arc<Self>) -> BoxFuture<Result<(), StorageError>>;
    /// The durable entries of this session.
    fn durable(&self) -> Vec<Entry>;
}

/// One entry of a session log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Entry {
    /// `turn/start`.
    TurnStart {
        /// The turn's prompt.
        prompt: PromptId,
    },
    /// `user/message`.
    UserMessage {
        /// The prompt.
        prompt: PromptId,
        /// Its text.
        text: String,
        /// Who asked for the turn: the user, or a background job's
        /// completion (A11: a notice is never replayed as user text).
        #[serde(default, skip_serializing_if = "Origin::is_user")]
        origin: Origin,
    },
    /// A steering input absorbed by a turn.
    Steering {
        /// The turn's prompt.
        prompt: PromptId,
        /// The input.
        input: SteerId,
        /// Its text.
        text: String,
    },
    /// A step's output.
    Step {
        /// The turn's prompt.
        prompt: PromptId,
        /// Step number.
        step: u32,
        /// What the step produced (a tool's output), if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// What the step did with a background job, as a typed record
        /// (A11: replayed as `tool_call` / `tool_call_update`, and the only
        /// log content that job numbering reads).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<ToolEvent>,
    },
    /// A job's completion notice that reached the client while the log
    /// could not store it (A11, D10), recorded by the session's next turn
    /// once storage works again; replayed as its step was delivered.
    LateNotice {
        /// The notice's turn, which ended `{failed}`.
        prompt: PromptId,
        /// What its step delivered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// Its tool event (the job's end).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<ToolEvent>,
    },
    /// `turn/end {reason}`.
    TurnEnd {
        /// The turn's prompt.
        prompt: PromptId,
        /// Why it ended.
        reason: EndReason,
    },
}

/// Who asked for a turn (A11).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum Origin {
    /// A client's (or a caller's) prompt.
    #[default]
    User,
    /// The completion notice of a background job (S6): a turn the agent
    /// starts itself.
    JobDone {
        /// The job.
        job: String,
        /// Its exit code (-1 when unknown).
        exit: i32,
    },
}

impl Origin {
    /// A user's prompt.
    pub fn is_user(&self) -> bool {
        *self == Origin::User
    }
}

/// A step's dealing with a background job (A11).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum ToolEvent {
    /// The step started background job `job` running `command`.
    JobStarted {
        /// The job id (`job-N`).
        job: String,
        /// The command line.
        command: String,
    },
    /// Background job `job` finished (the step of its notice turn).
    JobFinished {
        /// The job id.
        job: String,
        /// Its exit code (-1 when unknown).
        exit: i32,
        /// The tail of its output.
        tail: String,
    },
}

impl ToolEvent {
    /// The job the event is about.
    pub fn job(&self) -> &str {
        match self {
            ToolEvent::JobStarted { job, .. } | ToolEvent::JobFinished { job, .. } => job,
        }
    }
}

/// What one step produced: its text, for the log and the client, and
/// what it did with a background job, if anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepOutput {
    /// The text.
    pub text: String,
    /// The job event.
    pub tool: Option<ToolEvent>,
}

impl From<String> for StepOutput {
    fn from(text: String) -> Self {
        StepOutput { text, tool: None }
    }
}

impl Entry {
    /// The prompt (turn) the entry belongs to.
    pub fn prompt(&self) -> PromptId {
        match self {
            Entry::TurnStart { prompt }
            | Entry::UserMessage { prompt, .. }
            | Entry::Steering { prompt, .. }
            | Entry::Step { prompt, .. }
            | Entry::LateNotice { prompt, .. }
            | Entry::TurnEnd { prompt, .. } => *prompt,
        }
    }
}

#[derive(Default)]
struct LogState {
    pending: Vec<Entry>,
    durable: Vec<Entry>,
    flushes: u64,
}

/// An append-only session log with explicit flushes.
pub struct SessionLog<R: Rt> {
    state: Mutex<R, LogState>,
}

impl<R: Rt> Default for SessionLog<R> {
    fn default() -> Self {
        Self {
            state: Mutex::new(LogState::default()),
        }
    }
}

impl<R: Rt> SessionLog<R> {
    /// Append an entry (not yet durable).
    pub fn append(&self, entry: Entry) {
        self.state.with(|s| s.pending.push(entry));
    }

    /// Make every appended entry durable. Awaits once (the write).
    pub async fn flush(&self) {
        let batch = self.state.with(|s| std::mem::take(&mut s.pending));
        R::yield_now().await;
        self.state.with(|s| {
            s.durable.extend(batch);
            s.flushes += 1;
        });
    }

    /// The durable entries.
    pub fn durable(&self) -> Vec<Entry> {
        self.state.with(|s| s.durable.clone())
    }

    /// Appended entries not yet flushed.
    pub fn pending(&self) -> Vec<Entry> {
        self.state.with(|s| s.pending.clone())
    }
}

impl<R: Rt> SessionSink for SessionLog<R> {
    fn append(&self, entry: Entry) -> Result<(), StorageError> {
        SessionLog::append(self, entry);
        Ok(())
    }

    fn flush(self: Arc<Self>) -> BoxFuture<Result<(), StorageError>> {
        Box::pin(async move {
            SessionLog::flush(&self).await;
            Ok(())
        })
    }

    fn durable(&self) -> Vec<Entry> {
        SessionLog::durable(self)
    }
}
