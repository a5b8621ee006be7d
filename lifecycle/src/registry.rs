//! The agent registry: `get`, `list`, and publication of agents by id.
//!
//! Entries are keyed by `(id, serial)`: detaching removes exactly the entry
//! it names, so a stale or repeated detach never removes a newer agent with
//! the same id (R2).

use crate::agent::Agent;
use crate::events::LifecycleEvent;
use crate::rt::context::{fault, observe};
use crate::rt::{Monitor, Mutex, Rt};
use crate::store::emit;
pub use crate::store::Listener;
use std::sync::Arc;

struct RegEntry<R: Rt> {
    id: String,
    serial: u64,
    agent: Agent<R>,
}

/// Live agents by id.
pub struct Registry<R: Rt> {
    entries: Monitor<R, Vec<RegEntry<R>>>,
    listeners: Mutex<R, Vec<Listener>>,
}

impl<R: Rt> Registry<R> {
    /// An empty registry.
    pub fn new() -> Arc<Self> {
        Arc::new(Registry {
            entries: Monitor::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
        })
    }

    /// Add an `agent/disposed` listener.
    pub fn on_disposed(&self, f: Listener) {
        self.listeners.with(|l| l.push(f));
    }

    /// Publish `agent` (its session `serial` was entered first).
    pub fn insert(&self, serial: u64, agent: Agent<R>) {
        let id = agent.id().to_string();
        self.entries.update(|e| {
            e.push(RegEntry {
                id: id.clone(),
                serial,
                agent,
            });
            observe::<R>(|| LifecycleEvent::AgentRegistered { id, serial });
        });
    }

    /// Remove exactly the entry `(id, serial)` and emit `agent/disposed`.
    /// A panicking listener is contained and reported as `Err`. A stale or
    /// repeated detach removes nothing and tells no listener (R2): the
    /// live agent with that id was not disposed.
    pub fn detach(&self, id: &str, serial: u64) -> Result<(), String> {
        self.detach_then(id, serial, || ())
    }

    /// [`detach`](Self::detach), running `release` inside the same lock
    /// section as the removal: the teardown frees the session's id there
    /// (`SessionStore::retire`), so no create can see the id free in the
    /// store while the old entry is still registered (R1), and the id
    /// becomes reusable exactly when the entry detaches (R2). Lock order:
    /// registry, then store.
    pub fn detach_then(&self, id: &str, serial: u64, release: impl FnOnce()) -> Result<(), String> {
        let by_id_only = fault!(M22);
        let removed = self.entries.update(|e| {
            let before = e.len();
            e.retain(|x| {
                let gone = x.id == id && (by_id_only || x.serial == serial);
                if gone {
                    observe::<R>(|| LifecycleEvent::AgentDetached {
                        id: x.id.clone(),
                        serial: x.serial,
                    });
                }
                !gone
            });
            release();
            e.len() < before
        });
        if !removed {
            return Ok(());
        }
        emit::<R>("agent/disposed", id, &self.listeners.with(|l| l.clone()))
    }

    /// Wait until the entry `(id, serial)` is gone.
    pub async fn until_absent(&self, id: &str, serial: u64) {
        self.entries
            .wait_until("registry detach", |e| {
                (!e.iter().any(|x| x.id == id && x.serial == serial)).then_some(())
            })
            .await
    }

    /// The live agent with `id`.
    pub fn get(&self, id: &str) -> Option<Agent<R>> {
        self.entries
            .read(|e| e.iter().find(|x| x.id == id).map(|x| x.agent.clone()))
    }

    /// Every live agent, in publication order.
    pub fn list(&self) -> Vec<Agent<R>> {
        self.entries
            .read(|e| e.iter().map(|x| x.agent.clone()).collect())
    }

    /// `(id, serial)` of every entry.
    pub fn entries(&self) -> Vec<(String, u64)> {
        self.entries
            .read(|e| e.iter().map(|x| (x.id.clone(), x.serial)).collect())
    }
}
