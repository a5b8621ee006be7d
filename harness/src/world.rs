//! The world journal: lifecycle events of scopes, the registry, the session
//! store and the provider. Each event is recorded by the task that caused
//! it, numbered in the order recorded; events of one task are in program
//! order.
//!
//! # Topics: which orders the journal holds
//!
//! An event is *about* some things, its [`topics`]: the id it names (every
//! event of an agent, a session or a creation attempt of that id), the
//! scope it names (a listener's panic: the kind of listener), and two
//! shared topics: [`Topic::Entries`] (every
//! `session-entered` and every `scope-unloading`, which R3 orders) and
//! [`Topic::Notices`] (every completion notice). Recording an event writes
//! its topics' objects (below), and nothing else:
//! - two events with a topic in common are ordered by that topic's
//!   object, so a checker that explores orders of conflicting accesses
//!   explores both orders of them (the contract's orders: "every `dispose`
//!   caller returned after its teardown finished", D1, is about one id);
//! - two events with no topic in common commute: where they fall against
//!   each other is an interleaving of unrelated steps, which no oracle and
//!   no contract view reads ([`by_topic`] is the order they do read).
//!
//! Subjects are kept in [`SLOTS`] monitors, chosen by a hash of the
//! subject's name: two subjects that share a slot are ordered against each
//! other too, which costs the search schedules, never soundness. The
//! notices have a monitor of their own, and the entries a lock taken
//! inside the subject's (an event of the entries is about a subject too).
//!
//! The ends of an id's holding ([`LifecycleEvent::SessionRetired`],
//! [`LifecycleEvent::AgentDetached`]) are recorded inside the store's and
//! the registry's locks, where the entries that reuse the id are too; their
//! order against those entries is that lock's order already. They write no
//! topic: recording them is no scheduling point and no shared access the
//! checkers would interleave (the runtime's lock would make every
//! teardown's step 3 conflict with every other journaled step).

use crate::events::LifecycleEvent;
use crate::fnv::Fnv;
use crate::rt::{Monitor, Mutex, Rt, Wait};
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How many monitors the subject topics share.
pub const SLOTS: usize = 16;

/// What an event is about: the orders the journal keeps (see the module
/// docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Topic<'a> {
    /// An agent, session or creation id, or a scope's name.
    Subject(&'a str),
    /// Sessions entered and scopes beginning to unload (R3).
    Entries,
    /// Completion notices of background jobs.
    Notices,
}

/// What the keys of [`World::until_all`] name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// Ids or scopes: each key's events are those of its subject topic.
    Subjects,
    /// Background jobs: the events are the completion notices.
    Notices,
}

impl Keys {
    fn topic(self, key: &str) -> Topic<'_> {
        match self {
            Keys::Subjects => Topic::Subject(key),
            Keys::Notices => Topic::Notices,
        }
    }
}

/// The id or scope `event` is about, if any (the ends of a holding
/// included; a listener's panic and a notice have none).
pub fn subject(event: &LifecycleEvent) -> Option<&str> {
    use LifecycleEvent as W;
    match event {
        W::CreateBegan { id, .. }
        | W::CreateChecked { id, .. }
        | W::CreateFailed { id, .. }
        | W::SessionEntered { id, .. }
        | W::SessionRetired { id, .. }
        | W::AgentRegistered { id, .. }
        | W::AgentDetached { id, .. }
        | W::DisposeCalled { id, .. }
        | W::DisposeReturned { id, .. }
        | W::TeardownBegan { id, .. }
        | W::TeardownStep { id, .. }
        | W::TeardownDrain { id, .. }
        | W::TeardownAborted { id, .. }
        | W::TeardownDone { id, .. }
        | W::AppendDropped { id, .. }
        | W::StorageFailed { id, .. } => Some(id),
        W::ScopeUnloading { scope } | W::ScopeUnloaded { scope } => Some(scope),
        W::ListenerPanicked { .. } | W::Notice { .. } => None,
    }
}

