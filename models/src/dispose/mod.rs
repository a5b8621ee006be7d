//! The dispose and identity model: creation (prepare → setup await →
//! admission), the memoized teardown effect and who reaches it, scopes with
//! sibling effects, the registry with its exact `(id, serial)` detach (and
//! a stale or repeated one), and the session store with its durable log
//! (SPEC D1–D5, D7, D8, R1–R3).
//!
//! # Parts and states
//! - Creation attempts (fixed at init): `a` by the owner scope, `a` again by
//!   the owner scope (the same-id race, R1); and `b` from configuration (owned
//!   by the provider scope, its handle dropped, D7) already published at
//!   the start. Phases: `Idle` → `Prepared` (private state built; the
//!   setup await runs until the creation's next step, so any other action,
//!   an unload among them, can land in between) → `Ok` through `Publish`,
//!   the admission: in one section nested in both scopes' locks it checks
//!   that the owner and the provider are active, enters the session
//!   (rechecking the id, R1), registers the agent, starts its loop and gives
//!   the effects to both scopes; else `Failed(..)` with nothing published
//!   (a loser, R1, or a creation whose owner unloaded, R3). Fault M24
//!   checks the owner before the setup await instead: `Prepared` →
//!   `Checked` (`Check`) → setup await → `Entered` (`Enter`: session
//!   entered, agent registered and started, unguarded) → `Ok` (`Publish`:
//!   the scopes take the effects), or `Disposing` when a scope that began
//!   unloading meanwhile refuses them: it disposes what it published, then
//!   fails.
//! - Per published agent: its loop (`Running` → `Ended` (`turn/end`
//!   appended) → `Flushed` → `Exited` once disposed), its teardown effect
//!   (`Armed` → `Running(step)` → `Done`), and the callers waiting on it
//!   (each waiting → gone: returned, or its future dropped mid-chain, D8).
//!   The chain is shared work kept in the effect: any caller still waiting
//!   drives it, and a caller dropped mid-chain leaves a task that drives it
//!   on, so it finishes with no further call (D8; fault M15: only the first
//!   caller's future drives it, so dropping that caller wedges it for
//!   good). A scope's unload is shared work of the same kind: its dropped
//!   caller leaves a task that drives the unload, and so the chains it
//!   waits on (fault M25: a dropped handle leaves none; fault M29: a
//!   dropped unload leaves none).
//! - Scopes `owner` and `provider`: `Active` → `Unloading` → `Unloaded`.
//! - Registry entries `(id, serial)`; store sessions `(id, serial, live)`
//!   with pending appends; the durable log. Step 3 detaches exactly the
//!   agent's `(id, serial)` and retires its session in the same section;
//!   fault M22's detach removes every entry with the id.
//!
//! # Transitions
//! | action | who |
//! | --- | --- |
//! | `Prepare`, `Publish` | a creation: prepare, then (after its setup await) the admission |
//! | `Check`, `Enter` | fault M24 only: the owner check before the setup await; the unguarded enter after it |
//! | `HandleDispose`, `UnloadOwner`, `UnloadProvider` | the handle, the owner, the provider |
//! | `TeardownStep` | a waiting caller drives the chain: D2 steps 1..5 in order |
//! | `SessionEffect` | fault M1 only: session detach as a sibling effect |
//! | `StaleDetach` | a repeated registry detach of an agent's `(id, serial)` after its step 3 (R2); enabled only when it removes something |
//! | `EndTurn`, `Flush`, `Exit` | the agent's loop |
//! | `Return` | a dispose caller resolves |
//! | `DropCaller` | the handle's `dispose()` future is dropped mid-chain (D8) |
//! | `DropUnload` | a scope's `unload()` future is dropped while a chain it waits on runs: every caller it made is gone at once (D8) |
//! | `Quiet` | nobody | once every caller of a running chain dropped its future, no further call comes: the chain must finish by itself (D8, M25, M29) |
//! | `ScopeUnloaded` | an unloading scope whose effects are all done |
//!
//! The `agent/disposed` listener always panics (the D4 situation): the
//! chain must go on anyway.

