//! The loom backend: every task is a loom thread driven by
//! `loom::future::block_on`, so loom explores every interleaving of the
//! lifecycle's mutex operations (bounded by the checker's preemption bound).

use lifecycle::rt::{Backend, BoxFuture, Rt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Stack of a spawned loom thread in debug builds, whose poll frames are
/// several times larger than release's: 1 MiB, in the `usize` words loom's
/// coroutine crate counts (release keeps loom's default, 32 KiB).
const DEBUG_THREAD_STACK_WORDS: usize = (1 << 20) / std::mem::size_of::<usize>();

/// Loom backend. Loom models at most `loom::MAX_THREADS` (5) threads.
#[derive(Debug, Clone, Copy)]
pub struct LoomRt;

/// A yield point: the first poll yields the loom thread, wakes its own task
/// and returns `Pending`, so futures joined in one task interleave here (as
/// they do at a yield on tokio); the second poll completes.
struct LoomYield(bool);

impl Future for LoomYield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        loom::thread::yield_now();
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Rt for LoomRt {
    const NAME: &'static str = "loom";
    const BACKEND: Backend = Backend::Loom;
    const COUNTS_PARKED: bool = true;
    const CONTEXT: bool = true;
    type RawMutex<T: Send + 'static> = loom::sync::Mutex<T>;

    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
        loom::sync::Mutex::new(value)
    }

    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
        let mut guard = m.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    fn spawn_detached(name: &str, fut: BoxFuture<()>) {
        let mut builder = loom::thread::Builder::new().name(name.to_string());
        if cfg!(debug_assertions) {
            builder = builder.stack_size(DEBUG_THREAD_STACK_WORDS);
        }
        let handle = builder
            .spawn(move || loom::future::block_on(fut))
            .expect("loom thread spawn");
        drop(handle);
    }

    fn yield_now() -> BoxFuture<()> {
        Box::pin(LoomYield(false))
    }

    fn sleep(_ms: u64) -> BoxFuture<()> {
        Box::pin(LoomYield(false))
    }

    fn now_ms() -> u64 {
        0
    }
}
