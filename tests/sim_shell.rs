//! The simulated shell (`SimShell`: the harness's `ShellExecutor` on
//! virtual time). A script decides what a command prints, how it exits and
//! how long it runs; `exit` ends a job at a chosen moment; `until_finished`
//! waits for jobs to end; `history` is what each job went through, as the
//! shell saw it.

use lifecycle::rt::{Rt, SimRt};
use lifecycle::shell::sim::{JobFate, Script, SimShell};
use lifecycle::shell::{ExecResult, ShellExecRequest, ShellExecutor};
use lifecycle_sim::Sim;

fn run<T: 'static>(f: impl std::future::Future<Output = T> + 'static) -> T {
    Sim::with_seed(7)
        .block_on(f)
        .expect("the simulation finishes")
}

fn req(command: &str, background: bool) -> ShellExecRequest {
    ShellExecRequest {
        command: command.into(),
        background,
        ..Default::default()
    }
}

fn script(duration_ms: u64, output: &str, exit: i32) -> Script {
    Script {
        duration_ms,
        output: output.into(),
        exit,
    }
}

async fn start(shell: &SimShell<SimRt>, command: &str) -> String {
    match shell.exec(req(command, true).into()).await {
        Ok(ExecResult::Started { job }) => job,
        other => panic!("{command} in the background answered {other:?}"),
    }
}

#[test]
fn a_script_decides_output_exit_and_duration() {
    run(async {
        let shell = SimShell::<SimRt>::default();
        shell.script("build", script(5_000, "built", 3));
        let before = SimRt::now_ms();
        let built = shell.exec(req("build", false).into()).await;
        assert_eq!(
            built,
            Ok(ExecResult::Finished {
                exit: 3,
                output: "built".into()
            })
        );
        assert!(SimRt::now_ms() - before >= 5_000, "it ran for its 5 s");
        // An unscripted command prints its own text and exits 0.
        let echoed = shell.exec(req("echo hi", false).into()).await;
        assert_eq!(
            echoed,
            Ok(ExecResult::Finished {
                exit: 0,
                output: "echo hi".into()
            })
        );
    });
}

#[test]
fn exit_ends_a_job_now_and_until_finished_waits_for_jobs() {
    run(async {
        let shell = SimShell::<SimRt>::default();
        shell.script("long", script(1_000_000, "done", 0));
        shell.script("short", script(100, "s", 4));
        let long = start(&shell, "long").await;
        let short = start(&shell, "short").await;
        shell.until_finished(&[&short]).await;
        let status = shell.job(&short).expect("short is known");
        assert_eq!(
            (status.running, status.exit, status.output.as_str()),
            (false, Some(4), "s")
        );
        assert!(shell.job(&long).expect("long is known").running);
        assert!(shell.exit(&long, 7), "long was running");
        assert!(!shell.exit(&long, 8), "long is no longer running");
        let status = shell.job(&long).expect("long is known");
        assert_eq!(
            (status.running, status.exit, status.output.as_str()),
            (false, Some(7), "done")
        );
        shell.until_finished(&[&long, &short]).await;
        assert!(
            SimRt::now_ms() < 1_000_000,
            "long's script was not waited for"
        );
        assert_eq!(shell.history(&long), [JobFate::Exited(7)]);
        assert_eq!(shell.history(&short), [JobFate::Exited(4)]);
        assert!(shell.history("job-99").is_empty());
    });
}

/// S7 on the simulated shell: a drain kills and forgets the owner's jobs,
/// returns their ids, and leaves other owners' jobs running.
#[test]
fn a_drain_kills_and_forgets_the_owners_jobs_only() {
    run(async {
        let shell = SimShell::<SimRt>::default();
        shell.script("long", script(1_000_000, "done", 0));
        let owned = |owner: &str| ShellExecRequest {
            owner: Some(owner.to_string()),
            ..req("long", true)
        };
        let mut jobs = Vec::new();
        for owner in ["a", "b", "a"] {
            match shell.exec(owned(owner).into()).await {
                Ok(ExecResult::Started { job }) => jobs.push(job),
                other => panic!("answered {other:?}"),
            }
        }
        let drained = shell.drain("a").await;
        assert_eq!(drained, [jobs[0].clone(), jobs[2].clone()]);
        for job in &drained {
            assert_eq!(
                shell.history(job),
                [JobFate::KilledByDrain, JobFate::Forgotten]
            );
            assert!(shell.job(job).is_none(), "{job} is forgotten");
        }
        assert!(shell.job(&jobs[1]).expect("b's job").running);
    });
}

/// A listener taken off with `off_done` hears no later job; the others
/// still do.
#[test]
fn off_done_stops_one_listener_only() {
    use std::sync::{Arc, Mutex};
    run(async {
        let shell = SimShell::<SimRt>::default();
        let heard: Arc<Mutex<Vec<(&str, String)>>> = Arc::default();
        let listener = |name: &'static str| {
            let heard = heard.clone();
            Arc::new(move |job: &str| heard.lock().unwrap().push((name, job.to_string())))
        };
        let gone = shell.on_done(listener("gone"));
        shell.on_done(listener("kept"));
        shell.off_done(gone);
        let job = start(&shell, "quick").await;
        shell.until_finished(&[&job]).await;
        assert_eq!(*heard.lock().unwrap(), [("kept", job)]);
    });
}

/// loom's shape (`SimShell::new(true)`): the timed jobs share one driver
/// task, which ends them one at a time, earliest deadline first, and ends
/// itself once the shell is dropped and no timer is left (else the
/// simulation would stall).
#[test]
fn one_driver_ends_timed_jobs_in_deadline_order_and_ends_with_the_shell() {
    let (fates, tasks) = {
        let mut sim = Sim::with_seed(7);
        let fates = sim
            .block_on(async {
                let shell = SimShell::<SimRt>::new(true);
                shell.script("slow", script(300, "slow", 1));
                shell.script("fast", script(100, "fast", 2));
                shell.script("held", Script::held("h"));
                let fast = start(&shell, "fast").await;
                let slow = start(&shell, "slow").await;
                let held = start(&shell, "held").await;
                let killed = start(&shell, "slow").await;
                assert!(shell.kill(&killed), "a killed job's timer ends nothing");
                shell.until_finished(&[&fast]).await;
                assert!(shell.job(&slow).expect("slow is known").running);
                shell.until_finished(&[&slow]).await;
                assert!(SimRt::now_ms() >= 300, "slow ran its 300 ms");
                assert!(shell.exit(&held, 0), "no timer ends a held job");
                [&slow, &fast, &held, &killed].map(|j| shell.history(j))
            })
            .expect("the driver ends once the shell is dropped");
        (fates, sim.task_count())
    };
    assert_eq!(
        fates,
        [
            vec![JobFate::Exited(1)],
            vec![JobFate::Exited(2)],
            vec![JobFate::Exited(0)],
            vec![JobFate::Killed],
        ]
    );
    assert_eq!(
        tasks, 2,
        "the main task and one driver, for three timed jobs"
    );
}
