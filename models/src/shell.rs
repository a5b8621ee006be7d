//! The shell ownership model: background jobs whose owner token lives on the
//! job in the executor, tool-bash (`bash`, `bash_output`, `bash_kill`) that
//! holds no ownership state and can be unloaded and reloaded at any moment,
//! completion notices, and the owner drain of a disposed agent (SPEC S1–S7).
//!
//! # States
//! - `jobs`: each with its owner token (`None`, or a token: `"a"`, `"b"`,
//!   the empty string `""`, or `"ab"`), `running` → finished (done or killed), the
//!   tool-bash generation that started it, and its notice
//!   (`Pending` → `Delivered(to)` / `Dropped` / `Lost`), and `forgotten`
//!   once a drain dropped its record (unknown to every call from then on).
//! - tool-bash: `loaded` or not, its generation (+1 per reload), and under
//!   fault M2 its own owner map (empty again after a reload).
//! - `live`: which agents are live (agent `a` can be disposed); `""` and
//!   `"a"` are both prefixes of the live id `"ab"`, which only fault M21
//!   confuses with equality (S6);
//!   `drained_upto`: the jobs that existed when `a` was disposed.
//!
//! # Transitions
//! | action | who |
//! | --- | --- |
//! | `Bash(caller)` | an agent (or a caller with none): starts a background job |
//! | `Output(caller, job)`, `Kill(caller, job)` | any caller; fenced by owner |
//! | `Finish(job)` | the executor: the job ends; tool-bash routes the notice |
//! | `Unload`, `Load` | the plugin host |
//! | `DisposeA` | agent `a`'s owner: its teardown drains `a`'s jobs (kills the live ones, their notices are dropped, then forgets them, S7); fault M20 skips the drain |

use crate::checker::{Identified, Model, Named, Prop, Property};
use crate::fault::Fault;
use crate::PropertyId;
use lifecycle_spec::Rule;

/// The property that states S2 (the rule-clause table names it).
pub const S2_OTHER: PropertyId = PropertyId::new(
    Rule::S2,
    "S2 a caller other than the owner is rejected; nothing is read or killed",
);

/// The property that states S6 (the rule-clause table names it).
pub const S6_ONLY: PropertyId = PropertyId::new(
    Rule::S6,
    "S6 a notice reaches only the live agent whose id equals the owner",
);

/// The property that states S1 (the rule-clause table names it).
pub const S1_OWNED: PropertyId = PropertyId::new(
    Rule::S1,
    "S1 a job started for an agent is owned by that agent",
);

/// The property that states S3 (the rule-clause table names it).
pub const S3_EMPTY_TOKEN: PropertyId = PropertyId::new(
    Rule::S3,
    "S3 an empty-string token is a real owner; an unowned job is open",
);

/// The property that states S4 (the rule-clause table names it).
pub const S4_OWNER_KEEPS_ACCESS: PropertyId =
    PropertyId::new(Rule::S4, "S4 the owner keeps access after the job finished");

/// The property that states S5 (the rule-clause table names it).
pub const S5_RELOAD_KEEPS_FENCES: PropertyId = PropertyId::new(
    Rule::S5,
    "S5 reloading tool-bash changes no fence of an existing job",
);

/// The property that states S6 (the rule-clause table names it).
pub const S6_EVERY_JOB_FINISHES: PropertyId =
    PropertyId::new(Rule::S6, "S6 every job finishes and its notice is settled");

/// The property that states S7 (the rule-clause table names it).
pub const S7_KILLED_AND_FORGOTTEN: PropertyId = PropertyId::new(
    Rule::S7,
    "S7 a disposed agent's jobs are killed and forgotten",
);

/// Owner tokens: `"a"`, `"b"`, `""`, `"ab"` (`""` and `"a"` are prefixes
/// of `"ab"`).
pub const TOKENS: [&str; 4] = ["a", "b", "", "ab"];

