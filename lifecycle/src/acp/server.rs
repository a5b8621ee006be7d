//! `lifecycle acp`: the bridge served over stdio (JSON-RPC 2.0, the Agent
//! Client Protocol) with the official `agent-client-protocol` crate, on
//! tokio, with the real shell. This file is the tokio shell: stdin and
//! stdout, the framing, files, signals and the grace period. What each
//! request does is [`super::core`]'s and each step is
//! [`super::responder`]'s, both written against `Rt`, so the checkers run
//! them too (`generate`).
//!
//! There is no language model: the agent behind each session is a
//! deterministic scripted responder. Each non-empty line of a prompt is one
//! step of the turn:
//!
//! | line        | step |
//! | ----------- | ---- |
//! | `$ CMD`     | tool `bash`: runs `CMD` in the foreground, replies with its output |
//! | `$& CMD`    | tool `bash` in the background: replies with the job id |
//! | `? JOB`     | tool `bash_output` on a job |
//! | `! JOB`     | tool `bash_kill` on a job |
//! | `sleep N`   | a slow step: awaits N milliseconds |
//! | anything else | replies `echo: <line>` |
//!
//! Each step's reply is sent as a `session/update` (`agent_message_chunk`).
//! Background jobs speak ACP's tool calls (A11): `$&` sends a `tool_call`
//! (id the job id, `in_progress`) with its reply; when the job ends, its
//! completion notice runs a turn of the agent's own that sends one
//! `tool_call_update` (`completed`, `rawOutput` with `exitCode` and the
//! last [`NOTICE_TAIL_BYTES`] of output) and no message text. Turns are
//! serial, so that turn ends before the next client prompt is claimed, and
//! a completion never lands inside another prompt's message stream. A load
//! replays the log in the same form (never a notice as user text), and
//! continues job numbers after the log's typed job-start records only.
//! `session/close` disposes one session as a disconnect disposes them
//! all (its prompt answers `cancelled`, its jobs and what they started are
//! killed), then lets go of its log's lock and its working directory.
//! Cancellation is cooperative: a `session/cancel` stops the turn at its
//! next step boundary. When the client disconnects (stdin reaches EOF) the
//! bridge quiesces: every session is disposed, every background job killed,
//! and the process exits 0. Disposing a session drains its background jobs
//! (their process groups are killed and their ids become unknown, S7). Malformed JSON-RPC gets a JSON-RPC error.
//! Stdin is framed by [`super::framing`] (A10) before the crate
//! parses it: a line that is not UTF-8, too long, nested too deep or
//! without a usable id is answered there, and the server keeps serving.

use super::core::ServerCore;
use super::framing::{self, LineOut};
use super::init_gate::InitGate;
use super::logs::Logs;
use super::outbound::{self, ConnWire, Outbound};
use super::prompt_text::prompt_text;
use super::responder::Responder;
use super::{AcpError, Admitted, Bridge, StopReason as BridgeStop};
use crate::provider::Provider;
use crate::registry::Registry;
use crate::rt::TokioRt;
use crate::scope::Scope;
use crate::shell::real::RealShell;
use crate::store::durable::{Durable, FileDurable, MemoryDurable};
use crate::store::SessionStore;
use crate::tool_bash::ToolBash;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionId, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Error, Lines};
use futures::StreamExt;
use std::path::PathBuf;
use std::sync::Arc;

pub use super::responder::{script_lines, step_of, ScriptStep, NOTICE_TAIL_BYTES};
pub use super::session_cap::MAX_SESSIONS;

/// The most memory (VmHWM) the server may reach on one connection for any
/// input (A10): `tests/acp_soak.rs` sends each flood and damaged input it
/// knows and fails past this.
pub const MEMORY_CAP_BYTES: usize = 64 << 20;

/// After stdin closes (the client is gone), how long the server waits for
/// every session's teardown before it gives up on what is still hung, kills
/// every command's process group and exits anyway (A10).
pub const DISCONNECT_GRACE_MS: u64 = 5_000;

/// Each session's agent journal keeps about this many transitions and the
/// fates of this many prompts (A10).
pub const AGENT_JOURNAL_CAP: usize = 1_024;

