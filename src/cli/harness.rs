//! The harness commands: `check`, `mutants`, `explore`, `replay`,
//! `shrink`, `model`, `bench`, `list` (feature `harness`).

#[path = "check_cmd.rs"]
mod check_cmd;
#[path = "replay_cmd.rs"]
mod replay_cmd;

use crate::check::{self, Budget, Checker};
use crate::faults::{Fault, Faults};
use crate::scenarios::{self, Scenario};
use clap::{Args, Subcommand};
use lifecycle_sim::Shard;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub(super) enum HarnessCommand {
    /// Every scenario under every checker at a tier's budget; a table.
    Check(CheckArgs),
    /// Switch each fault on and show which checker kills it.
    Mutants(CheckArgs),
    /// One scenario, one checker, one budget: the detailed report.
    Explore(ExploreArgs),
    /// Replay a failure from the line `check` or `mutants` printed.
    Replay {
        /// The replay line (quote it).
        line: String,
        /// Also draw the execution as a swimlane SVG here (simulator lines).
        #[arg(long)]
        svg: Option<std::path::PathBuf>,
    },
    /// Minimise a simulator failure: fewest preemptions, then shortest.
    Shrink {
        /// The replay line of a `sim` or `sim-dfs` failure (quote it).
        line: String,
    },
    /// Check the executable specification models (crate `lifecycle-models`):
    /// every model's properties, every fault variant's counterexample.
    Model {
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks: the simulator side by side with shuttle and loom.
    Bench(crate::bench::BenchArgs),
    /// Scenarios, rules, faults and checkers.
    List,
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
        #[arg(long)]
        max: Option<usize>,
    },
}

#[derive(Args, Debug, Clone)]
pub(super) struct CheckArgs {
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Only this scenario (repeatable).
    #[arg(long)]
    scenario: Vec<String>,
    /// Only this checker (repeatable): sim, sim-dfs, loom, shuttle-random,
    /// shuttle-pct, tokio.
    #[arg(long)]
    checker: Vec<String>,
    /// The budget tier: `pr` (the PR gate) or `nightly` (deeper).
    #[arg(long, default_value = "pr")]
    tier: String,
    /// Executions for every sampling checker, and the cap of loom and of
    /// the exhaustive search (overrides the tier).
    #[arg(long)]
    budget: Option<u64>,
    /// Run part k of n of every search (`1/4`): disjoint seed ranges and
    /// disjoint subtrees of the exhaustive search.
    #[arg(long)]
    shard: Option<String>,
    /// `sim` portfolio seeds.
    #[arg(long)]
    sim_seeds: Option<u64>,
    /// `sim-dfs`: executions before it stops unexhausted.
    #[arg(long)]
    dfs_executions: Option<u64>,
    /// `sim-dfs` preemption bound (default: unbounded).
    #[arg(long)]
    dfs_preemptions: Option<u32>,
    /// Iterations per shuttle scheduler.
    #[arg(long)]
    shuttle_iterations: Option<usize>,
    /// PCT depth (`sim` cycles 1..=depth; shuttle-pct uses it).
    #[arg(long)]
    pct_depth: Option<usize>,
    /// loom preemption bound.
    #[arg(long)]
    loom_preemptions: Option<usize>,
    /// Runs on tokio.
    #[arg(long)]
    tokio_runs: Option<u64>,
    /// Do not shrink simulator failures.
    #[arg(long)]
    no_shrink: bool,
    /// No progress bars (they are drawn only on a terminal anyway).
    #[arg(long)]
    no_progress: bool,
}

#[derive(Args, Debug, Clone)]
pub(super) struct ExploreArgs {
    /// The scenario.
    scenario: String,
    /// The checker.
    #[arg(long, default_value = "sim-dfs")]
    checker: String,
    /// Executions (sampling checkers) or the cap of the exhaustive search.
    #[arg(long)]
    budget: Option<u64>,
    /// Switch a fault on (M1..M24).
    #[arg(long)]
    fault: Option<String>,
    /// `sim-dfs`: explore without sleep-set reduction.
    #[arg(long)]
    no_reduction: bool,
    /// `sim-dfs` preemption bound (default: the scenario's PR-tier bound,
    /// the one `check` reports).
    #[arg(long, conflicts_with = "unbounded")]
    preemption_bound: Option<u32>,
    /// `sim-dfs`: no preemption bound (the whole space; may not finish).
    #[arg(long)]
    unbounded: bool,
    /// Part k of n (`2/4`).
    #[arg(long)]
    shard: Option<String>,
    /// `sim-dfs`: save the search here when it stops early.
    #[arg(long)]
    checkpoint: Option<std::path::PathBuf>,
    /// `sim-dfs`: continue the search saved in `--checkpoint`.
    #[arg(long)]
    resume: bool,
    /// Stop at the first failure.
    #[arg(long)]
    stop_at_first: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

struct Selection {
    scenarios: Vec<&'static Scenario>,
    checkers: Vec<Checker>,
    budget: Budget,
}

fn parse_scenario(s: &str) -> Result<&'static Scenario, String> {
    Scenario::parse(s).ok_or_else(|| format!("unknown scenario {s:?} (see `lifecycle list`)"))
}

