//! Storage errors of the real `lifecycle acp` (SPEC D10), over raw
//! JSON-RPC: a transient write failure (the server's file-size limit,
//! lowered with `prlimit(2)` to just past the log's size, so the write is
//! cut part-way: EFBIG) fails the prompt it hit with a JSON-RPC error;
//! once the limit is lifted, the next prompt recovers the session in the
//! same process: the torn record is cut, the failed turn closed, and the
//! conversation goes on, in this process and after a load in another.

use lifecycle_testkit as common;

use common::acp::{agent_texts, chunks, load_params, log_size, turn_ends, AcpServer};
use lifecycle::journal::EndReason;

/// A server with one session whose second prompt failed: its write was
/// cut 7 bytes in by the file-size limit, which stays in force.
fn failed_session(sessions: &std::path::Path) -> (AcpServer, String) {
    let mut server = AcpServer::start(sessions);
    let session = server.new_session();
    let (answer, _) = server.prompt(&session, "one");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let size = log_size(sessions);
    server.set_limit(libc::RLIMIT_FSIZE, size + 7, libc::RLIM_INFINITY);
    let (answer, updates) = server.prompt(&session, "two");
    assert_eq!(answer["error"]["code"], -32603, "D10: {answer}");
    let data = answer["error"]["data"].as_str().unwrap_or_default();
    assert!(data.contains("storage"), "{answer}");
    assert!(agent_texts(&updates).is_empty(), "{updates:?}");
    (server, session)
}

#[test]
fn d10_a_transient_write_error_fails_one_prompt_and_the_next_recovers() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let (mut server, session) = failed_session(sessions.path());
    // Still failing: the next prompt's recovery fails too, with an error.
    let (answer, _) = server.prompt(&session, "still full");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");

    // The error goes away: the next prompt recovers the session.
    server.set_limit(libc::RLIMIT_FSIZE, libc::RLIM_INFINITY, libc::RLIM_INFINITY);
    for text in ["three", "four"] {
        let (answer, updates) = server.prompt(&session, text);
        assert_eq!(
            answer["result"]["stopReason"], "end_turn",
            "D10: the session must recover in the same process: {answer}"
        );
        assert_eq!(agent_texts(&updates), [format!("echo: {text}")]);
    }
    server.close();

    // On disk: no torn record, the failed turn closed, the rest whole.
    let ends = turn_ends(sessions.path(), &session);
    assert_eq!(ends.first(), Some(&EndReason::Completed), "{ends:?}");
    assert_eq!(
        ends[ends.len() - 2..],
        [EndReason::Completed, EndReason::Completed],
        "{ends:?}"
    );
    let mut second = AcpServer::start(sessions.path());
    let (answer, replay) = second.ask_with_updates("session/load", load_params(&session, "/"));
    assert!(answer.get("result").is_some(), "{answer}");
    let said = chunks(&replay, "user_message_chunk");
    assert_eq!(said.first().map(String::as_str), Some("one"), "{said:?}");
    assert!(said.ends_with(&["three".into(), "four".into()]), "{said:?}");
    let (answer, _) = second.prompt(&session, "five");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    second.close();
}

/// D10: a `session/load` in the same process recovers a session that a
/// storage error left failed: it answers with the history (the failed
/// turn's prompt included), not "already loaded", and prompts go on.
#[test]
fn d10_a_load_in_the_same_process_recovers_a_failed_session() {
    let sessions = tempfile::tempdir().expect("tempdir");
    let (mut server, session) = failed_session(sessions.path());
    server.set_limit(libc::RLIMIT_FSIZE, libc::RLIM_INFINITY, libc::RLIM_INFINITY);

    let (answer, replay) = server.ask_with_updates("session/load", load_params(&session, "/"));
    assert!(
        answer.get("result").is_some(),
        "D10: a load in the same process must recover the session: {answer}"
    );
    assert_eq!(chunks(&replay, "user_message_chunk"), ["one"], "{replay:?}");
    assert_eq!(agent_texts(&replay), ["echo: one"]);
    // Recovered: a second load of the live session is refused (A5).
    let again = server.ask("session/load", load_params(&session, "/"));
    assert!(
        again["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("already loaded")),
        "A5: {again}"
    );
    let (answer, updates) = server.prompt(&session, "three");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(agent_texts(&updates), ["echo: three"]);
    server.close();
    // The repair cut the torn record (`turn_ends` checks there is none).
    let ends = turn_ends(sessions.path(), &session);
    // The failed turn's first record was the torn one the repair cut, so
    // no turn of it is left open, and none ends `interrupted`.
    assert_eq!(
        ends,
        [EndReason::Completed, EndReason::Completed],
        "{ends:?}"
    );
}
