//! Exhaustive search: counts on programs with known answers, reduction keeps
//! every terminal state, shards partition the search, checkpoints resume it.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use lifecycle_sim::{new_object, spawn, touch, yield_now, Dfs, DfsConfig, ExecKind, Shard, Sim};

/// `tasks` tasks, each doing `steps` polls. With `shared`, every poll
/// appends the task's id to one shared log (an object every poll touches),
/// so every order is observable; without, each task has its own log. The
/// output (read after every task finished) is the logs.
type Logs = Rc<RefCell<Vec<Vec<usize>>>>;

fn program(
    tasks: usize,
    steps: usize,
    shared: bool,
) -> (Logs, impl std::future::Future<Output = ()>) {
    let logs: Logs = Rc::new(RefCell::new(vec![
        Vec::new();
        if shared { 1 } else { tasks }
    ]));
    let out = Rc::clone(&logs);
    let fut = async move {
        let objs: Vec<u64> = (0..logs.borrow().len()).map(|_| new_object()).collect();
        for t in 0..tasks {
            let slot = if shared { 0 } else { t };
            let obj = objs[slot];
            let logs = Rc::clone(&logs);
            spawn("worker", async move {
                for _ in 0..steps {
                    touch(obj);
                    logs.borrow_mut()[slot].push(t);
                    yield_now().await;
                }
            });
        }
    };
    (out, fut)
}

fn run(sim: &mut Sim, tasks: usize, steps: usize, shared: bool) -> Option<String> {
    let (logs, fut) = program(tasks, steps, shared);
    sim.block_on(fut).ok()?;
    let out = format!("{:?}", logs.borrow());
    Some(out)
}

struct Result {
    complete: u64,
    executions: u64,
    outcomes: BTreeSet<String>,
    plans: BTreeSet<Vec<usize>>,
    exhausted: bool,
}

fn search(config: DfsConfig, tasks: usize, steps: usize, shared: bool) -> Result {
    let mut dfs = Dfs::new(config);
    let mut outcomes = BTreeSet::new();
    let mut plans = BTreeSet::new();
    while let Some(s) = dfs.next_scheduler() {
        let mut sim = Sim::new(s, 10_000);
        let out = run(&mut sim, tasks, steps, shared);
        let plan = sim.choices().to_vec();
        match dfs.end_execution() {
            ExecKind::Complete => {
                outcomes.insert(out.expect("complete runs finish"));
                plans.insert(plan);
            }
            ExecKind::Nondeterministic(m) => panic!("nondeterministic: {m}"),
            ExecKind::Blocked | ExecKind::Foreign => {}
        }
    }
    let stats = dfs.stats();
    Result {
        complete: stats.complete,
        executions: stats.executions,
        outcomes,
        plans,
        exhausted: dfs.exhausted(),
    }
}

fn cfg(reduction: bool) -> DfsConfig {
    DfsConfig {
        reduction,
        ..DfsConfig::default()
    }
}

#[test]
fn independent_tasks_collapse_to_one_trace() {
    let full = search(cfg(false), 2, 3, false);
    let reduced = search(cfg(true), 2, 3, false);
    assert!(full.exhausted && reduced.exhausted);
    assert_eq!(reduced.complete, 1, "one Mazurkiewicz trace");
    assert!(
        full.complete > 20,
        "unreduced explores many: {}",
        full.complete
    );
    assert_eq!(full.outcomes, reduced.outcomes);
    assert_eq!(full.outcomes.len(), 1);
}

#[test]
fn shared_log_keeps_every_order() {
    // Two tasks, two appends each, to one log: C(4,2) = 6 orders.
    let full = search(cfg(false), 2, 2, true);
    let reduced = search(cfg(true), 2, 2, true);
    assert_eq!(reduced.outcomes.len(), 6, "{:?}", reduced.outcomes);
    assert_eq!(full.outcomes, reduced.outcomes);
    assert_eq!(reduced.complete, 6, "one complete run per order");
    assert!(full.complete >= reduced.complete);
}

#[test]
fn preemption_bound_limits_the_search() {
    let bounded = search(
        DfsConfig {
            reduction: false,
            preemption_bound: Some(0),
            ..DfsConfig::default()
        },
        2,
        2,
        true,
    );
    let full = search(cfg(false), 2, 2, true);
    assert!(bounded.exhausted);
    assert!(bounded.complete < full.complete);
    assert!(bounded.outcomes.is_subset(&full.outcomes));
}

#[test]
fn shards_partition_the_search() {
    for reduction in [false, true] {
        // A sharded DPOR search branches fully above the split depth.
        let whole = search(
            DfsConfig {
                full_top: true,
                split_depth: 2,
                ..cfg(reduction)
            },
            3,
            2,
            true,
        );
        let mut union = BTreeSet::new();
        let mut complete = 0;
        let mut executions = 0;
        for index in 0..3 {
            let part = search(
                DfsConfig {
                    reduction,
                    shard: Shard { index, count: 3 },
                    split_depth: 2,
                    ..DfsConfig::default()
                },
                3,
                2,
                true,
            );
            assert!(part.exhausted);
            assert!(part.plans.is_disjoint(&union), "shards overlap");
            union.extend(part.plans);
            complete += part.complete;
            executions += part.executions;
        }
        assert_eq!(union, whole.plans, "union of shards = whole search");
        assert_eq!(complete, whole.complete);
        assert_eq!(executions, whole.executions);
    }
}

