//! Replaying a line: [`ReplayLine::replay`] runs the one execution a line
//! names, on the checker that found it, and returns what it did
//! ([`Replayed`]).
//!
//! The line format itself (parse, print, payloads, limits, fingerprints)
//! is `super::replay_line`'s, re-exported here so that `check::replay::…`
//! names the whole of it.
//!
//! Layer 4 (dispatch): with `dispatch`, the only files that import every
//! checker.

pub use super::replay_line::{
    decode_plan, encode_plan, fingerprint, limits, Payload, ReplayError, ReplayLine,
    BUILD_FINGERPRINT,
};

use super::journal_tap::AgentJournal;
use super::sim_run::run_plan;
use super::{loom_check, shuttle_check, tokio_check};
use crate::scenarios::Outcome;
use lifecycle_sim::TraceEntry;

impl ReplayLine {
    /// Run the execution this line names. `trace` keeps the simulator's full
    /// trace (and its `tracing` spans).
    pub fn replay(&self) -> Result<Replayed, ReplayError> {
        let faults = self.faults();
        let mut replayed = Replayed {
            outcome: Outcome::default(),
            journal: Vec::new(),
            journals: Vec::new(),
            trace: Vec::new(),
            trace_hash: None,
            diverged_at: None,
            plan_followed: None,
        };
        match self.payload() {
            Payload::Sim {
                seed,
                untimed,
                plan,
            } => {
                let run = run_plan(&self.scenario, faults, *seed, *untimed, plan, true);
                replayed.trace = run.sim.trace().to_vec();
                replayed.trace_hash = Some(run.sim.trace_hash());
                replayed.diverged_at = run.sim.diverged_at();
                let followed = match run.sim.diverged_at() {
                    None => plan.len(),
                    Some(step) => run
                        .sim
                        .trace()
                        .iter()
                        .filter(|t| t.step < step && t.ready > 1)
                        .count()
                        .min(plan.len()),
                };
                replayed.plan_followed = Some((followed, plan.len()));
                replayed.outcome = run.outcome;
            }
            Payload::Loom { exec, pb } => {
                let (outcome, journal, journals) =
                    loom_check::replay(&self.scenario, faults, *exec, *pb).map_err(ReplayError)?;
                replayed.outcome = outcome;
                replayed.journal = journal;
                replayed.journals = journals;
                return Ok(replayed);
            }
            Payload::Shuttle { schedule } => {
                replayed.outcome =
                    shuttle_check::replay(&self.scenario, faults, schedule).map_err(ReplayError)?;
            }
            Payload::Tokio { runs } => {
                (replayed.outcome, replayed.journals) =
                    tokio_check::rerun(&self.scenario, faults, *runs);
            }
        }
        replayed.journal = replayed
            .outcome
            .journal
            .iter()
            .map(|r| r.to_string())
            .collect();
        Ok(replayed)
    }
}

/// The result of a replay.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The execution's outcome (its violations and journal).
    pub outcome: Outcome,
    /// The agent's journal, rendered.
    pub journal: Vec<String>,
    /// Every agent's journal (loom and tokio replays, whose runs the
    /// replaying thread's trace does not see; empty otherwise).
    pub journals: Vec<AgentJournal>,
    /// The simulator's trace (simulator lines only).
    pub trace: Vec<TraceEntry>,
    /// The simulator's trace hash (simulator lines only).
    pub trace_hash: Option<u64>,
    /// The step where the run stopped following the plan.
    pub diverged_at: Option<u64>,
    /// Plan entries followed, of the plan's length.
    pub plan_followed: Option<(usize, usize)>,
}
