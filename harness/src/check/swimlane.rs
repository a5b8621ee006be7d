//! A picture of one simulator execution: a swimlane SVG, one lane per task,
//! one box per poll in schedule order, preemptions marked, racing accesses
//! joined, the violating step highlighted (with why it is the one), and a
//! legend for every colour and mark; the view box fits all of it.
//!
//! Hand-written SVG 1.1 (no dependencies, no scripts): opens in any browser.
//!
//! Layer 0 (shared): imports nothing from `check`.

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

/// `s` escaped for XML and HTML text and attribute values.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Width of one character of the picture's monospace text (11 px; a
/// monospace glyph is at most 0.6 em wide), for laying text out inside the
/// view box.
pub const CHAR_W: f64 = 6.6;
/// Width of one character of the 14 px bold title.
const TITLE_CHAR_W: f64 = 8.4;
/// Longest note drawn in the footer; the whole note is in the box's
/// tooltip.
const NOTE_MAX: usize = 160;

/// The poll to frame, and why it is the one.
#[derive(Clone, Debug)]
pub struct Highlight {
    /// Index in the trace.
    pub index: usize,
    /// How the poll was found (e.g. "C7: agent-1 #8 is the first record
    /// after which the oracle reports it").
    pub why: String,
}

/// What each colour and mark means: (swatch, text). Every colour the
/// picture uses is here.
const LEGEND: [(&str, &str); 6] = [
    (
        r##"<rect x="0" y="-9" width="14" height="12" rx="2" fill="#5b8def"/>"##,
        "blue box: a poll that recorded no journal, world or check event",
    ),
    (
        r##"<rect x="0" y="-9" width="14" height="12" rx="2" fill="#27ae60"/>"##,
        "green box: a poll that recorded events (hover a box for them)",
    ),
    (
        r##"<rect x="0" y="-9" width="14" height="12" rx="2" fill="#e74c3c" stroke="#900" stroke-width="2"/>"##,
        "red framed box: the violating step, where the oracle first failed",
    ),
    (
        r##"<path d="M 2 -9 L 12 -9 L 7 -1 Z" fill="#c0392b"/>"##,
        "red triangle: this poll preempted another ready task",
    ),
    (
        r##"<path d="M 0 0 Q 7 -12 14 0" stroke="#f39c12" stroke-width="1.5" fill="none"/>"##,
        "orange arc: racing accesses (two tasks touched one object and could have run in the other order)",
    ),
    (
        r##"<rect x="0" y="-9" width="14" height="12" fill="#f4f6fa" stroke="#ccc"/>"##,
        "grey and white bands: one lane per task, shaded alternately",
    ),
];

/// `s` cut to `max` characters, with `...` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

/// Render `trace` as SVG. `labels` are per-poll notes (journal, world and
/// check events recorded during that poll), `highlight` the poll where the
/// violation was first seen. Every text (title, lanes, footer, legend) lies
/// inside the view box, which grows to fit it.
pub fn render(
    title: &str,
    trace: &[TraceEntry],
    labels: &BTreeMap<usize, Vec<String>>,
    highlight: Option<&Highlight>,
) -> String {
    draw(title, trace, labels, highlight, false)
}

/// [`render`], with every poll box marked for a page's script: class
/// `poll` and `data-step="N"`, N its index in the trace (the HTML replay
/// page, `check::html`, selects a step when its box is clicked).
pub fn render_pickable(
    title: &str,
    trace: &[TraceEntry],
    labels: &BTreeMap<usize, Vec<String>>,
    highlight: Option<&Highlight>,
) -> String {
    draw(title, trace, labels, highlight, true)
}

