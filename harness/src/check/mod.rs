//! The checkers: how each backend explores a scenario, and the report they
//! share.
//!
//! | checker          | explores                                   | replay payload      |
//! | ---------------- | ------------------------------------------ | ------------------- |
//! | `sim`            | portfolio: seeded random walk + PCT        | `seed=N;plan=P`     |
//! | `sim-dfs`        | every schedule, sleep-set reduced          | `seed=0;plan=P`     |
//! | `loom`           | every interleaving (preemption-bounded)    | `exec=N,pb=B`       |
//! | `shuttle-random` | shuttle's random scheduler                 | `schedule=HEX`      |
//! | `shuttle-pct`    | shuttle's PCT scheduler (depth d)          | `schedule=HEX`      |
//! | `tokio`          | the production runtime, many runs          | `runs=N` (re-run)   |
//!
//! # Layers
//!
//! The files of this module form layers; a file imports only from its own
//! layer or those below it, and the files of one layer import each other
//! without a cycle. `tests/layers.rs` checks this against its table of
//! every file's layer (a new file must be added there).
//!
//! ```text
//! 4  dispatch      dispatch (run), replay (ReplayLine::replay), api
//!                      |
//! 3  explorers     explore: one file per backend (explore/), which owns
//!                  its exploration, its replay and its run helpers:
//!                  sim  sim_dfs  loom (+ loom_worker)  shuttle  tokio
//!                      |
//! 2  sim runs      shrink -> sim_run (run_plan, check_plan) <- classes <- growth
//!                      |
//! 1  line format   replay_line (ReplayLine, Payload, limits, fingerprint)
//!                      |
//! 0  shared        checker budget report tally goals view tasks panics
//!                  journal_tap swimlane html
//! ```
//!
//! This file holds only the module list and the re-exports that keep the
//! paths callers use (`check::{run, Budget, Checker, Report, ReplayLine,
//! ...}`).

pub mod api;
mod budget;
mod checker;
pub mod classes;
mod dispatch;
pub mod explore;
pub mod goals;
pub mod growth;
pub mod html;
pub mod journal_tap;
mod panics;
pub mod replay;
mod replay_line;
mod report;
pub mod shrink;
mod sim_run;
pub mod swimlane;
mod tally;
mod tasks;
pub mod view;

pub use budget::Budget;
pub use checker::Checker;
pub use dispatch::{run, run_with_progress};
pub use explore::loom::loom_bound;
pub use explore::sim::PortfolioOptions;
pub use explore::sim_dfs::DfsOptions;
pub use goals::{GoalHit, GoalTally};
pub use panics::quiet_panics;
pub use replay_line::ReplayLine;
pub use report::{Found, Report, Status, Stop, Stopped};
pub use tally::Saved;
pub use tally::Tally;
pub use tasks::tasks;
