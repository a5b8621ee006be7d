//! [`Monitor`]: the one async wake-up primitive, written once over any
//! backend's [`Mutex`](super::Mutex) and the task's `Waker`.
//!
//! A monitor holds a state and a list of parked wakers under one lock.
//! `wait_until(label, f)` runs `f` on the state under the lock; `Some(v)`
//! resolves, `None` parks the task (registering its waker under the SAME lock,
//! so no wake-up can be lost between the check and the park). `update(f)`
//! mutates the state and wakes every parked task, which then re-checks.

use super::{BoxFuture, Mutex, Rt};
use std::future::Future;
use std::sync::Arc;
use std::task::{Poll, Waker};

struct Inner<S> {
    state: S,
    waiters: Vec<Waker>,
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
        self.inner.with(|inner| f(&inner.state))
    }

    /// Wait until `f` returns `Some`. `f` may change the state; when it
    /// returns `Some`, the other waiters are woken to re-check (the change may
    /// concern them). `label` names the wait in stall reports.
    pub fn wait_until<'a, O: 'a>(
        &'a self,
        label: &'static str,
        mut f: impl FnMut(&mut S) -> Option<O> + 'a,
    ) -> impl Future<Output = O> + 'a {
        std::future::poll_fn(move |cx| {
            let (res, woken) = self.inner.with(|inner| match f(&mut inner.state) {
                Some(v) => (Poll::Ready(v), std::mem::take(&mut inner.waiters)),
                None => {
                    if !inner.waiters.iter().any(|w| w.will_wake(cx.waker())) {
                        inner.waiters.push(cx.waker().clone());
                    }
                    (Poll::Pending, Vec::new())
                }
            });
            if res.is_pending() {
                R::note_wait(label);
            }
            for w in woken {
                w.wake();
            }
            res
        })
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
        self.slot.wait_until("join", |s| s.take()).await
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
