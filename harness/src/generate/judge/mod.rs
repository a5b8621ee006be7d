//! The judge: is a generated workload's history a behaviour of the ACP
//! specification model? Refinement, checked the way Lincheck checks a
//! concurrent history against a sequential specification, but against a
//! nondeterministic model: the judge keeps the set of every model state
//! that explains the history so far, closes it under the model's internal
//! actions, and steps it by each observation in turn. The first
//! observation that leaves the set empty is the mismatch: no behaviour of
//! the model explains it.
//!
//! The model is [`super::model`]'s: its module doc lists its states and
//! transitions.

use super::history::{Answer, Obs, Req, Update};
use super::model::{Call, Fate, Phase, Sk, St, P, Q};
use super::old::{old_history, OLD};
use super::script::{HUNG, JOB};
use super::workload::{Op, Workload};
use crate::acp::{AcpError, StopReason};
use crate::oracle::Violation;
use crate::provider::CreateError;
use crate::rules::Rule;
use std::collections::{BTreeMap, BTreeSet};

/// At most this many model states explain one prefix of a history; past
/// it the judge gives up with a harness error instead of running on.
pub const STATE_CAP: usize = 200_000;

/// The fate an answer reports.
fn fate_of(answer: &Answer) -> Option<Fate> {
    let err = |e: &AcpError| match e {
        AcpError::Disposed => Some(Fate::Disposed),
        AcpError::ClosedDuringNew => Some(Fate::ClosedDuringNew),
        AcpError::ClosedDuringLoad => Some(Fate::ClosedDuringLoad),
        AcpError::AlreadyLoaded(_) => Some(Fate::AlreadyLoaded),
        AcpError::UnknownSession(_) => Some(Fate::Unknown),
        AcpError::PromptInFlight(_) => Some(Fate::InFlight),
        AcpError::Storage(_) | AcpError::Create(CreateError::Storage(_)) => Some(Fate::Storage),
        // R1: a load of a session whose close still tears it down.
        AcpError::Create(CreateError::AlreadyExists(_)) => Some(Fate::AlreadyLoaded),
        AcpError::Create(_) => None,
        AcpError::ClosedDuringReplay(_) => Some(Fate::ClosedDuringReplay),
        // No other process holds a log, and no workload nears the cap.
        AcpError::LogInUse(_) | AcpError::TooManySessions => None,
    };
    match answer {
        Answer::New(Ok(_)) | Answer::Load(Ok(())) | Answer::Close(Ok(())) => Some(Fate::Ok),
        Answer::New(Err(e))
        | Answer::Load(Err(e))
        | Answer::Prompt(Err(e))
        | Answer::Close(Err(e)) => err(e),
        Answer::Prompt(Ok(StopReason::EndTurn)) => Some(Fate::EndTurn),
        Answer::Prompt(Ok(StopReason::Cancelled)) => Some(Fate::Cancelled),
        Answer::Disconnected => Some(Fate::Done),
        Answer::NewDropped => None,
    }
}

/// Step state `s` by observation `obs`: the successor, if the model
/// allows it (an update has its own: see [`observe_update`]).
fn observe(s: &St, obs: &Obs, ids: &BTreeMap<String, Sk>) -> Option<St> {
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
                Req::Prompt {
                    session,
                    steps,
                    hung,
                } => Q::Prompt(key(session), *steps, *hung),
                Req::Cancel { session } => Q::Cancel(key(session)),
                Req::Close { session } => Q::Close(key(session)),
                Req::Disconnect => Q::Disconnect,
                Req::DiskFault { .. } => Q::DiskFault,
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
        Obs::Update { .. } => return None,
    }
    Some(n)
}

/// What a workload's prompts are, for the steps whose reply names no
/// prompt: step 0 of a prompt whose step ends only when signalled, or of
/// one that starts a job (`super::script`).
struct Kinds {
    ops: BTreeMap<P, Op>,
    /// Each prompt that starts a job, sent so far, and its session.
    job_prompts: BTreeMap<P, Sk>,
    /// The sessions where such a prompt answered a storage error.
    failed_jobs: BTreeSet<Sk>,
}

impl Kinds {
    fn of(workload: &Workload) -> Kinds {
        let mut kinds = BTreeMap::new();
        for (c, client) in workload.clients.iter().enumerate() {
            for (o, op) in client.ops.iter().enumerate() {
                kinds.insert((c as u8, o as u8), *op);
            }
        }
        Kinds {
            ops: kinds,
            job_prompts: BTreeMap::new(),
            failed_jobs: BTreeSet::new(),
        }
    }

    /// Whether, in state `s`, a prompt that starts a job on `on` failed
    /// on storage (answered so, decided so, or its log failed meanwhile):
    /// its job may have started with its reply never sent (D9).
    fn start_unsent(&self, s: &St, on: Sk) -> bool {
        self.failed_jobs.contains(&on)
            || self.job_prompts.iter().any(|(p, o)| {
                *o == on
                    && matches!(
                        s.calls.get(p),
                        Some(Call::Running { failed: true, .. } | Call::Decided(Fate::Storage))
                    )
            })
    }

