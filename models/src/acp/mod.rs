//! The ACP bridge model: `session/new`, `session/load`, `session/prompt`,
//! `session/cancel`, `session/close`, and the connection closing by client
//! disconnect or by the bridge's own unload, racing in-flight creations
//! (SPEC A1–A9).
//!
//! # States
//! - connection: `open` → `closed` (final); quiesce `Idle` → `Running`
//!   (records taken, each being disposed) → `Done`; the bridge scope
//!   `active` until the bridge unloads (then creations fail).
//! - `new_call`: `Idle` → `InFlight` → `Done(result)`;
//!   `loads`: each `Idle` → `InFlight` (resuming) → `Replaying` (its record
//!   kept, the history being sent) → `Done(result)`; two loads of the
//!   durable session `old`, for A5.
//! - `records`: sessions the bridge holds; `session/close` takes one into
//!   `closing` (its prompts not yet running answer `cancelled`, a running
//!   one is cancelled with the disposal) until its teardown is over; a load
//!   of its id meanwhile fails `already loaded` (R1).
//! - `prompts`: each `session/prompt`, by session:
//!   - `AwaitLoad` (sent before its session's load answered, A9) →
//!     `Queued` when the load answers, `Refused` when it fails;
//!   - `Waiting` (sent while its session's prompt was being cancelled, A8)
//!     → `Queued` when that prompt answers, `Cancelled` by a cancel;
//!   - `Queued` → `Running` → `EndTurn`, or `Cancelling` (a cancel during
//!     its turn) → `Cancelled` at the turn's end;
//!   - `Refused`: a second prompt while one is in flight (A8).
//! - `agents`: registered agents (`old`, `new`) and whether disposed.
//!
//! # Transitions
//! | action | who |
//! | --- | --- |
//! | `NewBegin`, `NewCreated` | the client's `session/new`, then the provider |
//! | `LoadBegin(k)`, `LoadResumed(k)`, `LoadReplayed(k)` | the client's `session/load`, the provider, then the replay's end and answer |
//! | `Prompt(s)`, `Cancel(s)`, `CancelUnknown`, `Close(s)` | the client |
//! | `CloseDone(s)` | `session/close`: the session's teardown finishes |
//! | `TurnStart(s)`, `TurnEnd(s)` | the session's agent loop |
//! | `Disconnect`, `Unload` | the client / the plugin host |
//! | `DisposeDone(s)` | quiesce: one record's teardown finishes |
//!
//! # Symmetry
//! The two `session/load old` calls are interchangeable: every transition
//! and property treats `LoadBegin(0)` as it treats `LoadBegin(1)`, and no
//! other part of the state names a load by its index. A state's
//! representative ([`Representative`]) sorts `loads`, so stateright's
//! symmetry reduction visits one of each pair of states that differ only
//! by which load did what.

use crate::checker::{Model, Named, Property, Representative};
use crate::fault::Fault;
use lifecycle_spec::Rule;

mod properties;

pub use properties::{
    A1_NONE, A2_CANCELLED_NEVER_RUNS, A4_DISPOSED_ANSWERS_CANCELLED, A5_NEVER_LOADED_TWICE,
    A6_ONE_QUIESCE, A7_NEW_AFTER_CLOSE, A8_ONE_IN_FLIGHT,
};

/// Session ids: `old` (a durable session to load) and `new`.
pub const SESSIONS: [&str; 2] = ["old", "new"];

/// Errors of the bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AcpError {
    /// `bridge has been disposed`.
    Disposed,
    /// `connection closed during session/new`.
    ClosedDuringNew,
    /// `connection closed during session/load`.
    ClosedDuringLoad,
    /// `already loaded`.
    AlreadyLoaded,
    /// The session was taken (closed, or the connection's quiesce) while
    /// its load replayed: the replay stopped.
    ClosedDuringReplay,
}

/// An in-flight or finished call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    /// Not made.
    Idle,
    /// Awaiting its agent.
    InFlight,
    /// A load's record is kept and its history is being replayed; the
    /// call is not answered yet (A9).
    Replaying,
    /// A close or the quiesce took the record while it replayed: the
    /// replay stops, and the load answers with an error.
    ReplayCut,
    /// Answered: the session, or an error.
    Done(Result<u8, AcpError>),
}

/// A `session/prompt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PromptState {
    /// Sent before its session's load answered: waits for that answer (A9).
    AwaitLoad,
    /// Sent after a cancel, while the cancelled prompt has not answered:
    /// waits for that answer (A8).
    Waiting,
    /// Queued in the agent.
    Queued,
    /// Its turn runs.
    Running,
    /// Its turn runs and was cancelled: it answers `cancelled` at the
    /// turn's end.
    Cancelling,
    /// Answered `end_turn`.
    EndTurn,
    /// Answered `cancelled`.
    Cancelled,
    /// Refused: a prompt already in flight (A8), or its load failed (A9).
    Refused,
}

