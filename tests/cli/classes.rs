//! `lifecycle classes`: the class census of one scenario. A search that
//! loses classes exits 1 with a replay line per lost class, and the line
//! replays; a search that runs every class exits 0; bad input exits 2
//! with one line before anything runs.

use super::{assert_refused, run};
use std::time::Duration;

#[test]
fn a_lost_class_is_printed_with_a_line_that_replays_it() {
    // At preemption bound 0, sim-dfs cannot run the classes that need a
    // preemption.
    let r = run(&["classes", "dropped-create", "--preemption-bound", "0"]);
    assert_eq!(r.code, 1, "{}", r.both());
    assert!(r.out.contains("sim-dfs never ran"), "{}", r.both());
    let line = r
        .out
        .lines()
        .find_map(|l| l.split_once(" replay '").map(|(_, rest)| rest))
        .and_then(|rest| rest.strip_suffix('\''))
        .unwrap_or_else(|| panic!("no replay line: {}", r.both()));
    assert!(line.starts_with("v3:dropped-create:sim-dfs:"), "{line}");
    let replayed = run(&["replay", line]);
    assert_eq!(replayed.code, 0, "{}", replayed.both());
}

#[test]
fn the_search_check_runs_runs_every_class() {
    let r = run(&["classes", "dropped-create"]);
    assert_eq!(r.code, 0, "{}", r.both());
    assert!(r.out.contains("sim-dfs ran all"), "{}", r.both());
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let limit = Duration::from_secs(20);
    for (args, what) in [
        (vec!["classes", "no-such"], "unknown scenario"),
        (vec!["classes", "dropped-create", "--cap", "0"], "--cap"),
        (
            vec!["classes", "dropped-create", "--naive-bound", "99"],
            "--naive-bound",
        ),
        (vec!["classes", "dropped-create", "--fault", "M99"], "fault"),
    ] {
        let r = run(&args);
        assert_refused(&r, |l| l.starts_with("error: ") && l.contains(what), limit);
    }
}

#[test]
fn growth_ranks_the_parts_that_take_more_than_one_form() {
    let r = run(&["classes", "dropped-create", "--growth", "3"]);
    assert_eq!(r.code, 0, "{}", r.both());
    let header = r
        .out
        .lines()
        .find(|l| l.starts_with("where sim-dfs's "))
        .unwrap_or_else(|| panic!("no growth table: {}", r.both()));
    assert!(header.ends_with("the first 3:"), "{header}");
    // Rows: forms, longest, the part (an object named by its type, or a
    // task), the tasks that touched it.
    let rows: Vec<Vec<&str>> = r
        .out
        .lines()
        .skip_while(|l| !l.starts_with("where sim-dfs's "))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{}", r.out);
    let forms: Vec<u64> = rows.iter().map(|w| w[0].parse().unwrap()).collect();
    assert!(
        forms.windows(2).all(|w| w[0] >= w[1]),
        "not ranked: {forms:?}"
    );
    assert!(forms[2] > 1, "a part with one form was ranked: {}", r.out);
    assert!(
        rows.iter()
            .any(|w| w[2] == "obj" && w.join(" ").contains("(made by task ")),
        "no object named by its creator: {}",
        r.out
    );
}
