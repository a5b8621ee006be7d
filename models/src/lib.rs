//! Executable specification models of the agent lifecycle contracts.
//!
//! This crate will hold pure state-machine models of `SPEC.md` (issue 6). It
//! builds today so the workspace layout is fixed; it has no content yet.
#![deny(missing_docs)]
