//! One execution of a generated workload, on any backend: a rig with the
//! ACP bridge, a session `old` on its disk, the server's own request
//! handling (`acp::core`) and scripted responder (`acp::responder`) over a
//! simulated shell, and one task per client. Every client records what it sends and what it
//! receives into one [`Connection`]: the history the judge reads
//! (`super::judge`), written on the receiving side (answers as the client
//! gets them, updates as the server hands them to the connection).
//!
//! Requests are admitted by the server's own admission (`acp::admit`,
//! which `acp::server` serves every load and prompt with): each request's
//! future is polled once, in the order the client sends them, before the
//! next is sent; what is left of it runs on a task of its own. So a `session/cancel` that follows a prompt finds
//! it claimed or waiting, as on the wire.

use super::script::{self, HUNG, JOB};
use super::workload::{Op, Target, Workload};
use crate::acp::core::ServerCore;
use crate::acp::logs::Logs;
use crate::acp::outbound::Outbound;
use crate::acp::responder::Responder;
use crate::acp::{AcpError, Admitted, StopReason};
use crate::events::LifecycleEvent;
use crate::faults::Faults;
use crate::oracle::Violation;
use crate::oracle_world::entered_after_unloading;
use crate::provider::AgentHandle;
use crate::rt::Wait;
use crate::rt::{self, BoxFuture, JoinHandle, Rt};
use crate::rules::Rule;
use crate::scenarios::crash::restart_checks;
use crate::scenarios::rig::{give_up, Rig, LISTENER_PANIC};
use crate::scenarios::{Ctx, Outcome};
use crate::scope::Scope;
use crate::session_log::Entry;
use crate::shell::ShellExecutor;
use crate::store::durable::{DiskFault, Durable, MemoryDurable};
use crate::store::Listener;
use crate::world::Keys;
use std::sync::Arc;

pub use super::history::{Answer, Connection, Obs, Req, Update};
use super::old::{old_records, OLD};

/// The outbound budget of a generated run: less than one update, so each
/// update waits until the client read the one before (A10).
const READ_AHEAD_BYTES: usize = 1;

/// The working directory every session is opened in (a simulated shell
/// runs nowhere).
const CWD: &str = "/";

/// The id of the agent the provider creates beside the sessions: one that
/// extends `old`'s, as a session's helper agent would (S6: a notice for
/// `old` is never its).
pub const HELPER: &str = "old-helper";

/// What every client shares.
struct Env<R: Rt> {
    rig: Arc<Rig<R>>,
    /// The server's request handling.
    core: Arc<ServerCore<R>>,
    owner: Scope<R>,
    conn: Arc<Connection>,
    /// The store's disk, when the run owns it (disk faults and crashes
    /// need its written/synced split).
    disk: Option<Arc<MemoryDurable<R>>>,
    faults: Faults,
    /// Checks made during the run (crash restarts, D10 on answers), from
    /// the receiving side: the disk and what the client was told.
    checks: std::sync::Mutex<Vec<(bool, Violation)>>,
    /// The helper agent, once a client created it and until a client
    /// disposes it (any client may).
    helper: std::sync::Mutex<Option<AgentHandle<R>>>,
}

impl<R: Rt> Env<R> {
    /// Have the rig's oracles check session `id`'s agent (C1–C9, D3, D6).
    fn track(&self, id: &str) {
        let serial = self.rig.registry.entries().into_iter().find(|e| e.0 == id);
        if let (Some(agent), Some((_, serial))) = (self.rig.registry.get(id), serial) {
            self.rig.track(&agent, serial);
        }
    }

    /// `session/load old`, served by the server's own handling: its log
    /// claimed, replayed as it stood when the load began (A9).
    async fn load(self: Arc<Self>) -> Result<(), AcpError> {
        self.core.clone().load(OLD.to_string(), CWD.into()).await
    }

    /// Record the answer client `client` received to its op `op`.
    fn answered(&self, client: u8, op: u8, answer: Answer) {
        self.conn.push(Obs::Answered { client, op, answer });
    }

