//! The harness's side of the execution context ([`lifecycle::rt::context`]):
//! one execution's faults (SPEC §3), its observer (the world journal) and
//! its parked waits, plugged in where the lifecycle code asks.
//!
//! - [`enter`] at the start of each execution (done by the scenario
//!   runner); a rig adds its journal with [`observe_into`];
//! - [`scoped`] for a closure (an offline check inside an execution);
//! - [`parked_waits`]: the waits parked right now, counted on backends
//!   whose deadlock report names no wait (loom and shuttle,
//!   `Rt::COUNTS_PARKED`), so that a deadlock can say which waits never
//!   ended and break their rule. Each execution's context has its own
//!   count: a new execution starts from none, and an execution running on
//!   another thread beside it has its own.
//!
//! States of a thread's context: none (between executions) → entered
//! (faults) → observed (faults and a journal) → entered again by the next
//! execution.

use crate::faults::{Fault, Faults};
use lifecycle::events::LifecycleEvent;
use lifecycle::rt::context::{self as plug, Execution};
use lifecycle::rt::Wait;
use std::any::Any;
use std::sync::{Arc, Mutex};

pub use lifecycle::rt::context::carried;

/// Who is told of world events (the world journal).
pub trait Observe: Send + Sync {
    /// Record `event`.
    fn observe(&self, event: LifecycleEvent);
}

/// One execution's faults, observer and parked waits.
#[derive(Clone, Default)]
pub struct Context {
    faults: Faults,
    observer: Option<Arc<dyn Observe>>,
    /// Each wait parked right now, with how many times (a std mutex:
    /// counting is no scheduling point).
    parked: Arc<Mutex<Vec<(Wait, u32)>>>,
}

impl Context {
    /// `faults` on, nobody observing, no wait parked.
    pub fn new(faults: Faults) -> Self {
        Context {
            faults,
            ..Context::default()
        }
    }

    /// The same, observed by `observer`.
    pub fn observed(mut self, observer: Arc<dyn Observe>) -> Self {
        self.observer = Some(observer);
        self
    }
}

impl Execution for Context {
    fn fault_on(&self, fault: Fault) -> bool {
        self.faults.has(fault)
    }

    fn observe(&self, event: LifecycleEvent) {
        if let Some(observer) = &self.observer {
            observer.observe(event);
        }
    }

    fn count_parked(&self, wait: Wait, delta: i32) {
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        match parked.iter_mut().find(|(w, _)| *w == wait) {
            Some((_, n)) => *n = n.saturating_add_signed(delta),
            None if delta > 0 => parked.push((wait, 1)),
            None => {}
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The current execution's context, if the harness entered one.
fn current() -> Option<Context> {
    plug::current().and_then(|c| c.as_any().downcast_ref::<Context>().cloned())
}

/// The context of this thread's execution from here on (replacing any
/// earlier one): called at the start of each execution.
pub fn enter(ctx: Context) {
    plug::enter(Arc::new(ctx));
}

/// The current execution's events go to `observer` from here on (its
/// faults and parked waits stay; with no context yet, no fault is on).
pub fn observe_into(observer: Arc<dyn Observe>) {
    enter(current().unwrap_or_default().observed(observer));
}

/// Run `f` in `ctx`, then restore this thread's previous context.
pub fn scoped<T>(ctx: Context, f: impl FnOnce() -> T) -> T {
    plug::scoped(Arc::new(ctx), f)
}

/// The waits parked right now in the current execution (loom and shuttle
/// only: `Rt::COUNTS_PARKED`).
pub fn parked_waits() -> Vec<Wait> {
    let Some(ctx) = current() else {
        return Vec::new();
    };
    let parked = ctx.parked.lock().unwrap_or_else(|p| p.into_inner());
    parked
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(w, _)| *w)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::CheckedTokioRt;
    use lifecycle::rt::context::{count_parked, fault_on};
    use lifecycle::rt::Rt;

    fn m11() -> Context {
        Context::new(Faults::none().with(Fault::M11))
    }

    /// tokio polls a task on any worker thread, none of which entered the
    /// context: the task still sees its spawner's faults at every poll.
    #[test]
    fn a_tokio_task_keeps_its_spawners_faults_on_every_worker() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        let (seen, polls) = rt.block_on(async {
            enter(m11());
            let (tx, rx) = futures::channel::oneshot::channel();
            CheckedTokioRt::spawn_detached(
                "reader",
                Box::pin(async move {
                    let mut seen = 0;
                    for _ in 0..200 {
                        tokio::task::yield_now().await;
                        seen += usize::from(fault_on(Fault::M11));
                    }
                    let _ = tx.send((seen, 200));
                }),
            );
            rx.await.expect("the task answers")
        });
        assert_eq!(seen, polls, "polls that saw fault M11 of their spawner");
    }

    /// Parked waits are counted per execution: a new execution starts from
    /// none, an execution on another thread has its own, and a rig's
    /// journal (`observe_into`) keeps the count.
    #[test]
    fn parked_waits_are_the_executions_own() {
        struct Nobody;
        impl Observe for Nobody {
            fn observe(&self, _: LifecycleEvent) {}
        }
        let wait = Wait::from("a wait");
        std::thread::spawn(move || {
            enter(m11());
            count_parked(wait, 1);
            count_parked(wait, 1);
            count_parked(wait, -1);
            observe_into(Arc::new(Nobody));
            assert_eq!(parked_waits(), vec![wait]);
            assert!(fault_on(Fault::M11), "observing keeps the faults");
            let beside = std::thread::spawn(|| {
                enter(Context::new(Faults::none()));
                parked_waits()
            });
            assert!(beside.join().expect("the thread").is_empty());
            assert_eq!(parked_waits(), vec![wait], "untouched by the other");
            count_parked(wait, -1);
            assert!(parked_waits().is_empty());
            count_parked(wait, 1);
            enter(m11());
            assert!(
                parked_waits().is_empty(),
                "a new execution starts from none"
            );
        })
        .join()
        .expect("the thread");
    }

    /// A scoped context is the closure's only: the execution's own comes
    /// back after it.
    #[test]
    fn a_scoped_context_restores_the_one_before() {
        std::thread::spawn(|| {
            enter(m11());
            let inner = scoped(Context::new(Faults::none()), || fault_on(Fault::M11));
            assert!(!inner, "the scoped context has no fault");
            assert!(fault_on(Fault::M11), "the execution's context is back");
        })
        .join()
        .expect("the thread");
    }
}
