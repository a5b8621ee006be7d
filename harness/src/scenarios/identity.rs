//! Identity scenarios: `same-id-create-race`, `create-during-owner-unload`,
//! `id-reuse-after-detach`.

use super::fate::{FromJournal, PromptFate};
use super::goals::*;
use super::rig::Rig;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::agent::core::Status;
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::oracle::Violation;
use crate::provider::CreateError;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use std::sync::Arc;

/// A goal of [`SAME_ID_CREATE_RACE`].
pub const LOSER_REFUSED_AT_ENTER: Goal = pred(
    "loser-refused-at-enter",
    "a losing create passed setup with the winner and is refused by enter's recheck",
    refused_at_enter,
);

/// A goal of [`SAME_ID_CREATE_RACE`].
pub const LOSER_REFUSED_AT_PREPARE: Goal = pred(
    "loser-refused-at-prepare",
    "a losing create is refused before setup",
    refused_at_prepare,
);

const SAME_ID_CREATE_RACE_GOALS: &[Goal] = &[LOSER_REFUSED_AT_ENTER, LOSER_REFUSED_AT_PREPARE];

/// `same-id-create-race`, registered in [`super::ALL`].
pub static SAME_ID_CREATE_RACE: Scenario = Scenario::new(
    "same-id-create-race",
    "three concurrent creates with one id",
    bodies!(same_id_create_race),
)
.rules(&[Rule::R1])
.goals(SAME_ID_CREATE_RACE_GOALS)
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
})
.targets(&[Fault::M9]);

/// `same-id-create-race`: three concurrent creates of one id; exactly one
/// publishes, the losers fail `already exists` and leave nothing (R1).
pub async fn same_id_create_race<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    // One creator is a task of its own; two are joined futures of the main
    // task (they interleave at their awaits). With a fault that lets all
    // three publish, that is 5 threads under loom, its limit.
    // At width n: one spawned creator and n - 1 joined ones.
    let n = super::width();
    let (p, o) = (rig.provider.clone(), owner.clone());
    let spawned = rt::spawn::<R, _>("create-1", async move { p.create("x", &o).await });
    let joined = futures::future::join_all((1..n).map(|_| rig.provider.create("x", &owner))).await;
    let mut results = vec![spawned.join().await];
    results.extend(joined);
    let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    for w in &winners {
        rig.track(&w.agent, w.serial());
    }
    let losers_ok = results.iter().filter_map(|r| r.as_ref().err()).all(|e| {
        matches!(e, CreateError::AlreadyExists(_)) && e.to_string().contains("already exists")
    });
    let registered = rig.registry.entries().len();
    let sessions = rig.store.sessions().len();
    let own = vec![
        (
            winners.len() == 1,
            Violation::new(
                Rule::R1,
                format!("{} of {n} same-id creates published", winners.len()),
            ),
        ),
        (
            losers_ok,
            Violation::new(Rule::R1, "a loser did not fail with `already exists`"),
        ),
        (
            registered == 1 && sessions == 1,
            Violation::new(
                Rule::R1,
                format!("{registered} agents / {sessions} sessions with id x after the race"),
            ),
        ),
    ];
    owner.unload().await;
    rig.finish(Winners(winners.len()), own)
}

/// A goal of [`CREATE_DURING_OWNER_UNLOAD`].
pub const UNLOAD_BEFORE_PUBLICATION: Goal = on!(
    "unload-before-publication",
    "the owner unloads before the creation publishes: refused",
    |f: &Creation| *f == Creation::Refused,
);

/// A goal of [`CREATE_DURING_OWNER_UNLOAD`].
pub const UNLOAD_AFTER_PUBLICATION: Goal = on!(
    "unload-after-publication",
    "the owner unloads after the creation published: created, then disposed",
    |f: &Creation| *f == Creation::CreatedThenDisposed,
);

const CREATE_DURING_OWNER_UNLOAD_GOALS: &[Goal] =
    &[UNLOAD_BEFORE_PUBLICATION, UNLOAD_AFTER_PUBLICATION];

