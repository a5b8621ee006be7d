//! The request handling of `lifecycle acp`, written against [`Rt`]: what
//! each request does once its JSON is parsed, with the bridge, the
//! session logs, the scripted responder and the outbound budget. The
//! server ([`super::server`]) is a thin tokio shell around it (stdin and
//! stdout framing, the real shell, files, signals); a generated workload
//! (`generate`) sends its clients' requests to the same core under sim,
//! sim-dfs, shuttle and loom, so the load's claim and replay, the
//! release of a log, the cap and the prompt's admission are checked
//! where they are written.
//!
//! Requests and what they do:
//! - `session/new`: a slot under the cap (A10) → the bridge creates the
//!   session → its log is created, durably (D9) → its `cwd` is kept.
//! - `session/load`: a slot → the log is claimed (it exists, its lock is
//!   free, it reads cleanly; the snapshot of its records, A9), or counted
//!   if this connection holds the session → the bridge resumes it and the
//!   snapshot is replayed before the answer, while the session is still
//!   the load's (A9) → a failed load lets go of the log it claimed, unless
//!   a close took the session (the close let go of it).
//! - `session/prompt`: the text's lines are the turn's steps; the bridge
//!   admits and runs it (A2, A8, A9).
//! - `session/close`: the bridge disposes the session → its log's lock
//!   and its `cwd` are let go.
//! - `session/cancel`: the bridge marks the session's prompts (A2, A8).
//! - disconnect: the bridge's quiesce (A1).
//!
//! Every method is a future whose first poll does what must happen in the
//! order requests arrive; the server admits each with [`super::admit`]
//! before it reads the next request.

use super::logs::{Claimed, Logs};
use super::outbound::Outbound;
use super::outbound::Wire;
use super::responder::{script_lines, Responder};
use super::session_cap::Slots;
use super::{AcpError, Bridge, StopReason};
use crate::agent::core::PromptSpec;
use crate::rt::Rt;
use crate::session_log::Origin;
use crate::shell::ShellExecutor;
use std::path::PathBuf;
use std::sync::Arc;

/// The request handling of one connection: see the module docs.
pub struct ServerCore<R: Rt> {
    bridge: Arc<Bridge<R>>,
    logs: Arc<Logs>,
    responder: Arc<Responder<R>>,
    outbound: Arc<Outbound<R>>,
    wire: Arc<dyn Wire>,
    /// The shell whose job numbers a load continues after its log's.
    shell: Option<Arc<dyn ShellExecutor>>,
    slots: Slots,
}

impl<R: Rt> ServerCore<R> {
    /// The handling of requests on `bridge`, whose provider runs
    /// `responder`; updates go through `wire`, counted by `outbound`.
    pub fn new(
        bridge: Arc<Bridge<R>>,
        logs: Arc<Logs>,
        responder: Arc<Responder<R>>,
        wire: Arc<dyn Wire>,
        outbound: Arc<Outbound<R>>,
        shell: Option<Arc<dyn ShellExecutor>>,
    ) -> Arc<Self> {
        Arc::new(ServerCore {
            bridge,
            logs,
            responder,
            outbound,
            wire,
            shell,
            slots: Slots::default(),
        })
    }

    /// The bridge the requests are served on.
    pub fn bridge(&self) -> &Arc<Bridge<R>> {
        &self.bridge
    }

    /// `session/new` in `cwd`: the new session's id.
    pub async fn new_session(self: Arc<Self>, cwd: PathBuf) -> Result<String, AcpError> {
        let _slot = self.slots.take(self.bridge.session_count())?;
        let id = self.bridge.new_session().await?;
        if let Err(e) = self.logs.create(&id) {
            // A10: a session whose log cannot be created is not kept: it
            // would run prompts the client was told it does not have, and
            // write a log it holds no lock on. (A quiesce may have taken
            // it already.)
            let _ = self.bridge.close(&id).await;
            return Err(e);
        }
        self.responder.set_cwd(&id, cwd);
        Ok(id)
    }

