//! The session store: durable, append-only session logs with publication.
//!
//! A session's life: `prepare` (private: a serial, nothing visible) →
//! `enter` (published, `Live`; rejects a second live session with the same
//! id, R1) → `announce` (`session/created`) → appends through its
//! publication hooks, `flush` makes them durable → `retire` (the id is free
//! again; the session still takes its closing appends, R2) → `detach` (hooks
//! removed, `session/disposed`). An append that arrives after `detach` is
//! lost, and journaled as such (that is what D3 forbids).
//!
//! Two kinds of object hold this: the store's table (the published
//! sessions and their phase, what `prepare`, `enter`, `retire` and
//! `detach` change) and each session's writes (its pending entries and
//! its storage failure, what its sink's appends and flushes change). A
//! session's writes go `prepared` → `entered` (by `enter`) → `detached` (by
//! `detach`, after the table lets it go); an append outside `entered` is
//! lost.
//!
//! A flush writes the pending batch, awaits (an I/O point: a crash may land
//! between the write and the sync), then syncs. A failed write or sync
//! marks the session `failed`: the flush returns the error and every later
//! append or flush of that session is refused until its next turn recovers
//! it, or it is loaded again (D10; fault M18 logs the error and goes on,
//! fault M26 never recovers). Recovery re-opens the log from disk, repairs
//! it as a load does (D9), and closes the failed turn `turn/end {failed}`. [`SessionStore::recover`]
//! is how a session is loaded after a crash (D9): a torn last record is
//! truncated before anything is appended (fault M17 keeps it), and a turn
//! whose `turn/start` is durable but whose `turn/end` is not is closed with
//! `turn/end {interrupted}`.

pub mod durable;

use crate::bus::panic_message;
use crate::events::LifecycleEvent;
use crate::journal::EndReason;
use crate::rt::context::{fault, observe};
use crate::rt::{BoxFuture, Monitor, Mutex, Rt};
use crate::session_log::{Entry, SessionSink, StorageError};
use durable::{Durable, DurableRecord, Loaded, TornTail};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Store errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A live session already has this id (R1).
    AlreadyExists(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::AlreadyExists(id) => write!(f, "session {id:?} already exists"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A session prepared privately: not visible to anyone until `enter`.
#[must_use = "a prepared session is published with `enter` or dropped"]
pub struct Prepared<R: Rt> {
    id: String,
    serial: u64,
    /// Its writes, which its sink holds from here on.
    writes: Arc<Monitor<R, Writes>>,
}

impl<R: Rt> std::fmt::Debug for Prepared<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("id", &self.id)
            .field("serial", &self.serial)
            .finish_non_exhaustive()
    }
}

impl<R: Rt> Prepared<R> {
    /// The id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The serial the session will have.
    pub fn serial(&self) -> u64 {
        self.serial
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Live,
    Retiring,
}

/// Where a session's writes stand: not published yet, published, or
/// detached (its hooks removed: an append is lost).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Open {
    #[default]
    Prepared,
    Entered,
    Detached,
}

/// What a session's appends and flushes touch, in a monitor of its own:
/// one session's writes are independent of another's, and of the table's
/// changes (a create, a retirement), in the simulator's reduction.
#[derive(Default)]
struct Writes {
    open: Open,
    pending: Vec<Entry>,
    /// The storage error that failed this session (D10).
    failed: Option<String>,
}

/// A published session in the store's table.
struct Session<R: Rt> {
    id: String,
    serial: u64,
    phase: Phase,
    writes: Arc<Monitor<R, Writes>>,
}

/// The store's table: which sessions are published, and in what phase
/// (what R1 and R2 read), and the serials given.
struct State<R: Rt> {
    sessions: Vec<Session<R>>,
    next_serial: u64,
}

/// A disposal listener (`session/disposed`, `agent/disposed`); gets the id.
pub type Listener = Arc<dyn Fn(&str) + Send + Sync>;

/// The session store.
pub struct SessionStore<R: Rt> {
    state: Monitor<R, State<R>>,
    durable: Arc<dyn Durable>,
    listeners: Mutex<R, Vec<Listener>>,
}

