//! `dropped-unload`: the caller of the ACP bridge's `unload` (its quiesce,
//! which disposes every session, then its scope's unload) gives up on it
//! mid-way while a prompt runs; the client's disconnect, a second unload
//! and the provider's unload follow (D8, A1, A6).
//!
//! A timer task races the unload (`rig::give_up`), so every checker drops
//! its future at each of its suspension points inside the session's
//! teardown or the scope's unload (the first poll starts the quiesce), or
//! lets it complete first. Then, with no further call, the body waits in
//! the world journal for the work the dropped call started to finish by
//! itself (D8): the session's teardown, and the scope's unload if it had
//! begun. Only then do the later callers come: they must all resolve, with
//! the one quiesce and the one teardown run once (A6, D1, D2, the world
//! oracle), nothing left registered or live (D8, A1, observed in the
//! registry and the store), and the running prompt answered. Fault M15
//! runs the quiesce and the teardown inside their first caller's future,
//! so dropping it drops them; fault M29 parks the dropped quiesce or scope
//! unload for a later caller. Either way the wait never ends: a D8 stall.

use super::goals::{excused, on, Goal};
use super::rig::{give_up_noting, First, Rig};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::acp::{Bridge, StopReason};
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::oracle::Violation;
use crate::rt::{self, Rt, Wait};
use crate::rules::Rule;

/// The body's wait for the dropped unload's work to finish with no further
/// call: never ending, it breaks D8 (the dropped caller's work wedged).
const FINISHES_ALONE: Wait = Wait::breaking(
    "a dropped unload's quiesce and scope unload finish with no further call",
    Rule::D8,
);

/// A goal of [`DROPPED_UNLOAD`].
pub const DROPPED_MID_TEARDOWN: Goal = on!(
    "dropped-mid-teardown",
    "the unload is dropped while the session's teardown runs",
    |f: &First| *f == First::DroppedMidTeardown,
);

/// A goal of [`DROPPED_UNLOAD`].
pub const UNLOAD_COMPLETED: Goal = excused(
        on!(
            "unload-completed",
            "the unload completes before the timeout fires",
            |f: &First| *f == First::Completed,
        ),
        &[(Checker::ShuttlePct,
            "not reached in runs far past the PR budget at depth 3: the turn's flushes yield, and shuttle's PCT drops a yielding task below every other, so the timer always fires first (shuttle-random reaches it, rarely)",
        )],
    );

const GOALS: &[Goal] = &[DROPPED_MID_TEARDOWN, UNLOAD_COMPLETED];

/// `dropped-unload`, registered in [`super::ALL`].
pub static DROPPED_UNLOAD: Scenario = Scenario::new(
    "dropped-unload",
    "the ACP bridge's unload is dropped by its caller mid-quiesce; a disconnect, a second unload and the provider's unload follow",
    bodies!(dropped_unload),
)
.rules(&[Rule::D8, Rule::A1, Rule::A4, Rule::A6])
.goals(GOALS)
.targets(&[Fault::M15, Fault::M29])
// loom at bound 1 (its threads: `tasks.dropped-unload.loom`) takes
// minutes; the `loom_max` executions the PR tier samples reach both goals
// (a completed unload is an early choice, which loom's depth-first order
// varies last).
.bounds(Bounds {
    dfs: None,
    loom_max: Some(100_000),
    ..Bounds::PR
});

/// Where the dropped unload had got to, read from the world journal.
fn drop_point<R: Rt>(rig: &Rig<R>) -> First {
    let events = rig.world.events();
    let seen = |f: &dyn Fn(&LifecycleEvent) -> bool| events.iter().any(f);
    let began = seen(&|e| matches!(e, LifecycleEvent::TeardownBegan { .. }));
    let done = seen(&|e| matches!(e, LifecycleEvent::TeardownDone { .. }));
    let unloaded =
        seen(&|e| matches!(e, LifecycleEvent::ScopeUnloaded { scope } if scope == "acp"));
    match (began, done, unloaded) {
        (false, _, _) => First::DroppedBeforeTeardown,
        (true, false, _) => First::DroppedMidTeardown,
        (true, true, false) => First::DroppedInScopeUnload,
        (true, true, true) => First::DroppedAfterUnload,
    }
}

/// The body: see the module docs.
pub async fn dropped_unload<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let acp = rig.owner("acp");
    let b = Bridge::new(rig.provider.clone(), acp.clone());
    let sid = b.new_session().await.expect("session/new");
    let agent = rig.registry.get(&sid).expect("registered");
    rig.track(&agent, rig.registry.entries()[0].1);
    let (b2, s2) = (b.clone(), sid.clone());
    let prompting = rt::spawn::<R, _>("session/prompt", async move {
        b2.prompt(&s2, spec("A", 2)).await
    });
    agent.started(0).await;
    let first = match give_up_noting::<R, _, _>(b.unload(), || drop_point(&rig)).await {
        Ok(()) => First::Completed,
        Err(at) => at,
    };
    // D8: no further call; what the dropped unload started finishes by
    // itself (the quiesce, and the scope's unload if it had begun), and
    // the registry and the store then hold nothing of the session.
    let mut left_alone = Vec::new();
    if first != First::Completed {
        b.quiesced(FINISHES_ALONE).await;
        acp.unloaded(FINISHES_ALONE).await;
        left_alone = rig.leftovers(|_| true);
    }
    futures::future::join3(b.disconnect(), b.unload(), rig.provider.unload()).await;
    let answer = prompting.join().await;
    let left = rig.leftovers(|_| true);
    let own = vec![
        (
            left_alone.is_empty(),
            Violation::new(
                Rule::D8,
                format!("a dropped unload's work, finished with no further call, left {left_alone:?}"),
            ),
        ),
        (
            left.is_empty(),
            Violation::new(
                Rule::D8,
                format!("after a dropped unload, a disconnect, an unload and the provider's unload left {left:?}"),
            ),
        ),
        (
            b.quiesce_runs() == 1,
            Violation::new(Rule::A6, format!("quiesce ran {} times", b.quiesce_runs())),
        ),
        (
            matches!(answer, Ok(StopReason::Cancelled | StopReason::EndTurn)),
            Violation::new(
                Rule::A4,
                format!("the prompt cut by the unload answered {answer:?}"),
            ),
        ),
    ];
    rig.finish(first, own)
}
