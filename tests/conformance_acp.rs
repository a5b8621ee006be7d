//! Conformance of the ACP bridge (SPEC A1–A8): random sequences of
//! `session/new`, `session/load`, `session/prompt`, `session/cancel`,
//! client disconnect and bridge unload (including a close that lands while
//! a `session/new` or `session/load` awaits its agent, or while a prompt is
//! queued) run on the implementation (on the simulator) and on
//! `lifecycle_models::acp::AcpModel`, the reference. After every operation
//! the answers, the bridge's sessions, what is left registered (A1) and the
//! number of quiesce runs (A6) must agree.
//!
//! Callers that give up (D8): a `session/prompt`, `session/load`,
//! disconnect or unload whose future is dropped after its first poll; the
//! next call must find nothing wedged, skipped or repeated (the model takes
//! the pair as the one call that completes). A `session/new` dropped on a
//! second connection (a side bridge, so the model's session ids stay
//! aligned) must publish nothing. And a prompt on a second connection over
//! a disk that fails must answer a storage error (D10); the model has no
//! disk, so the test fixes that answer.

use lifecycle_testkit::conformance;

use conformance::{manual, Driver};
use lifecycle::acp::{AcpError, Bridge, StopReason};
use lifecycle::rt::SimRt;
use lifecycle::store::durable::{DiskFault, Durable, MemoryDurable};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::scenarios::rig::Rig;
use lifecycle_models::acp::{
    AcpAction as A, AcpError as MErr, AcpModel, AcpState, Call, PromptState,
};
use lifecycle_models::Model;
use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};
use std::rc::Rc;
use std::sync::Arc;

#[derive(Clone, Debug)]
enum Op {
    New,
    /// `session/new` in flight when the connection closes.
    NewRacingClose {
        unload: bool,
    },
    Load,
    /// `session/load` in flight when the connection closes.
    LoadRacingClose {
        unload: bool,
    },
    Prompt(u8),
    /// A queued prompt, then `session/cancel` (A2).
    PromptThenCancel(u8),
    /// A queued prompt, then the connection closes (A4).
    PromptThenClose {
        session: u8,
        unload: bool,
    },
    /// A second prompt while one is in flight (A8).
    PromptTwice(u8),
    CancelUnknown,
    Close {
        unload: bool,
    },
    /// `session/prompt` whose caller drops its future once the prompt is
    /// queued; every task runs; then a second prompt (D8).
    DropPrompt(u8),
    /// `session/load` whose caller drops its future while it awaits the
    /// resume; every task runs; then the load again (D8).
    DropLoad,
    /// On a side bridge: `session/new` dropped while it awaits creation,
    /// then a `session/new` that completes, then the side bridge's unload
    /// (D8).
    DropNew,
    /// A disconnect or unload whose caller drops its future mid-quiesce;
    /// every task runs; then the same close again (D8, A6).
    DropClose {
        unload: bool,
    },
    /// On a side bridge over a disk that fails the prompt's first write: a
    /// prompt answers a storage error (D10).
    PromptOnFailingDisk,
}

#[derive(Clone, Debug)]
struct Ref {
    s: AcpState,
    answer: Vec<String>,
}

fn model() -> AcpModel {
    AcpModel {
        fault: None,
        calls_max: [u8::MAX; 5],
    }
}

fn act(s: AcpState, a: A) -> AcpState {
    model()
        .next_state(&s, a.clone())
        .unwrap_or_else(|| panic!("{a:?} not enabled in {s:#?}"))
}

fn close(s: AcpState, unload: bool) -> AcpState {
    let mut s = act(s, if unload { A::Unload } else { A::Disconnect });
    while let Some(&x) = s.disposing.first() {
        s = act(s, A::DisposeDone(x));
    }
    s
}

/// Every agent loop runs: queued prompts of live sessions complete.
fn settle(mut s: AcpState) -> AcpState {
    for x in 0..2u8 {
        if let Some(n) = model().next_state(&s, A::TurnStart(x)) {
            s = act(n, A::TurnEnd(x));
        }
    }
    s
}

fn merr(e: MErr) -> String {
    match e {
        MErr::Disposed => "disposed",
        MErr::ClosedDuringNew => "closed-during-new",
        MErr::ClosedDuringLoad => "closed-during-load",
        MErr::AlreadyLoaded => "already-loaded",
        MErr::ClosedDuringReplay => "closed-during-replay",
    }
    .into()
}

