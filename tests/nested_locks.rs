//! Nested lock sections on the simulator backend, as on a preemptive
//! runtime (and as loom and shuttle interleave them): a task that holds one
//! lock may be preempted where it takes the next; meanwhile another task
//! may run sections on other locks, and a task that wants the held lock
//! blocks until it is released. The exhaustive search explores all of it.

use lifecycle::rt::{Mutex, SimRt};
use lifecycle_sim::{spawn, Dfs, DfsConfig, ExecKind, Sim};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

/// Task `a` runs a section on `outer` that takes `first` and then
/// `second` inside it, logging `a1`/`a2`; task `b` logs `b` in a section on
/// `first` and `second` (not `outer`); task `c` logs `c` in a section on
/// `outer`. Every terminal log, over the whole search.
fn logs() -> (BTreeSet<String>, u64) {
    let mut dfs = Dfs::new(DfsConfig::default());
    let mut seen = BTreeSet::new();
    while let Some(s) = dfs.next_scheduler() {
        let log = Rc::new(RefCell::new(Vec::<&'static str>::new()));
        let out = Rc::clone(&log);
        let mut sim = Sim::new(s, 10_000);
        sim.block_on(async move {
            let outer = Arc::new(Mutex::<SimRt, Vec<&'static str>>::new(Vec::new()));
            let first = Arc::new(Mutex::<SimRt, Vec<&'static str>>::new(Vec::new()));
            let second = Arc::new(Mutex::<SimRt, Vec<&'static str>>::new(Vec::new()));
            let (o, f, s2, l) = (outer.clone(), first.clone(), second.clone(), log.clone());
            spawn("a", async move {
                o.with(|_| {
                    f.with(|_| l.borrow_mut().push("a1"));
                    s2.with(|_| l.borrow_mut().push("a2"));
                });
            });
            let (f, s2, l) = (first.clone(), second.clone(), log.clone());
            spawn("b", async move {
                f.with(|_| s2.with(|_| l.borrow_mut().push("b")));
            });
            let (o, l) = (outer.clone(), log.clone());
            spawn("c", async move {
                o.with(|_| l.borrow_mut().push("c"));
            });
        })
        .expect("the program finishes without a stall");
        match dfs.end_execution() {
            ExecKind::Complete => {
                seen.insert(out.borrow().join(" "));
            }
            ExecKind::Nondeterministic(m) => panic!("nondeterministic: {m}"),
            ExecKind::Blocked | ExecKind::Foreign => {}
        }
    }
    assert!(dfs.exhausted());
    (seen, dfs.stats().complete)
}

#[test]
fn a_task_is_preempted_between_nested_sections_and_others_wait_for_its_lock() {
    let (seen, complete) = logs();
    // `b` runs between `a`'s two inner sections while `a` holds `outer`.
    assert!(seen.iter().any(|l| l.contains("a1 b a2")), "{seen:?}");
    // `c` needs `outer`: never between `a1` and `a2`.
    assert!(seen.iter().all(|l| !l.contains("a1 c")), "{seen:?}");
    // `c` may take `outer` first, and `b` may go before `a` starts.
    assert!(seen.iter().any(|l| l.starts_with('c')), "{seen:?}");
    assert!(seen.iter().any(|l| l.starts_with('b')), "{seen:?}");
    // The log itself is no tracked object, so orders of independent
    // sections count once: fewer complete runs than orders of the log.
    assert!(complete as usize >= seen.len(), "{complete} runs, {seen:?}");
}
