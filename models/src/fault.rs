//! The faults of SPEC §3, as model variants. The type is `lifecycle-spec`'s,
//! shared with the implementation; [`modelled`] lists the faults a model
//! here has a variant of.

pub use lifecycle_spec::{Fault, Rule};

/// The faults the models have a variant of, in SPEC order: all but M13
/// and M14, check-then-act bugs between two lock sections of the
/// implementation, below the models' granularity (the simulator, sim-dfs
/// and loom find them).
pub fn modelled() -> impl Iterator<Item = Fault> {
    Fault::ALL
        .into_iter()
        .filter(|f| crate::ModelId::of_fault(*f).is_some())
}