fn call_answer(c: Call) -> String {
    match c {
        Call::Done(Ok(x)) => format!("ok {}", sid(x)),
        Call::Done(Err(e)) => merr(e),
        other => panic!("call not answered: {other:?}"),
    }
}

fn prompt_answer(p: PromptState) -> String {
    match p {
        PromptState::EndTurn => "end_turn".into(),
        PromptState::Cancelled => "cancelled".into(),
        other => panic!("prompt not answered: {other:?}"),
    }
}

fn sid(x: u8) -> &'static str {
    ["old", "sess-1"][x as usize]
}

struct AcpRef;

impl ReferenceStateMachine for AcpRef {
    type State = Ref;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Ref> {
        Just(Ref {
            s: model().init(),
            answer: vec![],
        })
        .boxed()
    }

    fn transitions(r: &Ref) -> BoxedStrategy<Op> {
        // Only operations the state allows (so nothing is rejected).
        let s = &r.s;
        let mut ops: Vec<(u32, BoxedStrategy<Op>)> = vec![
            (1, Just(Op::CancelUnknown).boxed()),
            (
                1,
                any::<bool>()
                    .prop_map(|unload| Op::Close { unload })
                    .boxed(),
            ),
            (
                1,
                any::<bool>()
                    .prop_map(|unload| Op::DropClose { unload })
                    .boxed(),
            ),
            (1, Just(Op::DropNew).boxed()),
            (1, Just(Op::PromptOnFailingDisk).boxed()),
        ];
        if s.new_call == Call::Idle {
            ops.push((2, Just(Op::New).boxed()));
            ops.push((
                2,
                any::<bool>()
                    .prop_map(|unload| Op::NewRacingClose { unload })
                    .boxed(),
            ));
        }
        if s.loads.contains(&Call::Idle) {
            ops.push((2, Just(Op::Load).boxed()));
            ops.push((
                2,
                any::<bool>()
                    .prop_map(|unload| Op::LoadRacingClose { unload })
                    .boxed(),
            ));
            ops.push((1, Just(Op::DropLoad).boxed()));
        }
        if !s.records.is_empty() {
            let sessions = proptest::sample::select(s.records.clone());
            ops.push((3, sessions.clone().prop_map(Op::Prompt).boxed()));
            ops.push((2, sessions.clone().prop_map(Op::PromptThenCancel).boxed()));
            ops.push((1, sessions.clone().prop_map(Op::PromptTwice).boxed()));
            ops.push((1, sessions.clone().prop_map(Op::DropPrompt).boxed()));
            ops.push((
                1,
                (sessions, any::<bool>())
                    .prop_map(|(session, unload)| Op::PromptThenClose { session, unload })
                    .boxed(),
            ));
        }
        proptest::strategy::Union::new_weighted(ops).boxed()
    }

    fn preconditions(r: &Ref, op: &Op) -> bool {
        let s = &r.s;
        match *op {
            Op::New | Op::NewRacingClose { .. } => s.new_call == Call::Idle,
            Op::Load | Op::LoadRacingClose { .. } | Op::DropLoad => s.loads.contains(&Call::Idle),
            Op::Prompt(x)
            | Op::PromptThenCancel(x)
            | Op::PromptTwice(x)
            | Op::DropPrompt(x)
            | Op::PromptThenClose { session: x, .. } => s.records.contains(&x),
            Op::CancelUnknown
            | Op::Close { .. }
            | Op::DropClose { .. }
            | Op::DropNew
            | Op::PromptOnFailingDisk => true,
        }
    }

