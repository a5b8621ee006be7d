//! Conformance of the Agent (SPEC C1–C8, D6): random sequences of `send`,
//! `steer`, `cancel` (with a `cancel-requested` observer that may queue a
//! prompt), `when_idle`, dispose and scheduling choices ("poll the agent
//! loop once") run on the implementation (on the simulator) and on
//! `lifecycle_models::agent::AgentModel`, the reference. After every
//! operation the answers, the status, every prompt's fate, every
//! `when_idle` waiter, the loop's exit and the durable `turn/end`s must
//! agree.

use lifecycle_harness::context::{self, Context};
use lifecycle_testkit::conformance;

use conformance::Driver;
use lifecycle::agent::core::Accept;
use lifecycle::agent::{Agent, AgentLoop, CancelOutcome, Idle};
use lifecycle::bus::PublicEvent;
use lifecycle::journal::{Cause as ICause, EndReason as IEnd, Event};
use lifecycle::rt::SimRt;
use lifecycle::session_log::Entry;
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::scenarios::OBSERVER_PANIC;
use lifecycle_models::agent::{
    AgentAction as A, AgentModel, AgentState, Cause, LoopPos, PromptFate, Status, TurnPhase,
};
use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Steps per turn of the prompts the test sends.
const STEPS: u8 = 2;

/// One operation.
#[derive(Clone, Debug)]
enum Op {
    Send,
    Steer,
    /// `cancel(cause)`; with `observer`, a `cancel-requested` observer
    /// queues a prompt during the notification; with `panics`, another
    /// observer panics (C9: the cancel goes on as if it had not).
    Cancel {
        parent: bool,
        observer: bool,
        panics: bool,
    },
    WhenIdle,
    Dispose,
    /// Scheduling choice: let the agent loop run to its next await.
    Loop,
}

/// What an operation answered.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    None,
    Send(Option<u64>),
    Steer(Result<(bool, u64), ()>),
    Cancel(bool),
    Dispose(bool),
}

#[derive(Clone, Debug)]
struct Ref {
    s: AgentState,
    answer: Answer,
    /// Observer panics the implementation must have contained (C9).
    panics: usize,
}

fn model() -> AgentModel {
    AgentModel::unbounded(None, STEPS)
}

fn step(s: &AgentState, a: A) -> AgentState {
    model()
        .step(s, &a)
        .unwrap_or_else(|| panic!("{a:?} not enabled in {s:#?}"))
}

/// The loop runs until its next await (the implementation's scheduling
/// points: the yield after a wake, a step's sleep, the closing flush).
fn loop_segment(mut s: AgentState) -> AgentState {
    let m = model();
    let try_ = |s: &AgentState, a: A| m.step(s, &a);
    loop {
        match s.pos {
            LoopPos::Exited => return s,
            LoopPos::Waiting => {
                if let Some(n) = try_(&s, A::Exit) {
                    return n;
                }
                return try_(&s, A::Wake).unwrap_or(s);
            }
            LoopPos::Claiming => {
                s = step(&s, A::Claim);
                if s.pos == LoopPos::InTurn {
                    // The write-ahead flush yields (D9).
                    return s;
                }
            }
            LoopPos::InTurn => {
                let phase = s.turn.as_ref().map(|t| t.phase);
                match phase {
                    Some(TurnPhase::InStep) => {
                        s = step(&s, A::StepDone);
                        return boundary(s);
                    }
                    Some(TurnPhase::Flushing) => s = step(&s, A::CloseTurn),
                    Some(TurnPhase::Ending) => return step(&s, A::EndTurn),
                    Some(TurnPhase::Boundary) => return boundary(s),
                    Some(TurnPhase::WriteAhead) => {
                        s = step(&s, A::WriteAhead);
                        return boundary(s);
                    }
                    None => unreachable!("in a turn without a turn"),
                }
            }
        }
    }
}

/// From a boundary: absorb and start the step (then it sleeps), or end the
/// turn (then the closing flush yields).
fn boundary(mut s: AgentState) -> AgentState {
    if s.turn.as_ref().map(|t| t.phase) == Some(TurnPhase::Boundary) {
        s = step(&s, A::Boundary);
    }
    if s.turn.as_ref().map(|t| t.phase) == Some(TurnPhase::Ending) {
        s = step(&s, A::EndTurn);
    }
    s
}

