//! One failure replay as a self-contained HTML page (`replay LINE --html
//! FILE`): inline CSS and script, no external URL, so it opens offline.
//!
//! The page shows:
//! - the title (scenario, fault, rule violated) and the checker;
//! - `#violation`: every violation (rule and message) and, where the
//!   replay has a trace, the violating step and why it is the one;
//! - for a line with a per-poll trace (sim, sim-dfs):
//!   - the swimlane ([`swimlane::render_pickable`]), inline as SVG, each
//!     poll box carrying `data-step="N"` (its index in the trace);
//!   - `#slider`, a range over the trace; moving it or clicking a poll
//!     box selects that step;
//!   - `#step-detail`, the selected step: its trace entry (step, task,
//!     name, virtual time, ready set, preemption), its footprint (each
//!     resource in words), its racing accesses, the journal records,
//!     world events and failed checks up to it (those of the step
//!     itself marked), and at the violating step the rule that fails and
//!     why;
//! - for a line without one (loom, shuttle, tokio): the journals, world
//!   events and checks the replay does have, in the order it gives them;
//! - `#missing`: in plain words, what this kind of replay does not record;
//! - `#replay-line`, the command that replays the failure, and `#copy`,
//!   a button that copies it (the clipboard API, else a selected textarea).
//!
//! The per-step data is one JSON document in `<script
//! type="application/json" id="steps">` (`</` written `<\/`), read by a
//! small inline script that fills `#step-detail`.
//!
//! Pure: data in, a `String` out. Layer 0 (shared): imports nothing from
//! `check` but [`swimlane`].

use super::swimlane::{self, esc, Highlight};
use lifecycle_sim::TraceEntry;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A journal record, world event or failed check the replay saw.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// Index in the trace of the poll that emitted it; `None` when the
    /// replay does not say (no trace, or emitted outside any poll).
    pub index: Option<usize>,
    /// `journal`, `world` or `check`.
    pub kind: &'static str,
    /// A journal record's agent, a failed check's rule.
    pub who: Option<String>,
    /// The record, event or check message.
    pub text: String,
}

/// A violation the replay reported.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    /// The rule ID (`C7`, `progress`).
    pub rule: String,
    /// What the oracle said.
    pub message: String,
}

/// The poll where the oracle first failed.
#[derive(Clone, Debug, Serialize)]
pub struct Anchor {
    /// Index in the trace.
    pub index: usize,
    /// The rule that fails there.
    pub rule: String,
    /// How the poll was found.
    pub why: String,
}

/// Everything the page shows.
#[derive(Clone, Debug)]
pub struct ReplayPage<'a> {
    /// The heading (scenario, fault, rule violated).
    pub title: String,
    /// The checker of the line (`sim`, `loom`, ...).
    pub checker: String,
    /// The command that replays the failure, as the copy button copies it.
    pub command: String,
    /// The simulator's trace; empty for lines that record none.
    pub trace: &'a [TraceEntry],
    /// Per poll, the notes of its swimlane box (see [`swimlane::render`]).
    pub labels: &'a BTreeMap<usize, Vec<String>>,
    /// The violating step, if the trace has one.
    pub anchor: Option<Anchor>,
    /// Every violation.
    pub violations: Vec<Violation>,
    /// Journal records, world events and failed checks, in order.
    pub events: Vec<Event>,
    /// Lines of plain words: what this replay does not record.
    pub missing: Vec<String>,
    /// Other lines about the run (outcome, plan followed or diverged).
    pub notes: Vec<String>,
}

/// One poll, as the page's script reads it.
#[derive(Serialize)]
struct Step<'a> {
    step: u64,
    t_ms: u64,
    task: usize,
    name: &'a str,
    ready: &'a [usize],
    preempted: Option<usize>,
    footprint: Vec<String>,
    races: Vec<String>,
}

/// The page's JSON document.
#[derive(Serialize)]
struct Data<'a> {
    steps: Vec<Step<'a>>,
    events: &'a [Event],
    anchor: Option<&'a Anchor>,
    violations: &'a [Violation],
}

