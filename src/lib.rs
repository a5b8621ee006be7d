//! # lifecycle-tools
//!
//! The command line, the benchmarks and the docs generator of the agent
//! lifecycle and its harness. Three crates carry the code:
//! - [`lifecycle`]: production (the lifecycle, the ACP server, the
//!   executor facade), with no cargo feature and no model checker;
//! - `lifecycle-harness`: the checkers, scenarios, world journal, oracles,
//!   faults and the loom and shuttle backends;
//! - this one, on top of both.
//!
//! ## How to run
//! `cargo run --release -- check` runs every scenario under every checker;
//! `cargo run --release -- mutants` switches each fault of SPEC §3 on and
//! shows which checker kills it.
//!
//! ## How to reproduce a failure
//! Every failure ends with a line such as
//! `cargo run --release -- replay 'v3:cancel-before-claim:sim:M3:<fingerprint>:seed=1;time=virtual;plan=…'`
//! (`lifecycle replay` explains the format).
//!
//! ## Features
//! `harness` (on by default) builds every command on the harness crate,
//! and pulls in loom and shuttle. `cargo build --no-default-features`
//! builds the `lifecycle acp` server alone, on the production crate, with
//! none of them.
//!
//! The production crate's modules (`crate::agent`, `crate::rt`, …) and,
//! with the harness, the harness crate's (`crate::check`,
//! `crate::scenarios`, …) are bound below, so the tools name them as one
//! tree; from outside they are `lifecycle::agent` and
//! `lifecycle_harness::check`.
#![deny(missing_docs)]

#[allow(unused_imports)]
use lifecycle::{
    acp, agent, bus, events, journal, provider, registry, rt, rules, scope, session_log, shell,
    store, tool_bash, trace,
};
#[cfg(feature = "harness")]
#[allow(unused_imports)]
use lifecycle_harness::{
    backends, check, checker, context, faults, generate, oracle, oracle_world, scenarios, world,
};

#[cfg(feature = "harness")]
pub mod bench;
#[cfg(feature = "harness")]
pub mod clauses;
pub mod cli;
#[cfg(feature = "harness")]
pub mod docs;
