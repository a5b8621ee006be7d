//! Replaying a line: [`replay`] runs the one execution a line
//! names, on the checker that found it, and returns what it did
//! ([`Replayed`]).
//!
//! The line format itself (parse, print, payloads, limits, fingerprints)
//! is `super::replay_line`'s, re-exported here so that `check::replay::…`
//! names the whole of it.
//!
//! Layer 4 (dispatch): the explorer of a line's checker replays it
//! (`super::explore`).

pub use super::replay_line::{
    decode_plan, encode_plan, fingerprint, limits, LoomPayload, Payload, ReplayError, ReplayLine,
    ShuttlePayload, SimPayload, TokioPayload, BUILD_FINGERPRINT,
};

pub use super::explore::Replayed;
pub use super::sim_run::check_plan;

use super::checker::Checker;
use super::explore::{Explorer, Loom, Shuttle, ShuttleScheduler, SimDfs, SimPortfolio, Tokio};

/// Run the execution `line` names, with the explorer of its checker.
pub fn replay(line: &ReplayLine) -> Result<Replayed, ReplayError> {
    let (scenario, faults) = (&line.scenario, line.faults());
    match (line.payload(), line.checker) {
        (Payload::Sim(p), Checker::SimDfs) => SimDfs.replay(scenario, faults, p),
        (Payload::Sim(p), _) => SimPortfolio.replay(scenario, faults, p),
        (Payload::Loom(p), _) => Loom.replay(scenario, faults, p),
        (Payload::Shuttle(p), checker) => Shuttle::of(checker)
            .unwrap_or(Shuttle(ShuttleScheduler::Random))
            .replay(scenario, faults, p),
        (Payload::Tokio(p), _) => Tokio.replay(scenario, faults, p),
    }
}
