//! The world a scenario or a race test runs in: a session store over a
//! durable backend, a registry, a provider, journaled scopes, optionally
//! an ACP bridge and tool-bash over a shell, and the end-of-execution
//! checks every such execution shares.
//!
//! [`Rig::builder`] makes one on any backend:
//!
//! ```no_run
//! # use lifecycle_harness::scenarios::rig::Rig;
//! # use lifecycle::rt::SimRt;
//! let rig = Rig::<SimRt>::builder().bridge().tool_bash().build();
//! let bridge = rig.bridge.clone().expect("asked for");
//! ```

use super::held::{HeldDurable, HeldSteps};
use super::Outcome;
use crate::acp::Bridge;
use crate::agent::Agent;
use crate::context::{self, Context};
use crate::events::LifecycleEvent;
use crate::faults::Faults;
use crate::oracle::{check_durable, check_journal, Violation, ORACLE_RULES};
use crate::oracle_world::{check_world, WORLD_RULES};
use crate::provider::Provider;
use crate::registry::Registry;
use crate::rt::{self, Monitor, Mutex, Rt};
use crate::rules::Rule;
use crate::scope::Scope;
use crate::shell::sim::SimShell;
use crate::shell::ShellExecutor;
use crate::store::durable::{Durable, MemoryDurable};
use crate::store::SessionStore;
use crate::tool_bash::ToolBash;
use crate::world::World;
use std::sync::Arc;

/// A caller that gives up on `call` (a timeout, a `select`): a timer task
/// races it, and every checker explores where the timer runs relative to
/// the call's suspension points, so the call's future is dropped at each
/// of them, or completes first (D8). `Some(output)` if it completed.
pub async fn give_up<R: Rt, T>(call: impl std::future::Future<Output = T>) -> Option<T> {
    give_up_noting::<R, T, ()>(call, || ()).await.ok()
}

/// How a call whose caller gave up on it ended, and where the teardown it
/// started was when its future was dropped (read from the world journal):
/// the fact of `dropped-dispose` and `dropped-unload`. Shown as
/// `first:dropped-mid-teardown`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum First {
    /// The call completed before the timeout fired.
    Completed,
    /// Dropped before the teardown began.
    DroppedBeforeTeardown,
    /// Dropped after the teardown began and before it finished.
    DroppedMidTeardown,
    /// Dropped after the teardown finished (a dispose).
    DroppedAfterTeardown,
    /// Dropped after the teardown, while its scope unloaded (an unload).
    DroppedInScopeUnload,
    /// Dropped after its scope unloaded (an unload).
    DroppedAfterUnload,
}

impl std::fmt::Display for First {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            First::Completed => "first:completed",
            First::DroppedBeforeTeardown => "first:dropped-before-teardown",
            First::DroppedMidTeardown => "first:dropped-mid-teardown",
            First::DroppedAfterTeardown => "first:dropped-after-teardown",
            First::DroppedInScopeUnload => "first:dropped-in-scope-unload",
            First::DroppedAfterUnload => "first:dropped-after-unload",
        })
    }
}

/// As [`give_up`], but on a drop `noting` runs first, while the call's
/// future still holds its work: what it reads (where the call had got to)
/// cannot race with a task the drop leaves to continue that work. `Err`
/// carries what it noted.
pub async fn give_up_noting<R: Rt, T, N>(
    call: impl std::future::Future<Output = T>,
    noting: impl FnOnce() -> N,
) -> Result<T, N> {
    let fired = Arc::new(Monitor::<R, bool>::new(false));
    let f2 = fired.clone();
    let timer = rt::spawn::<R, ()>("timeout", async move { f2.update(|f| *f = true) });
    let result = {
        let call = std::pin::pin!(call);
        let timeout = std::pin::pin!(fired.wait_until("timeout", |f| f.then_some(())));
        match futures::future::select(call, timeout).await {
            futures::future::Either::Left((out, _)) => Ok(out),
            // The call's future is dropped at the end of this block.
            futures::future::Either::Right(_) => Err(noting()),
        }
    };
    timer.join().await;
    result
}

