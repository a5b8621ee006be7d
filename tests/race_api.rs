//! Downstream-style race tests: only the public API (`check::api`), one
//! function each, as a user of this crate writes them.

use lifecycle::events::LifecycleEvent;
use lifecycle::rt::{self, Rt, SimRt};
use lifecycle::rules::Rule;
use lifecycle::shell::sim::Script;
use lifecycle_harness::backends::{LoomRt, ShuttleRt};
use lifecycle_harness::check::api::{Broken, RaceTest, Rig, REPLAY_ENV};
use lifecycle_harness::check::Checker;
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::oracle::RuleId;
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
fn refused_at_enter(o: &lifecycle_harness::check::api::Outcome) -> bool {
    let checked = |a: u64| {
        o.world
            .iter()
            .any(|e| matches!(e, LifecycleEvent::CreateChecked { attempt, .. } if *attempt == a))
    };
    o.world
        .iter()
        .any(|e| matches!(e, LifecycleEvent::CreateFailed { attempt, .. } if checked(*attempt)))
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

/// A goal that every execution of an exhausted search hits names no window:
/// the test fails on it, as a goal never hit does (the same search with a
/// window some executions miss passes: `same_id_creates_pass_on_every_checker`).
#[test]
fn a_goal_every_execution_hits_fails_the_test() {
    let failure = RaceTest::new("a_goal_every_execution_hits_fails_the_test")
        .goal("created", "an execution ran", |_| true)
        .dfs(two_creates_one_winner::<SimRt>)
        .expect_err("a goal every execution hits");
    assert_eq!(failure.rule, Broken::Goal, "{failure}");
    assert!(
        failure.message.contains("every complete execution") && failure.message.contains("created"),
        "{failure}"
    );
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
    assert_eq!(
        (failure.rule, failure.checker),
        (Broken::from(Rule::R1), Some(Checker::Loom)),
        "{failure}"
    );
    let shown = failure.to_string();
    assert!(
        shown.contains(&format!("rule R1 broken in race test {NAME} (loom)"))
            && shown.contains(&format!("{REPLAY_ENV}='v3:{NAME}:loom:M9:"))
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
    assert_eq!(panicked.rule, Broken::Rule(RuleId::Panic), "{panicked}");
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
async fn mine_wins<R: Rt>(rig: Arc<Rig<R>>) {
    let owner = rig.owner("owner");
    let (p, o) = (rig.provider.clone(), owner.clone());
    let other = rt::spawn::<R, _>("create", async move { p.create("x", &o).await.is_ok() });
    let mine = rig.provider.create("x", &owner).await.is_ok();
    let _ = other.join().await;
    owner.unload().await;
    assert!(mine, "the closure's create wins");
}

#[test]
fn a_loom_line_replays_exactly_its_execution() {
    const NAME: &str = "a_loom_line_replays_exactly_its_execution";
    let t = RaceTest::new(NAME);
    let failure = t.loom(mine_wins::<LoomRt>).unwrap_err();
    assert_eq!(failure.rule, Broken::Rule(RuleId::Panic), "{failure}");
    let (head, exec) = failure.replay.split_once(":exec=").unwrap();
    let (exec, pb) = exec.split_once(",pb=").unwrap();
    let exec: u64 = exec.parse().unwrap();
    assert!(exec > 0, "{failure}");
    assert_eq!(pb, "2");
    // Execution `exec` fails again, with the same message; the one before
    // it (which the search passed) passes.
    let again = t.replay(&failure.replay, mine_wins::<LoomRt>).unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (failure.rule, &failure.message)
    );
    let before = format!("{head}:exec={},pb={pb}", exec - 1);
    t.replay(&before, mine_wins::<LoomRt>).unwrap();
    // A line of another checker's closure is refused, not run.
    let wrong = t.replay(&failure.replay, mine_wins_on_sim).unwrap_err();
    assert_eq!(
        (wrong.rule, wrong.checker),
        (Broken::Input, None),
        "{wrong}"
    );
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
    assert_eq!(
        (failure.rule, failure.checker),
        (Broken::Harness, Some(Checker::Loom))
    );
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
    assert_eq!(failure.unwrap_err().rule, Broken::Goal);
    let failure = t.dfs(|rig: Arc<Rig<SimRt>>| async move {
        rig.owner("owner").unload().await;
    });
    assert_eq!(failure.unwrap_err().rule, Broken::Goal);
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
            && stderr.contains(&format!("{REPLAY_ENV}='v3:{NAME}:loom:none:")),
        "{stderr}"
    );
}

/// A1 through the bridge: a `session/new` racing the client's disconnect
/// leaves no live session once both are over.
async fn new_session_vs_disconnect(rig: Arc<Rig<SimRt>>) {
    let bridge = rig
        .bridge
        .clone()
        .expect("RaceTest::bridge puts a bridge in the rig");
    let b = bridge.clone();
    let creating = rt::spawn::<SimRt, _>("session/new", async move { b.new_session().await });
    bridge.disconnect().await;
    let created = creating.join().await;
    let live = rig.registry.list().len();
    assert_eq!(
        live, 0,
        "A1: session/new answered {created:?} and left {live} live session(s)"
    );
    bridge.unload().await;
}

#[test]
fn a_race_test_over_the_bridge() {
    let name = "a_race_test_over_the_bridge";
    let report = RaceTest::new(name)
        .bridge()
        .dfs(new_session_vs_disconnect)
        .unwrap();
    assert!(report.exhausted && report.executions > 1, "{report:?}");
    // M7: session/new ignores a close that happened while it awaited.
    let failure = RaceTest::new(name)
        .bridge()
        .faults(Faults::none().with(Fault::M7))
        .dfs(new_session_vs_disconnect)
        .unwrap_err();
    assert!(failure.to_string().contains("A1"), "{failure}");
}

/// S7 through tool-bash: a background job its agent started is gone (not
/// readable, not running) once the agent's dispose returns, while another
/// task reads it.
async fn job_dies_with_its_agent(rig: Arc<Rig<SimRt>>) {
    use lifecycle::shell::ExecResult;
    let tools = rig
        .tool_bash
        .clone()
        .expect("RaceTest::tool_bash puts tool-bash in the rig");
    let owner = rig.owner("owner");
    let a = rig.provider.create("a", &owner).await.expect("create");
    let job = match tools.bash(Some("a"), "work", true).await {
        Ok(ExecResult::Started { job }) => job,
        other => panic!("background bash answered {other:?}"),
    };
    let (t, j) = (tools.clone(), job.clone());
    let reader = rt::spawn::<SimRt, _>("bash_output", async move {
        t.bash_output(Some("a"), &j).is_ok()
    });
    a.dispose().await;
    reader.join().await;
    let after = tools.bash_output(Some("a"), &job);
    assert!(
        after.is_err(),
        "S7: job {job} still readable after dispose: {after:?}"
    );
    owner.unload().await;
}

#[test]
fn a_race_test_over_tool_bash() {
    let name = "a_race_test_over_tool_bash";
    let report = RaceTest::new(name)
        .tool_bash()
        .dfs(job_dies_with_its_agent)
        .unwrap();
    assert!(report.exhausted && report.executions > 1, "{report:?}");
    // M20: disposing an agent leaves its background jobs running, readable.
    let failure = RaceTest::new(name)
        .tool_bash()
        .faults(Faults::none().with(Fault::M20))
        .dfs(job_dies_with_its_agent)
        .unwrap_err();
    assert!(failure.to_string().contains("S7"), "{failure}");
}

/// The rig's shell: agent `a` starts a job that runs until the test ends
/// it, and a second task ends it while `a` is disposed. Whichever comes
/// first, `a`'s drain must settle and forget it (S7). The body asserts
/// nothing: the rig's end checks S7 on the shell's side.
async fn a_job_ended_while_its_owner_goes<R: Rt>(rig: Arc<Rig<R>>) {
    let shell = rig
        .shell
        .clone()
        .expect("RaceTest::shell puts a shell in the rig");
    shell.script("serve", Script::held("listening"));
    let owner = rig.owner("owner");
    let a = rig.provider.create("a", &owner).await.expect("create");
    let job = rig.start_job("a", "serve").await.expect("a background job");
    let (sh, j) = (shell.clone(), job.clone());
    let ender = rt::spawn::<R, _>("exit", async move { sh.exit(&j, 0) });
    a.dispose().await;
    ender.join().await;
    owner.unload().await;
}

#[test]
fn a_race_test_scripts_the_shell_and_ends_a_job_at_a_chosen_moment() {
    let name = "a_race_test_scripts_the_shell_and_ends_a_job_at_a_chosen_moment";
    let t = RaceTest::new(name).shell().executions(2_000);
    let report = t.dfs(a_job_ended_while_its_owner_goes::<SimRt>).unwrap();
    eprintln!(
        "shell: sim-dfs {} executions, exhausted {}",
        report.executions, report.exhausted
    );
    assert!(report.exhausted && report.executions > 1, "{report:?}");
    t.shuttle(a_job_ended_while_its_owner_goes::<ShuttleRt>)
        .unwrap();
    t.loom(a_job_ended_while_its_owner_goes::<LoomRt>).unwrap();
    // M20: the dispose leaves the job running and readable; only the
    // rig's check on the shell's side can see it.
    let failure = t
        .clone()
        .faults(Faults::none().with(Fault::M20))
        .dfs(a_job_ended_while_its_owner_goes::<SimRt>)
        .unwrap_err();
    let shown = failure.to_string();
    assert!(
        failure.rule == Broken::Rule(RuleId::Spec(Rule::S7)) && shown.contains("LIFECYCLE_REPLAY="),
        "{shown}"
    );
    let again = t
        .clone()
        .faults(Faults::none().with(Fault::M20))
        .replay(&failure.replay, a_job_ended_while_its_owner_goes::<SimRt>)
        .unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (failure.rule, &failure.message)
    );
}

