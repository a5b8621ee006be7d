//! Reachability goals: counting, per checker, how often each scenario's race
//! windows (its "sometimes" goals, `crate::scenarios::goals`) were hit.
//!
//! Layer 0 (shared): imports nothing from `check`.

use super::checker::Checker;
use crate::scenarios::{Goal, Outcome, Scenario};
use serde::Serialize;

/// How often one goal was hit.
#[derive(Clone, Debug, Serialize)]
pub struct GoalHit {
    /// The goal's name.
    pub goal: &'static str,
    /// What it means.
    pub about: &'static str,
    /// Executions that hit it.
    pub hits: u64,
    /// Why this checker is not required to reach it, if it is not.
    pub excused: Option<&'static str>,
}

/// Counts goal hits over executions.
pub struct GoalTally {
    goals: std::borrow::Cow<'static, [Goal]>,
    hits: Vec<u64>,
    checker: Checker,
}

impl GoalTally {
    /// No hits yet for `scenario`'s goals under `checker`.
    pub fn new(scenario: &Scenario, checker: Checker) -> GoalTally {
        GoalTally {
            goals: scenario.goals.clone(),
            hits: vec![0; scenario.goals.len()],
            checker,
        }
    }

    /// Count the goals `outcome` hits.
    pub fn add(&mut self, outcome: &Outcome) {
        for (goal, hits) in self.goals.iter().zip(&mut self.hits) {
            if goal.hit(outcome) {
                *hits += 1;
            }
        }
    }

    /// Add hits counted elsewhere (a worker process), by goal name.
    pub fn merge(&mut self, name: &str, hits: u64) {
        if let Some(i) = self.goals.iter().position(|g| g.name == name) {
            self.hits[i] += hits;
        }
    }

    /// The counts.
    pub fn hits(&self) -> Vec<GoalHit> {
        self.goals
            .iter()
            .zip(&self.hits)
            .map(|(g, &hits)| GoalHit {
                goal: g.name,
                about: g.about,
                hits,
                excused: g
                    .excused
                    .iter()
                    .find(|(c, _)| *c == self.checker)
                    .map(|(_, why)| *why),
            })
            .collect()
    }
}
