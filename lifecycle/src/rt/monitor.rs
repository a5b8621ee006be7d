//! [`Monitor`]: the one async wake-up primitive, written once over any
//! backend's [`Mutex`](super::Mutex) and the task's `Waker`.
//!
//! A monitor holds a state and a list of parked wakers under one lock.
//! `wait_until(label, f)` runs `f` on the state under the lock; `Some(v)`
//! resolves, `None` parks the task (registering its waker under the SAME lock,
//! so no wake-up can be lost between the check and the park). `update(f)`
//! mutates the state and wakes every parked task, which then re-checks.
//!
//! A check sees the state through a [`Probe`]: reading it is free, taking
//! write access is recorded. The section's access is derived from that, not
//! from the check's word: a check that parks is an await (a read the
//! simulator's reduction may move past writes), and one that parks after
//! taking write access is a harness error on the simulator
//! ([`Rt::footprint_error`]), reported as a write.

use super::{Access, BoxFuture, Mutex, Rt, Wait};
use std::future::Future;
use std::sync::Arc;
use std::task::{Poll, Waker};

struct Inner<S> {
    state: S,
    waiters: Vec<Waker>,
}

impl<S> Inner<S> {
    /// Registers `waker` once among the waiters (call under the lock).
    fn park(&mut self, waker: &Waker) {
        if !self.waiters.iter().any(|w| w.will_wake(waker)) {
            self.waiters.push(waker.clone());
        }
    }
}

/// The state as a [`Monitor::wait_until`] check sees it: `Deref` reads it,
/// `DerefMut` takes write access and bumps the probe's version, so the
/// monitor knows whether the check may have changed the state, from what it
/// did rather than from what it says. Read through `&**probe` (or a method
/// taking `&self`) where only reading is meant; take `&mut` only on the
/// path that returns `Some`.
pub struct Probe<'a, S> {
    state: &'a mut S,
    writes: u32,
    parking_writes: u32,
}

impl<'a, S> Probe<'a, S> {
    fn new(state: &'a mut S) -> Self {
        Probe {
            state,
            writes: 0,
            parking_writes: 0,
        }
    }

    /// Write access that a check which then parks means to take (a waiter
    /// registering itself, atomically with its check, where others read
    /// it): the section is then reported as a write, not an await, and it
    /// is no harness error. Take it only when something changes, or every
    /// re-check is a write.
    pub fn parking_write(&mut self) -> &mut S {
        self.parking_writes += 1;
        self.state
    }
}

impl<S> std::ops::Deref for Probe<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.state
    }
}

impl<S> std::ops::DerefMut for Probe<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        self.writes += 1;
        self.state
    }
}

/// What a wait's check did to its state, as its [`Probe`] saw it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wrote {
    Nothing,
    /// Only through [`Probe::parking_write`].
    Announced,
    /// Through `DerefMut`.
    Unannounced,
}

/// State guarded by a mutex, with tasks able to wait for a condition on it.
pub struct Monitor<R: Rt, S: Send + 'static> {
    inner: Mutex<R, Inner<S>>,
}

