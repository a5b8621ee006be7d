//! Dispose scenarios: `concurrent-dispose`, `dispose-mid-turn`,
//! `owner-unload-vs-handle-dispose`, `provider-unload`,
//! `disposed-listener-panics`, `cancel-then-dispose`.

use super::fate::{Fates, FromJournal, PromptFate};
use super::goals::*;
use super::rig::{Rig, LISTENER_PANIC};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::agent::core::Status;
use crate::agent::Idle;
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::journal::{Cause, EndReason, Event};
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use crate::session_log::Entry;
use crate::store::Listener;
use std::sync::Arc;

/// A goal of [`CONCURRENT_DISPOSE`].
pub const DISPOSE_MID_TURN_GOAL: Goal = on!(
    "dispose-mid-turn",
    "the disposals land while the turn awaits a step",
    |f: &Fates| f.fate("A") == Some(PromptFate::Ended(EndReason::Disposed)),
);

/// A goal of [`CONCURRENT_DISPOSE`].
pub const DISPOSE_DURING_FLUSH: Goal = excused(
        pred(
            "dispose-during-flush",
            "disposal begins after turn/end and before the turn's flush closed",
            dispose_during_flush,
        ),
        &[
            (Checker::ShuttlePct,
                "not reached in runs far past the PR budget at depth 3: the flush window needs the loop to keep its priority through the turn's end while three disposers wait",
            ),
            (Checker::Loom,
                "not reached in the whole space at loom's bound 1 (bound 2 takes minutes)",
            ),
        ],
    );

const CONCURRENT_DISPOSE_GOALS: &[Goal] = &[DISPOSE_MID_TURN_GOAL, DISPOSE_DURING_FLUSH];

/// `concurrent-dispose`, registered in [`super::ALL`].
pub static CONCURRENT_DISPOSE: Scenario = Scenario::new(
    "concurrent-dispose",
    "two dispose() calls and the owner scope's unload while a flush is open; a bystander agent runs meanwhile",
    bodies!(concurrent_dispose),
)
.rules(&[Rule::D1, Rule::D2])
.goals(CONCURRENT_DISPOSE_GOALS)
.targets(&[Fault::M6])
// loom at bound 2 runs past the PR gate, because loom interleaves joined
// futures.
// sim-dfs at bound 2 is quick (`sim-dfs.concurrent-dispose.schedules`);
// bound 3 does not finish within the PR gate.
.bounds(Bounds { loom_cap: 1, dfs: Some(2), ..Bounds::PR })
.bystanders(&["b", "keeper"])
.coverage_gap(
    "sim-dfs at bound 2 misses views the other checkers reach (most from sim seeds), and bound 3 does not finish within the PR budget; `check` reports the misses of each run",
);

/// `concurrent-dispose`: two `dispose()` calls and the owner scope's unload
/// race while the turn's closing flush is open. One teardown, run once, in
/// D2 order; every caller resolves after it (D1, D2). A bystander agent of
/// another owner runs a two-step turn meanwhile and is left untouched (D5).
pub async fn concurrent_dispose<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    let keeper = rig.owner("keeper");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    let by = match ctx.bystanders {
        true => Some(rig.provider.create("b", &keeper).await.expect("create b")),
        false => None,
    };
    if let Some(by) = &by {
        rig.track(&by.agent, by.serial());
        by.agent.send(spec("X", 2)).expect("send X");
    }
    h.agent.send(spec("A", 2)).expect("send");
    h.agent.started(0).await;
    // Disposers: handle-1 and the owner's unload, joined in this task, and
    // `width - 2` more handles, each in a task of its own (one at width 3).
    let others: Vec<_> = (2..super::width())
        .map(|i| {
            let h2 = h.clone();
            let name = format!("dispose-{i}");
            let who = format!("handle-{i}");
            rt::spawn::<R, ()>(&name, async move { h2.dispose_as(&who).await })
        })
        .collect();
    futures::future::join(h.dispose_as("handle-1"), owner.unload()).await;
    for other in others {
        other.join().await;
    }
    let (mut by_idle, mut x_fate) = (Idle::Quiescent, PromptFate::COMPLETED);
    if let Some(by) = &by {
        by_idle = by.agent.when_idle().await;
        x_fate = PromptFate::of(&by.agent.journal(), 0);
    }
    let mut own = vec![(
        x_fate == PromptFate::COMPLETED && by_idle == Idle::Quiescent,
        Violation::new(
            Rule::D5,
            format!("disposing a left the bystander b's turn `{x_fate}`, idle {by_idle:?}"),
        ),
    )];
    // Every handle caller has returned here, as this task saw: the world
    // oracle's D1 order check needs each return observed, or it passes on
    // no evidence.
    let events = rig.world.events();
    for i in 1..super::width() {
        let who = format!("handle-{i}");
        let seen = events.iter().any(
            |e| matches!(e, LifecycleEvent::DisposeReturned { id, by, .. } if id == "a" && *by == who),
        );
        own.push((
            seen,
            Violation::new(
                Rule::D1,
                format!("dispose caller {who} returned but no return of it was observed"),
            ),
        ));
    }
    keeper.unload().await;
    rig.finish(Fates::of(&h.agent.journal(), &[("A", 0)]), own)
}

