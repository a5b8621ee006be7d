//! The real ACP server (`lifecycle acp`) driven by the official
//! `agent-client-protocol` client over pipes: initialize, new, prompt
//! (with a bash tool call), cancel, prompt, a background job, one prompt in
//! flight, disconnect. Asserts A2, A4 and A8 on the real runtime, and that
//! the process exits with nothing left running (A1).

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use agent_lifecycle::journal::EndReason;
use agent_lifecycle::session_log::Entry;
use agent_lifecycle::store::durable::{Durable, FileDurable};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// A marker no other process on the machine has on its command line.
const JOB: &str = "sleep 31.4159";

fn texts(updates: &Mutex<Vec<SessionNotification>>) -> Vec<String> {
    updates
        .lock()
        .unwrap()
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn job_processes() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
                .filter(|c| String::from_utf8_lossy(c).replace('\0', " ").contains(JOB))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_server_lifecycle_over_pipes() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lifecycle"))
        .arg("acp")
        .arg("--sessions")
        .arg(sessions.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn lifecycle acp");
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let mut stderr = child.stderr.take().unwrap();
    let updates: Arc<Mutex<Vec<SessionNotification>>> = Arc::default();
    let seen = updates.clone();

    let client = Client
        .v1()
        .name("lifecycle-test-client")
        .on_receive_notification(
            async move |n: SessionNotification, _cx: ConnectionTo<Agent>| {
                seen.lock().unwrap().push(n);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |_r: RequestPermissionRequest, responder, _cx: ConnectionTo<Agent>| {
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_info(Implementation::new("test", "0")),
                )
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            let sid = cx
                .send_request(NewSessionRequest::new("/tmp"))
                .block_task()
                .await?
                .session_id;
            let prompt = |text: &str| {
                PromptRequest::new(sid.clone(), vec![ContentBlock::from(text.to_string())])
            };

            // A prompt with a bash tool call.
            let r = cx
                .send_request(prompt("hello\n$ echo hi-from-bash"))
                .block_task()
                .await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);

            // session/cancel maps to cancel(user): the turn stops at its next
            // step boundary and answers cancelled; its second step never runs.
            let t = Instant::now();
            let pending = cx.send_request(prompt("sleep 3000\nnever-echoed"));
            tokio::time::sleep(Duration::from_millis(200)).await;
            cx.send_notification(CancelNotification::new(sid.clone()))?;
            let r = pending.block_task().await?;
            assert_eq!(r.stop_reason, StopReason::Cancelled, "A2");
            assert!(t.elapsed() < Duration::from_millis(3500));

            // A later prompt runs (A2), and may start a background job.
            let r = cx
                .send_request(prompt(&format!("after-cancel\n$& {JOB}")))
                .block_task()
                .await?;
            assert_eq!(
                r.stop_reason,
                StopReason::EndTurn,
                "A2: a later prompt runs"
            );

            // One prompt in flight per session (A8).
            let long = cx.send_request(prompt("sleep 5000"));
            tokio::time::sleep(Duration::from_millis(200)).await;
            let second = cx.send_request(prompt("second")).block_task().await;
            let err = second.expect_err("A8: a second prompt in flight must fail");
            assert!(format!("{err:?}").contains("in flight"), "A8: {err:?}");
            // Disconnect with that prompt in flight (A4): returning drops the
            // transport and closes the server's stdin.
            long.detach();
            Ok(())
        });
    tokio::time::timeout(Duration::from_secs(20), client)
        .await
        .expect("client timed out")
        .expect("client failed");

    let got = texts(&updates);
    assert!(got.iter().any(|t| t == "echo: hello"), "{got:?}");
    assert!(got.iter().any(|t| t.contains("hi-from-bash")), "{got:?}");
    assert!(
        !got.iter().any(|t| t.contains("never-echoed")),
        "a cancelled turn ran on: {got:?}"
    );
    assert!(got.iter().any(|t| t.starts_with("started job-")), "{got:?}");
    assert_eq!(
        job_processes(),
        1,
        "the background job should run until the disconnect"
    );

    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server did not exit after the disconnect")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    stderr.read_to_string(&mut err).await.unwrap();
    assert!(
        err.contains("0 agents/sessions left; 0 jobs running"),
        "A1: {err}"
    );
    // A4 with D3: the turn the disconnect cut is durable, ended `disposed`.
    let log = FileDurable::new(sessions.path())
        .unwrap()
        .load("sess-1")
        .unwrap();
    assert!(log.torn.is_none());
    let ends: Vec<EndReason> = log
        .records
        .iter()
        .filter_map(|r| match r.entry {
            Entry::TurnEnd { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        vec![
            EndReason::Completed,
            EndReason::Aborted,
            EndReason::Completed,
            EndReason::Disposed
        ],
        "turn/end of each prompt, durable"
    );
    // kill_on_drop reaps asynchronously: give the kernel a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while job_processes() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(job_processes(), 0, "a background job outlived the server");
}

#[tokio::test]
async fn malformed_json_rpc_gets_an_error_not_a_crash() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_lifecycle"))
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for (line, code) in [("not json", -32700), (r#"{"foo":1}"#, -32600)] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let reply = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(v["error"]["code"], code, "{reply}");
    }
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

/// Client mistakes get the protocol's codes, not -32603: a relative or
/// missing `cwd` is -32602; a load of an id with no log, and a prompt to an
/// unknown session, are -32002 naming the session; a second load of a live
/// session is -32602. Raw JSON-RPC lines, each answered before the next.
#[test]
fn client_mistakes_get_specific_error_codes() {
    use std::io::{BufRead, BufReader, Write};
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lifecycle"))
        .arg("acp")
        .arg("--sessions")
        .arg(sessions.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lifecycle acp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = |id: u32, method: &str, params: serde_json::Value| -> serde_json::Value {
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").expect("write");
        loop {
            let mut answer = String::new();
            assert!(
                stdout.read_line(&mut answer).expect("read") > 0,
                "server closed"
            );
            let v: serde_json::Value = serde_json::from_str(&answer).expect("json");
            if v["id"] == serde_json::json!(id) {
                return v;
            }
        }
    };
    let code = |v: &serde_json::Value| v["error"]["code"].as_i64();
    ask(1, "initialize", serde_json::json!({"protocolVersion": 1}));
    let relative = ask(
        2,
        "session/new",
        serde_json::json!({"cwd": "relative", "mcpServers": []}),
    );
    assert_eq!(code(&relative), Some(-32602), "{relative}");
    let missing = ask(
        3,
        "session/new",
        serde_json::json!({"cwd": "/no/such/dir/at/all", "mcpServers": []}),
    );
    assert_eq!(code(&missing), Some(-32602), "{missing}");
    let never = ask(
        4,
        "session/load",
        serde_json::json!({"sessionId": "never-existed", "cwd": "/", "mcpServers": []}),
    );
    assert_eq!(code(&never), Some(-32002), "{never}");
    assert_eq!(
        never["error"]["data"]["sessionId"], "never-existed",
        "{never}"
    );
    let unknown = ask(
        5,
        "session/prompt",
        serde_json::json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(code(&unknown), Some(-32002), "{unknown}");
    let new = ask(
        6,
        "session/new",
        serde_json::json!({"cwd": "/", "mcpServers": []}),
    );
    let sid = new["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let again = ask(
        7,
        "session/load",
        serde_json::json!({"sessionId": sid, "cwd": "/", "mcpServers": []}),
    );
    assert_eq!(code(&again), Some(-32602), "{again}");
    drop(stdin);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}
