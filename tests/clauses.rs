//! The rule-clause table (`lifecycle_tools::clauses`): complete for every
//! rule of SPEC §2, valid as shipped, and its validation fails when an
//! exercise is removed or names something that does not exist or is not
//! judged. `check` runs the same validation before any work and exits 1 on
//! any problem; `lifecycle list --rules` prints the table in 100 columns.

use lifecycle_harness::scenarios::{cancel, dispose, shell, Goal, Scenario};
use lifecycle_tools::clauses::{
    render, validate, Broken, Clause, ClauseId, Conformance, Exercise, Family, Rule, CLAUSES,
};
use std::process::Command;

/// Every rule ID of SPEC §2, written out here, independently of `Rule`.
const SPEC_RULES: [&str; 41] = [
    "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10", //
    "D1", "D2", "D3", "D4", "D5", "D6", "D7", "D8", "D9", "D10", //
    "R1", "R2", "R3", //
    "S1", "S2", "S3", "S4", "S5", "S6", "S7", //
    "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11",
];

#[test]
fn the_real_table_is_complete_and_valid() {
    let problems = validate(CLAUSES);
    assert!(
        problems.is_empty(),
        "broken clauses:\n{}",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_rule_of_the_spec_has_clauses_numbered_from_one() {
    let names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names, SPEC_RULES, "Rule::ALL is SPEC §2's rules, in order");
    for id in SPEC_RULES {
        let rule = Rule::parse(id).unwrap_or_else(|| panic!("{id} does not parse"));
        assert_eq!(rule.to_string(), id);
        let numbers: Vec<u8> = CLAUSES
            .iter()
            .filter(|c| c.id.rule == rule)
            .map(|c| c.id.n)
            .collect();
        let want: Vec<u8> = (1..=numbers.len() as u8).collect();
        assert!(!numbers.is_empty(), "{id} has no clause");
        assert_eq!(
            numbers, want,
            "{id}'s clauses are numbered 1, 2, ... in order"
        );
    }
    // The table is in SPEC order.
    let order: Vec<ClauseId> = CLAUSES.iter().map(|c| c.id).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert_eq!(Rule::parse("C11"), None);
    assert_eq!(
        ClauseId::parse("R2.2").map(|c| c.to_string()),
        Some("R2.2".into())
    );
    assert_eq!(ClauseId::parse("R2.0"), None);
    assert_eq!("S7".parse::<Rule>().map(Rule::family), Ok(Family::Shell));
}

/// The real table with clause `id` changed by `f`.
fn with(id: &str, f: impl FnOnce(&mut Clause)) -> Vec<Clause> {
    let id = ClauseId::parse(id).expect("a clause id");
    let mut table = CLAUSES.to_vec();
    let at = table.iter().position(|c| c.id == id).expect("in the table");
    f(&mut table[at]);
    table
}

/// The problems of `table`, as the lines `check` prints.
fn lines(table: &[Clause]) -> Vec<String> {
    validate(table).iter().map(ToString::to_string).collect()
}

fn leak<T>(items: Vec<T>) -> &'static [T] {
    Box::leak(items.into_boxed_slice())
}

#[test]
fn removing_every_exercise_of_a_clause_breaks_it() {
    let table = with("R2.2", |c| c.exercises = &[]);
    assert_eq!(
        lines(&table),
        ["R2.2 \"a stale or repeated detach never removes a newer entry with the same id\": no exercise"]
    );
}

#[test]
fn a_rule_without_clauses_is_broken() {
    let table: Vec<Clause> = CLAUSES
        .iter()
        .copied()
        .filter(|c| c.id.rule != Rule::C5)
        .collect();
    assert_eq!(lines(&table), ["C5: no clause"]);
    let mut twice = CLAUSES.to_vec();
    twice.push(CLAUSES[0]);
    let problems = validate(&twice);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].what, Broken::Duplicate);
}

