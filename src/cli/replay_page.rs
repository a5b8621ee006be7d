//! The page of `replay --html` (see `check::html`): what the replay
//! holds, gathered from its trace, its events and its outcome, and what a
//! replay of each checker does not record, in words.

use super::{Anchor, Seen};
use crate::check::html;
use crate::check::replay::Replayed;
use crate::check::{Checker, ReplayLine};
use crate::trace::Target;
use std::collections::BTreeMap;

/// The page of one replay: `anchor` its violating step, `labels` the
/// swimlane's notes per poll, `title` its heading.
pub(super) fn render(
    parsed: &ReplayLine,
    replayed: &Replayed,
    seen: &[Seen],
    anchor: Option<&Anchor>,
    labels: &BTreeMap<usize, Vec<String>>,
    title: &str,
) -> String {
    let mut notes = vec![format!("outcome: {}", replayed.outcome.label)];
    if let (Some(step), Some((followed, total))) = (replayed.diverged_at, replayed.plan_followed) {
        notes.push(format!("diverged: the plan stopped fitting at step {step} after {followed} of {total} choices; the seeded scheduler continued from there"));
    }
    let page = html::ReplayPage {
        title: title.to_string(),
        checker: parsed.checker.to_string(),
        command: format!("{} replay '{parsed}'", super::super::args::program()),
        trace: &replayed.trace,
        labels,
        anchor: anchor.map(|a| html::Anchor {
            index: a.index,
            rule: a.rule.name().to_string(),
            why: a.why.clone(),
        }),
        violations: replayed
            .outcome
            .violations
            .iter()
            .map(|v| html::Violation {
                rule: v.rule.name().to_string(),
                message: v.message.clone(),
            })
            .collect(),
        events: events(parsed, replayed, seen),
        missing: missing(parsed.checker),
        notes,
    };
    html::render(&page)
}

/// What a replay of `checker` does not record, in words (none for
/// simulator lines, whose trace has every poll).
fn missing(checker: Checker) -> Vec<String> {
    let no_trace = "no swimlane or step slider, no footprints, ready sets or preemptions, and no violating step to point at";
    match checker {
        Checker::Sim | Checker::SimDfs => Vec::new(),
        Checker::Loom => vec![
            format!("loom replays record no per-poll trace: {no_trace}."),
            "The journals and the world journal come from loom's worker process with the outcome, without the step that wrote each record.".into(),
        ],
        Checker::Tokio => vec![
            format!("tokio replays re-run the production runtime, which records no schedule: {no_trace}."),
            "The journals come with the outcome, without the step that wrote each record; the re-run may not be the run that failed.".into(),
        ],
        Checker::ShuttleRandom | Checker::ShuttlePct | Checker::ShuttleDfs => vec![
            format!("shuttle replays record no per-poll trace: {no_trace}."),
            "Journal records, world events and failed checks are listed in the order the run emitted them, without the step that emitted them.".into(),
        ],
    }
}

/// The events of the page: for a traced run, every journal record, world
/// event and failed check with the poll that emitted it; for loom and
/// tokio, the journals and world journal their outcome carries.
fn events(parsed: &ReplayLine, replayed: &Replayed, seen: &[Seen]) -> Vec<html::Event> {
    let index_of =
        |step: Option<u64>| step.and_then(|st| replayed.trace.iter().position(|t| t.step == st));
    if !matches!(parsed.checker, Checker::Loom | Checker::Tokio) {
        return seen
            .iter()
            .filter_map(|s| {
                let (kind, who) = match s.target? {
                    Target::Journal => (Target::JOURNAL, s.agent.clone()),
                    Target::World => (Target::WORLD, None),
                    Target::Check => (Target::CHECK, s.rule.clone()),
                    _ => return None,
                };
                let text = match (kind, s.seq) {
                    (Target::JOURNAL, Some(seq)) => {
                        format!("#{seq} t={}ms {}", s.at_ms.unwrap_or(0), s.message)
                    }
                    _ => s.message.clone(),
                };
                Some(html::Event {
                    index: index_of(s.step),
                    kind,
                    who,
                    text,
                })
            })
            .collect();
    }
    let mut events = Vec::new();
    for (agent, lines) in &replayed.journals {
        events.extend(lines.iter().map(|l| html::Event {
            index: None,
            kind: Target::JOURNAL,
            who: Some(agent.clone()),
            text: l.clone(),
        }));
    }
    if replayed.journals.is_empty() {
        events.extend(replayed.journal.iter().map(|l| html::Event {
            index: None,
            kind: Target::JOURNAL,
            who: None,
            text: l.clone(),
        }));
    }
    events.extend(replayed.outcome.world.iter().map(|e| html::Event {
        index: None,
        kind: Target::WORLD,
        who: None,
        text: serde_json::to_string(e).unwrap_or_default(),
    }));
    events
}
