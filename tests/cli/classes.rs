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
