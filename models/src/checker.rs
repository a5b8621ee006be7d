//! Checking a model with stateright, and the result as a report.
//!
//! The search is stateright's: [`ModelChecker::check`] runs its breadth-first
//! checker (`spawn_bfs`) on [`ModelChecker::threads`] threads, to completion
//! (every reachable state is visited, so state counts are the whole space
//! even when every property already has a discovery), and turns its
//! discoveries into [`PropertyResult`]s. [`ModelChecker::check_symmetric`] runs
//! stateright's depth-first checker with symmetry reduction (`symmetry()`,
//! which stateright implements for `spawn_dfs` only) on a model whose state
//! is [`Representative`], and reports how many representatives it visited.
//!
//! Semantics, per [`Expectation`] (stateright's):
//! - `Always`: the condition holds in every reachable state. The
//!   counterexample is a path to a state where it does not.
//! - `Sometimes`: the condition holds in at least one reachable state. A
//!   failure has no path (nothing reachable satisfies it).
//!
//! Progress rules (C5, C7, C10, D7, D8, R1, D9, S6, A1) are written with
//! [`at_every_end!`]: an `Always` property whose condition must hold in
//! every *terminal* state (no action enabled), so every complete run ends
//! with the obligation discharged, and the counterexample is a path to a
//! terminal state where it does not. They are not stateright's
//! `Eventually`: that one clears a property once its condition held
//! anywhere on the path and keeps that bit across a join in the state
//! graph (a `FIXME` in stateright's `bfs.rs`), so it misses a run that
//! reaches the join another way; on the dispose model it missed M15's D8
//! counterexample (`tests/pinned.rs` has the test that shows it). Cycles
//! are not searched for livelock; the models' environments have finite
//! budgets.
//!
//! Paths: stateright keeps the path of the *last* violating state it
//! visits, and with several threads visits in no fixed order. So
//! [`ModelChecker::check`] re-derives a counterexample for each failing
//! property with [`ModelChecker::shortest`]: one thread's breadth-first search
//! (states visited in order of depth), whose visitor keeps the first
//! violating path, stopped once every failing property has one. Pinned
//! lengths are those shortest ones.

use crate::PropertyId;
use lifecycle_spec::Rule;
use stateright::{Checker as _, HasDiscoveries};
pub use stateright::{Expectation, Model, Property, Representative};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A progress property, checked as stateright `always` over the terminal
/// states: `$cond` must hold in every state with no enabled action (see
/// the module docs for why this is not stateright's `Eventually`). `$id`
/// is its [`PropertyId`].
#[macro_export]
macro_rules! at_every_end {
    ($model:ty, $id:expr, $cond:expr $(,)?) => {{
        let id: $crate::PropertyId = $id;
        $crate::checker::Prop {
            id,
            property: $crate::checker::Property::<$model>::always(id.name, |m, s| {
                $crate::checker::holds_at_end::<$model>($cond, m, s)
            }),
        }
    }};
}

/// A model property with its id: the rule it states is read from the id,
/// never from the property's text.
pub struct Prop<M: Model> {
    /// The id, whose `name` is the property's.
    pub id: PropertyId,
    /// The stateright property.
    pub property: Property<M>,
}

impl<M: Model> Prop<M> {
    /// An `always` property named by `id`.
    pub fn always(id: PropertyId, condition: fn(&M, &M::State) -> bool) -> Prop<M> {
        Prop {
            id,
            property: Property::always(id.name, condition),
        }
    }

    /// A `sometimes` property named by `id`.
    pub fn sometimes(id: PropertyId, condition: fn(&M, &M::State) -> bool) -> Prop<M> {
        Prop {
            id,
            property: Property::sometimes(id.name, condition),
        }
    }

    /// An `eventually` property named by `id` (stateright's; see the
    /// module docs for why the models' progress rules use
    /// [`at_every_end!`]).
    pub fn eventually(id: PropertyId, condition: fn(&M, &M::State) -> bool) -> Prop<M> {
        Prop {
            id,
            property: Property::eventually(id.name, condition),
        }
    }
}

/// A model whose every property carries its [`PropertyId`]. Its
/// `Model::properties` is [`properties_of`], so the two lists are one.
pub trait Identified: Model {
    /// Every property with its id, in report order.
    fn identified(&self) -> Vec<Prop<Self>>;
}

/// The stateright properties of an [`Identified`] model, for its
/// `Model::properties`.
pub fn properties_of<M: Identified>(model: &M) -> Vec<Property<M>> {
    model.identified().into_iter().map(|p| p.property).collect()
}

/// The condition of an [`at_every_end!`] property: `cond` holds in `s`, or
/// `s` is not terminal.
pub fn holds_at_end<M: Model>(cond: fn(&M, &M::State) -> bool, model: &M, s: &M::State) -> bool {
    cond(model, s) || !is_terminal(model, s)
}

/// Whether no action is enabled in `s` (every action's next state is
/// `None`).
pub fn is_terminal<M: Model>(model: &M, s: &M::State) -> bool {
    let mut actions = Vec::new();
    model.actions(s, &mut actions);
    actions
        .into_iter()
        .all(|a| model.next_state(s, a).is_none())
}

