//! Replay lines are checked field by field
//! before anything runs, a plan naming a task that does not exist is
//! refused, output paths are checked first; `replay` prints every agent's
//! journal, a swimlane that fits, and the poll where the oracle first
//! failed; `shrink` says "already minimal".

use super::{assert_refused, found_line, run, Run};
use std::time::Duration;

/// A bad replay line: exit 2 within 20 s and exactly one line on stderr,
/// `error: …` saying `what`; nothing runs, so nothing is printed on stdout.
#[track_caller]
fn refused(line: &str, what: &str) {
    let r = run(&["replay", line]);
    let said = |l: &str| l.starts_with("error: ") && l.contains(what);
    assert_refused(&r, said, Duration::from_secs(20));
}

/// The fingerprint of `scenario` in this build, from a line that has it.
fn fingerprint_of(line: &str) -> &str {
    line.split(':').nth(4).expect("a fingerprint")
}

#[test]
fn replay_payloads_are_bounded_and_checked_field_by_field() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let fp = fingerprint_of(&line);
    let w = |checker: &str, payload: &str| {
        format!("v3:when-idle-waiters:{checker}:none:{fp}:{payload}")
    };
    refused(&w("tokio", "runs=18446744073709551615"), "`runs`");
    refused(&w("tokio", "runs=99999999999999999999999"), "`runs`");
    refused(&w("tokio", "runs=1000001"), "maximum 1000000");
    refused(&w("tokio", "runs=0"), "`runs`");
    refused(&w("tokio", "runs=1;runs=2"), "`runs` appears twice");
    refused(&w("tokio", "runs=1;speed=2"), "unknown field \"speed\"");
    refused(&w("loom", "exec=99999999999,pb=2"), "`exec`");
    refused(&w("loom", "exec=1,pb=200"), "`pb`");
    refused(&w("loom", "exec=1"), "`pb` is missing");
    refused(&w("shuttle-pct", "schedule=91"), "`schedule`");
    refused(
        &w("shuttle-pct", "schedule=91ffffffffffffffffffff01"),
        "`schedule`",
    );
    refused(&w("shuttle-pct", "schedule=9101ff0000"), "`schedule`");
    refused(
        &w("sim", "seed=1;time=virtual;plan=0;x=1"),
        "unknown field \"x\"",
    );
    refused(
        &w("sim", "seed=1;seed=1;time=virtual;plan=0"),
        "`seed` appears twice",
    );
    refused(&w("sim", "seed=é;time=virtual;plan=0"), "`seed`");
    refused(&w("sim", "seed=1;time=virtual;plan=0é"), "`plan`");
    refused(&w("sim", "seed=1;time=virtual"), "`plan` is missing");
    refused(&w("sim", "seed=1;time=sometimes;plan=0"), "`time`");
    refused(
        &format!("v3:wh\u{e9}n:sim:none:{fp}:seed=1"),
        "unknown scenario",
    );
    refused(
        "v3:when-idle-waiters:sim:none:0000000\u{e9}:seed=1",
        "fingerprint",
    );
    refused(
        &w("tokio", &format!("runs={}", "9".repeat(30_000))),
        "`runs`",
    );
    refused(&"x".repeat(30_000), "malformed replay line");
    refused(&line.replacen("v3:", "x2:", 1), "malformed replay line");
    // A line of the previous version (schedules cut at other points).
    refused(
        &line.replacen("v3:", "v2:", 1),
        "is not supported by this build (v3)",
    );
}

#[test]
fn a_plan_naming_a_task_that_does_not_exist_is_refused() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let (head, plan) = line.rsplit_once("plan=").expect("a plan");
    // when-idle-waiters runs 3 tasks: ids 0, 1 and 2.
    refused(&format!("{head}plan={plan}z"), "names task 35");
    refused(&format!("{head}plan=00{{99}}"), "names task 99 at choice 2");
    refused(&format!("{head}plan=3"), "has 3 tasks (ids 0 to 2)");
    // Tasks that exist, but not the run's plan: refused as well, not
    // "reproduced".
    refused(
        &format!("{head}plan={plan}0000000000"),
        "field `plan` does not fit",
    );
    let short = &plan[..plan.len() - 3];
    refused(&format!("{head}plan={short}"), "field `plan` does not fit");
}