/// `json` safe inside a `<script>` element: no `</` (so no `</script>`)
/// and no `<!--`.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/").replace("<!--", "<\\u0021--")
}

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.3em; }
h2 { font-size: 1.1em; margin-top: 1.2em; }
pre, code, .mono { font-family: monospace; }
#violation { border-left: 4px solid #c0392b; background: #fdecea; padding: .5em 1em; }
#missing { border-left: 4px solid #f39c12; background: #fff6e5; padding: .5em 1em; }
#lane { overflow-x: auto; border: 1px solid #ddd; }
rect.poll { cursor: pointer; }
rect.poll.selected { stroke: #000; stroke-width: 3; }
#slider { width: 100%; }
#step-detail { border: 1px solid #ccc; padding: .5em 1em; }
#step-detail table { border-collapse: collapse; }
#step-detail td, #step-detail th { text-align: left; padding: 1px 8px 1px 0; vertical-align: top; }
tr.now { background: #e8f4ea; font-weight: bold; }
.fails { color: #c0392b; font-weight: bold; }
#replay-line { white-space: pre-wrap; word-break: break-all; background: #f4f6fa; padding: .5em; }
"#;

const SCRIPT: &str = r#"
(function () {
  var data = JSON.parse(document.getElementById('steps').textContent);
  var slider = document.getElementById('slider');
  var detail = document.getElementById('step-detail');
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function row(table, cells, cls) {
    var tr = el('tr', null, cls);
    cells.forEach(function (c) { tr.appendChild(el('td', c)); });
    table.appendChild(tr);
  }
  function list(title, items) {
    detail.appendChild(el('h3', title));
    if (items.length === 0) { detail.appendChild(el('p', 'none')); return; }
    var ul = el('ul');
    items.forEach(function (t) { ul.appendChild(el('li', t, 'mono')); });
    detail.appendChild(ul);
  }
  function select(i) {
    var n = data.steps.length;
    if (!slider || n === 0) return;
    i = Math.max(0, Math.min(n - 1, Math.floor(Number(i)) || 0));
    slider.value = String(i);
    var s = data.steps[i];
    detail.textContent = '';
    detail.setAttribute('data-selected', String(i));
    detail.appendChild(el('h2', 'step ' + s.step + ' (poll ' + (i + 1) + ' of ' + n + ')'));
    var t = el('table');
    row(t, ['task', s.task + ' `' + s.name + '`']);
    row(t, ['virtual time', s.t_ms + ' ms']);
    row(t, ['ready set', s.ready.length + ' ready: tasks ' + s.ready.join(', ')]);
    row(t, ['preemption', s.preempted === null ? 'none' : 'preempts task ' + s.preempted + ' (it was ready and ran just before)']);
    detail.appendChild(t);
    list('footprint (resources this poll touched)', s.footprint);
    list('racing accesses', s.races);
    var a = data.anchor;
    if (a && a.index === i) {
      var v = el('div', null, 'fails');
      v.id = 'step-violation';
      v.appendChild(el('p', 'violating step: ' + a.rule + ' fails here: ' + a.why));
      data.violations.forEach(function (x) {
        if (x.rule === a.rule) v.appendChild(el('p', a.rule + ': ' + x.message));
      });
      detail.appendChild(v);
    } else if (a) {
      detail.appendChild(el('p', i < a.index
        ? 'before the violating step (step ' + data.steps[a.index].step + ')'
        : 'after the violating step (step ' + data.steps[a.index].step + ')'));
    }
    detail.appendChild(el('h3', 'journal records, world events and checks up to this step (this step\'s in bold)'));
    var ev = el('table');
    var shown = 0;
    data.events.forEach(function (e) {
      if (e.index === null || e.index > i) return;
      shown++;
      row(ev, ['step ' + data.steps[e.index].step, e.kind, e.who || '', e.text], e.index === i ? 'now' : '');
    });
    if (shown === 0) detail.appendChild(el('p', 'none yet'));
    else detail.appendChild(ev);
    document.querySelectorAll('[data-step]').forEach(function (b) {
      if (b.getAttribute('data-step') === String(i)) b.classList.add('selected');
      else b.classList.remove('selected');
    });
  }
  if (slider) {
    slider.addEventListener('input', function () { select(slider.value); });
    document.querySelectorAll('[data-step]').forEach(function (b) {
      b.addEventListener('click', function () { select(b.getAttribute('data-step')); });
    });
    select(slider.value);
  }
  var copy = document.getElementById('copy');
  var status = document.getElementById('copy-status');
  function fallback(text) {
    var ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.left = '-9999px';
    document.body.appendChild(ta);
    ta.select();
    var ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    status.textContent = ok ? 'copied' : 'select the line above and copy it';
  }
  copy.addEventListener('click', function () {
    var text = document.getElementById('replay-line').textContent;
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { status.textContent = 'copied'; },
        function () { fallback(text); });
    } else {
      fallback(text);
    }
  });
})();
"#;

/// The page of `page`.
pub fn render(page: &ReplayPage<'_>) -> String {
    let trace = page.trace;
    let mut race_at: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for r in swimlane::races(trace) {
        let e = &trace[r.earlier];
        race_at.entry(r.later).or_default().push(format!(
            "races step {} (task {} `{}`) on {}",
            e.step, e.task, e.name, r.resource
        ));
    }
    let steps: Vec<Step<'_>> = trace
        .iter()
        .enumerate()
        .map(|(i, e)| Step {
            step: e.step,
            t_ms: e.now_ms,
            task: e.task,
            name: &e.name,
            ready: &e.ready_ids,
            preempted: e.preempted,
            footprint: e
                .footprint
                .iter()
                .map(|&r| lifecycle_sim::describe_resource(r))
                .collect(),
            races: race_at.remove(&i).unwrap_or_default(),
        })
        .collect();
    let anchor = page.anchor.as_ref().filter(|a| a.index < trace.len());
    let data = Data {
        steps,
        events: &page.events,
        anchor,
        violations: &page.violations,
    };
    let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".into());

    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(s, "<title>{}</title>", esc(&page.title));
    let _ = writeln!(s, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(s, "<h1>{}</h1>", esc(&page.title));
    let _ = writeln!(
        s,
        "<p>checker <code>{}</code>; replayed by the command below.</p>",
        esc(&page.checker)
    );

    s.push_str("<section id=\"violation\">\n");
    if page.violations.is_empty() {
        s.push_str("<p>no violation: the failure did not reproduce</p>\n");
    }
    for v in &page.violations {
        let _ = writeln!(
            s,
            "<p><b class=\"rule\">{}</b> violated: {}</p>",
            esc(&v.rule),
            esc(&v.message)
        );
    }
    if let Some(a) = anchor {
        let e = &trace[a.index];
        let _ = writeln!(
            s,
            "<p>violating step <b>{}</b> (task {} `{}`, t={}ms): {} fails here: {}</p>",
            e.step,
            e.task,
            esc(&e.name),
            e.now_ms,
            esc(&a.rule),
            esc(&a.why)
        );
    }
    s.push_str("</section>\n");
    for n in &page.notes {
        let _ = writeln!(s, "<p>{}</p>", esc(n));
    }
    if !page.missing.is_empty() {
        s.push_str("<section id=\"missing\">\n");
        for m in &page.missing {
            let _ = writeln!(s, "<p>{}</p>", esc(m));
        }
        s.push_str("</section>\n");
    }

    if !trace.is_empty() {
        let highlight = anchor.map(|a| Highlight {
            index: a.index,
            why: format!("{}: {}", a.rule, a.why),
        });
        let svg = swimlane::render_pickable(&page.title, trace, page.labels, highlight.as_ref());
        // Inline SVG takes its namespace from the HTML parser.
        let svg = svg.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1);
        s.push_str("<h2>swimlane (click a poll box to select its step)</h2>\n");
        let _ = writeln!(s, "<div id=\"lane\">\n{svg}</div>");
        let start = anchor.map_or(0, |a| a.index);
        let _ = writeln!(
            s,
            "<h2>step</h2>\n<input type=\"range\" id=\"slider\" min=\"0\" max=\"{}\" value=\"{start}\" step=\"1\" aria-label=\"step\">",
            trace.len() - 1
        );
        s.push_str("<section id=\"step-detail\"></section>\n");
        let unplaced: Vec<&Event> = page.events.iter().filter(|e| e.index.is_none()).collect();
        if !unplaced.is_empty() {
            s.push_str("<h2>events outside any poll</h2>\n");
            events_table(&mut s, &unplaced);
        }
    } else {
        events_by_source(&mut s, &page.events);
    }

    s.push_str("<h2>replay</h2>\n");
    let _ = writeln!(
        s,
        "<pre id=\"replay-line\">{}</pre>\n<button id=\"copy\" type=\"button\">copy</button> <span id=\"copy-status\"></span>",
        esc(&page.command)
    );
    let _ = writeln!(
        s,
        "<script type=\"application/json\" id=\"steps\">{}</script>",
        script_safe(&json)
    );
    let _ = writeln!(s, "<script>{SCRIPT}</script>\n</body>\n</html>");
    s
}

/// `events` as a table: kind, agent or rule, text.
fn events_table(s: &mut String, events: &[&Event]) {
    s.push_str("<table class=\"mono\">\n");
    for e in events {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            e.kind,
            esc(e.who.as_deref().unwrap_or("")),
            esc(&e.text)
        );
    }
    s.push_str("</table>\n");
}

