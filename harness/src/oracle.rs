//! Rule oracles: checks of SPEC rules over an agent's journal.
//!
//! The oracle rebuilds the inbox, marker and turn from the journal on its own
//! (it does not trust the core's state) and reports every place where the
//! history breaks a rule. It is scenario-independent: any execution of any
//! scenario, on any checker, is checked against C1–C9 (and D3/D6 where a
//! disposal happened).

use crate::journal::{CallId, Cause, EndReason, Event, PromptId, Record, SteerId};
use crate::rules::Rule;
use crate::session_log::Entry;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// What a [`Violation`] breaks: a rule of SPEC §2, or one of the
/// harness's own failure kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleId {
    /// A rule of SPEC §2.
    Spec(Rule),
    /// No progress: a stall, a deadlock or a step limit.
    Progress,
    /// A task panicked outside any rule's check.
    Panic,
    /// loom itself failed (its own assertion, or a bound it enforces).
    Loom,
    /// The same schedule gave two different outcomes (the simulator is not
    /// deterministic for this scenario).
    Determinism,
    /// The harness's own contract broke: a step did something its
    /// footprint does not say (`lifecycle_sim::SimError::Footprint`), so
    /// the simulator's reduction would not be sound for it.
    Footprint,
}

impl RuleId {
    /// Every rule ID, the SPEC rules first.
    pub const ALL: [RuleId; 45] = {
        let mut all = [RuleId::Progress; 45];
        let mut i = 0;
        while i < Rule::ALL.len() {
            all[i] = RuleId::Spec(Rule::ALL[i]);
            i += 1;
        }
        all[40] = RuleId::Progress;
        all[41] = RuleId::Panic;
        all[42] = RuleId::Loom;
        all[43] = RuleId::Determinism;
        all[44] = RuleId::Footprint;
        all
    };

    /// Its name: `C4`, `progress`, `panic`, `loom`.
    pub fn name(self) -> &'static str {
        match self {
            RuleId::Spec(r) => r.name(),
            RuleId::Progress => "progress",
            RuleId::Panic => "panic",
            RuleId::Loom => "loom",
            RuleId::Determinism => "determinism",
            RuleId::Footprint => "footprint",
        }
    }

    /// The rule ID with this name, if there is one.
    pub fn parse(name: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether this is one of `rules`.
    pub fn is_in(self, rules: &[Rule]) -> bool {
        self.spec().is_some_and(|r| rules.contains(&r))
    }

    /// The SPEC rule, if this is one.
    pub fn spec(self) -> Option<Rule> {
        match self {
            RuleId::Spec(r) => Some(r),
            _ => None,
        }
    }
}

impl From<Rule> for RuleId {
    fn from(r: Rule) -> RuleId {
        RuleId::Spec(r)
    }
}

impl PartialEq<Rule> for RuleId {
    fn eq(&self, other: &Rule) -> bool {
        *self == RuleId::Spec(*other)
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Read back by its name, the form [`Serialize`] writes (a loom worker's
/// line); a name no rule has is an error.
impl<'de> serde::Deserialize<'de> for RuleId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RuleId, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        RuleId::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("no rule is named {name:?}")))
    }
}

/// A broken rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Violation {
    /// What it breaks (`C4`, `D3`, ..., or `progress`).
    pub rule: RuleId,
    /// What happened.
    pub message: String,
    /// For a generated workload's model mismatch: the number (from 1) of
    /// the first observation of the history that no behaviour of the model
    /// explains. A replay finds the poll that made it (its `observation`
    /// trace event), which is where the rule broke.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<usize>,
}

impl Violation {
    /// A violation of `rule`.
    pub fn new(rule: impl Into<RuleId>, message: impl Into<String>) -> Self {
        Violation {
            rule: rule.into(),
            message: message.into(),
            observation: None,
        }
    }

    /// The same, first seen at observation `n` of a generated history.
    pub fn at_observation(mut self, n: usize) -> Self {
        self.observation = Some(n);
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.message)
    }
}

#[derive(Default)]
struct Call {
    effective: bool,
    requested: Vec<u64>,
    cleared: Option<u64>,
    returned: bool,
    cause: Option<Cause>,
}

