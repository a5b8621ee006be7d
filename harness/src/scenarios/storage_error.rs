//! `storage-error-mid-turn`: a write or an fsync of the session log fails
//! while a turn runs (D10).
//!
//! A disk-fault task arms a failure of the next write (ENOSPC after half
//! its bytes) and of the next sync (EIO); every checker places it at each
//! scheduling point, so the first failure hits the turn's write-ahead
//! flush, a step's flush, or the closing flush, as a write or as a sync,
//! and the other armed failure hits a later operation. Prompts B and C
//! follow A. Checked on the receiving side, on the disk's own operation
//! log and on what the agent's callers and client got back:
//! - after A's first failed operation, nothing more of A reaches the log
//!   (the session refuses appends until its next turn recovers it);
//! - the prompt during which it failed settles with the error, and ends
//!   `{failed}` if its `turn/end` was not yet decided;
//! - B settles with an error only if a second operation failed;
//! - C recovers the session in the same process unless an operation of
//!   its own fails: it settles with no error and its turn/end is synced,
//!   and A's failed turn is closed `{failed}` on disk (D10: never
//!   permanent);
//! - every output the client was sent is synced on disk;
//! - a load after all of it (a new store over the same bytes) succeeds.
//!
//! Fault M18 (the failure logged and ignored) and fault M26 (the session
//! refuses appends until the process restarts) break D10 here.

use super::crash::{echo_rig, restart_checks, Client};
use super::goals::{excused, on, Goal};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::checker::Checker;
use crate::faults::Fault;
use crate::journal::EndReason;
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use crate::session_log::Entry;
use crate::store::durable::{DiskFault, DiskOp, MemoryDurable, Tear};
use std::sync::Arc;

/// A goal of [`STORAGE_ERROR_MID_TURN`].
pub const WRITE_AHEAD: Goal = on!(
    "write-ahead",
    "the failure hits the flush of turn/start and user/message",
    |f: &Failed| f.during() == Some(Flush::WriteAhead),
);

/// A goal of [`STORAGE_ERROR_MID_TURN`].
pub const STEP: Goal = excused(
        on!(
            "step",
            "the failure hits the flush of a step's output",
            |f: &Failed| f.during() == Some(Flush::Step),
        ),
        &[(Checker::ShuttlePct,
            "not reached in the PR tier's iterations at depth 3, rarely in much longer runs: the fault task is ready from the start and runs before the first flush",
        )],
    );

/// A goal of [`STORAGE_ERROR_MID_TURN`].
pub const TURN_END: Goal = excused(
    on!(
        "turn-end",
        "the failure hits the closing flush, after turn/end was decided",
        |f: &Failed| f.during() == Some(Flush::TurnEnd),
    ),
    &[
        (
            Checker::ShuttleRandom,
            "not reached in runs far past the PR budget",
        ),
        (
            Checker::ShuttlePct,
            "not reached in runs far past the PR budget at depth 3",
        ),
    ],
);

/// A goal of [`STORAGE_ERROR_MID_TURN`].
pub const SYNC: Goal = excused(
        on!(
            "sync",
            "a sync fails after its write went through (bytes written, not durable)",
            |f: &Failed| matches!(f, Failed::At { sync: true, .. }),
        ),
        &[(Checker::ShuttleRandom,
            "not reached in the PR tier's iterations, rarely in much longer runs; shuttle-pct reaches it",
        )],
    );

const GOALS: &[Goal] = &[WRITE_AHEAD, STEP, TURN_END, SYNC];

/// Which flush of the session's log the failed operation belonged to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flush {
    /// turn/start and user/message, before the first step.
    WriteAhead,
    /// A step's output.
    Step,
    /// The closing flush, after turn/end was decided.
    TurnEnd,
    /// Prompt B's, after prompt A's turn.
    PromptB,
}

/// Where the storage failure hit, if one did: the flush, and whether it
/// was a sync (or a write). Shown as `fail:none` or `fail:step:sync`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Failed {
    None,
    At { during: Flush, sync: bool },
}

impl Flush {
    fn name(self) -> &'static str {
        match self {
            Flush::WriteAhead => "write-ahead",
            Flush::Step => "step",
            Flush::TurnEnd => "turn-end",
            Flush::PromptB => "prompt-B",
        }
    }
}

/// A failed operation's kind, in a word.
fn kind(sync: bool) -> &'static str {
    if sync {
        "sync"
    } else {
        "write"
    }
}

impl Failed {
    fn during(self) -> Option<Flush> {
        match self {
            Failed::None => None,
            Failed::At { during, .. } => Some(during),
        }
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Failed::At { during, sync } = *self else {
            return write!(f, "fail:none");
        };
        write!(f, "fail:{}:{}", during.name(), kind(sync))
    }
}

/// `storage-error-mid-turn`, registered in [`super::ALL`].
pub static STORAGE_ERROR_MID_TURN: Scenario = Scenario::new(
    "storage-error-mid-turn",
    "a write (ENOSPC) or fsync (EIO) of the session log fails during a turn; two prompts follow, and the session recovers in the same process",
    bodies!(storage_error_mid_turn),
)
.rules(&[Rule::D10, Rule::D9])
.goals(GOALS)
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
})
.targets(&[Fault::M18, Fault::M26]);

