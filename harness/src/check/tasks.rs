//! How many tasks a scenario runs ([`tasks`]), measured once per process on
//! the simulator: what loom's thread limit, loom's preemption bound and the
//! replay fingerprint depend on.
//!
//! Layer 0 (shared): imports only layer-0 files (`panics`).

use super::panics::quiet_panics;
use crate::faults::Faults;
use crate::rt::SimRt;
use crate::scenarios::{self, Ctx, Scenario, Tasks};
use lifecycle_sim::{RandomScheduler, Sim, DEFAULT_MAX_STEPS};

/// Tasks one execution of `scenario` runs, main task included, as the
/// simulator counts them: the most over 4 seeds, with and without the
/// bystanders, and in loom's context ([`Ctx::loom`]). Measured once per process (about 8 executions).
pub fn tasks(scenario: &Scenario) -> Tasks {
    static MEASURED: std::sync::Mutex<std::collections::BTreeMap<&'static str, Tasks>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let cache = || MEASURED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = cache().get(scenario.name) {
        return *t;
    }
    quiet_panics();
    let count = |ctx: Ctx| {
        (0..4u64)
            .map(|seed| {
                let mut sim = Sim::new(Box::new(RandomScheduler::new(seed)), DEFAULT_MAX_STEPS);
                let _ = sim.block_on(scenarios::run_ctx::<SimRt>(scenario, ctx.clone()));
                sim.task_count()
            })
            .max()
            .unwrap_or(1)
    };
    let t = Tasks {
        all: count(Ctx::new(Faults::none())),
        without_bystanders: count(Ctx {
            bystanders: false,
            ..Ctx::new(Faults::none())
        }),
        loom: count(Ctx::loom(Faults::none())),
    };
    cache().insert(scenario.name, t);
    t
}