fn resolve_waiters(mut s: AgentState) -> AgentState {
    for w in 0..s.waiters.len() as u8 {
        if let Some(n) = model().step(&s, &A::Resolve(w)) {
            s = n;
        }
    }
    s
}

struct AgentRef;

impl ReferenceStateMachine for AgentRef {
    type State = Ref;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Ref> {
        Just(Ref {
            s: model().init(),
            answer: Answer::None,
            panics: 0,
        })
        .boxed()
    }

    fn transitions(_: &Ref) -> BoxedStrategy<Op> {
        prop_oneof![
            6 => Just(Op::Loop),
            3 => Just(Op::Send),
            1 => Just(Op::Steer),
            2 => (any::<bool>(), any::<bool>(), any::<bool>())
                .prop_map(|(parent, observer, panics)| Op::Cancel { parent, observer, panics }),
            1 => Just(Op::WhenIdle),
            1 => Just(Op::Dispose),
        ]
        .boxed()
    }

    fn apply(r: Ref, op: &Op) -> Ref {
        let s = r.s;
        let mut panics = r.panics;
        if let Op::Cancel { panics: true, .. } = op {
            panics += usize::from(AgentModel::cancel_effective(&s));
        }
        let (s, answer) = match op {
            Op::Send => {
                let id = s.prompts.len() as u64;
                let ok = AgentModel::send_accepted(&s);
                (step(&s, A::Send), Answer::Send(ok.then_some(id)))
            }
            Op::Steer => {
                let ans = if AgentModel::steer_is_steering(&s) {
                    Ok((true, s.steers_accepted as u64))
                } else if AgentModel::send_accepted(&s) {
                    Ok((false, s.prompts.len() as u64))
                } else {
                    Err(())
                };
                (step(&s, A::Steer), Answer::Steer(ans))
            }
            Op::Cancel {
                parent, observer, ..
            } => {
                let cause = if *parent { Cause::Parent } else { Cause::User };
                let effective = AgentModel::cancel_effective(&s);
                let mut n = step(&s, A::Cancel(cause));
                if n.cancel.is_some() {
                    if *observer {
                        n = step(&n, A::ObserverSend);
                    }
                    n = step(&n, A::FinishCancel);
                }
                (n, Answer::Cancel(effective))
            }
            Op::WhenIdle => (step(&s, A::WhenIdle), Answer::None),
            Op::Dispose => {
                let first = s.status != Status::Disposed;
                (step(&s, A::Dispose), Answer::Dispose(first))
            }
            Op::Loop => (loop_segment(s), Answer::None),
        };
        Ref {
            s: resolve_waiters(s),
            answer,
            panics,
        }
    }
}

type Waiter = Pin<Box<dyn Future<Output = Idle> + Send>>;

struct Sut {
    d: Driver,
    lp: Rc<AgentLoop<SimRt>>,
    agent: Agent<SimRt>,
    observer_sends: Arc<AtomicBool>,
    observer_panics: Arc<AtomicBool>,
    waiters: Rc<RefCell<Vec<Option<Waiter>>>>,
}

impl Sut {
    fn poll_waiters(&mut self) {
        let ws = self.waiters.clone();
        self.d.run(move || {
            // Poll each pending waiter once, inside the simulation.
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            for w in ws.borrow_mut().iter_mut() {
                if let Some(f) = w {
                    if f.as_mut().poll(&mut cx).is_ready() {
                        *w = None;
                    }
                }
            }
        });
    }

    fn fates(&self) -> Vec<String> {
        let mut fates: Vec<String> = vec![];
        let mut set = |p: u64, f: String| {
            let p = p as usize;
            if fates.len() <= p {
                fates.resize(p + 1, "?".into());
            }
            fates[p] = f;
        };
        for r in self.agent.journal() {
            match r.event {
                Event::Accepted { prompt } | Event::SteeringRequeued { prompt, .. } => {
                    set(prompt, "queued".into())
                }
                Event::Woke { prompt } => set(prompt, "in-hand".into()),
                Event::Skipped { prompt } => set(prompt, "skipped".into()),
                Event::TurnStart { prompt } => set(prompt, "running".into()),
                Event::TurnEnd { prompt, reason, .. } => set(prompt, end(reason)),
                Event::Cleared { prompts, .. } => {
                    prompts.into_iter().for_each(|p| set(p, "cancelled".into()))
                }
                Event::DisposeBegan { prompts } => prompts
                    .into_iter()
                    .for_each(|p| set(p, "cleared-by-dispose".into())),
                _ => {}
            }
        }
        fates
    }
}

