//! An independent class counter: every schedule of a small program is
//! enumerated naively (no reduction, no bound), each execution is reduced to
//! a canonical form of its class, and the classes are counted. The reduced
//! searches (source-DPOR with sleep sets, and optimal DPOR with wakeup trees,
//! unbounded) must then run exactly one complete execution per class and
//! reach every class; the optimal one must run no sleep-blocked schedule.
//!
//! The canonical form is the lexicographic normal form of the execution's
//! Mazurkiewicz trace: of the steps whose earlier dependent steps are all
//! placed, place the one of the lowest task id, until none is left. Two
//! steps depend when they are of one task, or touch one resource and at
//! least one of them writes it. The counter computes this itself from the
//! trace's footprints (their `READ` flag); it shares no code with the
//! search's reduction.
//!
//! Programs that wait on a monitor (a failed check is a stutter, see
//! `note_await`) are checked for the states they reach: the stutter
//! equivalence is observational, so there the reduced search must reach
//! every terminal state the naive one does.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use lifecycle_sim::{
    new_object, note_await, schedule_point, spawn, touch, touch_read, yield_now, Dfs, DfsConfig,
    ExecKind, Sim, READ,
};

/// Whether two steps' footprints conflict: a resource both touch, written
/// by at least one (the counter's own reading of the footprints).
fn conflict(a: &[u64], b: &[u64]) -> bool {
    a.iter().any(|&x| {
        b.iter()
            .any(|&y| x & !READ == y & !READ && (x & READ == 0 || y & READ == 0))
    })
}

/// One step of a program: touch these resources (objects by index), then
/// yield.
#[derive(Clone, Copy)]
enum Op {
    Read(usize),
    Write(usize),
    ReadWrite(usize, usize),
}

/// Tasks, each a list of steps; the output is every write's log.
async fn program(tasks: Vec<Vec<Op>>, objects: usize) {
    let ids: Rc<Vec<u64>> = Rc::new((0..objects).map(|_| new_object()).collect());
    for ops in tasks {
        let ids = Rc::clone(&ids);
        spawn("t", async move {
            for op in ops {
                match op {
                    Op::Read(o) => touch_read(ids[o]),
                    Op::Write(o) => touch(ids[o]),
                    Op::ReadWrite(r, w) => {
                        touch_read(ids[r]);
                        touch(ids[w]);
                    }
                }
                yield_now().await;
            }
        });
    }
}

/// The canonical form of an execution: its steps `(task, footprint)` in
/// lexicographic normal form.
fn canonical(steps: &[(usize, Vec<u64>)]) -> Vec<(usize, Vec<u64>)> {
    let mut placed = vec![false; steps.len()];
    let mut out = Vec::with_capacity(steps.len());
    while out.len() < steps.len() {
        let next = (0..steps.len())
            .filter(|&i| !placed[i])
            .filter(|&i| {
                (0..i).all(|j| {
                    placed[j] || (steps[j].0 != steps[i].0 && !conflict(&steps[j].1, &steps[i].1))
                })
            })
            .min_by_key(|&i| (steps[i].0, i))
            .expect("some step has no unplaced dependency");
        placed[next] = true;
        out.push(steps[next].clone());
    }
    out
}

/// How a search reduces.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Reduction {
    /// None: every schedule.
    Naive,
    /// Source-DPOR with sleep sets.
    SourceSets,
    /// Optimal DPOR: wakeup trees with sleep sets.
    Optimal,
}

/// An unbounded search.
fn search(reduction: Reduction) -> Dfs {
    let on = reduction != Reduction::Naive;
    Dfs::new(DfsConfig {
        reduction: on,
        dpor: on,
        optimal: reduction == Reduction::Optimal,
        ..DfsConfig::default()
    })
}

struct Explored {
    /// Canonical forms of the complete runs, with multiplicity.
    classes: Vec<Vec<(usize, Vec<u64>)>>,
    complete: u64,
    /// Runs pruned because every ready task slept.
    blocked: u64,
}

