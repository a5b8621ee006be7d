//! `dropped-unload`: the caller of the ACP bridge's `unload` (its quiesce,
//! which disposes every session, then its scope's unload) gives up on it
//! mid-way while a prompt runs; the client's disconnect, a second unload
//! and the provider's unload follow (D8, A1, A6).
//!
//! A timer task races the unload (`rig::give_up`), so every checker drops
//! its future at each of its suspension points inside the session's
//! teardown (the first poll starts it; once it is over, the scope's unload
//! has nothing left to await), or lets it complete first. The
//! later callers must all resolve, with the one quiesce and the one
//! teardown run once (A6, D1, D2, the world oracle), nothing left
//! registered or live (D8, A1, observed in the registry and the store),
//! and the running prompt answered. Fault M15 runs the quiesce and the
//! teardown inside their first caller's future: dropping it leaves every
//! later caller waiting forever.

use super::goals::{excused, label, Goal};
use super::rig::{give_up, Rig};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::acp::{Bridge, StopReason};
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use lifecycle_spec::Checker;

/// A goal of [`DROPPED_UNLOAD`].
pub const DROPPED_MID_TEARDOWN: Goal = label(
    "dropped-mid-teardown",
    "the unload is dropped while the session's teardown runs",
    "first:dropped-mid-teardown",
);

/// A goal of [`DROPPED_UNLOAD`].
pub const UNLOAD_COMPLETED: Goal = excused(
        label(
            "unload-completed",
            "the unload completes before the timeout fires",
            "first:completed",
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
.targets(&[Fault::M15])
// loom at bound 1 (its threads: `tasks.dropped-unload.without-bystanders`)
// takes minutes; the `loom_max` executions the PR tier samples reach both
// goals.
.bounds(Bounds {
    dfs: None,
    loom_max: Some(20_000),
    ..Bounds::PR
});

/// Where the dropped unload had got to, read from the world journal.
fn drop_point<R: Rt>(rig: &Rig<R>) -> &'static str {
    let events = rig.world.events();
    let seen = |f: &dyn Fn(&LifecycleEvent) -> bool| events.iter().any(f);
    let began = seen(&|e| matches!(e, LifecycleEvent::TeardownBegan { .. }));
    let done = seen(&|e| matches!(e, LifecycleEvent::TeardownDone { .. }));
    let unloaded =
        seen(&|e| matches!(e, LifecycleEvent::ScopeUnloaded { scope } if scope == "acp"));
    match (began, done, unloaded) {
        (false, _, _) => "dropped-before-teardown",
        (true, false, _) => "dropped-mid-teardown",
        (true, true, false) => "dropped-in-scope-unload",
        (true, true, true) => "dropped-after-unload",
    }
}

/// The body: see the module docs.
pub async fn dropped_unload<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let b = Bridge::with_hooks(rig.provider.clone(), rig.owner("acp"), rig.hooks());
    let sid = b.new_session().await.expect("session/new");
    let agent = rig.registry.get(&sid).expect("registered");
    rig.track(&agent, rig.registry.entries()[0].1);
    let (b2, s2) = (b.clone(), sid.clone());
    let prompting = rt::spawn::<R, _>("session/prompt", async move {
        b2.prompt(&s2, spec("A", 2)).await
    });
    agent.started(0).await;
    let first = match give_up::<R, _>(b.unload()).await {
        Some(()) => "completed",
        None => drop_point(&rig),
    };
    futures::future::join3(b.disconnect(), b.unload(), rig.provider.unload()).await;
    let answer = prompting.join().await;
    let left = rig.leftovers(|_| true);
    let own = vec![
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
    rig.finish(format!("first:{first}"), own)
}
