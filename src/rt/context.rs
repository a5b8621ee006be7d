//! The harness's execution context: which faults are switched on (SPEC §3)
//! and who observes the world events, asked for where they matter rather
//! than carried through every constructor (as madsim's `buggify()` asks its
//! runtime).
//!
//! - A fault point is `fault!(M24)`: true when the current execution has
//!   the fault on. Without the `faults` feature it is the constant `false`,
//!   and the branch folds away.
//! - A world event is `observe(|| event)`: handed to the execution's
//!   observer (the world journal); the event is built only if there is one.
//!   Without the `faults` feature it does nothing.
//! - The waits parked right now ([`parked_waits`]), counted on backends
//!   whose deadlock report names no wait (loom and shuttle,
//!   `Rt::COUNTS_PARKED`), so that a deadlock can say which waits never
//!   ended and break their rule. Each execution's context has its own
//!   count: a new execution starts from none, and an execution running on
//!   another thread beside it has its own.
//!
//! Where the context lives, by backend:
//! - the simulator, loom and shuttle run every task of an execution as a
//!   coroutine on the thread that runs the execution, so the context is
//!   that thread's ([`enter`] at the start of each execution, done by the
//!   scenario runner; a rig adds its journal with [`observe_into`]);
//! - tokio polls tasks on any worker thread, so a task carries its context:
//!   [`TokioRt`](super::TokioRt) captures the spawner's context at spawn
//!   and installs it around each poll ([`carried`]), and the tokio checker
//!   does the same for an execution's main task.
//!
//! States of a thread's context: none (production, or between executions)
//! → entered (faults) → observed (faults and a journal) → entered again by
//! the next execution. [`scoped`] installs one for a closure and restores
//! the previous one after it (an offline check inside an execution).

#[cfg(feature = "faults")]
pub use on::*;

/// Is fault `$m` (an `M` number of SPEC §3) switched on in the current
/// execution? The constant `false` without the `faults` feature.
macro_rules! fault {
    ($m:ident) => {
        $crate::rt::context::fault_on(lifecycle_spec::faults::Fault::$m)
    };
}
pub(crate) use fault;

/// Without the `faults` feature no fault can be on.
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub(crate) const fn fault_on(_fault: lifecycle_spec::faults::Fault) -> bool {
    false
}

/// Without the `faults` feature nobody observes: `event` is never built.
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub(crate) fn observe(_event: impl FnOnce() -> crate::events::LifecycleEvent) {}

/// Without the `faults` feature no backend counts parked waits.
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub(crate) fn count_parked(_wait: super::Wait, _delta: i32) {}

