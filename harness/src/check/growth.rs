//! Where a scenario's classes multiply: the parts of a class's canonical
//! form (one task's event sequence, one object's history; see
//! [`classes`](super::classes)), each with the number of different forms
//! it takes across the classes a census reached.
//!
//! A class is fixed by its parts, so the classes are at most the product
//! of the parts' counts, and a part that takes one form in every class
//! adds nothing. A part missing from some classes (an object only some
//! executions create or touch) counts its absence as one more form. The
//! parts with the most forms are where the state space grows: an object
//! many tasks write in every order, or a task whose events depend on what
//! it read. `lifecycle classes --growth` ranks them; it names an object by
//! the task that created it and its place among that task's objects, as
//! the simulator numbers them (`lifecycle_sim::new_object`), and by the
//! type its creator gave it (`lifecycle_sim::name_object`: the simulator's
//! locks name their objects by the type they guard).
//!
//! Layer 2 (sim runs): reads only traces and the class counter's
//! canonical form.

use super::classes::{Canonical, ClassKey};
use lifecycle_sim::TraceEntry;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// One part of a class's canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// A task's event sequence, by task id.
    Task(usize),
    /// An object's history, by resource id.
    Object(u64),
}

/// What the classes of a census did with one part.
#[derive(Clone, Debug, Default)]
pub struct PartStats {
    /// The part's different forms (digests), across the classes.
    pub forms: BTreeSet<ClassKey>,
    /// The tasks that touched it (an object), in any class.
    pub tasks: BTreeSet<usize>,
    /// The most events it held in one class.
    pub longest: usize,
    /// The classes that hold it.
    pub present: usize,
}

/// The parts of every class a census reached (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Growth {
    /// Each part, with its forms.
    pub parts: BTreeMap<Part, PartStats>,
    /// Task names, by id, as the first class that ran the task named it.
    pub names: BTreeMap<usize, String>,
    /// Object names, by resource, as their creators named them (a type).
    pub objects: BTreeMap<u64, &'static str>,
    /// The classes added.
    pub classes: usize,
}

impl Growth {
    /// Adds the parts of one new class, whose canonical form `canonical`
    /// was read from `trace`; `object_name` says what an object is.
    pub fn add(
        &mut self,
        canonical: &Canonical,
        trace: &[TraceEntry],
        object_name: impl Fn(u64) -> Option<&'static str>,
    ) {
        self.classes += 1;
        for entry in trace {
            self.names
                .entry(entry.task)
                .or_insert_with(|| entry.name.to_string());
        }
        for (task, seq) in &canonical.tasks {
            let mut hash = Sha256::new();
            Canonical::hash_task(&mut hash, *task, seq);
            let stats = self.parts.entry(Part::Task(*task)).or_default();
            stats.forms.insert(ClassKey::from_digest(&hash.finalize()));
            stats.tasks.insert(*task);
            stats.longest = stats.longest.max(seq.len());
            stats.present += 1;
        }
        for (resource, history) in &canonical.objects {
            let mut hash = Sha256::new();
            Canonical::hash_object(&mut hash, *resource, history);
            if let Some(name) = object_name(*resource) {
                self.objects.entry(*resource).or_insert(name);
            }
            let stats = self.parts.entry(Part::Object(*resource)).or_default();
            stats.forms.insert(ClassKey::from_digest(&hash.finalize()));
            let mut events = 0;
            for segment in history {
                match segment {
                    super::classes::Segment::Write(task) => {
                        stats.tasks.insert(*task);
                        events += 1;
                    }
                    super::classes::Segment::Reads(readers) => {
                        stats.tasks.extend(readers.iter().copied());
                        events += readers.len();
                    }
                }
            }
            stats.longest = stats.longest.max(events);
            stats.present += 1;
        }
    }

    /// The forms a part takes across the classes added, its absence from
    /// some of them counted as one.
    pub fn forms(&self, stats: &PartStats) -> usize {
        stats.forms.len() + usize::from(stats.present < self.classes)
    }

    /// The parts that take more than one form ([`Growth::forms`]), most
    /// forms first (ties by part).
    pub fn ranked(&self) -> Vec<(Part, &PartStats)> {
        let mut ranked: Vec<(Part, &PartStats)> = self
            .parts
            .iter()
            .filter(|(_, s)| self.forms(s) > 1)
            .map(|(p, s)| (*p, s))
            .collect();
        ranked.sort_by(|a, b| self.forms(b.1).cmp(&self.forms(a.1)).then(a.0.cmp(&b.0)));
        ranked
    }

    /// A task as `` 3 `name` ``.
    pub fn task(&self, task: usize) -> String {
        match self.names.get(&task) {
            Some(name) => format!("{task} `{name}`"),
            None => format!("{task}"),
        }
    }

    /// What a part is, in words: `` task 3 `agent x` ``, `` obj 0.2 (made
    /// by task 0 `main`) ``, `spawn`, `timer@20ms`.
    pub fn describe(&self, part: Part) -> String {
        match part {
            Part::Task(t) => format!("task {}", self.task(t)),
            Part::Object(r) => {
                let words = describe_resource(r, |t| self.task(t));
                match self.objects.get(&r) {
                    Some(name) => format!("{words}: {}", short_type(name)),
                    None => words,
                }
            }
        }
    }
}

/// A type name without its module paths: `Inner<JobTable>` for
/// `lifecycle::rt::monitor::Inner<lifecycle::shell::JobTable>`.
fn short_type(name: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(""));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(""));
    out
}

