//! The checkers' names: [`Checker`], defined with the harness's vocabulary
//! (`crate::checker`, beside the faults) so that scenario goals (which name
//! the checkers excused from them) and reports share one type, and
//! re-exported here.
//!
//! Layer 0 (shared): imports nothing from `check`.

pub use crate::checker::Checker;