/// The topics of `event`; none for the ends of an id's holding (see the
/// module docs).
pub fn topics(event: &LifecycleEvent) -> Vec<Topic<'_>> {
    use LifecycleEvent as W;
    match event {
        W::SessionRetired { .. } | W::AgentDetached { .. } => Vec::new(),
        W::SessionEntered { id, .. } => vec![Topic::Subject(id), Topic::Entries],
        W::ScopeUnloading { scope } => vec![Topic::Subject(scope), Topic::Entries],
        W::ListenerPanicked { on, .. } => vec![Topic::Subject(on)],
        W::Notice { .. } => vec![Topic::Notices],
        _ => vec![Topic::Subject(
            subject(event).expect("every other event names an id or a scope"),
        )],
    }
}

/// The events of `events` (in the order recorded) as the journal orders
/// them: grouped by topic, topics in order, each topic's events in the
/// order recorded. Two runs that differ only in the order of events with no
/// topic in common give the same sequence. The ends of a holding follow:
/// the sessions' retirements, then the agents' detachments, each in the
/// order recorded (their order is their locks').
pub fn by_topic(events: &[LifecycleEvent]) -> Vec<&LifecycleEvent> {
    let mut keyed: Vec<(Topic<'_>, usize)> = Vec::new();
    let mut ends = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let t = topics(e);
        if t.is_empty() {
            ends.push(e);
        }
        keyed.extend(t.into_iter().map(|t| (t, i)));
    }
    keyed.sort();
    // Each kind of end in its lock's order: the store's, then the
    // registry's.
    ends.sort_by_key(|e| matches!(e, LifecycleEvent::AgentDetached { .. }));
    keyed
        .into_iter()
        .map(|(_, i)| &events[i])
        .chain(ends)
        .collect()
}

/// The slot of a subject or of the notices (see [`SLOTS`]): FNV-1a of the
/// subject's name. The entries have none: they are written inside a
/// subject's slot.
fn slot(topic: Topic<'_>) -> usize {
    match topic {
        Topic::Notices => SLOTS,
        Topic::Entries => unreachable!("the entries are written inside a subject's slot"),
        Topic::Subject(name) => {
            let mut h = Fnv::new();
            h.write(name.as_bytes());
            (h.finish() % SLOTS as u64) as usize
        }
    }
}

/// The world journal, in topic slots (see the module docs).
pub struct World<R: Rt> {
    /// The subjects' slots, then the notices'.
    slots: Vec<Monitor<R, Vec<(u64, LifecycleEvent)>>>,
    /// The entries topic: written only inside a subject's slot, as an
    /// innermost section (nobody waits on it).
    entries: Mutex<R, Vec<(u64, LifecycleEvent)>>,
    ends: std::sync::Mutex<Vec<(u64, LifecycleEvent)>>,
    next: AtomicU64,
}

