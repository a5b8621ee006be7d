//! `generate`: generated client workloads (`crate::generate`) at a tier's
//! budget, every history judged against the ACP model. A table row per
//! workload; on a failure, the workload as its clients sent it, the broken
//! rule or model mismatch, the replay line (workload and schedule
//! together), and the shrunk workload with its own replay line.

use super::args::{in_range, parse_checker, parse_fault, program, MAX_COUNT};
use crate::check::{Checker, Report};
use crate::faults::Faults;
use crate::generate::{self, Plan, Ran};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
pub(in crate::cli) struct GenerateArgs {
    /// The budget tier: `pr` (a fixed range of seeds within the gate) or
    /// `nightly` (more seeds, deeper searches).
    #[arg(long, default_value = "pr")]
    tier: String,
    /// Only the workloads of these seeds (`A..B`, end excluded; or one
    /// seed), instead of the tier's range.
    #[arg(long)]
    seeds: Option<String>,
    /// Only this checker (repeatable): sim, sim-dfs, shuttle-random,
    /// shuttle-pct, loom, tokio. Default: the tier's (sim, sim-dfs,
    /// shuttle-random).
    #[arg(long)]
    checker: Vec<String>,
    /// Switch a fault on (M1..M29).
    #[arg(long)]
    fault: Option<String>,
    /// Run this one workload (a `gen-...` name, as a row or a replay line
    /// prints it) instead of seeds.
    #[arg(long, conflicts_with = "seeds")]
    workload: Option<String>,
    /// Run every seed even after a failure.
    #[arg(long)]
    keep_going: bool,
    /// Do not shrink a failing workload.
    #[arg(long)]
    no_shrink: bool,
    /// The generator's power: hunt every fault of SPEC §3 with the PR
    /// tier's workloads alone (no named scenario) on each checker, and
    /// print which it kills, with the rule, the executions and the
    /// workload; with `--fault`, that fault alone.
    #[arg(long, conflicts_with_all = ["workload", "seeds"])]
    power: bool,
}

fn parse_seeds(s: &str) -> Result<std::ops::Range<u64>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("--seeds {s:?}: expected A..B or one seed"))
    };
    let range = match s.split_once("..") {
        Some((a, b)) => num(a)?..num(b)?,
        None => {
            let a = num(s)?;
            a..a.saturating_add(1)
        }
    };
    if range.is_empty() {
        return Err(format!("--seeds {s:?} is empty"));
    }
    in_range("the number of seeds", range.end - range.start, 1, MAX_COUNT)?;
    Ok(range)
}

impl GenerateArgs {
    fn plan(&self) -> Result<(Plan, Faults, Option<generate::workload::Workload>), String> {
        let mut plan = Plan::tier(&self.tier)
            .ok_or_else(|| format!("unknown tier {:?}: expected pr or nightly", self.tier))?;
        if let Some(s) = &self.seeds {
            plan.seeds = parse_seeds(s)?;
        }
        if !self.checker.is_empty() {
            plan.checkers = self
                .checker
                .iter()
                .map(|c| parse_checker(c))
                .collect::<Result<_, _>>()?;
        }
        let faults = match &self.fault {
            Some(f) => Faults::none().with(parse_fault(f)?),
            None => Faults::none(),
        };
        let workload = match &self.workload {
            Some(name) => {
                let code = name.strip_prefix(generate::PREFIX).unwrap_or(name);
                Some(generate::decode(code)?)
            }
            None => None,
        };
        Ok((plan, faults, workload))
    }
}

fn cell(r: &Report) -> String {
    if r.skipped.is_some() {
        return "skip".to_string();
    }
    let how = if r.exhausted { "x" } else { "" };
    format!("{}{how}", r.executions)
}

/// Why a workload is skipped under `plan`'s checkers.
fn ran_skip_reason(plan: &Plan) -> &'static str {
    if plan.checkers.contains(&Checker::Loom) {
        "no checker ran them: loom models at most 5 threads"
    } else {
        "no checker ran them"
    }
}

/// `generate --power`: every fault hunted by the PR tier's workloads on
/// each of `checkers`; exit 0 (a measurement, not a gate).
fn run_power(checkers: &[Checker], only: Faults) -> ExitCode {
    let stop = crate::cli::interrupt::STOP;
    let cols: String = checkers
        .iter()
        .map(|c| format!("{:>16}", c.name()))
        .collect();
    println!(
        "{:<5} {:<6} {:<6}{cols}  workload",
        "fault", "killed", "rule"
    );
    println!(
        "{:<19}(executions to kill over the PR tier's seeds; - not killed)",
        ""
    );
    let mut killed = 0;
    let hunted: Vec<_> = crate::faults::Fault::ALL
        .into_iter()
        .filter(|&f| only == Faults::none() || only.has(f))
        .collect();
    for &fault in &hunted {
        let reports: Vec<Option<Report>> = checkers
            .iter()
            .map(|&c| generate::hunt(fault, c, stop))
            .collect();
        if stop.requested() {
            return ExitCode::from(130);
        }
        let first = reports.iter().flatten().next();
        let rule = first.and_then(|r| {
            r.violations
                .iter()
                .find(|v| v.rule.is_in(fault.must_violate()))
                .map(|v| v.rule.to_string())
        });
        killed += usize::from(first.is_some());
        let cells: String = reports
            .iter()
            .map(|r| {
                format!(
                    "{:>16}",
                    r.as_ref()
                        .map_or("-".to_string(), |r| r.executions.to_string())
                )
            })
            .collect();
        println!(
            "{:<5} {:<6} {:<6}{cells}  {}",
            fault.to_string(),
            if first.is_some() { "yes" } else { "no" },
            rule.as_deref().unwrap_or("-"),
            first.map_or("", |r| r.scenario),
        );
    }
    println!(
        "\n{killed} of {} faults killed by generated workloads alone",
        hunted.len()
    );
    ExitCode::SUCCESS
}

