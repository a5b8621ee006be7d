//! The durability model: one session's log across turns, crashes, loads
//! and storage failures (SPEC D9, D10).
//!
//! # Parts and states
//! - The agent's loop, one step per turn (`pos`): `Idle` → (prompt:
//!   `turn/start` and `user/message` appended) `WriteAhead` (their flush,
//!   D9) → `Step` (the step runs; its output appended) → `Output` (its
//!   flush) → `Deliver` (the output goes to the client, then `turn/end
//!   {completed}` is appended) → `Ending` (the closing flush) → `Idle` (the
//!   prompt's caller is answered). Fault M16 skips the `WriteAhead` and
//!   `Output` flushes.
//! - A flush has two halves: `Write` (the in-memory batch goes to the file,
//!   unsynced) and `Sync` (the file's unsynced tail becomes durable).
//! - The file: records, of which the first `synced` are durable. A crash
//!   keeps the durable prefix and may keep the unsynced tail whole or a torn
//!   fragment of it (`Torn`); bytes written onto a torn fragment make a
//!   `Corrupt` record, which no load can read.
//! - The process (`proc`): `Up` → `Down` (crashed) or `Refusing` (a write
//!   or sync failed: the turn ended `failed`, the caller got the error, the
//!   session refuses appends, D10) → `Up` by a load, or, in the same
//!   process, by the next prompt, which first repairs the log and closes
//!   the failed turn `failed` (fault M26 refuses that prompt and any load
//!   until a restart); or `LoadFailed` (the log does not parse).
//! - Ghosts: every record that was synced, the outputs a client was shown,
//!   the answers given to prompt callers, whether a write or sync failed
//!   since the last load, and the rules a transition broke.
//!
//! # Transitions
//! | action | who | effect |
//! | --- | --- | --- |
//! | `Prompt` | a client | a turn starts: `turn/start` appended (a refusing session is repaired first) |
//! | `Write`, `Sync` | the loop's flush | batch → file; file → durable |
//! | `Step` | the loop | the step runs, its output is appended |
//! | `Deliver` | the loop | the output reaches the client; `turn/end` appended |
//! | `DiskFails` | the disk | the write or sync in flight fails (D10) |
//! | `Crash(tear)` | the machine | unsynced bytes are lost, kept, or torn |
//! | `Load` | a restart, or a reload in the same process | truncate a torn tail, close open turns `interrupted` (after a crash) or `failed` (after a storage failure) |
//!
//! `Load` is atomic here: a crash inside the load's own write is not
//! modelled.

use crate::checker::{Identified, Model, Named, Prop, Property};
use crate::fault::Fault;
use crate::PropertyId;
use lifecycle_spec::Rule;

/// The property that states D10 (the rule-clause table names it).
pub const D10_NOTHING_UNTIL_REPAIRED: PropertyId = PropertyId::new(
    Rule::D10,
    "D10 after a failed write or sync the session appends nothing until repaired",
);

/// The property that states D9 (the rule-clause table names it).
pub const D9_NO_OPEN_TURN: PropertyId = PropertyId::new(
    Rule::D9,
    "D9 after a load, and between turns, no turn is open in the durable log",
);

/// The property that states D9 (the rule-clause table names it).
pub const D9_SHOWN_IS_DURABLE: PropertyId = PropertyId::new(
    Rule::D9,
    "D9 nothing a client was shown is lost: a delivered output is durable",
);

/// The property that states D9 (the rule-clause table names it).
pub const D9_SYNCED_SURVIVES: PropertyId =
    PropertyId::new(Rule::D9, "D9 every synced record survives and loads");

/// The property that states D9 (the rule-clause table names it).
pub const D9_TORN_TAIL: PropertyId = PropertyId::new(
    Rule::D9,
    "D9 a torn tail is truncated, never appended onto: every load parses",
);

/// The property that states D9 (the rule-clause table names it).
pub const D9_WRITE_AHEAD: PropertyId = PropertyId::new(
    Rule::D9,
    "D9 write-ahead: turn/start is durable before the turn's step runs",
);

/// Why a durable turn ended: `lifecycle-spec`'s type, shared with the
/// implementation (this model ends turns `completed`, `interrupted` or
/// `failed`).
pub use lifecycle_spec::EndReason;

