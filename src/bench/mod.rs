//! `bench`: the harness side by side with shuttle and loom, measured in one
//! process run on the machine it runs on (the output names it). Speed is
//! measured here, never asserted in a test.
//!
//! Sections:
//! 1. executions per second on the same scenarios: simulator random,
//!    simulator PCT, shuttle random, shuttle PCT, loom (its exhaustive run);
//! 2. schedules to exhaust a scenario: simulator DFS with and without sleep
//!    sets, loom at its preemption bound, shuttle's DFS (capped);
//! 3. per fault and checker: executions and seconds to the first violation of
//!    the fault's rule, median and max over several seeds;
//! 4. peak memory (this process, and the loom worker processes);
//! 5. the per-execution instruction split (executor, scenario, oracles) of
//!    `sim` and shuttle-random, from callgrind (`callgrind`);
//! 6. growth: schedules and seconds of exhaustive search as the racers of
//!    the scalable scenarios go from 2 to 4 (`growth`);
//! 7. source sets against wakeup trees (`optimal`);
//! 8. the executable models on stateright, timed (`models`).
//!
//! The table shows the ratios simulator/shuttle and simulator/loom pair by
//! pair, the three targets of the issue with how far each is from its mark,
//! and is written as JSON.
//!
//! `bench --pins` is another mode ([`pins`]): it measures every
//! deterministic figure pinned in `pins.json` (counts, never times) and
//! compares, or rewrites the file with `--write`.

pub(crate) mod callgrind;
pub(crate) mod growth;
pub mod models;
pub(crate) mod optimal;
pub mod pins;
mod render;
pub(crate) mod run;

pub use run::Run;

use crate::check::explore::loom::explore_at as loom_explore;
use crate::check::explore::shuttle;
use crate::check::explore::sim::{expected_branches, explore, run_scheduled, PortfolioOptions};
use crate::check::explore::sim_dfs::{explore_dfs, DfsOptions};
use crate::check::{self, loom_bound, Checker, Report, Stop};
use crate::faults::{Fault, Faults};
use crate::scenarios::{self, Scenario};
use lifecycle_sim::{DfsConfig, PctScheduler, RandomScheduler, Shard};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// `--seeds`' default.
const SEEDS: u64 = 5;
/// `--executions`' default.
const EXECUTIONS: u64 = 4_000;
/// `--dfs-cap`'s default.
const DFS_CAP: u64 = 1_000_000;
/// `--shuttle-dfs-cap`'s default.
const SHUTTLE_DFS_CAP: usize = 20_000;
/// `--profile-executions`' default.
const PROFILE_EXECUTIONS: u64 = 500;
/// `--growth-cap`'s default.
const GROWTH_CAP: u64 = 300_000;
/// `--out`'s default.
const OUT: &str = "bench.json";