    fn apply(r: Ref, op: &Op) -> Ref {
        let s = r.s;
        let k = s.loads.iter().position(|c| *c == Call::Idle).unwrap_or(0) as u8;
        let (s, answer) = match *op {
            Op::New | Op::NewRacingClose { .. } => {
                let mut s = act(s, A::NewBegin);
                if let Op::NewRacingClose { unload } = *op {
                    s = close(s, unload);
                }
                if s.new_call == Call::InFlight {
                    s = act(s, A::NewCreated);
                }
                let a = vec![call_answer(s.new_call)];
                (s, a)
            }
            Op::Load | Op::LoadRacingClose { .. } | Op::DropLoad => {
                let mut s = act(s, A::LoadBegin(k));
                if let Op::LoadRacingClose { unload } = *op {
                    s = close(s, unload);
                }
                if s.loads[k as usize] == Call::InFlight {
                    s = act(s, A::LoadResumed(k));
                }
                // The replay ends before the load answers (A9).
                if s.loads[k as usize] == Call::Replaying {
                    s = act(s, A::LoadReplayed(k));
                }
                let a = vec![call_answer(s.loads[k as usize])];
                (s, a)
            }
            Op::Prompt(x)
            | Op::PromptThenCancel(x)
            | Op::PromptTwice(x)
            | Op::PromptThenClose { session: x, .. } => {
                let at = s.prompts.len();
                let mut s = act(s, A::Prompt(x));
                let mut extra = vec![];
                match *op {
                    Op::PromptThenCancel(_) => s = act(s, A::Cancel(x)),
                    Op::PromptThenClose { unload, .. } => s = close(s, unload),
                    Op::PromptTwice(_) => {
                        s = act(s, A::Prompt(x));
                        extra.push("in-flight".to_string());
                    }
                    _ => {}
                }
                let s = settle(s);
                let mut a = vec![prompt_answer(s.prompts[at].state)];
                a.extend(extra);
                (s, a)
            }
            Op::DropPrompt(x) => {
                // The dropped prompt was accepted: it runs to its end. The
                // next prompt is answered as if nothing had been dropped.
                let s = settle(act(s, A::Prompt(x)));
                let at = s.prompts.len();
                let s = settle(act(s, A::Prompt(x)));
                let a = vec![prompt_answer(s.prompts[at].state)];
                (s, a)
            }
            Op::CancelUnknown => (act(s, A::CancelUnknown), vec![]),
            Op::Close { unload } | Op::DropClose { unload } => (close(s, unload), vec![]),
            Op::DropNew => (
                s,
                vec![
                    "first: pending".to_string(),
                    "left []".to_string(),
                    "ok side-2".to_string(),
                    "left []".to_string(),
                ],
            ),
            Op::PromptOnFailingDisk => {
                (s, vec!["storage error".to_string(), "left []".to_string()])
            }
        };
        Ref {
            s: settle(s),
            answer,
        }
    }
}

struct Sut {
    d: Driver,
    rig: Rc<Rig<SimRt>>,
    bridge: Arc<Bridge<SimRt>>,
    faults: Faults,
}

/// Drop a future polled by hand, inside the simulation (its guards may take
/// the implementation's locks), then run every task until nothing can move.
fn give_up<T: 'static>(d: &mut Driver, m: conformance::Manual<T>) {
    d.run(move || drop(m.borrow_mut().take()));
    d.settle();
}

/// A bridge on a second connection to the same provider: its session ids
/// (`side-1`, ...) are not the model's.
fn side_bridge(sut: &mut Sut) -> Arc<Bridge<SimRt>> {
    let rig = sut.rig.clone();
    sut.d
        .run(move || Bridge::with_prefix(rig.provider.clone(), rig.owner("acp-side"), "side-"))
}

fn ierr(e: AcpError) -> String {
    match e {
        AcpError::Disposed => "disposed".into(),
        AcpError::ClosedDuringNew => "closed-during-new".into(),
        AcpError::ClosedDuringLoad => "closed-during-load".into(),
        AcpError::AlreadyLoaded(_) => "already-loaded".into(),
        AcpError::PromptInFlight(_) => "in-flight".into(),
        AcpError::UnknownSession(id) => format!("unknown {id}"),
        AcpError::Create(e) => format!("create: {e}"),
        AcpError::Storage(e) => format!("storage: {e}"),
        AcpError::ClosedDuringReplay(_) => "closed-during-replay".into(),
        AcpError::LogInUse(_) => "log-in-use".into(),
        AcpError::TooManySessions => "too-many-sessions".into(),
    }
}

fn answer_of(r: Result<String, AcpError>) -> String {
    match r {
        Ok(id) => format!("ok {id}"),
        Err(e) => ierr(e),
    }
}

fn stop_of(r: Result<StopReason, AcpError>) -> String {
    match r {
        Ok(StopReason::EndTurn) => "end_turn".into(),
        Ok(StopReason::Cancelled) => "cancelled".into(),
        Err(e) => ierr(e),
    }
}

