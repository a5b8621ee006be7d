//! Rule oracles over the world journal: dispose (D1, D2, D3, D4) and
//! identity (R1, R3), for every execution of every scenario that uses the
//! registry, the store and scopes.
//!
//! A teardown's steps are D2's 1–5; where the provider drains the agent's
//! jobs (S7) the journal also holds one `TeardownDrain`, which must lie
//! after step 2 (the loop has exited) and before step 3 (the id is freed).
//! Whether the drain did its work is S7's, observed on the shell's side by
//! the scenarios.
//!
//! Every order read here is within one of the journal's topics (see
//! [`crate::world`]): a teardown's steps, its drain and its callers'
//! returns are one id's events; R1 reads an id's entries against the ends
//! of its holding, which write no topic but are numbered inside the
//! store's and the registry's locks, as the entries are (that lock's
//! order); R3's `session-entered` against `scope-unloading` is the
//! entries topic.
//! Where events of different topics fall against each other is a
//! schedule's choice the search need not run both ways, so no verdict
//! may depend on it.

use crate::events::LifecycleEvent;
use crate::oracle::Violation;
use crate::rules::Rule;
use std::collections::{BTreeMap, BTreeSet};

/// The rules [`check_world`] evaluates.
pub const WORLD_RULES: [Rule; 6] = [Rule::D1, Rule::D2, Rule::D3, Rule::D4, Rule::R1, Rule::R3];

#[derive(Default)]
struct Teardown {
    began: Vec<usize>,
    done: Vec<usize>,
    steps: Vec<u8>,
    /// Journal positions of each step, and of the drain.
    step_at: Vec<(u8, usize)>,
    drains: Vec<usize>,
    aborted: Option<u8>,
    calls: usize,
    returned: Vec<(usize, String)>,
}

/// The sessions and the registered agents the journal shows live, per id:
/// R1 recomputed from what happened, not from a count production kept.
#[derive(Default)]
struct Live {
    sessions: Holders,
    agents: Holders,
}

/// Serials holding each id.
#[derive(Default)]
struct Holders(BTreeMap<String, BTreeSet<u64>>);

impl Holders {
    /// `(id, serial)` took the id: an R1 violation if another holder
    /// had it then. `noun` and `verb` word the message.
    fn enter(&mut self, id: &str, serial: u64, noun: &str, verb: &str) -> Option<Violation> {
        let held = self.0.entry(id.to_string()).or_default();
        let others = held.iter().filter(|s| **s != serial).count();
        held.insert(serial);
        (others > 0).then(|| {
            Violation::new(
                Rule::R1,
                format!("{noun} {id}#{serial} {verb} while {others} live {noun}(s) held id {id:?}"),
            )
        })
    }

    /// `(id, serial)` let the id go.
    fn leave(&mut self, id: &str, serial: u64) {
        if let Some(held) = self.0.get_mut(id) {
            held.remove(&serial);
        }
    }
}

