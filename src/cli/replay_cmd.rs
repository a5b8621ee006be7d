//! `replay` and `shrink`: one failing execution, readable.
//!
//! A replay prints, for the one execution its line names:
//! - the `tracing` output of the run: a span per poll (`step{n, t_ms, task}`)
//!   around a span per task, with every journal and world event the poll
//!   emitted (the lifecycle state as it changes), and `sim: preempts …`
//!   where a poll preempted another task;
//! - the schedule: one line per poll, preemptions and racing accesses marked;
//! - every agent's journal, each line naming its agent, and the world
//!   journal;
//! - where the replay diverged from its plan, if it did;
//! - the violations, the violating step (the poll where the oracle first
//!   failed, and how that poll was found), and the line again.
//!
//! With `--html FILE`, the same as one self-contained page
//! (`check::html`): the swimlane, a step slider, each step's journals,
//! world events and footprint, the violating step; for loom, shuttle and
//! tokio lines, what their replays hold and, in words, what they do not.
//!
//! Before anything runs, the line is checked: its payload within bounds,
//! its plan against its run, the `--svg` and `--html` files writable. A bad
//! line exits 2 with one line on stderr.

use crate::check::replay::{self, check_plan, fingerprint, Replayed};
use crate::check::shrink;
use crate::check::swimlane::{self, races};
use crate::check::{Checker, ReplayLine};
use crate::oracle::check_journal;
use crate::oracle_world::check_world;
use crate::trace::Target;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt;

#[path = "replay_page.rs"]
mod page;

/// One `tracing` event seen during the replay, with the poll it came from.
#[derive(Clone, Debug)]
struct Seen {
    step: Option<u64>,
    target: Option<Target>,
    /// `journal`: the agent whose journal it is (the `agent` field).
    agent: Option<String>,
    /// `journal`: the record's sequence number and time.
    seq: Option<u64>,
    at_ms: Option<u64>,
    /// `check`: the rule of a scenario check that failed at this poll.
    rule: Option<String>,
    /// `observation`: its number in a generated workload's history.
    n: Option<u64>,
    message: String,
}

/// A layer that keeps every event with the simulator step it was emitted in.
#[derive(Clone, Default)]
struct StepRecorder {
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[derive(Default)]
struct Fields {
    message: String,
    agent: Option<String>,
    seq: Option<u64>,
    at_ms: Option<u64>,
    rule: Option<String>,
    n: Option<u64>,
}

impl tracing::field::Visit for Fields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        match field.name() {
            "seq" => self.seq = Some(value),
            "at_ms" => self.at_ms = Some(value),
            "n" => self.n = Some(value),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "agent" => self.agent = Some(value.to_string()),
            "rule" => self.rule = Some(value.to_string()),
            "message" => self.message = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        // `%x` fields arrive here with their Display form.
        let text = || format!("{value:?}");
        match field.name() {
            "message" => self.message = text(),
            "agent" => self.agent = Some(text()),
            "rule" => self.rule = Some(text()),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for StepRecorder {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(Seen {
                step: lifecycle_sim::current_step(),
                target: Target::of(event.metadata().target()),
                agent: f.agent,
                seq: f.seq,
                at_ms: f.at_ms,
                rule: f.rule,
                n: f.n,
                message: f.message,
            });
        }
    }
}

/// Timestamps trace lines with the simulator's virtual time.
struct VirtualTime;

impl tracing_subscriber::fmt::time::FormatTime for VirtualTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match lifecycle_sim::current_step() {
            Some(step) => write!(
                w,
                "step {step:>4} t={:>5}ms",
                lifecycle_sim::peek_now_ms().unwrap_or(0)
            ),
            None => write!(w, "step    - t=    -  "),
        }
    }
}

