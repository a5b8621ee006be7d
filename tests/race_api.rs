//! Downstream-style race tests: only the public API (`check::api`), one
//! function each, as a user of this crate writes them.

use agent_lifecycle::check::api::{RaceTest, Rig, REPLAY_ENV};
use agent_lifecycle::faults::{Fault, Faults};
use agent_lifecycle::rt::{self, LoomRt, Rt, SimRt};
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

/// Two creates of one id race, and nothing of the test's own is checked:
/// only the rig's oracles judge the execution (R1 among them).
async fn two_creates<R: Rt>(rig: Arc<Rig<R>>) {
    let owner = rig.owner("owner");
    let (p, o) = (rig.provider.clone(), owner.clone());
    let other = rt::spawn::<R, _>("create", async move { p.create("x", &o).await.is_ok() });
    let _ = rig.provider.create("x", &owner).await;
    let _ = other.join().await;
    owner.unload().await;
}

#[test]
fn same_id_creates_pass_under_loom() {
    let t = RaceTest::new("same_id_creates_pass_under_loom").goal(
        "refused-at-enter",
        "the loser passed setup too",
        refused_at_enter,
    );
    let report = t.loom(two_creates_one_winner::<LoomRt>).unwrap();
    // Three threads (the closure's, the spawned create, the winner's agent
    // loop): the PR bound 3, one less for the third thread.
    assert_eq!(
        report.bound.as_deref(),
        Some("preemptions <= 2 (3 threads)")
    );
    assert!(report.exhausted, "{report:?}");
    assert!(report.executions > 1_000, "{}", report.executions);
    let hit = report.goals.iter().find(|g| g.goal == "refused-at-enter");
    assert!(hit.is_some_and(|g| g.hits > 0), "{:?}", report.goals);
    // `.executions(n)` stops the search there, unexhausted.
    let capped = t.executions(50).loom(two_creates_one_winner).unwrap();
    assert_eq!((capped.executions, capped.exhausted), (50, false));
}

#[test]
fn a_planted_fault_fails_under_loom_with_a_replay_line_that_reproduces_it() {
    const NAME: &str = "a_planted_fault_fails_under_loom_with_a_replay_line_that_reproduces_it";
    // M9: enter does not recheck for a duplicate live id; both creates win.
    let t = RaceTest::new(NAME).faults(Faults::none().with(Fault::M9));
    let failure = t.loom(two_creates::<LoomRt>).unwrap_err();
    assert_eq!((failure.rule, failure.checker), ("R1", "loom"), "{failure}");
    let shown = failure.to_string();
    assert!(
        shown.contains(&format!("rule R1 broken in race test {NAME} (loom)"))
            && shown.contains(&format!("{REPLAY_ENV}='v2:{NAME}:loom:M9:"))
            && shown.contains(",pb=1' cargo test"),
        "{shown}"
    );
    let again = t
        .replay(&failure.replay, two_creates::<LoomRt>)
        .unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (failure.rule, &failure.message)
    );
    // Only this test's name matches the variable: other tests are unaffected.
    std::env::set_var(REPLAY_ENV, &failure.replay);
    let via_env = t.loom(two_creates::<LoomRt>);
    std::env::remove_var(REPLAY_ENV);
    let via_env = via_env.unwrap_err();
    assert_eq!(
        (via_env.rule, &via_env.replay),
        (failure.rule, &failure.replay)
    );
    // The test's own assertion fails first in the generic body: rule
    // `panic`, caught, and replayed as such.
    let panicked = t.loom(two_creates_one_winner::<LoomRt>).unwrap_err();
    assert_eq!(panicked.rule, "panic", "{panicked}");
    assert!(panicked
        .message
        .contains("R1: one of two same-id creates wins"));
    let again = t
        .replay(&panicked.replay, two_creates_one_winner::<LoomRt>)
        .unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (panicked.rule, &panicked.message)
    );
}

