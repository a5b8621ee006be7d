//! Protocol edges of the real `lifecycle acp` (SPEC A10): a request line
//! may begin with a UTF-8 byte-order mark, and a client may send
//! `session/new` right after `initialize` without waiting for its answer
//! (the crate serves session requests only after initialization, so the
//! server holds what follows an `initialize` until its answer is written).

use lifecycle_testkit as common;

use common::acp::AcpServer;
use serde_json::{json, Value};

fn line(id: i64, method: &str, params: Value) -> String {
    format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    )
}

#[test]
fn a10_a_line_that_starts_with_a_byte_order_mark_is_served() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::spawn(sessions.path());
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend(line(1, "initialize", json!({"protocolVersion": 1})).into_bytes());
    server.send(&bytes);
    let (answers, _) = server.answers(&[1]);
    assert!(answers[0].get("result").is_some(), "{}", answers[0]);
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend(line(2, "session/new", json!({"cwd": "/", "mcpServers": []})).into_bytes());
    server.send(&bytes);
    let (answers, _) = server.answers(&[2]);
    assert!(
        answers[0]["result"]["sessionId"].is_string(),
        "{}",
        answers[0]
    );
    server.close();
}

#[test]
fn a10_session_new_pipelined_behind_initialize_is_served() {
    for round in 0..10 {
        let sessions = tempfile::tempdir().unwrap();
        let mut server = AcpServer::spawn(sessions.path());
        let mut burst = line(1, "initialize", json!({"protocolVersion": 1}));
        burst += &line(2, "session/new", json!({"cwd": "/", "mcpServers": []}));
        server.send(burst.as_bytes());
        let (answers, _) = server.answers(&[1, 2]);
        assert!(
            answers[0].get("result").is_some(),
            "round {round}: {}",
            answers[0]
        );
        assert!(
            answers[1]["result"]["sessionId"].is_string(),
            "round {round}: session/new after a pipelined initialize: {}",
            answers[1]
        );
        server.close();
    }
}