/// A record of the session log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Record {
    /// `turn/start` and `user/message` of turn `t` (one batch).
    TurnStart(u8),
    /// The output of turn `t`'s step.
    Output(u8),
    /// `turn/end` of turn `t`.
    TurnEnd(u8, EndReason),
    /// A fragment of a record a crash cut short (the last record only).
    Torn,
    /// A record written onto a torn fragment: unreadable.
    Corrupt,
}

/// Where the loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pos {
    /// No turn: a prompt may start one.
    Idle,
    /// The write-ahead flush of `turn/start` (D9).
    WriteAhead,
    /// The step runs next.
    Step,
    /// The flush of the step's output (D9).
    Output,
    /// The output goes to the client next.
    Deliver,
    /// The closing flush of `turn/end`.
    Ending,
}

/// The process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proc {
    /// Running.
    Up,
    /// Crashed; a load brings it back.
    Down,
    /// A write or sync failed: appends are refused until the next load.
    Refusing,
    /// A load could not parse the log.
    LoadFailed,
}

/// What a prompt's caller was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// The turn completed.
    Completed,
    /// The turn failed with a storage error (D10).
    Failed,
}

/// What a crash leaves of the unsynced tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tear {
    /// Nothing.
    Lost,
    /// All of it, whole (the OS wrote it back before the crash).
    Kept,
    /// A fragment of its first record.
    Torn,
}

/// The state of the durability model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DurabilityState {
    /// The process.
    pub proc: Proc,
    /// Where the loop is.
    pub pos: Pos,
    /// Turns started; the current turn is `turns - 1`.
    pub turns: u8,
    /// Appended, not yet written.
    pub buffer: Vec<Record>,
    /// The log file.
    pub file: Vec<Record>,
    /// How many records of `file` are durable.
    pub synced: u8,
    /// Crashes so far.
    pub crashes: u8,
    /// Storage failures so far.
    pub failures: u8,
    /// Every record that was synced (ghost).
    pub flushed: Vec<Record>,
    /// Turns whose output a client was shown (ghost).
    pub shown: Vec<u8>,
    /// What each prompt's caller was told (ghost).
    pub answers: Vec<(u8, Answer)>,
    /// A write or sync failed since the last load (ghost).
    pub io_failed: bool,
    /// Turns during which a write or sync failed (ghost).
    pub hit: Vec<u8>,
    /// A prompt recovered a refusing session in the same process (ghost).
    pub recovered: bool,
    /// Rules a transition broke (ghost).
    pub broken: Vec<Rule>,
}

/// One transition of the durability model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DurabilityAction {
    /// A prompt starts a turn.
    Prompt,
    /// The flush writes the batch.
    Write,
    /// The flush syncs the file.
    Sync,
    /// The step runs.
    Step,
    /// The output is delivered; `turn/end` appended.
    Deliver,
    /// The write or sync in flight fails.
    DiskFails,
    /// The process dies.
    Crash(Tear),
    /// The session is loaded (after a crash or a storage failure).
    Load,
}

/// The durability model.
#[derive(Clone, Debug)]
pub struct DurabilityModel {
    /// The fault switched on (M16, M17, M18 act here).
    pub fault: Option<Fault>,
    /// Turns (prompts) per run.
    pub turns: u8,
    /// Crashes per run.
    pub crashes: u8,
    /// Storage failures per run.
    pub failures: u8,
}

/// What a load reads: the records, a torn last fragment dropped; `None`
/// if a record does not parse.
pub fn read(file: &[Record]) -> Option<Vec<Record>> {
    let mut out = vec![];
    for (k, r) in file.iter().enumerate() {
        match r {
            Record::Corrupt => return None,
            Record::Torn if k + 1 < file.len() => return None,
            Record::Torn => {}
            r => out.push(*r),
        }
    }
    Some(out)
}

/// Turns with a `turn/start` and no `turn/end` in `log`.
pub fn open_turns(log: &[Record]) -> Vec<u8> {
    log.iter()
        .filter_map(|r| match r {
            Record::TurnStart(t) => Some(*t),
            _ => None,
        })
        .filter(|t| {
            !log.iter()
                .any(|r| matches!(r, Record::TurnEnd(x, _) if x == t))
        })
        .collect()
}