/// The name of no property: waiting for its discovery runs a check to
/// completion (stateright stops once every property has a discovery).
const NEVER: &str = "(run to completion)";

/// A property's counterexample: the numbered action path from an initial
/// state, and the last state.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Counterexample {
    /// The actions, in order (rendered with `Debug`).
    pub path: Vec<String>,
    /// The last state (rendered with `{:#?}`).
    pub last_state: String,
}

impl Counterexample {
    /// How many actions the path has.
    pub fn len(&self) -> usize {
        self.path.len()
    }

    /// Whether the path is empty (an initial state violates the property).
    pub fn is_empty(&self) -> bool {
        self.path.is_empty()
    }

    fn of<M: Model>(path: stateright::Path<M::State, M::Action>) -> Self
    where
        M::State: std::fmt::Debug,
        M::Action: std::fmt::Debug,
    {
        let last_state = format!("{:#?}", path.last_state());
        let path = path
            .into_actions()
            .iter()
            .map(|a| format!("{a:?}"))
            .collect();
        Counterexample { path, last_state }
    }
}

fn lowercase<S: serde::Serializer>(e: &Expectation, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match e {
        Expectation::Always => "always",
        Expectation::Sometimes => "sometimes",
        Expectation::Eventually => "eventually",
    })
}

/// How one property fared.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PropertyResult {
    /// Its name.
    pub name: String,
    /// The rule it states (its [`PropertyId`]'s).
    #[serde(skip)]
    pub rule: Rule,
    /// Its expectation.
    #[serde(serialize_with = "lowercase")]
    pub expectation: Expectation,
    /// Whether it holds.
    pub holds: bool,
    /// A shortest counterexample, when it does not hold and one exists
    /// (never for `sometimes`).
    pub counterexample: Option<Counterexample>,
}

impl PropertyResult {
    /// Render a failure: the property name, the numbered action path and
    /// the last state.
    pub fn render(&self) -> String {
        let mut out = format!("property `{}` ({:?}) ", self.name, self.expectation);
        match &self.counterexample {
            None if self.holds => out.push_str("holds\n"),
            None => out.push_str("fails: no reachable state satisfies it\n"),
            Some(cx) => {
                out.push_str(&format!("fails after {} actions:\n", cx.len()));
                for (i, a) in cx.path.iter().enumerate() {
                    out.push_str(&format!("  {:>2}. {a}\n", i + 1));
                }
                out.push_str("last state:\n");
                for line in cx.last_state.lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
        }
        out
    }
}

/// The result of checking one model.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckResult {
    /// The model's name.
    pub model: String,
    /// States generated (stateright's `state_count`: successors computed,
    /// duplicates included).
    pub states: u64,
    /// Distinct states (stateright's `unique_state_count`).
    pub unique: u64,
    /// Distinct representatives under symmetry reduction, for a model with
    /// interchangeable ids ([`ModelChecker::check_symmetric`]); `None` for the
    /// others.
    pub symmetric: Option<u64>,
    /// The most actions on a path to a state, as the search first reached
    /// it (stateright's `max_depth`, which counts an initial state as 1,
    /// less one).
    pub max_depth: u32,
    /// Wall-clock seconds of the search (reporting only; never drives
    /// behaviour).
    pub seconds: f64,
    /// Threads the search ran on.
    pub threads: usize,
    /// Each property, in the model's order.
    pub properties: Vec<PropertyResult>,
}

impl CheckResult {
    /// The result of the property named `name`.
    pub fn property(&self, name: &str) -> Option<&PropertyResult> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// Whether every property holds.
    pub fn all_hold(&self) -> bool {
        self.properties.iter().all(|p| p.holds)
    }

    /// The first failing property that has a counterexample.
    pub fn first_counterexample(&self) -> Option<&PropertyResult> {
        self.properties
            .iter()
            .find(|p| !p.holds && p.counterexample.is_some())
    }
}

/// How to run stateright's checker.
///
/// One thread by default: with several, stateright's breadth-first search
/// may reach a state first by a longer path, so the reported depth varies
/// from run to run, and on these models it is no faster. The cores are
/// used one level up: [`report::run_models`](crate::report::run_models)
/// checks the models and fault variants concurrently, one search each.
#[derive(Clone, Copy, Debug)]
pub struct ModelChecker {
    /// Threads of the breadth-first search (stateright's `threads`).
    pub threads: usize,
}

impl Default for ModelChecker {
    fn default() -> Self {
        ModelChecker { threads: 1 }
    }
}

/// A model's name in reports: `agent`, or `agent+M3` with a fault.
pub trait Named {
    /// The name.
    fn name(&self) -> String;
}

/// What a state or an action must be: compared, hashed, printed, and
/// shared with stateright's checker threads.
pub trait Value: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static {}

impl<T: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static> Value for T {}

/// What a model needs to be checked and reported.
pub trait Checkable:
    Model<State: Value, Action: Value> + Identified + Named + Clone + Send + Sync + 'static
{
}

impl<M> Checkable for M where
    M: Model<State: Value, Action: Value> + Identified + Named + Clone + Send + Sync + 'static
{
}

