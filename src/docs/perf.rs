//! The record's performance section, rendered from the JSON that
//! `lifecycle bench` writes (`bench.json`, never committed), naming the
//! bench's [`Run`]: the commit, the date, `nproc` and the command.
//!
//! The JSON is read through structs of its own that mirror the bench's
//! `Results`, field by field; the tests below serialize a `Results` and
//! read it back, so a renamed field fails them.

pub use crate::bench::Run;
use crate::bench::{growth, optimal};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

// The bench's JSON. A float the bench could not compute (NaN, infinite)
// is written as `null`: every float that can be one is an `Option`.

#[derive(Deserialize)]
struct BenchFile {
    run: Option<Run>,
    machine: String,
    throughput: Vec<Throughput>,
    exhaustion: Vec<Exhaustion>,
    faults: Vec<Kill>,
    memory: Memory,
    profile: Vec<Split>,
    growth: Vec<GrowthRow>,
    optimal: Vec<OptimalRow>,
    #[serde(default)]
    models: Option<crate::bench::models::Models>,
    targets: Vec<Target>,
    seconds: Option<f64>,
}

#[derive(Deserialize)]
struct Rate {
    per_second: Option<f64>,
}

#[derive(Deserialize)]
struct Throughput {
    scenario: String,
    sim_random: Rate,
    sim_pct: Rate,
    shuttle_random: Rate,
    shuttle_pct: Rate,
    loom: Option<Rate>,
    ratio_sim_shuttle_random: Option<f64>,
    ratio_sim_shuttle_pct: Option<f64>,
    ratio_sim_loom: Option<f64>,
}

#[derive(Deserialize)]
struct Space {
    schedules: u64,
    exhausted: bool,
    seconds: Option<f64>,
    bound: String,
}

impl Space {
    /// The bench's own `Space`, for its cell and fit functions.
    fn bench(&self) -> crate::bench::Space {
        crate::bench::Space {
            schedules: self.schedules,
            exhausted: self.exhausted,
            seconds: self.seconds.unwrap_or(f64::NAN),
            bound: self.bound.clone(),
        }
    }
}

#[derive(Deserialize)]
struct Exhaustion {
    scenario: String,
    sim_dfs_reduced: Space,
    sim_dfs_unreduced: Space,
    loom: Option<Space>,
    shuttle_dfs: Space,
    ratio_reduced_loom: Option<f64>,
}

#[derive(Deserialize)]
struct Stat {
    median: Option<f64>,
    max: Option<f64>,
}

#[derive(Deserialize)]
struct Kill {
    fault: String,
    checker: String,
    scenario: String,
    found: u64,
    tried: u64,
    executions: Stat,
    seconds: Stat,
}

#[derive(Deserialize)]
struct Memory {
    self_peak_mib: Option<f64>,
    children_peak_mib: Option<f64>,
}

#[derive(Deserialize)]
struct Split {
    checker: String,
    scenario: String,
    per_execution: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct GrowthRow {
    scenario: String,
    racers: String,
    width: usize,
    dfs_unbounded: Space,
    dfs_pb2: Space,
    loom_pb2: Option<Space>,
}

#[derive(Deserialize)]
struct Search {
    schedules: u64,
    complete: u64,
    blocked: u64,
    views: u64,
    exhausted: bool,
    seconds: Option<f64>,
}

impl Search {
    fn bench(&self) -> optimal::Search {
        optimal::Search {
            schedules: self.schedules,
            complete: self.complete,
            blocked: self.blocked,
            views: self.views,
            exhausted: self.exhausted,
            seconds: self.seconds.unwrap_or(f64::NAN),
        }
    }
}

#[derive(Deserialize)]
struct OptimalRow {
    scenario: String,
    source: Search,
    optimal: Search,
    same_views: bool,
}

#[derive(Deserialize)]
struct Target {
    target: String,
    met: bool,
    detail: String,
}

/// A float with `digits` decimals, `-` when the bench could not compute it.
fn num(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.digits$}"))
}

/// A ratio: `2.5x`.
fn times(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.1}x"))
}

fn space(s: &Space) -> String {
    let cap = if s.exhausted { "" } else { " (cap)" };
    format!("{}{cap} ({} s)", s.schedules, num(s.seconds, 2))
}

