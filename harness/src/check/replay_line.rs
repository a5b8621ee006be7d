//! The replay line format: one self-contained, copy-pasteable line per
//! failure, parsed ([`ReplayLine::parse`], its payload once, into a typed
//! [`Payload`]) and printed (`Display`). Running the execution a line names
//! is `super::replay`'s (the dispatch, above every checker).
//!
//! Format: `v3:<scenario>:<checker>:<fault or none>:<fingerprint>:<payload>`,
//! e.g. `v3:cancel-before-claim:sim:M3:1f2e3d4c:seed=17;time=free;plan=1210`.
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
//!
//! Every payload field is bounded ([`limits`]: e.g. `runs` at most
//! 1,000,000, a plan at most 100,000 choices), must appear exactly once and
//! nothing else may; `replay::check_plan` checks a plan against
//! its run: every task it names exists and is ready where it is named. A
//! line that breaks any of this is refused before it is replayed, with one
//! line naming the field.
//!
//! Layer 1 (line format): imports only layer 0 (`checker`).

use super::checker::Checker;
use crate::faults::{Fault, Faults};
use crate::fnv::Fnv;
use crate::scenarios::Scenario;
use lifecycle_sim::TaskId;
use std::fmt;
use std::hash::Hasher;

/// The scheduling fingerprint of this build (see `build.rs`).
pub const BUILD_FINGERPRINT: &str = env!("LIFECYCLE_SCHED_FINGERPRINT");

/// The fingerprint of `scenario` in this build: 8 hex digits. A hash of
/// the build's scheduling fingerprint, the scenario's name and its
/// granularity: read off the definitions, nothing is run to compute it.
pub fn fingerprint(scenario: &Scenario) -> String {
    let granularity = [scenario.granularity as u8];
    let mut fnv = Fnv::new();
    fnv.write(BUILD_FINGERPRINT.as_bytes());
    fnv.write(scenario.name.as_bytes());
    fnv.write(&granularity);
    let h = fnv.finish();
    format!("{:08x}", (h >> 32) ^ (h & 0xffff_ffff))
}

/// A parsed replay line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayLine {
    /// The scenario.
    pub scenario: Scenario,
    /// The checker that found it.
    pub checker: Checker,
    /// The fault switched on, if any.
    pub fault: Option<Fault>,
    /// The fingerprint of the build that recorded it.
    pub fingerprint: String,
    /// The checker-specific payload, parsed once and within [`limits`]
    /// (see [`ReplayLine::payload`]).
    payload: Payload,
    /// The payload as written (`seed=…;plan=…`, `exec=…,pb=…`,
    /// `schedule=…`, `runs=…`): a parsed line prints as it was read.
    text: String,
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

/// The largest values a replay line may carry. A line above them is
/// refused (`replay` and `shrink` exit 2 naming the field) before anything
/// runs: each bound is well above what the `pr` and `nightly` tiers
/// record, and keeps a replay finite (a line such as
/// `runs=18446744073709551615` would otherwise run until killed). A seed
/// may be any `u64`: it only seeds a generator.
pub mod limits {
    /// Choices in a simulator plan: one per step at most, and a run stops
    /// at [`lifecycle_sim::DEFAULT_MAX_STEPS`] steps.
    pub const PLAN_CHOICES: usize = lifecycle_sim::DEFAULT_MAX_STEPS as usize;
    /// loom's execution index (`exec`): loom replays by running every
    /// execution before it, so even this takes hours.
    pub const LOOM_EXEC: u64 = 10_000_000;
    /// loom's preemption bound (`pb`): the tiers use 3 and 4.
    pub const LOOM_PREEMPTIONS: usize = 10;
    /// Hex digits of a shuttle schedule (512 KiB encoded).
    pub const SHUTTLE_HEX: usize = 1 << 20;
    /// Steps of a shuttle schedule (shuttle stops an execution long
    /// before).
    pub const SHUTTLE_STEPS: u64 = 1_000_000;
    /// Bits of a shuttle task id in a schedule.
    pub const SHUTTLE_TASK_ID_BITS: u64 = 32;
    /// Runs on tokio (`runs`; the tiers run 200 and 5,000): a rerun stops
    /// at the first failing run.
    pub const TOKIO_RUNS: u64 = 1_000_000;
}

