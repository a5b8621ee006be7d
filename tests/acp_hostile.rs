//! Hostile input to the real `lifecycle acp` (SPEC A10, framing): lines
//! that are not UTF-8, a line far over the limit (streamed; the server's
//! memory stays small and its error does not echo the line), unusable ids,
//! deep nesting, an empty line, a batch, a non-object, a missing method, an
//! unknown method and unanswerable notifications. Each gets its JSON-RPC
//! error (or, for a notification, nothing), and the server keeps serving;
//! at the end it exits 0 and has written nothing outside its sessions
//! directory.

use lifecycle_testkit as common;

use common::acp::AcpServer;
use serde_json::{json, Value};
use std::time::Instant;

/// Send one line; its answer must be the next line the server writes, and
/// short (an error never echoes a long line).
fn hostile(server: &mut AcpServer, line: &[u8]) -> Value {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    server.send(&bytes);
    let answer = server.next_line().expect("the server answers");
    assert!(answer.len() < 4096, "a long answer: {} bytes", answer.len());
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// The server still serves: `initialize`, then `session/new`.
fn alive(server: &mut AcpServer) {
    server.initialize();
    server.new_session();
}

/// The answer is a JSON-RPC error with `code` and `id`.
#[track_caller]
fn assert_error(answer: &Value, code: i64, id: Value) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert_eq!(answer["id"], id, "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
}

fn request(id: &str, params: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{params}}}"#).into_bytes()
}

#[test]
fn hostile_lines_are_answered_and_the_server_keeps_serving() {
    let started = Instant::now();
    let root = tempfile::tempdir().expect("tempdir");
    let sessions = root.path().join("sessions");
    let cwd = root.path().join("cwd");
    std::fs::create_dir(&sessions).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    let mut server = AcpServer::spawn_in(&sessions, &cwd);
    alive(&mut server);

    // Not UTF-8.
    let mut bad = request("1", r#"{"protocolVersion":1,"x":"?"}"#);
    let at = bad.iter().position(|&b| b == b'?').unwrap();
    bad[at] = 0xff;
    assert_error(&hostile(&mut server, &bad), -32700, Value::Null);
    alive(&mut server);
    assert_error(
        &hostile(&mut server, b"\xc3\x28\xa0\xa1"),
        -32700,
        Value::Null,
    );
    alive(&mut server);

    // Over the limit (8 MiB): 96 MiB, streamed in 1 MiB chunks.
    let total: usize = 96 << 20;
    let before = server.rss_kib();
    server.send(br#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"pad":""#);
    let chunk = vec![b'a'; 1 << 20];
    let mut peak = before;
    for i in 0..total >> 20 {
        server.send(&chunk);
        if i % 8 == 7 {
            peak = peak.max(server.rss_kib());
        }
    }
    let sent = Instant::now();
    let long = hostile(&mut server, br#""}}"#);
    peak = peak.max(server.rss_kib());
    eprintln!(
        "long line: {} MiB; server VmRSS {} KiB before, {} KiB peak; answered {:?} after its end",
        total >> 20,
        before,
        peak,
        sent.elapsed()
    );
    assert_error(&long, -32600, json!(2));
    let data = long["error"]["data"]["line"].as_str().expect("data.line");
    assert!(data.len() <= 200, "{data}");
    assert!(
        peak * 1024 < (total as u64) / 3,
        "VmRSS {peak} KiB while a {total}-byte line streamed"
    );
    alive(&mut server);

    // Unusable ids: not served, answered with id null.
    for id in ["null", "{}", "[1]", "true", "1.5"] {
        let answer = hostile(&mut server, &request(id, r#"{"protocolVersion":1}"#));
        assert_error(&answer, -32600, Value::Null);
        alive(&mut server);
    }

    // 3,000-deep params with a numeric id: Invalid Request with that id.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"initialize","params":{{"protocolVersion":1,"x":{}{}}}}}"#,
        "[".repeat(3000),
        "]".repeat(3000)
    );
    assert_error(&hostile(&mut server, deep.as_bytes()), -32600, json!(3));
    alive(&mut server);
    // ... and with the id first and a string id.
    let deep = format!(
        r#"{{"id":"deep","jsonrpc":"2.0","method":"initialize","params":{}{}}}"#,
        "{\"a\":".repeat(3000),
        "}".repeat(3000)
    );
    assert_error(
        &hostile(&mut server, deep.as_bytes()),
        -32600,
        json!("deep"),
    );
    alive(&mut server);

    // An empty line is not JSON.
    assert_error(&hostile(&mut server, b""), -32700, Value::Null);
    alive(&mut server);

    // A batch, and a non-object: Invalid Request (ids cannot be read).
    let batch = format!("[{}]", String::from_utf8(request("4", "{}")).unwrap());
    assert_error(&hostile(&mut server, batch.as_bytes()), -32600, Value::Null);
    alive(&mut server);
    assert_error(&hostile(&mut server, b"42"), -32600, Value::Null);
    alive(&mut server);

    // No method: Invalid Request with the id.
    assert_error(
        &hostile(&mut server, br#"{"jsonrpc":"2.0","id":5}"#),
        -32600,
        json!(5),
    );
    alive(&mut server);

    // An unknown method: Method not found, with the id.
    assert_error(
        &hostile(
            &mut server,
            br#"{"jsonrpc":"2.0","id":6,"method":"no/such","params":{}}"#,
        ),
        -32601,
        json!(6),
    );
    alive(&mut server);

    // Notifications are never answered: an unknown one, a deep one.
    server.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"no/such\",\"params\":{}}\n");
    let deep_note = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}{}}}\n",
        "[".repeat(3000),
        "]".repeat(3000)
    );
    server.send(deep_note.as_bytes());
    alive(&mut server);

    server.close();
    let mut left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["cwd", "sessions"], "files outside the sessions dir");
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "files in the server's cwd"
    );
    eprintln!("hostile test: {:?}", started.elapsed());
}

/// A stdin that fails to read (here a directory: `EISDIR`) ends the server
/// with an error, promptly: only `EINTR` is retried, so a lasting read
/// error is neither spun on nor served as input.
#[test]
fn a_stdin_that_cannot_be_read_ends_the_server_with_an_error() {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let sessions = tempfile::tempdir().unwrap();
    let mut child = Command::new(lifecycle_testkit::lifecycle_bin())
        .args(["acp", "--sessions"])
        .arg(sessions.path())
        .stdin(std::fs::File::open("/").expect("open /"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn lifecycle acp");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(10) {
            // Kill the whole group: the server and anything it started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("the server exited within 10 s");
    assert!(
        !status.success(),
        "a failed read is an error exit: {status}"
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.to_lowercase().contains("directory"),
        "stderr names the read error: {stderr}"
    );
}
