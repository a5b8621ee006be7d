//! A `check` run's report: the table (`table`), the JSON lines it writes
//! and reads back (`format`), the conclusion `check` and `merge` share
//! (`conclude`: differential coverage, summary, exit code) and the union
//! of shard files (`merge`).
//!
//! # The JSON lines `check --json` writes
//!
//! One object per line, told apart by `kind`:
//!
//! - `row`: one (scenario, checker) run, in table order. Every field of
//!   `check::Report` (`executions`, `exhausted`, `stopped`, `bound`,
//!   `shard`, `dfs` with `complete` and `blocked`, `outcomes`, `goals` with
//!   `hits` per goal, `violations` with `replay` and `shrunk` lines,
//!   `status`, `error`, `judged`), plus `views`, every contract view
//!   reached as `[view, replay line]`, and `cause`, the checker's own error
//!   before any judgement. A shard writes the rows it ran: every row of
//!   `sim`, `sim-dfs` and `tokio` (its part of their search), and every
//!   n-th row of loom and shuttle (whole).
//! - `coverage`: differential coverage of one scenario (whole runs only).
//! - `end`, last: `settings` (tier, scenarios, checkers, every budget
//!   figure, the build's scheduling fingerprint and version), `shard`
//!   (`k/n`), the counts `runs`, `passed`, `skipped`, `failed`,
//!   `interrupted`, `judged` and the process's `exit` code. A file with no
//!   `end` line is a run that did not finish.
//!
//! `merge` refuses (exit 2, one line on stderr) files of another build or
//! other settings, interrupted or unfinished runs, two files of one shard,
//! and a missing shard. It then sums each row over the shards (executions,
//! schedules, outcomes and goal hits add up; views are united; a search is
//! exhausted if every shard's part is), judges goals and differential
//! coverage on the union, and prints the table `check` prints, with its exit
//! codes. `merge --json` writes the union as an unsharded `check --json`.

mod conclude;
mod format;
mod merge;
pub(super) mod table;

pub(super) use conclude::{conclude, Run};
pub(super) use format::{row_line, Settings};
pub(super) use merge::merged;
