//! The simulator checkers.
//!
//! - `sim`: a budgeted portfolio. Even seeds run the seeded random walk,
//!   odd seeds run PCT with depth cycling through `1..=pct_depth`; PCT's
//!   change points are spread over the scenario's usual number of
//!   branching decisions (measured once, from seed 0).
//! - `sim-dfs`: exhaustive depth-first search over the simulator's
//!   scheduling decisions with sleep-set reduction (`lifecycle_sim::Dfs`),
//!   optionally preemption-bounded, sharded and checkpointed.
//!
//! Both record a failing run as its *plan* (the task chosen at each decision
//! with more than one ready task) plus the seed of its value stream; that is
//! what the replay line carries. A failure is replayed twice before it is
//! reported (determinism self-check) and then shrunk (`super::shrink`).

use super::{shrink, Checker, ReplayLine, Report, Tally};
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::rt::SimRt;
use crate::scenarios::{self, Ctx, Outcome, Scenario, Tasks};
use lifecycle_sim::{
    Dfs, DfsConfig, ExecKind, GuidedScheduler, PctScheduler, RandomScheduler, Scheduler, Shard,
    Sim, SimError, TaskId, DEFAULT_MAX_STEPS,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One execution on the simulator.
pub struct SimRun {
    /// Its outcome.
    pub outcome: Outcome,
    /// The simulator after the run (decisions, plan, trace, hash).
    pub sim: Sim,
}

/// Run `scenario` once under `scheduler`; with `trace`, keep the full trace
/// and emit `tracing` spans per poll. A stall or a panic becomes a violation.
pub fn run_scheduled(
    scenario: &'static Scenario,
    faults: Faults,
    scheduler: Box<dyn Scheduler>,
    untimed: bool,
    trace: bool,
) -> SimRun {
    let mut sim = Sim::new(scheduler, DEFAULT_MAX_STEPS);
    sim.set_trace(trace);
    sim.set_untimed(untimed);
    let outcome = match sim.block_on(scenarios::run::<SimRt>(scenario, faults)) {
        Ok(outcome) => outcome,
        Err(e) => sim_error_outcome(&e),
    };
    SimRun { outcome, sim }
}

/// Tasks one execution of `scenario` runs, main task included, as the
/// simulator counts them: the most over 4 seeds, with and without the
/// bystanders. Measured once per process (about 8 executions).
pub fn tasks(scenario: &'static Scenario) -> Tasks {
    static MEASURED: std::sync::Mutex<std::collections::BTreeMap<&'static str, Tasks>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let cache = || MEASURED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = cache().get(scenario.name) {
        return *t;
    }
    super::quiet_panics();
    let count = |bystanders: bool| {
        (0..4u64)
            .map(|seed| {
                let mut sim = Sim::new(Box::new(RandomScheduler::new(seed)), DEFAULT_MAX_STEPS);
                let ctx = Ctx {
                    bystanders,
                    ..Ctx::new(Faults::none())
                };
                let _ = sim.block_on(scenarios::run_ctx::<SimRt>(scenario, ctx));
                sim.task_count()
            })
            .max()
            .unwrap_or(1)
    };
    let t = Tasks {
        all: count(true),
        without_bystanders: count(false),
    };
    cache().insert(scenario.name, t);
    t
}

/// Follow `plan` exactly (strict): the replay of a recorded run. After a
/// divergence the seeded random scheduler of `seed` continues.
pub fn run_plan(
    scenario: &'static Scenario,
    faults: Faults,
    seed: u64,
    untimed: bool,
    plan: &[TaskId],
    trace: bool,
) -> SimRun {
    let fallback = Box::new(RandomScheduler::new(seed));
    let guided = GuidedScheduler::new(plan.to_vec(), seed, true, fallback);
    run_scheduled(scenario, faults, Box::new(guided), untimed, trace)
}

