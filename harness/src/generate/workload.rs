//! A generated workload: 2–4 concurrent clients of one agent server, each
//! a short program over the actions of the models (SPEC A1–A9, R1, D1):
//! `session/new`, `session/load`, `session/prompt` with a script of steps,
//! `session/cancel`, `session/close`, disconnect, and the lifecycle's own callers beside
//! them (provider `create`, handle `dispose`, owner `unload`, an agent's
//! `when_idle`), some of whose calls are dropped at an await; and the
//! world's: a prompt whose step ends only when signalled, disposal
//! listeners that panic, a disk whose next write or fsync fails, a crash
//! (the process restarted from the disk as it is at that instant), and a
//! step that starts a background job.
//!
//! [`strategy`] generates workloads with proptest; its value trees shrink a
//! failing one towards fewer clients and fewer operations. [`from_seed`]
//! makes the workload of a seed, the same on every machine (proptest's
//! ChaCha generator), so a seed names a workload in a replay line.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::fmt;

/// The session a request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// `old`: the session every execution starts with on disk (a finished
    /// turn), which `session/load` resumes and replays.
    Old,
    /// The client's own `k`-th session of `session/new` (skipped if it has
    /// none: a client names only ids it was given).
    Mine(u8),
}

/// One operation of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `session/new`, awaited (its id is what later requests name);
    /// `give_up`: the caller drops it at an await (D8).
    New {
        /// Dropped at an await.
        give_up: bool,
    },
    /// `session/load old`, sent and not awaited (a pipelining client).
    Load,
    /// `session/prompt` of `steps` steps, sent and not awaited.
    Prompt {
        /// The session.
        on: Target,
        /// Steps of its turn.
        steps: u8,
    },
    /// `session/cancel` (a notification: no answer).
    Cancel {
        /// The session.
        on: Target,
    },
    /// `session/close` (the session is disposed: a prompt of it in flight
    /// or waiting answers `cancelled`, later ones fail as unknown), sent
    /// and not awaited.
    Close {
        /// The session.
        on: Target,
    },
    /// Wait for every answer this client is owed.
    Await,
    /// The client disconnects: the server quiesces (A1, A6), awaited.
    Disconnect,
    /// The provider creates agent `old-helper` under the owner scope (R1,
    /// R3): an id that extends `old`'s (S6).
    Create,
    /// The client disposes the agent `old-helper`, if a client created it
    /// and none disposed it yet (D1);
    /// `give_up`: it drops the dispose at an await (D8: the teardown goes
    /// on by itself).
    Dispose {
        /// Dropped at an await.
        give_up: bool,
    },
    /// The client awaits `when_idle` of the session's agent (C7), if it
    /// has one.
    WhenIdle {
        /// The session.
        on: Target,
    },
    /// The owner scope unloads (D2, R3).
    UnloadOwner,
    /// `session/prompt` of one step that ends only when its turn's signal
    /// fires, then `session/cancel` of the same session (C10, A2).
    Interrupt {
        /// The session.
        on: Target,
    },
    /// `agent/disposed` and `session/disposed` listeners that panic are
    /// registered (D4).
    Listen,
    /// The disk's next write fails with ENOSPC (`sync: false`) or its
    /// next fsync with EIO (`sync: true`) (D10).
    DiskFault {
        /// The fsync fails, not the write.
        sync: bool,
    },
    /// The process crashes here: every way the disk may be left (each
    /// tear of its unsynced bytes) is restarted from and checked (D9).
    Crash,
    /// `session/prompt` of one step that starts a background job as the
    /// session (tool-bash); the job's completion notice goes to its owner
    /// alone (S6), and its disposal drains it (S7).
    Job {
        /// The session.
        on: Target,
    },
}

/// One client: its operations, in the order it sends them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    /// The program.
    pub ops: Vec<Op>,
}

/// A workload: clients that run concurrently against one server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Workload {
    /// The clients (2–4 when generated).
    pub clients: Vec<Client>,
}

impl Workload {
    /// Operations over every client.
    pub fn ops(&self) -> usize {
        self.clients.iter().map(|c| c.ops.len()).sum()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Old => f.write_str("old"),
            Target::Mine(k) => write!(f, "#{}", k + 1),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::New { give_up: false } => f.write_str("session/new"),
            Op::New { give_up: true } => f.write_str("session/new (dropped at an await)"),
            Op::Load => f.write_str("session/load old"),
            Op::Prompt { on, steps } => {
                let s = if *steps == 1 { "" } else { "s" };
                write!(f, "session/prompt {on} ({steps} step{s})")
            }
            Op::Cancel { on } => write!(f, "session/cancel {on}"),
            Op::Close { on } => write!(f, "session/close {on}"),
            Op::Await => f.write_str("await answers"),
            Op::Disconnect => f.write_str("disconnect"),
            Op::Create => f.write_str("provider create old-helper"),
            Op::Dispose { give_up: false } => f.write_str("dispose old-helper"),
            Op::Dispose { give_up: true } => {
                f.write_str("dispose old-helper (dropped at an await)")
            }
            Op::WhenIdle { on } => write!(f, "when_idle {on}"),
            Op::UnloadOwner => f.write_str("owner unload"),
            Op::Interrupt { on } => write!(
                f,
                "session/prompt {on} (a step that ends only when signalled), then session/cancel {on}"
            ),
            Op::Listen => f.write_str("panicking disposal listeners"),
            Op::DiskFault { sync: false } => f.write_str("the next write fails (ENOSPC)"),
            Op::DiskFault { sync: true } => f.write_str("the next fsync fails (EIO)"),
            Op::Crash => f.write_str("crash and restart"),
            Op::Job { on } => write!(
                f,
                "session/prompt {on} (a step that starts a background job)"
            ),
        }
    }
}

