//! The rule-clause table: every clause of every rule of SPEC §2, what
//! exercises it, and the goal that proves the exercise reached it
//! (`lifecycle list --rules` prints it; `check` refuses to run while it is
//! broken).
//!
//! A clause is one sentence (or one obligation) of a rule, `C3.2` "the
//! first cause wins". Its exercises are typed references into the harness:
//!
//! - [`Exercise::Scenario`]: a scenario of [`crate::scenarios::ALL`] and
//!   one of its goals. `check` runs the scenario under every checker and
//!   fails a run whose exploring checker never hits a goal it is not
//!   excused from, so the clause's situation is shown to arise on every
//!   `check`; the scenario's own invariants or the oracles check the rule.
//! - [`Exercise::Conformance`]: a proptest-state-machine conformance test
//!   (`tests/conformance_*.rs`), an operation of its `Op` enum and the
//!   model property that states the clause. The goal is the operation
//!   being generated (it is in the test's `transitions`) and applied in
//!   every case, its answers and the observable state compared with the
//!   model's.
//! - [`Exercise::Test`]: a `#[test]` of an integration test that builds the
//!   clause's situation directly, for what only the real server and real
//!   processes show (A9, A10, a process group killed).
//!
//! [`validate`] returns every broken clause: no exercise; a scenario not
//! registered, a goal it does not have or no checker requires, a rule the
//! scenario does not check; an operation, property, test file or test
//! function that does not exist, is not generated, or does not run. The
//! conformance and test sources are read from this crate's `tests/` at run
//! time (`CARGO_MANIFEST_DIR`), so editing a test rebuilds only that test.

mod render;
pub mod sources;
mod table;

pub use render::render;
pub use table::CLAUSES;

use crate::check::Checker;
use crate::scenarios::{self, Goal, Scenario};
use std::fmt;

pub use crate::rules::{Family, Rule};

/// A clause's ID: its rule and its number within the rule, `C3.2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClauseId {
    /// The rule.
    pub rule: Rule,
    /// Its number within the rule, from 1.
    pub n: u8,
}

impl ClauseId {
    /// `C3.2` from its text; `None` if it is not one.
    pub fn parse(id: &str) -> Option<ClauseId> {
        let (rule, n) = id.split_once('.')?;
        let n: u8 = n.parse().ok().filter(|n| *n > 0)?;
        Some(ClauseId {
            rule: Rule::parse(rule)?,
            n,
        })
    }
}

impl fmt::Display for ClauseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.rule, self.n)
    }
}

/// A proptest-state-machine conformance test and the model it follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conformance {
    /// `tests/conformance_agent.rs` against the agent model.
    Agent,
    /// `tests/conformance_dispose.rs` against the dispose model.
    Dispose,
    /// `tests/conformance_durability.rs` against the durability model.
    Durability,
    /// `tests/conformance_shell.rs` against the shell model.
    Shell,
    /// `tests/conformance_acp.rs` against the ACP model.
    Acp,
}

impl Conformance {
    /// Its test target (`cargo test --test <target>`).
    pub fn target(self) -> &'static str {
        match self {
            Conformance::Agent => "conformance_agent",
            Conformance::Dispose => "conformance_dispose",
            Conformance::Durability => "conformance_durability",
            Conformance::Shell => "conformance_shell",
            Conformance::Acp => "conformance_acp",
        }
    }

    /// The names of its model's properties (`lifecycle model` checks
    /// them).
    pub fn properties(self) -> Vec<&'static str> {
        use lifecycle_models::Model;
        fn names<M: Model>(m: M) -> Vec<&'static str> {
            m.properties().into_iter().map(|p| p.name).collect()
        }
        match self {
            Conformance::Agent => names(lifecycle_models::agent::AgentModel::new(None)),
            Conformance::Dispose => names(lifecycle_models::dispose::DisposeModel::new(None)),
            Conformance::Durability => {
                names(lifecycle_models::durability::DurabilityModel::new(None))
            }
            Conformance::Shell => names(lifecycle_models::shell::ShellModel::new(None)),
            Conformance::Acp => names(lifecycle_models::acp::AcpModel::new(None)),
        }
    }
}

