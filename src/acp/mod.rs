//! The ACP bridge: serves `session/new`, `session/load`, `session/prompt`
//! and `session/cancel` over a connection, keeping one [`SessionRecord`]
//! (with its [`AgentHandle`]) per session, and tearing everything down on
//! client disconnect or on its own unload through ONE memoized quiesce.
//!
//! States of the connection: `open` → `closed` (disconnect or unload; final).
//! Quiesce: `idle` → `running` (every record disposed concurrently) →
//! `done`. The running quiesce is a [`Relay`] kept in the state, driven by
//! every caller of `disconnect` and `unload`: a caller that gives up on
//! either (a timeout, a `select`) leaves it where it stopped, and the next
//! caller continues it (D8; fault M15 runs it inside the first caller). A `session/new` or `session/load` still awaiting its agent when
//! the connection closes disposes what it got and fails (A1, A7); the
//! check and the record's insertion happen under the lock quiesce takes
//! the records under, so nothing slips between them.

pub mod framing;
mod logs;
pub mod outbound;
pub mod server;

use crate::events::Hooks;
use crate::journal::{Cause, EndReason};
use crate::provider::{AgentHandle, CreateError, Provider};
use crate::rt::{Monitor, Relay, Rt, Wait};
use crate::scope::Scope;
use lifecycle_spec::faults::Fault;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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

/// One session of the bridge.
pub struct SessionRecord<R: Rt> {
    /// The session's handle: the bridge is its owner.
    pub handle: AgentHandle<R>,
    prompt_in_flight: bool,
    /// `session/cancel` arrived while the prompt was in flight: the next
    /// prompt waits for its answer instead of failing (A8).
    cancelled: bool,
}

enum Quiesce<R: Rt> {
    Idle,
    /// Every record's disposal, driven by every caller (D8).
    Started(Arc<Relay<R>>),
}

struct State<R: Rt> {
    closed: bool,
    quiesce: Quiesce<R>,
    quiesces: u32,
    sessions: BTreeMap<String, SessionRecord<R>>,
    loading: BTreeSet<String>,
    next: u64,
}

/// Undoes a mark in the bridge's state for session `id` when dropped: when
/// the call that set it ends, and when its caller gives up mid-way (D8).
struct Unmark<'a, R: Rt> {
    state: &'a Monitor<R, State<R>>,
    id: &'a str,
    mark: fn(&mut State<R>, &str),
}

impl<R: Rt> Drop for Unmark<'_, R> {
    fn drop(&mut self) {
        let (mark, id) = (self.mark, self.id);
        self.state.update(|s| mark(s, id));
    }
}

/// The bridge.
pub struct Bridge<R: Rt> {
    provider: Arc<Provider<R>>,
    scope: Scope<R>,
    state: Monitor<R, State<R>>,
    hooks: Hooks<R>,
    /// Session ids are this prefix and a counter.
    prefix: String,
}

impl<R: Rt> Bridge<R> {
    /// A bridge creating agents through `provider`, owned by `scope` (the
    /// bridge plugin's scope; it outlives a disconnect). Session ids are
    /// `sess-1`, `sess-2`, ...: deterministic, for the checkers.
    pub fn new(provider: Arc<Provider<R>>, scope: Scope<R>) -> Arc<Self> {
        Self::build(provider, scope, Hooks::none(), "sess-")
    }

    /// [`new`](Self::new), observed by `hooks`, with their faults on.
    #[cfg(feature = "faults")]
    pub fn with_hooks(provider: Arc<Provider<R>>, scope: Scope<R>, hooks: Hooks<R>) -> Arc<Self> {
        Self::build(provider, scope, hooks, "sess-")
    }

    /// [`with_prefix`](Self::with_prefix), observed by `hooks`, with their
    /// faults on.
    #[cfg(feature = "faults")]
    pub fn with_prefix_and_hooks(
        provider: Arc<Provider<R>>,
        scope: Scope<R>,
        hooks: Hooks<R>,
        prefix: &str,
    ) -> Arc<Self> {
        Self::build(provider, scope, hooks, prefix)
    }

    /// [`new`](Self::new), with session ids `<prefix>1`, `<prefix>2`, ...
    /// The server gives each process a random prefix, so two processes on
    /// one session directory never share an id (A9).
    pub fn with_prefix(provider: Arc<Provider<R>>, scope: Scope<R>, prefix: &str) -> Arc<Self> {
        Self::build(provider, scope, Hooks::none(), prefix)
    }

