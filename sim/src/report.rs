//! What a run tells you: steps, trace entries, reports, errors, the trace hash.
//!
//! Design:
//! - Errors and reports are plain data with human-oriented `Display` impls
//!   (one blocked task per line, no `Debug` dumps), so a harness can print
//!   them directly.
//! - The trace hash is FNV-1a 64, written by hand over little-endian `u64`s,
//!   so it is identical across Rust versions, platforms and crate versions
//!   (as long as the hashed fields stay the same). It is updated on every
//!   poll whether or not the trace itself is kept.

use std::fmt;
use std::rc::Rc;

use crate::task::TaskId;

/// The result of one [`Sim::step`](crate::Sim::step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A ready task was picked and polled once.
    Polled {
        /// The task polled.
        task: TaskId,
        /// Its name.
        name: String,
    },
    /// No task was ready; virtual time moved to the earliest timer (it may
    /// already have been due) and that timer's task was woken.
    TimeAdvanced {
        /// Virtual time after the step.
        now_ms: u64,
    },
    /// Every task has finished; nothing was done.
    Finished,
    /// The scheduler ended the run ([`Scheduler::should_stop`](crate::Scheduler::should_stop)).
    Abandoned,
    /// Unfinished tasks exist, none is ready, no timer is pending.
    Stalled(StallReport),
    /// The polled task panicked; the task is gone and the run is over.
    Panicked {
        /// The task that panicked.
        task: TaskId,
        /// Its name.
        name: String,
        /// The panic message.
        message: String,
    },
    /// The polled task's step did something its footprint does not say
    /// ([`SimError::Footprint`]); the run is over.
    Footprint {
        /// The task polled.
        task: TaskId,
        /// Its name.
        name: String,
        /// What the step did and what it reported.
        message: String,
    },
}

/// One poll in the trace: which task ran, when, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// Executor step counter at this poll (counts polls and time advances).
    pub step: u64,
    /// Virtual time of the poll.
    pub now_ms: u64,
    /// The task polled.
    pub task: TaskId,
    /// Its name.
    pub name: Rc<str>,
    /// How many tasks were ready.
    pub ready: usize,
    /// Index of `task` in the ready slice (the recorded decision).
    pub chosen: u32,
    /// The ready tasks, ascending.
    pub ready_ids: Vec<TaskId>,
    /// The task this poll preempted (polled just before, still ready, not
    /// chosen).
    pub preempted: Option<TaskId>,
    /// The resources the poll touched (see [`touch`](crate::touch)).
    pub footprint: Vec<u64>,
    /// The same poll's accesses in the order it made them, repeats kept,
    /// before the stutter rewriting and normalization that make
    /// [`footprint`](Self::footprint). For tools that read a run at the
    /// granularity of accesses rather than polls (an independent class
    /// counter): a poll's cut depends on the schedule, its accesses do not.
    pub accesses: Vec<TracedAccess>,
}

/// One access of a traced poll ([`TraceEntry::accesses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedAccess {
    /// The resource, with its [`READ`](crate::READ) flag.
    pub resource: u64,
    /// A failed wait: the read of a check that then parked the task
    /// ([`note_await`](crate::note_await)), or the access of a lock
    /// acquire that then blocked the task mid-poll
    /// ([`block_mid_poll`](crate::block_mid_poll)). It changes nothing, and
    /// the task does it again.
    pub failed_wait: bool,
    /// An echo: an access the task made inside its own lock section on
    /// the object, after the section's first access to it (the release
    /// of a section that spanned a scheduling point writes the object
    /// again; a section that did not span one does not). No other task
    /// can touch the object in between, so to other tasks the section is
    /// one access.
    pub echo: bool,
}

impl fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} t={}ms task {} `{}` ({} of {} ready)",
            self.step, self.now_ms, self.task, self.name, self.chosen, self.ready
        )
    }
}

/// Summary of a completed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// Steps taken (polls plus time advances).
    pub steps: u64,
    /// Virtual time at the end.
    pub now_ms: u64,
    /// Tasks spawned.
    pub tasks: usize,
    /// Every scheduling decision, one per poll: pass to
    /// [`Sim::replay`](crate::Sim::replay) to reproduce the run.
    pub decisions: Vec<u32>,
    /// FNV-1a 64 hash of the trace.
    pub trace_hash: u64,
    /// Replay only: the step where the replay stopped matching its log.
    pub diverged_at: Option<u64>,
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tasks finished in {} steps, {} ms virtual, {} decisions, trace hash {:016x}",
            self.tasks,
            self.steps,
            self.now_ms,
            self.decisions.len(),
            self.trace_hash
        )?;
        if let Some(step) = self.diverged_at {
            write!(f, ", replay diverged at step {step}")?;
        }
        Ok(())
    }
}

