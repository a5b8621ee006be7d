//! A9 and A10 at the end of a generated run, from the side of another
//! process that shares the sessions directory: which logs it would find
//! locked (the disk's lock table, `MemoryDurable::locked`, not what the server
//! counts of its own claims), against the sessions the server keeps and
//! the ids its client was given.
//!
//! Checked once every client's requests were answered and before the
//! disconnect (a quiesce takes every session without letting go of its
//! log: the process is about to exit, and the OS lets go then):
//! - a log is held only for a session the server keeps (a refused or
//!   failed load let go of its claim, a close of its log);
//! - every session the client was given (`old` once loaded, the id a
//!   `session/new` answered) holds its log;
//! - the server keeps no session that no client was given, except at
//!   most one per `session/new` its caller dropped (D8: that work
//!   completes by itself): a `session/new` that failed leaves none (A10).

use super::history::{Answer, Obs};
use crate::oracle::Violation;
use crate::rules::Rule;
use std::collections::BTreeSet;

/// The checks, each `(holds, the violation if not)`. `sessions`: the
/// ids the bridge keeps; `locked`: the logs the disk has locked; `old`:
/// the id `session/load` names; `history`: what the connection carried.
pub(super) fn log_claims(
    sessions: &[String],
    locked: &BTreeSet<String>,
    old: &str,
    history: &[Obs],
) -> Vec<(bool, Violation)> {
    let kept: BTreeSet<&str> = sessions.iter().map(String::as_str).collect();
    let given: BTreeSet<&str> = history
        .iter()
        .filter_map(|o| match o {
            Obs::Answered {
                answer: Answer::New(Ok(id)),
                ..
            } => Some(id.as_str()),
            _ => None,
        })
        .chain([old])
        .collect();
    let dropped_new = history
        .iter()
        .filter(|o| {
            matches!(
                o,
                Obs::Answered {
                    answer: Answer::NewDropped,
                    ..
                }
            )
        })
        .count();
    let wrong_claims: Vec<String> = locked
        .iter()
        .filter(|id| !kept.contains(id.as_str()))
        .map(|id| format!("{id}: held, no session"))
        .chain(
            kept.iter()
                .filter(|id| given.contains(*id) && !locked.contains(**id))
                .map(|id| format!("{id}: kept, its log not held")),
        )
        .collect();
    let unknown: Vec<&str> = kept
        .iter()
        .copied()
        .filter(|id| !given.contains(id))
        .collect();
    vec![
        (
            wrong_claims.is_empty(),
            Violation::new(
                Rule::A9,
                format!(
                    "another process would find these logs held without a session, or free \
                     under a live session: {wrong_claims:?}"
                ),
            ),
        ),
        (
            unknown.len() <= dropped_new,
            Violation::new(
                Rule::A10,
                format!(
                    "the server keeps sessions no client was given (a failed session/new left \
                     them): {unknown:?}"
                ),
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::TokioRt;
    use crate::store::durable::{Durable, MemoryDurable, Tear};

    fn new_answered(id: &str) -> Obs {
        Obs::Answered {
            client: 0,
            op: 0,
            answer: Answer::New(Ok(id.to_string())),
        }
    }

    fn a9(sessions: &[&str], locked: &[&str]) -> bool {
        let sessions: Vec<String> = sessions.iter().map(|s| s.to_string()).collect();
        let locked: BTreeSet<String> = locked.iter().map(|s| s.to_string()).collect();
        let history = [new_answered("sess-1")];
        log_claims(&sessions, &locked, "old", &history)[0].0
    }

    /// The check reads the disk's locks: a lock left behind a closed
    /// session, or a kept session whose log is free, breaks A9.
    #[test]
    fn a_lock_without_its_session_or_a_session_without_its_lock_breaks_a9() {
        assert!(a9(&["sess-1", "old"], &["sess-1", "old"]));
        assert!(!a9(&["sess-1"], &["sess-1", "old"]), "old held, no session");
        assert!(!a9(&["sess-1", "old"], &["old"]), "sess-1 kept, log free");
    }

    /// The memory disk keeps a lock table as the OS keeps `flock`s: what
    /// is locked until unlocked, and nothing after a restart.
    #[test]
    fn the_memory_disk_lists_its_locks_and_a_restart_frees_them() {
        let disk = MemoryDurable::<TokioRt>::default();
        disk.create_locked("a").expect("create a");
        disk.lock("b").expect("lock b");
        disk.unlock("b");
        assert_eq!(disk.locked().into_iter().collect::<Vec<_>>(), ["a"]);
        assert!(disk.exists("a").expect("exists"), "created, durably");
        let restarted = disk.crash_image().restore::<TokioRt>(Tear::DropUnsynced);
        assert_eq!(restarted.locked(), BTreeSet::new());
    }
}
