//! Virtual time.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use lifecycle_sim::{now_ms, sleep, spawn, yield_now, Sim};

#[test]
fn sleeps_advance_time_exactly() {
    let mut sim = Sim::with_seed(1);
    let times = sim
        .block_on(async {
            let t0 = now_ms();
            sleep(1000).await;
            let t1 = now_ms();
            sleep(5).await;
            let t2 = now_ms();
            sleep(0).await;
            (t0, t1, t2, now_ms())
        })
        .unwrap();
    assert_eq!(times, (0, 1000, 1005, 1005));
    assert_eq!(sim.now_ms(), 1005);
    assert_eq!(sim.report().now_ms, 1005);
}

/// Two tasks sleep until t=10; `late` registers its timer only after `early`
/// did (it waits for a flag `early` sets in the same poll that registers).
fn equal_deadline_order(seed: u64, early_is_first_spawned: bool) -> Vec<(&'static str, u64)> {
    let mut sim = Sim::with_seed(seed);
    // "Set the flag and register the timer in the same poll" needs await
    // granularity: at lock granularity registering a timer is itself a
    // scheduling point.
    sim.set_preemptive(false);
    sim.block_on(async move {
        let order = Rc::new(RefCell::new(Vec::new()));
        let registered = Rc::new(RefCell::new(false));
        let (o, r) = (Rc::clone(&order), Rc::clone(&registered));
        let early = async move {
            let wake = sleep(10);
            for _ in 0..3 {
                yield_now().await;
            }
            // Set the flag and register the timer in the same poll.
            *r.borrow_mut() = true;
            wake.await;
            o.borrow_mut().push(("early", now_ms()));
        };
        let (o, r) = (Rc::clone(&order), Rc::clone(&registered));
        let late = async move {
            let wake = sleep(10);
            while !*r.borrow() {
                yield_now().await;
            }
            wake.await;
            o.borrow_mut().push(("late", now_ms()));
        };
        if early_is_first_spawned {
            spawn("early", early);
            spawn("late", late);
        } else {
            spawn("late", late);
            spawn("early", early);
        }
        sleep(20).await;
        let out = order.borrow().clone();
        out
    })
    .unwrap()
}

#[test]
fn equal_deadlines_wake_in_registration_order() {
    for seed in 0..20 {
        for early_first in [true, false] {
            assert_eq!(
                equal_deadline_order(seed, early_first),
                vec![("early", 10), ("late", 10)],
                "seed {seed}, early spawned first: {early_first}"
            );
        }
    }
}

/// Completes with whichever of two futures finishes first.
struct Select<A, B>(Pin<Box<A>>, Pin<Box<B>>);

impl<A: Future<Output = ()>, B: Future<Output = ()>> Future for Select<A, B> {
    type Output = bool;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        if self.0.as_mut().poll(cx).is_ready() {
            return Poll::Ready(true);
        }
        if self.1.as_mut().poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        Poll::Pending
    }
}

#[test]
fn abandoned_sleep_does_not_move_time() {
    let mut sim = Sim::with_seed(3);
    let first_won = sim
        .block_on(async { Select(Box::pin(sleep(5)), Box::pin(sleep(1_000_000))).await })
        .unwrap();
    assert!(first_won);
    assert_eq!(sim.now_ms(), 5, "the dropped long sleep must not fire");
    assert_eq!(sim.pending_timers(), 0);
}

#[test]
fn time_does_not_advance_while_tasks_are_ready() {
    let mut sim = Sim::with_seed(8);
    sim.block_on(async {
        spawn("spinner", async {
            for _ in 0..50 {
                assert_eq!(now_ms(), 0);
                yield_now().await;
            }
        });
        sleep(1).await;
    })
    .unwrap();
    assert_eq!(sim.now_ms(), 1);
}
