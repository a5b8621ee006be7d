//! Scopes (SPEC §1): child scopes unload with their parent, refuse effects
//! once unloading, and admissions (`Scope::admit`, R3) are all-or-nothing
//! against an unload.

use agent_lifecycle::faults::Faults;
use agent_lifecycle::rt::SimRt;
use agent_lifecycle::scope::{Admission, Effect, EffectObserver, Scope};
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
    Effect::new(name, Vec::new(), Faults::none(), count.clone())
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