impl<R: Rt> SessionStore<R> {
    /// A store over `durable`.
    pub fn new(durable: Arc<dyn Durable>) -> Arc<Self> {
        Arc::new(SessionStore {
            state: Monitor::new(State {
                sessions: Vec::new(),
                next_serial: 0,
            }),
            durable,
            listeners: Mutex::new(Vec::new()),
        })
    }

    /// Add a `session/disposed` listener.
    pub fn on_disposed(&self, f: Listener) {
        self.listeners.with(|l| l.push(f));
    }

    fn live_with_id(st: &State<R>, id: &str) -> usize {
        st.sessions
            .iter()
            .filter(|s| s.id == id && s.phase == Phase::Live)
            .count()
    }

    /// Build private state for `id`. Fails fast if a live session has it
    /// (the authoritative check is `enter`'s).
    pub fn prepare(&self, id: &str) -> Result<Prepared<R>, StoreError> {
        let serial = self.state.update(|st| {
            if Self::live_with_id(st, id) > 0 {
                return Err(StoreError::AlreadyExists(id.to_string()));
            }
            st.next_serial += 1;
            Ok(st.next_serial)
        })?;
        Ok(Prepared {
            id: id.to_string(),
            serial,
            writes: Arc::new(Monitor::new(Writes::default())),
        })
    }

    /// Publish a prepared session: rechecks, under the lock, that no live
    /// session has its id (R1; fault M9 skips the recheck).
    /// Its writes are taken from then on (a session's sink exists from
    /// `prepare` on, but its agent starts, and appends, only after this).
    /// A session detached meanwhile stays detached.
    pub fn enter(&self, p: Prepared<R>) -> Result<(), StoreError> {
        let entered = self.state.update(|st| {
            if !fault!(M9) && Self::live_with_id(st, &p.id) > 0 {
                return None;
            }
            st.sessions.push(Session {
                id: p.id.clone(),
                serial: p.serial,
                phase: Phase::Live,
                writes: p.writes.clone(),
            });
            // Journaled under the store's lock: in the journal's order,
            // entries and retirements of one id are as the store saw them.
            observe::<R>(|| LifecycleEvent::SessionEntered {
                id: p.id.clone(),
                serial: p.serial,
            });
            Some(())
        });
        if entered.is_some() {
            p.writes.update(|w| {
                if w.open == Open::Prepared {
                    w.open = Open::Entered;
                }
            });
        }
        entered.ok_or(StoreError::AlreadyExists(p.id))
    }

    /// The writes of published session `serial`, if it is in the table.
    fn writes(&self, serial: u64) -> Option<Arc<Monitor<R, Writes>>> {
        self.state.read(|st| {
            st.sessions
                .iter()
                .find(|s| s.serial == serial)
                .map(|s| s.writes.clone())
        })
    }

    /// `session/created`.
    pub fn announce(&self, id: &str, serial: u64) {
        tracing::debug!(id, serial, "session/created");
    }

    /// Append through the session's publication hooks; lost (and journaled)
    /// if they were removed, refused if the session's storage failed (D10).
    /// A failed session's next turn recovers it: its first record (its
    /// `turn/start`, or a notice it owes the log, A11) re-opens the log
    /// from disk and repairs it ([`reopen`](Self::reopen)) before it is
    /// appended; if that fails too, the turn is refused and the next one
    /// tries again (fault M26 never recovers).
    pub fn append(&self, id: &str, serial: u64, entry: Entry) -> Result<(), StorageError> {
        match self.writes(serial) {
            Some(writes) => self.append_to(&writes, id, serial, entry),
            None => {
                Self::lost(id, serial, &entry);
                Ok(())
            }
        }
    }

