//! A plain test on the production runtime, set up with `Rig::builder()`:
//! a provider with its registry, store and in-memory disk, an ACP bridge
//! and tool-bash over a simulated shell, in one line. The rig's shared
//! checks (R1–R3, D1–D4, S6, the journal rules of tracked agents) then run
//! over what happened.

use lifecycle::acp::StopReason;
use lifecycle::shell::ExecResult;
use lifecycle_harness::backends::CheckedTokioRt;
use lifecycle_harness::scenarios::rig::Rig;
use std::sync::Arc;

use lifecycle_testkit::runtime;

#[test]
fn a_bridge_and_tool_bash_from_one_builder() {
    let rt = runtime();
    let outcome = rt.block_on(async {
        let rig = Arc::new(
            Rig::<CheckedTokioRt>::builder()
                .bridge()
                .tool_bash()
                .build(),
        );
        let bridge = rig.bridge.clone().expect("the builder made a bridge");
        let tools = rig.tool_bash.clone().expect("the builder loaded tool-bash");

        let id = bridge.new_session().await.expect("session/new");
        assert_eq!(bridge.sessions(), vec![id.clone()]);
        let answer = bridge.prompt(&id, "hello").await.expect("session/prompt");
        assert_eq!(answer, StopReason::EndTurn);

        // A background job started as the session's agent belongs to it (S1,
        // S2): its owner reads it, another agent is refused.
        let job = match tools.bash(Some(&id), "sleep", true).await {
            Ok(ExecResult::Started { job }) => job,
            other => panic!("background bash answered {other:?}"),
        };
        rig.job_started(&job, Some(&id));
        assert!(tools.bash_output(Some(&id), &job).is_ok());
        assert!(tools.bash_output(Some("someone-else"), &job).is_err());

        bridge.unload().await;
        assert!(
            bridge.sessions().is_empty(),
            "A6: unload closes every session"
        );
        rig.finish("done", Vec::new())
    });
    assert!(outcome.violations.is_empty(), "{:?}", outcome.violations);
    assert!(
        outcome.invariants > 0,
        "the rig's checks ran ({} invariants)",
        outcome.invariants
    );
}

#[test]
fn the_builder_wires_faults_through() {
    use lifecycle_harness::faults::{Fault, Faults};
    let rig = Rig::<CheckedTokioRt>::builder()
        .faults(Faults::none().with(Fault::M9))
        .build();
    assert!(rig.faults.has(Fault::M9));
    assert!(rig.bridge.is_none() && rig.tool_bash.is_none());
}

/// `Agent::done` resolves when the agent's loop has exited, which is after
/// its disposal and not before: a live agent's `done()` is still pending,
/// and so is `Agent::until` of the loop's exit.
#[test]
fn an_agents_done_resolves_after_its_disposal_and_not_before() {
    use futures::FutureExt;
    use lifecycle::journal::Event;
    let rt = runtime();
    rt.block_on(async {
        let rig = Rig::<CheckedTokioRt>::builder().build();
        let owner = rig.owner("owner");
        let a = rig.provider.create("a", &owner).await.expect("create a");
        let agent = a.agent.clone();
        assert!(
            agent.done().now_or_never().is_none(),
            "done() resolved while the agent was live"
        );
        // `until` waits for its predicate the same way.
        let mut exited = Box::pin(agent.until("loop exit", |c| c.loop_has_exited()));
        assert!(
            (&mut exited).now_or_never().is_none(),
            "until resolved while its predicate was false"
        );
        a.dispose().await;
        let refused = agent.send("late").expect_err("a disposed agent refuses");
        assert_eq!(refused.to_string(), "agent is disposed");
        tokio::time::timeout(std::time::Duration::from_secs(20), agent.done())
            .await
            .expect("done() resolves after disposal");
        tokio::time::timeout(std::time::Duration::from_secs(20), exited)
            .await
            .expect("until resolves once its predicate holds");
        assert!(
            agent
                .journal()
                .iter()
                .any(|r| matches!(r.event, Event::LoopExited)),
            "the loop's exit is journaled"
        );
        owner.unload().await;
    });
}

/// `Registry::detach` removes exactly `(id, serial)` and tells the
/// `agent/disposed` listeners once; detaching it again removes nothing and
/// tells no one (R2). Observed as the registry's entries and as what a
/// listener heard.
#[test]
fn a_detach_removes_its_entry_once_and_a_repeat_tells_no_one() {
    use std::sync::Mutex;
    let rt = runtime();
    rt.block_on(async {
        let rig = Rig::<CheckedTokioRt>::builder().build();
        let heard = Arc::new(Mutex::new(Vec::<String>::new()));
        let ear = heard.clone();
        rig.registry.on_disposed(Arc::new(move |id: &str| {
            ear.lock().unwrap().push(id.to_string())
        }));
        let owner = rig.owner("owner");
        let a = rig.provider.create("a", &owner).await.expect("create a");
        let b = rig.provider.create("b", &owner).await.expect("create b");
        rig.registry.detach("a", a.serial()).expect("detach a");
        assert_eq!(rig.registry.entries(), vec![("b".to_string(), b.serial())]);
        assert_eq!(*heard.lock().unwrap(), ["a"]);
        rig.registry
            .detach("a", a.serial())
            .expect("a repeated detach");
        rig.registry
            .detach("b", b.serial() + 1)
            .expect("a stale serial");
        assert_eq!(rig.registry.entries(), vec![("b".to_string(), b.serial())]);
        assert_eq!(*heard.lock().unwrap(), ["a"], "nothing more was disposed");
        // a's teardown finds its entry gone and tells no one; a new agent
        // then takes the id, and waiting for the old (id, serial) to be gone
        // does not wait for the new one.
        a.dispose().await;
        assert_eq!(*heard.lock().unwrap(), ["a"], "a's teardown found it gone");
        let a2 = rig
            .provider
            .create("a", &owner)
            .await
            .expect("create a again");
        assert_ne!(a2.serial(), a.serial());
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            rig.registry.until_absent("a", a.serial()),
        )
        .await
        .expect("the old entry is gone, whatever else has its id");
        owner.unload().await;
        assert!(rig.registry.entries().is_empty());
        let mut heard = heard.lock().unwrap().clone();
        heard.sort();
        assert_eq!(
            heard,
            ["a", "a", "b"],
            "the first a's teardown found it gone"
        );
    });
}