/// Replay `line` with the trace on; the events seen.
fn replay_traced(line: &ReplayLine) -> (Result<Replayed, String>, Vec<Seen>) {
    let recorder = StepRecorder::default();
    let fmt = tracing_subscriber::fmt::layer()
        .with_target(true)
        .with_ansi(false)
        .with_timer(VirtualTime)
        .with_writer(std::io::stdout);
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target(Target::JOURNAL, tracing::Level::DEBUG)
        .with_target(Target::WORLD, tracing::Level::DEBUG)
        .with_target(Target::CHECK, tracing::Level::DEBUG)
        .with_target(Target::OBSERVATION, tracing::Level::INFO)
        .with_target(Target::SIM, tracing::Level::INFO)
        // The spans: `step{n, t_ms, task}` per poll, `task{name}` per task.
        .with_target("lifecycle_sim", tracing::Level::INFO)
        .with_target("lifecycle_harness", tracing::Level::INFO)
        .with_target("lifecycle_tools", tracing::Level::INFO)
        .with_target("lifecycle", tracing::Level::INFO)
        .with_default(tracing::Level::WARN);
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::Layer::with_filter(fmt, filter.clone()))
        .with(tracing_subscriber::Layer::with_filter(
            recorder.clone(),
            filter,
        ));
    let result = tracing::subscriber::with_default(subscriber, || replay::replay(line));
    let seen = recorder.seen.lock().map(|s| s.clone()).unwrap_or_default();
    (result.map_err(|e| e.0), seen)
}

/// Every agent's journal as the trace saw it, in order of each agent's
/// first record: the agent's name and its records. `None` if a record does
/// not name its agent (a build whose journal events carry no `agent`).
fn agent_journals(seen: &[Seen]) -> Option<Vec<(&str, Vec<&Seen>)>> {
    let mut out: Vec<(&str, Vec<&Seen>)> = Vec::new();
    for s in seen.iter().filter(|s| s.target == Some(Target::Journal)) {
        let agent = s.agent.as_deref()?;
        match out.iter_mut().find(|(a, _)| *a == agent) {
            Some((_, records)) => records.push(s),
            None => out.push((agent, vec![s])),
        }
    }
    Some(out)
}

/// The agent whose traced journal is the outcome's (the one the scenario
/// reports and the oracle checks record by record here).
fn main_agent<'a>(journals: &[(&'a str, Vec<&Seen>)], replayed: &Replayed) -> Option<&'a str> {
    let ours: Vec<(u64, String)> = replayed
        .outcome
        .journal
        .iter()
        .map(|r| (r.seq, serde_json::to_string(&r.event).unwrap_or_default()))
        .collect();
    journals.iter().find_map(|(agent, records)| {
        let same = records.len() == ours.len()
            && records
                .iter()
                .zip(&ours)
                .all(|(s, (seq, json))| s.seq == Some(*seq) && s.message == *json);
        same.then_some(*agent)
    })
}

/// Where a violation was first seen: a poll (index in the trace) and how
/// it was found.
struct Anchor {
    index: usize,
    rule: crate::oracle::RuleId,
    why: String,
}