use crate::checker::{Identified, Model, Named, Prop, Property};
use crate::fault::Fault;
use lifecycle_spec::Rule;

mod properties;

pub use properties::{
    D1_AFTER_TEARDOWN, D2_ONCE_IN_ORDER, D3_DURABLE, D4_LISTENER_SKIPS_NOTHING, D5_KEEPS_ENTRY,
    D7_PROVIDER_UNLOAD, D8_DROPPED, R1_LOSER_FAILS, R1_ONE, R2_REUSE_ON_DETACH,
    R3_FAILED_LEAVES_NOTHING, R3_NOTHING_AFTER_UNLOAD,
};
mod state;

pub use state::{
    Attempt, Caller, CreateError, CreatePhase, DisposeAction, DisposeState, EffectState, Entry,
    LoopState, ScopeId, ScopeState,
};

/// The dispose model.
#[derive(Clone, Debug)]
pub struct DisposeModel {
    /// The fault switched on (M1, M6, M9, M10, M15, M22, M24, M25, M29 act
    /// here).
    pub fault: Option<Fault>,
    /// Creation attempts: `(id, owner, whether its agent has a turn running)`.
    pub attempts: Vec<(u8, ScopeId, bool)>,
    /// An agent `b` created from configuration before the run (owned by the
    /// provider scope, handle dropped, D7), idle.
    pub configured: bool,
}

impl DisposeModel {
    /// The world for `fault`. Without a fault: `a` (running a turn) and `a`
    /// again by the owner, and `b` from configuration. A fault variant
    /// keeps only what its counterexample needs, so its space stays small:
    /// M1 and M10 one agent `a` with a turn; M6 the same plus `b`; M9 and
    /// M22 the two same-id creations, idle; M24 one idle `a`.
    pub fn new(fault: Option<Fault>) -> Self {
        let (attempts, configured) = match fault {
            Some(Fault::M1 | Fault::M10 | Fault::M29) => (vec![(0, ScopeId::Owner, true)], false),
            Some(Fault::M6) => (vec![(0, ScopeId::Owner, true)], true),
            Some(Fault::M24) => (vec![(0, ScopeId::Owner, false)], false),
            Some(Fault::M9 | Fault::M22) => (
                vec![(0, ScopeId::Owner, false), (0, ScopeId::Owner, false)],
                false,
            ),
            _ => (
                vec![(0, ScopeId::Owner, true), (0, ScopeId::Owner, false)],
                true,
            ),
        };
        DisposeModel {
            fault,
            attempts,
            configured,
        }
    }

    fn has(&self, f: Fault) -> bool {
        self.fault == Some(f)
    }

    fn scope(s: &DisposeState, id: ScopeId) -> ScopeState {
        s.scopes[id as usize]
    }

    /// Whether the owner `owner` and the provider both accept effects.
    fn admits(s: &DisposeState, owner: ScopeId) -> bool {
        Self::scope(s, owner) == ScopeState::Active
            && Self::scope(s, ScopeId::Provider) == ScopeState::Active
    }

    /// Creation `n` enters its session, registers its agent and starts its
    /// loop; `false` (nothing done) when a live session has the id and the
    /// recheck is on (not M9). Entering once the owner or the provider
    /// began unloading breaks R3.
    fn enter(&self, s: &mut DisposeState, n: usize) -> bool {
        let (id, owner, turn) = {
            let a = &s.attempts[n];
            (a.id, a.owner, a.turn)
        };
        if !self.has(Fault::M9) && Self::live_with_id(s, id) > 0 {
            return false;
        }
        if !Self::admits(s, owner) {
            broke(s, Rule::R3);
        }
        let serial = n as u8;
        s.sessions.push((id, serial, true));
        s.registry.push((id, serial));
        s.attempts[n].lp = Some(if turn {
            LoopState::Running
        } else {
            LoopState::Flushed
        });
        if turn {
            Self::append(s, serial, Entry::TurnStart);
        }
        true
    }

