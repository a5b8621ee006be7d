//! The ACP specification model the judge checks histories against (SPEC
//! A1–A9 and D10, as one connection sees them).
//!
//! # States and transitions
//! States: the connection `open` → `closed`; per session, `creating`
//! (`session/new` in flight) or `loading` (`session/load`'s resume) →
//! `replaying(i)` (the stored history, item by item) → `live`, and `gone`
//! once a quiesce took its record; per prompt, `waiting(arrival)` →
//! `running(k steps delivered, cancel seen, disposed, failed)` → decided
//! (its answer fixed) → answered; per call, pending → decided → answered;
//! and the disk's injected failures not yet spent. A session a storage
//! error failed stays `failed` until its next turn or a load heals it.
//! A session's waiting prompts are admitted in arrival order, and a
//! prompt that arrives while one waits queues behind it.
//!
//! | action | kind | effect |
//! | --- | --- | --- |
//! | `Sent(c, op)` | observed | op joins client `c`'s queue; the previous one must have taken effect (the server admits each request before it reads the next) |
//! | `Admitted(c, op)` | observed | the op took effect (its first poll returned, or the cancel's call) |
//! | `Apply(c)` | internal | the head of `c`'s queue takes effect: a prompt is claimed, waits (A8, A9) or is refused (A8); a cancel marks the claimed prompt and decides every waiting one `cancelled` (A2, A8); a load is refused (A5, A7), starts, or heals a failed live session and replays it again (D10); a disconnect closes and takes every record (A1, A4) |
//! | `Publish`, `Resumed`, `ReplayDone` | internal | a new session goes live (or fails: closed, A7); a load starts replaying (or fails, A1) and, once every stored item was sent, goes live and answers (A9) |
//! | `Promote(p)` | internal | the session's earliest waiting prompt is claimed once the session is live and free, refused if another (uncancelled) prompt is in flight (A8), or fails as unknown once the session is gone (A9) |
//! | `Finish(p)` | internal | a running prompt is decided: `end_turn` once every step was delivered (never for a step that ends only when signalled, C10), `cancelled` once a cancel or disposal reached it (A2, A4), a storage error once a disk failure hit its log (D10) |
//! | `Fail(p)`, `Fail(new/load)` | internal | a disk failure is spent: on a running prompt's log (its session refuses appends, its answer is a storage error), or on a `session/new` or `session/load`, which fails with it (D10) |
//! | `Close(on)` (in `Apply`) | internal | a live or replaying session is taken (`gone`): its waiting prompts are decided `cancelled`, its running turn disposed (A4), and the close runs its teardown; any other session is unknown |
//! | `Closed(p)` | internal | the close's teardown is over, once the turn it disposed was decided; a load of the session meanwhile may fail as already loaded (R1), and once it is over a load resumes it, its replay the log as it now stands |
//! | `DiskFault` | observed | one more disk failure may be spent |
//! | `Update(s, step k of p)` | observed | `p` is running on `s` with `k` steps delivered |
//! | `Update(old, history i)` | observed | `old` is replaying at item `i`, which is that text |
//! | `Answered(c, op)` | observed | the op's answer was decided, and is this one |

use std::collections::BTreeMap;

/// A request of client `.0`, its operation `.1`.
pub(super) type P = (u8, u8);