/// `main` beside a named side caller: the side on a task of its own,
/// started before `main` runs; or, in loom's shape
/// ([`Ctx::few_threads`](super::Ctx::few_threads)), joined with `main` in
/// the calling task, where the two interleave at their awaits (a
/// `yield_now`, a wait, a lock) rather than at every step. Returns both
/// outputs once both are done.
pub async fn beside<R: Rt, M, S>(
    few_threads: bool,
    main: M,
    side: (&str, S),
) -> (M::Output, S::Output)
where
    M: std::future::Future,
    S: std::future::Future + Send + 'static,
    S::Output: Send + 'static,
{
    if few_threads {
        return futures::join!(main, side.1);
    }
    let task = rt::spawn::<R, _>(side.0, side.1);
    let m = main.await;
    (m, task.join().await)
}

/// The message of the deliberately panicking disposal listeners (D4).
pub const LISTENER_PANIC: &str = "listener boom";

/// Store, registry, provider and journal of one execution.
pub struct Rig<R: Rt> {
    /// The world journal.
    pub world: Arc<World<R>>,
    /// The session store.
    pub store: Arc<SessionStore<R>>,
    /// The store's disk (a generated workload seeds a session on it).
    pub durable: Arc<dyn Durable>,
    /// The registry.
    pub registry: Arc<Registry<R>>,
    /// The provider (factory).
    pub provider: Arc<Provider<R>>,
    /// The faults switched on.
    pub faults: Faults,
    /// The ACP bridge over the provider, owned by scope `acp`, if the
    /// builder asked for one.
    pub bridge: Option<Arc<Bridge<R>>>,
    /// tool-bash over the rig's shell, if the builder asked for it.
    pub tool_bash: Option<Arc<ToolBash<R>>>,
    /// The simulated shell, if the builder asked for one (or for tool-bash
    /// without a shell of its own): scripts its commands
    /// ([`SimShell::script`]; [`Script::held`](crate::shell::sim::Script::held)
    /// for a job that runs until ended) and ends a job at a chosen moment
    /// ([`SimShell::exit`]). Its jobs' histories are the receiving side
    /// of S7 at [`finish`](Rig::finish).
    pub shell: Option<Arc<SimShell<R>>>,
    /// The provider's step runner, if the builder asked for held steps:
    /// every agent's steps announce themselves and wait to be let go.
    pub steps: Option<Arc<HeldSteps<R>>>,
    /// The session store's disk, if the builder asked for held flushes:
    /// every flush waits at its I/O point until let go.
    pub flushes: Option<Arc<HeldDurable<R>>>,
    tracked: Mutex<R, Vec<(Agent<R>, u64)>>,
    /// Background jobs the scenario started, with the caller that started
    /// each: the owners as the scenario knows them, not as tool-bash says.
    jobs: Mutex<R, Vec<(String, Option<String>)>>,
}

/// Builds a [`Rig`]: faults, a durable backend, a shell, a bridge and
/// tool-bash, each optional (none, in-memory, none, none, none).
pub struct RigBuilder<R: Rt> {
    faults: Faults,
    durable: Option<Arc<dyn Durable>>,
    shell: Option<Arc<dyn ShellExecutor>>,
    sim_shell: bool,
    bridge: bool,
    tool_bash: bool,
    held_steps: bool,
    held_flushes: bool,
    _rt: std::marker::PhantomData<R>,
}

impl<R: Rt> RigBuilder<R> {
    /// With these faults switched on.
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// Over this durable backend instead of an in-memory disk.
    pub fn durable(mut self, durable: Arc<dyn Durable>) -> Self {
        self.durable = Some(durable);
        self
    }

    /// With this shell beside the provider: every agent drains its
    /// background jobs on it in its teardown (S7), and tool-bash runs on it.
    pub fn shell(mut self, shell: Arc<dyn ShellExecutor>) -> Self {
        self.shell = Some(shell);
        self
    }

