//! The scripted agent of a generated workload: the provider's step runner.
//!
//! Step `k` of a prompt whose text is `T` sleeps (an arbitrary delay when
//! time is free) until its turn's signal fires, and answers `T/k`; its
//! delivery (once durable, D9) is an update of the connection. The text's
//! last character picks a variant:
//! - `!` ([`HUNG`]): the step waits for the signal alone (C10);
//! - `&` ([`JOB`]): the step first starts a background job as its agent
//!   through tool-bash ([`Jobs`]).
//!
//! Completion notices (turns of origin `JobDone`) run their steps like any
//! turn, but are not delivered to the client as a prompt's output.

use super::run::{Connection, Obs, Update};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::rt::{self, BoxFuture, Rt};
use crate::session_log::Origin;
use crate::shell::sim::{JobFate, Script, SimShell};
use crate::shell::ExecResult;
use crate::tool_bash::ToolBash;
use std::sync::{Arc, Mutex};

/// The suffix of a prompt's text whose step ends only when signalled.
pub const HUNG: char = '!';

/// The suffix of a prompt's text whose step starts a background job.
pub const JOB: char = '&';

/// The command every job runs: it exits on its own soon after it starts.
const JOB_COMMAND: &str = "work";

/// tool-bash over a simulated shell, and the jobs the steps started, with
/// the agent that started each: the owners as the workload knows them,
/// not as tool-bash records them.
pub struct Jobs<R: Rt> {
    /// tool-bash, whose completion notices go to the job's owner (S6).
    pub tool_bash: Arc<ToolBash<R>>,
    /// The shell every job runs on, drained by its owner's teardown (S7).
    pub shell: Arc<SimShell<R>>,
    started: Mutex<Vec<(String, String)>>,
}

impl<R: Rt> Jobs<R> {
    /// A shell whose jobs run a short command, and tool-bash over it
    /// (built by the rig, which wires the shell into every teardown).
    pub fn shell() -> Arc<SimShell<R>> {
        let shell = Arc::new(SimShell::<R>::default());
        shell.script(
            JOB_COMMAND,
            Script {
                duration_ms: 2,
                output: "done".into(),
                exit: 0,
            },
        );
        shell
    }

    /// The jobs of `tool_bash` over `shell`.
    pub fn new(tool_bash: Arc<ToolBash<R>>, shell: Arc<SimShell<R>>) -> Arc<Self> {
        Arc::new(Jobs {
            tool_bash,
            shell,
            started: Mutex::new(Vec::new()),
        })
    }

    /// Every job started so far, with the agent that started it.
    pub fn started(&self) -> Vec<(String, String)> {
        self.started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// S7, from the shell's side, once every agent was disposed: each job
    /// settled (exited or killed) and its record was then forgotten by a
    /// drain, so no job of a disposed agent runs or can be read.
    pub fn undrained(&self) -> Vec<(String, Vec<JobFate>)> {
        self.started()
            .into_iter()
            .map(|(job, _)| {
                let history = self.shell.history(&job);
                (job, history)
            })
            .filter(|(_, h)| !JobFate::drained(h))
            .collect()
    }
}

/// The step runner: see the module docs.
pub struct Scripted<R: Rt> {
    /// Where deliveries go.
    pub conn: Arc<Connection>,
    /// tool-bash, if the workload starts jobs.
    pub jobs: Option<Arc<Jobs<R>>>,
}

impl<R: Rt> StepRunner for Scripted<R> {
    fn run_step(
        &self,
        agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let text = format!("{}/{step}", prompt.text);
        let hung = prompt.text.ends_with(HUNG);
        let job = self.jobs.clone().filter(|_| prompt.text.ends_with(JOB));
        let agent = agent_id.to_string();
        Box::pin(async move {
            if let Some(jobs) = job {
                let started = jobs.tool_bash.bash(Some(&agent), JOB_COMMAND, true).await;
                if let Ok(ExecResult::Started { job }) = started {
                    jobs.started
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((job, agent));
                }
            }
            if hung {
                // A step that ends only when its turn's signal fires (C10).
                signal.fired().await;
            } else {
                // A step that waits, and stops waiting when its turn's
                // signal fires (C10).
                rt::sleep_or::<R>(1, signal.fired()).await;
            }
            Some(text)
        })
    }

    fn deliver(&self, agent_id: &str, prompt: &PromptSpec, _step: u32, output: &str) {
        if matches!(prompt.origin, Origin::JobDone { .. }) {
            return;
        }
        self.conn.push(Obs::Update {
            session: agent_id.to_string(),
            update: Update::Step(output.to_string()),
        });
    }
}
