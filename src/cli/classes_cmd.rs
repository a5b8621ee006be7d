//! `lifecycle classes <scenario>`: the class census of one scenario
//! (`check::classes`). The naive search (unreduced, at most
//! `--naive-bound` preemptions) and the `sim-dfs` search (as `check --tier
//! pr` runs it, or as `--preemption-bound`, `--unbounded` and `--optimal`
//! say) run with every execution traced; a table gives each one's
//! schedules, complete and pruned executions, classes and repeats, and
//! every class the naive search reached that `sim-dfs` never ran is printed
//! with the line that replays it.
//!
//! With `--growth N` (and, 5 of them, whenever `sim-dfs` stops at the
//! cap) it ranks the parts of `sim-dfs`'s classes by the forms each takes
//! (`check::growth`): where the classes multiply.
//!
//! Exit 0: `sim-dfs` was exhausted and ran every naive class. Exit 1: it
//! stopped at the cap (no verdict), it never ran a naive class, or the
//! scenario did not repeat itself under one schedule. Exit 2: bad input.

use super::args::{in_range, parse_fault, parse_scenario, program, MAX_COUNT, MAX_PREEMPTIONS};
use crate::check::classes::{census, census_observed, naive, Census, NAIVE_BOUND};
use crate::check::explore::sim_dfs::search_config;
use crate::check::growth::Growth;
use crate::check::{quiet_panics, Budget};
use crate::faults::Faults;
use clap::Args;
use std::process::ExitCode;

/// The arguments of `classes`.
#[derive(Args, Debug)]
pub(in crate::cli) struct ClassesArgs {
    /// The scenario.
    scenario: String,
    /// The naive search's preemption bound.
    #[arg(long, default_value_t = NAIVE_BOUND)]
    naive_bound: u32,
    /// `sim-dfs`'s preemption bound (default: the scenario's PR-tier
    /// bound, the search `check` runs).
    #[arg(long, conflicts_with = "unbounded")]
    preemption_bound: Option<u32>,
    /// `sim-dfs` without a preemption bound.
    #[arg(long)]
    unbounded: bool,
    /// `sim-dfs` with optimal DPOR (wakeup trees), unbounded.
    #[arg(long, requires = "unbounded")]
    optimal: bool,
    /// Schedules each search runs at most (default: the PR tier's cap of
    /// `sim-dfs`).
    #[arg(long)]
    cap: Option<u64>,
    /// Switch a fault on (M1..M29).
    #[arg(long)]
    fault: Option<String>,
    /// Replay lines printed for lost classes at most.
    #[arg(long, default_value_t = 5)]
    lines: usize,
    /// Rank the parts of sim-dfs's classes (task sequences, object
    /// histories) by how many forms each takes, and print the first N:
    /// where the classes multiply (also printed, 5 of them, when sim-dfs
    /// stops at the cap).
    #[arg(long)]
    growth: Option<usize>,
}

