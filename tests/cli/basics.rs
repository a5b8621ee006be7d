//! Exit codes and bad input; `list`; `check --json`; a replay; what
//! `explore --optimal` says of its sleep-blocked runs.

use super::{assert_refused, found_line, run, DEADLINE};

#[test]
fn unknown_scenario_exits_2() {
    let r = run(&["check", "--scenario", "nope"]);
    assert_refused(&r, |l| l.contains("unknown scenario"), DEADLINE);
}

#[test]
fn malformed_replay_exits_2() {
    let r = run(&["replay", "garbage"]);
    assert_refused(&r, |l| l.contains("malformed replay line"), DEADLINE);
}

#[test]
fn unknown_command_exits_2() {
    let r = run(&["frobnicate"]);
    assert_eq!(r.code, 2, "{}", r.both());
    assert_eq!(r.out, "");
    assert!(
        r.first_err().starts_with("error: unrecognized subcommand"),
        "{}",
        r.err
    );
}

#[test]
fn replay_of_a_fault_exits_1_and_names_the_rule() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let r = run(&["replay", &line]);
    assert_eq!(r.code, 1, "{}", r.both());
    assert_eq!(r.first_out(), format!("replaying {line}"), "{}", r.out);
    assert!(
        r.out.contains("C7 violated in when-idle-waiters"),
        "{}",
        r.out
    );
    assert!(r.out.contains("violating step:"), "{}", r.out);
    assert!(
        r.out.trim_end().ends_with(&format!("replay '{line}'")),
        "{}",
        r.out
    );
}

#[test]
fn check_json_lines() {
    let r = run(&[
        "check",
        "--json",
        "--scenario",
        "cancel-before-claim",
        "--checker",
        "sim",
        "--sim-seeds",
        "50",
    ]);
    assert_eq!(r.code, 0, "{}", r.both());
    let v: serde_json::Value = serde_json::from_str(r.first_out()).expect("json");
    assert_eq!(v["kind"], "row");
    assert_eq!(v["scenario"], "cancel-before-claim");
    assert_eq!(v["checker"], "sim");
    assert_eq!(v["executions"], 50);
    assert_eq!(v["status"], "pass");
    assert!(v["violations"].as_array().expect("list").is_empty());
}

#[test]
fn list_names_everything() {
    let r = run(&["list"]);
    assert_eq!(r.code, 0, "{}", r.both());
    assert_eq!(r.first_out(), "scenarios:");
    for s in [
        "cancel-before-claim",
        "when-idle-waiters",
        "M12",
        "shuttle-pct",
    ] {
        assert!(r.out.contains(s), "{s} missing");
    }
}

/// `docs --check` passes on the checked-in `docs/reference.md` (it is what
/// the code and `pins.json` say), and the reference names every scenario
/// and fault.
#[test]
fn docs_check_passes_and_the_reference_names_every_scenario_and_fault() {
    let r = run(&["docs", "--check"]);
    assert_eq!(r.code, 0, "{}", r.both());
    let pins = lifecycle_tools::bench::pins::file::read(std::path::Path::new(
        lifecycle_tools::bench::pins::FILE,
    ))
    .expect("pins.json");
    let text = lifecycle_tools::docs::render(&pins);
    for s in lifecycle_harness::scenarios::ALL {
        assert!(text.contains(&format!("| `{}` |", s.name)), "{}", s.name);
    }
    for f in lifecycle_harness::faults::Fault::ALL {
        assert!(text.contains(&format!("| {f} |")), "{f}");
    }
}

/// The first number after `key` in `text` (whitespace folded).
fn number_after(text: &str, key: &str) -> u64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {text}"));
    text[at + key.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {text}"))
}

/// `explore --optimal` accounts for its sleep-blocked runs: how many
/// followed a wakeup-branch step that failed the await it had passed where
/// its race was found. On disconnect-racing-new every one of them does.
#[test]
fn explore_optimal_counts_the_blocked_runs_after_a_stalled_await() {
    let r = run(&[
        "explore",
        "disconnect-racing-new",
        "--unbounded",
        "--optimal",
    ]);
    assert_eq!(r.code, 0, "{}", r.both());
    let text = r.out.split_whitespace().collect::<Vec<_>>().join(" ");
    let blocked = number_after(&text, "complete, ");
    assert!(text.contains(&format!("{blocked} sleep-blocked")), "{text}");
    let stalled = number_after(&text, "wakeup trees: ");
    let after = number_after(&text, "needed), and ");
    assert!(
        text.contains(&format!(
            "{after} of the {blocked} sleep-blocked runs followed one"
        )),
        "{text}"
    );
    assert!(
        blocked > 0 && after == blocked && after <= stalled,
        "{text}"
    );
}
