//! What a generated workload's history is made of: the requests a client
//! sent ([`Req`]), the answers and updates it received ([`Answer`],
//! [`Update`]), in one [`Connection`] of observations ([`Obs`]) in the
//! order they happened: what the judge reads.

use crate::acp::outbound::Wire;
use crate::acp::{AcpError, StopReason};
use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
use std::sync::Mutex;

/// A replayed update as the client reads it: `user: <text>` or `agent:
/// <text>` for a message chunk, its debug form for anything else (which
/// the stored history never holds, so the judge refuses it).
fn update_text(u: &SessionUpdate) -> String {
    let text = |c: &ContentChunk| match &c.content {
        ContentBlock::Text(t) => t.text.clone(),
        other => format!("{other:?}"),
    };
    match u {
        SessionUpdate::UserMessageChunk(c) => format!("user: {}", text(c)),
        SessionUpdate::AgentMessageChunk(c) => format!("agent: {}", text(c)),
        other => format!("{other:?}"),
    }
}

/// A request as the client sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Req {
    /// `session/new`.
    New,
    /// `session/load old`.
    Load,
    /// `session/prompt` on `session`, of `steps` steps.
    Prompt {
        /// The session id.
        session: String,
        /// Steps of the turn.
        steps: u8,
        /// Its step ends only when its turn's signal fires (C10).
        hung: bool,
    },
    /// `session/cancel` on `session`.
    Cancel {
        /// The session id.
        session: String,
    },
    /// `session/close` on `session`.
    Close {
        /// The session id.
        session: String,
    },
    /// The client disconnects.
    Disconnect,
    /// The disk's next write (or, `sync`, fsync) fails: not a request to
    /// the server, but the world's act the judge must account for (D10).
    DiskFault {
        /// The fsync fails, not the write.
        sync: bool,
    },
}

/// An answer as the client received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `session/new`'s.
    New(Result<String, AcpError>),
    /// `session/new` dropped by its caller before it answered.
    NewDropped,
    /// `session/load`'s.
    Load(Result<(), AcpError>),
    /// `session/prompt`'s.
    Prompt(Result<StopReason, AcpError>),
    /// `session/close`'s: the session's teardown is over, or why not.
    Close(Result<(), AcpError>),
    /// The disconnect's quiesce finished.
    Disconnected,
}

/// A `session/update` as the connection carried it. The client cannot
/// tell a replayed record from a live step's output: neither does the
/// judge, which tries both readings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    /// A message chunk: `user: <text>` or `agent: <text>`.
    Text(String),
    /// A `tool_call`: the job of this id started.
    JobStarted(String),
    /// A `tool_call_update`: the job of this id ended (A11).
    Notice(String),
}

impl Update {
    /// The update the client reads in `u`.
    fn of(u: &SessionUpdate) -> Update {
        match u {
            SessionUpdate::ToolCall(c) => Update::JobStarted(c.tool_call_id.0.to_string()),
            SessionUpdate::ToolCallUpdate(c) => Update::Notice(c.tool_call_id.0.to_string()),
            other => Update::Text(update_text(other)),
        }
    }
}

/// One observation of the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Obs {
    /// Client `client` sent its operation `op`.
    Sent {
        /// The client (from 0).
        client: u8,
        /// The operation's index in its program.
        op: u8,
        /// The request.
        req: Req,
    },
    /// Client `client` received the answer to its operation `op`.
    Answered {
        /// The client.
        client: u8,
        /// The operation's index.
        op: u8,
        /// The answer.
        answer: Answer,
    },
    /// Client `client`'s operation `op` took effect: the request's first
    /// poll (its admission) or the cancel's call returned.
    Admitted {
        /// The client.
        client: u8,
        /// The operation's index.
        op: u8,
    },
    /// An update of `session` reached the connection.
    Update {
        /// The session id.
        session: String,
        /// What it carried.
        update: Update,
    },
}

impl std::fmt::Display for Obs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Obs::Sent { client, op, req } => {
                write!(f, "client {} sends op {}: {req:?}", client + 1, op + 1)
            }
            Obs::Answered { client, op, answer } => {
                write!(
                    f,
                    "client {} gets op {}'s answer: {answer:?}",
                    client + 1,
                    op + 1
                )
            }
            Obs::Admitted { client, op } => {
                write!(f, "client {}'s op {} took effect", client + 1, op + 1)
            }
            Obs::Update { session, update } => write!(f, "update of {session}: {update:?}"),
        }
    }
}

/// The connection's history, in the order things happened.
#[derive(Default)]
pub struct Connection {
    log: Mutex<Vec<Obs>>,
}

impl Connection {
    /// Record `obs`, and trace it (target `observation`, its number from
    /// 1 as `n`): a replay places a model mismatch at the poll that made
    /// the observation.
    pub fn push(&self, obs: Obs) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        tracing::info!(target: crate::trace::Target::OBSERVATION, n = log.len() as u64 + 1, "{obs}");
        log.push(obs);
    }

    /// The history so far.
    pub fn history(&self) -> Vec<Obs> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The server's updates, recorded as the connection carries them; the
/// run's reader task then frees their room in the budget, one at a time.
impl Wire for Connection {
    fn notify(&self, session: &str, update: SessionUpdate) -> bool {
        self.push(Obs::Update {
            session: session.to_string(),
            update: Update::of(&update),
        });
        true
    }
}