impl PromptState {
    /// Not answered yet.
    pub fn pending(self) -> bool {
        !matches!(
            self,
            PromptState::EndTurn | PromptState::Cancelled | PromptState::Refused
        )
    }

    /// In flight in the agent: queued or in its turn (A8 allows one).
    pub fn in_flight(self) -> bool {
        matches!(
            self,
            PromptState::Queued | PromptState::Running | PromptState::Cancelling
        )
    }
}

/// One `session/prompt`: its session, its state, and (ghost) whether a
/// cancel was sent while it had not started, after which it must never run
/// (A2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prompt {
    /// The session.
    pub session: u8,
    /// Where it is.
    pub state: PromptState,
    /// Ghost: a cancel was sent before its turn started.
    pub cancelled_early: bool,
}

/// The state of the ACP model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AcpState {
    /// The connection is closed.
    pub closed: bool,
    /// Quiesce runs started (A6: at most one).
    pub quiesces: u8,
    /// Quiesce finished.
    pub quiesced: bool,
    /// The bridge's scope is unloading/unloaded.
    pub scope_gone: bool,
    /// `session/new`.
    pub new_call: Call,
    /// The two `session/load old` calls.
    pub loads: [Call; 2],
    /// Sessions being loaded.
    pub loading: Vec<u8>,
    /// Records held by the bridge.
    pub records: Vec<u8>,
    /// Registered agents, by session, and whether their teardown finished.
    pub agents: Vec<(u8, bool)>,
    /// Records taken by quiesce, being disposed.
    pub disposing: Vec<u8>,
    /// Records taken by `session/close`, being disposed.
    pub closing: Vec<u8>,
    /// The prompts, in the order they were sent.
    pub prompts: Vec<Prompt>,
    /// Ghost: a cancel arrived while a prompt waited behind a cancelled
    /// one (A8's second cancel).
    pub cancelled_waiting: bool,
    /// Calls made: prompts, cancels, disconnect, unload, closes.
    pub calls: [u8; 5],
    /// Rules a transition broke (ghost).
    pub broken: Vec<Rule>,
}

/// One transition of the ACP model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AcpAction {
    /// `session/new` is called.
    NewBegin,
    /// Its agent is created; the bridge keeps it or disposes it.
    NewCreated,
    /// `session/load old` number `k` is called.
    LoadBegin(u8),
    /// Its agent is resumed; the bridge keeps it (and starts the replay)
    /// or disposes it.
    LoadResumed(u8),
    /// Its replay ends and the load answers; the prompts that waited for
    /// it are admitted.
    LoadReplayed(u8),
    /// `session/prompt` on session `s`.
    Prompt(u8),
    /// `session/cancel` on session `s`.
    Cancel(u8),
    /// `session/cancel` on an unknown session.
    CancelUnknown,
    /// Session `s`'s loop starts the queued prompt's turn.
    TurnStart(u8),
    /// Session `s`'s turn completes.
    TurnEnd(u8),
    /// The client disconnects.
    Disconnect,
    /// The bridge unloads.
    Unload,
    /// Quiesce: session `s`'s teardown finishes.
    DisposeDone(u8),
    /// `session/close` of session `s`.
    Close(u8),
    /// The close's teardown of session `s` finishes; the close answers.
    CloseDone(u8),
}

/// The ACP model.
#[derive(Clone, Debug)]
pub struct AcpModel {
    /// The fault switched on: M7 and M8 (a closed connection's creation
    /// kept), M27 (a cancel misses a waiting prompt) and M28 (a prompt
    /// served during its session's replay) act here.
    pub fault: Option<Fault>,
    /// Bounds of the client: prompts, cancels, disconnects, unloads,
    /// closes.
    pub calls_max: [u8; 5],
}

const PROMPTS: usize = 0;
const CANCELS: usize = 1;
const DISCONNECT: usize = 2;
const UNLOAD: usize = 3;
const CLOSES: usize = 4;

impl AcpModel {
    /// The model.
    pub fn new(fault: Option<Fault>) -> Self {
        AcpModel {
            fault,
            calls_max: [2, 2, 1, 1, 1],
        }
    }

