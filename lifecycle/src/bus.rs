//! The event bus: observers of an agent's public events. An observer that
//! panics is contained: the panic is caught, logged through `tracing` and
//! journaled, and the emitter carries on (C9, later D4).

use crate::journal::Cause;
use crate::rt::{Mutex, Rt};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A public event delivered to observers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicEvent {
    /// `agent/cancel-requested {cause}`.
    CancelRequested(Cause),
}

impl PublicEvent {
    /// The event's wire name.
    pub fn name(&self) -> &'static str {
        match self {
            PublicEvent::CancelRequested(_) => "agent/cancel-requested",
        }
    }
}

/// An observer: gets a context (the agent) and the event.
pub type Observer<C> = Arc<dyn Fn(&C, &PublicEvent) + Send + Sync>;

/// Observers of one emitter, in registration order.
pub struct Bus<R: Rt, C: 'static> {
    observers: Mutex<R, Vec<Observer<C>>>,
}

impl<R: Rt, C: 'static> Default for Bus<R, C> {
    fn default() -> Self {
        Self {
            observers: Mutex::new(Vec::new()),
        }
    }
}

impl<R: Rt, C: 'static> Bus<R, C> {
    /// Add an observer.
    pub fn observe(&self, f: Observer<C>) {
        self.observers.with(|o| o.push(f));
    }

    /// Deliver `event` to every observer, outside any lock. Returns the
    /// messages of the observers that panicked; none of them stops delivery.
    pub fn emit(&self, ctx: &C, event: &PublicEvent) -> Vec<String> {
        let observers = self.observers.with(|o| o.clone());
        let mut panics = Vec::new();
        for obs in observers {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| obs(ctx, event))) {
                let message = panic_message(payload.as_ref());
                tracing::warn!(event = event.name(), %message, "observer panicked; contained");
                panics.push(message);
            }
        }
        panics
    }
}

/// The text of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
