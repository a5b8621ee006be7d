//! The dispose model's state and actions (the module above lists what
//! each action does).

use lifecycle_spec::Rule;

/// A scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeId {
    /// The owner scope of handle-created agents.
    Owner,
    /// The provider's scope (owns everything it built).
    Provider,
}

/// A scope's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeState {
    /// Accepts effects.
    Active,
    /// Its effects are being disposed concurrently.
    Unloading,
    /// Done.
    Unloaded,
}

/// Why a creation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CreateError {
    /// `already exists` (R1).
    AlreadyExists,
    /// The owner unloaded during setup (R3).
    OwnerUnloaded,
}

/// Phase of a creation attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CreatePhase {
    /// Not called yet.
    Idle,
    /// Private state built; the setup await runs.
    Prepared,
    /// Fault M24: the owner was active before the setup await.
    Checked,
    /// Fault M24: session entered, agent registered, loop started, not yet
    /// held by the scopes.
    Entered,
    /// Published and registered with its scopes.
    Ok,
    /// Fault M24: published, then refused by an unloading scope: disposing
    /// what it published.
    Disposing,
    /// Failed.
    Failed(CreateError),
}

/// The agent loop of a published agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LoopState {
    /// A turn is running (`turn/start` appended).
    Running,
    /// `turn/end` appended; the closing flush is pending.
    Ended,
    /// Flushed; idle.
    Flushed,
    /// Exited (after disposal).
    Exited,
}

/// A teardown effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EffectState {
    /// Not disposed yet.
    Armed,
    /// Running; the next step to run.
    Running(u8),
    /// Finished.
    Done,
}

/// Who called dispose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Caller {
    /// The handle.
    Handle,
    /// A scope's unload.
    Scope(ScopeId),
    /// The creation that lost the close race.
    Create,
}

/// A durable or pending log entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Entry {
    /// `turn/start`.
    TurnStart,
    /// `turn/end`.
    TurnEnd,
}

/// One creation attempt and, once published, its agent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    /// Agent id (0 = `a`, 1 = `b`).
    pub id: u8,
    /// The owner scope.
    pub owner: ScopeId,
    /// Creation phase.
    pub phase: CreatePhase,
    /// Whether its agent runs a turn when published (else it starts idle).
    pub turn: bool,
    /// The loop, once published.
    pub lp: Option<LoopState>,
    /// Disposed (D2 step 1 ran).
    pub disposed: bool,
    /// The main teardown effect.
    pub effect: EffectState,
    /// Fault M1: the session effect, a sibling.
    pub session_effect: EffectState,
    /// Teardown steps run, in order (ghost).
    pub steps_run: Vec<u8>,
    /// Dispose callers: who, and whether it is gone (returned, or its
    /// future dropped).
    pub callers: Vec<(Caller, bool)>,
    /// Whether the effects are held by the owner and provider scopes.
    pub in_scopes: bool,
}

/// The state of the dispose model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DisposeState {
    /// Creation attempts (serial = index).
    pub attempts: Vec<Attempt>,
    /// Scopes: owner, provider.
    pub scopes: [ScopeState; 2],
    /// Registry entries `(id, serial)`.
    pub registry: Vec<(u8, u8)>,
    /// Store sessions `(id, serial, live)`: hooks installed; `live` until retired.
    pub sessions: Vec<(u8, u8, bool)>,
    /// Appended, not yet durable: `(serial, entry)`.
    pub pending: Vec<(u8, Entry)>,
    /// The durable log: `(serial, entry)`.
    pub durable: Vec<(u8, Entry)>,
    /// Whether the handle disposed each attempt already.
    pub handle_called: Vec<bool>,
    /// No further call comes (ghost, after [`DisposeAction::Quiet`]).
    pub quiet: bool,
    /// Rules a transition broke (ghost).
    pub broken: Vec<Rule>,
}

/// One transition of the dispose model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DisposeAction {
    /// Creation `n`: prepare (fails fast on a live id); its setup await
    /// begins.
    Prepare(u8),
    /// Fault M24 only: creation `n` checks its owner and the provider are
    /// active, before its setup await.
    Check(u8),
    /// Fault M24 only: creation `n`'s setup await returned: `enter`
    /// (rechecks the id), register, announce, start, without a check.
    Enter(u8),
    /// Creation `n`'s setup await returned: the admission, in one section
    /// nested in both scopes' locks: both active, then enter (rechecks the
    /// id), register, announce, start, and the scopes take the effects;
    /// else nothing is published. Under M24: the scopes take the effects
    /// of the entered agent, or an unloading one refuses them.
    Publish(u8),
    /// The handle of creation `n` disposes.
    HandleDispose(u8),
    /// The owner scope unloads.
    UnloadOwner,
    /// The provider unloads.
    UnloadProvider,
    /// The next D2 step of agent `n`'s teardown.
    TeardownStep(u8),
    /// A stale or repeated registry detach of agent `n`'s `(id, serial)`,
    /// after its teardown's step 3 detached it (R2).
    StaleDetach(u8),
    /// Fault M1: agent `n`'s sibling session effect runs.
    SessionEffect(u8),
    /// Agent `n`'s turn ends (`turn/end` appended).
    EndTurn(u8),
    /// Agent `n`'s closing flush.
    Flush(u8),
    /// Agent `n`'s loop exits.
    Exit(u8),
    /// Caller `c` of agent `n` resolves.
    Return(u8, u8),
    /// Caller `c` of agent `n` (the handle) drops its `dispose()` future
    /// while the chain runs.
    DropCaller(u8, u8),
    /// The caller of a scope's `unload()` drops its future while a chain it
    /// waits on runs.
    DropUnload(ScopeId),
    /// A scope finishes unloading.
    ScopeUnloaded(ScopeId),
    /// Once every caller of a running chain dropped its future: no call
    /// comes after (no creation, dispose or unload), so whatever finishes
    /// the chain finishes it by itself (D8; fault M25 waits for a call).
    Quiet,
}
