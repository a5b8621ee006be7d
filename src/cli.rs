//! The command line: `check`, `mutants`, `replay`, `list`.
//!
//! Exit codes: 0 pass, 1 a violation (or a fault not killed), 2 bad input.

use crate::check::{self, Budget, Checker, ReplayLine, Report};
use crate::faults::{Fault, Faults};
use crate::scenarios::ScenarioId;
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use std::process::ExitCode;

/// Agent lifecycle contracts and the harness that checks them.
#[derive(Parser, Debug)]
#[command(name = "lifecycle", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Every scenario under every checker at the PR-gate budget; a table.
    Check(CheckArgs),
    /// Switch each fault on and show which checker kills it.
    Mutants(CheckArgs),
    /// Replay a failure from the line `check` or `mutants` printed.
    Replay {
        /// The replay line (quote it).
        line: String,
    },
    /// Scenarios, rules, faults and checkers.
    List,
    /// Serve the Agent Client Protocol on stdio (a scripted agent; see
    /// `agent_lifecycle::acp::server`).
    Acp {
        /// Keep session logs as JSON-lines files here (default: in memory).
        #[arg(long)]
        sessions: Option<std::path::PathBuf>,
    },
    /// Internal: runs loom in its own process (see `check::loom_check`).
    #[command(hide = true)]
    LoomWorker {
        scenario: String,
        #[arg(long)]
        pb: usize,
        #[arg(long)]
        fault: Option<String>,
        #[arg(long)]
        stop_at_first: bool,
        #[arg(long)]
        replay_exec: Option<u64>,
    },
}

#[derive(Args, Debug, Clone)]
struct CheckArgs {
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Only this scenario (repeatable).
    #[arg(long)]
    scenario: Vec<String>,
    /// Only this checker (repeatable): sim, loom, shuttle-random, shuttle-pct, tokio.
    #[arg(long)]
    checker: Vec<String>,
    /// Simulator seeds.
    #[arg(long, default_value_t = Budget::PR.sim_seeds)]
    sim_seeds: u64,
    /// Iterations per shuttle scheduler.
    #[arg(long, default_value_t = Budget::PR.shuttle_iterations)]
    shuttle_iterations: usize,
    /// PCT depth.
    #[arg(long, default_value_t = Budget::PR.pct_depth)]
    pct_depth: usize,
    /// loom preemption bound.
    #[arg(long, default_value_t = Budget::PR.loom_preemptions)]
    loom_preemptions: usize,
    /// Runs on tokio.
    #[arg(long, default_value_t = Budget::PR.tokio_runs)]
    tokio_runs: u64,
}

struct Selection {
    scenarios: Vec<ScenarioId>,
    checkers: Vec<Checker>,
    budget: Budget,
}

impl CheckArgs {
    fn select(&self) -> Result<Selection, String> {
        let scenarios = if self.scenario.is_empty() {
            ScenarioId::ALL.to_vec()
        } else {
            self.scenario
                .iter()
                .map(|s| {
                    ScenarioId::parse(s)
                        .ok_or_else(|| format!("unknown scenario {s:?} (see `lifecycle list`)"))
                })
                .collect::<Result<_, _>>()?
        };
        let checkers = if self.checker.is_empty() {
            Checker::ALL.to_vec()
        } else {
            self.checker
                .iter()
                .map(|c| {
                    Checker::parse(c)
                        .ok_or_else(|| format!("unknown checker {c:?} (see `lifecycle list`)"))
                })
                .collect::<Result<_, _>>()?
        };
        if self.pct_depth == 0 {
            return Err("--pct-depth must be at least 1".into());
        }
        Ok(Selection {
            scenarios,
            checkers,
            budget: Budget {
                sim_seeds: self.sim_seeds,
                shuttle_iterations: self.shuttle_iterations,
                pct_depth: self.pct_depth,
                loom_preemptions: self.loom_preemptions,
                tokio_runs: self.tokio_runs,
            },
        })
    }
}