/// The test, with the implementation's fault `FAULT` (0: none, 7: M7, 8: M8).
struct AcpConformance<const FAULT: u8>;

impl<const FAULT: u8> StateMachineTest for AcpConformance<FAULT> {
    type SystemUnderTest = Sut;
    type Reference = AcpRef;

    fn init_test(_: &Ref) -> Sut {
        let faults = match FAULT {
            7 => Faults::none().with(Fault::M7),
            8 => Faults::none().with(Fault::M8),
            _ => Faults::none(),
        };
        let mut d = Driver::new();
        let rig = Rc::new(d.run(move || Rig::<SimRt>::new(faults, None)));
        let r = rig.clone();
        let bridge = d.run(move || Bridge::new(r.provider.clone(), r.owner("acp")));
        Sut {
            d,
            rig,
            bridge,
            faults,
        }
    }

    fn apply(mut sut: Sut, r: &Ref, op: Op) -> Sut {
        let b = sut.bridge.clone();
        let closer = |b: Arc<Bridge<SimRt>>, unload: bool| async move {
            if unload {
                b.unload().await
            } else {
                b.disconnect().await
            }
        };
        let answer = match op {
            Op::New | Op::NewRacingClose { .. } => {
                let b2 = b.clone();
                let m = manual(async move { b2.new_session().await });
                let mut out = sut.d.poll_manual(&m);
                if let Op::NewRacingClose { unload } = op {
                    sut.d
                        .call(closer(b.clone(), unload))
                        .expect("close finishes");
                }
                if out.is_none() {
                    out = Some(sut.d.drive(&m));
                }
                vec![answer_of(out.expect("answered"))]
            }
            Op::DropLoad => {
                let b2 = b.clone();
                let m = manual(async move { b2.load_session("old").await });
                let out = match sut.d.poll_manual(&m) {
                    // Refused at once (live, or closed): nothing to drop.
                    Some(out) => out,
                    None => {
                        give_up(&mut sut.d, m);
                        let again = manual(async move { b.load_session("old").await });
                        sut.d.drive(&again)
                    }
                };
                vec![answer_of(out)]
            }
            Op::DropPrompt(x) => {
                let (b2, id) = (b.clone(), sid(x));
                let m = manual(async move { b2.prompt(id, "p").await });
                assert!(
                    sut.d.poll_manual(&m).is_none(),
                    "a queued prompt answered at once"
                );
                give_up(&mut sut.d, m);
                let again = manual(async move { b.prompt(id, "again").await });
                vec![stop_of(sut.d.drive(&again))]
            }
            Op::DropNew => {
                let side = side_bridge(&mut sut);
                let s2 = side.clone();
                let m = manual(async move { s2.new_session().await });
                let first = match sut.d.poll_manual(&m) {
                    Some(out) => answer_of(out),
                    None => "pending".to_string(),
                };
                give_up(&mut sut.d, m);
                let side_left = |sut: &Sut| sut.rig.leftovers(|id| id.starts_with("side-"));
                let left_after_drop = side_left(&sut);
                let s3 = side.clone();
                let again = sut.d.call(async move { s3.new_session().await });
                sut.d
                    .call(async move { side.unload().await })
                    .expect("the side bridge unloads");
                vec![
                    format!("first: {first}"),
                    format!("left {left_after_drop:?}"),
                    again.map_or("no answer".to_string(), answer_of),
                    format!("left {:?}", side_left(&sut)),
                ]
            }
            Op::PromptOnFailingDisk => {
                let faults = sut.faults;
                let (rig, side) = sut.d.run(move || {
                    let disk = Arc::new(MemoryDurable::<SimRt>::default());
                    let rig = Rig::<SimRt>::new(faults, Some(disk.clone() as Arc<dyn Durable>));
                    let side = Bridge::new(rig.provider.clone(), rig.owner("acp"));
                    (Rc::new((rig, disk)), side)
                });
                let s2 = side.clone();
                let id = sut
                    .d
                    .call(async move { s2.new_session().await })
                    .expect("session/new answers")
                    .expect("session/new on a healthy disk");
                let disk = rig.clone();
                sut.d.run(move || disk.1.fail_next(DiskFault::WriteEio));
                let s3 = side.clone();
                let answer = sut
                    .d
                    .call(async move { s3.prompt(&id, "p").await })
                    .expect("the prompt answers");
                sut.d
                    .call(async move { side.unload().await })
                    .expect("the side bridge unloads");
                let answer = match answer {
                    Err(AcpError::Storage(_)) => "storage error".to_string(),
                    other => format!("{other:?}"),
                };
                // The main rig's journal is the execution's again.
                let main = sut.rig.clone();
                sut.d.run(move || main.enter());
                vec![answer, format!("left {:?}", rig.0.leftovers(|_| true))]
            }
            Op::DropClose { unload } => {
                let m = manual(closer(b.clone(), unload));
                if sut.d.poll_manual(&m).is_none() {
                    give_up(&mut sut.d, m);
                }
                sut.d.call(closer(b, unload)).expect("the close finishes");
                vec![]
            }
            Op::Load | Op::LoadRacingClose { .. } => {
                let b2 = b.clone();
                let m = manual(async move { b2.load_session("old").await });
                let mut out = sut.d.poll_manual(&m);
                if let Op::LoadRacingClose { unload } = op {
                    sut.d
                        .call(closer(b.clone(), unload))
                        .expect("close finishes");
                }
                if out.is_none() {
                    out = Some(sut.d.drive(&m));
                }
                vec![answer_of(out.expect("answered"))]
            }
            Op::Prompt(x)
            | Op::PromptThenCancel(x)
            | Op::PromptTwice(x)
            | Op::PromptThenClose { session: x, .. } => {
                let (b2, id) = (b.clone(), sid(x));
                let m = manual(async move { b2.prompt(id, "p").await });
                let first = sut.d.poll_manual(&m);
                assert!(
                    first.is_none(),
                    "a queued prompt answered at once: {first:?}"
                );
                let mut extra = vec![];
                match op {
                    Op::PromptThenCancel(_) => sut.d.run(move || b.cancel(id)),
                    Op::PromptThenClose { unload, .. } => {
                        sut.d
                            .call(closer(b.clone(), unload))
                            .expect("close finishes");
                    }
                    Op::PromptTwice(_) => {
                        let b3 = b.clone();
                        let m2 = manual(async move { b3.prompt(id, "again").await });
                        let second = sut
                            .d
                            .poll_manual(&m2)
                            .expect("a second prompt answers at once");
                        extra.push(stop_of(second));
                    }
                    _ => {}
                }
                let mut a = vec![stop_of(sut.d.drive(&m))];
                a.extend(extra);
                a
            }
            Op::CancelUnknown => {
                sut.d.run(move || b.cancel("nobody"));
                vec![]
            }
            Op::Close { unload } => {
                sut.d.call(closer(b, unload)).expect("close finishes");
                vec![]
            }
        };
        sut.d.settle();
        assert_eq!(answer, r.answer, "answers to {op:?}");
        compare(&sut, &r.s);
        sut
    }
}

