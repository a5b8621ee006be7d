//! `merge`'s union: the shard files of one run checked against each other
//! and summed row by row, each row judged again on the union.

use super::conclude::Run;
use super::format::{read, RowIn, ShardFile};
use super::table::rows_of;
use crate::check::{self, Checker, Found, GoalTally, Report};
use crate::faults::Fault;
use crate::scenarios::Scenario;
use lifecycle_sim::{DfsStats, Shard};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Check that `files` are the n shards of one run, in shard order.
fn validate(mut files: Vec<ShardFile>) -> Result<Vec<ShardFile>, String> {
    let first = &files[0];
    for f in &files[1..] {
        let (a, b) = (&first.end.settings, &f.end.settings);
        if (&a.fingerprint, &a.version) != (&b.fingerprint, &b.version) {
            return Err(format!(
                "{} and {} were written by different builds (fingerprint {} version {}, \
                 fingerprint {} version {})",
                first.path.display(),
                f.path.display(),
                a.fingerprint,
                a.version,
                b.fingerprint,
                b.version
            ));
        }
        if let Some((field, x, y)) = a.diff(b) {
            return Err(format!(
                "{} and {} ran different settings: {field} {x} vs {y}",
                first.path.display(),
                f.path.display()
            ));
        }
        if f.shard.count != first.shard.count {
            return Err(format!(
                "{} is shard {} but {} is shard {}: not parts of one split",
                first.path.display(),
                first.shard,
                f.path.display(),
                f.shard
            ));
        }
    }
    files.sort_by_key(|f| f.shard.index);
    for pair in files.windows(2) {
        if pair[0].shard == pair[1].shard {
            return Err(format!(
                "{} and {} are both shard {}",
                pair[0].path.display(),
                pair[1].path.display(),
                pair[0].shard
            ));
        }
    }
    let n = files[0].shard.count;
    let have: Vec<String> = files.iter().map(|f| f.shard.to_string()).collect();
    if let Some(k) = (0..n).find(|&k| files.iter().all(|f| f.shard.index != k)) {
        let missing = Shard { index: k, count: n };
        return Err(format!(
            "shard {missing} is missing (have {}): every shard of the split is needed",
            have.join(", ")
        ));
    }
    Ok(files)
}

/// The union of one row's parts (in shard order), judged.
fn union(scenario: &'static Scenario, checker: Checker, parts: Vec<RowIn>) -> Report {
    let mut goals = GoalTally::new(scenario, checker);
    let mut views = BTreeMap::new();
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut dfs: Option<DfsStats> = None;
    let first = &parts[0];
    let mut report = Report {
        scenario: scenario.name,
        checker,
        fault: first.fault.as_deref().and_then(Fault::parse),
        executions: 0,
        invariants_checked: 0,
        status: check::Status::Pass,
        violations: Vec::new(),
        seconds: 0.0,
        exhausted: parts.iter().all(|p| p.exhausted),
        bound: first.bound.clone(),
        dfs: None,
        outcomes: BTreeMap::new(),
        distinct_outcomes: 0,
        views: BTreeMap::new(),
        goals: Vec::new(),
        unreached: Vec::new(),
        error: None,
        skipped: parts.iter().find_map(|p| p.skipped.clone()),
        stopped: parts
            .iter()
            .find_map(|p| p.stopped.as_deref().and_then(check::Stopped::parse)),
        shard: None,
        judged: false,
        cause: parts.iter().find_map(|p| p.cause.clone()),
    };
    for p in parts {
        report.executions += p.executions;
        report.invariants_checked += p.invariants_checked;
        report.seconds += p.seconds;
        for g in &p.goals {
            goals.merge(&g.goal, g.hits);
        }
        for (k, n) in p.outcomes {
            *outcomes.entry(k).or_default() += n;
        }
        for (view, line) in p.views {
            views.entry(view).or_insert(line);
        }
        if report.violations.is_empty() {
            report.violations = p
                .violations
                .into_iter()
                .map(|v| Found {
                    rule: v.rule,
                    message: v.message,
                    replay: v.replay,
                    shrunk: v.shrunk,
                    preemptions: v.preemptions,
                })
                .collect();
        }
        if let Some(d) = p.dfs {
            let sum = dfs.get_or_insert_with(DfsStats::default);
            sum.executions += d.executions;
            sum.complete += d.complete;
            sum.blocked += d.blocked;
            sum.await_stalled += d.await_stalled;
            sum.blocked_after_stall += d.blocked_after_stall;
            sum.wakeup_dropped += d.wakeup_dropped;
            sum.max_depth = sum.max_depth.max(d.max_depth);
            sum.max_preemptions = sum.max_preemptions.max(d.max_preemptions);
            sum.races += d.races;
            sum.backtracks += d.backtracks;
            sum.woken_in_bound += d.woken_in_bound;
            // Runs a shard left to another are counted by their owner.
        }
    }
    if report.exhausted {
        report.stopped = None;
    }
    report.goals = goals.hits();
    report.outcomes = outcomes;
    report.distinct_outcomes = views.len() as u64;
    report.views = views;
    report.dfs = dfs;
    report.judge();
    report
}

/// Read, check and sum `paths`.
pub(in crate::cli::harness) fn merged(paths: &[PathBuf]) -> Result<Run, String> {
    let files = paths.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    let mut files = validate(files)?;
    let settings = files[0].end.settings.clone();
    let sel = settings.selection()?;
    // Each file must hold exactly the rows its shard runs.
    let mut parts: BTreeMap<(String, String), Vec<RowIn>> = BTreeMap::new();
    for f in &mut files {
        let want: Vec<(String, String)> = rows_of(&sel, f.shard)
            .into_iter()
            .map(|(s, c)| (s.name.to_string(), c.name().to_string()))
            .collect();
        let have: Vec<(String, String)> = f
            .rows
            .iter()
            .map(|r| (r.scenario.clone(), r.checker.clone()))
            .collect();
        if let Some((s, c)) = want.iter().find(|w| !have.contains(w)) {
            return Err(format!(
                "{} (shard {}) has no row for {s} on {c}",
                f.path.display(),
                f.shard
            ));
        }
        if let Some((s, c)) = have.iter().find(|h| !want.contains(h)) {
            return Err(format!(
                "{} (shard {}) has a row for {s} on {c} that shard {} does not run \
                 (or has it twice)",
                f.path.display(),
                f.shard,
                f.shard
            ));
        }
        if have.len() != want.len() {
            return Err(format!(
                "{} (shard {}) has a row twice",
                f.path.display(),
                f.shard
            ));
        }
        for r in std::mem::take(&mut f.rows) {
            parts
                .entry((r.scenario.clone(), r.checker.clone()))
                .or_default()
                .push(r);
        }
    }
    let mut reports = Vec::new();
    for &scenario in &sel.scenarios {
        for &checker in &sel.checkers {
            let key = (scenario.name.to_string(), checker.name().to_string());
            if let Some(rows) = parts.remove(&key) {
                reports.push(union(scenario, checker, rows));
            }
        }
    }
    Ok(Run {
        settings,
        shard: Shard::ALL,
        planned: reports.len(),
        reports,
        interrupted: false,
        merged: files.into_iter().map(|f| f.path).collect(),
    })
}