/// `create-during-owner-unload`, registered in [`super::ALL`].
pub static CREATE_DURING_OWNER_UNLOAD: Scenario = Scenario::new(
    "create-during-owner-unload",
    "the owner unloads while a creation awaits setup",
    bodies!(create_during_owner_unload),
)
.rules(&[Rule::R3])
.goals(CREATE_DURING_OWNER_UNLOAD_GOALS)
.targets(&[Fault::M24])
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
});

/// `create-during-owner-unload`: the owner unloads while a creation awaits
/// setup. The creation either fails and publishes nothing, or completes and
/// is disposed by the unload; either way the id is free afterwards (R3).
pub async fn create_during_owner_unload<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    let (p, o) = (rig.provider.clone(), owner.clone());
    let creating = rt::spawn::<R, _>("create", async move { p.create("x", &o).await });
    R::yield_now().await;
    owner.unload().await;
    let result = creating.join().await;
    if let Ok(h) = &result {
        rig.track(&h.agent, h.serial());
    }
    let left = rig.registry.entries().len() + rig.store.sessions().len();
    // R3, observed: no session of x is entered once the owner unloads.
    let entered_after =
        crate::oracle_world::entered_after_unloading(&rig.world.events(), "owner", "x");
    let other = rig.owner("owner-2");
    let again = rig.provider.create("x", &other).await;
    let reusable = again.is_ok();
    if let Ok(h) = &again {
        rig.track(&h.agent, h.serial());
    }
    let own = vec![
        (
            !entered_after,
            Violation::new(
                Rule::R3,
                "a session of x was entered after its owner began unloading",
            ),
        ),
        (
            left == 0,
            Violation::new(
                Rule::R3,
                format!("{left} registry entries/sessions of x left after the owner unloaded"),
            ),
        ),
        (
            reusable,
            Violation::new(
                Rule::R3,
                format!("id x not released: {:?}", again.as_ref().err()),
            ),
        ),
        (
            result
                .as_ref()
                .map_or(true, |h| h.agent.status() == Status::Disposed),
            Violation::new(Rule::R3, "an agent whose owner unloaded is still running"),
        ),
    ];
    other.unload().await;
    let said = match &result {
        Ok(_) => Creation::CreatedThenDisposed,
        Err(CreateError::OwnerUnloaded(_)) => Creation::Refused,
        Err(e) => Creation::Failed(e.to_string()),
    };
    rig.finish(said, own)
}

/// A goal of [`ID_REUSE_AFTER_DETACH`].
pub const REUSE_DURING_TEARDOWN: Goal = excused(
    pred(
        "reuse-during-teardown",
        "B's session with the reused id is entered before A's teardown finished",
        reuse_during_teardown,
    ),
    &[(Checker::Loom,
        "not reached in the whole space at loom's bound 1: B's create must overtake two of A's teardown steps",
    )],
);

const ID_REUSE_AFTER_DETACH_GOALS: &[Goal] = &[REUSE_DURING_TEARDOWN];

/// `id-reuse-after-detach`, registered in [`super::ALL`].
pub static ID_REUSE_AFTER_DETACH: Scenario = Scenario::new(
    "id-reuse-after-detach",
    "a new agent takes the id of one being disposed; the stale detach must not remove it",
    bodies!(id_reuse_after_detach),
)
.rules(&[Rule::R2])
.goals(ID_REUSE_AFTER_DETACH_GOALS)
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
});

