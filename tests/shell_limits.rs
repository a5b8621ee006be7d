//! The real shell's limits and session plumbing for `lifecycle acp`
//! (A10): the session cwd, the per-job output cap that keeps the tail
//! (with its memory measured), lossy UTF-8, arrival order, and job numbers
//! that continue past an old log's.
//!
//! The memory test resets this process's peak RSS (`/proc/self/clear_refs`)
//! and reads `VmHWM`; the other tests here are small so they barely move it.
//! Run it alone to see the figures:
//! `cargo test --test shell_limits a10_output_cap_bounds_memory -- --nocapture`.

use lifecycle::registry::Registry;
use lifecycle::rt::TokioRt;
use lifecycle::shell::real::{RealShell, OUTPUT_CAP_BYTES};
use lifecycle::shell::{ExecResult, JobStatus, ShellExecRequest, ShellExecutor};
use lifecycle::tool_bash::ToolBash;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// 30 MiB of `a`, on stdout.
const BIG: &str = "head -c 31457280 /dev/zero | tr '\\0' a";
const BIG_BYTES: usize = 31_457_280;

fn req(command: &str, background: bool, cwd: Option<&Path>) -> ShellExecRequest {
    ShellExecRequest {
        command: command.into(),
        background,
        cwd: cwd.map(Path::to_path_buf),
        ..Default::default()
    }
}

fn notice(dropped: usize, kept: usize) -> String {
    format!(
        "[agent-lifecycle: {dropped} bytes of earlier output dropped; the last {kept} are kept]\n"
    )
}

async fn run(shell: &RealShell, command: &str, cwd: Option<&Path>) -> (i32, String) {
    match shell.exec(req(command, false, cwd).into()).await.unwrap() {
        ExecResult::Finished { exit, output } => (exit, output),
        other => panic!("{command}: not finished: {other:?}"),
    }
}

async fn start(shell: &RealShell, command: &str, cwd: Option<&Path>) -> String {
    match shell.exec(req(command, true, cwd).into()).await.unwrap() {
        ExecResult::Started { job } => job,
        other => panic!("{command}: not started: {other:?}"),
    }
}

/// Polls `job` every 10 ms for up to 20 s until `cond` holds on its
/// status; the last status seen.
async fn until(shell: &RealShell, job: &str, cond: impl Fn(&JobStatus) -> bool) -> JobStatus {
    let mut status = shell.job(job).expect("job is known");
    for _ in 0..2000 {
        if cond(&status) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        status = shell.job(job).expect("job is known");
    }
    status
}

async fn finished(shell: &RealShell, job: &str) -> JobStatus {
    let status = until(shell, job, |s| !s.running).await;
    assert!(!status.running, "{job} did not finish: {status:?}");
    status
}