/// A completion notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Notice {
    /// The job has not finished.
    Pending,
    /// Delivered to the live agent with this token.
    Delivered(u8),
    /// No live agent with the owner's id: dropped.
    Dropped,
    /// Finished while tool-bash was unloaded (allowed, S6).
    Lost,
}

/// A background job.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Job {
    /// Owner token index into [`TOKENS`], `None` for an unowned job.
    pub owner: Option<u8>,
    /// Still running.
    pub running: bool,
    /// Killed (exit 137).
    pub killed: bool,
    /// The tool-bash generation that started it.
    pub generation: u8,
    /// Its completion notice.
    pub notice: Notice,
    /// A drain dropped its record (S7).
    pub forgotten: bool,
}

/// The state of the shell model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShellState {
    /// Jobs, by number.
    pub jobs: Vec<Job>,
    /// tool-bash is loaded.
    pub loaded: bool,
    /// tool-bash generation.
    pub generation: u8,
    /// Fault M2: tool-bash's own `(job, owner)` map.
    pub local: Vec<(u8, u8)>,
    /// Live agents, by token index.
    pub live: [bool; 4],
    /// Reloads done.
    pub reloads: u8,
    /// How many jobs existed when agent `a` was disposed (S7 drains them).
    pub drained_upto: Option<u8>,
    /// Rules a transition broke (ghost).
    pub broken: Vec<Rule>,
}

/// One transition of the shell model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShellAction {
    /// `bash` in the background, by caller (token index or none).
    Bash(Option<u8>),
    /// `bash_output(job)` by caller.
    Output(Option<u8>, u8),
    /// `bash_kill(job)` by caller.
    Kill(Option<u8>, u8),
    /// The job finishes on its own.
    Finish(u8),
    /// tool-bash is unloaded.
    Unload,
    /// tool-bash is loaded again.
    Load,
    /// Agent `a` is disposed.
    DisposeA,
}

/// What a fenced call answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fence {
    /// Allowed.
    Ok,
    /// `unknown bash task "<job>"`.
    Unknown,
    /// `task <job> belongs to another session`.
    BelongsToAnother,
}

/// The shell model.
#[derive(Clone, Debug)]
pub struct ShellModel {
    /// The fault switched on (M2, M20 and M21 act here).
    pub fault: Option<Fault>,
    /// Jobs the callers may start.
    pub jobs_max: u8,
    /// Unload/load cycles.
    pub reloads_max: u8,
}

impl ShellModel {
    /// Two jobs, one reload.
    pub fn new(fault: Option<Fault>) -> Self {
        ShellModel {
            fault,
            jobs_max: 2,
            reloads_max: 1,
        }
    }

    /// The initial state: tool-bash loaded, every agent live, no job.
    pub fn init(&self) -> ShellState {
        ShellState {
            jobs: vec![],
            loaded: true,
            generation: 1,
            local: vec![],
            live: [true; 4],
            reloads: 0,
            drained_upto: None,
            broken: vec![],
        }
    }

    /// What the SPEC says a fenced call by `caller` on `job` answers.
    pub fn spec_fence(s: &ShellState, caller: Option<u8>, job: u8) -> Fence {
        match s.jobs.get(job as usize).filter(|j| !j.forgotten) {
            None => Fence::Unknown,
            Some(j) => match j.owner {
                None => Fence::Ok,
                Some(o) if caller == Some(o) => Fence::Ok,
                Some(_) => Fence::BelongsToAnother,
            },
        }
    }

    /// What tool-bash answers (under M2 it reads its own map).
    pub fn fence(&self, s: &ShellState, caller: Option<u8>, job: u8) -> Fence {
        if self.fault != Some(Fault::M2) {
            return Self::spec_fence(s, caller, job);
        }
        if s.jobs.get(job as usize).is_none_or(|j| j.forgotten) {
            return Fence::Unknown;
        }
        match s.local.iter().find(|(j, _)| *j == job).map(|(_, o)| *o) {
            None => Fence::Ok,
            Some(o) if caller == Some(o) => Fence::Ok,
            Some(_) => Fence::BelongsToAnother,
        }
    }