/// A5, observed from the session's durable log: `session/load` of an id
/// that another connection over the same provider has live is refused as
/// `already loaded` before anything touches its log. Recovering it would
/// repair a live log (D9): its running turn closed as `interrupted` under
/// it, then a second `turn/end` when the turn really ends.
#[test]
fn a_load_of_a_session_live_elsewhere_leaves_its_log_alone() {
    use lifecycle::acp::{AcpError, Bridge};
    use lifecycle::agent::core::PromptSpec;
    use lifecycle::session_log::Entry;
    let rt = runtime();
    rt.block_on(async {
        let rig = Arc::new(Rig::<CheckedTokioRt>::builder().bridge().build());
        let first = rig.bridge.clone().expect("the builder made a bridge");
        let second = Bridge::with_prefix(rig.provider.clone(), rig.owner("acp-2"), "other-");
        let id = first.new_session().await.expect("session/new");
        let long = PromptSpec {
            text: "long".into(),
            steps: 1,
            step_ms: 60_000,
            ..PromptSpec::default()
        };
        let prompting = tokio::spawn({
            let (first, id) = (first.clone(), id.clone());
            async move { first.prompt(&id, long).await }
        });
        let turn_ends = |rig: &Rig<CheckedTokioRt>| {
            let log = rig.store.load(&id).expect("the live log loads");
            let started = log
                .records
                .iter()
                .any(|r| matches!(r.entry, Entry::TurnStart { .. }));
            let ends = log
                .records
                .iter()
                .filter(|r| matches!(r.entry, Entry::TurnEnd { .. }))
                .count();
            (started, ends)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !turn_ends(&rig).0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the turn never started"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        match second.load_session(&id).await {
            Err(AcpError::AlreadyLoaded(got)) => assert_eq!(got, id),
            other => panic!("A5: session/load of a live id answered {other:?}"),
        }
        assert_eq!(
            turn_ends(&rig),
            (true, 0),
            "A5/D9: the refused load closed the live session's running turn"
        );
        first.cancel(&id);
        let answer = tokio::time::timeout(std::time::Duration::from_secs(20), prompting)
            .await
            .expect("the cancelled prompt answers")
            .expect("the prompt task");
        assert_eq!(answer.expect("session/prompt"), StopReason::Cancelled);
        first.unload().await;
        second.unload().await;
        assert_eq!(turn_ends(&rig).1, 1, "one turn, one turn/end");
    });
}

/// A10: an agent built after `Provider::bound_journals(cap)` keeps at most
/// `2 * cap` journal records however many turns it runs; one built by an
/// unbounded provider keeps them all.
#[test]
fn a_bounded_provider_bounds_its_agents_journals() {
    use lifecycle::agent::core::PromptSpec;
    use lifecycle::agent::Idle;
    let rt = runtime();
    rt.block_on(async {
        let turns = |n: usize| PromptSpec {
            text: format!("turn {n}"),
            steps: 1,
            step_ms: 0,
            ..PromptSpec::default()
        };
        let mut kept = Vec::new();
        for cap in [None, Some(4)] {
            let rig = Rig::<CheckedTokioRt>::builder().build();
            if let Some(cap) = cap {
                rig.provider.bound_journals(cap);
            }
            let owner = rig.owner("owner");
            let a = rig.provider.create("a", &owner).await.expect("create a");
            for n in 0..30 {
                a.agent.send(turns(n)).expect("a live agent takes a prompt");
            }
            let idle =
                tokio::time::timeout(std::time::Duration::from_secs(20), a.agent.when_idle())
                    .await
                    .expect("30 short turns end");
            assert_eq!(idle, Idle::Quiescent);
            kept.push(a.agent.journal().len());
            owner.unload().await;
        }
        assert!(
            kept[0] > 30,
            "an unbounded journal keeps every turn's records: {kept:?}"
        );
        assert!(
            kept[1] <= 8,
            "A10: the journal bounded to 4 kept {} records",
            kept[1]
        );
    });
}

/// A session prepared privately keeps the id and the serial it was prepared
/// for; dropping it publishes nothing. Once one with the id is entered, a
/// second is refused with a message that names the id (R1).
#[test]
fn a_prepared_session_keeps_its_id_and_serial() {
    let rig = Rig::<CheckedTokioRt>::builder().build();
    let a = rig.store.prepare("a").expect("prepare a");
    let b = rig.store.prepare("b").expect("prepare b");
    assert_eq!((a.id(), b.id()), ("a", "b"));
    assert_ne!(a.serial(), b.serial());
    drop(b);
    assert!(rig.store.sessions().is_empty());
    let serial = a.serial();
    rig.store.enter(a).expect("enter a");
    assert_eq!(rig.store.sessions(), vec![("a".to_string(), serial)]);
    let refused = rig
        .store
        .prepare("a")
        .expect_err("R1: a live session has the id");
    assert_eq!(refused.to_string(), "session \"a\" already exists");
}