/// One way a clause is exercised, with the goal that proves it was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exercise {
    /// A registered scenario and one of its goals: `check` requires the
    /// goal of every exploring checker not excused from it.
    Scenario {
        /// The scenario (its `pub static`).
        scenario: &'static Scenario,
        /// One of its goals (its `pub const`).
        goal: &'static Goal,
    },
    /// An operation of a conformance test: generated and applied in each
    /// of its cases, its answers and the state compared with the model's.
    Conformance {
        /// The test.
        test: Conformance,
        /// A variant of its `Op` enum.
        op: &'static str,
        /// The model property that states the clause (`None`: the test
        /// itself fixes the expected answer; the model does not cover it).
        property: Option<lifecycle_models::PropertyId>,
    },
    /// A `#[test]` function of an integration test that builds the
    /// clause's situation with the real server or real processes.
    Test {
        /// The test target (`tests/<target>.rs`).
        target: &'static str,
        /// The test function.
        name: &'static str,
    },
}

impl fmt::Display for Exercise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exercise::Scenario { scenario, goal } => {
                write!(f, "scenario {}, goal {}", scenario.name, goal.name)
            }
            Exercise::Conformance { test, op, .. } => write!(f, "{}, Op::{op}", test.target()),
            Exercise::Test { target, name } => write!(f, "test {target}::{name}"),
        }
    }
}

/// One clause of a rule.
#[derive(Clone, Copy, Debug)]
pub struct Clause {
    /// `C3.2`.
    pub id: ClauseId,
    /// What it says, in short (SPEC's words where they are short).
    pub text: &'static str,
    /// What exercises it; at least one.
    pub exercises: &'static [Exercise],
}

/// What is wrong with a clause (or a rule without clauses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Broken {
    /// The rule has no clause in the table.
    NoClause,
    /// The clause appears more than once.
    Duplicate,
    /// The clause has no exercise.
    NoExercise,
    /// No scenario of `scenarios::ALL` has this name.
    UnknownScenario(&'static str),
    /// The scenario has no goal of this name, so `check` never judges it.
    UnknownGoal(&'static str, &'static str),
    /// Every checker that requires goals is excused from this one.
    GoalNotRequired(&'static str, &'static str),
    /// The scenario checks neither the rule nor an oracle that does.
    RuleNotChecked(&'static str),
    /// A test source could not be read.
    Source(String, String),
    /// The conformance test's `Op` enum has no such variant.
    UnknownOp(&'static str, &'static str),
    /// The conformance test's `transitions` never generates the operation.
    OpNotGenerated(&'static str, &'static str),
    /// The model has no such property, or it is another rule's.
    UnknownProperty(&'static str, &'static str),
    /// The test target has no such `#[test]` function, or it is ignored.
    UnknownTest(&'static str, &'static str, &'static str),
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::NoClause => write!(f, "no clause"),
            Broken::Duplicate => write!(f, "listed more than once"),
            Broken::NoExercise => write!(f, "no exercise"),
            Broken::UnknownScenario(s) => write!(f, "no registered scenario {s:?}"),
            Broken::UnknownGoal(s, g) => {
                write!(f, "scenario {s} has no goal {g:?}, so `check` never judges it")
            }
            Broken::GoalNotRequired(s, g) => write!(
                f,
                "goal {g} of scenario {s} is excused for every checker, so `check` never requires it"
            ),
            Broken::RuleNotChecked(s) => write!(
                f,
                "scenario {s} checks neither this rule nor an oracle that does"
            ),
            Broken::Source(t, e) => write!(f, "cannot read tests/{t}.rs: {e}"),
            Broken::UnknownOp(t, op) => write!(f, "{t} has no operation Op::{op}"),
            Broken::OpNotGenerated(t, op) => {
                write!(f, "{t} never generates Op::{op} (not in its transitions)")
            }
            Broken::UnknownProperty(t, p) => write!(
                f,
                "the model of {t} has no property {p:?} of this rule (see `lifecycle model`)"
            ),
            Broken::UnknownTest(t, name, why) => write!(f, "test {t}::{name} {why}"),
        }
    }
}