/// A bridge error as a JSON-RPC error: a client's mistake (an unknown
/// session, a second load, a second prompt in flight) gets the protocol's
/// specific code or -32602; -32603 is kept for what the client cannot fix.
fn acp_error(e: AcpError) -> Error {
    let data = serde_json::json!(e.to_string());
    match e {
        AcpError::UnknownSession(id) => not_found(&id),
        AcpError::AlreadyLoaded(_)
        | AcpError::PromptInFlight(_)
        | AcpError::ClosedDuringReplay(_)
        | AcpError::LogInUse(_)
        | AcpError::TooManySessions => Error::invalid_params().data(data),
        AcpError::Disposed
        | AcpError::ClosedDuringNew
        | AcpError::ClosedDuringLoad
        | AcpError::Create(_)
        | AcpError::Storage(_) => Error::internal_error().data(data),
    }
}

/// Answer `session/new` with its id or its error.
fn respond_new(
    responder: agent_client_protocol::Responder<NewSessionResponse, agent_client_protocol::V1>,
    result: Result<String, AcpError>,
) -> Result<(), Error> {
    match result {
        Ok(id) => responder.respond(NewSessionResponse::new(SessionId::new(id))),
        Err(e) => responder.respond_with_error(acp_error(e)),
    }
}

/// The protocol's session-not-found (-32002 with `data.sessionId`).
pub(super) fn not_found(id: &str) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(SessionId::new(id.to_string()))
        .into()
}

/// `session/new`'s `cwd` must be an absolute path to a directory (ACP).
fn check_cwd(cwd: &std::path::Path) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params().data(serde_json::json!(format!(
            "cwd {} is not absolute",
            cwd.display()
        ))));
    }
    if !cwd.is_dir() {
        return Err(Error::invalid_params().data(serde_json::json!(format!(
            "cwd {} is not a directory",
            cwd.display()
        ))));
    }
    Ok(())
}

/// The `session/prompt` requests not yet answered: the end of input waits
/// for them to be answered (A10).
#[derive(Clone, Default)]
struct InFlight(Arc<tokio::sync::watch::Sender<usize>>);

/// One prompt request counted in [`InFlight`] until it is dropped.
struct Counted(InFlight);

impl InFlight {
    fn enter(&self) -> Counted {
        self.0.send_modify(|n| *n += 1);
        Counted(self.clone())
    }

    async fn none_left(&self) {
        let _ = self.0.subscribe().wait_for(|n| *n == 0).await;
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0 .0.send_modify(|n| *n -= 1);
    }
}

