//! The Agent's sans-IO core: inbox, pre-run marker, turn token, status.
//!
//! Plain methods that take an event and return what to do (`#[must_use]`);
//! no clock (time is passed in), no spawning, no awaiting. The async shell in
//! [`super`] performs the decisions. Every transition is journaled here, under
//! the caller's lock, so the journal order is the transition order.
//!
//! # States
//! - `status`: `Idle` → `Running` (claim) → `Idle` (turn closed); any →
//!   `Disposed` (dispose; final).
//! - `queued` / `steering`: the two FIFOs of the inbox.
//! - `in_hand`: the prompt the loop woke for and has not claimed yet.
//! - `marker`: the cause-less pre-run marker (C4).
//! - `turn`: the active turn and its private token (`None` once cleared,
//!   just before `turn/end`).
//! - `cancels_in_progress`: cancel calls between entry and clearing; the loop
//!   does not claim, absorb steering or report idle while it is non-zero.
//! - `late`: completion notices that reached the client while the session's
//!   log could not store them (A11, D10), as the records the next turn
//!   appends first (at most [`LATE_NOTICES_CAP`], the oldest dropped).
//!
//! # Transitions and who calls them
//! | method | caller | effect |
//! | --- | --- | --- |
//! | `accept` / `steer` | `Agent::send` / `steer` | queue work |
//! | `begin_cancel` → `finish_cancel` → `cancel_returned` | `Agent::cancel` | C1–C3 |
//! | `try_wake` | the loop | take a prompt in hand |
//! | `claim` | the loop | marker check (C4), token install, `running` |
//! | `step_boundary` | the loop | token check (C3), steering absorption (C8) |
//! | `end_turn` → `close_turn` | the loop | `turn/end`, then `idle` after flush |
//! | `idle_ready` | `when_idle` | quiescence (C7) |
//! | `begin_dispose` | `AgentHandle::dispose` | D2 step 1 |
//! | `defer_late` → `take_late` | the loop | an unstored notice, recorded by the next turn (A11) |
//!
//! Its fault points (M3, M4, M5, M12, M23) ask the function its shell gives
//! [`AgentCore::new`]: the shell's backend's
//! [`fault_point`](crate::rt::context::fault_point), the constant `false`
//! in production.

use crate::journal::{CallId, Cause, EndReason, Event, Journal, PromptId, SteerId};
use crate::session_log::Entry;
pub use crate::session_log::Origin;
use lifecycle_spec::faults::Fault;
use std::collections::VecDeque;

/// Agent status (SPEC §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// No turn.
    Idle,
    /// A turn is active (from claim to the end of its closing flush).
    Running,
    /// Disposed: final.
    Disposed,
}

/// What a queued prompt asks for: its text and how many steps its turn takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptSpec {
    /// The user message.
    pub text: String,
    /// Steps of the turn (model requests or tool calls).
    pub steps: u32,
    /// How long each step awaits, in milliseconds.
    pub step_ms: u64,
    /// Who asks for the turn (A11): a user, or a job's completion.
    pub origin: Origin,
}

/// One step of 0 ms with no text, from a user: the base for struct
/// update syntax (`..PromptSpec::default()`), so a field added later breaks
/// no caller.
impl Default for PromptSpec {
    fn default() -> Self {
        PromptSpec {
            text: String::new(),
            steps: 1,
            step_ms: 0,
            origin: Origin::User,
        }
    }
}

impl From<&str> for PromptSpec {
    fn from(text: &str) -> Self {
        PromptSpec {
            text: text.to_string(),
            steps: 1,
            step_ms: 10,
            origin: Origin::User,
        }
    }
}

/// A prompt accepted into the inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// Its id.
    pub id: PromptId,
    /// What it asks for.
    pub spec: PromptSpec,
}

/// A steering input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steer {
    /// Its id.
    pub id: SteerId,
    /// The text.
    pub text: String,
}

/// The cancellation token of one turn. First stop wins, except that
/// disposal overrides a cancel (C3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnToken {
    cause: Option<Cause>,
    disposed: bool,
}

impl TurnToken {
    fn request(&mut self, cause: Cause) -> bool {
        if self.cause.is_none() {
            self.cause = Some(cause);
        }
        true
    }

    fn stop_reason(&self) -> Option<EndReason> {
        if self.disposed {
            Some(EndReason::Disposed)
        } else {
            self.cause.map(|_| EndReason::Aborted)
        }
    }
}

