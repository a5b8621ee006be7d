//! `crash-mid-turn`: the process dies at some instant of a turn, and the
//! world is rebuilt from what the disk kept (D9).
//!
//! Crash points are enumerated, not sampled: the disk keeps its image after
//! every operation ([`MemoryDurable::recording`]), and the client notes
//! how many operations the disk had done when each step output reached it.
//! Between two operations the disk does not change, so a crash at any
//! instant of the execution finds one of these images, with the client
//! having seen at most the outputs delivered by then. After the run, the
//! scenario restarts from every crash point, once per way the crash may
//! treat the unsynced bytes ([`CrashImage::tears`]: dropped, kept up to
//! each record boundary, or torn in the middle of each record; record
//! granularity). So every execution checks a crash at every step of its
//! schedule; the checkers explore the schedules, in which a user's cancel
//! races the turn. Each restart is a new store over a restored disk, and
//! checks on the receiving side (the disk and the client, never the
//! store's own report):
//! - the load succeeds (a torn tail is not an error);
//! - what it yields, before the closings the load adds, is a prefix of what
//!   was written, and holds every synced record;
//! - every step output the client was sent is in it (write-ahead);
//! - every `turn/start` has a `turn/end`, the added ones `interrupted`;
//! - a record appended after the load is the last record of the next load
//!   (a torn tail was cut, not appended onto).
//!
//! One restart (the last crash point with a torn record) also goes through
//! the provider: `resume`, a new prompt, dispose; its log must load cleanly
//! with the new turn closed. Faults M16 (no write-ahead) and M17 (the torn
//! tail kept) break D9 here.

use super::goals::{excused, on, Goal};
use super::rig::Rig;
use super::scenario::{bodies, Bounds, Ctx, Scenario};
use super::{spec, Outcome};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::backends::CheckedTokioRt;
use crate::checker::Checker;
use crate::context::{self, Context};
use crate::faults::{Fault, Faults};
use crate::journal::{Cause, EndReason};
use crate::oracle::Violation;
use crate::rt::{self, BoxFuture, Mutex, Rt};
use crate::rules::Rule;
use crate::session_log::Entry;
use crate::store::durable::{CrashImage, Durable, DurableRecord, MemoryDurable, Tear};
use crate::store::{open_turns, SessionStore};
use crate::world::World;
use std::sync::Arc;

/// A goal of [`CRASH_MID_TURN`].
pub const COMPLETED: Goal = excused(
        on!(
            "completed",
            "the turn completes; the cancel finds the agent idle",
            |f: &Said| f.end == Some(EndReason::Completed),
        ),
        &[
            (Checker::ShuttleRandom,
                "not reached in runs far past the PR budget: the cancel task is ready from the start, and the walk must pass it over at each of the turn's scheduling points",
            ),
            (Checker::ShuttlePct,
                "not reached in runs far past the PR budget at depth 3: the turn needs more priority changes than the depth allows to finish before the cancel",
            ),
        ],
    );

/// A goal of [`CRASH_MID_TURN`].
pub const ABORTED_AFTER_DELIVERY: Goal = excused(
    on!(
        "aborted-after-delivery",
        "the cancel aborts the turn after the client was sent a step's output",
        |f: &Said| f.end == Some(EndReason::Aborted) && f.seen == 1,
    ),
    &[(
        Checker::ShuttlePct,
        "not reached in runs far past the PR budget at depth 3 (shuttle-random reaches it, rarely)",
    )],
);

/// A goal of [`CRASH_MID_TURN`].
pub const ABORTED_BEFORE_DELIVERY: Goal = on!(
    "aborted-before-delivery",
    "the cancel aborts the turn before any output reached the client",
    |f: &Said| f.end == Some(EndReason::Aborted) && f.seen == 0,
);

/// How prompt A's turn ended, and how many step outputs the client was
/// sent. Shown as `A:completed` or `A:aborted:seen-1`.
struct Said {
    end: Option<EndReason>,
    seen: usize,
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.end {
            Some(EndReason::Completed) => write!(f, "A:completed"),
            Some(EndReason::Aborted) => write!(f, "A:aborted:seen-{}", self.seen),
            other => write!(f, "A:{other:?}"),
        }
    }
}

const GOALS: &[Goal] = &[COMPLETED, ABORTED_AFTER_DELIVERY, ABORTED_BEFORE_DELIVERY];

