//! The bench table and the targets.

use super::callgrind::{ceilings, Part, Split};
use super::{growth, optimal, Exhaustion, Kill, Results, Space, Target, Throughput};
use std::fmt::Write;

fn space(s: &Space) -> String {
    format!("{}{}", s.schedules, if s.exhausted { "" } else { " (cap)" })
}

/// Simulator random against shuttle random, executions per second, on
/// every scenario of the throughput table.
pub const SPEED_FLOOR: f64 = 6.0;

/// The targets: simulator random at least [`SPEED_FLOOR`] times shuttle
/// random on every scenario, and whether the profile leaves room for it (a
/// free executor would reach it); reduced DFS at most loom's schedules at
/// an equal bound where both finish; every fault found by the simulator in
/// a median under one second.
pub fn targets(t: &[Throughput], e: &[Exhaustion], k: &[Kill], p: &[Split]) -> Vec<Target> {
    let worst = t
        .iter()
        .map(|r| (r.ratio_sim_shuttle_random, r.scenario))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let speed = |floor: f64| match worst {
        Some((ratio, scenario)) => Target {
            target: format!(
                "sim random >= {floor:.0}x shuttle random executions/s, every scenario"
            ),
            met: ratio >= floor,
            detail: format!("lowest {ratio:.1}x ({scenario})"),
        },
        None => Target {
            target: format!("sim random >= {floor:.0}x shuttle random"),
            met: false,
            detail: "nothing measured".into(),
        },
    };
    let both: Vec<(&str, f64)> = e
        .iter()
        .filter_map(|x| x.ratio_reduced_loom.map(|r| (x.scenario, r)))
        .collect();
    let over: Vec<String> = both
        .iter()
        .filter(|(_, r)| *r > 1.0)
        .map(|(s, r)| format!("{s} {r:.2}x"))
        .collect();
    let dfs = Target {
        target: "reduced DFS schedules <= loom's at an equal bound, every scenario both exhaust"
            .into(),
        met: over.is_empty() && !both.is_empty(),
        detail: if over.is_empty() {
            format!(
                "{} scenarios compared; highest ratio {:.3}",
                both.len(),
                both.iter().map(|x| x.1).fold(0.0, f64::max)
            )
        } else {
            format!("above loom: {}", over.join(", "))
        },
    };
    let sim: Vec<&Kill> = k.iter().filter(|x| x.checker == "sim").collect();
    let slow: Vec<String> = sim
        .iter()
        .filter(|x| x.found == 0 || x.seconds.median.is_nan() || x.seconds.median >= 1.0)
        .map(|x| {
            if x.found == 0 {
                format!("{} not found", x.fault)
            } else {
                format!("{} {:.2}s", x.fault, x.seconds.median)
            }
        })
        .collect();
    let faults = Target {
        target: "every fault found by sim (portfolio) in a median under 1 s".into(),
        met: slow.is_empty() && !sim.is_empty(),
        detail: if slow.is_empty() {
            format!(
                "slowest median {:.3}s",
                sim.iter().map(|x| x.seconds.median).fold(0.0, f64::max)
            )
        } else {
            format!("over: {}", slow.join(", "))
        },
    };
    let room = ceilings(p);
    let ceiling = room
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(scenario, c)| Target {
            target: format!(
                "room for sim random >= {SPEED_FLOOR:.0}x shuttle random: shuttle's instructions per execution >= {SPEED_FLOOR:.0}x sim's scenario and oracle instructions, every profiled scenario"
            ),
            met: *c >= SPEED_FLOOR,
            detail: format!(
                "lowest ceiling {c:.1}x ({scenario}): a simulator whose executor cost nothing would run at most this many times shuttle random"
            ),
        });
    // A section that did not run sets no target.
    let mut out = Vec::new();
    if !t.is_empty() {
        out.push(speed(SPEED_FLOOR));
    }
    out.extend(ceiling);
    if !e.is_empty() {
        out.push(dfs);
    }
    if !k.is_empty() {
        out.push(faults);
    }
    out
}

