//! What is pinned and how each figure is measured: the jobs of
//! `bench --pins`. Every figure is deterministic (a count, never a time):
//!
//! - `scenarios`, `scenarios.coverage-gaps`, `faults`, `model-faults`,
//!   `rules`: sizes of the registries; `scenarios.pr-bound.<bound>`: how
//!   many scenarios `check --tier pr` searches at each preemption bound;
//! - `clauses`, `clauses.<family>`, `clauses.exercises.<kind>`: the
//!   rule-clause table (`lifecycle list --rules`);
//! - `tasks.<scenario>.all`, `tasks.<scenario>.without-bystanders`,
//!   `tasks.<scenario>.loom`: the tasks one execution runs, as the
//!   simulator counts them (the last in loom's context, `Ctx::loom`);
//! - `sim-dfs.<scenario>.schedules`, `sim-dfs.<scenario>.views`: the
//!   `sim-dfs` row of `check --tier pr` (its bound, its cap);
//! - `dpor.<scenario>.schedules`: the scenarios `check` exhausts
//!   unbounded, searched with source-DPOR alone (no forced branching at
//!   the top, as `tests/exploration.rs` searches them);
//! - `classes.<scenario>.{naive-schedules,naive-classes,sim-dfs-complete,sim-dfs-classes}`:
//!   the class counter's census of the scenarios it counts
//!   (`check::classes::COUNTED`);
//! - `model.<model>.{unique,depth,properties}` and
//!   `model-fault.<fault>.{counterexample,unique}`: the executable models
//!   (`lifecycle model`); `model.<model>.symmetric` and
//!   `model-fault.<fault>.symmetric` for a model with interchangeable ids
//!   ([`ModelId::symmetric`](lifecycle_models::ModelId::symmetric)): the states
//!   stateright's symmetry reduction visits, beside `unique` without it.
//!
//! Keys are known without measuring ([`keys`]); a [`Job`] measures one
//! or more figures at once (a search yields its schedules and its views).
//! All jobs take about a minute in a release build.

use super::file::{Pin, Pins};
use crate::check::classes;
use crate::check::explore::sim_dfs::{self, explore_dfs, DfsOptions};
use crate::check::tasks;
use crate::check::{self, Budget, Checker};
use crate::clauses::{self, Exercise, CLAUSES};
use crate::faults::{Fault, Faults};
use crate::rules::{Family, Rule};
use crate::scenarios::{self, Scenario};
use lifecycle_models::report as models;
use lifecycle_models::ModelId;
use std::collections::BTreeMap;

/// Cap of the unbounded DPOR searches (each exhausts far below it).
const DPOR_CAP: u64 = 2_000_000;

/// One pinned figure: its key and what it counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figure {
    /// The key in the pins file.
    pub key: String,
    /// What it counts, in one line.
    pub meaning: String,
}

fn figure(key: impl Into<String>, meaning: impl Into<String>) -> Figure {
    Figure {
        key: key.into(),
        meaning: meaning.into(),
    }
}

type Measure = Box<dyn Fn() -> Vec<u64> + Send + Sync>;

/// Measures one or more figures at once.
pub struct Job {
    /// What it runs, for progress lines (`sim-dfs cancel-mid-turn`).
    pub name: String,
    /// The figures it measures, in the order `run` returns them.
    pub figures: Vec<Figure>,
    measure: Measure,
}

impl Job {
    fn new(
        name: impl Into<String>,
        figures: Vec<Figure>,
        measure: impl Fn() -> Vec<u64> + Send + Sync + 'static,
    ) -> Job {
        Job {
            name: name.into(),
            figures,
            measure: Box::new(measure),
        }
    }

    /// Run it: each figure with its measured value.
    pub fn run(&self) -> Pins {
        check::quiet_panics();
        let values = (self.measure)();
        assert_eq!(
            values.len(),
            self.figures.len(),
            "job {} measured {} figures for {} keys",
            self.name,
            values.len(),
            self.figures.len()
        );
        self.figures
            .iter()
            .zip(values)
            .map(|(f, value)| {
                (
                    f.key.clone(),
                    Pin {
                        value,
                        meaning: f.meaning.clone(),
                    },
                )
            })
            .collect()
    }
}

