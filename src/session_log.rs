//! A small session log: turns append to it, and a flush makes what was
//! appended durable. (The full `SessionStore` with publication hooks and a
//! durable backend is a later part; this is the seam the loop writes to.)
//!
//! States of one entry: `appended` → (flush) → `durable`. A flush awaits (it
//! is an I/O point and a scheduling point).

use crate::journal::{EndReason, PromptId, SteerId};
use crate::rt::{Mutex, Rt};
use serde::Serialize;

/// One entry of a session log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Entry {
    /// `turn/start`.
    TurnStart {
        /// The turn's prompt.
        prompt: PromptId,
    },
    /// `user/message`.
    UserMessage {
        /// The prompt.
        prompt: PromptId,
        /// Its text.
        text: String,
    },
    /// A steering input absorbed by a turn.
    Steering {
        /// The turn's prompt.
        prompt: PromptId,
        /// The input.
        input: SteerId,
        /// Its text.
        text: String,
    },
    /// A step's output.
    Step {
        /// The turn's prompt.
        prompt: PromptId,
        /// Step number.
        step: u32,
    },
    /// `turn/end {reason}`.
    TurnEnd {
        /// The turn's prompt.
        prompt: PromptId,
        /// Why it ended.
        reason: EndReason,
    },
}

#[derive(Default)]
struct LogState {
    pending: Vec<Entry>,
    durable: Vec<Entry>,
    flushes: u64,
}

/// An append-only session log with explicit flushes.
pub struct SessionLog<R: Rt> {
    state: Mutex<R, LogState>,
}

impl<R: Rt> Default for SessionLog<R> {
    fn default() -> Self {
        Self {
            state: Mutex::new(LogState::default()),
        }
    }
}

impl<R: Rt> SessionLog<R> {
    /// Append an entry (not yet durable).
    pub fn append(&self, entry: Entry) {
        self.state.with(|s| s.pending.push(entry));
    }

    /// Make every appended entry durable. Awaits once (the write).
    pub async fn flush(&self) {
        let batch = self.state.with(|s| std::mem::take(&mut s.pending));
        R::yield_now().await;
        self.state.with(|s| {
            s.durable.extend(batch);
            s.flushes += 1;
        });
    }

    /// The durable entries.
    pub fn durable(&self) -> Vec<Entry> {
        self.state.with(|s| s.durable.clone())
    }

    /// Appended entries not yet flushed.
    pub fn pending(&self) -> Vec<Entry> {
        self.state.with(|s| s.pending.clone())
    }
}
