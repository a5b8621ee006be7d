//! The Agent model: inbox (two FIFOs), pre-run marker, turn token, cancel
//! with its cause and its observers, `when_idle` waiters, dispose, the
//! running step and the turn's signal (SPEC C1–C8, C10, D6).
//!
//! # States
//! - `status`: `Idle` → `Running` (claim) → `Idle` (turn closed); any →
//!   `Disposed` (final).
//! - `queued`, `steering`: the two FIFOs. `in_hand`: the prompt the loop woke
//!   for and has not claimed. `marker`: the cause-less pre-run marker.
//! - `pos`: where the loop is: `Waiting` → (wake) `Claiming` → (claim)
//!   `InTurn` or back to `Waiting` (skip) → ... → `Exited`.
//! - `turn`: the active turn: phase `WriteAhead` (`turn/start` and
//!   `user/message` being flushed before any step, D9) → `Boundary` →
//!   `InStep` → ... → `Ending` (`turn/end` next) → `Flushing` (token
//!   cleared, closing flush). A step in flight may hang (`hung`): it then
//!   ends only when the turn's signal fires, that is once a cancel or
//!   dispose step 1 requested the token (C10); fault M19 never delivers
//!   the signal, so a hung step never ends.
//! - `cancel`: a `cancel` call between its entry and its return (its
//!   `cancel-requested` observers run in between).
//! - `waiters`: `when_idle` registrations and how they resolved.
//! - ghosts: each prompt's origin and fate, and the rules a transition broke.
//!
//! # Transitions
//! | action | who | effect |
//! | --- | --- | --- |
//! | `Send`, `Steer` | any holder | queue a prompt / a steering input |
//! | `Cancel(cause)` | any holder | idle (C6) or emit `cancel-requested` (C1) |
//! | `ObserverSend` | a `cancel-requested` observer | queue a prompt mid-cancel (C2) |
//! | `FinishCancel` | the cancel call | clear both FIFOs, request the token or set the marker |
//! | `WhenIdle`, `Resolve(w)` | any holder / the waiter | C7 |
//! | `Dispose` | the handle | D2 step 1: mark disposed, token `{disposed}`, clear |
//! | `Wake`, `Claim`, `WriteAhead`, `Boundary`, `StepDone`, `EndTurn`, `CloseTurn`, `Exit` | the loop | one turn |
//! | `Hang` | the step in flight | it blocks until the turn's signal fires (C10) |
//!
//! The loop waits while a cancel call is between entry and return, as the
//! implementation does, so a cancel is atomic for the loop's claim and
//! step boundaries but not for its wake.

mod properties;

pub use properties::{
    C1_EMITTED, C2_QUEUED_BY_OBSERVER, C3_ENDS, C4_NEVER, C5_NEVER_SKIPPED, C6_IDLE_CANCEL,
    C7_EVERY_WAITER, C7_ONLY, C8_NO_STEERING, D6_NO_PROMPT_STARTS,
};

use crate::checker::{Identified, Model, Named, Prop, Property};
use crate::fault::Fault;
use lifecycle_spec::Rule;

/// Who asked for a cancel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// A user (the default).
    User,
    /// A parent agent.
    Parent,
}

/// Why a turn ended: `lifecycle-spec`'s type, shared with the
/// implementation (this model ends turns `completed`, `aborted` or
/// `disposed`).
pub use lifecycle_spec::EndReason;

/// Agent status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// No turn.
    Idle,
    /// A turn is active.
    Running,
    /// Final.
    Disposed,
}

/// Where the loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LoopPos {
    /// Waiting for work.
    Waiting,
    /// Woke for a prompt, not yet claimed (the C4 window).
    Claiming,
    /// Driving a turn.
    InTurn,
    /// Exited after disposal.
    Exited,
}

/// Phase of the active turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TurnPhase {
    /// Claimed; the write-ahead flush of `turn/start` and `user/message`
    /// is in flight (D9).
    WriteAhead,
    /// At a step boundary (token check, steering absorption).
    Boundary,
    /// A step is in flight.
    InStep,
    /// The last boundary: `turn/end` is next.
    Ending,
    /// Token cleared, `turn/end` written, closing flush in flight.
    Flushing,
}

