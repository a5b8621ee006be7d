//! Footprint mislabels planted on purpose (harness only), to show that the
//! simulator checks what `Rt` reports at the source rather than trusting
//! it: each one, switched on, makes a primitive report
//! less than it did, and the run ends with a harness error
//! (`lifecycle_sim::SimError::Footprint`) at the step that did it, with no
//! other checker involved.
//!
//! The switch is thread-local: a simulated run polls every task on the
//! thread that runs it, and tests running in parallel do not see each
//! other's plants.

use std::cell::Cell;

/// A planted mislabel of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mislabel {
    /// A monitor check that parks takes write access to its state (a
    /// section reported as a read that writes).
    ReadThatWrites,
    /// A lock's read section reports no access to its object (the lock's
    /// reads left out of the footprint).
    LockReadsUnreported,
}

thread_local! {
    static PLANTED: Cell<Option<Mislabel>> = const { Cell::new(None) };
}

/// Plants `mislabel` on this thread until the guard drops.
pub fn plant(mislabel: Mislabel) -> Planted {
    let prev = PLANTED.with(|p| p.replace(Some(mislabel)));
    Planted { prev }
}

/// Whether `mislabel` is planted on this thread.
pub(crate) fn planted(mislabel: Mislabel) -> bool {
    PLANTED.with(|p| p.get() == Some(mislabel))
}

/// Restores the previous plant when dropped.
#[must_use = "the plant is removed when the guard drops"]
pub struct Planted {
    prev: Option<Mislabel>,
}

impl Drop for Planted {
    fn drop(&mut self) {
        PLANTED.with(|p| p.set(self.prev));
    }
}