#[derive(Default)]
struct Replay {
    queued: BTreeSet<PromptId>,
    steering: BTreeSet<SteerId>,
    in_hand: Option<PromptId>,
    active: Option<PromptId>,
    closing: Option<PromptId>,
    marker: bool,
    disposed: bool,
    open_calls: BTreeSet<CallId>,
    calls: BTreeMap<CallId, Call>,
    /// Prompts that must never start, and the rule that says so.
    doomed: BTreeMap<PromptId, (Rule, CallId)>,
    /// Steering inputs that must never be absorbed (C8).
    dropped_steering: BTreeSet<SteerId>,
    started: BTreeMap<PromptId, u32>,
    ended: BTreeMap<PromptId, (EndReason, Option<Cause>)>,
    /// The last cancel call before each accepted prompt, and whether it was effective.
    last_call_before: BTreeMap<PromptId, Option<(CallId, bool)>>,
    last_call: Option<(CallId, bool)>,
    /// For a turn stopped by a cancel: the first cause and the journal
    /// position after which at most one step may finish.
    stop_of_turn: BTreeMap<PromptId, (Cause, u64)>,
    steps_after_stop: BTreeMap<PromptId, u32>,
    /// Turns active when an effective cancel entered: they must not complete.
    must_abort: BTreeMap<PromptId, CallId>,
    waiting: BTreeSet<u64>,
    /// Turns whose session log failed (D10) before their `turn/end`.
    failed: BTreeSet<PromptId>,
}

impl Replay {
    fn has_work(&self) -> bool {
        self.active.is_some()
            || !self.queued.is_empty()
            || !self.steering.is_empty()
            || self.in_hand.is_some()
    }
}

/// The rules [`check_journal`] and [`check_durable`] evaluate on every
/// execution.
pub const ORACLE_RULES: [Rule; 12] = [
    Rule::C1,
    Rule::C2,
    Rule::C3,
    Rule::C4,
    Rule::C5,
    Rule::C6,
    Rule::C7,
    Rule::C8,
    Rule::C9,
    Rule::D3,
    Rule::D6,
    Rule::D10,
];

