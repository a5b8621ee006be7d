//! The command line at scale and under signals (issue 16): sharded `check`
//! runs merged by `merge` equal the unsharded run; `merge` refuses what is
//! not one whole split; checkpoints keep goals and views and refuse other
//! settings; inputs are checked before any work; tables fit 100 columns and
//! say the truth; Ctrl-C stops cleanly with exit 130 and a second one
//! kills. Each test drives the built binary and asserts its exit code and
//! the first line of its stderr or stdout.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_lifecycle");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("run lifecycle")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_shards")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The table's first line.
const HEADER: &str =
    "scenario                       checker        executions distinct result seconds  space";

/// Run `check ARGS --json` as shard k/n for every k, each into a file of
/// `dir`; assert each exits 0 and writes row lines then an end line.
fn shards(dir: &Path, n: u32, args: &[&str]) -> Vec<PathBuf> {
    let children: Vec<(PathBuf, Child)> = (1..=n)
        .map(|k| {
            let path = dir.join(format!("shard-{k}.jsonl"));
            let file = std::fs::File::create(&path).expect("shard file");
            let shard = format!("{k}/{n}");
            let child = Command::new(BIN)
                .arg("check")
                .args(args)
                .args(["--shard", &shard, "--json", "--no-progress"])
                .stdout(file)
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a shard");
            (path, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(path, child)| {
            let out = child.wait_with_output().expect("shard");
            assert_eq!(code(&out), 0, "{}: {}", path.display(), stderr(&out));
            let text = std::fs::read_to_string(&path).expect("read shard");
            let end: Value = serde_json::from_str(text.lines().last().expect("a line")).unwrap();
            assert_eq!(end["kind"], "end", "{text}");
            assert_eq!(end["judged"], false);
            path
        })
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

fn goal_hits(row: &Value) -> Vec<(String, u64)> {
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

const TWO: [&str; 6] = [
    "--checker",
    "sim-dfs",
    "--scenario",
    "dispose-mid-turn",
    "--scenario",
    "create-during-owner-unload",
];

/// Issue 16, item 1: four shards merged give the unsharded run's complete
/// schedules, outcome labels, goal hits and views, and pass. (A sharded
/// search also explores every alternative above its split depth, so the
/// union has a few more sleep-blocked schedules: 12,675 against 12,672 for
/// dispose-mid-turn; the complete runs are the same.)
#[test]
fn four_sim_dfs_shards_merge_into_the_unsharded_run() {
    let dir = scratch("four");
    let whole = run(&[&["check"][..], &TWO, &["--json"]].concat());
    assert_eq!(code(&whole), 0, "{}", stdout(&whole));
    let files = shards(&dir, 4, &TWO);
    let merged = run(&[&["merge", "--json"][..], &paths(&files)].concat());
    assert_eq!(code(&merged), 0, "{}{}", stdout(&merged), stderr(&merged));
    let (whole, merged) = (rows(&stdout(&whole)), rows(&stdout(&merged)));
    assert_eq!(whole.len(), 2);
    assert_eq!(
        whole.keys().collect::<Vec<_>>(),
        merged.keys().collect::<Vec<_>>()
    );
    for (key, w) in &whole {
        let m = &merged[key];
        assert_eq!(m["status"], "pass", "{key:?}");
        assert_eq!(m["exhausted"], true, "{key:?}");
        assert_eq!(m["dfs"]["complete"], w["dfs"]["complete"], "{key:?}");
        assert_eq!(m["outcomes"], w["outcomes"], "{key:?}");
        assert_eq!(goal_hits(m), goal_hits(w), "{key:?}");
        assert_eq!(views(m), views(w), "{key:?}");
        assert_eq!(m["distinct_outcomes"], w["distinct_outcomes"], "{key:?}");
        let blocked = |r: &Value| r["dfs"]["blocked"].as_u64().unwrap();
        let executions = |r: &Value| r["executions"].as_u64().unwrap();
        assert_eq!(executions(m) - blocked(m), executions(w) - blocked(w));
    }
    // The table: the union's rows, then the same verdict as `check`.
    let table = run(&[&["merge"][..], &paths(&files)].concat());
    assert_eq!(code(&table), 0);
    let text = stdout(&table);
    assert!(
        first_line(&text).starts_with("union of 4 shard(s) of `check --tier pr`:"),
        "{text}"
    );
    assert!(text.contains("2 runs: 2 passed, 0 skipped, 0 failed; every required goal reached"));
}

/// The shards of one small split, written once per test that needs them.
fn small_split(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = scratch(name);
    let files = shards(
        &dir,
        4,
        &[
            "--checker",
            "sim-dfs",
            "--scenario",
            "create-during-owner-unload",
        ],
    );
    (dir, files)
}

/// Item 1: three of four shards are not the union.
#[test]
fn a_merge_of_three_of_four_shards_is_refused() {
    let (_, files) = small_split("three");
    let three = [&files[0], &files[1], &files[3]].map(|p| p.to_str().unwrap());
    let out = run(&[&["merge"][..], &three].concat());
    assert_eq!(code(&out), 2);
    assert!(stdout(&out).is_empty());
    assert_eq!(
        first_line(&stderr(&out)),
        "error: shard 3/4 is missing (have 1/4, 2/4, 4/4): every shard of the split is needed"
    );
}

/// Item 1: one shard twice, another build, other settings, an unfinished
/// file: each refused with one line naming the file.
#[test]
fn merge_refuses_overlaps_other_builds_other_settings_and_unfinished_files() {
    let (dir, files) = small_split("refuse");
    let f = paths(&files);
    let twice = run(&["merge", f[0], f[1], f[1], f[2], f[3]]);
    assert_eq!(code(&twice), 2);
    assert!(
        first_line(&stderr(&twice)).ends_with("are both shard 2/4"),
        "{}",
        stderr(&twice)
    );

    let text = std::fs::read_to_string(&files[2]).unwrap();
    let other_build = dir.join("other-build.jsonl");
    let fp = serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["settings"]
        ["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(&other_build, text.replace(&fp, "0000000000000000")).unwrap();
    let out = run(&["merge", f[0], f[1], other_build.to_str().unwrap(), f[3]]);
    assert_eq!(code(&out), 2);
    assert!(
        first_line(&stderr(&out)).contains("were written by different builds"),
        "{}",
        stderr(&out)
    );

    let unfinished = dir.join("unfinished.jsonl");
    let cut: Vec<&str> = text.lines().collect();
    std::fs::write(&unfinished, cut[..cut.len() - 1].join("\n")).unwrap();
    let out = run(&["merge", f[0], f[1], unfinished.to_str().unwrap(), f[3]]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        first_line(&stderr(&out)),
        format!(
            "error: {} has no end line: its check did not finish (killed, or still running)",
            unfinished.display()
        )
    );

    let other = scratch("refuse-settings");
    let budget = shards(
        &other,
        4,
        &[
            "--checker",
            "sim-dfs",
            "--scenario",
            "create-during-owner-unload",
            "--dfs-executions",
            "100000",
        ],
    );
    let out = run(&["merge", f[0], f[1], budget[2].to_str().unwrap(), f[3]]);
    assert_eq!(code(&out), 2);
    assert!(
        first_line(&stderr(&out))
            .ends_with("ran different settings: dfs_executions 2000000 vs 100000"),
        "{}",
        stderr(&out)
    );
}

/// Item 1: a shard judges violations only (it used to fail on goals its
/// part of the search cannot reach), and says so.
#[test]
fn a_shard_judges_violations_only() {
    let out = run(&[
        "check",
        "--checker",
        "sim-dfs",
        "--scenario",
        "create-during-owner-unload",
        "--shard",
        "3/4",
        "--no-progress",
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let text = stdout(&out);
    assert_eq!(first_line(&text), HEADER);
    assert!(
        text.contains("shard 3/4: 1 run: 1 passed, 0 skipped, 0 failed. Judged on violations only"),
        "{text}"
    );
}

/// Item 1: `scripts/shards.sh` runs the shards in parallel and merges them.
#[test]
fn the_shards_script_runs_and_merges() {
    let dir = scratch("script");
    let out = Command::new("bash")
        .arg("scripts/shards.sh")
        .args([
            "3",
            "--checker",
            "sim-dfs",
            "--scenario",
            "create-during-owner-unload",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LIFECYCLE", BIN)
        .env("SHARDS_DIR", &dir)
        .output()
        .expect("bash");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        first_line(&stdout(&out)).starts_with("union of 3 shard(s)"),
        "{}",
        stdout(&out)
    );
    assert!(dir.join("shard-3.jsonl").exists());
    let bad = Command::new("bash")
        .arg("scripts/shards.sh")
        .args(["2", "--scenario", "nope"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LIFECYCLE", BIN)
        .output()
        .expect("bash");
    assert_eq!(code(&bad), 2);
    assert_eq!(first_line(&stderr(&bad)), "error: shard 1/2 exited 2:");
}

/// Item 2: a resumed search reports the goal hits and views of the whole
/// search, as one uninterrupted run does.
#[test]
fn a_resumed_search_reports_every_goal_and_view() {
    let dir = scratch("resume");
    let cp = dir.join("cp.json");
    let cp = cp.to_str().unwrap();
    let first = run(&[
        "explore",
        "cancel-before-claim",
        "--checkpoint",
        cp,
        "--budget",
        "1000",
    ]);
    // A search stopped at its budget misses goals: it fails, and says why.
    assert_eq!(code(&first), 1, "{}", stdout(&first));
    assert_eq!(first_line(&stdout(&first)), HEADER);
    assert!(stdout(&first).contains("stopped at budget"));
    assert!(stdout(&first).contains(&format!(
        "checkpoint written to {cp}; continue with --resume"
    )));
    let rest = run(&[
        "explore",
        "cancel-before-claim",
        "--checkpoint",
        cp,
        "--resume",
        "--json",
    ]);
    assert_eq!(code(&rest), 0, "{}", stdout(&rest));
    let whole = run(&["explore", "cancel-before-claim", "--json"]);
    assert_eq!(code(&whole), 0);
    let (rest, whole): (Value, Value) = (
        serde_json::from_str(stdout(&rest).trim()).unwrap(),
        serde_json::from_str(stdout(&whole).trim()).unwrap(),
    );
    assert_eq!(rest["exhausted"], true);
    assert_eq!(rest["executions"], whole["executions"]);
    assert_eq!(goal_hits(&rest), goal_hits(&whole));
    assert_eq!(rest["outcomes"], whole["outcomes"]);
    assert_eq!(rest["distinct_outcomes"], whole["distinct_outcomes"]);
    assert_eq!(rest["invariants_checked"], whole["invariants_checked"]);
}

/// Item 2: resuming with another shard, bound or reduction is refused.
#[test]
fn resuming_with_other_search_settings_is_refused() {
    let dir = scratch("resume-other");
    let cp = dir.join("cp.json");
    let cp = cp.to_str().unwrap();
    let first = run(&[
        "explore",
        "cancel-before-claim",
        "--checkpoint",
        cp,
        "--budget",
        "200",
    ]);
    assert_eq!(code(&first), 1);
    for (extra, said) in [
        (
            &["--preemption-bound", "2"][..],
            "preemption bound <= 3, not <= 2",
        ),
        (&["--shard", "1/2"][..], "shard 1/1, not 1/2"),
        (&["--no-reduction"][..], "reduction on, not off"),
        (&["--unbounded"][..], "preemption bound <= 3, not unbounded"),
    ] {
        let args = [
            &[
                "explore",
                "cancel-before-claim",
                "--checkpoint",
                cp,
                "--resume",
            ][..],
            extra,
        ]
        .concat();
        let out = run(&args);
        assert_eq!(code(&out), 2, "{extra:?}");
        assert!(stdout(&out).is_empty(), "{extra:?}");
        assert_eq!(
            first_line(&stderr(&out)),
            format!(
                "error: checkpoint {cp} searches with {said}: resume with the settings it was \
                 saved with, or start a new search"
            )
        );
    }
}

/// Item 3: bad inputs exit 2 with one line on stderr, before any work and
/// with nothing on stdout.
#[test]
fn inputs_are_checked_before_any_work() {
    let cases: [(&[&str], &str); 12] = [
        (
            &["explore", "cancel-before-claim", "--unbounded", "--checkpoint", "/nonexistent/dir/cp.json"],
            "error: cannot write checkpoint /nonexistent/dir/cp.json: no directory /nonexistent/dir",
        ),
        (&["explore", "cancel-before-claim", "--budget", "0"], "error: --budget must be at least 1"),
        (&["check", "--sim-seeds", "0"], "error: --sim-seeds must be at least 1"),
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
    for (args, said) in cases {
        let start = Instant::now();
        let out = run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stdout(&out));
        assert!(stdout(&out).is_empty(), "{args:?} printed {}", stdout(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}");
        assert_eq!(first_line(&stderr(&out)), said, "{args:?}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{args:?} did work first"
        );
    }
}

/// Item 4: every table line fits 100 columns (replay lines aside: they
/// are copied whole), every row states its bound, loom's too, and a
/// budget-stopped search says so.
#[test]
fn the_table_fits_100_columns_and_states_every_bound() {
    let out = run(&[
        "check",
        "--scenario",
        "cancel-before-claim",
        "--budget",
        "300",
        "--tokio-runs",
        "3",
        "--no-progress",
    ]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{text}");
    assert_eq!(first_line(&text), HEADER);
    for line in text.lines().filter(|l| !l.contains(" replay '")) {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.len()
        );
    }
    let row = |checker: &str| {
        let i = text
            .lines()
            .position(|l| {
                l.starts_with("cancel-before-claim") && l.contains(&format!(" {checker} "))
            })
            .unwrap_or_else(|| panic!("no {checker} row in {text}"));
        text.lines().skip(i).take(2).collect::<Vec<_>>().join("\n")
    };
    assert!(
        row("sim-dfs")
            .contains("stopped at budget\n  bound: source-DPOR + sleep sets, preemptions <= 3"),
        "{text}"
    );
    assert!(
        row("loom")
            .contains("stopped at budget\n  bound: preemptions <= 3, at most 300 executions"),
        "{text}"
    );
    assert!(
        row("sim").contains("sampled\n  bound: seeds 0..300, pct depth 1..=3"),
        "{text}"
    );
    assert!(
        row("tokio").contains("sampled\n  bound: 3 runs on 2 worker threads"),
        "{text}"
    );
    assert!(!text.contains("sampled") || !row("sim-dfs").contains("sampled"));
}

/// Item 4: skipped runs are counted apart from passed ones.
#[test]
fn the_summary_counts_passed_skipped_and_failed_apart() {
    let out = run(&[
        "check",
        "--scenario",
        "tool-bash-reload",
        "--checker",
        "loom",
        "--no-progress",
    ]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}");
    assert_eq!(first_line(&text), HEADER);
    assert!(
        text.contains("\n1 run: 0 passed, 1 skipped, 0 failed;"),
        "{text}"
    );
}

/// Item 4: a bounded scenario is never said to be unbounded, and the `*`
/// footnote appears only under a row that has a `*`.
#[test]
fn bounded_rows_never_say_unbounded_and_footnotes_need_a_star() {
    let out = run(&[
        "check",
        "--checker",
        "sim-dfs",
        "--scenario",
        "tool-bash-reload",
        "--dfs-executions",
        "50",
        "--no-progress",
    ]);
    let text = stdout(&out);
    assert_eq!(first_line(&text), HEADER);
    assert!(!text.contains("unbounded"), "{text}");
    assert!(text.contains("preemptions <= 1"), "{text}");
    assert!(text.contains("pb<=1"), "{text}");
    assert!(!text.contains("* = not required"), "{text}");
    let starred = run(&[
        "check",
        "--checker",
        "shuttle-pct",
        "--scenario",
        "cancel-before-claim",
        "--shuttle-iterations",
        "50",
        "--no-progress",
    ]);
    let text = stdout(&starred);
    assert!(text.contains("abort-before-first-step="), "{text}");
    assert!(text.contains("* = not required of that checker"), "{text}");
}

/// Item 4: follow-up commands name the binary as it was invoked.
#[test]
fn follow_up_commands_name_the_binary_as_invoked() {
    let out = run(&[
        "explore",
        "when-idle-waiters",
        "--checker",
        "sim",
        "--fault",
        "M12",
        "--stop-at-first",
    ]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{text}");
    assert_eq!(first_line(&text), HEADER);
    let shown = Path::new(BIN)
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .map_or(BIN.to_string(), |p| p.display().to_string());
    assert!(
        text.contains(&format!(
            "  replay: {shown} replay 'v2:when-idle-waiters:sim:M12:"
        )),
        "{text}"
    );
    assert!(!text.contains("cargo run"), "{text}");
}

fn interrupt(child: &Child) {
    // SAFETY: signalling our own child by its pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0, "kill");
}

/// Wait for `child` at most `secs`; kill it and fail past that.
fn finish(mut child: Child, secs: u64) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("still running {secs} s after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Item 4: the first Ctrl-C stops a long `explore` between schedules: the
/// partial report, the checkpoint, exit 130.
#[test]
fn ctrl_c_stops_explore_with_its_partial_report_and_checkpoint() {
    let dir = scratch("ctrl-c");
    let cp = dir.join("cp.json");
    let child = spawn(&[
        "explore",
        "cancel-before-claim",
        "--unbounded",
        "--budget",
        "1000000000",
        "--checkpoint",
        cp.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let out = finish(child, 20);
    let text = stdout(&out);
    assert_eq!(code(&out), 130, "{text}{}", stderr(&out));
    assert_eq!(first_line(&text), HEADER);
    assert!(text.contains(" interrupted\n"), "{text}");
    assert!(text.contains("NOT exhausted (interrupted)"), "{text}");
    assert!(text.contains("\ninterrupted (Ctrl-C) after "), "{text}");
    assert!(
        text.contains(&format!("checkpoint written to {}", cp.display())),
        "{text}"
    );
    assert!(cp.exists());
}

/// Item 4: Ctrl-C during `check` prints the rows done, the partial summary
/// and exits 130.
#[test]
fn ctrl_c_stops_check_with_a_partial_table() {
    let child = spawn(&[
        "check",
        "--checker",
        "sim-dfs",
        "--checker",
        "sim",
        "--scenario",
        "cancel-before-claim",
        "--dfs-preemptions",
        "30",
        "--dfs-executions",
        "1000000000",
        "--no-progress",
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let out = finish(child, 20);
    let text = stdout(&out);
    assert_eq!(code(&out), 130, "{text}{}", stderr(&out));
    assert_eq!(first_line(&text), HEADER);
    assert!(
        text.contains(
            "\ninterrupted (Ctrl-C) after 1 of 2 runs: 0 passed, 0 skipped, 0 failed, 1 cut short;"
        ),
        "{text}"
    );
}

/// Item 4: a second Ctrl-C kills at once. Every checker now stops at the
/// first Ctrl-C between its executions (shuttle's scheduler starts no
/// further one), so the second usually finds the process gone; if it does
/// not, it must find the default action.
#[test]
fn a_second_ctrl_c_kills_at_once() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = spawn(&[
        "explore",
        "cancel-before-claim",
        "--checker",
        "shuttle-random",
        "--budget",
        "100000000",
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(500));
    if child.try_wait().expect("try_wait").is_some() {
        // Stopped cleanly by the first: a checker that stops between its
        // executions leaves no window for a second Ctrl-C.
        let out = child.wait_with_output().expect("output");
        assert_eq!(code(&out), 130);
        return;
    }
    interrupt(&child);
    let out = finish(child, 5);
    assert_eq!(out.status.signal(), Some(libc::SIGINT), "{:?}", out.status);
}