/// `session/close` racing the session's prompt: whichever wins, the prompt
/// answers (never hangs), no agent of the session is left once the close
/// returns (A1-style, from the registry's side), and a prompt after the
/// close is refused.
async fn close_vs_prompt(rig: Arc<Rig<SimRt>>) {
    use lifecycle::acp::StopReason;
    let bridge = rig.bridge.clone().expect("RaceTest::bridge");
    let id = bridge.new_session().await.expect("session/new");
    let (b, i) = (bridge.clone(), id.clone());
    let prompting = rt::spawn::<SimRt, _>("session/prompt", async move { b.prompt(&i, "p").await });
    bridge
        .close(&id)
        .await
        .expect("session/close of a live session");
    assert!(
        rig.registry.get(&id).is_none(),
        "the session's agent is still registered after session/close"
    );
    let answered = prompting.join().await;
    assert!(
        matches!(
            answered,
            Ok(StopReason::EndTurn | StopReason::Cancelled) | Err(_)
        ),
        "{answered:?}"
    );
    assert!(
        bridge.prompt(&id, "late").await.is_err(),
        "a prompt of a closed session ran"
    );
    assert!(bridge.close(&id).await.is_err(), "closed twice");
    bridge.unload().await;
}

#[test]
fn session_close_races_its_prompt() {
    let report = RaceTest::new("session_close_races_its_prompt")
        .bridge()
        .dfs(close_vs_prompt)
        .unwrap();
    eprintln!(
        "close: sim-dfs {} executions, exhausted {}",
        report.executions, report.exhausted
    );
    assert!(report.exhausted && report.executions > 1, "{report:?}");
}