impl DurabilityModel {
    /// The model with its default bounds: two turns, two crashes, one
    /// storage failure.
    pub fn new(fault: Option<Fault>) -> Self {
        DurabilityModel {
            fault,
            turns: 2,
            crashes: 2,
            failures: 1,
        }
    }

    fn has(&self, f: Fault) -> bool {
        self.fault == Some(f)
    }

    /// What a load would read of the durable part of the file now.
    pub fn durable(s: &DurabilityState) -> Option<Vec<Record>> {
        read(&s.file[..s.synced as usize])
    }

    fn current(s: &DurabilityState) -> u8 {
        s.turns.saturating_sub(1)
    }

    fn append(s: &mut DurabilityState, r: Record) {
        if s.io_failed {
            // Appended after a failed write or sync (D10).
            broke(s, Rule::D10);
        }
        s.buffer.push(r);
    }

    /// Write records to the end of the file; bytes written onto a torn
    /// fragment make a corrupt record.
    fn write(s: &mut DurabilityState, batch: Vec<Record>) {
        for r in batch {
            if s.file.last() == Some(&Record::Torn) {
                s.file.pop();
                s.synced = s.synced.min(s.file.len() as u8);
                s.file.push(Record::Corrupt);
            } else {
                s.file.push(r);
            }
        }
    }

    fn sync(s: &mut DurabilityState) {
        let tail: Vec<Record> = s.file[s.synced as usize..].to_vec();
        s.flushed.extend(tail);
        s.synced = s.file.len() as u8;
    }

    /// Whether the loop is at a flush with work in flight.
    fn flushing(&self, s: &DurabilityState) -> bool {
        s.proc == Proc::Up
            && matches!(s.pos, Pos::WriteAhead | Pos::Output | Pos::Ending)
            && (!s.buffer.is_empty() || s.file.len() > s.synced as usize)
    }

    /// The flush at `pos` finished (or, under M18, failed and was ignored).
    fn flush_done(s: &mut DurabilityState) {
        let t = Self::current(s);
        s.pos = match s.pos {
            Pos::WriteAhead => Pos::Step,
            Pos::Output => Pos::Deliver,
            _ => {
                s.answers.push((t, Answer::Completed));
                Pos::Idle
            }
        };
    }

    /// A load's repair (D9, D10): a torn last record is truncated before
    /// anything is appended (M17 keeps it), every open turn is closed
    /// `reason`, synced, and the session is up. `false` (and
    /// `LoadFailed`) if the log does not parse.
    fn repair(&self, n: &mut DurabilityState, reason: EndReason) -> bool {
        if n.file.last() == Some(&Record::Torn) && !self.has(Fault::M17) {
            n.file.pop();
            n.synced = n.file.len() as u8;
        }
        let Some(log) = read(&n.file) else {
            n.proc = Proc::LoadFailed;
            return false;
        };
        let closing: Vec<Record> = open_turns(&log)
            .into_iter()
            .map(|t| Record::TurnEnd(t, reason))
            .collect();
        Self::write(n, closing);
        Self::sync(n);
        n.proc = Proc::Up;
        n.pos = Pos::Idle;
        n.io_failed = false;
        true
    }

