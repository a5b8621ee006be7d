//! The table fits 100 columns and tells the truth: every
//! row states its bound (loom's too, exhausted or stopped), a stopped
//! search is not `sampled`, skipped runs are not passed ones, a bounded row
//! is never `unbounded`, the `*` footnote needs a starred row, follow-up
//! commands name the binary as invoked; `model --json` is JSON lines.

use super::{args, run, run_all, Run, BIN, HEADER};
use std::path::Path;

/// Run a `check` or `explore`; assert its exit code and the header.
#[track_caller]
fn table(command: &[&str], code: i32) -> Run {
    let r = run(&args(&[command, &["--no-progress"]]));
    assert_table(&r, code);
    r
}

#[track_caller]
fn assert_table(r: &Run, code: i32) {
    assert_eq!(r.code, code, "{}", r.both());
    assert_eq!(r.first_out(), HEADER, "{}", r.out);
}

/// A row of `text` and the line after it (its bound).
fn row(text: &str, scenario: &str, checker: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with(scenario) && l.contains(&format!(" {checker} ")))
        .unwrap_or_else(|| panic!("no {checker} row in {text}"));
    lines[i..(i + 2).min(lines.len())].join("\n")
}

/// Every table line fits 100 columns (replay lines aside: they are copied
/// whole), every row states its bound, loom's too, and a budget-stopped
/// search says so, not `sampled`.
#[test]
fn the_table_fits_100_columns_and_states_every_bound() {
    let r = table(
        &[
            "check",
            "--scenario",
            "concurrent-dispose",
            "--budget",
            "300",
            "--tokio-runs",
            "3",
        ],
        1,
    );
    let text = &r.out;
    for line in text.lines().filter(|l| !l.contains(" replay '")) {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.len()
        );
    }
    let row = |checker: &str| row(text, "concurrent-dispose", checker);
    for (checker, said) in [
        (
            "sim-dfs",
            "stopped at budget\n  bound: source-DPOR + sleep sets, preemptions <= 2",
        ),
        (
            "loom",
            "stopped at budget\n  bound: preemptions <= 1, at most 300 executions",
        ),
        ("sim", "sampled\n  bound: seeds 0..300, pct depth 1..=3"),
        ("tokio", "sampled\n  bound: 3 runs on 2 worker threads"),
    ] {
        assert!(row(checker).contains(said), "{checker}: {text}");
    }
    assert!(!row("sim-dfs").contains("sampled"), "{text}");
}

/// The summary counts the runs by result, an exhausted loom row states its
/// bound, and a capped one its cap. loom skips no scenario: in its shape
/// (`Ctx::loom`) tool-bash-reload, past loom's thread limit in the other
/// checkers' shape, fits it. (A run loom skips is not passed:
/// `tests/generated.rs`, on a workload of four clients.)
#[test]
fn the_summary_counts_runs_by_result_and_loom_rows_state_their_bound() {
    let r = table(
        &[
            "check",
            "--checker",
            "loom",
            "--scenario",
            "disconnect-racing-new",
            "--scenario",
            "tool-bash-reload",
        ],
        0,
    );
    let loom = row(&r.out, "disconnect-racing-new", "loom");
    assert!(
        loom.contains(" pass ") && loom.ends_with(" exhausted\n  bound: preemptions <= 1"),
        "{}",
        r.out
    );
    let capped = row(&r.out, "tool-bash-reload", "loom");
    assert!(
        capped.contains(" pass ")
            && capped.ends_with(
                " stopped at cap\n  bound: preemptions <= 1, capped at 20000 executions"
            ),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("\n2 runs: 2 passed, 0 skipped, 0 failed;"),
        "{}",
        r.out
    );
}

/// A bounded scenario is never said to be unbounded, and the `*` footnote
/// appears only under a row that has a `*`.
#[test]
fn bounded_rows_never_say_unbounded_and_footnotes_need_a_star() {
    let runs = run_all(&[
        vec![
            "check",
            "--checker",
            "sim-dfs",
            "--scenario",
            "tool-bash-reload",
            "--dfs-executions",
            "50",
            "--no-progress",
        ],
        vec![
            "check",
            "--checker",
            "shuttle-pct",
            "--scenario",
            "cancel-before-claim",
            "--shuttle-iterations",
            "50",
            "--no-progress",
        ],
    ]);
    // Both stop short of their goals: exit 1.
    let (bounded, starred) = (&runs[0], &runs[1]);
    assert_table(bounded, 1);
    let text = &bounded.out;
    assert!(!text.contains("unbounded"), "{text}");
    assert!(text.contains("preemptions <= 1"), "{text}");
    assert!(text.contains("pb<=1"), "{text}");
    assert!(!text.contains('*'), "{text}");
    assert!(!text.contains("* = not required"), "{text}");
    assert_table(starred, 1);
    let text = &starred.out;
    assert!(text.contains("abort-before-first-step="), "{text}");
    assert!(text.contains("* = not required of that checker"), "{text}");
}

