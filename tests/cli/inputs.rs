//! A resumed search keeps the goals and views of
//! its first part and refuses other search settings; every input is
//! checked before any work (exit 2, one line on stderr, nothing on
//! stdout); every checker honours its budget, loom's `--budget` too.

use super::shards::goal_hits;
use super::{args, assert_refused, run, run_all, run_all_within, scratch, spawn, DEADLINE, HEADER};
use serde_json::Value;
use std::time::Duration;

/// The goal hits of `explore`'s text report: the `N  goal: about` lines.
fn text_goal_hits(report: &str) -> u64 {
    let goals = report.split("\ngoals:\n").nth(1).expect("a goals section");
    goals
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A resumed search reports the goal hits and views of the whole
/// search, as one uninterrupted run does. (`concurrent-dispose` at
/// preemption bound 2, a short test: the first 1,000 schedules miss a goal
/// that the rest hits.)
#[test]
fn a_resumed_search_reports_every_goal_and_view() {
    let dir = scratch("resume");
    let cp = dir.join("cp.json");
    let cp = cp.to_str().unwrap();
    let search = ["explore", "concurrent-dispose", "--preemption-bound", "2"];
    // The uninterrupted search runs meanwhile.
    let whole = spawn(&args(&[&search, &["--json"]]));
    let first = run(&args(&[&search, &["--checkpoint", cp, "--budget", "1000"]]));
    // A search stopped at its budget misses goals: it fails, and says why.
    assert_eq!(first.code, 1, "{}", first.both());
    assert_eq!(first.first_out(), HEADER);
    assert!(first.out.contains("stopped at budget"), "{}", first.out);
    assert!(
        first.out.contains(&format!(
            "checkpoint written to {cp}; continue with --resume"
        )),
        "{}",
        first.out
    );
    assert!(text_goal_hits(&first.out) > 0, "{}", first.out);
    let rest = run(&args(&[
        &search,
        &["--checkpoint", cp, "--resume", "--json"],
    ]));
    assert_eq!(rest.code, 0, "{}", rest.both());
    let whole = whole.finish(DEADLINE);
    assert_eq!(whole.code, 0, "{}", whole.both());
    let (rest, whole): (Value, Value) = (
        serde_json::from_str(rest.first_out()).unwrap(),
        serde_json::from_str(whole.first_out()).unwrap(),
    );
    assert_eq!(rest["exhausted"], true);
    assert_eq!(rest["executions"], whole["executions"]);
    assert_eq!(goal_hits(&rest), goal_hits(&whole));
    assert_eq!(rest["outcomes"], whole["outcomes"]);
    assert_eq!(rest["distinct_outcomes"], whole["distinct_outcomes"]);
    assert_eq!(rest["invariants_checked"], whole["invariants_checked"]);
}

/// Resuming with another shard, bound or reduction is refused.
#[test]
fn resuming_with_other_search_settings_is_refused() {
    let dir = scratch("resume-other");
    let cp = dir.join("cp.json");
    let cp = cp.to_str().unwrap();
    let explore = ["explore", "concurrent-dispose", "--checkpoint", cp];
    let first = run(&args(&[&explore, &["--budget", "200"]]));
    assert_eq!(first.code, 1, "{}", first.both());
    assert_eq!(first.first_out(), HEADER);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--preemption-bound", "3"],
            "preemption bound <= 2, not <= 3",
        ),
        (&["--shard", "1/2"], "shard 1/1, not 1/2"),
        (&["--no-reduction"], "reduction on, not off"),
        (&["--unbounded"], "preemption bound <= 2, not unbounded"),
    ];
    let lines: Vec<Vec<&str>> = cases
        .iter()
        .map(|(extra, _)| args(&[&explore, &["--resume"], extra]))
        .collect();
    for ((extra, said), out) in cases.iter().zip(run_all(&lines)) {
        let want = format!(
            "error: checkpoint {cp} searches with {said}: resume with the settings it was \
             saved with, or start a new search"
        );
        assert_eq!(out.code, 2, "{extra:?}");
        assert_eq!(out.out, "", "{extra:?}");
        assert_eq!(out.first_err(), want, "{extra:?}");
    }
}

