//! An explicit-state, breadth-first model checker.
//!
//! Every reachable state is visited once (states are deduplicated by value),
//! in breadth-first order, so the first counterexample found for a property
//! is one of the shortest. A depth bound cuts infinite spaces (the models of
//! this crate are finite and never reach it).
//!
//! Semantics, per [`Expectation`]:
//! - `Always`: the condition holds in every reachable state. The
//!   counterexample is a shortest path to a state where it does not.
//! - `Sometimes`: the condition holds in at least one reachable state. A
//!   failure has no path (nothing reachable satisfies it).
//! - `Eventually`: the condition holds in every *terminal* reachable state
//!   (no action enabled, below the depth bound): every complete run ends
//!   with the obligation discharged. The counterexample is a shortest path to
//!   a terminal state where it does not. Cycles are not checked for
//!   liveness (the models here have none that matter: their environments
//!   have finite budgets).

use crate::model::{Expectation, Model};
use std::collections::HashSet;
use std::time::Instant;

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
}

/// How one property fared.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PropertyResult {
    /// Its name.
    pub name: String,
    /// Its expectation.
    pub expectation: Expectation,
    /// Whether it holds.
    pub holds: bool,
    /// A counterexample, when it does not hold and one exists (never for
    /// `sometimes`).
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
    /// States generated (successors computed, duplicates included).
    pub states: u64,
    /// Distinct states.
    pub unique: u64,
    /// The deepest level reached.
    pub max_depth: u32,
    /// Wall-clock seconds (reporting only; never drives behaviour).
    pub seconds: f64,
    /// Whether the depth bound cut the search.
    pub bounded: bool,
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

/// The breadth-first checker.
#[derive(Clone, Copy, Debug)]
pub struct Checker {
    /// The deepest level explored (states beyond are not expanded).
    pub depth_max: u32,
}

impl Default for Checker {
    fn default() -> Self {
        Checker { depth_max: 200 }
    }
}

struct Node<S, A> {
    state: S,
    parent: usize,
    action: Option<A>,
    depth: u32,
}

impl Checker {
    /// Check `model`.
    pub fn check<M: Model>(&self, model: &M) -> CheckResult {
        let started = Instant::now();
        let props = model.properties();
        let mut found: Vec<Option<usize>> = vec![None; props.len()];
        let mut seen_sometimes = vec![false; props.len()];
        let mut nodes: Vec<Node<M::State, M::Action>> = Vec::new();
        let mut index: HashSet<M::State> = HashSet::new();
        let mut generated = 0u64;
        let mut max_depth = 0u32;
        let mut bounded = false;
        for s in model.init_states() {
            generated += 1;
            if index.insert(s.clone()) {
                nodes.push(Node {
                    state: s,
                    parent: usize::MAX,
                    action: None,
                    depth: 0,
                });
            }
        }
        let mut actions = Vec::new();
        let mut next = 0usize;
        while next < nodes.len() {
            let at = next;
            next += 1;
            let depth = nodes[at].depth;
            max_depth = max_depth.max(depth);
            for (i, p) in props.iter().enumerate() {
                let ok = (p.condition)(model, &nodes[at].state);
                match p.expectation {
                    Expectation::Always if !ok && found[i].is_none() => found[i] = Some(at),
                    Expectation::Sometimes if ok => seen_sometimes[i] = true,
                    _ => {}
                }
            }
            if depth >= self.depth_max {
                bounded = true;
                continue;
            }
            actions.clear();
            model.actions(&nodes[at].state, &mut actions);
            let mut successors = 0;
            for a in actions.drain(..) {
                let Some(s) = model.next_state(&nodes[at].state, &a) else {
                    continue;
                };
                successors += 1;
                generated += 1;
                if index.contains(&s) {
                    continue;
                }
                index.insert(s.clone());
                nodes.push(Node {
                    state: s,
                    parent: at,
                    action: Some(a),
                    depth: depth + 1,
                });
            }
            if successors == 0 {
                for (i, p) in props.iter().enumerate() {
                    if p.expectation == Expectation::Eventually
                        && found[i].is_none()
                        && !(p.condition)(model, &nodes[at].state)
                    {
                        found[i] = Some(at);
                    }
                }
            }
        }
        let path_to = |mut at: usize| {
            let last_state = format!("{:#?}", nodes[at].state);
            let mut path = Vec::new();
            while let Some(a) = &nodes[at].action {
                path.push(format!("{a:?}"));
                at = nodes[at].parent;
            }
            path.reverse();
            Counterexample { path, last_state }
        };
        let properties = props
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (holds, counterexample) = match p.expectation {
                    Expectation::Sometimes => (seen_sometimes[i], None),
                    _ => (found[i].is_none(), found[i].map(path_to)),
                };
                PropertyResult {
                    name: p.name.to_string(),
                    expectation: p.expectation,
                    holds,
                    counterexample,
                }
            })
            .collect();
        CheckResult {
            model: model.name(),
            states: generated,
            unique: nodes.len() as u64,
            max_depth,
            seconds: started.elapsed().as_secs_f64(),
            bounded,
            properties,
        }
    }
}