/// Check the world journal.
pub fn check_world(events: &[LifecycleEvent]) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut teardowns: BTreeMap<(String, u64), Teardown> = BTreeMap::new();
    let mut refused: BTreeSet<(String, u64)> = BTreeSet::new();
    let mut live = Live::default();
    for (i, ev) in events.iter().enumerate() {
        match ev {
            LifecycleEvent::SessionEntered { id, serial } => {
                v.extend(live.sessions.enter(id, *serial, "session", "entered"));
            }
            LifecycleEvent::SessionRetired { id, serial } => live.sessions.leave(id, *serial),
            LifecycleEvent::AgentRegistered { id, serial } => {
                v.extend(live.agents.enter(id, *serial, "agent", "registered"));
            }
            LifecycleEvent::AgentDetached { id, serial } => live.agents.leave(id, *serial),
            LifecycleEvent::CreateChecked {
                attempt,
                owner_active: false,
                id,
            } => {
                refused.insert((id.clone(), *attempt));
            }
            LifecycleEvent::CreateFailed { id, attempt, .. } => {
                refused.remove(&(id.clone(), *attempt));
            }
            LifecycleEvent::DisposeCalled { id, serial, .. } => {
                teardowns.entry((id.clone(), *serial)).or_default().calls += 1;
            }
            LifecycleEvent::DisposeReturned { id, serial, by } => {
                teardowns
                    .entry((id.clone(), *serial))
                    .or_default()
                    .returned
                    .push((i, by.clone()));
            }
            LifecycleEvent::TeardownBegan { id, serial } => teardowns
                .entry((id.clone(), *serial))
                .or_default()
                .began
                .push(i),
            LifecycleEvent::TeardownDone { id, serial } => teardowns
                .entry((id.clone(), *serial))
                .or_default()
                .done
                .push(i),
            LifecycleEvent::TeardownStep {
                id, serial, step, ..
            } => {
                let t = teardowns.entry((id.clone(), *serial)).or_default();
                t.steps.push(*step);
                t.step_at.push((*step, i));
            }
            LifecycleEvent::TeardownDrain { id, serial } => teardowns
                .entry((id.clone(), *serial))
                .or_default()
                .drains
                .push(i),
            LifecycleEvent::TeardownAborted {
                id,
                serial,
                at_step,
            } => teardowns.entry((id.clone(), *serial)).or_default().aborted = Some(*at_step),
            LifecycleEvent::AppendDropped { id, serial, entry } => v.push(Violation::new(
                Rule::D3,
                format!(
                    "session {id}#{serial} lost an append after its hooks were removed: {entry}"
                ),
            )),
            _ => {}
        }
    }
    for (id, attempt) in refused {
        v.push(Violation::new(
            Rule::R3,
            format!("creation #{attempt} of {id:?} saw its owner unloading and did not fail"),
        ));
    }
    for ((id, serial), t) in &teardowns {
        let who = format!("{id}#{serial}");
        if t.began.len() > 1 {
            v.push(Violation::new(
                Rule::D1,
                format!("teardown of {who} ran {} times", t.began.len()),
            ));
        }
        if t.calls > 0 && t.began.is_empty() {
            v.push(Violation::new(
                Rule::D1,
                format!("dispose of {who} was called but no teardown ran"),
            ));
        }
        // A teardown starts only inside a dispose call (the first caller's);
        // one with no call recorded means the calls went unobserved, and
        // every D1 check of who returned when would pass on no evidence.
        if t.calls == 0 && !t.began.is_empty() {
            v.push(Violation::new(
                Rule::D1,
                format!("teardown of {who} began with no dispose call recorded"),
            ));
        }
        let done_at = t.done.first().copied();
        for (at, by) in &t.returned {
            if done_at.is_none_or(|d| *at < d) {
                v.push(Violation::new(
                    Rule::D1,
                    format!("dispose of {who} by {by} resolved before its teardown finished"),
                ));
            }
        }
        if let Some(step) = t.aborted {
            v.push(Violation::new(
                Rule::D4,
                format!("teardown of {who} was aborted at step {step}; later steps skipped"),
            ));
        } else if !t.began.is_empty() && !t.done.is_empty() {
            let mut sorted = t.steps.clone();
            sorted.sort_unstable();
            if sorted != [1, 2, 3, 4, 5] {
                v.push(Violation::new(
                    Rule::D4,
                    format!("teardown of {who} ran steps {:?}, not 1–5", t.steps),
                ));
            } else if t.steps != [1, 2, 3, 4, 5] {
                v.push(Violation::new(
                    Rule::D2,
                    format!("teardown of {who} ran steps in order {:?}", t.steps),
                ));
            }
        }
        if t.drains.len() > 1 {
            v.push(Violation::new(
                Rule::D1,
                format!("the drain of {who} ran {} times", t.drains.len()),
            ));
        }
        if let Some(&d) = t.drains.first() {
            let at = |n: u8| t.step_at.iter().find(|(s, _)| *s == n).map(|(_, i)| *i);
            if at(2).is_none_or(|i| i > d) || at(3).is_some_and(|i| i < d) {
                v.push(Violation::new(
                    Rule::D2,
                    format!(
                        "the drain of {who} ran outside the window after step 2 and before step 3 (steps {:?})",
                        t.steps
                    ),
                ));
            }
        }
    }
    v
}

/// R3, observed: whether a session of `id` was entered (the store's
/// `session-entered`, journaled under the store's lock) after `scope`
/// began to unload (its `scope-unloading`, journaled under the scope's
/// lock as it flips), whatever the creation reported.
pub fn entered_after_unloading(events: &[LifecycleEvent], scope: &str, id: &str) -> bool {
    let unloading = events
        .iter()
        .position(|e| matches!(e, LifecycleEvent::ScopeUnloading { scope: s } if s == scope));
    unloading.is_some_and(|u| {
        events[u..]
            .iter()
            .any(|e| matches!(e, LifecycleEvent::SessionEntered { id: i, .. } if i == id))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use LifecycleEvent as E;

    fn entered(id: &str, serial: u64) -> E {
        E::SessionEntered {
            id: id.into(),
            serial,
        }
    }
    fn retired(id: &str, serial: u64) -> E {
        E::SessionRetired {
            id: id.into(),
            serial,
        }
    }
    fn registered(id: &str, serial: u64) -> E {
        E::AgentRegistered {
            id: id.into(),
            serial,
        }
    }
    fn detached(id: &str, serial: u64) -> E {
        E::AgentDetached {
            id: id.into(),
            serial,
        }
    }
    fn r1(events: &[E]) -> Vec<String> {
        check_world(events)
            .into_iter()
            .filter(|v| v.rule == crate::oracle::RuleId::Spec(Rule::R1))
            .map(|v| v.message)
            .collect()
    }

    /// R1 is recomputed from entries and ends: an id reused after its
    /// holder let it go is fine; a second holder while the first is live
    /// is not, for sessions and for registered agents alike.
    #[test]
    fn r1_counts_holders_from_entries_and_ends() {
        let reuse = [
            entered("a", 1),
            registered("a", 1),
            detached("a", 1),
            retired("a", 1),
            entered("a", 2),
            registered("a", 2),
        ];
        assert!(r1(&reuse).is_empty(), "{:?}", r1(&reuse));
        let twice = [entered("a", 1), entered("a", 2), entered("b", 3)];
        let found = r1(&twice);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("a#2") && found[0].contains("1 live"),
            "{found:?}"
        );
        // The registry's side on its own: the session ended, the agent
        // entry stayed (a stale detach removed nothing).
        let stale = [
            entered("a", 1),
            registered("a", 1),
            retired("a", 1),
            entered("a", 2),
            registered("a", 2),
        ];
        let found = r1(&stale);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("agent a#2"), "{found:?}");
        // Another serial's end does not free the id.
        let wrong_end = [entered("a", 1), retired("a", 7), entered("a", 2)];
        assert_eq!(r1(&wrong_end).len(), 1);
    }
}
