//! The production backend: a tokio multi-thread runtime.

use super::{BoxFuture, Rt};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Tokio backend (production). Tasks are tokio tasks; time is real. It has
/// no harness context ([`Rt::CONTEXT`]): its fault points are the constant
/// `false` and it builds no world event. The tokio checker runs the
/// harness's own tokio backend, which has one.
#[derive(Debug, Clone, Copy)]
pub struct TokioRt;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Rt for TokioRt {
    const NAME: &'static str = "tokio";
    const BACKEND: super::Backend = super::Backend::Tokio;
    const CONTEXT: bool = false;
    type RawMutex<T: Send + 'static> = std::sync::Mutex<T>;

    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
        std::sync::Mutex::new(value)
    }

    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
        // A panic inside `f` cannot leave a half-done transition behind: the
        // closures are small and the state they guard stays consistent, so a
        // poisoned lock is recovered rather than cascading the panic.
        let mut guard = m.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    fn spawn_detached(_name: &str, fut: BoxFuture<()>) {
        drop(tokio::spawn(fut));
    }

    fn yield_now() -> BoxFuture<()> {
        Box::pin(tokio::task::yield_now())
    }

    fn sleep(ms: u64) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
    }

    fn now_ms() -> u64 {
        epoch().elapsed().as_millis() as u64
    }
}
