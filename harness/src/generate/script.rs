//! The scripts a generated workload's prompts carry, for the server's own
//! responder (`acp::responder`): each line one step.
//!
//! - A prompt of `n` steps, op `o` of client `c`: the lines `c<c>o<o>/<k>`
//!   for `k` in `0..n`, each echoed back as `echo: c<c>o<o>/<k>`.
//! - [`HUNG`]: one line, `$ hang`, a foreground command that runs until
//!   its turn's signal kills it (C10); its reply names no prompt.
//! - [`JOB`]: `$& work`, which starts a background job as the session's
//!   agent (its reply names no prompt; its start reaches the client as a
//!   `tool_call`), then `c<c>o<o>&/1`.
//!
//! The job's end reaches the client as a `tool_call_update` of a turn of
//! the agent's own (A11).

use crate::rt::Rt;
use crate::shell::sim::{JobFate, Script, SimShell};
use std::sync::Arc;

/// The suffix of a prompt's name whose step ends only when signalled.
pub const HUNG: char = '!';

/// The suffix of a prompt's name whose first step starts a job.
pub const JOB: char = '&';

/// The command every job runs: it exits on its own soon after it starts.
const JOB_COMMAND: &str = "work";

/// The command of a step that ends only when signalled.
const HUNG_COMMAND: &str = "hang";

/// The script of op `op` of client `client`, of `steps` steps (see the
/// module docs), and how many steps it has.
pub fn script(client: u8, op: u8, steps: u8, variant: Option<char>) -> (String, u8) {
    let name = format!("c{client}o{op}");
    match variant {
        Some(HUNG) => (format!("$ {HUNG_COMMAND}"), 1),
        Some(JOB) => (format!("$& {JOB_COMMAND}\n{name}{JOB}/1"), 2),
        _ => {
            let lines: Vec<String> = (0..steps).map(|k| format!("{name}/{k}")).collect();
            (lines.join("\n"), steps)
        }
    }
}

/// The shell of a workload's commands: jobs that exit on their own soon
/// after they start, and a foreground command that never does.
pub fn shell<R: Rt>() -> Arc<SimShell<R>> {
    let shell = Arc::new(SimShell::<R>::default());
    shell.script(
        JOB_COMMAND,
        Script {
            duration_ms: 2,
            output: "done".into(),
            exit: 0,
        },
    );
    shell.script(HUNG_COMMAND, Script::held(""));
    shell
}

/// S7, from the shell's side, once every agent was disposed: each job
/// settled (exited or killed) and its record was then forgotten by a
/// drain, so no job of a disposed agent runs or can be read.
pub fn undrained<R: Rt>(shell: &SimShell<R>) -> Vec<(String, Vec<JobFate>)> {
    shell
        .started()
        .into_iter()
        .map(|(job, _)| {
            let history = shell.history(&job);
            (job, history)
        })
        .filter(|(_, h)| !JobFate::drained(h))
        .collect()
}