fn explore(reduction: Reduction, body: &dyn Fn() -> Pin<Box<dyn Future<Output = ()>>>) -> Explored {
    let mut dfs = search(reduction);
    let mut classes = Vec::new();
    while let Some(s) = dfs.next_scheduler() {
        let mut sim = Sim::new(s, 10_000);
        sim.set_trace(true);
        sim.block_on(body()).expect("the program finishes");
        let steps: Vec<(usize, Vec<u64>)> = sim
            .trace()
            .iter()
            .map(|e| (e.task, e.footprint.clone()))
            .collect();
        match dfs.end_execution() {
            ExecKind::Complete => classes.push(canonical(&steps)),
            ExecKind::Nondeterministic(m) => panic!("nondeterministic: {m}"),
            ExecKind::Blocked | ExecKind::Foreign => {}
        }
    }
    assert!(dfs.exhausted());
    let stats = dfs.stats();
    Explored {
        classes,
        complete: stats.complete,
        blocked: stats.blocked,
    }
}

/// Naive classes, and the reduced search's complete runs: one per class.
/// Returns the classes and the naive schedules.
fn check_one_run_per_class(tasks: Vec<Vec<Op>>, objects: usize) -> (usize, u64) {
    let body =
        move || -> Pin<Box<dyn Future<Output = ()>>> { Box::pin(program(tasks.clone(), objects)) };
    let naive = explore(Reduction::Naive, &body);
    let classes: BTreeSet<_> = naive.classes.iter().cloned().collect();
    for how in [Reduction::SourceSets, Reduction::Optimal] {
        let reduced = explore(how, &body);
        let reached: BTreeSet<_> = reduced.classes.iter().cloned().collect();
        assert_eq!(
            reached.len(),
            reduced.classes.len(),
            "{how:?}: the reduced search ran some class twice"
        );
        assert_eq!(
            reached, classes,
            "{how:?}: the reduced search missed a class"
        );
        assert_eq!(reduced.complete, classes.len() as u64, "{how:?}");
        if how == Reduction::Optimal {
            assert_eq!(
                reduced.blocked, 0,
                "optimal DPOR ran a sleep-blocked schedule"
            );
        }
    }
    (classes.len(), naive.complete)
}

#[test]
fn reads_commute_one_run_per_class() {
    use Op::*;
    // Three readers of one object and a writer: the readers commute with
    // each other, each races with the write.
    let (classes, schedules) = check_one_run_per_class(
        vec![vec![Read(0)], vec![Read(0)], vec![Read(0), Write(0)]],
        1,
    );
    assert!(classes < schedules as usize, "{classes} of {schedules}");
    // Reads alone: one class.
    let (classes, _) =
        check_one_run_per_class(vec![vec![Read(0)], vec![Read(0)], vec![Read(0)]], 1);
    assert_eq!(classes, 1);
}

#[test]
fn writes_and_reads_over_two_objects_one_run_per_class() {
    use Op::*;
    check_one_run_per_class(
        vec![
            vec![Write(0), Read(1)],
            vec![ReadWrite(0, 1), Read(0)],
            vec![Read(1), Write(1)],
        ],
        2,
    );
}

#[test]
fn a_chain_of_dependencies_one_run_per_class() {
    use Op::*;
    check_one_run_per_class(
        vec![
            vec![Write(0), Write(1)],
            vec![Read(1), Write(2)],
            vec![Read(2), Read(0)],
        ],
        3,
    );
}

/// The program of the optimal-DPOR paper's sleep-set blocking example
/// (Abdulla et al., POPL 2014, Fig. 2, with a reader more): a writer of x,
/// a reader of y then x, another reader of y then x, and a writer of y.
/// Source sets explore sleep-blocked schedules here; wakeup trees none.
#[test]
fn wakeup_trees_run_no_sleep_blocked_schedule_where_source_sets_do() {
    use Op::*;
    let tasks = vec![
        vec![Write(0)],
        vec![Read(1), Read(0)],
        vec![Read(1), Read(0)],
        vec![Write(1)],
    ];
    check_one_run_per_class(tasks.clone(), 2);
    let body = move || -> Pin<Box<dyn Future<Output = ()>>> { Box::pin(program(tasks.clone(), 2)) };
    let source = explore(Reduction::SourceSets, &body);
    let optimal = explore(Reduction::Optimal, &body);
    assert!(
        source.blocked > 0,
        "source sets ran no sleep-blocked schedule"
    );
    assert_eq!(optimal.blocked, 0);
    assert_eq!(optimal.complete, source.complete);
}

