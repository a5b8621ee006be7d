//! Downstream-style race tests over held parts: a step that says it runs
//! and waits to be let go, and a flush held open at its I/O point. Both
//! park a task of the test's executor; no thread is blocked.

use lifecycle::agent::PromptSpec;
use lifecycle::journal::EndReason;
use lifecycle::rt::{self, SimRt};
use lifecycle_harness::check::api::{RaceTest, Rig};
use lifecycle_harness::faults::{Fault, Faults};
use std::sync::Arc;

fn two_steps(text: &str) -> PromptSpec {
    PromptSpec {
        steps: 2,
        ..PromptSpec::from(text)
    }
}

/// C10 and D2 with a step caught running: the agent is disposed while its
/// first step is held. The held step's signal fires, so the dispose
/// returns without the step ever being let go, the turn ends `Disposed`,
/// and no second step begins.
async fn dispose_while_a_step_runs(rig: Arc<Rig<SimRt>>) {
    let steps = rig.steps.clone().expect("RaceTest::held_steps");
    let owner = rig.owner("owner");
    let a = rig.provider.create("a", &owner).await.expect("create");
    let prompt = a.agent.send(two_steps("go")).expect("send");
    steps.running("a", 0).await;
    a.dispose().await;
    let fate = a.agent.outcome(prompt).await;
    assert_eq!(
        fate,
        Some(EndReason::Disposed),
        "C3: a disposed turn ends Disposed"
    );
    assert_eq!(
        steps.began(),
        vec![("a".to_string(), 0)],
        "D2: no step begins after the dispose"
    );
    owner.unload().await;
}

#[test]
fn a_held_step_is_disposed_mid_step() {
    let name = "a_held_step_is_disposed_mid_step";
    let report = RaceTest::new(name)
        .held_steps()
        .dfs(dispose_while_a_step_runs)
        .unwrap();
    assert!(report.exhausted && report.executions > 1, "{report:?}");
    // M19: the step's signal never fires, so the held step never ends and
    // the dispose waits for it forever (C10).
    let failure = RaceTest::new(name)
        .held_steps()
        .faults(Faults::none().with(Fault::M19))
        .dfs(dispose_while_a_step_runs)
        .unwrap_err();
    assert_eq!(failure.rule.name(), "C10", "{failure}");
}

/// `hold()` re-arms the gate: step 0 is let go and, with no await in
/// between, later steps are held again, so step 1 begins and waits; the
/// turn cannot end while it is held (in every schedule), and ends
/// `Completed` once released.
async fn release_then_hold_again(rig: Arc<Rig<SimRt>>) {
    let steps = rig.steps.clone().expect("RaceTest::held_steps");
    let owner = rig.owner("owner");
    let a = rig.provider.create("a", &owner).await.expect("create");
    let prompt = a.agent.send(two_steps("go")).expect("send");
    steps.running("a", 0).await;
    steps.release();
    steps.hold();
    // Set just before the release: the turn may end only after it.
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (agent, flag) = (a.agent.clone(), released.clone());
    let waiter = rt::spawn::<SimRt, _>("outcome", async move {
        let fate = agent.outcome(prompt).await;
        assert!(
            flag.load(std::sync::atomic::Ordering::SeqCst),
            "C3: the turn ended while its step 1 was held"
        );
        fate
    });
    steps.running("a", 1).await;
    released.store(true, std::sync::atomic::Ordering::SeqCst);
    steps.release();
    let fate = waiter.join().await;
    assert_eq!(fate, Some(EndReason::Completed), "C3: both steps ran");
    assert_eq!(
        steps.began(),
        vec![("a".to_string(), 0), ("a".to_string(), 1)],
        "D2: each step began once, in order"
    );
    a.dispose().await;
    owner.unload().await;
}

#[test]
fn a_step_is_held_again_after_a_release() {
    let report = RaceTest::new("a_step_is_held_again_after_a_release")
        .held_steps()
        .dfs(release_then_hold_again)
        .unwrap();
    assert!(report.exhausted && report.executions > 1, "{report:?}");
}

/// A flush held at its I/O point (written, not synced: what a slow disk
/// does), and a cancel racing it: the turn still ends once the flush is
/// let go, and the rig's oracles check the log (D9, D10: every turn one
/// end, nothing synced lost).
async fn cancel_while_a_flush_is_open(rig: Arc<Rig<SimRt>>) {
    let disk = rig.flushes.clone().expect("RaceTest::held_flushes");
    let owner = rig.owner("owner");
    let a = rig.provider.create("a", &owner).await.expect("create");
    let prompt = a.agent.send(two_steps("go")).expect("send");
    disk.flushing("a").await;
    // The disk, the receiving side: the held flush wrote its batch and
    // has not synced it.
    let image = disk.disk().crash_image();
    let (written, synced) = (image.written("a").len(), image.synced("a").len());
    assert!(
        written > synced,
        "a flush held at its I/O point left {written} record(s) written, {synced} synced"
    );
    let agent = a.agent.clone();
    let cancel = rt::spawn::<SimRt, _>("cancel", async move {
        agent.cancel(lifecycle::journal::Cause::User);
    });
    disk.release();
    cancel.join().await;
    let fate = a.agent.outcome(prompt).await;
    assert!(
        matches!(fate, Some(EndReason::Completed | EndReason::Aborted)),
        "C3: the turn ended {fate:?}"
    );
    // Every flush that reached the I/O point was one of `a`'s (the
    // held one first).
    let flushed = disk.flushed();
    assert_eq!(
        flushed.first().map(String::as_str),
        Some("a"),
        "{flushed:?}"
    );
    assert!(flushed.iter().all(|id| id == "a"), "{flushed:?}");
    a.dispose().await;
    owner.unload().await;
}

#[test]
fn a_flush_is_held_open_without_a_thread() {
    let report = RaceTest::new("a_flush_is_held_open_without_a_thread")
        .held_flushes()
        .dfs(cancel_while_a_flush_is_open)
        .unwrap();
    assert!(report.exhausted && report.executions > 1, "{report:?}");
}
