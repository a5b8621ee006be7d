//! The shape of a model, after stateright's `Model` trait: initial states,
//! the enabled actions of a state in a deterministic order, the next state,
//! and named properties.

use std::fmt::Debug;
use std::hash::Hash;

/// What a property expects of the reachable states (see the crate docs for
/// the exact semantics the [`checker`](crate::checker) implements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expectation {
    /// Holds in every reachable state (a safety rule).
    Always,
    /// Holds in at least one reachable state (a race window is reachable).
    Sometimes,
    /// Holds in the final state of every complete run (a progress rule).
    Eventually,
}

/// A named property of a model.
pub struct Property<M: Model> {
    /// Always, sometimes or eventually.
    pub expectation: Expectation,
    /// The name, starting with the SPEC rule ID it checks.
    pub name: &'static str,
    /// The condition on one state.
    pub condition: fn(&M, &M::State) -> bool,
}

impl<M: Model> Property<M> {
    /// A safety property.
    pub fn always(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Self {
        Property {
            expectation: Expectation::Always,
            name,
            condition,
        }
    }

    /// A reachability property (a race window).
    pub fn sometimes(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Self {
        Property {
            expectation: Expectation::Sometimes,
            name,
            condition,
        }
    }

    /// A progress property.
    pub fn eventually(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Self {
        Property {
            expectation: Expectation::Eventually,
            name,
            condition,
        }
    }
}

/// A state machine model.
pub trait Model: Sized {
    /// A state: compared and hashed for deduplication.
    type State: Clone + Eq + Hash + Debug;
    /// An action: one transition label.
    type Action: Clone + Eq + Debug;

    /// The model's name in reports.
    fn name(&self) -> String;

    /// The initial states.
    fn init_states(&self) -> Vec<Self::State>;

    /// The actions enabled in `state`, pushed in a deterministic order.
    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>);

    /// The state after `action`, or `None` if the action changes nothing.
    fn next_state(&self, state: &Self::State, action: &Self::Action) -> Option<Self::State>;

    /// The named properties.
    fn properties(&self) -> Vec<Property<Self>>;
}
