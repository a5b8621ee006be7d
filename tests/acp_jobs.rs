//! Background jobs over ACP (SPEC A11), driven over raw JSON-RPC against
//! the real `lifecycle acp`: a job's start is a `tool_call` and its end a
//! `tool_call_update` (`completed`, exit code, output tail), between turns
//! and across a turn boundary alike; no `agent_message_chunk` arrives that
//! a prompt of the client does not own; a load replays the same tool calls
//! and never a notice as user text; a job that ends while the log cannot
//! be written still reaches the client, and the log records it once it
//! can; and no text in a log changes how later jobs are numbered.

use lifecycle_testkit as common;

use common::acp::{agent_texts, chunks, load_params, log_of, log_size, AcpServer};
use serde_json::Value;

fn kind(v: &Value) -> &str {
    v["params"]["update"]["sessionUpdate"]
        .as_str()
        .unwrap_or("")
}

/// The updates of `kind` about tool call `job`.
fn tool_updates<'a>(messages: &'a [Value], kind_: &str, job: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|v| kind(v) == kind_ && v["params"]["update"]["toolCallId"] == job)
        .collect()
}

/// The job of the one `tool_call` among `updates`, which must be in
/// progress and name `command`.
fn started(updates: &[Value], command: &str) -> String {
    let calls: Vec<&Value> = updates.iter().filter(|v| kind(v) == "tool_call").collect();
    assert_eq!(calls.len(), 1, "one tool_call: {updates:?}");
    let u = &calls[0]["params"]["update"];
    assert_eq!(u["status"], "in_progress", "{u}");
    assert_eq!(u["kind"], "execute", "{u}");
    assert_eq!(u["rawInput"]["command"], command, "{u}");
    let job = u["toolCallId"].as_str().expect("toolCallId").to_string();
    assert_eq!(agent_texts(updates), [format!("started {job}")]);
    job
}

/// Read until the `tool_call_update` of `job`; every message read. Fails on
/// an `agent_message_chunk` meanwhile: no prompt of the client is in flight.
fn until_completed(server: &mut AcpServer, job: &str) -> (Value, Vec<Value>) {
    let mut seen = Vec::new();
    loop {
        let v = server.read();
        assert_ne!(
            kind(&v),
            "agent_message_chunk",
            "A11: message text with no prompt in flight: {v}"
        );
        if kind(&v) == "tool_call_update" && v["params"]["update"]["toolCallId"] == job {
            return (v, seen);
        }
        seen.push(v);
    }
}

#[track_caller]
fn assert_completed(update: &Value, exit: i64, output: &str) {
    let u = &update["params"]["update"];
    assert_eq!(u["status"], "completed", "{u}");
    assert_eq!(u["rawOutput"]["exitCode"], exit, "{u}");
    let tail = u["rawOutput"]["output"].as_str().expect("rawOutput.output");
    assert!(tail.contains(output), "{u}");
    assert_eq!(u["content"][0]["content"]["text"], tail, "{u}");
}

/// A job that ends between turns reaches the client as its own
/// `tool_call_update`, with no message text; one that ends while a later
/// prompt runs does not add to that prompt's message stream; a load
/// replays both jobs' calls and only the texts the client sent.
#[test]
fn a11_jobs_are_tool_calls_between_turns_across_a_turn_and_after_a_load() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let session = server.new_session();

    // Between turns.
    let quick = "echo quick-out; exit 3";
    let (answer, updates) = server.prompt(&session, &format!("$& {quick}"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let job1 = started(&updates, quick);
    let (done1, _) = until_completed(&mut server, &job1);
    assert_completed(&done1, 3, "quick-out");

    // Across a turn boundary: the job ends while the next prompt sleeps.
    let slow = "sleep 0.3; echo slow-out";
    let (_, updates) = server.prompt(&session, &format!("$& {slow}"));
    let job2 = started(&updates, slow);
    let (answer, updates) = server.prompt(&session, "sleep 1500\nafter");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        agent_texts(&updates),
        ["slept 1500 ms", "echo: after"],
        "A11: the prompt's message stream holds only its own replies"
    );
    let done2 = match tool_updates(&updates, "tool_call_update", &job2).first() {
        Some(u) => (*u).clone(),
        None => until_completed(&mut server, &job2).0,
    };
    assert_completed(&done2, 0, "slow-out");
    let (answer, updates) = server.prompt(&session, "last");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(agent_texts(&updates), ["echo: last"]);
    server.close();

    // A load replays the same calls, and only what the client typed.
    let mut second = AcpServer::start(sessions.path());
    let (answer, replay) = second.ask_with_updates("session/load", load_params(&session, "/"));
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(
        chunks(&replay, "user_message_chunk"),
        [
            format!("$& {quick}"),
            format!("$& {slow}"),
            "sleep 1500\nafter".to_string(),
            "last".to_string()
        ],
        "A11: no user text the client did not send"
    );
    for (job, command) in [(&job1, quick), (&job2, slow)] {
        let calls = tool_updates(&replay, "tool_call", job);
        assert_eq!(calls.len(), 1, "{job}: {replay:?}");
        assert_eq!(calls[0]["params"]["update"]["rawInput"]["command"], command);
        let done = tool_updates(&replay, "tool_call_update", job);
        assert_eq!(done.len(), 1, "{job}: {replay:?}");
    }
    assert_completed(
        tool_updates(&replay, "tool_call_update", &job1)[0],
        3,
        "quick-out",
    );
    assert!(
        agent_texts(&replay).iter().all(|t| !t.contains("[bash]")),
        "{replay:?}"
    );
    second.close();
}