/// A simulator error as a failed outcome.
pub fn sim_error_outcome(e: &SimError) -> Outcome {
    let rule = match e {
        SimError::Stalled(report) => crate::scenarios::deadlock_rule(&report.to_string()),
        SimError::StepLimit { .. } | SimError::Abandoned { .. } => RuleId::Progress,
        SimError::TaskPanicked { .. } => RuleId::Panic,
    };
    Outcome {
        violations: vec![Violation::new(rule, e.to_string())],
        label: "error".into(),
        invariants: 1,
        journal: Vec::new(),
        world: Vec::new(),
    }
}

/// The portfolio's run for `seed`: even seeds random, odd seeds PCT with
/// depth `1 + (seed / 4) % pct_depth` and change points over `expected`
/// branching decisions; seeds `4k, 4k+1` keep virtual time, seeds
/// `4k+2, 4k+3` run untimed (every sleep an arbitrary delay). Returns the
/// scheduler and whether the run is untimed.
pub fn portfolio_scheduler(
    seed: u64,
    pct_depth: usize,
    expected: [u64; 2],
) -> (Box<dyn Scheduler>, bool) {
    let untimed = seed % 4 >= 2;
    let scheduler: Box<dyn Scheduler> = if seed % 2 == 0 {
        Box::new(RandomScheduler::new(seed))
    } else {
        let depth = 1 + (seed / 4) % pct_depth.max(1) as u64;
        Box::new(PctScheduler::new(
            seed,
            depth as u32,
            expected[usize::from(untimed)],
        ))
    };
    (scheduler, untimed)
}

/// Branching decisions of one random run of `scenario` (PCT's `k`), timed
/// and untimed.
pub fn expected_branches(scenario: &'static Scenario, faults: Faults) -> [u64; 2] {
    [false, true].map(|untimed| {
        let run = run_scheduled(
            scenario,
            faults,
            Box::new(RandomScheduler::new(0)),
            untimed,
            false,
        );
        run.sim.choices().len().max(1) as u64
    })
}

