//! Scopes and effects: who owns what, and in which order it is torn down.
//!
//! An [`Effect`] is set up with a list of disposers. Its teardown runs them
//! in LIFO order, each awaited, and is memoized: every caller of
//! [`Effect::dispose`] reaches the same single run and resolves only when it
//! is over (D1). A failing disposer is logged and cannot skip a later one
//! (D4).
//!
//! A [`Scope`] owns effects and child scopes. [`Scope::unload`] disposes its
//! sibling effects and children concurrently: all started together, then
//! joined (Promise.all). That concurrency is exactly why the session's
//! lifecycle must live INSIDE the agent's composite effect and not beside it
//! (SPEC M1).
//!
//! States: effect `Armed` → `Running` → `Done`; scope `Active` →
//! `Unloading` → `Unloaded` (a scope that is not active refuses new effects,
//! which is how a creation learns its owner is going away, R3).
//!
//! Cancel-safety (D8): the teardown chain and a scope's unload are shared
//! futures kept in the state (a `Relay`: `Started`, `Unloading`), not
//! local to the first caller. Every caller drives the same future, so a
//! caller that drops its `dispose()` or `unload()` (a timeout, a `select`)
//! leaves the work where it stopped, and a task spawned at the drop (or a
//! caller that comes first) continues it: no step is skipped, repeated or
//! wedged. Fault M15 runs the teardown inside the first caller's future
//! instead; faults M25 (the teardown) and M29 (a scope's unload) park a
//! dropped caller's work until a later caller continues it.

use crate::events::LifecycleEvent;
use crate::rt::context::{fault, observe};
use crate::rt::{BoxFuture, Monitor, Relay, Rt, Wait};
use std::sync::Arc;

/// One teardown step: a name and the future that performs it.
pub type Disposer = (
    u8,
    Box<dyn FnOnce() -> BoxFuture<Result<(), String>> + Send>,
);

enum EffectState<R: Rt> {
    Armed(Vec<Disposer>),
    /// The chain, driven by every caller (`Relay`, D8).
    Started(Arc<Relay<R>>),
}

/// Told what happens to an effect (the world journal listens here).
pub trait EffectObserver: Send + Sync {
    /// `dispose(by)` was called.
    fn called(&self, _by: &str) {}
    /// `dispose(by)` returned.
    fn returned(&self, _by: &str) {}
    /// The chain started.
    fn began(&self) {}
    /// A step finished, with its error if it failed.
    fn step(&self, _step: u8, _error: Option<&str>) {}
    /// The chain stopped at `step` (fault M10 only).
    fn aborted(&self, _step: u8) {}
    /// The chain finished.
    fn done(&self) {}
}

/// An observer that ignores everything.
pub struct Unobserved;
impl EffectObserver for Unobserved {}

/// A composite effect: disposers run LIFO, once.
pub struct Effect<R: Rt> {
    name: String,
    state: Monitor<R, EffectState<R>>,
    observer: Arc<dyn EffectObserver>,
}

impl<R: Rt> Effect<R> {
    /// An effect whose teardown runs `disposers` in reverse order of this
    /// list (the last set up is the first torn down). `observer` is told of
    /// each call, the chain's start, each finished step (with its error, if
    /// any) and the end.
    pub fn new(
        name: &str,
        disposers: Vec<Disposer>,
        observer: Arc<dyn EffectObserver>,
    ) -> Arc<Self> {
        Arc::new(Effect {
            name: name.to_string(),
            state: Monitor::new(EffectState::Armed(disposers)),
            observer,
        })
    }

    /// The effect's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether its teardown has finished.
    pub fn is_done(&self) -> bool {
        self.state.read(|s| match s {
            EffectState::Armed(_) => false,
            EffectState::Started(relay) => relay.is_done(),
        })
    }

    /// Tear down: the first caller starts the chain; every caller drives it
    /// and resolves when it is over (D1), even if the caller that started
    /// it gave up (D8). `by` names the caller (a handle, a scope).
    pub async fn dispose(&self, by: &str) {
        self.observer.called(by);
        self.run_once().await;
        self.observer.returned(by);
    }

