//! Every command ends quietly when its stdout is closed
//! (`lifecycle … | head`: SIGPIPE, no panic, no shuttle message, even
//! after shuttle ran); `acp` keeps SIGPIPE ignored; shuttle's panic hook
//! is installed only around shuttle's runs; Ctrl-C stops a long `check` or
//! `explore` with the partial report and exit 130, and a second one kills.

use super::{command, found_line, spawn, Proc, Run, HEADER};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::Duration;

/// Run `args` with stdout a pipe whose read end is closed: after the first
/// line was read (`read_first`), which must start with `first`, or before
/// the command wrote anything. The command must end at once and quietly:
/// with its usual exit code `normal` (it had written everything) or killed
/// by SIGPIPE (141 in a shell), and nothing on stderr (no panic, no shuttle
/// message).
#[track_caller]
fn ends_quietly_on_a_closed_stdout(args: &[&str], normal: i32, first: &str, read_first: bool) {
    use std::os::unix::process::ExitStatusExt;
    let mut child = command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lifecycle");
    let out = child.stdout.take().expect("stdout");
    if read_first {
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .expect("read a line");
        assert!(line.starts_with(first), "{args:?} printed {line:?} first");
        // The reader is dropped here: the read end of the pipe is closed.
    } else {
        drop(out);
    }
    let mut err = String::new();
    let mut stderr = child.stderr.take().expect("stderr");
    stderr.read_to_string(&mut err).expect("read stderr");
    let status = child.wait().expect("wait");
    let quiet = status.code() == Some(normal) || status.signal() == Some(libc::SIGPIPE);
    assert!(quiet, "{args:?}: {status:?}; stderr: {err}");
    assert_eq!(err, "", "{args:?} wrote on stderr");
}

#[track_caller]
fn ends_quietly(args: &[&str], normal: i32, first: &str) {
    ends_quietly_on_a_closed_stdout(args, normal, first, true);
    ends_quietly_on_a_closed_stdout(args, normal, first, false);
}

#[test]
fn list_on_a_closed_stdout_ends_quietly() {
    ends_quietly(&["list"], 0, "scenarios:");
}

#[test]
fn check_on_a_closed_stdout_ends_quietly() {
    ends_quietly(
        &[
            "check",
            "--scenario",
            "cancel-before-claim",
            "--checker",
            "sim",
            "--sim-seeds",
            "200",
            "--no-progress",
        ],
        0,
        HEADER,
    );
}

/// A process that ran shuttle (its panic hook installed around its runs)
/// then finds its stdout closed: still no panic and no shuttle message.
#[test]
fn check_after_shuttle_on_a_closed_stdout_ends_quietly() {
    ends_quietly(
        &[
            "check",
            "--scenario",
            "cancel-before-claim",
            "--checker",
            "shuttle-pct",
            "--checker",
            "sim",
            "--shuttle-iterations",
            "50",
            "--sim-seeds",
            "50",
            "--no-progress",
        ],
        1,
        HEADER,
    );
}

#[test]
fn explore_on_a_closed_stdout_ends_quietly() {
    ends_quietly(
        &[
            "explore",
            "cancel-before-claim",
            "--checker",
            "sim",
            "--budget",
            "200",
        ],
        0,
        HEADER,
    );
}

#[test]
fn replay_on_a_closed_stdout_ends_quietly() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    ends_quietly(&["replay", &line], 1, &format!("replaying {line}"));
}

