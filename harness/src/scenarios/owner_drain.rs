//! `dispose-with-owned-job`: agent `a` owns a background job `ja`, agent
//! `b` owns `jb`. `a` is disposed; once its teardown began, `ja`'s process
//! exits on its own and a caller with `a`'s token races `bash_output` then
//! `bash_kill` on it.
//! Then a NEW agent with id `a` asks for `ja` (S7, D5).
//!
//! What may happen to `ja`, in the shell's own history: it exits on its
//! own, the caller kills it, or the drain kills it; in every case the drain
//! forgets it before the dispose returns. What may not:
//! - `ja` still running or still known when `a`'s dispose returned (S7);
//! - the racing caller refused for anything but `unknown bash task` (S7);
//! - the new `a` reading or killing `ja`, or receiving its completion
//!   notice (S7);
//! - `jb` touched by `a`'s dispose: killed, forgotten or fenced off (D5;
//!   it may exit on its own).
//!
//! Everything is observed on the receiving side: the simulated shell's
//! history of each job (what it was actually killed or settled by) and the
//! answers the callers got back. The owner's unload at the end drains `b`
//! as well (S7 on the scope-unload path). Fault M20 leaves the drain out.

use super::goals::{excused, on, Goal, LOOM_SAMPLED_EARLY_WINDOW};
use super::rig::{beside, Rig};
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::Outcome;
use crate::checker::Checker;
use crate::events::LifecycleEvent;
use crate::faults::Fault;
use crate::oracle::Violation;
use crate::rt::{self, Rt};
use crate::rules::Rule;
use crate::shell::sim::{JobFate, Script, SimShell};
use crate::shell::{ExecResult, ShellExecutor};
use crate::tool_bash::ToolBash;
use std::sync::Arc;

/// shuttle's uniform random walk runs the job's exit as soon as the
/// teardown began, long before the drain's turn comes.
const SHUTTLE_RANDOM_EXIT_FIRST: &[(Checker, &str)] = &[(Checker::ShuttleRandom,
    "not reached in runs far past the PR budget: the job's exit, ready once the teardown began, always runs before the teardown reaches the drain (shuttle-pct and sim reach it)",
)];

/// A goal of [`DISPOSE_WITH_OWNED_JOB`].
pub const EXITED_BEFORE_DRAIN: Goal = excused(
    on!(
        "exited-before-drain",
        "a's job exits on its own after the teardown began, before the drain reaches it",
        |f: &Said| f.ja == Ended::Exited,
    ),
    LOOM_SAMPLED_EARLY_WINDOW,
);

/// A goal of [`DISPOSE_WITH_OWNED_JOB`].
pub const KILLED_BY_DRAIN: Goal = excused(
    on!(
        "killed-by-drain",
        "the drain kills a's job while it runs",
        |f: &Said| f.ja == Ended::Drained,
    ),
    SHUTTLE_RANDOM_EXIT_FIRST,
);

/// A goal of [`DISPOSE_WITH_OWNED_JOB`].
pub const KILL_RACING_DRAIN: Goal = excused(
    on!(
        "kill-racing-drain",
        "the caller's bash_kill lands after the drain killed the job and before it forgot it",
        |f: &Said| f.ja == Ended::Drained && f.kill == Answer::Finished,
    ),
    SHUTTLE_RANDOM_EXIT_FIRST,
);

const GOALS: &[Goal] = &[EXITED_BEFORE_DRAIN, KILLED_BY_DRAIN, KILL_RACING_DRAIN];

/// `dispose-with-owned-job`, registered in [`super::ALL`].
pub static DISPOSE_WITH_OWNED_JOB: Scenario = Scenario::new(
    "dispose-with-owned-job",
    "dispose an agent while its background job exits and a caller reads and kills it; a new agent with its id",
    bodies!(dispose_with_owned_job),
)
.rules(&[Rule::S7, Rule::D5])
.goals(GOALS)
.targets(&[Fault::M20])
// sim-dfs: many tasks (`tasks.dispose-with-owned-job.all`). Bound 1 reaches
// every goal (`sim-dfs.dispose-with-owned-job.schedules`); bound 2 takes
// many times the schedules and the time.
// loom (in its shape, 5 threads) at bound 1 does not finish in minutes:
// the PR tier samples `loom_max` executions.
.bounds(Bounds {
    dfs: Some(1),
    loom_cap: 1,
    loom_max: Some(20_000),
})
.coverage_gap(
    "sim-dfs at bound 1 misses views the other checkers reach (most from sim seeds: the order of world events around the teardown), and bound 2 still misses most of them; `check` reports the misses of each run",
);