    /// The registry's detach of `(id, serial)`: exactly that entry; under
    /// M22 every entry with the id.
    fn detach(&self, s: &mut DisposeState, id: u8, serial: u8) {
        let by_id_only = self.has(Fault::M22);
        s.registry
            .retain(|e| !(e.0 == id && (by_id_only || e.1 == serial)));
    }

    fn live_with_id(s: &DisposeState, id: u8) -> usize {
        s.sessions.iter().filter(|x| x.0 == id && x.2).count()
    }

    fn effects_done(&self, a: &Attempt) -> bool {
        a.effect == EffectState::Done
            && (!self.has(Fault::M1) || a.session_effect == EffectState::Done)
    }

    /// `dispose` called by `caller` on attempt `n`'s effects.
    fn call(&self, s: &mut DisposeState, n: usize, caller: Caller) {
        let a = &mut s.attempts[n];
        a.callers.push((caller, false));
        if a.effect == EffectState::Armed {
            a.effect = EffectState::Running(1);
        }
        if self.has(Fault::M1) && a.session_effect == EffectState::Armed {
            a.session_effect = EffectState::Running(4);
        }
    }

    fn append(s: &mut DisposeState, serial: u8, e: Entry) {
        if s.sessions.iter().any(|x| x.1 == serial) {
            s.pending.push((serial, e));
        } else {
            broke(s, Rule::D3);
        }
    }

    fn unload(&self, s: &mut DisposeState, scope: ScopeId) {
        if Self::scope(s, scope) != ScopeState::Active {
            return;
        }
        s.scopes[scope as usize] = ScopeState::Unloading;
        for n in 0..s.attempts.len() {
            let a = &s.attempts[n];
            let held = a.in_scopes && (a.owner == scope || scope == ScopeId::Provider);
            if held {
                self.call(s, n, Caller::Scope(scope));
            }
        }
    }

    fn run_step(&self, s: &mut DisposeState, n: usize, step: u8) -> bool {
        let serial = n as u8;
        let id = s.attempts[n].id;
        match step {
            1 => {
                s.attempts[n].disposed = true;
            }
            // Step 2 waits for the loop's exit (and its closing flush).
            2 if s.attempts[n].lp != Some(LoopState::Exited) => return false,
            3 => {
                // One section: the entry detaches and the session's id is
                // released (R2).
                self.detach(s, id, serial);
                if let Some(x) = s.sessions.iter_mut().find(|x| x.1 == serial) {
                    x.2 = false;
                }
            }
            4 => {
                s.sessions.retain(|x| x.1 != serial);
                if s.pending.iter().any(|p| p.0 == serial) {
                    broke(s, Rule::D3);
                    s.pending.retain(|p| p.0 != serial);
                }
            }
            _ => {}
        }
        s.attempts[n].steps_run.push(step);
        true
    }

