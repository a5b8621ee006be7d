//! The checkers' names: [`Checker`], defined in `lifecycle-spec` with the
//! rules and faults (scenario goals name the checkers excused from them)
//! and re-exported here.
//!
//! Layer 0 (shared): imports nothing from `check`.

pub use lifecycle_spec::Checker;