    /// Whether step `k` of prompt `p` replies without naming it.
    fn unnamed(&self, p: P, k: u8) -> bool {
        k == 0
            && matches!(
                self.ops.get(&p),
                Some(Op::Job { .. } | Op::Interrupt { .. })
            )
    }

    /// Whether step `k` of prompt `p` starts a job.
    fn starts_job(&self, p: P, k: u8) -> bool {
        k == 0 && matches!(self.ops.get(&p), Some(Op::Job { .. }))
    }
}

/// The successors of `s` by the update `u` of session `on`. The client
/// cannot tell a replayed record from a live step, so each reading the
/// model allows is a successor:
/// - a replayed item, while the session replays (checked against the
///   stored history unless the load heals the session in place);
/// - a step's reply, `agent: echo: c<c>o<o>/<k>`: prompt `(c, o)` runs on
///   the session with `k` steps delivered;
/// - a reply that names no prompt: step 0 of a running prompt that starts
///   a job or ends only when signalled;
/// - a job's `tool_call`: before that step's reply (A11); the job is the
///   session's from then on;
/// - a job's `tool_call_update`: once, for a job of this session (or
///   one whose start was never sent: a prompt of this session that
///   starts a job failed on storage, D9), and never inside another
///   prompt's message stream (A11).
fn observe_update(
    s: &St,
    on: Sk,
    u: &Update,
    history: &[String],
    kinds: &Kinds,
    out: &mut Vec<St>,
) {
    if let Some(sess) = s.sessions.get(&on) {
        if let Phase::Replaying(i) = sess.phase {
            let fits = match u {
                Update::Text(text) => sess.healing || history.get(i as usize) == Some(text),
                // The stored history starts no job.
                Update::JobStarted(_) | Update::Notice(_) => sess.healing,
            };
            if fits {
                let mut n = s.clone();
                if let Some(x) = n.sessions.get_mut(&on) {
                    x.phase = Phase::Replaying(i.saturating_add(1));
                }
                out.push(n);
            }
        }
    }
    let running = s.calls.iter().filter_map(|(p, c)| match *c {
        Call::Running {
            on: o,
            steps,
            done,
            failed: false,
            ..
        } if o == on && done < steps => Some((*p, done)),
        _ => None,
    });
    match u {
        Update::Text(text) => {
            let named = text.strip_prefix("agent: echo: ").and_then(parse_step);
            for (p, done) in running {
                let fits = match named {
                    Some((q, k)) => q == p && k == done,
                    None => text.starts_with("agent: ") && kinds.unnamed(p, done),
                };
                if fits {
                    let mut n = s.clone();
                    if let Some(Call::Running { done, .. }) = n.calls.get_mut(&p) {
                        *done += 1;
                    }
                    out.push(n);
                }
            }
        }
        Update::JobStarted(job) => {
            for (p, done) in running {
                if kinds.starts_job(p, done) && !s.jobs.contains_key(job) {
                    let mut n = s.clone();
                    n.jobs.insert(job.clone(), (on, false));
                    out.push(n);
                }
            }
        }
        Update::Notice(job) => {
            let streaming = s.calls.values().any(|c| {
                matches!(*c, Call::Running { on: o, done, steps, .. } if o == on && done > 0 && done < steps)
            });
            // A job whose start the client never saw: its step's log
            // failed, so its reply was not sent (D9); its end still is
            // (A11), once.
            let fits = match s.jobs.get(job) {
                Some(seen) => *seen == (on, false),
                None => kinds.start_unsent(s, on),
            };
            if fits && !streaming {
                let mut n = s.clone();
                n.jobs.insert(job.clone(), (on, true));
                out.push(n);
            }
        }
    }
}

