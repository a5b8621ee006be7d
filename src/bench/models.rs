//! Section 8 of `bench`: the executable models (`lifecycle model`) on
//! stateright, timed: the wall time of the whole run (every model and
//! fault variant, checked concurrently on the machine's cores, as
//! `lifecycle model` runs them) and each row's own search time, with the
//! state counts before and after symmetry reduction beside it (those
//! counts are pins too; here they say what each time bought).

use lifecycle_models::report;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::time::Instant;

/// The section's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Models {
    /// Threads the run checked on at once (the machine's cores).
    pub cores: usize,
    /// Wall-clock seconds of the whole run.
    pub wall_seconds: f64,
    /// One row per model and fault variant, in `lifecycle model`'s order.
    pub rows: Vec<Row>,
}

/// One model or fault variant.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// `agent`, `agent+M3`, ...
    pub model: String,
    /// Distinct states.
    pub unique: u64,
    /// Distinct representatives under symmetry reduction, where measured.
    pub symmetric: Option<u64>,
    /// Seconds of this row's searches (its own thread).
    pub seconds: f64,
}

/// Run every model and fault variant once, timed.
pub fn measure() -> Models {
    let start = Instant::now();
    let reports = report::run_all();
    let wall_seconds = start.elapsed().as_secs_f64();
    Models {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        wall_seconds,
        rows: reports
            .iter()
            .map(|r| Row {
                model: r.result.model.clone(),
                unique: r.result.unique,
                symmetric: r.result.symmetric,
                seconds: r.result.seconds,
            })
            .collect(),
    }
}

fn symmetric(r: &Row) -> String {
    r.symmetric.map_or("-".to_string(), |n| n.to_string())
}

/// The section as text, for `bench`'s own table.
pub fn table(s: &mut String, m: Option<&Models>) {
    let Some(m) = m else { return };
    let _ = writeln!(
        s,
        "\n8. models on stateright: {:.2} s wall for all {} rows on {} cores; per row: unique, under symmetry, seconds",
        m.wall_seconds,
        m.rows.len(),
        m.cores
    );
    for r in &m.rows {
        let _ = writeln!(
            s,
            "{:<16} {:>9} {:>9} {:>8.2}",
            r.model,
            r.unique,
            symmetric(r),
            r.seconds
        );
    }
}

/// The section as markdown, for the record.
pub fn markdown(w: &mut String, m: Option<&Models>) {
    let Some(m) = m else { return };
    let _ = writeln!(
        w,
        "### Models on stateright\n\n`lifecycle model`'s run: every model and fault variant, checked concurrently on {} cores, took {:.2} s of wall time. Each row's seconds are its own searches (the report's, then the shortest-counterexample search, then, for a model with interchangeable ids, the search under symmetry reduction).\n",
        m.cores, m.wall_seconds
    );
    let _ = writeln!(
        w,
        "| model | unique states | under symmetry | seconds |\n| --- | ---: | ---: | ---: |"
    );
    for r in &m.rows {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {:.2} |",
            r.model,
            r.unique,
            symmetric(r),
            r.seconds
        );
    }
    let _ = writeln!(w);
}