    /// Apply `action` if it is enabled.
    pub fn step(&self, s: &DurabilityState, action: &DurabilityAction) -> Option<DurabilityState> {
        let mut n = s.clone();
        let up = s.proc == Proc::Up;
        match *action {
            DurabilityAction::Prompt => {
                let refusing = s.proc == Proc::Refusing;
                if !(up || refusing) || s.pos != Pos::Idle || s.turns >= self.turns {
                    return None;
                }
                if refusing && self.has(Fault::M26) {
                    // M26: refused until a restart.
                    n.answers.push((s.turns, Answer::Failed));
                    n.turns += 1;
                    return Some(n);
                }
                if refusing {
                    // D10: the prompt re-opens and repairs the log first.
                    if !self.repair(&mut n, EndReason::Failed) {
                        return Some(n);
                    }
                    n.recovered = true;
                }
                n.turns += 1;
                Self::append(&mut n, Record::TurnStart(s.turns));
                // M16: no write-ahead flush.
                n.pos = if self.has(Fault::M16) {
                    Pos::Step
                } else {
                    Pos::WriteAhead
                };
            }
            DurabilityAction::Write => {
                if !self.flushing(s) || s.buffer.is_empty() {
                    return None;
                }
                let batch = std::mem::take(&mut n.buffer);
                Self::write(&mut n, batch);
            }
            DurabilityAction::Sync => {
                if !self.flushing(s) || !s.buffer.is_empty() {
                    return None;
                }
                Self::sync(&mut n);
                Self::flush_done(&mut n);
            }
            DurabilityAction::Step => {
                if !up || s.pos != Pos::Step {
                    return None;
                }
                Self::append(&mut n, Record::Output(Self::current(s)));
                n.pos = if self.has(Fault::M16) {
                    Pos::Deliver
                } else {
                    Pos::Output
                };
            }
            DurabilityAction::Deliver => {
                if !up || s.pos != Pos::Deliver {
                    return None;
                }
                let t = Self::current(s);
                n.shown.push(t);
                Self::append(&mut n, Record::TurnEnd(t, EndReason::Completed));
                n.pos = Pos::Ending;
            }
            DurabilityAction::DiskFails => {
                if !self.flushing(s) || s.failures >= self.failures {
                    return None;
                }
                n.failures += 1;
                n.io_failed = true;
                n.hit.push(Self::current(s));
                // The failing batch is gone: not written, or its dirty
                // pages dropped by the failed sync.
                n.buffer.clear();
                n.file.truncate(s.synced as usize);
                if self.has(Fault::M18) {
                    // M18: logged and otherwise ignored.
                    Self::flush_done(&mut n);
                } else {
                    n.answers.push((Self::current(s), Answer::Failed));
                    n.proc = Proc::Refusing;
                    n.pos = Pos::Idle;
                }
            }
            DurabilityAction::Crash(tear) => {
                if !matches!(s.proc, Proc::Up | Proc::Refusing) || s.crashes >= self.crashes {
                    return None;
                }
                let unsynced = s.file.len() > s.synced as usize;
                if tear != Tear::Lost && !unsynced {
                    return None;
                }
                n.crashes += 1;
                n.buffer.clear();
                match tear {
                    Tear::Lost => n.file.truncate(s.synced as usize),
                    Tear::Kept => {}
                    Tear::Torn => {
                        n.file.truncate(s.synced as usize);
                        n.file.push(Record::Torn);
                    }
                }
                // What survived is what is on disk.
                n.synced = n.file.len() as u8;
                n.proc = Proc::Down;
                n.pos = Pos::Idle;
            }
            DurabilityAction::Load => {
                let refusing = s.proc == Proc::Refusing;
                if !(refusing || s.proc == Proc::Down) || (refusing && self.has(Fault::M26)) {
                    return None;
                }
                // A load in the same process closes the turn the failure
                // left open `failed`; a restart, `interrupted`.
                let reason = if refusing {
                    EndReason::Failed
                } else {
                    EndReason::Interrupted
                };
                if !self.repair(&mut n, reason) {
                    return Some(n);
                }
            }
        }
        Some(n)
    }
}

fn broke(s: &mut DurabilityState, rule: Rule) {
    if !s.broken.contains(&rule) {
        s.broken.push(rule);
    }
}

impl Named for DurabilityModel {
    fn name(&self) -> String {
        match self.fault {
            None => "durability".into(),
            Some(f) => format!("durability+{f}"),
        }
    }
}

impl Model for DurabilityModel {
    type State = DurabilityState;
    type Action = DurabilityAction;

    fn init_states(&self) -> Vec<DurabilityState> {
        vec![DurabilityState {
            proc: Proc::Up,
            pos: Pos::Idle,
            turns: 0,
            buffer: vec![],
            file: vec![],
            synced: 0,
            crashes: 0,
            failures: 0,
            flushed: vec![],
            shown: vec![],
            answers: vec![],
            io_failed: false,
            hit: vec![],
            recovered: false,
            broken: vec![],
        }]
    }