/// Every prefix of a good line, and the line with bytes replaced: exit 0,
/// 1 or 2, one line on stderr when 2, never a panic, never a hang.
#[test]
fn fuzzed_replay_lines_never_panic_or_hang() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let mut cases: Vec<String> = (0..line.len())
        .step_by(3)
        .filter(|&i| line.is_char_boundary(i))
        .map(|i| line[..i].to_string())
        .collect();
    for (i, c) in line.char_indices().step_by(7) {
        for with in ["\u{fc}", ":", ";", "=", "{", "9"] {
            cases.push(format!("{}{with}{}", &line[..i], &line[i + c.len_utf8()..]));
        }
    }
    for case in &cases {
        let r = super::spawn(&["replay", case]).finish(Duration::from_secs(30));
        assert!(matches!(r.code, 0..=2), "{case}: {}", r.both());
        assert!(!r.err.contains("panicked"), "{case}: {}", r.err);
        if r.code == 2 {
            assert_eq!(r.err.lines().count(), 1, "{case}: {}", r.err);
        }
    }
}

#[test]
fn bench_out_is_checked_before_the_bench_runs() {
    let r = run(&["bench", "--out", "/nonexistent/x.json"]);
    let said = |l: &str| l.starts_with("error: cannot write /nonexistent/x.json");
    assert_refused(&r, said, Duration::from_secs(5));
    let r = run(&["bench", "--out", "/"]);
    assert_refused(&r, |l| l.starts_with("error: "), Duration::from_secs(5));
}

/// `bench --pins`: its options alone, and its file checked before the
/// minute of measuring.
#[test]
fn bench_pins_input_is_checked_before_the_measuring() {
    let cases: [(&[&str], &str); 7] = [
        (&["--write"], "error: --write applies to --pins only"),
        (
            &["--from-check", "c.jsonl"],
            "error: --from-check applies to --pins only",
        ),
        (
            &["--pins", "--from-check", "/nonexistent/c.jsonl"],
            "error: cannot read /nonexistent/c.jsonl",
        ),
        (&["--json"], "error: --json applies to --pins only"),
        (
            &["--pins", "--seeds", "3"],
            "error: --seeds does not apply to --pins",
        ),
        (
            &["--pins", "--pins-file", "/nonexistent/p.json"],
            "error: cannot read pins file /nonexistent/p.json",
        ),
        (
            &["--pins", "--write", "--pins-file", "/nonexistent/p.json"],
            "error: cannot write /nonexistent/p.json",
        ),
    ];
    for (flags, said) in cases {
        let r = run(&[&["bench"], flags].concat());
        assert_refused(&r, |l| l.starts_with(said), Duration::from_secs(5));
    }
    // One shard of a check is not the whole run the sim-dfs pins count.
    let shard = std::env::temp_dir().join(format!("lifecycle-shard-{}.jsonl", std::process::id()));
    std::fs::write(
        &shard,
        r#"{"kind":"end","settings":{"tier":"pr"},"shard":"1/2","judged":false}"#,
    )
    .expect("a temporary file");
    let r = run(&["bench", "--pins", "--from-check", shard.to_str().unwrap()]);
    let _ = std::fs::remove_file(&shard);
    let said = |l: &str| {
        l.ends_with("not a whole `check --tier pr` run of this build with its own sim-dfs budget")
    };
    assert_refused(&r, said, Duration::from_secs(5));
}

#[test]
fn replay_svg_path_is_checked_before_the_replay_runs() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let r = run(&["replay", &line, "--svg", "/nonexistent/x.svg"]);
    let said = |l: &str| l.starts_with("error: cannot write /nonexistent/x.svg");
    assert_refused(&r, said, Duration::from_secs(20));
}

