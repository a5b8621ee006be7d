//! Generated workloads for downstream code, as Lincheck does: declare the
//! operations (a proptest strategy) and a sequential model
//! ([`SequentialSpec`]); the harness generates concurrent workloads from
//! them, runs each as a [`RaceTest`] under a checker, and judges every
//! execution's history for linearizability against the model. A failing
//! workload is shrunk to the fewest threads and operations (proptest's
//! value trees), and printed with the replay line of its failing
//! execution.
//!
//! ```no_run
//! use lifecycle_harness::check::api::lincheck::{Lincheck, SequentialSpec, Target};
//! use lifecycle_harness::check::api::{RaceTest, Rig};
//! use lifecycle::rt::{BoxFuture, SimRt};
//! use lifecycle::scope::Scope;
//! use proptest::prelude::*;
//! use std::collections::BTreeSet;
//! use std::sync::Arc;
//!
//! /// Per execution: the rig and an owner, unloaded at the end.
//! struct Owner(Arc<Rig<SimRt>>, Scope<SimRt>);
//! impl Target for Owner {
//!     fn close(self: Arc<Self>) -> BoxFuture<()> {
//!         Box::pin(async move { self.1.unload().await })
//!     }
//! }
//!
//! /// Which ids are live: a create of a live id fails.
//! struct Live;
//! impl SequentialSpec for Live {
//!     type State = BTreeSet<u8>;
//!     type Op = u8;
//!     type Ret = bool;
//!     fn init(&self) -> BTreeSet<u8> { BTreeSet::new() }
//!     fn step(&self, s: &BTreeSet<u8>, id: &u8) -> Vec<(BTreeSet<u8>, bool)> {
//!         let mut n = s.clone();
//!         let created = n.insert(*id);
//!         vec![(n, created)]
//!     }
//! }
//!
//! #[test]
//! fn creates_are_linearizable() {
//!     Lincheck::new(RaceTest::new("creates_are_linearizable"), Live, 0u8..2)
//!         .dfs(
//!             // Per execution: the object under test, built from the rig.
//!             |rig: Arc<Rig<SimRt>>| Owner(rig.clone(), rig.owner("owner")),
//!             // One operation on it; its result is judged.
//!             |t: Arc<Owner>, id: u8| async move {
//!                 t.0.provider.create(&format!("a{id}"), &t.1).await.is_ok()
//!             },
//!         )
//!         .unwrap();
//! }
//! ```
//!
//! # Executions
//! Per execution, `setup` builds the object under test (a [`Target`])
//! from a fresh rig, and `run` performs one operation on it. After the
//! last operation of every thread, [`Target::close`] ends what they left
//! running; then the history is judged and the rig's oracles run.
//!
//! # Histories and the judge
//! A workload is 1 or more threads, each a list of operations. Thread 1
//! runs on the body's own task, the others on tasks named `thread 2`, ...
//! Each operation's invocation and response are recorded in one order
//! across the tasks as they happen (a lock of the test's own, not a
//! primitive of the runtime, so it adds no schedule). The judge is Wing
//! and Gong's search with Lowe's memo of (operations taken, model state):
//! it looks for an order of the operations that keeps real time (one that
//! responded before another was invoked comes first) in which the model,
//! stepped operation by operation, can give each the result it got. A
//! model may be nondeterministic: `step` returns every (next state,
//! result) pair it allows. No such order is a failure of the execution,
//! whatever the rig's own oracles say, with the history in its message.

use super::{Failure, RaceTest, Rig};
use crate::backends::ShuttleRt;
use crate::check::Report;
use crate::rt::{self, BoxFuture, Rt, SimRt};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use std::collections::BTreeSet;
use std::fmt::{self, Debug};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// The sequential specification of the operations: a state machine whose
/// steps say what each operation may return.
pub trait SequentialSpec: Send + Sync + 'static {
    /// The model's state (ordered, for the judge's memo).
    type State: Clone + Ord + Debug + Send;
    /// One operation, as the workload generator makes it.
    type Op: Clone + Debug + Send + Sync + 'static;
    /// What an operation returns.
    type Ret: Clone + Debug + PartialEq + Send + Sync + 'static;
    /// The initial state.
    fn init(&self) -> Self::State;
    /// Every (next state, result) that `op` may have in `state`; empty if
    /// it cannot happen there.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Vec<(Self::State, Self::Ret)>;
}

