//! Parts a race test holds open: steps that say they run and wait to be
//! let go ([`HeldSteps`]), and a disk whose flushes wait at their I/O point
//! until let go ([`HeldDurable`]). Both wait on a [`Monitor`] of the
//! test's executor, so a held step or flush parks its task and blocks no
//! thread: the checkers explore what runs meanwhile.
//!
//! States of each: *holding* (new ones wait: the start) and *released*
//! (every waiting one goes on, later ones pass); `release` and `hold`
//! move between them. A held step also ends when its turn's signal fires
//! (C10: a cancelled or disposed turn's step settles promptly).
//!
//! ```text
//! let rig = ...;                                  // RaceTest::held_steps()
//! let steps = rig.steps.clone().unwrap();
//! let turn = rt::spawn::<R, _>("turn", async move { handle.prompt(p).await });
//! steps.running("a", 0).await;                    // step 0 of agent a runs
//! handle.dispose().await;                         // dispose mid-step
//! ```

use crate::agent::{PromptSpec, StepRunner, StepSignal};
use crate::rt::{BoxFuture, Monitor, Rt, Wait};
use crate::store::durable::{Durable, DurableRecord, Loaded, LockError, MemoryDurable, TornTail};
use std::io;
use std::sync::Arc;

/// Whether new arrivals wait, and who is waiting now.
struct Gate<K> {
    holding: bool,
    /// Waiting now, in arrival order, each with its ticket (its place in
    /// `arrived`).
    waiting: Vec<(K, usize)>,
    /// Every arrival, in order.
    arrived: Vec<K>,
}

impl<K> Default for Gate<K> {
    fn default() -> Self {
        Gate {
            holding: true,
            waiting: Vec::new(),
            arrived: Vec::new(),
        }
    }
}

impl<K: Clone + PartialEq + Send + 'static> Gate<K> {
    /// `key` arrives: its ticket if it must wait, `None` if it passes.
    fn arrive(&mut self, key: K) -> Option<usize> {
        let ticket = self.arrived.len();
        self.arrived.push(key.clone());
        self.holding.then(|| {
            self.waiting.push((key, ticket));
            ticket
        })
    }

    fn release(&mut self) {
        self.holding = false;
        self.waiting.clear();
    }

    fn is_waiting(&self, ticket: usize) -> bool {
        self.waiting.iter().any(|(_, t)| *t == ticket)
    }
}

/// A [`StepRunner`] whose steps announce themselves and wait, until
/// [`release`](Self::release)d or their turn's signal fires. Each step's
/// output is `step N of AGENT`.
pub struct HeldSteps<R: Rt> {
    gate: Arc<Monitor<R, Gate<(String, u32)>>>,
}

impl<R: Rt> HeldSteps<R> {
    /// Holding: every step waits.
    pub fn new() -> Arc<Self> {
        Arc::new(HeldSteps {
            gate: Arc::new(Monitor::new(Gate::default())),
        })
    }

    /// Resolves once step `step` of agent `agent` runs (has begun and is
    /// held, or has begun since and been let go).
    pub async fn running(&self, agent: &str, step: u32) {
        self.gate
            .wait_until("a held step runs", |g| {
                g.arrived
                    .iter()
                    .any(|(a, s)| a == agent && *s == step)
                    .then_some(())
            })
            .await
    }

    /// Let every waiting step finish, and later ones pass.
    pub fn release(&self) {
        self.gate.update(Gate::release);
    }

    /// Hold later steps again.
    pub fn hold(&self) {
        self.gate.update(|g| g.holding = true);
    }

    /// The steps that began, `(agent, step)` in order.
    pub fn began(&self) -> Vec<(String, u32)> {
        self.gate.read(|g| g.arrived.clone())
    }
}

impl<R: Rt> StepRunner for HeldSteps<R> {
    fn run_step(
        &self,
        agent_id: &str,
        _prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let gate = self.gate.clone();
        let key = (agent_id.to_string(), step);
        Box::pin(async move {
            if let Some(ticket) = gate.update(|g| g.arrive(key.clone())) {
                let released = gate.wait_until(Wait::new("a held step"), move |g| {
                    (!g.is_waiting(ticket)).then_some(())
                });
                futures::future::select(Box::pin(released), signal.fired()).await;
                gate.update(|g| g.waiting.retain(|(_, t)| *t != ticket));
            }
            Some(format!("step {} of {}", key.1, key.0))
        })
    }
}

/// The simulator's disk ([`MemoryDurable`]) whose flushes wait at their
/// I/O point, after `write` and before `sync`, until
/// [`release`](Self::release)d: what a slow disk does to a flush, with
/// the test choosing when it completes.
pub struct HeldDurable<R: Rt> {
    disk: MemoryDurable<R>,
    gate: Arc<Monitor<R, Gate<String>>>,
}

impl<R: Rt> HeldDurable<R> {
    /// Holding: every flush waits.
    pub fn new() -> Arc<Self> {
        Arc::new(HeldDurable {
            disk: MemoryDurable::default(),
            gate: Arc::new(Monitor::new(Gate::default())),
        })
    }

    /// Resolves once a flush of session `id` is held open (waiting at its
    /// I/O point).
    pub async fn flushing(&self, id: &str) {
        self.gate
            .wait_until("a held flush is open", |g| {
                g.waiting.iter().any(|(w, _)| w == id).then_some(())
            })
            .await
    }

    /// Let every waiting flush complete, and later ones pass.
    pub fn release(&self) {
        self.gate.update(Gate::release);
    }

    /// Hold later flushes again.
    pub fn hold(&self) {
        self.gate.update(|g| g.holding = true);
    }

    /// The sessions whose flushes reached the I/O point, in order.
    pub fn flushed(&self) -> Vec<String> {
        self.gate.read(|g| g.arrived.clone())
    }

    /// The disk underneath (what is written, what is synced).
    pub fn disk(&self) -> &MemoryDurable<R> {
        &self.disk
    }
}

impl<R: Rt> Durable for HeldDurable<R> {
    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()> {
        self.disk.write(id, records)
    }

    fn sync(&self, id: &str) -> io::Result<()> {
        self.disk.sync(id)
    }

    fn load(&self, id: &str) -> io::Result<Loaded> {
        self.disk.load(id)
    }

    fn scan(
        &self,
        id: &str,
        visit: &mut dyn FnMut(DurableRecord) -> bool,
    ) -> io::Result<Option<TornTail>> {
        self.disk.scan(id, visit)
    }

    fn truncate(&self, id: &str, len: u64) -> io::Result<()> {
        self.disk.truncate(id, len)
    }

    fn exists(&self, id: &str) -> io::Result<bool> {
        self.disk.exists(id)
    }

    fn lock(&self, id: &str) -> Result<(), LockError> {
        self.disk.lock(id)
    }

    fn unlock(&self, id: &str) {
        self.disk.unlock(id)
    }

    fn in_flight(&self, id: &str) -> Option<BoxFuture<()>> {
        let gate = self.gate.clone();
        let ticket = gate.update(|g| g.arrive(id.to_string()))?;
        Some(Box::pin(async move {
            gate.wait_until(Wait::new("a held flush"), move |g| {
                (!g.is_waiting(ticket)).then_some(())
            })
            .await
        }))
    }
}