    /// The initial state: open, nothing loaded.
    pub fn init(&self) -> AcpState {
        AcpState {
            closed: false,
            quiesces: 0,
            quiesced: false,
            scope_gone: false,
            new_call: Call::Idle,
            loads: [Call::Idle; 2],
            loading: vec![],
            records: vec![],
            agents: vec![],
            disposing: vec![],
            closing: vec![],
            prompts: vec![],
            cancelled_waiting: false,
            calls: [0; 5],
            broken: vec![],
        }
    }

    fn live(s: &AcpState, sess: u8) -> bool {
        s.agents.iter().any(|&(x, gone)| x == sess && !gone)
    }

    /// Dispose session `sess`'s agent: its prompts not yet answered answer
    /// `cancelled` (A4).
    fn dispose(s: &mut AcpState, sess: u8) {
        for a in s.agents.iter_mut().filter(|a| a.0 == sess) {
            a.1 = true;
        }
        for p in s.prompts.iter_mut().filter(|p| p.session == sess) {
            if p.state.pending() {
                p.state = PromptState::Cancelled;
            }
        }
    }

    /// Session `sess`'s load is answered (`ok`) or failed: the prompts
    /// that waited for it are admitted in the order they were sent, one in
    /// flight and the rest refused (A8), or refused with the load (A9).
    fn load_answered(s: &mut AcpState, sess: u8, ok: bool) {
        for i in 0..s.prompts.len() {
            let p = s.prompts[i];
            if p.session != sess || p.state != PromptState::AwaitLoad {
                continue;
            }
            let busy = s
                .prompts
                .iter()
                .any(|q| q.session == sess && q.state.in_flight());
            s.prompts[i].state = if ok && !busy {
                PromptState::Queued
            } else {
                PromptState::Refused
            };
        }
    }

    /// Session `sess`'s prompt in flight answered: the prompt waiting for
    /// it, if any, is admitted (A8).
    fn admit_waiting(s: &mut AcpState, sess: u8) {
        if let Some(p) = s
            .prompts
            .iter_mut()
            .find(|p| p.session == sess && p.state == PromptState::Waiting)
        {
            p.state = PromptState::Queued;
        }
    }

    /// Whether session `sess` is being loaded and its load has not
    /// answered: resuming, or replaying.
    fn load_pending(s: &AcpState, sess: u8) -> bool {
        sess == 0 && (s.loading.contains(&0) || s.loads.contains(&Call::Replaying))
    }

    /// The agent is created or resumed; the bridge keeps it unless the
    /// connection closed (`ignore_close` is M7/M8).
    fn publish(
        s: &mut AcpState,
        sess: u8,
        ignore_close: bool,
        err: AcpError,
    ) -> Result<u8, AcpError> {
        if s.scope_gone {
            return Err(err);
        }
        if s.agents.iter().any(|&(x, gone)| x == sess && !gone) {
            broke(s, Rule::A5);
        }
        s.agents.push((sess, false));
        if s.closed && !ignore_close {
            Self::dispose(s, sess);
            return Err(err);
        }
        s.records.push(sess);
        Ok(sess)
    }

    /// The replays of `old` in progress lose their record (A9).
    fn cut_replays(s: &mut AcpState) {
        for l in s.loads.iter_mut().filter(|l| **l == Call::Replaying) {
            *l = Call::ReplayCut;
        }
    }

    fn quiesce(s: &mut AcpState) {
        s.closed = true;
        if s.quiesces == 0 {
            s.quiesces = 1;
            Self::cut_replays(s);
            s.disposing = std::mem::take(&mut s.records);
            // A close's teardown in progress is joined, not left behind (A1).
            s.disposing.extend(s.closing.iter().copied());
            if s.disposing.is_empty() {
                s.quiesced = true;
            }
        }
    }