/// One broken clause (or rule), as `check` and `list --rules` report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The clause (`C3.2`) or, for [`Broken::NoClause`], the rule (`C3`).
    pub id: String,
    /// The clause's text (empty for a rule).
    pub text: &'static str,
    /// What is wrong.
    pub what: Broken,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.is_empty() {
            write!(f, "{}: {}", self.id, self.what)
        } else {
            write!(f, "{} {:?}: {}", self.id, self.text, self.what)
        }
    }
}

/// Every broken clause of `clauses`, in table order (empty: the table is
/// complete): every rule of [`Rule::ALL`] needs a clause, and every clause
/// an exercise whose scenario, goal, operation, property or test exists,
/// is judged or generated or run, and concerns the clause's rule.
pub fn validate(clauses: &[Clause]) -> Vec<Problem> {
    let mut sources = sources::Sources::default();
    let mut problems = Vec::new();
    for rule in Rule::ALL {
        if !clauses.iter().any(|c| c.id.rule == rule) {
            problems.push(Problem {
                id: rule.to_string(),
                text: "",
                what: Broken::NoClause,
            });
        }
    }
    for (i, clause) in clauses.iter().enumerate() {
        let mut broken = |what: Broken| {
            problems.push(Problem {
                id: clause.id.to_string(),
                text: clause.text,
                what,
            })
        };
        if clauses[..i].iter().any(|c| c.id == clause.id) {
            broken(Broken::Duplicate);
        }
        if clause.exercises.is_empty() {
            broken(Broken::NoExercise);
        }
        for exercise in clause.exercises {
            if let Err(what) = check_exercise(clause.id.rule, exercise, &mut sources) {
                broken(what);
            }
        }
    }
    problems
}

fn check_exercise(
    rule: Rule,
    exercise: &Exercise,
    sources: &mut sources::Sources,
) -> Result<(), Broken> {
    match *exercise {
        Exercise::Scenario { scenario: s, goal } => {
            let name = s.name;
            if !scenarios::ALL.contains(&s) {
                return Err(Broken::UnknownScenario(name));
            }
            let g = s
                .goals
                .iter()
                .find(|g| *g == goal)
                .ok_or(Broken::UnknownGoal(name, goal.name))?;
            let required = Checker::ALL
                .into_iter()
                .filter(|c| c.requires_goals())
                .any(|c| !g.excused.iter().any(|(who, _)| *who == c));
            if !required {
                return Err(Broken::GoalNotRequired(name, goal.name));
            }
            let checked = s.rules.contains(&rule)
                || crate::oracle::ORACLE_RULES.contains(&rule)
                || crate::oracle_world::WORLD_RULES.contains(&rule);
            if !checked {
                return Err(Broken::RuleNotChecked(name));
            }
            Ok(())
        }
        Exercise::Conformance { test, op, property } => {
            let target = test.target();
            let src = sources.get(target)?;
            if !sources::op_variants(src).iter().any(|v| v == op) {
                return Err(Broken::UnknownOp(target, op));
            }
            if !sources::generates(src, op) {
                return Err(Broken::OpNotGenerated(target, op));
            }
            if let Some(p) = property {
                if p.rule != rule || !test.properties().contains(&p.name) {
                    return Err(Broken::UnknownProperty(target, p.name));
                }
            }
            Ok(())
        }
        Exercise::Test { target, name } => {
            let src = sources.get(target)?;
            sources::test_runs(src, name).map_err(|why| Broken::UnknownTest(target, name, why))
        }
    }
}

/// How many clauses each family has in `clauses`.
pub fn counts(clauses: &[Clause]) -> Vec<(Family, usize)> {
    Family::ALL
        .into_iter()
        .map(|f| {
            (
                f,
                clauses.iter().filter(|c| c.id.rule.family() == f).count(),
            )
        })
        .collect()
}
