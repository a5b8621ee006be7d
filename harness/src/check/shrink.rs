//! Shrinking a failing simulator run, and the determinism self-check.
//!
//! A failing run is its *plan*: the task chosen at each decision with more
//! than one ready task. Shrinking looks for a plan whose run breaks the SAME
//! rule and is smaller in the order (preemptions, steps): fewest preemptions
//! first, then shortest. Candidates, tried greedily until none improves:
//!
//! 0. first, the exhaustive search around the failing scenario: sim-dfs at
//!    preemption bound 0, 1, 2, ... (below the run's own count, up to
//!    [`BOUNDED_MAX`], at most [`BOUNDED_BUDGET`] schedules each), whose
//!    first run that breaks the rule has the fewest preemptions that
//!    search can reach (iterative preemption bounding, as CHESS does);
//! 1. a prefix of the plan, continued by a scheduler that never preempts
//!    (cuts every later preemption at once);
//! 2. the plan with one preempting choice replaced by the task it preempted
//!    (removes that preemption and keeps the rest of the plan).
//!
//! Every candidate is a real run, so the result always reproduces; its plan
//! is the recorded one of that run, replayable strictly.
//!
//! Layer 2 (sim runs): imports only `sim_run`.

use super::sim_run::{run_plan, run_scheduled};
use crate::faults::Faults;
use crate::oracle::RuleId;
use crate::scenarios::Scenario;
use lifecycle_sim::{
    Dfs, DfsConfig, ExecKind, GuidedScheduler, NonPreemptiveScheduler, TaskId, TraceEntry,
};

/// The highest preemption bound the bounded search of a shrink tries.
pub const BOUNDED_MAX: u32 = 4;
/// Schedules the bounded search of a shrink runs at each bound.
pub const BOUNDED_BUDGET: u64 = 2_000;

/// One failing run.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its plan.
    pub plan: Vec<TaskId>,
    /// Preemptions.
    pub preemptions: u32,
    /// Steps.
    pub steps: u64,
}

impl Candidate {
    fn better_than(&self, other: &Candidate) -> bool {
        (self.preemptions, self.steps, self.plan.len())
            < (other.preemptions, other.steps, other.plan.len())
    }
}

/// The result of shrinking.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The run as found.
    pub original: Candidate,
    /// The smallest run found that breaks the same rule (the original when
    /// nothing smaller does: see [`Shrunk::reduced`]).
    pub minimal: Candidate,
    /// Runs tried.
    pub attempts: u32,
}

impl Shrunk {
    /// Whether shrinking found a smaller run: fewer preemptions, or as
    /// many and fewer steps or plan choices. When it did not, the run as
    /// found is already minimal for this shrinker, and a report should say
    /// so rather than print the same line twice.
    pub fn reduced(&self) -> bool {
        self.minimal.better_than(&self.original)
    }
}

/// Run a (possibly partial) plan, continued without preemptions; the run if
/// it breaks `rule`. Also returns, per plan entry, the task it preempted.
fn attempt(
    scenario: &Scenario,
    faults: Faults,
    seed: u64,
    untimed: bool,
    plan: &[TaskId],
    rule: RuleId,
) -> Option<(Candidate, Vec<Option<TaskId>>)> {
    let guided = GuidedScheduler::new(
        plan.to_vec(),
        seed,
        false,
        Box::new(NonPreemptiveScheduler::default()),
    );
    let run = run_scheduled(scenario, faults, Box::new(guided), untimed, true);
    if !run.outcome.violations.iter().any(|v| v.rule == rule) {
        return None;
    }
    let preempted = run
        .sim
        .trace()
        .iter()
        .filter(|t| t.ready > 1)
        .map(|t| t.preempted)
        .collect();
    Some((
        Candidate {
            plan: run.sim.choices().to_vec(),
            preemptions: run.sim.preemptions(),
            steps: run.sim.steps(),
        },
        preempted,
    ))
}

/// A failing run and, per plan entry, the task it preempted.
type Found = (Candidate, Vec<Option<TaskId>>);

