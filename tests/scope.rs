//! The ownership mechanism itself: a composite effect runs its disposers
//! LIFO, each awaited, once; a scope unloads sibling effects concurrently.

use lifecycle::rt::{BoxFuture, Mutex, Rt, SimRt};
use lifecycle::scope::{Disposer, Effect, Scope, Unobserved};
use lifecycle_harness::context::{self, Context};
use lifecycle_harness::faults::{Fault, Faults};
use std::sync::Arc;

type Log = Arc<Mutex<SimRt, Vec<String>>>;

fn step(log: &Log, n: u8, tag: &str) -> Disposer {
    let (log, tag) = (log.clone(), tag.to_string());
    let f: BoxFuture<Result<(), String>> = Box::pin(async move {
        log.with(|l| l.push(format!("{tag}{n}:start")));
        SimRt::yield_now().await;
        log.with(|l| l.push(format!("{tag}{n}:end")));
        Ok(())
    });
    (n, Box::new(move || f))
}

fn run(f: impl std::future::Future<Output = ()> + 'static) {
    lifecycle_sim::Sim::with_seed(3).block_on(f).expect("sim");
}

#[test]
fn composite_effect_runs_lifo_each_awaited_once() {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    run(async move {
        let e = Effect::<SimRt>::new(
            "e",
            vec![step(&l, 3, "s"), step(&l, 2, "s"), step(&l, 1, "s")],
            Arc::new(Unobserved),
        );
        futures::future::join(e.dispose("a"), e.dispose("b")).await;
        assert!(e.is_done());
    });
    let got = log.with(|l| l.clone());
    assert_eq!(
        got,
        ["s1:start", "s1:end", "s2:start", "s2:end", "s3:start", "s3:end"]
    );
}

#[test]
fn scope_unload_disposes_siblings_concurrently() {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    run(async move {
        let scope = Scope::<SimRt>::new("s", None);
        assert!(scope.add(Effect::new(
            "a",
            vec![step(&l, 1, "a")],
            Arc::new(Unobserved)
        )));
        assert!(scope.add(Effect::new(
            "b",
            vec![step(&l, 1, "b")],
            Arc::new(Unobserved)
        )));
        scope.unload().await;
        assert!(!scope.is_active());
        assert!(
            !scope.add(Effect::new("late", vec![], Arc::new(Unobserved))),
            "an unloaded scope took an effect"
        );
    });
    let got = log.with(|l| l.clone());
    // Both started before either ended: Promise.all, not a chain.
    assert_eq!(got, ["a1:start", "b1:start", "a1:end", "b1:end"]);
}

#[test]
fn m6_second_caller_does_not_wait() {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    context::enter(Context::new(Faults::none().with(Fault::M6)));
    run(async move {
        let e = Effect::<SimRt>::new("e", vec![step(&l, 1, "s")], Arc::new(Unobserved));
        let first = e.dispose("first");
        let second = async {
            e.dispose("second").await;
            l.with(|x| x.push("second:returned".into()));
        };
        futures::future::join(first, second).await;
    });
    let got = log.with(|l| l.clone());
    assert_eq!(got, ["s1:start", "second:returned", "s1:end"]);
}