#[test]
fn a_goal_check_does_not_judge_breaks_the_clause() {
    // A goal the scenario does not have: `check` would never judge it.
    let table = with("C3.2", |c| {
        c.exercises = leak(vec![Exercise::Scenario {
            scenario: &cancel::CANCEL_MID_TURN,
            goal: leak(vec![Goal {
                name: "no-such-goal",
                ..cancel::TWO_CAUSES_ONE_TURN
            }])
            .first()
            .expect("one goal"),
        }])
    });
    let problems = validate(&table);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(
        problems[0].what,
        Broken::UnknownGoal("cancel-mid-turn", "no-such-goal")
    );
    assert!(problems[0]
        .to_string()
        .starts_with("C3.2 \"the first cause wins\": "));
    // A scenario that is not registered.
    let table = with("C3.2", |c| {
        c.exercises = leak(vec![Exercise::Scenario {
            scenario: leak(vec![Scenario {
                name: "no-such-scenario",
                ..cancel::CANCEL_MID_TURN.clone()
            }])
            .first()
            .expect("one scenario"),
            goal: &cancel::TWO_CAUSES_ONE_TURN,
        }])
    });
    assert_eq!(
        validate(&table)[0].what,
        Broken::UnknownScenario("no-such-scenario")
    );
    // A scenario that checks neither C10 nor an oracle that does.
    let table = with("C10.1", |c| {
        c.exercises = leak(vec![Exercise::Scenario {
            scenario: &shell::TOOL_BASH_RELOAD,
            goal: &shell::RELOAD_BETWEEN_CHECKS,
        }])
    });
    assert_eq!(
        validate(&table)[0].what,
        Broken::RuleNotChecked("tool-bash-reload")
    );
    // One good exercise does not excuse a broken one beside it.
    let table = with("C3.1", |c| {
        let mut e = c.exercises.to_vec();
        e.push(Exercise::Scenario {
            scenario: &cancel::CANCEL_MID_TURN,
            goal: &dispose::DISPOSE_MID_TURN_GOAL,
        });
        c.exercises = leak(e);
    });
    assert_eq!(validate(&table).len(), 1);
}

#[test]
fn a_missing_operation_property_or_test_breaks_the_clause() {
    let conformance = |op, property| {
        leak(vec![Exercise::Conformance {
            test: Conformance::Agent,
            op,
            property,
        }])
    };
    let table = with("C3.1", |c| c.exercises = conformance("Abort", None));
    assert_eq!(
        validate(&table)[0].what,
        Broken::UnknownOp("conformance_agent", "Abort")
    );
    // A property of another rule, and one the model does not have.
    for property in [
        lifecycle_models::agent::C8_NO_STEERING,
        lifecycle_models::PropertyId::new(
            Rule::C3,
            "C3 a cancelled turn ends aborted, disposed or not",
        ),
    ] {
        let table = with("C3.1", |c| {
            c.exercises = conformance("Cancel", Some(property))
        });
        assert_eq!(
            validate(&table)[0].what,
            Broken::UnknownProperty("conformance_agent", property.name)
        );
    }
    // A test that does not exist, and one that is ignored.
    for (target, name, why) in [
        ("acp_processes", "a10_no_such_test", "does not exist"),
        (
            "harness_gate",
            "every_scenario_passes_the_gate",
            "is ignored",
        ),
    ] {
        let table = with("A10.4", |c| {
            c.exercises = leak(vec![Exercise::Test { target, name }])
        });
        assert_eq!(
            validate(&table)[0].what,
            Broken::UnknownTest(target, name, why)
        );
    }
    let table = with("A10.4", |c| {
        c.exercises = leak(vec![Exercise::Test {
            target: "no_such_file",
            name: "x",
        }])
    });
    assert!(matches!(validate(&table)[0].what, Broken::Source(..)));
}

#[test]
fn every_clause_has_a_judged_exercise() {
    // What `validate` guarantees, restated on the data: a scenario goal that
    // `check` requires, a generated conformance operation, or a running test.
    for c in CLAUSES {
        assert!(!c.exercises.is_empty(), "{} has no exercise", c.id);
        assert!(!c.text.is_empty(), "{} has no text", c.id);
    }
    // A scenario-goal exercise and a conformance-operation exercise are in
    // the table.
    let has = |id: &str, e: Exercise| {
        let id = ClauseId::parse(id).expect("id");
        CLAUSES
            .iter()
            .any(|c| c.id == id && c.exercises.contains(&e))
    };
    assert!(has(
        "C3.2",
        Exercise::Scenario {
            scenario: &cancel::CANCEL_MID_TURN,
            goal: &cancel::TWO_CAUSES_ONE_TURN,
        }
    ));
    assert!(has(
        "D8.2",
        Exercise::Conformance {
            test: Conformance::Dispose,
            op: "DropUnloadOwner",
            property: None,
        }
    ));
}

#[test]
fn the_table_renders_in_100_columns() {
    let text = render(CLAUSES);
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.len()
        );
    }
    for c in CLAUSES {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{} ", c.id))),
            "{} missing",
            c.id
        );
    }
    assert!(text.starts_with("clause    exercise"), "{}", &text[..40]);
    assert!(text.contains("complete: every clause has an exercise with a goal"));
}

#[test]
fn list_rules_prints_the_table_and_exits_0() {
    let out = Command::new(lifecycle_testkit::lifecycle_bin())
        .args(["list", "--rules"])
        .output()
        .expect("run lifecycle");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout, render(CLAUSES));
    let plain = Command::new(lifecycle_testkit::lifecycle_bin())
        .arg("list")
        .output()
        .expect("run lifecycle");
    assert!(plain.status.success());
    assert!(String::from_utf8_lossy(&plain.stdout).contains("lifecycle list --rules"));
}