/// A simulator line's payload (`sim`, `sim-dfs`):
/// `seed=N;time=virtual|free;plan=P`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimPayload {
    /// The value stream's seed (any `u64`).
    pub seed: u64,
    /// `time=free`: sleeps are arbitrary delays.
    pub untimed: bool,
    /// The task chosen at each decision with more than one ready task.
    pub plan: Vec<TaskId>,
}

/// A loom line's payload: `exec=N,pb=B`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoomPayload {
    /// The execution's index in loom's order.
    pub exec: u64,
    /// loom's preemption bound.
    pub pb: usize,
}

/// A shuttle line's payload (`shuttle-random`, `shuttle-pct`,
/// `shuttle-dfs`): `schedule=HEX`, in shuttle's encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShuttlePayload {
    /// The encoded schedule.
    pub schedule: String,
}

/// A tokio line's payload: `runs=N`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokioPayload {
    /// Runs, stopping at the first that fails.
    pub runs: u64,
}

/// A replay line's payload, parsed and within [`limits`]: one backend's
/// (see `check::explore`). `Display` prints it as the checkers record it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// A simulator line's.
    Sim(SimPayload),
    /// A loom line's.
    Loom(LoomPayload),
    /// A shuttle line's.
    Shuttle(ShuttlePayload),
    /// A tokio line's.
    Tokio(TokioPayload),
}

/// `s` quoted for an error message, cut to 60 characters so that the
/// message stays one short line whatever the input.
fn quote_cut(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        return format!("{s:?}");
    }
    let cut: String = s.chars().take(MAX).collect();
    format!("{cut:?}... ({} bytes)", s.len())
}

/// Split `payload` at `sep` into `key=value` fields: exactly the `keys`,
/// each once, in any order; the values in the order of `keys`.
fn fields<'a>(payload: &'a str, sep: char, keys: &[&str]) -> Result<Vec<&'a str>, String> {
    let expected = || {
        keys.iter()
            .map(|k| format!("{k}=..."))
            .collect::<Vec<_>>()
            .join(&sep.to_string())
    };
    let mut values: Vec<Option<&str>> = vec![None; keys.len()];
    for field in payload.split(sep) {
        let Some((key, value)) = field.split_once('=') else {
            return Err(format!(
                "field {} is not key=value (expected {})",
                quote_cut(field),
                expected()
            ));
        };
        let Some(i) = keys.iter().position(|k| *k == key) else {
            return Err(format!(
                "unknown field {} (expected {})",
                quote_cut(key),
                expected()
            ));
        };
        if values[i].replace(value).is_some() {
            return Err(format!("field `{key}` appears twice"));
        }
    }
    keys.iter()
        .zip(values)
        .map(|(k, v)| v.ok_or_else(|| format!("field `{k}` is missing (expected {})", expected())))
        .collect()
}

/// A decimal number in `0..=max`.
fn number(value: &str, key: &str, max: u64) -> Result<u64, String> {
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    match value.parse::<u64>() {
        Ok(n) if digits && n <= max => Ok(n),
        Ok(n) if digits => Err(format!("field `{key}` is {n}, above the maximum {max}")),
        _ if digits => Err(format!(
            "field `{key}` is {}, above the maximum {max}",
            quote_cut(value)
        )),
        _ => Err(format!(
            "field `{key}` is {}: expected a number from 0 to {max}",
            quote_cut(value)
        )),
    }
}

