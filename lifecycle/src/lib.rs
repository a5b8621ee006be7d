//! # lifecycle
//!
//! The agent lifecycle and ownership contracts of `SPEC.md` (cancel,
//! dispose, identity, shell ownership, ACP), implemented once against an
//! abstract executor ([`rt::Rt`]): the same code runs on tokio
//! (production), on the seeded simulator [`lifecycle_sim`], and, through
//! the backends of the harness crate `lifecycle-harness`, under loom and
//! under shuttle.
//!
//! ## The problem
//! `cancel` races the agent loop's wake and claim; a prompt accepted before
//! an effective cancel must never start (C4), one accepted after must run
//! exactly once (C5), and `when_idle` must wait for true quiescence (C7).
//! Such races hide between two instructions; the harness makes them named
//! scenarios that checkers explore, checking the rules as invariants.
//!
//! ## A small example
//! ```
//! use lifecycle::agent::Agent;
//! use lifecycle::journal::Cause;
//! use lifecycle::rt::SimRt;
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
//! ## The boundary with the harness
//! This crate is production. It depends on no model checker (no loom,
//! shuttle, proptest or stateright) and has no cargo feature. The harness
//! reaches it only through its public items and through the execution
//! context ([`rt::context`]): a fault point is `fault!(M24)` and a world
//! event is `observe::<R>(|| event)`, both asked of the context that the
//! harness enters for an execution, on a backend that has one
//! ([`rt::Rt::CONTEXT`]). Production's backend has none: its fault points
//! are the constant `false` and it builds no event.
#![deny(missing_docs)]

pub mod acp;
pub mod agent;
pub mod bus;
pub mod events;
pub mod journal;
pub mod provider;
pub mod registry;
pub mod rt;
pub mod rules;
pub mod scope;
pub mod session_log;
pub mod shell;
pub mod store;
pub mod tool_bash;
pub mod trace;