fn end(r: IEnd) -> String {
    format!("ended-{r:?}").to_lowercase()
}

fn model_fates(s: &AgentState) -> Vec<String> {
    s.prompts
        .iter()
        .map(|p| match p.fate {
            PromptFate::Pending { claimed: false } => "queued".into(),
            PromptFate::Pending { claimed: true } => "in-hand".into(),
            PromptFate::ClearedInQueue => "cancelled".into(),
            PromptFate::ClearedByDispose => "cleared-by-dispose".into(),
            PromptFate::SkippedAtClaim => "skipped".into(),
            PromptFate::Started => "running".into(),
            // One type: the model's fate and end reason are the
            // implementation's.
            PromptFate::Ended(r) => end(r),
        })
        .collect()
}

/// The test, with the implementation's fault `FAULT` (0: none; 3: M3 ...).
struct AgentConformance<const FAULT: u8>;

fn faults(n: u8) -> Faults {
    Fault::ALL
        .into_iter()
        .find(|f| *f as u8 + 1 == n)
        .map_or(Faults::none(), |f| Faults::none().with(f))
}

impl<const FAULT: u8> StateMachineTest for AgentConformance<FAULT> {
    type SystemUnderTest = Sut;
    type Reference = AgentRef;

    fn init_test(_: &Ref) -> Sut {
        quiet_observer_panics();
        let mut d = Driver::new();
        let lp = d.run(|| {
            context::enter(Context::new(faults(FAULT)));
            Agent::<SimRt>::spawn("agent-1")
        });
        let agent = lp.agent.clone();
        let observer_sends = Arc::new(AtomicBool::new(false));
        let flag = observer_sends.clone();
        agent.observe(move |a, ev| {
            if matches!(ev, PublicEvent::CancelRequested(_)) && flag.load(Ordering::SeqCst) {
                let _ = a.send(spec("from-observer"));
            }
        });
        let panics = Arc::new(AtomicBool::new(false));
        let flag = panics.clone();
        agent.observe(move |_, _| {
            if flag.load(Ordering::SeqCst) {
                std::panic::panic_any(OBSERVER_PANIC);
            }
        });
        Sut {
            d,
            lp: Rc::new(lp),
            agent,
            observer_sends,
            observer_panics: panics,
            waiters: Rc::new(RefCell::new(vec![])),
        }
    }

    fn apply(mut sut: Sut, r: &Ref, op: Op) -> Sut {
        let agent = sut.agent.clone();
        let answer = match op {
            Op::Send => Answer::Send(sut.d.run(move || agent.send(spec("p")).ok())),
            Op::Steer => Answer::Steer(sut.d.run(move || match agent.steer(spec("s")) {
                Ok(Accept::Steering(id)) => Ok((true, id)),
                Ok(Accept::Queued(id)) => Ok((false, id)),
                _ => Err(()),
            })),
            Op::Cancel {
                parent,
                observer,
                panics,
            } => {
                sut.observer_sends.store(observer, Ordering::SeqCst);
                sut.observer_panics.store(panics, Ordering::SeqCst);
                let cause = if parent { ICause::Parent } else { ICause::User };
                let out = sut.d.run(move || agent.cancel(cause));
                sut.observer_sends.store(false, Ordering::SeqCst);
                sut.observer_panics.store(false, Ordering::SeqCst);
                Answer::Cancel(out == CancelOutcome::Effective)
            }
            Op::WhenIdle => {
                let w: Waiter = Box::pin(sut.d.run(move || agent.when_idle()));
                sut.waiters.borrow_mut().push(Some(w));
                Answer::None
            }
            Op::Dispose => {
                let lp = sut.lp.clone();
                Answer::Dispose(sut.d.run(move || lp.begin_stop()))
            }
            Op::Loop => {
                sut.d.poll_task("agent-loop");
                Answer::None
            }
        };
        sut.poll_waiters();
        assert_eq!(answer, r.answer, "answer to {op:?}");
        compare(&sut, &r.s);
        let contained = sut
            .agent
            .journal()
            .iter()
            .filter(|x| matches!(x.event, Event::ObserverPanicked { .. }))
            .count();
        assert_eq!(contained, r.panics, "C9 contained observer panics");
        sut
    }
}

