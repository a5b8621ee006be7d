//! `sim-dfs`: exhaustive depth-first search over the simulator's
//! scheduling decisions (source-DPOR and sleep sets, `lifecycle_sim::Dfs`)
//! up to the scenario's preemption bound, optionally sharded and
//! checkpointed, shallow bounds first; a line replays its plan as a `sim`
//! line does (`explore::sim`).

use super::sim::{count_run, replay_plan, run_scheduled, SimRun};
use super::{Exploration, Explorer, Replayed};
use crate::check::checker::Checker;
use crate::check::replay_line::{fingerprint, ReplayError, ReplayLine, SimPayload};
use crate::check::report::{Report, Stop, Stopped};
use crate::check::tally::{Saved, Tally};
use crate::check::Budget;
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::scenarios::{Outcome, Scenario};
use lifecycle_sim::{Dfs, DfsConfig, ExecKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The exhaustive search.
pub struct SimDfs;

impl Explorer for SimDfs {
    type Payload = SimPayload;

    fn checker(&self) -> Checker {
        Checker::SimDfs
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        let budget = run.budget;
        explore_dfs(
            run.scenario,
            run.faults,
            &DfsOptions {
                config: search_config(run.scenario, budget),
                max_executions: budget.dfs_executions,
                checkpoint: None,
                resume: false,
                shrink: budget.shrink,
                stop_on: budget.stop_on,
                stop: budget.stop,
                shallow: budget.dfs_shallow,
            },
            run.stop_at_first,
            run.progress,
        )
    }

    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &SimPayload,
    ) -> Result<Replayed, ReplayError> {
        Ok(replay_plan(scenario, faults, payload))
    }
}

