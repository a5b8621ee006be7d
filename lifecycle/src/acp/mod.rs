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
//!
//! A session's record: `loading` (resume in flight; no record yet) →
//! `replaying` (kept, its history being sent by
//! [`Bridge::load_session_then`]'s replay) → `live` → taken by quiesce.
//! A prompt: `waiting` (a ticket: its session is loading or replaying
//! (A9), a cancelled prompt is still in flight (A8), or an earlier prompt
//! of the session waits: they are admitted in the order they arrived) →
//! `claimed` (the one in flight) → answered. A `session/cancel` marks every waiting
//! ticket of its session, so a waiting prompt answers `cancelled` without
//! running (A2, A8; fault M27 marks only the claimed one), and a prompt
//! never runs while its session replays (A9; fault M28 serves it at once).

mod admit;
mod answers;
pub mod core;
pub mod framing;
pub mod init_gate;
pub mod large_buffers;
pub mod logs;
pub mod outbound;
mod prompt_text;
pub mod responder;
pub mod server;
mod session_cap;

pub use admit::{admit, Admitted};
pub use answers::{AcpError, StopReason};
pub use session_cap::MAX_SESSIONS;

use crate::journal::{Cause, EndReason};
use crate::provider::{AgentHandle, CreateError, Provider};
use crate::rt::context::fault;
use crate::rt::{Monitor, Relay, Rt, Wait};
use crate::scope::Scope;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One session of the bridge.
pub struct SessionRecord<R: Rt> {
    /// The session's handle: the bridge is its owner.
    pub handle: AgentHandle<R>,
    prompt_in_flight: bool,
    /// `session/cancel` arrived while the prompt was in flight: the next
    /// prompt waits for its answer instead of failing (A8).
    cancelled: bool,
    /// Its history is being replayed by the load that kept it: prompts
    /// wait until the load's answer (A9).
    replaying: bool,
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
    /// Sessions a `session/close` took, while their teardown runs: a
    /// quiesce disposes them too (joining the same memoized teardown), so
    /// none outlives it (A1).
    closing: BTreeMap<String, AgentHandle<R>>,
    loading: BTreeSet<String>,
    next: u64,
    /// Prompts waiting to be claimed (A8, A9), by ticket: the session and
    /// whether a `session/cancel` of that session arrived meanwhile.
    waiting: BTreeMap<u64, (String, bool)>,
    tickets: u64,
}

/// How a record comes to be kept.
#[derive(Clone, Copy)]
enum Kept {
    /// By `session/new`.
    New,
    /// By a load; `replaying`: its replay follows.
    Loaded { replaying: bool },
}

/// What a prompt's check of the state decides.
enum Admit<R: Rt> {
    /// Claimed: it runs on this agent.
    Run(crate::agent::Agent<R>),
    /// It waits (A8, A9).
    Wait,
    /// Cancelled while it waited: it never runs (A2, A8).
    Cancelled,
    /// Refused.
    Fail(AcpError),
}

/// Drops a waiting prompt's ticket when the prompt stops waiting or its
/// caller gives up (D8): no ticket outlives its prompt.
struct Ticket<'a, R: Rt> {
    state: &'a Monitor<R, State<R>>,
    id: std::sync::atomic::AtomicU64,
}

impl<R: Rt> Ticket<'_, R> {
    /// This prompt's ticket, taken on its first wait.
    fn take(&self, s: &mut State<R>, session: &str) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.id.load(Relaxed) == 0 {
            s.tickets += 1;
            s.waiting.insert(s.tickets, (session.to_string(), false));
            self.id.store(s.tickets, Relaxed);
        }
    }

    /// Whether this prompt holds a ticket.
    fn held(&self) -> bool {
        self.id.load(std::sync::atomic::Ordering::Relaxed) != 0
    }

    /// Whether an earlier prompt of `session` still waits to be claimed
    /// (every waiting one is earlier than a prompt with no ticket yet; a
    /// cancelled one will never be claimed, and holds nobody up).
    fn behind(&self, s: &State<R>, session: &str) -> bool {
        let mine = self.id.load(std::sync::atomic::Ordering::Relaxed);
        s.waiting
            .range(..if mine == 0 { u64::MAX } else { mine })
            .any(|(_, w)| w.0 == session && !w.1)
    }

    /// Whether a cancel marked this prompt's ticket while it waited.
    fn cancelled(&self, s: &State<R>) -> bool {
        let id = self.id.load(std::sync::atomic::Ordering::Relaxed);
        s.waiting.get(&id).is_some_and(|w| w.1)
    }

    /// Give the ticket back (in the lock section that decided).
    fn give_back(&self, s: &mut State<R>) {
        let id = self.id.swap(0, std::sync::atomic::Ordering::Relaxed);
        if id != 0 {
            s.waiting.remove(&id);
        }
    }
}

