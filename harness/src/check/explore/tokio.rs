//! `tokio`: the same scenario body on the production runtime's primitives
//! with the execution's context (`CheckedTokioRt`, a multi-thread runtime
//! with 2 workers), many times. Real threads, real
//! time (the OS schedules it): a failure is re-run, not replayed step by
//! step; a line reruns up to `runs` times, stopping at the first that
//! fails.

use super::{Exploration, Explorer, Replayed};
use crate::backends::CheckedTokioRt;
use crate::check::checker::Checker;
use crate::check::journal_tap::{AgentJournal, JournalTap};
use crate::check::replay_line::{Payload, ReplayError, ReplayLine, TokioPayload};
use crate::check::report::{Report, Stop, Stopped};
use crate::check::tally::Tally;
use crate::faults::Faults;
use crate::oracle::{RuleId, Violation};
use crate::rt::context;
use crate::scenarios::{self, Outcome, Scenario};
use lifecycle_sim::Shard;
use std::time::Duration;

/// tokio's multi-thread runtime.
pub struct Tokio;

impl Explorer for Tokio {
    type Payload = TokioPayload;

    fn checker(&self) -> Checker {
        Checker::Tokio
    }

    fn explore(&self, run: &Exploration<'_>) -> Report {
        explore(
            run.scenario,
            run.faults,
            (run.budget.tokio_runs, run.budget.shard),
            run.stop_at_first,
            run.budget.stop,
        )
    }

    fn replay(
        &self,
        scenario: &Scenario,
        faults: Faults,
        payload: &TokioPayload,
    ) -> Result<Replayed, ReplayError> {
        let (outcome, journals) = rerun(scenario, faults, payload.runs);
        Ok(Replayed {
            journals,
            ..Replayed::of(outcome)
        })
    }
}

/// Seconds one execution may take before it counts as a stall.
pub const TIMEOUT_S: u64 = 10;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("tokio runtime")
}

/// Run one execution on `rt`.
pub fn run_once(rt: &tokio::runtime::Runtime, scenario: &Scenario, faults: Faults) -> Outcome {
    let fut = scenarios::run::<CheckedTokioRt>(scenario, faults);
    match rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(TIMEOUT_S),
            tokio::spawn(context::carried(fut)),
        )
        .await
    }) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(join)) => Outcome {
            violations: vec![Violation::new(
                RuleId::Panic,
                format!("scenario task failed: {join}"),
            )],
            label: "error".into(),
            fact: None,
            invariants: 1,
            journal: Vec::new(),
            world: Vec::new(),
        },
        Err(_) => Outcome {
            violations: vec![Violation::new(
                RuleId::Progress,
                format!("no progress within {TIMEOUT_S} s"),
            )],
            label: "error".into(),
            fact: None,
            invariants: 1,
            journal: Vec::new(),
            world: Vec::new(),
        },
    }
}

/// Run this shard's part of `runs` executions (`runs` over all shards):
/// the run counts of the shards add up to `runs`. Stops early at the first
/// failure with `stop_at_first`, or at Ctrl-C (`stop`).
fn explore(
    scenario: &Scenario,
    faults: Faults,
    (runs, shard): (u64, Shard),
    stop_at_first: bool,
    stop: Stop,
) -> Report {
    let rt = runtime();
    let mut tally = Tally::new(scenario, Checker::Tokio, faults);
    tally.shard(shard);
    tally.bound(format!("{runs} runs on 2 worker threads"));
    let mine = shard.range(runs);
    for _ in mine {
        if stop.requested() {
            tally.stopped(Stopped::Interrupted);
            break;
        }
        let outcome = run_once(&rt, scenario, faults);
        let failed = tally.add(&outcome, || {
            let payload = Payload::Tokio(TokioPayload { runs });
            ReplayLine::new(scenario, Checker::Tokio, faults, payload).to_string()
        });
        if failed && stop_at_first {
            tally.stopped(Stopped::FirstFailure);
            break;
        }
    }
    tally.finish()
}

/// Re-run up to `runs` times until a run fails; the first failing outcome,
/// or the last passing one, with every agent's journal in that run (read
/// from the journal trace events of every worker thread).
fn rerun(scenario: &Scenario, faults: Faults, runs: u64) -> (Outcome, Vec<AgentJournal>) {
    let tap = JournalTap::new();
    let dispatch = tap.dispatch();
    let on_worker = dispatch.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .on_thread_start(move || {
            // For the worker's whole life: the guard would restore the
            // previous dispatcher when dropped.
            std::mem::forget(tracing::dispatcher::set_default(&on_worker));
        })
        .build()
        .expect("tokio runtime");
    let mut last = Outcome::default();
    tracing::dispatcher::with_default(&dispatch, || {
        for _ in 0..runs.max(1) {
            tap.clear();
            last = run_once(&rt, scenario, faults);
            if !last.violations.is_empty() {
                break;
            }
        }
    });
    (last, tap.journals())
}