/// The poll where the oracle first failed, over every violation: the
/// poll that made a generated history's first observation the model does
/// not explain (an `observation` event), the
/// scenario check that failed there (a `check` event), or the first
/// journal record (of the outcome's agent) or world event after which the
/// oracle reports the violation. Else the last poll, said as such.
fn violating_poll(replayed: &Replayed, seen: &[Seen]) -> Option<Anchor> {
    let trace = &replayed.trace;
    let index_of = |step: Option<u64>| step.and_then(|st| trace.iter().position(|t| t.step == st));
    let journals = agent_journals(seen).unwrap_or_default();
    let main = main_agent(&journals, replayed);
    let journal = &replayed.outcome.journal;
    let world = &replayed.outcome.world;
    // The poll that emitted each of the outcome's world events: the n-th
    // event with a given text is the n-th traced with it (a record is
    // traced before it takes its topics' locks, so the two orders can
    // differ).
    let mut world_steps = Vec::new();
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for e in world {
        let json = serde_json::to_string(e).unwrap_or_default();
        let n = taken.entry(json.clone()).or_insert(0);
        let step = seen
            .iter()
            .filter(|s| s.target == Some(Target::World) && s.message == json)
            .nth(*n)
            .and_then(|s| s.step);
        *n += 1;
        world_steps.push(step);
    }
    let mut best: Option<Anchor> = None;
    let mut consider = |index: Option<usize>, rule: crate::oracle::RuleId, why: String| {
        if let Some(index) = index {
            if best.as_ref().is_none_or(|b| index < b.index) {
                best = Some(Anchor { index, rule, why });
            }
        }
    };
    for v in &replayed.outcome.violations {
        let same = |w: &crate::oracle::Violation| w.rule == v.rule && w.message == v.message;
        if let Some(n) = v.observation {
            let made = seen
                .iter()
                .find(|s| s.target == Some(Target::Observation) && s.n == Some(n as u64));
            consider(
                made.and_then(|s| index_of(s.step)),
                v.rule,
                format!("observation #{n}, the first that no behaviour of the model explains, was made in this poll"),
            );
        }
        if let Some(s) = seen.iter().find(|s| {
            s.target == Some(Target::Check)
                && s.rule.as_deref() == Some(v.rule.name())
                && s.message == v.message
        }) {
            consider(
                index_of(s.step),
                v.rule,
                "the scenario's check failed in this poll".into(),
            );
        }
        if let Some(k) =
            (1..=journal.len()).find(|&k| check_journal(&journal[..k]).iter().any(same))
        {
            let rec = &journal[k - 1];
            let json = serde_json::to_string(&rec.event).unwrap_or_default();
            let found = seen.iter().find(|s| {
                s.target == Some(Target::Journal)
                    && s.seq == Some(rec.seq)
                    && s.message == json
                    && (main.is_none() || s.agent.as_deref() == main)
            });
            consider(
                found.and_then(|s| index_of(s.step)),
                v.rule,
                format!(
                    "{} #{} is the first record after which the oracle reports it",
                    main.unwrap_or("the agent's journal"),
                    rec.seq
                ),
            );
        }
        if let Some(k) = (1..=world.len()).find(|&k| check_world(&world[..k]).iter().any(same)) {
            consider(
                world_steps[k - 1].and_then(|st| index_of(Some(st))),
                v.rule,
                format!(
                    "world event #{} is the first after which the oracle reports it",
                    k - 1
                ),
            );
        }
    }
    if best.is_none() {
        let v = replayed.outcome.violations.first()?;
        let last = trace.len().checked_sub(1)?;
        best = Some(Anchor {
            index: last,
            rule: v.rule,
            why: "no journal record, world event or check event marks where it first failed; this is the last poll, after every check ran".into(),
        });
    }
    best
}

/// Print every agent's journal, each line naming its agent. Simulator and
/// shuttle replays run on this thread, so the trace saw every record; loom
/// replays in a worker process and tokio on worker threads, whose journal
/// taps report every agent's journal with the outcome.
fn print_journals(parsed: &ReplayLine, replayed: &Replayed, seen: &[Seen]) {
    let traced = !matches!(parsed.checker, Checker::Loom | Checker::Tokio);
    if !traced && !replayed.journals.is_empty() {
        let mut journals: Vec<_> = replayed.journals.iter().collect();
        // The outcome's agent first: the one whose journal it carries.
        let main = journals
            .iter()
            .find(|(_, lines)| *lines == replayed.journal)
            .map(|(agent, _)| agent.clone());
        if let Some(main) = main {
            journals.sort_by_key(|(agent, _)| *agent != main);
        }
        for (agent, lines) in journals {
            println!("\njournal of {agent}:");
            for line in lines {
                println!("  {agent} {line}");
            }
        }
        return;
    }
    let journals = if traced { agent_journals(seen) } else { None };
    if let Some(mut journals) = journals.filter(|j| !j.is_empty()) {
        // The outcome's agent first, then the others as they appeared.
        if let Some(main) = main_agent(&journals, replayed) {
            journals.sort_by_key(|(agent, _)| *agent != main);
        }
        for (agent, records) in journals {
            println!("\njournal of {agent}:");
            for r in records {
                println!(
                    "  {agent} #{:<3} t={:>5}ms {}",
                    r.seq.unwrap_or(0),
                    r.at_ms.unwrap_or(0),
                    r.message
                );
            }
        }
        return;
    }
    if replayed.journal.is_empty() {
        return;
    }
    let why = match parsed.checker {
        Checker::Loom | Checker::Tokio => "the run's journal events were not traced",
        _ => "this build's journal events do not name their agent",
    };
    println!("\njournal of the scenario's first agent ({why}):");
    for r in &replayed.journal {
        println!("  {r}");
    }
}