/// `crash-mid-turn`, registered in [`super::ALL`].
pub static CRASH_MID_TURN: Scenario = Scenario::new(
    "crash-mid-turn",
    "a two-step turn raced by a cancel; a crash at every disk operation (torn or lost unsynced bytes), restart and load",
    bodies!(crash_mid_turn),
)
.rules(&[Rule::D9, Rule::D3])
.goals(GOALS)
.bounds(Bounds {
    dfs: None,
    loom_cap: 1,
    ..Bounds::PR
})
.targets(&[Fault::M16, Fault::M17]);

/// What a client was sent: each step output delivered to it, with the
/// number of operations its disk had done by then.
pub(super) struct Client<R: Rt> {
    disk: Arc<MemoryDurable<R>>,
    seen: Mutex<R, Vec<(String, usize)>>,
}

impl<R: Rt> Client<R> {
    /// A client of an agent whose log is on `disk`.
    pub(super) fn new(disk: &Arc<MemoryDurable<R>>) -> Arc<Self> {
        Arc::new(Client {
            disk: disk.clone(),
            seen: Mutex::new(Vec::new()),
        })
    }

    /// Everything delivered so far.
    pub(super) fn seen(&self) -> Vec<String> {
        self.seen_by(usize::MAX)
    }

    /// What was delivered before the disk's `ops`th operation.
    fn seen_by(&self, ops: usize) -> Vec<String> {
        self.seen.with(|s| {
            s.iter()
                .filter(|(_, n)| *n <= ops)
                .map(|(o, _)| o.clone())
                .collect()
        })
    }
}

/// Steps that each produce an output (`<text> step <n>`) and hand it to
/// the [`Client`] when the agent delivers it.
pub(super) struct EchoRunner<R: Rt> {
    pub(super) client: Arc<Client<R>>,
}

impl<R: Rt> StepRunner for EchoRunner<R> {
    fn run_step(
        &self,
        _agent: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let (text, ms) = (prompt.text.clone(), prompt.step_ms);
        Box::pin(async move {
            rt::sleep_or::<R>(ms, signal.fired()).await;
            Some(format!("{text} step {step}"))
        })
    }

    fn deliver(&self, _agent: &str, _prompt: &PromptSpec, _step: u32, output: &str) {
        // The count is read first: the output was synced before it.
        let ops = self.client.disk.op_count();
        self.client.seen.with(|s| s.push((output.to_string(), ops)));
    }
}

/// A rig whose disk is `disk` and whose agents' steps echo to `client`.
pub(super) fn echo_rig<R: Rt>(
    faults: Faults,
    disk: &Arc<MemoryDurable<R>>,
    client: &Arc<Client<R>>,
) -> Rig<R> {
    let rig = Rig::<R>::new(faults, Some(disk.clone() as Arc<dyn Durable>));
    rig.provider.set_runner(Arc::new(EchoRunner {
        client: client.clone(),
    }));
    rig
}

/// The body: see the module docs. Its own disk is always the in-memory
/// one (a crash image needs the written/synced split).
pub async fn crash_mid_turn<R: Rt>(ctx: Ctx) -> Outcome {
    let disk = Arc::new(MemoryDurable::<R>::recording());
    let client = Client::new(&disk);
    let rig = echo_rig(ctx.faults, &disk, &client);
    let owner = rig.owner("owner");
    let h = rig.provider.create("a", &owner).await.expect("create a");
    rig.track(&h.agent, h.serial());
    let p = h.agent.send(spec("A", 2)).expect("send A");
    let agent = h.agent.clone();
    let user = rt::spawn::<R, ()>("user-cancel", async move {
        agent.cancel(Cause::User);
    });
    let (end, _) = h.agent.settled(p).await;
    user.join().await;
    h.dispose().await;
    let points = disk.crash_points();
    let mut own = Vec::new();
    let mut worst = None;
    for (ops, image) in points.iter().enumerate() {
        let seen = client.seen_by(ops);
        for tear in image.tears() {
            own.extend(restart_checks(ctx.faults, image, tear, &seen));
            if matches!(tear, Tear::TearRecord(_)) {
                worst = Some((image, tear));
            }
        }
    }
    let (image, tear) = worst.unwrap_or((&points[0], Tear::DropUnsynced));
    own.extend(resume_after_crash(ctx.faults, image, tear));
    let said = Said {
        end,
        seen: client.seen().len(),
    };
    rig.finish(said, own)
}

/// The restart checks are offline analyses of a crash image: pure
/// functions of the faults, the image, the tear and what the client saw.
/// They run on the plain tokio backend (no checker explores them: the
/// restarted process is checked, not raced) and are memoized per process,
/// since most executions crash into images earlier ones already checked.
type Checks = Vec<(bool, Violation)>;
type Key = (Faults, CrashImage, Tear, Vec<String>, bool);