/// The object under test of one execution, built by `setup` from the rig.
pub trait Target: Send + Sync + 'static {
    /// After every thread's last operation, before the judge: end what the
    /// operations left running (unload an owner scope, dispose what is
    /// left), as any race test's body does. Nothing by default.
    fn close(self: Arc<Self>) -> BoxFuture<()> {
        Box::pin(async {})
    }
}

/// One generated workload: each thread's operations, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload<Op> {
    /// The threads.
    pub threads: Vec<Vec<Op>>,
}

impl<Op: Debug> Workload<Op> {
    /// Operations in all.
    pub fn ops(&self) -> usize {
        self.threads.iter().map(Vec::len).sum()
    }
}

impl<Op: Debug> fmt::Display for Workload<Op> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (t, ops) in self.threads.iter().enumerate() {
            if t > 0 {
                f.write_str("; ")?;
            }
            write!(f, "thread {}: {ops:?}", t + 1)?;
        }
        Ok(())
    }
}

/// One event of a history: operation `op` of `thread` was invoked, or
/// returned `ret`.
#[derive(Clone, Debug)]
pub enum Event<Ret> {
    /// Invoked.
    Call {
        /// The thread (from 0).
        thread: usize,
        /// Its index in the thread.
        op: usize,
    },
    /// Returned.
    Return {
        /// The thread (from 0).
        thread: usize,
        /// Its index in the thread.
        op: usize,
        /// What it returned.
        ret: Ret,
    },
}

/// A failure: the shrunk workload, and the race test's failure on it (its
/// rule, message and replay line).
#[derive(Debug)]
pub struct LinFailure<Op> {
    /// The smallest failing workload proptest reached.
    pub workload: Workload<Op>,
    /// The first workload that failed, before shrinking.
    pub original: Workload<Op>,
    /// The failure of the race test on `workload`.
    pub failure: Failure,
}

impl<Op: Debug> fmt::Display for LinFailure<Op> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\nworkload ({} threads, {} operations; shrunk from {}): {}\nreplay: Lincheck::replay(&workload, line, run) with that workload and line '{}'",
            self.failure,
            self.workload.threads.len(),
            self.workload.ops(),
            self.original.ops(),
            self.workload,
            self.failure.replay
        )
    }
}

/// What passed: the workloads judged and the executions run.
#[derive(Clone, Debug, Default)]
pub struct LinReport {
    /// Workloads generated and explored.
    pub workloads: u64,
    /// Executions, each one history judged.
    pub executions: u64,
    /// Workloads whose exploration was exhaustive (sim-dfs).
    pub exhausted: u64,
}

/// A generated-workload test: see the module docs.
pub struct Lincheck<S: SequentialSpec> {
    test: RaceTest,
    spec: Arc<S>,
    ops: BoxedStrategy<S::Op>,
    threads: (usize, usize),
    ops_per_thread: (usize, usize),
    workloads: u32,
}

impl<S: SequentialSpec> Lincheck<S> {
    /// Workloads of `ops` judged against `spec`, each run as `test` (its
    /// name, rig parts, faults and budget per workload). By default 2–3
    /// threads of 1–3 operations, 16 workloads.
    pub fn new(test: RaceTest, spec: S, ops: impl Strategy<Value = S::Op> + 'static) -> Self {
        Lincheck {
            test,
            spec: Arc::new(spec),
            ops: ops.boxed(),
            threads: (2, 3),
            ops_per_thread: (1, 3),
            workloads: 16,
        }
    }

    /// Between `min` and `max` threads per workload (at least 1).
    pub fn threads(mut self, min: usize, max: usize) -> Self {
        self.threads = (min.max(1), max.max(min.max(1)));
        self
    }