/// The active turn.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Turn {
    /// The prompt it runs.
    pub prompt: u8,
    /// Steps done.
    pub steps_done: u8,
    /// Its phase.
    pub phase: TurnPhase,
    /// The first cause that requested its token.
    pub cause: Option<Cause>,
    /// Whether disposal requested its token.
    pub disposed: bool,
    /// The step in flight ends only when the turn's signal fires (C10).
    pub hung: bool,
}

impl Turn {
    /// The token is installed (not yet cleared before `turn/end`).
    pub fn token_live(&self) -> bool {
        self.phase != TurnPhase::Flushing
    }

    fn stopped(&self) -> bool {
        self.cause.is_some() || self.disposed
    }
}

/// A `cancel` call in progress.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CancelCall {
    /// Its cause.
    pub cause: Cause,
    /// `cancel-requested` was emitted.
    pub requested: bool,
    /// The FIFOs were cleared.
    pub cleared: bool,
    /// An observer queued a prompt during it.
    pub observer_sent: bool,
}

/// How a prompt came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// Sent before any cancel returned.
    Plain,
    /// Sent after an effective cancel returned (C5).
    AfterCancel,
    /// Sent after an idle cancel returned (C6).
    AfterIdleCancel,
    /// Sent by a `cancel-requested` observer (C2).
    Observer,
    /// A steering input left over by a completed turn.
    Requeued,
}

/// What became of a prompt: one type with the implementation's
/// (`lifecycle-spec`), the model telling a claimed prompt from a queued one.
pub use lifecycle_spec::PromptFate;

/// A prompt, as the properties see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PromptInfo {
    /// How it came.
    pub origin: Origin,
    /// What became of it.
    pub fate: PromptFate,
    /// It was accepted before an effective cancel that found no turn
    /// running: it must never start (C4).
    pub doomed: bool,
}

/// The state of the Agent model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AgentState {
    /// Status.
    pub status: Status,
    /// Queued prompts (ids).
    pub queued: Vec<u8>,
    /// Steering inputs (ids).
    pub steering: Vec<u8>,
    /// The prompt in the loop's hand.
    pub in_hand: Option<u8>,
    /// The pre-run marker.
    pub marker: bool,
    /// Where the loop is.
    pub pos: LoopPos,
    /// The active turn.
    pub turn: Option<Turn>,
    /// The cancel call in progress.
    pub cancel: Option<CancelCall>,
    /// Every accepted prompt, by id.
    pub prompts: Vec<PromptInfo>,
    /// Steering inputs accepted so far (the next steering id).
    pub steers_accepted: u8,
    /// `when_idle` waiters: `None` pending, `Some(done)` resolved.
    pub waiters: Vec<Option<bool>>,
    /// Whether the last returned cancel was effective (`Some(true)`), idle
    /// (`Some(false)`), or none returned yet.
    pub last_cancel: Option<bool>,
    /// Environment calls made: send, steer, cancel, observer sends, dispose.
    pub calls: [u8; 5],
    /// Rules a transition broke (ghost).
    pub broken: Vec<Rule>,
}

/// One transition of the Agent model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AgentAction {
    /// `send(prompt)`.
    Send,
    /// `steer(input)`.
    Steer,
    /// `cancel(cause)`: entry, and `cancel-requested` if effective.
    Cancel(Cause),
    /// A `cancel-requested` observer sends a prompt.
    ObserverSend,
    /// The cancel call clears and returns.
    FinishCancel,
    /// `when_idle()` registers a waiter.
    WhenIdle,
    /// Waiter `w` resolves.
    Resolve(u8),
    /// `AgentHandle::dispose`, step 1.
    Dispose,
    /// The loop takes a prompt in hand.
    Wake,
    /// The loop claims the prompt in hand.
    Claim,
    /// The write-ahead flush finished.
    WriteAhead,
    /// A step boundary.
    Boundary,
    /// A step finishes.
    StepDone,
    /// The step in flight blocks until the turn's signal fires.
    Hang,
    /// `turn/end`.
    EndTurn,
    /// The closing flush finished.
    CloseTurn,
    /// The loop exits after disposal.
    Exit,
}