fn registries() -> Job {
    Job::new(
        "registries",
        vec![
            figure("scenarios", "scenarios registered (`lifecycle list`)"),
            figure(
                "scenarios.coverage-gaps",
                "scenarios that declare a measured sim-dfs coverage gap (`Scenario::coverage_gap`)",
            ),
            figure("rules", "rules of SPEC §2"),
            figure(
                "faults",
                "switchable faults of SPEC §3 in the implementation",
            ),
            figure(
                "model-faults",
                "fault variants of the executable models (`lifecycle model`)",
            ),
        ],
        || {
            let gaps = scenarios::ALL.iter().filter(|s| s.coverage_gap.is_some());
            vec![
                scenarios::ALL.len() as u64,
                gaps.count() as u64,
                Rule::ALL.len() as u64,
                Fault::ALL.len() as u64,
                lifecycle_models::fault::modelled().count() as u64,
            ]
        },
    )
}

/// How many scenarios `check --tier pr` searches at each preemption
/// bound: one key per bound in use (known from the registry, no run).
fn pr_bounds() -> Job {
    let bound_key = |b: Option<u32>| b.map_or("unbounded".to_string(), |b| b.to_string());
    let bounds: std::collections::BTreeSet<Option<u32>> =
        scenarios::ALL.iter().map(|s| s.bounds.dfs).collect();
    let figures = bounds
        .iter()
        .map(|b| {
            figure(
                format!("scenarios.pr-bound.{}", bound_key(*b)),
                match b {
                    None => "scenarios sim-dfs exhausts unbounded in `check --tier pr`".into(),
                    Some(n) => format!(
                        "scenarios sim-dfs searches at preemption bound {n} in `check --tier pr`"
                    ),
                },
            )
        })
        .collect();
    Job::new("preemption bounds", figures, move || {
        bounds
            .iter()
            .map(|b| scenarios::ALL.iter().filter(|s| s.bounds.dfs == *b).count() as u64)
            .collect()
    })
}

fn clause_table() -> Job {
    let mut figures = vec![figure("clauses", "clauses of the rules of SPEC §2")];
    for f in Family::ALL {
        figures.push(figure(
            format!("clauses.{}", f.key()),
            format!("clauses of the {} rules", f.name()),
        ));
    }
    figures.extend([
        figure(
            "clauses.exercises.scenario-goals",
            "clause exercises that are a scenario goal (required by `check`)",
        ),
        figure(
            "clauses.exercises.conformance-ops",
            "clause exercises that are a conformance test operation",
        ),
        figure(
            "clauses.exercises.tests",
            "clause exercises that are an integration test",
        ),
    ]);
    Job::new("clauses", figures, || {
        let kinds = |f: fn(&Exercise) -> bool| {
            CLAUSES
                .iter()
                .flat_map(|c| c.exercises)
                .filter(|e| f(e))
                .count() as u64
        };
        let mut v = vec![CLAUSES.len() as u64];
        v.extend(clauses::counts(CLAUSES).into_iter().map(|(_, n)| n as u64));
        v.extend([
            kinds(|e| matches!(e, Exercise::Scenario { .. })),
            kinds(|e| matches!(e, Exercise::Conformance { .. })),
            kinds(|e| matches!(e, Exercise::Test { .. })),
        ]);
        v
    })
}

fn task_counts(scenario: &'static Scenario) -> Job {
    let name = scenario.name;
    Job::new(
        format!("tasks {name}"),
        vec![
            figure(
                format!("tasks.{name}.all"),
                format!("tasks of one {name} execution, main task and bystanders included (most over 4 seeds)"),
            ),
            figure(
                format!("tasks.{name}.without-bystanders"),
                format!("tasks of one {name} execution without bystanders"),
            ),
            figure(
                format!("tasks.{name}.loom"),
                format!("tasks of one {name} execution in loom's context (no bystanders, the shell's jobs on one driver, side callers joined): the threads loom needs"),
            ),
        ],
        move || {
            let t = tasks(scenario);
            vec![t.all as u64, t.without_bystanders as u64, t.loom as u64]
        },
    )
}

fn sim_dfs(scenario: &'static Scenario) -> Job {
    let name = scenario.name;
    let bound = scenario
        .bounds
        .dfs
        .map_or("unbounded".to_string(), |b| format!("preemption bound {b}"));
    Job::new(
        format!("sim-dfs {name}"),
        vec![
            figure(
                format!("sim-dfs.{name}.schedules"),
                format!("sim-dfs schedules of {name} in `check --tier pr` ({bound})"),
            ),
            figure(
                format!("sim-dfs.{name}.views"),
                format!("contract views sim-dfs reaches in {name} in `check --tier pr` ({bound})"),
            ),
        ],
        move || {
            let r = check::run(
                Checker::SimDfs,
                scenario,
                Faults::none(),
                &Budget::PR,
                false,
            );
            vec![r.executions, r.distinct_outcomes]
        },
    )
}