    fn step(&self, s: &DisposeState, action: &DisposeAction) -> Option<DisposeState> {
        let mut n = s.clone();
        let call = matches!(
            action,
            DisposeAction::Prepare(_)
                | DisposeAction::HandleDispose(_)
                | DisposeAction::UnloadOwner
                | DisposeAction::UnloadProvider
        );
        if s.quiet && call {
            return None;
        }
        match *action {
            DisposeAction::Quiet => {
                let abandoned = s.attempts.iter().any(|a| {
                    matches!(a.effect, EffectState::Running(_))
                        && !a.callers.is_empty()
                        && a.callers.iter().all(|c| c.1)
                });
                if s.quiet || !abandoned {
                    return None;
                }
                n.quiet = true;
            }
            DisposeAction::Prepare(i) => {
                let i = i as usize;
                let a = s.attempts.get(i)?;
                if a.phase != CreatePhase::Idle {
                    return None;
                }
                n.attempts[i].phase = if Self::live_with_id(s, a.id) > 0 {
                    CreatePhase::Failed(CreateError::AlreadyExists)
                } else {
                    CreatePhase::Prepared
                };
            }
            DisposeAction::Check(i) => {
                // M24: the owner is checked before the setup await.
                let i = i as usize;
                let a = s.attempts.get(i)?;
                if !self.has(Fault::M24) || a.phase != CreatePhase::Prepared {
                    return None;
                }
                n.attempts[i].phase = if Self::admits(s, a.owner) {
                    CreatePhase::Checked
                } else {
                    CreatePhase::Failed(CreateError::OwnerUnloaded)
                };
            }
            DisposeAction::Enter(i) => {
                // M24: after the setup await, published without a check.
                let i = i as usize;
                if s.attempts.get(i)?.phase != CreatePhase::Checked {
                    return None;
                }
                n.attempts[i].phase = if self.enter(&mut n, i) {
                    CreatePhase::Entered
                } else {
                    CreatePhase::Failed(CreateError::AlreadyExists)
                };
            }
            DisposeAction::Publish(i) => {
                let i = i as usize;
                let a = s.attempts.get(i)?;
                let admitted = Self::admits(s, a.owner);
                if self.has(Fault::M24) {
                    if a.phase != CreatePhase::Entered {
                        return None;
                    }
                    if admitted {
                        n.attempts[i].phase = CreatePhase::Ok;
                        n.attempts[i].in_scopes = true;
                    } else {
                        n.attempts[i].phase = CreatePhase::Disposing;
                        self.call(&mut n, i, Caller::Create);
                    }
                } else {
                    if a.phase != CreatePhase::Prepared {
                        return None;
                    }
                    n.attempts[i].phase = if !admitted {
                        CreatePhase::Failed(CreateError::OwnerUnloaded)
                    } else if self.enter(&mut n, i) {
                        n.attempts[i].in_scopes = true;
                        CreatePhase::Ok
                    } else {
                        CreatePhase::Failed(CreateError::AlreadyExists)
                    };
                }
            }
            DisposeAction::HandleDispose(i) => {
                let i = i as usize;
                let a = s.attempts.get(i)?;
                if a.phase != CreatePhase::Ok || a.owner != ScopeId::Owner || s.handle_called[i] {
                    return None;
                }
                n.handle_called[i] = true;
                self.call(&mut n, i, Caller::Handle);
            }
            DisposeAction::UnloadOwner => {
                if Self::scope(s, ScopeId::Owner) != ScopeState::Active {
                    return None;
                }
                self.unload(&mut n, ScopeId::Owner);
            }
            DisposeAction::UnloadProvider => {
                if Self::scope(s, ScopeId::Provider) != ScopeState::Active {
                    return None;
                }
                self.unload(&mut n, ScopeId::Provider);
            }
            DisposeAction::TeardownStep(i) => {
                let i = i as usize;
                let a = s.attempts.get(i)?;
                let EffectState::Running(step) = a.effect else {
                    return None;
                };
                // D8: any waiting caller drives the shared chain, and so
                // does the task a caller dropped mid-chain left to continue
                // it (a caller gone while the chain runs was dropped). M15:
                // only the first caller drives it, and a dropped handle
                // took it along (a dropped unload's task still polls it);
                // M25: a dropped handle leaves no task; M29: a dropped
                // unload leaves none.
                let drives = |c: &(Caller, bool)| {
                    !c.1 || match c.0 {
                        Caller::Handle => !self.has(Fault::M25) && !self.has(Fault::M15),
                        Caller::Scope(_) => !self.has(Fault::M29),
                        Caller::Create => true,
                    }
                };
                let driven = if self.has(Fault::M15) {
                    a.callers.first().is_some_and(drives)
                } else {
                    a.callers.iter().any(drives)
                };
                if !driven {
                    return None;
                }
                if step == 4 && self.has(Fault::M1) {
                    // M1: step 4 lives in the sibling effect.
                    n.attempts[i].effect = EffectState::Running(5);
                    return Some(n);
                }
                if !self.run_step(&mut n, i, step) {
                    return None;
                }
                n.attempts[i].effect = if step == 3 && self.has(Fault::M10) {
                    // M10: the panicking `agent/disposed` listener rejects the chain.
                    EffectState::Done
                } else if step == 5 {
                    EffectState::Done
                } else {
                    EffectState::Running(step + 1)
                };
            }
            DisposeAction::StaleDetach(i) => {
                let a = s.attempts.get(i as usize)?;
                if !a.steps_run.contains(&3) {
                    return None;
                }
                self.detach(&mut n, a.id, i);
                // The correct detach finds nothing left to remove: no
                // transition.
                if n.registry == s.registry {
                    return None;
                }
            }
            DisposeAction::SessionEffect(i) => {
                let i = i as usize;
                if s.attempts.get(i)?.session_effect != EffectState::Running(4) {
                    return None;
                }
                self.run_step(&mut n, i, 4);
                n.attempts[i].session_effect = EffectState::Done;
            }
            DisposeAction::EndTurn(i) => {
                let i = i as usize;
                if s.attempts.get(i)?.lp != Some(LoopState::Running) {
                    return None;
                }
                n.attempts[i].lp = Some(LoopState::Ended);
                Self::append(&mut n, i as u8, Entry::TurnEnd);
            }
            DisposeAction::Flush(i) => {
                let i = i as usize;
                if s.attempts.get(i)?.lp != Some(LoopState::Ended) {
                    return None;
                }
                n.attempts[i].lp = Some(LoopState::Flushed);
                let serial = i as u8;
                let (mine, rest): (Vec<_>, Vec<_>) = n.pending.iter().partition(|p| p.0 == serial);
                n.pending = rest;
                n.durable.extend(mine);
            }
            DisposeAction::Exit(i) => {
                let i = i as usize;
                let a = s.attempts.get(i)?;
                if a.lp != Some(LoopState::Flushed) || !a.disposed {
                    return None;
                }
                n.attempts[i].lp = Some(LoopState::Exited);
            }
            DisposeAction::Return(i, c) => {
                let (i, c) = (i as usize, c as usize);
                let a = s.attempts.get(i)?;
                let &(caller, returned) = a.callers.get(c)?;
                if returned {
                    return None;
                }
                let done = self.effects_done(a);
                // M6: a caller that did not start the run does not wait for it.
                let early = self.has(Fault::M6) && c > 0;
                if !done && !early {
                    return None;
                }
                if !done {
                    broke(&mut n, Rule::D1);
                }
                n.attempts[i].callers[c].1 = true;
                if caller == Caller::Create {
                    n.attempts[i].phase = CreatePhase::Failed(CreateError::OwnerUnloaded);
                }
            }
            DisposeAction::DropCaller(i, c) => {
                let (i, c) = (i as usize, c as usize);
                let a = s.attempts.get(i)?;
                let &(caller, gone) = a.callers.get(c)?;
                if caller != Caller::Handle || gone || !matches!(a.effect, EffectState::Running(_))
                {
                    return None;
                }
                n.attempts[i].callers[c].1 = true;
            }
            DisposeAction::DropUnload(sc) => {
                if Self::scope(s, sc) != ScopeState::Unloading {
                    return None;
                }
                let mut dropped = false;
                for (i, a) in s.attempts.iter().enumerate() {
                    let running = matches!(a.effect, EffectState::Running(_));
                    for (c, &(caller, gone)) in a.callers.iter().enumerate() {
                        if caller == Caller::Scope(sc) && !gone {
                            n.attempts[i].callers[c].1 = true;
                            dropped |= running;
                        }
                    }
                }
                if !dropped {
                    return None;
                }
            }
            DisposeAction::ScopeUnloaded(sc) => {
                if Self::scope(s, sc) != ScopeState::Unloading {
                    return None;
                }
                // Its unload's work waits on every chain it called, whether
                // or not its caller is still there.
                let waiting = s.attempts.iter().any(|a| {
                    a.callers.iter().any(|&(c, r)| {
                        c == Caller::Scope(sc)
                            && (!r || matches!(a.effect, EffectState::Running(_)))
                    })
                });
                if waiting {
                    return None;
                }
                n.scopes[sc as usize] = ScopeState::Unloaded;
            }
        }
        Some(n)
    }
}

