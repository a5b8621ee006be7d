//! The judge: is a generated workload's history a behaviour of the ACP
//! specification model? Refinement, checked the way Lincheck checks a
//! concurrent history against a sequential specification, but against a
//! nondeterministic model: the judge keeps the set of every model state
//! that explains the history so far, closes it under the model's internal
//! actions, and steps it by each observation in turn. The first
//! observation that leaves the set empty is the mismatch: no behaviour of
//! the model explains it.
//!
//! # The model (SPEC A1–A9, as one connection sees them)
//! States: the connection `open` → `closed`; per session, `creating`
//! (`session/new` in flight) or `loading` (`session/load`'s resume) →
//! `replaying(i)` (the stored history, item by item) → `live`, and `gone`
//! once a quiesce took its record; per prompt, `waiting(arrival)` →
//! `running(k steps delivered, cancel seen, disposed)` → decided (its
//! answer fixed) → answered; per call, pending → decided → answered.
//! A session's waiting prompts are admitted in arrival order, and a
//! prompt that arrives while one waits queues behind it.
//!
//! | action | kind | effect |
//! | --- | --- | --- |
//! | `Sent(c, op)` | observed | op joins client `c`'s queue; the previous one must have taken effect (the server admits each request before it reads the next) |
//! | `Admitted(c, op)` | observed | the op took effect (its first poll returned, or the cancel's call) |
//! | `Apply(c)` | internal | the head of `c`'s queue takes effect: a prompt is claimed, waits (A8, A9) or is refused (A8); a cancel marks the claimed prompt and decides every waiting one `cancelled` (A2, A8); a load is refused (A5, A7) or starts; a disconnect closes and takes every record (A1, A4) |
//! | `Publish`, `Resumed`, `ReplayDone` | internal | a new session goes live (or fails: closed, A7); a load starts replaying (or fails, A1) and, once every stored item was sent, goes live and answers (A9) |
//! | `Promote(p)` | internal | the session's earliest waiting prompt is claimed once the session is live and free, refused if another (uncancelled) prompt is in flight (A8), or fails as unknown once the session is gone (A9) |
//! | `Finish(p)` | internal | a running prompt is decided: `end_turn` once every step was delivered, `cancelled` once a cancel or disposal reached it (A2, A4) |
//! | `Update(s, step k of p)` | observed | `p` is running on `s` with `k` steps delivered |
//! | `Update(old, history i)` | observed | `old` is replaying at item `i`, which is that text |
//! | `Answered(c, op)` | observed | the op's answer was decided, and is this one |

use super::run::{old_history, Answer, Obs, Req, Update, OLD};
use super::workload::Workload;
use crate::acp::{AcpError, StopReason};
use crate::oracle::Violation;
use crate::rules::Rule;
use std::collections::{BTreeMap, BTreeSet};

/// A request of client `.0`, its operation `.1`.
type P = (u8, u8);

/// At most this many model states explain one prefix of a history; past
/// it the judge gives up with a harness error instead of running on.
pub const STATE_CAP: usize = 200_000;