    async fn run_once(&self) {
        let (relay, first) = self.state.update(|s| match s {
            EffectState::Armed(list) => {
                let list = std::mem::take(list);
                let work = chain::<R>(list, self.name.clone(), self.observer.clone());
                let relay = Arc::new(Relay::new(Box::pin(work)));
                *s = EffectState::Started(relay.clone());
                (relay, true)
            }
            EffectState::Started(relay) => (relay.clone(), false),
        });
        if fault!(M6) && !first {
            // M6: not memoized; a second caller does not wait for the run.
            return;
        }
        match () {
            () if fault!(M15) => relay.drive_unguarded(Wait::TEARDOWN).await,
            () if fault!(M25) => relay.drive_parking(Wait::TEARDOWN).await,
            () => relay.drive(Wait::TEARDOWN).await,
        }
    }
}

/// The teardown chain: the disposers in LIFO order, each awaited; a
/// failing one is logged and cannot skip a later one (D4).
async fn chain<R: Rt>(mut list: Vec<Disposer>, name: String, observer: Arc<dyn EffectObserver>) {
    observer.began();
    while let Some((step, disposer)) = list.pop() {
        let result = disposer().await;
        observer.step(step, result.as_ref().err().map(String::as_str));
        if let Err(e) = result {
            tracing::warn!(effect = %name, step, error = %e, "teardown step failed; contained");
            if fault!(M10) {
                // M10: the failure rejects the chain; later steps are skipped.
                observer.aborted(step);
                break;
            }
        }
    }
    observer.done();
}

/// What [`Scope::admit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The scope is not active: nothing ran.
    Refused,
    /// The publication itself failed (for example `already exists`).
    Failed,
    /// Published, and the effects are owned.
    Admitted,
}

enum ScopeState<R: Rt> {
    Active {
        effects: Vec<Arc<Effect<R>>>,
        children: Vec<Scope<R>>,
    },
    /// The unload's work, driven by every caller (`Relay`, D8).
    Unloading(Arc<Relay<R>>),
    Unloaded,
}

/// Told when a scope starts (`false`) and finishes (`true`) unloading.
pub type UnloadHook = Arc<dyn Fn(&str, bool) + Send + Sync>;

struct ScopeInner<R: Rt> {
    name: String,
    state: Monitor<R, ScopeState<R>>,
    on_unload: Option<UnloadHook>,
    /// Whether the harness journals its unload and may switch fault M29
    /// on in it: every scope but a private one ([`Scope::private`]).
    harnessed: bool,
}

/// An owner of effects (the note's fiber). Cheap to clone.
pub struct Scope<R: Rt> {
    inner: Arc<ScopeInner<R>>,
}

impl<R: Rt> Clone for Scope<R> {
    fn clone(&self) -> Self {
        Scope {
            inner: self.inner.clone(),
        }
    }
}

impl<R: Rt> Scope<R> {
    /// A root scope. `on_unload(name, done)` is told when it starts and ends
    /// unloading.
    pub fn new(name: &str, on_unload: Option<UnloadHook>) -> Self {
        Self::build(name, on_unload, true)
    }

    /// A scope private to the code that made it (the provider's scope of
    /// one agent): the harness neither journals its unload nor switches a
    /// scope fault on in it, its children included.
    pub(crate) fn private(name: &str) -> Self {
        Self::build(name, None, false)
    }

    fn build(name: &str, on_unload: Option<UnloadHook>, harnessed: bool) -> Self {
        Scope {
            inner: Arc::new(ScopeInner {
                name: name.to_string(),
                state: Monitor::new(ScopeState::Active {
                    effects: Vec::new(),
                    children: Vec::new(),
                }),
                on_unload,
                harnessed,
            }),
        }
    }

    /// The scope's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Tell the hook, and the harness's journal, that the unload began
    /// (`done` false) or ended.
    fn told(&self, done: bool) {
        let name = &self.inner.name;
        if let Some(f) = &self.inner.on_unload {
            f(name, done);
        }
        if self.inner.harnessed {
            observe::<R>(|| match done {
                false => LifecycleEvent::ScopeUnloading {
                    scope: name.clone(),
                },
                true => LifecycleEvent::ScopeUnloaded {
                    scope: name.clone(),
                },
            });
        }
    }

    /// A child scope, unloaded with this one. `None` if this one is not
    /// active.
    pub fn child(&self, name: &str) -> Option<Scope<R>> {
        let child = Scope::build(name, self.inner.on_unload.clone(), self.inner.harnessed);
        let c = child.clone();
        self.inner
            .state
            .update(|s| match s {
                ScopeState::Active { children, .. } => {
                    children.push(c);
                    true
                }
                _ => false,
            })
            .then_some(child)
    }

