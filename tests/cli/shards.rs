//! A shard judges violations only; shards merged by
//! `merge` equal the unsharded run; `merge` refuses what is not one whole
//! split of one build and one set of settings; `scripts/shards.sh` runs
//! and merges.

use super::{args, run, run_all, scratch, Proc, Run, BIN, DEADLINE, HEADER};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `check ARGS --shard k/n --json --no-progress`.
fn shard_args(k: u32, n: u32, check: &[&str]) -> Vec<String> {
    let mut line = vec!["check".to_string()];
    line.extend(check.iter().map(|a| a.to_string()));
    line.extend(["--shard".into(), format!("{k}/{n}"), "--json".into()]);
    line.push("--no-progress".into());
    line
}

/// Write shard `k`'s run into `dir`, asserting it exits 0 and ends with an
/// unjudged end line; the file.
fn save_shard(dir: &Path, k: usize, run: &Run) -> PathBuf {
    let path = dir.join(format!("shard-{k}.jsonl"));
    assert_eq!(run.code, 0, "{}: {}", path.display(), run.err);
    let end: Value = serde_json::from_str(run.out.lines().last().expect("a line")).unwrap();
    assert_eq!(end["kind"], "end", "{}", run.out);
    assert_eq!(end["judged"], false);
    std::fs::write(&path, &run.out).expect("shard file");
    path
}

/// Run `check ARGS` as shard k/n for every k at once, each into a file of
/// `dir` (see [`save_shard`]).
fn shards(dir: &Path, n: u32, check: &[&str]) -> Vec<PathBuf> {
    let lines: Vec<Vec<String>> = (1..=n).map(|k| shard_args(k, n, check)).collect();
    let runs = run_all(&lines);
    runs.iter()
        .enumerate()
        .map(|(i, r)| save_shard(dir, i + 1, r))
        .collect()
}

/// The rows of `check --json` output, by (scenario, checker).
fn rows(json: &str) -> BTreeMap<(String, String), Value> {
    json.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|v| v["kind"] == "row")
        .map(|v| {
            let key = (
                v["scenario"].as_str().unwrap().to_string(),
                v["checker"].as_str().unwrap().to_string(),
            );
            (key, v)
        })
        .collect()
}

