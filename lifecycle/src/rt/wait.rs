//! [`Wait`]: what a parked task waits for, named once, as a value: its label
//! in stall and deadlock reports and the rule a deadlock breaks while it is
//! still parked.
//!
//! A deadlock (every task waiting, none able to wake another) breaks the
//! rule of the waits still parked in it, in this order: a step whose
//! signal fired and never reached it, C10 ([`Wait::STEP_SIGNAL`]); shared work that never finishes
//! for its waiters, D8 ([`Wait::TEARDOWN`], [`Wait::ACP_QUIESCE`],
//! [`Wait::SCOPE_UNLOAD`]); a `when_idle` that never resolves, C7
//! ([`Wait::WHEN_IDLE`]); a wait built with [`Wait::breaking`], its rule;
//! any other wait, none (the harness calls it a `progress` failure).

use crate::rules::Rule;

/// A named wait. Built from a label (`"turn start".into()`) when no rule
/// hangs on it, or one of the constants below when one does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Its name in stall and deadlock reports.
    pub label: &'static str,
    /// The rule a deadlock with this wait still parked breaks.
    pub breaks: Option<Rule>,
}

impl Wait {
    /// A wait no rule hangs on.
    pub const fn new(label: &'static str) -> Wait {
        Wait {
            label,
            breaks: None,
        }
    }

    /// A wait that a deadlock with it still parked breaks `rule` by (a
    /// scenario's own wait for shared work, say).
    pub const fn breaking(label: &'static str, rule: Rule) -> Wait {
        Wait {
            label,
            breaks: Some(rule),
        }
    }

    /// A step waiting for its turn's signal to fire: a cancel that has not
    /// come (no rule of its own).
    pub const TURN_CANCEL: Wait = Wait::new("the turn's cancel");
    /// A step waiting for a signal that fired and never reaches it (C10).
    pub const STEP_SIGNAL: Wait = Wait::breaking("step signal (C10)", Rule::C10);
    /// A caller of the memoized teardown (D8).
    pub const TEARDOWN: Wait = Wait::breaking("teardown (memoized)", Rule::D8);
    /// A caller of the bridge's quiesce (D8).
    pub const ACP_QUIESCE: Wait = Wait::breaking("acp quiesce", Rule::D8);
    /// A caller of a scope's unload (D8).
    pub const SCOPE_UNLOAD: Wait = Wait::breaking("scope unload", Rule::D8);
    /// A `when_idle` waiter (C7).
    pub const WHEN_IDLE: Wait = Wait::breaking("when_idle", Rule::C7);

    /// The rules a deadlock can break through its waits, in the order it
    /// is judged when waits of several are parked.
    pub const PRECEDENCE: [Rule; 3] = [Rule::C10, Rule::D8, Rule::C7];

    /// The rule a deadlock breaks whose parked waits break `breaks`: of
    /// those, the first in [`PRECEDENCE`](Self::PRECEDENCE), else any
    /// (`None`: no rule hangs on any of them).
    pub fn deadlock_breaks(breaks: impl IntoIterator<Item = Rule>) -> Option<Rule> {
        let rules: Vec<Rule> = breaks.into_iter().collect();
        Wait::PRECEDENCE
            .into_iter()
            .find(|r| rules.contains(r))
            .or_else(|| rules.first().copied())
    }
}

/// The labels of `waits`, comma-separated (for a report).
pub fn labels(waits: &[Wait]) -> String {
    waits.iter().map(|w| w.label).collect::<Vec<_>>().join(", ")
}

impl From<&'static str> for Wait {
    fn from(label: &'static str) -> Wait {
        Wait::new(label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaks(parked: &[Wait]) -> Option<Rule> {
        Wait::deadlock_breaks(parked.iter().filter_map(|w| w.breaks))
    }

    #[test]
    fn a_deadlock_breaks_the_rule_of_the_first_breaking_wait_parked() {
        let turn = Wait::new("turn start");
        assert_eq!(breaks(&[turn]), None);
        assert_eq!(breaks(&[turn, Wait::WHEN_IDLE]), Some(Rule::C7));
        assert_eq!(breaks(&[Wait::WHEN_IDLE, Wait::TEARDOWN]), Some(Rule::D8));
        assert_eq!(
            breaks(&[Wait::SCOPE_UNLOAD, Wait::STEP_SIGNAL]),
            Some(Rule::C10)
        );
        // A rule outside the precedence is still the deadlock's.
        assert_eq!(
            breaks(&[turn, Wait::breaking("a scenario's own", Rule::D3)]),
            Some(Rule::D3)
        );
    }
}
