//! One execution of a generated workload, on any backend: a rig with the
//! ACP bridge, a session `old` on its disk, a scripted step runner, and
//! one task per client. Every client records what it sends and what it
//! receives into one [`Connection`]: the history the judge reads
//! (`super::judge`), written on the receiving side (answers as the client
//! gets them, updates as the server hands them to the connection).
//!
//! Requests are admitted by the server's own admission (`acp::admit`,
//! which `acp::server` serves every load and prompt with): each request's
//! future is polled once, in the order the client sends them, before the
//! next is sent; what is left of it runs on a task of its own. So a `session/cancel` that follows a prompt finds
//! it claimed or waiting, as on the wire.

use super::workload::{Op, Target, Workload};
use crate::acp::logs;
use crate::acp::{AcpError, Admitted, Bridge, StopReason};
use crate::agent::core::PromptSpec;
use crate::agent::{StepRunner, StepSignal};
use crate::journal::EndReason;
use crate::oracle::Violation;
use crate::provider::AgentHandle;
use crate::rt::{self, BoxFuture, JoinHandle, Rt};
use crate::rules::Rule;
use crate::scenarios::rig::{give_up, Rig};
use crate::scenarios::{Ctx, Outcome};
use crate::scope::Scope;
use crate::session_log::{Entry, Origin};
use crate::store::durable::DurableRecord;
use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
use std::sync::{Arc, Mutex};

/// The session on disk at the start of every execution.
pub const OLD: &str = "old";

/// The serial of `old`'s stored turn (apart from every serial the store
/// hands out in an execution).
const OLD_SERIAL: u64 = 1_000_000;

/// The records of `old` on disk: one finished turn of one step.
fn old_records() -> Vec<DurableRecord> {
    let entry = |entry| DurableRecord {
        serial: OLD_SERIAL,
        entry,
    };
    vec![
        entry(Entry::TurnStart { prompt: 1 }),
        entry(Entry::UserMessage {
            prompt: 1,
            text: "hello".into(),
            origin: Origin::User,
        }),
        entry(Entry::Step {
            prompt: 1,
            step: 0,
            output: Some("hello/0".into()),
            tool: None,
        }),
        entry(Entry::TurnEnd {
            prompt: 1,
            reason: EndReason::Completed,
        }),
    ]
}

/// What a load of `old` must replay (A9), read off the stored records
/// by the spec, independently of the server's projection
/// (`acp::logs`): each user message as `user: <text>`, each step's output
/// as `agent: <text>`, in order.
pub fn old_history() -> Vec<String> {
    old_records()
        .iter()
        .filter_map(|r| match &r.entry {
            Entry::UserMessage { text, origin, .. } if origin.is_user() => {
                Some(format!("user: {text}"))
            }
            Entry::Step {
                output: Some(out), ..
            } => Some(format!("agent: {out}")),
            _ => None,
        })
        .collect()
}

/// A replayed update as the client reads it: `user: <text>` or `agent:
/// <text>` for a message chunk, its debug form for anything else (which
/// the stored history never holds, so the judge refuses it).
fn update_text(u: &SessionUpdate) -> String {
    let text = |c: &ContentChunk| match &c.content {
        ContentBlock::Text(t) => t.text.clone(),
        other => format!("{other:?}"),
    };
    match u {
        SessionUpdate::UserMessageChunk(c) => format!("user: {}", text(c)),
        SessionUpdate::AgentMessageChunk(c) => format!("agent: {}", text(c)),
        other => format!("{other:?}"),
    }
}

/// A request as the client sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Req {
    /// `session/new`.
    New,
    /// `session/load old`.
    Load,
    /// `session/prompt` on `session`, of `steps` steps.
    Prompt {
        /// The session id.
        session: String,
        /// Steps of the turn.
        steps: u8,
    },
    /// `session/cancel` on `session`.
    Cancel {
        /// The session id.
        session: String,
    },
    /// The client disconnects.
    Disconnect,
}

/// An answer as the client received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `session/new`'s.
    New(Result<String, AcpError>),
    /// `session/new` dropped by its caller before it answered.
    NewDropped,
    /// `session/load`'s.
    Load(Result<(), AcpError>),
    /// `session/prompt`'s.
    Prompt(Result<StopReason, AcpError>),
    /// The disconnect's quiesce finished.
    Disconnected,
}

/// A `session/update` as the connection carried it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    /// A load's replay of a stored record: `user: <text>` or `agent:
    /// <text>`.
    History(String),
    /// A live step's output: `<prompt text>/<step>`.
    Step(String),
}