    /// `session/load` of `id` in `cwd`: its history is replayed before
    /// the answer (A9).
    pub async fn load(self: Arc<Self>, id: String, cwd: PathBuf) -> Result<(), AcpError> {
        let _slot = self.slots.take(self.bridge.session_count())?;
        // A session of this process's is only healed by its load (D10),
        // never resumed afresh; any other load claims its log first (A9),
        // and lets go of that claim if it fails.
        let claimed = !self.bridge.sessions().contains(&id);
        let found = if claimed {
            self.logs.claim(&id)?
        } else {
            Claimed {
                last_job: None,
                records: self.logs.records(&id)?,
            }
        };
        // Whether the bridge healed a session of its own (D10) rather
        // than resumed one: a healed session holds its log already.
        let healed = std::sync::atomic::AtomicBool::new(false);
        let replay = |healing: bool| {
            healed.store(healing, std::sync::atomic::Ordering::Relaxed);
            self.replay(&id, cwd, found)
        };
        let loaded = if claimed {
            self.bridge.load_session_then(&id, replay).await
        } else {
            self.bridge.reload_then(&id, replay).await
        };
        let healed = healed.load(std::sync::atomic::Ordering::Relaxed);
        // The claims this load lets go of (A9): its own, unless a resumed
        // session keeps it; and a healed session's, when its failed
        // replay disposed it. A close that took the session let go of the
        // session's, and a later load may hold the log by now.
        let closed = matches!(loaded, Err(AcpError::ClosedDuringReplay(_)));
        let own = claimed && (healed || (loaded.is_err() && !closed));
        let session = healed && loaded.is_err() && !closed;
        for _ in 0..usize::from(own) + usize::from(session) {
            self.logs.release(&id, || self.responder.forget(&id));
        }
        loaded.map(|_| ())
    }

    /// A load's replay of `id`'s history as `found` stood, in `cwd`.
    async fn replay(&self, id: &str, cwd: PathBuf, found: Claimed) -> Result<(), AcpError> {
        // Job numbers continue after every job the log's job records
        // name (A9, A11).
        if let (Some(n), Some(shell)) = (found.last_job, &self.shell) {
            shell.continue_after(n);
        }
        self.responder.set_cwd(id, cwd);
        // The history first, then the answer (ACP); the log as it
        // stood when the load began (A9), and only while the session
        // is still this load's.
        let ours = self.bridge.replay_gate(id);
        let replayed = self
            .logs
            .replay(id, found.records, &*self.wire, &self.outbound, &ours)
            .await?;
        if replayed {
            Ok(())
        } else {
            Err(AcpError::ClosedDuringReplay(id.to_string()))
        }
    }

    /// `session/prompt` of `text` on `id`: each non-empty line a step.
    pub async fn prompt(self: Arc<Self>, id: String, text: String) -> Result<StopReason, AcpError> {
        let spec = PromptSpec {
            steps: script_lines(&text).count().max(1) as u32,
            text,
            step_ms: 0,
            origin: Origin::User,
        };
        self.bridge.prompt(&id, spec).await
    }

    /// `session/close` of `id`: its agent is disposed (its prompt answers
    /// `cancelled`, its jobs are killed, S7, A10), then its log's lock and
    /// its `cwd` are let go.
    pub async fn close(self: Arc<Self>, id: String) -> Result<(), AcpError> {
        self.bridge.close(&id).await?;
        // Its `cwd` goes with the log's last claim: a load of the id that
        // claimed it meanwhile keeps the `cwd` it set (A9).
        self.logs.release(&id, || self.responder.forget(&id));
        Ok(())
    }

    /// `session/cancel` of `id` (A2, A8).
    pub fn cancel(&self, id: &str) {
        self.bridge.cancel(id);
    }

    /// The client is gone: every session is disposed (A1).
    pub async fn disconnect(&self) {
        self.bridge.disconnect().await;
    }
}
