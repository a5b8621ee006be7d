//! The real shell executor (`bash -c` on tokio): output capture, owners on
//! background jobs, kill, the job-done signal, and no process left behind
//! when the executor is dropped.

use lifecycle_testkit as common;

use common::acp::processes_with;
use lifecycle::shell::real::RealShell;
use lifecycle::shell::{ExecResult, ShellExecRequest, ShellExecutor};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn req(command: &str, background: bool, owner: Option<&str>) -> ShellExecRequest {
    ShellExecRequest {
        command: command.into(),
        background,
        owner: owner.map(str::to_string),
        ..Default::default()
    }
}

/// Polls `cond` every 20 ms for up to 10 s (a loaded CI machine may take a
/// while to spawn or reap a process); whether it became true.
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_captures_output_and_exit_code() {
    let shell = RealShell::new();
    let r = shell
        .exec(req("echo out; echo err >&2; exit 3", false, None).into())
        .await
        .unwrap();
    // stdout and stderr are two pipes, read as they come: their lines keep
    // their own order, not one between the streams (a loaded machine gave
    // "err\nout\n").
    let ExecResult::Finished { exit, output } = r else {
        panic!("a foreground command answered {r:?}");
    };
    assert_eq!(exit, 3);
    assert!(
        output == "out\nerr\n" || output == "err\nout\n",
        "{output:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_job_owner_output_and_done_signal() {
    let shell = RealShell::new();
    let done: Arc<Mutex<Vec<String>>> = Arc::default();
    let d = done.clone();
    shell.on_done(Arc::new(move |job: &str| {
        d.lock().unwrap().push(job.to_string())
    }));
    let ExecResult::Started { job } = shell
        .exec(req("echo bg", true, Some("")).into())
        .await
        .unwrap()
    else {
        panic!("not started")
    };
    assert_eq!(
        shell.owner_of(&job),
        Some(String::new()),
        "an empty-string owner is kept as is"
    );
    for _ in 0..200 {
        if !done.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*done.lock().unwrap(), vec![job.clone()]);
    let status = shell.job(&job).unwrap();
    assert_eq!(
        (status.running, status.exit, status.output.as_str()),
        (false, Some(0), "bg\n")
    );
    assert!(shell.job("job-99").is_none());
    assert_eq!(shell.owner_of("job-99"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_and_drop_leave_no_process() {
    let shell = RealShell::new();
    let ExecResult::Started { job } = shell
        .exec(req("sleep 30", true, Some("a")).into())
        .await
        .unwrap()
    else {
        panic!("not started")
    };
    assert!(
        eventually(|| !shell.running_pids().is_empty()).await,
        "the job's process never showed up"
    );
    let pids = shell.running_pids();
    assert_eq!(pids.len(), 1);
    assert!(shell.kill(&job));
    shell.shutdown().await;
    assert!(shell.job(&job).unwrap().exit.is_some());
    assert!(
        eventually(|| !alive(pids[0])).await,
        "killed process {} still running",
        pids[0]
    );

    let ExecResult::Started { .. } = shell
        .exec(req("sleep 30", true, None).into())
        .await
        .unwrap()
    else {
        panic!("not started")
    };
    assert!(
        eventually(|| !shell.running_pids().is_empty()).await,
        "the second job's process never showed up"
    );
    let pid = shell.running_pids()[0];
    drop(shell);
    assert!(
        eventually(|| !alive(pid)).await,
        "dropping the executor left process {pid} running"
    );
}

/// Process ids of every live process in process group `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // /proc/<pid>/stat: pid (comm) state ppid pgrp ...; comm may hold
            // spaces, so split after its closing parenthesis.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.to_string();
                    let mut f = rest.split_whitespace();
                    let state = f.next()?.to_string();
                    let pgrp: u32 = f.nth(1)?.parse().ok()?;
                    Some(state != "Z" && pgrp == pgid)
                })
                .unwrap_or(false)
        })
        .collect()
}