fn dpor(scenario: &'static Scenario) -> Job {
    let name = scenario.name;
    Job::new(
        format!("dpor {name}"),
        vec![figure(
            format!("dpor.{name}.schedules"),
            format!("schedules of {name}, unbounded, source-DPOR and sleep sets, no forced branching at the top"),
        )],
        move || {
            let opts = DfsOptions {
                shrink: false,
                ..DfsOptions::exhaustive(DPOR_CAP)
            };
            vec![explore_dfs(scenario, Faults::none(), &opts, false, &|_| {}).executions]
        },
    )
}

/// The class census of a counted scenario (`check::classes::COUNTED`):
/// the naive search's schedules and classes at its bound, and what the
/// `sim-dfs` row of `check --tier pr` ran for them.
fn class_census(scenario: &'static Scenario) -> Job {
    let name = scenario.name;
    let bound = classes::NAIVE_BOUND;
    Job::new(
        format!("classes {name}"),
        vec![
            figure(
                format!("classes.{name}.naive-schedules"),
                format!("schedules of {name} with at most {bound} preemption, unreduced (the class counter's naive search)"),
            ),
            figure(
                format!("classes.{name}.naive-classes"),
                format!("classes of {name}'s executions with at most {bound} preemption (`check::classes`)"),
            ),
            figure(
                format!("classes.{name}.sim-dfs-complete"),
                format!("complete executions of {name}'s sim-dfs search in `check --tier pr`"),
            ),
            figure(
                format!("classes.{name}.sim-dfs-classes"),
                format!("classes of {name}'s sim-dfs executions in `check --tier pr` (`check::classes`)"),
            ),
        ],
        move || {
            let census = |config| {
                classes::census(scenario, Faults::none(), config, classes::CAP)
                    .unwrap_or_else(|e| panic!("{e}"))
            };
            let naive = census(classes::naive(Some(bound)));
            let searched = census(sim_dfs::search_config(scenario, &Budget::PR));
            vec![
                naive.schedules(),
                naive.classes.len() as u64,
                searched.complete,
                searched.classes.len() as u64,
            ]
        },
    )
}

fn model(name: ModelId, given: Option<Vec<ModelRow>>) -> Job {
    let faults: Vec<lifecycle_models::Fault> = lifecycle_models::fault::modelled()
        .filter(|f| ModelId::of_fault(*f) == Some(name))
        .collect();
    let mut figures = vec![
        figure(
            format!("model.{name}.unique"),
            format!("unique states of the {name} model"),
        ),
        figure(
            format!("model.{name}.depth"),
            format!("depth of the {name} model's state space"),
        ),
        figure(
            format!("model.{name}.properties"),
            format!("properties of the {name} model"),
        ),
    ];
    let symmetric = name.symmetric();
    if symmetric {
        figures.push(figure(
            format!("model.{name}.symmetric"),
            format!("representatives of the {name} model's states under symmetry reduction (`unique` counts them without it)"),
        ));
    }
    for f in &faults {
        figures.push(figure(
            format!("model-fault.{f}.counterexample"),
            format!("actions of the shortest counterexample of {f} in the {name} model"),
        ));
        figures.push(figure(
            format!("model-fault.{f}.unique"),
            format!("unique states of the {name} model with {f}"),
        ));
        if symmetric {
            figures.push(figure(
                format!("model-fault.{f}.symmetric"),
                format!("representatives of the states of the {name} model with {f} under symmetry reduction"),
            ));
        }
    }
    let rows_of = move |rows: &[ModelRow]| {
        let row = |fault: Option<lifecycle_models::Fault>| {
            rows.iter()
                .find(|r| r.fault == fault.map(|f| f.to_string()))
                .unwrap_or_else(|| panic!("no row of the {name} model with {fault:?}"))
        };
        let clean = row(None);
        let mut v = vec![clean.unique, clean.depth, clean.properties];
        v.extend(clean.symmetric.filter(|_| symmetric));
        for f in &faults {
            let r = row(Some(*f));
            // Not caught: 0, which no counterexample has.
            v.push(r.counterexample.unwrap_or(0));
            v.push(r.unique);
            v.extend(r.symmetric.filter(|_| symmetric));
        }
        v
    };
    match given {
        Some(rows) => Job::new(
            format!("model {name} (from the model run)"),
            figures,
            move || rows_of(&rows),
        ),
        None => Job::new(format!("model {name}"), figures, move || {
            let rows: Vec<ModelRow> = models::run_models(&[name])
                .iter()
                .map(ModelRow::of)
                .collect();
            rows_of(&rows)
        }),
    }
}