#[cfg(feature = "faults")]
mod on {
    use crate::events::LifecycleEvent;
    use crate::rt::Wait;
    use lifecycle_spec::faults::{Fault, Faults};
    use std::cell::RefCell;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context as TaskContext, Poll};

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

    thread_local! {
        static CURRENT: RefCell<Option<Arc<Context>>> = const { RefCell::new(None) };
    }

    /// The context of this thread's execution from here on (replacing any
    /// earlier one): called at the start of each execution.
    pub fn enter(ctx: Context) {
        CURRENT.with(|c| *c.borrow_mut() = Some(Arc::new(ctx)));
    }

    /// The current execution's events go to `observer` from here on (its
    /// faults stay; with no context yet, none are on).
    pub fn observe_into(observer: Arc<dyn Observe>) {
        let ctx = current().map_or_else(Context::default, |c| Context::clone(&c));
        enter(ctx.observed(observer));
    }

    /// Run `f` in `ctx`, then restore this thread's previous context.
    pub fn scoped<T>(ctx: Context, f: impl FnOnce() -> T) -> T {
        let prev = swap(Some(Arc::new(ctx)));
        let out = f();
        swap(prev);
        out
    }

    /// The current context, if any.
    pub fn current() -> Option<Arc<Context>> {
        CURRENT.with(|c| c.borrow().clone())
    }

    fn swap(ctx: Option<Arc<Context>>) -> Option<Arc<Context>> {
        CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), ctx))
    }

    /// Whether `fault` is on in the current execution (`fault!`).
    pub(crate) fn fault_on(fault: Fault) -> bool {
        CURRENT.with(|c| c.borrow().as_ref().is_some_and(|c| c.faults.has(fault)))
    }

    /// Tell the current execution's observer the event `event` builds
    /// (built only if there is one).
    pub(crate) fn observe(event: impl FnOnce() -> LifecycleEvent) {
        let observer = CURRENT.with(|c| c.borrow().as_ref().and_then(|c| c.observer.clone()));
        if let Some(observer) = observer {
            observer.observe(event());
        }
    }

    /// Count `wait` as parked once more (`delta` 1) or once less (-1) in
    /// the current execution.
    pub(crate) fn count_parked(wait: Wait, delta: i32) {
        // `try_with`: a wait dropped while the thread's locals are torn
        // down has no count left to change.
        let ctx = CURRENT.try_with(|c| c.borrow().clone()).ok().flatten();
        let Some(ctx) = ctx else { return };
        let mut parked = ctx.parked.lock().unwrap_or_else(|p| p.into_inner());
        match parked.iter_mut().find(|(w, _)| *w == wait) {
            Some((_, n)) => *n = n.saturating_add_signed(delta),
            None if delta > 0 => parked.push((wait, 1)),
            None => {}
        }
    }

    /// The waits parked right now in the current execution (loom and
    /// shuttle only: `Rt::COUNTS_PARKED`).
    pub fn parked_waits() -> Vec<Wait> {
        let Some(ctx) = CURRENT.try_with(|c| c.borrow().clone()).ok().flatten() else {
            return Vec::new();
        };
        let parked = ctx.parked.lock().unwrap_or_else(|p| p.into_inner());
        parked
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(w, _)| *w)
            .collect()
    }

    /// `fut` with the current context: installed around each of its polls,
    /// wherever it is polled, and kept as that poll left it (a rig built
    /// inside it adds its journal). For executors that poll on many
    /// threads (tokio).
    pub fn carried<F: Future + Send>(fut: F) -> Carried<F> {
        Carried {
            ctx: current(),
            fut: Box::pin(fut),
        }
    }

    /// A future with its context ([`carried`]).
    pub struct Carried<F> {
        ctx: Option<Arc<Context>>,
        fut: Pin<Box<F>>,
    }

    impl<F: Future> Future for Carried<F> {
        type Output = F::Output;

        fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
            let this = self.get_mut();
            let prev = swap(this.ctx.take());
            let out = this.fut.as_mut().poll(cx);
            this.ctx = swap(prev);
            out
        }
    }
}

#[cfg(all(test, feature = "faults"))]
mod tests {
    use super::*;
    use crate::rt::{Rt, TokioRt};
    use lifecycle_spec::faults::{Fault, Faults};

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
            TokioRt::spawn_detached(
                "reader",
                Box::pin(async move {
                    let mut seen = 0;
                    for _ in 0..200 {
                        tokio::task::yield_now().await;
                        seen += usize::from(fault!(M11));
                    }
                    let _ = tx.send((seen, 200));
                }),
            );
            rx.await.expect("the task answers")
        });
        assert_eq!(seen, polls, "polls that saw fault M11 of their spawner");
    }

    /// No context: no fault and nobody observing (production).
    #[test]
    fn without_a_context_no_fault_is_on() {
        std::thread::spawn(|| {
            assert!(current().is_none());
            assert!(!fault!(M11));
            observe(|| panic!("an event built with nobody observing"));
        })
        .join()
        .expect("the thread");
    }

    /// Parked waits are counted per execution: a new execution starts from
    /// none, an execution on another thread has its own, and a rig's
    /// journal (`observe_into`) keeps the count.
    #[test]
    fn parked_waits_are_the_executions_own() {
        use crate::rt::Wait;
        struct Nobody;
        impl Observe for Nobody {
            fn observe(&self, _: crate::events::LifecycleEvent) {}
        }
        let wait = Wait::from("a wait");
        std::thread::spawn(move || {
            enter(m11());
            count_parked(wait, 1);
            count_parked(wait, 1);
            count_parked(wait, -1);
            observe_into(std::sync::Arc::new(Nobody));
            assert_eq!(parked_waits(), vec![wait]);
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
            let inner = scoped(Context::new(Faults::none()), || fault!(M11));
            assert!(!inner, "the scoped context has no fault");
            assert!(fault!(M11), "the execution's context is back");
        })
        .join()
        .expect("the thread");
    }
}
