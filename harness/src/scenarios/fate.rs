//! What became of one prompt, read from its agent's journal by a
//! scenario: a typed [`PromptFate`] that scenario checks compare and
//! outcome labels print (`A:aborted`, `B:cleared-in-queue`).
//!
//! States, in the order the journal can move a prompt through them:
//! `pending` (accepted, nothing else yet) → `skipped-at-claim` (the
//! pre-run marker), `cleared-in-queue` (a cancel), `cleared-by-dispose`
//! (disposal) or `started` → `ended(reason)`. The last event decides.

pub use lifecycle_spec::PromptFate;

use crate::journal::{Event, PromptId, Record};

/// Reading a [`PromptFate`] (defined once, in `lifecycle-spec`) from an
/// agent's journal.
pub trait FromJournal {
    /// The fate of prompt `p` in `journal`.
    fn of(journal: &[Record], p: PromptId) -> Self;
}

impl FromJournal for PromptFate {
    fn of(journal: &[Record], p: PromptId) -> PromptFate {
        let mut fate = PromptFate::QUEUED;
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

/// What a scenario whose outcome is how its prompts ended says happened:
/// the fate of each named prompt, in order. Shown as
/// `A:aborted tail:cleared-in-queue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fates(pub Vec<(&'static str, PromptFate)>);

impl Fates {
    /// The fates of prompts `named` in `journal`.
    pub fn of(journal: &[Record], named: &[(&'static str, PromptId)]) -> Fates {
        Fates(
            named
                .iter()
                .map(|&(name, p)| (name, PromptFate::of(journal, p)))
                .collect(),
        )
    }

    /// The fate of the prompt named `name`.
    pub fn fate(&self, name: &str) -> Option<PromptFate> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

impl std::fmt::Display for Fates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, fate)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name}:{fate}")?;
        }
        Ok(())
    }
}
