//! The simulator backend: `lifecycle-sim`, a seeded single-threaded executor
//! with virtual time and recorded scheduling decisions.

use super::{BoxFuture, Rt};

/// The simulator's mutex: one thread, and the closure cannot await and
/// holds no scheduling point (`lifecycle_sim::atomic`), so the lock is never
/// contended; it carries the object id the simulator's footprints use.
pub struct SimMutex<T> {
    object: u64,
    inner: std::sync::Mutex<T>,
}

/// Simulator backend. Must run inside a `lifecycle_sim::Sim`.
#[derive(Debug, Clone, Copy)]
pub struct SimRt;

impl Rt for SimRt {
    const NAME: &'static str = "sim";
    const BACKEND: super::Backend = super::Backend::Sim;
    type RawMutex<T: Send + 'static> = SimMutex<T>;

    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
        SimMutex {
            object: lifecycle_sim::new_object(),
            inner: std::sync::Mutex::new(value),
        }
    }

    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
        // Lock granularity: another task may run right before the section,
        // as another thread may take the lock first on a preemptive
        // runtime. The section itself is atomic (no scheduling point
        // inside), and every access is reported, so the exhaustive search
        // knows which steps commute; all shared state lives in these.
        lifecycle_sim::schedule_point();
        lifecycle_sim::touch(m.object);
        let mut guard = m.inner.lock().unwrap_or_else(|p| p.into_inner());
        lifecycle_sim::atomic(|| f(&mut guard))
    }

    fn raw_read<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&T) -> O) -> O {
        lifecycle_sim::schedule_point();
        lifecycle_sim::touch_read(m.object);
        let guard = m.inner.lock().unwrap_or_else(|p| p.into_inner());
        lifecycle_sim::atomic(|| f(&guard))
    }

    fn raw_section<T: Send + 'static, O>(
        m: &Self::RawMutex<T>,
        f: impl FnOnce(&mut T) -> O,
        access: impl FnOnce(&O) -> super::Access,
    ) -> O {
        lifecycle_sim::schedule_point();
        let mut guard = m.inner.lock().unwrap_or_else(|p| p.into_inner());
        let out = lifecycle_sim::atomic(|| f(&mut guard));
        match access(&out) {
            super::Access::Write => lifecycle_sim::touch(m.object),
            super::Access::Read => lifecycle_sim::touch_read(m.object),
            super::Access::Await => lifecycle_sim::note_await(m.object),
        }
        out
    }

    fn spawn_detached(name: &str, fut: BoxFuture<()>) {
        lifecycle_sim::spawn(name, fut);
    }

    fn yield_now() -> BoxFuture<()> {
        Box::pin(lifecycle_sim::yield_now())
    }

    fn sleep(ms: u64) -> BoxFuture<()> {
        Box::pin(lifecycle_sim::sleep(ms))
    }

    fn now_ms() -> u64 {
        lifecycle_sim::now_ms()
    }

    fn note_wait(what: &'static str) {
        lifecycle_sim::note_wait(what);
    }
}