    /// The helper agent, if one was created and not yet disposed.
    fn helper(&self) -> Option<AgentHandle<R>> {
        self.helper
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn check(&self, more: impl IntoIterator<Item = (bool, Violation)>) {
        self.checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(more);
    }

    /// D10, from the disk's side: a prompt that answered without an error
    /// and whose turn began on disk (its user message, text `text`, is
    /// synced) has that turn closed on disk by the time of the answer; one
    /// that answered `end_turn` began on disk. A storage failure that was
    /// not reported leaves them out.
    fn turn_on_disk(&self, id: &str, text: &str, stop: StopReason) {
        let Some(disk) = &self.disk else { return };
        let synced = disk.crash_image().synced(id);
        let began = synced.iter().find_map(|r| match &r.entry {
            Entry::UserMessage {
                prompt, text: t, ..
            } if t == text => Some((r.serial, *prompt)),
            _ => None,
        });
        let closed = began.is_some_and(|(serial, p)| {
            synced.iter().any(|r| {
                r.serial == serial
                    && matches!(r.entry, Entry::TurnEnd { prompt, .. } if prompt == p)
            })
        });
        let ok = match began {
            Some(_) => closed,
            None => stop != StopReason::EndTurn,
        };
        self.check([(
            ok,
            Violation::new(
                Rule::D10,
                format!(
                    "prompt {text} on {id} answered {stop:?} with no storage error, but {} synced on disk",
                    if began.is_some() { "its turn/end is not" } else { "its turn is not" }
                ),
            ),
        )]);
    }

    /// D9: the process crashes now. Every way the disk may be left is
    /// restarted from, and what the client was sent must be there.
    fn crash(&self) {
        let Some(disk) = &self.disk else { return };
        let seen: Vec<String> = self
            .conn
            .history()
            .into_iter()
            .filter_map(|o| match o {
                Obs::Update {
                    update: Update::Text(text),
                    ..
                } => text.strip_prefix("agent: ").map(str::to_string),
                _ => None,
            })
            .collect();
        let image = disk.crash_image();
        for tear in image.tears() {
            self.check(restart_checks(self.faults, &image, tear, &seen));
        }
    }
}

/// Admit a request as the server does ([`crate::acp::admit`]), and run
/// what is left of it on a task of its own.
async fn admit<R: Rt>(name: &str, fut: BoxFuture<()>) -> Option<JoinHandle<R, ()>> {
    match crate::acp::admit(fut).await {
        Admitted::Answered(()) => None,
        Admitted::Pending(rest) => Some(rt::spawn::<R, ()>(name, rest)),
    }
}

/// `session/prompt` of client `me`'s op `j` on `id` with the script
/// `text` ([`script::script`]), admitted as the server admits it; what is
/// left of it runs on a task of its own.
async fn prompt<R: Rt>(
    env: &Arc<Env<R>>,
    me: u8,
    j: u8,
    id: String,
    text: String,
) -> Option<JoinHandle<R, ()>> {
    let e = env.clone();
    let fut = Box::pin(async move {
        let r = e.core.clone().prompt(id.clone(), text.clone()).await;
        if let Ok(stop) = &r {
            e.turn_on_disk(&id, &text, *stop);
        }
        e.answered(me, j, Answer::Prompt(r));
    });
    admit::<R>("session/prompt", fut).await
}

/// The wait of a client whose dispose it dropped, for the teardown to
/// finish with no further call from it: never ending, it breaks D8.
const FINISHES_ALONE: Wait = Wait::breaking(
    "a dropped dispose's teardown finishes with no further call",
    Rule::D8,
);

/// The wait of a client for the answer of a prompt it cancelled after the
/// server admitted it: never ending, the cancel was lost (A2; A8 for a
/// prompt waiting behind a cancelled one).
const CANCELLED_ANSWER: Wait = Wait::breaking(
    "the answer of a prompt cancelled after its admission",
    Rule::A2,
);

/// A request's answer the client still owes a join: the task that finishes
/// the request, the session if it is a prompt, and whether the client
/// cancelled that session after the prompt was admitted.
struct Owed<R: Rt> {
    task: JoinHandle<R, ()>,
    prompt_on: Option<String>,
    cancelled: bool,
}

impl<R: Rt> Owed<R> {
    fn request(task: JoinHandle<R, ()>) -> Self {
        Owed {
            task,
            prompt_on: None,
            cancelled: false,
        }
    }

    fn prompt(task: JoinHandle<R, ()>, on: &str) -> Self {
        Owed {
            task,
            prompt_on: Some(on.to_string()),
            cancelled: false,
        }
    }

