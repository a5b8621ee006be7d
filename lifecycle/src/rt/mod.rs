//! The executor facade: the ONE place that decides which mutex, wake-up,
//! spawn, yield and clock the lifecycle code uses under each backend.
//!
//! The lifecycle code is generic over [`Rt`]. A backend is chosen by type, all
//! in one build, with no cfg flags:
//!
//! | backend        | type            | tasks are            | time            |
//! | -------------- | --------------- | -------------------- | --------------- |
//! | tokio          | [`TokioRt`]     | tokio tasks          | real            |
//! | tokio, checked | `CheckedTokioRt`| tokio tasks          | real            |
//! | lifecycle-sim  | [`SimRt`]       | sim tasks (seeded)   | virtual         |
//! | loom           | `LoomRt`        | loom threads         | none (yields)   |
//! | shuttle        | `ShuttleRt`     | shuttle async tasks  | none (yields)   |
//!
//! The checked tokio, loom and shuttle backends are the harness crate's
//! (`lifecycle_harness::backends`): they implement [`Rt`] from outside, so
//! this crate depends on no checker. Every backend but production's
//! [`TokioRt`] has an execution context ([`Rt::CONTEXT`], [`context`]).
//!
//! What every backend shares, and so all the lifecycle code may use:
//! - [`Mutex`]: a blocking mutex reachable only through a closure, so no guard
//!   can cross an `.await` (a std mutex inside a model checker hangs silently
//!   instead of failing; this one is the checker's own);
//! - [`Monitor`]: state plus a waiter list under one [`Mutex`]; the async
//!   wake-up primitive (`wait_until` / `update`), built once on top of the
//!   backend's mutex and the task's `Waker`;
//! - [`spawn`] returning a [`JoinHandle`] (join is a `Monitor` too);
//! - [`Rt::yield_now`], [`Rt::sleep`], [`Rt::now_ms`];
//! - [`Rt::note_wait`], an optional hook that names what a task waits on, so a
//!   stall report can list it.

pub mod context;
mod mislabel;
mod monitor;
mod relay;
mod sim_rt;
mod tokio_rt;
mod wait;

use std::future::Future;
use std::pin::Pin;

pub use mislabel::{plant, Mislabel, Planted};
pub use monitor::{spawn, JoinHandle, Monitor, Probe};
pub use relay::Relay;
pub use sim_rt::{SimMutex, SimRt};
pub use tokio_rt::TokioRt;
pub use wait::{labels, Wait};

/// The backends of this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// [`SimRt`].
    Sim,
    /// [`TokioRt`].
    Tokio,
    /// loom (`lifecycle_harness::backends::LoomRt`).
    Loom,
    /// shuttle (`lifecycle_harness::backends::ShuttleRt`).
    Shuttle,
}

