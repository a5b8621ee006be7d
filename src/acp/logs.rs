//! The session logs as the ACP server uses them: creating a new
//! session's log, claiming a log to load (its lock, a streamed check, the
//! job numbers it used) and replaying its conversation to the client.
//! Nothing here holds a log whole: a load of any size streams it (A10).

use super::outbound::Outbound;
use super::responder::{step_updates, Wire};
use super::AcpError;
use crate::rt::Rt;
use crate::session_log::{Entry, ToolEvent};
use crate::shell::job_number;
use crate::store::durable::{Durable, DurableRecord, FileDurable, LockError};
use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
use futures::{Stream, StreamExt};
use std::sync::Arc;

/// How many updates the replay's reader may read ahead of the client.
pub const REPLAY_AHEAD: usize = 16;

/// The session logs: the storage behind the store, and, when they are
/// files, the one-writer locks (A9: a second process that loads a session
/// this one writes gets a clear error).
pub struct Logs {
    durable: Arc<dyn Durable>,
    files: Option<Arc<FileDurable>>,
    /// A replay reads the log on a blocking thread of tokio's (the
    /// server); else in the load's own task (the checkers).
    threaded: bool,
}

impl Logs {
    /// The logs of the server: files (with their locks) or memory, read
    /// on a blocking thread by a replay.
    pub fn served(durable: Arc<dyn Durable>, files: Option<Arc<FileDurable>>) -> Self {
        Logs {
            durable,
            files,
            threaded: true,
        }
    }

    /// Logs on `durable`, read in the replaying task: how the checkers run
    /// the server's request handling.
    pub fn inline(durable: Arc<dyn Durable>) -> Self {
        Logs {
            durable,
            files: None,
            threaded: false,
        }
    }

    /// Create the log of a new session, durably, and hold its lock. D9:
    /// the id the client is given survives a crash before the first
    /// prompt: its (empty) log exists, synced, with its directory entry.
    pub(super) fn create(&self, id: &str) -> Result<(), AcpError> {
        let created = match &self.files {
            Some(files) => files.lock(id).map_err(std::io::Error::from),
            None => self
                .durable
                .write(id, &[])
                .and_then(|()| self.durable.sync(id)),
        };
        created.map_err(|e| {
            AcpError::Storage(format!("the log of session {id} cannot be created: {e}"))
        })
    }

    /// Before a `session/load` of an id this process does not hold: the
    /// log must exist (else -32002, and nothing is created), its lock must
    /// be free (else -32602: another process writes it), and it must read
    /// cleanly, which is checked by streaming it once. Returns the largest
    /// job number its typed job-start records name (A11: never read from
    /// text) and how many records it holds: the replay's snapshot (A9).
    pub(super) fn claim(&self, id: &str) -> Result<Claimed, AcpError> {
        if !self.durable.exists(id).map_err(|e| unreadable(id, e))? {
            return Err(AcpError::UnknownSession(id.to_string()));
        }
        if let Some(files) = &self.files {
            match files.lock(id) {
                Ok(()) => {}
                Err(LockError::Held { .. }) => return Err(AcpError::LogInUse(id.to_string())),
                Err(LockError::Io(e)) => return Err(unreadable(id, e)),
            }
        }
        let mut claimed = Claimed::default();
        let scanned = self.durable.scan(id, &mut |r| {
            claimed.last_job = claimed.last_job.max(job_started(&r));
            claimed.records += 1;
            true
        });
        match scanned {
            Ok(_) => Ok(claimed),
            Err(e) => {
                self.release(id);
                Err(unreadable(id, e))
            }
        }
    }

    /// How many complete records the log of `id` holds now (a streamed
    /// count): the snapshot a load of a session this process already
    /// holds replays (A9).
    pub(super) fn records(&self, id: &str) -> Result<usize, AcpError> {
        count(&*self.durable, id).map_err(|e| unreadable(id, e))
    }