/// What an execution did: how a's job first ended in the shell's history,
/// and what the racing caller's `bash_kill` and `bash_output` answered.
/// Shown as `ja:drained kill:finished out:read`.
struct Said {
    ja: Ended,
    kill: Answer,
    out: Answer,
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ja = match self.ja {
            Ended::Running => "running",
            Ended::Exited => "exited",
            Ended::Killed => "killed",
            Ended::Drained => "drained",
            Ended::ForgottenRunning => "forgotten-running",
        };
        write!(
            f,
            "ja:{ja} kill:{} out:{}",
            self.kill.word(),
            self.out.word()
        )
    }
}

/// How a job first ended, in the shell's history.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ended {
    Running,
    Exited,
    Killed,
    Drained,
    ForgottenRunning,
}

/// A job's fate in the shell's history: how it first ended.
fn fate(history: &[JobFate]) -> Ended {
    match history.first() {
        None => Ended::Running,
        Some(JobFate::Exited(_)) => Ended::Exited,
        Some(JobFate::Killed) => Ended::Killed,
        Some(JobFate::KilledByDrain) => Ended::Drained,
        Some(JobFate::Forgotten) => Ended::ForgottenRunning,
    }
}

/// A tool's answer about a job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Answer {
    /// `bash_output` read it.
    Read,
    /// `bash_kill` killed it.
    Killed,
    /// `bash_kill` found it finished.
    Finished,
    /// The job is unknown to the tool.
    Unknown,
    /// Any other error.
    Refused,
}

impl Answer {
    fn word(self) -> &'static str {
        match self {
            Answer::Read => "read",
            Answer::Killed => "killed",
            Answer::Finished => "finished",
            Answer::Unknown => "unknown",
            Answer::Refused => "refused",
        }
    }
}

/// A tool answer, typed.
fn word<T>(r: &Result<T, String>, job: &str, ok: impl Fn(&T) -> Answer) -> Answer {
    match r {
        Ok(v) => ok(v),
        Err(e) if *e == format!("unknown bash task \"{job}\"") => Answer::Unknown,
        Err(_) => Answer::Refused,
    }
}