/// A boxed, sendable future: what the facade hands to a backend.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the lifecycle needs from an executor. Implemented by zero-sized marker
/// types; every function is associated (the backend's context is ambient, as
/// in tokio, loom and shuttle).
pub trait Rt: Send + Sync + Sized + 'static {
    /// Short backend name, used in reports.
    const NAME: &'static str;
    /// Which backend this is.
    const BACKEND: Backend;
    /// Whether waits are counted by label while parked
    /// (`context::parked_waits`): for backends whose deadlock report cannot say
    /// which wait never ended (loom, shuttle).
    const COUNTS_PARKED: bool = false;
    /// Whether this backend's executions can have a harness context
    /// ([`context`]): fault points, world events and parked waits ask it
    /// only then. The production backend ([`TokioRt`]) has none, so there a
    /// fault point is the constant `false` and no world event is built. No
    /// default: every backend says which it is.
    const CONTEXT: bool;
    /// The backend's blocking mutex.
    type RawMutex<T: Send + 'static>: Send + Sync + 'static;

    /// Create a raw mutex.
    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T>;
    /// Run `f` with the lock held.
    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O;
    /// Run `f` with the lock held, inside another section of the running
    /// task, taking no lock in `f` (an *innermost* section). On a
    /// preemptive runtime this is a lock like any other; a backend whose
    /// scheduling points are lock acquisitions (the simulator's) adds none
    /// here: no task holds this lock across a scheduling point, so the
    /// section is part of its enclosing one. The default is
    /// [`raw_with`](Rt::raw_with).
    fn raw_with_innermost<T: Send + 'static, O>(
        m: &Self::RawMutex<T>,
        f: impl FnOnce(&mut T) -> O,
    ) -> O {
        Self::raw_with(m, f)
    }
    /// Run `f` with the lock held; `f` only reads. A backend that tells
    /// reads from writes (the simulator's footprints) lets two reads
    /// commute; the default is [`raw_with`](Rt::raw_with).
    fn raw_read<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&T) -> O) -> O {
        Self::raw_with(m, |t| f(t))
    }
    /// Run `f` with the lock held; `access(&out)` says afterwards what `f`
    /// did to the value ([`Access`]). The default is
    /// [`raw_with`](Rt::raw_with).
    fn raw_section<T: Send + 'static, O>(
        m: &Self::RawMutex<T>,
        f: impl FnOnce(&mut T) -> O,
        access: impl FnOnce(&O) -> Access,
    ) -> O {
        let _ = access;
        Self::raw_with(m, f)
    }
    /// Start a detached task. `name` shows in traces and stall reports.
    fn spawn_detached(name: &str, fut: BoxFuture<()>);
    /// Whether [`spawn_detached`](Rt::spawn_detached) may be called now:
    /// false while the executor tears down (a destructor run then must not
    /// start work). The default is true.
    fn can_spawn() -> bool {
        true
    }
    /// A scheduling point: lets every other ready task run first.
    fn yield_now() -> BoxFuture<()>;
    /// Wait `ms` milliseconds (virtual on the simulator; a yield under the
    /// model checkers, which have no clock).
    fn sleep(ms: u64) -> BoxFuture<()>;
    /// Milliseconds since the start of the run (virtual on the simulator).
    fn now_ms() -> u64;
    /// Names what the current task is about to wait on (optional hook).
    fn note_wait(_wait: Wait) {}
    /// A primitive found that a step did more than it reported (a section
    /// reported as a read that took write access). Only a backend whose
    /// reduction trusts reported accesses cares: the simulator ends the
    /// run with a harness error. The default does nothing.
    fn footprint_error(_what: &str) {}
}

/// `R::sleep(ms)`, cut short when `stop` resolves first. Under the model
/// checkers a sleep is a single yield that always completes, so there it
/// is just the sleep (racing it against `stop` would only add scheduling
/// points, and no schedule could end it earlier).
pub async fn sleep_or<R: Rt>(ms: u64, stop: BoxFuture<()>) {
    match R::BACKEND {
        Backend::Sim | Backend::Tokio => {
            futures::future::select(R::sleep(ms), stop).await;
        }
        Backend::Loom | Backend::Shuttle => R::sleep(ms).await,
    }
}

/// What a lock section did to the value it guards, for backends whose
/// partial-order reduction tells accesses apart (the simulator's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It changed the value.
    Write,
    /// It only read the value.
    Read,
    /// It only read the value, found that the task must wait, and parked
    /// the task until the next change, when the same check runs again. If
    /// that is all the task's step did, the step is a no-op: see
    /// `lifecycle_sim::note_await`.
    Await,
}

/// A blocking mutex of backend `R`, usable only through [`Mutex::with`].
pub struct Mutex<R: Rt, T: Send + 'static> {
    raw: R::RawMutex<T>,
}

impl<R: Rt, T: Send + 'static> Mutex<R, T> {
    /// Wrap `value`.
    pub fn new(value: T) -> Self {
        Self {
            raw: R::raw_mutex(value),
        }
    }

    /// Run `f` with exclusive access. The closure cannot await, so no guard
    /// ever crosses a suspension point.
    pub fn with<O>(&self, f: impl FnOnce(&mut T) -> O) -> O {
        R::raw_with(&self.raw, f)
    }

    /// Run `f` with exclusive access inside another section of this task,
    /// taking no lock in `f`: see [`Rt::raw_with_innermost`].
    pub fn with_innermost<O>(&self, f: impl FnOnce(&mut T) -> O) -> O {
        R::raw_with_innermost(&self.raw, f)
    }

    /// Run `f` with shared access: a read, which commutes with other reads
    /// in the simulator's partial-order reduction.
    pub fn read<O>(&self, f: impl FnOnce(&T) -> O) -> O {
        R::raw_read(&self.raw, f)
    }

    /// Run `f` with exclusive access; `access(&out)` tells what `f` did to
    /// the value. A section that changed nothing counts as a read.
    pub fn section<O>(&self, f: impl FnOnce(&mut T) -> O, access: impl FnOnce(&O) -> Access) -> O {
        R::raw_section(&self.raw, f, access)
    }
}

impl<R: Rt, T: Send + Default + 'static> Default for Mutex<R, T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}