/// The first run of sim-dfs at preemption bound `bound` that breaks
/// `rule`, within [`BOUNDED_BUDGET`] schedules, replayed through the
/// guided path with value stream `seed` (so that its line replays it);
/// and the schedules run.
fn bounded(
    scenario: &Scenario,
    faults: Faults,
    seed: u64,
    untimed: bool,
    rule: RuleId,
    bound: u32,
) -> (Option<Found>, u32) {
    let mut dfs = Dfs::new(DfsConfig {
        preemption_bound: Some(bound),
        ..DfsConfig::default()
    });
    let mut runs = 0;
    while let Some(scheduler) = dfs.next_scheduler() {
        if runs >= BOUNDED_BUDGET {
            break;
        }
        runs += 1;
        let run = run_scheduled(scenario, faults, scheduler, untimed, false);
        let complete = dfs.end_execution() == ExecKind::Complete;
        if complete && run.outcome.violations.iter().any(|v| v.rule == rule) {
            let plan = run.sim.choices().to_vec();
            if let Some(found) = attempt(scenario, faults, seed, untimed, &plan, rule) {
                return (Some(found), runs as u32);
            }
        }
    }
    (None, runs as u32)
}

/// Shrink the failing run `plan` (value stream `seed`) that broke `rule`.
pub fn shrink(
    scenario: &Scenario,
    faults: Faults,
    seed: u64,
    untimed: bool,
    plan: &[TaskId],
    rule: RuleId,
) -> Shrunk {
    let original = run_plan(scenario, faults, seed, untimed, plan, true);
    let original_c = Candidate {
        plan: original.sim.choices().to_vec(),
        preemptions: original.sim.preemptions(),
        steps: original.sim.steps(),
    };
    let Some((mut best, mut preempted)) = attempt(scenario, faults, seed, untimed, plan, rule)
    else {
        // The plan does not reproduce through the non-strict path (it
        // should); keep the original.
        return Shrunk {
            minimal: original_c.clone(),
            original: original_c,
            attempts: 1,
        };
    };
    if original_c.better_than(&best) {
        best = original_c.clone();
    }
    let mut attempts = 1;
    // 0. The bounded search, shallowest bound first.
    for bound in 0..best.preemptions.min(BOUNDED_MAX + 1) {
        let (found, runs) = bounded(scenario, faults, seed, untimed, rule, bound);
        attempts += runs;
        if let Some((c, p)) = found {
            if c.better_than(&best) {
                best = c;
                preempted = p;
            }
            break;
        }
    }
    'improve: for _round in 0..64 {
        // 1. Prefixes, shortest first.
        for k in 0..best.plan.len() {
            attempts += 1;
            if let Some((c, p)) = attempt(scenario, faults, seed, untimed, &best.plan[..k], rule) {
                if c.better_than(&best) {
                    best = c;
                    preempted = p;
                    continue 'improve;
                }
            }
        }
        // 2. Drop one preemption, latest first.
        for i in (0..best.plan.len()).rev() {
            let Some(Some(victim)) = preempted.get(i).copied() else {
                continue;
            };
            let mut plan = best.plan.clone();
            plan[i] = victim;
            attempts += 1;
            if let Some((c, p)) = attempt(scenario, faults, seed, untimed, &plan, rule) {
                if c.better_than(&best) {
                    best = c;
                    preempted = p;
                    continue 'improve;
                }
            }
        }
        break;
    }
    Shrunk {
        original: original_c,
        minimal: best,
        attempts,
    }
}

/// Replay `plan` twice with the full trace and compare both trace hashes
/// with each other and with `expected` (the hash of the run as found).
///
/// # Errors
/// A description of the nondeterminism: the hashes, and the first trace
/// entry where the two replays differ.
pub fn self_check(
    scenario: &Scenario,
    faults: Faults,
    seed: u64,
    untimed: bool,
    plan: &[TaskId],
    expected: u64,
) -> Result<u64, String> {
    let a = run_plan(scenario, faults, seed, untimed, plan, true);
    let b = run_plan(scenario, faults, seed, untimed, plan, true);
    let (ha, hb) = (a.sim.trace_hash(), b.sim.trace_hash());
    if ha == hb && ha == expected {
        return Ok(ha);
    }
    let first = first_difference(a.sim.trace(), b.sim.trace());
    Err(format!(
        "nondeterminism: the same schedule gave trace hashes {expected:016x} (found), {ha:016x} and {hb:016x} (replays); {first}"
    ))
}

fn first_difference(a: &[TraceEntry], b: &[TraceEntry]) -> String {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            return format!("first differing event #{i}: `{x}` vs `{y}`");
        }
    }
    if a.len() != b.len() {
        return format!(
            "the replays differ in length ({} vs {} polls) after an identical prefix",
            a.len(),
            b.len()
        );
    }
    "the replays agree with each other but not with the run as found".to_string()
}