fn canonical_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_cwd_is_honoured_foreground_and_background() {
    let shell = RealShell::new();
    let (_dir, path) = canonical_dir();
    let expected = format!("{}\n", path.display());
    assert_eq!(
        run(&shell, "pwd -P", Some(&path)).await,
        (0, expected.clone())
    );
    let job = start(&shell, "pwd -P", Some(&path)).await;
    let status = finished(&shell, &job).await;
    assert_eq!((status.exit, status.output), (Some(0), expected.clone()));
    // No cwd: the executor's own.
    let own = format!("{}\n", std::env::current_dir().unwrap().display());
    assert_eq!(run(&shell, "pwd", None).await.1, own);
    assert_ne!(own, expected, "the test dir must differ from the own cwd");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_missing_cwd_fails_naming_the_dir() {
    let shell = RealShell::new();
    let (dir, path) = canonical_dir();
    let gone = path.join("gone");
    drop(dir);
    for background in [false, true] {
        let err = shell
            .exec(req("true", background, Some(&gone)).into())
            .await
            .expect_err("a missing cwd must fail");
        assert!(
            err.contains(&gone.display().to_string()),
            "background={background}: {err}"
        );
    }
    assert!(shell.running_pids().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_tool_bash_in_runs_in_the_session_cwd() {
    let shell = Arc::new(RealShell::new());
    let registry = Registry::<TokioRt>::new();
    let tools = ToolBash::load(shell.clone(), registry);
    let (_dir, path) = canonical_dir();
    let r = tools.bash_in(None, "pwd -P", false, Some(&path)).await;
    assert_eq!(
        r,
        Ok(ExecResult::Finished {
            exit: 0,
            output: format!("{}\n", path.display())
        })
    );
    let Ok(ExecResult::Started { job }) =
        tools.bash_in(Some("a"), "pwd -P", true, Some(&path)).await
    else {
        panic!("not started")
    };
    assert_eq!(shell.owner_of(&job).as_deref(), Some("a"));
    let status = finished(&shell, &job).await;
    assert_eq!(status.output, format!("{}\n", path.display()));
}

/// Current `VmHWM` and `VmRSS` of this process, in KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Reset the peak RSS to the current RSS (Linux `clear_refs` 5);
/// whether it worked.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Whether `output` is the 30 MiB command's capped output: the notice,
/// then exactly the cap of its bytes.
fn capped(what: &str, output: &str) -> Result<(), String> {
    let head = notice(BIG_BYTES - OUTPUT_CAP_BYTES, OUTPUT_CAP_BYTES);
    if output.len() != head.len() + OUTPUT_CAP_BYTES {
        return Err(format!("{what}: output of {} bytes", output.len()));
    }
    if !output.starts_with(&head) {
        return Err(format!("{what}: starts {:?}", &output[..120]));
    }
    if !output[head.len()..].bytes().all(|b| b == b'a') {
        return Err(format!("{what}: the kept tail is not the command's bytes"));
    }
    Ok(())
}

/// A job that prints 30 MiB keeps the cap plus one notice line, foreground
/// and background, and the process's peak memory grows by about the cap,
/// not by the 30 MiB (reading the output whole grows it by tens of MiB).
/// The figures are printed before any check, so a failing build shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_output_cap_bounds_memory() {
    let shell = RealShell::new();
    let reset = reset_peak();
    let (hwm0, rss0) = memory_kib();
    let started = std::time::Instant::now();
    let (exit, output) = run(&shell, BIG, None).await;
    let fg_elapsed = started.elapsed();
    let foreground = capped("foreground", &output);
    drop(output);
    let (hwm1, rss1) = memory_kib();

    reset_peak();
    let (hwm2, rss2) = memory_kib();
    let job = start(&shell, BIG, None).await;
    let status = finished(&shell, &job).await;
    let background = capped("background", &status.output);
    let (hwm3, rss3) = memory_kib();
    println!(
        "30 MiB output, peak reset {reset}: foreground ({fg_elapsed:?}) VmHWM {hwm0} -> {hwm1} kB \
         (RSS {rss0} -> {rss1}); background VmHWM {hwm2} -> {hwm3} kB (RSS {rss2} -> {rss3})"
    );
    assert_eq!((exit, status.exit), (0, Some(0)));
    assert_eq!((foreground, background), (Ok(()), Ok(())));
    if reset {
        // Tail (1 MiB), read chunks, the rendered copies and allocator slack.
        let bound_kib = 12 * 1024;
        assert!(
            hwm1.saturating_sub(rss0) < bound_kib,
            "foreground peak grew {} kB (> {bound_kib})",
            hwm1 - rss0
        );
        assert!(
            hwm3.saturating_sub(rss2) < bound_kib,
            "background peak grew {} kB (> {bound_kib})",
            hwm3 - rss2
        );
    }
}

/// stdout and stderr share one cap: the tail is the last bytes of both,
/// in arrival order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_cap_counts_stdout_and_stderr_together() {
    let shell = RealShell::new();
    let command = "head -c 2000000 /dev/zero | tr '\\0' a; sleep 0.2; \
                   head -c 100 /dev/zero | tr '\\0' b >&2";
    let total = 2_000_100;
    let (exit, output) = run(&shell, command, None).await;
    assert_eq!(exit, 0);
    let head = notice(total - OUTPUT_CAP_BYTES, OUTPUT_CAP_BYTES);
    assert!(output.starts_with(&head), "{:?}", &output[..120]);
    let tail = &output[head.len()..];
    assert_eq!(tail.len(), OUTPUT_CAP_BYTES);
    assert!(tail.ends_with(&"b".repeat(100)));
    assert!(tail[..OUTPUT_CAP_BYTES - 100].bytes().all(|b| b == b'a'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_output_at_the_cap_has_no_notice() {
    let shell = RealShell::new();
    let command = format!("head -c {OUTPUT_CAP_BYTES} /dev/zero | tr '\\0' a");
    let (_, output) = run(&shell, &command, None).await;
    assert_eq!(output.len(), OUTPUT_CAP_BYTES);
    assert!(output.bytes().all(|b| b == b'a'));
    let (_, output) = run(&shell, &format!("{command}; echo -n b >&2"), None).await;
    assert!(
        output.starts_with(&notice(1, OUTPUT_CAP_BYTES)),
        "{:?}",
        &output[..120]
    );
    assert!(output.ends_with("ab"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_invalid_utf8_output_is_kept_lossily() {
    let shell = RealShell::new();
    let command = "printf 'before \\377\\376 after\\n'; printf 'err \\300\\n' >&2";
    // stdout and stderr are two pipes read as they come: their lines may
    // arrive in either order.
    let lines = |output: &str| {
        let mut lines: Vec<String> = output.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let expected = lines("before \u{fffd}\u{fffd} after\nerr \u{fffd}\n");
    let (exit, output) = run(&shell, command, None).await;
    assert_eq!((exit, lines(&output)), (0, expected.clone()));
    let job = start(&shell, command, None).await;
    assert_eq!(lines(&finished(&shell, &job).await.output), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_stdout_and_stderr_interleave_in_arrival_order() {
    let shell = RealShell::new();
    let command = "echo 1; sleep 0.3; echo 2 >&2; sleep 0.3; echo 3";
    assert_eq!(run(&shell, command, None).await.1, "1\n2\n3\n");
    let job = start(&shell, command, None).await;
    assert_eq!(finished(&shell, &job).await.output, "1\n2\n3\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_running_job_shows_output_so_far() {
    let shell = RealShell::new();
    let job = start(&shell, "echo first; sleep 30", None).await;
    let status = until(&shell, &job, |s| s.output == "first\n").await;
    assert!(status.running, "{job} should still run: {status:?}");
    assert_eq!(status.output, "first\n");
    assert!(shell.kill(&job));
    let status = finished(&shell, &job).await;
    assert_eq!(
        (status.exit, status.output.as_str()),
        (Some(137), "first\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_after_moves_job_numbers_forward_only() {
    let shell = RealShell::new();
    assert_eq!(start(&shell, "true", None).await, "job-1");
    shell.continue_after(41);
    assert_eq!(start(&shell, "true", None).await, "job-42");
    shell.continue_after(5);
    assert_eq!(start(&shell, "true", None).await, "job-43", "moved back");
    shell.continue_after(43);
    assert_eq!(start(&shell, "true", None).await, "job-44");
    // The old jobs are still known under their numbers.
    for job in ["job-1", "job-42", "job-43", "job-44"] {
        assert!(shell.job(job).is_some(), "{job} unknown");
    }
    assert!(shell.job("job-2").is_none());
    shell.shutdown().await;
}

/// A11: no number a log names can use up the job numbers: the counter
/// stops at `LAST_CONTINUED`, and background jobs still start after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a11_continue_after_cannot_use_up_the_job_numbers() {
    use lifecycle::shell::real::LAST_CONTINUED;
    let shell = RealShell::new();
    shell.continue_after(u64::MAX);
    assert_eq!(
        start(&shell, "true", None).await,
        format!("job-{}", LAST_CONTINUED + 1)
    );
    shell.continue_after(u64::MAX - 1);
    assert_eq!(
        start(&shell, "true", None).await,
        format!("job-{}", LAST_CONTINUED + 2)
    );
    assert_eq!(run(&shell, "echo fg", None).await, (0, "fg\n".into()));
    shell.shutdown().await;
}

/// A10: the finished jobs of one owner keep at most `FINISHED_JOBS_CAP`
/// records, the oldest forgotten first (`unknown`), while another owner's
/// and a running job's records stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a10_finished_job_records_are_bounded_per_owner() {
    use lifecycle::shell::real::FINISHED_JOBS_CAP;
    let shell = RealShell::new();
    let owned = |command: &str, owner: &str| ShellExecRequest {
        command: command.into(),
        background: true,
        owner: Some(owner.into()),
        ..Default::default()
    };
    let start = |r: ShellExecRequest| {
        let shell = &shell;
        async move {
            match shell.exec(r.into()).await {
                Ok(ExecResult::Started { job }) => job,
                other => panic!("{other:?}"),
            }
        }
    };
    let running = start(owned("sleep 30", "a")).await;
    let other = start(owned("true", "b")).await;
    finished(&shell, &other).await;
    let mut jobs = Vec::new();
    for _ in 0..FINISHED_JOBS_CAP + 20 {
        jobs.push(start(owned("true", "a")).await);
    }
    for job in jobs.iter().rev().take(FINISHED_JOBS_CAP) {
        finished(&shell, job).await;
    }
    // Every job has finished (the last ones were waited for; the first
    // ones are either finished or forgotten already).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let known = || jobs.iter().filter(|j| shell.job(j).is_some()).count();
    while known() > FINISHED_JOBS_CAP && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(known(), FINISHED_JOBS_CAP, "finished records of one owner");
    assert!(
        shell.job(&jobs[0]).is_none(),
        "the oldest is forgotten first"
    );
    assert!(shell.job(jobs.last().unwrap()).is_some());
    assert!(
        shell.job(&running).is_some_and(|s| s.running),
        "a running job stays"
    );
    assert!(shell.job(&other).is_some(), "another owner's record stays");
    shell.shutdown().await;
}