    /// [`append`](Self::append) to the session whose writes are `writes`
    /// (its sink holds them): touches them alone.
    fn append_to(
        &self,
        writes: &Monitor<R, Writes>,
        id: &str,
        serial: u64,
        entry: Entry,
    ) -> Result<(), StorageError> {
        enum Then {
            Done,
            Lost(Entry),
            Reopen(Entry),
        }
        let recovers =
            matches!(entry, Entry::TurnStart { .. } | Entry::LateNotice { .. }) && !fault!(M26);
        let then = writes.update(|w| match w.open {
            Open::Entered => match &w.failed {
                Some(_) if recovers => Ok(Then::Reopen(entry)),
                Some(e) => Err(StorageError(format!("appends refused after: {e}"))),
                None => {
                    w.pending.push(entry);
                    Ok(Then::Done)
                }
            },
            Open::Prepared | Open::Detached => Ok(Then::Lost(entry)),
        })?;
        match then {
            Then::Done => {}
            Then::Lost(entry) => Self::lost(id, serial, &entry),
            Then::Reopen(entry) => {
                self.reopen(id, serial)?;
                // Detached while the log was re-opened: the entry is lost
                // as an append after the detach is (journaled).
                let dropped = writes.update(|w| {
                    if w.open != Open::Entered {
                        return Some(entry);
                    }
                    w.failed = None;
                    w.pending.push(entry);
                    None
                });
                if let Some(entry) = dropped {
                    Self::lost(id, serial, &entry);
                }
            }
        }
        Ok(())
    }

    /// An append that came after the session's hooks were removed (or
    /// before they were set): journaled as lost.
    fn lost(id: &str, serial: u64, entry: &Entry) {
        observe::<R>(|| LifecycleEvent::AppendDropped {
            id: id.to_string(),
            serial,
            entry: serde_json::to_string(entry).unwrap_or_default(),
        });
    }

    /// D10: a `session/load` of session `serial` of `id`, live in this
    /// process: if a storage failure left it refusing appends, its log is
    /// re-opened and repaired ([`reopen`](Self::reopen)) and it takes
    /// appends again (`Ok(true)`); `Ok(false)` if it had not failed. Fault
    /// M26 refuses until restart.
    pub fn heal(&self, id: &str, serial: u64) -> Result<bool, StorageError> {
        let Some(writes) = self.writes(serial) else {
            return Ok(false);
        };
        let error = writes.read(|w| (w.open == Open::Entered).then(|| w.failed.clone()));
        let Some(error) = error.flatten() else {
            return Ok(false);
        };
        if fault!(M26) {
            return Err(StorageError(format!("appends refused after: {error}")));
        }
        self.reopen(id, serial)?;
        writes.update(|w| {
            if w.open == Open::Entered {
                w.failed = None;
            }
        });
        Ok(true)
    }

    /// D10: re-open session `serial`'s log from disk after a storage
    /// failure and repair it (D9): a torn last record is cut, and the turn
    /// the failure left open is closed `turn/end {failed}`, synced. On
    /// error the session stays failed.
    pub fn reopen(&self, id: &str, serial: u64) -> Result<(), StorageError> {
        let repaired = self.repair(
            id,
            |s| (s == serial).then_some(EndReason::Failed),
            &mut |_| {},
        );
        repaired.map(drop).map_err(|e| {
            StorageError(format!(
                "the log could not be recovered after a failure: {e}"
            ))
        })
    }

    /// Make the session's appended entries durable: write, await (the I/O
    /// point), sync. A failure fails the session (D10).
    pub async fn flush(&self, id: &str, serial: u64) -> Result<(), StorageError> {
        match self.writes(serial) {
            Some(writes) => self.flush_from(&writes, id, serial).await,
            None => Ok(()),
        }
    }

    /// [`flush`](Self::flush) the session whose writes are `writes`.
    async fn flush_from(
        &self,
        writes: &Monitor<R, Writes>,
        id: &str,
        serial: u64,
    ) -> Result<(), StorageError> {
        let batch: Result<Vec<DurableRecord>, StorageError> = writes.update(|w| {
            if w.open != Open::Entered {
                return Ok(Vec::new());
            }
            if let Some(e) = &w.failed {
                return Err(StorageError(format!("appends refused after: {e}")));
            }
            Ok(w.pending
                .drain(..)
                .map(|entry| DurableRecord { serial, entry })
                .collect())
        });
        let batch = batch?;
        let written = if batch.is_empty() {
            Ok(())
        } else {
            self.durable.write(id, &batch)
        };
        R::yield_now().await;
        if !batch.is_empty() {
            if let Some(io) = self.durable.in_flight(id) {
                io.await;
            }
        }
        let result = written.and_then(|()| {
            if batch.is_empty() {
                Ok(())
            } else {
                self.durable.sync(id)
            }
        });
        match result {
            Ok(()) => Ok(()),
            Err(e) if fault!(M18) => {
                // M18: the failure is logged and otherwise ignored.
                tracing::error!(id, serial, error = %e, "session flush failed");
                Ok(())
            }
            Err(e) => {
                let error = e.to_string();
                writes.update(|w| {
                    if w.open == Open::Entered {
                        w.failed.get_or_insert(error.clone());
                        w.pending.clear();
                    }
                });
                observe::<R>(|| LifecycleEvent::StorageFailed {
                    id: id.to_string(),
                    serial,
                    error: error.clone(),
                });
                Err(StorageError(error))
            }
        }
    }

