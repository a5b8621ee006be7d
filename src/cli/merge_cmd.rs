//! `merge`: the union of `check --shard k/n --json` outputs, judged as
//! `check` judges a whole run; and the conclusion (differential coverage,
//! summary, exit code) that `check` and `merge` share.
//!
//! # The JSON lines `check --json` writes
//!
//! One object per line, told apart by `kind`:
//!
//! - `row`: one (scenario, checker) run, in table order. Every field of
//!   `check::Report` (`executions`, `exhausted`, `stopped`, `bound`,
//!   `shard`, `dfs` with `complete` and `blocked`, `outcomes`, `goals` with
//!   `hits` per goal, `violations` with `replay` and `shrunk` lines,
//!   `status`, `error`, `judged`), plus `views`, every contract view
//!   reached as `[view, replay line]`, and `cause`, the checker's own error
//!   before any judgement. A shard writes the rows it ran: every row of
//!   `sim`, `sim-dfs` and `tokio` (its part of their search), and every
//!   n-th row of loom and shuttle (whole).
//! - `coverage`: differential coverage of one scenario (whole runs only).
//! - `end`, last: `settings` (tier, scenarios, checkers, every budget
//!   figure, the build's scheduling fingerprint and version), `shard`
//!   (`k/n`), the counts `runs`, `passed`, `skipped`, `failed`,
//!   `interrupted`, `judged` and the process's `exit` code. A file with no
//!   `end` line is a run that did not finish.
//!
//! `merge` refuses (exit 2, one line on stderr) files of another build or
//! other settings, interrupted or unfinished runs, two files of one shard,
//! and a missing shard. It then sums each row over the shards (executions,
//! schedules, outcomes and goal hits add up; views are united; a search is
//! exhausted if every shard's part is), judges goals and differential
//! coverage on the union, and prints the table `check` prints, with its exit
//! codes. `merge --json` writes the union as an unsharded `check --json`.

use super::args::{program, Selection};
use super::table::{bound, failure, header, paragraph, row, rows_of, wrapped};
use crate::check::{self, Budget, Checker, Found, GoalTally, Report};
use crate::cli::interrupt::EXIT_INTERRUPTED;
use crate::faults::Fault;
use crate::scenarios::Scenario;
use lifecycle_sim::{DfsStats, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// What a `check` run searched: equal in every shard of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Settings {
    tier: String,
    scenarios: Vec<String>,
    checkers: Vec<String>,
    sim_seeds: u64,
    dfs_executions: u64,
    dfs_preemptions: Option<u32>,
    dfs_bound_extra: u32,
    shuttle_iterations: u64,
    pct_depth: u64,
    loom_preemptions: u64,
    loom_executions: Option<u64>,
    tokio_runs: u64,
    shrink: bool,
    /// The scheduling fingerprint of the build (see `check::replay`).
    fingerprint: String,
    version: String,
}