/// One observation of the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Obs {
    /// Client `client` sent its operation `op`.
    Sent {
        /// The client (from 0).
        client: u8,
        /// The operation's index in its program.
        op: u8,
        /// The request.
        req: Req,
    },
    /// Client `client` received the answer to its operation `op`.
    Answered {
        /// The client.
        client: u8,
        /// The operation's index.
        op: u8,
        /// The answer.
        answer: Answer,
    },
    /// Client `client`'s operation `op` took effect: the request's first
    /// poll (its admission) or the cancel's call returned.
    Admitted {
        /// The client.
        client: u8,
        /// The operation's index.
        op: u8,
    },
    /// An update of `session` reached the connection.
    Update {
        /// The session id.
        session: String,
        /// What it carried.
        update: Update,
    },
}

impl std::fmt::Display for Obs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Obs::Sent { client, op, req } => {
                write!(f, "client {} sends op {}: {req:?}", client + 1, op + 1)
            }
            Obs::Answered { client, op, answer } => {
                write!(
                    f,
                    "client {} gets op {}'s answer: {answer:?}",
                    client + 1,
                    op + 1
                )
            }
            Obs::Admitted { client, op } => {
                write!(f, "client {}'s op {} took effect", client + 1, op + 1)
            }
            Obs::Update { session, update } => write!(f, "update of {session}: {update:?}"),
        }
    }
}

/// The connection's history, in the order things happened.
#[derive(Default)]
pub struct Connection {
    log: Mutex<Vec<Obs>>,
}

impl Connection {
    /// Record `obs`.
    pub fn push(&self, obs: Obs) {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push(obs);
    }

