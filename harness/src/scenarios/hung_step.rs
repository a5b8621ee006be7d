//! `hung-step`: a step that ends only when signalled (a model request that
//! never answers, `sleep 100`), while a user's cancel and the owner's
//! dispose race it (C10).
//!
//! The step receives the turn's cancellation signal and settles when it
//! fires; nothing else ends it. Whichever of the cancel and the dispose
//! requests the token first, the turn must end (`aborted` or `disposed`),
//! the prompt must settle and the dispose must return. The racers start
//! once the step has begun (a stop before it is cancel-mid-turn's window).
//! Fault M19 hands the step a signal that never
//! fires: the turn, the prompt and the dispose then wait forever, which
//! every checker reports as a deadlock on the step's signal (C10).

use super::goals::{on, Goal};
use super::rig::Rig;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::faults::Fault;
use crate::journal::{Cause, EndReason};
use crate::oracle::Violation;
use crate::rt::{self, BoxFuture, Monitor, Rt};
use crate::rules::Rule;
use std::sync::Arc;

/// A goal of [`HUNG_STEP`].
pub const ABORTED_MID_STEP: Goal = on!(
    "aborted-mid-step",
    "the cancel reaches the hung step and the turn ends aborted",
    |f: &Said| f.0 == Some(EndReason::Aborted),
);

/// A goal of [`HUNG_STEP`].
pub const DISPOSED_MID_STEP: Goal = on!(
    "disposed-mid-step",
    "the dispose reaches the hung step and the turn ends disposed",
    |f: &Said| f.0 == Some(EndReason::Disposed),
);

/// How prompt A's turn ended (its step had begun). Shown as
/// `A:Aborted:step-began`.
struct Said(Option<EndReason>);

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(e) => write!(f, "A:{e:?}:step-began"),
            None => write!(f, "A:none:step-began"),
        }
    }
}

const GOALS: &[Goal] = &[ABORTED_MID_STEP, DISPOSED_MID_STEP];

/// `hung-step`, registered in [`super::ALL`].
pub static HUNG_STEP: Scenario = Scenario::new(
    "hung-step",
    "a step that ends only when signalled; a user's cancel and the owner's dispose race it",
    bodies!(hung_step),
)
.rules(&[Rule::C10, Rule::C3])
.goals(GOALS)
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    loom_max: Some(20_000),
})
.targets(&[Fault::M19]);

/// Steps that wait for the turn's signal and nothing else.
struct HungRunner<R: Rt> {
    began: Arc<Monitor<R, bool>>,
}

impl<R: Rt> StepRunner for HungRunner<R> {
    fn run_step(
        &self,
        _agent: &str,
        _prompt: &PromptSpec,
        _step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let began = self.began.clone();
        Box::pin(async move {
            began.update(|b| *b = true);
            signal.fired().await;
            Some("stopped by the signal".to_string())
        })
    }
}

/// The body: see the module docs.
pub async fn hung_step<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let began = Arc::new(Monitor::<R, bool>::new(false));
    rig.provider.set_runner(Arc::new(HungRunner {
        began: began.clone(),
    }));
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    let p = h.agent.send(spec("A", 2)).expect("send A");
    began
        .wait_until("hung step began", |b| b.then_some(()))
        .await;
    let agent = h.agent.clone();
    let user = rt::spawn::<R, ()>("user-cancel", async move {
        agent.cancel(Cause::User);
    });
    let handle = h.clone();
    let disposer = rt::spawn::<R, ()>("dispose", async move { handle.dispose().await });
    let (end, _) = h.agent.settled(p).await;
    user.join().await;
    disposer.join().await;
    let own = vec![(
        matches!(end, Some(EndReason::Aborted | EndReason::Disposed)),
        Violation::new(
            Rule::C10,
            format!("the hung step's turn ended {end:?}, not aborted or disposed"),
        ),
    )];
    rig.finish(Said(end), own)
}
