//! The agent's transition journal: every decision of the core, in the order
//! the decisions were taken (recorded under the same lock as the transition,
//! so the order is the linearization order on every backend).
//!
//! The journal is what the rule oracles read (`crate::oracle`): a history in
//! the Jepsen sense. It is also what `replay` prints.

use serde::Serialize;
use std::fmt;

/// Who asked for a cancel (SPEC C1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cause {
    /// A user (ACP `session/cancel`). The default.
    User,
    /// A parent agent.
    Parent,
}

/// Why a turn ended (`turn/end {reason}`): defined once, in
/// `lifecycle-spec`.
pub use lifecycle_spec::EndReason;

/// Identifies one accepted prompt (one turn).
pub type PromptId = u64;
/// Identifies one accepted steering input.
pub type SteerId = u64;
/// Identifies one `cancel` call.
pub type CallId = u64;

/// One transition of an agent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// `send` (or `steer` while not running) queued a prompt.
    Accepted {
        /// The prompt.
        prompt: PromptId,
    },
    /// `steer` queued an input for the running turn.
    SteerAccepted {
        /// The input.
        input: SteerId,
    },
    /// `send`/`steer` refused: the agent is disposed.
    Rejected,
    /// `cancel(cause)` entered (before anything else it does).
    CancelCalled {
        /// The call.
        call: CallId,
        /// Its cause.
        cause: Cause,
    },
    /// `agent/cancel-requested {cause}` is about to be delivered to observers.
    CancelRequested {
        /// The call.
        call: CallId,
        /// Its cause.
        cause: Cause,
    },
    /// The call cleared both FIFOs (C2), requested the turn token (C3) and
    /// possibly set the pre-run marker (C4).
    Cleared {
        /// The call.
        call: CallId,
        /// Prompts removed from `queued`.
        prompts: Vec<PromptId>,
        /// Inputs removed from `steering`.
        steering: Vec<SteerId>,
        /// Whether the pre-run marker was set.
        marker_set: bool,
        /// Whether an active turn's token was requested.
        token_requested: bool,
    },
    /// `cancel` returned.
    CancelReturned {
        /// The call.
        call: CallId,
    },
    /// The loop woke and took a prompt in hand (not yet claimed).
    Woke {
        /// The prompt.
        prompt: PromptId,
    },
    /// The loop consumed the pre-run marker and dropped the prompt in hand.
    Skipped {
        /// The prompt.
        prompt: PromptId,
    },
    /// `turn/start` (token installed, status `running`).
    TurnStart {
        /// The prompt the turn runs.
        prompt: PromptId,
    },
    /// A step boundary absorbed a steering input.
    SteeringAbsorbed {
        /// The turn's prompt.
        prompt: PromptId,
        /// The input.
        input: SteerId,
    },
    /// A step finished.
    Step {
        /// The turn's prompt.
        prompt: PromptId,
        /// Step number, from 0.
        step: u32,
    },
    /// A completed turn left a steering input unabsorbed: it was queued as
    /// a prompt of its own (never lost).
    SteeringRequeued {
        /// The input.
        input: SteerId,
        /// The prompt it became.
        prompt: PromptId,
    },
    /// `turn/end {reason}` (token cleared just before).
    TurnEnd {
        /// The turn's prompt.
        prompt: PromptId,
        /// Why it ended.
        reason: EndReason,
        /// The cause that stopped it, if a cancel did (first cause wins).
        cause: Option<Cause>,
    },
    /// The turn's closing flush completed; status back to `idle`.
    TurnClosed {
        /// The turn's prompt.
        prompt: PromptId,
    },
    /// A write or sync of the turn's session log failed (D10): the turn
    /// ends `{failed}` (or, if its `turn/end` was already decided, the
    /// closing flush lost it) and the session refuses further appends.
    StorageFailed {
        /// The turn's prompt.
        prompt: PromptId,
        /// The error.
        error: String,
    },
    /// A `when_idle` waiter was registered.
    IdleWaiting {
        /// The waiter.
        waiter: u64,
    },
    /// A `when_idle` waiter resolved.
    IdleResolved {
        /// The waiter.
        waiter: u64,
        /// `true` when it resolved with `done` (after disposal).
        done: bool,
    },
    /// An observer panicked; the panic was contained (C9).
    ObserverPanicked {
        /// What it was observing.
        on: &'static str,
        /// The panic message.
        message: String,
    },
    /// Disposal began: status `disposed`, token requested, inbox cleared.
    DisposeBegan {
        /// Prompts removed from `queued` (and the one in hand).
        prompts: Vec<PromptId>,
    },
    /// The loop exited.
    LoopExited,
}

