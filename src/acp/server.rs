//! `lifecycle acp`: the bridge served over stdio (JSON-RPC 2.0, the Agent
//! Client Protocol) with the official `agent-client-protocol` crate, on
//! tokio, with the real shell.
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
//! Cancellation is cooperative: a `session/cancel` stops the turn at its
//! next step boundary. When the client disconnects (stdin reaches EOF) the
//! bridge quiesces: every session is disposed, every background job killed,
//! and the process exits 0. Disposing a session drains its background jobs
//! (their process groups are killed and their ids become unknown, S7). Malformed JSON-RPC gets a JSON-RPC error.
//! Stdin is framed by [`framing`](super::framing) (A10) before the crate
//! parses it: a line that is not UTF-8, too long, nested too deep or
//! without a usable id is answered there, and the server keeps serving.

use super::framing::{self, LineOut};
use super::{AcpError, Bridge, StopReason as BridgeStop};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::faults::Faults;
use crate::provider::{scope_journaled, Provider};
use crate::registry::Registry;
use crate::rt::{BoxFuture, TokioRt};
use crate::session_log::Entry;
use crate::shell::real::RealShell;
use crate::shell::ExecResult;
use crate::store::durable::{Durable, FileDurable, MemoryDurable};
use crate::store::SessionStore;
use crate::tool_bash::ToolBash;
use crate::world::World;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification, ContentBlock,
    ContentChunk, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    SessionId, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Error, Lines};
use futures::future::Either;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One step of the scripted responder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptStep {
    /// `$ CMD`.
    Bash(String),
    /// `$& CMD`.
    BashBackground(String),
    /// `? JOB`.
    Output(String),
    /// `! JOB`.
    Kill(String),
    /// `sleep N`.
    Sleep(u64),
    /// Anything else.
    Echo(String),
}

/// Parse a prompt into its steps (one per non-empty line).
pub fn script(text: &str) -> Vec<ScriptStep> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            if let Some(c) = l.strip_prefix("$& ") {
                ScriptStep::BashBackground(c.to_string())
            } else if let Some(c) = l.strip_prefix("$ ") {
                ScriptStep::Bash(c.to_string())
            } else if let Some(j) = l.strip_prefix("? ") {
                ScriptStep::Output(j.to_string())
            } else if let Some(j) = l.strip_prefix("! ") {
                ScriptStep::Kill(j.to_string())
            } else if let Some(n) = l.strip_prefix("sleep ").and_then(|n| n.parse().ok()) {
                ScriptStep::Sleep(n)
            } else {
                ScriptStep::Echo(l.to_string())
            }
        })
        .collect()
}

/// The scripted responder: performs steps with tool-bash and reports each
/// step's reply to the client.
struct Responder {
    tools: Arc<ToolBash<TokioRt>>,
    conn: Mutex<Option<ConnectionTo<Client>>>,
}

impl StepRunner for Responder {
    fn run_step(
        &self,
        agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let steps = script(&prompt.text);
        let this_step = steps.get(step as usize).cloned();
        let tools = self.tools.clone();
        let id = agent_id.to_string();
        Box::pin(async move {
            let reply = match this_step? {
                // C10: a cancel kills the foreground command's process
                // group (dropping the exec future does).
                ScriptStep::Bash(c) => {
                    let run = Box::pin(tools.bash(Some(&id), &c, false));
                    match futures::future::select(run, signal.fired()).await {
                        Either::Left((Ok(ExecResult::Finished { output, exit }), _)) => {
                            format!("{output}[exit {exit}]")
                        }
                        Either::Left((Ok(ExecResult::Started { job }), _)) => job,
                        Either::Left((Err(e), _)) => format!("error: {e}"),
                        Either::Right(_) => "cancelled: the command was killed".to_string(),
                    }
                }
                ScriptStep::BashBackground(c) => match tools.bash(Some(&id), &c, true).await {
                    Ok(ExecResult::Started { job }) => format!("started {job}"),
                    Ok(other) => format!("{other:?}"),
                    Err(e) => format!("error: {e}"),
                },
                ScriptStep::Output(j) => tools
                    .bash_output(Some(&id), &j)
                    .unwrap_or_else(|e| format!("error: {e}")),
                ScriptStep::Kill(j) => match tools.bash_kill(Some(&id), &j) {
                    Ok(killed) => format!("killed: {killed}"),
                    Err(e) => format!("error: {e}"),
                },
                ScriptStep::Sleep(ms) => {
                    let sleep = tokio::time::sleep(std::time::Duration::from_millis(ms));
                    match futures::future::select(Box::pin(sleep), signal.fired()).await {
                        Either::Left(_) => format!("slept {ms} ms"),
                        Either::Right(_) => "cancelled: the sleep was cut short".to_string(),
                    }
                }
                ScriptStep::Echo(l) => format!("echo: {l}"),
            };
            Some(reply)
        })
    }

