//! Interrupting the real `lifecycle acp` over raw JSON-RPC: the user's new
//! message right after `session/cancel` (A8), and the end of the
//! connection or a signal while a prompt is in flight (A10: the prompt is
//! answered `cancelled` while stdout is open, and its turn ends durably).

use lifecycle_testkit as common;

use common::acp::{agent_texts, prompt_params, AcpServer};
use lifecycle::session_log::Entry;
use lifecycle::store::durable::{Durable, FileDurable};
use serde_json::{json, Value};
use std::time::Duration;

/// A8: the interrupt clients send, `session/cancel` and at once a new
/// `session/prompt`, all three messages in one write: the cancelled prompt
/// answers `cancelled`, the new one runs to `end_turn`. Twenty times.
#[test]
fn a8_a_prompt_right_after_cancel_waits_for_the_cancelled_one_then_runs() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let session = server.new_session();
    for round in 0..20 {
        let first = 1_000 + 2 * round;
        let second = first + 1;
        let line = |id: i64, method: &str, params: Value| {
            let mut v = json!({"jsonrpc": "2.0", "method": method, "params": params});
            if id > 0 {
                v["id"] = json!(id);
            }
            format!("{v}\n")
        };
        let batch = line(
            first,
            "session/prompt",
            prompt_params(&session, "sleep 5000"),
        ) + &line(0, "session/cancel", json!({"sessionId": session}))
            + &line(second, "session/prompt", prompt_params(&session, "after"));
        server.send(batch.as_bytes());
        let (answers, updates) = server.answers(&[first, second]);
        assert_eq!(
            answers[0]["result"]["stopReason"], "cancelled",
            "round {round}: {answers:?}"
        );
        assert_eq!(
            answers[1]["result"]["stopReason"], "end_turn",
            "A8, round {round}: {answers:?}"
        );
        assert!(
            agent_texts(&updates).ends_with(&["echo: after".to_string()]),
            "round {round}: {updates:?}"
        );
    }
    // Without a cancel, a second prompt in flight still fails (A8).
    let slow = server.send_prompt(&session, "sleep 300");
    let (answer, _) = server.prompt(&session, "too soon");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let (answers, _) = server.answers(&[slow]);
    assert_eq!(answers[0]["result"]["stopReason"], "end_turn");
    server.close();
}

/// The turn of a session's log that ran `text`: its end reason.
fn end_of(sessions: &std::path::Path, session: &str, text: &str) -> Option<String> {
    let log = FileDurable::new(sessions).unwrap().load(session).unwrap();
    let prompt = log.records.iter().find_map(|r| match &r.entry {
        Entry::UserMessage {
            prompt, text: t, ..
        } if t == text => Some(*prompt),
        _ => None,
    })?;
    log.records.iter().find_map(|r| match &r.entry {
        Entry::TurnEnd { prompt: p, reason } if *p == prompt => Some(format!("{reason:?}")),
        _ => None,
    })
}

/// Start a server with one prompt in flight (a 60 s step); the server, the
/// session and the prompt's request id.
fn in_flight(sessions: &std::path::Path) -> (AcpServer, String, i64) {
    let mut server = AcpServer::start(sessions);
    let session = server.new_session();
    let id = server.send_prompt(&session, "sleep 60000");
    // The turn is durable (and running) once its log holds the message.
    assert!(common::acp::eventually(Duration::from_secs(10), || {
        FileDurable::new(sessions)
            .unwrap()
            .load(&session)
            .is_ok_and(|l| {
                l.records
                    .iter()
                    .any(|r| matches!(r.entry, Entry::UserMessage { .. }))
            })
    }));
    (server, session, id)
}

/// A10: the prompt in flight when stdin closes is answered `cancelled`
/// before stdout closes, and its turn ends `disposed` on disk.
#[test]
fn a10_a_prompt_in_flight_at_stdin_close_is_answered_cancelled() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let (mut server, session, id) = in_flight(sessions.path());
    server.close_stdin();
    let lines = server.read_to_end();
    let answer = lines
        .iter()
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("A10: no answer to the prompt in flight: {lines:?}"));
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let (status, _) = server.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status}");
    assert_eq!(
        end_of(sessions.path(), &session, "sleep 60000").as_deref(),
        Some("Disposed")
    );
}

/// A10: SIGTERM and SIGINT get the orderly exit of stdin closing: the
/// prompt in flight is answered `cancelled`, the server exits 0, and the
/// turn ends `disposed`, not `interrupted` at the next load.
#[test]
fn a10_sigterm_and_sigint_answer_the_prompt_in_flight_and_exit_in_order() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let sessions = tempfile::tempdir().expect("tempdir");
        let (mut server, session, id) = in_flight(sessions.path());
        // SAFETY: kill only sends a signal; the pid is our unreaped child.
        assert_eq!(
            unsafe { libc::kill(server.pid() as libc::pid_t, signal) },
            0
        );
        let lines = server.read_to_end();
        let answer = lines
            .iter()
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("signal {signal}: no answer: {lines:?}"));
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        let (status, _) = server.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "signal {signal}: {status}");
        assert_eq!(
            end_of(sessions.path(), &session, "sleep 60000").as_deref(),
            Some("Disposed"),
            "signal {signal}"
        );
    }
}

/// A10: a client that stops reading stdout and then closes stdin: the
/// server still exits within its grace period (plus 3 s of slack for a
/// loaded machine), whatever it had left to write.
#[test]
fn a10_the_grace_period_holds_with_stdout_blocked() {
    use lifecycle::acp::server::DISCONNECT_GRACE_MS;
    use std::io::{BufRead, Write};
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut child = common::acp::command(sessions.path(), std::path::Path::new("/"))
        .spawn()
        .expect("spawn");
    let _group = common::acp::KillGroup(child.id());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = |id: i64, method: &str, params: serde_json::Value| {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        stdout.read_line(&mut answer).expect("read");
        serde_json::from_str::<Value>(&answer).expect("json")
    };
    ask(1, "initialize", json!({"protocolVersion": 1}));
    let new = ask(2, "session/new", json!({"cwd": "/", "mcpServers": []}));
    let session = new["result"]["sessionId"].as_str().expect("id").to_string();
    // About 6 MB of replies, none of them read.
    let text = vec!["y".repeat(100); 60_000].join("\n");
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": prompt_params(&session, &text)});
    writeln!(stdin, "{prompt}").expect("write");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(1_500));
    let closed = std::time::Instant::now();
    drop(stdin);
    let limit = Duration::from_millis(DISCONNECT_GRACE_MS + 3_000);
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        assert!(
            closed.elapsed() < limit,
            "A10: the server still runs {:?} after stdin closed with stdout blocked",
            closed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "exited {:?} after stdin closed, stdout blocked",
        closed.elapsed()
    );
    drop(stdout);
}
