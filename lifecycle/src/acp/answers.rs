//! What the bridge answers: its errors (with the texts of SPEC A5, A7,
//! A8) and how a prompt ended.

use super::MAX_SESSIONS;
use crate::provider::CreateError;

/// Bridge errors, with the texts of SPEC A5, A7, A8.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AcpError {
    /// `session/new` after the bridge closed (A7).
    Disposed,
    /// The connection closed while `session/new` awaited creation (A7).
    ClosedDuringNew,
    /// The connection closed while `session/load` awaited resume (A1).
    ClosedDuringLoad,
    /// `session/load` of a live or loading id (A5).
    AlreadyLoaded(String),
    /// No such session.
    UnknownSession(String),
    /// A second prompt while one is in flight (A8).
    PromptInFlight(String),
    /// Creating the agent failed.
    Create(CreateError),
    /// The prompt's session log could not be written (D10).
    Storage(String),
    /// `session/close` (or the connection's close) took the session while
    /// its load replayed the history: the replay stopped (A9).
    ClosedDuringReplay(String),
    /// `session/load` of a log another process holds (A9).
    LogInUse(String),
    /// `session/new` or `session/load` past the connection's cap (A10).
    TooManySessions,
}

impl std::fmt::Display for AcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcpError::Disposed => write!(f, "bridge has been disposed"),
            AcpError::ClosedDuringNew => write!(f, "connection closed during session/new"),
            AcpError::ClosedDuringLoad => write!(f, "connection closed during session/load"),
            AcpError::AlreadyLoaded(id) => write!(f, "session {id} already loaded"),
            AcpError::UnknownSession(id) => write!(f, "unknown session {id}"),
            AcpError::PromptInFlight(id) => {
                write!(f, "session {id} already has a prompt in flight")
            }
            AcpError::Create(e) => write!(f, "{e}"),
            AcpError::Storage(e) => write!(f, "{e}"),
            AcpError::ClosedDuringReplay(id) => {
                write!(
                    f,
                    "session {id} was closed while its load replayed the history"
                )
            }
            AcpError::LogInUse(id) => {
                write!(f, "the log of session {id} is in use by another process")
            }
            AcpError::TooManySessions => write!(
                f,
                "this connection holds {MAX_SESSIONS} sessions, the most it may; close one (session/close) first"
            ),
        }
    }
}

impl std::error::Error for AcpError {}

/// How a `session/prompt` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The turn completed.
    EndTurn,
    /// It was cancelled (never started, aborted, or disposed).
    Cancelled,
}
