//! SessionStore: `announce()` emits `session/created` (SPEC §1), and each
//! agent's journal events carry its id, heard by a tracing subscriber. In a
//! binary of its own: a tracing callsite caches
//! whether any subscriber wants it, and a concurrent test thread with no
//! subscriber could leave this one's debug event disabled.

use lifecycle_harness::backends::CheckedTokioRt;
use lifecycle_harness::scenarios::rig::Rig;
use std::sync::Arc;

/// What one tracing event said: its target, its `agent` field and its
/// message.
#[derive(Clone, Debug, Default)]
struct Heard {
    target: String,
    agent: Option<String>,
    message: String,
}

/// Records every tracing event on this thread.
#[derive(Clone, Default)]
struct Messages(Arc<std::sync::Mutex<Vec<Heard>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Messages {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Fields<'a>(&'a mut Heard);
        impl tracing::field::Visit for Fields<'_> {
            fn record_str(&mut self, field: &tracing::field::Field, v: &str) {
                if field.name() == "agent" {
                    self.0.agent = Some(v.to_string());
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.0.message = format!("{v:?}"),
                    "agent" => self.0.agent = Some(format!("{v:?}")),
                    _ => {}
                }
            }
        }
        let mut heard = Heard {
            target: event.metadata().target().to_string(),
            ..Heard::default()
        };
        event.record(&mut Fields(&mut heard));
        self.0.lock().unwrap().push(heard);
    }
}

/// SessionStore: `announce()` emits `session/created` (SPEC §1), once per
/// created agent, and each agent's journal events name it, heard by a
/// tracing subscriber.
#[test]
fn a_created_session_is_announced() {
    use tracing_subscriber::layer::SubscriberExt;
    let messages = Messages::default();
    let subscriber = tracing_subscriber::registry().with(messages.clone());
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let rig = Rig::<CheckedTokioRt>::builder().build();
            let owner = rig.owner("owner");
            rig.provider.create("a", &owner).await.expect("create a");
            rig.provider.create("b", &owner).await.expect("create b");
            owner.unload().await;
        });
    });
    let heard = messages.0.lock().unwrap().clone();
    let created = heard
        .iter()
        .filter(|h| h.message == "session/created")
        .count();
    assert_eq!(created, 2, "{heard:?}");
    // Each agent's journal names it in its trace events.
    let journal: Vec<Option<&str>> = heard
        .iter()
        .filter(|h| h.target == "journal")
        .map(|h| h.agent.as_deref())
        .collect();
    for id in ["a", "b"] {
        assert!(
            journal.contains(&Some(id)),
            "no journal event names agent {id}: {journal:?}"
        );
    }
    assert!(
        journal.iter().all(|a| matches!(a, Some("a" | "b"))),
        "a journal event names no agent: {journal:?}"
    );
}