/// Follow-up commands name the binary as it was invoked, not `cargo run`.
#[test]
fn follow_up_commands_name_the_binary_as_invoked() {
    let r = run(&[
        "explore",
        "when-idle-waiters",
        "--checker",
        "sim",
        "--fault",
        "M12",
        "--stop-at-first",
    ]);
    assert_table(&r, 1);
    // The runner starts the binary from the crate's directory.
    let shown = Path::new(BIN)
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .map_or(BIN.to_string(), |p| p.display().to_string());
    assert!(
        r.out.contains(&format!(
            "  replay: {shown} replay 'v3:when-idle-waiters:sim:M12:"
        )),
        "{}",
        r.out
    );
    assert!(!r.out.contains("cargo run"), "{}", r.out);
}

/// `model --json` prints JSON lines, like every other `--json`: one object
/// per row of `model`'s table, in the table's order, its fields those of
/// the row. `--model` keeps the run short: two small models (durability,
/// shell, and acp for a model with a count under symmetry reduction) and
/// their fault variants instead of every model (slow in a debug build).
#[test]
fn model_json_prints_one_object_per_table_row() {
    let only = [
        "--model",
        "durability",
        "--model",
        "shell",
        "--model",
        "acp",
    ];
    let runs = run_all(&[
        args(&[&["model", "--json"], &only]),
        args(&[&["model"], &only]),
    ]);
    let (json, table) = (&runs[0], &runs[1]);
    for r in &runs {
        assert_eq!(r.code, 0, "{}", r.both());
    }
    let (json, table) = (&json.out, &table.out);

    // The table: a header, one row per model and fault variant, then (only
    // on failure) a blank line and the failing properties.
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["model", "states", "unique", "symmetry", "depth", "seconds", "result", "detail"],
        "{table}"
    );
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    // The two clean models, then their fault variants, nothing of the
    // other models.
    assert!(rows.len() > 3, "{table}");
    assert_eq!(
        (rows[0][0], rows[1][0], rows[2][0]),
        ("durability", "shell", "acp"),
        "{table}"
    );
    for row in &rows[3..] {
        let (model, _fault) = row[0].split_once('+').expect("a fault variant");
        assert!(["durability", "shell", "acp"].contains(&model), "{table}");
    }

    assert!(json.ends_with('\n') && !json.ends_with("\n\n"), "{json:?}");
    let objects: Vec<serde_json::Value> = json
        .lines()
        .map(|line| {
            assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
        })
        .collect();
    assert_eq!(objects.len(), rows.len(), "{json}\n{table}");

    for (object, row) in objects.iter().zip(&rows) {
        let result = &object["result"];
        // model, states, unique, symmetry, depth, seconds, result, detail…
        assert_eq!(result["model"].as_str(), Some(row[0]), "{object}");
        assert_eq!(result["states"].to_string(), row[1], "{object}");
        assert_eq!(result["unique"].to_string(), row[2], "{object}");
        let symmetric = result["symmetric"]
            .as_u64()
            .map_or("-".into(), |n| n.to_string());
        assert_eq!(symmetric, row[3], "{object}");
        // Only the acp rows are counted under symmetry, and fewer.
        assert_eq!(row[0].starts_with("acp"), row[3] != "-", "{object}");
        if let Some(n) = result["symmetric"].as_u64() {
            assert!(n < result["unique"].as_u64().unwrap_or(0), "{object}");
        }
        assert_eq!(result["max_depth"].to_string(), row[4], "{object}");
        assert_eq!(object["ok"].as_bool(), Some(row[6] == "ok"), "{object}");
        assert!(result["properties"].is_array(), "{object}");
        for field in ["fault", "must_violate", "caught_by"] {
            assert!(object.get(field).is_some(), "no `{field}` in {object}");
        }
        // A fault variant's row is `<model>+<fault>`.
        match object["fault"].as_str() {
            Some(fault) => assert!(row[0].ends_with(&format!("+{fault}")), "{object}"),
            None => assert!(!row[0].contains('+'), "{object}"),
        }
    }
}

/// `--model` takes the names of the models only: anything else exits 2
/// with one line, before any model is checked.
#[test]
fn model_refuses_an_unknown_model() {
    let r = run(&["model", "--model", "nope"]);
    super::assert_refused(
        &r,
        |l| l == "error: unknown model `nope` (models: agent, dispose, durability, shell, acp)",
        std::time::Duration::from_secs(5),
    );
}