fn quiet_observer_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info.payload().downcast_ref::<&str>().copied().unwrap_or("");
            if msg != OBSERVER_PANIC {
                default(info);
            }
        }));
    });
}

fn spec(text: &str) -> lifecycle::agent::core::PromptSpec {
    lifecycle::agent::core::PromptSpec {
        text: text.into(),
        steps: STEPS as u32,
        step_ms: 10,
        ..Default::default()
    }
}

/// The observable state of the implementation against the model's.
fn compare(sut: &Sut, s: &AgentState) {
    let status = match sut.agent.status() {
        lifecycle::agent::core::Status::Idle => Status::Idle,
        lifecycle::agent::core::Status::Running => Status::Running,
        lifecycle::agent::core::Status::Disposed => Status::Disposed,
    };
    assert_eq!(status, s.status, "status");
    assert_eq!(sut.fates(), model_fates(s), "prompt fates");
    let journal = sut.agent.journal();
    let mut waiters: Vec<Option<bool>> = vec![];
    let mut exited = false;
    let mut requested = vec![];
    for r in &journal {
        match r.event {
            Event::IdleWaiting { .. } => waiters.push(None),
            Event::IdleResolved { waiter, done } => waiters[waiter as usize] = Some(done),
            Event::LoopExited => exited = true,
            Event::CancelRequested { call, .. } => requested.push(call),
            // C1: `cancel-requested` goes out before anything is cleared.
            Event::Cleared { call, .. } => assert!(
                requested.contains(&call),
                "C1: call {call} cleared before cancel-requested"
            ),
            _ => {}
        }
    }
    assert_eq!(waiters, s.waiters, "when_idle waiters");
    assert_eq!(exited, s.pos == LoopPos::Exited, "loop exited");
    let steers = journal
        .iter()
        .filter(|r| matches!(r.event, Event::SteerAccepted { .. }))
        .count();
    assert_eq!(
        steers, s.steers_accepted as usize,
        "steering inputs accepted"
    );
    let mut durable: Vec<(u64, String)> = sut
        .agent
        .durable_log()
        .into_iter()
        .filter_map(|e| match e {
            Entry::TurnEnd { prompt, reason } => Some((prompt, end(reason))),
            _ => None,
        })
        .collect();
    durable.sort();
    let flushing = s
        .turn
        .as_ref()
        .filter(|t| t.phase == TurnPhase::Flushing)
        .map(|t| t.prompt as u64);
    let fates = model_fates(s);
    let mut want: Vec<(u64, String)> = s
        .prompts
        .iter()
        .enumerate()
        .filter(|(i, p)| matches!(p.fate, PromptFate::Ended(_)) && Some(*i as u64) != flushing)
        .map(|(i, _)| (i as u64, fates[i].clone()))
        .collect();
    want.sort();
    assert_eq!(durable, want, "durable turn/end entries (D3)");
}

prop_state_machine! {
    #![proptest_config(conformance::config())]
    #[test]
    fn agent_conforms_to_the_model(sequential 1..40 => AgentConformance<0>);
}

// The conformance check can fail: the implementation with a fault of SPEC
// §3 switched on disagrees with the (clean) model.
prop_state_machine! {
    #![proptest_config(conformance::config())]
    #[test]
    #[should_panic(expected = "Test failed: assertion")]
    fn m3_implementation_disagrees_with_the_model(sequential 1..40 => AgentConformance<3>);

    #[test]
    #[should_panic(expected = "Test failed: assertion")]
    fn m5_implementation_disagrees_with_the_model(sequential 1..40 => AgentConformance<5>);

    #[test]
    #[should_panic(expected = "Test failed: assertion")]
    fn m12_implementation_disagrees_with_the_model(sequential 1..40 => AgentConformance<12>);
}