    /// Between `min` and `max` operations per thread.
    pub fn ops_per_thread(mut self, min: usize, max: usize) -> Self {
        self.ops_per_thread = (min, max.max(min));
        self
    }

    /// How many workloads to generate (proptest's cases).
    pub fn workloads(mut self, n: u32) -> Self {
        self.workloads = n;
        self
    }

    /// Explore each workload with the simulator's seeded portfolio.
    pub fn sim<T, Set, F, Fut>(&self, setup: Set, run: F) -> Result<LinReport, LinFailure<S::Op>>
    where
        T: Target,
        Set: Fn(Arc<Rig<SimRt>>) -> T + Send + Sync + 'static,
        F: Fn(Arc<T>, S::Op) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Ret> + Send + 'static,
    {
        let (setup, run) = (Arc::new(setup), Arc::new(run));
        self.search(|t, w| t.sim(self.body::<SimRt, _, _, _, _>(w, setup.clone(), run.clone())))
    }

    /// Explore each workload with sim-dfs (exhaustive at lock granularity
    /// within the test's budget).
    pub fn dfs<T, Set, F, Fut>(&self, setup: Set, run: F) -> Result<LinReport, LinFailure<S::Op>>
    where
        T: Target,
        Set: Fn(Arc<Rig<SimRt>>) -> T + Send + Sync + 'static,
        F: Fn(Arc<T>, S::Op) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Ret> + Send + 'static,
    {
        let (setup, run) = (Arc::new(setup), Arc::new(run));
        self.search(|t, w| t.dfs(self.body::<SimRt, _, _, _, _>(w, setup.clone(), run.clone())))
    }

    /// Explore each workload with shuttle's random scheduler.
    pub fn shuttle<T, Set, F, Fut>(
        &self,
        setup: Set,
        run: F,
    ) -> Result<LinReport, LinFailure<S::Op>>
    where
        T: Target,
        Set: Fn(Arc<Rig<ShuttleRt>>) -> T + Send + Sync + 'static,
        F: Fn(Arc<T>, S::Op) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Ret> + Send + 'static,
    {
        let (setup, run) = (Arc::new(setup), Arc::new(run));
        self.search(|t, w| {
            t.shuttle(self.body::<ShuttleRt, _, _, _, _>(w, setup.clone(), run.clone()))
        })
    }

    /// Replay one line a failure printed, on its workload, with the same
    /// `setup` and `run`.
    pub fn replay<R: Rt, T, Set, F, Fut>(
        &self,
        workload: &Workload<S::Op>,
        line: &str,
        setup: Set,
        run: F,
    ) -> Result<(), Failure>
    where
        T: Target,
        Set: Fn(Arc<Rig<R>>) -> T + Send + Sync + 'static,
        F: Fn(Arc<T>, S::Op) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Ret> + Send + 'static,
    {
        let body = self.body::<R, _, _, _, _>(workload.clone(), Arc::new(setup), Arc::new(run));
        self.test.replay(line, body)
    }

    /// Generate the workloads, explore each with `explore`, and shrink the
    /// first that fails.
    fn search(
        &self,
        explore: impl Fn(&RaceTest, Workload<S::Op>) -> Result<Report, Failure>,
    ) -> Result<LinReport, LinFailure<S::Op>> {
        let config = Config {
            cases: self.workloads,
            failure_persistence: None,
            ..Config::default()
        };
        // A fixed seed: the same workloads on every machine and run.
        let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
        let mut runner = TestRunner::new_with_rng(config, rng);
        let per_thread = self.ops_per_thread.0..=self.ops_per_thread.1;
        let strategy = proptest::collection::vec(
            proptest::collection::vec(self.ops.clone(), per_thread),
            self.threads.0..=self.threads.1,
        );
        let report = Mutex::new(LinReport::default());
        let first = Mutex::new(None);
        let outcome = runner.run(&strategy, |threads| {
            let workload = Workload { threads };
            match explore(&self.test, workload.clone()) {
                Ok(r) => {
                    let mut sum = lock(&report);
                    sum.workloads += 1;
                    sum.executions += r.executions;
                    sum.exhausted += u64::from(r.exhausted);
                    Ok(())
                }
                Err(failure) => {
                    lock(&first).get_or_insert(workload);
                    Err(TestCaseError::fail(failure.to_string()))
                }
            }
        });
        match outcome {
            Ok(()) => Ok(lock(&report).clone()),
            Err(TestError::Fail(_, threads)) => {
                let workload = Workload { threads };
                let original = lock(&first).clone().unwrap_or_else(|| workload.clone());
                let failure = explore(&self.test, workload.clone()).expect_err(
                    "proptest's minimal workload fails again (the checkers are deterministic)",
                );
                Err(LinFailure {
                    workload,
                    original,
                    failure,
                })
            }
            Err(TestError::Abort(why)) => panic!("proptest aborted the search: {why}"),
        }
    }