/// One line per client: `client 1: session/new; session/prompt #1 (2 steps); ...`.
impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.clients.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "client {}:", i + 1)?;
            for (j, op) in c.ops.iter().enumerate() {
                let sep = if j == 0 { " " } else { "; " };
                write!(f, "{sep}{op}")?;
            }
        }
        Ok(())
    }
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![3 => Just(Target::Old), 2 => Just(Target::Mine(0)), 1 => Just(Target::Mine(1))]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::New { give_up: false }),
        1 => Just(Op::New { give_up: true }),
        3 => Just(Op::Load),
        6 => (target(), 1u8..=3).prop_map(|(on, steps)| Op::Prompt { on, steps }),
        4 => target().prop_map(|on| Op::Cancel { on }),
        1 => target().prop_map(|on| Op::Close { on }),
        1 => Just(Op::Await),
        1 => Just(Op::Disconnect),
        3 => Just(Op::Create),
        1 => Just(Op::Dispose { give_up: false }),
        2 => Just(Op::Dispose { give_up: true }),
        4 => target().prop_map(|on| Op::WhenIdle { on }),
        1 => Just(Op::UnloadOwner),
        2 => target().prop_map(|on| Op::Interrupt { on }),
        1 => Just(Op::Listen),
        1 => Just(Op::DiskFault { sync: false }),
        1 => Just(Op::DiskFault { sync: true }),
        2 => Just(Op::Crash),
        3 => target().prop_map(|on| Op::Job { on }),
    ]
}

/// Workloads of 2–4 clients of 1–5 operations each. Shrinking drops
/// clients and operations and simplifies what is left.
pub fn strategy() -> impl Strategy<Value = Workload> {
    prop::collection::vec(
        prop::collection::vec(op(), 1..=5).prop_map(|ops| Client { ops }),
        2..=4,
    )
    .prop_map(|clients| Workload { clients })
}

/// The proptest runner of `seed`: ChaCha seeded from it, the same on
/// every machine and in every build.
pub fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// The workload of `seed` and its value tree (for shrinking).
pub fn tree(seed: u64) -> impl ValueTree<Value = Workload> {
    strategy()
        .new_tree(&mut runner(seed))
        .expect("the workload strategy never rejects")
}

/// The workload of `seed`.
pub fn from_seed(seed: u64) -> Workload {
    tree(seed).current()
}

/// Shrink the workload of `seed` while `fails` holds: proptest's loop of
/// `simplify` while the failure persists and `complicate` when it goes.
/// At most `tries` candidates are run. Returns the smallest failing
/// workload found (the seed's own if nothing smaller fails).
pub fn shrink(seed: u64, tries: usize, mut fails: impl FnMut(&Workload) -> bool) -> Workload {
    let mut tree = tree(seed);
    let mut best = tree.current();
    let mut left = tries;
    if !tree.simplify() {
        return best;
    }
    while left > 0 {
        left -= 1;
        let candidate = tree.current();
        let more = if fails(&candidate) {
            best = candidate;
            tree.simplify()
        } else {
            tree.complicate()
        };
        if !more {
            break;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_names_one_workload() {
        assert_eq!(from_seed(7), from_seed(7));
        assert_ne!(from_seed(7), from_seed(8));
        for seed in 0..50 {
            let w = from_seed(seed);
            assert!((2..=4).contains(&w.clients.len()), "{w}");
            assert!(w.clients.iter().all(|c| (1..=5).contains(&c.ops.len())));
        }
    }

    #[test]
    fn shrinking_drops_what_the_failure_does_not_need() {
        // A failure that needs one load anywhere: the shrunk workload keeps
        // a load and little else.
        let has_load = |w: &Workload| w.clients.iter().any(|c| c.ops.contains(&Op::Load));
        let seed = (0..200).find(|&s| has_load(&from_seed(s)) && from_seed(s).ops() > 4);
        let seed = seed.expect("some seed has a load");
        let small = shrink(seed, 500, has_load);
        assert!(has_load(&small));
        assert!(small.ops() < from_seed(seed).ops(), "{small}");
    }

    #[test]
    fn a_workload_reads_as_its_clients() {
        let w = Workload {
            clients: vec![
                Client {
                    ops: vec![
                        Op::New { give_up: false },
                        Op::Prompt {
                            on: Target::Mine(0),
                            steps: 2,
                        },
                    ],
                },
                Client {
                    ops: vec![Op::Load, Op::Cancel { on: Target::Old }],
                },
            ],
        };
        assert_eq!(
            w.to_string(),
            "client 1: session/new; session/prompt #1 (2 steps)\nclient 2: session/load old; session/cancel old"
        );
    }
}
