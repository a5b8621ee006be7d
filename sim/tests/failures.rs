//! Stalls, panics, step limits, and misuse.

use std::cell::RefCell;
use std::future::{pending, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use lifecycle_sim::{
    current_task, is_running, note_wait, note_wait_tagged, now_ms, sleep, spawn, yield_now, Sim,
    SimError, Step,
};

#[test]
fn stall_names_task_and_wait() {
    let mut sim = Sim::with_seed(0);
    sim.spawn("waiter", async {
        note_wait("forever");
        pending::<()>().await;
    });
    sim.spawn("quiet", pending::<()>());
    let err = sim.run().unwrap_err();
    let SimError::Stalled(report) = &err else {
        panic!("expected a stall, got {err}");
    };
    assert_eq!(report.blocked.len(), 2);
    assert_eq!(report.blocked[0].name, "waiter");
    assert_eq!(report.blocked[0].waits_on, "forever");
    let text = err.to_string();
    assert!(text.starts_with("stall: every task is blocked"), "{text}");
    assert!(text.contains("task 0 `waiter` waits on forever"), "{text}");
    assert!(text.contains("task 1 `quiet` waits on"), "{text}");
    assert!(!text.contains("BlockedTask"), "no Debug dumps: {text}");
    assert!(matches!(sim.step(), Step::Stalled(_)));
}

#[test]
fn a_stall_carries_the_tag_of_the_wait_still_noted() {
    let mut sim = Sim::with_seed(0);
    sim.spawn("tagged", async {
        note_wait("first");
        yield_now().await;
        note_wait_tagged("shared work", 17);
        pending::<()>().await;
    });
    sim.spawn("retagged", async {
        note_wait_tagged("first", 3);
        yield_now().await;
        note_wait("second");
        pending::<()>().await;
    });
    let err = sim.run().unwrap_err();
    let SimError::Stalled(report) = &err else {
        panic!("expected a stall, got {err}");
    };
    let tags: Vec<_> = report.blocked.iter().map(|t| t.tag).collect();
    assert_eq!(tags, [Some(17), None], "{err}");
    assert_eq!(report.blocked[0].waits_on, "shared work");
}

#[test]
fn wait_label_cleared_on_next_poll() {
    let mut sim = Sim::with_seed(0);
    let err = sim
        .block_on(async {
            note_wait("first");
            yield_now().await;
            pending::<()>().await;
        })
        .unwrap_err();
    assert!(!err.to_string().contains("first"), "{err}");
}

#[test]
fn panic_is_reported_with_message() {
    let mut sim = Sim::with_seed(0);
    sim.spawn("fine", async {
        sleep(10).await;
    });
    sim.spawn("bad", async {
        yield_now().await;
        panic!("boom {}", 42);
    });
    let err = sim.run().unwrap_err();
    match &err {
        SimError::TaskPanicked {
            task,
            name,
            message,
        } => {
            assert_eq!(*task, 1);
            assert_eq!(name, "bad");
            assert_eq!(message, "boom 42");
        }
        other => panic!("expected a panic, got {other}"),
    }
    assert_eq!(err.to_string(), "task 1 `bad` panicked: boom 42");
    assert!(!is_running(), "context restored after a task panic");
    assert_eq!(current_task(), None);
}

#[test]
fn static_str_panic_message() {
    let mut sim = Sim::with_seed(0);
    let err = sim
        .block_on(async {
            panic!("plain");
        })
        .unwrap_err();
    assert!(matches!(err, SimError::TaskPanicked { ref message, .. } if message == "plain"));
}

#[test]
fn step_limit_stops_livelock() {
    let mut sim = Sim::with_seed(0);
    sim.set_max_steps(500);
    sim.spawn("spin", async {
        loop {
            yield_now().await;
        }
    });
    let err = sim.run().unwrap_err();
    assert_eq!(err, SimError::StepLimit { steps: 500 });
    assert!(err.to_string().contains("500"));

    let mut sim = Sim::new(Box::new(lifecycle_sim::RandomScheduler::new(1)), 100);
    sim.spawn("ticker", async {
        loop {
            sleep(1).await;
        }
    });
    assert!(matches!(sim.run(), Err(SimError::StepLimit { steps: 100 })));
}

#[test]
fn free_functions_outside_a_sim() {
    assert!(!is_running());
    assert_eq!(current_task(), None);
    note_wait("ignored");
    let err = std::panic::catch_unwind(now_ms).unwrap_err();
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert_eq!(
        msg,
        "lifecycle-sim: no simulation is running on this thread"
    );
    assert!(std::panic::catch_unwind(|| spawn("x", async {})).is_err());
}

#[test]
fn current_task_and_nested_spawn() {
    let mut sim = Sim::with_seed(6);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = Rc::clone(&seen);
    sim.block_on(async move {
        assert!(is_running());
        s.borrow_mut().push(current_task().unwrap());
        let s2 = Rc::clone(&s);
        let child = spawn("child", async move {
            s2.borrow_mut().push(current_task().unwrap());
            let s3 = Rc::clone(&s2);
            spawn("grandchild", async move {
                s3.borrow_mut().push(current_task().unwrap());
            });
        });
        assert_eq!(child, 1);
    })
    .unwrap();
    let mut seen = seen.borrow().clone();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (0, "main".to_string()),
            (1, "child".to_string()),
            (2, "grandchild".to_string())
        ]
    );
    assert_eq!(sim.task_count(), 3);
    assert_eq!(sim.unfinished(), 0);
}