fn print_schedule(replayed: &Replayed) {
    let trace = &replayed.trace;
    let mut race_at: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for r in races(trace) {
        race_at.entry(r.later).or_default().push(format!(
            "races step {} (task {} `{}`) on {}",
            trace[r.earlier].step, trace[r.earlier].task, trace[r.earlier].name, r.resource
        ));
    }
    println!("\nschedule (one line per poll; >> = preemption, ~ = racing access):");
    for (i, t) in trace.iter().enumerate() {
        let mark = match (t.preempted.is_some(), race_at.contains_key(&i)) {
            (true, true) => ">>~",
            (true, false) => ">> ",
            (false, true) => "~  ",
            (false, false) => "   ",
        };
        let mut notes = Vec::new();
        if let Some(p) = t.preempted {
            notes.push(format!("preempts task {p}"));
        }
        if let Some(r) = race_at.get(&i) {
            notes.extend(r.iter().cloned());
        }
        println!(
            "  {mark} step {:>4} t={:>5}ms task {:>2} {:<22} ({} ready){}",
            t.step,
            t.now_ms,
            t.task,
            format!("`{}`", t.name),
            t.ready,
            if notes.is_empty() {
                String::new()
            } else {
                format!("  {}", notes.join("; "))
            }
        );
    }
    let pre = trace.iter().filter(|t| t.preempted.is_some()).count();
    println!(
        "  {} polls, {pre} preemptions, {} racing accesses",
        trace.len(),
        race_at.values().map(Vec::len).sum::<usize>()
    );
}

/// A replay line, parsed and checked before anything runs: its payload
/// within bounds (see `check::replay::limits`) and, for a line of this
/// build, its plan's tasks within the scenario's.
fn parse_checked(line: &str) -> Result<ReplayLine, ExitCode> {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let parsed = ReplayLine::parse(line).map_err(|e| fail(e.0))?;
    if parsed.same_build() {
        check_plan(&parsed).map_err(|e| fail(e.0))?;
    }
    Ok(parsed)
}

/// The labels of the picture: per poll, the journal (with its agent) and
/// world events it emitted, and the scenario checks that failed in it.
fn poll_labels(replayed: &Replayed, seen: &[Seen]) -> BTreeMap<usize, Vec<String>> {
    let mut labels: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for s in seen {
        let label = match s.target {
            Some(Target::Journal) => match &s.agent {
                Some(agent) => format!("journal {agent} #{}: {}", s.seq.unwrap_or(0), s.message),
                None => format!("journal #{}: {}", s.seq.unwrap_or(0), s.message),
            },
            Some(Target::World) => format!("world: {}", s.message),
            Some(Target::Check) => format!(
                "check failed: {} {}",
                s.rule.as_deref().unwrap_or("?"),
                s.message
            ),
            _ => continue,
        };
        if let Some(i) = s
            .step
            .and_then(|st| replayed.trace.iter().position(|t| t.step == st))
        {
            labels.entry(i).or_default().push(label);
        }
    }
    labels
}

