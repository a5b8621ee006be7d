//! The bounded outbound queue of `lifecycle acp` (A10): the bytes of
//! `session/update` notifications handed to the connection and not yet
//! written to stdout are counted, and they may not grow past
//! [`OUTBOUND_BUDGET_BYTES`]. A client that stops reading stdout therefore
//! stops the server: every step, job notice and history replay waits for
//! room before it sends ([`Outbound::room`]), and reading stdin waits too,
//! so no request is taken that would queue more.
//!
//! Accounting: [`Outbound::send`] adds an update's serialized size and
//! hands it to the connection, whose queue is first in, first out; the
//! writer calls [`Outbound::wrote_update`] for each `session/update` line
//! it wrote ([`is_update`]), which frees the oldest size. Responses are not counted:
//! each answers one request read, and reading waits for room.
//!
//! Reading waits for room or for stdin's hangup ([`stdin_hangup`]),
//! whichever comes first: a client that stopped reading and then closed
//! stdin is seen at once, however much it had sent, so the grace period
//! after the end of input holds.
//!
//! States of the budget: `room` (queued < budget; senders pass) → `full`
//! (queued ≥ budget; senders and the reader wait) → `room` (the writer
//! wrote enough). One update larger than the budget passes when nothing
//! is queued, so it never waits forever.
//!
//! The accounting is written against `Rt` (a [`Monitor`]), so the
//! checkers explore its waits and wakes (`tests/race_api.rs`); the server
//! runs it on tokio, and [`room_or`](Outbound::room_or), which also
//! watches stdin's hangup, is tokio's alone.

use crate::rt::{Monitor, Rt, TokioRt};
use agent_client_protocol::v1::schema::{SessionId, SessionNotification, SessionUpdate};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use std::collections::VecDeque;

/// Where a connection's `session/update` notifications go: the ACP
/// connection in the server; the observed history in a generated
/// workload.
pub trait Wire: Send + Sync {
    /// Hand session `session`'s `update` to the connection; `false` if it
    /// was refused (then it is not counted in the budget).
    fn notify(&self, session: &str, update: SessionUpdate) -> bool;
}

/// The most `session/update` bytes queued for stdout before senders wait.
pub const OUTBOUND_BUDGET_BYTES: usize = 4 << 20;

/// The budget's counts.
#[derive(Default)]
struct Queued {
    bytes: usize,
    sizes: VecDeque<usize>,
    /// The connection is over: a reader stops once nothing is queued.
    closed: bool,
}

/// The outbound budget of one connection.
pub struct Outbound<R: Rt = TokioRt> {
    queued: Monitor<R, Queued>,
    budget: usize,
}

impl<R: Rt> Default for Outbound<R> {
    fn default() -> Self {
        Self::with_budget(OUTBOUND_BUDGET_BYTES)
    }
}

/// Counts the bytes written into it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<R: Rt> Outbound<R> {
    /// A budget of `bytes` (the server's is [`OUTBOUND_BUDGET_BYTES`]).
    pub fn with_budget(bytes: usize) -> Self {
        Outbound {
            queued: Monitor::new(Queued::default()),
            budget: bytes,
        }
    }

    /// Bytes of updates handed to the connection and not yet written.
    pub fn bytes(&self) -> usize {
        self.queued.read(|q| q.bytes)
    }

    /// Wait until fewer than the budget's bytes are queued.
    pub async fn room(&self) {
        let budget = self.budget;
        self.queued
            .wait_until("outbound room", |q| (q.bytes < budget).then_some(()))
            .await
    }

    /// Count an update of `size` bytes as queued, if `queue` (which hands
    /// it to the connection, in the same section) says it was.
    pub fn count(&self, size: usize, queue: impl FnOnce() -> bool) {
        self.queued.update(|q| {
            if queue() {
                q.bytes += size;
                q.sizes.push_back(size);
            }
        });
    }

    /// Send `update` of `session` through `wire`, counted. Callers that
    /// may wait call [`room`](Self::room) first.
    pub fn send(&self, wire: &dyn Wire, session: &str, update: SessionUpdate) {
        let mut size = Count(0);
        // An update that does not serialize is refused by the connection
        // too, and then never written: it must not be counted.
        if serde_json::to_writer(&mut size, &update).is_err() {
            return;
        }
        self.count(size.0, || wire.notify(session, update));
    }

    /// A reader's wait (a client under the checkers reads what the server
    /// queued): `true` once an update is queued, `false` once the
    /// connection is [closed](Self::close) with none queued.
    pub async fn queued_or_closed(&self) -> bool {
        self.queued
            .wait_until("outbound update queued", |q| {
                (!q.sizes.is_empty() || q.closed).then_some(!q.sizes.is_empty())
            })
            .await
    }

    /// The connection is over: a reader waiting in
    /// [`queued_or_closed`](Self::queued_or_closed) stops once nothing is
    /// queued.
    pub fn close(&self) {
        self.queued.update(|q| q.closed = true);
    }

    /// The writer wrote a `session/update` line ([`is_update`]): the
    /// oldest size is freed, and the senders waiting for room re-check.
    pub fn wrote_update(&self) {
        self.queued.update(|q| {
            if let Some(size) = q.sizes.pop_front() {
                q.bytes -= size;
            }
        });
    }
}

