//! The per-execution instruction split of a checker, from callgrind.
//!
//! `bench` runs `lifecycle check --scenario S --checker C` under
//! `valgrind --tool=callgrind` twice, with `n` and `2n` executions, and
//! takes the difference, so start-up and the one-off work of `check`
//! cancel out: what is left is the cost of `n` executions.
//!
//! Every function's own (exclusive) instructions go to one part, by its
//! symbol:
//! - **executor**: the simulator (`lifecycle_sim`, `corosensei`, `SimRt`)
//!   or shuttle (`shuttle_*`, `ShuttleRt`), with the checker's driver loop
//!   (`explore::sim`, `explore::sim_dfs`, `explore::shuttle`);
//! - **oracles**: the rule checks, views and goals (`oracle`, `Tally`,
//!   `view`, `Outcome::checked`, `goals`);
//! - **harness**: the rest of the command line (`cli`, `check`), reported
//!   but left out of the total;
//! - **scenario**: the lifecycle code (`lifecycle`) and the scenario
//!   bodies (the rest of `lifecycle_harness`);
//! - anything else (the allocator, `std`, `tracing`, ...) has no part of
//!   its own: its instructions go to its callers in proportion to the
//!   instructions of each call, followed up through other such functions.
//!
//! The parser reads callgrind's format as written by `--tool=callgrind`
//! with default options: one event (`Ir`), line positions, compressed
//! names (`fn=(id) name`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The parts an instruction is charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Part {
    /// The simulator or shuttle.
    Executor,
    /// The lifecycle code and the scenario bodies.
    Scenario,
    /// Rule checks, views and goals.
    Oracles,
    /// The command line around the runs (start-up, reporting).
    Harness,
}

impl Part {
    /// The part a symbol belongs to, if any.
    fn of(symbol: &str) -> Option<Part> {
        const EXECUTOR: [&str; 10] = [
            "lifecycle_sim::",
            "corosensei::",
            "rt::sim_rt::",
            "shuttle::",
            "shuttle_",
            "backends::shuttle_rt::",
            "check::explore::sim",
            "check::sim_run::",
            "check::tasks::",
            "check::explore::shuttle::",
        ];
        const ORACLES: [&str; 5] = [
            "lifecycle_harness::oracle",
            "check::tally::Tally",
            "check::view",
            "Outcome::checked",
            "scenarios::goals",
        ];
        if ORACLES.iter().any(|p| symbol.contains(p)) {
            Some(Part::Oracles)
        } else if EXECUTOR.iter().any(|p| symbol.contains(p)) {
            Some(Part::Executor)
        } else if [
            "lifecycle_tools::cli",
            "lifecycle_harness::check::",
            "lifecycle::main",
        ]
        .iter()
        .any(|p| symbol.contains(p))
        {
            Some(Part::Harness)
        } else if symbol.contains("lifecycle::") || symbol.contains("lifecycle_harness::") {
            // The production crate's code and the harness crate's rest.
            Some(Part::Scenario)
        } else {
            None
        }
    }
}

/// A callgrind profile: exclusive instructions per function and inclusive
/// instructions per call edge.
#[derive(Default, Debug)]
struct Profile {
    names: Vec<String>,
    own: Vec<u64>,
    /// (caller, callee) -> instructions of those calls, callee included.
    calls: BTreeMap<(usize, usize), u64>,
}