/// Arguments of `bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Write the results as JSON here (checked before the bench runs).
    #[arg(long, default_value = OUT)]
    pub(crate) out: PathBuf,
    /// Seeds per fault and sampling checker (median and max over them).
    #[arg(long, default_value_t = SEEDS)]
    pub(crate) seeds: u64,
    /// Executions per throughput measurement (simulator and shuttle).
    #[arg(long, default_value_t = EXECUTIONS)]
    pub(crate) executions: u64,
    /// Cap of the unreduced simulator DFS.
    #[arg(long, default_value_t = DFS_CAP)]
    pub(crate) dfs_cap: u64,
    /// Cap of shuttle's DFS.
    #[arg(long, default_value_t = SHUTTLE_DFS_CAP)]
    pub(crate) shuttle_dfs_cap: usize,
    /// Only these scenarios (repeatable); default: a set of eight.
    #[arg(long)]
    pub(crate) scenario: Vec<String>,
    /// Leave loom out (it dominates the run time).
    #[arg(long)]
    pub(crate) no_loom: bool,
    /// Only these sections (repeatable); default: all.
    #[arg(long, value_enum)]
    pub(crate) section: Vec<Section>,
    /// Executions per callgrind profile (the difference of runs of n and 2n).
    #[arg(long, default_value_t = PROFILE_EXECUTIONS)]
    pub(crate) profile_executions: u64,
    /// Schedules after which a growth search, or a search of the optimal
    /// section, stops unfinished.
    #[arg(long, default_value_t = GROWTH_CAP)]
    pub(crate) growth_cap: u64,
    /// Instead of the bench: measure every deterministic figure pinned in
    /// the pins file and compare, as a table `key | pinned | measured |
    /// ok` (about a minute in a release build). Exit 0 if all are equal,
    /// 1 with one line per differing key. Takes only --json, --write,
    /// --pins-file, --from-check and --from-models.
    #[arg(long)]
    pub(crate) pins: bool,
    /// With --pins: rewrite the pins file from the measurement (exit 0).
    #[arg(long)]
    pub(crate) write: bool,
    /// With --pins: JSON lines instead of the table, one
    /// `{"kind":"pin",…}` per key, then `{"kind":"end",…}`.
    #[arg(long)]
    pub(crate) json: bool,
    /// With --pins: the pins file [default: pins.json of the checkout this
    /// binary was built from].
    #[arg(long)]
    pub(crate) pins_file: Option<PathBuf>,
    /// With --pins: take each scenario's `sim-dfs` schedules and views
    /// from this `check --tier pr --json` output (or `merge --json` of its
    /// shards) instead of searching again; scenarios it lacks are searched.
    #[arg(long)]
    pub(crate) from_check: Option<PathBuf>,
    /// With --pins: take the models' state counts, depths and
    /// counterexamples from this `lifecycle model --json` output instead
    /// of checking the models again.
    #[arg(long)]
    pub(crate) from_models: Option<PathBuf>,
}

impl BenchArgs {
    /// The bench's own options that differ from their defaults, by flag.
    fn bench_options(&self) -> Vec<&'static str> {
        [
            ("--out", self.out.as_os_str() != OUT),
            ("--seeds", self.seeds != SEEDS),
            ("--executions", self.executions != EXECUTIONS),
            ("--dfs-cap", self.dfs_cap != DFS_CAP),
            ("--shuttle-dfs-cap", self.shuttle_dfs_cap != SHUTTLE_DFS_CAP),
            ("--scenario", !self.scenario.is_empty()),
            ("--no-loom", self.no_loom),
            ("--section", !self.section.is_empty()),
            (
                "--profile-executions",
                self.profile_executions != PROFILE_EXECUTIONS,
            ),
            ("--growth-cap", self.growth_cap != GROWTH_CAP),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect()
    }

    /// `--write`, `--json` and `--pins-file` as given, by flag.
    fn pins_options(&self) -> Vec<&'static str> {
        [
            ("--write", self.write),
            ("--json", self.json),
            ("--pins-file", self.pins_file.is_some()),
            ("--from-check", self.from_check.is_some()),
            ("--from-models", self.from_models.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect()
    }
}

/// The sections of the table.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// 1: executions per second.
    Throughput,
    /// 2: schedules to exhaust.
    Exhaustion,
    /// 3: executions to the first violation of each fault.
    Faults,
    /// 5: the callgrind instruction split.
    Profile,
    /// 6: growth with 2, 3 and 4 racers.
    Growth,
    /// 7: source sets against wakeup trees (optimal DPOR), unbounded.
    Optimal,
    /// 8: the executable models on stateright, timed.
    Models,
}

/// The scenarios measured by default: both sides of every part, and loom
/// runs short enough for a bench run.
const DEFAULT: [&Scenario; 8] = [
    &scenarios::cancel::CANCEL_BEFORE_CLAIM,
    &scenarios::cancel::CANCEL_MID_TURN,
    &scenarios::dispose::CONCURRENT_DISPOSE,
    &scenarios::dispose::DISPOSE_MID_TURN,
    &scenarios::identity::SAME_ID_CREATE_RACE,
    &scenarios::acp::DISCONNECT_RACING_NEW,
    &scenarios::acp::DISCONNECT_MID_PROMPT,
    &scenarios::acp::SESSION_CANCEL_BEFORE_START,
];