/// A goal of [`DISPOSE_MID_TURN`].
pub const DISPOSE_DURING_STEP: Goal = on!(
    "dispose-during-step",
    "dispose lands while the turn awaits a step",
    |f: &Fates| f.fate("A") == Some(PromptFate::Ended(EndReason::Disposed)),
);

/// A goal of [`DISPOSE_MID_TURN`].
pub const TAIL_CLEARED: Goal = on!(
    "tail-cleared",
    "dispose clears the queued tail before it starts",
    |f: &Fates| f.fate("tail") == Some(PromptFate::ClearedByDispose),
);

const DISPOSE_MID_TURN_GOALS: &[Goal] = &[DISPOSE_DURING_STEP, TAIL_CLEARED];

/// `dispose-mid-turn`, registered in [`super::ALL`].
pub static DISPOSE_MID_TURN: Scenario = Scenario::new(
    "dispose-mid-turn",
    "dispose while a turn awaits a step; reload the durable log",
    bodies!(dispose_mid_turn),
)
.rules(&[Rule::D2, Rule::D3, Rule::D6])
.goals(DISPOSE_MID_TURN_GOALS)
.targets(&[Fault::M1])
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
});

/// `dispose-mid-turn`: dispose while a turn awaits a step; reloading the
/// durable log yields every appended event and the turn's `turn/end
/// {disposed}` (D2, D3); nothing queued starts and `send` is refused (D6).
pub async fn dispose_mid_turn<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    let a = h.agent.send(spec("A", 3)).expect("send A");
    let tail = h.agent.send(spec("tail", 1)).expect("send tail");
    h.agent.started(0).await;
    h.dispose().await;
    let refused = h.agent.send(spec("late", 1)).is_err();
    let journal = h.agent.journal();
    let reloaded: Vec<Entry> = rig
        .store
        .load("a")
        .map(|l| {
            l.records
                .into_iter()
                .filter(|r| r.serial == h.serial())
                .map(|r| r.entry)
                .collect()
        })
        .unwrap_or_default();
    let started = journal
        .iter()
        .any(|r| matches!(r.event, Event::TurnStart { prompt } if prompt == a));
    let end = reloaded.iter().find_map(|e| match e {
        Entry::TurnEnd { prompt, reason } if *prompt == a => Some(*reason),
        _ => None,
    });
    let own = vec![
        (
            refused,
            Violation::new(Rule::D6, "send after dispose was accepted"),
        ),
        (
            !started || matches!(end, Some(EndReason::Disposed) | Some(EndReason::Completed)),
            Violation::new(Rule::D3, format!("reloaded log of a: turn A ends {end:?}")),
        ),
        (
            PromptFate::of(&journal, a) != PromptFate::Ended(EndReason::Disposed)
                || end == Some(EndReason::Disposed),
            Violation::new(
                Rule::D3,
                "turn A stopped by disposal has no durable turn/end {disposed}",
            ),
        ),
    ];
    rig.finish(Fates::of(&journal, &[("A", a), ("tail", tail)]), own)
}