/// Run `classes`; the exit code.
pub(in crate::cli) fn run_classes(args: &ClassesArgs) -> ExitCode {
    let setup = || -> Result<_, String> {
        let scenario = parse_scenario(&args.scenario)?;
        let faults = match &args.fault {
            Some(f) => Faults::none().with(parse_fault(f)?),
            None => Faults::none(),
        };
        in_range("--naive-bound", args.naive_bound.into(), 0, MAX_PREEMPTIONS)?;
        if let Some(b) = args.preemption_bound {
            in_range("--preemption-bound", b.into(), 0, MAX_PREEMPTIONS)?;
        }
        let cap = in_range(
            "--cap",
            args.cap.unwrap_or(Budget::PR.dfs_executions),
            1,
            MAX_COUNT,
        )?;
        let mut searched = search_config(scenario, &Budget::PR);
        if args.unbounded {
            searched.preemption_bound = None;
        } else if let Some(b) = args.preemption_bound {
            searched.preemption_bound = Some(b);
        }
        searched.optimal = args.optimal;
        Ok((scenario, faults, searched, cap))
    };
    let (scenario, faults, searched_config, cap) = match setup() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    quiet_panics();
    let mut growth = Growth::default();
    let both = census(scenario, faults, naive(Some(args.naive_bound)), cap).and_then(|n| {
        census_observed(
            scenario,
            faults,
            searched_config.clone(),
            cap,
            &mut |canonical, sim| growth.add(canonical, sim.trace(), |r| sim.object_name(r)),
        )
        .map(|s| (n, s))
    });
    let (naive_census, searched) = match both {
        Ok(both) => both,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let bound = |b: Option<u32>| b.map_or("unbounded".to_string(), |b| format!("pb<={b}"));
    println!(
        "classes of {} (check::classes: accesses; failed waits, wakes and echoes are no events)\n",
        scenario.name
    );
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "search", "schedules", "complete", "pruned", "classes", "repeats"
    );
    let row = |what: String, c: &Census| {
        let capped = if c.exhausted { "" } else { " (cap)" };
        println!(
            "{:<34} {:>10} {:>10} {:>10} {:>9} {:>9}{capped}",
            what,
            c.schedules(),
            c.complete,
            c.blocked,
            c.classes.len(),
            c.complete - c.classes.len() as u64
        );
    };
    row(
        format!("naive, {}", bound(Some(args.naive_bound))),
        &naive_census,
    );
    let how = if searched_config.optimal && searched_config.preemption_bound.is_none() {
        "wakeup trees"
    } else {
        "source sets"
    };
    row(
        format!(
            "sim-dfs, {}, {how}",
            bound(searched_config.preemption_bound)
        ),
        &searched,
    );
    println!();
    let growth_lines = args
        .growth
        .or((!searched.exhausted).then_some(DEFAULT_GROWTH));
    if let Some(n) = growth_lines {
        print_growth(&growth, searched.classes.len(), n);
    }
    if !searched.exhausted {
        println!("sim-dfs stopped at the cap of {cap} schedules: no verdict (raise --cap)");
        return ExitCode::from(1);
    }
    let lost = naive_census.missing_from(&searched);
    if !lost.is_empty() {
        let shown = lost.len().min(args.lines);
        println!(
            "sim-dfs never ran {} of the {} classes the naive search reached; \
             replay lines of the first {shown}:",
            lost.len(),
            naive_census.classes.len()
        );
        for (_, class) in lost.iter().take(args.lines) {
            println!(
                "  {} replay '{}'",
                program(),
                class.replay_line(scenario, faults)
            );
        }
        return ExitCode::from(1);
    }
    println!(
        "sim-dfs ran all {} classes the naive search reached{}",
        naive_census.classes.len(),
        if naive_census.exhausted {
            ""
        } else {
            " (the naive search stopped at its cap)"
        }
    );
    ExitCode::SUCCESS
}

/// The parts printed when sim-dfs stops at the cap and `--growth` is not
/// given.
const DEFAULT_GROWTH: usize = 5;

/// The first `n` parts of sim-dfs's classes by forms (see `check::growth`).
fn print_growth(growth: &Growth, classes: usize, n: usize) {
    let ranked = growth.ranked();
    println!(
        "where sim-dfs's {classes} classes differ: {} of {} parts take more than one form; the first {}:",
        ranked.len(),
        growth.parts.len(),
        n.min(ranked.len())
    );
    println!(
        "  {:>8} {:>8}  {:<44} touched by",
        "forms", "longest", "part"
    );
    for (part, stats) in ranked.iter().take(n) {
        let tasks: Vec<String> = stats.tasks.iter().map(|&t| growth.task(t)).collect();
        println!(
            "  {:>8} {:>8}  {:<44} {}",
            growth.forms(stats),
            stats.longest,
            growth.describe(*part),
            tasks.join(", ")
        );
    }
    println!();
}