    /// The client cancels `session`: every owed prompt on it must answer.
    fn cancel(owed: &mut [Owed<R>], session: &str) {
        for o in owed {
            o.cancelled |= o.prompt_on.as_deref() == Some(session);
        }
    }

    async fn join(self) {
        let wait = if self.cancelled {
            CANCELLED_ANSWER
        } else {
            Wait::new("join")
        };
        self.task.join_as(wait).await
    }
}

/// One client's program.
async fn client<R: Rt>(me: u8, ops: Vec<Op>, env: Arc<Env<R>>) {
    let mut mine: Vec<String> = Vec::new();
    let mut owed: Vec<Owed<R>> = Vec::new();
    let conn = env.conn.clone();
    let sent = |op: u8, req: Req| {
        conn.push(Obs::Sent {
            client: me,
            op,
            req,
        })
    };
    let admitted = |op: u8| conn.push(Obs::Admitted { client: me, op });
    for (j, op) in ops.into_iter().enumerate() {
        let j = j as u8;
        let resolve = |on: Target| match on {
            Target::Old => Some(OLD.to_string()),
            Target::Mine(k) => mine.get(k as usize).cloned(),
        };
        match op {
            Op::New { give_up: dropped } => {
                sent(j, Req::New);
                let new = env.core.clone().new_session(CWD.into());
                let got = if dropped {
                    give_up::<R, _>(new).await
                } else {
                    Some(new.await)
                };
                let answer = match got {
                    Some(r) => {
                        if let Ok(id) = &r {
                            mine.push(id.clone());
                            env.track(id);
                        }
                        Answer::New(r)
                    }
                    None => Answer::NewDropped,
                };
                env.answered(me, j, answer);
            }
            Op::Load => {
                sent(j, Req::Load);
                let e = env.clone();
                let fut = Box::pin(async move {
                    let r = e.clone().load().await;
                    if r.is_ok() {
                        e.track(OLD);
                    }
                    e.answered(me, j, Answer::Load(r));
                });
                owed.extend(admit::<R>("session/load", fut).await.map(Owed::request));
                admitted(j);
            }
            Op::Prompt { .. } | Op::Job { .. } => {
                let (on, steps, variant) = match op {
                    Op::Prompt { on, steps } => (on, steps, None),
                    Op::Job { on } => (on, 0, Some(JOB)),
                    _ => unreachable!("matched above"),
                };
                let Some(id) = resolve(on) else { continue };
                let (text, steps) = script::script(me, j, steps, variant);
                sent(
                    j,
                    Req::Prompt {
                        session: id.clone(),
                        steps,
                        hung: false,
                    },
                );
                owed.extend(
                    prompt(&env, me, j, id.clone(), text)
                        .await
                        .map(|t| Owed::prompt(t, &id)),
                );
                admitted(j);
            }
            Op::Interrupt { on } => {
                let Some(id) = resolve(on) else { continue };
                sent(
                    j,
                    Req::Prompt {
                        session: id.clone(),
                        steps: 1,
                        hung: true,
                    },
                );
                let (text, _) = script::script(me, j, 1, Some(HUNG));
                owed.extend(
                    prompt(&env, me, j, id.clone(), text)
                        .await
                        .map(|t| Owed::prompt(t, &id)),
                );
                admitted(j);
                sent(
                    j,
                    Req::Cancel {
                        session: id.clone(),
                    },
                );
                env.core.cancel(&id);
                Owed::cancel(&mut owed, &id);
                admitted(j);
            }
            Op::Listen => {
                for on_registry in [true, false] {
                    let listener: Listener =
                        Arc::new(|_: &str| std::panic::panic_any(LISTENER_PANIC));
                    if on_registry {
                        env.rig.registry.on_disposed(listener);
                    } else {
                        env.rig.store.on_disposed(listener);
                    }
                }
            }
            Op::DiskFault { sync } => {
                let Some(disk) = &env.disk else { continue };
                sent(j, Req::DiskFault { sync });
                disk.fail_next(if sync {
                    DiskFault::SyncEio
                } else {
                    DiskFault::WriteEnospc
                });
                admitted(j);
            }
            Op::Crash => env.crash(),
            Op::Cancel { on } => {
                let Some(id) = resolve(on) else { continue };
                sent(
                    j,
                    Req::Cancel {
                        session: id.clone(),
                    },
                );
                env.core.cancel(&id);
                Owed::cancel(&mut owed, &id);
                admitted(j);
            }
            Op::Close { on } => {
                let Some(id) = resolve(on) else { continue };
                sent(
                    j,
                    Req::Close {
                        session: id.clone(),
                    },
                );
                let e = env.clone();
                let fut = Box::pin(async move {
                    let r = e.core.clone().close(id).await;
                    e.answered(me, j, Answer::Close(r));
                });
                owed.extend(admit::<R>("session/close", fut).await.map(Owed::request));
                admitted(j);
            }
            Op::Await => {
                for o in owed.drain(..) {
                    o.join().await;
                }
            }
            Op::Disconnect => {
                sent(j, Req::Disconnect);
                env.core.disconnect().await;
                env.answered(me, j, Answer::Disconnected);
            }
            Op::Create => {
                if env.helper().is_none() {
                    if let Ok(h) = env.rig.provider.create(HELPER, &env.owner).await {
                        env.rig.track(&h.agent, h.serial());
                        *env.helper.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                    }
                }
            }
            Op::Dispose { give_up: dropped } => {
                let taken = env.helper.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(h) = taken {
                    if !dropped {
                        h.dispose().await;
                    } else if give_up::<R, _>(h.dispose()).await.is_none() {
                        // D8: a dropped dispose's teardown finishes with no
                        // further call (another client may still make one).
                        let serial = h.serial();
                        env.rig
                            .world
                            .until_all(FINISHES_ALONE, &[HELPER], Keys::Subjects, |e, id| {
                                matches!(e, LifecycleEvent::TeardownDone { id: i, serial: s } if i == id && *s == serial)
                            })
                            .await;
                    }
                }
            }
            Op::WhenIdle { on } => {
                let agent = resolve(on).and_then(|id| env.rig.registry.get(&id));
                if let Some(agent) = agent {
                    agent.when_idle().await;
                }
            }
            Op::UnloadOwner => env.owner.unload().await,
        }
    }
    for o in owed {
        o.join().await;
    }
}

/// The body of a generated workload (the scenario's closure holds it).
pub async fn run<R: Rt>(ctx: Ctx) -> Outcome {
    let workload = ctx
        .closure
        .clone()
        .and_then(|c| c.downcast::<Workload>().ok())
        .expect("a generated scenario carries its workload");
    let disk = match ctx.durable {
        Some(_) => None,
        None => Some(Arc::new(MemoryDurable::<R>::default())),
    };
    let durable = ctx
        .durable
        .clone()
        .or_else(|| disk.clone().map(|d| d as Arc<dyn Durable>));
    let mut builder = Rig::<R>::builder().faults(ctx.faults).bridge();
    // tool-bash over a simulated shell, only for a workload that runs
    // commands (the shell's drain adds a step to every teardown).
    let with_shell = workload.clients.iter().any(|c| {
        c.ops
            .iter()
            .any(|op| matches!(op, Op::Job { .. } | Op::Interrupt { .. }))
    });
    let shell = with_shell.then(script::shell::<R>);
    if let Some(shell) = &shell {
        builder = builder.shell(shell.clone()).tool_bash();
    }
    if let Some(d) = durable {
        builder = builder.durable(d);
    }
    let rig = Arc::new(builder.build());
    let seeded = rig
        .durable
        .write(OLD, &old_records())
        .and_then(|()| rig.durable.sync(OLD));
    if let Err(e) = seeded {
        let v = Violation::new(Rule::D10, format!("the session old cannot be stored: {e}"));
        return rig.finish("seed-failed", vec![(false, v)]);
    }
    let conn = Arc::new(Connection::default());
    // The server's responder and request handling, as `lifecycle acp`
    // composes them, on the rig's bridge, disk and shell.
    // The client reads one update at a time: a step, a notice or a
    // replayed item waits for room until the one before was read (A10).
    let outbound = Arc::new(Outbound::<R>::with_budget(READ_AHEAD_BYTES));
    let reader = {
        let outbound = outbound.clone();
        rt::spawn::<R, ()>("client reader", async move {
            while outbound.queued_or_closed().await {
                outbound.wrote_update();
            }
        })
    };
    let responder = Responder::new(rig.tool_bash.clone(), conn.clone(), outbound.clone());
    rig.provider.set_runner(responder.clone());
    let logs = Arc::new(Logs::inline(rig.durable.clone()));
    let core = ServerCore::new(
        rig.bridge.clone().expect("the rig has a bridge"),
        logs.clone(),
        responder,
        conn.clone(),
        outbound.clone(),
        shell.clone().map(|s| s as Arc<dyn ShellExecutor>),
    );
    let env = Arc::new(Env {
        core,
        owner: rig.owner("owner"),
        rig: rig.clone(),
        conn: conn.clone(),
        disk,
        faults: ctx.faults,
        checks: std::sync::Mutex::new(Vec::new()),
        helper: std::sync::Mutex::new(None),
    });
    let mut clients = workload.clients.iter().enumerate().map(|(i, c)| {
        let (env, ops) = (env.clone(), c.ops.clone());
        (i as u8, ops, env)
    });
    // The first client runs on the body's own task, the others on theirs
    // (`client 2`, ...: a replay's swimlane shows each client as a lane).
    let first = clients.next();
    let others: Vec<_> = clients
        .map(|(i, ops, env)| {
            rt::spawn::<R, ()>(&format!("client {}", i + 1), client::<R>(i, ops, env))
        })
        .collect();
    if let Some((i, ops, env)) = first {
        client::<R>(i, ops, env).await;
    }
    for h in others {
        h.join().await;
    }
    // A9, A10: every request answered, before the disconnect (whose
    // quiesce takes the sessions and leaves the logs to the process's
    // exit), the logs another process would find held.
    if let (0, Some(disk)) = (env.core.bridge().quiesce_runs(), &env.disk) {
        env.check(super::claims::log_claims(
            &env.core.bridge().sessions(),
            &disk.locked(),
            OLD,
            &conn.history(),
        ));
    }
    env.core.bridge().unload().await;
    env.owner.unload().await;
    // Nothing sends once everything was unloaded: the reader drains what
    // is queued and stops. A send still waiting for room would hold it.
    outbound.close();
    reader.join().await;
    // A1: nothing the bridge held outlives its unload.
    let left = rig.leftovers(|id| id == OLD || id.starts_with("sess-"));
    let a1 = Violation::new(
        Rule::A1,
        format!("after the bridge's unload these sessions remain: {left:?}"),
    );
    // R3: the owner's unload leaves nothing of what was created under it,
    // and no session of x is entered once it began (the store's
    // `session-entered` never follows the owner's `scope-unloading`).
    let x = rig.leftovers(|id| id == HELPER);
    let r3 = Violation::new(
        Rule::R3,
        format!("after the owner's unload, its agent {HELPER} remains: {x:?}"),
    );
    let entered_after = entered_after_unloading(&rig.world.events(), "owner", HELPER);
    let r3_entered = Violation::new(
        Rule::R3,
        "a session of the helper agent was entered after its owner began unloading",
    );
    // S6 (the rig's check of where notices ran) and S7: every job of a
    // disposed agent was settled and forgotten by its drain.
    let mut undrained = Vec::new();
    if let Some(shell) = &shell {
        for (job, owner) in shell.started() {
            rig.job_started(&job, owner.as_deref());
        }
        undrained = script::undrained(shell);
    }
    let s7 = Violation::new(
        Rule::S7,
        format!("after every agent was disposed, these jobs were not drained (the shell's account): {undrained:?}"),
    );
    let history = conn.history();
    if std::env::var_os("GEN_HISTORY").is_some() {
        for (i, o) in history.iter().enumerate() {
            eprintln!("#{} {o}", i + 1);
        }
    }
    let verdict = super::judge::judge(&workload, &history);
    let label = super::judge::label(&history);
    let mut own = vec![
        (left.is_empty(), a1),
        (x.is_empty(), r3),
        (!entered_after, r3_entered),
        (undrained.is_empty(), s7),
    ];
    own.extend(std::mem::take(
        &mut *env.checks.lock().unwrap_or_else(|p| p.into_inner()),
    ));
    own.push(match verdict {
        Ok(()) => (
            true,
            Violation::new(Rule::A8, "the history is a behaviour of the model"),
        ),
        Err(v) => (false, v),
    });
    rig.finish(label, own)
}
