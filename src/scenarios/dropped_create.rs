//! `dropped-create`: a caller gives up on `create` (a timeout, a `select`)
//! while it awaits setup, and a second caller creates the same id (D8, R1).
//!
//! A timer task fires while the create future is suspended; the checkers
//! explore where it lands, so the create is dropped at each of its
//! suspension points, or completes first. D8's second clause, observed from
//! the registry and the store (never from the create's own report): a
//! dropped create published nothing (no registry entry, no live session
//! for the id), or, if it did publish, what it published is disposed by
//! its owner's unload. Either way a second create of the same id then
//! succeeds (the id was not leaked), and the owner's unload leaves nothing.

use super::goals::{label, Goal};
use super::rig::Rig;
use super::scenario::{bodies, Ctx, Scenario};
use super::Outcome;
use crate::oracle::Violation;
use crate::rt::{self, Monitor, Rt};
use futures::future::Either;
use std::sync::Arc;

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
];

/// `dropped-create`, registered in [`super::ALL`].
pub static DROPPED_CREATE: Scenario = Scenario::new(
    "dropped-create",
    "a create() is dropped by its caller's timeout during setup; a second create of the same id follows",
    bodies!(dropped_create),
)
.rules(&["D8", "R1", "R3"])
.goals(GOALS);

/// The body: see the module docs.
pub async fn dropped_create<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let owner = rig.owner("owner");
    let fired = Arc::new(Monitor::<R, bool>::new(false));
    let f2 = fired.clone();
    let timer = rt::spawn::<R, ()>("timeout", async move { f2.update(|f| *f = true) });
    let first = {
        let create = std::pin::pin!(rig.provider.create("a", &owner));
        let timeout = std::pin::pin!(fired.wait_until("timeout", |f| f.then_some(())));
        match futures::future::select(create, timeout).await {
            Either::Left((Ok(h), _)) => {
                rig.track(&h.agent, h.serial());
                "created"
            }
            Either::Left((Err(_), _)) => "failed",
            // The create future is dropped at the end of this block.
            Either::Right(_) => "dropped",
        }
    };
    timer.join().await;
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
    rig.finish(format!("first:{first}:{second}"), own)
}