/// The search `sim-dfs` runs over `scenario` within `budget`.
pub fn search_config(scenario: &Scenario, budget: &Budget) -> DfsConfig {
    DfsConfig {
        preemption_bound: budget
            .dfs_preemptions
            .or(scenario.bounds.dfs.map(|b| b + budget.dfs_bound_extra)),
        shard: budget.shard,
        // Every alternative above the split depth, sharded or not: the
        // union of `--shard k/n` runs is then this very search, schedule
        // for schedule.
        full_top: true,
        ..DfsConfig::default()
    }
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
    /// A stop request from outside.
    pub stop: Stop,
    /// With `stop_at_first`, run the shallow passes first (see
    /// [`SHALLOW_PASSES`]).
    pub shallow: bool,
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
            stop: Stop::NEVER,
            shallow: true,
        }
    }
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
fn load(path: &Path, scenario: &Scenario, faults: Faults) -> Result<(Dfs, Checkpoint), String> {
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
    let fp = fingerprint(scenario);
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
        ("DPOR", on(saved.dpor), on(asked.dpor)),
        ("optimal DPOR", on(saved.optimal), on(asked.optimal)),
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
    scenario: &Scenario,
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
/// with `stop_at_first`, or at a stop request (`opts.stop`), between two
/// schedules; a search that did not end is saved to `checkpoint`.
pub fn explore_dfs(
    scenario: &Scenario,
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
    let shallow = if stop_at_first && opts.shallow && !opts.resume {
        match shallow_first(scenario, faults, opts, &mut tally) {
            Shallow::Found(executions) => {
                tally.executions = executions;
                tally.stopped(Stopped::FirstFailure);
                tally.bound(dfs_bound(&opts.config));
                return tally.finish();
            }
            Shallow::Clean(executions) => executions,
        }
    } else {
        0
    };
    let start_executions = dfs.stats().executions;
    let mut nondeterminism = None;
    while let Some(scheduler) = dfs.next_scheduler() {
        if dfs.stats().executions - start_executions >= opts.max_executions {
            tally.stopped(Stopped::Budget);
            break;
        }
        if opts.stop.requested() {
            tally.stopped(Stopped::Interrupted);
            break;
        }
        let run = run_scheduled(scenario, faults, scheduler, true, false);
        // A harness error (a step that did more than its footprint says)
        // counts in every run, a pruned one too: the reduction that pruned
        // it relied on that footprint.
        let harness_error = run
            .outcome
            .violations
            .iter()
            .any(|v| v.rule == RuleId::Footprint);
        match dfs.end_execution() {
            ExecKind::Complete => {}
            ExecKind::Blocked | ExecKind::Foreign if !harness_error => continue,
            ExecKind::Blocked | ExecKind::Foreign => {}
            ExecKind::Nondeterministic(m) => {
                nondeterminism.get_or_insert(m);
                continue;
            }
        }
        let failed = count_run(&mut tally, &run, opts.shrink, || {
            dfs_line(scenario, faults, &run)
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
            tally.stopped(Stopped::FirstFailure);
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
    // Schedules explored: complete runs plus sleep-blocked ones, the
    // shallow passes' included.
    tally.executions = stats.executions + shallow;
    tally.dfs(stats);
    tally.bound(dfs_bound(&config));
    tally.finish()
}

/// The replay line of a `sim-dfs` run (untimed, seed 0: the search
/// draws no seeded values).
fn dfs_line(scenario: &Scenario, faults: Faults, run: &SimRun) -> ReplayLine {
    ReplayLine::sim(
        scenario,
        Checker::SimDfs,
        faults,
        0,
        true,
        run.sim.choices(),
    )
}

/// One shallow pass: the search at a preemption bound, for at most so
/// many schedules (`None`: until exhausted).
#[derive(Clone, Copy, Debug)]
pub struct ShallowPass {
    /// Its preemption bound.
    pub bound: u32,
    /// Its schedules at most (`None`: until exhausted).
    pub schedules: Option<u64>,
}

/// The shallow passes that run before a search that stops at its first
/// failure, those below the search's own bound: the first schedules at
/// bound 0, then bound 1 until exhausted. Bound 0 is not run to the end:
/// most of its runs are sleep-blocked, and the bound-1 pass, a superset,
/// runs them again.
pub const SHALLOW_PASSES: [ShallowPass; 2] = [
    ShallowPass {
        bound: 0,
        schedules: Some(10),
    },
    ShallowPass {
        bound: 1,
        schedules: None,
    },
];

/// What the shallow passes found.
enum Shallow {
    /// A wanted failure, counted in the tally, after this many schedules.
    Found(u64),
    /// None, in this many schedules.
    Clean(u64),
}

/// Shallow first: a search after its first failure
/// first runs the same search at preemption bounds 0 and 1
/// ([`SHALLOW_PASSES`], those below its own bound), within the whole
/// search's schedule budget. A failure that needs few
/// preemptions is then found among the first schedules, not where the
/// depth-first order of the unbounded tree reaches it. Those passes only
/// look for a wanted failure: their runs are not counted in the tally's
/// views or goals (the search that follows runs every one of them again),
/// only in its schedules.
fn shallow_first(
    scenario: &Scenario,
    faults: Faults,
    opts: &DfsOptions,
    tally: &mut Tally,
) -> Shallow {
    let top = opts.config.preemption_bound.unwrap_or(u32::MAX);
    let mut executions = 0;
    for shallow in SHALLOW_PASSES.into_iter().filter(|p| p.bound < top) {
        let mut pass = Dfs::new(DfsConfig {
            preemption_bound: Some(shallow.bound),
            ..opts.config.clone()
        });
        let before = executions;
        while let Some(scheduler) = pass.next_scheduler() {
            let ran = pass.stats().executions;
            if before + ran > opts.max_executions
                || shallow.schedules.is_some_and(|cap| ran >= cap)
                || opts.stop.requested()
            {
                break;
            }
            let run = run_scheduled(scenario, faults, scheduler, true, false);
            let kind = pass.end_execution();
            executions = before + pass.stats().executions;
            let counts = matches!(kind, ExecKind::Complete)
                || run
                    .outcome
                    .violations
                    .iter()
                    .any(|v| v.rule == RuleId::Footprint);
            if counts && tally.is_wanted_failure(&run.outcome) {
                count_run(tally, &run, opts.shrink, || {
                    dfs_line(scenario, faults, &run)
                });
                return Shallow::Found(executions);
            }
        }
        executions = before + pass.stats().executions;
    }
    Shallow::Clean(executions)
}

/// What bounds a search of `config` (its shard aside: a report says that
/// separately, so the shards of one search share their bound).
pub fn dfs_bound(config: &DfsConfig) -> String {
    format!(
        "{}, preemptions {}",
        match (config.reduction, config.dpor) {
            (true, true) if config.optimal && config.preemption_bound.is_none() => {
                "optimal DPOR (wakeup trees) + sleep sets"
            }
            (true, true) => "source-DPOR + sleep sets",
            (true, false) => "sleep sets",
            (false, _) => "no reduction",
        },
        config
            .preemption_bound
            .map_or("unbounded".to_string(), |b| format!("<= {b}")),
    )
}

fn checkpoint(scenario: &Scenario, faults: Faults, dfs: &Dfs, tally: &Tally) -> Checkpoint {
    Checkpoint {
        scenario: scenario.name.to_string(),
        fault: faults.iter().next().map(|f| f.to_string()),
        fingerprint: fingerprint(scenario),
        saved: tally.saved(),
        search: dfs.checkpoint(),
    }
}