/// Bounds of the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentBounds {
    /// `send` calls.
    pub sends: u8,
    /// `steer` calls.
    pub steers: u8,
    /// `cancel` calls.
    pub cancels: u8,
    /// Prompts sent by `cancel-requested` observers.
    pub observer_sends: u8,
    /// `when_idle` calls.
    pub waiters: u8,
    /// `dispose` calls.
    pub disposes: u8,
    /// Steps per turn.
    pub steps: u8,
    /// Offer both causes (`User` and `Parent`) to `cancel`.
    pub both_causes: bool,
    /// Offer a step that hangs until the turn's signal fires (C10).
    pub hang: bool,
}

impl Default for AgentBounds {
    fn default() -> Self {
        AgentBounds {
            sends: 2,
            steers: 1,
            cancels: 2,
            observer_sends: 1,
            waiters: 1,
            disposes: 1,
            steps: 1,
            both_causes: true,
            hang: true,
        }
    }
}

/// The Agent model.
#[derive(Clone, Debug)]
pub struct AgentModel {
    /// The fault switched on, if any (M3, M4, M5, M11, M12, M19, M23 act
    /// here).
    pub fault: Option<Fault>,
    /// Environment bounds.
    pub bounds: AgentBounds,
}

const SEND: usize = 0;
const STEER: usize = 1;
const CANCEL: usize = 2;
const OBS: usize = 3;
const DISPOSE: usize = 4;

impl AgentModel {
    /// The model with the default bounds.
    pub fn new(fault: Option<Fault>) -> Self {
        AgentModel {
            fault,
            bounds: AgentBounds::default(),
        }
    }

    /// The model with unlimited environment calls (for conformance drivers,
    /// which bound the sequence length themselves). Steps never hang: a
    /// driver's step always ends by itself.
    pub fn unbounded(fault: Option<Fault>, steps: u8) -> Self {
        AgentModel {
            fault,
            bounds: AgentBounds {
                sends: u8::MAX,
                steers: u8::MAX,
                cancels: u8::MAX,
                observer_sends: u8::MAX,
                waiters: u8::MAX,
                disposes: u8::MAX,
                steps,
                both_causes: true,
                hang: false,
            },
        }
    }

    fn has(&self, f: Fault) -> bool {
        self.fault == Some(f)
    }

    /// The initial state: idle, empty inbox.
    pub fn init(&self) -> AgentState {
        AgentState {
            status: Status::Idle,
            queued: vec![],
            steering: vec![],
            in_hand: None,
            marker: false,
            pos: LoopPos::Waiting,
            turn: None,
            cancel: None,
            prompts: vec![],
            steers_accepted: 0,
            waiters: vec![],
            last_cancel: None,
            calls: [0; 5],
            broken: vec![],
        }
    }

    /// Whether a turn's token is installed (the cancel sees a turn).
    pub fn turn_active(s: &AgentState) -> bool {
        s.turn.as_ref().is_some_and(Turn::token_live)
    }

    /// Whether the agent is quiescent (C7): no turn, empty inbox, marker
    /// consumed, no cancel mid-way.
    pub fn quiescent(s: &AgentState) -> bool {
        s.status == Status::Idle
            && s.turn.is_none()
            && s.queued.is_empty()
            && s.steering.is_empty()
            && s.in_hand.is_none()
            && !s.marker
            && s.cancel.is_none()
    }

    /// Whether a `when_idle` waiter may resolve now, and how (`Some(done)`).
    pub fn idle_ready(&self, s: &AgentState) -> Option<bool> {
        let done = s.status == Status::Disposed && s.turn.is_none();
        let quiescent = if self.has(Fault::M12) {
            s.status == Status::Idle
        } else {
            Self::quiescent(s)
        };
        (done || quiescent).then_some(done)
    }