impl<R: Rt> Drop for Ticket<'_, R> {
    fn drop(&mut self) {
        if *self.id.get_mut() != 0 {
            let id = *self.id.get_mut();
            self.state.update(|s| s.waiting.remove(&id));
        }
    }
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

/// Clears the replaying mark of session `id`'s record of `serial` when its
/// load's replay ends or its caller gives up (D8); a later record of the
/// same id (after a `session/close`) keeps its own mark (A9).
struct ReplayMark<'a, R: Rt> {
    state: &'a Monitor<R, State<R>>,
    id: &'a str,
    serial: u64,
}

impl<R: Rt> Drop for ReplayMark<'_, R> {
    fn drop(&mut self) {
        self.state.update(|s| {
            if let Some(r) = s.sessions.get_mut(self.id) {
                if r.handle.serial() == self.serial {
                    r.replaying = false;
                }
            }
        });
    }
}

/// The bridge.
pub struct Bridge<R: Rt> {
    provider: Arc<Provider<R>>,
    scope: Scope<R>,
    state: Monitor<R, State<R>>,
    /// Session ids are this prefix and a counter.
    prefix: String,
}

impl<R: Rt> Bridge<R> {
    /// A bridge creating agents through `provider`, owned by `scope` (the
    /// bridge plugin's scope; it outlives a disconnect). Session ids are
    /// `sess-1`, `sess-2`, ...: deterministic, for the checkers.
    pub fn new(provider: Arc<Provider<R>>, scope: Scope<R>) -> Arc<Self> {
        Self::with_prefix(provider, scope, "sess-")
    }

    /// [`new`](Self::new), with session ids `<prefix>1`, `<prefix>2`, ...
    /// The server gives each process a random prefix, so two processes on
    /// one session directory never share an id (A9).
    pub fn with_prefix(provider: Arc<Provider<R>>, scope: Scope<R>, prefix: &str) -> Arc<Self> {
        Arc::new(Bridge {
            prefix: prefix.to_string(),
            provider,
            scope,
            state: Monitor::new(State {
                closed: false,
                quiesce: Quiesce::Idle,
                quiesces: 0,
                sessions: BTreeMap::new(),
                closing: BTreeMap::new(),
                loading: BTreeSet::new(),
                next: 0,
                waiting: BTreeMap::new(),
                tickets: 0,
            }),
        })
    }

    /// How many sessions the bridge holds or is loading.
    pub fn session_count(&self) -> usize {
        self.state.read(|s| s.sessions.len() + s.loading.len())
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
        self.publish(id, handle, fault!(M7), AcpError::ClosedDuringNew)
            .await
    }

    /// `session/load`: resume the session `id` from its durable log, with
    /// nothing to replay.
    pub async fn load_session(&self, id: &str) -> Result<String, AcpError> {
        self.load(
            id,
            None::<fn(bool) -> std::future::Ready<Result<(), AcpError>>>,
            true,
        )
        .await
    }

    /// `session/load`: resume the session `id` from its durable log, then
    /// run `replay` (the history sent to the client) before answering (A9).
    /// From the record's keeping until `replay` ends, a prompt for `id`
    /// waits, as it does while the resume runs; a failed replay disposes
    /// the session and fails the load, and the prompts that waited fail as
    /// for an unknown session. A session of this bridge that a storage
    /// error left refusing appends is healed in place and replayed too;
    /// `replay` is called with `true` then.
    pub async fn load_session_then<F, Fut>(&self, id: &str, replay: F) -> Result<String, AcpError>
    where
        F: FnOnce(bool) -> Fut,
        Fut: std::future::Future<Output = Result<(), AcpError>>,
    {
        self.load(id, Some(replay), true).await
    }