/// Executions per second of one checker on one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Rate {
    pub(crate) executions: u64,
    pub(crate) seconds: f64,
    pub(crate) per_second: f64,
}

impl Rate {
    pub(crate) fn new(executions: u64, seconds: f64) -> Rate {
        Rate {
            executions,
            seconds,
            per_second: executions as f64 / seconds.max(1e-9),
        }
    }
}

/// Section 1: one scenario's rates.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    pub(crate) scenario: &'static str,
    pub(crate) sim_random: Rate,
    pub(crate) sim_pct: Rate,
    pub(crate) shuttle_random: Rate,
    pub(crate) shuttle_pct: Rate,
    pub(crate) loom: Option<Rate>,
    pub(crate) ratio_sim_shuttle_random: f64,
    pub(crate) ratio_sim_shuttle_pct: f64,
    pub(crate) ratio_sim_loom: Option<f64>,
}

/// A search's size: schedules, whether it finished, seconds.
#[derive(Clone, Debug, Serialize)]
pub struct Space {
    pub(crate) schedules: u64,
    pub(crate) exhausted: bool,
    pub(crate) seconds: f64,
    pub(crate) bound: String,
}

/// Section 2: one scenario's search sizes.
#[derive(Clone, Debug, Serialize)]
pub struct Exhaustion {
    pub(crate) scenario: &'static str,
    pub(crate) sim_dfs_reduced: Space,
    pub(crate) sim_dfs_unreduced: Space,
    pub(crate) loom: Option<Space>,
    pub(crate) shuttle_dfs: Space,
    pub(crate) ratio_reduced_loom: Option<f64>,
}

/// Median and max.
#[derive(Clone, Debug, Serialize)]
pub struct Stat {
    pub(crate) median: f64,
    pub(crate) max: f64,
}

pub(crate) fn stat(mut v: Vec<f64>) -> Stat {
    v.sort_by(f64::total_cmp);
    let median = if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    };
    Stat {
        median,
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

/// Section 3: one fault under one checker.
#[derive(Clone, Debug, Serialize)]
pub struct Kill {
    pub(crate) fault: Fault,
    pub(crate) checker: &'static str,
    pub(crate) scenario: &'static str,
    /// Seeds that found it, of those tried.
    pub(crate) found: u64,
    pub(crate) tried: u64,
    pub(crate) executions: Stat,
    pub(crate) seconds: Stat,
}

/// Section 4.
#[derive(Clone, Debug, Serialize)]
pub struct Memory {
    /// This process, MiB.
    pub(crate) self_peak_mib: f64,
    /// The largest child (loom workers), MiB.
    pub(crate) children_peak_mib: f64,
}

/// One target of the issue.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub(crate) target: String,
    pub(crate) met: bool,
    pub(crate) detail: String,
}

/// Everything `bench` measured.
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    /// Which run this is: commit, date, `nproc`, command
    /// (`lifecycle docs --bench` names it).
    pub(crate) run: Run,
    pub(crate) machine: String,
    pub(crate) throughput: Vec<Throughput>,
    pub(crate) exhaustion: Vec<Exhaustion>,
    pub(crate) faults: Vec<Kill>,
    pub(crate) memory: Memory,
    pub(crate) profile: Vec<callgrind::Split>,
    pub(crate) growth: Vec<growth::Row>,
    pub(crate) optimal: Vec<optimal::Row>,
    pub(crate) models: Option<models::Models>,
    pub(crate) targets: Vec<Target>,
    pub(crate) seconds: f64,
}

