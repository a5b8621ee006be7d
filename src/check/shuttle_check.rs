//! The shuttle checkers: shuttle's random and PCT schedulers, wrapped so the
//! schedule of each execution is recorded; a failing one is printed in
//! shuttle's own encoding and replayed with shuttle's `ReplayScheduler`.

use super::{Checker, ReplayLine, Report, Tally};
use crate::faults::Faults;
use crate::rt::ShuttleRt;
use crate::scenarios::{self, Outcome, ScenarioId};
use shuttle::scheduler::{
    PctScheduler, RandomScheduler, ReplayScheduler, Schedule, Scheduler, Task, TaskId,
};
use shuttle::{Config, FailurePersistence, Runner};
use shuttle_engine::scheduler::serialization::{deserialize_schedule, serialize_schedule};
use std::sync::{Arc, Mutex};

/// Records the schedule of the current execution of an inner scheduler.
struct Recording<S> {
    inner: S,
    current: Arc<Mutex<Schedule>>,
}

impl<S: Scheduler> Scheduler for Recording<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        let schedule = self.inner.new_execution()?;
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Schedule::new(schedule.seed);
        Some(schedule)
    }

    fn next_task(
        &mut self,
        runnable: &[&Task],
        current: Option<TaskId>,
        is_yielding: bool,
    ) -> Option<TaskId> {
        let next = self.inner.next_task(runnable, current, is_yielding)?;
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_task(next);
        Some(next)
    }

    fn next_u64(&mut self) -> u64 {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_random();
        self.inner.next_u64()
    }
}

fn config() -> Config {
    let mut config = Config::new();
    config.failure_persistence = FailurePersistence::None;
    config.silence_warnings = true;
    config
}

/// Run one trivial execution so shuttle installs its panic hook now (it does
/// so once per process), before ours replaces it.
pub fn warm_up() {
    let scheduler = RandomScheduler::new_from_seed(0, 1);
    Runner::new(scheduler, config()).run(|| {});
}

/// Explore `iterations` executions with shuttle's random or PCT scheduler.
pub fn explore(
    checker: Checker,
    scenario: ScenarioId,
    faults: Faults,
    iterations: usize,
    pct_depth: usize,
    stop_at_first: bool,
) -> Report {
    let current = Arc::new(Mutex::new(Schedule::new(0)));
    let tally = Arc::new(Mutex::new(Tally::new(scenario, checker, faults)));
    let stop = Arc::new(Mutex::new(false));
    let (t, cur, st) = (tally.clone(), current.clone(), stop.clone());
    let body = move || {
        if *st.lock().unwrap_or_else(|p| p.into_inner()) {
            return;
        }
        let outcome: Outcome =
            shuttle::future::block_on(scenarios::run::<ShuttleRt>(scenario, faults));
        let mut tally = t.lock().unwrap_or_else(|p| p.into_inner());
        let failed = tally.add(&outcome, || {
            let schedule = cur.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let hex: String = serialize_schedule(&schedule).split_whitespace().collect();
            ReplayLine::new(scenario, checker, faults, format!("schedule={hex}")).to_string()
        });
        if failed && stop_at_first {
            *st.lock().unwrap_or_else(|p| p.into_inner()) = true;
        }
    };
    // Seeds are fixed so a run is reproducible as a whole; each failing
    // execution is replayable on its own from its recorded schedule.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match checker {
        Checker::ShuttlePct => Runner::new(
            Recording {
                inner: PctScheduler::new_from_seed(0x5eed, pct_depth, iterations),
                current,
            },
            config(),
        )
        .run(body),
        _ => Runner::new(
            Recording {
                inner: RandomScheduler::new_from_seed(0x5eed, iterations),
                current,
            },
            config(),
        )
        .run(body),
    }));
    let mut tally = Arc::try_unwrap(tally)
        .ok()
        .expect("shuttle finished")
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    if let Err(payload) = result {
        tally.error(format!(
            "shuttle: {}",
            crate::bus::panic_message(payload.as_ref())
        ));
    }
    tally.finish()
}

/// Replay one execution from its encoded schedule.
pub fn replay(scenario: ScenarioId, faults: Faults, encoded: &str) -> Result<Outcome, String> {
    let schedule =
        deserialize_schedule(encoded).ok_or_else(|| "malformed shuttle schedule".to_string())?;
    let found: Arc<Mutex<Option<Outcome>>> = Arc::new(Mutex::new(None));
    let f = found.clone();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Runner::new(ReplayScheduler::new_from_schedule(schedule), config()).run(move || {
            let outcome = shuttle::future::block_on(scenarios::run::<ShuttleRt>(scenario, faults));
            *f.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
        })
    }));
    if let Err(payload) = result {
        return Err(format!(
            "shuttle could not replay the schedule (recorded by another build or scenario?): {}",
            crate::bus::panic_message(payload.as_ref())
        ));
    }
    let outcome = found.lock().unwrap_or_else(|p| p.into_inner()).take();
    outcome.ok_or_else(|| "shuttle replay ran no execution".to_string())
}