fn views(row: &Value) -> BTreeSet<String> {
    row["views"]
        .as_array()
        .expect("views")
        .iter()
        .map(|v| v[0].as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn goal_hits(row: &Value) -> Vec<(String, u64)> {
    row["goals"]
        .as_array()
        .expect("goals")
        .iter()
        .map(|g| {
            (
                g["goal"].as_str().unwrap().to_string(),
                g["hits"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn paths(files: &[PathBuf]) -> Vec<&str> {
    files.iter().map(|p| p.to_str().unwrap()).collect()
}

/// Two scenarios, one of them at a smaller preemption bound than its own
/// (unbounded) so that the test stays short.
const TWO: [&str; 8] = [
    "--checker",
    "sim-dfs",
    "--scenario",
    "dispose-mid-turn",
    "--scenario",
    "create-during-owner-unload",
    "--dfs-preemptions",
    "3",
];

/// Four shards merged are the unsharded run: the same executions,
/// complete and sleep-blocked schedules, outcome labels, goal hits and
/// views, and a pass. (An unsharded search explores every alternative
/// above the split depth, as the union of its shards does, so the two
/// trees are the same, blocked schedules included.)
#[test]
fn four_sim_dfs_shards_merge_into_the_unsharded_run() {
    let dir = scratch("four");
    let mut lines = vec![args(&[&["check"], &TWO, &["--json"]])
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()];
    lines.extend((1..=4).map(|k| shard_args(k, 4, &TWO)));
    let mut runs = run_all(&lines);
    let whole = runs.remove(0);
    assert_eq!(whole.code, 0, "{}", whole.both());
    let files: Vec<PathBuf> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| save_shard(&dir, i + 1, r))
        .collect();
    let merges = run_all(&[
        args(&[&["merge", "--json"], &paths(&files)]),
        args(&[&["merge"], &paths(&files)]),
    ]);
    let (merged, table) = (&merges[0], &merges[1]);
    assert_eq!(merged.code, 0, "{}", merged.both());
    let (whole, merged) = (rows(&whole.out), rows(&merged.out));
    assert_eq!(whole.len(), 2);
    assert_eq!(
        whole.keys().collect::<Vec<_>>(),
        merged.keys().collect::<Vec<_>>()
    );
    for (key, w) in &whole {
        let m = &merged[key];
        assert_eq!(m["status"], "pass", "{key:?}");
        assert_eq!(m["exhausted"], true, "{key:?}");
        assert_eq!(m["executions"], w["executions"], "{key:?}");
        assert_eq!(m["dfs"]["complete"], w["dfs"]["complete"], "{key:?}");
        assert_eq!(m["dfs"]["blocked"], w["dfs"]["blocked"], "{key:?}");
        assert_eq!(m["outcomes"], w["outcomes"], "{key:?}");
        assert_eq!(goal_hits(m), goal_hits(w), "{key:?}");
        assert_eq!(views(m), views(w), "{key:?}");
        assert_eq!(m["distinct_outcomes"], w["distinct_outcomes"], "{key:?}");
    }
    // The table: the union's rows, then the same verdict as `check`.
    assert_eq!(table.code, 0, "{}", table.both());
    assert!(
        table
            .first_out()
            .starts_with("union of 4 shard(s) of `check --tier pr`:"),
        "{}",
        table.out
    );
    assert!(
        table
            .out
            .contains("2 runs: 2 passed, 0 skipped, 0 failed; every required goal reached"),
        "{}",
        table.out
    );
}

const SMALL: [&str; 4] = [
    "--checker",
    "sim-dfs",
    "--scenario",
    "create-during-owner-unload",
];

/// The four shards of one small split, run once for every test here.
fn small_split() -> &'static [PathBuf] {
    static SPLIT: OnceLock<Vec<PathBuf>> = OnceLock::new();
    SPLIT.get_or_init(|| shards(&scratch("small-split"), 4, &SMALL))
}

/// `merge` of the small split with its third file replaced by `third`.
fn merge_with_third(third: &Path) -> Run {
    let f = paths(small_split());
    run(&["merge", f[0], f[1], third.to_str().unwrap(), f[3]])
}

/// A refused merge: exit 2, nothing on stdout, and its first line.
#[track_caller]
fn refused(r: &Run) -> &str {
    assert_eq!(r.code, 2, "{}", r.both());
    assert_eq!(r.out, "");
    r.first_err()
}

/// Three of four shards are not the union.
#[test]
fn a_merge_of_three_of_four_shards_is_refused() {
    let f = paths(small_split());
    let out = run(&["merge", f[0], f[1], f[3]]);
    assert_eq!(
        refused(&out),
        "error: shard 3/4 is missing (have 1/4, 2/4, 4/4): every shard of the split is needed"
    );
}

/// One shard twice, another build, other settings, an unfinished
/// file: each refused with one line naming the file.
#[test]
fn merge_refuses_overlaps_other_builds_other_settings_and_unfinished_files() {
    let dir = scratch("refuse");
    let f = paths(small_split());
    let twice = run(&["merge", f[0], f[1], f[1], f[2], f[3]]);
    let first = refused(&twice);
    assert!(first.ends_with("are both shard 2/4"), "{first}");

    let text = std::fs::read_to_string(f[2]).unwrap();
    let end: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let fp = end["settings"]["fingerprint"].as_str().unwrap();
    let other_build = dir.join("other-build.jsonl");
    std::fs::write(&other_build, text.replace(fp, "0000000000000000")).unwrap();
    let out = merge_with_third(&other_build);
    let first = refused(&out);
    assert!(
        first.contains("were written by different builds"),
        "{first}"
    );

    let unfinished = dir.join("unfinished.jsonl");
    let cut: Vec<&str> = text.lines().collect();
    std::fs::write(&unfinished, cut[..cut.len() - 1].join("\n")).unwrap();
    let out = merge_with_third(&unfinished);
    assert_eq!(
        refused(&out),
        format!(
            "error: {} has no end line: its check did not finish (killed, or still running)",
            unfinished.display()
        )
    );

    // Shard 3/4 of the same split at another budget.
    let other_budget = args(&[&SMALL, &["--dfs-executions", "100000"]]);
    let budget = save_shard(&dir, 3, &run(&shard_args(3, 4, &other_budget)));
    let out = merge_with_third(&budget);
    let first = refused(&out);
    assert!(
        first.ends_with("ran different settings: dfs_executions 2000000 vs 100000"),
        "{first}"
    );
}

/// A shard judges violations only (it does not fail on goals its part of
/// the search cannot reach), and says so.
#[test]
fn a_shard_judges_violations_only() {
    let r = run(&args(&[
        &["check"],
        &SMALL,
        &["--shard", "3/4", "--no-progress"],
    ]));
    assert_eq!(r.code, 0, "{}", r.both());
    assert_eq!(r.first_out(), HEADER);
    assert!(
        r.out
            .contains("shard 3/4: 1 run: 1 passed, 0 skipped, 0 failed. Judged on violations only"),
        "{}",
        r.out
    );
}

/// `bash scripts/shards.sh ARGS` with the built binary.
fn script(args: &[&str], dir: Option<&Path>) -> Run {
    let mut c = Command::new("bash");
    c.arg("scripts/shards.sh")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LIFECYCLE", BIN);
    if let Some(dir) = dir {
        c.env("SHARDS_DIR", dir);
    }
    Proc::of(c).finish(DEADLINE)
}

/// `scripts/shards.sh` runs the shards in parallel and merges them.
#[test]
fn the_shards_script_runs_and_merges() {
    let dir = scratch("script");
    let out = script(&args(&[&["3"], &SMALL]), Some(&dir));
    assert_eq!(out.code, 0, "{}", out.both());
    assert!(
        out.first_out().starts_with("union of 3 shard(s)"),
        "{}",
        out.out
    );
    assert!(dir.join("shard-3.jsonl").exists());
    let bad = script(&["2", "--scenario", "nope"], None);
    assert_eq!(bad.code, 2, "{}", bad.both());
    assert_eq!(bad.first_err(), "error: shard 1/2 exited 2:");
}