/// A goal of [`OWNER_UNLOAD_VS_HANDLE_DISPOSE`].
pub const TEARDOWN_MID_TURN: Goal = on!(
    "teardown-mid-turn",
    "the racing handle dispose and owner unload stop a running turn",
    |f: &Fates| f.fate("A") == Some(PromptFate::Ended(EndReason::Disposed)),
);

const OWNER_UNLOAD_VS_HANDLE_DISPOSE_GOALS: &[Goal] = &[TEARDOWN_MID_TURN];

/// `owner-unload-vs-handle-dispose`, registered in [`super::ALL`].
pub static OWNER_UNLOAD_VS_HANDLE_DISPOSE: Scenario = Scenario::new(
    "owner-unload-vs-handle-dispose",
    "the handle's dispose races the owner scope's unload",
    bodies!(owner_unload_vs_handle_dispose),
)
.rules(&[Rule::D1, Rule::D3])
.goals(OWNER_UNLOAD_VS_HANDLE_DISPOSE_GOALS)
.bounds(Bounds {
    dfs: None,
    ..Bounds::PR
})
.targets(&[Fault::M1, Fault::M6]);

/// `owner-unload-vs-handle-dispose`: the handle's dispose and the owner
/// scope's unload race; both reach the one teardown (D1, D3).
pub async fn owner_unload_vs_handle_dispose<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    h.agent.send(spec("A", 2)).expect("send");
    h.agent.started(0).await;
    let h2 = h.clone();
    let by_handle = rt::spawn::<R, ()>("handle-dispose", async move { h2.dispose().await });
    owner.unload().await;
    by_handle.join().await;
    rig.finish(Fates::of(&h.agent.journal(), &[("A", 0)]), Vec::new())
}

/// A goal of [`PROVIDER_UNLOAD`].
pub const UNLOAD_MID_TURN: Goal = on!(
    "unload-mid-turn",
    "the provider's unload lands while an agent's turn runs: the turn ends disposed",
    |f: &Unloaded| f.cut > 0,
);

/// `provider-unload`'s fact: how many of the agents' turns the unload cut
/// (ended `disposed`). Shown as `all-disposed` (the body's checks say
/// whether all were).
struct Unloaded {
    cut: usize,
}

impl std::fmt::Display for Unloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("all-disposed")
    }
}

const PROVIDER_UNLOAD_GOALS: &[Goal] = &[UNLOAD_MID_TURN];

/// `provider-unload`, registered in [`super::ALL`].
pub static PROVIDER_UNLOAD: Scenario = Scenario::new(
    "provider-unload",
    "the provider unloads with config-created and handle-owned agents",
    bodies!(provider_unload),
)
.rules(&[Rule::D1, Rule::D5, Rule::D7])
.goals(PROVIDER_UNLOAD_GOALS)
// sim-dfs at bound 2 is quick (`sim-dfs.provider-unload.schedules`); bound 3
// takes many times the schedules and runs past the PR gate.
.bounds(Bounds {
    dfs: Some(2),
    ..Bounds::PR
});

