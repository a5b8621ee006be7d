//! The model checkers' backends of the executor facade
//! ([`lifecycle::rt::Rt`]): loom and shuttle. They live here, in the
//! harness, and implement the facade from outside, so the production crate
//! depends on neither checker.

mod loom_rt;
mod shuttle_rt;

pub use loom_rt::LoomRt;
pub use shuttle_rt::ShuttleRt;