/// Check an encoded shuttle schedule the way shuttle's decoder reads it
/// (magic byte, varint bit width, length and seed, then the packed steps),
/// so that the decoder, which panics or allocates without bound on a
/// malformed schedule, only ever sees a well-formed one.
fn check_schedule(hex: &str) -> Result<(), String> {
    if hex.len() > limits::SHUTTLE_HEX {
        return Err(format!(
            "{} hex digits, above the maximum {}",
            hex.len(),
            limits::SHUTTLE_HEX
        ));
    }
    if hex.is_empty() || hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("expected an even number of hex digits".into());
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0))
        .collect();
    if bytes[0] != 0x91 {
        return Err("not a shuttle schedule (its first byte is not 91)".into());
    }
    let mut at = 1;
    let mut varint = |what: &str| -> Result<u64, String> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *bytes
                .get(at)
                .ok_or_else(|| format!("the schedule ends inside its {what}"))?;
            at += 1;
            value |= u64::from(b & 0x7f)
                .checked_shl(shift)
                .filter(|v| v >> shift == u64::from(b & 0x7f))
                .ok_or_else(|| format!("its {what} exceeds 64 bits"))?;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("its {what} exceeds 64 bits"))
    };
    let bits = varint("task id width")?;
    let steps = varint("length")?;
    varint("seed")?;
    if bits == 0 || bits > limits::SHUTTLE_TASK_ID_BITS {
        return Err(format!(
            "task ids of {bits} bits (expected 1 to {})",
            limits::SHUTTLE_TASK_ID_BITS
        ));
    }
    if steps > limits::SHUTTLE_STEPS {
        return Err(format!(
            "{steps} steps, above the maximum {}",
            limits::SHUTTLE_STEPS
        ));
    }
    let packed = &bytes[at..];
    let total = packed.len() * 8;
    let bit = |i: usize| packed[i / 8] >> (i % 8) & 1 == 1;
    let mut offset = 0usize;
    for _ in 0..steps {
        if offset >= total {
            return Err(format!("{steps} steps announced, fewer encoded"));
        }
        offset += if bit(offset) { 1 } else { 1 + bits as usize };
        if offset > total {
            return Err(format!("{steps} steps announced, fewer encoded"));
        }
    }
    Ok(())
}

impl Payload {
    /// Parse `text`, the payload of a `checker` line: every field present
    /// once, no other field, every number within [`limits`].
    ///
    /// # Errors
    /// One line naming the field at fault.
    pub fn parse(checker: Checker, text: &str) -> Result<Payload, ReplayError> {
        let bad = |m: String| {
            ReplayError(format!(
                "malformed {checker} payload {}: {m}",
                quote_cut(text)
            ))
        };
        match checker {
            Checker::Sim | Checker::SimDfs => {
                let f = fields(text, ';', &["seed", "time", "plan"]).map_err(bad)?;
                let seed = number(f[0], "seed", u64::MAX).map_err(bad)?;
                let untimed = match f[1] {
                    "free" => true,
                    "virtual" => false,
                    t => {
                        return Err(bad(format!(
                            "field `time` is {}: expected virtual or free",
                            quote_cut(t)
                        )))
                    }
                };
                let plan = decode_plan(f[2]).ok_or_else(|| {
                    bad("field `plan`: expected base-36 task ids (0-9, a-z, {N})".into())
                })?;
                if plan.len() > limits::PLAN_CHOICES {
                    return Err(bad(format!(
                        "field `plan` has {} choices, above the maximum {}",
                        plan.len(),
                        limits::PLAN_CHOICES
                    )));
                }
                Ok(Payload::Sim(SimPayload {
                    seed,
                    untimed,
                    plan,
                }))
            }
            Checker::Loom => {
                let f = fields(text, ',', &["exec", "pb"]).map_err(bad)?;
                let exec = number(f[0], "exec", limits::LOOM_EXEC).map_err(bad)?;
                let pb = number(f[1], "pb", limits::LOOM_PREEMPTIONS as u64).map_err(bad)?;
                Ok(Payload::Loom(LoomPayload {
                    exec,
                    pb: pb as usize,
                }))
            }
            Checker::ShuttleRandom | Checker::ShuttlePct | Checker::ShuttleDfs => {
                let f = fields(text, ';', &["schedule"]).map_err(bad)?;
                check_schedule(f[0]).map_err(|m| bad(format!("field `schedule`: {m}")))?;
                Ok(Payload::Shuttle(ShuttlePayload {
                    schedule: f[0].to_string(),
                }))
            }
            Checker::Tokio => {
                let f = fields(text, ';', &["runs"]).map_err(bad)?;
                let runs = number(f[0], "runs", limits::TOKIO_RUNS).map_err(bad)?;
                if runs == 0 {
                    return Err(bad("field `runs` is 0: expected at least 1".into()));
                }
                Ok(Payload::Tokio(TokioPayload { runs }))
            }
        }
    }

