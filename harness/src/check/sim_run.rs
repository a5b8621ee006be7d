//! Running a scenario on the simulator: one execution under a scheduler
//! ([`run_scheduled`]) or along a recorded plan ([`run_plan`]), the
//! portfolio's schedulers, and the check of a simulator replay line's plan
//! against its run ([`check_plan`]).
//!
//! Layer 2 (sim runs): imports only the replay line format (layer 1).

use super::replay_line::{Payload, ReplayError, ReplayLine, SimPayload};
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::rt::SimRt;
use crate::scenarios::{self, Granularity, Outcome, Scenario};
use lifecycle_sim::{
    GuidedScheduler, PctScheduler, RandomScheduler, Scheduler, Sim, SimError, TaskId,
    DEFAULT_MAX_STEPS,
};

/// One execution on the simulator.
pub struct SimRun {
    /// Its outcome.
    pub outcome: Outcome,
    /// The simulator after the run (decisions, plan, trace, hash).
    pub sim: Sim,
}

/// Run `scenario` once under `scheduler`; with `trace`, keep the full trace
/// and emit `tracing` spans per poll. A stall or a panic becomes a violation.
pub fn run_scheduled(
    scenario: &Scenario,
    faults: Faults,
    scheduler: Box<dyn Scheduler>,
    untimed: bool,
    trace: bool,
) -> SimRun {
    let mut sim = Sim::new(scheduler, DEFAULT_MAX_STEPS);
    sim.set_trace(trace);
    sim.set_untimed(untimed);
    sim.set_preemptive(scenario.granularity == Granularity::Lock);
    sim.set_coarse_points(scenario.bounds.dfs.is_none());
    let outcome = match sim.block_on(scenarios::run::<SimRt>(scenario, faults)) {
        Ok(outcome) => outcome,
        Err(e) => sim_error_outcome(&e),
    };
    SimRun { outcome, sim }
}

/// Follow `plan` exactly (strict): the replay of a recorded run. After a
/// divergence the seeded random scheduler of `seed` continues.
pub fn run_plan(
    scenario: &Scenario,
    faults: Faults,
    seed: u64,
    untimed: bool,
    plan: &[TaskId],
    trace: bool,
) -> SimRun {
    let fallback = Box::new(RandomScheduler::new(seed));
    let guided = GuidedScheduler::new(plan.to_vec(), seed, true, fallback);
    run_scheduled(scenario, faults, Box::new(guided), untimed, trace)
}

/// A simulator error as a failed outcome.
pub fn sim_error_outcome(e: &SimError) -> Outcome {
    let rule = match e {
        SimError::Stalled(report) => crate::scenarios::deadlock_rule_of(
            report
                .blocked
                .iter()
                .filter_map(|t| crate::rules::Rule::from_index(t.tag? as usize)),
        ),
        SimError::StepLimit { .. } | SimError::Abandoned { .. } => RuleId::Progress,
        SimError::TaskPanicked { .. } => RuleId::Panic,
        SimError::Footprint { .. } => RuleId::Footprint,
    };
    Outcome {
        violations: vec![Violation::new(rule, e.to_string())],
        label: "error".into(),
        fact: None,
        invariants: 1,
        journal: Vec::new(),
        world: Vec::new(),
    }
}

/// The portfolio's run for `seed`: even seeds random, odd seeds PCT with
/// depth `1 + (seed / 4) % pct_depth` and change points over `expected`
/// branching decisions; seeds `4k, 4k+1` keep virtual time, seeds
/// `4k+2, 4k+3` run untimed (every sleep an arbitrary delay). Returns the
/// scheduler and whether the run is untimed.
pub fn portfolio_scheduler(
    seed: u64,
    pct_depth: usize,
    expected: [u64; 2],
) -> (Box<dyn Scheduler>, bool) {
    let untimed = seed % 4 >= 2;
    let scheduler: Box<dyn Scheduler> = if seed % 2 == 0 {
        Box::new(RandomScheduler::new(seed))
    } else {
        let depth = 1 + (seed / 4) % pct_depth.max(1) as u64;
        Box::new(PctScheduler::new(
            seed,
            depth as u32,
            expected[usize::from(untimed)],
        ))
    };
    (scheduler, untimed)
}

/// Branching decisions of one random run of `scenario` (PCT's `k`), timed
/// and untimed.
pub fn expected_branches(scenario: &Scenario, faults: Faults) -> [u64; 2] {
    [false, true].map(|untimed| {
        let run = run_scheduled(
            scenario,
            faults,
            Box::new(RandomScheduler::new(0)),
            untimed,
            false,
        );
        run.sim.choices().len().max(1) as u64
    })
}

/// Check a simulator line's plan against the run it names, before it
/// is replayed for show: the plan is followed once (untraced, a few
/// milliseconds), and every choice must name a task that exists and is
/// ready there, and the run must use the whole plan. A task the run
/// never spawns is named as such, with the run's task count (a count
/// measured by other runs would not do: how many tasks a scenario
/// spawns can depend on the schedule and the fault). Lines of other
/// checkers pass.
///
/// # Errors
/// One line naming the field, the choice and the task.
pub fn check_plan(line: &ReplayLine) -> Result<(), ReplayError> {
    let Payload::Sim(SimPayload {
        seed,
        untimed,
        plan,
    }) = line.payload()
    else {
        return Ok(());
    };
    let run = run_plan(&line.scenario, line.faults(), *seed, *untimed, plan, false);
    if run.sim.diverged_at().is_none() {
        return Ok(());
    }
    let tasks = run.sim.task_count();
    let chosen = run.sim.choices();
    let i = plan
        .iter()
        .zip(chosen)
        .position(|(p, c)| p != c)
        .unwrap_or_else(|| chosen.len().min(plan.len()));
    let name = line.scenario.name;
    Err(ReplayError(match plan.get(i) {
        Some(&t) if t >= tasks => format!(
            "field `plan` names task {t} at choice {i}, but this run of {name} has {tasks} tasks (ids 0 to {})",
            tasks.saturating_sub(1)
        ),
        Some(&t) if i < chosen.len() => format!(
            "field `plan` does not fit {name}: choice {i} names task {t}, which is not ready there"
        ),
        Some(_) => format!(
            "field `plan` does not fit {name}: the run ends after {i} of its {} choices",
            plan.len()
        ),
        None => format!(
            "field `plan` does not fit {name}: its {} choices end before the run does",
            plan.len()
        ),
    }))
}
