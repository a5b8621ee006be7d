//! Process hygiene of the real `lifecycle acp` (SPEC A10): "After stdin
//! closes, the server exits within a documented grace period and leaves no
//! process behind, even with a hung step or a background job that has
//! children. If the server itself is killed, its children die with it."
//!
//! Each test puts a marker unique to this test process and to the test
//! into every command it runs (`sleep 300.<pid><test><n>`, fixed width, so
//! no marker is a prefix of another), and looks for stray processes by
//! scanning `/proc/*/cmdline` for its own markers only: tests running at
//! the same time, here or in another test binary, are never counted. bash
//! may exec the last command of a line, so every process is scanned, not
//! only shells.
//!
//! Covered: a disconnect and a SIGKILL of the server with several sessions,
//! each holding background jobs with children and grandchildren, a job
//! that ignores SIGTERM and SIGHUP, and a prompt hung in a foreground
//! step; `! job-N` on a job with children; a disconnect while a job is
//! blocked writing to a pipe nobody reads.
//!
//! Descendants that leave their job's group (`setsid`, `set -m`) or
//! outlive their job (`cmd &` with its output redirected, `nohup`) are
//! found by their process tags, on every exit path
//! ([`no_descendant_survives`], inside a PID namespace). NOT covered: a
//! process that starts with a fresh environment (`env -i`) carries no
//! tag. A job whose output
//! pipe to the server fills is not tested: the server always reads its
//! jobs' output (keeping a capped tail), so that pipe never stays full.
//! Processes are found by command line: one that rewrites its `argv`
//! would not be seen.
//!
//! Run: `cargo test --test acp_processes`; a failure prints the processes
//! left behind (pid and command line) and kills them.

use lifecycle_testkit as common;

use common::acp::{agent_texts, eventually, processes_with, processes_with_any, AcpServer};
use lifecycle::acp::server::DISCONNECT_GRACE_MS;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// How long the commands a test starts must run: longer than any test.
const SLEEP_S: u32 = 300;

/// How long the set-up waits for its commands to appear.
const START_LIMIT: Duration = Duration::from_secs(10);

/// After the server is gone (exited or killed), how long its commands may
/// take to disappear.
const GONE_AFTER_EXIT: Duration = Duration::from_secs(2);
const GONE_AFTER_SIGKILL: Duration = Duration::from_secs(3);

/// Slack on top of the documented grace period for the server's exit.
const EXIT_SLACK: Duration = Duration::from_secs(3);

/// The marker for command `n` of test `test`, unique to this process:
/// `300.PPPPPPPTTNN` (a valid `sleep` argument).
fn marker(test: u32, n: u32) -> String {
    format!("{SLEEP_S}.{:07}{test:02}{n:02}", std::process::id())
}

