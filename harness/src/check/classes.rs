//! An independent class counter for the lifecycle's scenarios: how many
//! equivalence classes of executions a scenario has, and how many
//! executions a search ran for them.
//!
//! A *census* runs a depth-first search over a scenario (naive, reduced or
//! optimal: any [`DfsConfig`]), traces every execution and reduces each
//! complete one to the key of its class ([`class_key`]). Run naively (no
//! reduction, no bound) up to a cap, it enumerates every schedule, so its
//! keys are the scenario's classes; run as `check` runs sim-dfs, its
//! complete executions per class say how far the search is from one
//! execution per class, and a class the naive census has that the reduced
//! one lacks is a schedule the reduction lost.
//!
//! The class is the equivalence the guide names, read at the granularity
//! of accesses rather than of polls, so that it does not depend on where a
//! schedule happened to cut a task's steps:
//! - **Events.** Each access a poll made, in order
//!   ([`TraceEntry::accesses`]), is an event of its task: a read or a write
//!   of one resource. Three kinds of access are not events:
//!   - a failed wait (a check that parked its task, or a lock acquire that
//!     blocked it): it changes nothing, and the task does it again (awaits
//!     as blocking events, not steps);
//!   - a wake (`WAKE` resources): it only marks a task ready;
//!   - an echo: a task's access to an object inside its own lock section
//!     on it, after the section's first access (the lock's release writes
//!     the object again when the section spanned a scheduling point, a
//!     mark for the search; no other task can touch the object in between,
//!     and the section's first access already says what it did).
//! - **Classes.** Two executions are equivalent when every task made the
//!   same events in the same order and every object saw its conflicting
//!   events (a write and any other event) in the same order: the
//!   Mazurkiewicz trace of the events. The key is that trace's canonical
//!   form: each task's event sequence, and each object's history as a
//!   sequence of writes with the reads between two writes as a sorted
//!   multiset (reads commute).
//!
//! The counter reads the trace's raw accesses itself and shares no code
//! with the search's reduction (sleep sets, race analysis, wakeup trees).
//!
//! Layer 2 (sim runs): imports the simulator runs ([`run_scheduled`]) and
//! the replay line format.

use super::checker::Checker;
use super::replay_line::ReplayLine;
use super::sim_run::run_scheduled;
use crate::faults::Faults;
use crate::scenarios::{self, Scenario};
use lifecycle_sim::{Dfs, DfsConfig, ExecKind, Sim, TaskId, TraceEntry, READ, WAKE};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The key of an execution's class: a digest of its canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClassKey([u8; 16]);

/// One event: a task's read or write of a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    task: usize,
    resource: u64,
    write: bool,
}

/// The events of a traced execution, in execution order (see the module
/// docs for what is left out).
fn events(trace: &[TraceEntry]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for entry in trace {
        for access in &entry.accesses {
            // Raw accesses carry no stutter flag: `READ` is the only one.
            let resource = access.resource & !READ;
            if access.failed_wait || resource & KIND == WAKE {
                continue;
            }
            if access.echo {
                continue;
            }
            let write = access.resource & READ == 0;
            out.push(Event {
                task: entry.task,
                resource,
                write,
            });
        }
    }
    out
}

/// The kind bits of a resource (`lifecycle_sim`'s top four).
const KIND: u64 = 0xF << 60;

/// The canonical form of a traced execution's class: each task's event
/// sequence and each object's history (see the module docs).
pub struct Canonical {
    /// Each task's events in order: the resource and whether it wrote.
    pub(crate) tasks: BTreeMap<usize, Vec<(u64, bool)>>,
    /// Each resource's history, a write closing the reads before it; the
    /// readers of a segment sorted.
    pub(crate) objects: BTreeMap<u64, Vec<Segment>>,
}

impl Canonical {
    /// The canonical form of `trace`.
    pub(crate) fn of(trace: &[TraceEntry]) -> Canonical {
        let mut tasks: BTreeMap<usize, Vec<(u64, bool)>> = BTreeMap::new();
        let mut objects: BTreeMap<u64, Vec<Segment>> = BTreeMap::new();
        for e in events(trace) {
            tasks.entry(e.task).or_default().push((e.resource, e.write));
            let history = objects.entry(e.resource).or_default();
            if e.write {
                history.push(Segment::Write(e.task));
            } else {
                match history.last_mut() {
                    Some(Segment::Reads(readers)) => readers.push(e.task),
                    _ => history.push(Segment::Reads(vec![e.task])),
                }
            }
        }
        for history in objects.values_mut() {
            for segment in history {
                if let Segment::Reads(readers) = segment {
                    readers.sort_unstable();
                }
            }
        }
        Canonical { tasks, objects }
    }

    /// Feeds task `task`'s event sequence to `hash`, framed by its length.
    pub(crate) fn hash_task(hash: &mut Sha256, task: usize, seq: &[(u64, bool)]) {
        hash.update(b"T");
        hash.update((task as u64).to_le_bytes());
        hash.update((seq.len() as u64).to_le_bytes());
        for (resource, write) in seq {
            hash.update(resource.to_le_bytes());
            hash.update([u8::from(*write)]);
        }
    }