/// Check C1–C9 (and D6) over one agent's journal.
pub fn check_journal(journal: &[Record]) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut s = Replay::default();
    for rec in journal {
        let seq = rec.seq;
        match &rec.event {
            Event::Accepted { prompt } => {
                s.queued.insert(*prompt);
                s.last_call_before.insert(*prompt, s.last_call);
            }
            Event::SteerAccepted { input } => {
                s.steering.insert(*input);
            }
            Event::Rejected => {}
            Event::SteeringRequeued { input, prompt } => {
                s.steering.remove(input);
                s.queued.insert(*prompt);
                s.last_call_before.insert(*prompt, s.last_call);
            }
            Event::CancelCalled { call, cause } => {
                let effective = s.has_work() && !s.disposed;
                if effective {
                    for p in s.queued.iter().chain(s.in_hand.iter()) {
                        s.doomed.entry(*p).or_insert((Rule::C4, *call));
                    }
                    s.dropped_steering.extend(s.steering.iter().copied());
                    if let Some(p) = s.active {
                        s.must_abort.entry(p).or_insert(*call);
                    }
                }
                s.calls.insert(
                    *call,
                    Call {
                        effective,
                        cause: Some(*cause),
                        ..Call::default()
                    },
                );
                s.open_calls.insert(*call);
                s.last_call = Some((*call, effective));
            }
            Event::CancelRequested { call, cause } => {
                let c = s.calls.entry(*call).or_default();
                c.requested.push(seq);
                if !c.effective {
                    v.push(Violation::new(
                        Rule::C6,
                        format!("idle cancel #{call} emitted agent/cancel-requested {{{cause:?}}}"),
                    ));
                }
                if c.cleared.is_some() {
                    v.push(Violation::new(
                        Rule::C1,
                        format!("cancel #{call} emitted agent/cancel-requested after it had cleared the inbox"),
                    ));
                }
                if c.requested.len() > 1 {
                    v.push(Violation::new(
                        Rule::C1,
                        format!(
                            "cancel #{call} emitted agent/cancel-requested {} times",
                            c.requested.len()
                        ),
                    ));
                }
            }
            Event::Cleared {
                call,
                prompts,
                steering,
                marker_set,
                ..
            } => {
                let cleared: BTreeSet<PromptId> = prompts.iter().copied().collect();
                let left: Vec<_> = s.queued.difference(&cleared).collect();
                if !left.is_empty() {
                    v.push(Violation::new(
                        Rule::C2,
                        format!("cancel #{call} left queued prompts {left:?}"),
                    ));
                }
                let stray: Vec<_> = s
                    .steering
                    .iter()
                    .filter(|x| !steering.contains(x))
                    .collect();
                if !stray.is_empty() {
                    v.push(Violation::new(
                        Rule::C2,
                        format!("cancel #{call} left steering inputs {stray:?}"),
                    ));
                }
                // Work queued during the notification is cleared too (C2).
                for p in &cleared {
                    s.doomed.entry(*p).or_insert((Rule::C2, *call));
                }
                s.dropped_steering.extend(steering.iter().copied());
                for p in prompts {
                    s.queued.remove(p);
                }
                for x in steering {
                    s.steering.remove(x);
                }
                let c = s.calls.entry(*call).or_default();
                c.cleared = Some(seq);
                if c.requested.is_empty() && c.effective {
                    v.push(Violation::new(
                        Rule::C1,
                        format!("cancel #{call} cleared the inbox before emitting agent/cancel-requested"),
                    ));
                }
                if let (Some(turn), Some(cause)) = (s.active, c.cause) {
                    s.stop_of_turn.entry(turn).or_insert((cause, seq));
                }
                if *marker_set {
                    s.marker = true;
                    // A prompt accepted during the notification that the
                    // loop already woke for is not in the inbox to clear:
                    // the marker stops it, as C2 clears what was queued
                    // then (C2, C4).
                    if let Some(p) = s.in_hand {
                        s.doomed.entry(p).or_insert((Rule::C2, *call));
                    }
                }
            }
            Event::CancelReturned { call } => {
                s.open_calls.remove(call);
                if let Some(c) = s.calls.get_mut(call) {
                    c.returned = true;
                }
            }
            Event::Woke { prompt } => {
                s.queued.remove(prompt);
                s.in_hand = Some(*prompt);
            }
            Event::Skipped { prompt } => {
                s.in_hand = None;
                s.marker = false;
                if !s.doomed.contains_key(prompt) {
                    let rule = match s.last_call_before.get(prompt).copied().flatten() {
                        Some((_, false)) => Rule::C6,
                        _ => Rule::C5,
                    };
                    v.push(Violation::new(
                        rule,
                        format!("prompt p{prompt}, accepted after the last cancel returned, was swallowed by the pre-run marker"),
                    ));
                }
            }
            Event::TurnStart { prompt } => {
                s.in_hand = None;
                s.active = Some(*prompt);
                *s.started.entry(*prompt).or_default() += 1;
                if let Some((rule, call)) = s.doomed.get(prompt) {
                    v.push(Violation::new(
                        *rule,
                        format!("prompt p{prompt}, accepted before effective cancel #{call}, started a turn"),
                    ));
                }
                if s.disposed {
                    v.push(Violation::new(
                        Rule::D6,
                        format!("prompt p{prompt} started after dispose began"),
                    ));
                }
            }
            Event::SteeringAbsorbed { prompt, input } => {
                if s.dropped_steering.contains(input) || s.stop_of_turn.contains_key(prompt) {
                    v.push(Violation::new(
                        Rule::C8,
                        format!("steering input s{input} of cancelled turn p{prompt} was absorbed"),
                    ));
                }
                s.steering.remove(input);
            }
            Event::Step { prompt, .. } => {
                if s.stop_of_turn.contains_key(prompt) {
                    let n = s.steps_after_stop.entry(*prompt).or_default();
                    *n += 1;
                    if *n == 2 {
                        v.push(Violation::new(
                            Rule::C3,
                            format!("turn p{prompt} ran a new step after its token was requested"),
                        ));
                    }
                }
            }
            Event::TurnEnd {
                prompt,
                reason,
                cause,
            } => {
                s.active = None;
                s.closing = Some(*prompt);
                s.ended.insert(*prompt, (*reason, *cause));
                // D10: a turn whose log failed ends failed; C3 does not
                // apply to it.
                if s.failed.contains(prompt) || *reason == EndReason::Failed {
                    if !s.failed.contains(prompt) || *reason != EndReason::Failed {
                        v.push(Violation::new(
                            Rule::D10,
                            format!(
                                "turn p{prompt} ended {reason:?}, but {}",
                                if s.failed.contains(prompt) {
                                    "its session log had failed: it must end failed"
                                } else {
                                    "no storage failure was reported during it"
                                }
                            ),
                        ));
                    }
                    continue;
                }
                if let (Some(call), EndReason::Completed) = (s.must_abort.get(prompt), reason) {
                    v.push(Violation::new(
                        Rule::C3,
                        format!("turn p{prompt}, active when effective cancel #{call} entered, ended completed"),
                    ));
                }
                // Disposal overrides: whenever it began before this turn/end,
                // the turn ends `disposed`, even after an earlier cancel.
                if s.disposed && *reason != EndReason::Disposed {
                    let after = s
                        .stop_of_turn
                        .get(prompt)
                        .map_or(String::new(), |(first, _)| {
                            format!(" (after a cancel with cause {first:?})")
                        });
                    v.push(Violation::new(
                        Rule::C3,
                        format!(
                            "turn p{prompt} ended {reason:?}{after} after its disposal began; disposal overrides, it must end disposed"
                        ),
                    ));
                } else if let Some((first, _)) = s.stop_of_turn.get(prompt) {
                    match reason {
                        EndReason::Disposed => {}
                        EndReason::Aborted if *cause == Some(*first) => {}
                        _ => v.push(Violation::new(
                            Rule::C3,
                            format!("turn p{prompt} cancelled first with cause {first:?} ended {reason:?} (cause {cause:?})"),
                        )),
                    }
                }
            }
            Event::TurnClosed { .. } => s.closing = None,
            Event::StorageFailed { prompt, .. } => {
                if s.active == Some(*prompt) {
                    s.failed.insert(*prompt);
                }
            }
            Event::IdleWaiting { waiter } => {
                s.waiting.insert(*waiter);
            }
            Event::IdleResolved { waiter, done } => {
                s.waiting.remove(waiter);
                if *done && !s.disposed {
                    v.push(Violation::new(
                        Rule::C7,
                        format!("when_idle #{waiter} resolved `done` before disposal"),
                    ));
                }
                if !*done {
                    let mut busy = Vec::new();
                    if let Some(p) = s.active.or(s.closing) {
                        busy.push(format!("turn p{p} running"));
                    }
                    if let Some(p) = s.in_hand {
                        busy.push(format!("p{p} woken, not claimed"));
                    }
                    if !s.queued.is_empty() {
                        busy.push(format!("queued {:?}", s.queued));
                    }
                    if !s.steering.is_empty() {
                        busy.push(format!("steering {:?}", s.steering));
                    }
                    if s.marker {
                        busy.push("pre-run marker set".into());
                    }
                    if !s.open_calls.is_empty() {
                        busy.push(format!("cancel {:?} in progress", s.open_calls));
                    }
                    if !busy.is_empty() {
                        v.push(Violation::new(
                            Rule::C7,
                            format!(
                                "when_idle #{waiter} resolved before quiescence: {}",
                                busy.join(", ")
                            ),
                        ));
                    }
                }
            }
            Event::ObserverPanicked { .. } => {}
            Event::DisposeBegan { prompts } => {
                s.disposed = true;
                for p in prompts {
                    s.queued.remove(p);
                }
                s.in_hand = None;
                s.steering.clear();
                s.marker = false;
            }
            Event::LoopExited => {}
        }
    }
    for (call, c) in &s.calls {
        if c.effective && (c.cleared.is_none() || !c.returned) {
            v.push(Violation::new(
                Rule::C9,
                format!(
                    "effective cancel #{call} did not complete (cleared: {}, returned: {})",
                    c.cleared.is_some(),
                    c.returned
                ),
            ));
        }
        if c.effective && c.requested.is_empty() {
            v.push(Violation::new(
                Rule::C1,
                format!("effective cancel #{call} never emitted agent/cancel-requested"),
            ));
        }
    }
    for (p, n) in &s.started {
        if *n > 1 {
            v.push(Violation::new(
                Rule::C5,
                format!("prompt p{p} started {n} times"),
            ));
        }
        if !s.ended.contains_key(p) {
            v.push(Violation::new(
                Rule::D3,
                format!("turn p{p} started but has no turn/end"),
            ));
        }
    }
    v
}