/// A replay without a trace: each agent's journal, the world journal and
/// the failed checks, each in the order the replay gives them.
fn events_by_source(s: &mut String, events: &[Event]) {
    let mut sources: Vec<(String, Vec<&Event>)> = Vec::new();
    for e in events {
        let source = match (e.kind, &e.who) {
            ("journal", Some(agent)) => format!("journal of {agent}"),
            ("journal", None) => "journal".to_string(),
            ("world", _) => "world journal (registry, store, scopes, tool-bash)".to_string(),
            _ => "failed checks".to_string(),
        };
        match sources.iter_mut().find(|(name, _)| *name == source) {
            Some((_, list)) => list.push(e),
            None => sources.push((source, vec![e])),
        }
    }
    if sources.is_empty() {
        s.push_str("<p>the replay reported no journal record, world event or failed check</p>\n");
    }
    for (source, list) in sources {
        let _ = writeln!(s, "<h2>{}</h2>\n<ul class=\"mono\">", esc(&source));
        for e in list {
            let _ = writeln!(s, "<li>{}</li>", esc(&e.text));
        }
        s.push_str("</ul>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn entry(step: u64, task: usize) -> TraceEntry {
        TraceEntry {
            step,
            now_ms: 5,
            task,
            name: Rc::from(format!("t{task}")),
            ready: 1,
            chosen: 0,
            ready_ids: vec![task],
            preempted: None,
            footprint: vec![],
            accesses: vec![],
        }
    }

    fn page<'a>(
        trace: &'a [TraceEntry],
        labels: &'a BTreeMap<usize, Vec<String>>,
    ) -> ReplayPage<'a> {
        ReplayPage {
            title: "t".into(),
            checker: "sim".into(),
            command: "lifecycle replay 'v3:x'".into(),
            trace,
            labels,
            anchor: Some(Anchor {
                index: 1,
                rule: "C7".into(),
                why: "a </script> reason".into(),
            }),
            violations: vec![Violation {
                rule: "C7".into(),
                message: "m".into(),
            }],
            events: vec![Event {
                index: Some(1),
                kind: "journal",
                who: Some("agent-1".into()),
                text: "</script><script>alert(1)</script>".into(),
            }],
            missing: vec![],
            notes: vec![],
        }
    }

    #[test]
    fn the_json_cannot_close_its_script_and_nothing_is_fetched() {
        let trace = [entry(0, 0), entry(1, 1)];
        let labels = BTreeMap::new();
        let html = render(&page(&trace, &labels));
        let (_, blob) = html
            .split_once(r#"<script type="application/json" id="steps">"#)
            .unwrap();
        let (blob, _) = blob.split_once("</script>").unwrap();
        let v: serde_json::Value = serde_json::from_str(blob).expect("the blob is JSON");
        assert_eq!(v["events"][0]["text"], "</script><script>alert(1)</script>");
        assert_eq!(v["anchor"]["index"], 1);
        assert_eq!(html.matches("data-step=").count(), 2);
        assert!(!html.contains("http://") && !html.contains("https://"));
        for id in ["slider", "step-detail", "violation", "replay-line", "copy"] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
        }
    }

    #[test]
    fn a_page_without_trace_lists_events_and_has_no_slider() {
        let labels = BTreeMap::new();
        let mut p = page(&[], &labels);
        p.anchor = None;
        p.missing = vec!["loom replays record no per-poll trace".into()];
        let html = render(&p);
        assert!(!html.contains("id=\"slider\""));
        assert!(!html.contains("<svg"));
        assert!(html.contains("journal of agent-1"));
        assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"));
        assert!(html.contains("loom replays record no per-poll trace"));
    }
}
