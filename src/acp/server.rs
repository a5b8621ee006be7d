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

use super::framing::{self, LineOut};
use super::init_gate::InitGate;
use super::logs::Logs;
use super::outbound::{self, Outbound};
use super::prompt_text::prompt_text;
use super::{AcpError, Admitted, Bridge, StopReason as BridgeStop};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::provider::Provider;
use crate::registry::Registry;
use crate::rt::{BoxFuture, TokioRt};
use crate::scope::Scope;
use crate::session_log::{Origin, StepOutput, ToolEvent};
use crate::shell::real::RealShell;
use crate::shell::ExecResult;
use crate::store::durable::{Durable, FileDurable, MemoryDurable};
use crate::store::SessionStore;
use crate::tool_bash::ToolBash;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, Content, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionId, SessionUpdate, StopReason, ToolCall,
    ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Error, Lines};
use futures::future::Either;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
    /// Anything else: its reply, `echo: LINE`.
    Echo(String),
}

/// A prompt's script: its non-empty lines, trimmed, one step each.
pub fn script_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

/// The step of one script line.
pub fn step_of(l: &str) -> ScriptStep {
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
        // The reply, built once at its size (A10: an 8 MiB line is not
        // copied twice on its way out).
        let mut reply = String::with_capacity(ECHO.len() + l.len());
        reply.push_str(ECHO);
        reply.push_str(l);
        ScriptStep::Echo(reply)
    }
}

const ECHO: &str = "echo: ";

/// The scripted responder: performs steps with tool-bash and reports each
/// step's reply to the client.
struct Responder {
    tools: Arc<ToolBash<TokioRt>>,
    conn: Mutex<Option<ConnectionTo<Client>>>,
    /// The updates queued for stdout: each step waits for room (A10).
    outbound: Arc<Outbound>,
    /// Each session's running turn, parsed once (at its step 0): the
    /// address and length of the turn's text, and where its lines are. A
    /// step of the same text reuses them, so a turn of n lines costs O(n),
    /// not O(n²), and holds no copy of its text (A10).
    scripts: Mutex<BTreeMap<String, ParsedTurn>>,
    /// Each session's `cwd` (from `session/new` or `session/load`): where
    /// its commands run.
    cwds: Mutex<BTreeMap<String, PathBuf>>,
}

struct ParsedTurn {
    text: (usize, usize),
    /// The byte range of each step's line in the text.
    lines: Vec<std::ops::Range<usize>>,
}

impl Responder {
    fn set_cwd(&self, session: &str, cwd: PathBuf) {
        let mut cwds = self.cwds.lock().unwrap_or_else(|p| p.into_inner());
        cwds.insert(session.to_string(), cwd);
    }

    /// A closed session's working directory is forgotten.
    fn forget(&self, session: &str) {
        let mut cwds = self.cwds.lock().unwrap_or_else(|p| p.into_inner());
        cwds.remove(session);
    }

    fn cwd(&self, session: &str) -> Option<PathBuf> {
        let cwds = self.cwds.lock().unwrap_or_else(|p| p.into_inner());
        cwds.get(session).cloned()
    }

    /// Step `step` of `prompt`, its lines found at step 0 and kept for
    /// its later steps.
    fn step(&self, agent_id: &str, prompt: &PromptSpec, step: u32) -> Option<ScriptStep> {
        let text = &prompt.text;
        let key = (text.as_ptr() as usize, text.len());
        let mut scripts = self.scripts.lock().unwrap_or_else(|p| p.into_inner());
        let turn = match scripts.get(agent_id) {
            // Step 0 always parses: a new turn's text may sit where the
            // last one's did.
            Some(t) if step > 0 && t.text == key => t,
            _ => {
                let lines = script_lines(text)
                    .map(|l| {
                        let at = l.as_ptr() as usize - text.as_ptr() as usize;
                        at..at + l.len()
                    })
                    .collect();
                let parsed = ParsedTurn { text: key, lines };
                scripts.insert(agent_id.to_string(), parsed);
                scripts.get(agent_id).expect("just inserted")
            }
        };
        let line = turn.lines.get(step as usize)?.clone();
        Some(step_of(&text[line]))
    }
}