/// The performance section from the text of a bench output file at
/// `path`; an error (one line) when it cannot be parsed or does not name
/// its run.
pub fn render(json: &str, path: &Path) -> Result<String, String> {
    let b: BenchFile = serde_json::from_str(json).map_err(|e| {
        format!(
            "{}: not the output of `lifecycle bench`: {e}",
            path.display()
        )
    })?;
    let run = b.run.as_ref().ok_or_else(|| {
        format!(
            "{}: names no run (no `run` field: written by an older `lifecycle bench`); run the bench again",
            path.display()
        )
    })?;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "## Performance\n");
    let _ = writeln!(
        w,
        "Every table below comes from one run of `lifecycle {}` {}, on {}; the bench took {} s. Timings differ from run to run and with the machine's load; `docs --check` does not compare them. What each table measures: [`guide.md`](guide.md#performance).\n",
        run.command,
        run.named(),
        b.machine,
        num(b.seconds, 0)
    );
    throughput(w, &b.throughput);
    exhaustion(w, &b.exhaustion);
    faults(w, &b.faults);
    let _ = writeln!(
        w,
        "### Peak memory\n\n| process | peak RSS (MiB) |\n| --- | ---: |\n| the bench | {} |\n| largest loom worker | {} |\n",
        num(b.memory.self_peak_mib, 1),
        num(b.memory.children_peak_mib, 1)
    );
    profile(w, &b.profile);
    growth_table(w, &b.growth);
    optimal_table(w, &b.optimal);
    crate::bench::models::markdown(w, b.models.as_ref());
    if !b.targets.is_empty() {
        let _ = writeln!(
            w,
            "### Targets\n\n| target | met | detail |\n| --- | --- | --- |"
        );
        for t in &b.targets {
            let _ = writeln!(
                w,
                "| {} | {} | {} |",
                t.target,
                if t.met { "met" } else { "**missed**" },
                t.detail
            );
        }
        let _ = writeln!(w);
    }
    Ok(s)
}

fn throughput(w: &mut String, rows: &[Throughput]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### Executions per second\n\nThe same scenarios under each checker; loom: its exhaustive run at the PR bound.\n"
    );
    let _ = writeln!(
        w,
        "| scenario | sim random | sim PCT | shuttle random | shuttle PCT | loom | sim / shuttle random | sim / shuttle PCT | sim / loom |"
    );
    let _ = writeln!(
        w,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for t in rows {
        let _ = writeln!(
            w,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.scenario,
            num(t.sim_random.per_second, 0),
            num(t.sim_pct.per_second, 0),
            num(t.shuttle_random.per_second, 0),
            num(t.shuttle_pct.per_second, 0),
            t.loom.as_ref().map_or("-".into(), |l| num(l.per_second, 0)),
            times(t.ratio_sim_shuttle_random),
            times(t.ratio_sim_shuttle_pct),
            times(t.ratio_sim_loom)
        );
    }
    let _ = writeln!(w);
}

fn exhaustion(w: &mut String, rows: &[Exhaustion]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### Schedules to exhaust\n\nSchedules (seconds); `(cap)`: stopped at the cap. The sim-dfs searches run at loom's bound where loom ran, else at the scenario's own.\n"
    );
    let _ = writeln!(
        w,
        "| scenario | sim-dfs reduced | sim-dfs unreduced | loom | shuttle-dfs | reduced / loom |"
    );
    let _ = writeln!(w, "| --- | ---: | ---: | ---: | ---: | ---: |");
    for e in rows {
        let _ = writeln!(
            w,
            "| `{}` | {} | {} | {} | {} | {} |",
            e.scenario,
            space(&e.sim_dfs_reduced),
            space(&e.sim_dfs_unreduced),
            e.loom.as_ref().map_or("-".into(), space),
            space(&e.shuttle_dfs),
            num(e.ratio_reduced_loom, 3)
        );
    }
    let _ = writeln!(w);
}

fn faults(w: &mut String, rows: &[Kill]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### Faults\n\nExecutions and seconds to the first violation of the fault's rule: median / max over the seeds that found it (found / tried).\n"
    );
    let _ = writeln!(
        w,
        "| fault | scenario | checker | found | executions | seconds |"
    );
    let _ = writeln!(w, "| --- | --- | --- | ---: | ---: | ---: |");
    for k in rows {
        let _ = writeln!(
            w,
            "| {} | `{}` | {} | {}/{} | {} / {} | {} / {} |",
            k.fault,
            k.scenario,
            k.checker,
            k.found,
            k.tried,
            num(k.executions.median, 0),
            num(k.executions.max, 0),
            num(k.seconds.median, 4),
            num(k.seconds.max, 4)
        );
    }
    let _ = writeln!(w);
}

