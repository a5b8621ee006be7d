//! The faults of SPEC §3: each [`Fault`] is defined once, in
//! `lifecycle-spec`; which are on in an execution is the harness's
//! [`Faults`], which the execution context (`crate::context`) answers the
//! production crate's fault points from.

pub use lifecycle_spec::faults::*;

/// A set of switched-on faults. Empty in production.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Faults(u32);

impl Faults {
    /// No fault: the specified behaviour.
    pub const fn none() -> Self {
        Faults(0)
    }

    /// This set plus `fault`.
    pub const fn with(self, fault: Fault) -> Self {
        Faults(self.0 | (1 << fault as u32))
    }

    /// Whether `fault` is on.
    pub const fn has(self, fault: Fault) -> bool {
        self.0 & (1 << fault as u32) != 0
    }

    /// The faults that are on, in SPEC order.
    pub fn iter(self) -> impl Iterator<Item = Fault> {
        Fault::ALL.into_iter().filter(move |f| self.has(*f))
    }
}

impl From<Option<Fault>> for Faults {
    fn from(f: Option<Fault>) -> Self {
        f.map_or(Faults::none(), |f| Faults::none().with(f))
    }
}
