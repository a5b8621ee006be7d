//! The scripted responder behind every session of `lifecycle acp`: the
//! provider's step runner. Each non-empty line of a prompt is one step
//! ([`step_of`]; the table is in [`super::server`]'s docs). It is written
//! against [`Rt`], so the server runs it on tokio and the generated
//! workloads (`generate`) run the same code under sim, sim-dfs, shuttle
//! and loom.
//!
//! A step: waits for room in the outbound budget, unless its turn's
//! signal fires first (A10) → runs its line (a foreground command or a
//! sleep is cut short by the signal, C10) → its reply is delivered once
//! durable (D9) through the connection's [`Wire`], in the form a load
//! replays it in (A11). A job's completion notice (a turn of origin
//! `JobDone`) is the agent's own turn and reports the job's end as one
//! `tool_call_update`, never as text (A11).

use super::outbound::{Outbound, Wire};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::rt::{BoxFuture, Rt};
use crate::session_log::{Origin, StepOutput, ToolEvent};
use crate::shell::ExecResult;
use crate::tool_bash::ToolBash;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallContent, ToolCallId,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use futures::future::Either;
use std::collections::BTreeMap;
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
pub struct Responder<R: Rt> {
    /// tool-bash, for the steps that run commands (`None`: they reply
    /// with an error).
    tools: Option<Arc<ToolBash<R>>>,
    /// Where each reply goes.
    wire: Arc<dyn Wire>,
    /// The updates queued for the client: each step waits for room (A10).
    outbound: Arc<Outbound<R>>,
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

impl<R: Rt> Responder<R> {
    /// A responder whose commands run on `tools` and whose replies go
    /// through `wire`, counted by `outbound`.
    pub fn new(
        tools: Option<Arc<ToolBash<R>>>,
        wire: Arc<dyn Wire>,
        outbound: Arc<Outbound<R>>,
    ) -> Arc<Self> {
        Arc::new(Responder {
            tools,
            wire,
            outbound,
            scripts: Mutex::new(BTreeMap::new()),
            cwds: Mutex::new(BTreeMap::new()),
        })
    }

    pub(super) fn set_cwd(&self, session: &str, cwd: PathBuf) {
        let mut cwds = self.cwds.lock().unwrap_or_else(|p| p.into_inner());
        cwds.insert(session.to_string(), cwd);
    }

    /// A closed session's working directory is forgotten.
    pub(super) fn forget(&self, session: &str) {
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

impl<R: Rt> StepRunner for Responder<R> {
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
                let tail = tools
                    .and_then(|t| t.bash_output(Some(&id), &job).ok())
                    .unwrap_or_default();
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
            Some(match (this_step, tools) {
                (ScriptStep::Echo(reply), _) => StepOutput::from(reply),
                (ScriptStep::Sleep(ms), _) => StepOutput::from(
                    match futures::future::select(R::sleep(ms), signal.fired()).await {
                        Either::Left(_) => format!("slept {ms} ms"),
                        Either::Right(_) => "cancelled: the sleep was cut short".to_string(),
                    },
                ),
                (step, Some(tools)) => tool_step(&tools, &id, step, cwd, signal).await,
                (_, None) => StepOutput::from("error: this agent has no shell".to_string()),
            })
        })
    }

    /// The reply reaches the client only once it is durable (D9), in the
    /// form a load replays it in (A11).
    fn deliver_output(&self, agent_id: &str, _prompt: &PromptSpec, _step: u32, out: &StepOutput) {
        for update in step_updates(out.text.clone(), out.tool.as_ref()) {
            self.outbound.send(&*self.wire, agent_id, update);
        }
    }
}

/// A step that runs a tool of tool-bash as agent `id`, in `cwd`.
async fn tool_step<R: Rt>(
    tools: &ToolBash<R>,
    id: &str,
    step: ScriptStep,
    cwd: Option<PathBuf>,
    signal: StepSignal,
) -> StepOutput {
    let reply = match step {
        // C10: a cancel kills the foreground command's process group
        // (dropping the exec future does).
        ScriptStep::Bash(c) => {
            let run = Box::pin(tools.bash_in(Some(id), &c, false, cwd.as_deref()));
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
            match tools.bash_in(Some(id), &c, true, cwd.as_deref()).await {
                Ok(ExecResult::Started { job }) => {
                    return StepOutput {
                        text: format!("started {job}"),
                        tool: Some(ToolEvent::JobStarted { job, command: c }),
                    }
                }
                Ok(other) => format!("{other:?}"),
                Err(e) => format!("error: {e}"),
            }
        }
        ScriptStep::Output(j) => tools
            .bash_output(Some(id), &j)
            .unwrap_or_else(|e| format!("error: {e}")),
        ScriptStep::Kill(j) => match tools.bash_kill(Some(id), &j) {
            Ok(killed) => format!("killed: {killed}"),
            Err(e) => format!("error: {e}"),
        },
        ScriptStep::Sleep(_) | ScriptStep::Echo(_) => {
            return StepOutput::from("error: not a tool step".to_string())
        }
    };
    StepOutput::from(reply)
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
pub(crate) fn step_updates(text: String, tool: Option<&ToolEvent>) -> Vec<SessionUpdate> {
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