/// `replay LINE ARGS` of the first failure of `fault` in `scenario` on
/// `sim`: exit 1 (reproduced), the first line naming the line replayed.
fn replayed(scenario: &str, fault: &str, more: &[&str]) -> Run {
    let line = found_line(scenario, "sim", fault);
    let r = run(&[&["replay", line.as_str()][..], more].concat());
    assert_eq!(r.code, 1, "{}", r.both());
    assert_eq!(r.first_out(), format!("replaying {line}"), "{}", r.out);
    r
}

/// The `<text>` elements of an SVG: (x, y, font size, content).
fn texts(svg: &str) -> Vec<(f64, f64, f64, String)> {
    let attr = |tag: &str, name: &str| -> Option<f64> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..].split('"').next()?.parse().ok()
    };
    let mut out = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let (tag, rest) = piece.split_once('>').expect("a tag");
        let content = rest.split("</text>").next().unwrap_or("");
        let content = content
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        out.push((
            attr(tag, "x").expect("x"),
            attr(tag, "y").expect("y"),
            attr(tag, "font-size").unwrap_or(11.0),
            content,
        ));
    }
    out
}

#[test]
fn the_swimlane_fits_its_legend_and_footer_and_explains_every_colour() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("race.svg");
    replayed(
        "when-idle-waiters",
        "M12",
        &["--svg", path.to_str().expect("utf-8")],
    );
    let svg = std::fs::read_to_string(&path).expect("the picture");
    let head = svg.lines().next().expect("a first line");
    let number = |name: &str| -> f64 {
        let at = head.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
        head[at..].split('"').next().unwrap().parse().unwrap()
    };
    let (width, height) = (number("width"), number("height"));
    assert!(
        head.contains(&format!("viewBox=\"0 0 {width} {height}\"")),
        "{head}"
    );
    for (x, y, size, text) in texts(&svg) {
        // A monospace glyph is at most 0.6 em wide (0.65 for the bold title).
        let per_char = if size > 11.0 { 0.65 * size } else { 0.6 * size };
        let right = x + per_char * text.chars().count() as f64;
        assert!(right <= width, "{text:?} ends at {right:.0} of {width}");
        assert!(y <= height, "{text:?} at y {y} of {height}");
    }
    // Every fill colour of a box or mark is explained in the legend.
    for (colour, word) in [
        ("#5b8def", "blue box"),
        ("#27ae60", "green box"),
        ("#e74c3c", "red framed box"),
        ("#c0392b", "red triangle"),
        ("#f39c12", "orange arc"),
        ("#f4f6fa", "grey and white bands"),
    ] {
        assert!(svg.contains(colour), "{colour} not drawn");
        assert!(svg.contains(word), "{word} not explained");
    }
    assert!(svg.contains("violating step"), "no footer");
}

/// The agents whose journals a replay printed, in order; asserts that
/// every journal line, and every traced journal event, names its agent.
fn journal_agents(out: &str) -> Vec<String> {
    let mut agents = Vec::new();
    let mut current: Option<String> = None;
    for l in out.lines() {
        if let Some(agent) = l
            .strip_prefix("journal of ")
            .and_then(|a| a.strip_suffix(':'))
        {
            agents.push(agent.to_string());
            current = Some(agent.to_string());
        } else if l.is_empty() {
            current = None;
        } else if let Some(agent) = &current {
            assert!(
                l.starts_with(&format!("  {agent} #")),
                "{l:?} does not name {agent}"
            );
        }
        if l.contains(" journal: ") {
            assert!(l.contains("agent="), "a trace line without its agent: {l}");
        }
    }
    agents
}

/// Every journal line names its agent, and every agent's journal is
/// printed: cancel-before-claim runs agent-1 and a bystander.
#[test]
fn every_agents_journal_is_printed_and_every_line_names_its_agent() {
    let out = replayed("cancel-before-claim", "M3", &[]).out;
    let agents = journal_agents(&out);
    assert!(agents.contains(&"agent-1".to_string()), "{agents:?}\n{out}");
    assert!(
        agents.contains(&"bystander".to_string()),
        "{agents:?}\n{out}"
    );
}