impl Outbound<TokioRt> {
    /// Wait for room, or until `hangup` says stdin's writer is gone.
    pub async fn room_or(&self, hangup: &mut tokio::sync::watch::Receiver<bool>) {
        tokio::select! {
            _ = self.room() => {}
            _ = async {
                // A watcher that could not start never says so.
                if hangup.wait_for(|gone| *gone).await.is_err() {
                    std::future::pending::<()>().await;
                }
            } => {}
        }
    }
}

/// The server's wire: the ACP connection, once `initialize` gave it.
#[derive(Default)]
pub struct ConnWire(std::sync::Mutex<Option<ConnectionTo<Client>>>);

impl ConnWire {
    /// Updates go to `conn` from now on.
    pub fn connect(&self, conn: ConnectionTo<Client>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
    }
}

impl Wire for ConnWire {
    fn notify(&self, session: &str, update: SessionUpdate) -> bool {
        let conn = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let note = SessionNotification::new(SessionId::new(session.to_string()), update);
        conn.is_some_and(|c| c.send_notification(note).is_ok())
    }
}

/// Becomes `true` once stdin's last writer is gone (`POLLHUP`), seen by a
/// thread of its own whatever data is still unread. A stdin that never
/// hangs up (a file, `/dev/null`) never turns it.
pub fn stdin_hangup() -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let spawned = std::thread::Builder::new()
        .name("acp-hangup".into())
        .spawn(move || loop {
            // Only POLLHUP, POLLERR and POLLNVAL are reported: no events
            // are asked for, so unread data does not wake it.
            let mut fd = libc::pollfd {
                fd: 0,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the duration of the call.
            let n = unsafe { libc::poll(&mut fd, 1, -1) };
            if n > 0 {
                let _ = tx.send(true);
                return;
            }
            if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        });
    if let Err(e) = spawned {
        eprintln!("agent-lifecycle: cannot watch stdin for its hangup: {e}");
    }
    rx
}

/// Whether `line` is a `session/update` notification (a `method` of that
/// name and no `id`), whatever the order of its fields.
pub fn is_update(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        method: Option<String>,
        id: Option<serde::de::IgnoredAny>,
    }
    matches!(
        serde_json::from_str::<Probe>(line),
        Ok(Probe { method: Some(m), id: None }) if m == "session/update"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a10_only_update_notifications_free_the_budget() {
        assert!(is_update(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"x":1}}"#
        ));
        assert!(is_update(
            r#"{"params":{"method":"x"},"method":"session/update","jsonrpc":"2.0"}"#
        ));
        assert!(!is_update(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/update","params":{}}"#
        ));
        assert!(!is_update(
            r#"{"jsonrpc":"2.0","id":1,"result":{"method":"session/update"}}"#
        ));
        assert!(!is_update("not json"));
    }

    #[test]
    fn a10_room_waits_for_the_writer() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let out = std::sync::Arc::new(Outbound::<TokioRt>::default());
            out.count(OUTBOUND_BUDGET_BYTES, || true);
            let waiter = tokio::spawn({
                let out = out.clone();
                async move { out.room().await }
            });
            tokio::task::yield_now().await;
            assert!(!waiter.is_finished(), "room passed with the budget full");
            out.wrote_update();
            waiter.await.expect("room after the update was written");
            assert_eq!(out.bytes(), 0);
        });
    }
}
