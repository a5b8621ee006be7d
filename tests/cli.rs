//! The command line: exit codes and bad input.

use std::process::Command;

fn lifecycle(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lifecycle"))
        .args(args)
        .output()
        .expect("run lifecycle");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unknown_scenario_exits_2() {
    let (code, _, err) = lifecycle(&["check", "--scenario", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown scenario"), "{err}");
}

#[test]
fn malformed_replay_exits_2() {
    let (code, _, err) = lifecycle(&["replay", "garbage"]);
    assert_eq!(code, 2);
    assert!(err.contains("malformed replay line"), "{err}");
}

#[test]
fn unknown_command_exits_2() {
    let (code, _, _) = lifecycle(&["frobnicate"]);
    assert_eq!(code, 2);
}

/// The replay line of the first failure `explore` finds.
fn found_line(scenario: &str, checker: &str, fault: &str) -> String {
    let (code, out, err) = lifecycle(&[
        "explore",
        scenario,
        "--checker",
        checker,
        "--fault",
        fault,
        "--stop-at-first",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    v["violations"][0]["replay"]
        .as_str()
        .expect("a replay line")
        .to_string()
}

#[test]
fn replay_of_a_fault_exits_1_and_names_the_rule() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let (code, out, _) = lifecycle(&["replay", &line]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("C7 violated in when-idle-waiters"), "{out}");
    assert!(out.contains("violating step:"), "{out}");
    assert!(
        out.trim_end().ends_with(&format!("replay '{line}'")),
        "{out}"
    );
}

#[test]
fn check_json_lines() {
    let (code, out, _) = lifecycle(&[
        "check",
        "--json",
        "--scenario",
        "cancel-before-claim",
        "--checker",
        "sim",
        "--sim-seeds",
        "50",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value =
        serde_json::from_str(out.lines().next().expect("a line")).expect("json");
    assert_eq!(v["scenario"], "cancel-before-claim");
    assert_eq!(v["checker"], "sim");
    assert_eq!(v["executions"], 50);
    assert_eq!(v["status"], "pass");
    assert!(v["violations"].as_array().expect("list").is_empty());
}

#[test]
fn list_names_everything() {
    let (code, out, _) = lifecycle(&["list"]);
    assert_eq!(code, 0);
    for s in [
        "cancel-before-claim",
        "when-idle-waiters",
        "M12",
        "shuttle-pct",
    ] {
        assert!(out.contains(s), "{s} missing");
    }
}

#[test]
fn a_budget_of_zero_is_refused_before_any_work() {
    let (code, out, err) = lifecycle(&[
        "check",
        "--scenario",
        "cancel-before-claim",
        "--checker",
        "sim",
        "--sim-seeds",
        "0",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "nothing runs: {out}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("--sim-seeds must be at least 1"), "{err}");
}
