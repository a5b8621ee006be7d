//! The harness commands: `check`, `mutants`, `explore`, `classes`, `generate`, `merge`,
//! `replay`, `shrink`, `model`, `bench`, `list` (feature `harness`).
//!
//! Every number a command takes is checked before any work starts: zero
//! and absurd values (above [`MAX_COUNT`] executions, [`MAX_PREEMPTIONS`]
//! preemptions, [`MAX_PCT_DEPTH`] PCT depth) exit 2 with one line on
//! stderr, and so do unwritable checkpoint paths.

#[path = "args.rs"]
mod args;
#[path = "check_cmd.rs"]
mod check_cmd;
#[path = "classes_cmd.rs"]
mod classes_cmd;
#[path = "generate_cmd.rs"]
mod generate_cmd;
#[path = "merge_cmd.rs"]
mod merge_cmd;
#[path = "replay_cmd.rs"]
mod replay_cmd;
#[path = "report/mod.rs"]
mod report;

use args::{
    in_range, parse_checker, parse_scenario, ExploreArgs, Selection, MAX_COUNT, MAX_PCT_DEPTH,
    MAX_PREEMPTIONS,
};

use crate::check::{Budget, Checker};
use crate::faults::Fault;
use crate::scenarios;
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
    /// The class census of one scenario: the classes of execution a naive
    /// search reaches, and whether sim-dfs runs each of them.
    Classes(classes_cmd::ClassesArgs),
    /// Generated client workloads (2–4 concurrent clients of the server)
    /// through the whole agent, every history judged against the ACP
    /// model: the races nobody wrote down.
    Generate(generate_cmd::GenerateArgs),
    /// Judge the union of `check --shard k/n --json` outputs: sum the
    /// shards, then judge goals and differential coverage as `check` does.
    Merge {
        /// The shards' `--json` outputs, one file per shard, in any order.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// JSON lines (the format `check --json` writes) instead of the
        /// table: a merge is itself a whole run.
        #[arg(long)]
        json: bool,
    },
    /// Replay a failure from the line `check` or `mutants` printed.
    Replay {
        /// The replay line (quote it).
        line: String,
        /// Also draw the execution as a swimlane SVG here (simulator lines).
        #[arg(long)]
        svg: Option<std::path::PathBuf>,
        /// Also write the replay as one self-contained HTML page here: the
        /// swimlane with a step slider (simulator lines), the journals,
        /// world events and violations, the line with a copy button.
        #[arg(long)]
        html: Option<std::path::PathBuf>,
    },
    /// Minimise a simulator failure: fewest preemptions, then shortest.
    Shrink {
        /// The replay line of a `sim` or `sim-dfs` failure (quote it).
        line: String,
    },
    /// Check the executable specification models (crate `lifecycle-models`):
    /// every model's properties, every fault variant's counterexample.
    Model {
        /// JSON lines instead of the table: one object per row.
        #[arg(long)]
        json: bool,
        /// Only this model and its fault variants (repeatable): agent,
        /// dispose, durability, shell, acp.
        #[arg(long)]
        model: Vec<String>,
        /// Instead of checking: serve stateright's Explorer of one model
        /// (`--model NAME`, or the model of `--fault Mn` with that fault on)
        /// at ADDR, until stopped.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = lifecycle_models::serve::DEFAULT_ADDR)]
        serve: Option<String>,
        /// With --serve: switch this fault on (M1–M29 that have a model).
        #[arg(long, requires = "serve")]
        fault: Option<String>,
    },
    /// Benchmarks: the simulator side by side with shuttle and loom.
    Bench(crate::bench::BenchArgs),
    /// Scenarios, rules, faults and checkers.
    List {
        /// The rule-clause table instead: every clause of every rule of
        /// SPEC §2, the scenario goal, conformance operation or test that
        /// exercises it.
        #[arg(long)]
        rules: bool,
    },
    /// Write every generated file of docs/: reference.md (the scenarios,
    /// the faults, the rule-clause table, every pinned figure) and
    /// record.md (the mutation record; its performance section from
    /// `--bench FILE`); with `--check`, exit 1 naming each stale file.
    Docs(crate::docs::DocsArgs),
}