    /// The history so far.
    pub fn history(&self) -> Vec<Obs> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The scripted agent: step `k` of a prompt whose text is `T` sleeps (an
/// arbitrary delay when time is free) until its turn's signal fires, and
/// answers `T/k`; its delivery (once durable, D9) is an update.
struct Scripted<R: Rt> {
    conn: Arc<Connection>,
    _rt: std::marker::PhantomData<fn() -> R>,
}

impl<R: Rt> StepRunner for Scripted<R> {
    fn run_step(
        &self,
        _agent_id: &str,
        prompt: &PromptSpec,
        step: u32,
        signal: StepSignal,
    ) -> BoxFuture<Option<String>> {
        let text = format!("{}/{step}", prompt.text);
        Box::pin(async move {
            // A step that waits, and stops waiting when its turn's signal
            // fires (C10).
            rt::sleep_or::<R>(1, signal.fired()).await;
            Some(text)
        })
    }

    fn deliver(&self, agent_id: &str, _prompt: &PromptSpec, _step: u32, output: &str) {
        self.conn.push(Obs::Update {
            session: agent_id.to_string(),
            update: Update::Step(output.to_string()),
        });
    }
}

/// What every client shares.
struct Env<R: Rt> {
    rig: Arc<Rig<R>>,
    bridge: Arc<Bridge<R>>,
    owner: Scope<R>,
    conn: Arc<Connection>,
}

impl<R: Rt> Env<R> {
    /// Have the rig's oracles check session `id`'s agent (C1–C9, D3, D6).
    fn track(&self, id: &str) {
        let serial = self.rig.registry.entries().into_iter().find(|e| e.0 == id);
        if let (Some(agent), Some((_, serial))) = (self.rig.registry.get(id), serial) {
            self.rig.track(&agent, serial);
        }
    }

    /// `session/load old`, replaying the log as it stood when the load
    /// began (A9) with the server's own snapshot reader (`acp::logs`).
    async fn load(self: Arc<Self>) -> Result<(), AcpError> {
        let storage = |e: std::io::Error| AcpError::Storage(e.to_string());
        let durable = self.rig.durable.clone();
        let snapshot = logs::count(&*durable, OLD).map_err(storage)?;
        let conn = self.conn.clone();
        let replay = || async move {
            let mut updates = Vec::new();
            logs::replay_snapshot(&*durable, OLD, snapshot, &mut |u| {
                updates.push(u);
                true
            })
            .map_err(storage)?;
            // One update per scheduling point, as the server's replay
            // waits for room before each.
            for u in updates {
                R::yield_now().await;
                conn.push(Obs::Update {
                    session: OLD.to_string(),
                    update: Update::History(update_text(&u)),
                });
            }
            Ok(())
        };
        self.bridge.load_session_then(OLD, replay).await.map(|_| ())
    }

    /// Record the answer client `client` received to its op `op`.
    fn answered(&self, client: u8, op: u8, answer: Answer) {
        self.conn.push(Obs::Answered { client, op, answer });
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

/// One client's program.
async fn client<R: Rt>(me: u8, ops: Vec<Op>, env: Arc<Env<R>>) {
    let mut mine: Vec<String> = Vec::new();
    let mut owed: Vec<JoinHandle<R, ()>> = Vec::new();
    let mut created: Option<AgentHandle<R>> = None;
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
                let bridge = env.bridge.clone();
                let got = if dropped {
                    give_up::<R, _>(bridge.new_session()).await
                } else {
                    Some(bridge.new_session().await)
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
                owed.extend(admit::<R>("session/load", fut).await);
                admitted(j);
            }
            Op::Prompt { on, steps } => {
                let Some(id) = resolve(on) else { continue };
                sent(
                    j,
                    Req::Prompt {
                        session: id.clone(),
                        steps,
                    },
                );
                let spec = PromptSpec {
                    text: format!("c{me}o{j}"),
                    steps: u32::from(steps),
                    step_ms: 0,
                    origin: Origin::User,
                };
                let e = env.clone();
                let fut = Box::pin(async move {
                    let r = e.bridge.prompt(&id, spec).await;
                    e.answered(me, j, Answer::Prompt(r));
                });
                owed.extend(admit::<R>("session/prompt", fut).await);
                admitted(j);
            }
            Op::Cancel { on } => {
                let Some(id) = resolve(on) else { continue };
                sent(
                    j,
                    Req::Cancel {
                        session: id.clone(),
                    },
                );
                env.bridge.cancel(&id);
                admitted(j);
            }
            Op::Await => {
                for h in owed.drain(..) {
                    h.join().await;
                }
            }
            Op::Disconnect => {
                sent(j, Req::Disconnect);
                env.bridge.disconnect().await;
                env.answered(me, j, Answer::Disconnected);
            }
            Op::Create => {
                if created.is_none() {
                    if let Ok(h) = env.rig.provider.create("x", &env.owner).await {
                        env.rig.track(&h.agent, h.serial());
                        created = Some(h);
                    }
                }
            }
            Op::Dispose { give_up: dropped } => {
                if let Some(h) = created.take() {
                    if dropped {
                        give_up::<R, _>(h.dispose()).await;
                    } else {
                        h.dispose().await;
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
    for h in owed {
        h.join().await;
    }
}

/// The body of a generated workload (the scenario's closure holds it).
pub async fn run<R: Rt>(ctx: Ctx) -> Outcome {
    let workload = ctx
        .closure
        .clone()
        .and_then(|c| c.downcast::<Workload>().ok())
        .expect("a generated scenario carries its workload");
    let mut builder = Rig::<R>::builder().faults(ctx.faults).bridge();
    if let Some(d) = ctx.durable {
        builder = builder.durable(d);
    }
    let rig = Arc::new(builder.build());
    let seeded = rig
        .durable
        .write(OLD, &old_records())
        .and_then(|()| rig.durable.sync(OLD));
    if let Err(e) = seeded {
        let v = Violation::new(Rule::D10, format!("the session old cannot be stored: {e}"));
        return rig.finish("seed-failed".into(), vec![(false, v)]);
    }
    let conn = Arc::new(Connection::default());
    rig.provider.set_runner(Arc::new(Scripted::<R> {
        conn: conn.clone(),
        _rt: std::marker::PhantomData,
    }));
    let env = Arc::new(Env {
        bridge: rig.bridge.clone().expect("the rig has a bridge"),
        owner: rig.owner("owner"),
        rig: rig.clone(),
        conn: conn.clone(),
    });
    let mut clients = workload.clients.iter().enumerate().map(|(i, c)| {
        let (env, ops) = (env.clone(), c.ops.clone());
        (i as u8, ops, env)
    });
    // The first client runs on the body's own task, the others on theirs.
    let first = clients.next();
    let others: Vec<_> = clients
        .map(|(i, ops, env)| rt::spawn::<R, ()>("client", client::<R>(i, ops, env)))
        .collect();
    if let Some((i, ops, env)) = first {
        client::<R>(i, ops, env).await;
    }
    for h in others {
        h.join().await;
    }
    env.bridge.unload().await;
    env.owner.unload().await;
    // A1: nothing the bridge held outlives its unload.
    let left = rig.leftovers(|id| id == OLD || id.starts_with("sess-"));
    let a1 = Violation::new(
        Rule::A1,
        format!("after the bridge's unload these sessions remain: {left:?}"),
    );
    let history = conn.history();
    if std::env::var_os("GEN_HISTORY").is_some() {
        for (i, o) in history.iter().enumerate() {
            eprintln!("#{} {o}", i + 1);
        }
    }
    let verdict = super::judge::judge(&workload, &history);
    let label = super::judge::label(&history);
    let mut own = vec![(left.is_empty(), a1)];
    own.push(match verdict {
        Ok(()) => (
            true,
            Violation::new(Rule::A8, "the history is a behaviour of the model"),
        ),
        Err(v) => (false, v),
    });
    rig.finish(label, own)
}