/// The figures of one row of `lifecycle model` (a model or a fault
/// variant), measured here or read from a `lifecycle model --json` run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRow {
    /// The fault (`M7`), `None` for the clean model.
    pub fault: Option<String>,
    /// Distinct states.
    pub unique: u64,
    /// Depth of the state space.
    pub depth: u64,
    /// Properties checked.
    pub properties: u64,
    /// Representatives under symmetry reduction, where measured.
    pub symmetric: Option<u64>,
    /// Actions of the shortest counterexample of the fault's rules.
    pub counterexample: Option<u64>,
}

impl ModelRow {
    fn of(r: &models::ModelReport) -> ModelRow {
        ModelRow {
            fault: r.fault.map(|f| f.to_string()),
            unique: r.result.unique,
            depth: u64::from(r.result.max_depth),
            properties: r.result.properties.len() as u64,
            symmetric: r.result.symmetric,
            counterexample: r.caught_by.as_ref().map(|c| c.1 as u64),
        }
    }

    /// One line of `lifecycle model --json`: its model and row.
    pub fn parse(line: &str) -> Result<(ModelId, ModelRow), String> {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON line: {e}"))?;
        let result = &v["result"];
        let num =
            |x: &serde_json::Value, what: &str| x.as_u64().ok_or_else(|| format!("no {what}"));
        let model = result["model"].as_str().ok_or("no result.model")?;
        let base = model.split('+').next().unwrap_or(model);
        let name = ModelId::parse(base).ok_or_else(|| format!("no model named {base:?}"))?;
        let row = ModelRow {
            fault: v["fault"].as_str().map(str::to_string),
            unique: num(&result["unique"], "result.unique")?,
            depth: num(&result["max_depth"], "result.max_depth")?,
            properties: result["properties"]
                .as_array()
                .ok_or("no result.properties")?
                .len() as u64,
            symmetric: result["symmetric"].as_u64(),
            counterexample: v["caught_by"][1].as_u64(),
        };
        Ok((name, row))
    }
}

/// Every job, in the order `bench --pins` runs them (cheap ones first).
pub fn jobs() -> Vec<Job> {
    jobs_given(&Given::default())
}

/// Figures of this CI run's earlier stages, taken instead of measured
/// again.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// Each scenario's `sim-dfs` schedules and views, as a `check --tier
    /// pr --json` run reported them.
    pub sim_dfs: BTreeMap<String, [u64; 2]>,
    /// Each model's rows, as a `lifecycle model --json` run reported them
    /// (a model is taken only if all its rows are).
    pub models: BTreeMap<ModelId, Vec<ModelRow>>,
}

/// [`jobs`], except that what `given` holds is taken from there instead
/// of measured again.
pub fn jobs_given(given: &Given) -> Vec<Job> {
    let mut jobs = vec![registries(), pr_bounds(), clause_table()];
    jobs.extend(scenarios::ALL.iter().map(|s| task_counts(s)));
    jobs.extend(
        ModelId::ALL
            .into_iter()
            .map(|name| model(name, given.models.get(&name).cloned())),
    );
    jobs.extend(
        scenarios::ALL
            .iter()
            .filter(|s| s.bounds.dfs.is_none())
            .map(|s| dpor(s)),
    );
    jobs.extend(classes::COUNTED.into_iter().map(class_census));
    jobs.extend(
        scenarios::ALL
            .iter()
            .map(|s| match given.sim_dfs.get(s.name) {
                Some(&row) => {
                    let searched = sim_dfs(s);
                    Job::new(
                        format!("{} (from the check run)", searched.name),
                        searched.figures,
                        move || row.to_vec(),
                    )
                }
                None => sim_dfs(s),
            }),
    );
    jobs
}

/// Every key `bench --pins` measures, sorted, without measuring.
pub fn keys() -> Vec<String> {
    let mut keys: Vec<String> = jobs()
        .into_iter()
        .flat_map(|j| j.figures)
        .map(|f| f.key)
        .collect();
    keys.sort();
    keys
}

/// Run `jobs`, calling `progress` with each job's name before it runs.
pub fn measure(jobs: &[Job], progress: &dyn Fn(&str)) -> Pins {
    let mut pins = Pins::new();
    for job in jobs {
        progress(&job.name);
        pins.extend(job.run());
    }
    pins
}