    fn accept(&self, s: &mut AgentState, origin: Origin) -> bool {
        if s.status == Status::Disposed {
            return false;
        }
        let origin = match (origin, s.last_cancel) {
            (Origin::Plain, Some(true)) => Origin::AfterCancel,
            (Origin::Plain, Some(false)) => Origin::AfterIdleCancel,
            (o, _) => o,
        };
        let id = s.prompts.len() as u8;
        s.prompts.push(PromptInfo {
            origin,
            fate: PromptFate::QUEUED,
            doomed: false,
        });
        s.queued.push(id);
        true
    }

    fn steerable(s: &AgentState) -> bool {
        s.status == Status::Running
            && s.turn
                .as_ref()
                .is_some_and(|t| t.token_live() && !t.stopped())
    }

    fn clear(&self, s: &mut AgentState, cause: Cause) {
        if !s.cancel.as_ref().is_some_and(|c| c.requested) {
            // The inbox is cleared before `cancel-requested` went out.
            broke(s, Rule::C1);
        }
        for p in std::mem::take(&mut s.queued) {
            s.prompts[p as usize].fate = PromptFate::ClearedInQueue;
        }
        s.steering.clear();
        if let Some(t) = s.turn.as_mut().filter(|t| t.token_live()) {
            t.cause.get_or_insert(cause);
        } else {
            if let Some(p) = s.in_hand {
                s.prompts[p as usize].doomed = true;
            }
            if !self.has(Fault::M3) && (s.in_hand.is_some() || self.has(Fault::M5)) {
                s.marker = true;
            }
        }
        if let Some(c) = s.cancel.as_mut() {
            c.cleared = true;
        }
    }

    /// Outcome of `send`: accepted (`true`) or rejected (disposed).
    pub fn send_accepted(s: &AgentState) -> bool {
        s.status != Status::Disposed
    }

    /// Whether `steer` goes to the steering FIFO (else it is a `send`).
    pub fn steer_is_steering(s: &AgentState) -> bool {
        Self::steerable(s)
    }

    /// Whether `cancel` is effective.
    pub fn cancel_effective(s: &AgentState) -> bool {
        s.status != Status::Disposed
            && (Self::turn_active(s)
                || !s.queued.is_empty()
                || !s.steering.is_empty()
                || s.in_hand.is_some())
    }