/// `n` simulator runs, each counted in a [`check::Tally`] (views, goals,
/// rules) exactly as shuttle's runs are in `shuttle_rate`: the same work
/// per execution on both sides.
fn sim_rate(scenario: &'static Scenario, n: u64, pct: bool) -> Rate {
    let expected = expected_branches(scenario, Faults::none());
    let mut tally = check::Tally::new(scenario, Checker::Sim, Faults::none());
    let start = Instant::now();
    for seed in 0..n {
        let s: Box<dyn lifecycle_sim::Scheduler> = if pct {
            Box::new(PctScheduler::new(seed, 3, expected[0]))
        } else {
            Box::new(RandomScheduler::new(seed))
        };
        let run = run_scheduled(scenario, Faults::none(), s, false, false);
        tally.add(&run.outcome, String::new);
    }
    std::hint::black_box(&tally);
    Rate::new(n, start.elapsed().as_secs_f64())
}

fn shuttle_rate(checker: Checker, scenario: &'static Scenario, n: u64) -> Rate {
    let r = shuttle::explore(
        checker,
        scenario,
        Faults::none(),
        n as usize,
        3,
        false,
        Stop::NEVER,
    );
    Rate::new(r.executions, r.seconds)
}

fn loom_run(scenario: &'static Scenario) -> Option<Report> {
    (crate::check::tasks(scenario).loom <= loom::MAX_THREADS).then(|| {
        loom_explore(
            scenario,
            Faults::none(),
            loom_bound(scenario, check::Budget::PR.loom_preemptions),
            None,
            false,
            Stop::NEVER,
        )
    })
}

fn dfs_space(scenario: &'static Scenario, reduction: bool, cap: u64, bound: Option<u32>) -> Space {
    let opts = DfsOptions {
        config: DfsConfig {
            reduction,
            preemption_bound: bound,
            ..DfsConfig::default()
        },
        shrink: false,
        ..DfsOptions::exhaustive(cap)
    };
    let r = explore_dfs(scenario, Faults::none(), &opts, false, &|_| {});
    Space {
        schedules: r.executions,
        exhausted: r.exhausted,
        seconds: r.seconds,
        bound: r.bound.unwrap_or_default(),
    }
}

/// Kill `fault` with `checker` from `seeds` different starting points.
fn kill(fault: Fault, checker: Checker, seeds: u64) -> Option<Kill> {
    let scenario = *scenarios::ALL.iter().find(|s| s.targets.contains(&fault))?;
    let faults = Faults::none().with(fault);
    let want = fault.must_violate();
    let runs: Vec<Report> = match checker {
        Checker::Sim => (0..seeds)
            .map(|k| {
                explore(
                    scenario,
                    faults,
                    &PortfolioOptions {
                        seeds: seeds * 1_000_000,
                        pct_depth: 3,
                        shard: Shard {
                            index: k as u32,
                            count: seeds as u32,
                        },
                        shrink: false,
                        stop_on: want,
                        stop: Stop::NEVER,
                    },
                    true,
                    &|_| {},
                )
            })
            .collect(),
        Checker::SimDfs => vec![explore_dfs(
            scenario,
            faults,
            &DfsOptions {
                config: DfsConfig {
                    preemption_bound: scenario.bounds.dfs,
                    ..DfsConfig::default()
                },
                shrink: false,
                stop_on: want,
                ..DfsOptions::exhaustive(5_000_000)
            },
            true,
            &|_| {},
        )],
        Checker::ShuttleRandom | Checker::ShuttlePct | Checker::ShuttleDfs => (0..seeds)
            .map(|k| {
                shuttle::explore_seeded(
                    checker,
                    scenario,
                    faults,
                    (100_000, 3, 0x5eed + k),
                    want,
                    (true, Stop::NEVER),
                )
            })
            .collect(),
        Checker::Loom => {
            if crate::check::tasks(scenario).loom > loom::MAX_THREADS {
                return None;
            }
            vec![loom_explore(
                scenario,
                faults,
                loom_bound(scenario, 3),
                None,
                true,
                Stop::NEVER,
            )]
        }
        Checker::Tokio => return None,
    };
    let hits: Vec<&Report> = runs
        .iter()
        .filter(|r| r.violations.iter().any(|v| v.rule.is_in(want)))
        .collect();
    Some(Kill {
        fault,
        checker: checker.name(),
        scenario: scenario.name,
        found: hits.len() as u64,
        tried: runs.len() as u64,
        executions: stat(hits.iter().map(|r| r.executions as f64).collect()),
        seconds: stat(hits.iter().map(|r| r.seconds).collect()),
    })
}