#[derive(Args, Debug, Clone)]
pub(super) struct CheckArgs {
    /// JSON lines instead of a table: one line per row (with its views),
    /// then the differential coverage, then an `end` line with the settings
    /// (what `merge` reads).
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
    /// the exhaustive search (overrides the tier; loom honours it).
    #[arg(long)]
    budget: Option<u64>,
    /// Run part k of n (`1/4`): disjoint seed ranges (sim), subtrees
    /// (sim-dfs) and runs (tokio); loom and shuttle rows go whole to one
    /// shard each. A shard judges violations only; `merge` judges the union.
    #[arg(long)]
    shard: Option<String>,
    /// `sim` portfolio seeds.
    #[arg(long)]
    sim_seeds: Option<u64>,
    /// `sim-dfs`: executions before it stops unexhausted.
    #[arg(long)]
    dfs_executions: Option<u64>,
    /// `sim-dfs` preemption bound for every scenario (default: each
    /// scenario's own, plus 2 on the nightly tier).
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
        // The first Ctrl-C stops the searches (`interrupt`).
        budget.stop = super::interrupt::STOP;
        let count =
            |name: &str, v: Option<u64>| v.map(|v| in_range(name, v, 1, MAX_COUNT)).transpose();
        if let Some(n) = count("--budget", self.budget)? {
            budget = budget.with_executions(n);
        }
        if let Some(s) = &self.shard {
            budget.shard = Shard::parse(s)?;
        }
        budget.sim_seeds = count("--sim-seeds", self.sim_seeds)?.unwrap_or(budget.sim_seeds);
        budget.dfs_executions =
            count("--dfs-executions", self.dfs_executions)?.unwrap_or(budget.dfs_executions);
        if let Some(b) = self.dfs_preemptions {
            in_range("--dfs-preemptions", b.into(), 0, MAX_PREEMPTIONS)?;
            budget.dfs_preemptions = Some(b);
        }
        if let Some(n) = count(
            "--shuttle-iterations",
            self.shuttle_iterations.map(|n| n as u64),
        )? {
            budget.shuttle_iterations = n as usize;
        }
        if let Some(d) = self.pct_depth {
            budget.pct_depth = in_range("--pct-depth", d as u64, 1, MAX_PCT_DEPTH)? as usize;
        }
        if let Some(b) = self.loom_preemptions {
            budget.loom_preemptions =
                in_range("--loom-preemptions", b as u64, 1, MAX_PREEMPTIONS)? as usize;
        }
        budget.tokio_runs = count("--tokio-runs", self.tokio_runs)?.unwrap_or(budget.tokio_runs);
        budget.shrink = !self.no_shrink;
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
            check_cmd::run_check(args.json, !args.no_progress, &args.tier, sel)
        }),
        HarnessCommand::Mutants(args) => {
            if args.shard.is_some() {
                eprintln!("error: mutants does not take --shard: its kill matrix cannot be merged");
                return ExitCode::from(2);
            }
            with_selection(&args, |sel| check_cmd::run_mutants(args.json, sel))
        }
        HarnessCommand::Explore(args) => check_cmd::run_explore(&args),
        HarnessCommand::Classes(args) => classes_cmd::run_classes(&args),
        HarnessCommand::Generate(args) => generate_cmd::run_generate(&args),
        HarnessCommand::Merge { files, json } => merge_cmd::run_merge(&files, json),
        HarnessCommand::Replay { line, svg, html } => {
            replay_cmd::run_replay(&line, svg.as_deref(), html.as_deref())
        }
        HarnessCommand::Shrink { line } => replay_cmd::run_shrink(&line),
        HarnessCommand::Model {
            model,
            serve: Some(addr),
            fault,
            ..
        } => serve_model(model.first().map(String::as_str), fault.as_deref(), &addr),
        HarnessCommand::Model { json, model, .. } => {
            use lifecycle_models::{report, ModelId};
            let mut names = Vec::new();
            for m in &model {
                match ModelId::parse(m) {
                    Some(id) => names.push(id),
                    None => {
                        eprintln!(
                            "error: unknown model `{m}` (models: {})",
                            ModelId::names(", ")
                        );
                        return ExitCode::from(2);
                    }
                }
            }
            let reports = report::run_models(&names);
            if json {
                println!("{}", report::to_json(&reports));
            } else {
                print!("{}", report::render_table(&reports));
            }
            if report::all_ok(&reports) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        HarnessCommand::Bench(args) => crate::bench::run(&args),
        HarnessCommand::List { rules: false } => {
            list();
            ExitCode::SUCCESS
        }
        HarnessCommand::List { rules: true } => {
            print!("{}", crate::clauses::render(crate::clauses::CLAUSES));
            ExitCode::SUCCESS
        }
        HarnessCommand::Docs(args) => crate::docs::run_args(&args),
    }
}

fn with_selection(args: &CheckArgs, f: impl FnOnce(&Selection) -> ExitCode) -> ExitCode {
    match args.select() {
        Ok(sel) => {
            if let Err(e) = super::interrupt::install() {
                eprintln!("warning: Ctrl-C will kill at once ({e})");
            }
            f(&sel)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn list() {
    println!("scenarios:");
    for s in scenarios::ALL {
        let t = crate::check::tasks(s);
        println!(
            "  {:<30} rules {:<22} tasks {} ({} without bystanders, {} for loom)  {}",
            s.name,
            crate::rules::join(s.rules, ","),
            t.all,
            t.without_bystanders,
            t.loom,
            s.about
        );
    }
    println!("\ncheckers:");
    for c in Checker::ALL {
        println!("  {c}");
    }
    println!(
        "\nrules checked by the oracles on every execution: {}",
        crate::rules::join(&crate::oracle::ORACLE_RULES, " ")
    );
    println!("\nfaults (SPEC §3):");
    for f in Fault::ALL {
        println!(
            "  {:<4} must violate {:<6} {}",
            f.to_string(),
            crate::rules::join(f.must_violate(), "/"),
            f.about()
        );
    }
    println!(
        "\nrule clauses: {} clauses of the {} rules, each with its exercises and goals: \
         `lifecycle list --rules`",
        crate::clauses::CLAUSES.len(),
        crate::clauses::Rule::ALL.len()
    );
}

/// `model --serve`: stateright's Explorer of one model, until stopped.
fn serve_model(model: Option<&str>, fault: Option<&str>, addr: &str) -> ExitCode {
    use lifecycle_models::serve;
    let fault = match fault.map(|f| (f, lifecycle_models::Fault::parse(f))) {
        None => None,
        Some((_, Some(f))) => Some(f),
        Some((f, None)) => {
            eprintln!("error: unknown fault `{f}`");
            return ExitCode::from(2);
        }
    };
    let served = serve::choose(model, fault).and_then(|m| serve::serve(m, fault, addr));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
