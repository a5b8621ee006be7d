//! `check`, `mutants` and `explore`: run checkers, print tables.

use super::{parse_checker, parse_fault, parse_scenario, ExploreArgs, Selection};
use crate::check::{self, Budget, Checker, DfsOptions, Report};
use crate::faults::{Fault, Faults};
use crate::scenarios::Scenario;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lifecycle_sim::{DfsConfig, Shard};
use serde::Serialize;
use std::io::IsTerminal;
use std::process::ExitCode;

fn header() {
    println!(
        "{:<30} {:<14} {:>10} {:>8} {:<6} {:>7}  {:<10} goals (hits)",
        "scenario", "checker", "executions", "distinct", "result", "seconds", "space"
    );
}

fn space(r: &Report) -> String {
    match (&r.skipped, r.exhausted) {
        (Some(_), _) => "skipped".into(),
        (None, true) => match r.bound.as_deref().and_then(|b| b.split("<= ").nth(1)) {
            Some(b) => format!("exh. pb<={}", b.split(',').next().unwrap_or(b)),
            None => "exhausted".into(),
        },
        // A search stopped by its budget or cap is not a sample.
        (None, false) if matches!(r.checker, "sim-dfs" | "loom") => "stopped".into(),
        (None, false) => "sampled".into(),
    }
}

fn row(r: &Report) {
    let goals: Vec<String> = r
        .goals
        .iter()
        .map(|g| {
            format!(
                "{}={}{}",
                g.goal,
                g.hits,
                if g.excused.is_some() { "*" } else { "" }
            )
        })
        .collect();
    println!(
        "{:<30} {:<14} {:>10} {:>8} {:<6} {:>7.2}  {:<10} {}{}",
        r.scenario,
        r.checker,
        r.executions,
        r.distinct_outcomes,
        r.status,
        r.seconds,
        space(r),
        goals.join(" "),
        r.skipped
            .as_ref()
            .map(|w| format!(" ({w})"))
            .unwrap_or_default()
    );
}

fn failure(r: &Report) {
    if let Some(e) = &r.error {
        println!("  error in {} on {}: {e}", r.scenario, r.checker);
    }
    for v in &r.violations {
        println!(
            "  {} violated in {} on {}: {}",
            v.rule, r.scenario, r.checker, v.message
        );
    }
    if let Some(v) = r.violations.first() {
        println!("  replay: cargo run --release -- replay '{}'", v.replay);
        if let (Some(s), Some((before, after))) = (&v.shrunk, v.preemptions) {
            println!(
                "  shrunk ({before} -> {after} preemptions): cargo run --release -- replay '{s}'"
            );
        }
    }
}

fn bar(total: u64, on: bool) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if on && std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} runs {elapsed_precise} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb
}

