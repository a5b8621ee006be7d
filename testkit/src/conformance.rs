//! Shared driver of the conformance tests: the implementation runs on the
//! simulator under a scheduler the test steers, one operation at a time.
//!
//! - An API call runs inside a short-lived task (`op`), picked before any
//!   other ready task, so it happens atomically between two scheduling
//!   points of the implementation: exactly where the model's action sits.
//! - A scheduling choice is an explicit operation: "poll the agent loop
//!   once" ([`Driver::poll_task`]), or "run until nothing can move"
//!   ([`Driver::settle`]).

use lifecycle_sim::{Scheduler, Sim, Step, TaskId};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

/// Picks the preferred task when it is ready, else the first ready task.
struct Steered {
    preferred: Rc<Cell<Option<TaskId>>>,
}

impl Scheduler for Steered {
    fn pick(&mut self, ready: &[TaskId], _step: u64) -> usize {
        match self.preferred.get() {
            Some(t) => ready.iter().position(|r| *r == t).unwrap_or(0),
            None => 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        0
    }
}

/// The simulator, steered by the test.
pub struct Driver {
    /// The simulation.
    pub sim: Sim,
    preferred: Rc<Cell<Option<TaskId>>>,
}

impl Default for Driver {
    fn default() -> Self {
        Self::new()
    }
}

impl Driver {
    /// A fresh simulation.
    pub fn new() -> Self {
        let preferred = Rc::new(Cell::new(None));
        let sim = Sim::new(
            Box::new(Steered {
                preferred: preferred.clone(),
            }),
            u64::MAX,
        );
        Driver { sim, preferred }
    }

    /// Run `f` as a task picked before every other ready task, until it
    /// finishes; `None` if it blocks (it then stays spawned).
    pub fn call<T: 'static, F: Future<Output = T> + 'static>(&mut self, f: F) -> Option<T> {
        let slot: Rc<RefCell<Option<T>>> = Rc::new(RefCell::new(None));
        let out = slot.clone();
        let id = self.sim.spawn("op", async move {
            let v = f.await;
            *out.borrow_mut() = Some(v);
        });
        self.preferred.set(Some(id));
        for _ in 0..10_000 {
            if slot.borrow().is_some() {
                break;
            }
            match self.sim.step() {
                Step::Polled { task, .. } if task == id => {}
                Step::Polled { .. } | Step::TimeAdvanced { .. } => {}
                Step::Panicked { message, name, .. } => panic!("task {name} panicked: {message}"),
                Step::Footprint { message, name, .. } => panic!("task {name}: {message}"),
                Step::Finished | Step::Stalled(_) | Step::Abandoned => break,
            }
        }
        self.preferred.set(None);
        let v = slot.borrow_mut().take();
        v
    }

    /// Run a synchronous call inside the simulation.
    pub fn run<T: 'static>(&mut self, f: impl FnOnce() -> T + 'static) -> T {
        self.call(async move { f() })
            .expect("a synchronous call finishes in one poll")
    }

    /// Step until a task whose name starts with `prefix` has been polled
    /// once (firing timers as needed); `false` if nothing could run.
    pub fn poll_task(&mut self, prefix: &str) -> bool {
        for _ in 0..10_000 {
            match self.sim.step() {
                Step::Polled { name, .. } if name.starts_with(prefix) => return true,
                Step::Polled { .. } | Step::TimeAdvanced { .. } => {}
                Step::Panicked { message, name, .. } => panic!("task {name} panicked: {message}"),
                Step::Footprint { message, name, .. } => panic!("task {name}: {message}"),
                Step::Finished | Step::Stalled(_) | Step::Abandoned => return false,
            }
        }
        panic!("poll_task({prefix}): no progress after 10000 steps");
    }

    /// Step until every task is finished or blocked with no timer pending.
    pub fn settle(&mut self) {
        for _ in 0..100_000 {
            match self.sim.step() {
                Step::Polled { .. } | Step::TimeAdvanced { .. } => {}
                Step::Panicked { message, name, .. } => panic!("task {name} panicked: {message}"),
                Step::Footprint { message, name, .. } => panic!("task {name}: {message}"),
                Step::Finished | Step::Stalled(_) | Step::Abandoned => return,
            }
        }
        panic!("settle: no quiescence after 100000 steps");
    }
}

/// The proptest configuration of every conformance part: 1,000 cases.
pub fn config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: 1000,
        max_shrink_iters: 4096,
        ..proptest::test_runner::Config::default()
    }
}

/// A future the test polls by hand (not a task of the simulation): it
/// moves only when the test says so.
pub type Manual<T> = Rc<RefCell<Option<std::pin::Pin<Box<dyn Future<Output = T>>>>>>;

/// Wrap `f` to be polled by hand.
pub fn manual<T: 'static>(f: impl Future<Output = T> + 'static) -> Manual<T> {
    Rc::new(RefCell::new(Some(Box::pin(f))))
}

impl Driver {
    /// Poll `m` once, inside the simulation; its output once it is ready.
    pub fn poll_manual<T: 'static>(&mut self, m: &Manual<T>) -> Option<T> {
        let m = m.clone();
        self.run(move || {
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            let mut slot = m.borrow_mut();
            let fut = slot.as_mut()?;
            match fut.as_mut().poll(&mut cx) {
                std::task::Poll::Ready(v) => {
                    *slot = None;
                    Some(v)
                }
                std::task::Poll::Pending => None,
            }
        })
    }

    /// Run `m` to completion as a task picked before every other ready
    /// task (so virtual time moves only while it truly waits on time).
    pub fn drive<T: 'static>(&mut self, m: &Manual<T>) -> T {
        let fut = m.borrow_mut().take().expect("the future is still pending");
        self.call(fut).expect("the future finishes")
    }
}