/// `provider-unload`: the provider unloads with live agents, two created
/// from configuration (no handle) and one with a handle; all are disposed
/// (D1, D5, D7).
pub async fn provider_unload<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    rig.provider
        .create_from_config("cfg-1")
        .await
        .expect("cfg-1");
    rig.provider
        .create_from_config("cfg-2")
        .await
        .expect("cfg-2");
    let h = rig.provider.create("h-1", &owner).await.expect("h-1");
    let mut agents = Vec::new();
    for (id, serial) in rig.registry.entries() {
        let agent = rig.registry.get(&id).expect("registered");
        let p = agent.send(spec(&format!("work {id}"), 1)).expect("send");
        rig.track(&agent, serial);
        agents.push((agent, p));
    }
    rig.provider.unload().await;
    let cut = agents
        .iter()
        .filter(|(a, p)| PromptFate::of(&a.journal(), *p) == PromptFate::Ended(EndReason::Disposed))
        .count();
    let left = rig.registry.entries().len() + rig.store.sessions().len();
    let all_disposed = rig.registry.list().is_empty() && h.agent.status() == Status::Disposed;
    let own = vec![
        (
            left == 0,
            Violation::new(
                Rule::D7,
                format!("{left} registry entries/sessions left after provider unload"),
            ),
        ),
        (
            all_disposed,
            Violation::new(Rule::D7, "an agent survived its provider's unload"),
        ),
        (
            owner.is_active(),
            Violation::new(
                Rule::D5,
                "the provider's unload unloaded an unrelated owner scope",
            ),
        ),
    ];
    owner.unload().await;
    rig.finish(Unloaded { cut }, own)
}

/// A goal of [`DISPOSED_LISTENER_PANICS`]: the chain whose listeners
/// panic also has a running turn to end (D3) before its later steps.
pub const LISTENERS_PANIC_MID_TURN: Goal = pred(
    "listeners-panic-mid-turn",
    "a's disposal, whose listeners panic, begins while A's turn runs",
    |o| disposed_mid_turn(o) == Some(true),
);

/// A goal of [`DISPOSED_LISTENER_PANICS`].
pub const LISTENERS_PANIC_NO_TURN: Goal = pred(
    "listeners-panic-no-turn",
    "a's disposal, whose listeners panic, begins with no turn running (A not started, or ended)",
    |o| disposed_mid_turn(o) == Some(false),
);

/// Whether a's disposal (the outcome's journal is a's) began while A's turn
/// ran; `None` if it did not begin.
fn disposed_mid_turn(o: &Outcome) -> Option<bool> {
    let (disposed, ended) = dispose_and_end(o);
    let started = o
        .journal
        .iter()
        .position(|r| matches!(r.event, Event::TurnStart { .. }));
    let d = disposed?;
    Some(started.is_some_and(|s| s < d) && ended.is_none_or(|t| d < t))
}

const DISPOSED_LISTENER_PANICS_GOALS: &[Goal] =
    &[LISTENERS_PANIC_MID_TURN, LISTENERS_PANIC_NO_TURN];

/// `disposed-listener-panics`, registered in [`super::ALL`].
pub static DISPOSED_LISTENER_PANICS: Scenario = Scenario::new(
    "disposed-listener-panics",
    "agent/disposed and session/disposed listeners panic",
    bodies!(disposed_listener_panics),
)
.rules(&[Rule::D4, Rule::D5])
.goals(DISPOSED_LISTENER_PANICS_GOALS)
.targets(&[Fault::M10])
// loom at bound 2 runs past the PR gate (each turn's write-ahead flush adds
// interleavings); bound 1 stays within it.
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
});