    fn build(
        provider: Arc<Provider<R>>,
        scope: Scope<R>,
        hooks: Hooks<R>,
        prefix: &str,
    ) -> Arc<Self> {
        Arc::new(Bridge {
            prefix: prefix.to_string(),
            provider,
            scope,
            state: Monitor::new(State {
                closed: false,
                quiesce: Quiesce::Idle,
                quiesces: 0,
                sessions: BTreeMap::new(),
                loading: BTreeSet::new(),
                next: 0,
            }),
            hooks,
        })
    }

    /// Ids of the sessions the bridge holds.
    pub fn sessions(&self) -> Vec<String> {
        self.state.read(|s| s.sessions.keys().cloned().collect())
    }

    /// How many times a quiesce actually ran (A6: at most once).
    pub fn quiesce_runs(&self) -> u32 {
        self.state.read(|s| s.quiesces)
    }

    /// `session/new`.
    pub async fn new_session(&self) -> Result<String, AcpError> {
        let id = self.state.update(|s| {
            if s.closed {
                return None;
            }
            s.next += 1;
            Some(format!("{}{}", self.prefix, s.next))
        });
        let id = id.ok_or(AcpError::Disposed)?;
        let handle = match self.provider.create(&id, &self.scope).await {
            Ok(h) => h,
            Err(CreateError::OwnerUnloaded(_)) => return Err(AcpError::ClosedDuringNew),
            Err(e) => return Err(AcpError::Create(e)),
        };
        self.publish(
            id,
            handle,
            self.hooks.has(Fault::M7),
            AcpError::ClosedDuringNew,
        )
        .await
    }

    /// `session/load`: resume the session `id` from its durable log.
    pub async fn load_session(&self, id: &str) -> Result<String, AcpError> {
        let live = self.provider.registry().get(id).is_some();
        // Refused: why, and the serial of this bridge's own session of `id`.
        let check = |s: &State<R>| {
            let refuse = |e| Err((e, s.sessions.get(id).map(|r| r.handle.serial())));
            if s.closed {
                return refuse(AcpError::Disposed);
            }
            if live || s.sessions.contains_key(id) || s.loading.contains(id) {
                return refuse(AcpError::AlreadyLoaded(id.to_string()));
            }
            Ok(())
        };
        let claimed = if self.hooks.has(Fault::M13) {
            // M13: check, then mark, in two lock sections.
            self.state.read(check).map(|()| {
                self.state.update(|s| s.loading.insert(id.to_string()));
            })
        } else {
            self.state.update(|s| {
                check(s)?;
                s.loading.insert(id.to_string());
                Ok(())
            })
        };
        if let Err((e, mine)) = claimed {
            // D10: a session of this bridge that a storage error left
            // refusing appends is recovered by its load, in place.
            if let (AcpError::AlreadyLoaded(_), Some(serial)) = (&e, mine) {
                let healed = self.provider.store().heal(id, serial);
                if healed.map_err(|e| AcpError::Storage(e.to_string()))? {
                    return Ok(id.to_string());
                }
            }
            return Err(e);
        }
        // Frees the id when the resume ends or its caller gives up (D8).
        let loading = Unmark {
            state: &self.state,
            id,
            mark: |s, id| {
                s.loading.remove(id);
            },
        };
        let resumed = self.provider.resume(id, &self.scope).await;
        drop(loading);
        let handle = match resumed {
            Ok(h) => h,
            Err(CreateError::AlreadyExists(_)) => {
                return Err(AcpError::AlreadyLoaded(id.to_string()))
            }
            Err(CreateError::OwnerUnloaded(_)) => return Err(AcpError::ClosedDuringLoad),
            Err(e @ CreateError::Storage(_)) => return Err(AcpError::Create(e)),
        };
        self.publish(
            id.to_string(),
            handle,
            self.hooks.has(Fault::M8),
            AcpError::ClosedDuringLoad,
        )
        .await
    }