impl Profile {
    fn parse(text: &str) -> Profile {
        let mut p = Profile::default();
        let mut ids: BTreeMap<u64, usize> = BTreeMap::new();
        let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
        let (mut func, mut callee, mut in_call) = (None::<usize>, None::<usize>, false);
        let mut intern = |p: &mut Profile, spec: &str| -> usize {
            // `(id) name`, `(id)` or `name`.
            let (id, name) = match spec.strip_prefix('(') {
                Some(rest) => {
                    let (id, name) = rest.split_once(')').unwrap_or((rest, ""));
                    (id.parse::<u64>().ok(), name.trim())
                }
                None => (None, spec.trim()),
            };
            if let Some(&known) = id.and_then(|i| ids.get(&i)) {
                return known;
            }
            let index = *by_name.entry(name.to_string()).or_insert_with(|| {
                p.names.push(name.to_string());
                p.own.push(0);
                p.names.len() - 1
            });
            if let Some(i) = id {
                ids.insert(i, index);
            }
            index
        };
        for line in text.lines() {
            if let Some(spec) = line.strip_prefix("fn=") {
                func = Some(intern(&mut p, spec));
            } else if let Some(spec) = line.strip_prefix("cfn=") {
                callee = Some(intern(&mut p, spec));
            } else if line.starts_with("calls=") {
                in_call = true;
            } else if line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
                let cost: u64 = line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                match (func, in_call, callee) {
                    (Some(f), true, Some(c)) => *p.calls.entry((f, c)).or_insert(0) += cost,
                    (Some(f), false, _) => p.own[f] += cost,
                    _ => {}
                }
                in_call = false;
            }
        }
        p
    }

    /// Instructions per part: each function's own instructions, those of a
    /// function with no part shared among its callers by call cost.
    fn split(&self) -> BTreeMap<Part, u64> {
        let parts: Vec<Option<Part>> = self.names.iter().map(|n| Part::of(n)).collect();
        let mut callers: Vec<Vec<(usize, u64)>> = vec![Vec::new(); self.names.len()];
        for (&(from, to), &cost) in &self.calls {
            if from != to {
                callers[to].push((from, cost));
            }
        }
        let mut out: BTreeMap<Part, u64> = BTreeMap::new();
        for (f, &own) in self.own.iter().enumerate() {
            let mut shares: BTreeMap<Part, f64> = BTreeMap::new();
            attribute(f, own as f64, &parts, &callers, 0, &mut shares);
            for (part, v) in shares {
                *out.entry(part).or_insert(0) += v.round() as u64;
            }
        }
        out
    }
}

/// Charges `amount` instructions of function `f` to a part: its own, or its
/// callers' in proportion (at most 12 levels up; beyond, or with no caller,
/// they count as harness).
fn attribute(
    f: usize,
    amount: f64,
    parts: &[Option<Part>],
    callers: &[Vec<(usize, u64)>],
    depth: usize,
    out: &mut BTreeMap<Part, f64>,
) {
    if let Some(part) = parts[f] {
        *out.entry(part).or_insert(0.0) += amount;
        return;
    }
    let total: u64 = callers[f].iter().map(|&(_, c)| c).sum();
    if depth >= 12 || total == 0 {
        *out.entry(Part::Harness).or_insert(0.0) += amount;
        return;
    }
    for &(caller, cost) in &callers[f] {
        let share = amount * cost as f64 / total as f64;
        attribute(caller, share, parts, callers, depth + 1, out);
    }
}

/// Instructions per execution of each part.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Split {
    /// The checker profiled.
    pub checker: String,
    /// The scenario.
    pub scenario: String,
    /// Executions in the difference of the two runs.
    pub executions: u64,
    /// Instructions per execution, by part.
    pub per_execution: BTreeMap<Part, u64>,
}

/// How many times faster than `other` a checker whose executor cost
/// nothing could run the scenario of `split`: `other`'s instructions per
/// execution over `split`'s own scenario and oracle instructions (the
/// lifecycle code and the checks run under every checker). `None` if
/// `split` has neither.
pub fn ceiling(split: &Split, other: &Split) -> Option<f64> {
    let own = |p: Part| split.per_execution.get(&p).copied().unwrap_or(0);
    let fixed = own(Part::Scenario) + own(Part::Oracles);
    (fixed > 0).then(|| other.total() as f64 / fixed as f64)
}

/// The ceilings of `sim` over shuttle-random, by scenario, for every
/// scenario profiled under both (see [`ceiling`]).
pub fn ceilings(profile: &[Split]) -> Vec<(&str, f64)> {
    profile
        .iter()
        .filter(|p| p.checker == "sim")
        .filter_map(|sim| {
            let shuttle = profile
                .iter()
                .find(|p| p.checker == "shuttle-random" && p.scenario == sim.scenario)?;
            Some((sim.scenario.as_str(), ceiling(sim, shuttle)?))
        })
        .collect()
}

impl Split {
    /// All instructions per execution.
    pub fn total(&self) -> u64 {
        self.per_execution
            .iter()
            .filter(|(p, _)| **p != Part::Harness)
            .map(|(_, v)| v)
            .sum()
    }
}