/// `disposed-listener-panics`: `agent/disposed` and `session/disposed`
/// listeners panic; disposing A still runs every step (D4), and B is
/// untouched and still works (D5).
pub async fn disposed_listener_panics<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    // Each listener notes the id it was given, then panics: a listener
    // that was never registered, or never called, would make "the panic
    // was contained" vacuous. Observed from the listener's side, through a
    // std mutex: not a scheduling point, so the explored schedules (and
    // their pinned counts) are those of the code under test alone.
    let heard_by_registry = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let heard_by_store = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    for (heard, on_registry) in [(&heard_by_registry, true), (&heard_by_store, false)] {
        let heard = heard.clone();
        let listener: Listener = Arc::new(move |id: &str| {
            heard
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(id.to_string());
            std::panic::panic_any(LISTENER_PANIC)
        });
        if on_registry {
            rig.registry.on_disposed(listener);
        } else {
            rig.store.on_disposed(listener);
        }
    }
    let owner = rig.owner("owner");
    let a = rig.provider.create("a", &owner).await.expect("create a");
    let b = rig.provider.create("b", &owner).await.expect("create b");
    rig.track(&a.agent, a.serial());
    rig.track(&b.agent, b.serial());
    a.agent.send(spec("A", 1)).expect("send A");
    a.dispose().await;
    let heard =
        |h: &std::sync::Mutex<Vec<String>>| h.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let (by_registry, by_store) = (heard(&heard_by_registry), heard(&heard_by_store));
    let b_registered = rig.registry.entries() == vec![("b".to_string(), b.serial())];
    let b_session = rig.store.sessions() == vec![("b".to_string(), b.serial())];
    let b_prompt = b.agent.send(spec("B", 1)).expect("send B");
    let b_idle = b.agent.when_idle().await;
    let b_fate = PromptFate::of(&b.agent.journal(), b_prompt);
    let own = vec![
        (
            by_registry == ["a"],
            Violation::new(
                Rule::D4,
                format!("the agent/disposed listener heard {by_registry:?} by a's disposal, not [\"a\"]"),
            ),
        ),
        (
            by_store == ["a"],
            Violation::new(
                Rule::D4,
                format!("the session/disposed listener heard {by_store:?} by a's disposal, not [\"a\"]"),
            ),
        ),
        (
            b_registered,
            Violation::new(
                Rule::D5,
                "disposing a changed b's registry entry (or a's is left)",
            ),
        ),
        (
            b_session,
            Violation::new(Rule::D5, "disposing a changed b's session (or a's is left)"),
        ),
        (
            b_idle == Idle::Quiescent && b_fate == PromptFate::COMPLETED,
            Violation::new(
                Rule::D5,
                format!("b's prompt after a's disposal ended `{b_fate}`"),
            ),
        ),
    ];
    owner.unload().await;
    rig.finish(Fates(vec![("B", b_fate)]), own)
}

/// A goal of [`CANCEL_THEN_DISPOSE`].
pub const DISPOSE_BEFORE_TURN_END: Goal = pred(
    "dispose-before-turn-end",
    "disposal begins after the cancel and before the cancelled turn's turn/end",
    |o| matches!(dispose_and_end(o), (Some(d), Some(t)) if d < t),
);

/// A goal of [`CANCEL_THEN_DISPOSE`].
pub const TURN_END_BEFORE_DISPOSE: Goal = pred(
    "turn-end-before-dispose",
    "the cancelled turn ends before disposal begins",
    |o| matches!(dispose_and_end(o), (Some(d), Some(t)) if t < d),
);

const CANCEL_THEN_DISPOSE_GOALS: &[Goal] = &[DISPOSE_BEFORE_TURN_END, TURN_END_BEFORE_DISPOSE];

/// `cancel-then-dispose`, registered in [`super::ALL`].
pub static CANCEL_THEN_DISPOSE: Scenario = Scenario::new(
    "cancel-then-dispose",
    "a running turn is cancelled, then its agent disposed, before or after the turn's step boundary",
    bodies!(cancel_then_dispose),
)
.rules(&[Rule::C3, Rule::D3])
.goals(CANCEL_THEN_DISPOSE_GOALS)
.bounds(Bounds { dfs: None, ..Bounds::PR })
.targets(&[Fault::M23]);

/// `cancel-then-dispose`: a running turn is cancelled, then its agent is
/// disposed, before or after the turn reaches its step boundary. A turn
/// whose `turn/end` comes after disposal began ends `disposed` even though
/// the cancel came first (C3: disposal overrides); one that ended before
/// ends `aborted` with the cancel's cause. The oracle judges it from the
/// journal's order of `dispose-began` and `turn/end`.
pub async fn cancel_then_dispose<R: Rt>(ctx: Ctx) -> Outcome {
    let Ctx {
        faults, durable, ..
    } = ctx;
    let rig = Rig::<R>::new(faults, durable);
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    let a = h.agent.send(spec("A", 3)).expect("send A");
    h.agent.started(a).await;
    let _ = h.agent.cancel(Cause::User);
    h.dispose().await;
    let said = Fates::of(&h.agent.journal(), &[("A", a)]);
    owner.unload().await;
    rig.finish(said, Vec::new())
}
