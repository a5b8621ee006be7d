//! The conclusion `check` and `merge` share: differential coverage (whole
//! runs only), the summary lines, the `coverage` and `end` lines of
//! `--json`, and the exit code.

use super::format::{End, Settings};
use super::table::{bound, failure, paragraph, wrapped};
use crate::check::{self, Checker, Report};
use crate::cli::harness::args::program;
use crate::cli::interrupt::EXIT_INTERRUPTED;
use crate::scenarios::Scenario;
use lifecycle_sim::Shard;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// A run to conclude: `check`'s rows, or the union `merge` made.
pub(in crate::cli::harness) struct Run {
    /// What was searched.
    pub(in crate::cli::harness) settings: Settings,
    /// The part of it these rows cover.
    pub(in crate::cli::harness) shard: Shard,
    /// Rows this process was to run.
    pub(in crate::cli::harness) planned: usize,
    /// The rows run.
    pub(in crate::cli::harness) reports: Vec<Report>,
    /// Whether Ctrl-C cut the run short.
    pub(in crate::cli::harness) interrupted: bool,
    /// The files `merge` read (empty for `check`).
    pub(in crate::cli::harness) merged: Vec<PathBuf>,
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
pub(in crate::cli::harness) fn conclude(run: &Run, json: bool) -> ExitCode {
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
