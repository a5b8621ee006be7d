//! The execution context: what the harness asks of the current execution
//! (which faults are on, SPEC §3; who observes the world events; which
//! waits are parked), asked for where it matters rather than carried
//! through every constructor (as madsim's `buggify()` asks its runtime).
//!
//! - A fault point is `fault!(M24)` ([`fault_point`] of the backend `R` in
//!   scope): true when the current execution's context has the fault on;
//!   the constant `false` on a backend with no context ([`Rt::CONTEXT`]),
//!   production's `TokioRt`.
//! - A world event is `observe::<R>(|| event)`: handed to the context, and
//!   built only if there is one (never on a backend without a context).
//! - A parked wait is counted with [`count_parked`] on backends whose
//!   deadlock report names no wait (`Rt::COUNTS_PARKED`).
//!
//! This crate defines only the plug, [`Execution`]; what is behind it (the
//! fault set, the world journal, the parked count) is the harness's
//! (`lifecycle_harness::context`). Production neither enters nor reads a
//! context: no fault is on, no event is built and nothing is counted.
//!
//! Where the context lives, by backend:
//! - the simulator, loom and shuttle run every task of an execution as a
//!   coroutine on the thread that runs the execution, so the context is
//!   that thread's ([`enter`] at the start of each execution);
//! - tokio polls tasks on any worker thread, so a task carries its context:
//!   the harness's tokio backend captures the spawner's context at spawn,
//!   if it has one, and installs it around each poll ([`carried`]).
//!
//! States of a thread's context: none (production, or between executions)
//! → entered → entered again by the next execution. [`scoped`] installs one
//! for a closure and restores the previous one after it.

use crate::events::LifecycleEvent;
use crate::rt::{Rt, Wait};
use lifecycle_spec::faults::Fault;
use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

/// Is fault `$m` (an `M` number of SPEC §3) switched on in the current
/// execution? Asked of the backend `R` in scope ([`fault_point`]): the
/// constant `false` on a backend with no context (production).
macro_rules! fault {
    ($m:ident) => {
        $crate::rt::context::fault_point::<R>(lifecycle_spec::faults::Fault::$m)
    };
}
pub(crate) use fault;

/// One execution as the harness sees it: the plug that the fault points,
/// the world events and the parked waits of the lifecycle code ask.
pub trait Execution: Send + Sync + 'static {
    /// Whether `fault` is on.
    fn fault_on(&self, fault: Fault) -> bool;
    /// Record `event`.
    fn observe(&self, event: LifecycleEvent);
    /// Count `wait` as parked once more (`delta` 1) or once less (-1).
    fn count_parked(&self, wait: Wait, delta: i32);
    /// The context itself, for the harness to find its own type again.
    fn as_any(&self) -> &dyn Any;
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn Execution>>> = const { RefCell::new(None) };
}

/// The context of this thread's execution from here on (replacing any
/// earlier one): called at the start of each execution.
pub fn enter(ctx: Arc<dyn Execution>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(ctx));
}

/// Run `f` in `ctx`, then restore this thread's previous context.
pub fn scoped<T>(ctx: Arc<dyn Execution>, f: impl FnOnce() -> T) -> T {
    let prev = swap(Some(ctx));
    let out = f();
    swap(prev);
    out
}

/// The current context, if any.
pub fn current() -> Option<Arc<dyn Execution>> {
    // `try_with`: a wait dropped while the thread's locals are torn down
    // has no context left.
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

fn swap(ctx: Option<Arc<dyn Execution>>) -> Option<Arc<dyn Execution>> {
    CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), ctx))
}

/// Whether `fault` is on in the current execution of backend `R`: the
/// constant `false` where `R` has no context ([`Rt::CONTEXT`]).
pub fn fault_point<R: Rt>(fault: Fault) -> bool {
    R::CONTEXT && fault_on(fault)
}

/// Whether `fault` is on in the current execution's context, whatever the
/// backend.
pub fn fault_on(fault: Fault) -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|c| c.fault_on(fault)))
}

/// Tell the current execution's context the event `event` builds (built
/// only if there is one; never where backend `R` has no context).
pub fn observe<R: Rt>(event: impl FnOnce() -> LifecycleEvent) {
    if !R::CONTEXT {
        return;
    }
    if let Some(ctx) = current() {
        ctx.observe(event());
    }
}

/// Count `wait` as parked once more (`delta` 1) or once less (-1) in the
/// current execution.
pub fn count_parked(wait: Wait, delta: i32) {
    if let Some(ctx) = current() {
        ctx.count_parked(wait, delta);
    }
}

/// `fut` with the current context: installed around each of its polls,
/// wherever it is polled, and kept as that poll left it (a rig built inside
/// it enters its journal). For executors that poll on many threads (tokio).
pub fn carried<F: Future + Send>(fut: F) -> Carried<F> {
    Carried {
        ctx: current(),
        fut: Box::pin(fut),
    }
}

/// A future with its context ([`carried`]).
pub struct Carried<F> {
    ctx: Option<Arc<dyn Execution>>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::{SimRt, TokioRt};

    /// No context: no fault and nobody observing (production).
    #[test]
    fn without_a_context_no_fault_is_on() {
        std::thread::spawn(|| {
            assert!(current().is_none());
            assert!(!fault_point::<SimRt>(Fault::M11));
            observe::<SimRt>(|| panic!("an event built with nobody observing"));
        })
        .join()
        .expect("the thread");
    }

    struct Only(Fault);
    impl Execution for Only {
        fn fault_on(&self, fault: Fault) -> bool {
            fault == self.0
        }
        fn observe(&self, _: LifecycleEvent) {}
        fn count_parked(&self, _: Wait, _: i32) {}
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    /// A scoped context is the closure's only: the execution's own comes
    /// back after it.
    #[test]
    fn a_scoped_context_restores_the_one_before() {
        std::thread::spawn(|| {
            enter(Arc::new(Only(Fault::M11)));
            let inner = scoped(Arc::new(Only(Fault::M12)), || {
                (fault_on(Fault::M11), fault_on(Fault::M12))
            });
            assert_eq!(inner, (false, true), "the scoped context's faults only");
            assert!(fault_on(Fault::M11), "the execution's context is back");
        })
        .join()
        .expect("the thread");
    }

    /// Production's backend has no context: even inside one, its fault
    /// points are off and it builds no event; the simulator's ask it.
    #[test]
    fn the_production_backend_never_asks_a_context() {
        std::thread::spawn(|| {
            enter(Arc::new(Only(Fault::M11)));
            assert!(!fault_point::<TokioRt>(Fault::M11));
            assert!(fault_point::<SimRt>(Fault::M11));
            observe::<TokioRt>(|| panic!("production built a world event"));
        })
        .join()
        .expect("the thread");
    }
}
