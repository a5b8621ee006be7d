//! SessionStore: `announce()` emits `session/created` (SPEC §1), heard by
//! a tracing subscriber. In a binary of its own: a tracing callsite caches
//! whether any subscriber wants it, and a concurrent test thread with no
//! subscriber could leave this one's debug event disabled.

use agent_lifecycle::rt::TokioRt;
use agent_lifecycle::scenarios::rig::Rig;
use std::sync::Arc;

/// Records the message of every tracing event on this thread.
#[derive(Clone, Default)]
struct Messages(Arc<std::sync::Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Messages {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{v:?}");
                }
            }
        }
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        self.0.lock().unwrap().push(message);
    }
}

/// SessionStore: `announce()` emits `session/created` (SPEC §1), once per
/// created agent, heard by a tracing subscriber.
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
            let rig = Rig::<TokioRt>::builder().build();
            let owner = rig.owner("owner");
            rig.provider.create("a", &owner).await.expect("create a");
            rig.provider.create("b", &owner).await.expect("create b");
            owner.unload().await;
        });
    });
    let created = messages
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|m| *m == "session/created")
        .count();
    assert_eq!(created, 2, "{:?}", messages.0.lock().unwrap());
}