/// `id-reuse-after-detach`: while agent A is being disposed, a new agent B
/// takes A's id the moment A's registry entry detaches; A's later teardown
/// steps do not remove B (R2).
pub async fn id_reuse_after_detach<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    let a = rig.provider.create("x", &owner).await.expect("create A");
    rig.track(&a.agent, a.serial());
    a.agent.send(spec("A", 1)).expect("send A");
    let a2 = a.clone();
    let disposing = rt::spawn::<R, ()>("dispose-A", async move { a2.dispose().await });
    rig.registry.until_absent("x", a.serial()).await;
    let b = rig.provider.create("x", &owner).await;
    disposing.join().await;
    let mut own = vec![(
        b.is_ok(),
        Violation::new(
            Rule::R2,
            format!(
                "id x not reusable once A's entry detached: {:?}",
                b.as_ref().err()
            ),
        ),
    )];
    let mut said = B::NotCreated;
    if let Ok(b) = &b {
        rig.track(&b.agent, b.serial());
        let b_entry = rig
            .registry
            .entries()
            .contains(&("x".to_string(), b.serial()));
        let b_session = rig
            .store
            .sessions()
            .contains(&("x".to_string(), b.serial()));
        own.push((
            b_entry,
            Violation::new(Rule::R2, "A's stale detach removed B's registry entry"),
        ));
        own.push((
            b_session,
            Violation::new(Rule::R2, "A's stale detach removed B's session"),
        ));
        let p = b.agent.send(spec("B", 1)).expect("send B");
        b.agent.when_idle().await;
        said = B::Prompt(PromptFate::of(&b.agent.journal(), p));
        b.dispose().await;
    }
    let a_done_before_b =
        rig.world.events().iter().any(
            |e| matches!(e, LifecycleEvent::TeardownDone { serial, .. } if *serial == a.serial()),
        );
    own.push((
        a_done_before_b,
        Violation::new(Rule::D1, "A's teardown never finished"),
    ));
    owner.unload().await;
    rig.finish(said, own)
}

/// Create attempts B makes while A's teardown runs, a yield apart, before
/// it waits for the teardown to finish and tries once more.
const RETRIES: u32 = 3;

/// A goal of [`SAME_ID_VS_TEARDOWN`].
pub const CREATE_BEFORE_STEP_1: Goal = between!(
    "create-before-step-1",
    "a create of x ends before A's teardown stopped its loop",
    0
);

/// A goal of [`SAME_ID_VS_TEARDOWN`].
pub const CREATE_BETWEEN_1_2: Goal = between!(
    "create-between-1-2",
    "a create of x ends between A's teardown steps 1 and 2",
    1
);

/// A goal of [`SAME_ID_VS_TEARDOWN`].
pub const CREATE_BETWEEN_2_3: Goal = between!(
    "create-between-2-3",
    "a create of x ends between A's teardown steps 2 and 3",
    2
);

/// A goal of [`SAME_ID_VS_TEARDOWN`].
pub const CREATE_BETWEEN_3_4: Goal = excused(
    between!(
        "create-between-3-4",
        "a create of x ends between A's teardown steps 3 and 4",
        3
    ),
    LOOM_PB1_LATE_STEPS,
);

/// A goal of [`SAME_ID_VS_TEARDOWN`].
pub const CREATE_BETWEEN_4_5: Goal = excused(
    between!(
        "create-between-4-5",
        "a create of x ends between A's teardown steps 4 and 5",
        4
    ),
    LOOM_PB1_LATE_STEPS,
);

/// A goal of [`SAME_ID_VS_TEARDOWN`].
pub const CREATE_AFTER_STEP_5: Goal = excused(
    between!(
        "create-after-step-5",
        "a create of x ends after step 5, before A's teardown is done",
        5
    ),
    LOOM_PB1_LATE_STEPS,
);

const SAME_ID_VS_TEARDOWN_GOALS: &[Goal] = &[
    CREATE_BEFORE_STEP_1,
    CREATE_BETWEEN_1_2,
    CREATE_BETWEEN_2_3,
    CREATE_BETWEEN_3_4,
    CREATE_BETWEEN_4_5,
    CREATE_AFTER_STEP_5,
];

/// `same-id-vs-teardown`, registered in [`super::ALL`].
pub static SAME_ID_VS_TEARDOWN: Scenario = Scenario::new(
    "same-id-vs-teardown",
    "a same-id create retrying on `already exists` races every step of a teardown; then a repeated detach",
    bodies!(same_id_vs_teardown),
)
.rules(&[Rule::R1, Rule::R2])
.goals(SAME_ID_VS_TEARDOWN_GOALS)
.targets(&[Fault::M22])
// loom at bound 2 and above runs past the PR gate (at bound 3 it takes
// minutes).
.bounds(Bounds { dfs: None, loom_cap: 1, ..Bounds::PR });

