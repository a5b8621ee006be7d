//! Contract views: what the contract can see of one execution, so that
//! "distinct outcomes" means the same under every checker and views can be
//! compared across checkers (differential coverage).
//!
//! A view is:
//! - the outcome label and the set of broken rules;
//! - the agent's journal, events only (no timestamps: virtual time exists on
//!   the simulator alone);
//! - the world journal in its topics' order ([`by_topic`]: where two
//!   events with no topic in common fall against each other is an
//!   interleaving, not an outcome), with each id's serials and attempt
//!   numbers renumbered by first appearance (they count creations, and
//!   bystanders take some), without the events of bystander agents (loom
//!   runs without them; their own rules, C5 and D5, are checked and show
//!   as broken rules).
//!
//! The key is the label, the rules and a 64-bit FNV-1a hash of the rest.
//! [`outcome_key`] is the finer key of one terminal state (whole journals,
//! the world's in its topics' order, no renumbering) that the exploration
//! tests count.
//!
//! Layer 0 (shared): imports nothing from `check`.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use super::checker::Checker;
use crate::events::LifecycleEvent;
use crate::fnv::Fnv;
use crate::oracle::RuleId;
use crate::scenarios::{Outcome, Scenario};
use crate::world::{by_topic, subject};

/// Renumbers values by first appearance: 0, 1, 2, ...
#[derive(Default)]
struct Renumber(BTreeMap<u64, u64>);

impl Renumber {
    fn map(&mut self, v: &mut u64) {
        let n = self.0.len() as u64;
        *v = *self.0.entry(*v).or_insert(n);
    }
}

/// `ev` with its serial and attempt renumbered.
fn normalized(
    ev: &LifecycleEvent,
    serials: &mut Renumber,
    attempts: &mut Renumber,
) -> LifecycleEvent {
    use LifecycleEvent as W;
    let mut ev = ev.clone();
    match &mut ev {
        W::CreateBegan { attempt, .. }
        | W::CreateChecked { attempt, .. }
        | W::CreateFailed { attempt, .. } => attempts.map(attempt),
        W::SessionEntered { serial, .. }
        | W::SessionRetired { serial, .. }
        | W::AgentRegistered { serial, .. }
        | W::AgentDetached { serial, .. }
        | W::DisposeCalled { serial, .. }
        | W::DisposeReturned { serial, .. }
        | W::TeardownBegan { serial, .. }
        | W::TeardownStep { serial, .. }
        | W::TeardownDrain { serial, .. }
        | W::TeardownAborted { serial, .. }
        | W::TeardownDone { serial, .. }
        | W::AppendDropped { serial, .. }
        | W::StorageFailed { serial, .. } => serials.map(serial),
        W::ListenerPanicked { .. }
        | W::Notice { .. }
        | W::ScopeUnloading { .. }
        | W::ScopeUnloaded { .. } => {}
    }
    ev
}

/// The contract view of `outcome`, an execution of `scenario`.
pub fn view_key(scenario: &Scenario, outcome: &Outcome) -> String {
    let bystanders = scenario.bystanders;
    let mut fnv = Fnv::new();
    for r in &outcome.journal {
        r.event.hash(&mut fnv);
    }
    // Serials and attempts count creations: renumbered per id, by first
    // appearance in the journal's order of each id's events.
    let mut numbers: BTreeMap<&str, (Renumber, Renumber)> = BTreeMap::new();
    for ev in by_topic(&outcome.world) {
        if subject(ev).is_some_and(|s| bystanders.contains(&s)) {
            continue;
        }
        // The ends of an id's holding are the oracle's input (R1), taken
        // inside the registry's and the store's locks; where they fall
        // among the other tasks' events is an interleaving, not an outcome
        // (the outcome, a second holder, shows as R1 among the rules).
        if matches!(
            ev,
            LifecycleEvent::SessionRetired { .. } | LifecycleEvent::AgentDetached { .. }
        ) {
            continue;
        }
        let (serials, attempts) = numbers.entry(subject(ev).unwrap_or("")).or_default();
        normalized(ev, serials, attempts).hash(&mut fnv);
    }
    let rules: BTreeSet<RuleId> = outcome.violations.iter().map(|v| v.rule).collect();
    format!(
        "{}|{}|{:016x}",
        outcome.label,
        rules
            .into_iter()
            .map(RuleId::name)
            .collect::<Vec<_>>()
            .join(","),
        fnv.finish()
    )
}

/// The key two runs share when they reach the same terminal state: the
/// label, the broken rules and a hash of both journals.
pub fn outcome_key(outcome: &Outcome) -> String {
    // FNV-1a over the derived `Hash` of both journals: deterministic across
    // runs and builds of one toolchain, and no rendering (JSON rendering
    // here is a large share of a simulator run in a profile).
    let mut fnv = Fnv::new();
    outcome.journal.hash(&mut fnv);
    by_topic(&outcome.world).hash(&mut fnv);
    let h = fnv.finish();
    let rules: BTreeSet<RuleId> = outcome.violations.iter().map(|v| v.rule).collect();
    format!(
        "{}|{}|{h:016x}",
        outcome.label,
        rules
            .into_iter()
            .map(RuleId::name)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// Views reached by other checkers of one scenario that `dfs` did not
/// reach: `(checker, view, replay line)`, in checker then view order.
pub fn missed_by<'a>(
    dfs: &BTreeMap<String, String>,
    others: impl IntoIterator<Item = (Checker, &'a BTreeMap<String, String>)>,
) -> Vec<(Checker, String, String)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (checker, views) in others {
        for (view, line) in views {
            if !dfs.contains_key(view) && seen.insert(view.clone()) {
                out.push((checker, view.clone(), line.clone()));
            }
        }
    }
    out
}
