//! What became of one prompt, read from its agent's journal by a
//! scenario: a typed [`PromptFate`] that scenario checks compare and
//! outcome labels print (`A:aborted`, `B:cleared-in-queue`).
//!
//! States, in the order the journal can move a prompt through them:
//! `pending` (accepted, nothing else yet) → `skipped-at-claim` (the
//! pre-run marker), `cleared-in-queue` (a cancel), `cleared-by-dispose`
//! (disposal) or `started` → `ended(reason)`. The last event decides.

use crate::journal::{EndReason, Event, PromptId, Record};
use std::fmt;

/// What became of one prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptFate {
    /// Accepted; nothing else happened to it.
    Pending,
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
    /// Its turn ran every step.
    pub const COMPLETED: PromptFate = PromptFate::Ended(EndReason::Completed);

    /// The fate of prompt `p` in `journal`.
    pub fn of(journal: &[Record], p: PromptId) -> PromptFate {
        let mut fate = PromptFate::Pending;
        for r in journal {
            match &r.event {
                Event::TurnStart { prompt } if *prompt == p => fate = PromptFate::Started,
                Event::TurnEnd { prompt, reason, .. } if *prompt == p => {
                    fate = PromptFate::Ended(*reason)
                }
                Event::Skipped { prompt } if *prompt == p => fate = PromptFate::SkippedAtClaim,
                Event::Cleared { prompts, .. } if prompts.contains(&p) => {
                    fate = PromptFate::ClearedInQueue
                }
                Event::DisposeBegan { prompts } if prompts.contains(&p) => {
                    fate = PromptFate::ClearedByDispose
                }
                _ => {}
            }
        }
        fate
    }
}

impl fmt::Display for PromptFate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromptFate::Pending => f.write_str("pending"),
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
    fn labels_keep_their_text() {
        for (fate, text) in [
            (PromptFate::Pending, "pending"),
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