fn compare(sut: &Sut, s: &AcpState) {
    let mut records: Vec<&str> = s.records.iter().map(|&x| sid(x)).collect();
    records.sort();
    assert_eq!(sut.bridge.sessions(), records, "bridge sessions");
    let mut left: Vec<String> = sut
        .rig
        .leftovers(|id| id == "old" || id.starts_with("sess-"))
        .into_iter()
        .map(|e| e.split('#').next().unwrap_or_default().to_string())
        .collect();
    left.sort();
    left.dedup();
    let mut live: Vec<String> = s
        .agents
        .iter()
        .filter(|a| !a.1)
        .map(|a| sid(a.0).to_string())
        .collect();
    live.sort();
    assert_eq!(left, live, "A1 registered agents and sessions left");
    assert_eq!(
        sut.bridge.quiesce_runs(),
        s.quiesces as u32,
        "A6 quiesce runs"
    );
}

prop_state_machine! {
    #![proptest_config(conformance::config())]
    #[test]
    fn acp_bridge_conforms_to_the_model(sequential 1..30 => AcpConformance<0>);

    // The check can fail: with M7 or M8 the implementation keeps an agent
    // the model disposes.
    #[test]
    #[should_panic(expected = "Test failed: assertion")]
    fn m7_implementation_disagrees_with_the_model(sequential 1..30 => AcpConformance<7>);

    #[test]
    #[should_panic(expected = "Test failed: assertion")]
    fn m8_implementation_disagrees_with_the_model(sequential 1..30 => AcpConformance<8>);
}