/// The closure's create wins: false when the spawned one gets ahead, which
/// takes loom a preemption, far into its order.
async fn mine_wins(rig: Arc<Rig<LoomRt>>) {
    let owner = rig.owner("owner");
    let (p, o) = (rig.provider.clone(), owner.clone());
    let other = rt::spawn::<LoomRt, _>("create", async move { p.create("x", &o).await.is_ok() });
    let mine = rig.provider.create("x", &owner).await.is_ok();
    let _ = other.join().await;
    owner.unload().await;
    assert!(mine, "the closure's create wins");
}

#[test]
fn a_loom_line_replays_exactly_its_execution() {
    const NAME: &str = "a_loom_line_replays_exactly_its_execution";
    let t = RaceTest::new(NAME);
    let failure = t.loom(mine_wins).unwrap_err();
    assert_eq!(failure.rule, "panic", "{failure}");
    let (head, exec) = failure.replay.split_once(":exec=").unwrap();
    let (exec, pb) = exec.split_once(",pb=").unwrap();
    let exec: u64 = exec.parse().unwrap();
    assert!(exec > 0, "{failure}");
    assert_eq!(pb, "2");
    // Execution `exec` fails again, with the same message; the one before
    // it (which the search passed) passes.
    let again = t.replay(&failure.replay, mine_wins).unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (failure.rule, &failure.message)
    );
    let before = format!("{head}:exec={},pb={pb}", exec - 1);
    t.replay(&before, mine_wins).unwrap();
    // A line of another checker's closure is refused, not run.
    let wrong = t.replay(&failure.replay, mine_wins_on_sim).unwrap_err();
    assert_eq!(wrong.rule, "input", "{wrong}");
}

async fn mine_wins_on_sim(_rig: Arc<Rig<SimRt>>) {}

#[test]
fn loom_refuses_more_threads_than_it_models() {
    let t = RaceTest::new("loom_refuses_more_threads_than_it_models");
    let failure = t
        .loom(|_rig: Arc<Rig<LoomRt>>| async move {
            // The closure's thread and five tasks: one more than loom's 5.
            let tasks: Vec<_> = (0..5)
                .map(|i| rt::spawn::<LoomRt, _>(&format!("t{i}"), async {}))
                .collect();
            for t in tasks {
                t.join().await;
            }
        })
        .unwrap_err();
    assert_eq!((failure.rule, failure.checker), ("harness", "loom"));
    assert!(
        failure.message.contains("more threads than loom models (5"),
        "{failure}"
    );
}

#[test]
fn an_unreached_goal_fails_loom_and_dfs() {
    let t = RaceTest::new("an_unreached_goal_fails_loom_and_dfs").goal(
        "never",
        "a window no execution reaches",
        |_| false,
    );
    let failure = t.loom(|rig: Arc<Rig<LoomRt>>| async move {
        rig.owner("owner").unload().await;
    });
    assert_eq!(failure.unwrap_err().rule, "goal");
    let failure = t.dfs(|rig: Arc<Rig<SimRt>>| async move {
        rig.owner("owner").unload().await;
    });
    assert_eq!(failure.unwrap_err().rule, "goal");
}

/// Set in the child process of [`a_deadlock_under_loom_prints_its_failure_before_the_abort`].
const DEADLOCK_CHILD: &str = "RACE_API_DEADLOCK_CHILD";

#[test]
fn a_deadlock_under_loom_prints_its_failure_before_the_abort() {
    const NAME: &str = "a_deadlock_under_loom_prints_its_failure_before_the_abort";
    if std::env::var_os(DEADLOCK_CHILD).is_some() {
        // The child: a wait nothing ends. loom's unwinding from the
        // deadlock aborts this process.
        let _ = RaceTest::new(NAME).loom(|_rig: Arc<Rig<LoomRt>>| async move {
            let never = rt::Monitor::<LoomRt, bool>::new(false);
            never.wait_until("never", |s| s.then_some(())).await;
        });
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        // Output captured, as `cargo test` runs it.
        .args(["--exact", NAME])
        .env(DEADLOCK_CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("rule progress broken in race test {NAME} (loom)"))
            && stderr.contains("waits parked: never")
            && stderr.contains(&format!("{REPLAY_ENV}='v2:{NAME}:loom:none:")),
        "{stderr}"
    );
}
