//! `dropped-dispose`: the first caller of `dispose()` gives up on it (a
//! timeout, a `select`) while the teardown is under way; a second handle
//! and the owner's unload then dispose the same agent (D8, D1).
//!
//! The caller's timeout is a task that fires while the dispose future is
//! suspended; every checker explores where it fires relative to the
//! teardown's steps, so the dispose future is dropped at each of its
//! suspension points. (It cannot be dropped before the teardown begins:
//! the first poll of `dispose` starts the chain.) Then, with no further
//! lifecycle call, the body waits for the agent's `agent/disposed` and
//! `session/disposed` listeners: the teardown the dropped call started
//! must finish by itself (D8). Only then do the later callers come; they
//! must resolve with the whole chain run once (D1, D2, checked by the world
//! oracle) and nothing left registered. Fault M15 runs the chain inside the
//! first caller's future, so dropping it drops the chain; fault M25 parks
//! it for a later caller. Either way the wait never ends: a D8 stall.

use super::goals::{excused, on, Goal};
use super::rig::{give_up, First, Rig};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::oracle::Violation;
use crate::rt::{Monitor, Rt, Wait};
use crate::rules::Rule;
use std::sync::Arc;

/// The body's wait for the teardown to finish with no further dispose
/// call: never ending, it breaks D8 (the dropped caller's work wedged).
const FINISHES_ALONE: Wait = Wait::breaking(
    "teardown (memoized) finishes with no further call",
    Rule::D8,
);

/// A goal of [`DROPPED_DISPOSE`].
pub const DROPPED_MID_TEARDOWN: Goal = on!(
    "dropped-mid-teardown",
    "the first caller drops its dispose after the teardown began and before it finished",
    |f: &First| *f == First::DroppedMidTeardown,
);

/// A goal of [`DROPPED_DISPOSE`].
pub const FIRST_COMPLETED: Goal = excused(
        on!(
            "first-completed",
            "the first dispose completes before the timeout fires",
            |f: &First| *f == First::Completed,
        ),
        &[(Checker::ShuttlePct,
            "not reached in runs far past the PR budget at depth 3: the turn's write-ahead flush yields, and shuttle's PCT drops a yielding task below every other, so the timer always fires first (shuttle-random reaches it, rarely)",
        )],
    );

const GOALS: &[Goal] = &[DROPPED_MID_TEARDOWN, FIRST_COMPLETED];

/// `dropped-dispose`, registered in [`super::ALL`].
pub static DROPPED_DISPOSE: Scenario = Scenario::new(
    "dropped-dispose",
    "the first dispose() caller drops its future mid-teardown; the teardown finishes with no further call; a second dispose and the owner's unload follow",
    bodies!(dropped_dispose),
)
.rules(&[Rule::D8, Rule::D1, Rule::D2])
.goals(GOALS)
.bounds(Bounds { dfs: None, ..Bounds::PR })
.targets(&[Fault::M15, Fault::M25]);

/// The body: see the module docs.
pub async fn dropped_dispose<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    h.agent.send(spec("A", 2)).expect("send A");
    // Receiving side of the teardown: the two disposal notifications.
    let disposed = Arc::new(Monitor::<R, (bool, bool)>::new((false, false)));
    let (agent_gone, session_gone) = (disposed.clone(), disposed.clone());
    rig.registry
        .on_disposed(Arc::new(move |_| agent_gone.update(|d| d.0 = true)));
    rig.store
        .on_disposed(Arc::new(move |_| session_gone.update(|d| d.1 = true)));
    h.agent.started(0).await;
    let first = match give_up::<R, _>(h.dispose_as("caller-1")).await {
        Some(()) => First::Completed,
        None => {
            let seen = |f: fn(&LifecycleEvent) -> bool| rig.world.events().iter().any(f);
            match (
                seen(|e| matches!(e, LifecycleEvent::TeardownBegan { .. })),
                seen(|e| matches!(e, LifecycleEvent::TeardownDone { .. })),
            ) {
                (false, _) => First::DroppedBeforeTeardown,
                (true, false) => First::DroppedMidTeardown,
                (true, true) => First::DroppedAfterTeardown,
            }
        }
    };
    // D8: no further call; the teardown finishes by itself.
    disposed
        .wait_until(FINISHES_ALONE, |d| (d.0 && d.1).then_some(()))
        .await;
    futures::future::join(h.dispose_as("caller-2"), owner.unload()).await;
    let left = rig.leftovers(|id| id == "a");
    let own = vec![(
        left.is_empty(),
        Violation::new(
            Rule::D8,
            format!(
                "after a dropped dispose, a second dispose and the owner's unload left {left:?}"
            ),
        ),
    )];
    rig.finish(first, own)
}
