//! The rules of SPEC §2: defined once, in `lifecycle-spec`.

pub use lifecycle_spec::rules::*;