/// A session of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Sk {
    Old,
    New(P),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Phase {
    Creating,
    Loading,
    Replaying(u8),
    Live,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Sess {
    phase: Phase,
    /// A quiesce took its record (disconnect).
    gone: bool,
    in_flight: Option<P>,
    /// A cancel arrived while `in_flight` ran (the next prompt waits, A8).
    cancelled: bool,
    /// The load that resumes it.
    load: Option<P>,
}

/// An answer as the model decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Fate {
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Call {
    /// `session/new` awaiting its agent.
    New,
    /// `session/load` resuming or replaying.
    Load,
    /// A prompt waiting to be claimed; `seq` orders the waiting prompts
    /// of a session by arrival (they are admitted in that order).
    Waiting { on: Sk, steps: u8, seq: u8 },
    /// A prompt whose turn runs.
    Running {
        on: Sk,
        steps: u8,
        done: u8,
        cancel: bool,
        disposed: bool,
    },
    /// A disconnect's quiesce.
    Quiesce,
    /// Answered in the model, not yet received.
    Decided(Fate),
}

/// A request waiting to take effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Q {
    New,
    Load,
    Prompt(Option<Sk>, u8),
    Cancel(Option<Sk>),
    Disconnect,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct St {
    closed: bool,
    /// Arrivals of waiting prompts so far (their `seq`).
    arrivals: u8,
    queue: Vec<Option<(u8, Q)>>,
    sessions: BTreeMap<Sk, Sess>,
    calls: BTreeMap<P, Call>,
}

impl St {
    fn decide(&mut self, p: P, fate: Fate) {
        self.calls.insert(p, Call::Decided(fate));
    }

    /// Prompt `p` joins the prompts waiting for session `on`.
    fn wait(&mut self, p: P, on: Sk, steps: u8) {
        self.arrivals += 1;
        let seq = self.arrivals;
        self.calls.insert(p, Call::Waiting { on, steps, seq });
    }

    /// Whether a prompt of session `on` that arrived before `seq` waits.
    fn waiting_before(&self, on: Sk, seq: u8) -> bool {
        self.calls
            .values()
            .any(|c| matches!(*c, Call::Waiting { on: o, seq: q, .. } if o == on && q < seq))
    }

    /// The head of client `c`'s queue takes effect.
    fn apply(&mut self, c: usize) {
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
            Q::Load if self.sessions.get(&Sk::Old).is_some_and(|s| !s.gone) => {
                self.decide(p, Fate::AlreadyLoaded)
            }
            Q::Load => {
                self.sessions.insert(Sk::Old, sess(Phase::Loading, Some(p)));
                self.calls.insert(p, Call::Load);
            }
            Q::Prompt(None, _) => self.decide(p, Fate::Unknown),
            Q::Prompt(Some(on), steps) => {
                // Behind an earlier waiting prompt of the session, it
                // waits whatever the session's state: requests are
                // decided in the order they arrived.
                let queued = self.waiting_before(on, u8::MAX);
                match self.sessions.get_mut(&on) {
                    _ if queued => self.wait(p, on, steps),
                    None => self.decide(p, Fate::Unknown),
                    Some(s) if s.gone || s.phase == Phase::Creating => {
                        self.decide(p, Fate::Unknown)
                    }
                    Some(s) if s.phase != Phase::Live => self.wait(p, on, steps),
                    Some(s) => match (s.in_flight, s.cancelled) {
                        (None, _) => {
                            s.in_flight = Some(p);
                            self.calls.insert(p, running(on, steps));
                        }
                        (Some(_), true) => self.wait(p, on, steps),
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
        }
    }

    /// Every state one internal action away.
    fn internal(&self, history_len: usize, out: &mut Vec<St>) {
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
                    match s.phase {
                        Phase::Loading if n.closed => {
                            n.sessions.remove(&Sk::Old);
                            n.decide(p, Fate::ClosedDuringLoad);
                        }
                        Phase::Loading => {
                            n.sessions.get_mut(&Sk::Old).expect("old").phase = Phase::Replaying(0);
                        }
                        Phase::Replaying(i) if i as usize == history_len => {
                            n.sessions.get_mut(&Sk::Old).expect("old").phase = Phase::Live;
                            n.decide(p, Fate::Ok);
                        }
                        _ => continue,
                    }
                    out.push(n);
                }
                Call::Waiting { on, steps, seq } => {
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
                                n.calls.insert(p, running(on, steps));
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
                    done,
                    cancel,
                    disposed,
                } => {
                    let mut fates = Vec::new();
                    if done == steps {
                        fates.push(Fate::EndTurn);
                    }
                    if cancel || disposed {
                        fates.push(Fate::Cancelled);
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
                Call::Decided(_) => {}
            }
        }
    }
}

fn sess(phase: Phase, load: Option<P>) -> Sess {
    Sess {
        phase,
        gone: false,
        in_flight: None,
        cancelled: false,
        load,
    }
}

fn running(on: Sk, steps: u8) -> Call {
    Call::Running {
        on,
        steps,
        done: 0,
        cancel: false,
        disposed: false,
    }
}

/// The fate an answer reports.
fn fate_of(answer: &Answer) -> Option<Fate> {
    let err = |e: &AcpError| match e {
        AcpError::Disposed => Some(Fate::Disposed),
        AcpError::ClosedDuringNew => Some(Fate::ClosedDuringNew),
        AcpError::ClosedDuringLoad => Some(Fate::ClosedDuringLoad),
        AcpError::AlreadyLoaded(_) => Some(Fate::AlreadyLoaded),
        AcpError::UnknownSession(_) => Some(Fate::Unknown),
        AcpError::PromptInFlight(_) => Some(Fate::InFlight),
        AcpError::Create(_) | AcpError::Storage(_) => None,
    };
    match answer {
        Answer::New(Ok(_)) | Answer::Load(Ok(())) => Some(Fate::Ok),
        Answer::New(Err(e)) | Answer::Load(Err(e)) | Answer::Prompt(Err(e)) => err(e),
        Answer::Prompt(Ok(StopReason::EndTurn)) => Some(Fate::EndTurn),
        Answer::Prompt(Ok(StopReason::Cancelled)) => Some(Fate::Cancelled),
        Answer::Disconnected => Some(Fate::Done),
        Answer::NewDropped => None,
    }
}

/// Step state `s` by observation `obs`: the successor, if the model
/// allows it.
fn observe(s: &St, obs: &Obs, ids: &BTreeMap<String, Sk>, history: &[String]) -> Option<St> {
    let mut n = s.clone();
    let key = |id: &str| {
        if id == OLD {
            Some(Sk::Old)
        } else {
            ids.get(id).copied()
        }
    };
    match obs {
        Obs::Sent { client, op, req } => {
            let slot = n.queue.get_mut(*client as usize)?;
            // The previous request took effect before this one was sent.
            if slot.is_some() {
                return None;
            }
            let q = match req {
                Req::New => Q::New,
                Req::Load => Q::Load,
                Req::Prompt { session, steps } => Q::Prompt(key(session), *steps),
                Req::Cancel { session } => Q::Cancel(key(session)),
                Req::Disconnect => Q::Disconnect,
            };
            *slot = Some((*op, q));
        }
        Obs::Admitted { client, .. } => {
            // Its request took effect before the client went on.
            if n.queue.get(*client as usize)?.is_some() {
                return None;
            }
        }
        Obs::Answered { client, op, answer } => {
            let p = (*client, *op);
            if *answer == Answer::NewDropped {
                // Dropped before it published: its session never went live.
                if n.calls.get(&p) != Some(&Call::New) {
                    return None;
                }
                n.calls.remove(&p);
                n.sessions.remove(&Sk::New(p));
                return Some(n);
            }
            let fate = fate_of(answer)?;
            if n.calls.get(&p) != Some(&Call::Decided(fate)) {
                return None;
            }
            n.calls.remove(&p);
        }
        Obs::Update {
            session,
            update: Update::Step(text),
        } => {
            let (p, k) = parse_step(text)?;
            let on = key(session)?;
            match n.calls.get_mut(&p)? {
                Call::Running {
                    on: o, steps, done, ..
                } if *o == on && *done == k && k < *steps => *done += 1,
                _ => return None,
            }
        }
        Obs::Update {
            session,
            update: Update::History(text),
        } => {
            let s = n.sessions.get_mut(&key(session)?)?;
            match s.phase {
                Phase::Replaying(i) if history.get(i as usize) == Some(text) => {
                    s.phase = Phase::Replaying(i + 1)
                }
                _ => return None,
            }
        }
    }
    Some(n)
}

/// `c<client>o<op>/<k>`: prompt `(client, op)`'s step `k`.
fn parse_step(text: &str) -> Option<(P, u8)> {
    let (prompt, k) = text.split_once('/')?;
    let (c, o) = prompt.strip_prefix('c')?.split_once('o')?;
    Some(((c.parse().ok()?, o.parse().ok()?), k.parse().ok()?))
}

/// `set` with every state reachable from it by internal actions.
fn close(set: BTreeSet<St>, history_len: usize) -> Result<BTreeSet<St>, usize> {
    let mut seen = set.clone();
    let mut todo: Vec<St> = set.into_iter().collect();
    let mut next = Vec::new();
    while let Some(s) = todo.pop() {
        next.clear();
        s.internal(history_len, &mut next);
        for n in next.drain(..) {
            if !seen.contains(&n) {
                if seen.len() >= STATE_CAP {
                    return Err(seen.len());
                }
                seen.insert(n.clone());
                todo.push(n);
            }
        }
    }
    Ok(seen)
}

/// Judge `history`, the observations of one execution of `workload`:
/// `Ok` if some behaviour of the model explains it, else the violation of
/// the rule its first unexplained observation concerns.
pub fn judge(workload: &Workload, history: &[Obs]) -> Result<(), Violation> {
    let stored = old_history();
    let init = St {
        closed: false,
        arrivals: 0,
        queue: vec![None; workload.clients.len()],
        sessions: BTreeMap::new(),
        calls: BTreeMap::new(),
    };
    let mut ids: BTreeMap<String, Sk> = BTreeMap::new();
    let mut set = BTreeSet::from([init]);
    for (i, obs) in history.iter().enumerate() {
        let before = close(set, stored.len()).map_err(|n| cap(i, n))?;
        let after: BTreeSet<St> = before
            .iter()
            .filter_map(|s| observe(s, obs, &ids, &stored))
            .collect();

        if after.is_empty() {
            return Err(mismatch(i, obs, history, &before));
        }
        if let Obs::Answered {
            client,
            op,
            answer: Answer::New(Ok(id)),
        } = obs
        {
            ids.insert(id.clone(), Sk::New((*client, *op)));
        }
        set = after;
    }
    let end = close(set, stored.len()).map_err(|n| cap(history.len(), n))?;
    if end.iter().any(|s| s.queue.iter().all(Option::is_none)) {
        Ok(())
    } else {
        Err(Violation::new(
            Rule::A8,
            "model mismatch at the end of the history: a request sent never took effect",
        ))
    }
}

fn cap(i: usize, n: usize) -> Violation {
    Violation::new(
        crate::oracle::RuleId::Progress,
        format!("the judge gave up at observation {i}: {n} model states (cap {STATE_CAP})"),
    )
}

/// The violation for observation `i`, which no state of `before`
/// explains: the rule it concerns, what it was, and what the model
/// expected.
fn mismatch(i: usize, obs: &Obs, history: &[Obs], before: &BTreeSet<St>) -> Violation {
    let prompt_of = |p: P| before.iter().filter_map(move |s| s.calls.get(&p));
    let decided = |p: P, f: Fate| prompt_of(p).any(|c| *c == Call::Decided(f));
    let replaying = |on: Sk| {
        before.iter().any(|s| {
            s.sessions
                .get(&on)
                .is_some_and(|x| matches!(x.phase, Phase::Loading | Phase::Replaying(_)))
        })
    };
    // A prompt's observation: A9 if the model had it waiting for its
    // session's load, A2 if a cancel decided it before it ran, else A8.
    let about_prompt = |p: P, running: &'static str| {
        let waits_for_load =
            prompt_of(p).any(|c| matches!(*c, Call::Waiting { on, .. } if replaying(on)));
        let ran = prompt_of(p).any(|c| matches!(c, Call::Running { .. }));
        let closed = before
            .iter()
            .any(|s| s.closed && s.calls.get(&p) == Some(&Call::Decided(Fate::Unknown)));
        let cancelled = prompt_of(p).any(|c| *c == Call::Decided(Fate::Cancelled));
        if closed && !ran {
            (
                Rule::A1,
                "the connection closed: no session of the bridge outlives it, and the prompt fails as unknown",
            )
        } else if waits_for_load {
            (
                Rule::A9,
                "the prompt's session had a load not yet answered: the prompt waits for that answer",
            )
        } else if cancelled && !ran {
            (
                Rule::A2,
                "a cancel reached the prompt before it ran: it never runs and answers cancelled",
            )
        } else {
            (Rule::A8, running)
        }
    };
    let (rule, why) = match obs {
        Obs::Update {
            update: Update::Step(text),
            ..
        } => match parse_step(text) {
            Some((p, _)) => about_prompt(p, "a step no prompt of the model is running"),
            None => (Rule::A8, "a step of no prompt"),
        },
        Obs::Update { .. } => (
            Rule::A9,
            "a replayed item out of the stored history's order, twice, or outside a load",
        ),
        Obs::Answered {
            client,
            op,
            answer: Answer::Prompt(_),
        } => about_prompt(
            (*client, *op),
            "no admission, turn or cancel of the model gives this answer",
        ),
        Obs::Answered {
            client,
            op,
            answer: Answer::Load(_),
        } => {
            let p = (*client, *op);
            if decided(p, Fate::AlreadyLoaded) {
                (
                    Rule::A5,
                    "the session was live or being loaded: the load fails with already loaded",
                )
            } else if decided(p, Fate::ClosedDuringLoad) {
                (Rule::A1, "the connection closed while the load resumed: it disposes what it got and fails")
            } else {
                (Rule::A9, "no load of the model answers so here (before its replay ended, or with another result)")
            }
        }
        Obs::Answered {
            client,
            op,
            answer: Answer::New(_) | Answer::NewDropped,
        } => {
            if decided((*client, *op), Fate::ClosedDuringNew) {
                (Rule::A1, "the connection closed while session/new awaited its agent: it disposes it and fails")
            } else {
                (Rule::A7, "no session/new of the model answers so here")
            }
        }
        Obs::Answered { .. } => (Rule::A6, "no quiesce of the model answers so here"),
        Obs::Sent { .. } | Obs::Admitted { .. } => (Rule::A8, "a request that never took effect"),
    };
    let from = i.saturating_sub(6);
    let context: Vec<String> = history[from..i]
        .iter()
        .enumerate()
        .map(|(k, o)| format!("#{} {o}", from + k + 1))
        .collect();
    Violation::new(
        rule,
        format!(
            "model mismatch at observation #{}: {obs}: {why} (after: {})",
            i + 1,
            context.join("; ")
        ),
    )
}

/// The outcome label of a history: each prompt's and load's answer, in
/// the order they were received (the view the checkers count).
pub fn label(history: &[Obs]) -> String {
    let mut parts = Vec::new();
    for obs in history {
        if let Obs::Answered { client, op, answer } = obs {
            let a = match answer {
                Answer::New(r) => format!("new:{}", if r.is_ok() { "ok" } else { "err" }),
                Answer::NewDropped => "new:dropped".into(),
                Answer::Load(r) => format!("load:{}", if r.is_ok() { "ok" } else { "err" }),
                Answer::Prompt(Ok(s)) => format!("prompt:{s:?}"),
                Answer::Prompt(Err(e)) => format!("prompt:{}", short(e)),
                Answer::Disconnected => "disconnected".into(),
            };
            parts.push(format!("c{client}o{op}={a}"));
        }
    }
    parts.join(" ")
}

fn short(e: &AcpError) -> &'static str {
    match e {
        AcpError::Disposed => "disposed",
        AcpError::ClosedDuringNew | AcpError::ClosedDuringLoad => "closed",
        AcpError::AlreadyLoaded(_) => "already-loaded",
        AcpError::UnknownSession(_) => "unknown",
        AcpError::PromptInFlight(_) => "in-flight",
        AcpError::Create(_) => "create",
        AcpError::Storage(_) => "storage",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::decode;

    fn sent(client: u8, op: u8, req: Req) -> Obs {
        Obs::Sent { client, op, req }
    }

    fn got(client: u8, op: u8, answer: Answer) -> Obs {
        Obs::Answered { client, op, answer }
    }

    fn step(session: &str, text: &str) -> Obs {
        Obs::Update {
            session: session.into(),
            update: Update::Step(text.into()),
        }
    }

    fn prompt(session: &str, steps: u8) -> Req {
        Req::Prompt {
            session: session.into(),
            steps,
        }
    }

    fn cancel(session: &str) -> Req {
        Req::Cancel {
            session: session.into(),
        }
    }

    fn end(r: StopReason) -> Answer {
        Answer::Prompt(Ok(r))
    }

    /// `session/new`, then a prompt of one step on it, answered `r`, with
    /// `updates` in between.
    fn one_prompt(updates: Vec<Obs>, r: StopReason) -> Vec<Obs> {
        let mut h = vec![
            sent(0, 0, Req::New),
            got(0, 0, Answer::New(Ok("sess-1".into()))),
            sent(0, 1, prompt("sess-1", 1)),
        ];
        h.extend(updates);
        h.push(got(0, 1, end(r)));
        h
    }

    #[test]
    fn a_turn_that_ran_is_explained() {
        let w = decode("n.p01").unwrap();
        let h = one_prompt(vec![step("sess-1", "c0o1/0")], StopReason::EndTurn);
        assert_eq!(judge(&w, &h), Ok(()));
    }

    #[test]
    fn planted_replies_the_model_does_not_allow_are_reported() {
        let w = decode("n.p01").unwrap();
        // end_turn without the turn's step.
        let v = judge(&w, &one_prompt(vec![], StopReason::EndTurn)).unwrap_err();
        assert_eq!(v.rule, Rule::A8, "{}", v.message);
        assert!(v.message.contains("observation #4"), "{}", v.message);
        // cancelled with no cancel and no disconnect.
        let h = one_prompt(vec![step("sess-1", "c0o1/0")], StopReason::Cancelled);
        assert!(judge(&w, &h).is_err());
        // a step of a prompt that was never sent.
        let h = one_prompt(vec![step("sess-1", "c0o7/0")], StopReason::EndTurn);
        assert!(judge(&w, &h).is_err());
        // the same step twice.
        let twice = vec![step("sess-1", "c0o1/0"), step("sess-1", "c0o1/0")];
        assert!(judge(&w, &one_prompt(twice, StopReason::EndTurn)).is_err());
    }

    #[test]
    fn a_cancel_reaches_a_prompt_waiting_behind_a_cancelled_one() {
        // M27's history: P1 runs, cancel, P2 waits (A8), cancel, P2 runs.
        // P1's second step after the second cancel shows P1 still ran
        // then, so P2 was waiting when that cancel arrived.
        let w = decode("n.p02.c0.p01.c0").unwrap();
        let mut h = vec![
            sent(0, 0, Req::New),
            got(0, 0, Answer::New(Ok("sess-1".into()))),
            sent(0, 1, prompt("sess-1", 2)),
            step("sess-1", "c0o1/0"),
            sent(0, 2, cancel("sess-1")),
            Obs::Admitted { client: 0, op: 2 },
            sent(0, 3, prompt("sess-1", 1)),
            Obs::Admitted { client: 0, op: 3 },
            sent(0, 4, cancel("sess-1")),
            Obs::Admitted { client: 0, op: 4 },
            step("sess-1", "c0o1/1"),
            got(0, 1, end(StopReason::Cancelled)),
        ];
        let mut ran = h.clone();
        ran.push(step("sess-1", "c0o3/0"));
        ran.push(got(0, 3, end(StopReason::EndTurn)));
        let v = judge(&w, &ran).unwrap_err();
        assert_eq!(v.rule, Rule::A2, "{}", v.message);
        h.push(got(0, 3, end(StopReason::Cancelled)));
        assert_eq!(judge(&w, &h), Ok(()));
    }

    #[test]
    fn a_prompt_waits_for_the_load_and_the_replay_is_the_stored_history() {
        let w = decode("l.po1").unwrap();
        let stored = old_history();
        let history = |i: usize| Obs::Update {
            session: OLD.into(),
            update: Update::History(stored[i].clone()),
        };
        let mut h = vec![sent(0, 0, Req::Load), sent(0, 1, prompt(OLD, 1))];
        h.extend((0..stored.len()).map(history));
        h.push(got(0, 0, Answer::Load(Ok(()))));
        h.push(step(OLD, "c0o1/0"));
        h.push(got(0, 1, end(StopReason::EndTurn)));
        assert_eq!(judge(&w, &h), Ok(()));
        // M28: the prompt's step inside the replay.
        let mut inside = h.clone();
        let s = inside.remove(inside.len() - 2);
        inside.insert(3, s);
        let v = judge(&w, &inside).unwrap_err();
        assert_eq!(v.rule, Rule::A9, "{}", v.message);
        // An item sent twice.
        let mut twice = h.clone();
        twice.insert(3, history(0));
        assert_eq!(judge(&w, &twice).unwrap_err().rule, Rule::A9);
        // The answer before the replay ends.
        let mut early = h;
        let answer = early.remove(2 + stored.len());
        early.insert(2, answer);
        assert!(judge(&w, &early).is_err());
    }
}
