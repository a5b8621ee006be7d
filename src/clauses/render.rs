//! `lifecycle list --rules`: the clause table as text, every line within
//! [`WIDTH`] columns.
//!
//! ```text
//! clause  exercise                                goal
//! C3.2    the first cause wins
//!           scenario cancel-mid-turn              two-causes-one-turn: two cancels request
//!                                                 the running turn's token; it ends aborted
//! ```

use super::{counts, validate, Clause, Exercise};

/// The widest line.
pub const WIDTH: usize = 100;
/// Where an exercise starts.
const EXERCISE_AT: usize = 10;
/// Where its goal starts.
const GOAL_AT: usize = 50;
/// Where the clause text starts.
const TEXT_AT: usize = 8;

/// `text` wrapped into lines of at most `width` columns (a word longer than
/// that is a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `left` at column `at` and `right` at column `right_at`, both wrapped.
/// A right-hand line too long for its column (a long test name) gets a
/// line of its own, starting at `at + 2`.
fn two_columns(out: &mut String, at: usize, left: &str, right_at: usize, right: &str) {
    let left = wrap(left, right_at - at - 1);
    let right = wrap(right, WIDTH - right_at);
    let rows = left.len().max(right.len());
    for i in 0..rows {
        let l = left.get(i).map_or("", String::as_str);
        let mut line = format!("{:at$}{l}", "");
        match right.get(i) {
            Some(r) if r.len() > WIDTH - right_at => {
                if !l.is_empty() {
                    out.push_str(line.trim_end());
                    out.push('\n');
                }
                line = format!("{:w$}{r}", "", w = at + 2);
            }
            Some(r) => {
                line = format!("{line:right_at$}{r}");
            }
            None => {}
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// One exercise: what runs, and the goal that shows it reached the clause.
fn exercise(e: &Exercise) -> (String, String) {
    match *e {
        Exercise::Scenario { scenario, goal } => (
            format!("scenario {}", scenario.name),
            format!("{}: {}", goal.name, goal.about),
        ),
        Exercise::Conformance { test, op, property } => {
            let model = match property {
                Some(p) => format!("; the model's \"{p}\""),
                None => "; answers and state compared with the reference".to_string(),
            };
            (
                format!("{} Op::{op}", test.target()),
                format!("generated and applied in each case{model}"),
            )
        }
        Exercise::Test { target, name } => (
            format!("test {target}"),
            format!("passes under cargo test: fn {name}"),
        ),
    }
}

/// The table: a header, each clause with its exercises and goals, the
/// counts per family, and what is broken (if anything).
pub fn render(clauses: &[Clause]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:EXERCISE_AT$}{:w$}goal\n",
        "clause",
        "exercise",
        w = GOAL_AT - EXERCISE_AT
    ));
    let mut rule = None;
    for c in clauses {
        if rule.is_some() && rule != Some(c.id.rule) {
            out.push('\n');
        }
        rule = Some(c.id.rule);
        let text = wrap(c.text, WIDTH - TEXT_AT);
        for (i, line) in text.iter().enumerate() {
            let id = if i == 0 {
                c.id.to_string()
            } else {
                String::new()
            };
            out.push_str(&format!("{id:TEXT_AT$}{line}\n"));
        }
        for e in c.exercises {
            let (what, goal) = exercise(e);
            two_columns(&mut out, EXERCISE_AT, &what, GOAL_AT, &goal);
        }
        if c.exercises.is_empty() {
            two_columns(&mut out, EXERCISE_AT, "(none)", GOAL_AT, "(none)");
        }
    }
    let kinds = |f: fn(&Exercise) -> bool| {
        clauses
            .iter()
            .flat_map(|c| c.exercises)
            .filter(|e| f(e))
            .count()
    };
    out.push_str("\nclauses per family:\n");
    for (f, n) in counts(clauses) {
        let rules: Vec<_> = f.rules().collect();
        let span = match (rules.first(), rules.last()) {
            (Some(a), Some(b)) => format!("{a}-{b}"),
            _ => String::new(),
        };
        out.push_str(&format!("  {:<16} {span:<8} {n:>3}\n", f.name()));
    }
    let summary = format!(
        "{} clauses of {} rules; exercises: {} scenario goals (each required by `check`), {} \
         conformance operations, {} integration tests",
        clauses.len(),
        super::Rule::ALL.len(),
        kinds(|e| matches!(e, Exercise::Scenario { .. })),
        kinds(|e| matches!(e, Exercise::Conformance { .. })),
        kinds(|e| matches!(e, Exercise::Test { .. })),
    );
    for line in wrap(&summary, WIDTH) {
        out.push_str(&line);
        out.push('\n');
    }
    let problems = validate(clauses);
    if problems.is_empty() {
        out.push_str(
            "complete: every clause has an exercise with a goal (`check` refuses to run \
             otherwise)\n",
        );
    } else {
        out.push_str(&format!(
            "BROKEN: {} problem(s); `check` refuses to run until they are fixed:\n",
            problems.len()
        ));
        for p in problems {
            for (i, line) in wrap(&p.to_string(), WIDTH - 2).iter().enumerate() {
                let lead = if i == 0 { "" } else { "  " };
                out.push_str(&format!("{lead}{line}\n"));
            }
        }
    }
    out
}