/// A monitor in miniature: a counter under one object, parked wakers, a
/// wait that is a failed check (`note_await`) until the counter reaches a
/// value.
#[derive(Default)]
struct Counter {
    value: u32,
    waiters: Vec<Waker>,
    object: u64,
}

fn bump(c: &Rc<RefCell<Counter>>) {
    let woken = {
        let mut c = c.borrow_mut();
        touch(c.object);
        c.value += 1;
        std::mem::take(&mut c.waiters)
    };
    for w in woken {
        w.wake();
    }
}

async fn wait_for(c: Rc<RefCell<Counter>>, at_least: u32) -> u32 {
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        let mut c = c.borrow_mut();
        if c.value >= at_least {
            touch(c.object);
            Poll::Ready(c.value)
        } else {
            note_await(c.object);
            c.waiters.push(cx.waker().clone());
            Poll::Pending
        }
    })
    .await
}

/// Two bumpers and two waiters that record what they saw, in one log.
async fn waiting_program(log: Rc<RefCell<Vec<String>>>) {
    let c = Rc::new(RefCell::new(Counter {
        object: new_object(),
        ..Counter::default()
    }));
    let out = new_object();
    for (name, at) in [("w1", 1), ("w2", 2)] {
        let (c, log) = (Rc::clone(&c), Rc::clone(&log));
        spawn(name, async move {
            let v = wait_for(c, at).await;
            touch(out);
            log.borrow_mut().push(format!("{name}:{v}"));
        });
    }
    for _ in 0..2 {
        let c = Rc::clone(&c);
        spawn("bump", async move {
            yield_now().await;
            bump(&c);
        });
    }
}

fn outcomes(reduction: Reduction) -> (BTreeSet<String>, u64) {
    let mut dfs = search(reduction);
    let mut seen = BTreeSet::new();
    while let Some(s) = dfs.next_scheduler() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut sim = Sim::new(s, 10_000);
        sim.block_on(waiting_program(Rc::clone(&log)))
            .expect("the program finishes");
        if dfs.end_execution() == ExecKind::Complete {
            seen.insert(log.borrow().join(","));
        }
    }
    (seen, dfs.stats().complete)
}

#[test]
fn failed_awaits_are_stutters_that_lose_no_state() {
    let (naive, naive_runs) = outcomes(Reduction::Naive);
    for how in [Reduction::SourceSets, Reduction::Optimal] {
        let (reduced, reduced_runs) = outcomes(how);
        assert_eq!(
            reduced, naive,
            "{how:?}: the reduced search lost a terminal state"
        );
        assert!(
            reduced_runs < naive_runs,
            "{how:?}: {reduced_runs} runs reduced, {naive_runs} naive"
        );
    }
}

