//! [`Relay`]: work that every caller drives and none owns (D8).
//!
//! A teardown chain or a scope's unload must survive its caller giving up
//! (a timeout, a `select`). The work is one future kept in a [`Monitor`]:
//! the caller that finds it parked takes it and polls it; if that caller's
//! future is dropped mid-way, a guard parks the work again, exactly where
//! it stopped, wakes the other callers, and spawns one detached task that
//! drives it on, so work a dropped call started runs to completion by
//! itself, as a JS promise does (D8). Whoever takes it first (a waiting
//! caller or that task) continues it; no step is skipped, repeated or
//! wedged. A task is spawned only when a caller is dropped mid-work.
//!
//! States: `Parked(work)` → `Driven` (a caller or the continuing task polls
//! it) → `Parked` again if that caller is dropped (and a task is spawned to
//! take it), or `Done`.
//!
//! [`Relay::drive_parking`] parks the work on a drop and spawns nothing,
//! so it waits for another caller: the rejected designs of faults M25 (the
//! teardown) and M29 (a scope's unload, the bridge's quiesce). Fault M15
//! runs the work inside the first caller's future
//! ([`Relay::drive_unguarded`]).
//!
//! `futures::future::Shared` is not used: it wakes its waiters while
//! holding a std mutex, which the simulator's preemption (a task suspended
//! inside a waker) turns into a real deadlock.

use super::{BoxFuture, Monitor, Rt, Wait};
use std::sync::Arc;

enum Work {
    Parked(BoxFuture<()>),
    Driven,
    Done,
}

/// Shared, cancel-safe work (see the module docs).
pub struct Relay<R: Rt> {
    state: Monitor<R, Work>,
}

/// Parks the work again if the caller driving it is dropped, and (unless
/// `parking`, fault M25) spawns a task that continues it.
struct Baton<R: Rt> {
    relay: Arc<Relay<R>>,
    work: Option<BoxFuture<()>>,
    wait: Wait,
    parking: bool,
}

impl<R: Rt> Drop for Baton<R> {
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            self.relay.state.update(|s| *s = Work::Parked(work));
            if !self.parking && R::can_spawn() {
                let (relay, wait) = (self.relay.clone(), self.wait);
                R::spawn_detached(
                    "continues a dropped caller's work (D8)",
                    Box::pin(async move { relay.drive(wait).await }),
                );
            }
        }
    }
}

impl<R: Rt> Relay<R> {
    /// Work not started yet; the first [`drive`](Self::drive) starts it.
    pub fn new(work: BoxFuture<()>) -> Self {
        Relay {
            state: Monitor::new(Work::Parked(work)),
        }
    }

    /// Whether the work has finished.
    pub fn is_done(&self) -> bool {
        self.state.read(|s| matches!(s, Work::Done))
    }

    /// Resolves once the work is done, without driving it: whoever drives
    /// it (a caller, or the task a dropped caller left) must finish it.
    pub async fn finished(&self, label: impl Into<Wait>) {
        self.state
            .wait_until(label, |s| matches!(**s, Work::Done).then_some(()))
            .await
    }

    /// Drive the work until it is done, taking it over from any caller
    /// that gave up; if this caller gives up mid-work, a spawned task
    /// continues it (D8). Resolves when it is done. `label` names the wait
    /// in stall reports.
    pub async fn drive(self: &Arc<Self>, label: impl Into<Wait>) {
        self.drive_with(label, false).await
    }

    /// As [`drive`](Self::drive), but a caller that gives up mid-work only
    /// parks it, and it waits for some later caller to continue it (for the
    /// rejected designs of faults M25 and M29).
    pub async fn drive_parking(self: &Arc<Self>, label: impl Into<Wait>) {
        self.drive_with(label, true).await
    }

    async fn drive_with(self: &Arc<Self>, label: impl Into<Wait>, parking: bool) {
        let wait = label.into();
        let taken = self.state.wait_until(wait, |s| match &**s {
            Work::Done => Some(None),
            Work::Driven => None,
            Work::Parked(_) => match std::mem::replace(&mut **s, Work::Driven) {
                Work::Parked(work) => Some(Some(work)),
                _ => None,
            },
        });
        let Some(work) = taken.await else {
            return;
        };
        let mut baton = Baton {
            relay: self.clone(),
            work: Some(work),
            wait,
            parking,
        };
        if let Some(w) = baton.work.as_mut() {
            w.await;
        }
        baton.work = None;
        self.state.update(|s| *s = Work::Done);
    }

    /// The rejected design (fault M15): the first caller runs the work in
    /// its own future and later callers only wait for the end, so dropping
    /// the first caller wedges everyone.
    pub async fn drive_unguarded(&self, label: impl Into<Wait>) {
        let taken = self
            .state
            .update(|s| match std::mem::replace(s, Work::Driven) {
                Work::Parked(work) => Some(work),
                other => {
                    *s = other;
                    None
                }
            });
        match taken {
            Some(work) => {
                work.await;
                self.state.update(|s| *s = Work::Done);
            }
            None => {
                self.state
                    .wait_until(label, |s| matches!(**s, Work::Done).then_some(()))
                    .await
            }
        }
    }
}