/// Parse the arguments and run; the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    match cli.command {
        Command::Check(args) => with_selection(&args, |sel| run_check(&args, sel)),
        Command::Mutants(args) => with_selection(&args, |sel| run_mutants(&args, sel)),
        Command::Replay { line } => run_replay(&line),
        Command::LoomWorker {
            scenario,
            pb,
            fault,
            stop_at_first,
            replay_exec,
        } => {
            let Some(scenario) = ScenarioId::parse(&scenario) else {
                eprintln!("error: unknown scenario {scenario:?}");
                return ExitCode::from(2);
            };
            let fault = match fault.as_deref().map(Fault::parse) {
                None => None,
                Some(Some(f)) => Some(f),
                Some(None) => {
                    eprintln!("error: unknown fault");
                    return ExitCode::from(2);
                }
            };
            check::loom_check::worker_main(
                scenario,
                Faults::from(fault),
                pb,
                stop_at_first,
                replay_exec,
            );
            ExitCode::SUCCESS
        }
        Command::Acp { sessions } => {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start tokio: {e}");
                    return ExitCode::from(2);
                }
            };
            match rt.block_on(crate::acp::server::serve_stdio(sessions)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Command::List => {
            list();
            ExitCode::SUCCESS
        }
    }
}

fn with_selection(args: &CheckArgs, f: impl FnOnce(&Selection) -> ExitCode) -> ExitCode {
    match args.select() {
        Ok(sel) => f(&sel),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn print_table_header() {
    println!(
        "{:<30} {:<15} {:>10} {:>12} {:<6} {:>8}  outcomes",
        "scenario", "checker", "executions", "invariants", "result", "seconds"
    );
}

fn print_row(r: &Report) {
    let outcomes: Vec<String> = r.outcomes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let exhausted = match (&r.skipped, r.exhausted) {
        (Some(why), _) => format!(" ({why})"),
        (None, true) => " (exhausted)".to_string(),
        (None, false) => String::new(),
    };
    println!(
        "{:<30} {:<15} {:>10} {:>12} {:<6} {:>8.2}  {}{}",
        r.scenario,
        r.checker,
        r.executions,
        r.invariants_checked,
        r.status,
        r.seconds,
        outcomes.join(" "),
        exhausted
    );
}

fn print_failure(r: &Report) {
    if let Some(e) = &r.error {
        println!("  error: {e}");
    }
    for v in &r.violations {
        println!(
            "  {} violated in {} on {}: {}",
            v.rule, r.scenario, r.checker, v.message
        );
    }
    if let Some(v) = r.violations.first() {
        println!("  replay: cargo run --release -- replay '{}'", v.replay);
    }
}

fn run_check(args: &CheckArgs, sel: &Selection) -> ExitCode {
    let mut failed = Vec::new();
    if !args.json {
        print_table_header();
    }
    for &scenario in &sel.scenarios {
        for &checker in &sel.checkers {
            let report = check::run(checker, scenario, Faults::none(), &sel.budget, true);
            if args.json {
                println!("{}", serde_json::to_string(&report).expect("json"));
            } else {
                print_row(&report);
            }
            if report.status == "fail" {
                failed.push(report);
            }
        }
    }
    if failed.is_empty() {
        if !args.json {
            println!(
                "all {} runs passed",
                sel.scenarios.len() * sel.checkers.len()
            );
        }
        return ExitCode::SUCCESS;
    }
    if !args.json {
        println!("\n{} run(s) failed:", failed.len());
        for r in &failed {
            print_failure(r);
        }
    }
    ExitCode::from(1)
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
    /// Executions to kill per checker (`null`: not killed by it).
    by_checker: Vec<(&'static str, Option<u64>)>,
}

fn kill_with(fault: Fault, checker: Checker, sel: &Selection) -> Option<(Report, &'static str)> {
    let mut order: Vec<ScenarioId> = sel
        .scenarios
        .iter()
        .copied()
        .filter(|s| s.targets().contains(&fault))
        .collect();
    order.extend(
        sel.scenarios
            .iter()
            .copied()
            .filter(|s| !s.targets().contains(&fault)),
    );
    for scenario in order {
        let report = check::run(
            checker,
            scenario,
            Faults::none().with(fault),
            &sel.budget,
            true,
        );
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

fn run_mutants(args: &CheckArgs, sel: &Selection) -> ExitCode {
    let mut all_killed = true;
    if !args.json {
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
    let mut lines = Vec::new();
    for fault in Fault::IMPLEMENTED {
        let mut kill = Kill {
            fault,
            killed: false,
            rule: None,
            checker: None,
            scenario: None,
            executions_to_kill: None,
            replay: None,
            by_checker: Vec::new(),
        };
        for &checker in &sel.checkers {
            match kill_with(fault, checker, sel) {
                Some((report, rule)) => {
                    kill.by_checker
                        .push((checker.name(), Some(report.executions)));
                    if !kill.killed {
                        kill.killed = true;
                        kill.rule = Some(rule);
                        kill.checker = Some(checker.name());
                        kill.scenario = Some(report.scenario);
                        kill.executions_to_kill = Some(report.executions);
                        kill.replay = report.violations.first().map(|v| v.replay.clone());
                    }
                }
                None => kill.by_checker.push((checker.name(), None)),
            }
        }
        all_killed &= kill.killed;
        if args.json {
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
        lines.push(kill);
    }
    if !args.json {
        println!();
        for k in &lines {
            match &k.replay {
                Some(r) => println!("{} ({}): replay '{}'", k.fault, k.fault.about(), r),
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

fn run_replay(line: &str) -> ExitCode {
    let parsed = match ReplayLine::parse(line) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    println!("replaying {parsed}");
    println!("\ntrace (tracing events per task, virtual time on the simulator):");
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_target(false)
        .with_ansi(false)
        .with_timer(VirtualTime)
        .with_writer(std::io::stdout)
        .try_init();
    let replayed = match parsed.replay() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if !replayed.schedule.is_empty() {
        println!("\nschedule (simulator decisions, virtual time):");
        for s in &replayed.schedule {
            println!("  {s}");
        }
    }
    println!("\njournal of agent-1:");
    for r in &replayed.journal {
        println!("  {r}");
    }
    if !replayed.outcome.world.is_empty() {
        println!("\nworld journal (registry, store, scopes, tool-bash):");
        for (i, e) in replayed.outcome.world.iter().enumerate() {
            println!("  #{i:<3} {e}");
        }
    }
    if let Some(h) = replayed.trace_hash {
        println!("\ntrace hash: {h:016x}");
    }
    println!("outcome: {}", replayed.outcome.label);
    if replayed.outcome.violations.is_empty() {
        println!("no violation: the failure did not reproduce");
        return ExitCode::SUCCESS;
    }
    for v in &replayed.outcome.violations {
        println!(
            "{} violated in {}: {}",
            v.rule,
            parsed.scenario.info().name,
            v.message
        );
    }
    println!("replay: cargo run --release -- replay '{parsed}'");
    ExitCode::from(1)
}

/// Timestamps trace lines with the simulator's virtual time.
struct VirtualTime;

impl tracing_subscriber::fmt::time::FormatTime for VirtualTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        if lifecycle_sim::is_running() {
            write!(w, "t={:>5}ms", lifecycle_sim::now_ms())
        } else {
            write!(w, "t=    -  ")
        }
    }
}

fn list() {
    println!("scenarios:");
    for s in ScenarioId::ALL {
        let i = s.info();
        println!(
            "  {:<30} rules {:<22} {}",
            i.name,
            i.rules.join(","),
            i.about
        );
    }
    println!("\ncheckers:");
    for c in Checker::ALL {
        println!("  {c}");
    }
    println!(
        "\nrules checked by the oracles on every execution: {}",
        crate::oracle::ORACLE_RULES.join(" ")
    );
    println!("\nfaults (SPEC §3):");
    for f in Fault::ALL {
        let on = if Fault::IMPLEMENTED.contains(&f) {
            "switchable"
        } else {
            "later part"
        };
        println!(
            "  {:<4} {:<11} must violate {:<6} {}",
            f.to_string(),
            on,
            f.must_violate().join("/"),
            f.about()
        );
    }
}
