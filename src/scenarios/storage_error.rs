//! `storage-error-mid-turn`: a write or an fsync of the session log fails
//! while a turn runs (D10).
//!
//! A disk-fault task arms a failure of the next write (ENOSPC after half
//! its bytes) and of the next sync (EIO); every checker places it at each
//! scheduling point, so the failure hits the turn's write-ahead flush, a
//! step's flush, or the closing flush, as a write or as a sync. A second
//! prompt follows the first. Checked on the receiving side: the disk's own
//! operation log and what the agent's callers and client got back:
//! - after the first failed operation, nothing more is written to the log
//!   (the session refuses appends until it is loaded again);
//! - the prompt during which it failed settles with the error, and ends
//!   `{failed}` if its `turn/end` was not yet decided; the later prompt
//!   settles with an error too;
//! - every output the client was sent is synced on disk;
//! - a load after the failure (a new store over the same bytes) succeeds,
//!   cuts the partial record, and closes the failed turn `interrupted`.
//!
//! Fault M18 (the failure logged and ignored) breaks D10 here.

use super::crash::{echo_rig, restart_checks, Client};
use super::goals::{excused, label, Goal};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::faults::Fault;
use crate::journal::EndReason;
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use crate::session_log::Entry;
use crate::store::durable::{DiskFault, DiskOp, MemoryDurable, Tear};
use std::sync::Arc;

const GOALS: &[Goal] = &[
    label(
        "write-ahead",
        "the failure hits the flush of turn/start and user/message",
        "fail:write-ahead",
    ),
    excused(
        label(
            "step",
            "the failure hits the flush of a step's output",
            "fail:step",
        ),
        &[(
            "shuttle-pct",
            "0 hits in 5,000 iterations (the PR budget) and 2 in 50,000 (4.3 s) at depth 3: the fault task is ready from the start and runs before the first flush",
        )],
    ),
    excused(
        label(
            "turn-end",
            "the failure hits the closing flush, after turn/end was decided",
            "fail:turn-end",
        ),
        &[
            ("shuttle-random", "0 hits in 50,000 iterations (4.6 s)"),
            ("shuttle-pct", "0 hits in 50,000 iterations (4.3 s) at depth 3"),
        ],
    ),
    excused(
        label(
            "sync",
            "a sync fails after its write went through (bytes written, not durable)",
            ":sync",
        ),
        &[(
            "shuttle-random",
            "0 hits in 5,000 iterations (the PR budget) and 3 in 50,000 (4.6 s); shuttle-pct reaches it",
        )],
    ),
];

/// `storage-error-mid-turn`, registered in [`super::ALL`].
pub static STORAGE_ERROR_MID_TURN: Scenario = Scenario::new(
    "storage-error-mid-turn",
    "a write (ENOSPC) or fsync (EIO) of the session log fails during a turn; a second prompt follows",
    bodies!(storage_error_mid_turn),
)
.rules(&[Rule::D10, Rule::D9])
.goals(GOALS)
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
})
.targets(&[Fault::M18]);

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
    let b = h.agent.send(spec("B", 1)).expect("send B");
    let (_, b_err) = h.agent.settled(b).await;
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
    let where_ = match failed_at {
        None => "none".to_string(),
        Some(at) => {
            let kind = if matches!(ops[at], DiskOp::Sync { .. }) {
                "sync"
            } else {
                "write"
            };
            let k = synced_before(at);
            let during = match k {
                0 => "write-ahead",
                1 | 2 => "step",
                3 => "turn-end",
                _ => "prompt-B",
            };
            let later = ops[at + 1..]
                .iter()
                .filter(|op| matches!(op, DiskOp::Write { failed: None, .. }))
                .count();
            check(
                later == 0,
                format!(
                    "after a failed {kind} ({during}), {later} more write(s) reached the log: the session must refuse appends until it is loaded again"
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
            check(
                b_err.is_some(),
                format!("after a failed {kind} ({during}), prompt B settled with no error"),
            );
            format!("{during}:{kind}")
        }
    };
    if failed_at.is_none() {
        check(
            a_err.is_none() && b_err.is_none(),
            format!("no storage operation failed, yet A settled {a_err:?} and B {b_err:?}"),
        );
    }
    // Whatever the client was sent is durable.
    let image = disk.crash_image();
    let synced = image.synced("a");
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
    rig.finish(format!("fail:{where_}"), own)
}
