//! A picture of one simulator execution: a swimlane SVG, one lane per task,
//! one box per poll in schedule order, preemptions marked, racing accesses
//! joined, the violating step highlighted.
//!
//! Hand-written SVG 1.1 (no dependencies, no scripts): opens in any browser.

use lifecycle_sim::TraceEntry;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A race: poll `later` touched a resource that poll `earlier` (another
/// task's) touched last, and `later`'s task was ready at `earlier`, so the
/// two could have run in the other order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// Index in the trace of the earlier poll.
    pub earlier: usize,
    /// Index in the trace of the later poll.
    pub later: usize,
    /// The resource, in words.
    pub resource: String,
}

/// The races of a trace (see [`Race`]).
pub fn races(trace: &[TraceEntry]) -> Vec<Race> {
    let mut last: BTreeMap<u64, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, e) in trace.iter().enumerate() {
        for &r in &e.footprint {
            if let Some(&j) = last.get(&r) {
                let p = &trace[j];
                if p.task != e.task && p.ready_ids.binary_search(&e.task).is_ok() {
                    out.push(Race {
                        earlier: j,
                        later: i,
                        resource: lifecycle_sim::describe_resource(r),
                    });
                }
            }
            last.insert(r, i);
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Render `trace` as SVG. `labels` are per-poll notes (journal events
/// emitted during that poll), `highlight` the poll of the violating event.
pub fn render(
    title: &str,
    trace: &[TraceEntry],
    labels: &BTreeMap<usize, Vec<String>>,
    highlight: Option<usize>,
) -> String {
    let mut lanes: Vec<(usize, String)> = Vec::new();
    for e in trace {
        if !lanes.iter().any(|(t, _)| *t == e.task) {
            lanes.push((e.task, e.name.to_string()));
        }
    }
    lanes.sort();
    let lane_of = |task: usize| lanes.iter().position(|(t, _)| *t == task).unwrap_or(0);
    let (left, top, lane_h, col_w) = (170.0, 60.0, 46.0, 16.0);
    let width = left + col_w * trace.len() as f64 + 40.0;
    let height = top + lane_h * lanes.len() as f64 + 90.0;
    let x = |i: usize| left + col_w * i as f64;
    let y = |lane: usize| top + lane_h * lane as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="monospace" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="40" fill="#555">one box per poll, left to right in schedule order; red triangle = preemption; orange arc = racing accesses; red frame = violating step</text>"##
    );
    for (lane, (task, name)) in lanes.iter().enumerate() {
        let fill = if lane % 2 == 0 { "#f4f6fa" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r##"<rect x="0" y="{:.0}" width="{width:.0}" height="{lane_h:.0}" fill="{fill}"/><text x="8" y="{:.0}">task {task} {}</text>"##,
            y(lane),
            y(lane) + lane_h / 2.0 + 4.0,
            esc(name)
        );
    }
    for race in races(trace) {
        let (a, b) = (&trace[race.earlier], &trace[race.later]);
        let (x1, y1) = (
            x(race.earlier) + col_w / 2.0,
            y(lane_of(a.task)) + lane_h / 2.0,
        );
        let (x2, y2) = (
            x(race.later) + col_w / 2.0,
            y(lane_of(b.task)) + lane_h / 2.0,
        );
        let _ = writeln!(
            s,
            r##"<path d="M {x1:.1} {y1:.1} Q {:.1} {:.1} {x2:.1} {y2:.1}" stroke="#f39c12" stroke-width="1.2" fill="none" opacity="0.8"><title>race on {}: step {} and step {}</title></path>"##,
            (x1 + x2) / 2.0,
            (y1 + y2) / 2.0 - 14.0,
            esc(&race.resource),
            a.step,
            b.step
        );
    }
    for (i, e) in trace.iter().enumerate() {
        let lane = lane_of(e.task);
        let hot = highlight == Some(i);
        let note = labels.get(&i).map(|l| l.join("\n")).unwrap_or_default();
        let fill = if hot {
            "#e74c3c"
        } else if note.is_empty() {
            "#5b8def"
        } else {
            "#27ae60"
        };
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="2" fill="{fill}"{}><title>step {} t={}ms task {} `{}` ({} ready){}{}</title></rect>"##,
            x(i) + 1.0,
            y(lane) + 10.0,
            col_w - 2.0,
            lane_h - 20.0,
            if hot {
                r##" stroke="#900" stroke-width="3""##
            } else {
                ""
            },
            e.step,
            e.now_ms,
            e.task,
            esc(&e.name),
            e.ready,
            e.preempted
                .map(|p| format!("; preempts task {p}"))
                .unwrap_or_default(),
            if note.is_empty() {
                String::new()
            } else {
                format!("\n{}", esc(&note))
            }
        );
        if e.preempted.is_some() {
            let (cx, cy) = (x(i) + col_w / 2.0, y(lane) + 6.0);
            let _ = writeln!(
                s,
                r##"<path d="M {:.1} {:.1} L {:.1} {:.1} L {cx:.1} {:.1} Z" fill="#c0392b"/>"##,
                cx - 5.0,
                cy - 5.0,
                cx + 5.0,
                cy - 5.0,
                cy + 3.0
            );
        }
        if i % 10 == 0 {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.0}" fill="#777">{}</text>"##,
                x(i),
                top + lane_h * lanes.len() as f64 + 16.0,
                e.step
            );
        }
    }
    if let Some(i) = highlight {
        if let Some(e) = trace.get(i) {
            let note = labels
                .get(&i)
                .and_then(|l| l.first())
                .cloned()
                .unwrap_or_default();
            let _ = writeln!(
                s,
                r##"<text x="10" y="{:.0}" fill="#c0392b">violating step {} (task {} `{}`) {}</text>"##,
                top + lane_h * lanes.len() as f64 + 44.0,
                e.step,
                e.task,
                esc(&e.name),
                esc(&note)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn entry(step: u64, task: usize, ready: Vec<usize>, fp: Vec<u64>) -> TraceEntry {
        TraceEntry {
            step,
            now_ms: 0,
            task,
            name: Rc::from(format!("t{task}")),
            ready: ready.len(),
            chosen: 0,
            ready_ids: ready,
            preempted: None,
            footprint: fp,
        }
    }

    #[test]
    fn races_need_the_other_task_ready() {
        let trace = vec![
            entry(0, 0, vec![0, 1], vec![7]),
            entry(1, 1, vec![1], vec![7]),
            entry(2, 1, vec![1], vec![7]),
            entry(3, 2, vec![2], vec![7]),
        ];
        let r = races(&trace);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].earlier, r[0].later), (0, 1));
    }

    #[test]
    fn svg_is_well_formed_enough() {
        let trace = vec![
            entry(0, 0, vec![0, 1], vec![7]),
            entry(1, 1, vec![1], vec![7]),
        ];
        let svg = render("t <1>", &trace, &BTreeMap::new(), Some(1));
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;1&gt;"));
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 2);
    }
}