/// Run `f` with this process's stderr sent to an unlinked temporary file;
/// what it wrote. Shuttle prints a failed execution's task on stderr
/// itself (`test panicked in task ...`), which for a schedule that does not
/// fit would come before the one line that says so; the caller shows what
/// was held back only if the replay worked. Without a temporary file, `f`
/// runs with stderr as it is.
fn holding_stderr<T>(f: impl FnOnce() -> T) -> (T, Vec<u8>) {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join(format!("lifecycle-stderr-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path);
    let _ = std::fs::remove_file(&path);
    let Ok(mut file) = file else {
        return (f(), Vec::new());
    };
    // SAFETY: plain descriptor calls on descriptors this process owns;
    // fd 2 is restored from its duplicate before returning.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 || unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
        return (f(), Vec::new());
    }
    let out = f();
    unsafe {
        libc::dup2(saved, 2);
        libc::close(saved);
    }
    let mut held = Vec::new();
    if file.rewind().is_ok() {
        let _ = file.read_to_end(&mut held);
    }
    (out, held)
}

/// Create `path` (if given) before the replay runs: a path that cannot
/// be written fails now, not after the work.
fn create_output(path: Option<&Path>) -> Result<Option<std::fs::File>, ExitCode> {
    match path.map(|p| (p, std::fs::File::create(p))) {
        None => Ok(None),
        Some((_, Ok(f))) => Ok(Some(f)),
        Some((p, Err(e))) => {
            eprintln!("error: cannot write {}: {e}", p.display());
            Err(ExitCode::from(2))
        }
    }
}

/// Write `text` to `file` (created from `path`); exit 2 if it fails.
fn write_output(path: &Path, file: &mut std::fs::File, text: &str) -> Result<(), ExitCode> {
    std::io::Write::write_all(file, text.as_bytes()).map_err(|e| {
        eprintln!("error: cannot write {}: {e}", path.display());
        ExitCode::from(2)
    })
}

/// `replay`, with the swimlane SVG to `svg` and the page to `html`.
pub(super) fn run_replay(line: &str, svg: Option<&Path>, html: Option<&Path>) -> ExitCode {
    let parsed = match parse_checked(line) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let sim = matches!(parsed.checker, Checker::Sim | Checker::SimDfs);
    if svg.is_some() && !sim {
        eprintln!(
            "error: --svg draws simulator executions; {} lines carry no trace (find the failure with sim or sim-dfs)",
            parsed.checker
        );
        return ExitCode::from(2);
    }
    let mut picture_file = match create_output(svg) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let mut page_file = match create_output(html) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let other_build = !parsed.same_build();
    println!("replaying {parsed}");
    if other_build {
        println!(
            "warning: this line was recorded by another build (fingerprint {}, this build {}); {}",
            parsed.fingerprint,
            fingerprint(&parsed.scenario),
            if sim {
                "following its plan as far as it fits, then the seeded scheduler"
            } else {
                "its schedule may not fit this build"
            }
        );
    }
    println!("\ntrace (tracing spans per poll and per task, virtual time):");
    let shuttle = parsed.checker.on_shuttle();
    let ((result, seen), held) = if shuttle {
        holding_stderr(|| replay_traced(&parsed))
    } else {
        (replay_traced(&parsed), Vec::new())
    };
    let replayed = match result {
        Ok(r) => {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), &held);
            r
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if sim {
        print_schedule(&replayed);
    }
    print_journals(&parsed, &replayed, &seen);
    if replayed.outcome.world.is_empty() && replayed.trace_hash.is_none() {
        // Nothing else follows the journals (a loom replay): end them.
        println!();
    }
    if !replayed.outcome.world.is_empty() {
        println!("\nworld journal (registry, store, scopes, tool-bash):");
        for (i, e) in replayed.outcome.world.iter().enumerate() {
            println!("  #{i:<3} {}", serde_json::to_string(e).unwrap_or_default());
        }
    }
    if let Some(h) = replayed.trace_hash {
        println!("\ntrace hash: {h:016x}");
    }
    let diverged = replayed.diverged_at;
    if let (Some(step), Some((followed, total))) = (diverged, replayed.plan_followed) {
        println!(
            "diverged: the plan stopped fitting at step {step} after {followed} of {total} choices; the seeded scheduler continued from there"
        );
    } else if let Some((_, total)) = replayed.plan_followed {
        println!("the plan was followed exactly ({total} choices)");
    }
    let anchor = violating_poll(&replayed, &seen);
    let labels = poll_labels(&replayed, &seen);
    let title = format!(
        "{} ({}) {}",
        parsed.scenario.name,
        parsed
            .fault
            .map_or("no fault".to_string(), |f| f.to_string()),
        match (&anchor, replayed.outcome.violations.first()) {
            (Some(a), _) => format!("{} violated", a.rule),
            (None, Some(v)) => format!("{} violated", v.rule),
            (None, None) => "no violation".to_string(),
        }
    );
    if let (Some(path), Some(file)) = (svg, picture_file.as_mut()) {
        let highlight = anchor.as_ref().map(|a| swimlane::Highlight {
            index: a.index,
            why: format!("{}: {}", a.rule, a.why),
        });
        let picture = swimlane::render(&title, &replayed.trace, &labels, highlight.as_ref());
        if let Err(code) = write_output(path, file, &picture) {
            return code;
        }
        println!("picture: {}", path.display());
    }
    if let (Some(path), Some(file)) = (html, page_file.as_mut()) {
        let page = page::render(&parsed, &replayed, &seen, anchor.as_ref(), &labels, &title);
        if let Err(code) = write_output(path, file, &page) {
            return code;
        }
        println!("page: {}", path.display());
    }
    println!("outcome: {}", replayed.outcome.label);
    let code = if replayed.outcome.violations.is_empty() {
        println!("no violation: the failure did not reproduce");
        ExitCode::SUCCESS
    } else {
        for v in &replayed.outcome.violations {
            println!(
                "{} violated in {} on {}: {}",
                v.rule, parsed.scenario.name, parsed.checker, v.message
            );
        }
        if let Some(a) = &anchor {
            if let Some(t) = replayed.trace.get(a.index) {
                println!(
                    "violating step: {} (task {} `{}`, t={}ms): {}, {}",
                    t.step, t.task, t.name, t.now_ms, a.rule, a.why
                );
            }
        }
        println!("replay: {} replay '{parsed}'", super::args::program());
        ExitCode::from(1)
    };
    if other_build {
        eprintln!(
            "error: the line was recorded by another build{}; re-run the check on this build for a line that fits",
            match diverged {
                Some(step) => format!(" and diverged at step {step}"),
                None => String::new(),
            }
        );
        return ExitCode::from(2);
    }
    if let (Some(step), Some((followed, total))) = (diverged, replayed.plan_followed) {
        eprintln!(
            "error: field `plan` does not fit {}: it stopped fitting at step {step} after {followed} of {total} choices, so this is not the run the line names",
            parsed.scenario.name
        );
        return ExitCode::from(2);
    }
    code
}

/// `shrink`.
pub(super) fn run_shrink(line: &str) -> ExitCode {
    let parsed = match parse_checked(line) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let Some((seed, untimed, plan)) = parsed.sim_payload() else {
        eprintln!(
            "error: shrink works on simulator lines (sim, sim-dfs); this is a {} line",
            parsed.checker
        );
        return ExitCode::from(2);
    };
    if !parsed.same_build() {
        eprintln!(
            "error: the line was recorded by another build (fingerprint {}, this build {})",
            parsed.fingerprint,
            fingerprint(&parsed.scenario)
        );
        return ExitCode::from(2);
    }
    crate::check::quiet_panics();
    let faults = parsed.faults();
    let run =
        crate::check::explore::sim::run_plan(&parsed.scenario, faults, seed, untimed, &plan, false);
    if let Some(step) = run.sim.diverged_at() {
        eprintln!(
            "error: field `plan` does not fit {}: it stopped fitting at step {step}, so this is not the run the line names",
            parsed.scenario.name
        );
        return ExitCode::from(2);
    }
    let Some(rule) = run.outcome.violations.first().map(|v| v.rule) else {
        println!("no violation: the line does not fail on this build; nothing to shrink");
        return ExitCode::SUCCESS;
    };
    let s = shrink::shrink(&parsed.scenario, faults, seed, untimed, &plan, rule);
    println!("rule {rule} in {}", parsed.scenario.name);
    println!(
        "original: {} preemptions, {} steps, {} choices\n  {} replay '{parsed}'",
        s.original.preemptions,
        s.original.steps,
        s.original.plan.len(),
        super::args::program()
    );
    if !s.reduced() {
        println!(
            "already minimal: no run with fewer preemptions or steps breaks {rule} ({} runs tried)",
            s.attempts
        );
        return ExitCode::from(1);
    }
    let minimal = ReplayLine::sim(
        &parsed.scenario,
        parsed.checker,
        faults,
        seed,
        untimed,
        &s.minimal.plan,
    );
    println!(
        "minimal:  {} preemptions, {} steps, {} choices ({} runs tried)\n  {} replay '{minimal}'",
        s.minimal.preemptions,
        s.minimal.steps,
        s.minimal.plan.len(),
        s.attempts,
        super::args::program()
    );
    ExitCode::from(1)
}