    /// Apply `action` if it is enabled.
    pub fn step(&self, s: &AgentState, action: &AgentAction) -> Option<AgentState> {
        let mut n = s.clone();
        let b = &self.bounds;
        match action {
            AgentAction::Send => {
                if s.calls[SEND] >= b.sends || s.cancel.is_some() {
                    return None;
                }
                n.calls[SEND] += 1;
                self.accept(&mut n, Origin::Plain);
            }
            AgentAction::Steer => {
                if s.calls[STEER] >= b.steers || s.cancel.is_some() {
                    return None;
                }
                n.calls[STEER] += 1;
                if Self::steerable(s) {
                    n.steering.push(n.steers_accepted);
                    n.steers_accepted += 1;
                } else {
                    self.accept(&mut n, Origin::Plain);
                }
            }
            AgentAction::Cancel(cause) => {
                if s.calls[CANCEL] >= b.cancels || s.cancel.is_some() {
                    return None;
                }
                n.calls[CANCEL] += 1;
                if !Self::cancel_effective(s) {
                    if self.has(Fault::M4) && s.status != Status::Disposed {
                        n.marker = true;
                    }
                    n.last_cancel = Some(false);
                } else {
                    n.cancel = Some(CancelCall {
                        cause: *cause,
                        requested: false,
                        cleared: false,
                        observer_sent: false,
                    });
                    if self.has(Fault::M11) {
                        self.clear(&mut n, *cause);
                    }
                    if let Some(c) = n.cancel.as_mut() {
                        c.requested = true;
                    }
                }
            }
            AgentAction::ObserverSend => {
                let c = s.cancel.as_ref()?;
                if c.observer_sent || s.calls[OBS] >= b.observer_sends {
                    return None;
                }
                n.calls[OBS] += 1;
                if let Some(c) = n.cancel.as_mut() {
                    c.observer_sent = true;
                }
                self.accept(&mut n, Origin::Observer);
            }
            AgentAction::FinishCancel => {
                let c = s.cancel.as_ref()?;
                if !c.cleared {
                    self.clear(&mut n, c.cause);
                }
                n.cancel = None;
                n.last_cancel = Some(true);
            }
            AgentAction::WhenIdle => {
                if s.waiters.len() >= b.waiters as usize {
                    return None;
                }
                n.waiters.push(None);
            }
            AgentAction::Resolve(w) => {
                if s.waiters.get(*w as usize) != Some(&None) {
                    return None;
                }
                let done = self.idle_ready(s)?;
                if !done && !Self::quiescent(s) {
                    broke(&mut n, Rule::C7);
                }
                n.waiters[*w as usize] = Some(done);
            }
            AgentAction::Dispose => {
                if s.calls[DISPOSE] >= b.disposes {
                    return None;
                }
                n.calls[DISPOSE] += 1;
                if s.status != Status::Disposed {
                    n.status = Status::Disposed;
                    if let Some(t) = n.turn.as_mut().filter(|t| t.token_live()) {
                        t.disposed = true;
                    }
                    let cleared: Vec<u8> = n
                        .in_hand
                        .take()
                        .into_iter()
                        .chain(n.queued.drain(..))
                        .collect();
                    for p in cleared {
                        n.prompts[p as usize].fate = PromptFate::ClearedByDispose;
                    }
                    n.steering.clear();
                    n.marker = false;
                }
            }
            AgentAction::Wake => {
                if s.pos != LoopPos::Waiting || s.status == Status::Disposed || s.queued.is_empty()
                {
                    return None;
                }
                let p = n.queued.remove(0);
                n.prompts[p as usize].fate = PromptFate::IN_HAND;
                n.in_hand = Some(p);
                n.pos = LoopPos::Claiming;
            }
            AgentAction::Exit => {
                if s.pos != LoopPos::Waiting || s.status != Status::Disposed {
                    return None;
                }
                n.pos = LoopPos::Exited;
            }
            AgentAction::Claim => {
                if s.pos != LoopPos::Claiming || s.cancel.is_some() {
                    return None;
                }
                match n.in_hand.take() {
                    None => n.pos = LoopPos::Exited,
                    Some(_) if s.status == Status::Disposed => n.pos = LoopPos::Exited,
                    Some(p) if std::mem::take(&mut n.marker) => {
                        let info = &mut n.prompts[p as usize];
                        info.fate = PromptFate::SkippedAtClaim;
                        match (info.origin, info.doomed) {
                            (_, true) => {}
                            (Origin::AfterCancel, _) => broke(&mut n, Rule::C5),
                            (Origin::AfterIdleCancel, _) => broke(&mut n, Rule::C6),
                            _ => {}
                        }
                        n.pos = LoopPos::Waiting;
                    }
                    Some(p) => {
                        let info = &mut n.prompts[p as usize];
                        info.fate = PromptFate::Started;
                        let (doomed, observer) = (info.doomed, info.origin == Origin::Observer);
                        if doomed {
                            broke(&mut n, Rule::C4);
                        }
                        if observer {
                            broke(&mut n, Rule::C2);
                        }
                        n.turn = Some(Turn {
                            prompt: p,
                            steps_done: 0,
                            phase: TurnPhase::WriteAhead,
                            cause: None,
                            disposed: false,
                            hung: false,
                        });
                        n.status = Status::Running;
                        n.pos = LoopPos::InTurn;
                    }
                }
            }
            AgentAction::WriteAhead => {
                s.turn
                    .as_ref()
                    .filter(|t| t.phase == TurnPhase::WriteAhead)?;
                if let Some(t) = n.turn.as_mut() {
                    t.phase = TurnPhase::Boundary;
                }
            }
            AgentAction::Boundary => {
                let t = s.turn.as_ref().filter(|t| t.phase == TurnPhase::Boundary)?;
                if s.cancel.is_some() {
                    return None;
                }
                let stopped = t.stopped();
                if !stopped && !n.steering.is_empty() {
                    n.steering.clear();
                }
                if let Some(t) = n.turn.as_mut() {
                    t.phase = if stopped {
                        TurnPhase::Ending
                    } else {
                        TurnPhase::InStep
                    };
                }
            }
            AgentAction::Hang => {
                let t = s.turn.as_ref().filter(|t| t.phase == TurnPhase::InStep)?;
                if !b.hang || t.hung || t.stopped() {
                    return None;
                }
                if let Some(t) = n.turn.as_mut() {
                    t.hung = true;
                }
            }
            AgentAction::StepDone => {
                let t = s.turn.as_ref().filter(|t| t.phase == TurnPhase::InStep)?;
                // C10: a hung step settles once the signal fires; M19: the
                // signal never reaches it.
                if t.hung && (!t.stopped() || self.has(Fault::M19)) {
                    return None;
                }
                let p = s.turn.as_ref().map_or(0, |t| t.prompt as usize);
                // A steering input left over by a completed turn runs as a
                // one-step prompt of its own.
                let steps = if s.prompts[p].origin == Origin::Requeued {
                    1
                } else {
                    b.steps
                };
                if let Some(t) = n.turn.as_mut() {
                    t.hung = false;
                    t.steps_done += 1;
                    t.phase = if t.steps_done < steps {
                        TurnPhase::Boundary
                    } else {
                        TurnPhase::Ending
                    };
                }
            }
            AgentAction::EndTurn => {
                let t = s.turn.as_ref().filter(|t| t.phase == TurnPhase::Ending)?;
                if s.cancel.is_some() {
                    return None;
                }
                // M23: the earlier cancel's cause wins over disposal.
                let first_cause_wins = self.has(Fault::M23) && t.cause.is_some();
                let reason = if t.disposed && !first_cause_wins {
                    EndReason::Disposed
                } else if t.cause.is_some() {
                    EndReason::Aborted
                } else {
                    EndReason::Completed
                };
                if reason == EndReason::Completed {
                    for _ in std::mem::take(&mut n.steering) {
                        self.accept(&mut n, Origin::Requeued);
                    }
                }
                let p = t.prompt as usize;
                n.prompts[p].fate = PromptFate::Ended(reason);
                if let Some(t) = n.turn.as_mut() {
                    t.phase = TurnPhase::Flushing;
                }
            }
            AgentAction::CloseTurn => {
                s.turn.as_ref().filter(|t| t.phase == TurnPhase::Flushing)?;
                n.turn = None;
                if n.status == Status::Running {
                    n.status = Status::Idle;
                }
                n.pos = LoopPos::Waiting;
            }
        }
        Some(n)
    }
}

