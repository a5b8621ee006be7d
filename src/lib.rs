//! # agent-lifecycle
//!
//! The harness that proves the agent lifecycle and ownership contracts of
//! `SPEC.md`: the checkers, the scenarios, the world journal and its
//! oracles, the generated workloads, the benchmarks and the command line.
//! The lifecycle itself is the production crate [`lifecycle`], implemented
//! once against an abstract executor; the same code runs on tokio
//! (production), on the seeded simulator [`lifecycle_sim`], and under loom
//! and shuttle through this crate's [`backends`].
//!
//! ## The boundary
//! This crate depends on `lifecycle` and never the other way round: the
//! harness reaches the lifecycle only through its public items and the
//! execution context it enters for each execution ([`context`]), which
//! switches faults on (SPEC §3) and observes the world events. The
//! lifecycle's modules are named here as `crate::agent`, `crate::rt`, …
//! (bound below) and, from outside, as `lifecycle::agent`.
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
//! ## Limits: what is NOT checked
//! - loom and shuttle have no clock: a step's sleep is a yield there.
//! - tokio runs are re-run, not replayed step by step.
//! - Sibling effects are joined futures of the unloading task, so they
//!   interleave at their awaits, not preemptively.
//! - loom models at most 5 threads; scenarios that need more are skipped
//!   under loom (the other checkers run them).
//!
//! ## Features
//! `harness` (on by default) builds the checkers, scenarios and benchmarks,
//! and pulls in loom and shuttle. `cargo build --no-default-features`
//! builds the `lifecycle acp` server alone, on the production crate, with
//! none of them.
#![deny(missing_docs)]

#[allow(unused_imports)]
use lifecycle::{
    acp, agent, bus, events, journal, provider, registry, rt, rules, scope, session_log, shell,
    store, tool_bash, trace,
};

#[cfg(feature = "harness")]
pub mod backends;
#[cfg(feature = "harness")]
pub mod bench;
#[cfg(feature = "harness")]
pub mod check;
#[cfg(feature = "harness")]
pub mod checker;
#[cfg(feature = "harness")]
pub mod clauses;
pub mod cli;
#[cfg(feature = "harness")]
pub mod context;
#[cfg(feature = "harness")]
pub mod docs;
#[cfg(feature = "harness")]
pub mod faults;
#[cfg(feature = "harness")]
mod fnv;
#[cfg(feature = "harness")]
pub mod generate;
#[cfg(feature = "harness")]
pub mod oracle;
#[cfg(feature = "harness")]
pub mod oracle_world;
#[cfg(feature = "harness")]
pub mod scenarios;
#[cfg(feature = "harness")]
pub mod world;