/// Stores its waker in a shared slot and completes once `done` is set.
struct Parked {
    slot: Rc<RefCell<Option<Waker>>>,
    done: Rc<RefCell<bool>>,
}

impl Future for Parked {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if *self.done.borrow() {
            return Poll::Ready(());
        }
        *self.slot.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[test]
fn wakers_from_other_tasks_threads_and_after_finish() {
    let mut sim = Sim::with_seed(2);
    let slot = Rc::new(RefCell::new(None::<Waker>));
    let done = Rc::new(RefCell::new(false));
    let (s, d) = (Rc::clone(&slot), Rc::clone(&done));
    sim.spawn("parked", Parked { slot, done });
    sim.spawn("waker", async move {
        yield_now().await;
        while s.borrow().is_none() {
            yield_now().await;
        }
        let w = s.borrow().clone().unwrap();
        // Wake twice, once from another thread: no duplicates, no crash.
        w.wake_by_ref();
        let w2 = w.clone();
        std::thread::spawn(move || w2.wake()).join().unwrap();
        *d.borrow_mut() = true;
        sleep(1).await;
        // The parked task has finished by now: waking it is a no-op.
        w.wake();
    });
    let report = sim.run().unwrap();
    assert_eq!(report.tasks, 2);
    assert_eq!(sim.unfinished(), 0);
}

/// Calls free functions from its destructor.
struct TouchesSimOnDrop;

impl Drop for TouchesSimOnDrop {
    fn drop(&mut self) {
        if is_running() {
            let _ = now_ms();
            note_wait("dropping");
            spawn("spawned-in-drop", async {});
        }
    }
}

#[test]
fn dropping_unfinished_sim_is_safe() {
    let mut sim = Sim::with_seed(0);
    sim.spawn("holder", async {
        let _guard = TouchesSimOnDrop;
        let _long = sleep(1_000);
        note_wait("forever");
        pending::<()>().await;
    });
    assert!(matches!(sim.run(), Err(SimError::Stalled(_))));
    drop(sim);
    assert!(!is_running());

    // A sim dropped before ever running.
    let sim = Sim::with_seed(0);
    sim.spawn("never", async {
        let _guard = TouchesSimOnDrop;
        pending::<()>().await;
    });
    drop(sim);
    assert!(!is_running());
}

#[test]
fn a_lock_section_that_reports_no_access_to_its_object_is_a_harness_error() {
    use lifecycle_sim::{new_object, section_begin, section_end, touch_read};
    // Reported: a read of the section's object (another object's access
    // does not cover it).
    let mut sim = Sim::with_seed(0);
    sim.block_on(async {
        let (obj, other) = (new_object(), new_object());
        section_begin(obj);
        touch_read(other);
        touch_read(obj);
        section_end(obj);
    })
    .unwrap();
    // Left out: the run ends after that poll, naming the task and the object.
    let mut sim = Sim::with_seed(0);
    let err = sim
        .block_on(async {
            let (obj, other) = (new_object(), new_object());
            section_begin(obj);
            touch_read(other);
            section_end(obj);
            yield_now().await;
            unreachable!("the run ends after the poll with the error");
        })
        .unwrap_err();
    let SimError::Footprint { name, message, .. } = &err else {
        panic!("expected a footprint error, got {err}");
    };
    assert_eq!(name, "main");
    assert!(
        message.contains("reported no access to its object"),
        "{message}"
    );
    assert!(err.to_string().starts_with("harness error: "), "{err}");
}

#[test]
fn a_footprint_error_ends_the_run_after_the_poll_that_made_it() {
    let mut sim = Sim::with_seed(0);
    sim.spawn("mislabel", async {
        lifecycle_sim::footprint_error("a read that writes");
        lifecycle_sim::footprint_error("a second error is not kept");
    });
    sim.spawn("other", pending::<()>());
    // `other` may be polled first; the poll of `mislabel` ends the run.
    for _ in 0..2 {
        match sim.step() {
            Step::Polled { name, .. } => assert_eq!(name, "other"),
            Step::Footprint { name, message, .. } => {
                assert_eq!(name, "mislabel");
                assert_eq!(message, "a read that writes");
                return;
            }
            other => panic!("the poll with the error did not end the run: {other:?}"),
        }
    }
    panic!("`mislabel` was never polled");
}
