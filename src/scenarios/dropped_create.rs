//! `dropped-create`: a caller gives up on `create` (a timeout, a `select`)
//! while it awaits setup, and a second caller creates the same id (D8, R1).
//! Then the same for `resume`: once both owners unloaded, a caller gives
//! up on resuming the session, and a second resume follows.
//!
//! A timer task fires while the create future is suspended; the checkers
//! explore where it lands, so the create is dropped at each of its
//! suspension points, or completes first. D8's second clause, observed from
//! the registry and the store (never from the create's own report): a
//! dropped create published nothing (no registry entry, no live session
//! for the id), or, if it did publish, what it published is disposed by
//! its owner's unload. Either way a second create of the same id then
//! succeeds (the id was not leaked), and the owner's unload leaves nothing.
//! The resume phase checks the same of `resume` (it recovers the log, then
//! builds the agent exactly as `create` does).

use super::goals::{label, Goal};
use super::rig::{give_up, Rig};
use super::scenario::{bodies, Ctx, Scenario};
use super::Outcome;
use crate::oracle::Violation;
use crate::rt::Rt;

const GOALS: &[Goal] = &[
    label(
        "dropped-during-setup",
        "the timeout fires while the create awaits setup: its future is dropped",
        "first:dropped",
    ),
    label(
        "created-first",
        "the create completes before the timeout fires",
        "first:created",
    ),
    label(
        "resume-dropped",
        "the timeout fires while the resume awaits setup: its future is dropped",
        "resume-dropped",
    ),
    label(
        "resume-completed",
        "the resume completes before the timeout fires",
        "resume-completed",
    ),
];

/// `dropped-create`, registered in [`super::ALL`].
pub static DROPPED_CREATE: Scenario = Scenario::new(
    "dropped-create",
    "a create() and then a resume() are dropped by their callers' timeouts during setup; a second call of the same id follows each",
    bodies!(dropped_create),
)
.rules(&["D8", "R1", "R3"])
.goals(GOALS);

/// The body: see the module docs.
pub async fn dropped_create<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let owner = rig.owner("owner");
    let first = match give_up::<R, _>(rig.provider.create("a", &owner)).await {
        Some(Ok(h)) => {
            rig.track(&h.agent, h.serial());
            "created"
        }
        Some(Err(_)) => "failed",
        None => "dropped",
    };
    let mut own = Vec::new();
    if first == "dropped" {
        // Observed in the registry and the store: nothing of `a` is live.
        let left = rig.leftovers(|id| id == "a");
        own.push((
            left.is_empty(),
            Violation::new(
                "D8",
                format!("a create dropped during setup left {left:?} published"),
            ),
        ));
    }
    let other = rig.owner("owner-2");
    let again = rig.provider.create("a", &other).await;
    let second = match &again {
        Ok(h) => {
            rig.track(&h.agent, h.serial());
            "second-created"
        }
        Err(_) => "second-refused",
    };
    // The id is reusable unless the first create published and still holds it.
    own.push((
        again.is_ok() || first == "created",
        Violation::new(
            "D8",
            format!(
                "after a dropped create, a second create of the same id failed: {:?}",
                again.as_ref().err()
            ),
        ),
    ));
    futures::future::join(owner.unload(), other.unload()).await;
    let left = rig.leftovers(|id| id == "a");
    own.push((
        left.is_empty(),
        Violation::new(
            "D8",
            format!("after both owners unloaded, {left:?} of a is left"),
        ),
    ));
    let resumed = resume_phase(&rig, &mut own).await;
    rig.finish(format!("first:{first}:{second}:resume-{resumed}"), own)
}

/// A resume dropped by its caller, then a second resume of the same id;
/// checked like the create (D8).
async fn resume_phase<R: Rt>(rig: &Rig<R>, own: &mut Vec<(bool, Violation)>) -> &'static str {
    let owner = rig.owner("owner-3");
    let first = match give_up::<R, _>(rig.provider.resume("a", &owner)).await {
        Some(Ok(h)) => {
            rig.track(&h.agent, h.serial());
            "completed"
        }
        Some(Err(_)) => "failed",
        None => "dropped",
    };
    if first == "dropped" {
        let left = rig.leftovers(|id| id == "a");
        own.push((
            left.is_empty(),
            Violation::new(
                "D8",
                format!("a resume dropped during setup left {left:?} published"),
            ),
        ));
    }
    let other = rig.owner("owner-4");
    let again = rig.provider.resume("a", &other).await;
    if let Ok(h) = &again {
        rig.track(&h.agent, h.serial());
    }
    own.push((
        again.is_ok() || first == "completed",
        Violation::new(
            "D8",
            format!(
                "after a dropped resume, a second resume of the same id failed: {:?}",
                again.as_ref().err()
            ),
        ),
    ));
    futures::future::join(owner.unload(), other.unload()).await;
    let left = rig.leftovers(|id| id == "a");
    own.push((
        left.is_empty(),
        Violation::new(
            "D8",
            format!("after the resumers unloaded, {left:?} of a is left"),
        ),
    ));
    first
}