    fn step(&self, s: &AcpState, a: &AcpAction) -> Option<AcpState> {
        let mut n = s.clone();
        match *a {
            AcpAction::NewBegin => {
                if s.new_call != Call::Idle {
                    return None;
                }
                n.new_call = if s.closed {
                    Call::Done(Err(AcpError::Disposed))
                } else {
                    Call::InFlight
                };
            }
            AcpAction::NewCreated => {
                if s.new_call != Call::InFlight {
                    return None;
                }
                let m7 = self.fault == Some(Fault::M7);
                n.new_call = Call::Done(Self::publish(&mut n, 1, m7, AcpError::ClosedDuringNew));
            }
            AcpAction::LoadBegin(k) => {
                if s.loads.get(k as usize)? != &Call::Idle {
                    return None;
                }
                n.loads[k as usize] = if s.closed {
                    Call::Done(Err(AcpError::Disposed))
                } else if Self::live(s, 0) || s.records.contains(&0) || s.loading.contains(&0) {
                    Call::Done(Err(AcpError::AlreadyLoaded))
                } else {
                    n.loading.push(0);
                    Call::InFlight
                };
            }
            AcpAction::LoadResumed(k) => {
                if s.loads.get(k as usize)? != &Call::InFlight {
                    return None;
                }
                n.loading.retain(|&x| x != 0);
                let m8 = self.fault == Some(Fault::M8);
                n.loads[k as usize] = match Self::publish(&mut n, 0, m8, AcpError::ClosedDuringLoad)
                {
                    Ok(_) => Call::Replaying,
                    Err(e) => {
                        Self::load_answered(&mut n, 0, false);
                        Call::Done(Err(e))
                    }
                };
            }
            AcpAction::LoadReplayed(k) if s.loads.get(k as usize)? == &Call::ReplayCut => {
                // A9: a replay whose record a close or the quiesce took
                // stops and fails; its waiting prompts went with it.
                n.loads[k as usize] = Call::Done(Err(AcpError::ClosedDuringReplay));
                Self::load_answered(&mut n, 0, false);
            }
            AcpAction::LoadReplayed(k) => {
                if s.loads.get(k as usize)? != &Call::Replaying {
                    return None;
                }
                n.loads[k as usize] = Call::Done(Ok(0));
                Self::load_answered(&mut n, 0, true);
            }
            AcpAction::Prompt(sess) => {
                let pending_load = Self::load_pending(s, sess);
                if s.closed
                    || s.calls[PROMPTS] >= self.calls_max[PROMPTS]
                    || !(s.records.contains(&sess) || pending_load)
                {
                    return None;
                }
                n.calls[PROMPTS] += 1;
                let mine = |p: &&Prompt| p.session == sess && p.state.pending();
                let state = if pending_load && self.fault != Some(Fault::M28) {
                    // A9: it waits for the load's answer (under M28 it is
                    // served during the replay).
                    PromptState::AwaitLoad
                } else if !s.prompts.iter().any(|p| mine(&p)) {
                    PromptState::Queued
                } else if s
                    .prompts
                    .iter()
                    .filter(mine)
                    .all(|p| p.state == PromptState::Cancelling)
                {
                    PromptState::Waiting
                } else {
                    PromptState::Refused
                };
                n.prompts.push(Prompt {
                    session: sess,
                    state,
                    cancelled_early: false,
                });
            }
            AcpAction::Cancel(sess) => {
                if s.closed
                    || s.calls[CANCELS] >= self.calls_max[CANCELS]
                    || !s.records.contains(&sess)
                {
                    return None;
                }
                n.calls[CANCELS] += 1;
                let m27 = self.fault == Some(Fault::M27);
                let mut ended = false;
                for p in n.prompts.iter_mut().filter(|p| p.session == sess) {
                    match p.state {
                        PromptState::Queued | PromptState::AwaitLoad => {
                            p.state = PromptState::Cancelled;
                            p.cancelled_early = true;
                            ended = true;
                        }
                        // M27: the cancel marks only a prompt already
                        // claimed; the waiting one is missed.
                        PromptState::Waiting => {
                            p.cancelled_early = true;
                            n.cancelled_waiting = true;
                            if !m27 {
                                p.state = PromptState::Cancelled;
                            }
                        }
                        PromptState::Running => p.state = PromptState::Cancelling,
                        _ => {}
                    }
                }
                if ended {
                    Self::admit_waiting(&mut n, sess);
                }
            }
            AcpAction::CancelUnknown => {
                if s.calls[CANCELS] >= self.calls_max[CANCELS] {
                    return None;
                }
                n.calls[CANCELS] += 1;
            }
            AcpAction::TurnStart(sess) => {
                if !Self::live(s, sess) {
                    return None;
                }
                if s.closing.contains(&sess) {
                    broke(&mut n, Rule::A4);
                }
                let p = n
                    .prompts
                    .iter_mut()
                    .find(|p| p.session == sess && p.state == PromptState::Queued)?;
                p.state = PromptState::Running;
                let early = p.cancelled_early;
                if early {
                    broke(&mut n, Rule::A2);
                }
                if Self::load_pending(&n, sess) {
                    broke(&mut n, Rule::A9);
                }
            }
            AcpAction::TurnEnd(sess) => {
                let p = n.prompts.iter_mut().find(|p| {
                    p.session == sess
                        && matches!(p.state, PromptState::Running | PromptState::Cancelling)
                })?;
                p.state = match p.state {
                    PromptState::Cancelling => PromptState::Cancelled,
                    _ => PromptState::EndTurn,
                };
                Self::admit_waiting(&mut n, sess);
            }
            AcpAction::Disconnect => {
                if s.calls[DISCONNECT] >= self.calls_max[DISCONNECT] {
                    return None;
                }
                n.calls[DISCONNECT] += 1;
                Self::quiesce(&mut n);
            }
            AcpAction::Unload => {
                if s.calls[UNLOAD] >= self.calls_max[UNLOAD] {
                    return None;
                }
                n.calls[UNLOAD] += 1;
                Self::quiesce(&mut n);
                n.scope_gone = true;
            }
            AcpAction::Close(sess) => {
                if s.closed
                    || s.calls[CLOSES] >= self.calls_max[CLOSES]
                    || !s.records.contains(&sess)
                {
                    return None;
                }
                n.calls[CLOSES] += 1;
                n.records.retain(|&x| x != sess);
                if sess == 0 {
                    Self::cut_replays(&mut n);
                }
                n.closing.push(sess);
                // Its waiting prompts are cancelled as by a cancel, its
                // queue is cleared by the disposal's first step, and a
                // running turn is cancelled (A4).
                for p in n.prompts.iter_mut().filter(|p| p.session == sess) {
                    p.state = match p.state {
                        PromptState::Running => PromptState::Cancelling,
                        st if st.pending() && st != PromptState::Cancelling => {
                            PromptState::Cancelled
                        }
                        st => st,
                    };
                }
            }
            AcpAction::CloseDone(sess) => {
                let running = s.prompts.iter().any(|p| {
                    p.session == sess
                        && matches!(p.state, PromptState::Running | PromptState::Cancelling)
                });
                if !s.closing.contains(&sess) || running {
                    return None;
                }
                n.closing.retain(|&x| x != sess);
                Self::dispose(&mut n, sess);
            }
            AcpAction::DisposeDone(sess) => {
                if !s.disposing.contains(&sess) {
                    return None;
                }
                n.disposing.retain(|&x| x != sess);
                Self::dispose(&mut n, sess);
                if n.disposing.is_empty() {
                    n.quiesced = true;
                }
            }
        }
        Some(n)
    }