fn broke(s: &mut AgentState, rule: Rule) {
    if !s.broken.contains(&rule) {
        s.broken.push(rule);
    }
}

impl Named for AgentModel {
    fn name(&self) -> String {
        match self.fault {
            None => "agent".into(),
            Some(f) => format!("agent+{f}"),
        }
    }
}

impl Model for AgentModel {
    type State = AgentState;
    type Action = AgentAction;

    fn init_states(&self) -> Vec<AgentState> {
        vec![self.init()]
    }

    fn actions(&self, s: &AgentState, out: &mut Vec<AgentAction>) {
        let mut all = vec![
            AgentAction::Send,
            AgentAction::Steer,
            AgentAction::Cancel(Cause::User),
        ];
        if self.bounds.both_causes {
            all.push(AgentAction::Cancel(Cause::Parent));
        }
        all.extend([
            AgentAction::ObserverSend,
            AgentAction::FinishCancel,
            AgentAction::WhenIdle,
            AgentAction::Dispose,
            AgentAction::Wake,
            AgentAction::Claim,
            AgentAction::WriteAhead,
            AgentAction::Boundary,
            AgentAction::StepDone,
            AgentAction::Hang,
            AgentAction::EndTurn,
            AgentAction::CloseTurn,
            AgentAction::Exit,
        ]);
        all.extend((0..s.waiters.len() as u8).map(AgentAction::Resolve));
        out.extend(all.into_iter().filter(|a| self.step(s, a).is_some()));
    }

    fn next_state(&self, s: &AgentState, a: AgentAction) -> Option<AgentState> {
        self.step(s, &a)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::checker::properties_of(self)
    }
}

impl Identified for AgentModel {
    fn identified(&self) -> Vec<Prop<Self>> {
        properties::all()
    }
}