/// `check`.
pub(super) fn run_check(json: bool, progress: bool, sel: &Selection) -> ExitCode {
    let mut failed = Vec::new();
    let mut dfs_rows = Vec::new();
    let total = (sel.scenarios.len() * sel.checkers.len()) as u64;
    let pb = bar(total, progress && !json);
    if !json {
        pb.suspend(header);
    }
    let mut coverage: Vec<Coverage> = Vec::new();
    let mut skipped = 0u64;
    for &scenario in &sel.scenarios {
        let mut reports: Vec<Report> = Vec::new();
        for &checker in &sel.checkers {
            let name = format!("{} / {checker}", scenario.name);
            pb.set_message(name.clone());
            let tick = |n: u64| pb.set_message(format!("{name}: {n} executions"));
            let report = check::run_with_progress(
                checker,
                scenario,
                Faults::none(),
                &sel.budget,
                true,
                &tick,
            );
            pb.suspend(|| {
                if json {
                    println!("{}", serde_json::to_string(&report).expect("json"));
                } else {
                    row(&report);
                }
            });
            pb.inc(1);
            skipped += u64::from(report.skipped.is_some());
            if checker == Checker::SimDfs {
                dfs_rows.push(report.clone());
            }
            if report.status == "fail" {
                failed.push(report.clone());
            }
            reports.push(report);
        }
        if let Some(c) = Coverage::of(&reports) {
            coverage.push(c);
        }
    }
    pb.finish_and_clear();
    let coverage_ok = !coverage.iter().any(Coverage::fails);
    if json {
        for c in &coverage {
            println!("{}", serde_json::to_string(c).expect("json"));
        }
    } else if !coverage.is_empty() {
        print_coverage(&coverage);
    }
    if !json {
        println!("\n* = not required of that checker (see `explore <scenario> --checker <checker>` for the measured reason)");
    }
    if !json && !dfs_rows.is_empty() {
        let exhausted = dfs_rows.iter().filter(|r| r.exhausted).count();
        println!(
            "\nexhaustive search (sim-dfs, {}): {exhausted} of {} scenarios exhausted",
            dfs_rows[0].bound.as_deref().unwrap_or("-"),
            dfs_rows.len()
        );
        for r in &dfs_rows {
            if let Some(d) = &r.dfs {
                println!(
                    "  {:<30} {:>9} schedules ({} complete, {} sleep-blocked), {} distinct outcomes, depth {}, max {} preemptions{}",
                    r.scenario,
                    d.executions,
                    d.complete,
                    d.blocked,
                    r.distinct_outcomes,
                    d.max_depth,
                    d.max_preemptions,
                    if r.exhausted { "" } else { ", NOT exhausted (cap reached)" }
                );
            }
        }
    }
    if failed.is_empty() && coverage_ok {
        if !json {
            println!(
                "\n{} runs passed, {skipped} skipped, 0 failed; every required goal reached",
                total - skipped
            );
        }
        return ExitCode::SUCCESS;
    }
    if !json {
        println!("\n{} run(s) failed:", failed.len());
        for r in &failed {
            failure(r);
        }
    }
    ExitCode::from(1)
}