/// On drop, SIGKILL every process still carrying one of the markers, so a
/// failed test does not leave 300-second sleeps behind. Declared before the
/// server, so it runs after the server's own `Drop`.
struct Leftovers(Vec<String>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for (pid, _) in processes_with_any(&self.0) {
            // SAFETY: kill only sends a signal, to a process that carried
            // this test's marker a moment ago.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

/// Wait until each marker is on at least its count of processes; panics
/// with the counts seen otherwise.
fn await_processes(expected: &[(String, usize)]) {
    let all_up = || expected.iter().all(|(m, n)| processes_with(m).len() >= *n);
    if !eventually(START_LIMIT, all_up) {
        let seen: Vec<_> = expected
            .iter()
            .map(|(m, n)| format!("{m}: {} of {n}", processes_with(m).len()))
            .collect();
        panic!("the commands did not all start within {START_LIMIT:?}: {seen:?}");
    }
}

/// Assert that within `limit` no process carries any marker.
#[track_caller]
fn assert_all_gone(markers: &[String], limit: Duration, after: &str) {
    let started = Instant::now();
    let gone = eventually(limit, || processes_with_any(markers).is_empty());
    assert!(
        gone,
        "processes outlived {after} by {limit:?}: {:#?}",
        processes_with_any(markers)
    );
    eprintln!("  all gone {:?} after {after}", started.elapsed());
}

/// A prompt that must answer `end_turn`; its agent message texts.
#[track_caller]
fn run(server: &mut AcpServer, session: &str, text: &str) -> Vec<String> {
    let (answer, updates) = server.prompt(session, text);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    agent_texts(&updates)
}

/// The job id of a `started job-N` reply.
fn job_id(reply: &str) -> String {
    reply
        .strip_prefix("started ")
        .unwrap_or_else(|| panic!("not a started job: {reply:?}"))
        .to_string()
}

/// A server with the full A10 load: three sessions, each holding a job
/// with two children (`sleep & sleep & wait`) and a job with a grandchild
/// (`bash -c 'sleep & wait'`); the first also a job that ignores SIGTERM
/// and SIGHUP (its sleep inherits the ignored signals); the last with a
/// prompt hung in a foreground `$ sleep` after its first step replied.
/// Returns when every command runs.
struct Fleet {
    _sessions: TempDir,
    server: AcpServer,
    markers: Vec<String>,
}

/// Start test `test`'s [`Fleet`], naming each marker in `leftovers`
/// before its command starts.
fn fleet(test: u32, leftovers: &mut Leftovers) -> Fleet {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let mut expected = Vec::new();
    let mut ids = Vec::new();
    for s in 0..3 {
        ids.push(server.new_session());
        let (children, grandchild) = (marker(test, 10 * s + 1), marker(test, 10 * s + 2));
        let mut text = format!(
            "$& sleep {children} & sleep {children} & wait\n$& bash -c 'sleep {grandchild} & wait'"
        );
        expected.push((children, 3));
        expected.push((grandchild, 2));
        if s == 0 {
            let stubborn = marker(test, 3);
            text.push_str(&format!("\n$& trap '' TERM HUP; sleep {stubborn} & wait"));
            expected.push((stubborn, 2));
        }
        leftovers.0 = expected.iter().map(|(m, _)| m.clone()).collect();
        let replies = run(&mut server, &ids[s as usize], &text);
        let started = replies.iter().filter(|r| r.starts_with("started job-"));
        assert_eq!(started.count(), text.lines().count(), "{replies:?}");
    }
    let hung = marker(test, 90);
    leftovers.0.push(hung.clone());
    server.send_prompt(&ids[2], &format!("before-hang\n$ sleep {hung}\nafter-hang"));
    server.read_until_text("echo: before-hang");
    expected.push((hung, 1));
    await_processes(&expected);
    let markers = expected.into_iter().map(|(m, _)| m).collect();
    Fleet {
        _sessions: sessions,
        server,
        markers,
    }
}

/// A10: stdin closes while three sessions hold job trees (children,
/// grandchildren, a job ignoring SIGTERM/SIGHUP) and one prompt hangs in a
/// foreground step. The server exits 0 within the documented grace period
/// (plus slack), and no process of any command is left 2 s later.
#[test]
fn a10_disconnect_leaves_no_process_of_any_session() {
    let started = Instant::now();
    let mut leftovers = Leftovers(Vec::new());
    let fleet = fleet(1, &mut leftovers);
    let limit = Duration::from_millis(DISCONNECT_GRACE_MS) + EXIT_SLACK;
    let (status, took) = fleet.server.close_within(limit);
    eprintln!("  disconnect: the server exited {status} {took:?} after stdin closed");
    assert!(status.success(), "the server exited with {status}");
    assert_all_gone(&fleet.markers, GONE_AFTER_EXIT, "the server's exit");
    eprintln!("a10_disconnect: {:?}", started.elapsed());
}

/// A10: the same load, then SIGKILL of the server process alone (not its
/// group): the orphan reaper kills every command's group; none is left
/// 3 s later.
#[test]
fn a10_sigkill_of_the_server_leaves_no_process_of_any_session() {
    let started = Instant::now();
    let mut leftovers = Leftovers(Vec::new());
    let mut fleet = fleet(2, &mut leftovers);
    fleet.server.kill_server();
    assert_all_gone(&fleet.markers, GONE_AFTER_SIGKILL, "the SIGKILL");
    eprintln!("a10_sigkill: {:?}", started.elapsed());
}

/// A10: a server killed with SIGKILL takes its commands with it: a
/// background job with a child of its own and a hung foreground command
/// are all gone shortly after the kill (the orphan reaper kills their
/// process groups).
#[test]
fn sigkill_of_the_server_kills_every_command_it_started() {
    let mark = marker(3, 1);
    let _leftovers = Leftovers(vec![mark.clone()]);
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let session = server.new_session();
    let replies = run(
        &mut server,
        &session,
        &format!("$& sleep {mark} & sleep {mark}"),
    );
    assert!(replies[0].starts_with("started job-"), "{replies:?}");
    // A foreground command that would run for 300 s; not awaited.
    server.send_prompt(&session, &format!("$ sleep {mark}"));
    // The job's bash and its two sleeps (or one, if bash execs the last),
    // and the foreground sleep.
    await_processes(&[(mark.clone(), 3)]);
    server.kill_server();
    assert_all_gone(&[mark], Duration::from_secs(5), "the SIGKILL");
}

/// A10 with S7: `! job-N` kills the job's whole process group, its child
/// and grandchild included, while the server keeps serving.
#[test]
fn a10_kill_of_a_job_kills_its_children() {
    let (child, grandchild) = (marker(4, 1), marker(4, 2));
    let markers = vec![child.clone(), grandchild.clone()];
    let _leftovers = Leftovers(markers.clone());
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let session = server.new_session();
    let text = format!("$& sleep {child} & bash -c 'sleep {grandchild} & wait' & wait");
    let job = job_id(&run(&mut server, &session, &text)[0]);
    // The job's bash (both markers), its sleep, the inner bash and its sleep.
    await_processes(&[(child, 2), (grandchild, 3)]);
    let replies = run(&mut server, &session, &format!("! {job}"));
    // A11: the job's completion notice never lands in a prompt's message
    // stream (it is a `tool_call_update`, see `tests/acp_jobs.rs`).
    assert_eq!(replies, ["killed: true"], "{job}");
    assert_all_gone(&markers, Duration::from_secs(3), "`! job-N`");
    let replies = run(&mut server, &session, "still-serving");
    assert_eq!(replies, ["echo: still-serving"]);
    server.close();
}

/// A10: a session is disposed by the disconnect while a job it owns is
/// blocked writing to a full pipe (`yes | sleep`: the sleep never reads),
/// next to a job that wrote 3 MB of output (over the per-job cap) and then
/// sleeps. The server exits 0 within the grace period; nothing is left.
#[test]
fn a10_disconnect_with_a_job_blocked_on_a_full_pipe() {
    let (writer, reader, flooded) = (marker(5, 1), marker(5, 2), marker(5, 3));
    let markers = vec![writer.clone(), reader.clone(), flooded.clone()];
    let _leftovers = Leftovers(markers.clone());
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let session = server.new_session();
    let text = format!(
        "$& yes {writer} | sleep {reader}\n$& head -c 3000000 /dev/zero | tr '\\0' x; sleep {flooded}"
    );
    let replies = run(&mut server, &session, &text);
    assert_eq!(replies.len(), 2, "{replies:?}");
    await_processes(&[(writer.clone(), 1), (reader, 1), (flooded, 1)]);
    // The writer is blocked in a pipe write (the pipe's 64 KiB are full).
    let yes_pid = |m: &str| {
        processes_with(m)
            .into_iter()
            .find(|(_, cmd)| cmd.starts_with("yes "))
            .map(|(pid, _)| pid)
    };
    let blocked = eventually(Duration::from_secs(5), || {
        yes_pid(&writer).is_some_and(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/wchan"))
                .is_ok_and(|w| w.contains("pipe_write") || w == "0")
        })
    });
    assert!(blocked, "`yes` is not blocked on its pipe");
    let limit = Duration::from_millis(DISCONNECT_GRACE_MS) + EXIT_SLACK;
    let (status, took) = server.close_within(limit);
    eprintln!("  full pipe: the server exited {status} {took:?} after stdin closed");
    assert!(status.success(), "the server exited with {status}");
    assert_all_gone(&markers, GONE_AFTER_EXIT, "the server's exit");
}

/// The descendants that leave or outlive their job, one job each: a
/// command backgrounded with its output redirected (the job's own process
/// exits at once), `nohup`, a `set -m` child in a group of its own (its
/// job alive, waiting for it), and a `setsid` grandchild (its job alive).
/// `(kind, marker, the job's line)`.
fn escapers(test: u32) -> Vec<(&'static str, String, String)> {
    type Line = fn(&str) -> String;
    let kinds: [(&str, Line); 4] = [
        ("redirected &", |m| {
            format!("$& sleep {m} >/dev/null 2>&1 &")
        }),
        ("nohup", |m| format!("$& nohup sleep {m} >/dev/null 2>&1 &")),
        ("set -m", |m| format!("$& set -m; sleep {m} & wait")),
        ("setsid", |m| {
            format!("$& setsid sleep {m} >/dev/null 2>&1 & wait")
        }),
    ];
    kinds
        .iter()
        .enumerate()
        .map(|(n, (kind, line))| {
            let m = marker(test, n as u32 + 1);
            let line = line(&m);
            (*kind, m, line)
        })
        .collect()
}

/// How a server lets go of its sessions in [`no_descendant_survives`].
#[derive(Clone, Copy, Debug)]
enum ExitPath {
    StdinClose,
    Sigterm,
    Sigkill,
    SessionClose,
}

/// Run `name` (a test of this binary) again inside a PID namespace of its
/// own with its own `/proc` (`unshare -pf --mount-proc`), where every
/// signal it and its server send stays. `true` in that copy (run the
/// body); `false` in the caller, once the copy passed.
fn inside_a_pid_namespace(name: &str) -> bool {
    const INSIDE: &str = "LIFECYCLE_TEST_IN_PID_NAMESPACE";
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    let exe = std::env::current_exe().expect("this test's executable");
    let out = std::process::Command::new("unshare")
        .args(["-pf", "--mount-proc"])
        .arg(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .output()
        .expect("unshare (util-linux) runs this test in a PID namespace; it must be installed");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} inside `unshare -pf --mount-proc` ({}):\n{stdout}\n{stderr}",
        out.status
    );
    eprint!("{stderr}");
    false
}

