//! Virtual time and timers.
//!
//! Design:
//! - Time is a `u64` count of virtual milliseconds, starting at 0. It never
//!   moves on its own and never reads the OS clock.
//! - Time advances only when **no task is ready**: the executor then pops the
//!   earliest pending timer, sets the clock to its deadline and wakes it. One
//!   timer fires per step; timers with equal deadlines fire in registration
//!   order, because the timer map is keyed by `(deadline, registration seq)`.
//! - A [`Sleep`] computes its deadline when created (`now + ms`), registers its
//!   timer on first pending poll, refreshes the stored waker if the task's
//!   waker changes, and removes its timer when dropped early, so an abandoned
//!   sleep (for example the losing branch of a timeout) never moves time.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::context;
use crate::timers::TimerKey;

/// Future returned by [`sleep`]: completes once virtual time reaches its
/// deadline.
#[must_use = "futures do nothing unless awaited"]
///
/// It holds no reference to the simulation (it finds it through the
/// thread-local context on each poll), so it is `Send` and can be boxed with
/// the rest of a task's state.
pub struct Sleep {
    deadline: u64,
    key: Option<TimerKey>,
    yielded: bool,
}

impl Sleep {
    /// The virtual time (ms) at which this sleep completes.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline_ms", &self.deadline)
            .field("registered", &self.key.is_some())
            .finish()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if !this.yielded && this.key.is_none() {
            // Reading the clock and registering a timer: a scheduling point.
            context::schedule_point();
        }
        let shared = context::current();
        if shared.untimed.get() {
            // Untimed: the sleep is an arbitrary delay, i.e. one scheduling
            // point; whether other tasks run first is the scheduler's choice.
            if this.yielded {
                return Poll::Ready(());
            }
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if shared.now.get() >= this.deadline {
            if let Some(key) = this.key.take() {
                let stale = shared.timers.borrow_mut().remove(key);
                drop(stale);
            }
            return Poll::Ready(());
        }
        let mut timers = shared.timers.borrow_mut();
        let still_pending = match this.key {
            Some(key) => timers.refresh(key, cx.waker()),
            None => false,
        };
        if !still_pending {
            this.key = Some(timers.insert(this.deadline, cx.waker().clone()));
            // Equal deadlines fire in registration order.
            crate::access::touch(crate::resource::TIMER | this.deadline);
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // `try_borrow_mut`: never panic in a destructor.
            let Some(shared) = context::try_current() else {
                return;
            };
            let stale = match shared.timers.try_borrow_mut() {
                Ok(mut timers) => timers.remove(key),
                Err(_) => None,
            };
            drop(stale);
        }
    }
}

/// Sleeps for `ms` virtual milliseconds, measured from the moment `sleep` is
/// called.
///
/// `sleep(0)` completes on first poll without yielding.
///
/// # Panics
/// If no simulation is running on this thread.
pub fn sleep(ms: u64) -> Sleep {
    let shared = context::current();
    let deadline = shared.now.get().saturating_add(ms);
    Sleep {
        deadline,
        key: None,
        yielded: false,
    }
}
