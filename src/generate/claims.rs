//! A9 and A10 at the end of a generated run, from the side of another
//! process that shares the sessions directory: which logs it would find
//! locked (the server's claims on them), against the sessions the server
//! keeps and the ids its client was given.
//!
//! Checked once every client's requests were answered and before the
//! disconnect (a quiesce takes every session without letting go of its
//! log: the process is about to exit, and the OS lets go then):
//! - a log is held only for a session the server keeps, and once (a
//!   refused or failed load let go of its claim, a close of its log);
//! - every session the client was given (`old` once loaded, the id a
//!   `session/new` answered) holds its log;
//! - the server keeps no session that no client was given, except at
//!   most one per `session/new` its caller dropped (D8: that work
//!   completes by itself): a `session/new` that failed leaves none (A10).

use super::history::{Answer, Obs};
use crate::oracle::Violation;
use crate::rules::Rule;
use std::collections::{BTreeMap, BTreeSet};

/// The checks, each `(holds, the violation if not)`. `sessions`: the
/// ids the bridge keeps; `claims`: the server's claims per log; `old`:
/// the id `session/load` names; `history`: what the connection carried.
pub(super) fn log_claims(
    sessions: &[String],
    claims: &BTreeMap<String, usize>,
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
    let wrong_claims: Vec<String> = claims
        .iter()
        .filter(|(id, n)| **n != usize::from(kept.contains(id.as_str())))
        .map(|(id, n)| format!("{id}: {n} claims"))
        .chain(
            kept.iter()
                .filter(|id| given.contains(*id) && !claims.contains_key(**id))
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
                    "another process would find these logs held without a session, held twice, \
                     or free under a live session: {wrong_claims:?}"
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