    fn actions(&self, s: &DurabilityState, out: &mut Vec<DurabilityAction>) {
        let all = [
            DurabilityAction::Prompt,
            DurabilityAction::Write,
            DurabilityAction::Sync,
            DurabilityAction::Step,
            DurabilityAction::Deliver,
            DurabilityAction::DiskFails,
            DurabilityAction::Crash(Tear::Lost),
            DurabilityAction::Crash(Tear::Kept),
            DurabilityAction::Crash(Tear::Torn),
            DurabilityAction::Load,
        ];
        out.extend(all.into_iter().filter(|a| self.step(s, a).is_some()));
    }

    fn next_state(&self, s: &DurabilityState, a: DurabilityAction) -> Option<DurabilityState> {
        self.step(s, &a)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::checker::properties_of(self)
    }
}

impl Identified for DurabilityModel {
    fn identified(&self) -> Vec<Prop<Self>> {
        vec![
            Prop::<Self>::always(D9_SYNCED_SURVIVES, |_, s| {
                DurabilityModel::durable(s)
                    .is_some_and(|log| s.flushed.iter().all(|r| log.contains(r)))
            }),
            Prop::<Self>::always(
                D9_TORN_TAIL,
                |_, s| DurabilityModel::durable(s).is_some(),
            ),
            Prop::<Self>::always(
                D9_NO_OPEN_TURN,
                |_, s| {
                    s.proc != Proc::Up
                        || s.pos != Pos::Idle
                        || DurabilityModel::durable(s)
                            .is_some_and(|log| open_turns(&log).is_empty())
                },
            ),
            Prop::<Self>::always(
                D9_WRITE_AHEAD,
                |_, s| {
                    s.proc != Proc::Up
                        || !matches!(s.pos, Pos::Output | Pos::Deliver)
                        || DurabilityModel::durable(s).is_some_and(|log| {
                            log.contains(&Record::TurnStart(DurabilityModel::current(s)))
                        })
                },
            ),
            Prop::<Self>::always(
                D9_SHOWN_IS_DURABLE,
                |_, s| {
                    DurabilityModel::durable(s).is_some_and(|log| {
                        s.shown.iter().all(|t| log.contains(&Record::Output(*t)))
                    })
                },
            ),
            Prop::<Self>::always(
                D10_NOTHING_UNTIL_REPAIRED,
                |_, s| !s.broken.contains(&Rule::D10),
            ),
            Prop::<Self>::always(
                PropertyId::new(Rule::D10, "D10 a prompt answered completed has its whole turn durable"),
                |_, s| {
                    DurabilityModel::durable(s).is_some_and(|log| {
                        s.answers.iter().all(|&(t, a)| {
                            a != Answer::Completed
                                || (log.contains(&Record::TurnStart(t))
                                    && log.contains(&Record::Output(t))
                                    && log.contains(&Record::TurnEnd(t, EndReason::Completed)))
                        })
                    })
                },
            ),
            Prop::<Self>::always(
                PropertyId::new(Rule::D10, "D10 a storage error fails only the turn it hit: a prompt answered failed had a write or sync fail"),
                |_, s| {
                    s.answers
                        .iter()
                        .all(|&(t, a)| a != Answer::Failed || s.hit.contains(&t))
                },
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::D10, "D10 window: the next prompt recovers the session in the same process"),
                |_, s| s.recovered && s.answers.last().is_some_and(|a| a.1 == Answer::Completed),
            ),
            Prop::<Self>::sometimes(PropertyId::new(Rule::D9, "D9 window: a crash leaves a torn record"), |_, s| {
                s.file.last() == Some(&Record::Torn)
            }),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::D9, "D9 window: a load closes a turn interrupted after a crash"),
                |_, s| {
                    s.proc == Proc::Up
                        && s.file
                            .iter()
                            .any(|r| matches!(r, Record::TurnEnd(_, EndReason::Interrupted)))
                },
            ),
            Prop::<Self>::sometimes(PropertyId::new(Rule::D10, "D10 window: a flush fails mid-turn"), |_, s| {
                s.proc == Proc::Refusing && s.answers.iter().any(|a| a.1 == Answer::Failed)
            }),
            crate::at_every_end!(
                Self,
                PropertyId::new(Rule::D9, "D9 every run ends with a log that loads, every turn closed"),
                |_, s| {
                    s.proc == Proc::Up
                        && DurabilityModel::durable(s)
                            .is_some_and(|log| open_turns(&log).is_empty())
                },
            ),
        ]
    }
}
