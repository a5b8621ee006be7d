//! Generated workloads for downstream code (`check::api::lincheck`), as a
//! user of this crate writes them: operations and a sequential model of
//! the provider (create, is it live, the owner's unload), workloads generated and
//! shrunk by proptest, every history judged for linearizability.

use lifecycle::rt::{BoxFuture, Rt, SimRt};
use lifecycle::scope::Scope;
use lifecycle_harness::backends::ShuttleRt;
use lifecycle_harness::check::api::lincheck::{Lincheck, SequentialSpec, Target};
use lifecycle_harness::check::api::{Broken, RaceTest, Rig};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::oracle::RuleId;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Create(u8),
    Live(u8),
    Unload,
}

#[derive(Clone, Debug, PartialEq)]
enum Ret {
    Created(bool),
    Live(bool),
    Unloaded,
}

/// The provider under one owner scope, sequentially: a create of a live
/// id fails (R1); the owner's unload ends every agent it owns before it
/// returns, and every create after it fails (R3); `Live` asks the
/// registry, which never shows an agent that is not live. A create claims
/// its id before it publishes its agent, so a create's refusal is
/// linearized at the other's claim, while the registry shows that agent
/// only once published: `Live` of a live id may answer either way.
struct Provider;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct State {
    live: BTreeSet<u8>,
    unloaded: bool,
}

impl SequentialSpec for Provider {
    type State = State;
    type Op = Op;
    type Ret = Ret;

    fn init(&self) -> State {
        State {
            live: BTreeSet::new(),
            unloaded: false,
        }
    }

    fn step(&self, s: &State, op: &Op) -> Vec<(State, Ret)> {
        let mut next = s.clone();
        let ret = match *op {
            Op::Create(k) => Ret::Created(!s.unloaded && next.live.insert(k)),
            Op::Live(k) if s.live.contains(&k) => {
                return vec![(next.clone(), Ret::Live(true)), (next, Ret::Live(false))]
            }
            Op::Live(_) => Ret::Live(false),
            Op::Unload => {
                next.live.clear();
                next.unloaded = true;
                Ret::Unloaded
            }
        };
        vec![(next, ret)]
    }
}

fn ops() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..2).prop_map(Op::Create),
        2 => (0u8..2).prop_map(Op::Live),
        1 => Just(Op::Unload),
    ]
}

/// The object under test, per execution: the rig's provider and an owner.
struct Agents<R: Rt> {
    rig: Arc<Rig<R>>,
    owner: Scope<R>,
}

impl<R: Rt> Target for Agents<R> {
    /// The owner's unload disposes every agent still live.
    fn close(self: Arc<Self>) -> BoxFuture<()> {
        Box::pin(async move { self.owner.unload().await })
    }
}

fn setup<R: Rt>(rig: Arc<Rig<R>>) -> Agents<R> {
    Agents {
        owner: rig.owner("owner"),
        rig,
    }
}

async fn run<R: Rt>(t: Arc<Agents<R>>, op: Op) -> Ret {
    let id = |k: u8| format!("a{k}");
    match op {
        Op::Create(k) => Ret::Created(t.rig.provider.create(&id(k), &t.owner).await.is_ok()),
        Op::Live(k) => Ret::Live(t.rig.registry.get(&id(k)).is_some()),
        Op::Unload => {
            t.owner.unload().await;
            Ret::Unloaded
        }
    }
}

fn lincheck(name: &'static str, faults: Faults) -> Lincheck<Provider> {
    let test = RaceTest::new(name).faults(faults).executions(300);
    Lincheck::new(test, Provider, ops()).workloads(12)
}

#[test]
fn the_providers_histories_are_linearizable_on_every_checker() {
    let name = "the_providers_histories_are_linearizable_on_every_checker";
    let l = lincheck(name, Faults::none());
    let dfs = l.dfs(setup::<SimRt>, run::<SimRt>).unwrap();
    eprintln!("lincheck: {dfs:?}");
    assert_eq!(dfs.workloads, 12, "{dfs:?}");
    assert!(dfs.executions > dfs.workloads, "{dfs:?}");
    l.sim(setup::<SimRt>, run::<SimRt>).unwrap();
    l.shuttle(setup::<ShuttleRt>, run::<ShuttleRt>).unwrap();
}

#[test]
fn a_planted_fault_is_found_shrunk_and_replayed() {
    // M9: enter does not recheck for a duplicate live id, so two creates
    // of one id may both succeed, which no order of the model allows.
    let name = "a_planted_fault_is_found_shrunk_and_replayed";
    let l = lincheck(name, Faults::none().with(Fault::M9));
    let found = l.dfs(setup::<SimRt>, run::<SimRt>).unwrap_err();
    let shown = found.to_string();
    assert!(shown.contains("not linearizable"), "{shown}");
    assert_eq!(found.failure.rule, Broken::Rule(RuleId::Panic), "{shown}");
    // Shrunk to the race itself: two threads, one create of one id each.
    assert!(found.workload.ops() <= found.original.ops(), "{shown}");
    let creates = |k| vec![vec![Op::Create(k)], vec![Op::Create(k)]];
    assert!(
        found.workload.threads == creates(0) || found.workload.threads == creates(1),
        "{shown}"
    );
    // The printed line replays the failure on the shrunk workload.
    let again = l
        .replay(
            &found.workload,
            &found.failure.replay,
            setup::<SimRt>,
            run::<SimRt>,
        )
        .unwrap_err();
    assert_eq!(again.message, found.failure.message);
}