    /// Feeds `resource`'s history to `hash`, framed by its length.
    pub(crate) fn hash_object(hash: &mut Sha256, resource: u64, history: &[Segment]) {
        hash.update(b"O");
        hash.update(resource.to_le_bytes());
        hash.update((history.len() as u64).to_le_bytes());
        for segment in history {
            match segment {
                Segment::Write(task) => {
                    hash.update(b"W");
                    hash.update((*task as u64).to_le_bytes());
                }
                Segment::Reads(readers) => {
                    hash.update(b"R");
                    hash.update((readers.len() as u64).to_le_bytes());
                    for task in readers {
                        hash.update((*task as u64).to_le_bytes());
                    }
                }
            }
        }
    }

    /// The class's key: every task's sequence, then every object's
    /// history, each record framed by its length so that no two encodings
    /// run into each other.
    pub(crate) fn key(&self) -> ClassKey {
        let mut hash = Sha256::new();
        for (task, seq) in &self.tasks {
            Canonical::hash_task(&mut hash, *task, seq);
        }
        for (resource, history) in &self.objects {
            Canonical::hash_object(&mut hash, *resource, history);
        }
        ClassKey::from_digest(&hash.finalize())
    }
}

impl ClassKey {
    /// The first 16 bytes of a SHA-256 digest.
    pub(crate) fn from_digest(digest: &[u8]) -> ClassKey {
        let mut key = [0; 16];
        key.copy_from_slice(&digest[..16]);
        ClassKey(key)
    }
}

/// The key of the class of a traced execution (see the module docs).
pub fn class_key(trace: &[TraceEntry]) -> ClassKey {
    Canonical::of(trace).key()
}

/// A piece of one object's history.
pub(crate) enum Segment {
    /// A write by a task.
    Write(usize),
    /// Reads by tasks, between two writes.
    Reads(Vec<usize>),
}

/// One class a census reached.
#[derive(Clone, Debug)]
pub struct Class {
    /// Complete executions of the search that reached it.
    pub runs: u64,
    /// The schedule of the first of them (its plan: a replay line's).
    pub plan: Vec<TaskId>,
}

/// What one search ran, class by class.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// Each class reached.
    pub classes: BTreeMap<ClassKey, Class>,
    /// Complete executions.
    pub complete: u64,
    /// Executions pruned as sleep-blocked (or foreign to the shard).
    pub blocked: u64,
    /// Whether the search ran to its end (not stopped at the cap).
    pub exhausted: bool,
}

impl Census {
    /// The classes this census reached and `other` did not, each with the
    /// plan that reached it here.
    pub fn missing_from<'a>(&'a self, other: &Census) -> Vec<(&'a ClassKey, &'a Class)> {
        self.classes
            .iter()
            .filter(|(k, _)| !other.classes.contains_key(k))
            .collect()
    }

    /// Schedules run: complete and pruned.
    pub fn schedules(&self) -> u64 {
        self.complete + self.blocked
    }
}

impl Class {
    /// The replay line of its first execution (`sim-dfs`'s form: untimed,
    /// seed 0), which `lifecycle replay` runs step by step.
    pub fn replay_line(&self, scenario: &Scenario, faults: Faults) -> ReplayLine {
        ReplayLine::sim(scenario, Checker::SimDfs, faults, 0, true, &self.plan)
    }
}

/// The naive search: no reduction, at most `bound` preemptions (`None`:
/// every schedule).
pub fn naive(bound: Option<u32>) -> DfsConfig {
    DfsConfig {
        reduction: false,
        dpor: false,
        preemption_bound: bound,
        ..DfsConfig::default()
    }
}

/// The preemption bound of the naive census of [`COUNTED`]: every
/// schedule with at most one preemption (a naive search without a bound
/// does not end on them).
pub const NAIVE_BOUND: u32 = 1;

/// The cap of a census of [`COUNTED`] (each ends far below it).
pub const CAP: u64 = 1_000_000;

/// The scenarios whose classes the tests count and the pins hold
/// (`classes.<scenario>.*`): small enough for a test, each with a
/// different shape (a server race, an owner's unload against a create,
/// a crash and restart, a dropped caller).
pub const COUNTED: [&Scenario; 4] = [
    &scenarios::acp::DISCONNECT_RACING_NEW,
    &scenarios::identity::CREATE_DURING_OWNER_UNLOAD,
    &scenarios::crash::CRASH_MID_TURN,
    &scenarios::dropped_create::DROPPED_CREATE,
];

/// Run the search `config` over `scenario` with `faults`, at most `cap`
/// schedules (complete and pruned), tracing every execution: the class of
/// each complete one. An execution that did not repeat itself under the
/// same schedule is an error.
pub fn census(
    scenario: &Scenario,
    faults: Faults,
    config: DfsConfig,
    cap: u64,
) -> Result<Census, String> {
    census_observed(scenario, faults, config, cap, &mut |_, _| {})
}