#[derive(Debug)]
struct ActiveTurn {
    /// Its prompt (the loop holds the prompt itself: its text is not
    /// copied per turn, A10).
    prompt: PromptId,
    /// `None` once cleared, just before `turn/end`.
    token: Option<TurnToken>,
    /// The cause that stopped the turn, kept for `turn/end` after the token
    /// is cleared.
    stopped_by: Option<Cause>,
    /// Its session log failed (D10): it ends `{failed}`.
    failed: bool,
}

/// Outcome of `send`.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Accept {
    /// Queued as a prompt.
    Queued(PromptId),
    /// Queued as a steering input of the running turn.
    Steering(SteerId),
    /// The agent is disposed.
    Rejected,
}

/// First half of `cancel`.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum CancelStart {
    /// No turn, empty inbox: emits nothing, changes nothing (C6).
    Idle,
    /// Emit `agent/cancel-requested`, then call `finish_cancel` (C1).
    Effective,
}

/// What the loop's wait for work returns.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    /// A prompt is in hand.
    Woke(PromptId),
    /// Disposed: exit.
    Exit,
}

/// What the loop does with the prompt in hand.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// Start this turn (token installed, status `running`).
    Run(Prompt),
    /// The pre-run marker was set: drop it, loop again (C4).
    Skip(PromptId),
    /// Disposed: exit.
    Exit,
}

/// What a step boundary decides.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Boundary {
    /// Go on with the next step; these steering inputs were absorbed.
    Continue(Vec<Steer>),
    /// The token was requested: end the turn now.
    Stop,
}

/// The Agent's state machine.
#[derive(Debug)]
pub struct AgentCore {
    status: Status,
    queued: VecDeque<Prompt>,
    steering: VecDeque<Steer>,
    in_hand: Option<Prompt>,
    marker: bool,
    turn: Option<ActiveTurn>,
    cancels_in_progress: u32,
    next_prompt: PromptId,
    next_steer: SteerId,
    next_call: CallId,
    next_waiter: u64,
    loop_exited: bool,
    late: VecDeque<Entry>,
    journal: Journal,
    fault: fn(Fault) -> bool,
}

/// How many delivered but unstored completion notices (A11) an agent keeps
/// for its log while storage fails; past it, the oldest is dropped from
/// the record (the client already had it).
pub const LATE_NOTICES_CAP: usize = 256;

impl AgentCore {
    /// A fresh idle agent whose fault points ask `fault` (its shell's
    /// backend's [`fault_point`](crate::rt::context::fault_point)).
    pub fn new(fault: fn(Fault) -> bool) -> Self {
        AgentCore {
            status: Status::Idle,
            queued: VecDeque::new(),
            steering: VecDeque::new(),
            in_hand: None,
            marker: false,
            turn: None,
            cancels_in_progress: 0,
            next_prompt: 0,
            next_steer: 0,
            next_call: 0,
            next_waiter: 0,
            loop_exited: false,
            late: VecDeque::new(),
            journal: Journal::default(),
            fault,
        }
    }

    /// Number prompts from `first` on (never backward): a resumed session
    /// continues its log's turn numbers (A9).
    pub fn continue_prompts_from(&mut self, first: PromptId) {
        self.next_prompt = self.next_prompt.max(first);
    }

    /// Name the agent in its journal's trace events.
    pub fn name_journal(&mut self, agent: &str) {
        self.journal.set_owner(agent);
    }

    /// Bound the journal (see [`Journal::bounded`]).
    pub fn bound_journal(&mut self, cap: usize) {
        self.journal.set_bound(cap);
    }

    /// Current status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// Whether the loop has exited.
    pub fn loop_has_exited(&self) -> bool {
        self.loop_exited
    }

    /// The journal so far.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Record an event the shell observed (e.g. a contained observer panic).
    pub fn record(&mut self, now_ms: u64, event: Event) {
        self.journal.push(now_ms, event);
    }