impl<R: Rt> World<R> {
    /// An empty journal that keeps every event (the harness's oracles read
    /// whole histories).
    pub fn new() -> Arc<Self> {
        Arc::new(World {
            slots: (0..=SLOTS).map(|_| Monitor::new(Vec::new())).collect(),
            entries: Mutex::new(Vec::new()),
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
        let topics = topics(&event);
        let Some(&first) = topics.first() else {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            let mut ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
            ends.push((n, event));
            return;
        };
        let entries = topics.contains(&Topic::Entries);
        // The event is numbered inside every section it writes: two events
        // that share a slot are numbered in that slot's order, whatever
        // else either writes. Only the slot's lock is a scheduling point;
        // the entries are an innermost section inside it.
        self.slots[slot(first)].update(|own| {
            let n = if entries {
                self.entries.with_innermost(|e| {
                    let n = self.next.fetch_add(1, Ordering::SeqCst);
                    e.push((n, event.clone()));
                    n
                })
            } else {
                self.next.fetch_add(1, Ordering::SeqCst)
            };
            own.push((n, event));
        });
    }

    /// A copy of every event so far, in the order recorded. Only each
    /// topic's order is the journal's (see the module docs); the topics
    /// are read one after another, so a copy taken while other tasks
    /// record is each topic's state at the moment it was read.
    pub fn events(&self) -> Vec<LifecycleEvent> {
        let mut all: Vec<(u64, LifecycleEvent)> = Vec::new();
        for s in &self.slots {
            s.read(|e| all.extend(e.iter().cloned()));
        }
        self.entries.read(|e| all.extend(e.iter().cloned()));
        all.extend(
            self.ends
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        all.sort_by_key(|(n, _)| *n);
        all.dedup_by_key(|(n, _)| *n);
        all.into_iter().map(|(_, e)| e).collect()
    }

    /// Wait until some event satisfies `pred` for each of `keys` (e.g. a
    /// completion notice per job): a wake-up, not a polling loop. Each key
    /// is looked for in the events of its topic (see [`Keys`]); the ends
    /// of a holding, which write no topic, cannot be waited for.
    pub async fn until_all(
        &self,
        label: impl Into<Wait>,
        keys: &[&str],
        keys_are: Keys,
        pred: impl Fn(&LifecycleEvent, &str) -> bool,
    ) {
        let label = label.into();
        for key in keys {
            let pred = &pred;
            self.slots[slot(keys_are.topic(key))]
                .wait_until(label, |events| {
                    events.iter().any(|(_, e)| pred(e, key)).then_some(())
                })
                .await;
        }
    }
}

impl<R: Rt> crate::context::Observe for World<R> {
    fn observe(&self, event: LifecycleEvent) {
        self.record(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::SimRt;
    use lifecycle_sim::{Dfs, DfsConfig, ExecKind, Sim};

    fn done(id: &str) -> LifecycleEvent {
        LifecycleEvent::TeardownDone {
            id: id.to_string(),
            serial: 1,
        }
    }

    fn entered(id: &str) -> LifecycleEvent {
        LifecycleEvent::SessionEntered {
            id: id.to_string(),
            serial: 1,
        }
    }

    fn unloading(scope: &str) -> LifecycleEvent {
        LifecycleEvent::ScopeUnloading {
            scope: scope.to_string(),
        }
    }

    /// The complete schedules of an unbounded search over two tasks that
    /// each record one event, and the journals they end with (in the order
    /// recorded), one per distinct order of topics.
    fn search(first: LifecycleEvent, second: LifecycleEvent) -> (u64, Vec<Vec<LifecycleEvent>>) {
        let mut dfs = Dfs::new(DfsConfig::default());
        let mut seen = Vec::new();
        while let Some(scheduler) = dfs.next_scheduler() {
            let (a, b) = (first.clone(), second.clone());
            let journal = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
            let out = journal.clone();
            let mut sim = Sim::new(scheduler, 10_000);
            sim.block_on(async move {
                let world = World::<SimRt>::new();
                let w = world.clone();
                let other = crate::rt::spawn::<SimRt, ()>("other", async move { w.record(b) });
                world.record(a);
                other.join().await;
                *out.borrow_mut() = world.events();
            })
            .expect("the program runs");
            if dfs.end_execution() == ExecKind::Complete {
                seen.push(journal.borrow().clone());
            }
        }
        assert!(dfs.exhausted());
        let key = |j: &Vec<LifecycleEvent>| format!("{:?}", by_topic(j));
        seen.sort_by_key(key);
        seen.dedup_by_key(|j| key(j));
        (dfs.stats().complete, seen)
    }

    #[test]
    fn events_of_different_ids_commute_and_events_of_one_id_do_not() {
        let (apart, views) = search(done("a"), done("b"));
        assert_eq!(views.len(), 1, "one order of a's and b's events: {views:?}");
        let (together, views) = search(done("a"), entered("a"));
        assert_eq!(views.len(), 2, "both orders of two events of a: {views:?}");
        assert!(
            apart < together,
            "{apart} schedules apart, {together} together"
        );
    }

    #[test]
    fn entries_and_unloading_share_a_topic() {
        // R3 reads `session-entered` of an id against `scope-unloading` of
        // another subject: both orders are explored.
        let (_, views) = search(entered("x"), unloading("owner"));
        let orders: std::collections::BTreeSet<bool> = views
            .iter()
            .map(|j| crate::oracle_world::entered_after_unloading(j, "owner", "x"))
            .collect();
        assert_eq!(orders.len(), 2, "{views:?}");
    }

    #[test]
    fn by_topic_keeps_each_topics_order_and_ignores_the_rest() {
        let one = [done("a"), entered("b"), done("b"), unloading("s")];
        let two = [entered("b"), done("a"), unloading("s"), done("b")];
        assert_eq!(by_topic(&one), by_topic(&two));
        let swapped = [done("b"), entered("b"), done("a"), unloading("s")];
        assert_ne!(by_topic(&one), by_topic(&swapped));
    }
}
