//! The model checkers' backends of the executor facade
//! ([`lifecycle::rt::Rt`]): loom, shuttle, and tokio with the execution's
//! context. They live here, in the
//! harness, and implement the facade from outside, so the production crate
//! depends on neither checker.

mod loom_rt;
mod shuttle_rt;
mod tokio_rt;

pub use loom_rt::LoomRt;
pub use shuttle_rt::ShuttleRt;
pub use tokio_rt::CheckedTokioRt;