/// A journal entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Record {
    /// Position in the journal, from 0.
    pub seq: u64,
    /// Time of the transition (virtual on the simulator).
    pub at_ms: u64,
    /// The transition.
    pub event: Event,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ev = serde_json::to_string(&self.event).unwrap_or_default();
        write!(f, "#{:<3} t={:>5}ms {}", self.seq, self.at_ms, ev)
    }
}

/// What became of one prompt, kept up to date by [`Journal::push`] from
/// the same events the records hold: the typed answer to "did it start,
/// how did it end, did its closing flush finish" without scanning records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fate {
    /// `Some(true)` once its turn started; `Some(false)` once it is certain
    /// it never will (skipped by the pre-run marker, cleared by a cancel,
    /// dropped by disposal). The first of these events decides.
    pub started: Option<bool>,
    /// `Some(Some(reason))` once its turn ended, `Some(None)` if it never
    /// ran. The last of these events decides.
    pub outcome: Option<Option<EndReason>>,
    /// Its turn's closing flush completed (`turn-closed`).
    pub closed: bool,
    /// The first storage error that failed it (D10).
    pub storage_error: Option<String>,
}

impl Fate {
    /// Nothing more will happen to it: it never ran, or its turn ended and
    /// closed.
    pub fn settled(&self) -> bool {
        match self.outcome {
            Some(None) => true,
            Some(Some(_)) => self.closed,
            None => false,
        }
    }
}

/// An append-only list of [`Record`]s, with the [`Fate`] of every prompt.
///
/// Unbounded by default (the harness's oracles read whole histories). A
/// server bounds it with [`Journal::bounded`]: it then keeps at least the
/// last `cap` records (at most `2 * cap`; older ones are dropped, sequence
/// numbers go on) and the fates of the last `cap` prompts (A10: journals do
/// not grow without limit). Production code reads fates, never records.
#[derive(Debug, Default, Clone)]
pub struct Journal {
    records: Vec<Record>,
    /// Records dropped from the front.
    dropped: u64,
    fates: std::collections::BTreeMap<PromptId, Fate>,
    cap: Option<usize>,
    /// The agent whose journal this is: its trace events name it.
    owner: Option<std::sync::Arc<str>>,
}

impl Journal {
    /// An empty journal keeping about the last `cap` records and the fates
    /// of the last `cap` prompts (`cap` at least 1).
    pub fn bounded(cap: usize) -> Self {
        Journal {
            cap: Some(cap.max(1)),
            ..Journal::default()
        }
    }

    /// Name the agent whose journal this is (its trace events carry it as
    /// `agent`).
    pub fn set_owner(&mut self, agent: &str) {
        self.owner = Some(agent.into());
    }

    /// Append `event` at time `at_ms`.
    pub fn push(&mut self, at_ms: u64, event: Event) {
        let seq = self.dropped + self.records.len() as u64;
        if tracing::enabled!(target: crate::trace::Target::JOURNAL, tracing::Level::DEBUG) {
            let json = serde_json::to_string(&event).unwrap_or_default();
            let agent = self.owner.as_deref().unwrap_or("-");
            tracing::debug!(target: crate::trace::Target::JOURNAL, agent, seq, at_ms, "{json}");
        }
        self.note_fate(&event);
        self.records.push(Record { seq, at_ms, event });
        if let Some(cap) = self.cap {
            if self.records.len() >= 2 * cap {
                let cut = self.records.len() - cap;
                self.records.drain(..cut);
                self.dropped += cut as u64;
            }
            // Only settled fates go: a waiter never loses the one it awaits.
            while self.fates.len() > cap {
                let Some(p) = self
                    .fates
                    .iter()
                    .find(|(_, f)| f.settled())
                    .map(|(p, _)| *p)
                else {
                    break;
                };
                self.fates.remove(&p);
            }
        }
    }