/// `same-id-vs-teardown`: A (id x) is disposed while B creates x, retrying
/// on `already exists` up to `RETRIES` times and once more after A's
/// teardown finished. Never two live agents or sessions with the id (R1,
/// from the registry's and store's own counts under their locks); the id is
/// reusable once A's teardown finished (R2); a repeated detach of A's
/// `(x, serial)` through the registry leaves B's entry in place and tells
/// no `agent/disposed` listener anything (R2, observed as the registry's
/// entries before and after, and as what a listener heard).
pub async fn same_id_vs_teardown<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    // What `agent/disposed` listeners hear, from their side (a std mutex:
    // no scheduling point of its own).
    let heard = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let ear = heard.clone();
    rig.registry.on_disposed(Arc::new(move |id: &str| {
        ear.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id.to_string())
    }));
    let heard = move || heard.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let owner = rig.owner("owner");
    let a = rig.provider.create("x", &owner).await.expect("create A");
    rig.track(&a.agent, a.serial());
    let a2 = a.clone();
    let disposing = rt::spawn::<R, ()>("dispose-A", async move { a2.dispose().await });
    let mut own = Vec::new();
    let mut b = None;
    let mut tries = 0;
    while tries < RETRIES && b.is_none() {
        tries += 1;
        match rig.provider.create("x", &owner).await {
            Ok(h) => b = Some(h),
            Err(CreateError::AlreadyExists(_)) => R::yield_now().await,
            Err(e) => own.push((
                false,
                Violation::new(Rule::R2, format!("B's create failed: {e}")),
            )),
        }
    }
    disposing.join().await;
    let late = b.is_none();
    if late {
        b = rig.provider.create("x", &owner).await.ok();
    }
    own.push((
        b.is_some(),
        Violation::new(Rule::R2, "id x not reusable after A's teardown finished"),
    ));
    let mut said = B::NotCreated;
    if let Some(b) = &b {
        rig.track(&b.agent, b.serial());
        // A repeated (stale) detach of A's entry, through the public API.
        let before = rig.registry.entries();
        let told_before = heard();
        let _ = rig.registry.detach("x", a.serial());
        let after = rig.registry.entries();
        let told_after = heard();
        own.push((
            told_before == told_after,
            Violation::new(
                Rule::R2,
                format!(
                    "a repeated detach of x#{} told the agent/disposed listeners {told_before:?} -> {told_after:?}, while B (x#{}) is live",
                    a.serial(),
                    b.serial()
                ),
            ),
        ));
        own.push((
            before == after,
            Violation::new(
                Rule::R2,
                format!(
                    "a repeated detach of x#{} changed the registry: {before:?} -> {after:?}",
                    a.serial()
                ),
            ),
        ));
        said = match late {
            true => B::AfterTeardown,
            false => B::Try(tries),
        };
        b.dispose().await;
    }
    owner.unload().await;
    rig.finish(said, own)
}

/// How many of the same-id creates published. Shown as `winners:1`.
struct Winners(usize);

impl std::fmt::Display for Winners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "winners:{}", self.0)
    }
}

/// How the creation racing its owner's unload ended. Shown as
/// `created-then-disposed`, `refused` or `error:` and the error.
#[derive(PartialEq, Eq, Debug)]
enum Creation {
    CreatedThenDisposed,
    Refused,
    Failed(String),
}

impl std::fmt::Display for Creation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Creation::CreatedThenDisposed => write!(f, "created-then-disposed"),
            Creation::Refused => write!(f, "refused"),
            Creation::Failed(e) => write!(f, "error:{e}"),
        }
    }
}

/// What became of B, the agent created with the reused id: not created;
/// its prompt's fate (`id-reuse-after-detach`); created once A's teardown
/// finished, or at the given try during it (`same-id-vs-teardown`). Shown
/// as `B:not-created`, `B:ended(completed)`, `B:after-teardown`, `B:try-2`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum B {
    NotCreated,
    Prompt(PromptFate),
    AfterTeardown,
    Try(u32),
}

impl std::fmt::Display for B {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            B::NotCreated => write!(f, "B:not-created"),
            B::Prompt(fate) => write!(f, "B:{fate}"),
            B::AfterTeardown => write!(f, "B:after-teardown"),
            B::Try(n) => write!(f, "B:try-{n}"),
        }
    }
}