fn broke(s: &mut DisposeState, rule: Rule) {
    if !s.broken.contains(&rule) {
        s.broken.push(rule);
    }
}

impl Named for DisposeModel {
    fn name(&self) -> String {
        match self.fault {
            None => "dispose".into(),
            Some(f) => format!("dispose+{f}"),
        }
    }
}

impl Model for DisposeModel {
    type State = DisposeState;
    type Action = DisposeAction;

    fn init_states(&self) -> Vec<DisposeState> {
        let mut attempts = self
            .attempts
            .iter()
            .map(|&(id, owner, turn)| Attempt {
                id,
                owner,
                turn,
                phase: CreatePhase::Idle,
                lp: None,
                disposed: false,
                effect: EffectState::Armed,
                session_effect: EffectState::Armed,
                steps_run: vec![],
                callers: vec![],
                in_scopes: false,
            })
            .collect::<Vec<_>>();
        let (mut registry, mut sessions) = (vec![], vec![]);
        if self.configured {
            let serial = attempts.len() as u8;
            attempts.push(Attempt {
                id: 1,
                owner: ScopeId::Provider,
                turn: false,
                phase: CreatePhase::Ok,
                lp: Some(LoopState::Flushed),
                disposed: false,
                effect: EffectState::Armed,
                session_effect: EffectState::Armed,
                steps_run: vec![],
                callers: vec![],
                in_scopes: true,
            });
            registry.push((1, serial));
            sessions.push((1, serial, true));
        }
        vec![DisposeState {
            handle_called: vec![false; attempts.len()],
            attempts,
            scopes: [ScopeState::Active; 2],
            registry,
            sessions,
            pending: vec![],
            durable: vec![],
            quiet: false,
            broken: vec![],
        }]
    }