/// `generate`.
pub(super) fn run_generate(args: &GenerateArgs) -> ExitCode {
    let (plan, faults, one) = match args.plan() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = crate::cli::interrupt::install() {
        eprintln!("warning: Ctrl-C will kill at once ({e})");
    }
    if args.power {
        return run_power(&plan.checkers, faults);
    }
    let stop = crate::cli::interrupt::STOP;
    let names: String = plan
        .checkers
        .iter()
        .map(|c| format!("{:>16}", c.name()))
        .collect();
    println!(
        "{:>6} {:>7} {:>3}{names}  verdict",
        "seed", "clients", "ops"
    );
    let bound = plan
        .dfs_bound
        .map_or("unbounded".to_string(), |b| format!("preemption bound {b}"));
    println!(
        "{:>18}(executions per checker; x: sim-dfs exhausted every schedule at lock granularity, {bound}, at most {} executions)",
        "", plan.dfs_executions
    );
    let seeds: Vec<Option<u64>> = match &one {
        Some(_) => vec![None],
        None => plan.seeds.clone().map(Some).collect(),
    };
    let (mut passed, mut failed, mut exhausted, mut executions) = (0u64, 0u64, 0u64, 0u64);
    // Workloads no checker ran (loom skips one that needs more threads
    // than it models): neither passed nor failed.
    let mut skipped = 0u64;
    let mut first_failure: Option<(Ran, Checker)> = None;
    for seed in seeds {
        if stop.requested() {
            break;
        }
        let ran = match (&one, seed) {
            (Some(w), _) => generate::run_workload(0, w.clone(), &plan, faults),
            (None, Some(seed)) => generate::run_seed(seed, &plan, faults),
            (None, None) => unreachable!("a seed or a workload"),
        };
        let cells: String = plan
            .checkers
            .iter()
            .map(|c| {
                let r = ran.reports.iter().find(|r| r.checker == *c);
                format!("{:>16}", r.map_or("-".to_string(), cell))
            })
            .collect();
        executions += ran.reports.iter().map(|r| r.executions).sum::<u64>();
        exhausted += ran
            .reports
            .iter()
            .filter(|r| r.checker == Checker::SimDfs && r.exhausted)
            .count() as u64;
        let all_skipped = ran.reports.iter().all(|r| r.skipped.is_some());
        let verdict = match ran.failure() {
            Some(r) => format!("FAIL {}", r.violations[0].rule),
            None if ran.reports.iter().any(|r| r.error.is_some()) => "ERROR".to_string(),
            None if all_skipped => "skipped".to_string(),
            None => "ok".to_string(),
        };
        println!(
            "{:>6} {:>7} {:>3}{cells}  {verdict}",
            seed.map_or("-".to_string(), |s| s.to_string()),
            ran.workload.clients.len(),
            ran.workload.ops(),
        );
        if let Some(e) = ran.reports.iter().find_map(|r| r.error.clone()) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        match ran.failure().map(|r| r.checker) {
            Some(checker) => {
                failed += 1;
                if first_failure.is_none() {
                    first_failure = Some((ran, checker));
                }
                if !args.keep_going {
                    break;
                }
            }
            None if all_skipped => skipped += 1,
            None => passed += 1,
        }
    }
    println!();
    let skips = if skipped > 0 {
        let why = ran_skip_reason(&plan);
        format!(", {skipped} skipped ({why})")
    } else {
        String::new()
    };
    println!(
        "{passed} passed, {failed} failed{skips}: {} workloads, {executions} executions, sim-dfs exhausted {exhausted}",
        passed + failed + skipped
    );
    let Some((ran, checker)) = first_failure else {
        return ExitCode::SUCCESS;
    };
    print_failure(&ran, checker);
    if !args.no_shrink && one.is_none() {
        let (small, report) = generate::shrink(ran.seed, checker, &plan, faults);
        if let Some(v) = report.violations.first() {
            println!(
                "\nshrunk to {} clients and {} operations:\n{}",
                small.clients.len(),
                small.ops(),
                indent(&small.to_string())
            );
            println!("  rule {}: {}", v.rule, v.message);
            let line = v.shrunk.as_ref().unwrap_or(&v.replay);
            println!("  replay: {} replay '{line}'", program());
        }
    }
    ExitCode::from(1)
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn print_failure(ran: &Ran, checker: Checker) {
    let Some(report) = ran.failure() else { return };
    let v = &report.violations[0];
    println!(
        "\nseed {} fails on {checker} after {} executions; the workload:\n{}",
        ran.seed,
        report.executions,
        indent(&ran.workload.to_string())
    );
    println!("  rule {}: {}", v.rule, v.message);
    let line = v.shrunk.as_ref().unwrap_or(&v.replay);
    println!("  replay: {} replay '{line}'", program());
}