    /// Whether `other` is this very scope.
    pub fn same(&self, other: &Scope<R>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether the scope still takes effects.
    pub fn is_active(&self) -> bool {
        self.inner
            .state
            .read(|s| matches!(s, ScopeState::Active { .. }))
    }

    /// Own `effect`; `false` if the scope is unloading or unloaded.
    pub fn add(&self, effect: Arc<Effect<R>>) -> bool {
        self.inner.state.update(|s| match s {
            ScopeState::Active { effects, .. } => {
                effects.retain(|e| !e.is_done());
                effects.push(effect);
                true
            }
            _ => false,
        })
    }

    /// Admit a publication: if the scope is active, run `publish` under the
    /// scope's lock and, if it answers [`Admission::Admitted`], own
    /// `effects`, all in one section. The scope's unload is then wholly
    /// before the publication (which is refused: nothing runs) or wholly
    /// after it (and disposes what was published): a creation whose owner
    /// unloads during setup publishes nothing (R3). Nested admissions take
    /// the locks outside-in (owner, then provider scope, then store and
    /// registry).
    pub fn admit(
        &self,
        effects: &[Arc<Effect<R>>],
        publish: impl FnOnce() -> Admission,
    ) -> Admission {
        self.inner.state.update(|s| match s {
            ScopeState::Active { effects: own, .. } => {
                let answer = publish();
                if answer == Admission::Admitted {
                    own.retain(|e| !e.is_done());
                    own.extend(effects.iter().cloned());
                }
                answer
            }
            _ => Admission::Refused,
        })
    }

    /// Resolves once an unload that has begun is over, without driving it
    /// (at once if none has begun): work a dropped caller started finishes
    /// by itself (D8). `label` names the wait in stall reports.
    pub async fn unloaded(&self, label: Wait) {
        self.inner
            .state
            .wait_until(label, |s| {
                (!matches!(**s, ScopeState::Unloading(_))).then_some(())
            })
            .await
    }

    /// Unload: refuse new effects, then dispose every effect and child
    /// concurrently and wait for all of them. Idempotent; a second caller
    /// drives the same work and resolves when it is over, and work whose
    /// caller gave up runs to completion by itself (D8).
    pub fn unload(&self) -> BoxFuture<()> {
        let this = self.clone();
        Box::pin(async move {
            // The hook hears of the flip inside the same section, so its
            // journal entry is exactly ordered with admissions (R3).
            let relay = this.inner.state.update(|s| match s {
                ScopeState::Active { effects, children } => {
                    let (effects, children) = (std::mem::take(effects), std::mem::take(children));
                    this.told(false);
                    let relay = Arc::new(Relay::new(unload_work(this.clone(), effects, children)));
                    *s = ScopeState::Unloading(relay.clone());
                    Some(relay)
                }
                ScopeState::Unloading(relay) => Some(relay.clone()),
                ScopeState::Unloaded => None,
            });
            match relay {
                // M29: the work of a dropped unload waits for a later caller.
                Some(relay) if this.inner.harnessed && fault!(M29) => {
                    relay.drive_parking(Wait::SCOPE_UNLOAD).await
                }
                Some(relay) => relay.drive(Wait::SCOPE_UNLOAD).await,
                None => {}
            }
        })
    }
}

/// A scope's unload: its sibling effects and children, all started
/// together and joined (Promise.all); then `Unloaded` and the hook.
fn unload_work<R: Rt>(
    this: Scope<R>,
    effects: Vec<Arc<Effect<R>>>,
    children: Vec<Scope<R>>,
) -> BoxFuture<()> {
    Box::pin(async move {
        let mut all: Vec<BoxFuture<()>> = Vec::new();
        for e in effects {
            let by = format!("unload {}", this.inner.name);
            all.push(Box::pin(async move {
                e.dispose(&by).await;
            }));
        }
        for c in children {
            all.push(c.unload());
        }
        futures::future::join_all(all).await;
        let first = this.inner.state.update(|s| {
            let first = !matches!(s, ScopeState::Unloaded);
            *s = ScopeState::Unloaded;
            first
        });
        if first {
            this.told(true);
        }
    })
}