    /// The id becomes reusable: the session stops counting as live, but
    /// still takes its closing appends (R2).
    pub fn retire(&self, serial: u64) {
        self.state.update(|st| {
            if let Some(s) = st.sessions.iter_mut().find(|s| s.serial == serial) {
                s.phase = Phase::Retiring;
                observe::<R>(|| LifecycleEvent::SessionRetired {
                    id: s.id.clone(),
                    serial,
                });
            }
        });
    }

    /// Remove the session's hooks and emit `session/disposed`. A panicking
    /// listener is contained; it is reported as `Err` (D4 decides what the
    /// chain does with it).
    pub fn detach(&self, id: &str, serial: u64) -> Result<(), String> {
        let writes = self.state.update(|st| {
            let at = st.sessions.iter().position(|s| s.serial == serial)?;
            Some(st.sessions.remove(at).writes)
        });
        // Out of the table, then closed: an append or a flush in between
        // is taken as if it came just before the detach (an append left
        // pending is dropped here with the rest).
        let pending = writes.map(|w| {
            w.update(|w| {
                w.open = Open::Detached;
                std::mem::take(&mut w.pending)
            })
        });
        for entry in pending.unwrap_or_default() {
            Self::lost(id, serial, &entry);
        }
        emit::<R>("session/disposed", id, &self.listeners.with(|l| l.clone()))
    }

    /// Read a session's durable log as it is (no repair).
    pub fn load(&self, id: &str) -> std::io::Result<Loaded> {
        self.durable.load(id)
    }

    /// Load a session's log after a crash or a storage failure, repairing
    /// it first (D9): a torn last record is truncated (M17 keeps it), and
    /// every turn left open is closed with `turn/end {interrupted}`, synced.
    /// Later sessions get serials above every serial in the log. Returns
    /// the repaired log; `torn` says what was cut. Holds the log whole:
    /// [`recover_with`](Self::recover_with) does not.
    pub fn recover(&self, id: &str) -> std::io::Result<Loaded> {
        let mut records = Vec::new();
        let repaired = self.recover_with(id, &mut |r| records.push(r))?;
        Ok(Loaded {
            records,
            torn: repaired.torn,
        })
    }

    /// [`recover`](Self::recover), streamed: `keep` sees each record of
    /// the repaired log in order (the closing ones last), and none is held.
    pub fn recover_with(
        &self,
        id: &str,
        keep: &mut dyn FnMut(DurableRecord),
    ) -> std::io::Result<Repaired> {
        let repaired = self.repair(id, |_| Some(EndReason::Interrupted), keep)?;
        self.state
            .update(|st| st.next_serial = st.next_serial.max(repaired.top_serial));
        Ok(repaired)
    }