    fn note_fate(&mut self, event: &Event) {
        fn never_ran(fates: &mut std::collections::BTreeMap<PromptId, Fate>, p: PromptId) {
            let f = fates.entry(p).or_default();
            f.started.get_or_insert(false);
            f.outcome = Some(None);
        }
        match event {
            Event::Accepted { prompt } | Event::SteeringRequeued { prompt, .. } => {
                self.fates.entry(*prompt).or_default();
            }
            Event::TurnStart { prompt } => {
                self.fates
                    .entry(*prompt)
                    .or_default()
                    .started
                    .get_or_insert(true);
            }
            Event::Skipped { prompt } => never_ran(&mut self.fates, *prompt),
            Event::Cleared { prompts, .. } | Event::DisposeBegan { prompts } => {
                for p in prompts {
                    never_ran(&mut self.fates, *p);
                }
            }
            Event::TurnEnd { prompt, reason, .. } => {
                self.fates.entry(*prompt).or_default().outcome = Some(Some(*reason));
            }
            Event::TurnClosed { prompt } => self.fates.entry(*prompt).or_default().closed = true,
            Event::StorageFailed { prompt, error } => {
                let f = self.fates.entry(*prompt).or_default();
                f.storage_error.get_or_insert_with(|| error.clone());
            }
            _ => {}
        }
    }

    /// The records kept (all of them unless [bounded](Self::bounded)), in
    /// order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// How many records a bounded journal has dropped from the front.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The fate of prompt `prompt`, if the journal has seen it (and, when
    /// bounded, still keeps it).
    pub fn fate(&self, prompt: PromptId) -> Option<&Fate> {
        self.fates.get(&prompt)
    }

    /// Bound this journal from now on (see [`bounded`](Self::bounded)).
    pub fn set_bound(&mut self, cap: usize) {
        self.cap = Some(cap.max(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(j: &mut Journal, p: PromptId) {
        j.push(0, Event::Accepted { prompt: p });
        j.push(0, Event::TurnStart { prompt: p });
        j.push(0, Event::Step { prompt: p, step: 0 });
        let reason = EndReason::Completed;
        j.push(
            0,
            Event::TurnEnd {
                prompt: p,
                reason,
                cause: None,
            },
        );
        j.push(0, Event::TurnClosed { prompt: p });
    }

    #[test]
    fn a_bounded_journal_keeps_the_recent_records_and_every_unsettled_fate() {
        let mut j = Journal::bounded(8);
        // Prompt 0 is accepted and never runs: its fate must survive.
        j.push(0, Event::Accepted { prompt: 0 });
        for p in 1..1_000 {
            turn(&mut j, p);
            assert!(j.records().len() < 16, "records bounded (A10)");
        }
        assert_eq!(j.dropped() + j.records().len() as u64, 1 + 999 * 5);
        assert_eq!(j.records().last().map(|r| r.seq), Some(999 * 5));
        assert!(
            j.fate(0).is_some_and(|f| f.outcome.is_none()),
            "unsettled kept"
        );
        assert!(j.fate(1).is_none(), "old settled fates dropped");
        let f = j.fate(999).expect("recent fate");
        assert_eq!(f.started, Some(true));
        assert_eq!(f.outcome, Some(Some(EndReason::Completed)));
        assert!(f.closed && f.settled());
    }

    #[test]
    fn fates_follow_the_first_start_and_the_last_end() {
        let mut j = Journal::default();
        j.push(0, Event::Accepted { prompt: 0 });
        j.push(0, Event::Accepted { prompt: 1 });
        j.push(0, Event::TurnStart { prompt: 0 });
        let cleared = Event::Cleared {
            call: 0,
            prompts: vec![1],
            steering: vec![],
            marker_set: false,
            token_requested: true,
        };
        j.push(0, cleared);
        let reason = EndReason::Aborted;
        j.push(
            0,
            Event::TurnEnd {
                prompt: 0,
                reason,
                cause: Some(Cause::User),
            },
        );
        let error = "EIO".to_string();
        j.push(0, Event::StorageFailed { prompt: 0, error });
        let error = "later".to_string();
        j.push(0, Event::StorageFailed { prompt: 0, error });
        assert_eq!(
            j.fate(1).map(|f| (f.started, f.outcome)),
            Some((Some(false), Some(None)))
        );
        let f = j.fate(0).expect("fate of 0");
        assert_eq!(
            (f.started, f.outcome),
            (Some(true), Some(Some(EndReason::Aborted)))
        );
        assert_eq!(f.storage_error.as_deref(), Some("EIO"));
        assert!(!f.closed && !f.settled());
        assert_eq!(j.records().len(), 7, "unbounded by default");
    }
}