/// A11: text in a log never changes job numbering. Output naming the
/// largest job number, loaded into a new process, leaves background jobs
/// working there, in that session and in a new one.
#[test]
fn a11_a_job_number_in_output_does_not_poison_numbering() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut first = AcpServer::start(sessions.path());
    let session = first.new_session();
    let huge = format!("job-{}", u64::MAX);
    let (_, updates) = first.prompt(&session, &format!("$ echo {huge}\n? {huge}"));
    assert!(agent_texts(&updates)[0].contains(&huge), "{updates:?}");
    first.close();

    let mut second = AcpServer::start(sessions.path());
    let answer = second.ask("session/load", load_params(&session, "/"));
    assert!(answer.get("result").is_some(), "{answer}");
    for sid in [session.clone(), second.new_session()] {
        let (answer, updates) = second.prompt(&sid, "$& true");
        assert_eq!(answer["result"]["stopReason"], "end_turn");
        let job = started(&updates, "true");
        let n: u64 = job.trim_start_matches("job-").parse().expect("job-N");
        assert!(n < 1_000, "{job}: numbered from the log's text");
    }
    second.close();
}

/// A11, D10: a job that ends while the log cannot be written (the server's
/// file-size limit lowered to the log's size: every write fails, EFBIG)
/// still reaches the client as its `tool_call_update`. A prompt meanwhile
/// fails; once writes work again, the next prompt recovers the session and
/// the log records the notice, once: a load in another process replays it.
#[test]
fn a11_a_job_that_ends_while_the_disk_is_full_reaches_the_client_and_the_log_later() {
    use lifecycle::session_log::{Entry, ToolEvent};
    let sessions = tempfile::tempdir().expect("tempdir");
    let mut server = AcpServer::start(sessions.path());
    let session = server.new_session();
    let command = "sleep 0.4; echo full-out; exit 5";
    let (answer, updates) = server.prompt(&session, &format!("$& {command}"));
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let job = started(&updates, command);
    let full = log_size(sessions.path());
    server.set_limit(libc::RLIMIT_FSIZE, full, libc::RLIM_INFINITY);

    let (done, _) = until_completed(&mut server, &job);
    assert_completed(&done, 5, "full-out");
    assert_eq!(log_size(sessions.path()), full, "nothing was written");
    let (answer, _) = server.prompt(&session, "still full");
    assert_eq!(answer["error"]["code"], -32603, "D10: {answer}");

    server.set_limit(libc::RLIMIT_FSIZE, libc::RLIM_INFINITY, libc::RLIM_INFINITY);
    let (answer, updates) = server.prompt(&session, "after");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "D10: {answer}");
    assert_eq!(agent_texts(&updates), ["echo: after"]);
    assert!(
        tool_updates(&updates, "tool_call_update", &job).is_empty(),
        "A11: the notice is not delivered twice: {updates:?}"
    );
    server.close();

    let recorded: Vec<_> = log_of(sessions.path(), &session)
        .records
        .into_iter()
        .filter(|r| {
            matches!(
                &r.entry,
                Entry::LateNotice { tool: Some(ToolEvent::JobFinished { job: j, exit: 5, .. }), .. }
                    | Entry::Step { tool: Some(ToolEvent::JobFinished { job: j, exit: 5, .. }), .. }
                    if *j == job
            )
        })
        .collect();
    assert_eq!(recorded.len(), 1, "A11: recorded once: {recorded:?}");
    let mut second = AcpServer::start(sessions.path());
    let (answer, replay) = second.ask_with_updates("session/load", load_params(&session, "/"));
    assert!(answer.get("result").is_some(), "{answer}");
    let replayed = tool_updates(&replay, "tool_call_update", &job);
    assert_eq!(replayed.len(), 1, "A11: {replay:?}");
    assert_completed(replayed[0], 5, "full-out");
    second.close();
}
