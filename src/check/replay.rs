//! Replay lines: one self-contained, copy-pasteable line per failure, and
//! the code that replays it.
//!
//! Format: `v1:<scenario>:<checker>:<fault or none>:<payload>`, e.g.
//! `v1:cancel-before-claim:sim:M3:seed=17`.

use super::{loom_check, shuttle_check, sim_check, tokio_check, Checker};
use crate::faults::{Fault, Faults};
use crate::scenarios::{Outcome, ScenarioId};
use std::fmt;

/// A parsed replay line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayLine {
    /// The scenario.
    pub scenario: ScenarioId,
    /// The checker that found it.
    pub checker: Checker,
    /// The fault switched on, if any.
    pub fault: Option<Fault>,
    /// Checker-specific payload (`seed=…`, `exec=…,pb=…`, `schedule=…`, `runs=…`).
    pub payload: String,
}

/// A replay line that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError(pub String);

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplayError {}

impl ReplayLine {
    /// A line for `faults` (at most one fault is named).
    pub fn new(scenario: ScenarioId, checker: Checker, faults: Faults, payload: String) -> Self {
        ReplayLine {
            scenario,
            checker,
            fault: faults.iter().next(),
            payload,
        }
    }

    /// Parse a line; every part is validated.
    pub fn parse(line: &str) -> Result<ReplayLine, ReplayError> {
        let err = |m: String| Err(ReplayError(m));
        let line = line.trim();
        let parts: Vec<&str> = line.splitn(5, ':').collect();
        if parts.len() != 5 {
            return err(format!(
                "malformed replay line {line:?}: expected v1:<scenario>:<checker>:<fault|none>:<payload>"
            ));
        }
        if parts[0] != "v1" {
            return err(format!(
                "replay line version {:?} is not supported by this build (v1)",
                parts[0]
            ));
        }
        let Some(scenario) = ScenarioId::parse(parts[1]) else {
            return err(format!(
                "unknown scenario {:?} (see `lifecycle list`)",
                parts[1]
            ));
        };
        let Some(checker) = Checker::parse(parts[2]) else {
            return err(format!("unknown checker {:?}", parts[2]));
        };
        let fault = match parts[3] {
            "none" => None,
            f => match Fault::parse(f) {
                Some(f) if Fault::IMPLEMENTED.contains(&f) => Some(f),
                Some(f) => return err(format!("fault {f} is not switchable in this build")),
                None => return err(format!("unknown fault {f:?}")),
            },
        };
        let line = ReplayLine {
            scenario,
            checker,
            fault,
            payload: parts[4].to_string(),
        };
        line.validate_payload()?;
        Ok(line)
    }

    fn validate_payload(&self) -> Result<(), ReplayError> {
        let bad = |what: &str| {
            Err(ReplayError(format!(
                "malformed {} payload {:?}: expected {what}",
                self.checker, self.payload
            )))
        };
        match self.checker {
            Checker::Sim => match self.seed() {
                Some(_) => Ok(()),
                None => bad("seed=<u64>"),
            },
            Checker::Loom => match self.loom() {
                Some(_) => Ok(()),
                None => bad("exec=<n>,pb=<bound>"),
            },
            Checker::ShuttleRandom | Checker::ShuttlePct => {
                match self.payload.strip_prefix("schedule=") {
                    Some(hex) if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
                        Ok(())
                    }
                    _ => bad("schedule=<hex>"),
                }
            }
            Checker::Tokio => match self
                .payload
                .strip_prefix("runs=")
                .and_then(|n| n.parse::<u64>().ok())
            {
                Some(_) => Ok(()),
                None => bad("runs=<n>"),
            },
        }
    }

    fn seed(&self) -> Option<u64> {
        self.payload.strip_prefix("seed=")?.parse().ok()
    }

    fn loom(&self) -> Option<(u64, usize)> {
        let rest = self.payload.strip_prefix("exec=")?;
        let (exec, pb) = rest.split_once(",pb=")?;
        Some((exec.parse().ok()?, pb.parse().ok()?))
    }

    /// The faults this line switches on.
    pub fn faults(&self) -> Faults {
        Faults::from(self.fault)
    }

    /// Run the execution this line names.
    pub fn replay(&self) -> Result<Replayed, ReplayError> {
        let faults = self.faults();
        match self.checker {
            Checker::Sim => {
                let seed = self.seed().expect("validated");
                let (outcome, sim) = sim_check::run_seed(self.scenario, faults, seed);
                let schedule = sim
                    .trace()
                    .iter()
                    .map(|t| {
                        format!(
                            "step {:>4} t={:>5}ms {} (of {} ready)",
                            t.step, t.now_ms, t.name, t.ready
                        )
                    })
                    .collect();
                let journal = outcome.journal.iter().map(|r| r.to_string()).collect();
                Ok(Replayed {
                    outcome,
                    schedule,
                    journal,
                    trace_hash: Some(sim.trace_hash()),
                })
            }
            Checker::Loom => {
                let (exec, pb) = self.loom().expect("validated");
                let (outcome, journal) =
                    loom_check::replay(self.scenario, faults, exec, pb).map_err(ReplayError)?;
                Ok(Replayed {
                    outcome,
                    schedule: Vec::new(),
                    journal,
                    trace_hash: None,
                })
            }
            Checker::ShuttleRandom | Checker::ShuttlePct => {
                let hex = self.payload.trim_start_matches("schedule=");
                let outcome =
                    shuttle_check::replay(self.scenario, faults, hex).map_err(ReplayError)?;
                let journal = outcome.journal.iter().map(|r| r.to_string()).collect();
                Ok(Replayed {
                    outcome,
                    journal,
                    schedule: Vec::new(),
                    trace_hash: None,
                })
            }
            Checker::Tokio => {
                let runs = self
                    .payload
                    .trim_start_matches("runs=")
                    .parse()
                    .expect("validated");
                let outcome = tokio_check::rerun(self.scenario, faults, runs);
                let journal = outcome.journal.iter().map(|r| r.to_string()).collect();
                Ok(Replayed {
                    outcome,
                    journal,
                    schedule: Vec::new(),
                    trace_hash: None,
                })
            }
        }
    }
}

impl fmt::Display for ReplayLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fault = self.fault.map_or("none".to_string(), |f| f.to_string());
        write!(
            f,
            "v1:{}:{}:{}:{}",
            self.scenario.info().name,
            self.checker,
            fault,
            self.payload
        )
    }
}

/// The result of a replay.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The execution's outcome (its violations and journal).
    pub outcome: Outcome,
    /// The agent's journal, rendered.
    pub journal: Vec<String>,
    /// The simulator's scheduling trace (sim only).
    pub schedule: Vec<String>,
    /// The simulator's trace hash (sim only).
    pub trace_hash: Option<u64>,
}
