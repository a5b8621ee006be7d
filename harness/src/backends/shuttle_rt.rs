//! The shuttle backend: tasks are shuttle async tasks, explored by shuttle's
//! random and PCT schedulers.

use lifecycle::rt::{Backend, BoxFuture, Rt};

/// Shuttle backend.
#[derive(Debug, Clone, Copy)]
pub struct ShuttleRt;

impl Rt for ShuttleRt {
    const NAME: &'static str = "shuttle";
    const BACKEND: Backend = Backend::Shuttle;
    const COUNTS_PARKED: bool = true;
    const CONTEXT: bool = true;
    type RawMutex<T: Send + 'static> = shuttle::sync::Mutex<T>;

    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
        shuttle::sync::Mutex::new(value)
    }

    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
        let mut guard = m.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    fn spawn_detached(_name: &str, fut: BoxFuture<()>) {
        drop(shuttle::future::spawn(fut));
    }

    fn yield_now() -> BoxFuture<()> {
        Box::pin(shuttle::future::yield_now())
    }

    fn sleep(_ms: u64) -> BoxFuture<()> {
        Box::pin(shuttle::future::yield_now())
    }

    fn now_ms() -> u64 {
        0
    }
}