    fn settled(s: &AcpState) -> bool {
        s.new_call != Call::InFlight && !s.loads.contains(&Call::InFlight)
    }

    /// Session `sess`'s prompts not yet answered, in sending order.
    fn pending(s: &AcpState, sess: u8) -> impl Iterator<Item = PromptState> + '_ {
        s.prompts
            .iter()
            .filter(move |p| p.session == sess && p.state.pending())
            .map(|p| p.state)
    }
}

fn broke(s: &mut AcpState, rule: Rule) {
    if !s.broken.contains(&rule) {
        s.broken.push(rule);
    }
}

impl Representative for AcpState {
    /// The state with its two loads in sorted order (see the module's
    /// Symmetry section).
    fn representative(&self) -> Self {
        let mut r = self.clone();
        r.loads.sort();
        r
    }
}

impl Named for AcpModel {
    fn name(&self) -> String {
        match self.fault {
            None => "acp".into(),
            Some(f) => format!("acp+{f}"),
        }
    }
}

impl Model for AcpModel {
    type State = AcpState;
    type Action = AcpAction;

    fn init_states(&self) -> Vec<AcpState> {
        vec![self.init()]
    }

    fn actions(&self, s: &AcpState, out: &mut Vec<AcpAction>) {
        let all = [
            AcpAction::NewBegin,
            AcpAction::NewCreated,
            AcpAction::LoadBegin(0),
            AcpAction::LoadBegin(1),
            AcpAction::LoadResumed(0),
            AcpAction::LoadResumed(1),
            AcpAction::LoadReplayed(0),
            AcpAction::LoadReplayed(1),
            AcpAction::Prompt(0),
            AcpAction::Prompt(1),
            AcpAction::Cancel(0),
            AcpAction::Cancel(1),
            AcpAction::CancelUnknown,
            AcpAction::TurnStart(0),
            AcpAction::TurnStart(1),
            AcpAction::TurnEnd(0),
            AcpAction::TurnEnd(1),
            AcpAction::Disconnect,
            AcpAction::Unload,
            AcpAction::DisposeDone(0),
            AcpAction::DisposeDone(1),
            AcpAction::Close(0),
            AcpAction::CloseDone(0),
        ];
        out.extend(all.into_iter().filter(|a| self.step(s, a).is_some()));
    }

    fn next_state(&self, s: &AcpState, a: AcpAction) -> Option<AcpState> {
        self.step(s, &a)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::checker::properties_of(self)
    }
}
