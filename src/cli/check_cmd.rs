//! `check`, `mutants` and `explore`: run checkers, print tables.
//!
//! A table row is one line of counts, then its bound and its goals on
//! lines of their own, so that every line fits 100 columns (the figures
//! below illustrate the layout; they are not measured):
//!
//! ```text
//! scenario                       checker        executions distinct result seconds  space
//! dispose-mid-turn               sim-dfs             12672       93 pass      1.25  exhausted
//!   bound: source-DPOR + sleep sets, preemptions unbounded
//!   goals: dispose-during-step=3200 tail-cleared=4400
//! ```
//!
//! The conclusion (differential coverage, the summary, the exit code) is
//! `report::conclude`, shared with `merge`.

use super::args::{
    self, parse_checker, parse_fault, parse_scenario, program, ExploreArgs, Selection,
};
use super::report::table::{failure, header, row, rows_of, space, words, wrapped, wrapped_at};
use super::report::{self, Run};
use crate::check::{self, Budget, Checker, DfsOptions, Report};
use crate::cli::interrupt::{self, EXIT_INTERRUPTED};
use crate::faults::{Fault, Faults};
use crate::scenarios::Scenario;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lifecycle_sim::{DfsConfig, Shard};
use serde::Serialize;
use std::io::IsTerminal;
use std::process::ExitCode;

/// The rule-clause table, validated before any work: one line on stderr
/// per broken clause (`R2.2 "…": no exercise`); `false` if any.
pub(super) fn clauses_complete() -> bool {
    let mut problems = crate::clauses::validate(crate::clauses::CLAUSES);
    if !crate::clauses::sources::available() {
        // A binary away from its checkout: the scenario goals are still
        // validated; the exercises in test sources cannot be.
        problems.retain(|p| !matches!(p.what, crate::clauses::Broken::Source(..)));
        eprintln!(
            "warning: {} is not there, so the clauses' conformance and integration \
             exercises are not verified",
            crate::clauses::sources::dir()
        );
    }
    for p in &problems {
        eprintln!("{p}");
    }
    if !problems.is_empty() {
        eprintln!(
            "error: {} broken clause(s): each needs an exercise with a goal (`{} list --rules`)",
            problems.len(),
            program()
        );
    }
    problems.is_empty()
}

/// `check`. It refuses to run (exit 1) while the rule-clause table is
/// incomplete ([`clauses_complete`]).
pub(super) fn run_check(json: bool, progress: bool, tier: &str, sel: &Selection) -> ExitCode {
    if !clauses_complete() {
        return ExitCode::from(1);
    }
    let shard = sel.budget.shard;
    let plan = rows_of(sel, shard);
    let pb = bar(plan.len() as u64, progress && !json);
    if !json {
        pb.suspend(header);
    }
    let mut reports: Vec<Report> = Vec::new();
    let mut interrupted = false;
    for &(scenario, checker) in &plan {
        if interrupt::requested() {
            interrupted = true;
            break;
        }
        let name = format!("{} / {checker}", scenario.name);
        pb.set_message(name.clone());
        let tick = |n: u64| pb.set_message(format!("{name}: {n} executions"));
        let report =
            check::run_with_progress(checker, scenario, Faults::none(), &sel.budget, true, &tick);
        pb.suspend(|| {
            if json {
                println!("{}", report::row_line(&report));
            } else {
                row(&report);
            }
        });
        pb.inc(1);
        interrupted |= report.stopped == Some(check::Stopped::Interrupted);
        reports.push(report);
        if interrupted {
            break;
        }
    }
    pb.finish_and_clear();
    report::conclude(
        &Run {
            settings: report::Settings::of(tier, sel),
            shard,
            planned: plan.len(),
            reports,
            interrupted: interrupted || interrupt::requested(),
            merged: Vec::new(),
        },
        json,
    )
}

/// One fault's row of the kill matrix.
#[derive(Serialize)]
struct Kill {
    fault: Fault,
    killed: bool,
    rule: Option<crate::oracle::RuleId>,
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
) -> Option<(Report, crate::oracle::RuleId)> {
    // The races of the server's request handling that no scenario names
    // are the generated workloads' to find (`generate`).
    if crate::generate::TARGETS.contains(&fault) {
        let report = crate::generate::hunt(fault, checker, budget.stop)?;
        let rule = report
            .violations
            .iter()
            .find(|v| v.rule.is_in(fault.must_violate()))?
            .rule;
        return Some((report, rule));
    }
    // A fault is hunted on the scenarios that target it; only a fault no
    // selected scenario targets is hunted on all of them. (Falling back to
    // every scenario when a checker skips the targets would run loom and
    // tokio on the many scenarios that cannot reach M2 or M13: nearly all
    // of `mutants`' time.)
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
        dfs_shallow: true,
        ..budget.clone()
    };
    for scenario in order {
        if interrupt::requested() {
            return None;
        }
        let report = check::run(checker, scenario, Faults::none().with(fault), &budget, true);
        if let Some(v) = report
            .violations
            .iter()
            .find(|v| v.rule.is_in(fault.must_violate()))
        {
            let rule = v.rule;
            return Some((report, rule));
        }
    }
    None
}

