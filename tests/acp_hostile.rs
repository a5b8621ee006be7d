//! Hostile input to the real `lifecycle acp` (SPEC A10, framing): lines
//! that are not UTF-8, a line far over the limit (streamed; the server's
//! memory stays small and its error does not echo the line), unusable ids,
//! deep nesting, an empty line, a batch, a non-object, a missing method, an
//! unknown method and unanswerable notifications. Each gets its JSON-RPC
//! error (or, for a notification, nothing), and the server keeps serving;
//! at the end it exits 0 and has written nothing outside its sessions
//! directory.

use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long any one answer may take.
const PATIENCE: Duration = Duration::from_secs(60);

struct Server {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: i64,
}

impl Server {
    fn start(sessions: &std::path::Path, cwd: &std::path::Path) -> Server {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lifecycle"))
            .arg("acp")
            .arg("--sessions")
            .arg(sessions)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn lifecycle acp");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
            next_id: 1000,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line the server writes, as JSON.
    fn read(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answers");
        assert!(line.len() < 4096, "a long answer: {} bytes", line.len());
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Send one line; its answer must be the next line the server writes.
    fn hostile(&mut self, line: &[u8]) -> Value {
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        self.send(&bytes);
        self.read()
    }

    /// A request the server must answer with a result.
    fn ask(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(format!("{line}\n").as_bytes());
        loop {
            let v = self.read();
            if v.get("id").is_some() {
                assert_eq!(v["id"], id, "an answer to something else: {v}");
                assert!(v.get("result").is_some(), "{v}");
                return v;
            }
        }
    }

    /// The server still serves: `initialize`, then `session/new`.
    fn alive(&mut self) {
        self.ask("initialize", json!({"protocolVersion": 1}));
        let new = self.ask("session/new", json!({"cwd": "/", "mcpServers": []}));
        assert!(new["result"]["sessionId"].is_string(), "{new}");
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// Close stdin; the server must exit 0.
    fn close(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "{status}");
                return;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
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
    let mut server = Server::start(&sessions, &cwd);
    server.alive();

    // Not UTF-8.
    let mut bad = request("1", r#"{"protocolVersion":1,"x":"?"}"#);
    let at = bad.iter().position(|&b| b == b'?').unwrap();
    bad[at] = 0xff;
    assert_error(&server.hostile(&bad), -32700, Value::Null);
    server.alive();
    assert_error(&server.hostile(b"\xc3\x28\xa0\xa1"), -32700, Value::Null);
    server.alive();

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
    let long = server.hostile(br#""}}"#);
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
    server.alive();

    // Unusable ids: not served, answered with id null.
    for id in ["null", "{}", "[1]", "true", "1.5"] {
        let answer = server.hostile(&request(id, r#"{"protocolVersion":1}"#));
        assert_error(&answer, -32600, Value::Null);
        server.alive();
    }

    // 3,000-deep params with a numeric id: Invalid Request with that id.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"initialize","params":{{"protocolVersion":1,"x":{}{}}}}}"#,
        "[".repeat(3000),
        "]".repeat(3000)
    );
    assert_error(&server.hostile(deep.as_bytes()), -32600, json!(3));
    server.alive();
    // ... and with the id first and a string id.
    let deep = format!(
        r#"{{"id":"deep","jsonrpc":"2.0","method":"initialize","params":{}{}}}"#,
        "{\"a\":".repeat(3000),
        "}".repeat(3000)
    );
    assert_error(&server.hostile(deep.as_bytes()), -32600, json!("deep"));
    server.alive();

    // An empty line is not JSON.
    assert_error(&server.hostile(b""), -32700, Value::Null);
    server.alive();

    // A batch, and a non-object: Invalid Request (ids cannot be read).
    let batch = format!("[{}]", String::from_utf8(request("4", "{}")).unwrap());
    assert_error(&server.hostile(batch.as_bytes()), -32600, Value::Null);
    server.alive();
    assert_error(&server.hostile(b"42"), -32600, Value::Null);
    server.alive();

    // No method: Invalid Request with the id.
    assert_error(
        &server.hostile(br#"{"jsonrpc":"2.0","id":5}"#),
        -32600,
        json!(5),
    );
    server.alive();

    // An unknown method: Method not found, with the id.
    assert_error(
        &server.hostile(br#"{"jsonrpc":"2.0","id":6,"method":"no/such","params":{}}"#),
        -32601,
        json!(6),
    );
    server.alive();

    // Notifications are never answered: an unknown one, a deep one.
    server.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"no/such\",\"params\":{}}\n");
    let deep_note = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}{}}}\n",
        "[".repeat(3000),
        "]".repeat(3000)
    );
    server.send(deep_note.as_bytes());
    server.alive();

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