/// `acp` keeps SIGPIPE ignored: a client that closed the server's stdout
/// is a disconnect, and the server still disposes and exits 0.
#[test]
fn acp_with_a_closed_stdout_exits_0() {
    let mut child = command(&["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lifecycle acp");
    drop(child.stdout.take());
    {
        let mut stdin = child.stdin.take().expect("stdin");
        let init =
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
        let _ = writeln!(stdin, "{init}");
        std::thread::sleep(Duration::from_millis(300));
        let _ = writeln!(stdin, "{init}");
    }
    let status = child.wait().expect("wait");
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    assert_eq!(status.code(), Some(0), "{status:?}; stderr: {err}");
    assert!(!err.contains("error"), "{err}");
}

/// A panic outside shuttle's runs (in a process that ran shuttle) gets
/// the usual panic message, never shuttle's. The process is this test
/// binary again, in the child role below.
#[test]
fn shuttle_hook_is_only_installed_around_shuttle_runs() {
    if std::env::var_os("CLI_SHUTTLE_HOOK_CHILD").is_some() {
        use lifecycle_harness::check::explore::shuttle;
        use lifecycle_harness::check::{self, Checker};
        use lifecycle_harness::faults::Faults;
        check::quiet_panics();
        let scenario = &lifecycle_harness::scenarios::cancel::CANCEL_BEFORE_CLAIM;
        let report = shuttle::explore(
            Checker::ShuttleRandom,
            scenario,
            Faults::none(),
            20,
            2,
            false,
            check::Stop::NEVER,
        );
        assert_eq!(report.executions, 20);
        let _ = std::panic::catch_unwind(|| panic!("an unrelated panic"));
        return;
    }
    // This test's name in the harness: its path without the crate's name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::shuttle_hook_is_only_installed_around_shuttle_runs");
    let mut c = std::process::Command::new(std::env::current_exe().expect("test binary"));
    c.args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env("CLI_SHUTTLE_HOOK_CHILD", "1");
    let out = Proc::of(c).finish(super::DEADLINE);
    assert_eq!(out.code, 0, "{}", out.both());
    assert!(out.out.contains("1 passed"), "the child ran: {}", out.out);
    assert!(out.err.contains("an unrelated panic"), "{}", out.err);
    assert!(!out.err.contains("Task failed"), "{}", out.err);
    assert!(!out.err.contains("test panicked in task"), "{}", out.err);
}

/// Start `args`, press Ctrl-C once it can be caught and `after` has
/// passed, and wait at most 20 s for the exit: the partial report must
/// come with exit 130 and the table's header first.
fn interrupted(args: &[&str], after: Duration) -> Run {
    let mut p = spawn(args);
    p.await_sigint_handler();
    std::thread::sleep(after);
    p.interrupt();
    let r = p.finish(Duration::from_secs(20));
    assert_eq!(r.code, 130, "{}", r.both());
    assert_eq!(r.first_out(), HEADER, "{}", r.out);
    r
}

/// The first Ctrl-C stops a long `explore` between schedules: the partial
/// report, the checkpoint, exit 130.
#[test]
fn ctrl_c_stops_explore_with_its_partial_report_and_checkpoint() {
    let dir = super::scratch("ctrl-c");
    let cp = dir.join("cp.json");
    let r = interrupted(
        &[
            "explore",
            "cancel-before-claim",
            "--unbounded",
            "--budget",
            "1000000000",
            "--checkpoint",
            cp.to_str().unwrap(),
        ],
        Duration::from_millis(300),
    );
    let text = &r.out;
    assert!(text.contains(" interrupted\n"), "{text}");
    assert!(text.contains("NOT exhausted (interrupted)"), "{text}");
    assert!(text.contains("\ninterrupted (Ctrl-C) after "), "{text}");
    assert!(
        text.contains(&format!("checkpoint written to {}", cp.display())),
        "{text}"
    );
    assert!(cp.exists());
}

/// Ctrl-C during `check` prints the rows done, the partial summary and
/// exits 130. (The handler is installed before the header is printed and
/// the first row starts; 300 ms later that row is running.)
#[test]
fn ctrl_c_stops_check_with_a_partial_table() {
    let r = interrupted(
        &[
            "check",
            "--checker",
            "sim-dfs",
            "--checker",
            "sim",
            "--scenario",
            "cancel-before-claim",
            "--dfs-preemptions",
            "30",
            "--dfs-executions",
            "1000000000",
            "--no-progress",
        ],
        Duration::from_millis(300),
    );
    assert!(
        r.out.contains(
            "\ninterrupted (Ctrl-C) after 1 of 2 runs: 0 passed, 0 skipped, 0 failed, 1 cut short;"
        ),
        "{}",
        r.out
    );
}

/// A second Ctrl-C kills at once. Every checker now stops at the first
/// Ctrl-C between its executions (shuttle's scheduler starts no further
/// one), so the second usually finds the process gone; if it does not, it
/// must find the default action.
#[test]
fn a_second_ctrl_c_kills_at_once() {
    let mut p = spawn(&[
        "explore",
        "cancel-before-claim",
        "--checker",
        "shuttle-random",
        "--budget",
        "100000000",
    ]);
    p.await_sigint_handler();
    std::thread::sleep(Duration::from_millis(300));
    p.interrupt();
    if p.exits_within(Duration::from_millis(500)) {
        // Stopped cleanly by the first: a checker that stops between its
        // executions leaves no window for a second Ctrl-C.
        let r = p.finish(Duration::ZERO);
        assert_eq!(r.code, 130, "{}", r.both());
        assert_eq!(r.first_out(), HEADER, "{}", r.out);
        return;
    }
    p.interrupt();
    let r = p.finish(Duration::from_secs(5));
    assert_eq!(r.signal, Some(libc::SIGINT), "{}", r.both());
}