fn profile(w: &mut String, rows: &[Split]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### Instructions per execution\n\nFrom callgrind: runs of n and 2n executions differenced; a library function's instructions charged to its callers.\n"
    );
    let _ = writeln!(
        w,
        "| scenario | checker | executor | scenario code | oracles | total |"
    );
    let _ = writeln!(w, "| --- | --- | ---: | ---: | ---: | ---: |");
    for p in rows {
        let part = |x: &str| p.per_execution.get(x).copied().unwrap_or(0);
        let total: u64 = p
            .per_execution
            .iter()
            .filter(|(k, _)| k.as_str() != "Harness")
            .map(|(_, v)| v)
            .sum();
        let _ = writeln!(
            w,
            "| `{}` | {} | {} | {} | {} | {total} |",
            p.scenario,
            p.checker,
            part("Executor"),
            part("Scenario"),
            part("Oracles")
        );
    }
    let _ = writeln!(w);
}

fn growth_table(w: &mut String, rows: &[GrowthRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### Growth with the racers\n\nSchedules (seconds) to exhaust; `stopped at N`: the cap. `growth`: the fitted growth per added racer over the widths a column exhausted.\n"
    );
    let _ = writeln!(
        w,
        "| scenario | racers | sim-dfs unbounded | sim-dfs pb<=2 | loom pb<=2 |"
    );
    let _ = writeln!(w, "| --- | --- | ---: | ---: | ---: |");
    let bench: Vec<growth::Row> = rows
        .iter()
        .map(|r| growth::Row {
            scenario: "",
            racers: "",
            width: r.width,
            dfs_unbounded: r.dfs_unbounded.bench(),
            dfs_pb2: r.dfs_pb2.bench(),
            loom_pb2: r.loom_pb2.as_ref().map(Space::bench),
        })
        .collect();
    let fit = |g: Option<f64>| g.map_or("-".to_string(), |g| format!("x{g:.1} per racer"));
    let mut scenarios: Vec<&str> = rows.iter().map(|r| r.scenario.as_str()).collect();
    scenarios.dedup();
    for scenario in scenarios {
        let mine: Vec<&growth::Row> = rows
            .iter()
            .zip(&bench)
            .filter(|(r, _)| r.scenario == scenario)
            .map(|(_, b)| b)
            .collect();
        for (r, b) in rows
            .iter()
            .zip(&bench)
            .filter(|(r, _)| r.scenario == scenario)
        {
            let _ = writeln!(
                w,
                "| `{scenario}` | {} {} | {} | {} | {} |",
                r.width,
                r.racers,
                growth::cell(&b.dfs_unbounded),
                growth::cell(&b.dfs_pb2),
                b.loom_pb2.as_ref().map_or("-".into(), growth::cell)
            );
        }
        let _ = writeln!(
            w,
            "| `{scenario}` | growth | {} | {} | {} |",
            fit(growth::fitted(&mine, |r| Some(&r.dfs_unbounded))),
            fit(growth::fitted(&mine, |r| Some(&r.dfs_pb2))),
            fit(growth::fitted(&mine, |r| r.loom_pb2.as_ref()))
        );
    }
    let _ = writeln!(w);
}