/// `c<client>o<op>/<k>` (with `!` or `&` before the `/` if its step ends
/// only when signalled or starts a job): prompt `(client, op)`'s step `k`.
fn parse_step(text: &str) -> Option<(P, u8)> {
    let (prompt, k) = text.split_once('/')?;
    let prompt = prompt.trim_end_matches([HUNG, JOB]);
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
        disk_faults: 0,
        old_closed: false,
        queue: vec![None; workload.clients.len()],
        sessions: BTreeMap::new(),
        calls: BTreeMap::new(),
        jobs: BTreeMap::new(),
    };
    let mut ids: BTreeMap<String, Sk> = BTreeMap::new();
    let mut kinds = Kinds::of(workload);
    let mut set = BTreeSet::from([init]);
    for (i, obs) in history.iter().enumerate() {
        let before = close(set, stored.len()).map_err(|n| cap(i, n))?;
        let after: BTreeSet<St> = match obs {
            Obs::Update { session, update } => {
                let key = if session == OLD {
                    Some(Sk::Old)
                } else {
                    ids.get(session).copied()
                };
                let mut out = Vec::new();
                for (on, s) in key
                    .iter()
                    .flat_map(|on| before.iter().map(move |s| (*on, s)))
                {
                    observe_update(s, on, update, &stored, &kinds, &mut out);
                }
                out.into_iter().collect()
            }
            _ => before
                .iter()
                .filter_map(|s| observe(s, obs, &ids))
                .collect(),
        };

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
        if let Obs::Sent {
            client,
            op,
            req: Req::Prompt { session, .. },
        } = obs
        {
            let on = if session == OLD {
                Some(Sk::Old)
            } else {
                ids.get(session).copied()
            };
            if let Some(on) = on.filter(|_| kinds.starts_job((*client, *op), 0)) {
                kinds.job_prompts.insert((*client, *op), on);
            }
        }
        if let Obs::Answered {
            client,
            op,
            answer: Answer::Prompt(Err(AcpError::Storage(_))),
        } = obs
        {
            if let Some(on) = kinds.job_prompts.get(&(*client, *op)).copied() {
                kinds.failed_jobs.insert(on);
            }
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
    // A prompt's observation: A2 if a cancel decided it before it ran, A9
    // if the model had it waiting for its session's load, else A8. Where
    // both could be, what was observed decides: a step, or a failure as
    // unknown, is what a prompt that did not wait for its load shows (A9);
    // an answer otherwise is a cancel's to decide (A2).
    let about_prompt = |p: P, running: &'static str, load_first: bool| {
        let waits_for_load =
            prompt_of(p).any(|c| matches!(*c, Call::Waiting { on, .. } if replaying(on)));
        let ran = prompt_of(p).any(|c| matches!(c, Call::Running { .. }));
        let closed = before
            .iter()
            .any(|s| s.closed && s.calls.get(&p) == Some(&Call::Decided(Fate::Unknown)));
        let cancelled = prompt_of(p).any(|c| *c == Call::Decided(Fate::Cancelled));
        let a2 = (
            Rule::A2,
            "a cancel reached the prompt before it ran: it never runs and answers cancelled",
        );
        let a9 = (
            Rule::A9,
            "the prompt's session had a load not yet answered: the prompt waits for that answer",
        );
        match (closed && !ran, cancelled && !ran, waits_for_load) {
            (true, _, _) => (
                Rule::A1,
                "the connection closed: no session of the bridge outlives it, and the prompt fails as unknown",
            ),
            (_, true, true) if load_first => a9,
            (_, true, _) => a2,
            (_, _, true) => a9,
            _ => (Rule::A8, running),
        }
    };
    // A storage error of a call the model had still running (a turn, a
    // `session/new` or a load): only the disk's injected failures were
    // spent (D10). Any other call's error concerns the rule that decided it.
    let storage = match obs {
        Obs::Answered { client, op, answer } if fate_of(answer) == Some(Fate::Storage) => {
            prompt_of((*client, *op))
                .any(|c| matches!(c, Call::Running { .. } | Call::New | Call::Load))
        }
        _ => false,
    };
    let (rule, why) = match obs {
        _ if storage => (
            Rule::D10,
            "a storage error no injected disk failure accounts for: each failure is reported once, and the session recovers in the same process",
        ),
        Obs::Update {
            update: Update::Text(text),
            ..
        } => match text.strip_prefix("agent: echo: ").and_then(parse_step) {
            Some((p, _)) => about_prompt(p, "a step no prompt of the model is running", true),
            None => (
                Rule::A9,
                "a replayed item out of the stored history's order, twice, outside a load, or a step of no prompt",
            ),
        },
        Obs::Update {
            update: Update::Notice(_),
            ..
        } => (
            Rule::A11,
            "a job's end for a job its session did not start, twice, or inside another prompt's message stream",
        ),
        Obs::Update {
            update: Update::JobStarted(_),
            ..
        } => (Rule::A11, "a job's start outside the step that started it"),
        Obs::Answered {
            client,
            op,
            answer: Answer::Prompt(r),
        } => about_prompt(
            (*client, *op),
            "no admission, turn or cancel of the model gives this answer",
            matches!(r, Err(AcpError::UnknownSession(_))),
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
        Obs::Answered {
            answer: Answer::Close(_),
            ..
        } => (
            Rule::A4,
            "no session/close of the model answers so here: it disposes a live session once its turn ended, and fails as unknown otherwise",
        ),
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
    .at_observation(i + 1)
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
                Answer::Close(r) => format!("close:{}", if r.is_ok() { "ok" } else { "err" }),
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
        AcpError::ClosedDuringReplay(_) => "closed-during-replay",
        AcpError::LogInUse(_) => "log-in-use",
        AcpError::TooManySessions => "too-many",
    }
}

#[cfg(test)]
mod tests;