fn memo(key: Key, run: impl FnOnce(&Key) -> Checks) -> Checks {
    static CACHE: std::sync::Mutex<Option<std::collections::HashMap<Key, Checks>>> =
        std::sync::Mutex::new(None);
    let hit = CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(Default::default)
        .get(&key)
        .cloned();
    if let Some(hit) = hit {
        return hit;
    }
    let checks = run(&key);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let cache = cache.get_or_insert_with(Default::default);
    if cache.len() > 100_000 {
        cache.clear();
    }
    cache.insert(key, checks.clone());
    checks
}

/// Restart from `image` under `tear` with a bare store, and check D9 on
/// what the disk then holds (see the module docs).
pub(crate) fn restart_checks(
    faults: Faults,
    image: &CrashImage,
    tear: Tear,
    seen: &[String],
) -> Checks {
    let key = (faults, image.clone(), tear, seen.to_vec(), false);
    memo(key, |(faults, image, tear, seen, _)| {
        restart_checks_uncached(*faults, image, *tear, seen)
    })
}

/// Offline, in a context of its own (`faults`, a journal of its own), so
/// the execution that asks keeps its own.
fn restart_checks_uncached(
    faults: Faults,
    image: &CrashImage,
    tear: Tear,
    seen: &[String],
) -> Checks {
    let ctx = Context::new(faults).observed(World::<CheckedTokioRt>::new());
    context::scoped(ctx, || restart_checks_offline(image, tear, seen))
}

fn restart_checks_offline(image: &CrashImage, tear: Tear, seen: &[String]) -> Checks {
    let disk = Arc::new(image.restore::<CheckedTokioRt>(tear));
    let store = SessionStore::<CheckedTokioRt>::new(disk.clone());
    let mut own = Vec::new();
    let mut check = |ok: bool, what: String| {
        own.push((
            ok,
            Violation::new(
                Rule::D9,
                format!("restart after a crash ({tear:?}): {what}"),
            ),
        ))
    };
    let ids = image.ids();
    // The checks below run per log: a crash that left no log at all, after
    // the client was sent output, must fail here, not pass them vacuously.
    check(
        seen.is_empty() || !ids.is_empty(),
        format!(
            "the client was sent {} outputs, but the crash left no log",
            seen.len()
        ),
    );
    // The step outputs every log kept: each output the client was sent
    // must be among them (outputs name their prompt, so each belongs to
    // one log).
    let mut outputs: Vec<String> = Vec::new();
    for id in ids {
        let parsed = match store.recover(&id) {
            Ok(log) => log.records,
            Err(e) => {
                check(false, format!("loading {id:?} failed: {e}"));
                continue;
            }
        };
        // Every check below reads the disk as the repair left it, from the
        // receiving side, not the records the load parsed before it cut:
        // what another crash right after the repair would keep (its synced
        // bytes), so a repair that is not durable fails too.
        let durable = disk
            .crash_image()
            .restore::<CheckedTokioRt>(Tear::DropUnsynced);
        let log = match durable.load(&id) {
            Ok(l) if l.torn.is_none() => l.records,
            Ok(l) => {
                check(
                    false,
                    format!(
                        "after the load of {id:?} the disk still has a torn tail: {:?}",
                        l.torn.map(|t| t.reason)
                    ),
                );
                continue;
            }
            Err(e) => {
                check(
                    false,
                    format!("re-reading {id:?} after its repair failed: {e}"),
                );
                continue;
            }
        };
        check(
            log == parsed,
            format!(
                "the repaired disk of {id:?} holds {} records, but its load returned {}",
                log.len(),
                parsed.len()
            ),
        );
        let (synced, written) = (image.synced(&id), image.written(&id));
        let added = log
            .iter()
            .rev()
            .take_while(|r| {
                matches!(
                    r.entry,
                    Entry::TurnEnd {
                        reason: EndReason::Interrupted,
                        ..
                    }
                )
            })
            .count();
        let kept = &log[..log.len() - added];
        check(
            written.starts_with(kept),
            format!("the load of {id:?} is not a prefix of what was written"),
        );
        check(
            kept.starts_with(&synced),
            format!(
                "the load of {id:?} lost synced records: {} loaded, {} synced",
                kept.len(),
                synced.len()
            ),
        );
        outputs.extend(kept.iter().filter_map(|r| match &r.entry {
            Entry::Step {
                output: Some(o), ..
            } => Some(o.clone()),
            _ => None,
        }));
        check(
            open_turns(&log).is_empty() && added == open_turns(kept).len(),
            format!("the load of {id:?} left a turn open, or closed one that was not"),
        );
        // The next append must land after the repaired end, not on a tail.
        let marker = DurableRecord {
            serial: u64::MAX,
            entry: Entry::TurnEnd {
                prompt: u64::MAX,
                reason: EndReason::Interrupted,
            },
        };
        let appended = disk.write(&id, std::slice::from_ref(&marker));
        let next = disk.load(&id);
        let last_is_marker =
            matches!(&next, Ok(l) if l.torn.is_none() && l.records.last() == Some(&marker));
        check(
            appended.is_ok() && last_is_marker,
            format!(
                "a record appended after the load of {id:?} does not load back: {}",
                match &next {
                    Ok(l) => format!("torn tail {:?}", l.torn.as_ref().map(|t| &t.reason)),
                    Err(e) => e.to_string(),
                }
            ),
        );
    }
    for out in seen {
        check(
            outputs.contains(out),
            format!("the client was sent {out:?}, but no log holds it after the restart"),
        );
    }
    own
}

