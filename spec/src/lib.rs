//! The vocabulary of the agent lifecycle specification (`SPEC.md`),
//! defined once for the implementation (`agent-lifecycle`), its harness
//! and the executable models (`lifecycle-models`): the rules of SPEC §2
//! ([`Rule`], [`Family`]), the faults of SPEC §3 ([`Fault`], [`Faults`])
//! and why a turn ends ([`EndReason`]).

#![deny(missing_docs)]

pub mod faults;
pub mod rules;

pub use faults::{Fault, Faults};
pub use rules::{Family, Rule};

/// Why a turn ended (`turn/end {reason}`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// Every step ran.
    Completed,
    /// Its token was requested by a cancel (C3).
    Aborted,
    /// Disposal stopped it (C3: overrides a cancel).
    Disposed,
    /// Its session log could not be written (D10).
    Failed,
    /// The process died during the turn; written by the next load (D9).
    Interrupted,
}
