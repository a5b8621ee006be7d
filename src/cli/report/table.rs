//! The tables `check`, `mutants`, `explore` and `merge` print: the header,
//! one row per report (counts, then its bound and goals on lines of their
//! own), wrapped lists and paragraphs, a failure's lines, and which rows a
//! shard runs. Imported by `check_cmd`, `merge_cmd` and the rest of `report`.

use crate::check::{Checker, Report};
use crate::cli::harness::args::{program, Selection};
use crate::scenarios::Scenario;
use lifecycle_sim::Shard;

/// The widest line the tables print.
pub(in crate::cli::harness) const WIDTH: usize = 100;

/// The table's header line.
pub(in crate::cli::harness) fn header() {
    println!(
        "{:<30} {:<14} {:>10} {:>8} {:<6} {:>7}  space",
        "scenario", "checker", "executions", "distinct", "result", "seconds"
    );
}

/// How much of its space a row explored, in at most 18 characters:
/// "exhausted" only when the search really ended.
pub(in crate::cli::harness) fn space(r: &Report) -> &'static str {
    if r.skipped.is_some() {
        return "skipped";
    }
    if r.exhausted {
        return "exhausted";
    }
    match r.stopped {
        Some(why) => why.shown(),
        None if matches!(r.checker, Checker::SimDfs | Checker::Loom) => "not exhausted",
        None => "sampled",
    }
}

/// Print `items` after `lead`, wrapped at [`WIDTH`] columns, continuation
/// lines indented under the first item.
pub(in crate::cli::harness) fn wrapped(lead: &str, items: &[String]) {
    wrapped_at(lead, lead.len() + 1, items);
}

/// Print `items` after `lead` and a space, wrapped at [`WIDTH`] columns,
/// continuation lines starting at column `indent`.
pub(in crate::cli::harness) fn wrapped_at(lead: &str, indent: usize, items: &[String]) {
    let mut line = lead.to_string();
    for (i, item) in items.iter().enumerate() {
        if i > 0 && line.len() + 1 + item.len() > WIDTH {
            println!("{line}");
            line = " ".repeat(indent.saturating_sub(1));
        }
        line.push(' ');
        line.push_str(item);
    }
    println!("{line}");
}

/// The bound of a row, with its shard.
pub(in crate::cli::harness) fn bound(r: &Report) -> String {
    let mut b = r.bound.clone().unwrap_or_else(|| "-".into());
    if let Some(s) = &r.shard {
        b.push_str(&format!(", shard {s}"));
    }
    b
}

/// One row of the table: counts, then its bound and goals.
pub(in crate::cli::harness) fn row(r: &Report) {
    println!(
        "{:<30} {:<14} {:>10} {:>8} {:<6} {:>7.2}  {}",
        r.scenario,
        r.checker,
        r.executions,
        r.distinct_outcomes,
        r.status,
        r.seconds,
        space(r),
    );
    if let Some(why) = &r.skipped {
        wrapped("  skipped:", &words(why));
        return;
    }
    wrapped("  bound:", &words(&bound(r)));
    if !r.goals.is_empty() {
        let goals: Vec<String> = r
            .goals
            .iter()
            .map(|g| {
                let star = if g.excused.is_some() { "*" } else { "" };
                format!("{}={}{star}", g.goal, g.hits)
            })
            .collect();
        wrapped("  goals:", &goals);
    }
}

/// Print `text` wrapped at [`WIDTH`] columns.
pub(in crate::cli::harness) fn paragraph(text: &str) {
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > WIDTH {
            println!("{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    println!("{line}");
}

pub(in crate::cli::harness) fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

/// What went wrong in a failed row, with the commands that replay it.
pub(in crate::cli::harness) fn failure(r: &Report) {
    if let Some(e) = &r.error {
        wrapped_at(
            &format!("  error in {} on {}:", r.scenario, r.checker),
            5,
            &words(e),
        );
    }
    for v in &r.violations {
        wrapped_at(
            &format!("  {} violated in {} on {}:", v.rule, r.scenario, r.checker),
            5,
            &words(&v.message),
        );
    }
    if let Some(v) = r.violations.first() {
        println!("  replay: {} replay '{}'", program(), v.replay);
        if let (Some(s), Some((before, after))) = (&v.shrunk, v.preemptions) {
            let how = if s == &v.replay {
                format!("already minimal at {after} preemptions")
            } else {
                format!("{before} -> {after} preemptions")
            };
            println!("  shrunk ({how}): {} replay '{s}'", program());
        }
    }
}

/// The rows of `sel` that `shard` runs, in table order: every row of a
/// checker that splits its search, and every n-th row of the others (loom,
/// shuttle), counted over those rows, so each of them runs in one shard.
pub(in crate::cli::harness) fn rows_of(
    sel: &Selection,
    shard: Shard,
) -> Vec<(&'static Scenario, Checker)> {
    let mut whole = 0u32;
    let mut rows = Vec::new();
    for &scenario in &sel.scenarios {
        for &checker in &sel.checkers {
            let mine = checker.splits() || whole % shard.count == shard.index;
            if !checker.splits() {
                whole += 1;
            }
            if mine {
                rows.push((scenario, checker));
            }
        }
    }
    rows
}