    fn actions(&self, s: &DisposeState, out: &mut Vec<DisposeAction>) {
        let mut all = vec![];
        for i in 0..s.attempts.len() as u8 {
            all.extend([
                DisposeAction::Prepare(i),
                DisposeAction::Check(i),
                DisposeAction::Enter(i),
                DisposeAction::Publish(i),
                DisposeAction::HandleDispose(i),
            ]);
        }
        all.extend([DisposeAction::UnloadOwner, DisposeAction::UnloadProvider]);
        for (i, a) in s.attempts.iter().enumerate() {
            let i = i as u8;
            all.extend([
                DisposeAction::TeardownStep(i),
                DisposeAction::StaleDetach(i),
                DisposeAction::SessionEffect(i),
                DisposeAction::EndTurn(i),
                DisposeAction::Flush(i),
                DisposeAction::Exit(i),
            ]);
            all.extend((0..a.callers.len() as u8).map(|c| DisposeAction::Return(i, c)));
            all.extend((0..a.callers.len() as u8).map(|c| DisposeAction::DropCaller(i, c)));
        }
        all.extend([
            DisposeAction::DropUnload(ScopeId::Owner),
            DisposeAction::DropUnload(ScopeId::Provider),
            DisposeAction::ScopeUnloaded(ScopeId::Owner),
            DisposeAction::ScopeUnloaded(ScopeId::Provider),
            DisposeAction::Quiet,
        ]);
        out.extend(all.into_iter().filter(|a| self.step(s, a).is_some()));
    }

    fn next_state(&self, s: &DisposeState, a: DisposeAction) -> Option<DisposeState> {
        self.step(s, &a)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::checker::properties_of(self)
    }
}

impl Identified for DisposeModel {
    fn identified(&self) -> Vec<Prop<Self>> {
        properties::all()
    }
}