    fn turn_active(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.token.is_some())
    }

    /// `send(prompt)`: queue one turn.
    pub fn accept(&mut self, now_ms: u64, spec: PromptSpec) -> Accept {
        if self.status == Status::Disposed {
            self.journal.push(now_ms, Event::Rejected);
            return Accept::Rejected;
        }
        let id = self.next_prompt;
        self.next_prompt += 1;
        self.queued.push_back(Prompt { id, spec });
        self.journal.push(now_ms, Event::Accepted { prompt: id });
        Accept::Queued(id)
    }

    /// `steer(input)`: absorbed by the running turn at its next step
    /// boundary; the same as `send` when no turn is running, or when the
    /// running turn was already cancelled (its steering is never absorbed, C8).
    pub fn steer(&mut self, now_ms: u64, spec: PromptSpec) -> Accept {
        let steerable = self
            .turn
            .as_ref()
            .and_then(|t| t.token)
            .is_some_and(|tok| tok.stop_reason().is_none());
        if self.status != Status::Running || !steerable {
            return self.accept(now_ms, spec);
        }
        let id = self.next_steer;
        self.next_steer += 1;
        self.steering.push_back(Steer {
            id,
            text: spec.text,
        });
        self.journal
            .push(now_ms, Event::SteerAccepted { input: id });
        Accept::Steering(id)
    }

    /// `cancel(cause)`, first half: decide whether the call is effective.
    /// Returns the call id and the decision. The caller emits
    /// `agent/cancel-requested` for an effective call, then `finish_cancel`.
    pub fn begin_cancel(&mut self, now_ms: u64, cause: Cause) -> (CallId, CancelStart) {
        let call = self.next_call;
        self.next_call += 1;
        self.journal
            .push(now_ms, Event::CancelCalled { call, cause });
        let has_work = self.turn_active()
            || !self.queued.is_empty()
            || !self.steering.is_empty()
            || self.in_hand.is_some();
        if !has_work || self.status == Status::Disposed {
            if (self.fault)(Fault::M4) && self.status != Status::Disposed {
                // M4: an idle cancel sets the marker.
                self.marker = true;
            }
            self.journal.push(now_ms, Event::CancelReturned { call });
            return (call, CancelStart::Idle);
        }
        self.cancels_in_progress += 1;
        (call, CancelStart::Effective)
    }

    /// Record that `agent/cancel-requested` is being emitted for `call`.
    pub fn cancel_requested(&mut self, now_ms: u64, call: CallId, cause: Cause) {
        self.journal
            .push(now_ms, Event::CancelRequested { call, cause });
    }

    /// `cancel(cause)`, second half: clear both FIFOs (including work queued
    /// by observers during the notification, C2), request the active turn's
    /// token (first cause wins, C3), or set the pre-run marker when the loop
    /// holds a prompt it has not claimed (C4).
    pub fn finish_cancel(&mut self, now_ms: u64, call: CallId, cause: Cause) {
        let prompts: Vec<PromptId> = self.queued.drain(..).map(|p| p.id).collect();
        let steering: Vec<SteerId> = self.steering.drain(..).map(|s| s.id).collect();
        let mut token_requested = false;
        let mut marker_set = false;
        if let Some(turn) = self.turn.as_mut().filter(|t| t.token.is_some()) {
            let token = turn.token.as_mut().expect("filtered");
            token_requested = token.request(cause);
            if turn.stopped_by.is_none() {
                turn.stopped_by = Some(cause);
            }
        } else if !(self.fault)(Fault::M3) && (self.in_hand.is_some() || (self.fault)(Fault::M5)) {
            // The marker is only needed while the loop holds a prompt it
            // woke for; a queued prompt was just cleared. M5 sets it anyway,
            // so it swallows the next accepted prompt.
            self.marker = true;
            marker_set = true;
        }
        self.journal.push(
            now_ms,
            Event::Cleared {
                call,
                prompts,
                steering,
                marker_set,
                token_requested,
            },
        );
    }

    /// `cancel` returns.
    pub fn cancel_returned(&mut self, now_ms: u64, call: CallId) {
        self.cancels_in_progress = self.cancels_in_progress.saturating_sub(1);
        self.journal.push(now_ms, Event::CancelReturned { call });
    }

    /// The loop's wait for work: `Some` when there is something to do.
    pub fn try_wake(&mut self, now_ms: u64) -> Option<Wake> {
        if !self.wake_due() {
            return None;
        }
        if self.status == Status::Disposed {
            return Some(Wake::Exit);
        }
        let p = self.queued.pop_front()?;
        let id = p.id;
        self.in_hand = Some(p);
        self.journal.push(now_ms, Event::Woke { prompt: id });
        Some(Wake::Woke(id))
    }

    /// Whether [`try_wake`](Self::try_wake) would wake the loop now: its
    /// read half, for a wait's check that parks.
    pub fn wake_due(&self) -> bool {
        self.status == Status::Disposed || (self.in_hand.is_none() && !self.queued.is_empty())
    }

    /// Whether a cancel is between its entry and its clearing; the loop
    /// waits for it to finish before claiming or crossing a step boundary.
    pub fn cancel_in_progress(&self) -> bool {
        self.cancels_in_progress > 0
    }

    /// Claim the prompt in hand: consume the marker (C4) or start the turn.
    pub fn claim(&mut self, now_ms: u64) -> Claim {
        if self.status == Status::Disposed {
            self.in_hand = None;
            return Claim::Exit;
        }
        let Some(prompt) = self.in_hand.take() else {
            // Nothing in hand (cleared by dispose between wake and claim).
            return Claim::Exit;
        };
        if std::mem::take(&mut self.marker) {
            self.journal
                .push(now_ms, Event::Skipped { prompt: prompt.id });
            return Claim::Skip(prompt.id);
        }
        // Token installed BEFORE the status becomes running.
        self.turn = Some(ActiveTurn {
            prompt: prompt.id,
            token: Some(TurnToken::default()),
            stopped_by: None,
            failed: false,
        });
        self.status = Status::Running;
        self.journal
            .push(now_ms, Event::TurnStart { prompt: prompt.id });
        Claim::Run(prompt)
    }

    /// The running turn, if its token was requested (by a cancel or by
    /// disposal): the signal a running step receives (C10).
    pub fn stopped_turn(&self) -> Option<PromptId> {
        let turn = self.turn.as_ref()?;
        turn.token
            .and_then(|t| t.stop_reason())
            .map(|_| turn.prompt)
    }

    /// A step boundary: stop if the token was requested, else absorb the
    /// steering inputs (C3, C8).
    pub fn step_boundary(&mut self, now_ms: u64) -> Boundary {
        let Some(turn) = self.turn.as_ref() else {
            return Boundary::Stop;
        };
        if turn.token.and_then(|t| t.stop_reason()).is_some() {
            return Boundary::Stop;
        }
        let prompt = turn.prompt;
        let absorbed: Vec<Steer> = self.steering.drain(..).collect();
        for s in &absorbed {
            self.journal.push(
                now_ms,
                Event::SteeringAbsorbed {
                    prompt,
                    input: s.id,
                },
            );
        }
        Boundary::Continue(absorbed)
    }

    /// Record a finished step.
    pub fn step_done(&mut self, now_ms: u64, step: u32) {
        if let Some(turn) = &self.turn {
            let prompt = turn.prompt;
            self.journal.push(now_ms, Event::Step { prompt, step });
        }
    }

    /// Clear the token and decide the `turn/end` reason. Steering left over
    /// by a completed turn becomes queued prompts (it is never lost).
    pub fn end_turn(&mut self, now_ms: u64) -> (PromptId, EndReason) {
        let turn = self.turn.as_mut().expect("end_turn without a turn");
        let token = turn.token.take().unwrap_or_default();
        let reason = match token.stop_reason() {
            // D10: a turn whose log failed ends failed, whatever stopped it.
            _ if turn.failed => EndReason::Failed,
            // M23: the earlier cancel's cause wins over disposal.
            Some(EndReason::Disposed) if (self.fault)(Fault::M23) && token.cause.is_some() => {
                EndReason::Aborted
            }
            reason => reason.unwrap_or(EndReason::Completed),
        };
        let prompt = turn.prompt;
        let cause = if reason == EndReason::Aborted {
            turn.stopped_by
        } else {
            None
        };
        if reason == EndReason::Completed {
            while let Some(s) = self.steering.pop_front() {
                let id = self.next_prompt;
                self.next_prompt += 1;
                self.queued.push_back(Prompt {
                    id,
                    spec: PromptSpec {
                        text: s.text,
                        steps: 1,
                        step_ms: 10,
                        origin: Origin::User,
                    },
                });
                self.journal.push(
                    now_ms,
                    Event::SteeringRequeued {
                        input: s.id,
                        prompt: id,
                    },
                );
            }
        }
        self.journal.push(
            now_ms,
            Event::TurnEnd {
                prompt,
                reason,
                cause,
            },
        );
        (prompt, reason)
    }

    /// A write or sync of the running turn's session log failed (D10): the
    /// turn ends `{failed}` at its next boundary (or, if its `turn/end` was
    /// already decided, the failure is journaled against it).
    pub fn storage_failed(&mut self, now_ms: u64, error: String) {
        if let Some(turn) = self.turn.as_mut() {
            turn.failed = true;
            let prompt = turn.prompt;
            self.journal
                .push(now_ms, Event::StorageFailed { prompt, error });
        }
    }

    /// A11: a completion notice reached the client while the session's log
    /// could not store it; `record` is what the log owes (an
    /// [`Entry::LateNotice`]), appended ahead of the next turn.
    pub fn defer_late(&mut self, record: Entry) {
        if self.late.len() == LATE_NOTICES_CAP {
            self.late.pop_front();
        }
        self.late.push_back(record);
    }

    /// The records the log owes (A11), oldest first, for the next turn to
    /// append; it gives back with [`restore_late`](Self::restore_late)
    /// those it could not make durable.
    pub fn take_late(&mut self) -> Vec<Entry> {
        self.late.drain(..).collect()
    }

    /// Records taken by [`take_late`](Self::take_late) that did not become
    /// durable, put back ahead of any deferred since.
    pub fn restore_late(&mut self, records: Vec<Entry>) {
        for r in records.into_iter().rev() {
            self.late.push_front(r);
        }
        while self.late.len() > LATE_NOTICES_CAP {
            self.late.pop_front();
        }
    }

    /// The closing flush is done: the turn is over; `idle` unless disposed.
    pub fn close_turn(&mut self, now_ms: u64) {
        if let Some(turn) = self.turn.take() {
            self.journal.push(
                now_ms,
                Event::TurnClosed {
                    prompt: turn.prompt,
                },
            );
        }
        if self.status == Status::Running {
            self.status = Status::Idle;
        }
    }

    /// Register a `when_idle` waiter; returns its id.
    pub fn idle_waiter(&mut self, now_ms: u64) -> u64 {
        let waiter = self.next_waiter;
        self.next_waiter += 1;
        self.journal.push(now_ms, Event::IdleWaiting { waiter });
        waiter
    }

    /// Whether waiter `waiter` may resolve now: `Some(done)` at quiescence
    /// (no turn, empty inbox, marker consumed, no cancel mid-way) or after
    /// disposal (C7).
    pub fn idle_ready(&mut self, now_ms: u64, waiter: u64) -> Option<bool> {
        let done = self.idle_check()?;
        self.journal
            .push(now_ms, Event::IdleResolved { waiter, done });
        Some(done)
    }

    /// Whether a `when_idle` waiter would resolve now, and how (`true`:
    /// done), without recording it: the read half of
    /// [`idle_ready`](Self::idle_ready), for a wait's check that parks
    /// (a read, see `rt::Probe`).
    pub fn idle_check(&self) -> Option<bool> {
        let done = self.status == Status::Disposed && self.turn.is_none();
        let quiescent = if (self.fault)(Fault::M12) {
            // M12: the status flip alone.
            self.status == Status::Idle
        } else {
            self.status == Status::Idle
                && self.turn.is_none()
                && self.queued.is_empty()
                && self.steering.is_empty()
                && self.in_hand.is_none()
                && !self.marker
                && self.cancels_in_progress == 0
        };
        (done || quiescent).then_some(done)
    }

    /// D2 step 1: mark disposed, request the token `{disposed}`, clear the
    /// inbox. Returns `false` if already disposed.
    pub fn begin_dispose(&mut self, now_ms: u64) -> bool {
        if self.status == Status::Disposed {
            return false;
        }
        self.status = Status::Disposed;
        if let Some(tok) = self.turn.as_mut().and_then(|t| t.token.as_mut()) {
            tok.disposed = true;
        }
        let mut prompts: Vec<PromptId> = self.in_hand.take().map(|p| p.id).into_iter().collect();
        prompts.extend(self.queued.drain(..).map(|p| p.id));
        self.steering.clear();
        self.marker = false;
        self.journal.push(now_ms, Event::DisposeBegan { prompts });
        true
    }

    /// The loop exited.
    pub fn loop_exited(&mut self, now_ms: u64) {
        self.loop_exited = true;
        self.journal.push(now_ms, Event::LoopExited);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_from_text_is_one_user_step_of_that_text() {
        let p = PromptSpec::from("hello");
        assert_eq!(
            (p.text.as_str(), p.steps, p.step_ms, p.origin),
            ("hello", 1, 10, Origin::User)
        );
    }

    fn late(prompt: PromptId) -> Entry {
        Entry::LateNotice {
            prompt,
            output: None,
            tool: None,
        }
    }

    /// A11: unstored notices come back oldest first; those a turn could
    /// not store go back ahead of newer ones; past the cap the oldest go.
    #[test]
    fn late_notices_keep_their_order_and_their_cap() {
        let mut core = AgentCore::new(|_| false);
        core.defer_late(late(1));
        core.defer_late(late(2));
        let taken = core.take_late();
        assert_eq!(taken, [late(1), late(2)]);
        assert!(core.take_late().is_empty());
        core.defer_late(late(3));
        core.restore_late(taken);
        assert_eq!(core.take_late(), [late(1), late(2), late(3)]);
        for p in 0..LATE_NOTICES_CAP as u64 + 2 {
            core.defer_late(late(p));
        }
        let kept = core.take_late();
        assert_eq!(kept.len(), LATE_NOTICES_CAP);
        assert_eq!(kept[0], late(2));
        core.restore_late(vec![late(0), late(1)]);
        core.restore_late(kept);
        assert_eq!(core.take_late().len(), LATE_NOTICES_CAP);
    }
}
