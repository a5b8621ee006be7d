//! The faults of SPEC §3, as model variants.

use std::fmt;

/// One rejected design or known bug (SPEC §3). Model constructors take an
/// `Option<Fault>`; a fault that does not concern a model changes nothing
/// in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Fault {
    /// Session lifecycle in a sibling effect of the loop (violates D3).
    M1,
    /// tool-bash keeps ownership in its own map (violates S5).
    M2,
    /// No pre-run marker (violates C4).
    M3,
    /// Idle cancel sets the marker (violates C6).
    M4,
    /// The marker also swallows the next accepted prompt (violates C5).
    M5,
    /// Dispose not memoized (violates D1).
    M6,
    /// `session/new` ignores a close during creation (violates A1).
    M7,
    /// `session/load` ignores a close during resume (violates A1).
    M8,
    /// `enter` does not recheck for a duplicate live id (violates R1).
    M9,
    /// A panicking `agent/disposed` listener aborts the teardown (violates D4).
    M10,
    /// `cancel-requested` emitted after clearing the inbox (violates C1/C2).
    M11,
    /// `when_idle` resolves on the status flip (violates C7).
    M12,
    /// The teardown chain runs inside the first caller's future, so
    /// dropping that future wedges it (violates D8, D1).
    M15,
    /// The session log is flushed only at `turn/end`: no write-ahead
    /// (violates D9).
    M16,
    /// `load` keeps a torn last record and the next append lands on it
    /// (violates D9).
    M17,
    /// A failed write or fsync is logged and otherwise ignored (violates
    /// D10).
    M18,
    /// The running step never sees the cancellation signal: cancel waits
    /// until the step ends by itself (violates C10).
    M19,
    /// Disposing an agent leaves its background jobs running and readable
    /// (violates S7).
    M20,
    /// A completion notice goes to the first live agent whose id starts
    /// with the owner (violates S6).
    M21,
    /// The registry's detach removes every entry with the id, not just the
    /// exact `(id, serial)` (violates R2).
    M22,
    /// A turn stopped by disposal after an earlier cancel ends `aborted`
    /// (violates C3).
    M23,
    /// Creation checks its owner before the setup await instead of after
    /// it: a creation whose owner unloaded during setup publishes its
    /// session and agent, then tears them down (violates R3).
    M24,
    /// The teardown of a dropped `dispose` waits for another caller to
    /// continue it (violates D8).
    M25,
    /// After a storage error the session refuses appends until the process
    /// restarts (violates D10).
    M26,
}

impl Fault {
    /// Every fault, in SPEC order.
    pub const ALL: [Fault; 24] = [
        Fault::M1,
        Fault::M2,
        Fault::M3,
        Fault::M4,
        Fault::M5,
        Fault::M6,
        Fault::M7,
        Fault::M8,
        Fault::M9,
        Fault::M10,
        Fault::M11,
        Fault::M12,
        Fault::M15,
        Fault::M16,
        Fault::M17,
        Fault::M18,
        Fault::M19,
        Fault::M20,
        Fault::M21,
        Fault::M22,
        Fault::M23,
        Fault::M24,
        Fault::M25,
        Fault::M26,
    ];

    /// The rule IDs the fault must violate (SPEC §3).
    pub fn must_violate(self) -> &'static [&'static str] {
        match self {
            Fault::M1 => &["D3"],
            Fault::M2 => &["S5"],
            Fault::M3 => &["C4"],
            Fault::M4 => &["C6"],
            Fault::M5 => &["C5"],
            Fault::M6 => &["D1"],
            Fault::M7 | Fault::M8 => &["A1"],
            Fault::M9 => &["R1"],
            Fault::M10 => &["D4"],
            Fault::M11 => &["C1", "C2"],
            Fault::M12 => &["C7"],
            Fault::M15 => &["D8", "D1"],
            Fault::M16 | Fault::M17 => &["D9"],
            Fault::M18 => &["D10"],
            Fault::M19 => &["C10"],
            Fault::M20 => &["S7"],
            Fault::M21 => &["S6"],
            Fault::M22 => &["R2"],
            Fault::M23 => &["C3"],
            Fault::M24 => &["R3"],
            Fault::M25 => &["D8"],
            Fault::M26 => &["D10"],
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
