//! Replay lines: one self-contained, copy-pasteable line per failure, and
//! the code that replays it.
//!
//! Format: `v2:<scenario>:<checker>:<fault or none>:<fingerprint>:<payload>`,
//! e.g. `v2:cancel-before-claim:sim:M3:1f2e3d4c:seed=17;time=free;plan=1210`.
//!
//! The fingerprint hashes the scenario with the scheduling-relevant source of
//! the build that recorded the line (see `build.rs`). A line from another
//! build is still replayed as far as it fits (the simulator follows the
//! longest valid prefix of the plan, then its seeded scheduler), but `replay`
//! says so, reports where it diverged and exits 2.
//!
//! Simulator payloads (`sim`, `sim-dfs`): `seed=N;time=T;plan=P` where `P`
//! is the task chosen at each decision with more than one ready task, one
//! base-36 digit per task id (`{N}` for ids of 36 and above), `T` is
//! `virtual` (sleeps are timers) or `free` (untimed: sleeps are arbitrary
//! delays), and `N` seeds the value stream and the scheduler that continues
//! after a divergence.

use super::{loom_check, shuttle_check, sim_check, tokio_check, Checker};
use crate::faults::{Fault, Faults};
use crate::scenarios::{Outcome, Scenario};
use lifecycle_sim::{TaskId, TraceEntry};
use std::fmt;

/// The scheduling fingerprint of this build (see `build.rs`).
pub const BUILD_FINGERPRINT: &str = env!("LIFECYCLE_SCHED_FINGERPRINT");

/// The fingerprint of `scenario` in this build: 8 hex digits.
pub fn fingerprint(scenario: &'static Scenario) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in BUILD_FINGERPRINT
        .bytes()
        .chain(scenario.name.bytes())
        .chain(crate::check::sim_check::tasks(scenario).all.to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:08x}", (h >> 32) ^ (h & 0xffff_ffff))
}

/// A parsed replay line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayLine {
    /// The scenario.
    pub scenario: &'static Scenario,
    /// The checker that found it.
    pub checker: Checker,
    /// The fault switched on, if any.
    pub fault: Option<Fault>,
    /// The fingerprint of the build that recorded it.
    pub fingerprint: String,
    /// Checker-specific payload (`seed=…;plan=…`, `exec=…,pb=…`,
    /// `schedule=…`, `runs=…`).
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

/// Encode a plan: one base-36 digit per task id, `{N}` for larger ids.
pub fn encode_plan(plan: &[TaskId]) -> String {
    let mut out = String::with_capacity(plan.len());
    for &t in plan {
        match char::from_digit(t as u32, 36) {
            Some(c) if t < 36 => out.push(c),
            _ => out.push_str(&format!("{{{t}}}")),
        }
    }
    out
}

/// Decode [`encode_plan`]'s output.
pub fn decode_plan(s: &str) -> Option<Vec<TaskId>> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '{' {
            let mut n = String::new();
            loop {
                match chars.next()? {
                    '}' => break,
                    d => n.push(d),
                }
            }
            out.push(n.parse().ok()?);
        } else if c.is_ascii_uppercase() {
            return None;
        } else {
            out.push(c.to_digit(36)? as TaskId);
        }
    }
    Some(out)
}

impl ReplayLine {
    /// A line for `faults` (at most one fault is named), fingerprinted by
    /// this build.
    pub fn new(
        scenario: &'static Scenario,
        checker: Checker,
        faults: Faults,
        payload: String,
    ) -> Self {
        ReplayLine {
            scenario,
            checker,
            fault: faults.iter().next(),
            fingerprint: fingerprint(scenario),
            payload,
        }
    }

    /// A simulator line: the run's value-stream seed and plan.
    pub fn sim(
        scenario: &'static Scenario,
        checker: Checker,
        faults: Faults,
        seed: u64,
        untimed: bool,
        plan: &[TaskId],
    ) -> Self {
        let time = if untimed { "free" } else { "virtual" };
        ReplayLine::new(
            scenario,
            checker,
            faults,
            format!("seed={seed};time={time};plan={}", encode_plan(plan)),
        )
    }