impl StepRunner for Responder {
    fn run_step(
        &self,
        agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let out = self.run_step_output(agent_id, prompt, step, signal);
        Box::pin(async move { out.await.map(|o| o.text) })
    }

    fn run_step_output(
        &self,
        agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<StepOutput>> {
        let tools = self.tools.clone();
        let id = agent_id.to_string();
        // A10: no step runs while the client is behind on reading; a
        // cancel or disposal does not wait.
        let room = {
            let (outbound, signal) = (self.outbound.clone(), signal.clone());
            async move {
                let room = Box::pin(async move { outbound.room().await });
                futures::future::select(room, signal.fired()).await;
            }
        };
        // A11: the turn of a job's completion notice is the agent's own: it
        // reports the job's end as a tool call update, never as text.
        if let Origin::JobDone { job, exit } = &prompt.origin {
            let (job, exit) = (job.clone(), *exit);
            return Box::pin(async move {
                room.await;
                let tail = tools.bash_output(Some(&id), &job).unwrap_or_default();
                Some(StepOutput {
                    text: format!("{job} finished with exit {exit}"),
                    tool: Some(ToolEvent::JobFinished {
                        job,
                        exit,
                        tail: tail_of(&tail, NOTICE_TAIL_BYTES).to_string(),
                    }),
                })
            });
        }
        let this_step = self.step(agent_id, prompt, step);
        let cwd = self.cwd(agent_id);
        Box::pin(async move {
            let this_step = this_step?;
            room.await;
            let reply = match this_step {
                // C10: a cancel kills the foreground command's process
                // group (dropping the exec future does).
                ScriptStep::Bash(c) => {
                    let run = Box::pin(tools.bash_in(Some(&id), &c, false, cwd.as_deref()));
                    match futures::future::select(run, signal.fired()).await {
                        Either::Left((Ok(ExecResult::Finished { output, exit }), _)) => {
                            format!("{output}[exit {exit}]")
                        }
                        Either::Left((Ok(ExecResult::Started { job }), _)) => job,
                        Either::Left((Err(e), _)) => format!("error: {e}"),
                        Either::Right(_) => "cancelled: the command was killed".to_string(),
                    }
                }
                ScriptStep::BashBackground(c) => {
                    match tools.bash_in(Some(&id), &c, true, cwd.as_deref()).await {
                        Ok(ExecResult::Started { job }) => {
                            return Some(StepOutput {
                                text: format!("started {job}"),
                                tool: Some(ToolEvent::JobStarted { job, command: c }),
                            })
                        }
                        Ok(other) => format!("{other:?}"),
                        Err(e) => format!("error: {e}"),
                    }
                }
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
                ScriptStep::Echo(reply) => reply,
            };
            Some(StepOutput::from(reply))
        })
    }

    /// The reply reaches the client only once it is durable (D9), in the
    /// form a load replays it in (A11).
    fn deliver_output(&self, agent_id: &str, _prompt: &PromptSpec, _step: u32, out: &StepOutput) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(conn) = conn {
            for update in step_updates(out.text.clone(), out.tool.as_ref()) {
                self.outbound.send(&conn, agent_id, update);
            }
        }
    }
}

/// How much of a finished job's output its `tool_call_update` carries.
pub const NOTICE_TAIL_BYTES: usize = 4_096;

/// The last `max` bytes of `text` at most, cut at a character boundary.
fn tail_of(text: &str, max: usize) -> &str {
    let mut from = text.len().saturating_sub(max);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..]
}

/// What the client sees of one step, live and on replay alike (A11): a
/// background job's start is a `tool_call` (in progress) and the step's
/// reply; its completion is a `tool_call_update` (completed, with its exit
/// code and output tail) and no message text; any other step is its reply.
/// The text is taken by value: a replayed record's is moved, not copied.
pub(super) fn step_updates(text: String, tool: Option<&ToolEvent>) -> Vec<SessionUpdate> {
    let chunk = |text: String| {
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
    };
    match tool {
        Some(ToolEvent::JobStarted { job, command }) => vec![
            SessionUpdate::ToolCall(
                ToolCall::new(ToolCallId::new(job.as_str()), command.clone())
                    .kind(ToolKind::Execute)
                    .status(ToolCallStatus::InProgress)
                    .raw_input(serde_json::json!({"command": command, "background": true})),
            ),
            chunk(text),
        ],
        Some(ToolEvent::JobFinished { job, exit, tail }) => {
            let content = ToolCallContent::Content(Content::new(ContentBlock::from(tail.clone())));
            vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                ToolCallId::new(job.as_str()),
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .content(vec![content])
                    .raw_output(serde_json::json!({"exitCode": exit, "output": tail})),
            ))]
        }
        None => vec![chunk(text)],
    }
}