fn draw(
    title: &str,
    trace: &[TraceEntry],
    labels: &BTreeMap<usize, Vec<String>>,
    highlight: Option<&Highlight>,
    pickable: bool,
) -> String {
    let mut lanes: Vec<(usize, String)> = Vec::new();
    for e in trace {
        if !lanes.iter().any(|(t, _)| *t == e.task) {
            lanes.push((e.task, e.name.to_string()));
        }
    }
    lanes.sort();
    let lane_of = |task: usize| lanes.iter().position(|(t, _)| *t == task).unwrap_or(0);
    let lane_text = |task: usize, name: &str| format!("task {task} {name}");
    let widest_lane = lanes
        .iter()
        .map(|(t, n)| lane_text(*t, n).chars().count())
        .max()
        .unwrap_or(0);
    let left = (16.0 + CHAR_W * widest_lane as f64).max(170.0);
    let (top, lane_h, col_w) = (60.0, 46.0, 16.0);
    let lanes_bottom = top + lane_h * lanes.len() as f64;
    let subtitle = "one box per poll, left to right in schedule order; the numbers below are steps";
    // The footer: the violating step, why it is the one, its first note.
    let mut footer: Vec<String> = Vec::new();
    if let Some(h) = highlight {
        if let Some(e) = trace.get(h.index) {
            footer.push(format!(
                "violating step {} (task {} `{}`, t={}ms)",
                e.step, e.task, e.name, e.now_ms
            ));
            footer.push(cut(&h.why, NOTE_MAX));
            if let Some(note) = labels.get(&h.index).and_then(|l| l.first()) {
                footer.push(cut(note, NOTE_MAX));
            }
        }
    }
    let footer_top = lanes_bottom + 40.0;
    let legend_top = footer_top + 16.0 * footer.len() as f64 + 12.0;
    let text_w = |chars: usize, at: f64| at + CHAR_W * chars as f64 + 10.0;
    let width = [
        left + col_w * trace.len() as f64 + 40.0,
        10.0 + TITLE_CHAR_W * title.chars().count() as f64 + 10.0,
        text_w(subtitle.chars().count(), 10.0),
    ]
    .into_iter()
    .chain(footer.iter().map(|l| text_w(l.chars().count(), 10.0)))
    .chain(LEGEND.iter().map(|(_, t)| text_w(t.chars().count(), 32.0)))
    .fold(0.0, f64::max);
    let height = legend_top + 18.0 * LEGEND.len() as f64 + 10.0;
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
    let _ = writeln!(s, r##"<text x="10" y="40" fill="#555">{subtitle}</text>"##);
    for (lane, (task, name)) in lanes.iter().enumerate() {
        let fill = if lane % 2 == 0 { "#f4f6fa" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r##"<rect x="0" y="{:.0}" width="{width:.0}" height="{lane_h:.0}" fill="{fill}"/><text x="8" y="{:.0}">{}</text>"##,
            y(lane),
            y(lane) + lane_h / 2.0 + 4.0,
            esc(&lane_text(*task, name))
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
        let hot = highlight.is_some_and(|h| h.index == i);
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
            r##"<rect{} x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="2" fill="{fill}"{}><title>step {} t={}ms task {} `{}` ({} ready){}{}</title></rect>"##,
            if pickable {
                format!(r#" class="poll" data-step="{i}""#)
            } else {
                String::new()
            },
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
                lanes_bottom + 16.0,
                e.step
            );
        }
    }
    for (k, line) in footer.iter().enumerate() {
        let _ = writeln!(
            s,
            r##"<text x="10" y="{:.0}" fill="#c0392b">{}</text>"##,
            footer_top + 16.0 * k as f64,
            esc(line)
        );
    }
    for (k, (swatch, text)) in LEGEND.iter().enumerate() {
        let row = legend_top + 18.0 * k as f64;
        let _ = writeln!(
            s,
            r##"<g transform="translate(10 {row:.0})">{swatch}</g><text x="32" y="{row:.0}">{}</text>"##,
            esc(text)
        );
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
            accesses: vec![],
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
        let h = Highlight {
            index: 1,
            why: "C1: a <reason>".into(),
        };
        let svg = render("t <1>", &trace, &BTreeMap::new(), Some(&h));
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(svg.contains("C1: a &lt;reason&gt;"));
        // Background, 2 lanes, 2 polls, and the legend's 4 boxes.
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 2 + 4);
        assert!(!svg.contains("data-step"));
        let page = render_pickable("t <1>", &trace, &BTreeMap::new(), Some(&h));
        assert_eq!(page.matches(r#"<rect class="poll" data-step="#).count(), 2);
        assert!(page.contains(r#"data-step="1""#));
        assert_eq!(
            page.replace(r#" class="poll" data-step="0""#, "")
                .replace(r#" class="poll" data-step="1""#, ""),
            svg
        );
    }
}
