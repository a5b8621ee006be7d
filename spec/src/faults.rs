//! Switchable faults: the rejected designs and known bugs of SPEC §3.
//!
//! Which faults are on is the harness's to say (`lifecycle_harness::faults`,
//! asked by the production crate through its execution context). With a
//! fault on, at least one checker must report a violation of the rule it
//! names; the executable models (`lifecycle-models`) model the faults
//! their `model_of` names.

use crate::Rule;
use serde::Serialize;
use std::fmt;

/// One fault of SPEC §3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Fault {
    /// Session lifecycle in a sibling effect of the loop (violates D3).
    M1,
    /// tool-bash keeps ownership in its own map (violates S5).
    M2,
    /// No pre-run marker (violates C4).
    M3,
    /// Idle cancel sets the marker (violates C6).
    M4,
    /// The marker also swallows the next accepted prompt (violates C5).
    M5,
    /// Dispose not memoized (violates D1).
    M6,
    /// `session/new` ignores a close during creation (violates A1).
    M7,
    /// `session/load` ignores a close during resume (violates A1).
    M8,
    /// `enter` does not recheck for a duplicate live id (violates R1).
    M9,
    /// A panicking `agent/disposed` listener aborts the teardown (violates D4).
    M10,
    /// `cancel-requested` emitted after clearing the inbox (violates C1/C2).
    M11,
    /// `when_idle` resolves on the status flip, before quiescence (violates C7).
    M12,
    /// The bridge's `session/load` checks the id in one lock section and
    /// marks it loading in a second one (check-then-act; violates A5).
    M13,
    /// `when_idle` reads quiescence and parks its waiter in two separate
    /// lock sections (a lost wake-up; violates C7).
    M14,
    /// The teardown chain runs inside the first caller's future, so
    /// dropping that future wedges it (violates D8, D1).
    M15,
    /// The session log is flushed only at `turn/end`: no write-ahead of
    /// `turn/start`, and step results reach the client before they are
    /// durable (violates D9).
    M16,
    /// `load` after a crash keeps a torn last record, so the next append
    /// lands on it (violates D9).
    M17,
    /// A failed write or fsync is logged and otherwise ignored (violates
    /// D10).
    M18,
    /// The running step never sees the turn's cancellation signal: a
    /// cancel waits until the step ends by itself (violates C10).
    M19,
    /// Disposing an agent leaves its background jobs running and readable:
    /// the teardown has no owner drain (violates S7).
    M20,
    /// A completion notice goes to the first live agent whose id starts
    /// with the owner (prefix match; violates S6).
    M21,
    /// Registry `detach` removes every entry with the id, not the exact
    /// `(id, serial)` (violates R2).
    M22,
    /// A turn stopped by disposal after an earlier cancel ends `aborted`:
    /// the first cause wins over disposal (violates C3).
    M23,
    /// Creation checks its owner before the setup await instead of after
    /// it (violates R3).
    M24,
    /// The teardown of a dropped `dispose` waits for another caller to
    /// continue it: nothing drives it by itself (violates D8).
    M25,
    /// After a storage error the session refuses appends until the process
    /// restarts: its next turn does not recover it (violates D10).
    M26,
    /// `session/cancel` marks only a prompt already claimed: a prompt
    /// waiting behind a cancelled one (A8) is missed by a second cancel and
    /// runs (violates A2, A8).
    M27,
    /// A prompt sent while `session/load` is replaying is served at once:
    /// its turn runs during the replay (violates A9).
    M28,
    /// The work of a dropped scope `unload` or bridge quiesce waits for
    /// another caller to continue it: nothing drives it by itself
    /// (violates D8).
    M29,
}

impl Fault {
    /// Every fault, in SPEC order.
    pub const ALL: [Fault; 29] = [
        Fault::M1,
        Fault::M2,
        Fault::M3,
        Fault::M4,
        Fault::M5,
        Fault::M6,
        Fault::M7,
        Fault::M8,
        Fault::M9,
        Fault::M10,
        Fault::M11,
        Fault::M12,
        Fault::M13,
        Fault::M14,
        Fault::M15,
        Fault::M16,
        Fault::M17,
        Fault::M18,
        Fault::M19,
        Fault::M20,
        Fault::M21,
        Fault::M22,
        Fault::M23,
        Fault::M24,
        Fault::M25,
        Fault::M26,
        Fault::M27,
        Fault::M28,
        Fault::M29,
    ];