/// A10 and D10 at the process level: the soft descriptor limit is raised
/// to the hard one (each held session log keeps one descriptor), and
/// SIGXFSZ is ignored, so a file-size limit fails the write (EFBIG, a
/// storage error the session recovers from) instead of killing the server.
fn process_limits() {
    // SAFETY: getrlimit/setrlimit write or read only the struct passed;
    // `signal` with SIG_IGN installs no handler code.
    unsafe {
        let mut nofile = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut nofile) == 0
            && nofile.rlim_cur < nofile.rlim_max
        {
            nofile.rlim_cur = nofile.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &nofile) != 0 {
                eprintln!(
                    "agent-lifecycle: cannot raise the descriptor limit: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Resolves on the first SIGTERM or SIGINT (A10: the orderly exit of
/// stdin closing); never, if the handlers cannot be installed.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// Serve the bridge on stdin/stdout until the client disconnects. Sessions
/// are kept in `sessions` (JSON-lines files) or in memory.
pub async fn serve_stdio(sessions: Option<PathBuf>) -> Result<(), Error> {
    process_limits();
    // A10: the journals of a long-lived server are bounded.
    let durable: Arc<dyn Durable> = match sessions {
        Some(dir) => Arc::new(
            FileDurable::new(dir)
                .map_err(|e| Error::internal_error().data(serde_json::json!(e.to_string())))?,
        ),
        None => Arc::new(MemoryDurable::<TokioRt>::default()),
    };
    let logs = Arc::new(Logs::served(durable.clone()));
    let store = SessionStore::new(durable.clone());
    let registry = Registry::new();
    let provider = Provider::new("agent-loop", registry.clone(), store.clone());
    let shell = Arc::new(RealShell::new());
    let tools = ToolBash::load(shell.clone(), registry.clone());
    let outbound = Arc::new(Outbound::default());
    let wire = Arc::new(ConnWire::default());
    let responder = Responder::new(Some(tools.clone()), wire.clone(), outbound.clone());
    provider.bound_journals(AGENT_JOURNAL_CAP);
    provider.set_runner(responder.clone());
    // Disposing a session's agent drains its background jobs (S7).
    provider.set_drain(crate::shell::drain_hook(shell.clone()));
    // Session ids unique across processes: `sess-<uuid v4>-N`.
    let prefix = format!("sess-{}-", uuid::Uuid::new_v4().simple());
    let bridge = Bridge::with_prefix(provider.clone(), Scope::new("acp", None), &prefix);
    let core = ServerCore::new(
        bridge.clone(),
        logs,
        responder,
        wire.clone(),
        outbound.clone(),
        Some(shell.clone()),
    );
    let (c_new, c_load, c_prompt, c_close, c_cancel) = (
        core.clone(),
        core.clone(),
        core.clone(),
        core.clone(),
        core.clone(),
    );
    // Stdin goes through the framing (A10) before the crate parses it; the
    // crate's lines and the framing's error answers share one stdout writer.
    let out = LineOut::new(tokio::io::stdout());
    // The end of input: stdin's EOF, SIGTERM or SIGINT (A10). Then, with
    // the connection still open, every session is disposed, so each prompt
    // in flight is answered `cancelled` before the connection closes.
    // One deadline for everything after the end of input: the grace
    // period (A10), which holds even when stdout is blocked.
    let prompts = InFlight::default();
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<tokio::time::Instant>();
    let closing = {
        let (bridge, prompts) = (bridge.clone(), prompts.clone());
        async move {
            let grace = std::time::Duration::from_millis(DISCONNECT_GRACE_MS);
            let deadline = tokio::time::Instant::now() + grace;
            let _ = ended_tx.send(deadline);
            let answered = async {
                bridge.disconnect().await;
                prompts.none_left().await;
            };
            let _ = tokio::time::timeout_at(deadline, answered).await;
            None
        }
    };
    // A10: no line is taken while the client is behind on reading, until
    // it hangs up.
    let hangup = outbound::stdin_hangup();
    // A10: the requests behind an `initialize` wait for its answer (a
    // pipelining client's `session/new` is served, not refused).
    let init = InitGate::default();
    let gate = {
        let (outbound, init) = (outbound.clone(), init.clone());
        move |line: std::io::Result<String>| {
            let (outbound, mut hangup, init) = (outbound.clone(), hangup.clone(), init.clone());
            async move {
                outbound.room_or(&mut hangup).await;
                if let Ok(text) = &line {
                    init.pass(text).await;
                }
                line
            }
        }
    };
    let incoming = framing::incoming(framing::stdin_chunks(), out.clone())
        .then(gate)
        .take_until(Box::pin(stop_signal()))
        .chain(futures::stream::once(closing).filter_map(futures::future::ready));
    let p_prompts = prompts.clone();
    // Every line written frees the budget its update took (A10).
    let sink = futures::sink::unfold(
        (out.clone(), outbound.clone(), init),
        |(out, outbound, init), line: String| async move {
            let update = outbound::is_update(&line);
            if !update {
                init.wrote(&line);
            }
            out.write_line(line).await?;
            if update {
                outbound.wrote_update();
            }
            Ok::<_, std::io::Error>((out, outbound, init))
        },
    );
    let served = Agent
        .v1()
        .name("agent-lifecycle")
        .on_receive_request(
            async move |req: InitializeRequest, responder, cx: ConnectionTo<Client>| {
                wire.connect(cx);
                responder.respond(
                    InitializeResponse::new(req.protocol_version)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .session_capabilities(
                                    SessionCapabilities::new()
                                        .close(SessionCloseCapabilities::new()),
                                )
                                .prompt_capabilities(
                                    // Embedded text resources are read; a binary
                                    // one gets -32602 (see `prompt_text`).
                                    PromptCapabilities::new().embedded_context(true),
                                ),
                        )
                        .agent_info(Implementation::new(
                            "agent-lifecycle",
                            env!("CARGO_PKG_VERSION"),
                        )),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest, responder, _cx: ConnectionTo<Client>| {
                responder.respond(AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                if let Err(e) = check_cwd(&req.cwd) {
                    return responder.respond_with_error(e);
                }
                let answer = Box::pin(c_new.clone().new_session(req.cwd));
                // Its slot under the cap is taken here, in the order
                // requests arrive (A10).
                match super::admit(answer).await {
                    Admitted::Answered(result) => respond_new(responder, result),
                    Admitted::Pending(answer) => {
                        cx.spawn(async move { respond_new(responder, answer.await) })
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                if let Err(e) = check_cwd(&req.cwd) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                let answer = Box::pin(c_load.clone().load(id, req.cwd));
                // Claimed here, in the order requests arrive: a prompt that
                // follows the load finds it loading and waits for its
                // answer (A9). Then it runs on a task.
                let respond = |responder: agent_client_protocol::Responder<_, _>, result| {
                    responder.respond_with_result(
                        Result::map(result, |()| LoadSessionResponse::new()).map_err(acp_error),
                    )
                };
                match super::admit(answer).await {
                    Admitted::Answered(result) => respond(responder, result),
                    Admitted::Pending(answer) => {
                        cx.spawn(async move { respond(responder, answer.await) })
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let sid = req.session_id.0.to_string();
                let text = match prompt_text(req.prompt) {
                    Ok(text) => text,
                    Err(e) => return responder.respond_with_error(e),
                };
                let counted = p_prompts.enter();
                let answer = Box::pin(c_prompt.clone().prompt(sid, text));
                // The prompt is claimed here, in the order the requests and
                // notifications arrive: a `session/cancel` that follows it
                // finds it in flight (A2, A8). Then it runs on a task.
                let respond =
                    |responder: agent_client_protocol::Responder<_, _>, result| match result {
                        Ok(BridgeStop::EndTurn) => {
                            responder.respond(PromptResponse::new(StopReason::EndTurn))
                        }
                        Ok(BridgeStop::Cancelled) => {
                            responder.respond(PromptResponse::new(StopReason::Cancelled))
                        }
                        Err(e) => responder.respond_with_error(acp_error(e)),
                    };
                // The request stops counting as unanswered only once its
                // answer is handed to the connection.
                match super::admit(answer).await {
                    Admitted::Answered(result) => {
                        let sent = respond(responder, result);
                        drop(counted);
                        sent
                    }
                    Admitted::Pending(answer) => cx.spawn(async move {
                        let sent = respond(responder, answer.await);
                        drop(counted);
                        sent
                    }),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CloseSessionRequest, responder, cx: ConnectionTo<Client>| {
                let answer = Box::pin(c_close.clone().close(req.session_id.0.to_string()));
                let respond =
                    |responder: agent_client_protocol::Responder<_, _>, result| match result {
                        Ok(()) => responder.respond(CloseSessionResponse::new()),
                        Err(e) => responder.respond_with_error(acp_error(e)),
                    };
                // The session is taken here, in the order requests arrive:
                // a prompt that follows the close finds it gone (A4).
                match super::admit(answer).await {
                    Admitted::Answered(result) => respond(responder, result),
                    Admitted::Pending(answer) => {
                        cx.spawn(async move { respond(responder, answer.await) })
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                c_cancel.cancel(&n.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Lines::new(Box::pin(sink), Box::pin(incoming)));
    // After the end of input the connection gets until the deadline to
    // flush: a client that stopped reading cannot hold the exit (A10).
    let (result, deadline) = {
        let mut served = std::pin::pin!(served);
        let mut ended = ended_rx;
        tokio::select! {
            r = &mut served => (r, None),
            Ok(deadline) = &mut ended => {
                tokio::select! {
                    r = &mut served => (r, Some(deadline)),
                    _ = tokio::time::sleep_until(deadline) => (Ok(()), Some(deadline)),
                }
            }
        }
    };
    let grace = std::time::Duration::from_millis(DISCONNECT_GRACE_MS);
    let deadline = deadline.unwrap_or_else(|| tokio::time::Instant::now() + grace);

    // The client is gone: quiesce (A1), then unload the bridge and tools,
    // until the deadline (A10); then every command's process group is
    // killed, whatever is still hung.
    let teardown = async {
        bridge.disconnect().await;
        bridge.unload().await;
        tools.unload();
        provider.unload().await;
    };
    if tokio::time::timeout_at(deadline, teardown).await.is_err() {
        eprintln!(
            "agent-lifecycle: teardown still running after the {DISCONNECT_GRACE_MS} ms grace period; killing every command and exiting (A10)"
        );
    }
    shell.shutdown().await;
    let (agents, sessions) = (registry.entries().len(), store.sessions().len());
    eprintln!(
        "agent-lifecycle: connection closed; {agents} agents and {sessions} sessions left; {} jobs running",
        shell.running_pids().len()
    );
    drop(shell);
    result
}