    /// `session/load` of an id whose log this process holds already (its
    /// session's, or a load's or a close's in flight): never a fresh
    /// resume. A session of this bridge that a storage error left refusing
    /// appends is healed in place and `replay` runs, as for
    /// [`Bridge::load_session_then`]; anything else is refused as already
    /// loaded (A9: the log has one holder, and this load is not it).
    pub async fn reload_then<F, Fut>(&self, id: &str, replay: F) -> Result<String, AcpError>
    where
        F: FnOnce(bool) -> Fut,
        Fut: std::future::Future<Output = Result<(), AcpError>>,
    {
        self.load(id, Some(replay), false).await
    }

    /// `session/load`, with a replay or without one; `fresh`: it may
    /// resume the session, else it only heals this bridge's own.
    async fn load<F, Fut>(
        &self,
        id: &str,
        replay: Option<F>,
        fresh: bool,
    ) -> Result<String, AcpError>
    where
        F: FnOnce(bool) -> Fut,
        Fut: std::future::Future<Output = Result<(), AcpError>>,
    {
        let live = self.provider.registry().get(id).is_some();
        // Refused: why, and the serial of this bridge's own session of `id`.
        let check = |s: &State<R>| {
            let refuse = |e| Err((e, s.sessions.get(id).map(|r| r.handle.serial())));
            if s.closed {
                return refuse(AcpError::Disposed);
            }
            if !fresh || live || s.sessions.contains_key(id) || s.loading.contains(id) {
                return refuse(AcpError::AlreadyLoaded(id.to_string()));
            }
            Ok(())
        };
        let claimed = if fault!(M13) {
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
                    return match replay {
                        Some(replay) => self.replayed(id, serial, replay, true).await,
                        None => Ok(id.to_string()),
                    };
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
        let handle = match resumed {
            Ok(h) => h,
            Err(CreateError::AlreadyExists(_)) => {
                return Err(AcpError::AlreadyLoaded(id.to_string()))
            }
            Err(CreateError::OwnerUnloaded(_)) => return Err(AcpError::ClosedDuringLoad),
            Err(e @ CreateError::Storage(_)) => return Err(AcpError::Create(e)),
        };
        // The id stays marked loading until its record is kept (kept
        // replaying, if a replay follows), in the same lock section: a
        // prompt between the two would find neither and fail as unknown
        // (A9).
        let serial = handle.serial();
        let published = self
            .publish_as(
                id.to_string(),
                handle,
                fault!(M8),
                AcpError::ClosedDuringLoad,
                Kept::Loaded {
                    replaying: replay.is_some(),
                },
            )
            .await;
        drop(loading);
        published?;
        match replay {
            Some(replay) => self.replayed(id, serial, replay, false).await,
            None => Ok(id.to_string()),
        }
    }

    /// Run a load's `replay` with session `id` marked replaying (prompts
    /// wait, A9); clear the mark when it ends or its caller gives up (D8).
    /// A failed replay takes the session's record back and disposes it.
    /// `mark`: the record is not marked replaying yet (a healed session);
    /// `replay` is told which (`true`: it replays a session it healed).
    /// The mark and the record are this load's by their `serial` (the
    /// session it published or heals): once a `session/close` took the
    /// record, nothing here touches a later load's record of the same id,
    /// even one published before this replay began (A9).
    async fn replayed<F, Fut>(
        &self,
        id: &str,
        serial: u64,
        replay: F,
        mark: bool,
    ) -> Result<String, AcpError>
    where
        F: FnOnce(bool) -> Fut,
        Fut: std::future::Future<Output = Result<(), AcpError>>,
    {
        let ours = self.state.update(|s| {
            let r = s
                .sessions
                .get_mut(id)
                .filter(|r| r.handle.serial() == serial)?;
            if mark {
                r.replaying = true;
            }
            Some(())
        });
        let Some(()) = ours else {
            // Closed (or quiesced) before its replay began.
            return Err(AcpError::ClosedDuringReplay(id.to_string()));
        };
        let replaying = ReplayMark {
            state: &self.state,
            id,
            serial,
        };
        let result = replay(mark).await;
        if let Err(e) = result {
            let taken = self.state.update(|s| {
                let mine = s
                    .sessions
                    .get(id)
                    .is_some_and(|r| r.handle.serial() == serial);
                mine.then(|| s.sessions.remove(id))
                    .flatten()
                    .map(|r| r.handle)
            });
            drop(replaying);
            if let Some(handle) = taken {
                handle.dispose_as("acp-replay-failed").await;
            }
            return Err(e);
        }
        drop(replaying);
        Ok(id.to_string())
    }

    /// For the replay of a load of `id`, called as it begins: a gate each
    /// item passes through. It sends the item (runs `send`) only while the
    /// session is still this load's, in the lock section that checks it,
    /// so no item is sent once a `session/close` or the quiesce took the
    /// session (A9; a later load may hold the id by then). `false`: it was
    /// taken, the item was not sent, and the replay stops with
    /// [`AcpError::ClosedDuringReplay`].
    pub fn replay_gate<'a>(
        &'a self,
        id: &'a str,
    ) -> impl Fn(&mut dyn FnMut()) -> bool + Send + Sync + 'a {
        let replaying = |s: &State<R>| {
            s.sessions
                .get(id)
                .filter(|r| r.replaying)
                .map(|r| r.handle.serial())
        };
        let serial = self.state.read(replaying);
        move |send| {
            self.state.read(|s| {
                let ours = serial.is_some() && replaying(s) == serial;
                if ours {
                    send();
                }
                ours
            })
        }
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
        self.publish_as(id, handle, ignore_close, err, Kept::New)
            .await
    }

    /// [`publish`](Self::publish), for `session/new` or a load: a loaded
    /// record leaves `loading` in the lock section that keeps it, kept
    /// replaying if a replay follows, so no prompt is claimed before the
    /// replay runs (A9).
    async fn publish_as(
        &self,
        id: String,
        handle: AgentHandle<R>,
        ignore_close: bool,
        err: AcpError,
        kept: Kept,
    ) -> Result<String, AcpError> {
        let replaying = matches!(kept, Kept::Loaded { replaying: true });
        let kept = self.state.update(|s| {
            if s.closed && !ignore_close {
                return false;
            }
            if let Kept::Loaded { .. } = kept {
                s.loading.remove(&id);
            }
            s.sessions.insert(
                id.clone(),
                SessionRecord {
                    handle: handle.clone(),
                    prompt_in_flight: false,
                    cancelled: false,
                    replaying,
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
        // A9: a prompt for a session being loaded waits for the load's
        // answer. A cancel that arrives while it waits cancels it (A2).
        let (m27, m28) = (fault!(M27), fault!(M28));
        let ticket = Ticket {
            state: &self.state,
            id: std::sync::atomic::AtomicU64::new(0),
        };
        let mut prompt = Some(prompt.into());
        let admitted = self
            .state
            .wait_until("prompt admitted (A8, A9)", |s| {
                let admit = if ticket.cancelled(s) && !m27 {
                    Admit::Cancelled
                } else if ticket.behind(s, id) {
                    // Requests are served in the order they arrived: an
                    // earlier prompt of the session still waits.
                    Admit::Wait
                } else {
                    match s.sessions.get(id) {
                        None if s.loading.contains(id) && !m28 => Admit::Wait,
                        None => Admit::Fail(AcpError::UnknownSession(id.to_string())),
                        Some(rec) if rec.replaying && !m28 => Admit::Wait,
                        Some(rec) => match (rec.prompt_in_flight, rec.cancelled) {
                            (true, true) => Admit::Wait,
                            (true, false) => Admit::Fail(AcpError::PromptInFlight(id.to_string())),
                            (false, _) => Admit::Run(rec.handle.agent.clone()),
                        },
                    }
                };
                match admit {
                    Admit::Wait => {
                        // The first wait registers the prompt's place in
                        // the session's order: a write, said as such.
                        if !ticket.held() {
                            ticket.take(s.parking_write(), id);
                        }
                        None
                    }
                    Admit::Run(agent) => {
                        ticket.give_back(s);
                        let rec = s.sessions.get_mut(id).expect("checked above");
                        rec.prompt_in_flight = true;
                        rec.cancelled = false;
                        // A2: handed to the agent in the admission's own
                        // section, so a cancel is wholly before it (and
                        // finds it waiting, or nothing) or wholly after it
                        // (and reaches the turn): none finds the agent idle
                        // with the prompt admitted but not yet sent.
                        let sent = agent.send(prompt.take().expect("admitted once"));
                        Some(Ok(Some((agent, sent))))
                    }
                    Admit::Cancelled => {
                        ticket.give_back(s);
                        Some(Ok(None))
                    }
                    Admit::Fail(e) => {
                        ticket.give_back(s);
                        Some(Err(e))
                    }
                }
            })
            .await?;
        drop(ticket);
        let Some((agent, sent)) = admitted else {
            return Ok(StopReason::Cancelled);
        };
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
        match sent {
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
        let m27 = fault!(M27);
        if let Some(agent) = self.state.update(|s| {
            // A2, A8: every prompt still waiting for this session is
            // cancelled too (M27: only the claimed one is).
            if !m27 {
                for w in s.waiting.values_mut().filter(|w| w.0 == id) {
                    w.1 = true;
                }
            }
            s.sessions.get_mut(id).map(|r| {
                r.cancelled |= r.prompt_in_flight;
                r.handle.agent.clone()
            })
        }) {
            agent.cancel(Cause::User);
        }
    }

    /// `session/close`: the session's record is dropped, a prompt of it
    /// still waiting is cancelled (as by `session/cancel`), and its agent
    /// is disposed: a prompt in flight answers `cancelled` (as A4 has it
    /// for a disconnect), its background jobs are drained (S7). Resolves
    /// when the teardown is done; a caller that gives up leaves it to
    /// finish (the dispose is memoized, D8). An unknown session (never
    /// opened, closed already, or still loading) is an error.
    pub async fn close(&self, id: &str) -> Result<(), AcpError> {
        let record = self.state.update(|s| {
            let record = s.sessions.remove(id)?;
            for w in s.waiting.values_mut().filter(|w| w.0 == id) {
                w.1 = true;
            }
            s.closing.insert(id.to_string(), record.handle.clone());
            Some(record)
        });
        let record = record.ok_or_else(|| AcpError::UnknownSession(id.to_string()))?;
        let _closing = Unmark {
            state: &self.state,
            id,
            mark: |s, id| {
                s.closing.remove(id);
            },
        };
        record.handle.dispose_as("session/close").await;
        Ok(())
    }

    /// Client disconnect: quiesce.
    pub async fn disconnect(&self) {
        self.quiesce().await
    }

    /// Resolves once the quiesce that has begun is over, without driving
    /// it (at once if none has begun): work a dropped caller started
    /// finishes by itself (D8). `label` names the wait in stall reports.
    pub async fn quiesced(&self, label: Wait) {
        let relay = self.state.read(|s| match &s.quiesce {
            Quiesce::Started(relay) => Some(relay.clone()),
            Quiesce::Idle => None,
        });
        if let Some(relay) = relay {
            relay.finished(label).await;
        }
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
                    let closing = std::mem::take(&mut s.closing);
                    let work = async move {
                        let all = records
                            .into_values()
                            .map(|r| r.handle)
                            .chain(closing.into_values())
                            .map(|h| async move { h.dispose_as("acp-quiesce").await });
                        futures::future::join_all(all).await;
                    };
                    let relay = Arc::new(Relay::new(Box::pin(work)));
                    s.quiesce = Quiesce::Started(relay.clone());
                    relay
                }
            }
        });
        match () {
            () if fault!(M15) => relay.drive_unguarded(Wait::ACP_QUIESCE).await,
            // M29: the work of a dropped quiesce waits for a later caller.
            () if fault!(M29) => relay.drive_parking(Wait::ACP_QUIESCE).await,
            () => relay.drive(Wait::ACP_QUIESCE).await,
        }
    }
}
