//! `replay` and `shrink`: one failing execution, readable.
//!
//! A replay prints, for the one execution its line names:
//! - the `tracing` output of the run: a span per poll (`step{n, t_ms, task}`)
//!   around a span per task, with every journal and world event the poll
//!   emitted (the lifecycle state as it changes), and `sim: preempts …`
//!   where a poll preempted another task;
//! - the schedule: one line per poll, preemptions and racing accesses marked;
//! - the agent's journal and the world journal;
//! - where the replay diverged from its plan, if it did;
//! - the violations, the violating step, and the line again.

use crate::check::replay::{fingerprint, Replayed};
use crate::check::shrink;
use crate::check::swimlane::{self, races};
use crate::check::{Checker, ReplayLine};
use crate::oracle::check_journal;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt;

/// One `tracing` event seen during the replay, with the poll it came from.
#[derive(Clone, Debug)]
struct Seen {
    step: Option<u64>,
    target: String,
    seq: Option<u64>,
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
    seq: Option<u64>,
}

impl tracing::field::Visit for Fields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "seq" {
            self.seq = Some(value);
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
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
                target: event.metadata().target().to_string(),
                seq: f.seq,
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
        .with_target("journal", tracing::Level::DEBUG)
        .with_target("world", tracing::Level::DEBUG)
        .with_target("sim", tracing::Level::INFO)
        // The spans: `step{n, t_ms, task}` per poll, `task{name}` per task.
        .with_target("lifecycle_sim", tracing::Level::INFO)
        .with_target("agent_lifecycle", tracing::Level::INFO)
        .with_default(tracing::Level::WARN);
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::Layer::with_filter(fmt, filter.clone()))
        .with(tracing_subscriber::Layer::with_filter(
            recorder.clone(),
            filter,
        ));
    let result = tracing::subscriber::with_default(subscriber, || line.replay());
    let seen = recorder.seen.lock().map(|s| s.clone()).unwrap_or_default();
    (result.map_err(|e| e.0), seen)
}

/// The trace index of the poll that emitted the first journal record after
/// which the oracle reports the same violation; else the last poll.
fn violating_poll(replayed: &Replayed, seen: &[Seen]) -> Option<usize> {
    let trace = &replayed.trace;
    if trace.is_empty() {
        return None;
    }
    let index_of = |step: u64| trace.iter().position(|t| t.step == step);
    let journal = &replayed.outcome.journal;
    for v in &replayed.outcome.violations {
        for k in 1..=journal.len() {
            let hit = check_journal(&journal[..k])
                .iter()
                .any(|w| w.rule == v.rule && w.message == v.message);
            if hit {
                let rec = &journal[k - 1];
                let json = serde_json::to_string(&rec.event).unwrap_or_default();
                let found = seen
                    .iter()
                    .find(|s| s.target == "journal" && s.seq == Some(rec.seq) && s.message == json);
                if let Some(i) = found.and_then(|s| s.step).and_then(index_of) {
                    return Some(i);
                }
                break;
            }
        }
    }
    Some(trace.len() - 1)
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

/// `replay`.
pub(super) fn run_replay(line: &str, svg: Option<&Path>) -> ExitCode {
    let parsed = match ReplayLine::parse(line) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let sim = matches!(parsed.checker, Checker::Sim | Checker::SimDfs);
    if svg.is_some() && !sim {
        eprintln!(
            "error: --svg draws simulator executions; {} lines carry no trace (find the failure with sim or sim-dfs)",
            parsed.checker
        );
        return ExitCode::from(2);
    }
    let other_build = !parsed.same_build();
    println!("replaying {parsed}");
    if other_build {
        println!(
            "warning: this line was recorded by another build (fingerprint {}, this build {}); {}",
            parsed.fingerprint,
            fingerprint(parsed.scenario),
            if sim {
                "following its plan as far as it fits, then the seeded scheduler"
            } else {
                "its schedule may not fit this build"
            }
        );
    }
    println!("\ntrace (tracing spans per poll and per task, virtual time):");
    let (result, seen) = replay_traced(&parsed);
    let replayed = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if sim {
        print_schedule(&replayed);
    }
    println!("\njournal of agent-1:");
    for r in &replayed.journal {
        println!("  {r}");
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
    let highlight = violating_poll(&replayed, &seen);
    if let Some(path) = svg {
        let mut labels: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for s in &seen {
            if s.target == "journal" || s.target == "world" {
                if let Some(i) = s
                    .step
                    .and_then(|st| replayed.trace.iter().position(|t| t.step == st))
                {
                    labels
                        .entry(i)
                        .or_default()
                        .push(format!("{}: {}", s.target, s.message));
                }
            }
        }
        let title =
            format!(
                "{} ({}) {}",
                parsed.scenario.name,
                parsed
                    .fault
                    .map_or("no fault".to_string(), |f| f.to_string()),
                replayed.outcome.violations.first().map_or(
                    "no violation".to_string(),
                    |v| format!("{} violated", v.rule)
                )
            );
        let picture = swimlane::render(&title, &replayed.trace, &labels, highlight);
        if let Err(e) = std::fs::write(path, picture) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
        println!("picture: {}", path.display());
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
        if let Some(t) = highlight.and_then(|i| replayed.trace.get(i)) {
            println!(
                "violating step: {} (task {} `{}`, t={}ms)",
                t.step, t.task, t.name, t.now_ms
            );
        }
        println!("replay: cargo run --release -- replay '{parsed}'");
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
    code
}

/// `shrink`.
pub(super) fn run_shrink(line: &str) -> ExitCode {
    let parsed = match ReplayLine::parse(line) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
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
            fingerprint(parsed.scenario)
        );
        return ExitCode::from(2);
    }
    crate::check::quiet_panics();
    let faults = parsed.faults();
    let run =
        crate::check::sim_check::run_plan(parsed.scenario, faults, seed, untimed, &plan, false);
    let Some(rule) = run.outcome.violations.first().map(|v| v.rule) else {
        println!("no violation: the line does not fail on this build; nothing to shrink");
        return ExitCode::SUCCESS;
    };
    let s = shrink::shrink(parsed.scenario, faults, seed, untimed, &plan, rule);
    let minimal = ReplayLine::sim(
        parsed.scenario,
        parsed.checker,
        faults,
        seed,
        untimed,
        &s.minimal.plan,
    );
    println!("rule {rule} in {}", parsed.scenario.name);
    println!(
        "original: {} preemptions, {} steps, {} choices\n  cargo run --release -- replay '{parsed}'",
        s.original.preemptions,
        s.original.steps,
        s.original.plan.len()
    );
    println!(
        "minimal:  {} preemptions, {} steps, {} choices ({} runs tried)\n  cargo run --release -- replay '{minimal}'",
        s.minimal.preemptions,
        s.minimal.steps,
        s.minimal.plan.len(),
        s.attempts
    );
    ExitCode::from(1)
}
