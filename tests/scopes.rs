//! Scopes (SPEC §1): child scopes unload with their parent, refuse effects
//! once unloading, and admissions (`Scope::admit`, R3) are all-or-nothing
//! against an unload.

use lifecycle::rt::SimRt;
use lifecycle::scope::{Admission, Effect, EffectObserver, Scope};
use lifecycle_sim::Sim;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Counts the teardown chains that ran to the end.
#[derive(Default)]
struct Count(AtomicU32);

impl EffectObserver for Count {
    fn done(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn effect(name: &str, count: &Arc<Count>) -> Arc<Effect<SimRt>> {
    Effect::new(name, Vec::new(), count.clone())
}

fn run<T: 'static>(f: impl std::future::Future<Output = T> + 'static) -> T {
    Sim::with_seed(7)
        .block_on(f)
        .expect("the simulation finishes")
}

#[test]
fn a_child_scope_unloads_with_its_parent_and_then_refuses_effects() {
    run(async {
        let count = Arc::new(Count::default());
        let parent = Scope::<SimRt>::new("parent", None);
        let child = parent
            .child("child")
            .expect("an active parent makes children");
        let grandchild = child.child("grandchild").expect("so does an active child");
        assert!(parent.add(effect("p", &count)));
        assert!(child.add(effect("c", &count)));
        assert!(grandchild.add(effect("g", &count)));
        parent.unload().await;
        // Every effect of the whole tree was torn down, once.
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
        assert!(!child.is_active() && !grandchild.is_active());
        assert!(
            !child.add(effect("late", &count)),
            "an unloaded child takes no effect"
        );
        assert!(
            parent.child("late").is_none(),
            "an unloaded parent makes no child"
        );
        // Unloading a child again is a no-op that still resolves.
        child.unload().await;
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn unloading_a_child_leaves_its_parent_active() {
    run(async {
        let count = Arc::new(Count::default());
        let parent = Scope::<SimRt>::new("parent", None);
        let child = parent.child("child").expect("child");
        assert!(child.add(effect("c", &count)));
        child.unload().await;
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(parent.is_active());
        assert!(parent.add(effect("p", &count)));
        parent.unload().await;
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn admission_is_refused_by_an_unloading_scope_and_runs_nothing() {
    run(async {
        let count = Arc::new(Count::default());
        let scope = Scope::<SimRt>::new("owner", None);
        let e = effect("agent", &count);
        let admitted = scope.admit(std::slice::from_ref(&e), || Admission::Admitted);
        assert_eq!(admitted, Admission::Admitted);
        // A failed publication owns nothing.
        let lost = effect("lost", &count);
        assert_eq!(
            scope.admit(std::slice::from_ref(&lost), || Admission::Failed),
            Admission::Failed
        );
        scope.unload().await;
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "only the admitted effect ran"
        );
        let mut ran = false;
        let after = scope.admit(&[effect("late", &count)], || {
            ran = true;
            Admission::Admitted
        });
        assert_eq!(after, Admission::Refused);
        assert!(!ran, "a refused admission does not run its publication");
    });
}

/// A scope lets go of the effects whose teardown finished on their own
/// (a handle's `dispose()`), at its next `add` or admission: a session
/// that creates and disposes agents for hours must not keep every one of
/// them alive. Observed from outside: the test's own `Arc` is the last one
/// left.
#[test]
fn a_scope_drops_the_effects_that_finished_at_its_next_add() {
    run(async {
        let count = Arc::new(Count::default());
        let scope = Scope::<SimRt>::new("owner", None);
        let first = effect("first", &count);
        let live = effect("live", &count);
        assert!(scope.add(first.clone()));
        assert!(scope.add(live.clone()));
        assert_eq!(Arc::strong_count(&first), 2, "the scope holds it");
        first.dispose("handle").await;
        assert!(first.is_done());
        assert!(!live.is_done());
        assert!(scope.add(effect("next", &count)));
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the finished effect is let go at the next add"
        );
        assert_eq!(Arc::strong_count(&live), 2, "a live effect is kept");
        let admitted = effect("admitted", &count);
        live.dispose("handle").await;
        assert_eq!(
            scope.admit(std::slice::from_ref(&admitted), || Admission::Admitted),
            Admission::Admitted
        );
        assert_eq!(Arc::strong_count(&live), 1, "and at the next admission");
        scope.unload().await;
        // first and live ran once each, by their handles; next and admitted
        // by the unload.
        assert_eq!(count.0.load(Ordering::SeqCst), 4);
    });
}

#[test]
fn scopes_and_effects_keep_their_names() {
    let count = Arc::new(Count::default());
    let parent = Scope::<SimRt>::new("session s1", None);
    assert_eq!(parent.name(), "session s1");
    assert_eq!(
        parent.child("agent a#1").expect("active").name(),
        "agent a#1"
    );
    assert_eq!(effect("agent a#1", &count).name(), "agent a#1");
}

/// The unload hook hears a scope's unload begin and end, once each, however
/// many callers unload it (the journaled scopes' `scope-unloaded` that the
/// R3 oracle reads comes from here); a child tells the same hook.
#[test]
fn the_unload_hook_hears_begin_and_end_once_each() {
    use std::sync::Mutex;
    let heard = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let ear = heard.clone();
    let hook: lifecycle::scope::UnloadHook =
        Arc::new(move |name: &str, done: bool| ear.lock().unwrap().push((name.to_string(), done)));
    run(async move {
        let count = Arc::new(Count::default());
        let parent = Scope::<SimRt>::new("parent", Some(hook));
        let child = parent
            .child("child")
            .expect("an active parent makes children");
        assert!(child.add(effect("e", &count)));
        futures::future::join(parent.unload(), parent.unload()).await;
        parent.unload().await;
        child.unload().await;
    });
    let mut heard = heard.lock().unwrap().clone();
    heard.sort();
    let says = |name: &str, done| (name.to_string(), done);
    assert_eq!(
        heard,
        [
            says("child", false),
            says("child", true),
            says("parent", false),
            says("parent", true)
        ]
    );
}