    /// Parse a line; every part is validated.
    pub fn parse(line: &str) -> Result<ReplayLine, ReplayError> {
        let err = |m: String| Err(ReplayError(m));
        let line = line.trim();
        let parts: Vec<&str> = line.splitn(6, ':').collect();
        let versioned = |v: &str| {
            v.len() > 1 && v.starts_with('v') && v[1..].chars().all(|c| c.is_ascii_digit())
        };
        if parts.first().is_some_and(|v| versioned(v) && *v != "v2") {
            return err(format!(
                "replay line version {:?} is not supported by this build (v2); re-run the check that printed it",
                parts[0]
            ));
        }
        if parts.len() != 6 {
            return err(format!(
                "malformed replay line {line:?}: expected v2:<scenario>:<checker>:<fault|none>:<fingerprint>:<payload>"
            ));
        }
        let Some(scenario) = Scenario::parse(parts[1]) else {
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
        let fp = parts[4];
        if fp.len() != 8 || !fp.chars().all(|c| c.is_ascii_hexdigit()) {
            return err(format!(
                "malformed fingerprint {fp:?}: expected 8 hex digits"
            ));
        }
        let line = ReplayLine {
            scenario,
            checker,
            fault,
            fingerprint: fp.to_string(),
            payload: parts[5].to_string(),
        };
        line.validate_payload()?;
        Ok(line)
    }

    /// Whether this build recorded the line (same scenario fingerprint).
    pub fn same_build(&self) -> bool {
        self.fingerprint == fingerprint(self.scenario)
    }

    fn validate_payload(&self) -> Result<(), ReplayError> {
        let bad = |what: &str| {
            Err(ReplayError(format!(
                "malformed {} payload {:?}: expected {what}",
                self.checker, self.payload
            )))
        };
        match self.checker {
            Checker::Sim | Checker::SimDfs => match self.sim_payload() {
                Some(_) => Ok(()),
                None => bad("seed=<u64>;time=<virtual|free>;plan=<base-36 task ids>"),
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

    /// The seed, time mode (`true`: untimed) and plan of a simulator line.
    pub fn sim_payload(&self) -> Option<(u64, bool, Vec<TaskId>)> {
        let rest = self.payload.strip_prefix("seed=")?;
        let (seed, rest) = rest.split_once(";time=")?;
        let (time, plan) = rest.split_once(";plan=")?;
        let untimed = match time {
            "free" => true,
            "virtual" => false,
            _ => return None,
        };
        Some((seed.parse().ok()?, untimed, decode_plan(plan)?))
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

    /// Run the execution this line names. `trace` keeps the simulator's full
    /// trace (and its `tracing` spans).
    pub fn replay(&self) -> Result<Replayed, ReplayError> {
        let faults = self.faults();
        let mut replayed = Replayed {
            outcome: Outcome::default(),
            journal: Vec::new(),
            trace: Vec::new(),
            trace_hash: None,
            diverged_at: None,
            plan_followed: None,
        };
        match self.checker {
            Checker::Sim | Checker::SimDfs => {
                let (seed, untimed, plan) = self.sim_payload().expect("validated");
                let run = sim_check::run_plan(self.scenario, faults, seed, untimed, &plan, true);
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
            Checker::Loom => {
                let (exec, pb) = self.loom().expect("validated");
                let (outcome, journal) =
                    loom_check::replay(self.scenario, faults, exec, pb).map_err(ReplayError)?;
                replayed.outcome = outcome;
                replayed.journal = journal;
                return Ok(replayed);
            }
            Checker::ShuttleRandom | Checker::ShuttlePct => {
                let hex = self.payload.trim_start_matches("schedule=");
                replayed.outcome =
                    shuttle_check::replay(self.scenario, faults, hex).map_err(ReplayError)?;
            }
            Checker::Tokio => {
                let runs = self
                    .payload
                    .trim_start_matches("runs=")
                    .parse()
                    .expect("validated");
                replayed.outcome = tokio_check::rerun(self.scenario, faults, runs);
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

impl fmt::Display for ReplayLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fault = self.fault.map_or("none".to_string(), |f| f.to_string());
        write!(
            f,
            "v2:{}:{}:{}:{}:{}",
            self.scenario.name, self.checker, fault, self.fingerprint, self.payload
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
    /// The simulator's trace (simulator lines only).
    pub trace: Vec<TraceEntry>,
    /// The simulator's trace hash (simulator lines only).
    pub trace_hash: Option<u64>,
    /// The step where the run stopped following the plan.
    pub diverged_at: Option<u64>,
    /// Plan entries followed, of the plan's length.
    pub plan_followed: Option<(usize, usize)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trip() {
        let plan = vec![0, 1, 35, 36, 100, 2];
        let s = encode_plan(&plan);
        assert_eq!(s, "01z{36}{100}2");
        assert_eq!(decode_plan(&s), Some(plan));
        assert_eq!(decode_plan("{12"), None);
        assert_eq!(decode_plan("A"), None);
        assert_eq!(decode_plan("!"), None);
    }
}
