//! `merge`: the union of `check --shard k/n --json` outputs, judged as
//! `check` judges a whole run (the work is in [`super::report`]).

use super::report::table::{header, row, wrapped};
use super::report::{conclude, merged, row_line};
use std::path::PathBuf;
use std::process::ExitCode;

/// `merge`.
pub(super) fn run_merge(paths: &[PathBuf], json: bool) -> ExitCode {
    let run = match merged(paths) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if json {
        for r in &run.reports {
            println!("{}", row_line(r));
        }
    } else {
        let files: Vec<String> = run.merged.iter().map(|p| p.display().to_string()).collect();
        let lead = format!(
            "union of {} shard(s) of `check --tier {}`:",
            files.len(),
            run.settings.tier
        );
        wrapped(&lead, &files);
        println!();
        header();
        for r in &run.reports {
            row(r);
        }
    }
    conclude(&run, json)
}