/// Restart from `image` under `tear` through the provider: resume `a`, run
/// one prompt, dispose; the log must then load cleanly with it closed. Run
/// offline on a current-thread tokio runtime of a thread of its own (the
/// execution that asks may itself be a tokio task, whose thread cannot
/// block on a second runtime), memoized like [`restart_checks`].
fn resume_after_crash(faults: Faults, image: &CrashImage, tear: Tear) -> Checks {
    let key = (faults, image.clone(), tear, Vec::new(), true);
    memo(key, |(faults, image, tear, _, _)| {
        std::thread::scope(|s| {
            s.spawn(|| resume_offline(*faults, image, *tear))
                .join()
                // A panic of the resume is the asking execution's, as if
                // it had run on its thread.
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    })
}

/// [`resume_after_crash`] on this thread, which must be in no runtime.
fn resume_offline(faults: Faults, image: &CrashImage, tear: Tear) -> Checks {
    match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        // In a context of its own: the rig it builds enters one.
        Ok(rt) => context::scoped(Context::new(faults), || {
            rt.block_on(resume_uncached::<CheckedTokioRt>(faults, image, tear))
        }),
        Err(e) => vec![(
            false,
            Violation::new(Rule::D9, format!("no runtime to resume on: {e}")),
        )],
    }
}

async fn resume_uncached<R: Rt>(faults: Faults, image: &CrashImage, tear: Tear) -> Checks {
    let disk = Arc::new(image.restore::<R>(tear));
    let client = Client::new(&disk);
    let rig = echo_rig(faults, &disk, &client);
    let owner = rig.owner("owner-after-restart");
    let fail = |what: String| {
        vec![(
            false,
            Violation::new(Rule::D9, format!("resume after a crash ({tear:?}): {what}")),
        )]
    };
    let h = match rig.provider.resume("a", &owner).await {
        Ok(h) => h,
        Err(e) => return fail(format!("resume failed: {e}")),
    };
    let quick = PromptSpec {
        step_ms: 0,
        ..spec("B", 1)
    };
    let p = h.agent.send(quick).expect("send B");
    let (reason, error) = h.agent.settled(p).await;
    h.dispose().await;
    let serial = h.serial();
    match disk.load("a") {
        Ok(l) if l.torn.is_none() => {
            let closed = l.records.iter().any(|r| {
                r.serial == serial
                    && matches!(
                        r.entry,
                        Entry::TurnEnd {
                            reason: EndReason::Completed,
                            ..
                        }
                    )
            });
            let older = l.records.iter().all(|r| r.serial <= serial);
            vec![(
                closed && older && error.is_none() && reason == Some(EndReason::Completed),
                Violation::new(
                    Rule::D9,
                    format!(
                        "resume after a crash ({tear:?}): the new turn (serial {serial}) ended {reason:?} / {error:?}, durable and closed: {closed}, serial above the old ones: {older}"
                    ),
                ),
            )]
        }
        Ok(l) => fail(format!(
            "the log has a torn tail after the new turn: {:?}",
            l.torn
        )),
        Err(e) => fail(format!("the log no longer loads: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokio checker asks for the offline resume from a tokio task,
    /// whose thread cannot block on a second runtime: the resume runs on a
    /// thread of its own, and the task gets its checks rather than a panic.
    /// (An image no scenario makes, so no earlier call has memoized it.)
    #[test]
    fn a_resume_after_a_crash_runs_from_inside_a_tokio_task() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let checks = rt.block_on(async {
            tokio::spawn(async {
                resume_after_crash(
                    Faults::none(),
                    &CrashImage::default(),
                    Tear::TearRecord(usize::MAX),
                )
            })
            .await
            .expect("the resume does not panic inside a tokio task")
        });
        assert!(!checks.is_empty(), "the resume reports its checks");
    }
}