    fn judge(&self, n: &mut ShellState, caller: Option<u8>, job: u8) -> Fence {
        let got = self.fence(n, caller, job);
        let want = Self::spec_fence(n, caller, job);
        if got != want {
            let j = &n.jobs[job as usize];
            let rule = if j.forgotten {
                Rule::S7
            } else if j.generation != n.generation {
                Rule::S5
            } else if !j.running && caller.is_some() && caller == j.owner {
                Rule::S4
            } else if j.owner.is_none() || j.owner == Some(2) {
                Rule::S3
            } else {
                Rule::S2
            };
            broke(n, rule);
        }
        got
    }

    fn step(&self, s: &ShellState, a: &ShellAction) -> Option<ShellState> {
        let mut n = s.clone();
        match *a {
            ShellAction::Bash(caller) => {
                if !s.loaded || s.jobs.len() >= self.jobs_max as usize {
                    return None;
                }
                let job = s.jobs.len() as u8;
                n.jobs.push(Job {
                    owner: caller,
                    running: true,
                    killed: false,
                    generation: s.generation,
                    notice: Notice::Pending,
                    forgotten: false,
                });
                if let (Some(c), Some(Fault::M2)) = (caller, self.fault) {
                    n.local.push((job, c));
                }
            }
            ShellAction::Output(caller, job) => {
                if !s.loaded || job as usize >= s.jobs.len() {
                    return None;
                }
                self.judge(&mut n, caller, job);
            }
            ShellAction::Kill(caller, job) => {
                if !s.loaded || job as usize >= s.jobs.len() {
                    return None;
                }
                if self.judge(&mut n, caller, job) == Fence::Ok && n.jobs[job as usize].running {
                    n.jobs[job as usize].killed = true;
                    self.finish(&mut n, job);
                }
            }
            ShellAction::Finish(job) => {
                if !s.jobs.get(job as usize)?.running {
                    return None;
                }
                self.finish(&mut n, job);
            }
            ShellAction::Unload => {
                if !s.loaded || s.reloads >= self.reloads_max {
                    return None;
                }
                n.loaded = false;
            }
            ShellAction::Load => {
                if s.loaded {
                    return None;
                }
                n.loaded = true;
                n.generation += 1;
                n.reloads += 1;
                n.local.clear();
            }
            ShellAction::DisposeA => {
                if !s.live[0] {
                    return None;
                }
                n.live[0] = false;
                n.drained_upto = Some(s.jobs.len() as u8);
                if self.fault != Some(Fault::M20) {
                    // The drain: after the loop exited (a is no longer a
                    // live receiver), before the id is freed.
                    for job in 0..s.jobs.len() as u8 {
                        if n.jobs[job as usize].owner == Some(0) {
                            if n.jobs[job as usize].running {
                                n.jobs[job as usize].killed = true;
                                self.finish(&mut n, job);
                            }
                            n.jobs[job as usize].forgotten = true;
                        }
                    }
                }
            }
        }
        Some(n)
    }

    fn finish(&self, n: &mut ShellState, job: u8) {
        let owner = n.jobs[job as usize].owner;
        // The agent that gets the notice: the live one whose id equals the
        // owner; under M21 the first live one whose id starts with it.
        let to = owner.and_then(|o| match self.fault {
            Some(Fault::M21) => (0..TOKENS.len() as u8).find(|&t| {
                n.live[t as usize] && TOKENS[t as usize].starts_with(TOKENS[o as usize])
            }),
            _ => n.live[o as usize].then_some(o),
        });
        let j = &mut n.jobs[job as usize];
        j.running = false;
        j.notice = if !n.loaded {
            Notice::Lost
        } else {
            to.map_or(Notice::Dropped, Notice::Delivered)
        };
    }
}

fn broke(s: &mut ShellState, rule: Rule) {
    if !s.broken.contains(&rule) {
        s.broken.push(rule);
    }
}