    /// With a simulated shell beside the provider ([`Rig::shell`]), unless
    /// a shell was given: every agent drains its background jobs on it in
    /// its teardown (S7), and tool-bash runs on it.
    pub fn sim_shell(mut self) -> Self {
        self.sim_shell = true;
        self
    }

    /// With an ACP bridge over the provider (owner scope `acp`).
    pub fn bridge(mut self) -> Self {
        self.bridge = true;
        self
    }

    /// With tool-bash loaded over the shell (a simulated shell if none was
    /// given).
    pub fn tool_bash(mut self) -> Self {
        self.tool_bash = true;
        self
    }

    /// With held steps ([`Rig::steps`], `scenarios::held::HeldSteps`) as
    /// the provider's step runner.
    pub fn held_steps(mut self) -> Self {
        self.held_steps = true;
        self
    }

    /// With held flushes ([`Rig::flushes`], `scenarios::held::HeldDurable`)
    /// as the store's disk, in place of any durable backend given.
    pub fn held_flushes(mut self) -> Self {
        self.held_flushes = true;
        self
    }

    /// The rig.
    pub fn build(self) -> Rig<R> {
        const {
            assert!(
                R::CONTEXT,
                "a rig needs a backend with a harness context: its faults and journal would be \
                 ignored (use CheckedTokioRt, not production's TokioRt)"
            )
        };
        let faults = self.faults;
        let world = World::<R>::new();
        let flushes = self.held_flushes.then(HeldDurable::<R>::new);
        let durable = match (&flushes, self.durable) {
            (Some(held), _) => held.clone() as Arc<dyn Durable>,
            (None, Some(d)) => d,
            (None, None) => Arc::new(MemoryDurable::<R>::default()),
        };
        // The execution's faults, and its events into this rig's journal,
        // from here on (`rt::context`).
        context::enter(Context::new(faults).observed(world.clone()));
        let store = SessionStore::new(durable.clone());
        let registry = Registry::new();
        let provider = Provider::new("provider", registry.clone(), store.clone());
        let sim = (self.shell.is_none() && (self.sim_shell || self.tool_bash))
            .then(|| Arc::new(SimShell::<R>::default()));
        let shell = self
            .shell
            .or_else(|| sim.clone().map(|s| s as Arc<dyn ShellExecutor>));
        let mut rig = Rig {
            world,
            store,
            durable,
            registry,
            provider,
            faults,
            bridge: None,
            tool_bash: None,
            shell: sim,
            steps: None,
            flushes,
            tracked: Mutex::new(Vec::new()),
            jobs: Mutex::new(Vec::new()),
        };
        if let Some(shell) = shell {
            rig.set_shell(shell.clone());
            if self.tool_bash {
                rig.tool_bash = Some(ToolBash::load(shell, rig.registry.clone()));
            }
        }
        if self.held_steps {
            let steps = HeldSteps::<R>::new();
            rig.provider.set_runner(steps.clone());
            rig.steps = Some(steps);
        }
        if self.bridge {
            rig.bridge = Some(Bridge::new(rig.provider.clone(), rig.owner("acp")));
        }
        rig
    }
}

impl<R: Rt> Rig<R> {
    /// A builder: no faults, an in-memory disk, no shell, bridge or
    /// tool-bash until asked for.
    pub fn builder() -> RigBuilder<R> {
        RigBuilder {
            faults: Faults::none(),
            durable: None,
            shell: None,
            sim_shell: false,
            bridge: false,
            tool_bash: false,
            held_steps: false,
            held_flushes: false,
            _rt: std::marker::PhantomData,
        }
    }

    /// A rig over `durable`, or over an in-memory disk.
    pub fn new(faults: Faults, durable: Option<Arc<dyn Durable>>) -> Self {
        let b = Self::builder().faults(faults);
        match durable {
            Some(d) => b.durable(d),
            None => b,
        }
        .build()
    }

