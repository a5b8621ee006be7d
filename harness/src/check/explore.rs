//! One explorer interface: every backend that explores a scenario
//! implements [`Explorer`], to explore it under a [`Budget`] and to replay
//! the one execution a replay line's payload names. Each backend is one
//! file under `explore/` that owns all of it: its search, its replay and
//! its run helpers (loom's worker process is a second file,
//! `loom_worker`); the payloads stay in the line format they are parsed
//! with (`replay_line`). Shuttle's is one explorer that takes its
//! scheduler ([`ShuttleScheduler`]), as shuttle's `Runner` does:
//!
//! | explorer            | checker          | payload            |
//! | ------------------- | ---------------- | ------------------ |
//! | [`SimPortfolio`]    | `sim`            | [`SimPayload`]     |
//! | [`SimDfs`]          | `sim-dfs`        | [`SimPayload`]     |
//! | [`Loom`]            | `loom`           | [`LoomPayload`]    |
//! | [`Shuttle`] (random)| `shuttle-random` | [`ShuttlePayload`] |
//! | [`Shuttle`] (PCT)   | `shuttle-pct`    | [`ShuttlePayload`] |
//! | [`Shuttle`] (DFS)   | `shuttle-dfs`    | [`ShuttlePayload`] |
//! | [`Tokio`]           | `tokio`          | [`TokioPayload`]   |
//!
//! `dispatch` picks one by [`Checker`] and `replay` by payload; neither
//! knows anything else of a backend.
//!
//! Layer 3 (explorers): imports layers 0 to 2, never `dispatch`,
//! `replay` or `api`.

pub mod loom;
pub mod loom_model;
mod loom_worker;
pub mod shuttle;
pub mod sim;
pub mod sim_dfs;
mod tokio;

pub use loom::Loom;
pub use loom_worker::{serve_worker, set_worker};
pub use shuttle::{Shuttle, ShuttleScheduler};
pub use sim::SimPortfolio;
pub use sim_dfs::SimDfs;
pub use tokio::Tokio;

use super::budget::Budget;
use super::checker::Checker;
use super::journal_tap::AgentJournal;
use super::replay_line::ReplayError;
#[cfg(doc)]
use super::replay_line::{LoomPayload, ShuttlePayload, SimPayload, TokioPayload};
use super::report::Report;
use crate::faults::Faults;
use crate::scenarios::{Outcome, Scenario};
use lifecycle_sim::TraceEntry;

/// What one exploration is asked to do.
pub struct Exploration<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The faults switched on.
    pub faults: Faults,
    /// How far to explore.
    pub budget: &'a Budget,
    /// Stop at the first failing execution.
    pub stop_at_first: bool,
    /// Called now and then with the executions so far.
    pub progress: &'a dyn Fn(u64),
}

/// A backend that explores scenarios and replays single executions.
pub trait Explorer {
    /// What its replay lines carry to name one execution.
    type Payload;

    /// The checker it is.
    fn checker(&self) -> Checker;

    /// Explore `run.scenario` within `run.budget`.
    fn explore(&self, run: &Exploration<'_>) -> Report;

    /// Run the one execution `payload` names.
    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &Self::Payload,
    ) -> Result<Replayed, ReplayError>;
}

/// The result of a replay.
#[derive(Clone, Debug, Default)]
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

impl Replayed {
    /// A replay of `outcome` alone, its journal rendered.
    fn of(outcome: Outcome) -> Replayed {
        let journal = outcome.journal.iter().map(|r| r.to_string()).collect();
        Replayed {
            outcome,
            journal,
            ..Replayed::default()
        }
    }
}