    /// What the fault does.
    pub fn about(self) -> &'static str {
        match self {
            Fault::M1 => "session lifecycle in a sibling effect of the loop, disposed concurrently",
            Fault::M2 => "tool-bash keeps ownership in its own map",
            Fault::M3 => "no pre-run marker",
            Fault::M4 => "idle cancel sets the marker",
            Fault::M5 => "the marker also swallows the next accepted prompt",
            Fault::M6 => "dispose not memoized",
            Fault::M7 => "session/new ignores a close that happened while it awaited creation",
            Fault::M8 => "session/load ignores a close that happened while it awaited resume",
            Fault::M9 => "enter does not recheck for a duplicate live id",
            Fault::M10 => "a panicking agent/disposed listener aborts the teardown chain",
            Fault::M11 => "cancel-requested emitted after clearing the inbox",
            Fault::M12 => "when_idle resolves on the status flip, before quiescence",
            Fault::M13 => "session/load checks the id, then marks it loading, in two lock sections",
            Fault::M14 => {
                "when_idle checks quiescence, then parks its waiter, in two lock sections"
            }
            Fault::M15 => {
                "the teardown chain and the bridge's quiesce run inside their first caller's future; dropping it wedges them"
            }
            Fault::M16 => "the session log is flushed only at turn/end (no write-ahead)",
            Fault::M17 => "load keeps a torn last record and the next append lands on it",
            Fault::M18 => "a failed write or fsync is logged and otherwise ignored",
            Fault::M19 => "the running step never sees the cancellation signal; cancel waits for the step to end",
            Fault::M20 => "disposing an agent leaves its background jobs running and readable",
            Fault::M21 => {
                "a completion notice goes to the first live agent whose id starts with the owner"
            }
            Fault::M22 => {
                "registry detach removes every entry with the id, not the exact (id, serial)"
            }
            Fault::M23 => "a turn stopped by disposal after an earlier cancel ends aborted",
            Fault::M24 => "creation checks its owner before the setup await instead of after it",
            Fault::M25 => {
                "the teardown of a dropped dispose waits for another caller to continue it"
            }
            Fault::M26 => {
                "after a storage error the session refuses appends until the process restarts"
            }
            Fault::M27 => {
                "session/cancel marks only a claimed prompt: a prompt waiting behind a cancelled one is missed and runs"
            }
            Fault::M28 => {
                "a prompt sent while session/load replays is served at once: its turn runs during the replay"
            }
            Fault::M29 => {
                "the work of a dropped scope unload or bridge quiesce waits for another caller to continue it"
            }
        }
    }

    /// The rule(s) the fault must violate.
    pub fn must_violate(self) -> &'static [Rule] {
        match self {
            Fault::M1 => &[Rule::D3],
            Fault::M2 => &[Rule::S5],
            Fault::M3 => &[Rule::C4],
            Fault::M4 => &[Rule::C6],
            Fault::M5 => &[Rule::C5],
            Fault::M6 => &[Rule::D1],
            Fault::M7 | Fault::M8 => &[Rule::A1],
            Fault::M9 => &[Rule::R1],
            Fault::M10 => &[Rule::D4],
            Fault::M11 => &[Rule::C1, Rule::C2],
            Fault::M12 | Fault::M14 => &[Rule::C7],
            Fault::M13 => &[Rule::A5],
            Fault::M15 => &[Rule::D8, Rule::D1],
            Fault::M16 | Fault::M17 => &[Rule::D9],
            Fault::M18 | Fault::M26 => &[Rule::D10],
            Fault::M25 | Fault::M29 => &[Rule::D8],
            Fault::M19 => &[Rule::C10],
            Fault::M20 => &[Rule::S7],
            Fault::M21 => &[Rule::S6],
            Fault::M22 => &[Rule::R2],
            Fault::M23 => &[Rule::C3],
            Fault::M24 => &[Rule::R3],
            Fault::M27 => &[Rule::A2, Rule::A8],
            Fault::M28 => &[Rule::A9],
        }
    }

    /// Parse `M3` / `m3`.
    pub fn parse(s: &str) -> Option<Fault> {
        Fault::ALL
            .into_iter()
            .find(|f| f.to_string().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
