//! Every agent's journal of one run, read from the `journal` trace events
//! (each names its agent), for replays whose run the replaying thread's
//! trace cannot see: loom replays in a worker process, tokio polls on
//! worker threads. The simulator and shuttle replays read the same events
//! from the replay's own trace (`cli::replay_cmd`).
//!
//! A [`JournalTap`] is a `tracing` layer. Install its [`JournalTap::dispatch`]
//! on every thread the run polls on, [`JournalTap::clear`] it between runs,
//! and read [`JournalTap::journals`] after the run of interest.
//!
//! Layer 0 (shared): imports nothing from `check`.

use std::sync::{Arc, Mutex};

/// One agent's journal: its name and its records, rendered as
/// `#seq t=…ms event`.
pub type AgentJournal = (String, Vec<String>);

/// Records the `journal` events of the threads it is installed on.
#[derive(Clone, Default)]
pub struct JournalTap {
    lines: Arc<Mutex<Vec<(String, String)>>>,
}

#[derive(Default)]
struct Fields {
    agent: Option<String>,
    seq: u64,
    at_ms: u64,
    message: String,
}

impl tracing::field::Visit for Fields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        match field.name() {
            "seq" => self.seq = value,
            "at_ms" => self.at_ms = value,
            _ => {}
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "agent" => self.agent = Some(value.to_string()),
            "message" => self.message = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "agent" => self.agent = Some(format!("{value:?}")),
            "message" => self.message = format!("{value:?}"),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for JournalTap {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let line = format!("#{:<3} t={:>5}ms {}", f.seq, f.at_ms, f.message);
        let agent = f.agent.unwrap_or_else(|| "-".into());
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((agent, line));
    }
}

impl JournalTap {
    /// An empty tap.
    pub fn new() -> JournalTap {
        JournalTap::default()
    }

    /// A dispatcher that sends the `journal` events (and nothing else) to
    /// this tap.
    pub fn dispatch(&self) -> tracing::Dispatch {
        use tracing_subscriber::layer::SubscriberExt;
        let only_journal = tracing_subscriber::filter::Targets::new()
            .with_target(crate::trace::Target::JOURNAL, tracing::Level::DEBUG);
        let layer = tracing_subscriber::Layer::with_filter(self.clone(), only_journal);
        tracing::Dispatch::new(tracing_subscriber::registry().with(layer))
    }

    /// Forget what was recorded (between runs).
    pub fn clear(&self) {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Every agent's journal since the last [`JournalTap::clear`], in order
    /// of each agent's first record.
    pub fn journals(&self) -> Vec<AgentJournal> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<AgentJournal> = Vec::new();
        for (agent, line) in lines.iter() {
            match out.iter_mut().find(|(a, _)| a == agent) {
                Some((_, records)) => records.push(line.clone()),
                None => out.push((agent.clone(), vec![line.clone()])),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_agent_in_order_of_first_record_and_clears() {
        let tap = JournalTap::new();
        tracing::dispatcher::with_default(&tap.dispatch(), || {
            tracing::debug!(target: crate::trace::Target::JOURNAL, agent = "b", seq = 0u64, at_ms = 5u64, "x");
            tracing::debug!(target: crate::trace::Target::JOURNAL, agent = "a", seq = 0u64, at_ms = 6u64, "y");
            tracing::debug!(target: crate::trace::Target::JOURNAL, agent = "b", seq = 1u64, at_ms = 7u64, "z");
            tracing::debug!(target: crate::trace::Target::WORLD, "not a journal event");
        });
        let j = tap.journals();
        assert_eq!(j.len(), 2);
        assert_eq!(j[0].0, "b");
        assert_eq!(j[0].1, vec!["#0   t=    5ms x", "#1   t=    7ms z"]);
        assert_eq!(
            j[1],
            ("a".to_string(), vec!["#0   t=    6ms y".to_string()])
        );
        tap.clear();
        assert!(tap.journals().is_empty());
    }
}