fn peak_mib(who: libc::c_int) -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::getrusage(who, &mut u) } == 0;
    if ok {
        u.ru_maxrss as f64 / 1024.0
    } else {
        f64::NAN
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", std::env::consts::OS)
}

/// Section 1 for one scenario.
fn rates(scenario: &'static Scenario, n: u64, loom: Option<&Report>) -> Throughput {
    let loom_rate = loom.map(|r| Rate::new(r.executions, r.seconds));
    let sim_random = sim_rate(scenario, n, false);
    let sim_pct = sim_rate(scenario, n, true);
    let shuttle_random = shuttle_rate(Checker::ShuttleRandom, scenario, n);
    let shuttle_pct = shuttle_rate(Checker::ShuttlePct, scenario, n);
    Throughput {
        scenario: scenario.name,
        ratio_sim_shuttle_random: sim_random.per_second / shuttle_random.per_second,
        ratio_sim_shuttle_pct: sim_pct.per_second / shuttle_pct.per_second,
        ratio_sim_loom: loom_rate
            .as_ref()
            .map(|l| sim_random.per_second / l.per_second),
        sim_random,
        sim_pct,
        shuttle_random,
        shuttle_pct,
        loom: loom_rate,
    }
}

/// Section 2 for one scenario: the reduced search runs at loom's bound
/// when loom ran (an equal bound), else at the scenario's own.
fn spaces(scenario: &'static Scenario, args: &BenchArgs, loom: Option<&Report>) -> Exhaustion {
    let loom_pb = loom_bound(scenario, check::Budget::PR.loom_preemptions);
    let bound = match loom {
        Some(_) => Some(loom_pb as u32),
        None => scenario.bounds.dfs,
    };
    let reduced = dfs_space(scenario, true, args.dfs_cap, bound);
    let unreduced = dfs_space(scenario, false, args.dfs_cap, bound);
    let (n, exhausted, seconds) = shuttle::dfs_count(scenario, args.shuttle_dfs_cap);
    let loom_space = loom.map(|r| Space {
        schedules: r.executions,
        exhausted: r.exhausted,
        seconds: r.seconds,
        bound: format!("preemptions <= {loom_pb}"),
    });
    Exhaustion {
        scenario: scenario.name,
        ratio_reduced_loom: loom_space
            .as_ref()
            .filter(|l| l.exhausted && reduced.exhausted)
            .map(|l| reduced.schedules as f64 / l.schedules as f64),
        sim_dfs_reduced: reduced,
        sim_dfs_unreduced: unreduced,
        loom: loom_space,
        shuttle_dfs: Space {
            schedules: n,
            exhausted,
            seconds,
            bound: "unbounded".into(),
        },
    }
}

/// Whether `path` can be written, checked before the bench runs (which
/// takes minutes): an existing file must open for writing (it is not
/// truncated here), a new one needs an existing, writable directory.
fn writable(path: &std::path::Path) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| Err(format!("cannot write {}: {e}", path.display()));
    if path.is_dir() {
        return fail(&"it is a directory");
    }
    if path.exists() {
        return match std::fs::OpenOptions::new().append(true).open(path) {
            Ok(_) => Ok(()),
            Err(e) => fail(&e),
        };
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return fail(&format!("no directory {}", dir.display()));
    }
    let c_dir =
        match std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str())) {
            Ok(c) => c,
            Err(e) => return fail(&e),
        };
    // SAFETY: `access` reads a NUL-terminated path and nothing else.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK) } != 0 {
        return fail(&std::io::Error::last_os_error());
    }
    Ok(())
}