    /// The race test's body for `workload`: one task per thread, each
    /// running its operations through `run` and recording the history,
    /// then the judge.
    fn body<R: Rt, T, Set, F, Fut>(
        &self,
        workload: Workload<S::Op>,
        setup: Arc<Set>,
        run: Arc<F>,
    ) -> impl Fn(Arc<Rig<R>>) -> BoxFuture<()> + Send + Sync + 'static
    where
        T: Target,
        Set: Fn(Arc<Rig<R>>) -> T + Send + Sync + 'static,
        F: Fn(Arc<T>, S::Op) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Ret> + Send + 'static,
    {
        let (spec, workload) = (self.spec.clone(), Arc::new(workload));
        move |rig: Arc<Rig<R>>| {
            let (spec, workload, run) = (spec.clone(), workload.clone(), run.clone());
            let target = Arc::new(setup(rig));
            Box::pin(async move {
                let history = Arc::new(Mutex::new(Vec::new()));
                let thread = |t: usize| {
                    let (ops, target, run) =
                        (workload.threads[t].clone(), target.clone(), run.clone());
                    let history = history.clone();
                    async move {
                        for (op, o) in ops.into_iter().enumerate() {
                            lock(&history).push(Event::Call { thread: t, op });
                            let ret = run(target.clone(), o).await;
                            lock(&history).push(Event::Return { thread: t, op, ret });
                        }
                    }
                };
                let others: Vec<_> = (1..workload.threads.len())
                    .map(|t| rt::spawn::<R, ()>(&format!("thread {}", t + 1), thread(t)))
                    .collect();
                if !workload.threads.is_empty() {
                    thread(0).await;
                }
                for h in others {
                    h.join().await;
                }
                target.close().await;
                let history = lock(&history).clone();
                if let Err(why) = judge(&*spec, &workload, &history) {
                    panic!("{why}");
                }
            })
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One operation of a history, with where its invocation and response
/// fall in the history's order.
struct Done<'a, Op, Ret> {
    op: &'a Op,
    call: usize,
    ret: Option<(usize, &'a Ret)>,
}

/// Linearizability of `history` (complete or not: an operation with no
/// response may take effect or not) against `spec`: `Err` with the history
/// rendered when no order of the operations explains it.
pub fn judge<S: SequentialSpec>(
    spec: &S,
    workload: &Workload<S::Op>,
    history: &[Event<S::Ret>],
) -> Result<(), String> {
    let mut done: Vec<Done<'_, S::Op, S::Ret>> = Vec::new();
    let mut index = Vec::new();
    for (at, e) in history.iter().enumerate() {
        match e {
            Event::Call { thread, op } => {
                index.push((*thread, *op, done.len()));
                done.push(Done {
                    op: &workload.threads[*thread][*op],
                    call: at,
                    ret: None,
                });
            }
            Event::Return { thread, op, ret } => {
                if let Some(&(_, _, i)) = index.iter().find(|(t, o, _)| t == thread && o == op) {
                    done[i].ret = Some((at, ret));
                }
            }
        }
    }
    assert!(
        done.len() <= 64,
        "the judge takes at most 64 operations per history"
    );
    let mut seen = BTreeSet::new();
    if linearize(spec, &done, 0, spec.init(), &mut seen) {
        return Ok(());
    }
    let rendered: Vec<String> = history
        .iter()
        .map(|e| match e {
            Event::Call { thread, op } => {
                format!("t{} calls {:?}", thread + 1, workload.threads[*thread][*op])
            }
            Event::Return { thread, op, ret } => {
                format!(
                    "t{} {:?} -> {ret:?}",
                    thread + 1,
                    workload.threads[*thread][*op]
                )
            }
        })
        .collect();
    Err(format!(
        "not linearizable: no order of the operations that keeps real time gives each the result it got from the sequential model; history: {}",
        rendered.join(", ")
    ))
}

/// Wing and Gong's search: `taken` is the set of operations already
/// placed, `state` the model's state after them. An operation may go next
/// if it was invoked before every untaken operation's response.
fn linearize<S: SequentialSpec>(
    spec: &S,
    done: &[Done<'_, S::Op, S::Ret>],
    taken: u64,
    state: S::State,
    seen: &mut BTreeSet<(u64, S::State)>,
) -> bool {
    let open = |i: usize| taken & (1 << i) == 0;
    // Complete once every operation that responded is placed (one that
    // never responded may have taken no effect).
    if (0..done.len()).all(|i| !open(i) || done[i].ret.is_none()) {
        return true;
    }
    if !seen.insert((taken, state.clone())) {
        return false;
    }
    let first_return = (0..done.len())
        .filter(|&i| open(i))
        .filter_map(|i| done[i].ret.map(|(at, _)| at))
        .min()
        .unwrap_or(usize::MAX);
    for i in (0..done.len()).filter(|&i| open(i) && done[i].call < first_return) {
        for (next, ret) in spec.step(&state, done[i].op) {
            let fits = done[i].ret.is_none_or(|(_, got)| *got == ret);
            if fits && linearize(spec, done, taken | (1 << i), next, seen) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register: write(v) returns nothing, read returns the value.
    struct Register;
    #[derive(Clone, Debug, PartialEq)]
    enum Op {
        Write(u8),
        Read,
    }
    impl SequentialSpec for Register {
        type State = u8;
        type Op = Op;
        type Ret = Option<u8>;
        fn init(&self) -> u8 {
            0
        }
        fn step(&self, s: &u8, op: &Op) -> Vec<(u8, Option<u8>)> {
            match op {
                Op::Write(v) => vec![(*v, None)],
                Op::Read => vec![(*s, Some(*s))],
            }
        }
    }

    fn w() -> Workload<Op> {
        Workload {
            threads: vec![vec![Op::Write(1)], vec![Op::Read]],
        }
    }

    fn call(thread: usize) -> Event<Option<u8>> {
        Event::Call { thread, op: 0 }
    }

    fn ret(thread: usize, ret: Option<u8>) -> Event<Option<u8>> {
        Event::Return { thread, op: 0, ret }
    }

    #[test]
    fn overlapping_operations_may_take_effect_in_either_order() {
        for read in [0, 1] {
            let h = [call(0), call(1), ret(1, Some(read)), ret(0, None)];
            assert!(judge(&Register, &w(), &h).is_ok(), "read {read}");
        }
    }

    #[test]
    fn real_time_order_is_kept() {
        // The write returned before the read began: the read must see it.
        let h = [call(0), ret(0, None), call(1), ret(1, Some(0))];
        let why = judge(&Register, &w(), &h).unwrap_err();
        assert!(why.contains("t2 Read -> Some(0)"), "{why}");
        let h = [call(0), ret(0, None), call(1), ret(1, Some(1))];
        assert!(judge(&Register, &w(), &h).is_ok());
    }

    #[test]
    fn a_value_no_write_made_is_refused() {
        let h = [call(0), call(1), ret(1, Some(7)), ret(0, None)];
        assert!(judge(&Register, &w(), &h).is_err());
    }

    #[test]
    fn an_operation_without_a_response_may_or_may_not_have_taken_effect() {
        for read in [0, 1] {
            let h = [call(0), call(1), ret(1, Some(read))];
            assert!(judge(&Register, &w(), &h).is_ok(), "read {read}");
        }
    }
}