    /// Whether a line of `checker` carries this kind of payload.
    pub fn fits(&self, checker: Checker) -> bool {
        matches!(
            (self, checker),
            (
                Payload::Sim(SimPayload { .. }),
                Checker::Sim | Checker::SimDfs
            ) | (Payload::Loom(LoomPayload { .. }), Checker::Loom)
                | (
                    Payload::Shuttle(ShuttlePayload { .. }),
                    Checker::ShuttleRandom | Checker::ShuttlePct | Checker::ShuttleDfs
                )
                | (Payload::Tokio(TokioPayload { .. }), Checker::Tokio)
        )
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Payload::Sim(SimPayload {
                seed,
                untimed,
                plan,
            }) => {
                let time = if *untimed { "free" } else { "virtual" };
                write!(f, "seed={seed};time={time};plan={}", encode_plan(plan))
            }
            Payload::Loom(LoomPayload { exec, pb }) => write!(f, "exec={exec},pb={pb}"),
            Payload::Shuttle(ShuttlePayload { schedule }) => write!(f, "schedule={schedule}"),
            Payload::Tokio(TokioPayload { runs }) => write!(f, "runs={runs}"),
        }
    }
}

impl ReplayLine {
    /// A line for `faults` (at most one fault is named), fingerprinted by
    /// this build. `payload` must be of `checker`'s kind
    /// ([`Payload::fits`]).
    pub fn new(scenario: &Scenario, checker: Checker, faults: Faults, payload: Payload) -> Self {
        debug_assert!(payload.fits(checker), "{payload} on a {checker} line");
        ReplayLine {
            scenario: scenario.clone(),
            checker,
            fault: faults.iter().next(),
            fingerprint: fingerprint(scenario),
            text: payload.to_string(),
            payload,
        }
    }

    /// The same line with another payload of its checker's kind (the
    /// fingerprint is kept, not computed again).
    pub fn with_payload(&self, payload: Payload) -> Self {
        debug_assert!(
            payload.fits(self.checker),
            "{payload} on a {} line",
            self.checker
        );
        ReplayLine {
            text: payload.to_string(),
            payload,
            ..self.clone()
        }
    }

    /// A simulator line: the run's value-stream seed and plan.
    pub fn sim(
        scenario: &Scenario,
        checker: Checker,
        faults: Faults,
        seed: u64,
        untimed: bool,
        plan: &[TaskId],
    ) -> Self {
        let payload = Payload::Sim(SimPayload {
            seed,
            untimed,
            plan: plan.to_vec(),
        });
        ReplayLine::new(scenario, checker, faults, payload)
    }

    /// Parse a line of a built-in scenario; every part is validated, and
    /// the payload parsed into its [`Payload`] here, once. Nothing runs.
    pub fn parse(line: &str) -> Result<ReplayLine, ReplayError> {
        ReplayLine::parse_for(line, None)
    }

    /// [`parse`](Self::parse), resolving the scenario name to `own` (a
    /// downstream race test's scenario, which is no built-in) when it is
    /// that one's name.
    pub fn parse_for(line: &str, own: Option<&Scenario>) -> Result<ReplayLine, ReplayError> {
        let err = |m: String| Err(ReplayError(m));
        let line = line.trim();
        let parts: Vec<&str> = line.splitn(6, ':').collect();
        let versioned = |v: &str| {
            v.len() > 1 && v.starts_with('v') && v[1..].chars().all(|c| c.is_ascii_digit())
        };
        if parts.first().is_some_and(|v| versioned(v) && *v != "v3") {
            return err(format!(
                "replay line version {} is not supported by this build (v3); re-run the check that printed it",
                quote_cut(parts[0])
            ));
        }
        if parts.len() != 6 || parts[0] != "v3" {
            return err(format!(
                "malformed replay line {}: expected v3:<scenario>:<checker>:<fault|none>:<fingerprint>:<payload>",
                quote_cut(line)
            ));
        }
        let named = own.filter(|s| s.name == parts[1]);
        let generated = || crate::generate::name::scenario_named(parts[1]);
        let Some(scenario) = named
            .or_else(|| Scenario::parse(parts[1]))
            .or_else(generated)
        else {
            return err(format!(
                "unknown scenario {} (see `lifecycle list`)",
                quote_cut(parts[1])
            ));
        };
        let Some(checker) = Checker::parse(parts[2]) else {
            return err(format!("unknown checker {}", quote_cut(parts[2])));
        };
        let fault = match parts[3] {
            "none" => None,
            f => match Fault::parse(f) {
                Some(f) => Some(f),
                None => return err(format!("unknown fault {}", quote_cut(f))),
            },
        };
        let fp = parts[4];
        if fp.len() != 8 || !fp.chars().all(|c| c.is_ascii_hexdigit()) {
            return err(format!(
                "malformed fingerprint {}: expected 8 hex digits",
                quote_cut(fp)
            ));
        }
        let payload = Payload::parse(checker, parts[5])?;
        Ok(ReplayLine {
            scenario: scenario.clone(),
            checker,
            fault,
            fingerprint: fp.to_string(),
            payload,
            text: parts[5].to_string(),
        })
    }