fn parse_checker(c: &str) -> Result<Checker, String> {
    Checker::parse(c).ok_or_else(|| format!("unknown checker {c:?} (see `lifecycle list`)"))
}

fn parse_fault(f: &str) -> Result<Fault, String> {
    match Fault::parse(f) {
        Some(f) if Fault::IMPLEMENTED.contains(&f) => Ok(f),
        Some(f) => Err(format!("fault {f} is not switchable in this build")),
        None => Err(format!("unknown fault {f:?} (M1..M24)")),
    }
}

impl CheckArgs {
    fn select(&self) -> Result<Selection, String> {
        let scenarios = if self.scenario.is_empty() {
            scenarios::ALL.to_vec()
        } else {
            self.scenario
                .iter()
                .map(|s| parse_scenario(s))
                .collect::<Result<_, _>>()?
        };
        let checkers = if self.checker.is_empty() {
            Checker::ALL.to_vec()
        } else {
            self.checker
                .iter()
                .map(|c| parse_checker(c))
                .collect::<Result<_, _>>()?
        };
        let mut budget = Budget::tier(&self.tier)
            .ok_or_else(|| format!("unknown tier {:?}: expected pr or nightly", self.tier))?;
        if let Some(n) = self.budget {
            if n == 0 {
                return Err("--budget must be at least 1".into());
            }
            budget = budget.with_executions(n);
        }
        if let Some(s) = &self.shard {
            budget.shard = Shard::parse(s)?;
        }
        budget.sim_seeds = self.sim_seeds.unwrap_or(budget.sim_seeds);
        budget.dfs_executions = self.dfs_executions.unwrap_or(budget.dfs_executions);
        budget.dfs_preemptions = self.dfs_preemptions.or(budget.dfs_preemptions);
        budget.shuttle_iterations = self.shuttle_iterations.unwrap_or(budget.shuttle_iterations);
        budget.pct_depth = self.pct_depth.unwrap_or(budget.pct_depth);
        budget.loom_preemptions = self.loom_preemptions.unwrap_or(budget.loom_preemptions);
        budget.tokio_runs = self.tokio_runs.unwrap_or(budget.tokio_runs);
        budget.shrink = !self.no_shrink;
        if budget.pct_depth == 0 {
            return Err("--pct-depth must be at least 1".into());
        }
        Ok(Selection {
            scenarios,
            checkers,
            budget,
        })
    }
}

/// Run one harness command; the process exit code.
pub(super) fn run(command: HarnessCommand) -> ExitCode {
    match command {
        HarnessCommand::Check(args) => with_selection(&args, |sel| {
            check_cmd::run_check(args.json, !args.no_progress, sel)
        }),
        HarnessCommand::Mutants(args) => {
            with_selection(&args, |sel| check_cmd::run_mutants(args.json, sel))
        }
        HarnessCommand::Explore(args) => check_cmd::run_explore(&args),
        HarnessCommand::Replay { line, svg } => replay_cmd::run_replay(&line, svg.as_deref()),
        HarnessCommand::Shrink { line } => replay_cmd::run_shrink(&line),
        HarnessCommand::Model { json } => {
            let reports = lifecycle_models::report::run_all();
            if json {
                println!("{}", lifecycle_models::report::to_json(&reports));
            } else {
                print!("{}", lifecycle_models::report::render_table(&reports));
            }
            if lifecycle_models::report::all_ok(&reports) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        HarnessCommand::Bench(args) => crate::bench::run(&args),
        HarnessCommand::LoomWorker {
            scenario,
            pb,
            fault,
            stop_at_first,
            replay_exec,
            max,
        } => {
            let Some(scenario) = Scenario::parse(&scenario) else {
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
                max,
                stop_at_first,
                replay_exec,
            );
            ExitCode::SUCCESS
        }
        HarnessCommand::List => {
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

fn list() {
    println!("scenarios:");
    for s in scenarios::ALL {
        let t = crate::check::sim_check::tasks(s);
        println!(
            "  {:<30} rules {:<22} tasks {} ({} without bystanders)  {}",
            s.name,
            s.rules.join(","),
            t.all,
            t.without_bystanders,
            s.about
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
