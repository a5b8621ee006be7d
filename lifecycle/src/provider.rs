//! The factory (the note's AgentLoop provider): creates and resumes agents,
//! returns [`AgentHandle`]s, and owns the agents it built.
//!
//! Creation: `prepare` a session and an agent privately → await setup → if
//! the owner scope is still active, publish (`enter` the session, register
//! the agent, `announce`, start the loop) → register the teardown effect
//! with the owner scope AND the provider's scope. A loser of the same-id
//! race, or a creation whose owner unloaded during setup, rolls back and
//! publishes nothing (R1, R3).
//!
//! Teardown is ONE composite effect whose disposers run LIFO (D2):
//! 1 stop the loop → 2 await its exit and closing flush → (drain) → 3
//! detach the agent (the id is free again) → 4 detach the session → 5
//! unwind the agent's private scope. The handle, the owner's unload and the
//! provider's unload all reach it; it runs once (D1).
//!
//! The drain (S7) is there when a [`DrainHook`] is set (where tool-bash and
//! a shell live beside the provider): it kills every background job the
//! agent owns, awaits their settlement and forgets them. It runs after step
//! 2, so the exited loop can start no new job, and before step 3, so no
//! later agent with the same id can ever see the old jobs. It is journaled
//! as [`LifecycleEvent::TeardownDrain`], apart from D2's steps 1–5, whose
//! numbers stay the SPEC's. Fault M20 leaves it out.

use crate::agent::core::AgentCore;
use crate::agent::{Agent, AgentLoop, StepRunner};
use crate::events::LifecycleEvent;
use crate::registry::Registry;
use crate::rt::context::{fault, fault_point, observe};
use crate::rt::{BoxFuture, Mutex, Rt};
use crate::scope::{Admission, Disposer, Effect, EffectObserver, Scope};
use crate::store::SessionStore;
use std::marker::PhantomData;
use std::sync::Arc;