/// `bench`, or `bench --pins` ([`pins::run`]).
pub fn run(args: &BenchArgs) -> ExitCode {
    if args.pins {
        if let Some(flag) = args.bench_options().first() {
            eprintln!("error: {flag} does not apply to --pins (it takes only --json, --write, --pins-file, --from-check and --from-models)");
            return ExitCode::from(2);
        }
        let path = args
            .pins_file
            .clone()
            .unwrap_or_else(|| PathBuf::from(pins::FILE));
        return pins::run(
            &path,
            args.write,
            args.json,
            args.from_check.as_deref(),
            args.from_models.as_deref(),
        );
    }
    if let Some(flag) = args.pins_options().first() {
        eprintln!("error: {flag} applies to --pins only");
        return ExitCode::from(2);
    }
    if let Err(e) = writable(&args.out) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let scenarios: Vec<&'static Scenario> = if args.scenario.is_empty() {
        DEFAULT.to_vec()
    } else {
        match args
            .scenario
            .iter()
            .map(|s| Scenario::parse(s).ok_or_else(|| format!("unknown scenario {s:?}")))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    };
    if args.seeds == 0 || args.executions == 0 {
        eprintln!("error: --seeds and --executions must be at least 1");
        return ExitCode::from(2);
    }
    check::quiet_panics();
    let started = std::time::SystemTime::now();
    let on = |x: Section| args.section.is_empty() || args.section.contains(&x);
    let start = Instant::now();
    let mut throughput = Vec::new();
    let mut exhaustion = Vec::new();
    for &scenario in &scenarios {
        if !on(Section::Throughput) && !on(Section::Exhaustion) {
            break;
        }
        let name = scenario.name;
        eprintln!("bench: {name}");
        let loom = if args.no_loom {
            None
        } else {
            loom_run(scenario)
        };
        if on(Section::Throughput) {
            throughput.push(rates(scenario, args.executions, loom.as_ref()));
        }
        if on(Section::Exhaustion) {
            exhaustion.push(spaces(scenario, args, loom.as_ref()));
        }
    }
    let mut faults = Vec::new();
    let checkers: Vec<Checker> = [
        Checker::Sim,
        Checker::SimDfs,
        Checker::ShuttleRandom,
        Checker::ShuttlePct,
        Checker::Loom,
    ]
    .into_iter()
    .filter(|c| !(args.no_loom && *c == Checker::Loom))
    .collect();
    for fault in Fault::ALL.into_iter().filter(|_| on(Section::Faults)) {
        eprintln!("bench: fault {fault}");
        for &checker in &checkers {
            faults.extend(kill(fault, checker, args.seeds));
        }
    }
    let mut profile = Vec::new();
    if on(Section::Profile) {
        if callgrind::available() {
            for &scenario in &scenarios {
                for checker in ["sim", "shuttle-random"] {
                    eprintln!("bench: callgrind {checker} {}", scenario.name);
                    profile.extend(callgrind::profile(
                        checker,
                        scenario.name,
                        args.profile_executions,
                    ));
                }
            }
        } else {
            eprintln!("bench: valgrind not found; no instruction split");
        }
    }
    let growth = if on(Section::Growth) {
        growth::measure(args.growth_cap, !args.no_loom)
    } else {
        Vec::new()
    };
    let optimal = if on(Section::Optimal) {
        optimal::measure(args.growth_cap)
    } else {
        Vec::new()
    };
    let models = on(Section::Models).then(models::measure);
    let memory = Memory {
        self_peak_mib: peak_mib(libc::RUSAGE_SELF),
        children_peak_mib: peak_mib(libc::RUSAGE_CHILDREN),
    };
    let targets = render::targets(&throughput, &exhaustion, &faults, &profile);
    // After the memory figures: git and nproc are child processes too.
    let run = Run::started_at(started);
    let results = Results {
        run,
        machine: machine(),
        throughput,
        exhaustion,
        faults,
        memory,
        profile,
        growth,
        optimal,
        models,
        targets,
        seconds: start.elapsed().as_secs_f64(),
    };
    print!("{}", render::table(&results));
    match serde_json::to_string_pretty(&results) {
        Ok(json) => {
            if let Err(e) = std::fs::write(&args.out, json) {
                eprintln!("error: cannot write {}: {e}", args.out.display());
                return ExitCode::from(2);
            }
            println!("JSON: {}", args.out.display());
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