/// The waiting program, with every check and bump preceded by a scheduling
/// point (as a lock section's acquisition is) when `points`, and the second
/// waiter joining the first through a flag it only sees through its wake
/// (a poll that touches nothing and parks again is a stutter too).
async fn pointed_program(log: Rc<RefCell<Vec<String>>>, points: bool) {
    let c = Rc::new(RefCell::new(Counter {
        object: new_object(),
        ..Counter::default()
    }));
    let out = new_object();
    let done: Rc<RefCell<(bool, Option<Waker>)>> = Rc::new(RefCell::new((false, None)));
    {
        let (c, log, done) = (Rc::clone(&c), Rc::clone(&log), Rc::clone(&done));
        spawn("w1", async move {
            if points {
                schedule_point();
            }
            let v = wait_for(c, 1).await;
            touch(out);
            log.borrow_mut().push(format!("w1:{v}"));
            let mut d = done.borrow_mut();
            d.0 = true;
            if let Some(w) = d.1.take() {
                drop(d);
                w.wake();
            }
        });
    }
    {
        let (c, log, done) = (Rc::clone(&c), Rc::clone(&log), Rc::clone(&done));
        spawn("w2", async move {
            std::future::poll_fn(|cx: &mut Context<'_>| {
                let mut d = done.borrow_mut();
                if d.0 {
                    Poll::Ready(())
                } else {
                    d.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
            let v = wait_for(c, 2).await;
            touch(out);
            log.borrow_mut().push(format!("w2:{v}"));
        });
    }
    for _ in 0..2 {
        let c = Rc::clone(&c);
        spawn("bump", async move {
            yield_now().await;
            if points {
                schedule_point();
            }
            bump(&c);
        });
    }
}

/// A scheduling point reached before a step touched anything is no
/// decision: adding one at the start of every poll changes no seeded run,
/// with or without footprints recorded (a trace records them).
#[test]
fn a_point_before_any_access_is_no_decision() {
    for seed in 0..20 {
        let decisions = |points: bool, trace: bool| {
            let mut sim = Sim::with_seed(seed);
            sim.set_trace(trace);
            let log = Rc::new(RefCell::new(Vec::new()));
            sim.block_on(pointed_program(Rc::clone(&log), points))
                .expect("the program finishes");
            let out = log.borrow().clone();
            (sim.decisions().to_vec(), out)
        };
        let plain = decisions(false, false);
        assert_eq!(decisions(true, false), plain, "seed {seed}");
        assert_eq!(decisions(true, true), plain, "seed {seed}, traced");
    }
}

/// Stutters on a monitor and on a bare wake, and points before any
/// access: the reduced searches reach every terminal state the naive one
/// does, in fewer runs.
#[test]
fn stutters_and_empty_points_lose_no_state() {
    let outcomes = |how: Reduction| {
        let mut dfs = search(how);
        let mut seen = BTreeSet::new();
        while let Some(s) = dfs.next_scheduler() {
            let log = Rc::new(RefCell::new(Vec::new()));
            let mut sim = Sim::new(s, 10_000);
            sim.block_on(pointed_program(Rc::clone(&log), true))
                .expect("the program finishes");
            if dfs.end_execution() == ExecKind::Complete {
                let out = log.borrow().join(",");
                seen.insert(out);
            }
        }
        assert!(dfs.exhausted());
        (seen, dfs.stats().complete)
    };
    let (naive, naive_runs) = outcomes(Reduction::Naive);
    assert!(naive.len() > 1, "the program has one outcome: {naive:?}");
    for how in [Reduction::SourceSets, Reduction::Optimal] {
        let (reduced, runs) = outcomes(how);
        assert_eq!(
            reduced, naive,
            "{how:?}: the reduced search lost a terminal state"
        );
        assert!(
            runs < naive_runs,
            "{how:?}: {runs} runs reduced, {naive_runs} naive"
        );
    }
}

/// A bump, then a waiter that finds it done: reversing the bump's write
/// and the waiter's passing check runs the check first, where it fails, and
/// the run is sleep-blocked (the bump asleep, the waiter parked).
async fn late_waiter() {
    let c = Rc::new(RefCell::new(Counter {
        object: new_object(),
        ..Counter::default()
    }));
    {
        let c = Rc::clone(&c);
        spawn("bump", async move { bump(&c) });
    }
    spawn("w", async move {
        wait_for(c, 1).await;
    });
}

/// Optimal DPOR counts the sleep-blocked runs that follow a wakeup-branch
/// step which failed the await it had passed where its race was found
/// (`blocked_after_stall`, a part of `blocked`); the counter is optimal
/// DPOR's, so source sets leave it at 0.
#[test]
fn optimal_counts_blocked_runs_after_a_stalled_await() {
    let stats = |how| {
        let mut dfs = search(how);
        while let Some(s) = dfs.next_scheduler() {
            let mut sim = Sim::new(s, 10_000);
            sim.block_on(late_waiter()).expect("the program finishes");
            assert!(!matches!(
                dfs.end_execution(),
                ExecKind::Nondeterministic(_)
            ));
        }
        assert!(dfs.exhausted());
        dfs.stats()
    };
    let optimal = stats(Reduction::Optimal);
    assert_eq!((optimal.complete, optimal.blocked), (1, 1), "{optimal:?}");
    assert_eq!(optimal.await_stalled, 1, "{optimal:?}");
    assert_eq!(optimal.blocked_after_stall, 1, "{optimal:?}");
    let source = stats(Reduction::SourceSets);
    assert_eq!((source.complete, source.blocked), (1, 1), "{source:?}");
    assert_eq!(source.blocked_after_stall, 0, "{source:?}");
}