/// Check that the durable session log holds `turn/start`, `user/message`
/// and `turn/end` of every turn the journal started (D3), and nothing for a
/// prompt that never started (C4).
pub fn check_durable(journal: &[Record], durable: &[Entry]) -> Vec<Violation> {
    let mut v = Vec::new();
    // D10: after a storage failure the session refuses appends, so the
    // turns from the failed one on are not expected to be durable.
    let failed_from = journal.iter().find_map(|r| match r.event {
        Event::StorageFailed { prompt, .. } => Some(prompt),
        _ => None,
    });
    let started: BTreeSet<PromptId> = journal
        .iter()
        .filter_map(|r| match r.event {
            Event::TurnStart { prompt } => Some(prompt),
            _ => None,
        })
        .collect();
    for p in started
        .iter()
        .filter(|p| failed_from.is_none_or(|f| **p < f))
    {
        let has_end = durable
            .iter()
            .any(|e| matches!(e, Entry::TurnEnd { prompt, .. } if prompt == p));
        if !has_end {
            v.push(Violation::new(
                Rule::D3,
                format!("turn p{p}: turn/end is not durable"),
            ));
        }
    }
    for e in durable {
        if let Entry::UserMessage { prompt, .. } = e {
            if !started.contains(prompt) {
                v.push(Violation::new(
                    Rule::C4,
                    format!("user/message of p{prompt} logged without a turn"),
                ));
            }
        }
    }
    v
}
