//! What the harness commands share: `explore`'s arguments, a parsed
//! selection of scenarios and checkers with its budget, the parsers and
//! ranges of every option, and the program name the follow-up lines
//! print. Imported by `harness` and the command files; imports none of
//! them.

use crate::check::{Budget, Checker};
use crate::faults::Fault;
use crate::scenarios::Scenario;
use clap::Args;

#[derive(Args, Debug, Clone)]
pub(in crate::cli) struct ExploreArgs {
    /// The scenario.
    pub(super) scenario: String,
    /// The checker.
    #[arg(long, default_value = "sim-dfs")]
    pub(super) checker: String,
    /// Executions (sampling checkers) or the cap of an exhaustive search
    /// (sim-dfs and loom both stop there, "stopped at budget").
    #[arg(long)]
    pub(super) budget: Option<u64>,
    /// Switch a fault on (M1..M29).
    #[arg(long)]
    pub(super) fault: Option<String>,
    /// `sim-dfs`: explore without sleep-set reduction.
    #[arg(long)]
    pub(super) no_reduction: bool,
    /// `sim-dfs` preemption bound (default: the scenario's PR-tier bound,
    /// the one `check` reports).
    #[arg(long, conflicts_with = "unbounded")]
    pub(super) preemption_bound: Option<u32>,
    /// `sim-dfs`: no preemption bound (the whole space; may not finish).
    #[arg(long)]
    pub(super) unbounded: bool,
    /// `sim-dfs` without a preemption bound: optimal DPOR (wakeup trees)
    /// instead of source sets.
    #[arg(long)]
    pub(super) optimal: bool,
    /// Part k of n (`2/4`) of sim, sim-dfs or tokio.
    #[arg(long)]
    pub(super) shard: Option<String>,
    /// `sim-dfs`: save the search here when it stops early (budget,
    /// Ctrl-C).
    #[arg(long)]
    pub(super) checkpoint: Option<std::path::PathBuf>,
    /// `sim-dfs`: continue the search saved in `--checkpoint`, with the
    /// same search settings (else exit 2).
    #[arg(long)]
    pub(super) resume: bool,
    /// Stop at the first failure.
    #[arg(long)]
    pub(super) stop_at_first: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    pub(super) json: bool,
}

pub(super) struct Selection {
    pub(super) scenarios: Vec<&'static Scenario>,
    pub(super) checkers: Vec<Checker>,
    pub(super) budget: Budget,
}

/// A named scenario, or a generated workload by its name (`gen-` and its
/// code, as a `generate` failure prints it).
pub(super) fn parse_scenario(s: &str) -> Result<&'static Scenario, String> {
    Scenario::parse(s)
        .or_else(|| crate::generate::scenario_named(s))
        .ok_or_else(|| {
            format!(
                "unknown scenario {s:?} (see `lifecycle list`; a generated workload is gen-<code>)"
            )
        })
}

pub(super) fn parse_checker(c: &str) -> Result<Checker, String> {
    Checker::parse(c).ok_or_else(|| format!("unknown checker {c:?} (see `lifecycle list`)"))
}

pub(super) fn parse_fault(f: &str) -> Result<Fault, String> {
    Fault::parse(f).ok_or_else(|| format!("unknown fault {f:?} (M1..M29)"))
}

/// The most executions any count may ask for (a trillion: months of work).
pub(super) const MAX_COUNT: u64 = 1_000_000_000_000;
/// The highest preemption bound accepted (none of the spaces finishes
/// far below it).
pub(super) const MAX_PREEMPTIONS: u64 = 64;
/// The highest PCT depth accepted.
pub(super) const MAX_PCT_DEPTH: u64 = 64;

/// `value` of option `name` within `min..=max`.
pub(super) fn in_range(name: &str, value: u64, min: u64, max: u64) -> Result<u64, String> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else if value < min {
        Err(format!("{name} must be at least {min}"))
    } else {
        Err(format!("{name} {value} is absurd: at most {max}"))
    }
}

/// How this process was invoked, for the follow-up commands it prints
/// (`<program> replay '<line>'`): `argv[0]` as typed, relative to the
/// current directory when it lies inside it (`cargo run` passes an
/// absolute path), quoted for a POSIX shell when it needs to be.
pub(super) fn program() -> String {
    let argv0 = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "lifecycle".into());
    let shown = match std::env::current_dir() {
        Ok(cwd) if argv0.is_absolute() => argv0
            .strip_prefix(&cwd)
            .map(std::path::Path::to_path_buf)
            .unwrap_or(argv0),
        _ => argv0,
    };
    let s = shown.to_string_lossy().into_owned();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