/// A10, S7: every kind of descendant that leaves or outlives its job
/// ([`escapers`]) is gone 2 s after each exit path: stdin closed, SIGTERM
/// and SIGKILL of the server, and the session's own `session/close`
/// (after which the server keeps serving). Found by their process tags
/// (`lifecycle::shell::tag`). Runs inside a PID namespace.
#[test]
fn no_descendant_survives() {
    if !inside_a_pid_namespace("no_descendant_survives") {
        return;
    }
    let paths = [
        ExitPath::StdinClose,
        ExitPath::Sigterm,
        ExitPath::Sigkill,
        ExitPath::SessionClose,
    ];
    for (t, path) in paths.into_iter().enumerate() {
        let started = Instant::now();
        let kinds = escapers(10 + t as u32);
        let markers: Vec<String> = kinds.iter().map(|(_, m, _)| m.clone()).collect();
        let _leftovers = Leftovers(markers.clone());
        let sessions = tempfile::tempdir().expect("tempdir");
        let mut server = AcpServer::start(sessions.path());
        let session = server.new_session();
        let text: Vec<&str> = kinds.iter().map(|(_, _, line)| line.as_str()).collect();
        let replies = run(&mut server, &session, &text.join("\n"));
        assert_eq!(replies.len(), kinds.len(), "{replies:?}");
        let expected: Vec<(String, usize)> = markers.iter().map(|m| (m.clone(), 1)).collect();
        await_processes(&expected);
        let limit = Duration::from_millis(DISCONNECT_GRACE_MS) + EXIT_SLACK;
        match path {
            ExitPath::StdinClose => {
                server.close_stdin();
                let (status, took) = server.wait_exit(limit);
                assert!(
                    status.success(),
                    "{path:?}: the server exited with {status}"
                );
                eprintln!("  {path:?}: the server exited {took:?} after stdin closed");
            }
            ExitPath::Sigterm => {
                // SAFETY: kill only sends a signal, to our unreaped child.
                let sent = unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGTERM) };
                assert_eq!(sent, 0);
                let (status, took) = server.wait_exit(limit);
                eprintln!("  {path:?}: the server exited {status} {took:?} after SIGTERM");
            }
            ExitPath::Sigkill => server.kill_server(),
            ExitPath::SessionClose => {
                let answer =
                    server.ask("session/close", serde_json::json!({ "sessionId": session }));
                assert!(answer.get("result").is_some(), "{answer}");
            }
        }
        for (kind, m, _) in &kinds {
            assert_all_gone(
                std::slice::from_ref(m),
                GONE_AFTER_EXIT,
                &format!("{path:?} ({kind})"),
            );
        }
        if let ExitPath::SessionClose = path {
            // The session is gone, the server is not.
            let again = server.ask("session/close", serde_json::json!({ "sessionId": session }));
            assert!(again.get("error").is_some(), "closed twice: {again}");
            let other = server.new_session();
            assert_eq!(
                run(&mut server, &other, "still-serving"),
                ["echo: still-serving"]
            );
            server.close();
        }
        eprintln!("  {path:?}: {:?}", started.elapsed());
    }
}
