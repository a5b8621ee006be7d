//! Rule oracles over the world journal: dispose (D1, D2, D3, D4) and
//! identity (R1, R3), for every execution of every scenario that uses the
//! registry, the store and scopes.
//!
//! A teardown's steps are D2's 1–5; where the provider drains the agent's
//! jobs (S7) the journal also holds one `TeardownDrain`, which must lie
//! after step 2 (the loop has exited) and before step 3 (the id is freed).
//! Whether the drain did its work is S7's, observed on the shell's side by
//! the scenarios.

use crate::oracle::Violation;
use crate::rules::Rule;
use crate::world::WorldEvent;
use std::collections::BTreeMap;

/// The rules [`check_world`] evaluates.
pub const WORLD_RULES: [&str; 6] = ["D1", "D2", "D3", "D4", "R1", "R3"];

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

/// Check the world journal.
pub fn check_world(events: &[WorldEvent]) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut teardowns: BTreeMap<(String, u64), Teardown> = BTreeMap::new();
    let mut refused: BTreeMap<u64, String> = BTreeMap::new();
    for (i, ev) in events.iter().enumerate() {
        match ev {
            WorldEvent::SessionEntered {
                id,
                serial,
                live_with_id,
            } if *live_with_id > 1 => v.push(Violation::new(
                Rule::R1,
                format!(
                    "session {id}#{serial} entered while {} live sessions had id {id:?}",
                    live_with_id - 1
                ),
            )),
            WorldEvent::AgentRegistered {
                id,
                serial,
                registered_with_id,
            } if *registered_with_id > 1 => v.push(Violation::new(
                Rule::R1,
                format!(
                    "agent {id}#{serial} registered beside {} other live agent(s) with its id",
                    registered_with_id - 1
                ),
            )),
            WorldEvent::CreateChecked {
                attempt,
                owner_active: false,
                id,
            } => {
                refused.insert(*attempt, id.clone());
            }
            WorldEvent::CreateFailed { attempt, .. } => {
                refused.remove(attempt);
            }
            WorldEvent::DisposeCalled { id, serial, .. } => {
                teardowns.entry((id.clone(), *serial)).or_default().calls += 1;
            }
            WorldEvent::DisposeReturned { id, serial, by } => {
                teardowns
                    .entry((id.clone(), *serial))
                    .or_default()
                    .returned
                    .push((i, by.clone()));
            }
            WorldEvent::TeardownBegan { id, serial } => teardowns
                .entry((id.clone(), *serial))
                .or_default()
                .began
                .push(i),
            WorldEvent::TeardownDone { id, serial } => teardowns
                .entry((id.clone(), *serial))
                .or_default()
                .done
                .push(i),
            WorldEvent::TeardownStep {
                id, serial, step, ..
            } => {
                let t = teardowns.entry((id.clone(), *serial)).or_default();
                t.steps.push(*step);
                t.step_at.push((*step, i));
            }
            WorldEvent::TeardownDrain { id, serial } => teardowns
                .entry((id.clone(), *serial))
                .or_default()
                .drains
                .push(i),
            WorldEvent::TeardownAborted {
                id,
                serial,
                at_step,
            } => teardowns.entry((id.clone(), *serial)).or_default().aborted = Some(*at_step),
            WorldEvent::AppendDropped { id, serial, entry } => v.push(Violation::new(
                Rule::D3,
                format!(
                    "session {id}#{serial} lost an append after its hooks were removed: {entry}"
                ),
            )),
            _ => {}
        }
    }
    for (attempt, id) in refused {
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
