//! Runs every model and every fault variant; renders the table and JSON.
//!
//! This is what `lifecycle model [--json]` prints.

use crate::acp::AcpModel;
use crate::agent::AgentModel;
use crate::checker::{CheckResult, ModelChecker};
use crate::dispose::DisposeModel;
use crate::durability::DurabilityModel;
use crate::fault::{modelled, Fault};
use crate::shell::ShellModel;
use crate::ModelId;

/// One checked model: a clean model, or a fault variant.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModelReport {
    /// The fault switched on, if any.
    pub fault: Option<Fault>,
    /// The rules the fault must violate (empty for a clean model).
    pub must_violate: Vec<String>,
    /// The checker's result.
    pub result: CheckResult,
    /// For a clean model: every property holds. For a fault variant: a
    /// property citing one of its rules has a counterexample.
    pub ok: bool,
    /// For a fault variant: the shortest counterexample among the
    /// properties citing its rules, `(property, length)`.
    pub caught_by: Option<(String, usize)>,
}

/// Check `model` with an optional fault, on every core; a
/// [symmetric](ModelId::symmetric) model also under symmetry reduction.
pub fn check(model: ModelId, fault: Option<Fault>) -> CheckResult {
    let c = ModelChecker::default();
    match model {
        ModelId::Agent => c.check(AgentModel::new(fault)),
        ModelId::Dispose => c.check(DisposeModel::new(fault)),
        ModelId::Durability => c.check(DurabilityModel::new(fault)),
        ModelId::Shell => c.check(ShellModel::new(fault)),
        ModelId::Acp => c.check_symmetric(AcpModel::new(fault)),
    }
}

pub(crate) fn report(fault: Option<Fault>, result: CheckResult) -> ModelReport {
    let (ok, caught_by, must_violate) = match fault {
        None => (result.all_hold(), None, vec![]),
        Some(f) => {
            let rules = f.must_violate();
            let caught = result
                .properties
                .iter()
                .filter(|p| !p.holds && rules.contains(&p.rule))
                .filter_map(|p| p.counterexample.as_ref().map(|c| (p.name.clone(), c.len())))
                .min_by_key(|(_, len)| *len);
            (
                caught.is_some(),
                caught,
                rules.iter().map(|r| r.name().to_string()).collect(),
            )
        }
    };
    ModelReport {
        fault,
        must_violate,
        result,
        ok,
        caught_by,
    }
}

/// Check every clean model, then every fault variant (SPEC order).
pub fn run_all() -> Vec<ModelReport> {
    run_models(&[])
}

/// [`run_all`] restricted to the models named in `models` (all of them if
/// it is empty): those clean models, then their fault variants, in the
/// order of [`run_all`].
pub fn run_models(models: &[ModelId]) -> Vec<ModelReport> {
    let wanted = |m: &ModelId| models.is_empty() || models.contains(m);
    let mut jobs: Vec<(ModelId, Option<Fault>)> = ModelId::ALL
        .into_iter()
        .filter(wanted)
        .map(|m| (m, None))
        .collect();
    for f in modelled() {
        if let Some(model) = ModelId::of_fault(f).filter(wanted) {
            jobs.push((model, Some(f)));
        }
    }
    // One search per job, as many at once as the machine has cores; the
    // results keep the jobs' order.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..cores.min(jobs.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(model, fault)) = jobs.get(i) else {
                    break;
                };
                let r = report(fault, check(model, fault));
                done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// Whether every clean model holds and every fault variant was caught.
pub fn all_ok(reports: &[ModelReport]) -> bool {
    reports.iter().all(|r| r.ok)
}

/// The table: one row per model and fault variant.
pub fn render_table(reports: &[ModelReport]) -> String {
    let mut out = format!(
        "{:<12} {:>9} {:>8} {:>8} {:>5} {:>7} {:>6}  {}\n",
        "model", "states", "unique", "symmetry", "depth", "seconds", "result", "detail"
    );
    for r in reports {
        let res = &r.result;
        let detail = match (&r.fault, &r.caught_by) {
            (None, _) => {
                let held = res.properties.iter().filter(|p| p.holds).count();
                let failed: Vec<&str> = res
                    .properties
                    .iter()
                    .filter(|p| !p.holds)
                    .map(|p| p.name.as_str())
                    .collect();
                if failed.is_empty() {
                    format!("{held}/{} properties hold", res.properties.len())
                } else {
                    format!("FAILED: {}", failed.join("; "))
                }
            }
            (Some(_), Some((name, len))) => format!("counterexample of {len} actions: {name}"),
            (Some(f), None) => format!(
                "NOT CAUGHT: no counterexample for {}",
                lifecycle_spec::rules::join(f.must_violate(), "/")
            ),
        };
        out.push_str(&format!(
            "{:<12} {:>9} {:>8} {:>8} {:>5} {:>7.2} {:>6}  {}\n",
            res.model,
            res.states,
            res.unique,
            res.symmetric.map_or("-".to_string(), |n| n.to_string()),
            res.max_depth,
            res.seconds,
            if r.ok { "ok" } else { "FAIL" },
            detail
        ));
    }
    for r in reports.iter().filter(|r| !r.ok && r.fault.is_none()) {
        for p in r.result.properties.iter().filter(|p| !p.holds) {
            out.push_str(&format!("\n{}: {}", r.result.model, p.render()));
        }
    }
    out
}

/// The reports as JSON lines (for CI): one compact object per report, in
/// the table's row order, joined by newlines (no trailing newline), the
/// shape every other `--json` of the CLI prints.
pub fn to_json(reports: &[ModelReport]) -> String {
    let lines: Vec<String> = reports
        .iter()
        .map(|r| serde_json::to_string(r).expect("reports serialize"))
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::PropertyResult;

    fn row(model: &str, fault: Option<Fault>) -> ModelReport {
        let result = CheckResult {
            model: model.into(),
            states: 3,
            unique: 2,
            max_depth: 1,
            seconds: 0.0,
            symmetric: None,
            threads: 1,
            properties: vec![PropertyResult {
                name: "C1 a property\nover two lines".into(),
                rule: lifecycle_spec::Rule::C1,
                expectation: crate::checker::Expectation::Always,
                holds: true,
                counterexample: None,
            }],
        };
        report(fault, result)
    }

    #[test]
    fn to_json_is_one_object_per_row() {
        let reports = [row("agent", None), row("agent", Some(Fault::M3))];
        let json = to_json(&reports);
        assert!(!json.ends_with('\n'), "{json}");
        let lines: Vec<&str> = json.lines().collect();
        assert_eq!(lines.len(), reports.len(), "{json}");
        for (line, r) in lines.iter().zip(&reports) {
            let v: serde_json::Value = serde_json::from_str(line).expect(line);
            assert_eq!(v["result"]["model"], r.result.model, "{line}");
            assert_eq!(v["fault"], serde_json::to_value(r.fault).unwrap(), "{line}");
            for field in ["must_violate", "ok", "caught_by", "result"] {
                assert!(v.get(field).is_some(), "no `{field}` in {line}");
            }
        }
    }

    #[test]
    fn to_json_of_no_reports_is_empty() {
        assert_eq!(to_json(&[]), "");
    }
}