/// A bridge error as a JSON-RPC error: a client's mistake (an unknown
/// session, a second load, a second prompt in flight) gets the protocol's
/// specific code or -32602; -32603 is kept for what the client cannot fix.
fn acp_error(e: AcpError) -> Error {
    let data = serde_json::json!(e.to_string());
    match e {
        AcpError::UnknownSession(id) => not_found(&id),
        AcpError::AlreadyLoaded(_)
        | AcpError::PromptInFlight(_)
        | AcpError::ClosedDuringReplay(_) => Error::invalid_params().data(data),
        AcpError::Disposed
        | AcpError::ClosedDuringNew
        | AcpError::ClosedDuringLoad
        | AcpError::Create(_)
        | AcpError::Storage(_) => Error::internal_error().data(data),
    }
}

/// The text of a protocol error: its data when it has a string there.
fn error_text(e: &Error) -> String {
    match &e.data {
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => e.message.clone(),
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
    let files = match sessions {
        Some(dir) => Some(Arc::new(FileDurable::new(dir).map_err(|e| {
            Error::internal_error().data(serde_json::json!(e.to_string()))
        })?)),
        None => None,
    };
    let durable: Arc<dyn Durable> = match &files {
        Some(files) => files.clone(),
        None => Arc::new(MemoryDurable::<TokioRt>::default()),
    };
    let logs = Arc::new(Logs {
        durable: durable.clone(),
        files,
    });
    let store = SessionStore::new(durable.clone());
    let registry = Registry::new();
    let provider = Provider::new("agent-loop", registry.clone(), store.clone());
    let shell = Arc::new(RealShell::new());
    let tools = ToolBash::load(shell.clone(), registry.clone());
    let outbound = Arc::new(Outbound::default());
    let responder = Arc::new(Responder {
        tools: tools.clone(),
        conn: Mutex::new(None),
        outbound: outbound.clone(),
        scripts: Mutex::new(BTreeMap::new()),
        cwds: Mutex::new(BTreeMap::new()),
    });
    provider.bound_journals(AGENT_JOURNAL_CAP);
    provider.set_runner(responder.clone());
    // Disposing a session's agent drains its background jobs (S7).
    provider.set_drain(crate::shell::drain_hook(shell.clone()));
    // Session ids unique across processes: `sess-<uuid v4>-N`.
    let prefix = format!("sess-{}-", uuid::Uuid::new_v4().simple());
    let bridge = Bridge::with_prefix(provider.clone(), Scope::new("acp", None), &prefix);

    let (b_new, b_load, b_prompt, b_cancel) = (
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
    );
    let (d_load, d_new) = (logs.clone(), logs.clone());
    let (b_close, d_close, r_close) = (bridge.clone(), logs.clone(), responder.clone());
    let n_slots = super::session_cap::Slots::default();
    let l_slots = n_slots.clone();
    let o_load = outbound.clone();
    let (r_new, r_load, s_load) = (responder.clone(), responder.clone(), shell.clone());
    let r_init = responder.clone();
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
                *r_init.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(cx);
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
                let bridge = b_new.clone();
                if let Err(e) = check_cwd(&req.cwd) {
                    return responder.respond_with_error(e);
                }
                let slot = match n_slots.take(bridge.session_count()) {
                    Ok(slot) => slot,
                    Err(e) => return responder.respond_with_error(e),
                };
                let (logs, responder_state) = (d_new.clone(), r_new.clone());
                cx.spawn(async move {
                    let _slot = slot;
                    match bridge.new_session().await {
                        Ok(id) => match logs.create(&id) {
                            Ok(()) => {
                                responder_state.set_cwd(&id, req.cwd.clone());
                                responder.respond(NewSessionResponse::new(SessionId::new(id)))
                            }
                            Err(e) => responder.respond_with_error(e),
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
                if let Err(e) = check_cwd(&req.cwd) {
                    return responder.respond_with_error(e);
                }
                let slot = match l_slots.take(bridge.session_count()) {
                    Ok(slot) => slot,
                    Err(e) => return responder.respond_with_error(e),
                };
                let (logs, responder_state, shell) =
                    (d_load.clone(), r_load.clone(), s_load.clone());
                let (conn, outbound) = (cx.clone(), o_load.clone());
                let answer: BoxFuture<Result<LoadSessionResponse, Error>> = Box::pin(async move {
                    let _slot = slot;
                    let id = req.session_id.0.to_string();
                    let claimed = !bridge.sessions().contains(&id);
                    let found = if claimed {
                        logs.claim(&id)
                    } else {
                        logs.records(&id).map(|records| super::logs::Claimed {
                            last_job: None,
                            records,
                        })
                    };
                    let found = found?;
                    let cwd = req.cwd.clone();
                    let replay = || async {
                        // Job numbers continue after every job the log's
                        // job records name (A9, A11).
                        if let Some(n) = found.last_job {
                            shell.continue_after(n);
                        }
                        responder_state.set_cwd(&id, cwd);
                        // The history first, then the answer (ACP); the
                        // log as it stood when the load began (A9), and
                        // only while the session is still this load's.
                        let ours = bridge.replay_check(&id);
                        match logs
                            .replay(&id, found.records, &conn, &outbound, &ours)
                            .await
                        {
                            Ok(true) => Ok(()),
                            Ok(false) => Err(AcpError::ClosedDuringReplay(id.clone())),
                            Err(e) => Err(AcpError::Storage(error_text(&e))),
                        }
                    };
                    match bridge.load_session_then(&id, replay).await {
                        Ok(_) => Ok(LoadSessionResponse::new()),
                        Err(e) => {
                            // A close that took the session let go of its
                            // log, which a later load may hold by now.
                            if claimed && !matches!(e, AcpError::ClosedDuringReplay(_)) {
                                logs.release(&id);
                            }
                            Err(acp_error(e))
                        }
                    }
                });
                // Claimed here, in the order requests arrive: a prompt that
                // follows the load finds it loading and waits for its
                // answer (A9). Then it runs on a task.
                match super::admit(answer).await {
                    Admitted::Answered(result) => responder.respond_with_result(result),
                    Admitted::Pending(answer) => {
                        cx.spawn(async move { responder.respond_with_result(answer.await) })
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let bridge = b_prompt.clone();
                let sid = req.session_id.0.to_string();
                let text = match prompt_text(req.prompt) {
                    Ok(text) => text,
                    Err(e) => return responder.respond_with_error(e),
                };
                let spec = PromptSpec {
                    steps: script_lines(&text).count().max(1) as u32,
                    text,
                    step_ms: 0,
                    origin: Origin::User,
                };
                let counted = p_prompts.enter();
                let answer: BoxFuture<Result<PromptResponse, Error>> = Box::pin(async move {
                    match bridge.prompt(&sid, spec).await {
                        Ok(BridgeStop::EndTurn) => Ok(PromptResponse::new(StopReason::EndTurn)),
                        Ok(BridgeStop::Cancelled) => Ok(PromptResponse::new(StopReason::Cancelled)),
                        Err(e) => Err(acp_error(e)),
                    }
                });
                // The prompt is claimed here, in the order the requests and
                // notifications arrive: a `session/cancel` that follows it
                // finds it in flight (A2, A8). Then it runs on a task.
                let respond =
                    |responder: agent_client_protocol::Responder<_, _>, result| match result {
                        Ok(answer) => responder.respond(answer),
                        Err(e) => responder.respond_with_error(e),
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
                // The session's agent is disposed (its prompt answers
                // cancelled, its jobs and what they left are killed, S7,
                // A10), then its log's lock and its cwd are let go.
                let (bridge, logs, state) = (b_close.clone(), d_close.clone(), r_close.clone());
                let id = req.session_id.0.to_string();
                cx.spawn(async move {
                    match bridge.close(&id).await {
                        Ok(()) => {
                            logs.release(&id);
                            state.forget(&id);
                            responder.respond(CloseSessionResponse::new())
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