fn optimal_table(w: &mut String, rows: &[OptimalRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "### Source sets against wakeup trees\n\nsim-dfs unbounded; each cell: schedules, complete, sleep-blocked, views, seconds; `(cap)`: stopped at the cap.\n"
    );
    let _ = writeln!(w, "| scenario | source sets | wakeup trees | views |");
    let _ = writeln!(w, "| --- | ---: | ---: | --- |");
    for r in rows {
        let _ = writeln!(
            w,
            "| `{}` | {} | {} | {} |",
            r.scenario,
            optimal::cell(&r.source.bench()),
            optimal::cell(&r.optimal.bench()),
            if r.same_views { "same" } else { "**differ**" }
        );
    }
    let _ = writeln!(w);
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::bench::{self, callgrind, Results};
    use crate::faults::Fault;

    fn space(schedules: u64) -> bench::Space {
        bench::Space {
            schedules,
            exhausted: true,
            seconds: 0.5,
            bound: "unbounded".into(),
        }
    }

    fn search() -> optimal::Search {
        optimal::Search {
            schedules: 10,
            complete: 8,
            blocked: 2,
            views: 3,
            exhausted: true,
            seconds: 0.1,
        }
    }

    /// A bench output with a row in every section, as `bench` writes it.
    pub fn sample_json() -> String {
        let rate = bench::Rate::new(4_000, 0.25);
        let results = Results {
            run: Run {
                commit: "abc1234".into(),
                dirty: false,
                date: crate::bench::run::utc(0),
                nproc: 2,
                command: "bench".into(),
            },
            machine: "a CPU, 2 cores, linux".into(),
            throughput: vec![bench::Throughput {
                scenario: "cancel-before-claim",
                sim_random: rate.clone(),
                sim_pct: rate.clone(),
                shuttle_random: rate.clone(),
                shuttle_pct: rate.clone(),
                loom: None,
                ratio_sim_shuttle_random: 1.0,
                ratio_sim_shuttle_pct: f64::NAN,
                ratio_sim_loom: None,
            }],
            exhaustion: vec![bench::Exhaustion {
                scenario: "cancel-before-claim",
                sim_dfs_reduced: space(10),
                sim_dfs_unreduced: space(100),
                loom: Some(space(20)),
                shuttle_dfs: space(5),
                ratio_reduced_loom: Some(0.5),
            }],
            faults: vec![bench::Kill {
                fault: Fault::ALL[0],
                checker: "sim",
                scenario: "cancel-before-claim",
                found: 0,
                tried: 5,
                executions: bench::stat(Vec::new()),
                seconds: bench::stat(Vec::new()),
            }],
            memory: bench::Memory {
                self_peak_mib: 10.0,
                children_peak_mib: f64::NAN,
            },
            profile: vec![callgrind::Split {
                checker: "sim".into(),
                scenario: "cancel-before-claim".into(),
                executions: 500,
                per_execution: [
                    (callgrind::Part::Executor, 7),
                    (callgrind::Part::Harness, 1),
                ]
                .into_iter()
                .collect(),
            }],
            growth: (2..=3)
                .map(|width| growth::Row {
                    scenario: "same-id-create-race",
                    racers: "creators",
                    width,
                    dfs_unbounded: space(10u64.pow(width as u32)),
                    dfs_pb2: space(7),
                    loom_pb2: None,
                })
                .collect(),
            optimal: vec![optimal::Row {
                scenario: "dispose-mid-turn",
                source: search(),
                optimal: search(),
                same_views: true,
            }],
            models: Some(bench::models::Models {
                cores: 2,
                wall_seconds: 1.5,
                rows: vec![bench::models::Row {
                    model: "acp+M7".into(),
                    unique: 24_820,
                    symmetric: Some(12_673),
                    seconds: 0.25,
                }],
            }),
            targets: vec![bench::Target {
                target: "a target".into(),
                met: false,
                detail: "a detail".into(),
            }],
            seconds: 12.0,
        };
        serde_json::to_string_pretty(&results).expect("JSON")
    }

    #[test]
    fn every_section_of_a_bench_output_is_rendered() {
        let text = render(&sample_json(), Path::new("bench.json")).expect("rendered");
        for part in [
            "`lifecycle bench` at commit `abc1234`, started 1970-01-01 00:00 UTC, `nproc` 2",
            "| `cancel-before-claim` | 16000 | 16000 | 16000 | 16000 | - | 1.0x | - | - |",
            "| `cancel-before-claim` | 10 (0.50 s) | 100 (0.50 s) | 20 (0.50 s) | 5 (0.50 s) | 0.500 |",
            "| M1 | `cancel-before-claim` | sim | 0/5 | - / - | - / - |",
            "| the bench | 10.0 |\n| largest loom worker | - |",
            "| `cancel-before-claim` | sim | 7 | 0 | 0 | 7 |",
            "| `same-id-create-race` | growth | x10.0 per racer | x1.0 per racer | - |",
            "| `dispose-mid-turn` | 10 8 2 3 0.1s | 10 8 2 3 0.1s | same |",
            "checked concurrently on 2 cores, took 1.50 s of wall time",
            "| acp+M7 | 24820 | 12673 | 0.25 |",
            "| a target | **missed** | a detail |",
        ] {
            assert!(text.contains(part), "{part:?} missing from\n{text}");
        }
    }

    #[test]
    fn an_output_without_its_run_is_refused() {
        let mut v: serde_json::Value = serde_json::from_str(&sample_json()).expect("JSON");
        v.as_object_mut().expect("an object").remove("run");
        let e = render(&v.to_string(), Path::new("b.json")).expect_err("refused");
        assert!(e.starts_with("b.json: names no run"), "{e}");
        assert!(render("{}", Path::new("b.json")).is_err());
    }
}
