//! The world journal: lifecycle events of scopes, the registry, the session
//! store and the provider, in one shared, ordered list. Each event is
//! recorded by the task that caused it, under the journal's lock; events of
//! one task are in program order, so orders such as "every `dispose` caller
//! returned after its teardown finished" (D1) can be read off it.

use crate::events::LifecycleEvent;
use crate::rt::{Monitor, Rt, Wait};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The shared, ordered world journal.
///
/// The ends of an id's holding ([`LifecycleEvent::SessionRetired`],
/// [`LifecycleEvent::AgentDetached`]) are recorded inside the store's and
/// the registry's locks, where the entries that reuse the id are too; their
/// order against those entries is that lock's order already. They are kept
/// beside the journal under a plain lock, numbered from the same counter,
/// so that recording them is no scheduling point and no shared access the
/// checkers would interleave (the runtime's lock would make every
/// teardown's step 3 conflict with every other journaled step).
pub struct World<R: Rt> {
    events: Monitor<R, Vec<(u64, LifecycleEvent)>>,
    ends: std::sync::Mutex<Vec<(u64, LifecycleEvent)>>,
    next: AtomicU64,
}

impl<R: Rt> World<R> {
    /// An empty journal that keeps every event (the harness's oracles read
    /// whole histories).
    pub fn new() -> Arc<Self> {
        Arc::new(World {
            events: Monitor::new(Vec::new()),
            ends: std::sync::Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
        })
    }

    /// Record `event`.
    pub fn record(&self, event: LifecycleEvent) {
        if tracing::enabled!(target: crate::trace::Target::WORLD, tracing::Level::DEBUG) {
            let json = serde_json::to_string(&event).unwrap_or_default();
            tracing::debug!(target: crate::trace::Target::WORLD, "{json}");
        }
        let numbered = |event| (self.next.fetch_add(1, Ordering::SeqCst), event);
        if matches!(
            event,
            LifecycleEvent::SessionRetired { .. } | LifecycleEvent::AgentDetached { .. }
        ) {
            let mut ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
            ends.push(numbered(event));
        } else {
            self.events.update(|e| e.push(numbered(event)));
        }
    }

    /// A copy of every event so far, in the order recorded.
    pub fn events(&self) -> Vec<LifecycleEvent> {
        let mut all = self.events.read(|e| e.clone());
        all.extend(
            self.ends
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        all.sort_by_key(|(n, _)| *n);
        all.into_iter().map(|(_, e)| e).collect()
    }

    /// Wait until some event satisfies `pred` for each of `keys` (e.g. a
    /// completion notice per job): a wake-up, not a polling loop.
    pub async fn until_all(
        &self,
        label: impl Into<Wait>,
        keys: &[&str],
        pred: impl Fn(&LifecycleEvent, &str) -> bool,
    ) {
        self.events
            .wait_until(label, |events| {
                keys.iter()
                    .all(|k| events.iter().any(|(_, e)| pred(e, k)))
                    .then_some(())
            })
            .await;
    }
}

impl<R: Rt> crate::rt::context::Observe for World<R> {
    fn observe(&self, event: LifecycleEvent) {
        self.record(event);
    }
}
