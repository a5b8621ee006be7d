//! Downstream-style race tests: only the public API (`check::api`), one
//! function each, as a user of this crate writes them.

use agent_lifecycle::check::api::{RaceTest, Rig, REPLAY_ENV};
use agent_lifecycle::faults::{Fault, Faults};
use agent_lifecycle::rt::{self, Rt, SimRt};
use agent_lifecycle::world::WorldEvent;
use std::sync::Arc;

/// Two creates of one id race; exactly one may win (R1). Generic over the
/// backend, so every checker runs the same body.
async fn two_creates_one_winner<R: Rt>(rig: Arc<Rig<R>>) {
    let owner = rig.owner("owner");
    let (p, o) = (rig.provider.clone(), owner.clone());
    let other = rt::spawn::<R, _>("create", async move { p.create("x", &o).await.is_ok() });
    let mine = rig.provider.create("x", &owner).await.is_ok();
    let theirs = other.join().await;
    assert_eq!(
        u8::from(mine) + u8::from(theirs),
        1,
        "R1: one of two same-id creates wins"
    );
    owner.unload().await;
}

/// The loser passed setup alongside the winner and was refused at enter.
fn refused_at_enter(o: &agent_lifecycle::check::api::Outcome) -> bool {
    let checked = |a: u64| {
        o.world
            .iter()
            .any(|e| matches!(e, WorldEvent::CreateChecked { attempt, .. } if *attempt == a))
    };
    o.world
        .iter()
        .any(|e| matches!(e, WorldEvent::CreateFailed { attempt, .. } if checked(*attempt)))
}

#[test]
fn same_id_creates_pass_on_every_checker() {
    let t = RaceTest::new("same_id_creates_pass_on_every_checker").executions(2_000);
    let sim = t.sim(two_creates_one_winner::<SimRt>).unwrap();
    assert_eq!(sim.executions, 2_000);
    let dfs = t
        .clone()
        .goal(
            "refused-at-enter",
            "the loser passed setup too",
            refused_at_enter,
        )
        .dfs(two_creates_one_winner::<SimRt>)
        .unwrap();
    assert!(dfs.exhausted, "two creators exhaust at bound 3");
    // The goal added after the `sim` call is the one the search counted.
    let hit = dfs.goals.iter().find(|g| g.goal == "refused-at-enter");
    assert!(hit.is_some_and(|g| g.hits > 0), "{:?}", dfs.goals);
    t.shuttle(two_creates_one_winner).unwrap();
    t.clone()
        .executions(20)
        .tokio(two_creates_one_winner)
        .unwrap();
}

#[test]
fn a_planted_fault_fails_with_a_replay_line_that_reproduces_it() {
    // M9: enter does not recheck for a duplicate live id.
    let t = RaceTest::new("a_planted_fault_fails_with_a_replay_line_that_reproduces_it")
        .faults(Faults::none().with(Fault::M9));
    let failure = t.dfs(two_creates_one_winner::<SimRt>).unwrap_err();
    let shown = failure.to_string();
    assert!(
        shown.contains("a_planted_fault_fails_with_a_replay_line_that_reproduces_it")
            && shown.contains("LIFECYCLE_REPLAY="),
        "{shown}"
    );
    let again = t
        .replay(&failure.replay, two_creates_one_winner::<SimRt>)
        .unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (failure.rule, &failure.message)
    );
    // The variable the failure prints makes the same call replay that line
    // (one execution) instead of exploring. Only this test's name matches
    // it, so the other tests of this binary are unaffected.
    std::env::set_var(REPLAY_ENV, &failure.replay);
    let via_env = t.dfs(two_creates_one_winner::<SimRt>);
    std::env::remove_var(REPLAY_ENV);
    let via_env = via_env.unwrap_err();
    assert_eq!(
        (via_env.rule, &via_env.replay),
        (failure.rule, &failure.replay)
    );
    // Without the fault, the same line's execution passes.
    let fixed = RaceTest::new("a_planted_fault_fails_with_a_replay_line_that_reproduces_it");
    let line = failure.replay.replace(":M9:", ":none:");
    assert!(fixed.replay(&line, two_creates_one_winner::<SimRt>).is_ok());
}
