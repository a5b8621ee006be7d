//! The simulator backend: `lifecycle-sim`, a seeded single-threaded executor
//! with virtual time and recorded scheduling decisions.

use super::{BoxFuture, Rt};

/// The simulator's mutex. A section holds no scheduling point of its own
/// (`lifecycle_sim::atomic`), except where it takes another lock (a nested
/// section that is not innermost, see `Rt::raw_with_innermost`): there
/// the task may be preempted while it holds this one, as on a preemptive
/// runtime, and a task that wants this lock meanwhile blocks until it is
/// released. It carries the object id the simulator's footprints use.
pub struct SimMutex<T> {
    object: u64,
    inner: std::sync::Mutex<T>,
    /// The task holding the lock (`FREE`: none): a task preempted inside
    /// a section, at a nested lock, still holds it.
    holder: std::sync::atomic::AtomicUsize,
    /// The executor's step when the holder took it.
    taken_at: std::sync::atomic::AtomicU64,
    /// Tasks blocked on the lock while another held it.
    waiters: std::sync::Mutex<Vec<lifecycle_sim::Unblock>>,
}

/// No task holds the lock.
const FREE: usize = usize::MAX;
/// The holder outside any task (set-up code before the run).
const OUTSIDE: usize = usize::MAX - 1;

/// Releases a [`SimMutex`] when dropped, also while a section unwinds.
struct Held<'a, T>(&'a SimMutex<T>);

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl<T> SimMutex<T> {
    /// Takes the lock for the running task: a scheduling point first (also
    /// inside an enclosing section: a nested lock) unless `point` is false
    /// (an innermost section, see [`Rt::raw_with_innermost`]), then, while
    /// another task holds it (preempted inside its section), the task
    /// blocks until it is released. Touches the object as `read` says.
    fn acquire(&self, read: bool, point: bool) -> Held<'_, T> {
        use std::sync::atomic::Ordering::SeqCst;
        if point {
            lifecycle_sim::lock_point();
        }
        let me = lifecycle_sim::current_task_id().unwrap_or(OUTSIDE);
        loop {
            match self.holder.compare_exchange(FREE, me, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(h) => {
                    assert_ne!(
                        h, me,
                        "lifecycle-sim: a lock section re-entered its own lock"
                    );
                    // Waiting for the holder's release: dependent on it.
                    lifecycle_sim::touch(self.object);
                    let blocked = lifecycle_sim::block_mid_poll(self.object, |w| {
                        self.waiters
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(w)
                    });
                    assert!(
                        blocked,
                        "lifecycle-sim: a lock is held where no task can wait"
                    );
                }
            }
        }
        self.taken_at
            .store(lifecycle_sim::current_step().unwrap_or(u64::MAX), SeqCst);
        // The section's bounds come from the lock itself: the simulator
        // checks that it reports an access to this object before it ends.
        lifecycle_sim::section_begin(self.object);
        let read = read && !super::mislabel::planted(super::Mislabel::LockReadsUnreported);
        if read {
            lifecycle_sim::touch_read(self.object);
        }
        Held(self)
    }

    /// A section that writes the value, after a scheduling point if
    /// `point` (see [`acquire`](Self::acquire)).
    fn write<O>(&self, point: bool, f: impl FnOnce(&mut T) -> O) -> O {
        let held = self.acquire(false, point);
        lifecycle_sim::touch(self.object);
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let out = lifecycle_sim::atomic(|| f(&mut guard));
        drop(guard);
        drop(held);
        out
    }

    /// Lets the lock go; a release in a later step than the acquire (the
    /// holder was preempted inside) is a write others waited on.
    fn release(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        if lifecycle_sim::current_step().unwrap_or(u64::MAX) != self.taken_at.load(SeqCst) {
            lifecycle_sim::touch(self.object);
        }
        lifecycle_sim::section_end(self.object);
        self.holder.store(FREE, SeqCst);
        let woken = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|p| p.into_inner()));
        for w in woken {
            w.unblock();
        }
    }
}

/// Simulator backend. Must run inside a `lifecycle_sim::Sim`.
#[derive(Debug, Clone, Copy)]
pub struct SimRt;

impl Rt for SimRt {
    const NAME: &'static str = "sim";
    const BACKEND: super::Backend = super::Backend::Sim;
    const CONTEXT: bool = true;
    type RawMutex<T: Send + 'static> = SimMutex<T>;

    fn raw_mutex<T: Send + 'static>(value: T) -> Self::RawMutex<T> {
        let object = lifecycle_sim::new_object();
        lifecycle_sim::name_object(object, std::any::type_name::<T>());
        SimMutex {
            object,
            inner: std::sync::Mutex::new(value),
            holder: std::sync::atomic::AtomicUsize::new(FREE),
            taken_at: std::sync::atomic::AtomicU64::new(0),
            waiters: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn raw_with<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&mut T) -> O) -> O {
        // Lock granularity: another task may run right before the section,
        // as another thread may take the lock first on a preemptive
        // runtime. The section itself is atomic (no scheduling point
        // inside), and every access is reported, so the exhaustive search
        // knows which steps commute; all shared state lives in these.
        m.write(true, f)
    }

    fn raw_with_innermost<T: Send + 'static, O>(
        m: &Self::RawMutex<T>,
        f: impl FnOnce(&mut T) -> O,
    ) -> O {
        // No scheduling point: no task holds this lock across one (nothing
        // nests in it, and its enclosing section's own lock point came
        // before), so taking it here is part of the enclosing section.
        m.write(false, f)
    }

    fn raw_read<T: Send + 'static, O>(m: &Self::RawMutex<T>, f: impl FnOnce(&T) -> O) -> O {
        let held = m.acquire(true, true);
        let guard = m.inner.lock().unwrap_or_else(|p| p.into_inner());
        let out = lifecycle_sim::atomic(|| f(&guard));
        drop(guard);
        drop(held);
        out
    }

    fn raw_section<T: Send + 'static, O>(
        m: &Self::RawMutex<T>,
        f: impl FnOnce(&mut T) -> O,
        access: impl FnOnce(&O) -> super::Access,
    ) -> O {
        let held = m.acquire(false, true);
        let mut guard = m.inner.lock().unwrap_or_else(|p| p.into_inner());
        let out = lifecycle_sim::atomic(|| f(&mut guard));
        drop(guard);
        match access(&out) {
            super::Access::Write => lifecycle_sim::touch(m.object),
            super::Access::Read => lifecycle_sim::touch_read(m.object),
            super::Access::Await => lifecycle_sim::note_await(m.object),
        }
        drop(held);
        out
    }

    fn spawn_detached(name: &str, fut: BoxFuture<()>) {
        lifecycle_sim::spawn(name, fut);
    }

    fn can_spawn() -> bool {
        lifecycle_sim::can_spawn()
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

    fn note_wait(wait: super::Wait) {
        // The rule rides with the label as a tag, so a stall report says
        // which rule it breaks without reading the label back.
        match wait.breaks {
            Some(rule) => lifecycle_sim::note_wait_tagged(wait.label, rule.index() as u32),
            None => lifecycle_sim::note_wait(wait.label),
        }
    }

    fn footprint_error(what: &str) {
        lifecycle_sim::footprint_error(what);
    }
}