    /// Cut a torn last record (M17 keeps it) and close each open turn whose
    /// serial `close` gives a reason for, synced. Reads the log once, one
    /// record at a time, each handed to `keep`.
    fn repair(
        &self,
        id: &str,
        close: impl Fn(u64) -> Option<EndReason>,
        keep: &mut dyn FnMut(DurableRecord),
    ) -> std::io::Result<Repaired> {
        let mut open = OpenTurns::default();
        let (mut top_serial, mut next_prompt) = (0, None::<u64>);
        let torn = self.durable.scan(id, &mut |r| {
            open.see(&r);
            top_serial = top_serial.max(r.serial);
            next_prompt = next_prompt.max(Some(r.entry.prompt() + 1));
            keep(r);
            true
        })?;
        if let Some(torn) = &torn {
            if !fault!(M17) {
                self.durable.truncate(id, torn.offset)?;
            }
        }
        let closing: Vec<DurableRecord> = open
            .0
            .into_iter()
            .filter_map(|(serial, prompt)| {
                let reason = close(serial)?;
                Some(DurableRecord {
                    serial,
                    entry: Entry::TurnEnd { prompt, reason },
                })
            })
            .collect();
        if !closing.is_empty() {
            self.durable.write(id, &closing)?;
            self.durable.sync(id)?;
            closing.into_iter().for_each(keep);
        }
        Ok(Repaired {
            torn,
            top_serial,
            next_prompt,
        })
    }

    /// `(id, serial)` of every session in the table: published, and not
    /// yet taken out by `detach` (which closes its writes a step later).
    pub fn sessions(&self) -> Vec<(String, u64)> {
        self.state.read(|st| {
            st.sessions
                .iter()
                .map(|s| (s.id.clone(), s.serial))
                .collect()
        })
    }

    /// A sink that writes the prepared session `p` through this store,
    /// holding its writes: its appends and flushes touch them alone.
    pub fn sink(self: &Arc<Self>, p: &Prepared<R>) -> Arc<dyn SessionSink> {
        Arc::new(StoreSink {
            store: self.clone(),
            id: p.id.clone(),
            serial: p.serial,
            writes: p.writes.clone(),
        })
    }
}

/// `(serial, prompt)` of every turn whose `turn/start` has no `turn/end`.
pub fn open_turns(records: &[DurableRecord]) -> Vec<(u64, crate::journal::PromptId)> {
    let mut open = OpenTurns::default();
    records.iter().for_each(|r| open.see(r));
    open.0
}

/// The turns open so far in a log read in order: `(serial, prompt)` of
/// each `turn/start` not yet matched by its `turn/end`.
#[derive(Default)]
struct OpenTurns(Vec<(u64, crate::journal::PromptId)>);

impl OpenTurns {
    fn see(&mut self, r: &DurableRecord) {
        match r.entry {
            Entry::TurnStart { prompt } => self.0.push((r.serial, prompt)),
            Entry::TurnEnd { prompt, .. } => self.0.retain(|o| *o != (r.serial, prompt)),
            _ => {}
        }
    }
}

/// What a repair found in a log read as a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// The torn tail it cut (or, under M17, kept).
    pub torn: Option<TornTail>,
    /// The highest session serial in the log.
    pub top_serial: u64,
    /// One past the highest prompt number in the log (none if empty).
    pub next_prompt: Option<u64>,
}

/// Deliver a disposal notification to listeners; panics are contained and
/// journaled, and reported as `Err`.
pub(crate) fn emit<R: Rt>(on: &str, id: &str, listeners: &[Listener]) -> Result<(), String> {
    let mut failed = None;
    for l in listeners {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| l(id))) {
            let message = panic_message(p.as_ref());
            observe::<R>(|| LifecycleEvent::ListenerPanicked {
                on: on.to_string(),
                message: message.clone(),
            });
            failed.get_or_insert(format!("{on} listener panicked: {message}"));
        }
    }
    failed.map_or(Ok(()), Err)
}

struct StoreSink<R: Rt> {
    store: Arc<SessionStore<R>>,
    id: String,
    serial: u64,
    writes: Arc<Monitor<R, Writes>>,
}

impl<R: Rt> SessionSink for StoreSink<R> {
    fn append(&self, entry: Entry) -> Result<(), StorageError> {
        self.store
            .append_to(&self.writes, &self.id, self.serial, entry)
    }

    fn flush(self: Arc<Self>) -> BoxFuture<Result<(), StorageError>> {
        Box::pin(async move {
            self.store
                .flush_from(&self.writes, &self.id, self.serial)
                .await
        })
    }

    fn durable(&self) -> Vec<Entry> {
        self.store
            .load(&self.id)
            .map(|l| {
                l.records
                    .into_iter()
                    .filter(|r| r.serial == self.serial)
                    .map(|r| r.entry)
                    .collect()
            })
            .unwrap_or_default()
    }
}
