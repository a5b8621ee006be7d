//! Stackful tasks: every task polls its future on its own coroutine stack
//! (`corosensei`), so a poll can be suspended in the middle, at a
//! *scheduling point*, and another task run before it goes on. This is how
//! the simulator preempts whole tasks between two lock sections with no
//! `.await` between them, as a multi-threaded runtime does.
//!
//! States of a task's coroutine:
//! - *unstarted*: the future still sits in its slot (`Shared::tasks`);
//! - *between polls*: suspended at [`Out::Pending`]; resumed with
//!   [`Cmd::Run`] for the next poll or [`Cmd::Drop`] to drop the future;
//! - *mid-poll*: suspended at [`Out::Point`] inside the future's `poll`;
//!   resumed with [`Cmd::Run`] (or force-unwound when a run is abandoned);
//! - *done*: returned [`Done`]; its stack goes back to the pool.
//!
//! Futures joined inside one task are polled one after the other inside
//! the task's poll, so they still interleave only at their awaits, exactly
//! as on any runtime: only whole tasks are preempted.
//!
//! Stacks are pooled per thread across runs (an exhaustive search re-runs
//! the program thousands of times).

use std::any::Any;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, Yielder};

use crate::task::{TaskFuture, TaskId};

/// What the executor tells a task's coroutine when it resumes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmd {
    /// Poll (or go on polling) the future.
    Run,
    /// Drop the future without polling it (the run is over).
    Drop,
}

/// Why a task's coroutine suspended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    /// At a scheduling point inside a poll: the task is still runnable.
    Point,
    /// The poll returned `Pending`: the task runs again once woken.
    Pending,
    /// Blocked inside a poll (on a lock another task holds): not runnable
    /// until woken, then resumed where it stopped.
    Blocked,
}

/// How a task's coroutine ended.
pub(crate) enum Done {
    /// The future completed (and was dropped).
    Ready,
    /// The future, or its destructor, panicked.
    Panicked(Box<dyn Any + Send>),
    /// The future was dropped unfinished ([`Cmd::Drop`]).
    Dropped,
}

/// A task's coroutine.
pub(crate) type Coro = Coroutine<Cmd, Out, Done, DefaultStack>;
/// The handle a running task suspends itself through.
pub(crate) type TaskYielder = Yielder<Cmd, Out>;

/// Stack size of a task: polls of deeply nested debug-build futures need
/// room; the memory is only committed as it is touched.
const STACK_BYTES: usize = 1 << 20;
/// Stacks kept for reuse per thread.
const POOL_MAX: usize = 64;

thread_local! {
    static POOL: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

fn take_stack() -> DefaultStack {
    POOL.with(|p| p.borrow_mut().pop())
        .unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("lifecycle-sim: task stack"))
}

/// Returns a finished coroutine's stack to the pool.
pub(crate) fn recycle(coro: Coro) {
    if !coro.done() {
        drop(coro);
        return;
    }
    let stack = coro.into_stack();
    POOL.with(|p| {
        let mut pool = p.borrow_mut();
        if pool.len() < POOL_MAX {
            pool.push(stack);
        }
    });
}

/// Builds task `task`'s coroutine around its future. `register` is called
/// once, on the coroutine's stack, with the yielder scheduling points
/// suspend through.
pub(crate) fn start(
    mut fut: TaskFuture,
    waker: Waker,
    task: TaskId,
    register: fn(TaskId, *const TaskYielder),
) -> Coro {
    Coroutine::with_stack(take_stack(), move |y: &TaskYielder, first: Cmd| {
        register(task, y as *const TaskYielder);
        let mut cmd = first;
        loop {
            if cmd == Cmd::Drop {
                return match catch_unwind(AssertUnwindSafe(move || drop(fut))) {
                    Ok(()) => Done::Dropped,
                    Err(payload) => Done::Panicked(payload),
                };
            }
            let mut cx = Context::from_waker(&waker);
            match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
                Ok(Poll::Pending) => cmd = y.suspend(Out::Pending),
                Ok(Poll::Ready(())) => {
                    // Dropped with the task still current; a panicking
                    // destructor counts as a task panic.
                    return match catch_unwind(AssertUnwindSafe(move || drop(fut))) {
                        Ok(()) => Done::Ready,
                        Err(payload) => Done::Panicked(payload),
                    };
                }
                Err(payload) => {
                    // The future's state is unknown; ignore a second panic.
                    let _ = catch_unwind(AssertUnwindSafe(move || drop(fut)));
                    return Done::Panicked(payload);
                }
            }
        }
    })
}
