//! Pipelined initialization (SPEC A10): a client may send `session/new`
//! right after `initialize`, without waiting for its answer. The
//! `agent-client-protocol` crate serves a session request only once
//! initialization is complete, which it records when the `initialize`
//! answer goes out, so a request read before that is refused. The gate
//! holds the lines behind an `initialize` request until its answer has been
//! handed to stdout's writer; every other line passes at once.
//!
//! States: `open` → `held(id)` (an `initialize` request with `id` was read)
//! → `open` (the writer wrote the answer to `id`, or [`HOLD_MS`] passed).

use serde_json::Value;
use std::sync::Arc;

/// At most this long a line waits behind an `initialize` whose answer has
/// not been written (a crate that never answers must not wedge the input).
pub const HOLD_MS: u64 = 2_000;

/// The gate, shared by the reader and the writer.
#[derive(Clone)]
pub struct InitGate(Arc<tokio::sync::watch::Sender<Option<Value>>>);

impl Default for InitGate {
    fn default() -> Self {
        InitGate(Arc::new(tokio::sync::watch::Sender::new(None)))
    }
}

/// The id of `line` if it is an `initialize` request.
fn initialize_id(line: &str) -> Option<Value> {
    if !line.contains("\"initialize\"") {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("method")? == "initialize").then(|| v.get("id").cloned())?
}

impl InitGate {
    /// The reader: wait while an `initialize` is unanswered, then let
    /// `line` pass (holding what follows it, if it is one).
    pub async fn pass(&self, line: &str) {
        let mut rx = self.0.subscribe();
        let open = rx.wait_for(Option::is_none);
        let hold = std::time::Duration::from_millis(HOLD_MS);
        let _ = tokio::time::timeout(hold, open).await;
        if let Some(id) = initialize_id(line) {
            self.0.send_replace(Some(id));
        }
    }

    /// The writer wrote `line`: if it answers the held `initialize`, open.
    pub fn wrote(&self, line: &str) {
        let held = self.0.borrow().clone();
        let Some(id) = held else { return };
        let answers = serde_json::from_str::<Value>(line)
            .ok()
            .is_some_and(|v| v.get("method").is_none() && v.get("id") == Some(&id));
        if answers {
            self.0.send_replace(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_initialize_request_is_held_for() {
        let init = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#;
        assert_eq!(initialize_id(init), Some(Value::from(7)));
        let new = r#"{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"x":"initialize"}}"#;
        assert_eq!(initialize_id(new), None);
        let note = r#"{"jsonrpc":"2.0","method":"initialize"}"#;
        assert_eq!(initialize_id(note), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_line_after_initialize_waits_for_its_answer() {
        let gate = InitGate::default();
        gate.pass(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)
            .await;
        let next = gate.clone();
        let behind = tokio::spawn(async move { next.pass("{}").await });
        tokio::task::yield_now().await;
        assert!(!behind.is_finished(), "held until the answer is written");
        gate.wrote(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        tokio::task::yield_now().await;
        assert!(
            !behind.is_finished(),
            "another id's answer does not open it"
        );
        gate.wrote(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        behind.await.unwrap();
    }
}