/// [`census`], calling `on_new_class` with the canonical form and the
/// simulation (its trace, its objects' names) of the first execution of
/// each class.
pub fn census_observed(
    scenario: &Scenario,
    faults: Faults,
    config: DfsConfig,
    cap: u64,
    on_new_class: &mut dyn FnMut(&Canonical, &Sim),
) -> Result<Census, String> {
    let mut dfs = Dfs::new(config);
    let mut census = Census::default();
    while let Some(scheduler) = dfs.next_scheduler() {
        if dfs.stats().executions >= cap {
            return Ok(census);
        }
        let run = run_scheduled(scenario, faults, scheduler, true, true);
        match dfs.end_execution() {
            ExecKind::Complete => {
                census.complete += 1;
                let trace = run.sim.trace();
                let canonical = Canonical::of(trace);
                let class = census.classes.entry(canonical.key()).or_insert_with(|| {
                    on_new_class(&canonical, &run.sim);
                    Class {
                        runs: 0,
                        plan: run.sim.choices().to_vec(),
                    }
                });
                class.runs += 1;
            }
            ExecKind::Blocked | ExecKind::Foreign => census.blocked += 1,
            ExecKind::Nondeterministic(m) => {
                return Err(format!(
                    "{}: the scenario did not repeat itself under the same schedule: {m}",
                    scenario.name
                ))
            }
        }
    }
    census.exhausted = dfs.exhausted();
    Ok(census)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifecycle_sim::TracedAccess;
    use std::rc::Rc;

    /// An object resource of the simulator (`OBJECT` kind, creator 0).
    fn obj(n: u64) -> u64 {
        (4 << 60) | n
    }

    fn access(resource: u64) -> TracedAccess {
        TracedAccess {
            resource,
            failed_wait: false,
            echo: false,
        }
    }

    /// A poll of `task` that made `accesses`.
    fn poll(task: usize, accesses: Vec<TracedAccess>) -> TraceEntry {
        TraceEntry {
            step: 0,
            now_ms: 0,
            task,
            name: Rc::from("t"),
            ready: 1,
            chosen: 0,
            ready_ids: vec![task],
            preempted: None,
            footprint: Vec::new(),
            accesses,
        }
    }

    fn w(task: usize, n: u64) -> TraceEntry {
        poll(task, vec![access(obj(n))])
    }

    fn r(task: usize, n: u64) -> TraceEntry {
        poll(task, vec![access(obj(n) | READ)])
    }

    #[test]
    fn independent_steps_commute_and_conflicting_ones_do_not() {
        // Writes of different objects, in either order: one class.
        assert_eq!(
            class_key(&[w(1, 1), w(2, 2)]),
            class_key(&[w(2, 2), w(1, 1)])
        );
        // Reads of one object commute, also between two writes.
        assert_eq!(
            class_key(&[w(0, 1), r(1, 1), r(2, 1), w(0, 1)]),
            class_key(&[w(0, 1), r(2, 1), r(1, 1), w(0, 1)])
        );
        // A read and a write of one object do not; nor do two writes.
        assert_ne!(
            class_key(&[r(1, 1), w(2, 1)]),
            class_key(&[w(2, 1), r(1, 1)])
        );
        assert_ne!(
            class_key(&[w(1, 1), w(2, 1)]),
            class_key(&[w(2, 1), w(1, 1)])
        );
        // One task's own order counts.
        assert_ne!(
            class_key(&[w(1, 1), w(1, 2)]),
            class_key(&[w(1, 2), w(1, 1)])
        );
    }

    #[test]
    fn failed_waits_wakes_echoes_and_cuts_are_not_events() {
        let plain = class_key(&[w(1, 1), w(2, 1), w(2, 2)]);
        // A failed wait of task 2 on object 1 before task 1's write, its
        // wake by that write, and the wake its next poll consumes.
        let failed = TracedAccess {
            failed_wait: true,
            ..access(obj(1) | READ)
        };
        let wake2 = (5 << 60) | 2;
        let with_wait = [
            poll(2, vec![failed]),
            poll(1, vec![access(obj(1)), access(wake2 | READ)]),
            poll(2, vec![access(wake2), access(obj(1)), access(obj(2))]),
        ];
        assert_eq!(class_key(&with_wait), plain);
        // The same task's accesses cut into one poll or two.
        let one_poll = [w(1, 1), poll(2, vec![access(obj(1)), access(obj(2))])];
        assert_eq!(class_key(&one_poll), plain);
        // A section's release writing its object again (an echo).
        let echo = TracedAccess {
            echo: true,
            ..access(obj(2))
        };
        let echoed = [
            w(1, 1),
            poll(2, vec![access(obj(1)), access(obj(2))]),
            poll(2, vec![echo]),
        ];
        assert_eq!(class_key(&echoed), plain);
        // A failed wait is not the same as a read that is kept.
        let read = [r(2, 1), w(1, 1), w(2, 1), w(2, 2)];
        assert_ne!(class_key(&read), plain);
    }
}
