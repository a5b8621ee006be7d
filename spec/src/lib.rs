//! The vocabulary of the agent lifecycle specification (`SPEC.md`),
//! defined once for the implementation (`lifecycle`), its harness
//! (`lifecycle-harness`) and the executable models (`lifecycle-models`):
//! the rules of SPEC §2 ([`Rule`], [`Family`]), the faults of SPEC §3
//! ([`Fault`]), why a turn ends ([`EndReason`]) and what becomes of a prompt
//! ([`PromptFate`]).

#![deny(missing_docs)]

pub mod faults;
pub mod rules;

pub use faults::Fault;
pub use rules::{Family, Rule};

use std::fmt;

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

/// What became of one prompt. States, in the order a prompt moves through
/// them: `pending` (accepted; in the inbox, or claimed by the loop and not
/// started) then `skipped-at-claim` (the pre-run marker, C4),
/// `cleared-in-queue` (a cancel, C2), `cleared-by-dispose` (disposal, D6)
/// or `started`, then `ended(reason)`. The harness reads it from an
/// agent's journal, which cannot tell a claimed prompt from a queued one;
/// the agent model can, and says which with `claimed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PromptFate {
    /// Accepted; not started, cleared or skipped yet.
    Pending {
        /// Claimed by the loop (the model's `in-hand`), not just queued.
        claimed: bool,
    },
    /// Its turn started and has not ended.
    Started,
    /// Its turn ended, for this reason.
    Ended(EndReason),
    /// Claimed, then skipped by the pre-run marker (C4).
    SkippedAtClaim,
    /// Cleared from the inbox by a cancel (C2).
    ClearedInQueue,
    /// Dropped from the inbox by disposal (D6).
    ClearedByDispose,
}

impl PromptFate {
    /// Accepted, in the inbox.
    pub const QUEUED: PromptFate = PromptFate::Pending { claimed: false };
    /// Claimed by the loop, not started.
    pub const IN_HAND: PromptFate = PromptFate::Pending { claimed: true };
    /// Its turn ran every step.
    pub const COMPLETED: PromptFate = PromptFate::Ended(EndReason::Completed);

    /// Its turn's end reason, if it ended.
    pub fn ended(self) -> Option<EndReason> {
        match self {
            PromptFate::Ended(r) => Some(r),
            _ => None,
        }
    }
}

/// Its label in outcomes and reports: `pending`, `started`, the end
/// reason (`aborted`), `skipped-at-claim`, `cleared-in-queue`,
/// `cleared-by-dispose`.
impl fmt::Display for PromptFate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromptFate::Pending { .. } => f.write_str("pending"),
            PromptFate::Started => f.write_str("started"),
            PromptFate::Ended(reason) => f.write_str(&format!("{reason:?}").to_lowercase()),
            PromptFate::SkippedAtClaim => f.write_str("skipped-at-claim"),
            PromptFate::ClearedInQueue => f.write_str("cleared-in-queue"),
            PromptFate::ClearedByDispose => f.write_str("cleared-by-dispose"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fate_labels_keep_their_text() {
        for (fate, text) in [
            (PromptFate::QUEUED, "pending"),
            (PromptFate::IN_HAND, "pending"),
            (PromptFate::Started, "started"),
            (PromptFate::COMPLETED, "completed"),
            (PromptFate::Ended(EndReason::Aborted), "aborted"),
            (PromptFate::Ended(EndReason::Disposed), "disposed"),
            (PromptFate::Ended(EndReason::Interrupted), "interrupted"),
            (PromptFate::SkippedAtClaim, "skipped-at-claim"),
            (PromptFate::ClearedInQueue, "cleared-in-queue"),
            (PromptFate::ClearedByDispose, "cleared-by-dispose"),
        ] {
            assert_eq!(fate.to_string(), text);
        }
    }
}
