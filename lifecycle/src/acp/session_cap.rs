//! The cap on sessions per connection (A10): each session costs a log's
//! open, locked descriptor and a few KiB, so one connection holds at most
//! [`MAX_SESSIONS`]. A `session/new` or `session/load` takes a [`Slot`]
//! when it is admitted, before its creation runs, so requests sent back
//! to back (before any is answered) are counted too; the slot is given
//! back when the request is answered, by which time a kept session is
//! counted by the bridge.
//!
//! States of a slot: taken (admitted, counted pending) → dropped (answered;
//! the session, if kept, is the bridge's).

use super::AcpError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The most sessions one connection holds at once; past them
/// `session/new` and `session/load` are refused (-32602) until one is
/// closed (`session/close`).
pub const MAX_SESSIONS: usize = 4_096;

/// The admitted `session/new` and `session/load` requests not yet answered.
#[derive(Clone, Default)]
pub(super) struct Slots(Arc<AtomicUsize>);

/// One admitted request's place under the cap, given back on drop.
pub(super) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Slots {
    /// A slot, if the `held` sessions and the pending requests leave room
    /// for one more; else the refusal to answer with.
    pub(super) fn take(&self, held: usize) -> Result<Slot, AcpError> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |pending| {
                (held + pending < MAX_SESSIONS).then_some(pending + 1)
            })
            .map(|_| Slot(self.0.clone()))
            .map_err(|_| AcpError::TooManySessions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a10_pending_requests_count_against_the_cap_until_answered() {
        let slots = Slots::default();
        let taken: Vec<Slot> = (0..3)
            .map(|_| {
                slots
                    .take(MAX_SESSIONS - 3)
                    .unwrap_or_else(|_| panic!("room"))
            })
            .collect();
        assert!(
            slots.take(MAX_SESSIONS - 3).is_err(),
            "three pending fill it"
        );
        drop(taken);
        assert!(slots.take(MAX_SESSIONS - 1).is_ok());
        assert!(slots.take(MAX_SESSIONS).is_err());
    }
}