/// A session of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Sk {
    Old,
    New(P),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Phase {
    Creating,
    Loading,
    Replaying(u8),
    Live,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Sess {
    pub(super) phase: Phase,
    /// A quiesce took its record (disconnect).
    pub(super) gone: bool,
    pub(super) in_flight: Option<P>,
    /// A cancel arrived while `in_flight` ran (the next prompt waits, A8).
    pub(super) cancelled: bool,
    /// The load that resumes it.
    pub(super) load: Option<P>,
    /// A storage error failed its log: it refuses appends until its next
    /// turn or a load recovers it (D10).
    pub(super) failed: bool,
    /// Its load heals it in place: the replay sends the log as it now
    /// stands, turns of this run included, so its items are not checked
    /// against the stored history.
    pub(super) healing: bool,
}

/// An answer as the model decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Fate {
    EndTurn,
    Cancelled,
    Unknown,
    InFlight,
    Ok,
    Disposed,
    ClosedDuringNew,
    ClosedDuringLoad,
    AlreadyLoaded,
    Done,
    /// A storage error (D10): spends one of the disk's injected failures.
    Storage,
    /// A close or the connection's took the session while its load
    /// replayed: the replay stopped (A9).
    ClosedDuringReplay,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Call {
    /// `session/new` awaiting its agent.
    New,
    /// `session/load` resuming or replaying.
    Load,
    /// A prompt waiting to be claimed; `seq` orders the waiting prompts
    /// of a session by arrival (they are admitted in that order).
    Waiting {
        on: Sk,
        steps: u8,
        hung: bool,
        seq: u8,
    },
    /// A prompt whose turn runs; `hung`: its step ends only when
    /// signalled (C10), so it never ends by itself; `failed`: a disk
    /// failure hit its log, and it answers with a storage error (D10).
    Running {
        on: Sk,
        steps: u8,
        hung: bool,
        done: u8,
        cancel: bool,
        disposed: bool,
        failed: bool,
    },
    /// A disconnect's quiesce.
    Quiesce,
    /// A `session/close`'s teardown of `on`, which ends once `turn` (the
    /// turn it disposed, if any) was decided.
    Closing { on: Sk, turn: Option<P> },
    /// Answered in the model, not yet received.
    Decided(Fate),
}

/// A request waiting to take effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Q {
    New,
    Load,
    Prompt(Option<Sk>, u8, bool),
    Cancel(Option<Sk>),
    Close(Option<Sk>),
    Disconnect,
    DiskFault,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct St {
    pub(super) closed: bool,
    /// Arrivals of waiting prompts so far (their `seq`).
    pub(super) arrivals: u8,
    /// Disk failures injected and not yet spent on an answer: each storage
    /// error a client receives spends one (D10: a failure is reported once,
    /// and the session recovers by itself).
    pub(super) disk_faults: u8,
    /// A `session/close` took `old`: a later load replays its log as it
    /// now stands (this run's turns included), not the stored history.
    pub(super) old_closed: bool,
    pub(super) queue: Vec<Option<(u8, Q)>>,
    pub(super) sessions: BTreeMap<Sk, Sess>,
    pub(super) calls: BTreeMap<P, Call>,
    /// Each job whose start the client saw: its session, and whether its
    /// end was seen too (A11).
    pub(super) jobs: BTreeMap<String, (Sk, bool)>,
}

impl St {
    pub(super) fn decide(&mut self, p: P, fate: Fate) {
        self.calls.insert(p, Call::Decided(fate));
    }

    /// Prompt `p` joins the prompts waiting for session `on`.
    pub(super) fn wait(&mut self, p: P, on: Sk, steps: u8, hung: bool) {
        self.arrivals += 1;
        let seq = self.arrivals;
        self.calls.insert(
            p,
            Call::Waiting {
                on,
                steps,
                hung,
                seq,
            },
        );
    }

    /// Spend one injected disk failure on `p`'s answer, if one is left.
    pub(super) fn storage_error(&mut self, p: P) -> bool {
        if self.disk_faults == 0 {
            return false;
        }
        self.disk_faults -= 1;
        self.decide(p, Fate::Storage);
        true
    }

    /// Whether a prompt of session `on` that arrived before `seq` waits.
    pub(super) fn waiting_before(&self, on: Sk, seq: u8) -> bool {
        self.calls
            .values()
            .any(|c| matches!(*c, Call::Waiting { on: o, seq: q, .. } if o == on && q < seq))
    }

    /// The head of client `c`'s queue takes effect.
    pub(super) fn apply(&mut self, c: usize) {
        let Some((op, q)) = self.queue[c].take() else {
            return;
        };
        let p = (c as u8, op);
        match q {
            Q::New if self.closed => self.decide(p, Fate::Disposed),
            Q::New => {
                self.sessions
                    .insert(Sk::New(p), sess(Phase::Creating, None));
                self.calls.insert(p, Call::New);
            }
            Q::Load if self.closed => self.decide(p, Fate::Disposed),
            Q::Load
                if self
                    .sessions
                    .get(&Sk::Old)
                    .is_some_and(|s| !s.gone && s.failed) =>
            {
                // D10: a live session a storage error failed is recovered
                // by its load, in place, and replayed again.
                let old = self.sessions.get_mut(&Sk::Old).expect("old");
                old.failed = false;
                old.healing = true;
                old.phase = Phase::Replaying(0);
                old.load = Some(p);
                self.calls.insert(p, Call::Load);
            }
            Q::Load if self.sessions.get(&Sk::Old).is_some_and(|s| !s.gone) => {
                self.decide(p, Fate::AlreadyLoaded)
            }
            Q::Load => {
                let mut old = sess(Phase::Loading, Some(p));
                old.healing = self.old_closed;
                self.sessions.insert(Sk::Old, old);
                self.calls.insert(p, Call::Load);
            }
            Q::Prompt(None, ..) => self.decide(p, Fate::Unknown),
            Q::Prompt(Some(on), steps, hung) => {
                // Behind an earlier waiting prompt of the session, it
                // waits whatever the session's state: requests are
                // decided in the order they arrived.
                let queued = self.waiting_before(on, u8::MAX);
                match self.sessions.get_mut(&on) {
                    _ if queued => self.wait(p, on, steps, hung),
                    None => self.decide(p, Fate::Unknown),
                    Some(s) if s.gone || s.phase == Phase::Creating => {
                        self.decide(p, Fate::Unknown)
                    }
                    Some(s) if s.phase != Phase::Live => self.wait(p, on, steps, hung),
                    Some(s) => match (s.in_flight, s.cancelled) {
                        (None, _) => {
                            s.in_flight = Some(p);
                            s.failed = false;
                            self.calls.insert(p, running(on, steps, hung));
                        }
                        (Some(_), true) => self.wait(p, on, steps, hung),
                        (Some(_), false) => self.decide(p, Fate::InFlight),
                    },
                }
            }
            Q::Cancel(None) => {}
            Q::Cancel(Some(on)) => {
                for call in self.calls.values_mut() {
                    if matches!(*call, Call::Waiting { on: o, .. } if o == on) {
                        *call = Call::Decided(Fate::Cancelled);
                    }
                }
                if let Some(s) = self.sessions.get_mut(&on).filter(|s| !s.gone) {
                    if let Some(q) = s.in_flight {
                        s.cancelled = true;
                        if let Some(Call::Running { cancel, .. }) = self.calls.get_mut(&q) {
                            *cancel = true;
                        }
                    }
                }
            }
            Q::Close(None) => self.decide(p, Fate::Unknown),
            Q::Close(Some(on)) => {
                let kept = self.sessions.get(&on).is_some_and(|s| {
                    !s.gone && matches!(s.phase, Phase::Live | Phase::Replaying(_))
                });
                if !kept {
                    self.decide(p, Fate::Unknown);
                    return;
                }
                for call in self.calls.values_mut() {
                    if matches!(*call, Call::Waiting { on: o, .. } if o == on) {
                        *call = Call::Decided(Fate::Cancelled);
                    }
                }
                let s = self.sessions.get_mut(&on).expect("kept");
                s.gone = true;
                let turn = s.in_flight;
                if let Some(Call::Running { disposed, .. }) =
                    turn.and_then(|q| self.calls.get_mut(&q))
                {
                    *disposed = true;
                }
                self.old_closed |= on == Sk::Old;
                self.calls.insert(p, Call::Closing { on, turn });
            }
            Q::Disconnect => {
                self.closed = true;
                for s in self.sessions.values_mut() {
                    if matches!(s.phase, Phase::Live | Phase::Replaying(_)) && !s.gone {
                        s.gone = true;
                        if let Some(Call::Running { disposed, .. }) =
                            s.in_flight.and_then(|q| self.calls.get_mut(&q))
                        {
                            *disposed = true;
                        }
                    }
                }
                self.calls.insert(p, Call::Quiesce);
            }
            Q::DiskFault => self.disk_faults += 1,
        }
    }

    /// Every state one internal action away.
    pub(super) fn internal(&self, history_len: usize, out: &mut Vec<St>) {
        for c in 0..self.queue.len() {
            if self.queue[c].is_some() {
                let mut n = self.clone();
                n.apply(c);
                out.push(n);
            }
        }
        for (&p, &call) in &self.calls {
            match call {
                Call::New => {
                    let mut n = self.clone();
                    if n.storage_error(p) {
                        n.sessions.remove(&Sk::New(p));
                        out.push(n);
                        n = self.clone();
                    }
                    if n.closed {
                        n.sessions.remove(&Sk::New(p));
                        n.decide(p, Fate::ClosedDuringNew);
                    } else {
                        n.sessions.get_mut(&Sk::New(p)).expect("creating").phase = Phase::Live;
                        n.decide(p, Fate::Ok);
                    }
                    out.push(n);
                }
                Call::Load => {
                    let Some(s) = self.sessions.get(&Sk::Old).filter(|s| s.load == Some(p)) else {
                        continue;
                    };
                    let mut n = self.clone();
                    if matches!(s.phase, Phase::Loading) && n.storage_error(p) {
                        n.sessions.remove(&Sk::Old);
                        out.push(n);
                        n = self.clone();
                    }
                    // A heal whose repair fails: the session stays live and
                    // failed, and the load fails with the error (D10).
                    if s.healing && s.phase == Phase::Replaying(0) && n.storage_error(p) {
                        let old = n.sessions.get_mut(&Sk::Old).expect("old");
                        old.phase = Phase::Live;
                        old.healing = false;
                        old.failed = true;
                        out.push(n);
                        n = self.clone();
                    }
                    // R1: the session a close took still tears down; a
                    // resume of its id meanwhile fails, already loaded.
                    let closing = self
                        .calls
                        .values()
                        .any(|c| matches!(c, Call::Closing { on: Sk::Old, .. }));
                    if matches!(s.phase, Phase::Loading) && closing {
                        let mut f = self.clone();
                        let old = f.sessions.get_mut(&Sk::Old).expect("old");
                        old.gone = true;
                        old.load = None;
                        f.decide(p, Fate::AlreadyLoaded);
                        out.push(f);
                    }
                    match s.phase {
                        Phase::Loading if n.closed => {
                            n.sessions.remove(&Sk::Old);
                            n.decide(p, Fate::ClosedDuringLoad);
                        }
                        Phase::Loading => {
                            n.sessions.get_mut(&Sk::Old).expect("old").phase = Phase::Replaying(0);
                        }
                        Phase::Replaying(i) if s.healing || i as usize == history_len => {
                            let old = n.sessions.get_mut(&Sk::Old).expect("old");
                            old.phase = Phase::Live;
                            old.healing = false;
                            n.decide(p, Fate::Ok);
                        }
                        // Taken by a close or a quiesce: the replay stops
                        // before its next item.
                        Phase::Replaying(_) if s.gone => {
                            let old = n.sessions.get_mut(&Sk::Old).expect("old");
                            old.load = None;
                            n.decide(p, Fate::ClosedDuringReplay);
                        }
                        _ => continue,
                    }
                    out.push(n);
                }
                Call::Waiting {
                    on,
                    steps,
                    hung,
                    seq,
                } => {
                    if self.waiting_before(on, seq) {
                        continue;
                    }
                    let mut n = self.clone();
                    match n.sessions.get_mut(&on) {
                        None => n.decide(p, Fate::Unknown),
                        Some(s) if s.gone => n.decide(p, Fate::Unknown),
                        Some(s) if s.phase != Phase::Live => continue,
                        Some(s) => match (s.in_flight, s.cancelled) {
                            (None, _) => {
                                s.in_flight = Some(p);
                                s.cancelled = false;
                                s.failed = false;
                                n.calls.insert(p, running(on, steps, hung));
                            }
                            (Some(_), true) => continue,
                            (Some(_), false) => n.decide(p, Fate::InFlight),
                        },
                    }
                    out.push(n);
                }
                Call::Running {
                    on,
                    steps,
                    hung,
                    done,
                    cancel,
                    disposed,
                    failed,
                } => {
                    // A disk failure hits the turn's log: the session
                    // refuses appends from here on (D10).
                    if !failed && self.disk_faults > 0 {
                        let mut n = self.clone();
                        n.disk_faults -= 1;
                        if let Some(Call::Running { failed, .. }) = n.calls.get_mut(&p) {
                            *failed = true;
                        }
                        if let Some(s) = n.sessions.get_mut(&on) {
                            s.failed = true;
                        }
                        out.push(n);
                    }
                    let mut fates = Vec::new();
                    if failed {
                        fates.push(Fate::Storage);
                    } else {
                        if done == steps && !hung {
                            fates.push(Fate::EndTurn);
                        }
                        if cancel || disposed {
                            fates.push(Fate::Cancelled);
                        }
                    }
                    for fate in fates {
                        let mut n = self.clone();
                        if let Some(s) = n.sessions.get_mut(&on) {
                            if s.in_flight == Some(p) {
                                s.in_flight = None;
                                s.cancelled = false;
                            }
                        }
                        n.decide(p, fate);
                        out.push(n);
                    }
                }
                Call::Quiesce => {
                    let mut n = self.clone();
                    n.decide(p, Fate::Done);
                    out.push(n);
                }
                Call::Closing { turn, .. } => {
                    let turn_over = turn.is_none_or(|q| {
                        matches!(self.calls.get(&q), None | Some(Call::Decided(_)))
                    });
                    if turn_over {
                        let mut n = self.clone();
                        n.decide(p, Fate::Ok);
                        out.push(n);
                    }
                }
                Call::Decided(_) => {}
            }
        }
    }
}

pub(super) fn sess(phase: Phase, load: Option<P>) -> Sess {
    Sess {
        phase,
        gone: false,
        in_flight: None,
        cancelled: false,
        load,
        failed: false,
        healing: false,
    }
}

pub(super) fn running(on: Sk, steps: u8, hung: bool) -> Call {
    Call::Running {
        on,
        steps,
        hung,
        done: 0,
        cancel: false,
        disposed: false,
        failed: false,
    }
}