/// The body: see the module docs.
pub async fn storage_error_mid_turn<R: Rt>(ctx: Ctx) -> Outcome {
    let disk = Arc::new(MemoryDurable::<R>::default());
    let client = Client::new(&disk);
    let rig = echo_rig(ctx.faults, &disk, &client);
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    let faulter = {
        let disk = disk.clone();
        rt::spawn::<R, ()>("disk-fault", async move {
            disk.fail_next(DiskFault::WriteEnospc);
            disk.fail_next(DiskFault::SyncEio);
        })
    };
    let a = h.agent.send(spec("A", 2)).expect("send A");
    let (a_end, a_err) = h.agent.settled(a).await;
    faulter.join().await;
    let a_ops = disk.ops().len();
    let b = h.agent.send(spec("B", 1)).expect("send B");
    let (_, b_err) = h.agent.settled(b).await;
    let b_ops = disk.ops().len();
    let c = h.agent.send(spec("C", 1)).expect("send C");
    let (c_end, c_err) = h.agent.settled(c).await;
    h.dispose().await;

    let ops: Vec<DiskOp> = disk.ops();
    let failed_at = ops.iter().position(|op| {
        matches!(
            op,
            DiskOp::Write {
                failed: Some(_),
                ..
            } | DiskOp::Sync {
                failed: Some(_),
                ..
            }
        )
    });
    // Flushes of A that completed before the failure: 0 is the
    // write-ahead flush, 1 and 2 the steps', 3 the closing one.
    let synced_before = |at: usize| {
        ops[..at]
            .iter()
            .filter(|op| matches!(op, DiskOp::Sync { failed: None, .. }))
            .count()
    };
    let mut own = Vec::new();
    let mut check = |ok: bool, what: String| own.push((ok, Violation::new(Rule::D10, what)));
    let failed = match failed_at {
        None => Failed::None,
        Some(at) => {
            let sync = matches!(ops[at], DiskOp::Sync { .. });
            let k = synced_before(at);
            let flush = match k {
                0 => Flush::WriteAhead,
                1 | 2 => Flush::Step,
                3 => Flush::TurnEnd,
                _ => Flush::PromptB,
            };
            let (during, kind) = (flush.name(), kind(sync));
            let later = ops[at + 1..a_ops.max(at + 1)]
                .iter()
                .filter(|op| matches!(op, DiskOp::Write { failed: None, .. }))
                .count();
            check(
                later == 0,
                format!(
                    "after a failed {kind} ({during}), {later} more write(s) of prompt A reached the log: the session must refuse appends until its next turn recovers it"
                ),
            );
            if k < 4 {
                check(
                    a_err.is_some(),
                    format!(
                        "a {kind} of prompt A's log failed ({during}), but A settled {a_end:?} with no error"
                    ),
                );
                check(
                    k == 3 || a_end == Some(EndReason::Failed),
                    format!(
                        "a {kind} failed at A's {during} flush, but A ended {a_end:?}, not failed"
                    ),
                );
            }
            Failed::At {
                during: flush,
                sync,
            }
        }
    };
    if failed_at.is_none() {
        check(
            a_err.is_none() && b_err.is_none(),
            format!("no storage operation failed, yet A settled {a_err:?} and B {b_err:?}"),
        );
    }
    let failures = ops.iter().filter(|op| op.failed()).count();
    check(
        b_err.is_none() || failures >= 2,
        format!("prompt B settled with an error ({b_err:?}), but only {failures} storage operation(s) failed: a transient error must not outlast the turn it hit"),
    );
    // C recovers the session unless an operation of its own failed.
    let c_hit = ops[b_ops.min(ops.len())..].iter().any(DiskOp::failed);
    check(
        c_hit || (c_err.is_none() && c_end == Some(EndReason::Completed)),
        format!("after {failures} transient storage failure(s) before it, prompt C settled {c_end:?} with {c_err:?}: the session must recover in the same process"),
    );
    let image = disk.crash_image();
    let synced = image.synced("a");
    let ended = |p: u64, why: EndReason| {
        synced
            .iter()
            .any(|r| matches!(&r.entry, Entry::TurnEnd { prompt, reason } if *prompt == p && *reason == why))
    };
    check(
        c_end != Some(EndReason::Completed) || ended(c, EndReason::Completed),
        format!("prompt C (p{c}) completed, but its turn/end is not synced on disk"),
    );
    if failed_at.is_some_and(|at| synced_before(at) < 3) {
        check(
            ended(a, EndReason::Failed),
            format!("prompt A (p{a}) failed, but the recovered log does not close it turn/end {{failed}}"),
        );
    }
    // Whatever the client was sent is durable.
    for out in client.seen() {
        let durable = synced
            .iter()
            .any(|r| matches!(&r.entry, Entry::Step { output: Some(o), .. } if *o == out));
        check(
            durable,
            format!("the client was sent {out:?}, which is not synced on disk"),
        );
    }
    own.extend(restart_checks(
        ctx.faults,
        &image,
        Tear::KeepAll,
        &client.seen(),
    ));
    rig.finish(failed, own)
}