/// `resource` as the simulator's traces name it, with its creating task
/// named after it if it is an object made by a task.
fn describe_resource(resource: u64, task: impl Fn(usize) -> String) -> String {
    let words = lifecycle_sim::describe_resource(resource);
    match lifecycle_sim::object_creator(resource) {
        Some(creator) => format!("{words} (made by task {})", task(creator)),
        None => words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifecycle_sim::{TracedAccess, OBJECT};
    use std::rc::Rc;

    fn poll(task: usize, resource: u64) -> TraceEntry {
        TraceEntry {
            step: 0,
            now_ms: 0,
            task,
            name: Rc::from(format!("t{task}").as_str()),
            ready: 1,
            chosen: 0,
            ready_ids: vec![task],
            preempted: None,
            footprint: Vec::new(),
            accesses: vec![TracedAccess {
                resource,
                failed_wait: false,
                echo: false,
            }],
        }
    }

    fn add(growth: &mut Growth, trace: &[TraceEntry]) {
        growth.add(&Canonical::of(trace), trace, |r| {
            (r == OBJECT | 1).then_some("a::Table")
        });
    }

    #[test]
    fn the_object_written_in_both_orders_ranks_first() {
        // Object 1 of task 0 is written by tasks 1 and 2 in either order;
        // object 2 of task 0 only ever by task 2.
        let shared = OBJECT | 1;
        let own = OBJECT | 2;
        let mut growth = Growth::default();
        add(
            &mut growth,
            &[poll(1, shared), poll(2, shared), poll(2, own)],
        );
        add(
            &mut growth,
            &[poll(2, shared), poll(1, shared), poll(2, own)],
        );
        let ranked = growth.ranked();
        assert_eq!(ranked.len(), 1, "{ranked:?}");
        let (part, stats) = ranked[0];
        assert_eq!(part, Part::Object(shared));
        assert_eq!(stats.forms.len(), 2);
        assert_eq!(stats.tasks, BTreeSet::from([1, 2]));
        assert_eq!(stats.longest, 2);
        assert_eq!(growth.describe(part), "obj 0.1 (made by task 0): Table");
        // Task 2's own sequence is the same in both classes.
        assert_eq!(growth.parts[&Part::Task(2)].forms.len(), 1);
        assert_eq!(growth.describe(Part::Task(2)), "task 2 `t2`");
    }

    #[test]
    fn resources_are_named_by_kind() {
        let name = |t: usize| format!("{t} `t{t}`");
        assert_eq!(
            describe_resource(OBJECT | (3 << 32) | 4, name),
            "obj 3.4 (made by task 3 `t3`)"
        );
        assert_eq!(
            describe_resource(OBJECT | (0xFF_FFFF << 32), name),
            "obj -.0"
        );
        assert_eq!(describe_resource(lifecycle_sim::WAKE | 3, name), "wake 3");
    }

    #[test]
    fn a_part_missing_from_some_classes_counts_its_absence() {
        let (one, two) = (OBJECT | 1, OBJECT | 2);
        let mut growth = Growth::default();
        // Task 1 writes object 2 in one class only; object 1 is the same
        // in both.
        add(&mut growth, &[poll(1, one)]);
        add(&mut growth, &[poll(1, one), poll(1, two)]);
        assert_eq!(growth.classes, 2);
        assert_eq!(growth.forms(&growth.parts[&Part::Object(one)]), 1);
        assert_eq!(growth.forms(&growth.parts[&Part::Object(two)]), 2);
        let ranked: Vec<Part> = growth.ranked().into_iter().map(|(p, _)| p).collect();
        assert_eq!(ranked, vec![Part::Task(1), Part::Object(two)]);
    }

    #[test]
    fn every_lock_of_a_scenario_is_named_by_its_type() {
        let scenario = &crate::scenarios::dropped_create::DROPPED_CREATE;
        let mut growth = Growth::default();
        let census = crate::check::classes::census_observed(
            scenario,
            crate::faults::Faults::none(),
            lifecycle_sim::DfsConfig::default(),
            crate::check::classes::CAP,
            &mut |canonical, sim| growth.add(canonical, sim.trace(), |r| sim.object_name(r)),
        )
        .expect("census");
        assert!(census.exhausted);
        assert_eq!(growth.classes, census.classes.len());
        // The scenario's shared state lives in the simulator's locks
        // (`SimRt`), and each names its object.
        let objects: Vec<u64> = growth
            .parts
            .keys()
            .filter_map(|p| match p {
                Part::Object(r) if r & (0xF << 60) == OBJECT => Some(*r),
                _ => None,
            })
            .collect();
        assert!(!objects.is_empty());
        let unnamed: Vec<String> = objects
            .iter()
            .filter(|r| !growth.objects.contains_key(r))
            .map(|r| growth.describe(Part::Object(*r)))
            .collect();
        assert!(unnamed.is_empty(), "objects without a name: {unnamed:?}");
        assert!(
            growth
                .objects
                .values()
                .any(|n| n.contains("LifecycleEvent")),
            "the world's event log is not among {:?}",
            growth.objects.values().collect::<Vec<_>>()
        );
    }

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(
            short_type("lifecycle::rt::monitor::Inner<lifecycle::shell::JobTable>"),
            "Inner<JobTable>"
        );
        assert_eq!(
            short_type("alloc::vec::Vec<(u64, alloc::string::String)>"),
            "Vec<(u64, String)>"
        );
    }
}