    /// A second view of the same world (shares the store, registry,
    /// provider and journal; tracks nothing).
    pub fn clone_parts(&self) -> Rig<R> {
        Rig {
            world: self.world.clone(),
            store: self.store.clone(),
            durable: self.durable.clone(),
            registry: self.registry.clone(),
            provider: self.provider.clone(),
            faults: self.faults,
            bridge: self.bridge.clone(),
            tool_bash: self.tool_bash.clone(),
            shell: self.shell.clone(),
            steps: self.steps.clone(),
            flushes: self.flushes.clone(),
            tracked: Mutex::new(Vec::new()),
            jobs: Mutex::new(Vec::new()),
        }
    }

    /// Make this rig's faults and journal the execution's context again,
    /// after another rig was built in the same execution (building one
    /// enters its own, `rt::context`).
    pub fn enter(&self) {
        context::enter(Context::new(self.faults).observed(self.world.clone()));
    }

    /// An owner scope: journaled, with the execution's faults (M29).
    pub fn owner(&self, name: &str) -> Scope<R> {
        Scope::new(name, None)
    }

    /// Registry entries and sessions left whose id `owned` says belongs to
    /// someone (e.g. the ACP bridge), as `id#serial` strings.
    pub fn leftovers(&self, owned: impl Fn(&str) -> bool) -> Vec<String> {
        let mut left: Vec<String> = self
            .registry
            .entries()
            .into_iter()
            .chain(self.store.sessions())
            .filter(|(id, _)| owned(id))
            .map(|(id, serial)| format!("{id}#{serial}"))
            .collect();
        left.dedup();
        left
    }

    /// Wire the shell beside the provider: every agent built from now on
    /// drains its background jobs on `shell` in its teardown (S7).
    pub fn set_shell(&self, shell: Arc<dyn ShellExecutor>) {
        self.provider.set_drain(crate::shell::drain_hook(shell));
    }

    /// Start `command` in the background as agent `caller` (S1: the job's
    /// owner), through tool-bash if the rig has it (its completion notice
    /// then goes to the owner, S6), else on the rig's shell; and record it
    /// for the end's S6 and S7 checks. The job's id, or the shell's error.
    /// Panics when the rig has no shell.
    pub async fn start_job(&self, caller: &str, command: &str) -> Result<String, String> {
        let started = match &self.tool_bash {
            Some(tb) => tb.bash(Some(caller), command, true).await?,
            None => {
                let shell = self
                    .shell
                    .clone()
                    .expect("start_job: the rig has no shell (RigBuilder::sim_shell)");
                let request = crate::shell::ShellExecRequest {
                    command: command.to_string(),
                    background: true,
                    owner: Some(caller.to_string()),
                    cwd: None,
                };
                shell.exec(request.into()).await?
            }
        };
        match started {
            crate::shell::ExecResult::Started { job } => {
                self.job_started(&job, Some(caller));
                Ok(job)
            }
            other => Err(format!("{command} did not start a job: {other:?}")),
        }
    }

    /// Record that the scenario started `job` as `caller` (S6's oracle).
    pub fn job_started(&self, job: &str, caller: Option<&str>) {
        self.jobs
            .with(|j| j.push((job.to_string(), caller.map(str::to_string))));
    }

    /// Check this agent (journal and durable log) at the end.
    pub fn track(&self, agent: &Agent<R>, serial: u64) {
        self.tracked.with(|t| {
            // An instance is checked once, however often a scenario
            // reaches it (a load that heals a session in place).
            if !t.iter().any(|(_, s)| *s == serial) {
                t.push((agent.clone(), serial));
            }
        });
    }

