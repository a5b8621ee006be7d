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

#[cfg(feature = "faults")]
mod on {
    use crate::events::LifecycleEvent;
    use lifecycle_spec::faults::{Fault, Faults};
    use std::cell::RefCell;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context as TaskContext, Poll};

    /// Who is told of world events (the world journal).
    pub trait Observe: Send + Sync {
        /// Record `event`.
        fn observe(&self, event: LifecycleEvent);
    }

    /// One execution's faults and observer.
    #[derive(Clone, Default)]
    pub struct Context {
        faults: Faults,
        observer: Option<Arc<dyn Observe>>,
    }

    impl Context {
        /// `faults` on, nobody observing.
        pub fn new(faults: Faults) -> Self {
            Context {
                faults,
                observer: None,
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
        let faults = current().map_or_else(Faults::none, |c| c.faults);
        enter(Context::new(faults).observed(observer));
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