/// The body: see the module docs.
pub async fn dispose_with_owned_job<R: Rt>(ctx: Ctx) -> Outcome {
    let rig = Rig::<R>::new(ctx.faults, ctx.durable);
    let owner = rig.owner("owner");
    let shell = Arc::new(SimShell::<R>::new(ctx.few_threads));
    for cmd in ["work-a", "work-b"] {
        // Runs until the scenario ends it (or a kill, or a drain).
        shell.script(
            cmd,
            Script {
                duration_ms: 100_000,
                output: format!("{cmd} out"),
                exit: 0,
            },
        );
    }
    rig.set_shell(shell.clone());
    let tb = ToolBash::load(shell.clone(), rig.registry.clone());
    let a = rig.provider.create("a", &owner).await.expect("create a");
    let b = rig.provider.create("b", &owner).await.expect("create b");
    let start = |caller: &'static str, cmd: &'static str| {
        let (tb, rig) = (tb.clone(), &rig);
        async move {
            match tb.bash(Some(caller), cmd, true).await {
                Ok(ExecResult::Started { job }) => {
                    rig.job_started(&job, Some(caller));
                    job
                }
                other => panic!("background bash answered {other:?}"),
            }
        }
    };
    let ja = start("a", "work-a").await;
    let jb = start("b", "work-b").await;

    // The job's own exit and a caller with a's token race the teardown:
    // both start once it began, so they land around the drain.
    let began = |w: Arc<crate::world::World<R>>| async move {
        w.until_all(
            "a's teardown began",
            &["a"],
            crate::world::Keys::Subjects,
            |e, id| matches!(e, LifecycleEvent::TeardownBegan { id: i, .. } if i == id),
        )
        .await
    };
    // The job's own exit: a task ends it once the teardown began (its
    // 100 s timer never fires first). In loom's shape its timer is that
    // exit: there a sleep is a yield, so the shell's driver ends it at
    // any point after it started, and no task of its own is needed.
    let (sh, j, w) = (shell.clone(), ja.clone(), rig.world.clone());
    let exit = (!ctx.few_threads).then(|| {
        rt::spawn::<R, ()>("ja exits", async move {
            began(w).await;
            sh.exit(&j, 0);
        })
    });
    let (t, j, w) = (tb.clone(), ja.clone(), rig.world.clone());
    let caller = async move {
        began(w).await;
        let out = t.bash_output(Some("a"), &j);
        R::yield_now().await;
        let kill = t.bash_kill(Some("a"), &j);
        (out, kill)
    };
    // Observed when the dispose returned: the shell's account of both jobs.
    let dispose = async {
        a.dispose().await;
        let seen = (
            shell.history(&ja),
            shell.history(&jb),
            shell.job(&jb),
            tb.bash_output(Some("b"), &jb),
        );
        if let Some(exit) = exit {
            exit.join().await;
        }
        seen
    };
    let ((ja_at_return, jb_at_return, jb_status, jb_read), (out, kill)) =
        beside::<R, _, _>(ctx.few_threads, dispose, ("caller", caller)).await;

    // A new agent with the old id.
    let a2 = rig.provider.create("a", &owner).await.expect("re-create a");
    let out2 = tb.bash_output(Some("a"), &ja);
    let kill2 = tb.bash_kill(Some("a"), &ja);
    a2.agent.when_idle().await;
    let notice = format!("[bash] {ja} ");
    let a2_notices: Vec<String> = a2
        .agent
        .durable_log()
        .into_iter()
        .filter_map(|e| match e {
            crate::session_log::Entry::UserMessage { text, .. } if text.starts_with(&notice) => {
                Some(text)
            }
            _ => None,
        })
        .collect();

    let unknown = Err(format!("unknown bash task \"{ja}\""));
    let (out_w, kill_w) = (
        word(&out, &ja, |_| Answer::Read),
        word(&kill, &ja, |k| {
            if *k {
                Answer::Killed
            } else {
                Answer::Finished
            }
        }),
    );
    let mut own = vec![
        (
            JobFate::drained(&ja_at_return),
            Violation::new(
                Rule::S7,
                format!(
                    "when a's dispose returned, its job {ja} was not settled and forgotten: the shell's history of it is {ja_at_return:?}"
                ),
            ),
        ),
        (
            out_w != Answer::Refused && kill_w != Answer::Refused,
            Violation::new(
                Rule::S7,
                format!(
                    "a caller with a's token racing the dispose got bash_output {out:?}, bash_kill {kill:?}"
                ),
            ),
        ),
        (
            out2 == unknown && kill2.clone().map(drop) == unknown.clone().map(drop),
            Violation::new(
                Rule::S7,
                format!(
                    "the new agent a could reach the old a's job {ja}: bash_output {out2:?}, bash_kill {kill2:?}"
                ),
            ),
        ),
        (
            a2_notices.is_empty(),
            Violation::new(
                Rule::S7,
                format!("the new agent a received the old a's job notice: {a2_notices:?}"),
            ),
        ),
        (
            // jb may exit on its own (its timer), but nothing else.
            jb_at_return.iter().all(|f| matches!(f, JobFate::Exited(_)))
                && jb_status.is_some()
                && jb_read.is_ok()
                && shell.owner_of(&jb).as_deref() == Some("b")
                && rig.registry.get("b").is_some(),
            Violation::new(
                Rule::D5,
                format!(
                    "a's dispose touched b: {jb}'s history {jb_at_return:?}, status {jb_status:?}, b's read {jb_read:?}"
                ),
            ),
        ),
    ];
    rig.track(&a.agent, a.serial());
    rig.track(&b.agent, b.serial());
    rig.track(&a2.agent, a2.serial());
    owner.unload().await;
    let jb_after = shell.history(&jb);
    own.push((
        JobFate::drained(&jb_after),
        Violation::new(
            Rule::S7,
            format!(
                "the owner's unload disposed b, and its job {jb} was not settled and forgotten: {jb_after:?}"
            ),
        ),
    ));
    tb.unload();
    let said = Said {
        ja: fate(&shell.history(&ja)),
        kill: kill_w,
        out: out_w,
    };
    rig.finish(said, own)
}