    /// Whether this build recorded the line (same scenario fingerprint).
    pub fn same_build(&self) -> bool {
        self.fingerprint == fingerprint(&self.scenario)
    }

    /// The payload, as parsed (of this line's checker's kind, within
    /// [`limits`]).
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The seed, time mode (`true`: untimed) and plan of a simulator line.
    pub fn sim_payload(&self) -> Option<(u64, bool, Vec<TaskId>)> {
        match &self.payload {
            Payload::Sim(SimPayload {
                seed,
                untimed,
                plan,
            }) => Some((*seed, *untimed, plan.clone())),
            _ => None,
        }
    }

    /// The faults this line switches on.
    pub fn faults(&self) -> Faults {
        Faults::from(self.fault)
    }
}

impl fmt::Display for ReplayLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fault = self.fault.map_or("none".to_string(), |f| f.to_string());
        write!(
            f,
            "v3:{}:{}:{}:{}:{}",
            self.scenario.name, self.checker, fault, self.fingerprint, self.text
        )
    }
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

    #[test]
    fn payloads_are_typed_and_print_as_recorded() {
        for (checker, text) in [
            (Checker::Sim, "seed=17;time=free;plan=01z{36}"),
            (Checker::SimDfs, "seed=0;time=virtual;plan="),
            (Checker::Loom, "exec=12,pb=3"),
            (Checker::Tokio, "runs=200"),
        ] {
            let payload = Payload::parse(checker, text).expect(text);
            assert!(payload.fits(checker), "{text}");
            assert_eq!(payload.to_string(), text);
        }
        assert_eq!(
            Payload::parse(Checker::Sim, "plan=1;seed=2;time=virtual"),
            Ok(Payload::Sim(SimPayload {
                seed: 2,
                untimed: false,
                plan: vec![1],
            }))
        );
        assert!(!Payload::Tokio(TokioPayload { runs: 1 }).fits(Checker::Loom));
        let e = Payload::parse(Checker::Tokio, "runs=0").expect_err("runs=0");
        assert_eq!(
            e.0,
            "malformed tokio payload \"runs=0\": field `runs` is 0: expected at least 1"
        );
    }

    #[test]
    fn fields_are_each_required_once() {
        let keys = ["seed", "time", "plan"];
        assert_eq!(
            fields("plan=1;seed=2;time=free", ';', &keys),
            Ok(vec!["2", "free", "1"])
        );
        for (bad, says) in [
            ("seed=1;time=free", "`plan` is missing"),
            ("seed=1;seed=1;time=free;plan=", "`seed` appears twice"),
            ("seed=1;time=free;plan=;x=1", "unknown field \"x\""),
            ("seed=1;time=free;plan", "not key=value"),
        ] {
            let e = fields(bad, ';', &keys).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert_eq!(number("12", "runs", 12), Ok(12));
        assert!(number("13", "runs", 12).is_err());
        assert!(number("+1", "runs", 12).is_err());
        assert!(number("99999999999999999999", "runs", 12)
            .expect_err("too big")
            .contains("above the maximum 12"));
    }

    #[test]
    fn shuttle_schedules_are_checked_as_shuttle_reads_them() {
        use shuttle::scheduler::{Schedule, TaskId};
        use shuttle_engine::scheduler::serialization::serialize_schedule;
        let mut schedule = Schedule::new(7);
        for t in [0usize, 1, 2, 1, 0, 3] {
            schedule.push_task(TaskId::from(t));
            schedule.push_random();
        }
        let hex: String = serialize_schedule(&schedule).split_whitespace().collect();
        assert_eq!(check_schedule(&hex), Ok(()));
        // Cut short: the announced steps are not all there (shuttle pads
        // its bits to 12 steps of 3, so 2 bytes can go unnoticed).
        assert_eq!(check_schedule(&hex[..hex.len() - 4]), Ok(()));
        assert!(check_schedule(&hex[..hex.len() - 8]).is_err());
        assert!(check_schedule(&hex[..hex.len() - 1]).is_err());
        assert!(check_schedule("00").is_err());
        assert!(check_schedule("").is_err());
        // A length of 2^63 steps.
        assert!(check_schedule("9101ffffffffffffffff7f00").is_err());
    }
}