/// Bad inputs exit 2 with one line on stderr, before any
/// work (all of them together within 5 s) and with nothing on stdout.
#[test]
fn inputs_are_checked_before_any_work() {
    let cases: [(&[&str], &str); 15] = [
        (
            &["explore", "cancel-mid-turn", "--optimal"],
            "error: --optimal needs an unbounded search: cancel-mid-turn is searched at a \
             preemption bound (add --unbounded)",
        ),
        (
            &["explore", "cancel-before-claim", "--checker", "sim", "--optimal"],
            "error: --checkpoint, --resume, --no-reduction, --preemption-bound, --unbounded and \
             --optimal apply to sim-dfs",
        ),
        (
            &["explore", "cancel-before-claim", "--unbounded", "--checkpoint", "/nonexistent/dir/cp.json"],
            "error: cannot write checkpoint /nonexistent/dir/cp.json: no directory /nonexistent/dir",
        ),
        (&["explore", "cancel-before-claim", "--budget", "0"], "error: --budget must be at least 1"),
        (&["check", "--sim-seeds", "0"], "error: --sim-seeds must be at least 1"),
        (
            &["check", "--scenario", "cancel-before-claim", "--checker", "sim", "--sim-seeds", "0"],
            "error: --sim-seeds must be at least 1",
        ),
        (&["check", "--dfs-executions", "0"], "error: --dfs-executions must be at least 1"),
        (&["check", "--tokio-runs", "0"], "error: --tokio-runs must be at least 1"),
        (&["check", "--shuttle-iterations", "0"], "error: --shuttle-iterations must be at least 1"),
        (&["check", "--budget", "0"], "error: --budget must be at least 1"),
        (
            &["check", "--budget", "18446744073709551615"],
            "error: --budget 18446744073709551615 is absurd: at most 1000000000000",
        ),
        (
            &["explore", "cancel-before-claim", "--preemption-bound", "1000"],
            "error: --preemption-bound 1000 is absurd: at most 64",
        ),
        (
            &["mutants", "--shard", "1/2"],
            "error: mutants does not take --shard: its kill matrix cannot be merged",
        ),
        (
            &["explore", "cancel-before-claim", "--checker", "loom", "--shard", "1/2"],
            "error: --shard splits sim, sim-dfs and tokio, not loom (check gives each loom row \
             whole to one shard)",
        ),
        (
            &["merge", "/nonexistent/shard.jsonl"],
            "error: cannot read /nonexistent/shard.jsonl: No such file or directory (os error 2)",
        ),
    ];
    let limit = Duration::from_secs(5);
    let lines: Vec<Vec<&str>> = cases.iter().map(|(a, _)| a.to_vec()).collect();
    for ((_, said), out) in cases.iter().zip(run_all_within(&lines, limit)) {
        assert_refused(&out, |l| l == *said, limit);
    }
}

/// loom honours `--budget` (it does not run to the end of its bound): 5
/// executions, stopped at budget, and the row says so.
#[test]
fn loom_stops_at_its_budget() {
    let r = run(&[
        "explore",
        "cancel-before-claim",
        "--checker",
        "loom",
        "--budget",
        "5",
    ]);
    assert_eq!(r.code, 1, "{}", r.both());
    assert_eq!(r.first_out(), HEADER);
    let row: Vec<&str> = r
        .out
        .lines()
        .nth(1)
        .expect("a row")
        .split_whitespace()
        .collect();
    assert_eq!(row[..3], ["cancel-before-claim", "loom", "5"], "{}", r.out);
    assert!(
        r.out
            .contains("stopped at budget\n  bound: preemptions <= 3, at most 5 executions\n"),
        "{}",
        r.out
    );
}