/// A disconnect racing a `session/close`: the quiesce joins the close's
/// teardown, so once the disconnect returns no agent of the session is
/// registered (A1), whichever of the two started first.
async fn close_vs_disconnect(rig: Arc<Rig<SimRt>>) {
    let bridge = rig.bridge.clone().expect("RaceTest::bridge");
    let id = bridge.new_session().await.expect("session/new");
    let (b, i) = (bridge.clone(), id.clone());
    let closing = rt::spawn::<SimRt, _>("session/close", async move { b.close(&i).await });
    bridge.disconnect().await;
    assert!(
        rig.registry.get(&id).is_none(),
        "A1: the session's agent is still registered after the disconnect returned"
    );
    let _ = closing.join().await;
}

#[test]
fn a_disconnect_joins_a_close_in_progress() {
    let report = RaceTest::new("a_disconnect_joins_a_close_in_progress")
        .bridge()
        .dfs(close_vs_disconnect)
        .unwrap();
    eprintln!(
        "close and disconnect: sim-dfs {} executions, exhausted {}",
        report.executions, report.exhausted
    );
    assert!(report.exhausted && report.executions > 1, "{report:?}");
}

/// The ACP server's outbound budget (A10) under the checkers: with a
/// budget of one byte, each of three one-byte updates waits for the
/// writer to write the one before it. A send never passes with the budget
/// full, and no wait is lost (a lost wake-up stalls the execution).
async fn outbound_budget<R: Rt>(_rig: Arc<Rig<R>>) {
    use lifecycle::acp::outbound::Outbound;
    use lifecycle::rt::Monitor;
    let out = Arc::new(Outbound::<R>::with_budget(1));
    let sent = Arc::new(Monitor::<R, usize>::new(0));
    let (o, s) = (out.clone(), sent.clone());
    let writer = rt::spawn::<R, _>("writer", async move {
        for k in 1..=3 {
            s.wait_until("an update to write", |n| (**n >= k).then_some(()))
                .await;
            o.wrote_update();
        }
    });
    for _ in 0..3 {
        out.room().await;
        let queued = out.bytes();
        assert!(
            queued < 1,
            "A10: an update passed with {queued} bytes queued"
        );
        out.count(1, || true);
        sent.update(|n| *n += 1);
    }
    writer.join().await;
    assert_eq!(out.bytes(), 0, "every update written");
}