    /// A10, A9: the conversation of session `id`'s log sent to the client
    /// as it is read, one record in memory at a time, each update waiting
    /// for room in the outbound budget. The log is read on a blocking
    /// thread that stays at most [`REPLAY_AHEAD`] updates ahead. Only the
    /// first `snapshot` records are read: the log as it stood when the load
    /// began, so nothing appended since is sent twice (A9). Each
    /// update passes through `ours`, which sends it only while the session
    /// is still this load's: once a `session/close` took it, the replay
    /// stops (`Ok(false)`).
    pub(super) async fn replay<R: Rt>(
        &self,
        id: &str,
        snapshot: usize,
        wire: &dyn Wire,
        outbound: &Outbound<R>,
        ours: &(dyn Fn(&mut dyn FnMut()) -> bool + Sync),
    ) -> Result<bool, AcpError> {
        if !self.threaded {
            let mut updates = Vec::new();
            replay_snapshot(&*self.durable, id, snapshot, &mut |u| {
                updates.push(u);
                true
            })
            .map_err(|e| unreadable(id, e))?;
            let sent = send_each(futures::stream::iter(updates), id, wire, outbound, ours);
            return Ok(sent.await);
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<SessionUpdate>(REPLAY_AHEAD);
        let (durable, log) = (self.durable.clone(), id.to_string());
        let reader = tokio::task::spawn_blocking(move || {
            replay_snapshot(&*durable, &log, snapshot, &mut |u| {
                tx.blocking_send(u).is_ok()
            })
        });
        let updates = futures::stream::poll_fn(|cx| rx.poll_recv(cx));
        if !send_each(updates, id, wire, outbound, ours).await {
            // Dropping the receiver stops the reader.
            drop(rx);
            let _ = reader.await;
            return Ok(false);
        }
        match reader.await {
            Ok(Ok(_)) => Ok(true),
            Ok(Err(e)) => Err(unreadable(id, e)),
            Err(e) => Err(unreadable(id, std::io::Error::other(e.to_string()))),
        }
    }

    /// Let go of a log this process no longer writes.
    pub(super) fn release(&self, id: &str) {
        if let Some(files) = &self.files {
            files.unlock(id);
        }
    }
}

/// Send each of `updates` of session `id`, each once there is room
/// (A10), through `ours`, which sends it only while the session is still
/// the load's; `false` once it is not (A9).
async fn send_each<R: Rt>(
    updates: impl Stream<Item = SessionUpdate>,
    id: &str,
    wire: &dyn Wire,
    outbound: &Outbound<R>,
    ours: &(dyn Fn(&mut dyn FnMut()) -> bool + Sync),
) -> bool {
    let mut updates = std::pin::pin!(updates);
    while let Some(update) = updates.next().await {
        outbound.room().await;
        let mut update = Some(update);
        let mut send = || {
            if let Some(u) = update.take() {
                outbound.send(wire, id, u);
            }
        };
        if !ours(&mut send) {
            return false;
        }
    }
    true
}

/// What claiming a log found in it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Claimed {
    /// The largest job number of its typed job-start records.
    pub(super) last_job: Option<u64>,
    /// Its complete records: the replay's snapshot.
    pub(super) records: usize,
}

/// How many complete records the log of `id` holds (streamed).
pub(crate) fn count(durable: &dyn Durable, id: &str) -> std::io::Result<usize> {
    let mut n = 0;
    durable.scan(id, &mut |_| {
        n += 1;
        true
    })?;
    Ok(n)
}

/// A9: the updates of the first `snapshot` records of `id`'s log, each
/// handed to `send` as it is read (one record in memory at a time), until
/// `send` says stop. The server's replay reads the log with this on a
/// blocking thread; a generated workload (`generate`) reads it with this
/// under the checkers.
pub(crate) fn replay_snapshot(
    durable: &dyn Durable,
    id: &str,
    snapshot: usize,
    send: &mut dyn FnMut(SessionUpdate) -> bool,
) -> std::io::Result<Option<crate::store::durable::TornTail>> {
    let mut left = snapshot;
    durable.scan(id, &mut |r| {
        if left == 0 {
            return false;
        }
        left -= 1;
        history(r).into_iter().all(&mut *send)
    })
}

/// What the client sees of one record on replay, in the form it saw it
/// live: a user prompt (`user/message`) as a user message chunk, a step as
/// [`step_updates`] made it (A9: a load replays the history; A11: a job's
/// notice turn replays as its `tool_call_update`, never as user text).
fn history(r: DurableRecord) -> Vec<SessionUpdate> {
    match r.entry {
        Entry::UserMessage { text, origin, .. } if origin.is_user() => {
            let chunk = ContentChunk::new(ContentBlock::from(text));
            vec![SessionUpdate::UserMessageChunk(chunk)]
        }
        Entry::Step {
            output: Some(out),
            tool,
            ..
        }
        | Entry::LateNotice {
            output: Some(out),
            tool,
            ..
        } => step_updates(out, tool.as_ref()),
        _ => Vec::new(),
    }
}

/// The job number of a typed job-start record.
fn job_started(r: &DurableRecord) -> Option<u64> {
    match &r.entry {
        Entry::Step {
            tool: Some(ToolEvent::JobStarted { job, .. }),
            ..
        } => job_number(job),
        _ => None,
    }
}

fn unreadable(id: &str, e: std::io::Error) -> AcpError {
    AcpError::Storage(format!("the log of session {id} cannot be read: {e}"))
}
