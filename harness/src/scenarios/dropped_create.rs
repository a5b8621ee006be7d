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

use super::goals::{on, Goal};
use super::rig::{give_up, Rig};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::Outcome;
use crate::oracle::Violation;
use crate::provider::{AgentHandle, CreateError};
use crate::rt::Rt;
use crate::rules::Rule;
use crate::scope::Scope;
use futures::future::Either;

/// A goal of [`DROPPED_CREATE`].
pub const DROPPED_DURING_SETUP: Goal = on!(
    "dropped-during-setup",
    "the timeout fires while the create awaits setup: its future is dropped",
    |f: &Said| f.create == Ended::Dropped,
);

/// A goal of [`DROPPED_CREATE`].
pub const CREATED_FIRST: Goal = on!(
    "created-first",
    "the create completes before the timeout fires",
    |f: &Said| f.create == Ended::Completed,
);

/// A goal of [`DROPPED_CREATE`].
pub const RESUME_DROPPED: Goal = on!(
    "resume-dropped",
    "the timeout fires while the resume awaits setup: its future is dropped",
    |f: &Said| f.resume == Ended::Dropped,
);

/// A goal of [`DROPPED_CREATE`].
pub const RESUME_COMPLETED: Goal = on!(
    "resume-completed",
    "the resume completes before the timeout fires",
    |f: &Said| f.resume == Ended::Completed,
);

const GOALS: &[Goal] = &[
    DROPPED_DURING_SETUP,
    CREATED_FIRST,
    RESUME_DROPPED,
    RESUME_COMPLETED,
];

/// `dropped-create`, registered in [`super::ALL`].
pub static DROPPED_CREATE: Scenario = Scenario::new(
    "dropped-create",
    "a create() and then a resume() are dropped by their callers' timeouts during setup; a second call of the same id follows each",
    bodies!(dropped_create),
)
.rules(&[Rule::D8, Rule::R1, Rule::R3])
.goals(GOALS)
.bounds(Bounds { dfs: None, ..Bounds::PR });

/// How the first call of a phase ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ended {
    Completed,
    Failed,
    Dropped,
}

impl Ended {
    fn name(self) -> &'static str {
        match self {
            Ended::Completed => "completed",
            Ended::Failed => "failed",
            Ended::Dropped => "dropped",
        }
    }
}

/// What an execution did: how each phase's first call ended, and whether
/// the second create succeeded. Shown as
/// `first:dropped:second-created:resume-completed`.
struct Said {
    create: Ended,
    second_created: bool,
    resume: Ended,
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = match self.create {
            Ended::Completed => "created",
            other => other.name(),
        };
        let second = if self.second_created {
            "second-created"
        } else {
            "second-refused"
        };
        write!(f, "first:{first}:{second}:resume-{}", self.resume.name())
    }
}

/// The call a phase drops, then makes again.
#[derive(Clone, Copy)]
enum Call {
    Create,
    Resume,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Create => "create",
            Call::Resume => "resume",
        }
    }

    /// The call, of id `a` for `owner`.
    fn run<'a, R: Rt>(
        self,
        rig: &'a Rig<R>,
        owner: &'a Scope<R>,
    ) -> impl std::future::Future<Output = Result<AgentHandle<R>, CreateError>> + 'a {
        match self {
            Call::Create => Either::Left(rig.provider.create("a", owner)),
            Call::Resume => Either::Right(rig.provider.resume("a", owner)),
        }
    }
}

/// The body: see the module docs.
pub async fn dropped_create<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let mut own = Vec::new();
    let (create, second_created) = phase(&rig, Call::Create, ["owner", "owner-2"], &mut own).await;
    let (resume, _) = phase(&rig, Call::Resume, ["owner-3", "owner-4"], &mut own).await;
    let said = Said {
        create,
        second_created,
        resume,
    };
    rig.finish(said, own)
}

/// One phase: a caller gives up on `call` of `a` during setup, a second
/// caller makes the same call, both owners unload. Checked from the
/// registry and the store (D8): the dropped call published nothing, the
/// id is reusable unless the first call completed and holds it, and the
/// unloads leave nothing. Returns how the first call ended and whether the
/// second succeeded.
async fn phase<R: Rt>(
    rig: &Rig<R>,
    call: Call,
    owners: [&str; 2],
    own: &mut Vec<(bool, Violation)>,
) -> (Ended, bool) {
    let name = call.name();
    let owner = rig.owner(owners[0]);
    let first = match give_up::<R, _>(call.run(rig, &owner)).await {
        Some(Ok(h)) => {
            rig.track(&h.agent, h.serial());
            Ended::Completed
        }
        Some(Err(_)) => Ended::Failed,
        None => Ended::Dropped,
    };
    if first == Ended::Dropped {
        let left = rig.leftovers(|id| id == "a");
        own.push((
            left.is_empty(),
            Violation::new(
                Rule::D8,
                format!("a {name} dropped during setup left {left:?} published"),
            ),
        ));
    }
    let other = rig.owner(owners[1]);
    let again = call.run(rig, &other).await;
    if let Ok(h) = &again {
        rig.track(&h.agent, h.serial());
    }
    own.push((
        again.is_ok() || first == Ended::Completed,
        Violation::new(
            Rule::D8,
            format!(
                "after a dropped {name}, a second {name} of the same id failed: {:?}",
                again.as_ref().err()
            ),
        ),
    ));
    futures::future::join(owner.unload(), other.unload()).await;
    let left = rig.leftovers(|id| id == "a");
    own.push((
        left.is_empty(),
        Violation::new(
            Rule::D8,
            format!("after the {name} callers unloaded, {left:?} of a is left"),
        ),
    ));
    (first, again.is_ok())
}
