//! `dispose-during-load`: a handle's `dispose()` races a `session/load` of
//! the same session id through the ACP bridge.
//!
//! The load either finds the session still live and is refused `already
//! loaded` (A5), or lands after the old agent left the registry and
//! resumes a new agent under the id, possibly while the old teardown is
//! still finishing its steps 4 and 5. Either way the dispose resolves after
//! its whole teardown (D1), the old teardown never removes the new entry
//! (R2), at most one entry with the id is live at once (R1), and a loaded
//! session serves a prompt to the end.

use super::goals::{excused, on, pred, Goal};
use super::rig::Rig;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::acp::{AcpError, Bridge, StopReason};
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;

/// The load's resume began while the old agent's teardown was still
/// running (after its `teardown-began`, before its `teardown-done`).
fn loaded_inside_teardown(o: &Outcome) -> bool {
    let at = |f: &dyn Fn(&LifecycleEvent) -> bool| o.world.iter().position(f);
    let registered = |e: &LifecycleEvent| match e {
        LifecycleEvent::AgentRegistered { id, serial, .. } if id == "s" => Some(*serial),
        _ => None,
    };
    let Some(old) = o.world.iter().find_map(registered) else {
        return false;
    };
    let began = at(
        &|e| matches!(e, LifecycleEvent::TeardownBegan { id, serial } if id == "s" && *serial == old),
    );
    let done = at(
        &|e| matches!(e, LifecycleEvent::TeardownDone { id, serial } if id == "s" && *serial == old),
    );
    // The creation of `old` is the first attempt with the id; the load's
    // resume is any later one.
    let first = o.world.iter().find_map(|e| match e {
        LifecycleEvent::CreateBegan { id, attempt } if id == "s" => Some(*attempt),
        _ => None,
    });
    let fresh = at(
        &|e| matches!(e, LifecycleEvent::CreateBegan { id, attempt } if id == "s" && Some(*attempt) != first),
    );
    matches!((began, fresh, done), (Some(b), Some(f), Some(d)) if b < f && f < d)
}

/// shuttle's schedulers, each measured over a run far longer than the PR tier's.
const SHUTTLE_LATE_LOAD: &[(Checker, &str)] = &[
    (Checker::ShuttleRandom,
        "not reached in runs far past the PR budget: the load's task must lose every coin flip until the dispose has passed its step 3; it always finds the session live",
    ),
    (Checker::ShuttlePct,
        "not reached in runs far past the PR budget at depth 3: loads land after the dispose, never inside its teardown",
    ),
];

/// shuttle-random only: shuttle-pct reaches it (rarely).
const SHUTTLE_RANDOM_LATE_LOAD: &[(Checker, &str)] = &[SHUTTLE_LATE_LOAD[0]];

/// A goal of [`DISPOSE_DURING_LOAD`].
pub const LOAD_REFUSED_WHILE_LIVE: Goal = on!(
    "load-refused-while-live",
    "the load finds the old session still registered and is refused `already loaded`",
    |f: &Load| *f == Load::AlreadyLoaded,
);

/// A goal of [`DISPOSE_DURING_LOAD`].
pub const LOAD_AFTER_DISPOSE: Goal = excused(
    on!(
        "load-after-dispose",
        "the load lands once the old agent left the registry and resumes a new one",
        |f: &Load| *f == Load::Resumed,
    ),
    SHUTTLE_RANDOM_LATE_LOAD,
);

/// A goal of [`DISPOSE_DURING_LOAD`].
pub const LOAD_INSIDE_TEARDOWN: Goal = excused(
    pred(
        "load-inside-teardown",
        "the load's resume begins between the old teardown's first and last steps",
        loaded_inside_teardown,
    ),
    SHUTTLE_LATE_LOAD,
);

const GOALS: &[Goal] = &[
    LOAD_REFUSED_WHILE_LIVE,
    LOAD_AFTER_DISPOSE,
    LOAD_INSIDE_TEARDOWN,
];

/// `dispose-during-load`, registered in [`super::ALL`].
pub static DISPOSE_DURING_LOAD: Scenario = Scenario::new(
    "dispose-during-load",
    "a handle's dispose races a session/load of the same session id",
    bodies!(dispose_during_load),
)
.rules(&[Rule::D1, Rule::R1, Rule::R2, Rule::A5])
.goals(GOALS)
// loom at bound 1 is quick; bound 2 runs past the PR gate.
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
});

/// The body: see the module docs.
pub async fn dispose_during_load<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let setup = rig.owner("setup");
    let old = rig.provider.create("s", &setup).await.expect("create s");
    rig.track(&old.agent, old.serial());
    let first = old.agent.send(spec("A", 1)).expect("send A");
    old.agent.outcome(first).await;
    let b = Bridge::new(rig.provider.clone(), rig.owner("acp"));
    // The load runs in a task of its own, as the server runs each request:
    // joined futures of one task would interleave only at their awaits.
    let b2 = b.clone();
    let load = rt::spawn::<R, _>("session/load", async move { b2.load_session("s").await });
    old.dispose().await;
    let loaded = load.join().await;
    let mut own = Vec::new();
    let said = match &loaded {
        Ok(id) => {
            let served = b.prompt(id, spec("B", 1)).await;
            own.push((
                served == Ok(StopReason::EndTurn),
                Violation::new(
                    Rule::A5,
                    format!("the session loaded while its old agent was disposed answered its prompt {served:?}"),
                ),
            ));
            if let Some(agent) = rig.registry.get("s") {
                let serial = rig
                    .registry
                    .entries()
                    .into_iter()
                    .find(|(i, _)| i == "s")
                    .map_or(0, |(_, s)| s);
                rig.track(&agent, serial);
            }
            Load::Resumed
        }
        Err(AcpError::AlreadyLoaded(_)) => Load::AlreadyLoaded,
        Err(e) => {
            own.push((
                false,
                Violation::new(
                    Rule::A5,
                    format!("a load racing a dispose of the same id failed otherwise: {e}"),
                ),
            ));
            Load::Failed(e.to_string())
        }
    };
    // R1/R2, seen in the registry: after the old teardown, only the loaded
    // agent (if any) holds the id, and never the old serial.
    let holders: Vec<u64> = rig
        .registry
        .entries()
        .into_iter()
        .filter(|(i, _)| i == "s")
        .map(|(_, s)| s)
        .collect();
    let want = usize::from(loaded.is_ok());
    own.push((
        holders.len() == want && !holders.contains(&old.serial()),
        Violation::new(
            if holders.len() > want {
                Rule::R1
            } else {
                Rule::R2
            },
            format!(
                "after the dispose, registry entries with id s: {holders:?} (the load {})",
                if loaded.is_ok() {
                    "succeeded"
                } else {
                    "was refused"
                }
            ),
        ),
    ));
    b.unload().await;
    setup.unload().await;
    let left = rig.leftovers(|id| id == "s");
    own.push((
        left.is_empty(),
        Violation::new(
            Rule::D1,
            format!("after every unload, sessions remain: {left:?}"),
        ),
    ));
    rig.finish(said, own)
}

/// How the load ended. Shown as `load:resumed`, `load:already-loaded`,
/// or `load:` and the error.
#[derive(PartialEq, Eq, Debug)]
enum Load {
    Resumed,
    AlreadyLoaded,
    Failed(String),
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::Resumed => write!(f, "load:resumed"),
            Load::AlreadyLoaded => write!(f, "load:already-loaded"),
            Load::Failed(e) => write!(f, "load:{e}"),
        }
    }
}