/// The same for loom (a worker process) and tokio (worker threads): their
/// journal taps hand every agent's journal back with the outcome.
#[test]
fn loom_and_tokio_replays_print_every_agents_journal() {
    let cases = [
        ("disposed-listener-panics", "loom", "M10", ["a", "b"]),
        (
            "cancel-before-claim",
            "tokio",
            "M3",
            ["agent-1", "bystander"],
        ),
    ];
    for (scenario, checker, fault, want) in cases {
        let line = found_line(scenario, checker, fault);
        let r = run(&["replay", line.as_str()]);
        assert_eq!(r.code, 1, "{}", r.both());
        assert_eq!(r.first_out(), format!("replaying {line}"), "{}", r.out);
        let agents = journal_agents(&r.out);
        for agent in want {
            assert!(
                agents.iter().any(|a| a == agent),
                "{checker}: no journal of {agent} in {agents:?}\n{}",
                r.out
            );
        }
        assert!(
            !r.out.contains("journal of the scenario's first agent"),
            "{checker}: {}",
            r.out
        );
    }
}

/// The number in `violating step: N (...)`.
fn violating_step(out: &str) -> u64 {
    let l = out
        .lines()
        .find(|l| l.starts_with("violating step: "))
        .unwrap_or_else(|| panic!("no violating step in {out}"));
    l["violating step: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a step")
}

/// The last step of the schedule `replay` prints.
fn last_step(out: &str) -> u64 {
    out.lines()
        .rev()
        .filter_map(|l| l.split_once(" step ").map(|(_, r)| r.trim_start()))
        .find_map(|r| r.split(' ').next()?.parse().ok())
        .expect("a schedule")
}

/// A world-journal violation (R1 of M9) points at the world event after
/// which the oracle first reports it, not at the last poll.
#[test]
fn a_world_violation_points_at_the_poll_where_the_oracle_first_failed() {
    let out = replayed("same-id-create-race", "M9", &[]).out;
    assert!(violating_step(&out) < last_step(&out), "{out}");
    assert!(out.contains("world event #"), "{out}");
}

/// S5 is a scenario check, with no journal record: the text points at the
/// poll where the check failed, not at the last poll.
#[test]
fn a_failed_scenario_check_points_at_its_poll() {
    let out = replayed("tool-bash-reload", "M2", &[]).out;
    assert!(out.contains("S5 violated"), "{out}");
    assert!(violating_step(&out) < last_step(&out), "{out}");
    assert!(
        out.contains("the scenario's check failed in this poll"),
        "{out}"
    );
}

/// `shrink` of the first failure of `fault` in `scenario` on `checker`:
/// exit 1, the rule and scenario first.
fn shrunk(scenario: &str, checker: &str, fault: &str, rule: &str) -> String {
    let line = found_line(scenario, checker, fault);
    let r = run(&["shrink", &line]);
    assert_eq!(r.code, 1, "{}", r.both());
    assert_eq!(
        r.first_out(),
        format!("rule {rule} in {scenario}"),
        "{}",
        r.out
    );
    r.out
}

/// A line the shrinker cannot reduce: "already minimal", not "N -> N".
#[test]
fn shrink_says_already_minimal() {
    let out = shrunk("when-idle-waiters", "sim-dfs", "M12", "C7");
    assert!(out.contains("already minimal"), "{out}");
    assert!(!out.contains("minimal:  "), "{out}");
}

/// A line the shrinker can reduce still gets its smaller line.
#[test]
fn shrink_prints_a_smaller_line_when_it_finds_one() {
    let out = shrunk("cancel-before-claim", "sim", "M3", "C4");
    assert!(out.contains("minimal:  "), "{out}");
    assert!(!out.contains("already minimal"), "{out}");
}