/// Differential coverage of one scenario: every contract view another
/// checker reached must be reached by `sim-dfs` at the bound it reports.
#[derive(Serialize)]
struct Coverage {
    scenario: &'static str,
    /// `sim-dfs`'s bound (as its row reports it).
    bound: String,
    /// Views per checker.
    views: Vec<(&'static str, u64)>,
    /// Views `sim-dfs` missed: (checker that reached it, view, replay line).
    missed: Vec<(&'static str, String, String)>,
    /// The scenario's declared, measured coverage gap, if it has one: its
    /// misses are reported and do not fail the run.
    known_gap: Option<&'static str>,
}

impl Coverage {
    fn of(reports: &[Report]) -> Option<Coverage> {
        let dfs = reports
            .iter()
            .find(|r| r.checker == Checker::SimDfs.name())?;
        let scenario = Scenario::parse(dfs.scenario)?;
        let others: Vec<&Report> = reports
            .iter()
            .filter(|r| r.checker != dfs.checker && r.status != "skip")
            .collect();
        if others.is_empty() || dfs.status == "skip" {
            return None;
        }
        let missed =
            check::view::missed_by(&dfs.views, others.iter().map(|r| (r.checker, &r.views)));
        Some(Coverage {
            scenario: dfs.scenario,
            bound: dfs.bound.clone().unwrap_or_default(),
            views: reports
                .iter()
                .map(|r| (r.checker, r.distinct_outcomes))
                .collect(),
            missed,
            known_gap: scenario.coverage_gap,
        })
    }

    /// Whether this scenario fails the run: a miss with no declared gap.
    fn fails(&self) -> bool {
        !self.missed.is_empty() && self.known_gap.is_none()
    }
}

fn print_coverage(coverage: &[Coverage]) {
    let covered = coverage.iter().filter(|c| c.missed.is_empty()).count();
    println!(
        "\ndifferential coverage: sim-dfs reached every contract view another checker \
         reached on {covered} of {} scenarios",
        coverage.len()
    );
    for c in coverage.iter().filter(|c| !c.missed.is_empty()) {
        let per: Vec<String> = c.views.iter().map(|(k, n)| format!("{k} {n}")).collect();
        match c.known_gap {
            Some(why) => println!(
                "  {}: known gap, {} view(s) missed (views: {}): {why}",
                c.scenario,
                c.missed.len(),
                per.join(", ")
            ),
            None => {
                println!(
                    "  {}: sim-dfs ({}) missed {} view(s) (views: {}):",
                    c.scenario,
                    c.bound,
                    c.missed.len(),
                    per.join(", ")
                );
                for (checker, view, line) in &c.missed {
                    println!("    {view}  reached by {checker}");
                    if !line.is_empty() {
                        println!("      replay: cargo run --release -- replay '{line}'");
                    }
                }
            }
        }
    }
}

/// One fault's row of the kill matrix.
#[derive(Serialize)]
struct Kill {
    fault: Fault,
    killed: bool,
    rule: Option<&'static str>,
    checker: Option<&'static str>,
    scenario: Option<&'static str>,
    executions_to_kill: Option<u64>,
    replay: Option<String>,
    /// The shrunk simulator failure and its preemptions (before, after).
    shrunk: Option<(String, u32, u32)>,
    /// Executions to kill per checker (`null`: not killed by it).
    by_checker: Vec<(&'static str, Option<u64>)>,
}

fn kill_with(
    fault: Fault,
    checker: Checker,
    budget: &Budget,
    scenarios: &[&'static Scenario],
) -> Option<(Report, &'static str)> {
    // A fault is hunted on the scenarios that target it; only a fault no
    // selected scenario targets is hunted on all of them. (Falling back to
    // every scenario when a checker skips the targets ran loom and tokio
    // on 19 scenarios that cannot reach M2 or M13: 410 of `mutants`' 412
    // seconds.)
    let mut order: Vec<&'static Scenario> = scenarios
        .iter()
        .copied()
        .filter(|s| s.targets.contains(&fault))
        .collect();
    if order.is_empty() {
        order.extend_from_slice(scenarios);
    }
    let budget = Budget {
        stop_on: fault.must_violate(),
        ..budget.clone()
    };
    for scenario in order {
        let report = check::run(checker, scenario, Faults::none().with(fault), &budget, true);
        if let Some(v) = report
            .violations
            .iter()
            .find(|v| fault.must_violate().contains(&v.rule))
        {
            let rule = v.rule;
            return Some((report, rule));
        }
    }
    None
}

/// `mutants`.
pub(super) fn run_mutants(json: bool, sel: &Selection) -> ExitCode {
    let mut all_killed = true;
    if !json {
        let cols: Vec<String> = sel
            .checkers
            .iter()
            .map(|c| format!("{:>15}", c.name()))
            .collect();
        println!(
            "{:<5} {:<6} {:<6} {}  (executions to kill)",
            "fault",
            "killed",
            "rule",
            cols.join("")
        );
    }
    let mut kills = Vec::new();
    for fault in Fault::IMPLEMENTED {
        let mut kill = Kill {
            fault,
            killed: false,
            rule: None,
            checker: None,
            scenario: None,
            executions_to_kill: None,
            replay: None,
            shrunk: None,
            by_checker: Vec::new(),
        };
        for &checker in &sel.checkers {
            match kill_with(fault, checker, &sel.budget, &sel.scenarios) {
                Some((report, rule)) => {
                    kill.by_checker
                        .push((checker.name(), Some(report.executions)));
                    let v = report.violations.first();
                    if kill.shrunk.is_none() {
                        if let Some((s, (a, b))) =
                            v.and_then(|v| Some((v.shrunk.clone()?, v.preemptions?)))
                        {
                            kill.shrunk = Some((s, a, b));
                        }
                    }
                    if !kill.killed {
                        kill.killed = true;
                        kill.rule = Some(rule);
                        kill.checker = Some(checker.name());
                        kill.scenario = Some(report.scenario);
                        kill.executions_to_kill = Some(report.executions);
                        kill.replay = v.map(|v| v.replay.clone());
                    }
                }
                None => kill.by_checker.push((checker.name(), None)),
            }
        }
        all_killed &= kill.killed;
        if json {
            println!("{}", serde_json::to_string(&kill).expect("json"));
        } else {
            let cells: Vec<String> = kill
                .by_checker
                .iter()
                .map(|(_, n)| format!("{:>15}", n.map_or("-".to_string(), |n| n.to_string())))
                .collect();
            println!(
                "{:<5} {:<6} {:<6} {}",
                fault.to_string(),
                if kill.killed { "yes" } else { "NO" },
                kill.rule.unwrap_or("-"),
                cells.join("")
            );
        }
        kills.push(kill);
    }
    if !json {
        println!();
        for k in &kills {
            match &k.replay {
                Some(r) => {
                    println!("{} ({}):\n  replay '{r}'", k.fault, k.fault.about());
                    if let Some((s, a, b)) = &k.shrunk {
                        println!("  shrunk ({a} -> {b} preemptions) '{s}'");
                    }
                }
                None => println!("{} ({}): NOT KILLED", k.fault, k.fault.about()),
            }
        }
    }
    if all_killed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `explore`.
pub(super) fn run_explore(args: &ExploreArgs) -> ExitCode {
    let parsed = (|| -> Result<_, String> {
        let scenario = parse_scenario(&args.scenario)?;
        let checker = parse_checker(&args.checker)?;
        let fault = args.fault.as_deref().map(parse_fault).transpose()?;
        let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
        if args.resume && args.checkpoint.is_none() {
            return Err("--resume needs --checkpoint FILE".into());
        }
        if (args.checkpoint.is_some()
            || args.no_reduction
            || args.preemption_bound.is_some()
            || args.unbounded)
            && checker != Checker::SimDfs
        {
            return Err(
                "--checkpoint, --resume, --no-reduction, --preemption-bound and --unbounded apply to sim-dfs"
                    .into(),
            );
        }
        Ok((scenario, checker, Faults::from(fault), shard))
    })();
    let (scenario, checker, faults, shard) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut budget = Budget::PR;
    if let Some(n) = args.budget {
        budget = budget.with_executions(n);
    }
    if let Some(s) = shard {
        budget.shard = s;
    }
    let pb = bar(0, !args.json);
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let tick = |n: u64| pb.set_message(format!("{n} executions"));
    let report = if checker == Checker::SimDfs {
        check::quiet_panics();
        crate::check::sim_check::explore_dfs(
            scenario,
            faults,
            &DfsOptions {
                config: DfsConfig {
                    reduction: !args.no_reduction,
                    preemption_bound: match args.unbounded {
                        true => None,
                        false => args.preemption_bound.or(scenario.bounds.dfs),
                    },
                    shard: budget.shard,
                    ..DfsConfig::default()
                },
                max_executions: budget.dfs_executions,
                checkpoint: args.checkpoint.clone(),
                resume: args.resume,
                shrink: true,
                stop_on: &[],
            },
            args.stop_at_first,
            &tick,
        )
    } else {
        check::run_with_progress(
            checker,
            scenario,
            faults,
            &budget,
            args.stop_at_first,
            &tick,
        )
    };
    pb.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string(&report).expect("json"));
    } else {
        header();
        row(&report);
        println!("\nbound: {}", report.bound.as_deref().unwrap_or("-"));
        if let Some(d) = &report.dfs {
            println!(
                "search: {} schedules ({} complete, {} sleep-blocked, {} left to other shards), depth {}, max {} preemptions, {}",
                d.executions,
                d.complete,
                d.blocked,
                d.foreign,
                d.max_depth,
                d.max_preemptions,
                if report.exhausted { "exhausted" } else { "NOT exhausted" }
            );
            if let (false, Some(path)) = (report.exhausted, &args.checkpoint) {
                println!(
                    "checkpoint written to {}; continue with --resume",
                    path.display()
                );
            }
        }
        println!("distinct terminal outcomes: {}", report.distinct_outcomes);
        println!("outcome labels:");
        for (k, v) in &report.outcomes {
            println!("  {v:>9}  {k}");
        }
        println!("goals:");
        for g in &report.goals {
            println!("  {:>9}  {} ({})", g.hits, g.goal, g.about);
            if let Some(why) = g.excused {
                println!("             not required of {}: {why}", report.checker);
            }
        }
        if report.status == "fail" {
            println!();
            failure(&report);
        }
    }
    if report.error.is_some() && report.violations.is_empty() && report.executions == 0 {
        return ExitCode::from(2);
    }
    if report.status == "fail" {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
