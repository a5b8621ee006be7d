//! [`Relay`]: work that every caller drives and none owns (D8).
//!
//! A teardown chain or a scope's unload must survive its caller giving up
//! (a timeout, a `select`). The work is one future kept in a [`Monitor`]:
//! the caller that finds it parked takes it and polls it; if that caller's
//! future is dropped mid-way, a guard parks the work again, exactly where
//! it stopped, and wakes the other callers, one of which takes it over. No
//! step is skipped, repeated or wedged, and no task is spawned for it.
//!
//! States: `Parked(work)` → `Driven` (a caller polls it) → `Parked` again
//! if that caller is dropped, or `Done`.
//!
//! `futures::future::Shared` is not used: it wakes its waiters while
//! holding a std mutex, which the simulator's preemption (a task suspended
//! inside a waker) turns into a real deadlock.

use super::{BoxFuture, Monitor, Rt};

enum Work {
    Parked(BoxFuture<()>),
    Driven,
    Done,
}

/// Shared, cancel-safe work (see the module docs).
pub struct Relay<R: Rt> {
    state: Monitor<R, Work>,
}

/// Parks the work again if the caller driving it is dropped.
struct Baton<'a, R: Rt> {
    relay: &'a Relay<R>,
    work: Option<BoxFuture<()>>,
}

impl<R: Rt> Drop for Baton<'_, R> {
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            self.relay.state.update(|s| *s = Work::Parked(work));
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

    /// Drive the work until it is done, taking it over from any caller
    /// that gave up. Resolves when it is done. `label` names the wait in
    /// stall reports.
    pub async fn drive(&self, label: &'static str) {
        let taken = self.state.wait_until(label, |s| match s {
            Work::Done => Some(None),
            Work::Driven => None,
            Work::Parked(_) => match std::mem::replace(s, Work::Driven) {
                Work::Parked(work) => Some(Some(work)),
                _ => None,
            },
        });
        let Some(work) = taken.await else {
            return;
        };
        let mut baton = Baton {
            relay: self,
            work: Some(work),
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
    pub async fn drive_unguarded(&self, label: &'static str) {
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
                    .wait_until(label, |s| matches!(s, Work::Done).then_some(()))
                    .await
            }
        }
    }
}