/// S7 on the real shell: draining an owner kills the whole process group of
/// each of its jobs (the shell and the children it started), awaits their
/// settlement (the job-done signal went out), and forgets them; another
/// owner's job is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s7_drain_kills_the_process_group_and_forgets_the_job() {
    let shell = RealShell::new();
    let done: Arc<Mutex<Vec<String>>> = Arc::default();
    let d = done.clone();
    shell.on_done(Arc::new(move |job: &str| {
        d.lock().unwrap().push(job.to_string())
    }));
    let start = |owner: &str| shell.exec(req("sleep 100 & sleep 100", true, Some(owner)).into());
    let ExecResult::Started { job } = start("a").await.unwrap() else {
        panic!("not started")
    };
    let ExecResult::Started { job: other } = start("b").await.unwrap() else {
        panic!("not started")
    };
    assert!(
        eventually(|| shell.running_pids().len() == 2).await,
        "the jobs' processes never showed up"
    );
    // The group of a's job: its shell's pid (process_group(0)). Wait until
    // the background sleep joined it (bash may exec the last sleep in its
    // own process, so the group holds two or three processes).
    let pids = shell.running_pids();
    let pgid = pids[0];
    assert!(
        eventually(|| group_members(pgid).len() >= 2).await,
        "job {job}: group {pgid} has {:?}, not bash and its sleeps",
        group_members(pgid)
    );
    let started = std::time::Instant::now();
    let drained = shell.drain("a").await;
    assert_eq!(drained, vec![job.clone()]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the drain waited {:?}: the group was not killed",
        started.elapsed()
    );
    // Settled before the drain returned: its job-done signal went out.
    assert_eq!(*done.lock().unwrap(), vec![job.clone()]);
    assert!(
        eventually(|| group_members(pgid).is_empty()).await,
        "process group {pgid} of the drained job still has {:?}",
        group_members(pgid)
    );
    assert!(
        shell.job(&job).is_none(),
        "{job} still known after the drain"
    );
    assert_eq!(shell.owner_of(&job), None);
    assert!(!shell.kill(&job), "{job} could be killed after the drain");
    // b's job is untouched.
    let status = shell.job(&other).expect("b's job is known");
    assert!(status.running, "b's job {other} was stopped: {status:?}");
    assert_eq!(shell.owner_of(&other).as_deref(), Some("b"));
    assert!(shell.kill(&other));
    shell.shutdown().await;
    assert!(
        eventually(|| group_members(pids[1]).is_empty()).await,
        "killing b's job left {:?} in its group",
        group_members(pids[1])
    );
}

/// A listener taken off with `off_done` hears no later job; the others
/// still do (tool-bash's unload takes its listener off, S5).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_done_stops_one_listener_only() {
    let shell = RealShell::new();
    let heard: Arc<Mutex<Vec<(&str, String)>>> = Arc::default();
    let listener = |name: &'static str| {
        let heard = heard.clone();
        Arc::new(move |job: &str| heard.lock().unwrap().push((name, job.to_string())))
    };
    let gone = shell.on_done(listener("gone"));
    shell.on_done(listener("kept"));
    shell.off_done(gone);
    let ExecResult::Started { job } = shell.exec(req("true", true, None).into()).await.unwrap()
    else {
        panic!("not started")
    };
    assert!(eventually(|| !heard.lock().unwrap().is_empty()).await);
    // A late call of the removed listener would land right after the other.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*heard.lock().unwrap(), [("kept", job)]);
}

/// C10: dropping a foreground command's exec future (what a cancelled step
/// does) kills its whole process group, a child it started in the
/// background too, not only the shell it ran in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_foreground_exec_kills_its_whole_group() {
    let shell = RealShell::new();
    let marker = format!("300.{}", std::process::id());
    let command = format!("sleep {marker} & sleep {marker}; wait");
    let mut exec = shell.exec(req(&command, false, None).into());
    let sleeping = || {
        processes_with(&marker)
            .iter()
            .filter(|(_, cmdline)| cmdline.starts_with("sleep "))
            .count()
    };
    tokio::select! {
        r = &mut exec => panic!("the command ended: {r:?}"),
        both = eventually(|| sleeping() == 2) => {
            assert!(both, "the two sleeps never ran: {:?}", processes_with(&marker));
        }
    }
    drop(exec);
    assert!(
        eventually(|| processes_with(&marker).is_empty()).await,
        "C10: the dropped command left {:?}",
        processes_with(&marker)
    );
}
