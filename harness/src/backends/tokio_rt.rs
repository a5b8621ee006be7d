//! The tokio checker's backend: production's [`TokioRt`] with the
//! execution's context. Every primitive is [`TokioRt`]'s; what differs is
//! that fault points and world events ask the context ([`Rt::CONTEXT`]),
//! and that a spawned task carries its spawner's context to whichever
//! worker thread polls it ([`context::carried`]). Production's `TokioRt`
//! has no context: its fault points are the constant `false`.

use lifecycle::rt::{context, Backend, BoxFuture, Rt, TokioRt};

/// Tokio, as the tokio checker, the race tests and the scenarios run it.
#[derive(Debug, Clone, Copy)]
pub struct CheckedTokioRt;

impl Rt for CheckedTokioRt {
    const NAME: &'static str = TokioRt::NAME;
    const BACKEND: Backend = TokioRt::BACKEND;
    const COUNTS_PARKED: bool = TokioRt::COUNTS_PARKED;
    const CONTEXT: bool = true;
    type RawMutex<T: Send + 'static> = <TokioRt as Rt>::RawMutex<T>;

    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
        TokioRt::raw_mutex(value)
    }

    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
        TokioRt::raw_with(m, f)
    }

    fn spawn_detached(name: &str, fut: BoxFuture<()>) {
        match context::current() {
            Some(_) => TokioRt::spawn_detached(name, Box::pin(context::carried(fut))),
            None => TokioRt::spawn_detached(name, fut),
        }
    }

    fn can_spawn() -> bool {
        TokioRt::can_spawn()
    }

    fn yield_now() -> BoxFuture<()> {
        TokioRt::yield_now()
    }

    fn sleep(ms: u64) -> BoxFuture<()> {
        TokioRt::sleep(ms)
    }

    fn now_ms() -> u64 {
        TokioRt::now_ms()
    }
}
