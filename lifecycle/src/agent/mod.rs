//! The Agent: one conversation driver, and its loop.
//!
//! [`core`] holds the state machine (sans-IO); this module is the thin async
//! shell that performs its decisions on any backend [`Rt`].
//!
//! The loop, per prompt: **wake** (take a prompt in hand) → *scheduling
//! point* → **claim** (marker check, token install, `running`) →
//! `turn/start`, `user/message` → steps, each preceded by a **step
//! boundary** (token check, steering absorption) → `turn/end {reason}` →
//! **flush** → `idle`.
//!
//! Write-ahead (D9): `turn/start` and `user/message` are flushed before the
//! first step runs, and a step's output is flushed before it is delivered
//! to a client ([`StepRunner::deliver`]); fault M16 flushes only at
//! `turn/end`. A failed append or flush (D10) stops the turn: it ends
//! `{failed}`, and the session refuses further appends.
//!
//! Who may call what: anyone holding an [`Agent`] may `send`, `steer`,
//! `cancel`, `when_idle`, `done` and observe; only the owner of the
//! [`AgentLoop`] can stop it (the registry's `AgentHandle` wraps it in the
//! memoized teardown of D1–D2).

pub mod core;

use self::core::{AgentCore, Boundary, CancelStart, Claim, Wake};
use crate::bus::{Bus, Observer, PublicEvent};
use crate::journal::{Cause, Event, Record};
use crate::rt::context::{fault, fault_point};
use crate::rt::{self, JoinHandle, Monitor, Probe, Rt, Wait};
use crate::session_log::{Entry, Origin, SessionLog, SessionSink, StepOutput, StorageError};
use std::sync::Arc;

pub use self::core::{Accept, Prompt, PromptSpec, Status, Steer};

/// Errors of the Agent verbs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentError {
    /// The agent is disposed.
    Disposed,
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Disposed => write!(f, "agent is disposed"),
        }
    }
}

impl std::error::Error for AgentError {}

/// How `cancel` went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// Nothing to cancel: nothing emitted, nothing changed (C6).
    Idle,
    /// `agent/cancel-requested` was emitted and the work cleared.
    Effective,
}

/// How `when_idle` resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// Quiescent: no turn, empty inbox, marker consumed.
    Quiescent,
    /// The agent was disposed.
    Done,
}

/// The running turn's cancellation signal, as a step receives it (C10):
/// [`StepSignal::fired`] resolves once a cancel or disposal requested the
/// turn's token. A step that waits (a sleep, a model request, a shell
/// command) races its work against it and settles promptly when it fires.
#[derive(Clone)]
pub struct StepSignal {
    fired: Arc<dyn Fn() -> crate::rt::BoxFuture<()> + Send + Sync>,
}

impl StepSignal {
    /// A signal that resolves when `fired` does.
    pub fn new(fired: impl Fn() -> crate::rt::BoxFuture<()> + Send + Sync + 'static) -> Self {
        StepSignal {
            fired: Arc::new(fired),
        }
    }

    /// Resolves when the turn's token is requested.
    pub fn fired(&self) -> crate::rt::BoxFuture<()> {
        (self.fired)()
    }
}