#[test]
fn the_outbound_budget_waits_and_wakes_under_every_checker() {
    let t = RaceTest::new("the_outbound_budget_waits_and_wakes_under_every_checker");
    let dfs = t.dfs(outbound_budget::<SimRt>).unwrap();
    eprintln!(
        "outbound: sim-dfs {} executions, exhausted {}",
        dfs.executions, dfs.exhausted
    );
    assert!(dfs.exhausted && dfs.executions > 1, "{dfs:?}");
    t.shuttle(outbound_budget::<ShuttleRt>).unwrap();
    t.loom(outbound_budget::<LoomRt>).unwrap();
}

/// Two lock sections in one poll, and a reader: at lock granularity the
/// reader may run between them and see the odd value; at await granularity
/// nothing runs between two awaits of one task.
async fn two_sections_one_poll(_rig: Arc<Rig<SimRt>>) {
    let n = Arc::new(rt::Mutex::<SimRt, u32>::new(0));
    let n2 = n.clone();
    let reader = rt::spawn::<SimRt, _>("reader", async move { n2.with(|v| *v) });
    n.with(|v| *v += 1);
    n.with(|v| *v += 1);
    let seen = reader.join().await;
    assert!(seen % 2 == 0, "saw {seen} between two sections of one poll");
}

#[test]
fn granularity_is_chosen_per_test() {
    use lifecycle_harness::check::api::Granularity;
    // The default is lock granularity: the reader is run between the
    // sections, and the assertion fails.
    let failure = RaceTest::new("granularity_is_chosen_per_test")
        .dfs(two_sections_one_poll)
        .unwrap_err();
    assert!(failure.message.contains("saw 1"), "{failure}");
    // Its replay line replays at the test's granularity: the same failure.
    let again = RaceTest::new("granularity_is_chosen_per_test")
        .replay(&failure.replay, two_sections_one_poll)
        .unwrap_err();
    assert_eq!(again.message, failure.message);
    // At await granularity every schedule passes, and there are fewer.
    let report = RaceTest::new("granularity_is_chosen_per_test_await")
        .granularity(Granularity::Await)
        .dfs(two_sections_one_poll)
        .unwrap();
    assert!(report.exhausted, "{report:?}");
}

/// R1 counted in an `Rc<RefCell<_>>` held across awaits: the body's
/// future is not `Send`.
async fn winners_in_an_rc(rig: Arc<Rig<SimRt>>) {
    use std::cell::RefCell;
    use std::rc::Rc;
    let wins = Rc::new(RefCell::new(0u8));
    let owner = rig.owner("owner");
    let (p, o) = (rig.provider.clone(), owner.clone());
    let other = rt::spawn::<SimRt, _>("create", async move { p.create("x", &o).await.is_ok() });
    if rig.provider.create("x", &owner).await.is_ok() {
        *wins.borrow_mut() += 1;
    }
    if other.join().await {
        *wins.borrow_mut() += 1;
    }
    assert_eq!(*wins.borrow(), 1, "R1: one of two same-id creates wins");
    owner.unload().await;
}

#[test]
fn a_non_send_body_runs_on_the_simulator() {
    let name = "a_non_send_body_runs_on_the_simulator";
    let t = RaceTest::new(name).executions(500);
    assert_eq!(t.sim_local(winners_in_an_rc).unwrap().executions, 500);
    let report = t.dfs_local(winners_in_an_rc).unwrap();
    assert!(report.exhausted, "{report:?}");
    let failure = RaceTest::new(name)
        .faults(Faults::none().with(Fault::M9))
        .dfs_local(winners_in_an_rc)
        .unwrap_err();
    assert!(failure.to_string().contains("R1"), "{failure}");
}

#[test]
fn a_panic_under_shuttle_fails_with_a_replay_line_that_reproduces_it() {
    const NAME: &str = "a_panic_under_shuttle_fails_with_a_replay_line_that_reproduces_it";
    let t = RaceTest::new(NAME);
    let failure = t.shuttle(mine_wins::<ShuttleRt>).unwrap_err();
    assert_eq!(failure.rule, Broken::Rule(RuleId::Panic), "{failure}");
    assert!(
        failure.message.contains("the closure's create wins"),
        "{failure}"
    );
    assert!(
        failure
            .replay
            .starts_with(&format!("v3:{NAME}:shuttle-random:")),
        "{failure}"
    );
    let again = t
        .replay(&failure.replay, mine_wins::<ShuttleRt>)
        .unwrap_err();
    assert_eq!(
        (again.rule, &again.message),
        (failure.rule, &failure.message)
    );
}
