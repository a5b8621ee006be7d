//! The real ACP server (`lifecycle acp`) driven by the official
//! `agent-client-protocol` client over pipes: initialize, new, prompt
//! (with a bash tool call), cancel, prompt, a background job, one prompt in
//! flight, disconnect. Asserts A2, A4 and A8 on the real runtime, and that
//! the process exits with nothing left running (A1).

use lifecycle_testkit as common;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use common::acp::AcpServer;
use lifecycle::journal::EndReason;
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
    processes_running(JOB)
}

/// Live processes whose command line contains `marker` (zombies, which
/// have an empty command line, do not count).
fn processes_running(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
                .filter(|c| {
                    String::from_utf8_lossy(c)
                        .replace('\0', " ")
                        .contains(marker)
                })
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_server_lifecycle_over_pipes() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(lifecycle_testkit::lifecycle_bin())
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
    let session: Arc<Mutex<String>> = Arc::default();
    let session_out = session.clone();

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
            *session_out.lock().unwrap() = sid.0.to_string();
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

            // A later prompt runs (A2), and may start a background job; this
            // one starts a child of its own (A10, S7: its group dies whole).
            let r = cx
                .send_request(prompt(&format!("after-cancel\n$& {JOB} & {JOB}")))
                .block_task()
                .await?;
            assert_eq!(
                r.stop_reason,
                StopReason::EndTurn,
                "A2: a later prompt runs"
            );
            // bash and its two sleeps (or one, if bash execs the last
            // command) run until the disconnect; counted before it, since
            // the disconnect's drain kills them (S7).
            let deadline = Instant::now() + Duration::from_secs(5);
            while job_processes() < 2 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(
                job_processes() >= 2,
                "the background job and its child should run until the disconnect: {}",
                job_processes()
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

    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server did not exit after the disconnect")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    stderr.read_to_string(&mut err).await.unwrap();
    assert!(
        err.contains("0 agents and 0 sessions left; 0 jobs running"),
        "A1: {err}"
    );
    // A4 with D3: the turn the disconnect cut is durable, ended `disposed`.
    let ends = common::acp::turn_ends(sessions.path(), &session.lock().unwrap().clone());
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
    // The session's disposal drained its job (S7), killing the job's whole
    // process group, the child included; give the kernel a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while job_processes() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(job_processes(), 0, "a background job outlived the server");
}

#[tokio::test]
async fn malformed_json_rpc_gets_an_error_not_a_crash() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = Command::new(lifecycle_testkit::lifecycle_bin())
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
/// session is -32602.
#[test]
fn client_mistakes_get_specific_error_codes() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let code = |v: &serde_json::Value| v["error"]["code"].as_i64();
    let relative = server.ask(
        "session/new",
        serde_json::json!({"cwd": "relative", "mcpServers": []}),
    );
    assert_eq!(code(&relative), Some(-32602), "{relative}");
    let missing = server.ask(
        "session/new",
        serde_json::json!({"cwd": "/no/such/dir/at/all", "mcpServers": []}),
    );
    assert_eq!(code(&missing), Some(-32602), "{missing}");
    let never = server.ask(
        "session/load",
        serde_json::json!({"sessionId": "never-existed", "cwd": "/", "mcpServers": []}),
    );
    assert_eq!(code(&never), Some(-32002), "{never}");
    assert_eq!(
        never["error"]["data"]["sessionId"], "never-existed",
        "{never}"
    );
    let unknown = server.ask(
        "session/prompt",
        serde_json::json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(code(&unknown), Some(-32002), "{unknown}");
    let sid = server.new_session();
    let again = server.ask(
        "session/load",
        serde_json::json!({"sessionId": sid, "cwd": "/", "mcpServers": []}),
    );
    assert_eq!(code(&again), Some(-32602), "{again}");
    server.close();
}

/// A9: a second server process loading a session replays its history as
/// `session/update`s (the prompt as a user message, each step's output as
/// an agent message, in order) before it answers the load.
#[test]
fn load_replays_the_history_before_answering() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut first = AcpServer::start(sessions.path());
    let sid = first.new_session();
    let text = "hello\n$ echo replayed";
    let (done, sent) = first.ask_with_updates(
        "session/prompt",
        serde_json::json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    first.close();
    let chunks = |updates: &[serde_json::Value], kind: &str| -> Vec<String> {
        updates
            .iter()
            .filter(|u| u["params"]["update"]["sessionUpdate"] == kind)
            .map(|u| {
                u["params"]["update"]["content"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    };
    let mut second = AcpServer::start(sessions.path());
    let (loaded, replayed) = second.ask_with_updates(
        "session/load",
        serde_json::json!({"sessionId": sid, "cwd": "/", "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    assert_eq!(
        chunks(&replayed, "user_message_chunk"),
        vec![text.to_string()]
    );
    assert_eq!(
        chunks(&replayed, "agent_message_chunk"),
        chunks(&sent, "agent_message_chunk"),
        "the load replays exactly what the client was sent"
    );
    second.close();
}

/// Session ids are unique across server processes on one directory, so a
/// second process never appends to the first one's log.
#[test]
fn session_ids_are_unique_across_processes() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let new_id = || {
        let mut server = AcpServer::start(sessions.path());
        let sid = server.new_session();
        server.close();
        sid
    };
    let (a, b) = (new_id(), new_id());
    assert!(a.starts_with("sess-") && b.starts_with("sess-"), "{a} {b}");
    assert_ne!(a, b);
}

/// The `agent_message_chunk` texts among `lines` (JSON-RPC messages).
fn agent_chunks(lines: &[serde_json::Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|v| v["params"]["update"]["content"]["text"].as_str())
        .map(str::to_string)
        .collect()
}

/// D9 on the real binary: `lifecycle acp` is SIGKILLed at 20 points of a
/// scripted session (each restart loads the session, then a prompt runs
/// until the kill). Every restart's `session/load` succeeds, and its replayed
/// history holds every step output any earlier run sent to the client.
/// Each prompt also starts a background job with a child: after each kill,
/// no process of it is left (A10).
#[test]
fn sigkill_at_twenty_points_loses_nothing_the_client_saw() {
    const LEFT: &str = "sleep 26.5358";
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut id: Option<String> = None;
    let mut seen: Vec<String> = Vec::new();
    for round in 0..20u32 {
        let mut server = AcpServer::start(sessions.path());
        let session = match &id {
            None => server.new_session(),
            Some(s) => {
                let (answer, updates) = server.ask_with_updates(
                    "session/load",
                    serde_json::json!({"sessionId": s, "cwd": "/", "mcpServers": []}),
                );
                assert!(
                    answer.get("result").is_some(),
                    "round {round}: load failed after a SIGKILL: {answer}"
                );
                let history = agent_chunks(&updates);
                for out in &seen {
                    assert!(
                        history.contains(out),
                        "round {round}: the client saw {out:?} before the kill; the reloaded history lacks it: {history:?}"
                    );
                }
                s.clone()
            }
        };
        id = Some(session.clone());
        let text = format!(
            "r{round} a\n$& {LEFT} & {LEFT}\nsleep 20\nr{round} b\nsleep 20\nr{round} c\nsleep 20\nr{round} d"
        );
        server.send_prompt(&session, &text);
        // Kill the server at this round's point, 0 to 95 ms after the
        // turn's first step reached the client (counted from there, not
        // from the prompt, so a loaded machine's slow start does not move
        // every point before the turn), from a timer thread, and read what
        // the client receives until then.
        let mut lines = server.read_until_text(&format!("r{round} a"));
        let pid = server.pid().to_string();
        let delay = std::time::Duration::from_millis(5 * u64::from(round));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .expect("kill -KILL");
        });
        lines.extend(server.read_to_end());
        killer.join().expect("killer");
        server.wait_exit(Duration::from_secs(10));
        seen.extend(agent_chunks(&lines));
        // A10: the background job and its child died with the server.
        let deadline = Instant::now() + Duration::from_secs(5);
        while processes_running(LEFT) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            processes_running(LEFT),
            0,
            "round {round}: a command outlived the SIGKILLed server"
        );
    }
    // Some kills landed after a turn's third step: the points spread over
    // the turn, not all at its start.
    let late = (0..20u32)
        .filter(|r| {
            let (c, d) = (format!("r{r} c"), format!("r{r} d"));
            seen.iter().any(|s| s.contains(&c) || s.contains(&d))
        })
        .count();
    assert!(
        late >= 1,
        "every kill landed before a turn's third step: {seen:?}"
    );
    // A last restart: the log still loads with everything.
    let mut server = AcpServer::start(sessions.path());
    let (answer, updates) = server.ask_with_updates(
        "session/load",
        serde_json::json!({"sessionId": id.expect("id"), "cwd": "/", "mcpServers": []}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
    let history = agent_chunks(&updates);
    assert!(seen.iter().all(|o| history.contains(o)), "{history:?}");
    server.close();
}