impl<R: Rt, S: Send + 'static> Monitor<R, S> {
    /// A monitor around `state`.
    pub fn new(state: S) -> Self {
        Self {
            inner: Mutex::new(Inner {
                state,
                waiters: Vec::new(),
            }),
        }
    }

    /// Read or change the state and wake every waiter to re-check.
    pub fn update<O>(&self, f: impl FnOnce(&mut S) -> O) -> O {
        let (out, woken) = self.inner.with(|inner| {
            let out = f(&mut inner.state);
            (out, std::mem::take(&mut inner.waiters))
        });
        // Wake outside the lock: a woken task may run at once (threads).
        for w in woken {
            w.wake();
        }
        out
    }

    /// Read the state without waking anyone.
    pub fn read<O>(&self, f: impl FnOnce(&S) -> O) -> O {
        self.inner.read(|inner| f(&inner.state))
    }

    /// Wait until `f` returns `Some`. `f` may change the state; when it
    /// returns `Some`, the other waiters are woken to re-check (the change may
    /// concern them). `label` names the wait in stall reports.
    ///
    /// `f` must not take write access to the state (through the
    /// [`Probe`]'s `DerefMut`) when it returns `None`: a check that parks
    /// is a read (parking commutes with other parks: every waiter is
    /// woken, in no particular order, by the next change). One that does
    /// is reported as a write and, on the simulator, ends the run with a
    /// harness error. A check that must register itself as it parks says
    /// so with [`Probe::parking_write`]: a write, and no error.
    pub fn wait_until<'a, O: 'a>(
        &'a self,
        wait: impl Into<Wait>,
        mut f: impl FnMut(&mut Probe<'_, S>) -> Option<O> + 'a,
    ) -> impl Future<Output = O> + 'a {
        let wait = wait.into();
        let mut parked = Parked::<R>::new(wait);
        std::future::poll_fn(move |cx| {
            let (res, woken, _) = self.inner.section(
                |inner| {
                    let mut probe = Probe::new(&mut inner.state);
                    let out = f(&mut probe);
                    if matches!(R::BACKEND, super::Backend::Sim)
                        && out.is_none()
                        && super::mislabel::planted(super::Mislabel::ReadThatWrites)
                    {
                        let _: &mut S = &mut probe;
                    }
                    let wrote = match (probe.writes, probe.parking_writes) {
                        (0, 0) => Wrote::Nothing,
                        (0, _) => Wrote::Announced,
                        _ => Wrote::Unannounced,
                    };
                    match out {
                        Some(v) => (Poll::Ready(v), std::mem::take(&mut inner.waiters), wrote),
                        None => {
                            inner.park(cx.waker());
                            (Poll::Pending, Vec::new(), wrote)
                        }
                    }
                },
                |(res, _, wrote)| {
                    if res.is_ready() || *wrote == Wrote::Announced {
                        Access::Write
                    } else if *wrote == Wrote::Unannounced {
                        R::footprint_error(&format!(
                            "the check of wait `{}` parked after taking write access to its state (a read that writes)",
                            wait.label
                        ));
                        Access::Write
                    } else {
                        Access::Await
                    }
                },
            );
            if res.is_pending() {
                R::note_wait(wait);
                parked.park();
            } else {
                parked.unpark();
            }
            for w in woken {
                w.wake();
            }
            res
        })
    }
}

impl<R: Rt, S: Send + 'static> Monitor<R, S> {
    /// The check-then-act shape of fault M14, kept for the harness only:
    /// `f` is checked in one lock section and the waker parked in a second
    /// one, so an [`update`](Self::update) between the two wakes nobody and
    /// the wait never ends (a lost wake-up). Lifecycle code uses
    /// [`wait_until`](Self::wait_until).
    pub fn wait_until_unfenced<'a, O: 'a>(
        &'a self,
        wait: impl Into<Wait>,
        mut f: impl FnMut(&mut Probe<'_, S>) -> Option<O> + 'a,
    ) -> impl Future<Output = O> + 'a {
        let wait = wait.into();
        let mut parked = Parked::<R>::new(wait);
        std::future::poll_fn(move |cx| {
            if let Some(v) = self
                .inner
                .with(|inner| f(&mut Probe::new(&mut inner.state)))
            {
                parked.unpark();
                let woken = self.inner.with(|inner| std::mem::take(&mut inner.waiters));
                for w in woken {
                    w.wake();
                }
                return Poll::Ready(v);
            }
            self.inner.with(|inner| inner.park(cx.waker()));
            R::note_wait(wait);
            parked.park();
            Poll::Pending
        })
    }
}

/// One wait's entry in the execution's count of parked waits
/// (`context::parked_waits`), on backends that count them
/// (`Rt::COUNTS_PARKED`).
struct Parked<R: Rt> {
    wait: Wait,
    parked: bool,
    _rt: std::marker::PhantomData<fn() -> R>,
}

impl<R: Rt> Parked<R> {
    fn new(wait: Wait) -> Self {
        Parked {
            wait,
            parked: false,
            _rt: std::marker::PhantomData,
        }
    }

    fn park(&mut self) {
        if R::CONTEXT && R::COUNTS_PARKED && !self.parked {
            self.parked = true;
            super::context::count_parked(self.wait, 1);
        }
    }

    fn unpark(&mut self) {
        if R::CONTEXT && R::COUNTS_PARKED && self.parked {
            self.parked = false;
            super::context::count_parked(self.wait, -1);
        }
    }
}

impl<R: Rt> Drop for Parked<R> {
    fn drop(&mut self) {
        self.unpark();
    }
}

/// Awaits a task started by [`spawn`].
pub struct JoinHandle<R: Rt, T: Send + 'static> {
    slot: Arc<Monitor<R, Option<T>>>,
    name: String,
}

