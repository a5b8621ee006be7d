//! # agent-lifecycle
//!
//! The agent lifecycle and ownership contracts of `SPEC.md` (cancel,
//! dispose, identity, shell ownership, ACP), implemented once against an
//! abstract executor, and the harness that proves them: the same lifecycle
//! code runs on tokio (production), on the seeded simulator
//! [`lifecycle_sim`], under loom and under shuttle.
//!
//! ## The problem
//! `cancel` races the agent loop's wake and claim; a prompt accepted before
//! an effective cancel must never start (C4), one accepted after must run
//! exactly once (C5), and `when_idle` must wait for true quiescence (C7).
//! Such races hide between two instructions; this crate makes them named
//! scenarios that checkers explore, checking the rules as invariants.
//!
//! ## A small example
//! ```
//! use agent_lifecycle::agent::Agent;
//! use agent_lifecycle::journal::Cause;
//! use agent_lifecycle::rt::SimRt;
//!
//! let mut sim = lifecycle_sim::Sim::with_seed(42);
//! sim.block_on(async {
//!     let handle = Agent::<SimRt>::spawn("agent-1");
//!     let agent = handle.agent.clone();
//!     agent.send("A").unwrap();
//!     agent.cancel(Cause::User);       // A never runs (C4) ...
//!     agent.send("B").unwrap();        // ... B runs exactly once (C5)
//!     agent.when_idle().await;         // quiescence (C7)
//!     handle.stop().await;
//! })
//! .unwrap();
//! ```
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
//! and pulls in loom and shuttle. `cargo build --no-default-features` builds
//! the lifecycle library and the `lifecycle acp` server alone, with neither.
//! `faults` (implied by `harness`) compiles the fault switches of SPEC §3,
//! the world journal, the hooks that plug them in and the oracles; without
//! it the lifecycle's fault branches are the constant `false` and its
//! events are never built ([`events`]).
#![deny(missing_docs)]

pub mod acp;
pub mod agent;
#[cfg(feature = "harness")]
pub mod bench;
pub mod bus;
#[cfg(feature = "harness")]
pub mod check;
#[cfg(feature = "harness")]
pub mod clauses;
pub mod cli;
#[cfg(feature = "harness")]
pub mod docs;
pub mod events;
#[cfg(feature = "faults")]
pub mod faults;
#[cfg(feature = "faults")]
mod fnv;
#[cfg(feature = "harness")]
pub mod generate;
pub mod journal;
#[cfg(feature = "faults")]
pub mod oracle;
#[cfg(feature = "faults")]
pub mod oracle_world;
pub mod provider;
pub mod registry;
pub mod rt;
pub mod rules;
#[cfg(feature = "harness")]
pub mod scenarios;
pub mod scope;
pub mod session_log;
pub mod shell;
pub mod store;
pub mod tool_bash;
pub mod trace;
#[cfg(feature = "faults")]
pub mod world;
