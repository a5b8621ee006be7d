//! The simulator checker: one seeded random schedule per seed.

use super::{Checker, ReplayLine, Report, Tally};
use crate::faults::Faults;
use crate::oracle::Violation;
use crate::rt::SimRt;
use crate::scenarios::{self, Outcome, ScenarioId};
use lifecycle_sim::{Sim, SimError};

/// Run one execution with `seed`, keeping the scheduling trace. A stall or
/// a panic becomes a violation.
pub fn run_seed(scenario: ScenarioId, faults: Faults, seed: u64) -> (Outcome, Sim) {
    run(scenario, faults, seed, true)
}

fn run(scenario: ScenarioId, faults: Faults, seed: u64, trace: bool) -> (Outcome, Sim) {
    let mut sim = Sim::with_seed(seed);
    sim.set_trace(trace);
    let outcome = match sim.block_on(scenarios::run::<SimRt>(scenario, faults)) {
        Ok(outcome) => outcome,
        Err(e) => sim_error_outcome(&e),
    };
    (outcome, sim)
}

/// A simulator error as a failed outcome.
pub fn sim_error_outcome(e: &SimError) -> Outcome {
    let rule = match e {
        SimError::Stalled(report) if report.to_string().contains("when_idle") => "C7",
        SimError::Stalled(_) => "progress",
        SimError::StepLimit { .. } => "progress",
        SimError::TaskPanicked { .. } => "panic",
    };
    Outcome {
        violations: vec![Violation::new(rule, e.to_string())],
        label: "error".into(),
        invariants: 1,
        journal: Vec::new(),
        world: Vec::new(),
    }
}

/// Explore seeds `0..seeds`.
pub fn explore(scenario: ScenarioId, faults: Faults, seeds: u64, stop_at_first: bool) -> Report {
    let mut tally = Tally::new(scenario, Checker::Sim, faults);
    for seed in 0..seeds {
        let (outcome, _) = run(scenario, faults, seed, false);
        let failed = tally.add(&outcome, || {
            ReplayLine::new(scenario, Checker::Sim, faults, format!("seed={seed}")).to_string()
        });
        if failed && stop_at_first {
            break;
        }
    }
    tally.finish()
}
