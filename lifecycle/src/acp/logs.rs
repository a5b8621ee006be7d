//! The session logs as the ACP server uses them: creating a new
//! session's log, claiming a log to load (its lock, a streamed check, the
//! job numbers it used) and replaying its conversation to the client.
//! Nothing here holds a log whole: a load of any size streams it (A10).

use super::outbound::Outbound;
use super::outbound::Wire;
use super::responder::step_updates;
use super::AcpError;
use crate::rt::Rt;
use crate::session_log::{Entry, ToolEvent};
use crate::shell::job_number;
use crate::store::durable::{Durable, DurableRecord, LockError};
use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
use futures::{Stream, StreamExt};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How many updates the replay's reader may read ahead of the client.
pub const REPLAY_AHEAD: usize = 16;

/// The session logs: the storage behind the store, and its one-writer
/// locks (A9: a second process that loads a session this one writes gets
/// a clear error; `Durable::lock`).
///
/// Within this process a log is held while anything holds a claim on it:
/// its session (from `session/new` or its load's claim until its close),
/// and each load in flight that claimed it. The OS lock is taken by the
/// first claim and let go with the last, so a load refused while another
/// won (or a close that ends while a new load claims) does not let go of
/// the lock the live session writes under (A9).
pub struct Logs {
    durable: Arc<dyn Durable>,
    /// How many claims each log has in this process. Held only across the
    /// count and its lock or unlock, never across an await.
    held: Mutex<BTreeMap<String, usize>>,
    /// A replay reads the log on a blocking thread of tokio's (the
    /// server); else in the load's own task (the checkers).
    threaded: bool,
}

impl Logs {
    /// The logs of the server: files (with their locks) or memory, read
    /// on a blocking thread by a replay.
    pub fn served(durable: Arc<dyn Durable>) -> Self {
        Logs {
            durable,
            held: Mutex::default(),
            threaded: true,
        }
    }

    /// Logs on `durable`, read in the replaying task: how the checkers run
    /// the server's request handling.
    pub fn inline(durable: Arc<dyn Durable>) -> Self {
        Logs {
            durable,
            held: Mutex::default(),
            threaded: false,
        }
    }

    /// Create the log of a new session, durably, and hold its lock. D9:
    /// the id the client is given survives a crash before the first
    /// prompt: its (empty) log exists, synced, with its directory entry.
    pub(super) fn create(&self, id: &str) -> Result<(), AcpError> {
        self.durable.create_locked(id).map_err(|e| {
            AcpError::Storage(format!("the log of session {id} cannot be created: {e}"))
        })?;
        *self.holders().entry(id.to_string()).or_default() += 1;
        Ok(())
    }

    /// The claims on each log this process holds.
    fn holders(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Before a `session/load` of an id this process does not hold: the
    /// log must exist (else -32002, and nothing is created), its lock must
    /// be free (else -32602: another process writes it), and it must read
    /// cleanly, which is checked by streaming it once. A log this process
    /// holds already gains one more claim, which [`Logs::release`] lets go
    /// of. Returns the largest
    /// job number its typed job-start records name (A11: never read from
    /// text) and how many records it holds: the replay's snapshot (A9).
    pub(super) fn claim(&self, id: &str) -> Result<Claimed, AcpError> {
        if !self.durable.exists(id).map_err(|e| unreadable(id, e))? {
            return Err(AcpError::UnknownSession(id.to_string()));
        }
        {
            let mut held = self.holders();
            let claims = held.entry(id.to_string()).or_default();
            if *claims == 0 {
                let locked = match self.durable.lock(id) {
                    Ok(()) => Ok(()),
                    Err(LockError::Held { .. }) => Err(AcpError::LogInUse(id.to_string())),
                    Err(LockError::Io(e)) => Err(unreadable(id, e)),
                };
                if let Err(e) = locked {
                    held.remove(id);
                    return Err(e);
                }
            }
            *claims += 1;
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
                self.release(id, || {});
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

    /// Let go of one claim on the log of `id` (a closed session's, or a
    /// failed load's); the OS lock goes with the last one, and `gone` runs
    /// then, before any new claim can be taken: what the server keeps per
    /// session (its `cwd`) is forgotten with the last claim, never after a
    /// later load of the id set its own (A9).
    pub(super) fn release(&self, id: &str, gone: impl FnOnce()) {
        let mut held = self.holders();
        let Some(claims) = held.get_mut(id) else {
            return;
        };
        *claims = claims.saturating_sub(1);
        if *claims == 0 {
            held.remove(id);
            self.durable.unlock(id);
            gone();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::durable::FileDurable;

    /// A second `FileDurable` on the same directory stands for another
    /// process: whether it can lock the log says whether this one holds it.
    fn free_elsewhere(dir: &std::path::Path, id: &str) -> bool {
        let other = FileDurable::new(dir).unwrap();
        let free = other.lock(id).is_ok();
        other.unlock(id);
        free
    }

    /// A9: the OS lock is held while any claim is: a session's and each
    /// load's in flight; the last release lets it go and runs its `gone`
    /// (no earlier one does), and a release of a log no claim holds
    /// changes nothing.
    #[test]
    fn the_lock_goes_with_the_last_claim() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(FileDurable::new(dir.path()).unwrap());
        let logs = Logs::served(files.clone());
        logs.create("s").unwrap();
        assert!(
            !free_elsewhere(dir.path(), "s"),
            "a new session holds its log"
        );
        logs.release("s", || {});
        assert!(
            free_elsewhere(dir.path(), "s"),
            "a closed session lets it go"
        );
        logs.release("s", || {});
        logs.claim("s").unwrap();
        logs.claim("s").unwrap();
        logs.release("s", || {});
        assert!(
            !free_elsewhere(dir.path(), "s"),
            "one claim left: the log is still held"
        );
        logs.release("s", || {});
        assert!(free_elsewhere(dir.path(), "s"), "the last claim let go");
        let gone = std::cell::Cell::new(0);
        logs.claim("s").unwrap();
        logs.claim("s").unwrap();
        logs.release("s", || gone.set(gone.get() + 1));
        assert_eq!(gone.get(), 0, "a claim is left: the session is not gone");
        logs.release("s", || gone.set(gone.get() + 1));
        assert_eq!(gone.get(), 1, "the last claim let go: the session is gone");
        logs.release("s", || gone.set(gone.get() + 1));
        assert_eq!(gone.get(), 1, "a release of a log no claim holds");
        assert!(matches!(
            logs.claim("missing"),
            Err(AcpError::UnknownSession(_))
        ));
    }
}
