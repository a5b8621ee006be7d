//! The session on disk at the start of every generated execution, `old`:
//! its stored records, which a run writes before the clients start, and
//! the history a load of it must replay (A9), which the judge reads.

use crate::journal::EndReason;
use crate::session_log::{Entry, Origin};
use crate::store::durable::DurableRecord;

/// The session on disk at the start of every execution.
pub const OLD: &str = "old";

/// The serial of `old`'s stored turn (apart from every serial the store
/// hands out in an execution).
const OLD_SERIAL: u64 = 1_000_000;

/// The records of `old` on disk: one finished turn of one step.
pub(super) fn old_records() -> Vec<DurableRecord> {
    let entry = |entry| DurableRecord {
        serial: OLD_SERIAL,
        entry,
    };
    vec![
        entry(Entry::TurnStart { prompt: 1 }),
        entry(Entry::UserMessage {
            prompt: 1,
            text: "hello".into(),
            origin: Origin::User,
        }),
        entry(Entry::Step {
            prompt: 1,
            step: 0,
            output: Some("hello/0".into()),
            tool: None,
        }),
        entry(Entry::TurnEnd {
            prompt: 1,
            reason: EndReason::Completed,
        }),
    ]
}

/// What a load of `old` must replay (A9), read off the stored records
/// by the spec, independently of the server's projection
/// (`acp::logs`): each user message as `user: <text>`, each step's output
/// as `agent: <text>`, in order.
pub fn old_history() -> Vec<String> {
    old_records()
        .iter()
        .filter_map(|r| match &r.entry {
            Entry::UserMessage { text, origin, .. } if origin.is_user() => {
                Some(format!("user: {text}"))
            }
            Entry::Step {
                output: Some(out), ..
            } => Some(format!("agent: {out}")),
            _ => None,
        })
        .collect()
}