/// The whole table.
pub fn table(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "machine: {}", r.machine);
    let _ = writeln!(
        s,
        "\n1. executions per second (same scenarios; loom: its exhaustive run at the PR bound)"
    );
    let _ = writeln!(
        s,
        "{:<30} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
        "scenario",
        "sim-rand",
        "sim-pct",
        "shut-rand",
        "shut-pct",
        "loom",
        "sim/shut",
        "pct/pct",
        "sim/loom"
    );
    for t in &r.throughput {
        let _ = writeln!(
            s,
            "{:<30} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>10} {:>8.1}x {:>8.1}x {:>9}",
            t.scenario,
            t.sim_random.per_second,
            t.sim_pct.per_second,
            t.shuttle_random.per_second,
            t.shuttle_pct.per_second,
            t.loom
                .as_ref()
                .map_or("-".into(), |l| format!("{:.0}", l.per_second)),
            t.ratio_sim_shuttle_random,
            t.ratio_sim_shuttle_pct,
            t.ratio_sim_loom.map_or("-".into(), |x| format!("{x:.1}x"))
        );
    }
    let _ = writeln!(
        s,
        "\n2. schedules to exhaust ((cap) = stopped at the cap; loom at its preemption bound)"
    );
    let _ = writeln!(
        s,
        "{:<30} {:>12} {:>14} {:>12} {:>12} {:>11}",
        "scenario", "dfs-reduced", "dfs-unreduced", "loom", "shuttle-dfs", "red./loom"
    );
    for e in &r.exhaustion {
        let _ = writeln!(
            s,
            "{:<30} {:>12} {:>14} {:>12} {:>12} {:>11}",
            e.scenario,
            space(&e.sim_dfs_reduced),
            space(&e.sim_dfs_unreduced),
            e.loom.as_ref().map_or("-".into(), space),
            space(&e.shuttle_dfs),
            e.ratio_reduced_loom
                .map_or("-".into(), |x| format!("{x:.3}"))
        );
    }
    let _ = writeln!(
        s,
        "\n3. faults: executions / seconds to the first violation of the fault's rule (median, max over seeds; found/tried)"
    );
    let _ = writeln!(
        s,
        "{:<5} {:<30} {:<15} {:>7} {:>18} {:>20}",
        "fault", "scenario", "checker", "found", "executions", "seconds"
    );
    for k in &r.faults {
        let _ = writeln!(
            s,
            "{:<5} {:<30} {:<15} {:>7} {:>18} {:>20}",
            k.fault.to_string(),
            k.scenario,
            k.checker,
            format!("{}/{}", k.found, k.tried),
            format!("{:.0} / {:.0}", k.executions.median, k.executions.max),
            format!("{:.4} / {:.4}", k.seconds.median, k.seconds.max)
        );
    }
    let _ = writeln!(
        s,
        "\n4. peak memory: this process {:.1} MiB, largest loom worker {:.1} MiB",
        r.memory.self_peak_mib, r.memory.children_peak_mib
    );
    profile_table(&mut s, r);
    growth_table(&mut s, &r.growth);
    optimal_table(&mut s, &r.optimal);
    super::models::table(&mut s, r.models.as_ref());
    let _ = writeln!(s, "\ntargets:");
    for t in &r.targets {
        let _ = writeln!(
            s,
            "  [{}] {}: {}",
            if t.met { "met" } else { "MISSED" },
            t.target,
            t.detail
        );
    }
    let _ = writeln!(s, "\nbench took {:.0} s", r.seconds);
    s
}

/// Section 5: instructions per execution by part, from callgrind.
fn profile_table(s: &mut String, r: &Results) {
    if r.profile.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n5. instructions per execution (callgrind; runs of n and 2n differenced; library code charged to its callers)"
    );
    let _ = writeln!(
        s,
        "{:<30} {:<15} {:>10} {:>10} {:>10} {:>10}",
        "scenario", "checker", "executor", "scenario", "oracles", "total"
    );
    for p in &r.profile {
        let part = |x: Part| p.per_execution.get(&x).copied().unwrap_or(0);
        let _ = writeln!(
            s,
            "{:<30} {:<15} {:>10} {:>10} {:>10} {:>10}",
            p.scenario,
            p.checker,
            part(Part::Executor),
            part(Part::Scenario),
            part(Part::Oracles),
            p.total()
        );
    }
    for (scenario, c) in ceilings(&r.profile) {
        let _ = writeln!(
            s,
            "ceiling {scenario}: shuttle-random's total over sim's scenario and oracles = {c:.1}x (sim with a free executor)"
        );
    }
}

/// Section 6: growth with the racers.
fn growth_table(s: &mut String, rows: &[growth::Row]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n6. growth: schedules (seconds) to exhaust, by racers; `stopped at N` = hit the cap;\n   \
         `x per racer`: fitted growth per added racer over the exhausted widths"
    );
    let _ = writeln!(
        s,
        "{:<22} {:<12} {:>28} {:>28} {:>28}",
        "scenario", "racers", "sim-dfs unbounded", "sim-dfs pb<=2", "loom pb<=2"
    );
    let fit = |g: Option<f64>| g.map_or("-".to_string(), |g| format!("x{g:.1} per racer"));
    let mut scenarios: Vec<&str> = rows.iter().map(|r| r.scenario).collect();
    scenarios.dedup();
    for scenario in scenarios {
        let mine: Vec<&growth::Row> = rows.iter().filter(|r| r.scenario == scenario).collect();
        for row in &mine {
            let _ = writeln!(
                s,
                "{:<22} {:<12} {:>28} {:>28} {:>28}",
                row.scenario,
                format!("{} {}", row.width, row.racers),
                growth::cell(&row.dfs_unbounded),
                growth::cell(&row.dfs_pb2),
                row.loom_pb2.as_ref().map_or("-".into(), growth::cell)
            );
        }
        let _ = writeln!(
            s,
            "{:<22} {:<12} {:>28} {:>28} {:>28}",
            scenario,
            "growth",
            fit(growth::fitted(&mine, |r| Some(&r.dfs_unbounded))),
            fit(growth::fitted(&mine, |r| Some(&r.dfs_pb2))),
            fit(growth::fitted(&mine, |r| r.loom_pb2.as_ref()))
        );
    }
}

/// Section 7: source sets against wakeup trees.
fn optimal_table(s: &mut String, rows: &[optimal::Row]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n7. sim-dfs unbounded, source sets against wakeup trees (optimal DPOR):\n   \
         schedules complete sleep-blocked views seconds; `(cap)` = stopped at the cap"
    );
    let _ = writeln!(
        s,
        "{:<30} {:>34} {:>34} {:>5}",
        "scenario", "source sets", "wakeup trees", "views"
    );
    for row in rows {
        let _ = writeln!(
            s,
            "{:<30} {:>34} {:>34} {:>5}",
            row.scenario,
            optimal::cell(&row.source),
            optimal::cell(&row.optimal),
            if row.same_views { "same" } else { "DIFF" }
        );
    }
}