/// Why a creation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// A live agent/session already has the id (R1).
    AlreadyExists(String),
    /// The owner scope unloaded during setup (R3).
    OwnerUnloaded(String),
    /// The session's durable log could not be read or repaired (D9, D10).
    Storage(String),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::AlreadyExists(id) => write!(f, "agent {id:?} already exists"),
            CreateError::OwnerUnloaded(id) => {
                write!(f, "owner unloaded while agent {id:?} was being created")
            }
            CreateError::Storage(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CreateError {}

/// The owner's capability over one agent: `dispose()` is memoized and
/// shared with the owner scope's and the provider's unload.
pub struct AgentHandle<R: Rt> {
    /// The agent.
    pub agent: Agent<R>,
    serial: u64,
    effects: Vec<Arc<Effect<R>>>,
}

impl<R: Rt> Clone for AgentHandle<R> {
    fn clone(&self) -> Self {
        AgentHandle {
            agent: self.agent.clone(),
            serial: self.serial,
            effects: self.effects.clone(),
        }
    }
}

impl<R: Rt> AgentHandle<R> {
    /// The serial of the agent's session.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// Dispose the agent: resolves when the whole teardown is done (D1).
    pub async fn dispose(&self) {
        self.dispose_as("handle").await
    }

    /// [`dispose`](Self::dispose), naming the caller in the journal.
    pub async fn dispose_as(&self, by: &str) {
        let all: Vec<BoxFuture<()>> = self
            .effects
            .iter()
            .map(|e| {
                let e = e.clone();
                let by = by.to_string();
                Box::pin(async move { e.dispose(&by).await }) as BoxFuture<()>
            })
            .collect();
        futures::future::join_all(all).await;
    }
}

/// Drains the background jobs of the agent whose id it is given (S7);
/// resolves when they are killed, settled and forgotten. Built from a shell
/// by [`crate::shell::drain_hook`].
pub type DrainHook = Arc<dyn Fn(&str) -> BoxFuture<()> + Send + Sync>;

/// The drain's number in the teardown chain: between D2's steps 2 and 3,
/// outside their 1–5 (the journal records it as
/// [`LifecycleEvent::TeardownDrain`], not as a D2 step).
pub const DRAIN_STEP: u8 = 25;

/// Journals an agent effect's teardown.
struct Journaled<R> {
    id: String,
    serial: u64,
    main: bool,
    _rt: PhantomData<R>,
}

impl<R: Rt> EffectObserver for Journaled<R> {
    fn called(&self, by: &str) {
        if self.main {
            observe::<R>(|| LifecycleEvent::DisposeCalled {
                id: self.id.clone(),
                serial: self.serial,
                by: by.to_string(),
            });
        }
    }
    fn returned(&self, by: &str) {
        if self.main {
            observe::<R>(|| LifecycleEvent::DisposeReturned {
                id: self.id.clone(),
                serial: self.serial,
                by: by.to_string(),
            });
        }
    }
    fn began(&self) {
        if self.main {
            observe::<R>(|| LifecycleEvent::TeardownBegan {
                id: self.id.clone(),
                serial: self.serial,
            });
        }
    }
    fn step(&self, step: u8, error: Option<&str>) {
        if step == DRAIN_STEP {
            observe::<R>(|| LifecycleEvent::TeardownDrain {
                id: self.id.clone(),
                serial: self.serial,
            });
            return;
        }
        observe::<R>(|| LifecycleEvent::TeardownStep {
            id: self.id.clone(),
            serial: self.serial,
            step,
            error: error.map(str::to_string),
        });
    }
    fn aborted(&self, step: u8) {
        observe::<R>(|| LifecycleEvent::TeardownAborted {
            id: self.id.clone(),
            serial: self.serial,
            at_step: step,
        });
    }
    fn done(&self) {
        if self.main {
            observe::<R>(|| LifecycleEvent::TeardownDone {
                id: self.id.clone(),
                serial: self.serial,
            });
        }
    }
}

/// Builds agents and owns them.
pub struct Provider<R: Rt> {
    scope: Scope<R>,
    registry: Arc<Registry<R>>,
    store: Arc<SessionStore<R>>,
    attempts: Mutex<R, u64>,
    runner: Mutex<R, Option<Arc<dyn StepRunner>>>,
    drain: Mutex<R, Option<DrainHook>>,
    /// Set once by a server before any agent is built; a std cell, not
    /// the runtime's mutex, so the checkers see no extra scheduling point.
    journal_cap: std::sync::OnceLock<usize>,
}

impl<R: Rt> Provider<R> {
    /// A provider with its own scope over `registry` and `store`.
    pub fn new(name: &str, registry: Arc<Registry<R>>, store: Arc<SessionStore<R>>) -> Arc<Self> {
        Arc::new(Provider {
            scope: Scope::new(name, None),
            registry,
            store,
            attempts: Mutex::new(0),
            runner: Mutex::new(None),
            drain: Mutex::new(None),
            journal_cap: std::sync::OnceLock::new(),
        })
    }

    /// Have every agent built from now on perform its steps with `runner`.
    pub fn set_runner(&self, runner: Arc<dyn StepRunner>) {
        self.runner.with(|r| *r = Some(runner));
    }

    /// Have the teardown of every agent built from now on drain its
    /// background jobs with `drain` (S7), between D2's steps 2 and 3.
    pub fn set_drain(&self, drain: DrainHook) {
        self.drain.with(|d| *d = Some(drain));
    }

    /// Bound the journal of every agent built from now on to about `cap`
    /// records and `cap` prompt fates (A10: a long-lived server's memory
    /// does not grow with its turns). The harness leaves journals whole.
    /// The first call decides.
    pub fn bound_journals(&self, cap: usize) {
        let _ = self.journal_cap.set(cap);
    }

    /// The provider's scope.
    pub fn scope(&self) -> &Scope<R> {
        &self.scope
    }

    /// The registry it publishes to.
    pub fn registry(&self) -> &Arc<Registry<R>> {
        &self.registry
    }

    /// The session store it publishes to.
    pub fn store(&self) -> &Arc<SessionStore<R>> {
        &self.store
    }

    /// `agents.create(opts)`: a new agent with session id `id`, owned by
    /// `owner` (and by the provider).
    pub async fn create(&self, id: &str, owner: &Scope<R>) -> Result<AgentHandle<R>, CreateError> {
        self.build(id, owner, 0).await
    }

    /// `agents.resume(id)`: the agent of an existing durable session. Its
    /// log is recovered first (a torn tail cut, open turns closed
    /// `interrupted`: D9); a log that cannot be read or repaired fails the
    /// resume (D10).
    pub async fn resume(&self, id: &str, owner: &Scope<R>) -> Result<AgentHandle<R>, CreateError> {
        // Turn numbers continue from the log's (A9).
        // The log is streamed, never held whole (A10).
        let first = match self.store.recover_with(id, &mut |_| {}) {
            Ok(log) => log.next_prompt,
            Err(e) => {
                let e = CreateError::Storage(format!("the log of session {id:?}: {e}"));
                return Err(e);
            }
        };
        self.build(id, owner, first.unwrap_or(0)).await
    }

    /// An agent created from configuration: owned by the provider's scope,
    /// its handle dropped (D7).
    pub async fn create_from_config(&self, id: &str) -> Result<(), CreateError> {
        let scope = self.scope.clone();
        self.build(id, &scope, 0).await.map(drop)
    }

    /// Unload the provider: every agent it built is disposed (D1–D3, D7).
    pub fn unload(&self) -> BoxFuture<()> {
        self.scope.unload()
    }

    async fn build(
        &self,
        id: &str,
        owner: &Scope<R>,
        first_prompt: u64,
    ) -> Result<AgentHandle<R>, CreateError> {
        let attempt = self.attempts.with(|a| {
            *a += 1;
            *a
        });
        observe::<R>(|| LifecycleEvent::CreateBegan {
            id: id.to_string(),
            attempt,
        });
        let fail = |e: CreateError| self.create_failed(id, attempt, e);
        // Private state: a session serial and an unstarted agent.
        let prepared = match self.store.prepare(id) {
            Ok(p) => p,
            Err(_) => return fail(CreateError::AlreadyExists(id.to_string())),
        };
        let serial = prepared.serial();
        let runner = self.runner.with(|r| r.clone());
        let mut core = AgentCore::new(fault_point::<R>);
        core.continue_prompts_from(first_prompt);
        if let Some(cap) = self.journal_cap.get().copied() {
            core.bound_journal(cap);
        }
        let lp = Arc::new(Agent::<R>::prepare_core(
            id,
            core,
            self.store.sink(&prepared),
            runner,
        ));
        let private = Scope::private(&format!("agent {id}#{serial}"));
        // M24: the owner is checked before the setup await.
        let early = fault!(M24).then(|| self.owner_checked_early(owner));
        // Setup awaits (plugins, config): the window for races (R1, R3).
        R::yield_now().await;
        if let Some(owner_active) = early {
            return self
                .publish_unguarded(id, attempt, owner, (prepared, lp, private), owner_active)
                .await;
        }
        let handle = AgentHandle {
            agent: lp.agent.clone(),
            serial,
            effects: self.teardown(id, serial, lp.clone(), private.clone()),
        };
        // Publication is admitted by the owner and the provider's scope in
        // one section nested in both scopes' locks: their unload is wholly
        // before it (refused, nothing published) or wholly after it (and
        // disposes what was published) (R3). The session is entered, the
        // agent registered and its loop started inside.
        let publish = || match self.store.enter(prepared) {
            Ok(()) => {
                self.registry.insert(serial, lp.agent.clone());
                self.store.announce(id, serial);
                lp.start();
                Admission::Admitted
            }
            Err(_) => Admission::Failed,
        };
        let admission = if owner.same(&self.scope) {
            owner.admit(&handle.effects, publish)
        } else {
            owner.admit(&handle.effects, || {
                self.scope.admit(&handle.effects, publish)
            })
        };
        observe::<R>(|| LifecycleEvent::CreateChecked {
            id: id.to_string(),
            attempt,
            owner_active: admission != Admission::Refused,
        });
        match admission {
            Admission::Admitted => Ok(handle),
            Admission::Refused => {
                private.unload().await;
                fail(CreateError::OwnerUnloaded(id.to_string()))
            }
            Admission::Failed => {
                private.unload().await;
                fail(CreateError::AlreadyExists(id.to_string()))
            }
        }
    }

    /// Journal creation `attempt` of `id` as failed with `e`, and return it.
    fn create_failed(
        &self,
        id: &str,
        attempt: u64,
        e: CreateError,
    ) -> Result<AgentHandle<R>, CreateError> {
        observe::<R>(|| LifecycleEvent::CreateFailed {
            id: id.to_string(),
            attempt,
            reason: e.to_string(),
        });
        Err(e)
    }

    /// Fault M24's publication: the owner was checked before the setup
    /// await, and the scopes take the effects only after the agent is
    /// published, so an owner that unloaded meanwhile sees its agent
    /// published, then torn down.
    async fn publish_unguarded(
        &self,
        id: &str,
        attempt: u64,
        owner: &Scope<R>,
        (prepared, lp, private): (crate::store::Prepared<R>, Arc<AgentLoop<R>>, Scope<R>),
        owner_active: bool,
    ) -> Result<AgentHandle<R>, CreateError> {
        let fail = |e: CreateError| self.create_failed(id, attempt, e);
        observe::<R>(|| LifecycleEvent::CreateChecked {
            id: id.to_string(),
            attempt,
            owner_active,
        });
        if !owner_active {
            private.unload().await;
            return fail(CreateError::OwnerUnloaded(id.to_string()));
        }
        let serial = prepared.serial();
        if self.store.enter(prepared).is_err() {
            private.unload().await;
            return fail(CreateError::AlreadyExists(id.to_string()));
        }
        self.registry.insert(serial, lp.agent.clone());
        self.store.announce(id, serial);
        lp.start();
        let handle = AgentHandle {
            agent: lp.agent.clone(),
            serial,
            effects: self.teardown(id, serial, lp, private),
        };
        let owned = handle.effects.iter().all(|e| owner.add(e.clone()));
        let provided =
            owner.same(&self.scope) || handle.effects.iter().all(|e| self.scope.add(e.clone()));
        if !(owned && provided) {
            handle.dispose_as("create-lost-race").await;
            return fail(CreateError::OwnerUnloaded(id.to_string()));
        }
        Ok(handle)
    }

    fn teardown(
        &self,
        id: &str,
        serial: u64,
        lp: Arc<AgentLoop<R>>,
        private: Scope<R>,
    ) -> Vec<Arc<Effect<R>>> {
        let step =
            |n: u8, f: BoxFuture<Result<(), String>>| -> Disposer { (n, Box::new(move || f)) };
        let (registry, store) = (self.registry.clone(), self.store.clone());
        let (id1, id2) = (id.to_string(), id.to_string());
        let (lp1, lp2) = (lp.clone(), lp);
        let unwind = step(
            5,
            Box::pin(async move {
                private.unload().await;
                Ok(())
            }),
        );
        let session = step(4, Box::pin(async move { store.detach(&id2, serial) }));
        let store2 = self.store.clone();
        let agent = step(
            3,
            // The entry detaches and the session's id is freed in one lock
            // section (R1, R2): a same-id create never sees the id free
            // while the old entry is still registered.
            Box::pin(async move { registry.detach_then(&id1, serial, || store2.retire(serial)) }),
        );
        // M20: the teardown has no drain; the agent's jobs outlive it.
        let drain = match self.drain.with(|d| d.clone()) {
            Some(hook) if !fault!(M20) => {
                let owner = id.to_string();
                vec![step(
                    DRAIN_STEP,
                    Box::pin(async move {
                        hook(&owner).await;
                        Ok(())
                    }),
                )]
            }
            _ => vec![],
        };
        let await_loop = step(
            2,
            Box::pin(async move {
                lp2.join().await;
                Ok(())
            }),
        );
        let stop = step(
            1,
            Box::pin(async move {
                lp1.begin_stop();
                Ok(())
            }),
        );
        let observer = |main| {
            Arc::new(Journaled::<R> {
                id: id.to_string(),
                serial,
                main,
                _rt: PhantomData,
            }) as Arc<dyn EffectObserver>
        };
        let name = format!("agent {id}#{serial}");
        if fault!(M1) {
            // M1: the session lifecycle is a SIBLING effect, disposed
            // concurrently with the loop's.
            let mut main = vec![unwind, agent];
            main.extend(drain);
            main.extend([await_loop, stop]);
            vec![
                Effect::new(&name, main, observer(true)),
                Effect::new(
                    &format!("session {id}#{serial}"),
                    vec![session],
                    observer(false),
                ),
            ]
        } else {
            // Set up in order 5..1 so LIFO teardown runs 1, 2, drain, 3..5
            // (D2, S7).
            let mut list = vec![unwind, session, agent];
            list.extend(drain);
            list.extend([await_loop, stop]);
            vec![Effect::new(&name, list, observer(true))]
        }
    }
}

/// Fault M24's code, reached only when `fault!(M24)`: excluded
/// from mutation like the fault switches (`.cargo/mutants.toml`).
impl<R: Rt> Provider<R> {
    /// M24: whether the owner and the provider's scope are active, read
    /// before the setup await (then trusted after it, R3).
    fn owner_checked_early(&self, owner: &Scope<R>) -> bool {
        owner.is_active() && self.scope.is_active()
    }
}