/// Whether valgrind can be run here.
pub fn available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Profiles `checker` on `scenario`: `n` and `2n` executions under
/// callgrind, differenced. `None` (with the reason on stderr) if valgrind
/// fails.
pub fn profile(checker: &str, scenario: &str, n: u64) -> Option<Split> {
    let exe = std::env::current_exe().ok()?;
    let dir = std::env::temp_dir();
    let mut runs = Vec::new();
    for (i, count) in [n, 2 * n].into_iter().enumerate() {
        let out = dir.join(format!(
            "lifecycle-callgrind-{}-{i}.out",
            std::process::id()
        ));
        let budget = if checker == "sim" {
            "--sim-seeds"
        } else {
            "--shuttle-iterations"
        };
        let status = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(&exe)
            .args(["check", "--scenario", scenario, "--checker", checker])
            .args([budget, &count.to_string(), "--no-progress", "--no-shrink"])
            .output();
        let parsed = read(&out);
        let _ = std::fs::remove_file(&out);
        match (status, parsed) {
            (Ok(o), Some(p)) if o.status.success() => runs.push(p.split()),
            (Ok(o), _) => {
                eprintln!(
                    "bench: callgrind of {checker} on {scenario} failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                );
                return None;
            }
            (Err(e), _) => {
                eprintln!("bench: cannot run valgrind: {e}");
                return None;
            }
        }
    }
    let (small, large) = (&runs[0], &runs[1]);
    let per_execution = large
        .iter()
        .map(|(&part, &v)| {
            let base = small.get(&part).copied().unwrap_or(0);
            (part, v.saturating_sub(base) / n.max(1))
        })
        .collect();
    Some(Split {
        checker: checker.to_string(),
        scenario: scenario.to_string(),
        executions: n,
        per_execution,
    })
}

fn read(path: &Path) -> Option<Profile> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| Profile::parse(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "events: Ir\n\
fn=(1) lifecycle_sim::executor::Sim::step\n\
10 100\n\
cfn=(2) malloc\n\
calls=2 0\n\
11 40\n\
fn=(3) lifecycle::agent::core::claim\n\
5 60\n\
cfn=(2)\n\
calls=1 0\n\
6 20\n\
fn=(2)\n\
0 60\n";

    #[test]
    fn library_instructions_follow_their_callers() {
        let split = Profile::parse(SAMPLE).split();
        // malloc's 60 split 40:20 between the simulator and the lifecycle code.
        assert_eq!(split[&Part::Executor], 140);
        assert_eq!(split[&Part::Scenario], 80);
        assert!(!split.contains_key(&Part::Oracles));
    }

    #[test]
    fn the_ceiling_is_the_other_checkers_total_over_the_own_fixed_part() {
        let split = |checker: &str, executor, scenario, oracles| Split {
            checker: checker.into(),
            scenario: "s".into(),
            executions: 1,
            per_execution: BTreeMap::from([
                (Part::Executor, executor),
                (Part::Scenario, scenario),
                (Part::Oracles, oracles),
                (Part::Harness, 1_000),
            ]),
        };
        let sim = split("sim", 50, 30, 10);
        let shuttle = split("shuttle-random", 300, 80, 20);
        // 400 instructions of shuttle over sim's 40 of its own: 10x.
        assert_eq!(ceiling(&sim, &shuttle), Some(10.0));
        assert_eq!(ceilings(&[sim.clone(), shuttle]), vec![("s", 10.0)]);
        assert_eq!(ceilings(&[sim]), vec![]);
        assert_eq!(ceiling(&split("sim", 5, 0, 0), &split("x", 1, 1, 1)), None);
    }

    #[test]
    fn parts_by_symbol() {
        assert_eq!(
            Part::of("<lifecycle::rt::sim_rt::SimRt as Rt>::raw_with"),
            Some(Part::Executor)
        );
        assert_eq!(
            Part::of("lifecycle_harness::oracle::check_turns"),
            Some(Part::Oracles)
        );
        assert_eq!(
            Part::of("lifecycle::agent::AgentLoop<R>::stop"),
            Some(Part::Scenario)
        );
        assert_eq!(Part::of("_int_malloc"), None);
    }
}