impl Named for ShellModel {
    fn name(&self) -> String {
        match self.fault {
            None => "shell".into(),
            Some(f) => format!("shell+{f}"),
        }
    }
}

impl Model for ShellModel {
    type State = ShellState;
    type Action = ShellAction;

    fn init_states(&self) -> Vec<ShellState> {
        vec![self.init()]
    }

    fn actions(&self, s: &ShellState, out: &mut Vec<ShellAction>) {
        let callers = [None, Some(0), Some(1), Some(2), Some(3)];
        let mut all = vec![];
        all.extend(callers.iter().map(|&c| ShellAction::Bash(c)));
        for job in 0..s.jobs.len() as u8 {
            all.extend(callers.iter().map(|&c| ShellAction::Output(c, job)));
            all.extend(callers.iter().map(|&c| ShellAction::Kill(c, job)));
            all.push(ShellAction::Finish(job));
        }
        all.extend([
            ShellAction::Unload,
            ShellAction::Load,
            ShellAction::DisposeA,
        ]);
        out.extend(all.into_iter().filter(|a| self.step(s, a).is_some()));
    }

    fn next_state(&self, s: &ShellState, a: ShellAction) -> Option<ShellState> {
        self.step(s, &a)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::checker::properties_of(self)
    }
}

impl Identified for ShellModel {
    fn identified(&self) -> Vec<Prop<Self>> {
        vec![
            Prop::<Self>::always(S1_OWNED, |_, s| {
                // The executor stamps the caller's token; the model's job keeps
                // it, and no transition rewrites it.
                s.jobs
                    .iter()
                    .all(|j| j.owner.is_none_or(|o| (o as usize) < TOKENS.len()))
            }),
            Prop::<Self>::always(S2_OTHER, |_, s| !s.broken.contains(&Rule::S2)),
            Prop::<Self>::always(S3_EMPTY_TOKEN, |_, s| !s.broken.contains(&Rule::S3)),
            Prop::<Self>::always(S4_OWNER_KEEPS_ACCESS, |_, s| {
                !s.broken.contains(&Rule::S4)
            }),
            Prop::<Self>::always(S5_RELOAD_KEEPS_FENCES, |_, s| {
                !s.broken.contains(&Rule::S5)
            }),
            Prop::<Self>::always(S6_ONLY, |_, s| {
                s.jobs.iter().all(|j| match j.notice {
                    Notice::Delivered(to) => j.owner == Some(to),
                    _ => true,
                })
            }),
            Prop::<Self>::always(S7_KILLED_AND_FORGOTTEN, |_, s| {
                s.drained_upto.is_none_or(|upto| {
                    s.jobs[..upto as usize]
                        .iter()
                        .filter(|j| j.owner == Some(0))
                        .all(|j| j.forgotten && !j.running)
                })
            }),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::S7, "S7 window: the drain kills a running job of the disposed agent"),
                |_, s| {
                    s.jobs
                        .iter()
                        .any(|j| j.forgotten && j.killed && j.notice == Notice::Dropped)
                },
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::S5, "S5 window: a job started before a reload is fenced after it"),
                |_, s| {
                    s.jobs
                        .iter()
                        .any(|j| j.generation < s.generation && j.owner.is_some())
                },
            ),
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::S6, "S6 window: a completion lands while tool-bash is unloaded"),
                |_, s| s.jobs.iter().any(|j| j.notice == Notice::Lost),
            ),
            // The owner `a` is a prefix of the live id `ab` (M21's trap).
            Prop::<Self>::sometimes(
                PropertyId::new(Rule::S6, "S6 window: a notice for a disposed owner is dropped while a live id extends it"),
                |_, s| {
                    s.live[3]
                        && s.jobs
                            .iter()
                            .any(|j| j.notice == Notice::Dropped && j.owner == Some(0))
                },
            ),
            crate::at_every_end!(Self, S6_EVERY_JOB_FINISHES, |_, s| {
                s.jobs
                    .iter()
                    .all(|j| !j.running && j.notice != Notice::Pending)
            },),
        ]
    }
}