impl ModelChecker {
    /// Check `model` to completion and report each property, with a
    /// shortest counterexample per failing one.
    pub fn check<M: Checkable>(&self, model: M) -> CheckResult {
        let started = Instant::now();
        let props = model.properties();
        let ids: Vec<PropertyId> = model.identified().iter().map(|p| p.id).collect();
        assert!(
            props
                .iter()
                .map(|p| p.name)
                .eq(ids.iter().map(|id| id.name)),
            "{}: Model::properties must be checker::properties_of, one list with the ids",
            model.name()
        );
        let checker = model
            .clone()
            .checker()
            .threads(self.threads.max(1))
            .finish_when(HasDiscoveries::AllOf(BTreeSet::from([NEVER])))
            .spawn_bfs()
            .join();
        let found = checker.discoveries();
        let failing: Vec<&'static str> = props
            .iter()
            .filter(|p| p.expectation != Expectation::Sometimes && found.contains_key(p.name))
            .map(|p| p.name)
            .collect();
        let mut paths = if failing.is_empty() {
            vec![]
        } else {
            self.shortest(&model, &failing)
        }
        .into_iter();
        let properties = props
            .iter()
            .zip(&ids)
            .map(|(p, id)| {
                let discovered = found.contains_key(p.name);
                let (holds, counterexample) = match p.expectation {
                    Expectation::Sometimes => (discovered, None),
                    _ if !discovered => (true, None),
                    _ => (false, paths.next().flatten()),
                };
                PropertyResult {
                    name: p.name.to_string(),
                    rule: id.rule,
                    expectation: p.expectation.clone(),
                    holds,
                    counterexample,
                }
            })
            .collect();
        CheckResult {
            model: model.name(),
            states: checker.state_count() as u64,
            unique: checker.unique_state_count() as u64,
            symmetric: None,
            max_depth: checker.max_depth().saturating_sub(1) as u32,
            seconds: started.elapsed().as_secs_f64(),
            threads: self.threads.max(1),
            properties,
        }
    }

    /// [`check`](Self::check), then stateright's depth-first search with
    /// symmetry reduction, whose count of distinct representatives goes to
    /// [`CheckResult::symmetric`]. The properties must fare the same under
    /// both searches (a representative is a state of the same class);
    /// a difference is reported as a failing property named after it.
    pub fn check_symmetric<M>(&self, model: M) -> CheckResult
    where
        M: Checkable<State: Representative>,
    {
        let mut result = self.check(model.clone());
        let started = Instant::now();
        let reduced = model
            .checker()
            .threads(self.threads.max(1))
            .symmetry()
            .finish_when(HasDiscoveries::AllOf(BTreeSet::from([NEVER])))
            .spawn_dfs()
            .join();
        let found = reduced.discoveries();
        for p in &mut result.properties {
            let discovered = found.contains_key(p.name.as_str());
            let holds = match p.expectation {
                Expectation::Sometimes => discovered,
                _ => !discovered,
            };
            if holds != p.holds {
                p.holds = false;
                p.name = format!("{} (differs under symmetry reduction)", p.name);
            }
        }
        result.symmetric = Some(reduced.unique_state_count() as u64);
        result.seconds += started.elapsed().as_secs_f64();
        result
    }

    /// A shortest counterexample of each property named in `names` (an
    /// `always` property; `None` where nothing violates it): one thread's
    /// breadth-first search, whose visitor sees states in order of depth
    /// and keeps the first violating path of each, stopped once each has
    /// one.
    pub fn shortest<M: Checkable>(
        &self,
        model: &M,
        names: &[&'static str],
    ) -> Vec<Option<Counterexample>> {
        let watched: Vec<_> = names
            .iter()
            .map(|n| model.properties().into_iter().find(|p| p.name == *n))
            .map(|p| p.map(|p| p.condition))
            .collect();
        let first = Arc::new(Mutex::new(vec![None; names.len()]));
        let visitor = FirstViolation {
            watched,
            first: Arc::clone(&first),
        };
        model
            .clone()
            .checker()
            .visitor(visitor)
            .finish_when(HasDiscoveries::AllOf(names.iter().copied().collect()))
            .spawn_bfs()
            .join();
        let first = first.lock().unwrap_or_else(|e| e.into_inner());
        first.clone()
    }
}

/// The visitor of [`ModelChecker::shortest`]: the first path (in visiting
/// order) to a state where each watched condition is false.
struct FirstViolation<M: Model> {
    watched: Vec<Option<Condition<M>>>,
    first: Arc<Mutex<Vec<Option<Counterexample>>>>,
}

type Condition<M> = fn(&M, &<M as Model>::State) -> bool;

impl<M: Checkable> stateright::CheckerVisitor<M> for FirstViolation<M> {
    fn visit(&self, model: &M, path: stateright::Path<M::State, M::Action>) {
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        for (slot, condition) in first.iter_mut().zip(&self.watched) {
            if let (None, Some(condition)) = (&slot, condition) {
                if !condition(model, path.last_state()) {
                    *slot = Some(Counterexample::of::<M>(path.clone()));
                }
            }
        }
    }
}