/// A task that could not make progress when the run stalled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedTask {
    /// The task.
    pub id: TaskId,
    /// Its name.
    pub name: String,
    /// What it said it waits on ([`note_wait`](crate::note_wait)), or a
    /// placeholder if it said nothing.
    pub waits_on: String,
    /// The tag it gave with the label
    /// ([`note_wait_tagged`](crate::note_wait_tagged)), if any.
    pub tag: Option<u32>,
}

/// `waits_on` of a task that never called `note_wait` before blocking.
pub const UNLABELLED_WAIT: &str = "something unlabelled (no note_wait)";

/// Every unfinished task is blocked and no timer is pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReport {
    /// The blocked tasks, ascending by id.
    pub blocked: Vec<BlockedTask>,
}

impl fmt::Display for StallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stall: every task is blocked")?;
        for task in &self.blocked {
            write!(
                f,
                "\n  task {} `{}` waits on {}",
                task.id, task.name, task.waits_on
            )?;
        }
        Ok(())
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// Every unfinished task is blocked and no timer is pending.
    Stalled(StallReport),
    /// The scheduler ended the run before it finished (a search abandoning
    /// a redundant run); not a failure of the program.
    Abandoned {
        /// Steps taken.
        steps: u64,
    },
    /// `max_steps` steps were taken and tasks remain (livelock?).
    StepLimit {
        /// Steps taken.
        steps: u64,
    },
    /// A task panicked while being polled (or dropped after finishing).
    TaskPanicked {
        /// The task.
        task: TaskId,
        /// Its name.
        name: String,
        /// The panic message (`&str` / `String` payloads; otherwise a
        /// placeholder).
        message: String,
    },
    /// A step did something its footprint does not say (a harness error,
    /// not a bug of the program under test): a lock section that reported
    /// no access to its object, or a section reported as a read that took
    /// write access. The reduction of `Dfs` is only sound when footprints
    /// cover what steps did, so the run stops here.
    Footprint {
        /// The task whose step it was.
        task: TaskId,
        /// Its name.
        name: String,
        /// What the step did and what it reported.
        message: String,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Stalled(report) => report.fmt(f),
            SimError::Abandoned { steps } => {
                write!(f, "abandoned by the scheduler after {steps} steps")
            }
            SimError::StepLimit { steps } => write!(
                f,
                "step limit: {steps} steps taken and tasks remain unfinished (livelock?)"
            ),
            SimError::TaskPanicked {
                task,
                name,
                message,
            } => write!(f, "task {task} `{name}` panicked: {message}"),
            SimError::Footprint {
                task,
                name,
                message,
            } => write!(
                f,
                "harness error: a step of task {task} `{name}` does not match its footprint: {message}"
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// Incremental FNV-1a 64.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv64(u64);

impl Fnv64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// The empty hash.
    pub(crate) const fn new() -> Fnv64 {
        Fnv64(Self::OFFSET)
    }

    /// Mixes in `v` as one 64-bit word: FNV-1a's xor-multiply on the word
    /// rather than on its 8 bytes, then a shift to fold the high bits back
    /// (8x fewer multiplies on the executor's hot path; the hash only has
    /// to tell runs apart, not be FNV-compatible).
    #[inline]
    pub(crate) fn write_u64(&mut self, v: u64) {
        let h = (self.0 ^ v).wrapping_mul(Self::PRIME);
        self.0 = h ^ (h >> 29);
    }

    /// The current hash value.
    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_hash_known_value_and_order() {
        assert_eq!(Fnv64::new().finish(), 0xcbf2_9ce4_8422_2325);
        // (offset ^ v) * prime, then h ^ (h >> 29), computed independently.
        let mut h = Fnv64::new();
        h.write_u64(0x0102_0304_0506_0708);
        let m = (0xcbf2_9ce4_8422_2325u64 ^ 0x0102_0304_0506_0708).wrapping_mul(0x100_0000_01b3);
        assert_eq!(h.finish(), m ^ (m >> 29));
        // Order matters: (1, 2) and (2, 1) differ.
        let (mut a, mut b) = (Fnv64::new(), Fnv64::new());
        a.write_u64(1);
        a.write_u64(2);
        b.write_u64(2);
        b.write_u64(1);
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn stall_display_lists_tasks() {
        let r = StallReport {
            blocked: vec![
                BlockedTask {
                    id: 0,
                    name: "main".into(),
                    waits_on: "join agent-loop".into(),
                    tag: None,
                },
                BlockedTask {
                    id: 1,
                    name: "agent-loop".into(),
                    waits_on: "inbox wake".into(),
                    tag: Some(7),
                },
            ],
        };
        assert_eq!(
            SimError::Stalled(r).to_string(),
            "stall: every task is blocked\n  task 0 `main` waits on join agent-loop\n  task 1 `agent-loop` waits on inbox wake"
        );
    }
}