impl<R: Rt, T: Send + 'static> JoinHandle<R, T> {
    /// The task's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Wait for the task's output.
    pub async fn join(self) -> T {
        self.join_as(Wait::new("join")).await
    }

    /// [`join`](Self::join), parked as `wait`: a join a rule hangs on (the
    /// answer of a cancelled prompt, say) names it, so a deadlock with it
    /// still parked breaks that rule.
    pub async fn join_as(self, wait: Wait) -> T {
        // Read first: `take` on an empty slot would take write access.
        self.slot
            .wait_until(wait, |s| if s.is_some() { s.take() } else { None })
            .await
    }
}

/// Start a named task on backend `R` and return a handle to join it.
pub fn spawn<R: Rt, T: Send + 'static>(
    name: &str,
    fut: impl Future<Output = T> + Send + 'static,
) -> JoinHandle<R, T> {
    let slot = Arc::new(Monitor::<R, Option<T>>::new(None));
    let done = slot.clone();
    // Every event the task traces carries its name (the replay trace is
    // read per task).
    let span = tracing::info_span!(parent: None, "task", name = %name);
    let task: BoxFuture<()> = Box::pin(tracing::Instrument::instrument(
        async move {
            let out = fut.await;
            done.update(|s| *s = Some(out));
        },
        span,
    ));
    R::spawn_detached(name, task);
    JoinHandle {
        slot,
        name: name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::LifecycleEvent;
    use crate::rt::context::{enter, Execution};
    use crate::rt::{BoxFuture, TokioRt};
    use lifecycle_spec::faults::Fault;
    use std::sync::{Arc, Mutex as StdMutex};

    /// tokio, counting its parked waits (as loom and shuttle do).
    struct Counting;
    impl Rt for Counting {
        const NAME: &'static str = "counting";
        const BACKEND: super::super::Backend = super::super::Backend::Tokio;
        const COUNTS_PARKED: bool = true;
        const CONTEXT: bool = true;
        type RawMutex<T: Send + 'static> = <TokioRt as Rt>::RawMutex<T>;
        fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
            TokioRt::raw_mutex(value)
        }
        fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
            TokioRt::raw_with(m, f)
        }
        fn spawn_detached(name: &str, fut: BoxFuture<()>) {
            TokioRt::spawn_detached(name, fut)
        }
        fn yield_now() -> BoxFuture<()> {
            TokioRt::yield_now()
        }
        fn sleep(ms: u64) -> BoxFuture<()> {
            TokioRt::sleep(ms)
        }
        fn now_ms() -> u64 {
            TokioRt::now_ms()
        }
    }

    /// The net count of each wait, as the execution's context hears it.
    #[derive(Default)]
    struct Tally(StdMutex<Vec<(Wait, i32)>>);
    impl Execution for Tally {
        fn fault_on(&self, _: Fault) -> bool {
            false
        }
        fn observe(&self, _: LifecycleEvent) {}
        fn count_parked(&self, wait: Wait, delta: i32) {
            let mut t = self.0.lock().unwrap();
            match t.iter_mut().find(|(w, _)| *w == wait) {
                Some((_, n)) => *n += delta,
                None => t.push((wait, delta)),
            }
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    /// A wait is counted once however often it parks, uncounted when it
    /// ends or is dropped, and not at all on a backend that does not count.
    #[test]
    fn a_parked_wait_is_counted_once_until_it_ends() {
        std::thread::spawn(|| {
            let tally = Arc::new(Tally::default());
            enter(tally.clone());
            let net = || tally.0.lock().unwrap().clone();
            let mut mine = Parked::<Counting>::new(Wait::WHEN_IDLE);
            mine.park();
            mine.park();
            assert_eq!(net(), [(Wait::WHEN_IDLE, 1)]);
            mine.unpark();
            assert_eq!(net(), [(Wait::WHEN_IDLE, 0)]);
            let mut dropped = Parked::<Counting>::new(Wait::TEARDOWN);
            dropped.park();
            drop(dropped);
            assert_eq!(net(), [(Wait::WHEN_IDLE, 0), (Wait::TEARDOWN, 0)]);
            Parked::<TokioRt>::new(Wait::ACP_QUIESCE).park();
            assert_eq!(net().len(), 2, "tokio counts nothing");
        })
        .join()
        .unwrap();
    }
}
