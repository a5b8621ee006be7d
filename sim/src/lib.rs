//! A deterministic, seeded, single-threaded async executor with virtual time
//! and recorded schedules, for testing concurrent code.
//!
//! # The problem
//!
//! Concurrency bugs hide in rare interleavings. A production runtime picks
//! interleavings by accident (OS threads, real clocks), so a failing run
//! cannot be reproduced. This crate runs every task of a program on one
//! thread and lets a [`Scheduler`] choose, at every poll, which ready task
//! runs next:
//!
//! - a seeded [`RandomScheduler`] explores different interleavings per seed;
//! - every choice is recorded ([`Sim::decisions`]), and a [`ReplayScheduler`]
//!   reproduces a run from those choices exactly ([`Sim::replay`]);
//! - time is virtual ([`sleep`], [`now_ms`]): it jumps to the next timer
//!   when no task is ready, so timeouts cost nothing and are deterministic;
//! - a [`trace hash`](Sim::trace_hash) fingerprints the schedule, so two runs
//!   can be compared cheaply;
//! - a run that can make no progress fails with a [`StallReport`] naming each
//!   blocked task and what it waits on ([`note_wait`]).
//!
//! The executor knows nothing about the application. Inside tasks, the free
//! functions ([`spawn`], [`yield_now`], [`sleep`], [`now_ms`], [`note_wait`],
//! [`current_task`], [`random_u64`], [`is_running`]) reach the running
//! simulation through a thread-local.
//!
//! # Example
//!
//! ```
//! use lifecycle_sim::{now_ms, sleep, spawn, yield_now, Sim};
//! use std::cell::RefCell;
//! use std::rc::Rc;
//!
//! fn program() -> impl std::future::Future<Output = Vec<&'static str>> {
//!     async {
//!         let log = Rc::new(RefCell::new(Vec::new()));
//!         let l = Rc::clone(&log);
//!         spawn("ticker", async move {
//!             yield_now().await;
//!             l.borrow_mut().push("tick");
//!             sleep(10).await;
//!             l.borrow_mut().push("tock");
//!         });
//!         yield_now().await;
//!         log.borrow_mut().push("main");
//!         sleep(25).await;
//!         assert_eq!(now_ms(), 25);
//!         let out = log.borrow().clone();
//!         out
//!     }
//! }
//!
//! let mut sim = Sim::with_seed(7);
//! let log = sim.block_on(program()).unwrap();
//! assert_eq!(log.len(), 3);
//! assert_eq!(sim.now_ms(), 25);
//!
//! // Replay the exact same schedule from the recorded decisions.
//! let mut again = Sim::replay(sim.decisions().to_vec());
//! assert_eq!(again.block_on(program()).unwrap(), log);
//! assert_eq!(again.trace_hash(), sim.trace_hash());
//! assert_eq!(again.diverged_at(), None);
//! ```
//!
//! # Replaying a run
//!
//! Keep the seed, or the decisions ([`RunReport::decisions`], one `u32` per
//! poll). `Sim::with_seed(seed)` re-runs the same schedule as long as the
//! program is unchanged. `Sim::replay(decisions)` follows the recorded
//! choices even if you changed the seed-dependent parts of your harness; if
//! the program drew [`random_u64`] values, use
//! [`Sim::replay_with_seed`] with the original seed so it draws the same
//! values. If the program changed so much that the log no longer fits (it
//! runs out, an index is out of range, or decisions are left over),
//! the replay falls back to the first ready task and reports
//! [`diverged_at`](RunReport::diverged_at).
//!
//! # Model and limits
//!
//! - Single thread, no OS time, no OS randomness, no `HashMap`: a run is a
//!   pure function of the program and the scheduler.
//! - Tasks are preempted, not futures: every task polls on its own stack (a
//!   `corosensei` coroutine, stacks pooled across runs), and a scheduling
//!   point inside a poll ([`schedule_point`]: lock sections through
//!   [`atomic`], wakes of another task, spawns, clock reads, timer
//!   registration) may suspend it there while another task runs, as a
//!   preemptive multi-threaded runtime may switch threads between two lock
//!   sections with no `.await` between them. A lock section taken inside
//!   another ([`lock_point`]) may be preempted there while the task holds
//!   the outer lock; a task that wants a held lock blocks
//!   ([`block_mid_poll`]) until it is released. A `Pending` poll is a
//!   scheduling point too. Futures joined inside one task still interleave
//!   only at their awaits. [`Sim::set_preemptive`]`(false)` gives the older
//!   await granularity.
//! - A point with only one runnable task is no decision and costs no
//!   switch.
//! - Time advances only when no task is ready, to the earliest timer; one
//!   timer fires per step and equal deadlines fire in registration order.
//! - Wakers are real `std` wakers and can be sent to other threads, but the
//!   simulation only sees what those threads do when it next steps; threads
//!   or I/O outside the simulation make runs nondeterministic.
//! - Futures from other runtimes (tokio timers, sockets) will not work: they
//!   need their own reactor.
//! - Task panics are caught (`catch_unwind`) and end the run with
//!   [`SimError::TaskPanicked`]; the default panic hook still prints them.
//! - [`Sim::run`] is bounded by `max_steps` ([`SimError::StepLimit`]) to
//!   catch livelock. Running a `Sim` inside a task of another `Sim` works
//!   but is not a supported use; sequential `Sim`s on one thread are.
#![deny(missing_docs)]

mod access;
mod context;
mod coro;
mod dfs;
mod executor;
mod pct;
mod race;
mod report;
mod resource;
mod scheduler;
mod shared;
mod task;
mod time;
mod timers;
mod wakeup;

pub use access::{
    footprint_error, name_object, new_object, note_await, section_begin, section_end, touch,
    touch_read,
};
pub use context::{
    atomic, block_mid_poll, can_spawn, current_step, current_task, current_task_id, is_running,
    lock_point, note_wait, note_wait_tagged, now_ms, peek_now_ms, random_u64, schedule_point,
    spawn, yield_now, Unblock, YieldNow,
};

pub use dfs::{Dfs, DfsConfig, DfsStats, ExecKind, Shard};
pub use executor::{Sim, DEFAULT_MAX_STEPS, TRACE_TARGET};
pub use pct::PctScheduler;
pub use report::{
    BlockedTask, RunReport, SimError, StallReport, Step, TraceEntry, TracedAccess, UNLABELLED_WAIT,
};
pub use resource::{
    describe as describe_resource, independent, object_creator, OBJECT, READ, WAKE,
};
pub use scheduler::{
    is_preemption, GuidedScheduler, NonPreemptiveScheduler, RandomScheduler, ReplayScheduler,
    Scheduler,
};
pub use task::TaskId;
pub use time::{sleep, Sleep};