#[test]
fn checkpoint_resume_continues_exactly() {
    // Source sets, and optimal DPOR (whose wakeup trees the checkpoint
    // must carry).
    let optimal = DfsConfig {
        optimal: true,
        ..cfg(true)
    };
    for config in [cfg(true), optimal] {
        let whole = search(config.clone(), 3, 2, true);
        // Run 5 executions, checkpoint, resume in a new search, finish.
        let mut dfs = Dfs::new(config.clone());
        let mut plans = BTreeSet::new();
        for _ in 0..5 {
            let s = dfs.next_scheduler().expect("not exhausted yet");
            let mut sim = Sim::new(s, 10_000);
            let _ = run(&mut sim, 3, 2, true);
            if dfs.end_execution() == ExecKind::Complete {
                plans.insert(sim.choices().to_vec());
            }
        }
        let json = dfs.checkpoint();
        drop(dfs);
        let mut dfs = Dfs::resume(&json).expect("resumes");
        while let Some(s) = dfs.next_scheduler() {
            let mut sim = Sim::new(s, 10_000);
            let _ = run(&mut sim, 3, 2, true);
            if dfs.end_execution() == ExecKind::Complete {
                plans.insert(sim.choices().to_vec());
            }
        }
        assert_eq!(plans, whole.plans, "{config:?}");
        assert_eq!(dfs.stats().complete, whole.complete, "{config:?}");
        assert_eq!(dfs.stats().executions, whole.executions, "{config:?}");
    }
    assert!(Dfs::resume("{not json").is_err());
}

/// A program that does not repeat itself under the same schedule is caught
/// on the recorded prefix, not silently explored.
#[test]
fn nondeterminism_is_detected() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    // Without DPOR, so the search re-runs the prefix where the runs differ.
    let mut dfs = Dfs::new(DfsConfig {
        dpor: false,
        ..cfg(true)
    });
    let mut seen = None;
    while let Some(s) = dfs.next_scheduler() {
        let mut sim = Sim::new(s, 1_000);
        // Await granularity: the extra spawn then shows in a ready set.
        sim.set_preemptive(false);
        let n = RUNS.fetch_add(1, Ordering::SeqCst);
        let _ = sim.block_on(async move {
            // Spawns one extra task on every other run: the ready sets differ.
            for _ in 0..(1 + n % 2) {
                spawn("w", async { yield_now().await });
            }
            yield_now().await;
        });
        if let ExecKind::Nondeterministic(m) = dfs.end_execution() {
            seen = Some(m);
            break;
        }
    }
    let m = seen.expect("nondeterminism was not detected");
    assert!(m.contains("ready tasks") || m.contains("touched"), "{m}");
}

/// Tasks in a ring: task `t` appends to log `t`, then to log `t + 1`, so
/// each pair of neighbours races on one log and the rest commute. Output:
/// every log's order.
fn ring(sim: &mut Sim, tasks: usize) -> Option<String> {
    let logs: Logs = Rc::new(RefCell::new(vec![Vec::new(); tasks]));
    let out = Rc::clone(&logs);
    sim.block_on(async move {
        let objs: Vec<u64> = (0..tasks).map(|_| new_object()).collect();
        for t in 0..tasks {
            let logs = Rc::clone(&logs);
            let objs = objs.clone();
            spawn("ring", async move {
                for slot in [t, (t + 1) % tasks] {
                    touch(objs[slot]);
                    logs.borrow_mut()[slot].push(t);
                    yield_now().await;
                }
            });
        }
    })
    .ok()?;
    let s = format!("{:?}", out.borrow());
    Some(s)
}

fn search_ring(config: DfsConfig, tasks: usize) -> (u64, BTreeSet<String>) {
    let mut dfs = Dfs::new(config);
    let mut outcomes = BTreeSet::new();
    while let Some(s) = dfs.next_scheduler() {
        let mut sim = Sim::new(s, 10_000);
        let out = ring(&mut sim, tasks);
        drop(sim);
        if dfs.end_execution() == ExecKind::Complete {
            outcomes.insert(out.expect("a complete run finishes"));
        }
    }
    assert!(dfs.exhausted());
    (dfs.stats().complete, outcomes)
}

/// Source-DPOR keeps every terminal state of the plain search and of the
/// sleep-set search, with no more complete runs than sleep sets alone.
#[test]
fn dpor_keeps_every_outcome_with_fewer_runs() {
    let (full_runs, full) = search_ring(cfg(false), 3);
    let (sleep_runs, sleep) = search_ring(
        DfsConfig {
            dpor: false,
            ..cfg(true)
        },
        3,
    );
    let (dpor_runs, dpor) = search_ring(cfg(true), 3);
    assert_eq!(full, sleep);
    assert_eq!(full, dpor);
    // Three logs with two writers each: 2^3 orders, less the one whose
    // "each task's second write comes first" would need a cycle.
    assert_eq!(dpor.len(), 7, "{dpor:?}");
    assert!(dpor_runs <= sleep_runs, "{dpor_runs} > {sleep_runs}");
    assert!(sleep_runs < full_runs);
}
