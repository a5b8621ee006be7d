//! What the harness plugs into the lifecycle's production types, in one
//! optional value: switchable faults (SPEC §3) and an observer of world
//! events (the oracles' journal). [`Hooks::none`] is what production uses:
//! no fault, nothing observed, nothing kept.
//!
//! The registry, the session store, the provider, tool-bash and the ACP
//! bridge each take a `Hooks` at construction; the agents and scopes they
//! build get the faults from it. Production code only *writes* to the
//! observer and asks whether a fault is on; it never reads what was
//! observed (the agent's own answers come from its typed prompt fates,
//! `journal::Fate`).

use crate::events::LifecycleEvent;
use crate::faults::{Fault, Faults};
use crate::rt::Rt;
use crate::scope::Scope;
use crate::world::World;
use std::sync::Arc;

/// Faults and an optional world observer.
pub struct Hooks<R: Rt> {
    faults: Faults,
    world: Option<Arc<World<R>>>,
}

impl<R: Rt> Clone for Hooks<R> {
    fn clone(&self) -> Self {
        Hooks {
            faults: self.faults,
            world: self.world.clone(),
        }
    }
}

impl<R: Rt> Default for Hooks<R> {
    fn default() -> Self {
        Hooks::none()
    }
}

impl<R: Rt> Hooks<R> {
    /// No fault, no observer: production.
    pub fn none() -> Self {
        Hooks {
            faults: Faults::none(),
            world: None,
        }
    }

    /// Every event recorded into `world`, no fault.
    pub fn observed(world: Arc<World<R>>) -> Self {
        Hooks {
            faults: Faults::none(),
            world: Some(world),
        }
    }

    /// The same, with `faults` switched on.
    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// Whether `fault` is switched on.
    pub fn has(&self, fault: Fault) -> bool {
        self.faults.has(fault)
    }

    /// The faults switched on.
    pub fn faults(&self) -> Faults {
        self.faults
    }

    /// Tell the observer the event `event` builds (built only if there is
    /// one).
    pub fn record(&self, event: impl FnOnce() -> LifecycleEvent) {
        if let Some(world) = &self.world {
            world.record(event());
        }
    }

    /// A root scope named `name` whose unloads the observer is told of.
    pub fn scope(&self, name: &str) -> Scope<R> {
        let hooks = self.clone();
        Scope::faulty(
            name,
            self.world.is_some().then(|| {
                Arc::new(move |scope: &str, done: bool| {
                    let scope = scope.to_string();
                    hooks.record(|| {
                        if done {
                            LifecycleEvent::ScopeUnloaded { scope }
                        } else {
                            LifecycleEvent::ScopeUnloading { scope }
                        }
                    });
                }) as _
            }),
            self.faults,
        )
    }
}
