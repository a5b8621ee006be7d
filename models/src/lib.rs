//! The specification as executable models.
//!
//! `SPEC.md` says what the agent lifecycle must do; this crate says it again
//! as small, pure state machines that can be run and checked on their own,
//! without the implementation. Each model implements stateright's
//! [`Model`]: initial states, actions in a deterministic order, a
//! next-state function and named [`Property`]s, each named after the SPEC
//! rule it checks. stateright does the search ([`checker`] runs it and
//! turns its discoveries into a report with a shortest counterexample per
//! failing property), and its Explorer serves any model in a browser
//! (`lifecycle model --serve`, [`serve`]).
//!
//! | model | parts | rules |
//! | --- | --- | --- |
//! | [`agent`] | inbox, pre-run marker, turn token, cancel, `when_idle`, dispose step 1, a hung step and the turn's signal | C1–C8, C10, D6 |
//! | [`dispose`] | creation admitted in the scopes' locks after its setup await, scopes, composite and sibling effects, dispose callers that drop their future, registry with a repeated detach, session store with a durable log | D1–D5, D7, D8, R1–R3 |
//! | [`durability`] | one session's log file (written, synced, torn), write-ahead flushes, crashes, loads, storage failures | D9, D10 |
//! | [`shell`] | jobs with owners (`a`, `b`, `""`, and `ab`, which `""` and `a` prefix), tool-bash and its reload, completion notices, the owner drain | S1–S7 |
//! | [`acp`] | ACP bridge sessions, loads and their replay, prompts (the A8 wait), cancel, disconnect and unload | A1–A9 |
//!
//! Every fault of SPEC §3 ([`Fault`]) is a variant of one model, and the
//! checker finds a counterexample for the rule the fault must violate.
//!
//! # For the CLI
//!
//! ```text
//! lifecycle_models::report::run_all() -> Vec<ModelReport>
//! lifecycle_models::report::render_table(&[ModelReport]) -> String
//! lifecycle_models::report::to_json(&[ModelReport]) -> String
//! lifecycle_models::report::all_ok(&[ModelReport]) -> bool
//! ```
//!
//! `run_all` checks every model without faults and then every fault
//! variant, reported in a fixed order (the checks run concurrently, one
//! per core); `all_ok` is true when every property of the
//! clean models holds and every fault variant produced a counterexample for
//! one of its rules.
//!
//! # Example
//!
//! ```
//! use lifecycle_models::agent::AgentModel;
//! use lifecycle_models::checker::ModelChecker;
//! use lifecycle_models::Fault;
//!
//! // The specified agent: every property holds.
//! let clean = ModelChecker::default().check(AgentModel::new(None));
//! assert!(clean.all_hold(), "{:#?}", clean.properties);
//!
//! // Without the pre-run marker (M3) a cancelled prompt still starts.
//! let m3 = ModelChecker::default().check(AgentModel::new(Some(Fault::M3)));
//! let failed = m3.first_counterexample().unwrap();
//! assert!(failed.name.starts_with("C4"));
//! println!("{}", failed.render());
//! ```
//!
//! # How to run
//!
//! `cargo run --release -- model` prints the table; `--json` prints the
//! same as JSON. `cargo test -p lifecycle-models` checks every model's unique
//! states, depth and properties and every fault's counterexample length
//! against the workspace's `pins.json` (written and checked by
//! `lifecycle bench --pins`).
//!
//! # Limits: what is NOT checked
//!
//! - The models are small: two prompts, two agents, two jobs, one bridge,
//!   one session log with two turns, two crashes and one storage failure.
//!   A bug that needs more of them is out of their reach.
//! - Only the handle's `dispose()` future is dropped (D8); a dropped
//!   `create`, `resume`, `unload` or `when_idle` is not modelled, nor a
//!   crash inside a load's own write.
//! - Progress is checked on terminal states ([`at_every_end!`], see
//!   [`checker`] for why not stateright's `Eventually`); cycles are not
//!   searched for livelock.
//! - The models share no code with the implementation; the conformance
//!   tests of the root crate (`tests/conformance_*.rs`) check that the two
//!   agree on random operation sequences.
#![deny(missing_docs)]

pub mod acp;
pub mod agent;
pub mod checker;
pub mod dispose;
pub mod durability;
pub mod fault;
mod model_id;
mod property_id;
pub mod report;
pub mod serve;
pub mod shell;

pub use checker::{
    CheckResult, Checkable, Counterexample, Expectation, Identified, Model, ModelChecker, Named,
    Prop, Property, PropertyResult, Representative,
};
pub use fault::{Fault, Rule};
pub use model_id::ModelId;
pub use property_id::PropertyId;