/// Performs the steps of a turn (a model request, a tool call). Without
/// one, a step awaits the prompt's `step_ms`, or the signal if it fires
/// first.
pub trait StepRunner: Send + Sync + 'static {
    /// Perform step `step` of agent `agent_id`'s turn on `prompt`; its
    /// output, if any, goes to the session log. `signal` fires when the
    /// turn is cancelled or disposed: the step must then settle promptly
    /// (C10), with whatever output it has.
    fn run_step(
        &self,
        agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> crate::rt::BoxFuture<Option<String>>;

    /// [`run_step`](Self::run_step) with what the step did with a
    /// background job (A11). The loop calls this one; the default wraps
    /// `run_step`'s text with no job event.
    fn run_step_output(
        &self,
        agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> crate::rt::BoxFuture<Option<StepOutput>> {
        let text = self.run_step(agent_id, prompt, step, signal);
        Box::pin(async move { text.await.map(StepOutput::from) })
    }

    /// Hand step `step`'s output to the client. Called only once the output
    /// is durable (D9: nothing a client saw is lost in a crash).
    fn deliver(&self, _agent_id: &str, _prompt: &PromptSpec, _step: u32, _output: &str) {}

    /// [`deliver`](Self::deliver) with the step's job event. The loop calls
    /// this one; the default hands on the text.
    fn deliver_output(&self, agent_id: &str, prompt: &PromptSpec, step: u32, output: &StepOutput) {
        self.deliver(agent_id, prompt, step, &output.text);
    }
}

struct Shared<R: Rt> {
    id: String,
    core: Monitor<R, AgentCore>,
    bus: Bus<R, Agent<R>>,
    log: Arc<dyn SessionSink>,
    runner: Option<Arc<dyn StepRunner>>,
    /// The turn whose token was last requested: what a running step's
    /// [`StepSignal`] waits on (C10). Apart from `core`, so the steps'
    /// waits are woken only by a stop, never by the loop's own updates.
    signal: Monitor<R, Option<crate::journal::PromptId>>,
}

/// One conversation driver. Cheap to clone; clones share the agent.
pub struct Agent<R: Rt> {
    shared: Arc<Shared<R>>,
}

impl<R: Rt> Clone for Agent<R> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

/// The owner's capability over an agent's loop: start it, stop it.
pub struct AgentLoop<R: Rt> {
    /// The agent.
    pub agent: Agent<R>,
    task: crate::rt::Mutex<R, Option<JoinHandle<R, ()>>>,
}

impl<R: Rt> Agent<R> {
    /// Start an agent with id `id`, its own session log, and its loop task.
    pub fn spawn(id: &str) -> AgentLoop<R> {
        Self::start_core(id, AgentCore::new(fault_point::<R>))
    }

    fn start_core(id: &str, core: AgentCore) -> AgentLoop<R> {
        let l = Self::prepare_core(id, core, Arc::new(SessionLog::<R>::default()), None);
        l.start();
        l
    }

    /// Build an agent whose turns write to `sink`, without starting its
    /// loop (private state: nothing runs until [`AgentLoop::start`]).
    pub fn prepare(id: &str, sink: Arc<dyn SessionSink>) -> AgentLoop<R> {
        Self::prepare_with(id, sink, None)
    }

    /// [`prepare`](Self::prepare), with the steps of every turn performed by
    /// `runner`.
    pub fn prepare_with(
        id: &str,
        sink: Arc<dyn SessionSink>,
        runner: Option<Arc<dyn StepRunner>>,
    ) -> AgentLoop<R> {
        Self::prepare_core(id, AgentCore::new(fault_point::<R>), sink, runner)
    }

    /// [`prepare_with`](Self::prepare_with), from a core set up by the
    /// caller (its numbering continued, its journal bounded).
    pub fn prepare_core(
        id: &str,
        mut core: AgentCore,
        sink: Arc<dyn SessionSink>,
        runner: Option<Arc<dyn StepRunner>>,
    ) -> AgentLoop<R> {
        core.name_journal(id);
        let agent = Agent {
            shared: Arc::new(Shared {
                id: id.to_string(),
                core: Monitor::new(core),
                bus: Bus::default(),
                log: sink,
                signal: Monitor::new(None),
                runner,
            }),
        };
        AgentLoop {
            agent,
            task: crate::rt::Mutex::new(None),
        }
    }

    /// The agent's id (equal to its session id).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Current status.
    pub fn status(&self) -> Status {
        self.shared.core.read(|c| c.status())
    }

    /// A copy of the transition journal.
    pub fn journal(&self) -> Vec<Record> {
        self.shared.core.read(|c| c.journal().records().to_vec())
    }

    /// The session's durable entries.
    pub fn durable_log(&self) -> Vec<Entry> {
        self.shared.log.durable()
    }

    /// Observe public events. A panicking observer is contained (C9).
    pub fn observe(&self, f: impl Fn(&Agent<R>, &PublicEvent) + Send + Sync + 'static) {
        let f: Observer<Agent<R>> = Arc::new(f);
        self.shared.bus.observe(f);
    }

    /// Queue a prompt: one turn.
    pub fn send(&self, prompt: impl Into<PromptSpec>) -> Result<u64, AgentError> {
        let spec = prompt.into();
        match self.shared.core.update(|c| c.accept(R::now_ms(), spec)) {
            Accept::Queued(id) | Accept::Steering(id) => Ok(id),
            Accept::Rejected => Err(AgentError::Disposed),
        }
    }

    /// Steer the running turn (absorbed at its next step boundary); the same
    /// as [`send`](Self::send) when no turn is running.
    pub fn steer(&self, input: impl Into<PromptSpec>) -> Result<Accept, AgentError> {
        let spec = input.into();
        match self.shared.core.update(|c| c.steer(R::now_ms(), spec)) {
            Accept::Rejected => Err(AgentError::Disposed),
            other => Ok(other),
        }
    }

    /// The only public stop verb (C1–C3, C9). Effective when a turn is
    /// active or the inbox holds work: emits `agent/cancel-requested {cause}`
    /// once, BEFORE clearing both FIFOs and requesting the turn's token.
    pub fn cancel(&self, cause: Cause) -> CancelOutcome {
        let (call, start) = self
            .shared
            .core
            .update(|c| c.begin_cancel(R::now_ms(), cause));
        if start == CancelStart::Idle {
            return CancelOutcome::Idle;
        }
        let m11 = fault!(M11);
        if m11 {
            // M11: clear first, notify after.
            let stopped = self.shared.core.update(|c| {
                c.finish_cancel(R::now_ms(), call, cause);
                c.stopped_turn()
            });
            self.raise_signal(stopped);
        }
        self.shared
            .core
            .update(|c| c.cancel_requested(R::now_ms(), call, cause));
        self.emit(PublicEvent::CancelRequested(cause));
        if !m11 {
            let stopped = self.shared.core.update(|c| {
                c.finish_cancel(R::now_ms(), call, cause);
                c.stopped_turn()
            });
            self.raise_signal(stopped);
        }
        self.shared
            .core
            .update(|c| c.cancel_returned(R::now_ms(), call));
        CancelOutcome::Effective
    }

    /// Fire the running step's signal if `stopped` names its turn (C10).
    fn raise_signal(&self, stopped: Option<crate::journal::PromptId>) {
        if let Some(p) = stopped {
            self.shared.signal.update(|s| *s = Some(p));
        }
    }

    fn emit(&self, event: PublicEvent) {
        for message in self.shared.bus.emit(self, &event) {
            self.shared.core.update(|c| {
                c.record(
                    R::now_ms(),
                    Event::ObserverPanicked {
                        on: event.name(),
                        message,
                    },
                )
            });
        }
    }

    /// Resolves at quiescence (no turn, empty inbox, marker consumed), or
    /// with [`Idle::Done`] after disposal (C7). The waiter is registered when
    /// this is called, not when the future is first polled.
    pub fn when_idle(&self) -> impl std::future::Future<Output = Idle> + Send + 'static {
        let waiter = self.shared.core.update(|c| c.idle_waiter(R::now_ms()));
        let shared = self.shared.clone();
        async move {
            // The check reads; only a waiter that resolves records it.
            let ready = |c: &mut Probe<'_, AgentCore>| {
                c.idle_check()
                    .and_then(|_| c.idle_ready(R::now_ms(), waiter))
            };
            let done = match () {
                () if fault!(M14) => {
                    shared
                        .core
                        .wait_until_unfenced(Wait::WHEN_IDLE, ready)
                        .await
                }
                () => shared.core.wait_until(Wait::WHEN_IDLE, ready).await,
            };
            if done {
                Idle::Done
            } else {
                Idle::Quiescent
            }
        }
    }

    /// Wait until `pred` holds on the agent's state (for owners and
    /// harnesses that need to act at a given point, e.g. once a turn runs).
    pub async fn until(
        &self,
        label: &'static str,
        mut pred: impl FnMut(&AgentCore) -> bool + Send,
    ) {
        self.shared
            .core
            .wait_until(label, |c| pred(c).then_some(()))
            .await
    }

    /// Wait until prompt `prompt`'s turn has started (`true`), or it is
    /// certain it never will (`false`). Unlike waiting for `running`, this
    /// cannot miss a turn that started and ended before the wait.
    pub async fn started(&self, prompt: u64) -> bool {
        self.shared
            .core
            .wait_until("turn start", |c| {
                c.journal().fate(prompt).and_then(|f| f.started)
            })
            .await
    }

    /// How prompt `prompt` ended: `Some(reason)` once its turn ended, `None`
    /// if it never started (cleared by a cancel or by disposal, or skipped
    /// by the pre-run marker).
    pub async fn outcome(&self, prompt: u64) -> Option<crate::journal::EndReason> {
        self.shared
            .core
            .wait_until("prompt outcome", |c| {
                c.journal().fate(prompt).and_then(|f| f.outcome)
            })
            .await
    }

    /// How turn `prompt` settled, once its closing flush is done: its
    /// `turn/end` reason (`None` if it never ran) and the storage error
    /// that failed it, if any (D10).
    pub async fn settled(
        &self,
        prompt: u64,
    ) -> (Option<crate::journal::EndReason>, Option<String>) {
        let reason = self.outcome(prompt).await;
        if reason.is_none() {
            return (None, None);
        }
        self.shared
            .core
            .wait_until("prompt settled", |c| {
                let fate = c.journal().fate(prompt)?;
                fate.closed.then(|| (reason, fate.storage_error.clone()))
            })
            .await
    }

    /// Resolves when the loop has exited (after disposal).
    pub async fn done(&self) {
        self.shared
            .core
            .wait_until("agent done", |c| c.loop_has_exited().then_some(()))
            .await
    }

    async fn run_loop(&self) {
        let core = &self.shared.core;
        loop {
            let wake = core
                .wait_until("inbox wake", |c| {
                    if c.wake_due() {
                        c.try_wake(R::now_ms())
                    } else {
                        None
                    }
                })
                .await;
            if wake == Wake::Exit {
                break;
            }
            // The race window between wake and claim (C4).
            R::yield_now().await;
            // A claimed turn takes the notices its log still owes (A11).
            let (claim, late) = core
                .wait_until("cancel in progress (claim)", |c| {
                    (!c.cancel_in_progress()).then(|| match c.claim(R::now_ms()) {
                        Claim::Run(p) => (Claim::Run(p), c.take_late()),
                        other => (other, Vec::new()),
                    })
                })
                .await;
            match claim {
                Claim::Exit => break,
                Claim::Skip(_) => continue,
                Claim::Run(prompt) => self.run_turn(prompt, late).await,
            }
        }
        core.update(|c| c.loop_exited(R::now_ms()));
    }

    /// One turn; `late` are the notices the log owes (A11), recorded first.
    async fn run_turn(&self, prompt: Prompt, late: Vec<Entry>) {
        let core = &self.shared.core;
        let write_ahead = !fault!(M16);
        let mut storage = Ok(());
        // A11: a notice delivered while the log failed is recorded first;
        // like `turn/start`, its append recovers a failed log (D10).
        for record in &late {
            self.append(&mut storage, record.clone());
        }
        self.append(&mut storage, Entry::TurnStart { prompt: prompt.id });
        self.append(
            &mut storage,
            Entry::UserMessage {
                prompt: prompt.id,
                text: prompt.spec.text.clone(),
                origin: prompt.spec.origin.clone(),
            },
        );
        // D9: the turn is durable before its first step runs.
        if write_ahead {
            self.flush(&mut storage).await;
        }
        if storage.is_err() && !late.is_empty() {
            core.update(|c| c.restore_late(late));
        }
        // A11: a job's completion notice reaches the client even when its
        // log cannot store it; the log records it once storage works again.
        let notice = matches!(prompt.spec.origin, Origin::JobDone { .. });
        let mut unstored = Vec::new();
        for step in 0..prompt.spec.steps {
            if storage.is_err() && !notice {
                break;
            }
            let boundary = core
                .wait_until("cancel in progress (step boundary)", |c| {
                    (!c.cancel_in_progress()).then(|| c.step_boundary(R::now_ms()))
                })
                .await;
            match boundary {
                Boundary::Stop => break,
                Boundary::Continue(absorbed) => {
                    for s in absorbed {
                        let steering = Entry::Steering {
                            prompt: prompt.id,
                            input: s.id,
                            text: s.text,
                        };
                        self.append(&mut storage, steering);
                    }
                }
            }
            // The step itself: awaited to its settlement, never abandoned;
            // it receives the turn's signal and settles early when it fires
            // (C10).
            let signal = self.step_signal(prompt.id);
            let output = match &self.shared.runner {
                Some(runner) => {
                    runner
                        .run_step_output(&self.shared.id, &prompt.spec, step, signal)
                        .await
                }
                None => {
                    rt::sleep_or::<R>(prompt.spec.step_ms, signal.fired()).await;
                    None
                }
            };
            let entry = Entry::Step {
                prompt: prompt.id,
                step,
                output: output.as_ref().map(|o| o.text.clone()),
                tool: output.as_ref().and_then(|o| o.tool.clone()),
            };
            self.append(&mut storage, entry);
            if let (Some(out), Some(runner)) = (output, &self.shared.runner) {
                // D9: durable before the client sees it.
                if write_ahead {
                    self.flush(&mut storage).await;
                }
                if storage.is_ok() {
                    runner.deliver_output(&self.shared.id, &prompt.spec, step, &out);
                } else if notice {
                    runner.deliver_output(&self.shared.id, &prompt.spec, step, &out);
                    unstored.push(Entry::LateNotice {
                        prompt: prompt.id,
                        output: Some(out.text),
                        tool: out.tool,
                    });
                }
            }
            core.update(|c| c.step_done(R::now_ms(), step));
        }
        // The end of the last step is a step boundary too: a cancel that
        // entered while the step ran must still abort the turn (C3).
        let (id, reason) = core
            .wait_until("cancel in progress (turn end)", |c| {
                (!c.cancel_in_progress()).then(|| c.end_turn(R::now_ms()))
            })
            .await;
        self.append(&mut storage, Entry::TurnEnd { prompt: id, reason });
        self.flush(&mut storage).await;
        core.update(|c| {
            unstored.into_iter().for_each(|r| c.defer_late(r));
            c.close_turn(R::now_ms())
        });
    }

    /// The running turn's signal (C10). Fault M19: a signal the step never
    /// sees, so a step runs until it ends by itself.
    ///
    /// A step parked before the signal fires waits for a cancel that has
    /// not come (no rule of its own: the rule is whoever's cancel was
    /// lost); only a step still parked after it fired breaks C10
    /// ([`Wait::STEP_SIGNAL`]).
    fn step_signal(&self, prompt: crate::journal::PromptId) -> StepSignal {
        let agent = self.clone();
        let m19 = fault!(M19);
        StepSignal::new(move || {
            let agent = agent.clone();
            Box::pin(async move {
                let signal = &agent.shared.signal;
                signal
                    .wait_until(Wait::TURN_CANCEL, |s| (**s == Some(prompt)).then_some(()))
                    .await;
                if m19 {
                    signal.wait_until(Wait::STEP_SIGNAL, |_| None::<()>).await;
                }
            })
        })
    }

    /// Append to the session log unless it already failed; a refusal fails
    /// the turn (D10).
    fn append(&self, storage: &mut Result<(), StorageError>, entry: Entry) {
        if storage.is_ok() {
            if let Err(e) = self.shared.log.append(entry) {
                self.storage_failed(storage, e);
            }
        }
    }

    /// Flush the session log unless it already failed; a failure fails the
    /// turn (D10).
    async fn flush(&self, storage: &mut Result<(), StorageError>) {
        if storage.is_ok() {
            if let Err(e) = self.shared.log.clone().flush().await {
                self.storage_failed(storage, e);
            }
        }
    }

    fn storage_failed(&self, storage: &mut Result<(), StorageError>, e: StorageError) {
        let error = e.to_string();
        self.shared
            .core
            .update(|c| c.storage_failed(R::now_ms(), error));
        *storage = Err(e);
    }
}

impl<R: Rt> AgentLoop<R> {
    /// Start the loop task (once).
    pub fn start(&self) {
        let looped = self.agent.clone();
        let id = self.agent.id().to_string();
        self.task.with(|t| {
            if t.is_none() {
                *t = Some(rt::spawn::<R, ()>(
                    &format!("agent-loop {id}"),
                    async move {
                        looped.run_loop().await;
                    },
                ));
            }
        });
    }

    /// D2 step 1: mark the agent disposed, request the turn's token
    /// `{disposed}`, clear the inbox. `false` if it already was.
    pub fn begin_stop(&self) -> bool {
        let (first, stopped) = self
            .agent
            .shared
            .core
            .update(|c| (c.begin_dispose(R::now_ms()), c.stopped_turn()));
        self.agent.raise_signal(stopped);
        first
    }

    /// D2 step 2: await the loop's exit (its closing flush included).
    pub async fn join(&self) {
        if let Some(task) = self.task.with(|t| t.take()) {
            task.join().await;
        }
    }

    /// Steps 1 and 2 together. Idempotent.
    pub async fn stop(&self) {
        self.begin_stop();
        self.join().await;
    }
}