    /// Run every shared check, add the scenario's own, and build the outcome.
    pub fn finish(&self, fact: impl super::Fact, own: Vec<(bool, Violation)>) -> Outcome {
        let events = self.world.events();
        let mut violations = check_world(&events);
        let tracked = self.tracked.with(|t| t.clone());
        for (agent, _) in &tracked {
            let journal = agent.journal();
            violations.extend(check_journal(&journal));
            violations.extend(check_durable(&journal, &agent.durable_log()));
        }
        // D4: a finished teardown leaves neither a registry entry nor a
        // session behind.
        let (entries, sessions) = (self.registry.entries(), self.store.sessions());
        for ev in &events {
            if let LifecycleEvent::TeardownDone { id, serial } = ev {
                if entries.iter().any(|(i, s)| i == id && s == serial) {
                    violations.push(Violation::new(
                        Rule::D4,
                        format!("agent {id}#{serial} still registered after its teardown"),
                    ));
                }
                if sessions.iter().any(|(i, s)| i == id && s == serial) {
                    violations.push(Violation::new(
                        Rule::D4,
                        format!("session {id}#{serial} still in the store after its teardown"),
                    ));
                }
            }
        }
        let jobs = self.jobs.with(|j| j.clone());
        violations.extend(check_notices(&jobs, &tracked));
        let drains = self.shell.as_ref().filter(|_| !jobs.is_empty());
        if let Some(shell) = drains {
            violations.extend(check_drained(shell, &jobs, &events, &entries));
        }
        let invariants = WORLD_RULES.len()
            + 1
            + usize::from(!jobs.is_empty())
            + usize::from(drains.is_some())
            + tracked.len() * ORACLE_RULES.len()
            + own.len();
        violations.extend(own.into_iter().filter(|(ok, _)| !ok).map(|(_, v)| v));
        let (label, fact) = Outcome::said(fact);
        Outcome {
            violations,
            label,
            fact,
            invariants,
            journal: tracked
                .first()
                .map(|(a, _)| a.journal())
                .unwrap_or_default(),
            world: events,
        }
    }
}

/// S7, observed on the receiving side (the simulated shell's history of
/// each job): a job whose owner id was torn down and has no registered
/// agent now was settled and then forgotten by a drain. A job whose owner
/// id is registered again is left alone (a drain of that id is still to
/// come), so the check is conservative.
fn check_drained<R: Rt>(
    shell: &SimShell<R>,
    jobs: &[(String, Option<String>)],
    events: &[LifecycleEvent],
    entries: &[(String, u64)],
) -> Vec<Violation> {
    let torn_down = |owner: &str| {
        events
            .iter()
            .any(|e| matches!(e, LifecycleEvent::TeardownDone { id, .. } if id == owner))
            && !entries.iter().any(|(id, _)| id == owner)
    };
    jobs.iter()
        .filter_map(|(job, owner)| Some((job, owner.as_deref()?)))
        .filter(|(_, owner)| torn_down(owner))
        .filter_map(|(job, owner)| {
            let history = shell.history(job);
            (!crate::shell::sim::JobFate::drained(&history)).then(|| {
                Violation::new(
                    Rule::S7,
                    format!(
                        "{job} of {owner} after its owner's teardown: the shell saw {history:?}, not settled then forgotten"
                    ),
                )
            })
        })
        .collect()
}

/// S6, observed on the receiving side: every completion notice a tracked
/// agent ran (a `user/message` `[bash] <job> finished ...` in its durable
/// log) belongs to a job the scenario started as exactly that agent's id,
/// and no job's notice ran in two agents. The owners come from the
/// scenario's own record, never from tool-bash or its `Notice` events.
fn check_notices<R: Rt>(
    jobs: &[(String, Option<String>)],
    tracked: &[(Agent<R>, u64)],
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (agent, serial) in tracked {
        for entry in agent.durable_log() {
            let crate::session_log::Entry::UserMessage { text, .. } = entry else {
                continue;
            };
            let Some(job) = text
                .strip_prefix("[bash] ")
                .and_then(|t| t.split(' ').next())
            else {
                continue;
            };
            let Some((_, owner)) = jobs.iter().find(|(j, _)| j == job) else {
                continue;
            };
            let at = format!("{}#{serial}", agent.id());
            if owner.as_deref() != Some(agent.id()) {
                out.push(Violation::new(
                    Rule::S6,
                    format!(
                        "the completion notice of {job} (started by {owner:?}) ran in agent {at}, whose id is not the owner"
                    ),
                ));
            }
            if let Some((_, first)) = seen.iter().find(|(j, _)| j == job) {
                out.push(Violation::new(
                    Rule::S6,
                    format!("the completion notice of {job} ran twice: in {first} and in {at}"),
                ));
            }
            seen.push((job.to_string(), at));
        }
    }
    out
}
