//! # lifecycle-harness
//!
//! The harness that proves the agent lifecycle and ownership contracts of
//! `SPEC.md` on the production crate [`lifecycle`]: the checkers
//! ([`check`]), the named races ([`scenarios`]), the world journal
//! ([`world`]) and the oracles that read it ([`oracle`],
//! [`oracle_world`]), the faults of SPEC §3 ([`faults`]) with the
//! execution context that switches them on ([`context`]), the loom and
//! shuttle backends of the executor facade ([`backends`]) and the
//! generated workloads ([`generate`]). The same lifecycle code runs on
//! tokio, on the seeded simulator [`lifecycle_sim`], under loom and under
//! shuttle.
//!
//! ## The boundary
//! This crate depends on `lifecycle` and never the other way round: the
//! harness reaches the lifecycle only through its public items and the
//! execution context it enters for each execution, which switches faults
//! on and observes the world events. The lifecycle's modules are named
//! here as `crate::agent`, `crate::rt`, … (bound below) and, from outside,
//! as `lifecycle::agent`. The tools (`lifecycle-tools`: the command line,
//! the benchmarks, the docs) sit on top of both.
//!
//! ## Limits: what is NOT checked
//! - loom and shuttle have no clock: a step's sleep is a yield there.
//! - tokio runs are re-run, not replayed step by step.
//! - Sibling effects are joined futures of the unloading task, so they
//!   interleave at their awaits, not preemptively.
//! - loom models at most 5 threads; scenarios that need more are skipped
//!   under loom (the other checkers run them).
#![deny(missing_docs)]

use lifecycle::{
    acp, agent, bus, events, journal, provider, registry, rt, rules, scope, session_log, shell,
    store, tool_bash, trace,
};

pub mod backends;
pub mod check;
pub mod checker;
pub mod context;
pub mod faults;
mod fnv;
pub mod generate;
pub mod oracle;
pub mod oracle_world;
pub mod scenarios;
pub mod world;