    /// The reply reaches the client only once it is durable (D9).
    fn deliver(&self, agent_id: &str, _prompt: &PromptSpec, _step: u32, output: &str) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(conn) = conn {
            let _ = conn.send_notification(SessionNotification::new(
                SessionId::new(agent_id.to_string()),
                SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(
                    output.to_string(),
                ))),
            ));
        }
    }
}

/// A bridge error as a JSON-RPC error: a client's mistake (an unknown
/// session, a second load, a second prompt in flight) gets the protocol's
/// specific code or -32602; -32603 is kept for what the client cannot fix.
fn acp_error(e: AcpError) -> Error {
    let data = serde_json::json!(e.to_string());
    match e {
        AcpError::UnknownSession(id) => not_found(&id),
        AcpError::AlreadyLoaded(_) | AcpError::PromptInFlight(_) => {
            Error::invalid_params().data(data)
        }
        AcpError::Disposed
        | AcpError::ClosedDuringNew
        | AcpError::ClosedDuringLoad
        | AcpError::Create(_)
        | AcpError::Storage(_) => Error::internal_error().data(data),
    }
}

/// The protocol's session-not-found (-32002 with `data.sessionId`).
fn not_found(id: &str) -> Error {
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

/// Before a `session/load` of an id this bridge does not hold: the log
/// must exist and read cleanly, and its conversation is what the load
/// replays. A missing log is the protocol's resource-not-found; a storage
/// error is reported, never discarded.
fn check_log(durable: &dyn Durable, id: &str) -> Result<Vec<SessionUpdate>, Error> {
    let storage = |e: std::io::Error| {
        Error::internal_error().data(serde_json::json!(format!(
            "the log of session {id} cannot be read: {e}"
        )))
    };
    if !durable.exists(id).map_err(storage)? {
        return Err(not_found(id));
    }
    durable
        .load(id)
        .map(|loaded| history(&loaded.records))
        .map_err(storage)
}

/// The conversation of a session log, as `session/update`s: each prompt
/// (`user/message`) as a user message chunk, each step's output as an agent
/// message chunk, in log order (A9: a load replays the history).
fn history(records: &[crate::store::durable::DurableRecord]) -> Vec<SessionUpdate> {
    let chunk = |text: &str| ContentChunk::new(ContentBlock::from(text.to_string()));
    records
        .iter()
        .filter_map(|r| match &r.entry {
            Entry::UserMessage { text, .. } => Some(SessionUpdate::UserMessageChunk(chunk(text))),
            Entry::Step {
                output: Some(out), ..
            } => Some(SessionUpdate::AgentMessageChunk(chunk(out))),
            _ => None,
        })
        .collect()
}

fn prompt_text(req: &PromptRequest) -> String {
    req.prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Serve the bridge on stdin/stdout until the client disconnects. Sessions
/// are kept in `sessions` (JSON-lines files) or in memory.
pub async fn serve_stdio(sessions: Option<PathBuf>) -> Result<(), Error> {
    let world = World::<TokioRt>::new();
    let durable: Arc<dyn Durable> = match sessions {
        Some(dir) => Arc::new(
            FileDurable::new(dir)
                .map_err(|e| Error::internal_error().data(serde_json::json!(e.to_string())))?,
        ),
        None => Arc::new(MemoryDurable::<TokioRt>::default()),
    };
    let store = SessionStore::new(durable.clone(), world.clone(), Faults::none());
    let registry = Registry::new(world.clone());
    let provider = Provider::new(
        "agent-loop",
        registry.clone(),
        store.clone(),
        world.clone(),
        Faults::none(),
    );
    let shell = Arc::new(RealShell::new());
    let tools = ToolBash::load(
        shell.clone(),
        registry.clone(),
        world.clone(),
        Faults::none(),
    );
    let responder = Arc::new(Responder {
        tools: tools.clone(),
        conn: Mutex::new(None),
    });
    provider.set_runner(responder.clone());
    // Disposing a session's agent drains its background jobs (S7).
    provider.set_drain(crate::shell::drain_hook(shell.clone()));
    // Session ids unique across processes: `sess-<uuid v4>-N`.
    let prefix = format!("sess-{}-", uuid::Uuid::new_v4().simple());
    let bridge = Bridge::with_prefix(
        provider.clone(),
        scope_journaled("acp", &world),
        Faults::none(),
        &prefix,
    );

    let (b_new, b_load, b_prompt, b_cancel) = (
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
    );
    let (d_load, d_new) = (durable.clone(), durable.clone());
    let r_init = responder.clone();
    // Stdin goes through the framing (A10) before the crate parses it; the
    // crate's lines and the framing's error answers share one stdout writer.
    let out = LineOut::new(tokio::io::stdout());
    let incoming = framing::incoming(framing::stdin_chunks(), out.clone());
    let result = Agent
        .v1()
        .name("agent-lifecycle")
        .on_receive_request(
            async move |req: InitializeRequest, responder, cx: ConnectionTo<Client>| {
                *r_init.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(cx);
                responder.respond(
                    InitializeResponse::new(req.protocol_version)
                        .agent_capabilities(AgentCapabilities::new().load_session(true))
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
                let bridge = b_new.clone();
                if let Err(e) = check_cwd(&req.cwd) {
                    return responder.respond_with_error(e);
                }
                let durable = d_new.clone();
                cx.spawn(async move {
                    match bridge.new_session().await {
                        // D9: the id the client is given survives a crash
                        // before the first prompt: its (empty) log exists,
                        // synced, with its directory entry, before the answer.
                        Ok(id) => match durable.write(&id, &[]).and_then(|()| durable.sync(&id)) {
                            Ok(()) => {
                                responder.respond(NewSessionResponse::new(SessionId::new(id)))
                            }
                            Err(e) => responder.respond_with_error(Error::internal_error().data(
                                serde_json::json!(format!(
                                    "the log of session {id} cannot be created: {e}"
                                )),
                            )),
                        },
                        Err(e) => responder.respond_with_error(acp_error(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let bridge = b_load.clone();
                let durable = d_load.clone();
                let conn = cx.clone();
                cx.spawn(async move {
                    let id = req.session_id.0.to_string();
                    let mut past = Vec::new();
                    if !bridge.sessions().contains(&id) {
                        match check_log(durable.as_ref(), &id) {
                            Ok(h) => past = h,
                            Err(e) => return responder.respond_with_error(e),
                        }
                    }
                    match bridge.load_session(&req.session_id.0).await {
                        Ok(_) => {
                            // The history first, then the answer (ACP).
                            for update in past {
                                let _ = conn.send_notification(SessionNotification::new(
                                    req.session_id.clone(),
                                    update,
                                ));
                            }
                            responder.respond(LoadSessionResponse::new())
                        }
                        Err(e) => responder.respond_with_error(acp_error(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let bridge = b_prompt.clone();
                let text = prompt_text(&req);
                let spec = PromptSpec {
                    steps: script(&text).len().max(1) as u32,
                    text,
                    step_ms: 0,
                };
                cx.spawn(async move {
                    match bridge.prompt(&req.session_id.0, spec).await {
                        Ok(BridgeStop::EndTurn) => {
                            responder.respond(PromptResponse::new(StopReason::EndTurn))
                        }
                        Ok(BridgeStop::Cancelled) => {
                            responder.respond(PromptResponse::new(StopReason::Cancelled))
                        }
                        Err(e) => responder.respond_with_error(acp_error(e)),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                b_cancel.cancel(&n.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Lines::new(Box::pin(out.sink()), Box::pin(incoming)))
        .await;

    // The client is gone: quiesce (A1), then unload the bridge and tools.
    bridge.disconnect().await;
    bridge.unload().await;
    tools.unload();
    provider.unload().await;
    shell.shutdown().await;
    let left = registry.entries().len() + store.sessions().len();
    eprintln!(
        "agent-lifecycle: connection closed; {left} agents/sessions left; {} jobs running",
        shell.running_pids().len()
    );
    drop(shell);
    result
}
