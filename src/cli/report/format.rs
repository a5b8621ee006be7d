//! The JSON lines of `check --json`, written and read back: the
//! [`Settings`] of a run, the `row` line of a report, the `end` line, and
//! one shard's file read back ([`read`]). See [`super`] for the format.

use crate::check::{self, Budget, Checker, Report};
use crate::cli::harness::args::Selection;
use crate::oracle::RuleId;
use crate::scenarios::Scenario;
use lifecycle_sim::{DfsStats, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What a `check` run searched: equal in every shard of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(in crate::cli::harness) struct Settings {
    pub(in crate::cli::harness) tier: String,
    pub(super) scenarios: Vec<String>,
    pub(super) checkers: Vec<String>,
    pub(super) sim_seeds: u64,
    pub(super) dfs_executions: u64,
    pub(super) dfs_preemptions: Option<u32>,
    pub(super) dfs_bound_extra: u32,
    pub(super) shuttle_iterations: u64,
    pub(super) pct_depth: u64,
    pub(super) loom_preemptions: u64,
    pub(super) loom_executions: Option<u64>,
    pub(super) tokio_runs: u64,
    pub(super) shrink: bool,
    /// The scheduling fingerprint of the build (see `check::replay`).
    pub(super) fingerprint: String,
    pub(super) version: String,
}

impl Settings {
    /// The settings of `check --tier tier` over `sel`.
    pub(in crate::cli::harness) fn of(tier: &str, sel: &Selection) -> Settings {
        let b = &sel.budget;
        Settings {
            tier: tier.to_string(),
            scenarios: sel.scenarios.iter().map(|s| s.name.to_string()).collect(),
            checkers: sel.checkers.iter().map(|c| c.name().to_string()).collect(),
            sim_seeds: b.sim_seeds,
            dfs_executions: b.dfs_executions,
            dfs_preemptions: b.dfs_preemptions,
            dfs_bound_extra: b.dfs_bound_extra,
            shuttle_iterations: b.shuttle_iterations as u64,
            pct_depth: b.pct_depth as u64,
            loom_preemptions: b.loom_preemptions as u64,
            loom_executions: b.loom_executions,
            tokio_runs: b.tokio_runs,
            shrink: b.shrink,
            fingerprint: check::replay::BUILD_FINGERPRINT.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// The first field in which `self` and `other` differ:
    /// `(field, self's value, other's value)`.
    pub(super) fn diff(&self, other: &Settings) -> Option<(String, String, String)> {
        let (a, b) = (
            serde_json::to_value(self).ok()?,
            serde_json::to_value(other).ok()?,
        );
        let (a, b) = (a.as_object()?, b.as_object()?);
        a.iter()
            .find(|(k, v)| b.get(*k) != Some(v))
            .map(|(k, v)| (k.clone(), v.to_string(), b[k].to_string()))
    }

    /// The table's selection again (`None`: a name this build lacks).
    pub(super) fn selection(&self) -> Result<Selection, String> {
        let scenarios = self
            .scenarios
            .iter()
            .map(|s| Scenario::parse(s).ok_or_else(|| format!("unknown scenario {s:?}")))
            .collect::<Result<_, _>>()?;
        let checkers = self
            .checkers
            .iter()
            .map(|c| Checker::parse(c).ok_or_else(|| format!("unknown checker {c:?}")))
            .collect::<Result<_, _>>()?;
        Ok(Selection {
            scenarios,
            checkers,
            budget: Budget::PR,
        })
    }
}

/// A `row` line: the report, its views and its cause.
#[derive(Serialize)]
struct RowOut<'a> {
    kind: &'static str,
    #[serde(flatten)]
    report: &'a Report,
    views: Vec<(&'a str, &'a str)>,
    cause: Option<&'a str>,
}

/// The `row` line of `r`.
pub(in crate::cli::harness) fn row_line(r: &Report) -> String {
    let line = RowOut {
        kind: "row",
        report: r,
        views: r
            .views
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        cause: r.cause.as_deref(),
    };
    serde_json::to_string(&line).expect("a report serializes")
}

/// The `end` line.
#[derive(Serialize, Deserialize)]
pub(super) struct End {
    pub(super) kind: String,
    pub(super) settings: Settings,
    pub(super) shard: String,
    pub(super) runs: usize,
    pub(super) passed: usize,
    pub(super) skipped: usize,
    pub(super) failed: usize,
    pub(super) interrupted: bool,
    pub(super) judged: bool,
    pub(super) exit: u8,
}

/// A `row` line read back.
#[derive(Deserialize)]
pub(super) struct RowIn {
    pub(super) scenario: String,
    pub(super) checker: String,
    pub(super) fault: Option<String>,
    pub(super) executions: u64,
    pub(super) invariants_checked: u64,
    pub(super) seconds: f64,
    pub(super) exhausted: bool,
    pub(super) bound: Option<String>,
    pub(super) dfs: Option<DfsStats>,
    pub(super) outcomes: BTreeMap<String, u64>,
    pub(super) goals: Vec<GoalIn>,
    pub(super) violations: Vec<FoundIn>,
    pub(super) views: Vec<(String, String)>,
    pub(super) cause: Option<String>,
    pub(super) skipped: Option<String>,
    pub(super) stopped: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct GoalIn {
    pub(super) goal: String,
    pub(super) hits: u64,
}

#[derive(Deserialize)]
pub(super) struct FoundIn {
    pub(super) rule: RuleId,
    pub(super) message: String,
    pub(super) replay: String,
    pub(super) shrunk: Option<String>,
    pub(super) preemptions: Option<(u32, u32)>,
}

/// One file of `check --json`.
pub(super) struct ShardFile {
    pub(super) path: PathBuf,
    pub(super) shard: Shard,
    pub(super) rows: Vec<RowIn>,
    pub(super) end: End,
}

pub(super) fn read(path: &PathBuf) -> Result<ShardFile, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {name}: {e}"))?;
    let (mut rows, mut end) = (Vec::new(), None);
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |e: String| format!("{name} line {}: not a `check --json` line ({e})", i + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        if end.is_some() {
            return Err(bad("a line after the end line".into()));
        }
        match value.get("kind").and_then(|k| k.as_str()) {
            Some("row") => {
                rows.push(serde_json::from_value(value).map_err(|e| bad(e.to_string()))?)
            }
            Some("coverage") => {}
            Some("end") => {
                end = Some(serde_json::from_value::<End>(value).map_err(|e| bad(e.to_string()))?)
            }
            _ => return Err(bad("no kind row, coverage or end".into())),
        }
    }
    let end = end.ok_or_else(|| {
        format!("{name} has no end line: its check did not finish (killed, or still running)")
    })?;
    let shard = Shard::parse(&end.shard).map_err(|e| format!("{name}: {e}"))?;
    if end.interrupted {
        return Err(format!(
            "{name}: shard {shard} was interrupted (Ctrl-C); run it again"
        ));
    }
    Ok(ShardFile {
        path: path.clone(),
        shard,
        rows,
        end,
    })
}