/// The width of a checker's column in the kill matrix.
fn column(c: Checker) -> usize {
    c.name().len().max(9) + 1
}

/// `mutants`. Ctrl-C stops it after the run in progress: the faults done
/// so far are printed, then it exits 130.
pub(super) fn run_mutants(json: bool, sel: &Selection) -> ExitCode {
    let mut all_killed = true;
    if !json {
        let cols: String = sel
            .checkers
            .iter()
            .map(|&c| format!("{:>w$}", c.name(), w = column(c)))
            .collect();
        println!("{:<5} {:<6} {:<6}{cols}", "fault", "killed", "rule");
        println!("{:<19}(executions to kill; - not killed)", "");
    }
    let mut kills = Vec::new();
    let mut interrupted = false;
    for fault in Fault::ALL {
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
            if interrupt::requested() {
                break;
            }
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
        if interrupt::requested() {
            // This fault's row is incomplete: not printed, not judged.
            interrupted = true;
            break;
        }
        all_killed &= kill.killed;
        if json {
            println!("{}", serde_json::to_string(&kill).expect("json"));
        } else {
            let cells: String = kill
                .by_checker
                .iter()
                .zip(&sel.checkers)
                .map(|((_, n), &c)| {
                    let n = n.map_or("-".to_string(), |n| n.to_string());
                    format!("{n:>w$}", w = column(c))
                })
                .collect();
            println!(
                "{:<5} {:<6} {:<6}{cells}",
                fault.to_string(),
                if kill.killed { "yes" } else { "NO" },
                kill.rule.map_or("-", |r| r.name()),
            );
        }
        kills.push(kill);
    }
    if !json {
        println!();
        for k in &kills {
            match &k.replay {
                Some(r) => {
                    println!(
                        "{} ({}):\n  {} replay '{r}'",
                        k.fault,
                        k.fault.about(),
                        program()
                    );
                    if let Some((s, a, b)) = &k.shrunk {
                        let how = if s == r {
                            format!("already minimal at {b} preemptions")
                        } else {
                            format!("{a} -> {b} preemptions")
                        };
                        println!("  shrunk ({how}): {} replay '{s}'", program());
                    }
                }
                None => println!("{} ({}): NOT KILLED", k.fault, k.fault.about()),
            }
        }
        let killed = kills.iter().filter(|k| k.killed).count();
        let total = Fault::ALL.len();
        if interrupted {
            println!(
                "\ninterrupted (Ctrl-C) after {} of {total} faults: {killed} killed, {} not",
                kills.len(),
                kills.len() - killed
            );
        } else {
            println!(
                "\n{killed} of {total} faults killed, {} not killed",
                total - killed
            );
        }
    }
    if interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if all_killed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The search `explore` asks for, checked before any work: one line for
/// stderr if it cannot run.
struct Exploration {
    scenario: &'static Scenario,
    checker: Checker,
    faults: Faults,
    budget: Budget,
    dfs: Option<DfsOptions>,
}

fn exploration(args: &ExploreArgs) -> Result<Exploration, String> {
    let scenario = parse_scenario(&args.scenario)?;
    let checker = parse_checker(&args.checker)?;
    let fault = args.fault.as_deref().map(parse_fault).transpose()?;
    let faults = Faults::from(fault);
    let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
    if shard.is_some() && !checker.splits() {
        return Err(format!(
            "--shard splits sim, sim-dfs and tokio, not {checker} (check gives each {checker} \
             row whole to one shard)"
        ));
    }
    if args.resume && args.checkpoint.is_none() {
        return Err("--resume needs --checkpoint FILE".into());
    }
    if (args.checkpoint.is_some()
        || args.no_reduction
        || args.preemption_bound.is_some()
        || args.unbounded
        || args.optimal)
        && checker != Checker::SimDfs
    {
        return Err(
            "--checkpoint, --resume, --no-reduction, --preemption-bound, --unbounded and --optimal apply to sim-dfs"
                .into(),
        );
    }
    if args.optimal && !args.unbounded && (args.preemption_bound.or(scenario.bounds.dfs)).is_some()
    {
        return Err(format!(
            "--optimal needs an unbounded search: {} is searched at a preemption bound (add --unbounded)",
            scenario.name
        ));
    }
    let mut budget = Budget {
        stop: interrupt::STOP,
        ..Budget::PR
    };
    if let Some(n) = args.budget {
        budget = budget.with_executions(args::in_range("--budget", n, 1, args::MAX_COUNT)?);
    }
    if let Some(b) = args.preemption_bound {
        args::in_range("--preemption-bound", b.into(), 0, args::MAX_PREEMPTIONS)?;
    }
    budget.shard = shard.unwrap_or(Shard::ALL);
    let dfs = (checker == Checker::SimDfs).then(|| DfsOptions {
        config: DfsConfig {
            reduction: !args.no_reduction,
            preemption_bound: match args.unbounded {
                true => None,
                false => args.preemption_bound.or(scenario.bounds.dfs),
            },
            shard: budget.shard,
            optimal: args.optimal,
            ..DfsConfig::default()
        },
        max_executions: budget.dfs_executions,
        checkpoint: args.checkpoint.clone(),
        resume: args.resume,
        shrink: true,
        stop_on: &[],
        stop: budget.stop,
        shallow: budget.dfs_shallow,
    });
    if let Some(opts) = &dfs {
        check::explore::sim_dfs::check_checkpoint(scenario, faults, opts)?;
    }
    Ok(Exploration {
        scenario,
        checker,
        faults,
        budget,
        dfs,
    })
}

/// `explore`.
pub(super) fn run_explore(args: &ExploreArgs) -> ExitCode {
    let e = match exploration(args) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(err) = interrupt::install() {
        eprintln!("warning: Ctrl-C will kill at once ({err})");
    }
    let pb = bar(0, !args.json);
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let tick = |n: u64| pb.set_message(format!("{n} executions"));
    let report = match &e.dfs {
        Some(opts) => {
            check::quiet_panics();
            check::explore::sim_dfs::explore_dfs(
                e.scenario,
                e.faults,
                opts,
                args.stop_at_first,
                &tick,
            )
        }
        None => check::run_with_progress(
            e.checker,
            e.scenario,
            e.faults,
            &e.budget,
            args.stop_at_first,
            &tick,
        ),
    };
    pb.finish_and_clear();
    let interrupted = report.stopped == Some(check::Stopped::Interrupted) || interrupt::requested();
    if args.json {
        println!("{}", serde_json::to_string(&report).expect("json"));
    } else {
        explained(&report, args, interrupted);
    }
    if interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if report.error.is_some() && report.violations.is_empty() && report.executions == 0 {
        ExitCode::from(2)
    } else if report.status == check::Status::Fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `explore`'s text report.
fn explained(report: &Report, args: &ExploreArgs, interrupted: bool) {
    header();
    row(report);
    if let Some(d) = &report.dfs {
        let state = match (report.exhausted, space(report)) {
            (true, _) => "exhausted".to_string(),
            (false, s) => format!("NOT exhausted ({s})"),
        };
        println!();
        wrapped(
            "search:",
            &words(&format!(
                "{} schedules ({} complete, {} sleep-blocked, {} left to other shards), \
                 depth {}, max {} preemptions, {state}",
                d.executions, d.complete, d.blocked, d.foreign, d.max_depth, d.max_preemptions,
            )),
        );
        if args.optimal {
            wrapped(
                "wakeup trees:",
                &words(&format!(
                    "{} wakeup-branch steps failed the await they had passed where their race \
                     was found (the reversal ran the check before the write it needed), and {} of \
                     the {} sleep-blocked runs followed one; {} branches were dropped because \
                     their task was not ready where they were owed",
                    d.await_stalled, d.blocked_after_stall, d.blocked, d.wakeup_dropped,
                )),
            );
        }
        let saved = report
            .cause
            .as_deref()
            .is_none_or(|c| !c.contains("cannot write"));
        if let (false, true, Some(path)) = (report.exhausted, saved, &args.checkpoint) {
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
        wrapped_at(
            &format!("  {:>9}  {}:", g.hits, g.goal),
            13,
            &words(g.about),
        );
        if let Some(why) = g.excused {
            wrapped_at(
                &format!("{:13}not required of {}:", "", report.checker),
                13,
                &words(why),
            );
        }
    }
    if interrupted {
        println!(
            "\ninterrupted (Ctrl-C) after {} executions: goals not judged",
            report.executions
        );
    }
    if report.status == check::Status::Fail {
        println!();
        failure(report);
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
