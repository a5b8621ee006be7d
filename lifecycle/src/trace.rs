//! The `tracing` targets the lifecycle and its harness emit on, named
//! once: emitters write `target: Target::JOURNAL`, and a reader of a trace
//! (`replay --trace`) turns an event's target into a [`Target`] with
//! [`Target::of`] once, at the subscriber, and matches on the type.

/// A `tracing` target of this crate's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// A journal record (`debug`; fields `agent`, `seq`, `at_ms`; the
    /// record's JSON as the message).
    Journal,
    /// A world event (`debug`; its JSON as the message).
    World,
    /// A scenario check that failed (`info`; field `rule`).
    Check,
    /// An observation of a generated workload's history (`info`; field
    /// `n`, its number from 1).
    Observation,
    /// The simulator's own events (a preemption).
    Sim,
    /// A panic the harness caught (`debug`).
    Panic,
}

impl Target {
    /// [`Target::Journal`]'s name, for `target:` in the `tracing` macros.
    pub const JOURNAL: &'static str = "journal";
    /// [`Target::World`]'s name.
    pub const WORLD: &'static str = "world";
    /// [`Target::Check`]'s name.
    pub const CHECK: &'static str = "check";
    /// [`Target::Observation`]'s name.
    pub const OBSERVATION: &'static str = "observation";
    /// [`Target::Sim`]'s name (the simulator crate's own).
    pub const SIM: &'static str = lifecycle_sim::TRACE_TARGET;
    /// [`Target::Panic`]'s name.
    pub const PANIC: &'static str = "panic";

    /// Every target.
    pub const ALL: [Target; 6] = [
        Target::Journal,
        Target::World,
        Target::Check,
        Target::Observation,
        Target::Sim,
        Target::Panic,
    ];

    /// Its name, as an event's metadata carries it.
    pub const fn name(self) -> &'static str {
        match self {
            Target::Journal => Target::JOURNAL,
            Target::World => Target::WORLD,
            Target::Check => Target::CHECK,
            Target::Observation => Target::OBSERVATION,
            Target::Sim => Target::SIM,
            Target::Panic => Target::PANIC,
        }
    }

    /// The target an event's metadata names, if it is one of these.
    pub fn of(target: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_read_back_from_its_name_and_the_names_differ() {
        for t in Target::ALL {
            assert_eq!(Target::of(t.name()), Some(t));
        }
        let mut names: Vec<_> = Target::ALL.iter().map(|t| t.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Target::ALL.len());
        assert_eq!(Target::of("agent_lifecycle"), None);
    }
}