impl Settings {
    /// The settings of `check --tier tier` over `sel`.
    pub(super) fn of(tier: &str, sel: &Selection) -> Settings {
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
    fn diff(&self, other: &Settings) -> Option<(String, String, String)> {
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
    fn selection(&self) -> Result<Selection, String> {
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
pub(super) fn row_line(r: &Report) -> String {
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
struct End {
    kind: String,
    settings: Settings,
    shard: String,
    runs: usize,
    passed: usize,
    skipped: usize,
    failed: usize,
    interrupted: bool,
    judged: bool,
    exit: u8,
}

/// A run to conclude: `check`'s rows, or the union `merge` made.
pub(super) struct Run {
    /// What was searched.
    pub(super) settings: Settings,
    /// The part of it these rows cover.
    pub(super) shard: Shard,
    /// Rows this process was to run.
    pub(super) planned: usize,
    /// The rows run.
    pub(super) reports: Vec<Report>,
    /// Whether Ctrl-C cut the run short.
    pub(super) interrupted: bool,
    /// The files `merge` read (empty for `check`).
    pub(super) merged: Vec<PathBuf>,
}

/// Differential coverage of one scenario: every contract view another
/// checker reached must be reached by `sim-dfs` at the bound it reports.
#[derive(Serialize)]
struct Coverage {
    kind: &'static str,
    scenario: &'static str,
    /// `sim-dfs`'s bound (as its row reports it).
    bound: String,
    /// Views per checker.
    views: Vec<(Checker, u64)>,
    /// Views `sim-dfs` missed: (checker that reached it, view, replay line).
    missed: Vec<(Checker, String, String)>,
    /// The scenario's declared, measured coverage gap, if it has one: its
    /// misses are reported and do not fail the run.
    known_gap: Option<&'static str>,
}

impl Coverage {
    fn of(reports: &[&Report]) -> Option<Coverage> {
        let dfs = reports.iter().find(|r| r.checker == Checker::SimDfs)?;
        let scenario = Scenario::parse(dfs.scenario)?;
        let others: Vec<&&Report> = reports
            .iter()
            .filter(|r| r.checker != dfs.checker && r.status != check::Status::Skip)
            .collect();
        if others.is_empty() || dfs.status == check::Status::Skip {
            return None;
        }
        let missed =
            check::view::missed_by(&dfs.views, others.iter().map(|r| (r.checker, &r.views)));
        Some(Coverage {
            kind: "coverage",
            scenario: dfs.scenario,
            bound: dfs.bound.clone().unwrap_or_default(),
            views: reports
                .iter()
                .map(|r| (r.checker, r.distinct_outcomes))
                .collect(),
            missed,
            known_gap: scenario.coverage_gap,
        })
    }

    /// Whether this scenario fails the run: a miss with no declared gap.
    fn fails(&self) -> bool {
        !self.missed.is_empty() && self.known_gap.is_none()
    }
}

fn print_coverage(coverage: &[Coverage]) {
    let covered = coverage.iter().filter(|c| c.missed.is_empty()).count();
    println!(
        "\ndifferential coverage: sim-dfs reached every contract view another checker\n\
         reached on {covered} of {} scenarios",
        coverage.len()
    );
    for c in coverage.iter().filter(|c| !c.missed.is_empty()) {
        let per: Vec<String> = c.views.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let lead = format!("  {}:", c.scenario);
        let words = |s: String| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        match c.known_gap {
            Some(why) => wrapped(
                &lead,
                &words(format!(
                    "known gap, {} view(s) missed (views: {}): {why}",
                    c.missed.len(),
                    per.join(", ")
                )),
            ),
            None => {
                wrapped(
                    &lead,
                    &words(format!(
                        "sim-dfs ({}) missed {} view(s) (views: {}):",
                        c.bound,
                        c.missed.len(),
                        per.join(", ")
                    )),
                );
                for (checker, view, line) in &c.missed {
                    println!("    {view}  reached by {checker}");
                    if !line.is_empty() {
                        println!("      replay: {} replay '{line}'", program());
                    }
                }
            }
        }
    }
}

/// The summary of the `sim-dfs` rows, one line each with its own bound.
fn print_dfs(run: &Run) {
    let rows: Vec<&Report> = run
        .reports
        .iter()
        .filter(|r| r.checker == Checker::SimDfs && r.dfs.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    let exhausted = rows.iter().filter(|r| r.exhausted).count();
    let part = match run.shard.count {
        1 => String::new(),
        _ => format!(" in shard {}", run.shard),
    };
    println!(
        "\nexhaustive search (sim-dfs{part}): {exhausted} of {} scenarios exhausted",
        rows.len()
    );
    println!(
        "  {:<30} {:<9} {:>10} {:>10} {:>10} {:>3} state",
        "scenario", "bound", "schedules", "complete", "blocked", "pb"
    );
    for r in rows {
        let Some(d) = &r.dfs else { continue };
        let b = bound(r);
        let short = match b.split("preemptions <= ").nth(1) {
            Some(n) => format!("pb<={}", n.split(',').next().unwrap_or(n)),
            None if b.contains("unbounded") => "unbounded".to_string(),
            None => "-".to_string(),
        };
        let state = match (r.exhausted, r.stopped) {
            (true, _) => "exhausted",
            (false, Some(why)) => why.shown(),
            (false, None) => "NOT exhausted",
        };
        println!(
            "  {:<30} {:<9} {:>10} {:>10} {:>10} {:>3} {state}",
            r.scenario, short, d.executions, d.complete, d.blocked, d.max_preemptions
        );
    }
}

/// Rows by result.
#[derive(Default)]
struct Counts {
    passed: usize,
    skipped: usize,
    failed: usize,
    /// Rows cut short by Ctrl-C without a violation.
    cut: usize,
}

impl Counts {
    fn of(reports: &[Report]) -> Counts {
        let mut c = Counts::default();
        for r in reports {
            match (r.status, r.stopped) {
                (check::Status::Fail, _) => c.failed += 1,
                (check::Status::Skip, _) => c.skipped += 1,
                (_, Some(check::Stopped::Interrupted)) => c.cut += 1,
                _ => c.passed += 1,
            }
        }
        c
    }
}

/// "1 run", "2 runs".
fn runs(n: usize) -> String {
    format!("{n} run{}", if n == 1 { "" } else { "s" })
}

/// Judge `run`: differential coverage (whole runs only), the summary, and
/// the exit code: 130 interrupted, 1 a failed row or a missed view, else 0.
pub(super) fn conclude(run: &Run, json: bool) -> ExitCode {
    let judged = run.shard.count == 1 && !run.interrupted;
    let mut coverage = Vec::new();
    if judged {
        let mut by_scenario: Vec<(&str, Vec<&Report>)> = Vec::new();
        for r in &run.reports {
            match by_scenario.iter_mut().find(|(s, _)| *s == r.scenario) {
                Some((_, rs)) => rs.push(r),
                None => by_scenario.push((r.scenario, vec![r])),
            }
        }
        coverage.extend(by_scenario.iter().filter_map(|(_, rs)| Coverage::of(rs)));
    }
    let counts = Counts::of(&run.reports);
    let gaps = coverage.iter().filter(|c| c.fails()).count();
    let exit = if run.interrupted {
        EXIT_INTERRUPTED
    } else if counts.failed > 0 || gaps > 0 {
        1
    } else {
        0
    };
    if json {
        for c in &coverage {
            println!("{}", serde_json::to_string(c).expect("json"));
        }
        let end = End {
            kind: "end".into(),
            settings: run.settings.clone(),
            shard: run.shard.to_string(),
            runs: run.planned,
            passed: counts.passed,
            skipped: counts.skipped,
            failed: counts.failed,
            interrupted: run.interrupted,
            judged,
            exit,
        };
        println!("{}", serde_json::to_string(&end).expect("json"));
        return ExitCode::from(exit);
    }
    if !coverage.is_empty() {
        print_coverage(&coverage);
    }
    let starred = run
        .reports
        .iter()
        .any(|r| r.skipped.is_none() && r.goals.iter().any(|g| g.excused.is_some()));
    if starred {
        println!(
            "\n* = not required of that checker (see `explore <scenario> --checker <checker>`\n    \
             for the measured reason)"
        );
    }
    print_dfs(run);
    let tally = format!(
        "{} passed, {} skipped, {} failed",
        counts.passed, counts.skipped, counts.failed
    );
    if run.interrupted {
        println!(
            "\ninterrupted (Ctrl-C) after {} of {}: {tally}, {} cut short;\n\
             goals and differential coverage not judged",
            run.reports.len(),
            runs(run.planned),
            counts.cut
        );
    } else if run.shard.count > 1 {
        println!();
        paragraph(&format!(
            "shard {}: {}: {tally}. Judged on violations only: goals and differential \
             coverage are judged on the union of the shards, by `{} merge FILES`.",
            run.shard,
            runs(run.planned),
            program()
        ));
    } else {
        let verdict = match (counts.failed, gaps) {
            (0, 0) => "; every required goal reached".to_string(),
            (_, 0) => String::new(),
            (_, g) => format!("; sim-dfs missed views on {g} scenario(s)"),
        };
        println!("\n{}: {tally}{verdict}", runs(run.planned));
    }
    let failed: Vec<&Report> = run
        .reports
        .iter()
        .filter(|r| r.status == check::Status::Fail)
        .collect();
    if !failed.is_empty() {
        println!("\n{} run(s) failed:", failed.len());
        for r in failed {
            failure(r);
        }
    }
    ExitCode::from(exit)
}

/// A `row` line read back.
#[derive(Deserialize)]
struct RowIn {
    scenario: String,
    checker: String,
    fault: Option<String>,
    executions: u64,
    invariants_checked: u64,
    seconds: f64,
    exhausted: bool,
    bound: Option<String>,
    dfs: Option<DfsStats>,
    outcomes: BTreeMap<String, u64>,
    goals: Vec<GoalIn>,
    violations: Vec<FoundIn>,
    views: Vec<(String, String)>,
    cause: Option<String>,
    skipped: Option<String>,
    stopped: Option<String>,
}

#[derive(Deserialize)]
struct GoalIn {
    goal: String,
    hits: u64,
}

#[derive(Deserialize)]
struct FoundIn {
    rule: String,
    message: String,
    replay: String,
    shrunk: Option<String>,
    preemptions: Option<(u32, u32)>,
}

/// One file of `check --json`.
struct ShardFile {
    path: PathBuf,
    shard: Shard,
    rows: Vec<RowIn>,
    end: End,
}

fn read(path: &PathBuf) -> Result<ShardFile, String> {
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
                    rule: crate::oracle::RuleId::read(&v.rule),
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
fn merged(paths: &[PathBuf]) -> Result<Run, String> {
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

/// `merge`.
pub(super) fn run_merge(paths: &[PathBuf], json: bool) -> ExitCode {
    let run = match merged(paths) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if json {
        for r in &run.reports {
            println!("{}", row_line(r));
        }
    } else {
        let files: Vec<String> = run.merged.iter().map(|p| p.display().to_string()).collect();
        let lead = format!(
            "union of {} shard(s) of `check --tier {}`:",
            files.len(),
            run.settings.tier
        );
        wrapped(&lead, &files);
        println!();
        header();
        for r in &run.reports {
            row(r);
        }
    }
    conclude(&run, json)
}