    /// Keep `handle` in a record, unless the connection closed meanwhile:
    /// then dispose it and fail (`ignore_close` is fault M7/M8).
    async fn publish(
        &self,
        id: String,
        handle: AgentHandle<R>,
        ignore_close: bool,
        err: AcpError,
    ) -> Result<String, AcpError> {
        let kept = self.state.update(|s| {
            if s.closed && !ignore_close {
                return false;
            }
            s.sessions.insert(
                id.clone(),
                SessionRecord {
                    handle: handle.clone(),
                    prompt_in_flight: false,
                    cancelled: false,
                },
            );
            true
        });
        if kept {
            Ok(id)
        } else {
            handle.dispose_as("acp-closed").await;
            Err(err)
        }
    }

    /// `session/prompt`: one prompt in flight per session (A8).
    pub async fn prompt(
        &self,
        id: &str,
        prompt: impl Into<crate::agent::core::PromptSpec>,
    ) -> Result<StopReason, AcpError> {
        // A8: a prompt sent while a cancelled one is still in flight waits
        // for that one's answer, then runs; any other second prompt fails.
        let agent = self
            .state
            .wait_until("cancelled prompt answered (A8)", |s| {
                let Some(rec) = s.sessions.get_mut(id) else {
                    return Some(Err(AcpError::UnknownSession(id.to_string())));
                };
                match (rec.prompt_in_flight, rec.cancelled) {
                    (true, true) => None,
                    (true, false) => Some(Err(AcpError::PromptInFlight(id.to_string()))),
                    (false, _) => {
                        rec.prompt_in_flight = true;
                        rec.cancelled = false;
                        Some(Ok(rec.handle.agent.clone()))
                    }
                }
            })
            .await?;
        // Clears the flag when the prompt is answered or its caller gives
        // up (D8: a dropped prompt does not wedge the session).
        let _in_flight = Unmark {
            state: &self.state,
            id,
            mark: |s, id| {
                if let Some(rec) = s.sessions.get_mut(id) {
                    rec.prompt_in_flight = false;
                    rec.cancelled = false;
                }
            },
        };
        // The answer waits for the turn's closing flush: a storage failure
        // anywhere in the turn is an error, never `end_turn` (D10).
        match agent.send(prompt) {
            Ok(p) => match agent.settled(p).await {
                (_, Some(error)) => Err(AcpError::Storage(error)),
                (Some(EndReason::Completed), None) => Ok(StopReason::EndTurn),
                _ => Ok(StopReason::Cancelled),
            },
            Err(_) => Ok(StopReason::Cancelled),
        }
    }

    /// `session/cancel` → `cancel(user)`; a no-op for an unknown session (A2, A3).
    pub fn cancel(&self, id: &str) {
        // Marked before the cancel takes effect, so a prompt that follows
        // this notice finds the mark (A8).
        if let Some(agent) = self.state.update(|s| {
            s.sessions.get_mut(id).map(|r| {
                r.cancelled |= r.prompt_in_flight;
                r.handle.agent.clone()
            })
        }) {
            agent.cancel(Cause::User);
        }
    }

    /// Client disconnect: quiesce.
    pub async fn disconnect(&self) {
        self.quiesce().await
    }

    /// The bridge's own unload: quiesce, then unload its scope.
    pub async fn unload(&self) {
        self.quiesce().await;
        self.scope.unload().await;
    }

    /// Close the connection and dispose every session, once (A6); every
    /// caller drives the one run and resolves when it is over, even if the
    /// caller that started it gave up (D8).
    async fn quiesce(&self) {
        let relay = self.state.update(|s| {
            s.closed = true;
            match &s.quiesce {
                Quiesce::Started(relay) => relay.clone(),
                Quiesce::Idle => {
                    s.quiesces += 1;
                    let records = std::mem::take(&mut s.sessions);
                    let work = async move {
                        let all = records
                            .into_values()
                            .map(|r| async move { r.handle.dispose_as("acp-quiesce").await });
                        futures::future::join_all(all).await;
                    };
                    let relay = Arc::new(Relay::new(Box::pin(work)));
                    s.quiesce = Quiesce::Started(relay.clone());
                    relay
                }
            }
        });
        match () {
            #[cfg(feature = "faults")]
            () if self.hooks.has(Fault::M15) => relay.drive_unguarded(Wait::ACP_QUIESCE).await,
            () => relay.drive_parking(Wait::ACP_QUIESCE).await,
        }
    }
}
