//! The faults of SPEC §3: defined once, in `lifecycle-spec`.

pub use lifecycle_spec::faults::*;