/// The key two runs share when they reach the same terminal state: the
/// label, the broken rules and a hash of both journals.
pub fn outcome_key(outcome: &Outcome) -> String {
    use std::hash::{Hash, Hasher};
    // FNV-1a over the derived `Hash` of both journals: deterministic across
    // runs and builds of one toolchain, and no rendering (the profile showed
    // JSON rendering here at 15% of a simulator run).
    let mut fnv = super::view::Fnv::new();
    outcome.journal.hash(&mut fnv);
    outcome.world.hash(&mut fnv);
    let h = fnv.finish();
    let rules: BTreeSet<RuleId> = outcome.violations.iter().map(|v| v.rule).collect();
    format!(
        "{}|{}|{h:016x}",
        outcome.label,
        rules
            .into_iter()
            .map(RuleId::name)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// A failure found on the simulator (its line, its run), checked and
/// shrunk, ready to report.
fn report_failure(tally: &mut Tally, line: ReplayLine, run: &SimRun, shrink_it: bool) {
    let (scenario, checker, faults) = (line.scenario, line.checker, line.faults());
    let (seed, untimed, plan) = line.sim_payload().expect("a simulator line");
    let mut outcome = run.outcome.clone();
    if let Err(m) = shrink::self_check(scenario, faults, seed, untimed, &plan, run.sim.trace_hash())
    {
        outcome
            .violations
            .insert(0, Violation::new(RuleId::Determinism, m));
    }
    tally.replace_failure(&outcome, line.to_string());
    if shrink_it {
        let rule = tally.wanted_rule(&outcome);
        if let Some(rule) = rule.filter(|r| *r != RuleId::Determinism) {
            let s = shrink::shrink(scenario, faults, seed, untimed, &plan, rule);
            let minimal =
                ReplayLine::sim(scenario, checker, faults, seed, untimed, &s.minimal.plan);
            tally.set_shrunk(
                minimal.to_string(),
                s.original.preemptions,
                s.minimal.preemptions,
            );
        }
    }
}

/// Count one run; if it is the first failure (of the wanted rules), check
/// and shrink it (`line` builds its replay line, only when needed). Returns
/// whether the run failed in the way the search is after.
fn count_run(
    tally: &mut Tally,
    run: &SimRun,
    shrink_it: bool,
    line: impl Fn() -> ReplayLine,
) -> bool {
    let fresh = tally.first_failure.is_none();
    let failed = tally.add(&run.outcome, || line().to_string());
    if failed && fresh {
        report_failure(tally, line(), run, shrink_it);
    }
    failed
}

/// Options of the portfolio.
#[derive(Clone, Debug)]
pub struct PortfolioOptions {
    /// Seeds to run.
    pub seeds: u64,
    /// Highest PCT depth.
    pub pct_depth: usize,
    /// The part of `0..seeds` this process runs.
    pub shard: Shard,
    /// Shrink the first failure.
    pub shrink: bool,
    /// Only failures of these rules count (empty: any).
    pub stop_on: &'static [crate::rules::Rule],
}

/// The `sim` checker: the random + PCT portfolio over this shard's seeds.
pub fn explore(
    scenario: &'static Scenario,
    faults: Faults,
    opts: &PortfolioOptions,
    stop_at_first: bool,
    progress: &dyn Fn(u64),
) -> Report {
    let mut tally = Tally::new(scenario, Checker::Sim, faults);
    tally.want(opts.stop_on);
    tally.shard(opts.shard);
    let expected = expected_branches(scenario, faults);
    for seed in opts.shard.range(opts.seeds) {
        if super::interrupted() {
            tally.stopped(super::STOPPED_INTERRUPT);
            break;
        }
        let (scheduler, untimed) = portfolio_scheduler(seed, opts.pct_depth, expected);
        let run = run_scheduled(scenario, faults, scheduler, untimed, false);
        let failed = count_run(&mut tally, &run, opts.shrink, || {
            ReplayLine::sim(
                scenario,
                Checker::Sim,
                faults,
                seed,
                untimed,
                run.sim.choices(),
            )
        });
        if tally.executions % 1024 == 0 {
            progress(tally.executions);
        }
        if failed && stop_at_first {
            tally.stopped(super::STOPPED_FAILURE);
            break;
        }
    }
    tally.bound(format!(
        "seeds 0..{}, pct depth 1..={}",
        opts.seeds, opts.pct_depth
    ));
    tally.finish()
}

/// Options of the exhaustive search.
#[derive(Clone, Debug)]
pub struct DfsOptions {
    /// What to search.
    pub config: DfsConfig,
    /// Stop after this many executions (the space is then not exhausted).
    pub max_executions: u64,
    /// Write the search here when it stops early (and every 20,000
    /// executions), so it can be resumed.
    pub checkpoint: Option<PathBuf>,
    /// Continue the search saved in `checkpoint`.
    pub resume: bool,
    /// Shrink the first failure.
    pub shrink: bool,
    /// Only failures of these rules count (empty: any).
    pub stop_on: &'static [crate::rules::Rule],
}

impl DfsOptions {
    /// Reduced, unbounded, unsharded, at most `max_executions`.
    pub fn exhaustive(max_executions: u64) -> DfsOptions {
        DfsOptions {
            config: DfsConfig::default(),
            max_executions,
            checkpoint: None,
            resume: false,
            shrink: true,
            stop_on: &[],
        }
    }
}

/// What a `sim-dfs` checkpoint keeps of a `Tally`, so a resumed search
/// reports the whole search, not the part after the checkpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Saved {
    /// Outcome label counts.
    pub outcomes: BTreeMap<String, u64>,
    /// Views reached, with their replay lines.
    pub views: BTreeMap<String, String>,
    /// Invariants evaluated.
    pub invariants: u64,
    /// Hits per goal, by name.
    pub goals: Vec<(String, u64)>,
    /// The first failure: `(rule, message)` pairs and its replay line.
    pub failure: Option<(Vec<(String, String)>, String)>,
    /// Its shrunk line and preemptions before and after.
    pub shrunk: Option<(String, u32, u32)>,
}

/// A saved search: what it searches, how far it got, and everything the
/// report counts, so a resumed search reports the whole search.
#[derive(Serialize, Deserialize)]
struct Checkpoint {
    scenario: String,
    fault: Option<String>,
    fingerprint: String,
    /// Outcome labels, views, goal hits, invariants, the first failure.
    #[serde(flatten)]
    saved: Saved,
    /// The search (its configuration included), as `Dfs::checkpoint`.
    search: String,
}

/// The file a checkpoint is written to first (then renamed over `path`).
fn tmp_of(path: &Path) -> PathBuf {
    path.with_extension("tmp")
}

fn save(path: &Path, cp: &Checkpoint) -> Result<(), String> {
    let json = serde_json::to_string(cp).map_err(|e| e.to_string())?;
    let tmp = tmp_of(path);
    std::fs::write(&tmp, json).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Load a checkpoint for `scenario`/`faults`.
fn load(
    path: &Path,
    scenario: &'static Scenario,
    faults: Faults,
) -> Result<(Dfs, Checkpoint), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read checkpoint {}: {e}", path.display()))?;
    let cp: Checkpoint = serde_json::from_str(&text)
        .map_err(|e| format!("malformed checkpoint {}: {e}", path.display()))?;
    let fault = faults.iter().next().map(|f| f.to_string());
    if cp.scenario != scenario.name || cp.fault != fault {
        return Err(format!(
            "checkpoint {} is for {} with fault {:?}, not {} with {:?}",
            path.display(),
            cp.scenario,
            cp.fault,
            scenario.name,
            fault
        ));
    }
    let fp = super::replay::fingerprint(scenario);
    if cp.fingerprint != fp {
        return Err(format!(
            "checkpoint {} was recorded by another build (fingerprint {}, this build {fp})",
            path.display(),
            cp.fingerprint
        ));
    }
    let dfs = Dfs::resume(&cp.search)?;
    Ok((dfs, cp))
}

/// The first setting in which `saved` and `asked` search differently, as
/// `(what, saved, asked)`.
fn config_diff(saved: &DfsConfig, asked: &DfsConfig) -> Option<(&'static str, String, String)> {
    let pb = |b: Option<u32>| b.map_or("unbounded".to_string(), |b| format!("<= {b}"));
    let on = |b: bool| if b { "on" } else { "off" }.to_string();
    [
        ("shard", saved.shard.to_string(), asked.shard.to_string()),
        (
            "preemption bound",
            pb(saved.preemption_bound),
            pb(asked.preemption_bound),
        ),
        ("reduction", on(saved.reduction), on(asked.reduction)),
        ("source-DPOR", on(saved.dpor), on(asked.dpor)),
        (
            "split depth",
            saved.split_depth.to_string(),
            asked.split_depth.to_string(),
        ),
        ("full top", on(saved.full_top), on(asked.full_top)),
    ]
    .into_iter()
    .find(|(_, a, b)| a != b)
}

/// Check before any work that the search `opts` asks for can use its
/// checkpoint: with `resume`, that the file is a checkpoint of this
/// scenario, fault, build and search settings; without, that it can be
/// written. The error is one line.
pub fn check_checkpoint(
    scenario: &'static Scenario,
    faults: Faults,
    opts: &DfsOptions,
) -> Result<(), String> {
    let Some(path) = &opts.checkpoint else {
        return Ok(());
    };
    if opts.resume {
        let (dfs, _) = load(path, scenario, faults)?;
        if let Some((what, saved, asked)) = config_diff(&dfs.config(), &opts.config) {
            return Err(format!(
                "checkpoint {} searches with {what} {saved}, not {asked}: resume with the \
                 settings it was saved with, or start a new search",
                path.display()
            ));
        }
    }
    if path.is_dir() {
        return Err(format!("checkpoint {} is a directory", path.display()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "cannot write checkpoint {}: no directory {}",
            path.display(),
            dir.display()
        ));
    }
    // The checkpoint is written through a temporary file beside it.
    let tmp = tmp_of(path);
    std::fs::write(&tmp, b"")
        .map_err(|e| format!("cannot write checkpoint {}: {e}", tmp.display()))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// The `sim-dfs` checker. The search stops when it is exhausted, after
/// `max_executions` schedules (`stopped at budget`), at the first failure
/// with `stop_at_first`, or at Ctrl-C (`super::interrupted`), between two
/// schedules; a search that did not end is saved to `checkpoint`.
pub fn explore_dfs(
    scenario: &'static Scenario,
    faults: Faults,
    opts: &DfsOptions,
    stop_at_first: bool,
    progress: &dyn Fn(u64),
) -> Report {
    let mut tally = Tally::new(scenario, Checker::SimDfs, faults);
    tally.want(opts.stop_on);
    tally.shard(opts.config.shard);
    let mut dfs = match (&opts.checkpoint, opts.resume) {
        (Some(path), true) => {
            let loaded = load(path, scenario, faults).and_then(|(dfs, cp)| {
                match config_diff(&dfs.config(), &opts.config) {
                    Some((what, saved, asked)) => Err(format!(
                        "checkpoint {} searches with {what} {saved}, not {asked}",
                        path.display()
                    )),
                    None => Ok((dfs, cp)),
                }
            });
            match loaded {
                Ok((dfs, cp)) => {
                    tally.resume_counts(cp.saved);
                    dfs
                }
                Err(e) => {
                    tally.error(e);
                    return tally.finish();
                }
            }
        }
        _ => Dfs::new(opts.config.clone()),
    };
    let start_executions = dfs.stats().executions;
    let mut nondeterminism = None;
    while let Some(scheduler) = dfs.next_scheduler() {
        if dfs.stats().executions - start_executions >= opts.max_executions {
            tally.stopped(super::STOPPED_BUDGET);
            break;
        }
        if super::interrupted() {
            tally.stopped(super::STOPPED_INTERRUPT);
            break;
        }
        let run = run_scheduled(scenario, faults, scheduler, true, false);
        match dfs.end_execution() {
            ExecKind::Complete => {}
            ExecKind::Blocked | ExecKind::Foreign => continue,
            ExecKind::Nondeterministic(m) => {
                nondeterminism.get_or_insert(m);
                continue;
            }
        }
        let failed = count_run(&mut tally, &run, opts.shrink, || {
            ReplayLine::sim(
                scenario,
                Checker::SimDfs,
                faults,
                0,
                true,
                run.sim.choices(),
            )
        });
        let n = dfs.stats().complete;
        if n % 1024 == 0 {
            progress(n);
        }
        if n % 20_000 == 0 {
            if let Some(path) = &opts.checkpoint {
                let _ = save(path, &checkpoint(scenario, faults, &dfs, &tally));
            }
        }
        if failed && stop_at_first {
            tally.stopped(super::STOPPED_FAILURE);
            break;
        }
    }
    if let Some(m) = nondeterminism {
        tally.record_failure(
            &Outcome {
                violations: vec![Violation::new(
                    RuleId::Determinism,
                    format!("the scenario did not repeat itself under the same schedule: {m}"),
                )],
                ..Outcome::default()
            },
            String::new(),
        );
    }
    let stats = dfs.stats();
    let config = dfs.config();
    if dfs.exhausted() {
        tally.exhausted();
    } else if let Some(path) = &opts.checkpoint {
        if let Err(e) = save(path, &checkpoint(scenario, faults, &dfs, &tally)) {
            tally.error(e);
        }
    }
    // Schedules explored: complete runs plus sleep-blocked ones.
    tally.executions = stats.executions;
    tally.dfs(stats);
    tally.bound(dfs_bound(&config));
    tally.finish()
}

/// What bounds a search of `config` (its shard aside: a report says that
/// separately, so the shards of one search share their bound).
pub fn dfs_bound(config: &DfsConfig) -> String {
    format!(
        "{}, preemptions {}",
        match (config.reduction, config.dpor) {
            (true, true) => "source-DPOR + sleep sets",
            (true, false) => "sleep sets",
            (false, _) => "no reduction",
        },
        config
            .preemption_bound
            .map_or("unbounded".to_string(), |b| format!("<= {b}")),
    )
}

fn checkpoint(scenario: &'static Scenario, faults: Faults, dfs: &Dfs, tally: &Tally) -> Checkpoint {
    Checkpoint {
        scenario: scenario.name.to_string(),
        fault: faults.iter().next().map(|f| f.to_string()),
        fingerprint: super::replay::fingerprint(scenario),
        saved: tally.saved(),
        search: dfs.checkpoint(),
    }
}
