//! The races of SPEC A8 and A9 that faults M27 and M28 plant, driven
//! through the built `lifecycle acp`:
//! a cancel that arrives while a prompt waits behind a cancelled one
//! cancels it too, and a prompt sent while `session/load` replays waits
//! for the load's answer; the replay is the log as it stood, sent once.
//! `lifecycle generate --fault M27` / `--fault M28` find each in the
//! simulator (tests/generated.rs).

use lifecycle_testkit as common;

use common::acp::{agent_texts, chunks, load_params, prompt_params, AcpServer};
use serde_json::{json, Value};

fn line(id: i64, method: &str, params: Value) -> String {
    format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    )
}

fn cancel_line(session: &str) -> String {
    let n = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}});
    format!("{n}\n")
}

fn stop_reason(answer: &Value) -> &str {
    answer["result"]["stopReason"]
        .as_str()
        .unwrap_or_else(|| panic!("no stop reason in {answer}"))
}

/// A2, A8 (M27): P1 runs; `session/cancel`; P2, which waits for P1's
/// answer; `session/cancel` again, all in one write. The second cancel
/// reaches P2 while it waits: P2 never runs and answers `cancelled`.
#[test]
fn a8_a_cancel_reaches_a_prompt_waiting_behind_a_cancelled_one() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::start(sessions.path());
    let id = server.new_session();
    for round in 0..5i64 {
        let (p1, p2) = (100 + 2 * round, 101 + 2 * round);
        let mut burst = line(p1, "session/prompt", prompt_params(&id, "sleep 10000"));
        burst += &cancel_line(&id);
        burst += &line(
            p2,
            "session/prompt",
            prompt_params(&id, "after the cancels"),
        );
        burst += &cancel_line(&id);
        server.send(burst.as_bytes());
        let (answers, updates) = server.answers(&[p1, p2]);
        assert_eq!(
            stop_reason(&answers[0]),
            "cancelled",
            "round {round}: {answers:?}"
        );
        assert_eq!(
            stop_reason(&answers[1]),
            "cancelled",
            "round {round}: A2/A8: the prompt that waited behind the cancelled one was cancelled too: {answers:?}"
        );
        let texts = agent_texts(&updates);
        assert!(
            !texts.iter().any(|t| t.contains("after the cancels")),
            "round {round}: A2: the cancelled prompt never runs: {texts:?}"
        );
    }
    // The session still serves a prompt sent after the cancels.
    let (answer, updates) = server.prompt(&id, "still here");
    assert_eq!(stop_reason(&answer), "end_turn");
    assert!(agent_texts(&updates).contains(&"echo: still here".to_string()));
    server.close();
}

/// A9 (M28): `session/load` and a prompt in one write, the load of a log
/// of many steps. The whole history arrives before the load's answer and
/// exactly once; the prompt's updates come after that answer.
#[test]
fn a9_a_prompt_sent_during_a_load_waits_for_its_answer() {
    const STEPS: usize = 400;
    let sessions = tempfile::tempdir().unwrap();
    let mut first = AcpServer::start(sessions.path());
    let id = first.new_session();
    let script: Vec<String> = (0..STEPS).map(|i| format!("line {i}")).collect();
    let (answer, _) = first.prompt(&id, &script.join("\n"));
    assert_eq!(stop_reason(&answer), "end_turn");
    first.close();

    let mut second = AcpServer::start(sessions.path());
    let (load, prompt) = (500, 501);
    let mut burst = line(load, "session/load", load_params(&id, "/"));
    burst += &line(prompt, "session/prompt", prompt_params(&id, "the new turn"));
    second.send(burst.as_bytes());
    // Everything in arrival order, until both are answered.
    let mut seen: Vec<Value> = Vec::new();
    let mut answered = 0;
    while answered < 2 {
        let v = second.read();
        if v.get("method").is_none() {
            answered += 1;
        }
        seen.push(v);
    }
    let at = |id: i64| {
        seen.iter()
            .position(|v| v["id"] == id && v.get("method").is_none())
            .unwrap()
    };
    let (load_at, prompt_at) = (at(load), at(prompt));
    assert!(seen[load_at].get("result").is_some(), "{}", seen[load_at]);
    assert_eq!(stop_reason(&seen[prompt_at]), "end_turn");
    let (replay, after) = seen.split_at(load_at);
    let replayed = agent_texts(replay);
    let expected: Vec<String> = script.iter().map(|l| format!("echo: {l}")).collect();
    assert_eq!(
        replayed, expected,
        "A9: the replay is the stored history, once, in order, and nothing else"
    );
    assert_eq!(chunks(replay, "user_message_chunk").len(), 1);
    assert_eq!(
        agent_texts(after),
        vec!["echo: the new turn".to_string()],
        "A9: the prompt's updates come after the load's answer"
    );
    second.close();
}
